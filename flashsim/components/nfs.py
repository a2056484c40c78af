"""An NFS-over-RDMA client: nconnect, multipath, rsize/wsize, write-back and read-ahead.

What the client contributes (seed 002 Appendix A; Linux NFS client):

* **multipath + nconnect**: ``nconnect`` connections spread over
  ``local_ports`` HCAs and ``remote_ports`` server virtual IPs, so a client's
  RPCs are spread evenly over ``min(nconnect, local_ports)`` ports and over
  the server nodes its connections reach (no locality: any CNode serves any
  request); without nconnect one connection uses one port and one server;
* **RPC size**: data moves in RPCs of at most ``rsize``/``wsize`` bytes;
* **write-back**: buffered writes are copied into the page cache at the
  process's copy rate (``syscall_overhead + t / copy_bandwidth`` per call);
  write-back starts when dirty pages exceed ``dirty_background_ratio`` of
  memory, and writers block (are throttled to the write-back rate) at
  ``dirty_ratio``; ``fsync`` drains the cache.  In flow fidelity the dirty
  pages are a :class:`~flashsim.components.fluid.FluidBuffer` per client;
* **read-ahead**: a sequential reader keeps ``readahead_rpcs`` RPCs of
  ``rsize`` in flight (Linux sets the NFS read-ahead to
  ``NFS_MAX_READAHEAD = RPC_DEF_SLOT_TABLE - 1 = 15`` RPCs of ``rsize``,
  ``fs/nfs/internal.h``), so its rate is at most ``15 * rsize / RTT``; each
  read-ahead slot is refilled once the process has copied its pages out, so
  a reader is a closed loop of ``readahead_rpcs`` RPCs that cross the
  process's copy, a fixed round trip and, when the data sits on a few drives
  that serve one RPC each, those drives' queues
  (:func:`closed_loop_reader_rpcs_per_s`);
* **O_DIRECT**: no cache; a call of ``t`` bytes issues ``ceil(t / wsize)``
  RPCs at once and returns when all complete.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field

from flashsim.components.nic import Direction, NicSpec
from flashsim.config import (
    Bandwidth,
    Bytes,
    NonNegativeSeconds,
    StrictModel,
    UnitFraction,
    calibratable,
)


class NfsMountSpec(StrictModel):
    """Mount options and client-side costs of an NFS-over-RDMA mount.

    Attributes
    ----------
    nconnect : int
        TCP/RDMA connections per mount.
    local_ports : int
        Client HCAs used (``localports``); 0 means all of the node's ports.
    remote_ports : int
        Server virtual IPs (``remoteports``).
    rsize, wsize : float
        Largest READ/WRITE RPC payload in bytes.
    dirty_background_ratio, dirty_ratio : float
        Fractions of client memory at which write-back starts and writers block.
    readahead_rpcs : int
        RPCs of ``rsize`` the read-ahead window holds.
    copy_bandwidth : float
        Bytes/s one process copies between user memory and the page cache.
    syscall_overhead : float
        Seconds of fixed cost per ``read``/``write`` call.
    """

    nconnect: Annotated[int, Field(ge=1, le=64)] = 1
    local_ports: Annotated[int, Field(ge=0)] = 0
    remote_ports: Annotated[int, Field(ge=1)] = 1
    rsize: Bytes = "1 MiB"
    wsize: Bytes = "1 MiB"
    dirty_background_ratio: UnitFraction = 0.10
    dirty_ratio: UnitFraction = 0.20
    readahead_rpcs: Annotated[int, Field(ge=1)] = 15
    copy_bandwidth: Bandwidth = Field(
        json_schema_extra=calibratable(
            1e8,
            1e11,
            "B/s",
            ["ior", "fio"],
            "one process's buffered read bandwidth from the page cache",
            "VAST test system",
            where=["client.mount"],
        ),
    )
    syscall_overhead: NonNegativeSeconds = "0 s"


class NfsClientSpec(StrictModel):
    """A client node that mounts the file system over NFS/RDMA.

    Attributes
    ----------
    count : int
        Client nodes available.
    memory : float
        DRAM in bytes (the dirty ratios are fractions of it).
    nic : NicSpec
        The node's HCAs.
    mount : NfsMountSpec
        Mount options.
    """

    count: Annotated[int, Field(ge=1)]
    memory: Bytes
    nic: NicSpec
    mount: NfsMountSpec


class NfsClientModel:
    """The client-side arithmetic of an NFS mount (SI floats).

    Parameters
    ----------
    spec : NfsClientSpec
        The client description.
    """

    def __init__(self, spec: NfsClientSpec) -> None:
        self.spec = spec
        self.mount = spec.mount

    @property
    def ports(self) -> int:
        """HCA ports the mount uses: ``localports``, at most one per connection."""
        local = int(self.mount.local_ports or self.spec.nic.ports)
        return min(local, int(self.spec.nic.ports), int(self.mount.nconnect))

    def nic_Bps(self, direction: Direction) -> float:
        """Bytes/s the mount's ports deliver together in ``direction``."""
        return self.ports * self.spec.nic.port_Bps(direction)

    @property
    def dirty_background_B(self) -> float:
        """Dirty bytes at which write-back starts."""
        return float(self.mount.dirty_background_ratio * self.spec.memory)

    @property
    def dirty_limit_B(self) -> float:
        """Dirty bytes at which writers block."""
        return float(max(self.mount.dirty_ratio * self.spec.memory, self.dirty_background_B))

    def copy_rate_Bps(self, transfer_B: float) -> float:
        """Bytes/s one process moves through ``read``/``write`` calls of ``transfer_B`` bytes."""
        per_call_s = float(self.mount.syscall_overhead) + transfer_B / self.mount.copy_bandwidth
        return float(transfer_B / per_call_s)

    def rpcs_per_call(self, transfer_B: float, operation: str) -> int:
        """RPCs one O_DIRECT call of ``transfer_B`` bytes is split into."""
        size = float(self.mount.rsize if operation == "read" else self.mount.wsize)
        return max(1, math.ceil(transfer_B / size - 1e-9))

    def rpc_size_B(self, transfer_B: float, operation: str) -> float:
        """Payload of each RPC of a call of ``transfer_B`` bytes."""
        size = float(self.mount.rsize if operation == "read" else self.mount.wsize)
        return min(transfer_B, size)

    def readahead_B(self) -> float:
        """Bytes a sequential reader keeps in flight."""
        return float(self.mount.readahead_rpcs * self.mount.rsize)

    def direct_rate_Bps(self, transfer_B: float, rpc_rtt_s: float) -> float:
        """Rate of one rank doing synchronous O_DIRECT calls of ``transfer_B`` bytes.

        Parameters
        ----------
        transfer_B : float
            Bytes per call.
        rpc_rtt_s : float
            Zero-load round trip (s) of one RPC of :meth:`rpc_size_B` bytes.
        """
        return float(transfer_B / (self.mount.syscall_overhead + rpc_rtt_s))

    def readahead_slots(self, transfer_B: float) -> int:
        """RPCs a sequential buffered reader keeps in flight: its read-ahead window in ``rsize``."""
        window = max(self.readahead_B(), transfer_B)
        return max(1, math.ceil(window / float(self.mount.rsize) - 1e-9))

    def loaded_read_rate_Bps(
        self,
        transfer_B: float,
        readers: int,
        delay_s: float,
        drive_s: float = 0.0,
        drives: int = 0,
    ) -> float:
        """Rate of one of ``readers`` identical sequential buffered readers under their own load.

        Each reader keeps :meth:`readahead_slots` RPCs of ``rsize`` in flight;
        an RPC crosses a fixed round trip ``delay_s``, possibly one of
        ``drives`` shared drives (``drive_s`` seconds of drive time per RPC on
        average, at a drive picked at random), and then the reader's own copy
        of its pages (:meth:`copy_rate_Bps`), which frees the slot.  Without
        drives this is ``min(copy rate, window / RTT)`` smoothed; with few
        drives and many RPCs in flight, the drives' queues make the aggregate
        approach their capacity gradually rather than at a corner.

        Parameters
        ----------
        transfer_B : float
            Bytes per ``read`` call.
        readers : int
            Concurrent readers sharing the drives (>= 1).
        delay_s : float
            Zero-load round trip (s) of one ``rsize`` RPC excluding ``drive_s``.
        drive_s : float
            Mean drive time (s) one RPC holds a drive.
        drives : int
            Shared drives the RPCs spread over (0: none).
        """
        rsize = float(self.mount.rsize)
        rpcs_per_s = closed_loop_reader_rpcs_per_s(
            readers,
            self.readahead_slots(transfer_B),
            copy_s=rsize / self.copy_rate_Bps(transfer_B),
            delay_s=delay_s,
            drive_s=drive_s,
            drives=drives,
        )
        return float(rpcs_per_s * rsize)

    def buffered_read_rate_Bps(self, transfer_B: float, rpc_rtt_s: float) -> float:
        """Rate of one sequential buffered reader: copy-bound or read-ahead-bound.

        Parameters
        ----------
        transfer_B : float
            Bytes per ``read`` call.
        rpc_rtt_s : float
            Zero-load round trip (s) of one ``rsize`` RPC.
        """
        window = max(self.readahead_B(), transfer_B)
        return float(min(self.copy_rate_Bps(transfer_B), window / rpc_rtt_s))


