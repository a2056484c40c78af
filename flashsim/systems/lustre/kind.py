"""``kind = "lustre"``: OSS/OST servers, compute-node clients and the fabric between them.

The system is assembled from components written once (NIC ports, drives,
RAID engines, the fabric) by :mod:`flashsim.systems.lustre.core`; what one
server operation costs is :mod:`flashsim.systems.lustre.cost`; IOR's paths
and requests are :mod:`flashsim.systems.lustre.ior`; the server-side tests
are :mod:`flashsim.systems.lustre.phases`; ``describe`` and the model checks
are :mod:`flashsim.systems.lustre.describe`.

Phases: ``ior`` (:mod:`flashsim.workloads.ior`), ``io500`` (:mod:`flashsim.workloads.io500`,
metadata on the MDSs: :mod:`flashsim.systems.lustre.io500`), ``obdfilter-survey`` (one OST
without clients or network), ``lnet-selftest`` (servers' network alone) and
``block-io`` (fair-lio block I/O to the targets behind a controller,
:mod:`flashsim.systems.lustre.blockio`), among others listed in ``own_phases``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flashsim.components.fabric_spec import BackgroundJobSpec
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.systems.base import Description, Fidelity, SystemKind
from flashsim.systems.lustre.aging import OstAgingPhase, run_ost_aging
from flashsim.systems.lustre.blockio import BlockIoPhase, run_block_io
from flashsim.systems.lustre.checks import check_model, check_phase
from flashsim.systems.lustre.data_loss import DataLossPhase, run_data_loss
from flashsim.systems.lustre.degraded import DegradedSurveyPhase, run_degraded_survey
from flashsim.systems.lustre.describe import describe_model
from flashsim.systems.lustre.fleet import (
    IorStragglersPhase,
    ObdfilterFleetPhase,
    StripeRiskPhase,
    run_ior_stragglers,
    run_obdfilter_fleet,
    run_stripe_risk,
)
from flashsim.systems.lustre.io500 import LustreIo500
from flashsim.systems.lustre.ior import MAX_REQUEST_CONCURRENCY
from flashsim.systems.lustre.jobs import LustreJobs
from flashsim.systems.lustre.model import LustreModel
from flashsim.systems.lustre.phases import (
    LnetSelftestPhase,
    LnetSurveyPhase,
    ObdfilterPhase,
    run_lnet,
    run_lnet_survey,
    run_obdfilter,
)
from flashsim.systems.lustre.production import ProductionAgingPhase, run_production_aging
from flashsim.systems.lustre.rebuild import RebuildPhase, run_rebuild
from flashsim.workloads.darshan import DarshanPhase, run_darshan
from flashsim.workloads.io500 import Io500Phase, Io500Target, run_io500
from flashsim.workloads.ior import IorPhase, IorRunner, IorTarget, IorTargetDefaults
from flashsim.workloads.jobs import JobsPhase, run_jobs
from flashsim.workloads.mix_phase import MixPhase, run_mix
from flashsim.workloads.production import ProductionPhase, ProductionTarget, run_production
from flashsim.workloads.replay import JobTarget

__all__ = [
    "MAX_REQUEST_CONCURRENCY",
    "LnetSelftestPhase",
    "LnetSurveyPhase",
    "Lustre",
    "LustreKind",
    "ObdfilterPhase",
]


class Lustre(LustreJobs, LustreIo500, IorTargetDefaults):
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
        elif isinstance(phase, ObdfilterFleetPhase):
            result = run_obdfilter_fleet(self, phase)
        elif isinstance(phase, StripeRiskPhase):
            result = run_stripe_risk(self, phase)
        elif isinstance(phase, IorStragglersPhase):
            result = run_ior_stragglers(self, self.ior, phase)
        elif isinstance(phase, OstAgingPhase):
            result = run_ost_aging(self, phase, phase.fidelity or self.fidelity)
        elif isinstance(phase, ProductionAgingPhase):
            result = run_production_aging(self, phase)
        elif isinstance(phase, RebuildPhase):
            result = run_rebuild(self, phase)
        elif isinstance(phase, DegradedSurveyPhase):
            result = run_degraded_survey(self, phase)
        elif isinstance(phase, DataLossPhase):
            result = run_data_loss(self, phase)
        elif isinstance(phase, BlockIoPhase):
            result = run_block_io(self, phase)
        elif isinstance(phase, DarshanPhase):
            result = run_darshan(self, phase, phase.fidelity or self.fidelity, self.sim.seed)
        elif isinstance(phase, MixPhase):
            result = run_mix(self, phase, phase.fidelity or self.fidelity, self.sim.seed)
        elif isinstance(phase, JobsPhase):
            result = run_jobs(
                self, phase, phase.fidelity or self.fidelity, self.sim.seed, self._fresh
            )
        elif isinstance(phase, Io500Phase):
            result = run_io500(self, phase, self.fidelity)
        elif isinstance(phase, ProductionPhase):
            result = run_production(self, phase)
        else:
            raise TypeError(f"unsupported phase {phase!r}")
        self.account_wear()
        return result

    # The timeline's background events (systems.base hooks) act on the fabric.
    def check_background(self, jobs: Sequence[BackgroundJobSpec]) -> None:
        """Refuse background jobs the fabric cannot carry (``ValueError``)."""
        self.fabric.check_background_jobs(jobs)

    def start_background(self, name: str, jobs: Sequence[BackgroundJobSpec]) -> None:
        """Start fabric background ``jobs`` now under the label ``name``."""
        self.fabric.start_background_jobs(name, jobs)

    def stop_background(self, name: str) -> None:
        """Stop the fabric background traffic started under ``name``."""
        self.fabric.stop_background_jobs(name)

    def _fresh(self) -> Lustre:
        """A new system of the same model and seed, for a job run alone."""
        return Lustre(self.model, Simulation(self.sim.seed), self.fidelity)


class LustreKind(SystemKind):
    """The ``lustre`` system kind."""

    model_type = LustreModel
    built_type = Lustre
    implements = (IorTarget, JobTarget, Io500Target, ProductionTarget)
    own_phases = (
        ObdfilterPhase,
        LnetSelftestPhase,
        LnetSurveyPhase,
        ObdfilterFleetPhase,
        StripeRiskPhase,
        IorStragglersPhase,
        OstAgingPhase,
        ProductionAgingPhase,
        RebuildPhase,
        DegradedSurveyPhase,
        DataLossPhase,
        BlockIoPhase,
    )

    def check(self, model: LustreModel) -> None:
        """Cross-field checks; raise ``ValueError("dotted.key: message")``."""
        check_model(model)

    def check_phase(self, model: LustreModel, phase: Any) -> None:
        """Indices in the model, stripes within the OSTs, size estimate (checks.py)."""
        check_phase(model, phase)

    def describe(self, model: LustreModel) -> Description:
        """Per-layer peaks of one OSS and of the system, and the bottlenecks."""
        return describe_model(model)
