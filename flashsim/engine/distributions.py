"""Service-time distributions that carry their analytic mean and variance.

Each distribution draws from a caller-supplied NumPy generator (a simulation
stream), never from a module-level RNG.  Parameters are in seconds unless a
distribution is used for another quantity, in which case the unit follows it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt


class Distribution(ABC):
    """A non-negative random variable with known mean and variance."""

    @property
    @abstractmethod
    def mean(self) -> float:
        """Analytic mean."""

    @property
    @abstractmethod
    def variance(self) -> float:
        """Analytic variance."""

    @property
    def cv(self) -> float:
        """Coefficient of variation (std / mean)."""
        return math.sqrt(self.variance) / self.mean if self.mean > 0 else 0.0

    @abstractmethod
    def sample(self, rng: np.random.Generator, size: int) -> npt.NDArray[np.float64]:
        """Draw ``size`` values from ``rng``."""


def _check_positive(label: str, value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{label}(={value}) must be a finite number > 0")


@dataclass(frozen=True)
class Deterministic(Distribution):
    """Always ``value``."""

    value: float

    def __post_init__(self) -> None:
        if not (self.value >= 0 and math.isfinite(self.value)):
            raise ValueError(f"value(={self.value}) must be a finite number >= 0")

    @property
    def mean(self) -> float:
        return self.value

    @property
    def variance(self) -> float:
        return 0.0

    def sample(self, rng: np.random.Generator, size: int) -> npt.NDArray[np.float64]:
        return np.full(size, self.value)


@dataclass(frozen=True)
class Exponential(Distribution):
    """Exponential with the given mean."""

    mean_value: float

    def __post_init__(self) -> None:
        _check_positive("mean", self.mean_value)

    @property
    def mean(self) -> float:
        return self.mean_value

    @property
    def variance(self) -> float:
        return self.mean_value**2

    def sample(self, rng: np.random.Generator, size: int) -> npt.NDArray[np.float64]:
        return rng.exponential(self.mean_value, size)


@dataclass(frozen=True)
class _MeanStd(Distribution):
    """A family given by its own mean and standard deviation."""

    mean_value: float
    std: float

    def __post_init__(self) -> None:
        _check_positive("mean", self.mean_value)
        _check_positive("std", self.std)

    @property
    def mean(self) -> float:
        return self.mean_value

    @property
    def variance(self) -> float:
        return self.std**2


@dataclass(frozen=True)
class LogNormal(_MeanStd):
    """Lognormal given by its own mean and standard deviation (not the log's)."""

    def sample(self, rng: np.random.Generator, size: int) -> npt.NDArray[np.float64]:
        s2 = math.log1p((self.std / self.mean_value) ** 2)
        return rng.lognormal(math.log(self.mean_value) - s2 / 2.0, math.sqrt(s2), size)


@dataclass(frozen=True)
class Gamma(_MeanStd):
    """Gamma given by its mean and standard deviation."""

    def sample(self, rng: np.random.Generator, size: int) -> npt.NDArray[np.float64]:
        shape = (self.mean_value / self.std) ** 2
        return rng.gamma(shape, self.mean_value / shape, size)


@dataclass(frozen=True)
class Empirical(Distribution):
    """Resampling of observed values (each equally likely)."""

    values: Sequence[float]
    _array: npt.NDArray[np.float64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        arr = np.asarray(self.values, dtype=np.float64)
        if arr.size == 0:
            raise ValueError("values must not be empty")
        if not (np.all(np.isfinite(arr)) and np.all(arr >= 0)):
            raise ValueError("values must be finite numbers >= 0")
        object.__setattr__(self, "_array", arr)

    @property
    def mean(self) -> float:
        return float(self._array.mean())

    @property
    def variance(self) -> float:
        return float(self._array.var())

    def sample(self, rng: np.random.Generator, size: int) -> npt.NDArray[np.float64]:
        return rng.choice(self._array, size)


def with_mean_and_cv(kind: str, mean: float, cv: float = 0.0) -> Distribution:
    """Build a distribution of ``kind`` from its mean and coefficient of variation.

    Parameters
    ----------
    kind : {"deterministic", "exponential", "lognormal", "gamma"}
        Family.  ``exponential`` ignores ``cv`` (it is 1).
    mean : float
        Mean, in the unit of the quantity (seconds for service times).
    cv : float
        Coefficient of variation (std / mean); 0 gives a deterministic value.
    """
    if kind == "deterministic" or (cv == 0 and kind != "exponential"):
        return Deterministic(mean)
    if kind == "exponential":
        return Exponential(mean)
    if kind == "lognormal":
        return LogNormal(mean, cv * mean)
    if kind == "gamma":
        return Gamma(mean, cv * mean)
    raise ValueError(
        f"distribution kind(={kind!r}) must be one of deterministic, exponential, lognormal, gamma"
    )


class SampleBuffer:
    """Draws from a distribution in blocks, for speed, one value at a time.

    Parameters
    ----------
    dist : Distribution
        What to draw.
    rng : numpy.random.Generator
        The owning component's stream.
    block : int
        Values drawn per refill.
    """

    def __init__(self, dist: Distribution, rng: np.random.Generator, block: int = 4096) -> None:
        self.dist = dist
        self._rng = rng
        self._block = block
        self._values: list[float] = []

    def next(self) -> float:
        """The next value."""
        if not self._values:
            self._values = self.dist.sample(self._rng, self._block).tolist()
            self._values.reverse()
        return self._values.pop()
