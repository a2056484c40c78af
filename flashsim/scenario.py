"""Scenarios: which system, which workload phases, which seed and fidelity.

A scenario file names a model file (relative to itself), a seed, a fidelity,
a list of phases and, optionally, events; each phase is validated by the
system kind's phase schema (its timing keys, :mod:`flashsim.timeline.timing`,
are taken off first).  :func:`run_scenario` builds the system once and runs
the phases in one simulation on one clock (:mod:`flashsim.timeline`): one
after the other by default, or overlapping and repeating as their timing
keys say, with the events changing the system's state meanwhile; state (data
placement, SSD wear, failures, buffer fill) carries over for the whole run.
"""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

from pydantic import Field

from flashsim.config import (
    MISSING,
    MODEL_PREFIX,
    ConfigError,
    StrictModel,
    apply_overrides,
    dotted_keys,
    load_toml,
    validate,
)
from flashsim.engine.simulation import Simulation
from flashsim.measure import bottlenecks
from flashsim.measure.limits import LimitRecorder
from flashsim.measure.results import PhaseResult, RunResult
from flashsim.measure.timeline import RunTimeline
from flashsim.systems import system_kind, system_kinds
from flashsim.systems.base import Fidelity, SystemKind, check_work
from flashsim.timeline.actions import check_events
from flashsim.timeline.events import EventSpec, load_events
from flashsim.timeline.runner import PhaseRun, Timeline
from flashsim.timeline.timing import PhaseTiming, TimedPhase, check_order, split_timing


class ScenarioFile(StrictModel):
    """The header of a scenario file; phases are checked by the system kind."""

    name: str = Field(description="Scenario name, for reports.")
    description: str = Field("", description="Free text, for reports.")
    system: str = Field(description="Path of the model file, relative to this scenario file.")
    system_set: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Model-file keys this scenario changes, as dotted keys (the same as "
            '`--set system.<key>=...`) with TOML values, e.g. `{ "client.placement.policy" = '
            '"spread" }` or `"fabric.background" = [{ name = "alltoall", ... }]` (an array of '
            "tables); a nested table sets the keys it names; `--set system.<key>` on the "
            "command line wins."
        ),
    )
    seed: Annotated[int, Field(ge=0)] = Field(
        0, description="Seed of every random stream; the same seed gives identical results."
    )
    fidelity: Fidelity = Field(
        "flow", description="`flow` (max-min fair flows) or `request` (per-request queues)."
    )
    phases: Annotated[list[dict[str, Any]], Field(min_length=1)] = Field(
        description=(
            "Workload phases on one system (state carries over): one after the other, or as "
            "their timing keys (start, after, repeat, reset) say."
        )
    )
    events: list[EventSpec] = Field(
        default_factory=list,
        description="Events that change the system's state at times on the run's clock "
        "(`[[events]]`, each chosen by its `action`).",
    )


@dataclass
class LoadedModel:
    """A validated model file and its system kind."""

    path: Path
    kind: SystemKind
    model: Any


@dataclass
class LoadedScenario:
    """A validated scenario with its model, typed phases and events.

    ``timed`` holds each phase with its name and timing keys (same order as
    ``phases``).
    """

    path: Path
    spec: ScenarioFile
    system: LoadedModel
    phases: list[Any]
    timed: list[TimedPhase] = field(default_factory=list)
    events: list[EventSpec] = field(default_factory=list)


