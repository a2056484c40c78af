"""flashsim speed and memory benchmarks (``make bench``).

Prints one JSON object per line per benchmark with ``name``, ``value``,
``unit``, ``target`` and ``met``:

* ``request_stage_visits_per_s``: requests through a 4-stage path of
  single-server FIFO queues, beside ``simpy_raw_timeouts_per_s`` measured in
  the same process (target: at least 20 % of the raw rate);
* ``flow_full_resolve_s``: one full max-min re-solve of a full-system-shaped
  instance (50,000 flows over 20,000 resources, 15 resources a path; target
  0.5 s);
* ``flow_incremental_resolve_s``: the start or end of one flow in it (the
  slowest of 100 such events; target 50 ms);
* ``flow_full_resolve_peak_rss_MiB``: peak resident memory of a process that
  builds that instance and solves it (target 1 GiB).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Generator
from typing import Any

import numpy as np
import simpy


def emit(name: str, value: float, unit: str, target: float, higher_is_better: bool) -> bool:
    met = value >= target if higher_is_better else value <= target
    print(json.dumps({"name": name, "value": value, "unit": unit, "target": target, "met": met}))
    sys.stdout.flush()
    return met


def raw_simpy_rate(events: int = 400_000) -> float:
    env = simpy.Environment()

    def ticker(n: int) -> Generator[simpy.Event, Any, None]:
        for _ in range(n):
            yield env.timeout(1.0)

    for _ in range(8):
        env.process(ticker(events // 8))
    start = time.perf_counter()
    env.run()
    return events / (time.perf_counter() - start)


def request_visit_rate(requests: int = 100_000) -> float:
    from flashsim.engine.distributions import Exponential, SampleBuffer
    from flashsim.engine.queues import FifoQueue
    from flashsim.engine.simulation import Simulation

    sim = Simulation(1)
    stages = [
        (FifoQueue(sim.env, f"stage{i}", 1), SampleBuffer(Exponential(1e-6), sim.rng(f"s{i}")))
        for i in range(4)
    ]
    done = 0

    def customer(n: int) -> Generator[simpy.Event, Any, None]:
        nonlocal done
        for _ in range(n):
            for queue, sampler in stages:
                yield queue.visit(sampler.next(), 1e-6)
            done += 1

    for _ in range(16):
        sim.env.process(customer(requests // 16))
    start = time.perf_counter()
    sim.run()
    return 4 * done / (time.perf_counter() - start)


def build_network() -> tuple[Any, list[Any], Any, list[Any]]:
    from flashsim.engine.flows import FlowNetwork
    from flashsim.engine.instances import full_system_instance, load_into

    inst = full_system_instance()
    net = FlowNetwork(simpy.Environment())
    res, flows = load_into(net, inst)
    return net, res, inst, flows


def full_resolve_only() -> None:
    """Child-process entry: build the instance and solve it once (for its peak memory)."""
    net, _res, _inst, _flows = build_network()
    net.solve_now()


def main() -> int:
    ok = True
    raw = raw_simpy_rate()
    emit("simpy_raw_timeouts_per_s", raw, "events/s", 0.0, True)
    visits = request_visit_rate()
    ok &= emit("request_stage_visits_per_s", visits, "visits/s", 0.2 * raw, True)

    net, res, inst, flows = build_network()
    start = time.perf_counter()
    net.solve_now()
    full = time.perf_counter() - start
    assert net.stats["full_solves"] == 1
    ok &= emit("flow_full_resolve_s", full, "s", 0.5, False)

    rng = np.random.default_rng(5)
    times = []
    for _ in range(50):
        i = int(rng.integers(len(flows)))
        start = time.perf_counter()
        net.cancel_flow(flows[i])
        net.solve_now()
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        flows[i] = net.start_flow(1e15, [(res[c], w) for c, w in inst.paths[i]])
        net.solve_now()
        times.append(time.perf_counter() - start)
    assert net.stats["full_solves"] == 1, "an incremental event fell back to a full solve"
    ok &= emit("flow_incremental_resolve_s", max(times), "s", 0.05, False)
    emit("flow_incremental_resolve_median_s", float(np.median(times)), "s", 0.05, False)

    subprocess.run(
        [sys.executable, "-c", "from benchmarks.run import full_resolve_only; full_resolve_only()"],
        capture_output=True,
        check=True,
    )
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    ok &= emit("flow_full_resolve_peak_rss_MiB", peak_mib, "MiB", 1024.0, False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
