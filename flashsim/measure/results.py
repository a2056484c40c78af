"""Result records shared by both fidelities, with JSON and DataFrame views."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd


@dataclass
class PhaseResult:
    """What one workload phase measured.

    Attributes
    ----------
    name : str
        Phase name from the scenario.
    operation : str
        ``"read"`` or ``"write"`` (or another verb a workload defines).
    bandwidth_Bps : float
        Aggregate bandwidth in bytes/s, as the workload defines it (IOR: total
        bytes over the slowest rank's time).
    iops : float
        Aggregate operations/s (bandwidth over transfer size for streams).
    ranks : int
        Number of concurrent ranks/streams.
    transfer_size_B : float
        Bytes per request.
    sim_time_s : float
        Simulated duration of the phase in seconds.
    bytes_B : float
        Bytes moved by the phase.
    ci_rel_halfwidth : float or None
        Relative 95 % confidence half-width of the steady-state estimate where
        run-length control applied; ``None`` otherwise.
    extra : dict
        Further named measurements (efficiencies, latencies, per-rank times).
    fidelity : str or None
        The fidelity the phase actually ran at (``"flow"``, ``"request"``, or
        for a study of many tests each fidelity used, e.g. ``"flow+request"``);
        ``None`` when the workload does not say.
    """

    name: str
    operation: str
    bandwidth_Bps: float
    iops: float
    ranks: int
    transfer_size_B: float
    sim_time_s: float
    bytes_B: float
    ci_rel_halfwidth: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    fidelity: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` record: SI values plus ``bandwidth_GBps`` (1 GB = 1e9 B)."""
        out = asdict(self)
        out["bandwidth_GBps"] = self.bandwidth_Bps / 1e9
        out["extra"] = {k: _jsonable(v) for k, v in self.extra.items()}
        return {k: _jsonable(v) for k, v in out.items()}


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


@dataclass
class RunResult:
    """All phases of one scenario run."""

    scenario: str
    system: str
    seed: int
    fidelity: str
    wall_time_s: float
    phases: list[PhaseResult]

    def to_dict(self) -> dict[str, Any]:
        """The ``flashsim run --json`` object."""
        return {
            "scenario": self.scenario,
            "system": self.system,
            "seed": self.seed,
            "fidelity": self.fidelity,
            "wall_time_s": self.wall_time_s,
            "phases": [p.to_dict() for p in self.phases],
        }

    def to_dataframe(self) -> pd.DataFrame:
        """One row per phase, scalar extras as columns."""
        rows = []
        for phase in self.phases:
            row = {k: v for k, v in phase.to_dict().items() if k != "extra"}
            row.update(
                {k: v for k, v in phase.extra.items() if isinstance(v, (int, float, str, bool))}
            )
            row["scenario"] = self.scenario
            row["seed"] = self.seed
            rows.append(row)
        return pd.DataFrame(rows)