def split_overrides(overrides: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Split ``--set`` pairs into model (``system.`` prefix) and scenario overrides."""
    model: dict[str, str] = {}
    scenario: dict[str, str] = {}
    for key, value in overrides.items():
        if key.startswith(MODEL_PREFIX):
            model[key.removeprefix(MODEL_PREFIX)] = value
        else:
            scenario[key] = value
    return model, scenario


def _check_scenario_keys(overrides: Mapping[str, str], path: Path) -> None:
    """Refuse a ``--set`` key that is no scenario key; the message gives the model-key spelling."""
    for key, value in overrides.items():
        top = key.split(".")[0]
        if top not in ScenarioFile.model_fields:
            allowed = ", ".join(sorted(ScenarioFile.model_fields))
            raise ConfigError(
                f"{path} (--set)",
                key,
                value,
                f"not a scenario key (expected one of: {allowed}); a key of the model file is "
                f"written with the prefix 'system.', e.g. --set {MODEL_PREFIX}{key}={value}",
            )


def load_system_model(path: str | Path, overrides: Mapping[str, object] = {}) -> LoadedModel:
    """Load and validate a model file, choosing the schema by its ``kind``."""
    p = Path(path)
    data = load_toml(p)
    apply_overrides(data, overrides, str(p))
    kind_name = data.get("kind")
    try:
        if not isinstance(kind_name, str):
            raise KeyError(kind_name)
        kind = system_kind(kind_name)  # (shipped kinds without reading entry points)
    except KeyError:
        expected = ", ".join(sorted(system_kinds()))
        raise ConfigError(str(p), "kind", kind_name, f"expected one of {expected}") from None
    except ValueError as exc:
        raise ConfigError(str(p), "kind", kind_name, str(exc)) from None
    model = validate(kind.model_type, data, p, context={"model_dir": p.resolve().parent})
    try:
        kind.check(model)
    except ValueError as exc:
        key, _, message = str(exc).partition(": ")
        raise ConfigError(str(p), key, _resolve(data, key), message or str(exc)) from None
    return LoadedModel(p, kind, model)


def _resolve(data: Mapping[str, Any], key: str) -> object:
    node: Any = data
    for part in key.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def load_scenario(path: str | Path, overrides: Mapping[str, str] = {}) -> LoadedScenario:
    """Load a scenario and its model, applying ``--set`` overrides to both."""
    p = Path(path)
    return scenario_from_data(load_toml(p), p, overrides)


def scenario_from_data(
    data: dict[str, Any], p: Path, overrides: Mapping[str, str] = {}
) -> LoadedScenario:
    """A scenario from its parsed table; ``p`` names it in messages and anchors relative paths.

    ``flashsim replay`` builds its one-phase scenario this way.
    """
    model_over, scenario_over = split_overrides(overrides)
    _check_scenario_keys(scenario_over, p)
    apply_overrides(data, scenario_over, str(p))
    spec = validate(ScenarioFile, data, p)
    system_path = (p.parent / spec.system).resolve()
    if not system_path.exists():
        raise ConfigError(str(p), "system", spec.system, f"model file {system_path} not found")
    model_set: dict[str, object] = dotted_keys(spec.system_set)
    model_set.update(model_over)
    system = load_system_model(system_path, model_set)
    split = [split_timing(raw, p, i) for i, raw in enumerate(spec.phases)]
    phases = [
        validate(
            system.kind.phase_type,
            raw,
            p,
            context={"scenario_dir": p.resolve().parent},
            key_prefix=f"phases.{i}",
        )
        for i, (raw, _) in enumerate(split)
    ]
    check_phases(p, [raw for raw, _ in split], system, phases, spec.seed)
    timed = [
        TimedPhase(i, _phase_name(phase, i), phase, timing)
        for i, (phase, (_, timing)) in enumerate(zip(phases, split, strict=True))
    ]
    check_order(p, timed)
    events = load_events(spec.events, p, [t.name for t in timed])
    if events:  # target indices and background jobs against a (lazily built) system
        check_events(
            events, system.kind.build(system.model, Simulation(spec.seed), spec.fidelity), p
        )
    return LoadedScenario(p, spec, system, phases, timed, events)


def _phase_name(phase: Any, index: int) -> str:
    """A phase's name in results and timing keys: its ``name``, else its index."""
    name = getattr(phase, "name", None)
    return name if isinstance(name, str) else str(index)


def timed_phases(scenario: LoadedScenario) -> list[TimedPhase]:
    """The phases a run runs, with their timing keys.

    ``scenario.timed`` as loaded; or, when a caller replaced ``scenario.phases``
    (a notebook or benchmark running some phases alone, e.g.
    ``dataclasses.replace(loaded, phases=[...])``), those phases in that order,
    each with its own timing keys (an ``after`` naming a phase left out is
    dropped: the phase then starts when the one before it in the list ends).
    """
    if [id(t.phase) for t in scenario.timed] == [id(p) for p in scenario.phases]:
        return scenario.timed
    own = {id(t.phase): t for t in scenario.timed}
    kept = {own[id(p)].name for p in scenario.phases if id(p) in own}
    out: list[TimedPhase] = []
    for i, phase in enumerate(scenario.phases):
        found = own.get(id(phase))
        timing = found.timing if found is not None else PhaseTiming.model_validate({})
        if timing.after is not None and timing.after not in kept:
            timing = timing.model_copy(update={"after": None})
        name = found.name if found is not None else _phase_name(phase, i)
        out.append(TimedPhase(i, name, phase, timing))
    return out


def check_phases(
    path: Path, raw: list[dict[str, Any]], system: LoadedModel, phases: list[Any], seed: int = 0
) -> None:
    """Checks across phases and against the model, before anything is built.

    Phase names are unique (``--set phases.<name>.key`` addresses them), a read
    of a ``dataset`` follows a write of it, and the system kind's
    :meth:`~flashsim.systems.base.SystemKind.check_phase` accepts each phase
    (indices within the model, resources the run would need).  Traces (Darshan
    logs) are read here, so a corrupt one is a bad input (exit 2), not a failed run;
    in a scenario with no file of its own (``path`` names a command, as
    ``flashsim replay`` does), a bad log is named by its own path alone.
    """
    from flashsim.workloads.ior import IorPhase
    from flashsim.workloads.jobs import read_phase_traces

    seen: dict[str, int] = {}
    written: list[str] = []
    for i, phase in enumerate(phases):
        name = getattr(phase, "name", None)
        if isinstance(name, str):
            if name in seen:
                raise ConfigError(
                    str(path),
                    f"phases.{i}.name",
                    name,
                    f"phases.{seen[name]} has the same name; phase names must be unique",
                )
            seen[name] = i
        for key in type(phase).model_fields:
            if getattr(phase, key) == []:
                raise ConfigError(
                    str(path), f"phases.{i}.{key}", [], "an empty list; expected at least one value"
                )
        if isinstance(phase, IorPhase) and phase.dataset is not None:
            if phase.operation == "write":
                written.append(phase.dataset)
            elif phase.dataset not in written:
                so_far = ", ".join(repr(d) for d in written) or "none"
                raise ConfigError(
                    str(path),
                    f"phases.{i}.dataset",
                    phase.dataset,
                    f"no earlier phase writes this dataset (written before: {so_far})",
                )
        try:
            read_phase_traces(phase, seed)
            system.kind.check_phase(system.model, phase)
            check_work(phase)
        except ValueError as exc:
            key, _, message = str(exc).partition(": ")
            if key == "log" and not path.is_file():
                # A scenario a command made from data (``flashsim replay LOG``): the user
                # wrote only the log, so a bad one is named by its own path alone.
                raise ConfigError("", "", MISSING, message) from None
            value = _resolve(raw[i], key)
            raise ConfigError(
                str(path), f"phases.{i}.{key}", MISSING if value is None else value, message
            ) from None


@dataclass(frozen=True)
class RunLimits:
    """Limits a run stops at (``run --max-wall``, ``--max-memory``); ``None`` for none.

    Attributes
    ----------
    max_wall_s : float or None
        Wall-clock seconds since the run started.
    max_memory_B : float or None
        Resident memory of the process in bytes.
    """

    max_wall_s: float | None = None
    max_memory_B: float | None = None


class RunStopped(Exception):  # noqa: N818 - a requested stop, not an error
    """A run stopped by a :class:`RunLimits` limit; ``partial`` holds the phases completed."""

    def __init__(self, reason: str, partial: RunResult) -> None:
        super().__init__(reason)
        self.reason = reason
        self.partial = partial


class _LimitReached(BaseException):
    """Raised inside the run (from a timer signal) when a limit is passed.

    A ``BaseException`` like ``KeyboardInterrupt``, so that no ``except
    Exception`` in a model can swallow it.
    """


def resident_memory_B() -> float:
    """Resident set size of this process in bytes (peak RSS where /proc is missing)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return float(pages * os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, IndexError):
        import resource

        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


#: Wall-clock seconds between the watchdog's timer signals while the run is within its limits.
CHECK_INTERVAL_S = 0.1
#: Wall-clock seconds between its retries once a limit is passed, until the run takes the stop.
RETRY_S = 0.001


class _Watchdog:
    """Checks the limits between phases and, from a timer signal, inside them.

    The timer (``SIGALRM``, every :data:`CHECK_INTERVAL_S`) is used only in the
    main thread of a process that has it; elsewhere limits are checked between
    phases only.  Once a limit is passed the watchdog is *tripped*: the reason
    is kept, the timer is re-armed every :data:`RETRY_S`, and every signal
    raises :class:`_LimitReached` again until the run takes it (:meth:`stop`).
    An exception raised where Python swallows it (a gc callback, a finaliser)
    is thus raised again a millisecond later; during a garbage collection,
    and in the frames that take the stop (:func:`run_loaded`, :meth:`stop`),
    the signal does not raise at all and the next one tries again.
    """

    def __init__(self, limits: RunLimits | None, started_s: float) -> None:
        self.limits = limits or RunLimits()
        self.started_s = started_s
        self.active = False
        self.tripped: str | None = None
        self._collecting = False
        self._previous: Any = None

    def reason(self) -> str | None:
        """Why the run must stop now, or ``None`` (once tripped, the reason it tripped on)."""
        if self.tripped is not None:
            return self.tripped
        lim = self.limits
        if lim.max_wall_s is not None:
            elapsed = time.perf_counter() - self.started_s
            if elapsed > lim.max_wall_s:
                return f"wall time {elapsed:.2f} s exceeded --max-wall {lim.max_wall_s:g} s"
        if lim.max_memory_B is not None:
            rss = resident_memory_B()
            if rss > lim.max_memory_B:
                return (
                    f"resident memory {rss / 1e6:.4g} MB exceeded --max-memory "
                    f"{lim.max_memory_B / 1e6:.4g} MB"
                )
        return None

    def check(self) -> None:
        """Raise :class:`_LimitReached` when a limit is passed."""
        why = self.reason()
        if why is not None:
            self.tripped = why
            raise _LimitReached(why)

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        self._collecting = phase == "start"

    def _on_timer(self, signum: int, frame: FrameType | None) -> None:
        if not self.active:
            return
        if self.tripped is None:
            why = self.reason()
            if why is None:
                return
            self.tripped = why
            signal.setitimer(signal.ITIMER_REAL, RETRY_S, RETRY_S)
        if self._collecting or (frame is not None and frame.f_code in _TAKING_CODES):
            return  # raised again RETRY_S later
        raise _LimitReached(self.tripped)

    def __enter__(self) -> _Watchdog:
        wanted = self.limits.max_wall_s is not None or self.limits.max_memory_B is not None
        if (
            wanted
            and hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()
        ):
            self._previous = signal.signal(signal.SIGALRM, self._on_timer)
            gc.callbacks.append(self._on_gc)
            signal.setitimer(signal.ITIMER_REAL, CHECK_INTERVAL_S, CHECK_INTERVAL_S)
            self.active = True
        return self

    def stop(self) -> None:
        """Stop the timer and restore the previous handler."""
        if self.active:
            self.active = False
            signal.setitimer(signal.ITIMER_REAL, 0.0)
            signal.signal(signal.SIGALRM, self._previous)
            gc.callbacks.remove(self._on_gc)
            self._collecting = False

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _since(sim: Simulation, start_s: float) -> Callable[[], float]:
    """A clock of simulated seconds since ``start_s`` (for a progress task)."""
    return lambda: sim.now - start_s


def run_loaded(
    scenario: LoadedScenario, progress: bool = False, limits: RunLimits | None = None
) -> RunResult:
    """Run a loaded scenario and return its results.

    With ``progress``, a status line on standard error (when it is a terminal,
    :mod:`flashsim.progress`) shows the phase and its simulated time; inside a
    command's progress (``validate``) the run reports there whatever ``progress``
    says.  Progress only reads the simulation, so it changes no result.

    Phases and events run on one clock (:class:`flashsim.timeline.runner.Timeline`):
    in file order by default, or overlapping and repeating as their timing keys
    say; each phase run is a greenlet sharing the simulation.  Each result
    carries ``start_s`` and ``start_state`` (the system's target state at its
    start) and the resources that limited it
    (:func:`flashsim.measure.bottlenecks.phase_loads`): their mean utilisation
    over the phase's simulated time, from the simulation's cumulative counters
    (with phases overlapping, the whole system's load over that interval).
    Results are in order of start (file order, then run, at one instant).

    Raises
    ------
    RunStopped
        When a limit of ``limits`` is passed; it carries the phases completed.
    """
    started = time.perf_counter()
    #: Each phase run's result with its order: (start time, index in the file, run number).
    results: list[tuple[tuple[float, int, int], PhaseResult]] = []

    series: RunTimeline | None = None

    def result() -> RunResult:
        timeline, bandwidth = series.finish() if series is not None else ([], [])
        return RunResult(
            scenario=scenario.spec.name,
            system=str(getattr(scenario.system.model, "name", "")),
            seed=scenario.spec.seed,
            fidelity=scenario.spec.fidelity,
            wall_time_s=time.perf_counter() - started,
            phases=[r for _, r in sorted(results, key=lambda kr: kr[0])],
            timeline=timeline,
            bandwidth=bandwidth,
        )

    from flashsim.progress import open_progress

    timed = timed_phases(scenario)
    with _Watchdog(limits, started) as dog, open_progress(progress) as shown:
        try:
            sim = Simulation(scenario.spec.seed)
            with shown.task(f"{scenario.spec.name}: building {scenario.system.path.name}"):
                built = scenario.system.kind.build(
                    scenario.system.model, sim, scenario.spec.fidelity
                )
            check_events(scenario.events, built, scenario.path)
            series = RunTimeline(sim, built.status)
            series.start()
            total = None if any(t.timing.repeat for t in timed) else len(timed)
            with shown.task(scenario.spec.name, total=total, unit="phase") as run:
                ends: dict[float, bottlenecks.UsageMark] = {}

                def run_one(one: PhaseRun) -> None:
                    dog.check()
                    t0 = sim.now
                    start = ends.pop(t0, None) or bottlenecks.mark(sim)
                    recorder = LimitRecorder(sim, start)
                    assert series is not None
                    state = series.phase_start(one.name)
                    with shown.task(one.name, clock=_since(sim, t0)):
                        measured = built.run_phase(one.timed.phase)
                    end = bottlenecks.mark(sim)
                    ends[end.time_s] = end
                    limited_by, most = bottlenecks.phase_loads(sim, start, end)
                    if one.name != one.timed.name:
                        measured = replace(measured, name=one.name)
                    series.phase_end(one.name, measured)
                    results.append(
                        (
                            (t0, one.timed.index, one.number),
                            replace(
                                measured,
                                bottlenecks=limited_by,
                                most_utilized=most,
                                intervals=recorder.finish(end),
                                start_s=t0,
                                start_state=state,
                            ),
                        )
                    )
                    run.advance()

                Timeline(
                    built, timed, scenario.events, run_one, scenario.path, on_event=series.event
                ).run()
        except _LimitReached as exc:
            dog.stop()
            raise RunStopped(str(exc), result()) from None
        except MemoryError:
            dog.stop()
            raise RunStopped("out of memory (MemoryError)", result()) from None
    return result()


#: Code of the frames that take a tripped watchdog's stop: a signal landing in them
#: (between catching :class:`_LimitReached` and stopping the timer) does not raise.
_TAKING_CODES = frozenset({run_loaded.__code__, _Watchdog.stop.__code__})


def run_scenario(path: str | Path, overrides: Mapping[str, str] = {}) -> RunResult:
    """Load and run a scenario file; see :func:`load_scenario`."""
    return run_loaded(load_scenario(path, overrides))
