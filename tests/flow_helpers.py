"""Test helpers for the flow engine: the rates a from-scratch max-min solve gives, and a
network that repairs every new bottleneck (the reference the class paths are checked against)."""

from __future__ import annotations

import numpy as np

from flashsim.engine.flowclasses import FlowSpec
from flashsim.engine.flows import FlowNetwork
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
