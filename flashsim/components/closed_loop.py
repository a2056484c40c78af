"""Closed-loop throughput of synchronous ranks at deterministic FCFS servers (approximate MVA).

Each of ``ranks`` ranks keeps ``slots`` requests in flight; a request spends a
fixed delay (wire, protocol, media latency) and holds one of ``drives`` shared
servers, picked at random, for ``drive_s`` seconds, deterministically
(:class:`~flashsim.engine.queues.FifoQueue` service).  Used by the ``vast``
kind's O_DIRECT and random ranks (the servers are SCM drives) and by the
metadata service (:mod:`flashsim.components.mds`; the servers are MDSs).

This is :func:`flashsim.components.nfs.closed_loop_reader_rpcs_per_s`
(Schweitzer's approximate MVA) without the copy stage and with the residual
service of a deterministic server: an arriving request waits for the queue it
sees, less half a service for the one in service (``(1 - cv^2) / 2`` of the
utilisation it sees; Reiser's approximation, Lazowska et al., *Quantitative
System Performance*, 1984, §7.5 and ch. 10).
"""

from __future__ import annotations

import math


def closed_loop_rpcs_per_s(
    ranks: int,
    slots: int,
    delay_s: float,
    drive_s: float,
    drives: int,
    rtol: float = 1e-10,
    max_iter: int = 100_000,
) -> float:
    """RPC completions per second of one of ``ranks`` identical closed-loop ranks.

    Parameters
    ----------
    ranks : int
        Ranks sharing the drives (>= 1).
    slots : int
        RPCs each rank keeps in flight (>= 1).
    delay_s : float
        Seconds (>= 0) of pure delay per RPC (everything but the drive's data stage).
    drive_s : float
        Seconds (> 0) an RPC holds the data stage of the drive it visits (picked at random).
    drives : int
        Shared drives (>= 1).

    Returns
    -------
    float
        RPCs/s of one rank; never above ``slots / (delay_s + drive_s)`` nor, in
        total, ``drives / drive_s``; exact for one RPC in flight.
    """
    if ranks < 1 or slots < 1 or drives < 1:
        raise ValueError(f"ranks(={ranks}), slots(={slots}) and drives(={drives}) must be >= 1")
    if not (drive_s > 0 and math.isfinite(drive_s)):
        raise ValueError(f"drive_s(={drive_s}) must be a finite number > 0")
    if not (delay_s >= 0 and math.isfinite(delay_s)):
        raise ValueError(f"delay_s(={delay_s}) must be a finite number >= 0")
    n = float(slots)
    customers = ranks * n
    per_drive_s = drive_s / drives  # mean demand of one RPC on one drive
    x = n / (delay_s + drive_s)
    q = x * per_drive_s  # one rank's RPCs at one drive
    for _ in range(max_iter):
        seen = q * (ranks - 1.0 / n)  # RPCs an arriving RPC finds at a drive (Schweitzer)
        busy = ranks * x * per_drive_s * (customers - 1.0) / customers
        r = per_drive_s * (1.0 + seen - 0.5 * busy)  # deterministic: half a residual service
        x_new = n / (delay_s + drives * r)
        done = abs(x_new - x) <= rtol * x_new
        x = 0.5 * (x + x_new)
        q = 0.5 * (q + x_new * r)
        if done:
            break
    return float(x)
