"""``kind = "vast"``: a VAST-like disaggregated SCM/QLC system with NFS-over-RDMA clients.

The kind is split by job:

* :mod:`flashsim.systems.vast.model` -- the model file's schema;
* :mod:`flashsim.systems.vast.phases` -- the phases the kind accepts (IOR with
  data entropy, and the PDSW'21 studies: ``vast-grid``, ``vast-iops-grid``,
  ``vast-size-sweep``);
* :mod:`flashsim.systems.vast.endurance` -- drive wear (``vast-endurance``, issue 9);
* :mod:`flashsim.systems.vast.topology` -- the components and the flow paths
  between them (see there for the path of each operation);
* :mod:`flashsim.systems.vast.network` -- every node's ports (the shared
  :class:`~flashsim.components.nic.NicPorts`), the NVMe fabric and the optional
  client fabric (the shared :class:`~flashsim.components.fabric.Fabric`);
* :mod:`flashsim.systems.vast.request` -- request fidelity (port, fabric and drive queues);
* :mod:`flashsim.systems.vast.streams` -- flow fidelity: the path and rate cap
  of one kind of call, shared by IOR and jobs;
* :mod:`flashsim.systems.vast.jobs` -- Darshan replays, many jobs at once and
  production mixes (the job engine's protocol) through the NFS client;
* :mod:`flashsim.systems.vast.system` -- the built system (IOR protocol);
* :mod:`flashsim.systems.vast.study`, ``study_units``,
  ``study_summary`` -- the study phases: units of IOR tests, each on a
  fresh system, and the figures' numbers;
* :mod:`flashsim.systems.vast.describe` -- ``flashsim describe`` and the checks;
* this module -- the kind, and the public names of all of the above.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from flashsim.components.fabric_spec import FabricSpec
from flashsim.engine.simulation import Simulation
from flashsim.measurements.record import Conditions
from flashsim.systems.base import BuiltSystem, Description, Fidelity, SystemKind
from flashsim.systems.vast.describe import check_model, check_phase, describe_model
from flashsim.systems.vast.endurance import VastEndurancePhase
from flashsim.systems.vast.model import (
    CNodeSpec,
    DNodeSpec,
    TurnoverSpec,
    VastClientSpec,
    VastModel,
)
from flashsim.systems.vast.phases import (
    VastGridPhase,
    VastIopsGridPhase,
    VastIorPhase,
    VastSizeSweepPhase,
)
from flashsim.systems.vast.rebuild import VastRebuildPhase
from flashsim.systems.vast.reproduce import vast_ior_phases
from flashsim.systems.vast.study import run_study_phase
from flashsim.systems.vast.system import VastSystem
from flashsim.tasks import run_tasks
from flashsim.workloads.io500 import Io500Target
from flashsim.workloads.ior import IorTarget
from flashsim.workloads.production import ProductionTarget
from flashsim.workloads.replay import JobTarget

__all__ = [
    "CNodeSpec",
    "DNodeSpec",
    "FabricSpec",
    "TurnoverSpec",
    "VastClientSpec",
    "VastEndurancePhase",
    "VastGridPhase",
    "VastIopsGridPhase",
    "VastIorPhase",
    "VastKind",
    "VastModel",
    "VastRebuildPhase",
    "VastSizeSweepPhase",
    "VastSystem",
]


class VastKind(SystemKind):
    """The ``vast`` system kind."""

    model_type = VastModel
    built_type = VastSystem
    implements = (IorTarget, Io500Target, JobTarget, ProductionTarget)
    own_phases = (
        VastIorPhase,
        VastGridPhase,
        VastIopsGridPhase,
        VastSizeSweepPhase,
        VastEndurancePhase,
        VastRebuildPhase,
    )

    def build(self, model: VastModel, sim: Simulation, fidelity: Fidelity) -> BuiltSystem:
        """A :class:`VastSystem` that runs study phases with :func:`run_study_phase`.

        The study's units run as Dask tasks (:func:`flashsim.tasks.run_tasks`,
        ``phase.workers`` of them; one runs in this process), so ``flashsim run``
        and ``flashsim validate`` use parallel workers; each unit seeds its own
        system, so the rows are the same for any number of workers.
        """
        return VastSystem(
            model, sim, fidelity, studies=partial(run_study_phase, executor=run_tasks)
        )

    def check(self, model: VastModel) -> None:
        """Cross-field checks of the model (see :func:`.describe.check_model`)."""
        check_model(model)

    def ior_reproduction(
        self, model: VastModel, conditions: Conditions, phases: Sequence[dict[str, Any]]
    ) -> list[dict[str, Any]] | str:
        """A measured IOR test on VAST: a full SCM buffer, an aged dataset (``vast_ior_phases``)."""
        return vast_ior_phases(model, conditions, phases)

    def check_phase(self, model: VastModel, phase: Any) -> None:
        """Client nodes within ``client.count``; ranks within :func:`check_size` (h1, issue 11)."""
        check_phase(model, phase)

    def describe(self, model: VastModel) -> Description:
        """Component counts and per-layer peaks (see :func:`.describe.describe_model`)."""
        return describe_model(model)
