"""What a system kind provides: a model schema, a builder and a describer.

A system kind (``pipeline``, ``lustre``, ``vast``, ...) is named by the
``kind`` key of a model file.  Its :class:`SystemKind` validates the file,
builds the components inside a :class:`~flashsim.engine.simulation.Simulation`
and runs workload phases on them; :meth:`SystemKind.describe` gives the
theoretical peak of each layer without running anything.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult

Fidelity = Literal["flow", "request"]


@dataclass
class LayerPeak:
    """Theoretical peak of one layer of a system (``None`` where not limiting).

    Attributes
    ----------
    scope : str
        What the peak is for, e.g. ``"one OSS"`` or ``"system"``.
    layer : str
        Layer name, e.g. ``"drives (raw)"``, ``"NIC"``.
    count : int
        How many of the element make up this scope.
    read_Bps, write_Bps : float or None
        Peak user bandwidth in bytes/s.
    read_iops, write_iops : float or None
        Peak user operations/s.
    note : str
        How the number was derived.
    """

    scope: str
    layer: str
    count: int
    read_Bps: float | None = None
    write_Bps: float | None = None
    read_iops: float | None = None
    write_iops: float | None = None
    note: str = ""


@dataclass
class Description:
    """The output of ``flashsim describe``."""

    system: str
    kind: str
    components: dict[str, int]
    layers: list[LayerPeak]
    bottlenecks: dict[str, str] = field(default_factory=dict)
    derived: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "system": self.system,
            "kind": self.kind,
            "components": self.components,
            "layers": [vars(layer) for layer in self.layers],
            "bottlenecks": self.bottlenecks,
            "derived": self.derived,
        }


def bottleneck(layers: list[LayerPeak], scope: str, attr: str) -> str:
    """Name of the layer with the smallest ``attr`` (e.g. ``read_Bps``) in ``scope``."""
    candidates = [
        (getattr(layer, attr), layer.layer)
        for layer in layers
        if layer.scope == scope and getattr(layer, attr) is not None
    ]
    return min(candidates)[1] if candidates else ""


class BuiltSystem(ABC):
    """A system assembled inside a simulation, ready to run phases in order."""

    def __init__(self, sim: Simulation, fidelity: Fidelity) -> None:
        self.sim = sim
        self.fidelity = fidelity

    @abstractmethod
    def run_phase(self, phase: Any) -> PhaseResult:
        """Run one validated phase (state such as data placement carries over)."""


class SystemKind(ABC):
    """A family of systems that share a model-file schema and a builder."""

    #: The ``kind`` value in model files.
    kind: str
    #: Pydantic schema of the model file.
    model_type: type[BaseModel]
    #: Pydantic-validatable type of one phase of a scenario on this kind.
    phase_type: Any
    #: The built system's class; constructed as ``built_type(model, sim, fidelity)``.
    built_type: Callable[[Any, Simulation, Fidelity], BuiltSystem]

    def build(self, model: Any, sim: Simulation, fidelity: Fidelity) -> BuiltSystem:
        """Create the components of ``model`` inside ``sim``."""
        return self.built_type(model, sim, fidelity)

    @abstractmethod
    def describe(self, model: Any) -> Description:
        """Component counts and per-layer theoretical peaks."""

    def check(self, model: Any) -> None:  # noqa: B027 - optional hook
        """Cross-field consistency checks; raise ``ValueError`` naming the key."""
