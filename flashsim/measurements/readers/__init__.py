"""Readers of benchmark tools' outputs, one module per format.

Each reader module defines

* ``TOOL``: the tool's name (:attr:`Conditions.tool`);
* ``sniff(head: bytes) -> bool``: whether a file whose first 64 KiB are
  ``head`` is this tool's output;
* ``read(path: Path) -> list[Measurement]``: every measurement in the file;
  a malformed or truncated file raises one
  :class:`~flashsim.measurements.record.MeasurementError` naming the file and
  line (never another exception).

:func:`read_measurements` picks the reader (by ``tool`` or by sniffing), reads,
and applies the file's sidecar ``<file>.conditions.toml`` (conditions its
format does not record: a stripe layout set with ``lfs setstripe``, an LNet
Self-Test's sources and concurrency...).  Readers are imported lazily, so
``flashsim --help`` loads none of them.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

from pydantic import Field

from flashsim.config import (
    Bytes,
    ConfigError,
    NonNegativeSeconds,
    StrictModel,
    load_toml,
    validate,
)
from flashsim.errors import MISSING
from flashsim.measurements.record import Conditions, Measurement, MeasurementError

#: Tool name -> reader module (under this package), in sniffing order.
READERS: dict[str, str] = {
    "fio": "fio",
    "ior": "ior",
    "io500": "io500",
    "obdfilter-survey": "obdfilter",
    "lnet-selftest": "lnet",
    "darshan": "darshan",
}

#: Bytes read from a file's start to recognise its format.
SNIFF_BYTES = 65536

#: Suffix of the sidecar file that completes a tool output's conditions.
SIDECAR_SUFFIX = ".conditions.toml"


def reader_module(tool: str) -> ModuleType:
    """The reader module of ``tool`` (a key of :data:`READERS`)."""
    return importlib.import_module(f"{__name__}.{READERS[tool]}")


def detect_tool(path: Path) -> str:
    """The tool whose output ``path`` is; a :class:`MeasurementError` if none reads it."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError as exc:
        raise MeasurementError(str(path), "", None, f"cannot read file ({exc})") from None
    for tool in READERS:
        try:
            module = reader_module(tool)
        except ModuleNotFoundError:  # a reader not written yet
            continue
        if module.sniff(head):
            return tool
    raise MeasurementError(
        str(path),
        "",
        None,
        f"not a recognised benchmark output (expected the output of one of: {', '.join(READERS)})",
    )


class SidecarConditions(StrictModel):
    """The ``[conditions]`` table of a sidecar file (units as strings, e.g. ``"1 MiB"``).

    Attributes
    ----------
    operation : str
        ``read`` or ``write`` (LNet Self-Test: ``read`` moves data out of the sink).
    access : str
        ``sequential`` or ``random``.
    tasks : int
        MPI ranks, fio jobs or threads that issued the I/O.
    nodes : int
        Client nodes the tasks ran on (IOR and IO-500 outputs may not say).
    transfer_size : float
        Bytes per I/O call (IOR ``-t``, fio ``bs``, lst ``size=``, obdfilter ``rsz``).
    block_size : float
        IOR ``-b``: bytes per rank per segment.
    segments : int
        IOR ``-s``.
    file_per_process : bool
        IOR ``-F``: one file per rank.
    stripe_count : int
        Lustre stripe count of the files (``lfs setstripe -c``).
    stripe_size : float
        Lustre stripe size (``lfs setstripe -S``), bytes.
    first_target : int
        OST index of the first stripe (``lfs setstripe -i``).
    queue_depth : int
        I/Os in flight per task (fio ``iodepth``).
    concurrency : int
        LNet Self-Test requests in flight per source (``--concurrency``).
    sources : int
        LNet Self-Test source nodes.
    threads : int
        obdfilter-survey threads per OST.
    objects : int
        obdfilter-survey objects per OST.
    size : float
        obdfilter-survey bytes per OST; fio bytes per job.
    duration : float
        Length of the test, seconds.
    stonewall : float
        IOR ``-D``, seconds.
    fsync : bool
        IOR ``-e`` / fio ``fsync``: the writes were flushed inside the timed window.
    direct : bool
        O_DIRECT I/O.
    target : int
        The server-side unit measured: the OST an obdfilter-survey file tested, the sink
        OSS of an LNet Self-Test.
    extra : dict
        Tool-specific conditions, e.g. ``cross_group = true`` (lst sources in another
        I/O group), ``group = "servers"`` (the lst group that is the sink).
    """

    operation: str | None = None
    access: str | None = None
    tasks: Annotated[int, Field(ge=1)] | None = None
    nodes: Annotated[int, Field(ge=1)] | None = None
    transfer_size: Bytes | None = None
    block_size: Bytes | None = None
    segments: Annotated[int, Field(ge=1)] | None = None
    file_per_process: bool | None = None
    stripe_count: Annotated[int, Field(ge=1)] | None = None
    stripe_size: Bytes | None = None
    first_target: Annotated[int, Field(ge=0)] | None = None
    queue_depth: Annotated[int, Field(ge=1)] | None = None
    concurrency: Annotated[int, Field(ge=1)] | None = None
    sources: Annotated[int, Field(ge=1)] | None = None
    threads: Annotated[int, Field(ge=1)] | None = None
    objects: Annotated[int, Field(ge=1)] | None = None
    size: Bytes | None = None
    duration: NonNegativeSeconds | None = None
    stonewall: NonNegativeSeconds | None = None
    fsync: bool | None = None
    direct: bool | None = None
    target: Annotated[int, Field(ge=0)] | None = None
    extra: dict[str, str | int | float | bool] = Field(default_factory=dict)


