"""One measured value with the conditions needed to reproduce it.

Readers (:mod:`flashsim.measurements.readers`) turn a tool's output into a
list of :class:`Measurement`; the ``validation/*.toml`` records become
measurements too (their ``tool`` is ``"published"``).  Values are SI floats
(bytes/s, operations/s, seconds; a ratio or percentage as recorded), and
``unit`` names the unit of ``value`` so that a table can show it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from flashsim.errors import ConfigError

#: What a measurement measures.  ``bandwidth`` in B/s, ``iops`` in operations/s,
#: ``latency_mean`` and ``latency_p<NN>`` (e.g. ``latency_p99``, ``latency_p99.9``)
#: in s, ``io_time`` (Darshan's recorded I/O time) in s, ``score`` (IO-500,
#: as printed), ``ops`` (metadata operations/s), anything else as the record says.
Quantity = str

Role = Literal["calibration", "prediction"]

#: The SI unit of each common quantity (``Measurement.unit``).
SI_UNITS: Mapping[str, str] = {
    "bandwidth": "B/s",
    "iops": "1/s",
    "ops": "1/s",
    "latency_mean": "s",
    "io_time": "s",
}

Scalar = str | int | float | bool


@dataclass(frozen=True)
class Conditions:
    """How a measurement was taken: what a scenario needs to reproduce it.

    Every field is optional (``None`` when the tool's output does not say);
    a reproduction that needs a missing one reports the measurement as
    skipped and names the field.  A sidecar file ``<output>.conditions.toml``
    beside a tool's output supplies what its format does not record (see
    :func:`flashsim.measurements.readers.read_measurements`).

    Attributes
    ----------
    tool : str
        ``fio``, ``ior``, ``io500``, ``obdfilter-survey``, ``lnet-selftest``,
        ``darshan`` or ``published``.
    tool_version : str or None
        The tool's version as it printed it.
    command_line : str or None
        The command line as the tool printed it.
    operation : str or None
        ``read`` or ``write`` (IO-500 and Darshan: the phase or module).
    access : str or None
        ``sequential`` or ``random``.
    tasks : int or None
        MPI ranks / fio jobs (numjobs) / threads that issued I/O.
    nodes : int or None
        Client nodes.
    transfer_size_B : float or None
        Bytes per I/O call (IOR ``-t``, fio ``bs``), B.
    block_size_B : float or None
        IOR ``-b``, B per rank per segment; fio ``size`` per job, B.
    segments : int or None
        IOR ``-s``.
    file_per_process : bool or None
        IOR ``-F`` (fio: ``filename`` shared or not).
    stripe_count : int or None
        Lustre stripe count of the files.
    stripe_size_B : float or None
        Lustre stripe size, B.
    first_target : int or None
        Index of the OST holding the first stripe (``lfs setstripe -i``).
    queue_depth : int or None
        I/Os in flight per task (fio ``iodepth``).
    concurrency : int or None
        LNet Self-Test requests in flight per source.
    sources : int or None
        LNet Self-Test source nodes.
    threads : int or None
        obdfilter-survey threads.
    objects : int or None
        obdfilter-survey objects.
    size_B : float or None
        obdfilter-survey size per OST / fio total size, B.
    duration_s : float or None
        Run time of the test, s.
    stonewall_s : float or None
        IOR ``-D``, s.
    fsync : bool or None
        IOR ``-e`` / fio ``fsync``/``end_fsync``.
    direct : bool or None
        O_DIRECT (IOR ``--posix.odirect``, fio ``direct=1``).
    target : int or None
        The server-side unit measured: the OST index (obdfilter-survey), the
        sink OSS (LNet Self-Test).
    extra : Mapping[str, Scalar]
        Anything else the tool recorded that a reader keeps.
    """

    tool: str
    tool_version: str | None = None
    command_line: str | None = None
    operation: str | None = None
    access: str | None = None
    tasks: int | None = None
    nodes: int | None = None
    transfer_size_B: float | None = None
    block_size_B: float | None = None
    segments: int | None = None
    file_per_process: bool | None = None
    stripe_count: int | None = None
    stripe_size_B: float | None = None
    first_target: int | None = None
    queue_depth: int | None = None
    concurrency: int | None = None
    sources: int | None = None
    threads: int | None = None
    objects: int | None = None
    size_B: float | None = None
    duration_s: float | None = None
    stonewall_s: float | None = None
    fsync: bool | None = None
    direct: bool | None = None
    target: int | None = None
    extra: Mapping[str, Scalar] = field(default_factory=dict)


@dataclass(frozen=True)
class Measurement:
    """One measured (or published) value.

    Attributes
    ----------
    id : str
        Unique within a run of ``check``/``calibrate``/``validate``: readers
        build it from the file's stem, the test/job and the quantity, e.g.
        ``ior-easy:test0:write:bandwidth``.
    quantity : Quantity
        What was measured (:data:`Quantity`).
    value : float
        The value in ``unit``.
    unit : str
        Unit of ``value``: SI for readers (:data:`SI_UNITS`), as published for
        validation records (``GB/s``, ``%``...).
    conditions : Conditions
        How it was measured.
    source : str
        Where it was read: ``<file>:<line>`` (or the publication for a record).
    scope : str
        What it is of, beyond the whole test: ``""`` (the whole job), ``"ost 12"``,
        ``"oss 3"``, ``"rank 0"``, ``"file /path"``, ``"iteration 2"``.
    tolerance : float or None
        Relative tolerance for ``check`` (``None``: the command's ``--tolerance``).
    comparison : {"within", "at_least", "at_most"}
        How ``check`` compares (:func:`flashsim.measurements.outcome.compare`).
    role : {"calibration", "prediction"} or None
        Set by ``calibrate`` (fitted to it or not) and by validation records.
    note : str
        Free text shown in reports.
    """

    id: str
    quantity: Quantity
    value: float
    unit: str
    conditions: Conditions
    source: str
    scope: str = ""
    tolerance: float | None = None
    comparison: Literal["within", "at_least", "at_most"] = "within"
    role: Role | None = None
    note: str = ""


@dataclass
class MeasurementError(ConfigError):
    """A tool output that cannot be read: one line naming the file and line.

    Attributes
    ----------
    path : str
        The file.
    key : str
        ``"line N"`` (or the JSON key path) where the problem is.
    value : object
        The offending text or value.
    expected : str
        What the reader expected there.
    """

    def __str__(self) -> str:
        where = f"{self.path}: {self.key}" if self.key else self.path
        shown = repr(self.value) if self.value not in (None, "") else ""
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return f"{where}: {self.expected}" + (f" (found {shown})" if shown else "")


def read_text(path: Path) -> str:
    """A tool's text output, UTF-8 with undecodable bytes replaced.

    A file that cannot be read is a :class:`MeasurementError` naming it.
    """
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise MeasurementError(str(path), "", None, f"cannot read file ({exc})") from None


def error_at(path: str, line: int, text: object, expected: str) -> MeasurementError:
    """A :class:`MeasurementError` at ``path`` line ``line`` (1-based)."""
    return MeasurementError(str(path), f"line {line}", text, expected)


def number_at(path: str, line: int, text: str, what: str, non_negative: bool = False) -> float:
    """``text`` read as a finite number, else a :class:`MeasurementError` naming ``what``.

    Parameters
    ----------
    path, line : str, int
        Where ``text`` was read (for the message).
    text : str
        The printed number.
    what : str
        What the number is (a column or key name), for the message.
    non_negative : bool
        Refuse a negative value too.
    """
    try:
        value = float(text)
    except ValueError:
        raise error_at(path, line, text, f"expected a number for {what}") from None
    if not math.isfinite(value) or (non_negative and value < 0):
        kind = "finite non-negative" if non_negative else "finite"
        raise error_at(path, line, text, f"expected a {kind} number for {what}")
    return value
