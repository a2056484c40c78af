"""When each phase of a scenario runs: the timing keys every phase accepts.

The keys are taken off each raw phase table before the system kind's phase
schema validates it (:func:`split_timing`), so no kind's phase model knows
them:

``start = "2 h"``
    The phase starts at that simulated time (from the start of the run).
``after = "<phase name>"``
    The phase starts when that phase ends (its last run, if it repeats).
``repeat = { every = "7 days", until = "365 days" }`` (or ``count = 52``)
    The phase runs again every ``every`` seconds from its first start, while
    the start is before ``until`` (a time on the run's clock) or ``count``
    times in all; a run that lasts longer than ``every`` delays the next (a
    phase never overlaps itself).  Each run's result is named
    ``<name>@<time>`` (:func:`time_label`), e.g. ``checkpoint@7d``.
``reset = true``
    Every target gets fresh state (:meth:`~flashsim.systems.base.BuiltSystem.reset_state`)
    just before the phase (each of its runs).

With neither ``start`` nor ``after`` a phase starts when the previous phase in
file order ends, so a scenario without timing keys runs its phases one after
the other, as it always has.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, StrictBool, model_validator

from flashsim.config import (
    ConfigError,
    NonNegativeSeconds,
    Seconds,
    StrictModel,
    field_error,
    validate,
)

#: The keys :func:`split_timing` takes off a phase table.
TIMING_KEYS = ("start", "after", "repeat", "reset")

#: Most runs one repeated phase may make (a weekly probe over ten years is 522).
MAX_REPEATS = 100_000


class RepeatSpec(StrictModel):
    """``repeat = { every = "7 days", until = "365 days" }`` (or ``count``) of a phase."""

    every: Seconds = Field(description="Simulated time between the starts of two runs (s).")
    until: Seconds | None = Field(
        None,
        description="Runs start while the clock is before this time (s, from the run's start).",
    )
    count: Annotated[int, Field(ge=1, le=MAX_REPEATS)] | None = Field(
        None, description="Number of runs in all (instead of until)."
    )

    @model_validator(mode="after")
    def _one_bound(self) -> RepeatSpec:
        if (self.until is None) == (self.count is None):
            raise field_error("until", "give exactly one of until (a time) and count (runs)")
        return self


class PhaseTiming(StrictModel):
    """The timing keys of one phase (see the module docstring)."""

    start: NonNegativeSeconds | None = Field(
        None, description="Simulated time the phase starts at (s, from the run's start)."
    )
    after: Annotated[str, Field(min_length=1)] | None = Field(
        None, description="Name of the phase whose end starts this one."
    )
    repeat: RepeatSpec | None = Field(None, description="Run the phase periodically.")
    reset: StrictBool = Field(False, description="Give every target fresh state before the phase.")

    @model_validator(mode="after")
    def _start_or_after(self) -> PhaseTiming:
        if self.start is not None and self.after is not None:
            raise field_error("after", "give start or after, not both")
        return self


@dataclass(frozen=True)
class TimedPhase:
    """A validated phase with its name, index in the file and timing.

    Attributes
    ----------
    index : int
        Position in the scenario's ``phases``.
    name : str
        The phase's name (its index when it has none).
    phase : Any
        The phase model the system kind validated.
    timing : PhaseTiming
        When it runs.
    """

    index: int
    name: str
    phase: Any
    timing: PhaseTiming


def split_timing(raw: dict[str, Any], path: Path, index: int) -> tuple[dict[str, Any], PhaseTiming]:
    """Take the timing keys off one raw phase table and validate them.

    Returns the table without them (for the kind's schema) and the timing;
    a bad value is a :class:`~flashsim.config.ConfigError` naming
    ``phases.<index>.<key>``.
    """
    rest = {k: v for k, v in raw.items() if k not in TIMING_KEYS}
    keys = {k: raw[k] for k in TIMING_KEYS if k in raw}
    timing = validate(PhaseTiming, keys, path, key_prefix=f"phases.{index}")
    return rest, timing


def check_order(path: Path, phases: list[TimedPhase]) -> None:
    """Refuse ``after`` naming no phase (or itself) and cycles of ``after`` and file order.

    A phase without ``start`` or ``after`` waits for the previous phase in
    file order, so ``after`` may close a cycle through that default too.
    """
    names = {p.name: p.index for p in phases}
    for p in phases:
        after = p.timing.after
        if after is None:
            continue
        if after not in names:
            known = ", ".join(repr(n) for n in names)
            raise ConfigError(
                str(path), f"phases.{p.index}.after", after, f"no phase has this name ({known})"
            )
        if names[after] == p.index:
            raise ConfigError(
                str(path), f"phases.{p.index}.after", after, "a phase cannot start after itself"
            )
    for p in phases:
        seen = [p.index]
        at = predecessor(phases, p)
        while at is not None:
            if at == p.index:
                chain = " -> ".join(phases[i].name for i in [*seen, p.index])
                raise ConfigError(
                    str(path),
                    f"phases.{p.index}.after",
                    p.timing.after,
                    f"the phases wait for each other in a cycle ({chain}); give one a start time",
                )
            if at in seen:
                break  # a cycle that does not pass through p: reported at one of its members
            seen.append(at)
            at = predecessor(phases, phases[at])


def predecessor(phases: list[TimedPhase], p: TimedPhase) -> int | None:
    """Index of the phase whose end starts ``p``; ``None`` when ``p`` starts at a time."""
    if p.timing.start is not None:
        return None
    if p.timing.after is not None:
        return next(q.index for q in phases if q.name == p.timing.after)
    return p.index - 1 if p.index > 0 else None


def time_label(seconds: float) -> str:
    """A short label of a simulated time: ``7d``, ``36h``, ``90min``, ``12.5s``.

    A whole number of the largest unit that gives one, else seconds to 9 digits.
    """
    for unit, size in (("d", 86_400.0), ("h", 3_600.0), ("min", 60.0)):
        if seconds >= size and math.isclose(seconds / size, round(seconds / size), abs_tol=1e-9):
            return f"{round(seconds / size)}{unit}"
    return f"{seconds:.9g}s"
