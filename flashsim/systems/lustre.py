"""``kind = "lustre"``: OSS/OST servers, compute-node clients and the fabric between them.

The system is assembled from components written once (NIC ports, drives,
RAID engines, the fabric) by :mod:`flashsim.systems.lustre_core`; what one
server operation costs is :mod:`flashsim.systems.lustre_cost`; IOR's paths
and requests are :mod:`flashsim.systems.lustre_ior`; the server-side tests
are :mod:`flashsim.systems.lustre_phases`; ``describe`` and the model checks
are :mod:`flashsim.systems.lustre_describe`.

Phases: ``ior`` (:mod:`flashsim.workloads.ior`), ``obdfilter-survey`` (one OST
without clients or network) and ``lnet-selftest`` (servers' network alone).
"""

from __future__ import annotations

from typing import Any

from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.systems.base import Description, Fidelity, SystemKind
from flashsim.systems.lustre_checks import check_model, check_phase
from flashsim.systems.lustre_describe import describe_model
from flashsim.systems.lustre_ior import MAX_REQUEST_CONCURRENCY, LustreIor
from flashsim.systems.lustre_model import LustreModel
from flashsim.systems.lustre_phases import (
    LnetSelftestPhase,
    LnetSurveyPhase,
    ObdfilterPhase,
    run_lnet,
    run_lnet_survey,
    run_obdfilter,
)
from flashsim.workloads.ior import IorPhase, IorRunner, IorTarget, IorTargetDefaults

__all__ = [
    "MAX_REQUEST_CONCURRENCY",
    "LnetSelftestPhase",
    "LnetSurveyPhase",
    "Lustre",
    "LustreKind",
    "ObdfilterPhase",
]


class Lustre(LustreIor, IorTargetDefaults):
    """A Lustre system assembled in a simulation; servers and clients are built on first use."""

    def __init__(self, model: LustreModel, sim: Simulation, fidelity: Fidelity) -> None:
        super().__init__(model, sim, fidelity)
        self.ior = IorRunner(self, fidelity)

    def run_phase(self, phase: Any) -> PhaseResult:
        """Run an ``ior``, ``obdfilter-survey`` or ``lnet-selftest`` phase.

        ``obdfilter-survey`` and ``lnet-selftest`` always run in flow fidelity.
        """
        if isinstance(phase, IorPhase):
            result = self.ior.run(phase)
        elif isinstance(phase, ObdfilterPhase):
            result = run_obdfilter(self, phase)
        elif isinstance(phase, LnetSelftestPhase):
            result = run_lnet(self, phase)
        elif isinstance(phase, LnetSurveyPhase):
            result = run_lnet_survey(self, phase)
        else:
            raise TypeError(f"unsupported phase {phase!r}")
        self.account_wear()
        return result


class LustreKind(SystemKind):
    """The ``lustre`` system kind."""

    kind = "lustre"
    model_type = LustreModel
    built_type = Lustre
    implements = (IorTarget,)
    own_phases = (ObdfilterPhase, LnetSelftestPhase, LnetSurveyPhase)

    def check(self, model: LustreModel) -> None:
        """Cross-field checks; raise ``ValueError("dotted.key: message")``."""
        check_model(model)

    def check_phase(self, model: LustreModel, phase: Any) -> None:
        """Indices in the model, stripes within the OSTs, size estimate (lustre_describe)."""
        check_phase(model, phase)

    def describe(self, model: LustreModel) -> Description:
        """Per-layer peaks of one OSS and of the system, and the bottlenecks."""
        return describe_model(model)
