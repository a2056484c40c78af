"""Test helpers for the flow engine: the rates a from-scratch max-min solve gives."""

from __future__ import annotations

import numpy as np

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
