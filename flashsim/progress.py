"""Progress on a terminal: one status line on standard error, nothing anywhere else.

A :class:`Progress` is a status line (a tqdm bar) on a stream that is a
terminal; on any other stream (a pipe, a file, a notebook's captured
stderr) or when the caller asked for machine output (``--json``) it is
disabled and prints nothing at all.  Code that has something to report opens
a :class:`Task` on the progress that is active (:func:`current`), so a phase
deep inside a run needs no parameter to report its days, tests or points::

    with Progress(enabled=not as_json) as progress:        # the command (cli.py)
        with progress.task("validate", total=58, unit="record") as records:
            ...
            records.advance()

    with current().task("days", total=180, unit="day") as days:   # a study phase
        for day in range(180):
            ...
            days.advance()

Tasks nest (validate > a record's run > its phase > the phase's days); the
line shows them all, innermost last, with the simulated time of any task
given a ``clock`` (``lambda: sim.now - start``).  The line is redrawn by a
background thread every ``interval_s`` seconds of wall time, so a long
SimPy phase shows its simulated clock advancing without adding a single
event to the simulation: the thread only reads a task's counters and its
clock, so progress cannot change a simulated result, and its cost is one
short redraw per interval.

A sweep (``flashsim/sweep.py``) uses the same API for its points: it opens
``progress.task("sweep", total=n_points, unit="point", done=n_resumed)``,
calls :meth:`Task.advance` per point finished and sets :attr:`Task.note` to
e.g. ``"3 running, 1 failed"``.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, TextIO, TypeVar

T = TypeVar("T")

#: The progress of the innermost ``with Progress(...)`` block of this context, if any.
#: A :class:`~contextvars.ContextVar` (like :mod:`decimal`'s context): each thread and
#: each run sees only its own, and a ``with`` block restores the previous one on exit.
_ACTIVE: ContextVar[Progress | None] = ContextVar("flashsim_progress", default=None)

#: Seconds of wall time between redraws of the status line.
DEFAULT_INTERVAL_S = 0.5

#: Environment variable that sets the redraw interval (a time, e.g. ``"2 s"``); ``"0 s"``
#: redraws at every change of a task instead, from the thread that changed it.
INTERVAL_ENV = "FLASHSIM_PROGRESS_INTERVAL"

#: Separator between nested tasks on the status line.
SEPARATOR = " › "


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is an open terminal (``isatty()``); ``False`` for anything else."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def terminal_size(stream: Any) -> tuple[int, int]:
    """Columns and lines of the terminal ``stream`` is on; 80 x 24 where unknown or 0.

    A pseudo-terminal nobody sized (``script``, some CI runners) reports 0 x 0,
    which would make tqdm trim the line to nothing or not draw it at all.
    """
    try:
        size = os.get_terminal_size(stream.fileno())
        columns, lines = size.columns, size.lines
    except (AttributeError, ValueError, OSError):
        columns, lines = 0, 0
    return (columns if columns > 0 else 80), (lines if lines > 0 else 24)


def interval_from_env() -> float:
    """The redraw interval (s): ``$FLASHSIM_PROGRESS_INTERVAL`` or :data:`DEFAULT_INTERVAL_S`.

    Raises
    ------
    flashsim.units.UnitError
        When the variable is set to anything but a time >= 0 (the command
        prints one ``error:`` line and exits 2).
    """
    text = os.environ.get(INTERVAL_ENV, "").strip()
    if not text:
        return DEFAULT_INTERVAL_S
    from flashsim.units import UnitError, parse_quantity

    try:
        seconds = parse_quantity(text, "time")
    except UnitError as exc:
        raise UnitError(f"environment variable {INTERVAL_ENV}: {exc}") from None
    if not 0.0 <= seconds < float("inf"):
        raise UnitError(f"environment variable {INTERVAL_ENV}: {text!r}; expected a time >= 0")
    return seconds


def format_sim_time(seconds: float) -> str:
    """Simulated time for people: ``"35.2 s"``, ``"12.5 min"``, ``"3.20 h"``, ``"45.0 d"``.

    Parameters
    ----------
    seconds : float
        Simulated time in seconds.
    """
    if seconds < 120.0:
        return f"{seconds:.3g} s"
    if seconds < 7200.0:
        return f"{seconds / 60.0:.3g} min"
    if seconds < 2.0 * 86400.0:
        return f"{seconds / 3600.0:.3g} h"
    return f"{seconds / 86400.0:.4g} d"


class Task:
    """One thing a run is doing: a label, a count of done out of total, a simulated clock.

    Create tasks with :meth:`Progress.task` and use them as context managers;
    updating one is a few attribute writes (the status line is redrawn by the
    progress's thread), so a loop may call :meth:`advance` every iteration.

    Attributes
    ----------
    label : str
        What is being done (a phase name, ``"days"``, ``"validate"``).
    total : int or None
        How many units there are, or ``None`` when unknown.
    unit : str
        Name of one unit (``"day"``, ``"test"``, ``"record"``).
    done : int
        Units done so far.
    clock : callable or None
        Returns the task's simulated time in seconds (read by the drawing thread).
    note : str
        Free text shown after the task (e.g. a sweep's running and failed points).
    """

    def __init__(
        self,
        owner: Progress,
        label: str,
        total: int | None = None,
        unit: str = "",
        done: int = 0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.owner = owner
        self.label = label
        self.total = total
        self.unit = unit
        self.done = done
        self.clock = clock
        self.note = ""

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more units done."""
        self.done += n
        if self.owner.interval_s == 0.0:
            self.owner.refresh()

    def over(self, items: Iterable[T]) -> Iterator[T]:
        """The items of ``items``, the task open meanwhile and advanced after each.

        ``for day in current().task("days", total=n, unit="day").over(range(n)):``
        counts the loop's iterations as they finish, like :func:`tqdm.tqdm`.
        """
        with self:
            for item in items:
                yield item
                self.advance()

    def text(self) -> str:
        """The task as shown on the status line, e.g. ``"no-trim 45/180 day"``."""
        parts = [self.label]
        if self.total is not None:
            parts.append(f"{self.done}/{self.total} {self.unit}".rstrip())
        elif self.done:
            parts.append(f"{self.done} {self.unit}".rstrip())
        if self.clock is not None:
            try:
                now_s = float(self.clock())
            except Exception:  # a clock read mid-update: skip it this time
                now_s = 0.0
            if now_s > 0.0:
                parts.append(f"sim {format_sim_time(now_s)}")
        if self.note:
            parts.append(f"({self.note})")
        return " ".join(parts)

    def __enter__(self) -> Task:
        self.owner._push(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.owner._pop(self)


class Progress:
    """A status line on ``stream`` (standard error by default) when it is a terminal.

    Parameters
    ----------
    stream : text stream, optional
        Where the line goes; ``sys.stderr`` (as it is when the progress is
        created) by default.
    enabled : bool
        ``False`` turns the line off whatever the stream (``--json``).
    interval_s : float, optional
        Wall-clock seconds between redraws of the line (default
        :func:`interval_from_env`); 0 redraws it at every change of a task,
        with no thread.

    Attributes
    ----------
    active : bool
        Whether the line is shown: ``enabled`` and the stream is a terminal.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        enabled: bool = True,
        interval_s: float | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.active = enabled and is_terminal(self.stream)
        if interval_s is None:  # the environment is read only by a progress that is shown
            interval_s = interval_from_env() if self.active else DEFAULT_INTERVAL_S
        self.interval_s = interval_s
        self._tasks: list[Task] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None
        self._entered = False
        self._token: Token[Progress | None] | None = None

    # ---------------------------------------------------------------- tasks
    def task(
        self,
        label: str,
        total: int | None = None,
        unit: str = "",
        *,
        done: int = 0,
        clock: Callable[[], float] | None = None,
    ) -> Task:
        """A new task (use it in a ``with`` block); see :class:`Task` for the arguments."""
        return Task(self, label, total, unit, done, clock)

    def _push(self, task: Task) -> None:
        if self.active:
            with self._lock:
                self._tasks.append(task)
            self.refresh()

    def _pop(self, task: Task) -> None:
        if self.active:
            with self._lock:
                if task in self._tasks:
                    self._tasks.remove(task)
            self.refresh()

    def line(self) -> str:
        """The status line's text: every open task, outermost first."""
        with self._lock:
            tasks = list(self._tasks)
        return SEPARATOR.join(t.text() for t in tasks)

    def refresh(self) -> None:
        """Redraw the line now, if it is shown yet (the thread draws every ``interval_s``)."""
        if self._bar is not None or (self.interval_s == 0.0 and self._entered):
            self._draw()

    def _draw(self) -> None:
        """Draw the line, creating the bar on the first call (from the thread)."""
        if not self.active:
            return
        text = self.line()
        columns, lines = terminal_size(self.stream)
        with self._lock:
            if self._stop.is_set():
                return
            if self._bar is None:
                from tqdm import tqdm

                self._bar = tqdm(
                    file=self.stream,
                    desc=text,
                    bar_format="{desc} [{elapsed}]",
                    leave=False,
                    ncols=columns,
                    nrows=lines,
                )
                return
            self._bar.ncols, self._bar.nrows = columns, lines
            self._bar.set_description_str(text, refresh=False)
            self._bar.refresh()

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> Progress:
        self._token = _ACTIVE.set(self)
        self._entered = True
        self._stop.clear()
        if self.active and self.interval_s > 0.0:
            self._thread = threading.Thread(
                target=self._redraw_loop, name="flashsim-progress", daemon=True
            )
            self._thread.start()
        return self

    def _redraw_loop(self) -> None:
        # the first draw waits one interval, so a command shorter than that prints nothing
        while not self._stop.wait(self.interval_s):
            self._draw()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._entered = False
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._bar is not None:
            with self._lock:
                self._bar.close()
            self._bar = None
        if self._token is not None:
            _ACTIVE.reset(self._token)
            self._token = None


def current() -> Progress:
    """The active progress (innermost ``with Progress(...)``), or a disabled one."""
    active = _ACTIVE.get()
    return active if active is not None else Progress(enabled=False)


def open_progress(enabled: bool = True) -> AbstractContextManager[Progress]:
    """A ``with`` block's progress: the active one if there is one, else a new one on stderr.

    Parameters
    ----------
    enabled : bool
        ``False`` for machine output (``--json``): a new progress prints nothing.
        An active progress is kept as it is (its command decided).
    """
    active = _ACTIVE.get()
    if active is not None:
        return nullcontext(active)
    return Progress(enabled=enabled)
