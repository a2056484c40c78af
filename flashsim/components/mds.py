"""A metadata service: servers with a pool of service threads, a per-operation cost and a device.

Written once for every system kind: a Lustre MDS with its MDT, a VAST CNode
with the SCM that holds the element store.  A metadata *item* (what mdtest or
find counts as one: a file created, stat'ed, read or removed, one directory
entry scanned) is a short sequence of server operations (:data:`MdOp`), each a
client round trip to one server.  Each server has three stations:

* **service threads** (``service_threads`` of them, FCFS): every operation
  holds one for its CPU cost (``create``, ``open``, ``close``, ``stat``,
  ``unlink``, ``readdir_entry`` seconds);
* **a directory shard lock** when the items share one directory: at most
  ``shared_dir_parallelism`` modifying operations (create, unlink) of one
  directory shard run at once (ldiskfs parallel directory operations lock the
  leaf block, not the whole directory); the operations hold it instead of a
  thread, so a shared directory is limited by the smaller of the two pools;
* **the metadata device**: creates and unlinks write ``create_journal`` /
  ``unlink_journal`` bytes (journal, inode and directory blocks), ``copies``
  times (a RAID10 mirror, or SCM replicas), to ``drives`` drives of
  ``drive_write_Bps`` each (:class:`MdDevice`).

Two fidelities from the same parameters:

* analytic (flow fidelity): :meth:`MetadataService.items_per_s`, the closed
  loop of ``clients`` synchronous ranks (one item in flight each, as mdtest),
  solved with :func:`~flashsim.components.closed_loop.closed_loop_rpcs_per_s`'s
  approximate MVA at the station with the largest demand per server
  (the bottleneck); its ``c`` servers are folded into one with Seidmann's
  approximation (a ``c``-server station of demand ``D`` is a single server of
  demand ``D/c`` plus a pure delay ``D(c-1)/c``; Seidmann, Schweitzer &
  Shalev-Oren, *Perf. Eval.* 7, 1987); the other stations and the round trips
  are pure delay.  Exact for one client, and at saturation it is the
  bottleneck's capacity ``servers x c / D``.
* request fidelity: :meth:`MetadataService.item_request`, a SimPy generator
  per item through :class:`~flashsim.engine.queues.FifoQueue` stations (the
  threads a ``c``-server queue, the device ``drives`` servers).

Routing: ``"fixed"`` gives each client one server (a directory per rank placed
on one MDT, DNE1 / round-robin directory placement); ``"random"`` sends every
operation to a server picked at random (a directory striped over several MDTs
by name hash, DNE2; NFS clients spread over CNodes).

Omitted: client-side caching (every operation reaches a server), lock
callbacks between clients, the OST side of a Lustre create or unlink (object
precreation and destruction are asynchronous), directory creation, and any
change of the costs with directory size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
import simpy
from pydantic import Field

from flashsim.components.closed_loop import closed_loop_rpcs_per_s
from flashsim.config import NonNegativeBytes, NonNegativeSeconds, StrictModel
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation

#: Server operations a metadata item is made of.
MdOp = Literal["create", "open", "close", "stat", "unlink", "readdir_entry"]
#: Operations that modify their directory (take its shard lock, write the device).
MODIFYING: frozenset[str] = frozenset({"create", "unlink"})
Routing = Literal["fixed", "random"]


class MetadataSpec(StrictModel):
    """Per-operation costs and concurrency of one metadata server (an MDS, a CNode).

    Attributes
    ----------
    service_threads : int
        Operations one server processes at once.
    shared_dir_parallelism : int
        Modifying operations (create, unlink) one directory shard admits at once.
    client_overhead : float
        Client-side time (s) per metadata RPC beyond the wire (file-system
        client, RPC layer, system call).
    create, open, close, stat, unlink : float
        Server CPU time (s) of one operation.
    readdir_entry : float
        Server CPU time (s) per directory entry a readdir returns.
    readdir_entries_per_rpc : int
        Entries one readdir RPC returns (its round trip is shared by them).
    create_journal, unlink_journal : float
        Bytes one create / unlink writes to the metadata device (before copies).
    """

    service_threads: Annotated[int, Field(ge=1)] = Field(
        description="Metadata operations one server processes at once (service threads on cores)."
    )
    shared_dir_parallelism: Annotated[int, Field(ge=1)] = Field(
        description=(
            "Modifying operations (create, unlink) one directory shard admits at once "
            "(a directory shared by all ranks is limited by this, not by the threads)."
        )
    )
    client_overhead: NonNegativeSeconds = Field(
        "0 s",
        description="Client-side time per metadata RPC beyond the wire (client stack, syscall).",
    )
    create: NonNegativeSeconds = Field(description="Server CPU time of one create (open O_CREAT).")
    open: NonNegativeSeconds = Field(description="Server CPU time of one open of an existing file.")
    close: NonNegativeSeconds = Field("0 s", description="Server CPU time of one close.")
    stat: NonNegativeSeconds = Field(description="Server CPU time of one stat (getattr).")
    unlink: NonNegativeSeconds = Field(description="Server CPU time of one unlink.")
    readdir_entry: NonNegativeSeconds = Field(
        description="Server CPU time per directory entry a readdir returns."
    )
    readdir_entries_per_rpc: Annotated[int, Field(ge=1)] = Field(
        100, description="Directory entries one readdir RPC returns (they share its round trip)."
    )
    create_journal: NonNegativeBytes = Field(
        "0 B",
        description="Bytes one create writes to the metadata device (journal, inode, dirent).",
    )
    unlink_journal: NonNegativeBytes = Field(
        "0 B", description="Bytes one unlink writes to the metadata device."
    )

    def cost_s(self, op: str) -> float:
        """Server CPU time (s) of one ``op``."""
        return float(getattr(self, op))

    def journal_B(self, op: str) -> float:
        """Bytes one ``op`` writes to the metadata device (0 for non-modifying operations)."""
        if op == "create":
            return float(self.create_journal)
        if op == "unlink":
            return float(self.unlink_journal)
        return 0.0


@dataclass(frozen=True)
class MdDevice:
    """Where metadata updates land.

    Attributes
    ----------
    drives : int
        Drives that take metadata writes (per server, or in all when ``shared``).
    drive_write_Bps : float
        Write bandwidth of one drive (bytes/s).
    copies : float
        Bytes written per byte of metadata (2 for a mirror or two SCM replicas).
    shared : bool
        One device for all servers (VAST's SCM) rather than one per server (an MDT).
    """

    drives: int
    drive_write_Bps: float
    copies: float = 1.0
    shared: bool = False

    def write_s(self, size_B: float) -> float:
        """Seconds one drive is busy with ``size_B`` bytes of metadata (all copies, spread)."""
        return size_B * self.copies / self.drive_write_Bps


@dataclass(frozen=True)
class MdItem:
    """One metadata item as the client sees it.

    Attributes
    ----------
    ops : tuple of (MdOp, float)
        Server operations and how many of each an item makes (fractions allowed
        in the analytic path; request fidelity rounds each to whole operations
        except ``readdir_entry``, whose RPC share is a fraction of a round trip).
    extra_s : float
        Further client-visible time per item that holds no metadata resource
        (e.g. the small data RPC to an OST of mdtest-hard's 3,901-byte files).
    shared_dir : bool
        The items' files share directory shards (mdtest-hard's one directory).
    """

    ops: tuple[tuple[MdOp, float], ...]
    extra_s: float = 0.0
    shared_dir: bool = False


@dataclass(frozen=True)
class Station:
    """One station's demand per item on one server: ``demand_s`` over ``servers`` servers."""

    name: str
    demand_s: float
    servers: float

    @property
    def per_server_s(self) -> float:
        """Demand per item over the station's servers (s): the inverse of its capacity."""
        return self.demand_s / self.servers


class MetadataService:
    """``servers`` metadata servers of one spec, and the device their updates reach.

    Parameters
    ----------
    spec : MetadataSpec
        Costs and concurrency of one server.
    servers : int
        Metadata servers (MDS count, CNodes).
    device : MdDevice or None
        Where creates and unlinks write; ``None`` for no device cost.
    name : str
        Dotted component name (queues are ``<name>.mds<i>.threads`` ...).
    """

    def __init__(
        self, spec: MetadataSpec, servers: int, device: MdDevice | None, name: str
    ) -> None:
        if servers < 1:
            raise ValueError(f"{name}: servers(={servers}) must be >= 1")
        self.spec = spec
        self.servers = servers
        self.device = device
        self.name = name
        self._queues: dict[str, FifoQueue] = {}

    # ------------------------------------------------------------ analytic
    def rpcs(self, item: MdItem) -> float:
        """Client round trips to the servers per item (readdir RPCs are shared by entries)."""
        per = self.spec.readdir_entries_per_rpc
        return sum(n / per if op == "readdir_entry" else n for op, n in item.ops)

    def stations(self, item: MdItem) -> list[Station]:
        """Demand of one item at each station of one server (stations with none left out)."""
        spec = self.spec
        lock = sum(spec.cost_s(op) * n for op, n in item.ops if item.shared_dir and op in MODIFYING)
        cpu = sum(spec.cost_s(op) * n for op, n in item.ops) - lock
        out = [Station("threads", cpu, float(spec.service_threads))]
        if lock > 0:
            width = min(spec.shared_dir_parallelism, spec.service_threads)
            out.append(Station("dir", lock, float(width)))
        dev = self.device
        if dev is not None:
            written = sum(spec.journal_B(op) * n for op, n in item.ops)
            drives = dev.drives / self.servers if dev.shared else float(dev.drives)
            out.append(Station("device", dev.write_s(written), drives))
        return [s for s in out if s.demand_s > 0]

    def items_per_s(
        self, clients: int, item: MdItem, round_trip_s: float, servers: int, routing: Routing
    ) -> float:
        """Items per second of ``clients`` closed-loop ranks on ``servers`` of the servers.

        Parameters
        ----------
        clients : int
            Ranks, each with one item in flight (>= 1).
        item : MdItem
            What one item costs.
        round_trip_s : float
            Zero-load time (s) of one metadata RPC outside the server: wire both
            ways (``client_overhead`` is added here).
        servers : int
            Servers the items use (1..``self.servers``).
        routing : {"fixed", "random"}
            ``fixed``: each rank uses one server, ranks dealt evenly; ``random``:
            each item picks a server at random.

        Returns
        -------
        float
            Items completed per second by all ranks.
        """
        if clients < 1:
            raise ValueError(f"clients(={clients}) must be >= 1")
        if not 1 <= servers <= self.servers:
            raise ValueError(f"servers(={servers}) must be in 1..{self.servers}")
        rtt = round_trip_s + float(self.spec.client_overhead)
        delay = self.rpcs(item) * rtt + item.extra_s
        stations = self.stations(item)
        if not stations:
            return clients / delay if delay > 0 else math.inf
        no_wait = delay + sum(s.demand_s for s in stations)
        fewest = min(s.servers for s in stations)
        neck = max(stations, key=lambda s: s.per_server_s)
        c = neck.servers
        delay += sum(s.demand_s for s in stations if s is not neck)
        delay += neck.demand_s * (c - 1.0) / c  # Seidmann: the c-server station's delay part
        service = neck.per_server_s
        if routing == "random":
            if clients <= fewest:  # never more items at a station than it has servers: exact
                return clients / no_wait
            total = clients * closed_loop_rpcs_per_s(clients, 1, delay, service, servers)
            return min(total, servers / service)
        used = min(servers, clients)
        base, extra = divmod(clients, used)
        total = 0.0
        for n, count in ((base + 1, extra), (base, used - extra)):
            if count and n:
                if n <= fewest:  # exact: no item ever waits
                    total += count * n / no_wait
                    continue
                rate = n * closed_loop_rpcs_per_s(n, 1, delay, service, 1)
                total += count * min(rate, 1.0 / service)  # MVA may overshoot by ~0.2 %
        return total

    def capacity_items_per_s(self, item: MdItem, servers: int) -> float:
        """Saturation rate (items/s) of ``servers`` servers: their bottleneck station's capacity."""
        stations = self.stations(item)
        if not stations:
            return math.inf
        return servers / max(s.per_server_s for s in stations)

    # ---------------------------------------------------- request fidelity
    def _queue(self, env: simpy.Environment, key: str, servers: int) -> FifoQueue:
        queue = self._queues.get(key)
        if queue is None:
            queue = FifoQueue(env, f"{self.name}.{key}", servers, kind="metadata")
            self._queues[key] = queue
        return queue

    def item_request(
        self,
        sim: Simulation,
        item: MdItem,
        round_trip_s: float,
        server: int,
    ) -> Generator[simpy.Event, Any, None]:
        """Request fidelity: perform one item on ``server`` (SimPy generator).

        Each operation spends its round trip as a pure delay, then holds a
        service thread (or, for a modifying operation in a shared directory,
        the directory shard's lock) for its cost, then (create, unlink) the
        device.  Fractional counts other than ``readdir_entry`` round to whole
        operations.
        """
        env = sim.env
        spec = self.spec
        rtt = round_trip_s + float(spec.client_overhead)
        per = spec.readdir_entries_per_rpc
        threads = self._queue(env, f"mds{server}.threads", spec.service_threads)
        for op, n in item.ops:
            if op == "readdir_entry":
                count, wire = 1, rtt * n / per
                cost = spec.cost_s(op) * n
            else:
                count, wire, cost = round(n), rtt, spec.cost_s(op)
            for _ in range(count):
                if wire > 0:
                    yield env.timeout(wire)
                if item.shared_dir and op in MODIFYING:
                    width = min(spec.shared_dir_parallelism, spec.service_threads)
                    yield self._queue(env, f"mds{server}.dir", width).visit(cost)
                elif cost > 0:
                    yield threads.visit(cost)
                written = spec.journal_B(op)
                if self.device is not None and written > 0:
                    dev = self.device
                    key = "device" if dev.shared else f"mds{server}.device"
                    yield self._queue(env, key, dev.drives).visit(dev.write_s(written))
        if item.extra_s > 0:
            yield env.timeout(item.extra_s)

    def requests(
        self,
        sim: Simulation,
        item: MdItem,
        round_trip_s: float,
        servers: int,
        routing: Routing,
        rng: np.random.Generator,
    ) -> Callable[[int], Generator[simpy.Event, Any, None]]:
        """Request fidelity: a maker of one ``item`` of a rank on ``servers`` of the servers."""

        def request(rank: int) -> Generator[simpy.Event, Any, None]:
            server = self.pick_server(rank, servers, routing, rng)
            return self.item_request(sim, item, round_trip_s, server)

        return request

    def pick_server(
        self, rank: int, servers: int, routing: Routing, rng: np.random.Generator
    ) -> int:
        """The server of ``rank``'s next item: dealt round robin (fixed) or drawn (random)."""
        if routing == "fixed":
            return rank % servers
        return int(rng.integers(servers))
