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
  ``fs/nfs/internal.h``), so its rate is at most ``15 * rsize / RTT``;
* **O_DIRECT**: no cache; a call of ``t`` bytes issues ``ceil(t / wsize)``
  RPCs at once and returns when all complete.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field

from flashsim.components.nic import Direction, NicSpec
from flashsim.config import Bandwidth, Bytes, NonNegativeSeconds, StrictModel, UnitFraction


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
    copy_bandwidth: Bandwidth
    syscall_overhead: NonNegativeSeconds = 0.0


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
