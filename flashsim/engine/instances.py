"""Synthetic flow-network instances shaped like a full-system run.

Used by the benchmarks and by tests that need a large, realistic sharing
pattern: client NICs, dragonfly global links, OSS NICs, CPUs, PCIe switches,
RAID sets and drives, with per-component capacity variability.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flashsim.engine.flows import Flow, FlowNetwork, Resource
from flashsim.engine.maxmin import FloatArray, IntArray


@dataclass(frozen=True)
class FlowInstance:
    """A max-min problem in coordinate form (see :func:`solve_maxmin`).

    Attributes
    ----------
    entry_flow, entry_con, entry_coef : ndarray
        Entries sorted by flow.
    capacity : ndarray
        Constraint capacities (bytes/s).
    level_cap : ndarray
        Flow rate caps (bytes/s), ``inf`` where uncapped.
    priority : ndarray
        Flow share weights.
    paths : list of list of (int, float)
        The same entries grouped per flow: (constraint, coefficient).
    """

    entry_flow: IntArray
    entry_con: IntArray
    entry_coef: FloatArray
    capacity: FloatArray
    level_cap: FloatArray
    priority: FloatArray
    paths: list[list[tuple[int, float]]]


def full_system_instance(
    seed: int = 0,
    n_flows: int = 50_000,
    n_oss: int = 274,
    n_clients: int = 3_000,
    nics_per_client: int = 4,
    n_global_links: int = 3_342,
    drives_per_ost: int = 12,
    drives_per_flow: int = 8,
    capped_fraction: float = 0.3,
) -> FlowInstance:
    """Build an instance with 20,000 constraints and 15 entries a flow (defaults).

    Each flow goes client NIC -> two global links -> OSS NIC -> OSS CPU ->
    OSS PCIe -> RAID set -> ``drives_per_flow`` drives of that OST, with RAID6
    8+2 weights (10/8 of the user bytes on the drives).  Capacities vary
    lognormally by 5 % per component so bottleneck levels are all distinct.

    Parameters
    ----------
    seed : int
        Seed of the instance's random stream.
    n_flows : int
        Number of flows.
    n_oss, n_clients, nics_per_client, n_global_links, drives_per_ost : int
        Component counts.
    drives_per_flow : int
        Drives on each flow's path.
    capped_fraction : float
        Fraction of flows that carry a rate cap (a concurrency bound).
    """
    rng = np.random.default_rng(seed)
    caps: list[FloatArray] = []
    offset = 0

    def block(count: int, mean_Bps: float) -> int:
        nonlocal offset
        caps.append(mean_Bps * rng.lognormal(0.0, 0.05, count))
        start = offset
        offset += count
        return start

    client_nic = block(n_clients * nics_per_client, 25e9)  # 200 Gb/s Slingshot NIC
    global_link = block(n_global_links, 25e9)
    oss_nic = block(n_oss * 2, 25e9)
    oss_cpu = block(n_oss, 60e9)
    oss_pcie = block(n_oss, 64e9)
    raid = block(n_oss, 50e9)
    drives = block(n_oss * drives_per_ost, 3.5e9)
    capacity = np.concatenate(caps)

    f_client = rng.integers(0, n_clients * nics_per_client, n_flows)
    f_global = rng.integers(0, n_global_links, (n_flows, 2))
    f_oss = rng.integers(0, n_oss, n_flows)
    f_nic = f_oss * 2 + rng.integers(0, 2, n_flows)
    drive_pick = np.argsort(rng.random((n_flows, drives_per_ost)), axis=1)[:, :drives_per_flow]
    f_drives = drives + f_oss[:, None] * drives_per_ost + drive_pick

    cons = np.column_stack(
        [
            client_nic + f_client,
            global_link + f_global,
            oss_nic + f_nic,
            oss_cpu + f_oss,
            oss_pcie + f_oss,
            raid + f_oss,
            f_drives,
        ]
    )
    coefs = np.ones_like(cons, dtype=np.float64)
    coefs[:, 7:] = 10.0 / 8.0 / drives_per_flow
    # Two global hops may pick the same link: merge them into one entry.
    dup = cons[:, 1] == cons[:, 2]
    cons[dup, 2] = global_link + (cons[dup, 2] - global_link + 1) % n_global_links

    level_cap = np.full(n_flows, np.inf)
    capped = rng.random(n_flows) < capped_fraction
    level_cap[capped] = rng.uniform(0.05e9, 1.0e9, capped.sum())
    priority = np.ones(n_flows)

    width = cons.shape[1]
    entry_flow = np.repeat(np.arange(n_flows, dtype=np.int64), width)
    entry_con = cons.reshape(-1).astype(np.int64)
    entry_coef = coefs.reshape(-1)
    paths = [
        list(zip(row.tolist(), crow.tolist(), strict=True))
        for row, crow in zip(cons, coefs, strict=True)
    ]
    return FlowInstance(entry_flow, entry_con, entry_coef, capacity, level_cap, priority, paths)


def load_into(
    network: FlowNetwork, instance: FlowInstance, size_B: float = 1e15
) -> tuple[list[Resource], list[Flow]]:
    """Create the instance's resources and flows (each of ``size_B`` bytes) in ``network``."""
    resources = [
        network.add_resource(f"r{i}", capacity_Bps=float(c))
        for i, c in enumerate(instance.capacity)
    ]
    flows = [
        network.start_flow(
            size_B,
            [(resources[c], w) for c, w in path],
            rate_cap_Bps=float(cap) if np.isfinite(cap) else None,
        )
        for path, cap in zip(instance.paths, instance.level_cap, strict=True)
    ]
    return resources, flows
