"""Drive files (``models/drives/*.toml``): an SSD or an HDD datasheet."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Protocol

from pydantic import Field, TypeAdapter

from flashsim.components.hdd import HddSpec
from flashsim.components.ssd import OpKind, SsdSpec
from flashsim.config import ConfigError, load_toml

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
    from flashsim.config import _describe_error

    p = Path(path)
    data = load_toml(p)
    adapter: TypeAdapter[SsdSpec | HddSpec] = TypeAdapter(DriveSpec)
    try:
        return adapter.validate_python(data)
    except Exception as exc:  # pydantic.ValidationError
        errors = getattr(exc, "errors", None)
        if errors is None:
            raise
        first = errors()[0]
        model = SsdSpec if data.get("kind") == "ssd" else HddSpec
        err = _describe_error(first, model, data)
        err.path = str(p)
        raise err from None


__all__ = ["ConfigError", "Drive", "DriveSpec", "load_drive"]
