"""What a system kind provides: a model schema, a builder and a describer.

A system kind is named by the ``kind`` key of a model file (the registry is
:mod:`flashsim.systems`).  Its :class:`SystemKind` validates the file
(a :class:`KindModel`), builds the components inside a
:class:`~flashsim.engine.simulation.Simulation` (a :class:`BuiltSystem`) and
runs workload phases on them; :meth:`SystemKind.describe` gives the
theoretical peak of each layer without running anything.  This module is
shared by every kind and names none of them.
"""

from __future__ import annotations

import math
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, Field

from flashsim.components.fabric_spec import BackgroundJobSpec
from flashsim.components.target_state import StatefulTarget, SystemStatus
from flashsim.config import StrictModel
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.measurements.record import Conditions
from flashsim.workloads.registry import phase_union, protocol_methods

Fidelity = Literal["flow", "request"]


class KindModel(StrictModel):
    """The keys every model file starts with, whatever its kind.

    A kind's schema extends it and narrows ``kind`` to its own value
    (``kind: Literal["<kind>"]``); the three keys stay first, in this order.
    """

    kind: str
    name: str = Field(description="System name, for reports.")
    description: str = Field("", description="Free text, for reports.")


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


def no_such(key: str, what: str, index: int, count: int) -> ValueError:
    """The input error for ``what`` ``index`` (an OSS, an OST, a drive) of a system of ``count``.

    Raised as ``ValueError("key: ...")``, which the scenario loader reports as one
    line naming the key.
    """
    return ValueError(
        f"{key}: {what} {index} does not exist; the system has {count} (0..{count - 1})"
    )


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

    # ...................................................... target state
    # The one interface the timeline (events, fast-forward, state reports) uses on every
    # kind (components.target_state); a kind without stateful targets keeps these defaults.
    def target_count(self) -> int:
        """Storage targets in the system (OSTs, DBox tiers, drive groups); 0 if none."""
        return 0

    def target(self, index: int) -> StatefulTarget:
        """Target ``index`` (built on first use); ``ValueError("target: ...")`` outside it."""
        raise ValueError(f"target: index {index}: this system has no stateful targets")

    def built_targets(self) -> list[tuple[int, StatefulTarget]]:
        """The targets built so far, (index, target) in index order; the others are fresh."""
        return []

    def status(self) -> SystemStatus:
        """The state of every target now (unbuilt targets count as fresh)."""
        built = [(i, t.status()) for i, t in self.built_targets()]
        return SystemStatus.of(self.sim.now, self.target_count(), built)

    def server_count(self) -> int:
        """Servers that may fail over to a partner; 0 if the kind models none."""
        return 0

    def fail_server(self, index: int) -> None:
        """Server ``index`` fails now; its partner serves its targets (``ValueError`` if none)."""
        raise ValueError(f"server: index {index}: this system kind models no server failover")

    def restore_server(self, index: int) -> None:
        """Server ``index`` serves its own targets again."""
        raise ValueError(f"server: index {index}: this system kind models no server failover")

    def reset_state(self) -> None:
        """Give every target fresh state (drives, failures, buffers): a scenario's ``reset``."""
        for _, t in self.built_targets():
            t.reset()

    # ................................................ fabric background (timeline events)
    def check_background(self, jobs: Sequence[BackgroundJobSpec]) -> None:
        """Refuse background ``jobs`` this system's fabric cannot carry (``ValueError``)."""
        raise ValueError("background: this system has no fabric to carry background traffic")

    def start_background(self, name: str, jobs: Sequence[BackgroundJobSpec]) -> None:
        """Start fabric background traffic ``jobs`` now, under the label ``name``.

        The jobs are the model's ``fabric.background`` tables; a system kind
        with a fabric overrides this (an event ``background-start``).
        """
        raise ValueError("background: this system has no fabric to carry background traffic")

    def stop_background(self, name: str) -> None:
        """Stop the background traffic started under ``name`` (an event ``background-stop``)."""
        raise ValueError("background: this system has no fabric to carry background traffic")


def _kind_literal(model_type: type[BaseModel]) -> str | None:
    """The one ``kind`` value a model schema allows (``Literal["<kind>"]``), else ``None``."""
    field = model_type.model_fields.get("kind")
    if field is None or get_origin(field.annotation) is not Literal:
        return None
    values = get_args(field.annotation)
    return values[0] if len(values) == 1 and isinstance(values[0], str) else None


