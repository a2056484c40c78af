"""The shared-backbone fabric instance of issue 7, run to completion.

K = N/10 client links of 25 GB/s, one backbone of 200 GB/s, S = 64 server
links of 50 GB/s, D = 768 disks of 3.2 GB/s (12 per server).  N flows of
whole-byte sizes uniform in [1, 10] GB, each from a uniformly random client to
a uniformly random disk over client link -> backbone -> server link -> disk,
weight 1.  Variant ``a``: every flow starts at t = 0; variant ``b``: Poisson
starts at lambda = 2 x 200e9 / 5.5e9 per second (twice the backbone's
capacity).  NumPy ``default_rng(42)`` draws the clients, then the disks, then
the sizes, then (variant b) the inter-arrival times.

SimGrid 4.1's LMM solver on the same instance and machine (issue 7): 0.1-0.2 s
for N = 1,000, 15-20 s for N = 10,000 (variant a).

Run ``python -m benchmarks.fabric N [a|b]`` to print one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import simpy

from benchmarks.memory import peak_rss_MiB
from flashsim.engine.flows import FlowNetwork

CLIENT_LINK_Bps = 25e9
BACKBONE_Bps = 200e9
SERVERS = 64
SERVER_LINK_Bps = 50e9
DISKS_PER_SERVER = 12
DISK_Bps = 3.2e9
MEAN_SIZE_B = 5.5e9


@dataclass(frozen=True)
class FabricInstance:
    """Flow endpoints, sizes and start times of one instance."""

    clients: npt.NDArray[np.int64]
    disks: npt.NDArray[np.int64]
    sizes_B: npt.NDArray[np.float64]
    starts_s: npt.NDArray[np.float64]

    @property
    def n_clients(self) -> int:
        """Number of client links, N/10."""
        return max(1, self.sizes_B.size // 10)


def fabric_instance(n_flows: int, variant: str = "a", seed: int = 42) -> FabricInstance:
    """Draw the instance (see the module docstring for the order of draws)."""
    if variant not in ("a", "b"):
        raise ValueError(f"variant(={variant!r}) must be 'a' or 'b'")
    rng = np.random.default_rng(seed)
    n_clients = max(1, n_flows // 10)
    clients = rng.integers(0, n_clients, n_flows)
    disks = rng.integers(0, SERVERS * DISKS_PER_SERVER, n_flows)
    sizes = rng.integers(1_000_000_000, 10_000_000_000, n_flows, endpoint=True).astype(np.float64)
    if variant == "a":
        starts = np.zeros(n_flows)
    else:
        rate = 2 * BACKBONE_Bps / MEAN_SIZE_B
        starts = np.cumsum(rng.exponential(1.0 / rate, n_flows))
    return FabricInstance(clients, disks, sizes, starts)


def run_fabric(inst: FabricInstance) -> tuple[float, FlowNetwork]:
    """Simulate the instance to completion; return the makespan (s) and the network."""
    env = simpy.Environment()
    net = FlowNetwork(env)
    client_links = [
        net.add_resource(f"client{i}", capacity_Bps=CLIENT_LINK_Bps) for i in range(inst.n_clients)
    ]
    backbone = net.add_resource("backbone", capacity_Bps=BACKBONE_Bps)
    server_links = [
        net.add_resource(f"server{i}", capacity_Bps=SERVER_LINK_Bps) for i in range(SERVERS)
    ]
    disks = [
        net.add_resource(f"disk{i}", capacity_Bps=DISK_Bps)
        for i in range(SERVERS * DISKS_PER_SERVER)
    ]
    paths = [
        [
            (client_links[c], 1.0),
            (backbone, 1.0),
            (server_links[d // DISKS_PER_SERVER], 1.0),
            (disks[d], 1.0),
        ]
        for c, d in zip(inst.clients.tolist(), inst.disks.tolist(), strict=True)
    ]
    sizes = inst.sizes_B.tolist()
    if not inst.starts_s.any():
        for size, path in zip(sizes, paths, strict=True):
            net.start_flow(size, path)
    else:

        def arrivals() -> Generator[simpy.Event, Any, None]:
            now = 0.0
            for start, size, path in zip(inst.starts_s.tolist(), sizes, paths, strict=True):
                if start > now:
                    yield env.timeout(start - now)
                    now = start
                net.start_flow(size, path)

        env.process(arrivals())
    env.run()
    return float(env.now), net


def main(argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 else 10_000
    variant = argv[2] if len(argv) > 2 else "a"
    inst = fabric_instance(n, variant)
    start = time.perf_counter()
    makespan, net = run_fabric(inst)
    wall = time.perf_counter() - start
    peak = peak_rss_MiB()
    record = {"flows": n, "variant": variant, "wall_s": wall, "makespan_s": makespan}
    print(json.dumps({**record, "peak_rss_MiB": peak, **net.stats}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