def closed_loop_reader_rpcs_per_s(
    readers: int,
    slots: int,
    copy_s: float,
    delay_s: float,
    drive_s: float = 0.0,
    drives: int = 0,
    rtol: float = 1e-10,
    max_iter: int = 100_000,
) -> float:
    """RPCs/s each of ``readers`` identical closed-loop readers completes (approximate MVA).

    The closed queueing network: every reader owns ``slots`` circulating RPCs
    (its read-ahead window) and one copy server (``copy_s`` per RPC, its own
    RPCs only); every RPC also spends ``delay_s`` in a pure delay (wire,
    protocol and media latency) and visits one of ``drives`` shared,
    identical FCFS drives picked at random (``drive_s`` of service).  Solved
    by Schweitzer's approximate mean value analysis for symmetric classes
    (Lazowska et al., *Quantitative System Performance*, 1984, ch. 7): an
    arriving RPC sees the stationary queues less itself.  It is exact for one
    RPC, never exceeds ``slots / (copy_s + delay_s + drive_s)`` per reader
    nor ``drives / drive_s`` in total, and approaches the latter gradually as
    RPCs in flight grow (a drive idles while no RPC of the moment is for it).

    Parameters
    ----------
    readers : int
        Readers (>= 1).
    slots : int
        RPCs each reader keeps in flight (>= 1).
    copy_s, delay_s, drive_s : float
        Seconds (>= 0) per RPC at the reader's copy, in the delay, and at a drive.
    drives : int
        Shared drives (0 or ``drive_s == 0``: none).

    Returns
    -------
    float
        RPC completions per second of one reader.
    """
    if readers < 1 or slots < 1:
        raise ValueError(f"readers(={readers}) and slots(={slots}) must be >= 1")
    for label, value in (("copy_s", copy_s), ("delay_s", delay_s), ("drive_s", drive_s)):
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError(f"{label}(={value}) must be a finite number >= 0")
    n = float(slots)
    use_drives = drives >= 1 and drive_s > 0
    per_drive_s = drive_s / drives if use_drives else 0.0
    total_s = copy_s + delay_s + drive_s
    if total_s <= 0:
        raise ValueError("copy_s + delay_s + drive_s must be > 0")
    # Start from the queues of no contention.
    x = n / total_s
    q_copy = x * copy_s
    q_drive = x * per_drive_s  # one reader's RPCs at one drive
    for _ in range(max_iter):
        r_copy = copy_s * (1.0 + q_copy * (n - 1.0) / n)
        r_drive = per_drive_s * (1.0 + q_drive * (readers - 1.0 / n)) if use_drives else 0.0
        x_new = n / (r_copy + delay_s + drives * r_drive)
        q_copy_new = x_new * r_copy
        q_drive_new = x_new * r_drive
        done = abs(x_new - x) <= rtol * x_new
        x = 0.5 * (x + x_new)
        q_copy = 0.5 * (q_copy + q_copy_new)
        q_drive = 0.5 * (q_drive + q_drive_new)
        if done:
            break
    return float(x)