class SystemKind(ABC):
    """A family of systems that share a model-file schema and a builder.

    A concrete kind declares the workload protocols its built system
    implements (:attr:`implements`) and the phases only it runs
    (:attr:`own_phases`); its :attr:`phase_type` is derived from them and the
    workload registry (:func:`flashsim.workloads.registry.phase_union`) when
    the class is created, and must not be set by hand.  Its :attr:`kind` is
    the one value its :attr:`model_type` allows for ``kind``
    (``kind: Literal["<kind>"]`` of a :class:`KindModel`), unless set.
    """

    #: The ``kind`` value in model files (derived from :attr:`model_type` when not set).
    kind: str
    #: Pydantic schema of the model file.
    model_type: type[BaseModel]
    #: The built system's class; constructed as ``built_type(model, sim, fidelity)``.
    built_type: Callable[[Any, Simulation, Fidelity], BuiltSystem]
    #: Workload protocols (e.g. ``IorTarget``) that :attr:`built_type` implements: every
    #: registered workload using one of them is accepted by this kind.
    implements: tuple[type[Any], ...] = ()
    #: Phase models only this kind runs (its own tests), and subclasses that replace a
    #: registered workload's phase model for this kind (same ``workload`` value).
    own_phases: tuple[type[BaseModel], ...] = ()
    #: Pydantic-validatable type of one phase of a scenario on this kind (derived).
    phase_type: Any

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "phase_type" in vars(cls):
            raise TypeError(
                f"{cls.__name__}: phase_type is derived from `implements` and `own_phases`; "
                "declare those instead"
            )
        declared = _kind_literal(cls.model_type) if "model_type" in vars(cls) else None
        if "kind" not in vars(cls) and declared is not None:
            cls.kind = declared
        elif declared is not None and cls.kind != declared:
            raise TypeError(f"{cls.__name__}: kind {cls.kind!r} but its model's is {declared!r}")
        if "implements" not in vars(cls) and "own_phases" not in vars(cls):
            return  # an intermediate class: nothing declared here
        if not isinstance(getattr(cls, "kind", None), str):
            raise TypeError(
                f"{cls.__name__}: no kind: give model_type a field kind: Literal['<kind>'] "
                "(a KindModel) or set kind"
            )
        owner = cls.kind
        cls.phase_type = phase_union(owner, cls.implements, cls.own_phases)
        built = vars(cls).get("built_type")
        if isinstance(built, type):
            for proto in cls.implements:
                missing = [m for m in protocol_methods(proto) if not hasattr(built, m)]
                if missing:
                    raise TypeError(
                        f"kind {owner!r}: {built.__name__} implements {proto.__name__} but "
                        f"lacks {', '.join(missing)}"
                    )

    def build(self, model: Any, sim: Simulation, fidelity: Fidelity) -> BuiltSystem:
        """Create the components of ``model`` inside ``sim``."""
        return self.built_type(model, sim, fidelity)

    @abstractmethod
    def describe(self, model: Any) -> Description:
        """Component counts and per-layer theoretical peaks."""

    def check(self, model: Any) -> None:  # noqa: B027 - optional hook
        """Cross-field consistency checks; raise ``ValueError`` naming the key."""

    def ior_reproduction(
        self, model: Any, conditions: Conditions, phases: Sequence[dict[str, Any]]
    ) -> list[dict[str, Any]] | str:
        """The scenario phases that reproduce a measured IOR test on this kind.

        ``phases`` are the generic ``ior`` phases built from the measurement's
        ``conditions`` (:func:`flashsim.measurements.reproduce.plan_ior`: the
        write of a read's files, then the measured test).  A kind whose systems
        need a state the output does not record (e.g. a full write buffer, an
        aged dataset) adds phases around them; the default adds none.  Return
        the phases, or a reason the measurement cannot be reproduced.
        """
        return list(phases)

    def check_phase(self, model: Any, phase: Any) -> None:  # noqa: B027 - optional hook
        """Check one validated phase against ``model`` before anything is built.

        Raise ``ValueError("key: message")`` with ``key`` relative to the phase
        (``ost``, ``layout.stripe_count``) for indices outside the model and for
        runs whose estimated size exceeds :data:`MAX_PATH_ENTRIES` or
        :data:`MAX_STREAMS`; warn (:func:`flashsim.config.warn`) about
        accepted knobs the kind does not model.
        """


#: Most flow-path entries (resource, weight) a run may create, estimated as flows x
#: resources per flow: 50 million entries are ~5.5 GB (:data:`BYTES_PER_PATH_ENTRY`).
MAX_PATH_ENTRIES = 50_000_000

