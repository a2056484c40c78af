"""Test helpers for the flow engine: the rates a from-scratch max-min solve gives, and a
network that repairs every new bottleneck (the reference the class paths are checked against)."""

from __future__ import annotations

from typing import Any

import numpy as np

from flashsim.engine.flowclasses import FlowSpec
from flashsim.engine.flows import Flow, FlowNetwork, Resource, Segment
from flashsim.engine.maxmin import solve_maxmin


def full_solution(net: FlowNetwork) -> np.ndarray:
    """Every active flow's rate (B/s) from one max-min solve of the network as it is now."""
    snap = net.snapshot()
    pc, coef = snap["path_con"], snap["path_coef"]
    mask = pc > 0
    flow = np.broadcast_to(np.arange(pc.shape[0])[:, None], pc.shape)[mask]
    level = solve_maxmin(
        flow.astype(np.int64),
        pc[mask],
        coef[mask],
        snap["con_capacity"],
        snap["level_caps"],
        snap["priorities"],
    )
    return np.asarray(level * snap["priorities"])


def matches_full_solve(net: FlowNetwork) -> bool:
    """Whether the network's rates now equal a from-scratch solve (rtol 1e-9); True when idle."""
    if not net.active_flows:
        return True
    return bool(np.allclose(net.snapshot()["rates_Bps"], full_solution(net), rtol=1e-9))


class RepairOnly(FlowNetwork):
    """The flow network without the class paths for new bottlenecks: they are repaired."""

    def _lone_bottleneck(self, spec: FlowSpec) -> tuple[int, float] | None:
        return None

    def _new_bottlenecks(self, slots: list[int]) -> list[tuple[int, int, float]] | None:
        return None


def run_script(
    net: FlowNetwork, script: dict[str, Any]
) -> tuple[list[float], dict[Any, float], bool]:
    """Run a generated script on ``net``: each flow's end (s), the bytes booked per limit
    (:meth:`FlowNetwork.limit_bytes`), and whether every re-solve matched a full solve.

    ``script``: ``caps`` (resource capacities, B/s), ``segs`` (per segment, its
    ``(resource index, weight)`` entries) and ``flows`` (``(gap s, size B, own
    (resource index, weight) entries, segment indices, rate cap B/s or None, priority)``).
    """
    env = net.env
    res: list[Resource] = [
        net.add_resource(f"r{i}", capacity_Bps=c) for i, c in enumerate(script["caps"])
    ]
    segs: list[Segment] = [
        net.add_segment(f"g{j}", [(res[r], w) for r, w in entries])
        for j, entries in enumerate(script["segs"])
    ]
    flows: list[Flow] = []
    exact = [True]

    def check() -> None:
        exact[0] = exact[0] and matches_full_solve(net)

    def starter() -> Any:
        for gap, size, own, uses, cap, prio in script["flows"]:
            if gap:
                yield env.timeout(gap)
            path: list[tuple[Resource | Segment, float]] = [(res[r], w) for r, w in own]
            path += [(segs[j], 1.0) for j in uses]
            flows.append(net.start_flow(size, path, rate_cap_Bps=cap, priority=prio))

    net.add_rate_listener(check)
    env.process(starter())
    env.run()
    return [f.end_s for f in flows], net.limit_bytes(), exact[0]
