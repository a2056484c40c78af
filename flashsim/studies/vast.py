"""The PDSW 2021 VAST study (seed 002) for notebooks: the studies on Dask, and what bounds reads.

The studies themselves are phases of the ``vast`` kind
(:mod:`flashsim.systems.vast.study`; scenarios ``scenarios/vast/*.toml`` run
them, and the validation records read their summaries).  Here the same
units run as :func:`flashsim.tasks.run_tasks` tasks, ``workers`` of them, so
a notebook gets the rows of a full grid in a fraction of the time -- and the
same rows as the scenario, since each unit seeds its own system:

* :func:`run_grid` -- Figs 2 and 3 (naive and aged bandwidth over ``N x p x t``);
* :func:`run_iops_grid` -- Fig. 4 (random 4 KiB writes and reads over ``N x p``);
* :func:`run_size_sweep` -- Fig. 5 (random reads against dataset size);
* :func:`run_study_phase` -- any of them as one phase result;
* :func:`read_limits` -- what bounds sequential reads at each ``N x p``, from
  the model alone.

Figures: :mod:`flashsim.studies.vast_plots`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.systems.vast import study as vast_study
from flashsim.systems.vast.kind import (
    VastGridPhase,
    VastIopsGridPhase,
    VastModel,
    VastSizeSweepPhase,
    VastSystem,
)
from flashsim.systems.vast.study_summary import summarize_grid, summarize_iops, summarize_sizes
from flashsim.systems.vast.study_units import MAX_SEGMENTS, ior_phase
from flashsim.tasks import run_tasks
from flashsim.units import MIB

__all__ = [
    "MAX_SEGMENTS",
    "VastGridPhase",
    "VastIopsGridPhase",
    "VastSizeSweepPhase",
    "ior_phase",
    "read_limits",
    "run_grid",
    "run_iops_grid",
    "run_size_sweep",
    "run_study_phase",
    "summarize_grid",
    "summarize_iops",
    "summarize_sizes",
]

#: The first release's name of :func:`~flashsim.systems.vast.study_units.ior_phase`.
_ior = ior_phase


def run_grid(model: VastModel, phase: VastGridPhase, seed: int = 0) -> pd.DataFrame:
    """Figs 2-3 on Dask; one row per test (mode, op, N, p, x, t, rep, bandwidth, ...).

    See :func:`flashsim.systems.vast.study.run_grid`.
    """
    return vast_study.run_grid(model, phase, seed, run_tasks)


def run_iops_grid(model: VastModel, phase: VastIopsGridPhase, seed: int = 0) -> pd.DataFrame:
    """Fig. 4 on Dask; one row per test (test, N, p, x, rep, iops, ...).

    See :func:`flashsim.systems.vast.study.run_iops_grid`.
    """
    return vast_study.run_iops_grid(model, phase, seed, run_tasks)


def run_size_sweep(model: VastModel, phase: VastSizeSweepPhase, seed: int = 0) -> pd.DataFrame:
    """Fig. 5 on Dask; one row per test (size, SCM fraction, aged, rep, iops, ...).

    See :func:`flashsim.systems.vast.study.run_size_sweep`.
    """
    return vast_study.run_size_sweep(model, phase, seed, run_tasks)


def run_study_phase(model: VastModel, phase: Any, seed: int, fidelity: str = "flow") -> PhaseResult:
    """A study phase on Dask, as the scenario would report it (same rows, same summary).

    See :func:`flashsim.systems.vast.study.run_study_phase`.
    """
    return vast_study.run_study_phase(model, phase, seed, fidelity, run_tasks)


def read_limits(model: VastModel, transfer_B: float = MIB) -> pd.DataFrame:
    """What bounds sequential reads at each ``x = N p`` of Fig. 2/3, from the model alone.

    For each ``x`` (``N = min(8, x)`` clients, ``p = x / N`` processes each):
    the aggregate each candidate mechanism alone would allow, in bytes/s --
    every process at its own read rate (``process_Bps``), every read-ahead
    window over its zero-load round trip (``readahead_Bps``), the client HCAs
    the ``nconnect``/multipath mount uses (``client_hcas_Bps``), the CNodes'
    client ports (``cnode_ports_Bps``), the SCM drives (``scm_Bps``) and the
    QLC drives (``qlc_Bps``) -- and what the model predicts with the drives'
    queues (``naive_Bps``: data in SCM; ``aged_Bps``: data on QLC) with the
    mechanism that binds each.
    """
    system = VastSystem(model, Simulation(0), "flow")
    cm = system.client_model
    rsize = float(cm.mount.rsize)
    window_B = max(cm.readahead_B(), transfer_B)
    n_scm, n_qlc = len(system.scm), len(system.qlc)
    scm_Bps = n_scm * system.scm_spec.read_bandwidth * model.tier.scm_read_efficiency
    qlc_Bps = n_qlc * system.qlc_spec.read_bandwidth
    cnode_Bps = model.cnode.count * model.cnode.client_nic.node_Bps("egress")
    rows = []
    for x in (1, 2, 4, 8, 16, 32, 64, 128):
        n = min(model.client.count, x)
        bounds = {
            "process": x * cm.copy_rate_Bps(transfer_B),
            "read-ahead": x * window_B / system.rtt_s(rsize, "read", 1.0),
            "client HCAs": n * cm.nic_Bps("ingress"),
            "CNode ports": cnode_Bps,
        }
        naive = min(x * system.sequential_read_rate_Bps(transfer_B, x, 1.0), *bounds.values())
        aged = min(
            x * system.sequential_read_rate_Bps(transfer_B, x, 0.0), *bounds.values(), qlc_Bps
        )
        corner = min(*bounds.values(), scm_Bps)
        naive_limit = min(bounds, key=lambda k: bounds[k])
        if naive < 0.97 * min(bounds.values()):
            naive_limit = "SCM drives' queues"
        aged_bounds = {**bounds, "QLC drives": qlc_Bps}
        rows.append(
            {
                "x": x,
                "N": n,
                "p": x // n,
                **{f"{k}_Bps": v for k, v in bounds.items()},
                "scm_Bps": scm_Bps,
                "qlc_Bps": qlc_Bps,
                "corner_naive_Bps": corner,
                "naive_Bps": naive,
                "aged_Bps": aged,
                "naive_limit": naive_limit,
                "aged_limit": min(aged_bounds, key=lambda k: aged_bounds[k]),
            }
        )
    return pd.DataFrame(rows)
