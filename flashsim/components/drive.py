"""Drive files (``models/drives/*.toml``): an SSD or an HDD datasheet."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import BeforeValidator, Field, ValidationInfo

from flashsim.components.hdd import HddSpec
from flashsim.components.ssd import OpKind, SsdSpec
from flashsim.config import ConfigError, load_toml, validate

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
    return spec


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


__all__ = ["ConfigError", "Drive", "DriveField", "DriveSpec", "load_drive"]
