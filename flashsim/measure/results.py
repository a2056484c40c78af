"""Result records shared by both fidelities, with JSON and DataFrame views."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # pandas is imported by to_dataframe, not at start-up
    import pandas as pd


@dataclass(frozen=True)
class ResourceLoad:
    """One resource's mean utilisation over a phase (see :mod:`flashsim.measure.bottlenecks`).

    Attributes
    ----------
    name : str
        Dotted component name, e.g. ``perlmutter.oss3.nic0.ingress``.
    kind : str
        Component type, e.g. ``"nic"`` or ``"drive data"``.
    utilization : float
        Work done over capacity available during the phase (dimensionless,
        0..1): for a bandwidth limit bytes moved over the integral of its
        bytes/s, for a time-based limit busy seconds over server-seconds.
    """

    name: str
    kind: str
    utilization: float


@dataclass(frozen=True)
class IntervalLimit:
    """What limited one interval of a phase (see :mod:`flashsim.measure.limits`).

    Attributes
    ----------
    start_s, end_s : float
        The interval, in simulated seconds from the start of the phase (s).
    label : str
        The part of the phase running then (an io500 sub-phase, the jobs
        running together), or ``""`` for a phase without parts.
    limiter : str
        What held most of the interval's bytes back: a resource (or
        ``"<kind> x<n>"`` for several of one kind), a latency or concurrency
        bound named where it was set (``"concurrency: rank window q*t/L"``),
        ``"closed loop ..."`` for request fidelity below saturation, or
        ``"idle"`` when nothing moved.
    kind : str
        The resource kind (``"drive data"``, ``"nic"``) or the bound's kind
        (``"concurrency"``, ``"latency"``, ``"throttle"``, ``"offered load"``,
        ``"rate cap"``), ``"idle"``.
    utilization : float or None
        Mean utilisation of the limiting resource(s) over the interval
        (dimensionless, 0..1); ``None`` for a bound that is no resource.
    share : float
        Fraction of the interval's bytes moved in classes whose rate this
        limit set (dimensionless, 0..1): a saturated resource can limit with a
        share below its bytes when flows' caps tie with it (those bytes count
        for the caps); 1 for request fidelity, 0 for idle or analytic.
    """

    start_s: float
    end_s: float
    label: str
    limiter: str
    kind: str
    utilization: float | None
    share: float


@dataclass(frozen=True, kw_only=True)
class PhaseDetails:
    """Typed details of one phase result (``PhaseResult.extra``); the base has none.

    Each workload or system kind subclasses it next to the runner that fills
    it in (``IorDetails`` in :mod:`flashsim.workloads.ior`, the Lustre tests'
    in :mod:`flashsim.systems.lustre.phases` ...), one frozen dataclass per
    kind of phase, units in the field names.  A field whose value is ``None``
    was not measured and is left out of :meth:`to_dict` (so of ``--json``).
    """

    def findings(self) -> list[str]:
        """Lines for the text report: the phase's headline findings, units included.

        Empty by default; a kind of phase whose bandwidth column does not tell
        its story (a study over time, a distribution) lists what does.
        """
        return []

    def columns(self) -> dict[str, str] | None:
        """The run table's columns for this kind of phase: header -> formatted value.

        ``None`` (the default) for the transfer columns (ranks, transfer size,
        GB/s, MiB/s, IOPS, time); a study whose meaning is elsewhere (days
        aged, a rebuild's time) returns its own, units in the headers, and
        gets a table of its own kind.
        """
        return None

    def to_dict(self) -> dict[str, Any]:
        """The ``extra`` object of ``--json``: every measured field, by name, in field order."""
        return {
            f.name: _plain(value)
            for f in fields(self)
            if (value := getattr(self, f.name)) is not None
        }


DetailsT = TypeVar("DetailsT", bound=PhaseDetails)


def cell(value: float | None, spec: str, scale: float = 1.0) -> str:
    """``value / scale`` formatted for a table column, ``"-"`` when not measured (None, NaN).

    Parameters
    ----------
    value : float or None
        The value in SI units.
    spec : str
        Format specification, e.g. ``".2f"``.
    scale : float
        Divisor into the column's unit, e.g. 3600 for hours from seconds.
    """
    if value is None or not math.isfinite(value):
        return "-"
    return format(value / scale, spec)


def _plain(value: Any) -> Any:
    """Nested records as dicts, sequences as lists (the JSON shape)."""
    if isinstance(value, PhaseDetails):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


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
    extra : PhaseDetails
        Further measurements of the kind of phase (efficiencies, latencies,
        per-repetition results), a typed record such as
        :class:`flashsim.workloads.ior.IorDetails`; :meth:`details` narrows it.
    fidelity : str or None
        The fidelity the phase actually ran at (``"flow"``, ``"request"``, for
        a study of many tests each fidelity used, e.g. ``"flow+request"``, or
        the method of a phase that simulates neither, e.g. ``"monte-carlo"``);
        every phase kind of flashsim sets it (``None`` only for a workload
        that does not say).
    bottlenecks : list of ResourceLoad
        Resources whose mean utilisation over the phase reached
        :data:`flashsim.measure.bottlenecks.BOTTLENECK_UTILIZATION` (0.99),
        most utilised first, then by name; empty when none did (or when the
        phase was not measured).
    most_utilized : list of ResourceLoad
        The three most utilised resources of the phase (whether or not they
        are bottlenecks), so the one closest to limiting is always named.
    intervals : list of IntervalLimit
        What limited each interval of the phase (per part, and per time
        window where the limit changed), in time order; empty when the
        phase was not measured.
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
    extra: PhaseDetails = field(default_factory=PhaseDetails)
    fidelity: str | None = None
    bottlenecks: list[ResourceLoad] = field(default_factory=list)
    most_utilized: list[ResourceLoad] = field(default_factory=list)
    intervals: list[IntervalLimit] = field(default_factory=list)
    start_s: float | None = None
    start_state: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` record: SI values plus ``bandwidth_GBps`` (1 GB = 1e9 B)."""
        out = asdict(self)
        out["bandwidth_GBps"] = self.bandwidth_Bps / 1e9
        out["extra"] = {k: jsonable(v) for k, v in self.extra.to_dict().items()}
        return {k: jsonable(v) for k, v in out.items()}

    def details(self, kind: type[DetailsT]) -> DetailsT:
        """``extra`` as a ``kind`` record; ``TypeError`` when the phase produced another kind."""
        if not isinstance(self.extra, kind):
            raise TypeError(
                f"phase {self.name!r}: extra is {type(self.extra).__name__}, "
                f"expected {kind.__name__}"
            )
        return self.extra


def jsonable(value: Any) -> Any:
    """A JSON-able copy: arrays as lists, non-finite floats (at any depth) as ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "tolist"):
        return jsonable(value.tolist())
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


#: The state columns of :meth:`RunResult.timeline_dataframe`: the fields of
#: :class:`flashsim.components.target_state.SystemStatus` but its time (a test checks).
TIMELINE_STATE_COLUMNS = (
    "targets",
    "mean_write_amplification",
    "max_write_amplification",
    "mean_write_loss",
    "degraded_targets",
    "rebuilding_targets",
    "failed_drives",
    "data_lost_targets",
    "buffer_fill",
)


@dataclass(frozen=True)
class TimelineSample:
    """The system's target state at one simulated moment of a run.

    Recorded by :class:`flashsim.measure.timeline.StateRecorder`: at the marks
    the scenario runner sets (the run's start and end, each phase's start and
    end, each event) and periodically in between.

    Attributes
    ----------
    time_s : float
        Simulated time from the run's start (s).
    label : str
        What the mark was (``"start"``, ``"checkpoint: start"``, an event's
        name), or ``""`` for a periodic sample.
    event : bool
        Whether the mark is an event of the scenario (a failure, a TRIM ...).
    state : dict
        :meth:`flashsim.components.target_state.SystemStatus.to_dict` then:
        mean and max write amplification, mean write loss, degraded,
        rebuilding and data-lost target indices, failed drives, SCM fill.
    """

    time_s: float
    label: str
    event: bool
    state: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: ``time_s``, ``label``, ``event`` and the state's fields, flat."""
        state = {k: jsonable(v) for k, v in self.state.items() if k != "time_s"}
        return {"time_s": self.time_s, "label": self.label, "event": self.event, **state}


@dataclass(frozen=True)
class BandwidthSample:
    """A phase's bandwidth and IOPS over one interval of simulated time.

    Recorded by :class:`flashsim.measure.timeline.BandwidthRecorder`.

    Attributes
    ----------
    phase : str
        The phase's name (a repeated phase's ``name@time``).
    start_s, end_s : float
        The interval, in simulated seconds from the run's start (s).
    bytes_B : float
        User bytes moved in the interval (B).
    bandwidth_Bps : float
        ``bytes_B`` over the interval's length (bytes/s).
    iops : float or None
        Operations/s: the bandwidth times the phase's own operations per byte
        (``PhaseResult.iops / PhaseResult.bandwidth_Bps``); ``None`` when the
        phase reports no operation rate.
    source : str
        ``"flows"``: the flow network's byte counters (every flow that moved
        then, so with overlapping phases or background traffic, a rebuild or
        TRIM, those bytes count too); ``"phase mean"``: the phase's own mean
        over its run (a phase that moved no flow: request fidelity, an
        analytic study).
    """

    phase: str
    start_s: float
    end_s: float
    bytes_B: float
    bandwidth_Bps: float
    iops: float | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (field names as keys; non-finite floats as ``None``)."""
        return {k: jsonable(v) for k, v in asdict(self).items()}


#: A field :meth:`RunResult.field` did not find.
_ABSENT = object()


@dataclass
class RunResult:
    """All phases of one scenario run.

    Attributes
    ----------
    timeline : list of TimelineSample
        The system's state over the run, in time order (empty when the run
        recorded none).
    bandwidth : list of BandwidthSample
        Each phase's bandwidth and IOPS per interval, phase by phase, each in
        time order.
    """

    scenario: str
    system: str
    seed: int
    fidelity: str
    wall_time_s: float
    phases: list[PhaseResult]
    timeline: list[TimelineSample] = field(default_factory=list)
    bandwidth: list[BandwidthSample] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The ``flashsim run --json`` object."""
        return {
            "scenario": self.scenario,
            "system": self.system,
            "seed": self.seed,
            "fidelity": self.fidelity,
            "wall_time_s": self.wall_time_s,
            "phases": [p.to_dict() for p in self.phases],
            "timeline": [s.to_dict() for s in self.timeline],
            "bandwidth": [s.to_dict() for s in self.bandwidth],
        }

    def field(self, phase: str, field: str) -> Any:
        """A dotted field of phase ``phase``'s record (:meth:`PhaseResult.to_dict`).

        A part after a list is an element's index (``extra.repetitions.1``) or
        the ``name`` of a record in it (``extra.phases.ior-easy-write``).
        Raises ``KeyError`` naming what is missing: no phase of that name
        (``phase``), or no such field in it (``field``).
        """
        for p in self.phases:
            if p.name == phase:
                node: Any = p.to_dict()
                for part in field.split("."):
                    if isinstance(node, dict):
                        node = node.get(part, _ABSENT)
                    elif isinstance(node, list) and part.isdigit():  # an element by index
                        node = node[int(part)] if int(part) < len(node) else _ABSENT
                    elif isinstance(node, list):  # the record named ``part``
                        named = (n for n in node if isinstance(n, dict) and n.get("name") == part)
                        node = next(named, _ABSENT)
                    else:
                        node = _ABSENT
                    if node is _ABSENT:
                        raise KeyError("field")
                return node
        raise KeyError("phase")

    def timeline_dataframe(self) -> pd.DataFrame:
        """The system's state over time: one row per :class:`TimelineSample`.

        Columns ``time_s``, ``label``, ``event`` and the state's fields
        (``mean_write_amplification``, ``failed_drives``, ``buffer_fill`` ...;
        target index lists as lists).
        """
        import pandas as pd

        columns = ["time_s", "label", "event", *TIMELINE_STATE_COLUMNS]
        return pd.DataFrame([s.to_dict() for s in self.timeline], columns=columns)

    def bandwidth_dataframe(self) -> pd.DataFrame:
        """Each phase's bandwidth over time: one row per :class:`BandwidthSample`.

        Columns ``phase``, ``start_s``, ``end_s`` (from the run's start),
        ``bytes_B``, ``bandwidth_Bps``, ``iops``, ``source``.
        """
        import pandas as pd

        columns = [f.name for f in fields(BandwidthSample)]
        return pd.DataFrame([s.to_dict() for s in self.bandwidth], columns=columns)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per phase, scalar extras as columns."""
        import pandas as pd

        rows = []
        for phase in self.phases:
            row = {
                k: v
                for k, v in phase.to_dict().items()
                if k not in ("extra", "bottlenecks", "most_utilized", "intervals", "start_state")
            }
            row.update(
                {
                    k: v
                    for k, v in phase.extra.to_dict().items()
                    if isinstance(v, (int, float, str, bool))
                }
            )
            row["scenario"] = self.scenario
            row["seed"] = self.seed
            rows.append(row)
        return pd.DataFrame(rows)

    def intervals_dataframe(self) -> pd.DataFrame:
        """What limited each interval: one row per phase interval (see :class:`IntervalLimit`).

        Columns ``phase``, ``start_s``, ``end_s`` (from the phase's start),
        ``label``, ``limiter``, ``kind``, ``utilization``, ``share``.
        """
        import pandas as pd

        rows = [
            {"phase": phase.name, **asdict(interval)}
            for phase in self.phases
            for interval in phase.intervals
        ]
        columns = ["phase", *(f.name for f in fields(IntervalLimit))]
        return pd.DataFrame(rows, columns=columns)