class Sidecar(StrictModel):
    """A ``<file>.conditions.toml``: conditions for every measurement of ``<file>``.

    Attributes
    ----------
    conditions : SidecarConditions
        What the tool's output does not record; a value that contradicts the
        output is an error naming both.
    tolerance : float
        Relative tolerance of each measurement of the file (0.1 = 10 %), unless
        the command's ``--tolerance`` overrides it.
    """

    conditions: SidecarConditions = SidecarConditions()
    tolerance: Annotated[float, Field(ge=0.0)] | None = None


def _conditions_field(key: str) -> str:
    """The :class:`Conditions` field a sidecar key fills (``size`` -> ``size_B``)."""
    names = {f.name for f in dataclasses.fields(Conditions)}
    for name in (key, f"{key}_B", f"{key}_s"):
        if name in names:
            return name
    raise KeyError(key)


def sidecar_path(path: Path) -> Path:
    """The sidecar file of the tool output ``path`` (``<file>.conditions.toml``)."""
    return path.with_name(path.name + SIDECAR_SUFFIX)


def sidecar_conditions(path: Path) -> dict[str, Any]:
    """The ``[conditions]`` table of ``path``'s sidecar as written, unvalidated.

    For a reader whose output's meaning depends on the sidecar (the LNet group,
    the obdfilter OST): ``{}`` without a sidecar or if it is unreadable, since
    :func:`read_file` validates the sidecar and reports it.
    """
    sidecar = sidecar_path(path)
    if not sidecar.is_file():
        return {}
    try:
        table = load_toml(sidecar).get("conditions", {})
    except ConfigError:
        return {}
    return table if isinstance(table, dict) else {}


def apply_sidecar(measurements: Sequence[Measurement], sidecar: Path) -> list[Measurement]:
    """Fill conditions the output did not record from ``sidecar``.

    A sidecar value that contradicts a recorded one is an error naming both.
    """
    spec = validate(Sidecar, load_toml(sidecar), sidecar)
    given = spec.conditions.model_dump(exclude_none=True, exclude={"extra"})
    out: list[Measurement] = []
    for m in measurements:
        updates: dict[str, Any] = {}
        for key, value in given.items():
            name = _conditions_field(key)
            recorded = getattr(m.conditions, name)
            if recorded is not None and recorded != value:
                raise ConfigError(
                    str(sidecar),
                    f"conditions.{key}",
                    value,
                    f"the output records {recorded!r} for {m.id} ({m.source})",
                )
            updates[name] = value
        if spec.conditions.extra:
            updates["extra"] = {**m.conditions.extra, **spec.conditions.extra}
        conditions = dataclasses.replace(m.conditions, **updates)
        tolerance = m.tolerance if spec.tolerance is None else spec.tolerance
        out.append(dataclasses.replace(m, conditions=conditions, tolerance=tolerance))
    return out


def read_file(path: Path, tool: str | None = None) -> list[Measurement]:
    """The measurements of one file, with its sidecar applied."""
    if tool is not None and tool not in READERS:
        raise ConfigError("command line", "--tool", tool, f"expected one of: {', '.join(READERS)}")
    if not path.is_file():
        raise ConfigError(str(path), "", MISSING, "no such file")
    chosen = tool or detect_tool(path)
    measurements: list[Measurement] = reader_module(chosen).read(path)
    if not measurements:
        raise MeasurementError(str(path), "", None, f"no measurement found in this {chosen} output")
    sidecar = sidecar_path(path)
    if sidecar.is_file():
        measurements = apply_sidecar(measurements, sidecar)
    return measurements


def read_measurements(paths: Iterable[Path], tool: str | None = None) -> list[Measurement]:
    """Every measurement of every file, in order; ids must be unique across files.

    Parameters
    ----------
    paths : iterable of Path
        Tool outputs (sidecar files themselves are skipped).
    tool : str or None
        Read every file with this reader instead of sniffing.
    """
    out: list[Measurement] = []
    seen: dict[str, str] = {}
    for path in paths:
        if path.name.endswith(SIDECAR_SUFFIX):
            continue
        for m in read_file(path, tool):
            if m.id in seen:
                raise ConfigError(
                    str(path),
                    "id",
                    m.id,
                    f"measurement id also read from {seen[m.id]}: rename one of the files",
                )
            seen[m.id] = m.source
            out.append(m)
    return out
