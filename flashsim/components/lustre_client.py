"""The Lustre client: striping, RPC formation, RPCs in flight and write-back.

* Striping: a file of ``stripe_count`` stripes of ``stripe_size`` spreads its
  bytes round-robin over that many OSTs; the client keeps one OSC per OST.
* RPCs: bulk I/O leaves as RPCs of up to ``rpc_size`` bytes (4 MiB by
  default, ``max_pages_per_rpc`` = 1024 pages); each OSC keeps at most
  ``rpcs_in_flight`` RPCs outstanding (``max_rpcs_in_flight`` = 8) for all
  ranks of the node.  Sequential buffered I/O fills whole RPCs (read-ahead,
  write-back); small random buffered writes are gathered into RPCs of many
  pages, each page a separate server operation; small reads and O_DIRECT
  I/O go out as they are issued.
* Write-back: buffered writes return once copied into the page cache; an OSC
  holds at most ``max_dirty`` dirty bytes, which a write phase can run ahead of
  the server and which ``fsync`` drains.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field

from flashsim.config import Bytes, NonNegativeSeconds, StrictModel


class LustreClientSpec(StrictModel):
    """Client-side Lustre tunables and costs.

    Attributes
    ----------
    rpc_size : float
        Bytes per bulk RPC (``max_pages_per_rpc`` x page size).
    rpcs_in_flight : int
        ``osc.max_rpcs_in_flight`` per OSC.
    max_dirty : float
        ``osc.max_dirty_mb`` in bytes, per OSC.
    page_size : float
        Client page size (bytes).
    syscall_overhead : float
        Client CPU time (s) per I/O call (VFS, llite, locking), a latency.
    stripe_count, stripe_size : int, float
        Default layout of new files.
    """

    rpc_size: Bytes = "4 MiB"
    rpcs_in_flight: Annotated[int, Field(ge=1)] = 8
    max_dirty: Bytes = "2000 MiB"
    page_size: Bytes = "4 KiB"
    syscall_overhead: NonNegativeSeconds = "0 s"
    stripe_count: Annotated[int, Field(ge=1)] = 1
    stripe_size: Bytes = "1 MiB"

    def server_op_B(
        self, transfer_B: float, sequential: bool, direct_io: bool, write: bool
    ) -> float:
        """Bytes per server operation for I/O calls of ``transfer_B`` bytes.

        Sequential buffered I/O is coalesced into full RPCs; O_DIRECT splits a
        call into RPCs of at most ``rpc_size``; small random calls stay as they
        are (a random buffered write becomes one page-sized server operation
        inside a many-page RPC).
        """
        if sequential and not direct_io:
            return float(self.rpc_size)
        return float(min(transfer_B, self.rpc_size))

    def rank_concurrency(
        self, transfer_B: float, sequential: bool, direct_io: bool, write: bool
    ) -> int:
        """Server operations one rank keeps in flight.

        Buffered sequential I/O (read-ahead, write-back) and buffered writes
        keep the OSC's RPC slots busy; a blocking call otherwise waits for its
        own RPCs (``ceil(t / rpc_size)`` of them, at most ``rpcs_in_flight``).
        """
        if not direct_io and (sequential or write):
            return self.rpcs_in_flight * self.ops_per_rpc(transfer_B, sequential, direct_io, write)
        return int(min(self.rpcs_in_flight, max(1, math.ceil(transfer_B / self.rpc_size))))

    def ops_per_rpc(
        self, transfer_B: float, sequential: bool, direct_io: bool, write: bool = True
    ) -> int:
        """Server operations one RPC carries (pages of random buffered writes)."""
        if sequential or direct_io or not write:
            return 1
        return max(1, int(self.rpc_size // max(transfer_B, self.page_size)))

    def write_behind_B(self, direct_io: bool, ranks_on_node: int) -> float:
        """Dirty bytes one rank may run ahead of the server (its share of the OSC's)."""
        if direct_io:
            return 0.0
        return float(self.max_dirty / max(ranks_on_node, 1))
