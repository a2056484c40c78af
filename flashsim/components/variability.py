"""Per-component performance variability: median-1 factors drawn per component.

A real fleet is not uniform: seed 000 Fig. 4 shows the obdfilter-survey write
bandwidth of 273 Perlmutter OSTs spread much more than their read bandwidth,
and Fig. 5 the LNet bandwidth of 271 OSS NICs spread too.  A model file gives
each level (a target's stack, a drive, a server's NIC) and direction a
distribution of a dimensionless *factor* on the calibrated efficiency:

* ``lognormal``: ``exp(sigma * Z)``;
* ``normal``: ``1 + sigma * Z``, clipped;
* ``slow-tail``: a two-population mixture, a ``fraction`` of components from a
  slower population (median ``slow_median``, log-spread ``slow_sigma``) and the
  rest from a lognormal main population whose location is solved so the
  mixture's median is exactly 1.

Every shape has median exactly 1 (the calibrated medians stay medians) and is
clipped to ``[floor, ceiling]`` with ``floor <= 1 <= ceiling``, and to the
component's physical ceiling (e.g. ``1 / efficiency``: no target beats its
drives' datasheet rate), which is >= 1, so clipping never moves the median.

Each component draws from its own stream, ``sim.rng(f"{name}.variability.{key}")``
(:func:`component_factor`): adding a component never changes another's factor.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from flashsim.config import StrictModel, calibratable
from flashsim.engine.simulation import Simulation


def _norm_cdf(x: float) -> float:
    """Standard normal CDF: ``scipy.special.ndtr`` (what ``scipy.stats.norm.cdf`` calls).

    Imported on first use, and from ``scipy.special``: importing ``scipy.stats`` costs
    ~0.5 s of start-up.
    """
    from scipy.special import ndtr

    return float(ndtr(x))


def _norm_ppf(q: float) -> float:
    """Standard normal quantile: ``scipy.special.ndtri`` (what ``scipy.stats.norm.ppf`` calls)."""
    from scipy.special import ndtri

    return float(ndtri(q))


class _Clip(StrictModel):
    """Bounds every shape shares (factor clipped to ``[floor, ceiling]``)."""

    floor: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        0.05, description="Lowest factor a component may draw (dimensionless, in (0, 1])."
    )
    ceiling: Annotated[float, Field(ge=1.0)] | None = Field(
        None,
        description=(
            "Highest factor a component may draw (>= 1); the component's physical ceiling "
            "(e.g. 1 / efficiency) applies as well."
        ),
    )

    def clip(self, x: float, physical_ceiling: float = math.inf) -> float:
        """``x`` clipped to the floor, this ceiling and ``physical_ceiling`` (>= 1)."""
        top = min(self.ceiling if self.ceiling is not None else math.inf, physical_ceiling)
        return float(min(max(x, self.floor), max(top, 1.0)))


class LognormalSpread(_Clip):
    """``factor = exp(sigma * Z)``, ``Z`` standard normal: median 1.

    Attributes
    ----------
    sigma : float
        Standard deviation of ``ln(factor)`` (dimensionless).
    """

    shape: Literal["lognormal"] = Field(description="Distribution shape.")
    sigma: Annotated[float, Field(ge=0.0, le=2.0)] = Field(
        description="Standard deviation of ln(factor) (dimensionless)."
    )

    def raw(self, rng: np.random.Generator) -> float:
        """One unclipped factor."""
        return math.exp(self.sigma * float(rng.standard_normal()))

    def cdf(self, x: float) -> float:
        """P(unclipped factor <= ``x``)."""
        if x <= 0:
            return 0.0
        if self.sigma == 0:
            return 1.0 if x >= 1.0 else 0.0
        return _norm_cdf(math.log(x) / self.sigma)


class NormalSpread(_Clip):
    """``factor = 1 + sigma * Z``, clipped to ``[floor, ceiling]``: median 1.

    Attributes
    ----------
    sigma : float
        Standard deviation of the factor (dimensionless, relative to the median).
    """

    shape: Literal["normal"] = Field(description="Distribution shape.")
    sigma: Annotated[float, Field(ge=0.0, le=0.5)] = Field(
        description="Standard deviation of the factor (dimensionless, relative to the median)."
    )

    def raw(self, rng: np.random.Generator) -> float:
        """One unclipped factor."""
        return 1.0 + self.sigma * float(rng.standard_normal())

    def cdf(self, x: float) -> float:
        """P(unclipped factor <= ``x``)."""
        if self.sigma == 0:
            return 1.0 if x >= 1.0 else 0.0
        return _norm_cdf((x - 1.0) / self.sigma)


class SlowTailSpread(_Clip):
    """A two-population mixture: a ``fraction`` of slow components, the rest near 1.

    The slow population is lognormal with median ``slow_median`` and log-spread
    ``slow_sigma``; the main population is lognormal with log-spread ``sigma``
    and a location solved so that the mixture's median is exactly 1.

    Attributes
    ----------
    fraction : float
        Probability that a component belongs to the slow population (< 0.5).
    slow_median : float
        Median factor of the slow population (dimensionless, < 1).
    slow_sigma : float
        Standard deviation of ln(factor) in the slow population.
    sigma : float
        Standard deviation of ln(factor) in the main population.
    """

    shape: Literal["slow-tail"] = Field(description="Distribution shape.")
    fraction: Annotated[float, Field(ge=0.0, lt=0.5)] = Field(
        description="Probability that a component is in the slow population ([0, 0.5)).",
        json_schema_extra=calibratable(
            1e-3,
            0.49,
            "",
            [],
            "a fleet survey's count of slow OSTs (seed 000 Fig. 4), which no reader reproduces",
            "Aging and the fleet",
            where=["oss.variability.target_write"],
        ),
    )
    slow_median: Annotated[float, Field(gt=0.0, lt=1.0)] = Field(
        description="Median factor of the slow population (dimensionless, in (0, 1))."
    )
    slow_sigma: Annotated[float, Field(ge=0.0, le=2.0)] = Field(
        0.0, description="Standard deviation of ln(factor) in the slow population."
    )
    sigma: Annotated[float, Field(ge=0.0, le=2.0)] = Field(
        0.0, description="Standard deviation of ln(factor) in the main population."
    )

    @model_validator(mode="after")
    def _median_reachable(self) -> SlowTailSpread:
        if self.fraction > 0 and self.sigma == 0 and self._slow_cdf(1.0) * self.fraction >= 0.5:
            raise ValueError(f"fraction(={self.fraction}) of slow components leaves no median of 1")
        return self

    def _slow_cdf(self, x: float) -> float:
        if x <= 0:
            return 0.0
        if self.slow_sigma == 0:
            return 1.0 if x >= self.slow_median else 0.0
        return _norm_cdf((math.log(x) - math.log(self.slow_median)) / self.slow_sigma)

    @property
    def main_mu(self) -> float:
        """Location (mean of ln(factor)) of the main population that puts the median at 1."""
        if self.sigma == 0 or self.fraction == 0:
            return 0.0
        target = (0.5 - self.fraction * self._slow_cdf(1.0)) / (1.0 - self.fraction)
        return -self.sigma * _norm_ppf(target)

    def raw(self, rng: np.random.Generator) -> float:
        """One unclipped factor (two draws: membership, then the factor)."""
        slow = float(rng.random()) < self.fraction
        z = float(rng.standard_normal())
        if slow:
            return self.slow_median * math.exp(self.slow_sigma * z)
        return math.exp(self.main_mu + self.sigma * z)

    def cdf(self, x: float) -> float:
        """P(unclipped factor <= ``x``)."""
        if x <= 0:
            return 0.0
        if self.sigma == 0:
            main = 1.0 if x >= 1.0 else 0.0
        else:
            main = _norm_cdf((math.log(x) - self.main_mu) / self.sigma)
        return self.fraction * self._slow_cdf(x) + (1.0 - self.fraction) * main


Spread = Annotated[LognormalSpread | NormalSpread | SlowTailSpread, Field(discriminator="shape")]


class VariabilitySpec(StrictModel):
    """Per-component factors on a server class's calibrated efficiencies (each median 1).

    Each entry is a distribution (``shape = "lognormal" | "normal" | "slow-tail"``)
    or absent (factor 1).  Targets and drives draw one factor per component and
    direction; servers one per NIC direction.

    Attributes
    ----------
    enabled : bool
        Whether components draw factors at all (a model may carry calibrated
        distributions that scenarios switch on).
    target_write, target_read : Spread or None
        Factor on a target's stack write / read efficiency (seed 000 Fig. 4).
    drive_write, drive_read : Spread or None
        Factor on one drive's write / read data rate.
    nic_ingress, nic_egress : Spread or None
        Factor on a server NIC's ingress / egress efficiency (seed 000 Fig. 5).
    """

    enabled: bool = Field(True, description="Whether components draw factors at all.")
    target_write: Spread | None = Field(
        None, description="Factor on each target's stack write efficiency (median 1)."
    )
    target_read: Spread | None = Field(
        None, description="Factor on each target's stack read efficiency (median 1)."
    )
    drive_write: Spread | None = Field(
        None, description="Factor on each drive's write data rate (median 1)."
    )
    drive_read: Spread | None = Field(
        None, description="Factor on each drive's read data rate (median 1)."
    )
    nic_ingress: Spread | None = Field(
        None, description="Factor on each server's NIC ingress efficiency (median 1)."
    )
    nic_egress: Spread | None = Field(
        None, description="Factor on each server's NIC egress efficiency (median 1)."
    )

    def spread(self, key: str) -> LognormalSpread | NormalSpread | SlowTailSpread | None:
        """The distribution of ``key`` (e.g. ``"target_write"``), or ``None`` when off."""
        if not self.enabled:
            return None
        value: LognormalSpread | NormalSpread | SlowTailSpread | None = getattr(self, key)
        return value


def component_factor(
    sim: Simulation,
    component: str,
    spec: VariabilitySpec,
    key: str,
    physical_ceiling: float = math.inf,
) -> float:
    """The factor ``key`` of ``component``, from its own stream (1.0 when not modelled).

    Parameters
    ----------
    sim : Simulation
        Owner of the seeded streams.
    component : str
        Dotted component name (e.g. ``perlmutter.oss17.ost0``).
    spec : VariabilitySpec
        The server class's distributions.
    key : str
        Which factor (a :class:`VariabilitySpec` field, e.g. ``"target_write"``).
    physical_ceiling : float
        Highest factor the component can reach (dimensionless, >= 1).
    """
    dist = spec.spread(key)
    if dist is None:
        return 1.0
    rng = sim.rng(f"{component}.variability.{key}")
    return dist.clip(dist.raw(rng), physical_ceiling)


def spread_shorthand(data: dict[str, object], key: str) -> dict[str, object]:
    """Rewrite a server table's ``key = s`` (the former ``efficiency_spread``) as variability.

    ``s`` becomes normal ``target_write`` and ``target_read`` spreads of relative
    standard deviation ``s`` (replacing any in the ``variability`` table, which it
    enables).  ``s = 0`` means no spread.
    """
    sigma = data.pop(key)
    if isinstance(sigma, bool) or not isinstance(sigma, int | float):
        raise ValueError(f"{key}(={sigma!r}) must be a number in [0, 0.5]")
    if not 0.0 <= float(sigma) <= 0.5:
        raise ValueError(f"{key}(={sigma}) must be in [0, 0.5]")
    if sigma == 0:
        return data
    raw = data.get("variability")
    table: dict[str, object] = dict(raw) if isinstance(raw, dict) else {}
    for name in ("target_write", "target_read"):
        table[name] = {"shape": "normal", "sigma": float(sigma), "floor": 0.5}
    table["enabled"] = True
    data["variability"] = table
    return data