#: Memory one path entry costs in the flow solver's arrays and Python objects (measured:
#: 20,000 flows over 20 resources added 111 B per entry to the resident set).
BYTES_PER_PATH_ENTRY = 110


def machine_memory_B() -> float:
    """Physical memory of this machine in bytes (``inf`` where unknown)."""
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return math.inf


#: Most concurrent streams (flows, or closed-loop customers in request fidelity) one
#: phase may start: each is a Python object of ~1 kB plus its path.
MAX_STREAMS = 2_000_000


#: Most request completions a request-fidelity phase may ask for (``max_requests``): SimPy
#: handles ~10^5 events/s, so 10^8 requests of a few events each are about an hour.
MAX_REQUESTS = 100_000_000

#: Throughput samples request fidelity always takes before it may stop (run-length control).
MIN_SAMPLES = 40

#: Most rank-repetitions (ranks x repetitions, over every combination of a grid) one phase
#: may simulate: each runs its own flows, ~10^4 per second.
MAX_RANK_RUNS = 2_000_000


def rank_runs(phase: Any) -> int:
    """Upper bound of ranks x repetitions a phase simulates (grids: over every combination)."""

    def top(value: Any) -> int:
        if isinstance(value, list):
            return max((v for v in value if isinstance(v, int)), default=1)
        return value if isinstance(value, int) else 1

    def width(value: Any) -> int:
        return len(value) if isinstance(value, list) else 1

    nodes = getattr(phase, "nodes", 1)
    per_node = getattr(phase, "ranks_per_node", 1)
    sizes = getattr(phase, "transfer_sizes", None)
    combos = width(nodes) * width(per_node) * width(sizes)
    return top(getattr(phase, "repetitions", 1)) * top(nodes) * top(per_node) * combos


def check_work(phase: Any) -> None:
    """Refuse a phase whose simulated work exceeds :data:`MAX_REQUESTS` or :data:`MAX_RANK_RUNS`.

    Raises ``ValueError("key: message")`` with ``key`` relative to the phase.
    """
    requests = getattr(phase, "max_requests", None)
    if isinstance(requests, int) and requests > MAX_REQUESTS:
        raise ValueError(
            f"max_requests: {requests:,} requests (~{requests / 1e5 / 3600:.2g} h at 10^5 "
            f"events/s); at most "
            f"{MAX_REQUESTS:,} are allowed"
        )
    interval = getattr(phase, "sample_interval_requests", None)
    if isinstance(interval, int) and interval * MIN_SAMPLES > MAX_REQUESTS:
        raise ValueError(
            f"sample_interval_requests: {MIN_SAMPLES} samples of {interval:,} requests are "
            f"at least {interval * MIN_SAMPLES:,} requests; at most {MAX_REQUESTS:,} are allowed"
        )
    runs = rank_runs(phase)
    if runs > MAX_RANK_RUNS:
        raise ValueError(
            f"repetitions: repetitions x ranks (over every combination) = {runs:,} rank runs; "
            f"at most {MAX_RANK_RUNS:,} are allowed (each simulates its own flows)"
        )


def check_size(key: str, streams: int, entries_per_stream: int, what: str) -> None:
    """Refuse a phase whose estimated size exceeds :data:`MAX_STREAMS` or :data:`MAX_PATH_ENTRIES`.

    Parameters
    ----------
    key : str
        Phase key to name in the message (e.g. ``nodes``).
    streams : int
        Flows or customers the phase would create.
    entries_per_stream : int
        Resources on each stream's path.
    what : str
        How the numbers were estimated, for the message.
    """
    entries = streams * max(entries_per_stream, 1)
    if streams > MAX_STREAMS:
        raise ValueError(
            f"{key}: {what} gives {streams:,} streams; at most {MAX_STREAMS:,} fit in memory"
        )
    need_B = entries * BYTES_PER_PATH_ENTRY
    have_B = machine_memory_B()
    if entries > MAX_PATH_ENTRIES or need_B > have_B / 2:
        raise ValueError(
            f"{key}: {what} gives {streams:,} streams x {entries_per_stream:,} resources = "
            f"{entries:,} path entries (~{need_B / 1e9:.3g} GB; this machine has "
            f"{have_B / 1e9:.3g} GB); at most {MAX_PATH_ENTRIES:,} entries and half the "
            "memory are allowed"
        )
