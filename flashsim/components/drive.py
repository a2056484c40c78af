"""Drive files (``models/drives/*.toml``): an SSD or an HDD datasheet."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import BeforeValidator, Field, ValidationInfo

from flashsim.components.hdd import HddSpec
from flashsim.components.ssd import OpKind, SsdSpec
from flashsim.config import ConfigError, load_toml, validate
from flashsim.errors import MISSING, warn

DriveSpec = Annotated[SsdSpec | HddSpec, Field(discriminator="kind")]


class Drive(Protocol):
    """What RAID and servers need from any drive model."""

    name: str
    capacity: float
    service_cv: float

    @property
    def servers(self) -> int:
        """Units a request-fidelity queue models."""
        ...

    def bandwidth_Bps(self, op: OpKind) -> float:
        """Sequential bytes/s."""
        ...

    def iops(self, op: OpKind) -> float:
        """Random 4 KiB operations/s."""
        ...

    def cmd_s(self, op: OpKind, size_B: float) -> float:
        """Time (s) one of ``servers`` command units is held per operation."""
        ...

    def xfer_s(self, op: OpKind, size_B: float) -> float:
        """Time (s) the single data path is held per operation."""
        ...

    def delay_s(self, op: OpKind, size_B: float) -> float:
        """Latency (s) after service that holds nothing."""
        ...

    def random_iops_ceiling(self, op: OpKind, size_B: float) -> float:
        """Saturated operations/s of ``size_B``-byte random operations."""
        ...


def load_drive(path: str | Path) -> SsdSpec | HddSpec:
    """Load and validate a drive file; problems become :class:`ConfigError`."""
    spec: SsdSpec | HddSpec = validate(DriveSpec, load_toml(path), path)
    spec._file = str(path)
    return spec


def check_calibrated_drive(
    drive: SsdSpec | HddSpec, calibrated_with: str | None, where: str
) -> None:
    """Warn (:class:`~flashsim.errors.ModelWarning`) when ``drive`` is not the drive the
    calibrated parameters of ``where`` were fitted on.

    A model records the drive its stack efficiencies (and per-operation costs,
    aging fit) were fitted on as ``<where>.calibrated_with``; swapping in
    another drive keeps those values, which docs/calibration.md says may or
    may not carry over (a stack efficiency does under the same stack; how a
    drive beats its datasheet does not).

    Parameters
    ----------
    drive : SsdSpec or HddSpec
        The drive the model now uses.
    calibrated_with : str or None
        Name of the drive the fit was made on (``None``: not recorded, no check).
    where : str
        Dotted key of the server table, e.g. ``"oss"``.
    """
    if calibrated_with is None or drive.name == calibrated_with:
        return
    warn(
        f"{where}.drive is {drive.name!r}, but {where}'s calibrated parameters (stack "
        f"efficiencies, per-operation costs, aging) were fitted on {calibrated_with!r} "
        f"({where}.calibrated_with): they carry over unchanged; docs/calibration.md says "
        "which hold for another drive"
    )


#: Smallest operation a drive file without IOPS is trusted for (bytes): the command stage is
#: taken as never binding at and above it.  ASSUMED 128 KiB, the transfer size enterprise
#: NVMe datasheets commonly quote sequential bandwidth at (reviews measure it so too, e.g.
#: The SSD Review's "128KB sequential read/write" test of the Toshiba HK4R); a drive is
#: bandwidth-bound there by the datasheet's own definition.  Some quote it at 64 kB (the
#: P4800X, models/drives/intel-optane-p4800x-1.5tb.toml), so the rule errs towards asking.
SEQUENTIAL_TRANSFER_B = 128 * 1024


def drive_use(phase: Any) -> tuple[OpKind, str] | None:
    """The operation whose IOPS ``phase`` needs and why, or ``None`` when bandwidth is enough.

    An IOR-like phase (``operation``, ``access``, ``transfer_size``, and
    ``fidelity`` where it overrides the scenario's) needs its operation's
    random IOPS when its accesses are random, smaller than
    :data:`SEQUENTIAL_TRANSFER_B` (the command stage can bind), or served at
    request fidelity (every request's service holds a command unit).  Other
    phases are not checked: they run with the command stage never binding.
    """
    op = getattr(phase, "operation", None)
    size = getattr(phase, "transfer_size", None)
    if op not in ("read", "write") or not isinstance(size, (int, float)):
        return None
    what = f"{size / 1024:g} KiB {op}s"
    if getattr(phase, "access", "sequential") == "random":
        return op, f"random {what}"
    if size < SEQUENTIAL_TRANSFER_B:
        limit = SEQUENTIAL_TRANSFER_B // 1024
        return op, f"{what}, below the {limit} KiB a bandwidth-only drive is trusted for"
    if getattr(phase, "fidelity", None) == "request":
        return op, f"{what} at request fidelity"
    return None


def check_drive_for_phase(drive: SsdSpec | HddSpec, phase: Any) -> None:
    """Raise :class:`ConfigError` when ``phase`` needs a value ``drive``'s file leaves out.

    A drive file may give bandwidth only (no ``read_iops``/``write_iops``);
    a phase that needs the IOPS (:func:`drive_use`) then stops before
    anything runs, with one line naming the drive, its file, the key and the
    phase, e.g. ``drive 'X' (models/drives/x.toml): read_iops is needed by
    phase 'rr' (random 4 KiB reads); add it to the drive file``.
    """
    use = drive_use(phase)
    if use is None or not isinstance(drive, SsdSpec):
        return
    op, why = use
    if drive.known_iops(op) is not None:
        return
    where = drive._file or "given in the model: inline, or edited by --set"
    name = getattr(phase, "name", "")
    raise ConfigError(
        f"drive {drive.name!r} ({where})",
        "",
        MISSING,
        f"{op}_iops is needed by phase {name!r} ({why}); add it to the drive file",
    )


def _drive_file(value: Any, info: ValidationInfo) -> Any:
    """Load a drive named by path (relative to the model file) into its datasheet."""
    if not isinstance(value, str):
        return value
    base = Path((info.context or {}).get("model_dir", "."))
    path = (base / value).resolve()
    if not path.exists():
        raise ValueError(f"drive file {path} not found")
    return load_drive(path)


#: A model-file field naming a drive file (or giving its datasheet inline).
DriveField = Annotated[DriveSpec, BeforeValidator(_drive_file)]


__all__ = [
    "SEQUENTIAL_TRANSFER_B",
    "ConfigError",
    "Drive",
    "DriveField",
    "DriveSpec",
    "check_calibrated_drive",
    "check_drive_for_phase",
    "drive_use",
    "load_drive",
]
