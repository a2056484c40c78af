"""Synthetic production mixes: many concurrent checkpoint-like jobs, as Spider saw them.

Seed 003 (§2) characterises thirteen months of I/O on OLCF's Spider (three
Lustre partitions, widow1-3) from the DDN controllers: bandwidth that is
"very low" most of the time with "several high spikes" (bursty arrivals,
checkpoint/restart), heavy long-tailed bandwidth CDFs, a read share of
*requests* of 61.6 % on widow1 and about 35 % on widow2/3, and request
sizes of 4-16 KB, 512 KB and 1 MB making up "more than 95 %" of requests.
:class:`MixSpec` states such a mix with every distribution in the scenario
file; :func:`generate_mix` draws the jobs as
:class:`~flashsim.workloads.trace.JobTrace` objects the replay engine runs.

What is drawn, from what
------------------------
1. **Job arrivals** in ``[0, duration)``: a Poisson process whose rate is
   switched by an alternating ON/OFF renewal process (an interrupted /
   Markov-modulated Poisson process when both periods are exponential).
   Chosen because it is the simplest process that produces what the seed
   describes, rare high spikes over a low baseline ("arrival patterns of I/O
   requests are bursty", seed 003 §2, Fig. 1): counts per window are
   overdispersed (index of dispersion >> 1), and ON/OFF periods of infinite
   variance (Pareto, 1 < alpha < 2) make the counts long-range dependent, a
   known property of ON/OFF processes that the seed did not measure.  The
   window starts in ON with the stationary probability
   ``E[on] / (E[on] + E[off])`` (with a fresh period, not a residual one).
   ``process = "poisson"`` is the memoryless reference (dispersion 1).
2. **Per job**: nodes (heavy-tailed, truncated to the system's client
   nodes by inverse-CDF truncation, not clipping), file per process or one
   shared file (Bernoulli), a number of I/O bursts, compute gaps between
   them (the first burst starts at the job's arrival); bursts that would
   start after the window are dropped (nominal times: I/O time itself is
   the simulation's to decide).
3. **Per burst**: bytes per rank (heavy-tailed, the same for every rank of
   the burst, as a balanced checkpoint), and a direction for all its ranks
   (or, with ``direction_per = "run"``, one per rank).
4. **Per (burst, rank) run**: a request size, and the run is written (or
   read) as ``n = max(1, round(bytes / size))`` contiguous calls of that one
   size, sequential offsets (file per process: the rank's file, appended
   burst after burst; shared file: the rank's segment of the burst's
   region, N-1 segmented), so the replay engine merges the run into one
   transfer.  The bytes are therefore rounded to whole requests.

Size classes and directions are assigned by *weighted systematic sampling*
rather than independent draws, so that the shares hold over **requests**,
as the controllers counted them, and not only in expectation: runs are
shuffled, each run's cumulative-weight midpoint (plus one uniform random
rotation) is mapped onto the unit interval cut into the target shares, and
the run takes the share its midpoint falls in.  Every run's marginal
probability is exactly the target; the realised share misses it by at most
half a unit's weight at each of the category's two cuts, so by at most the
largest unit's share.  Sizes use byte weights: every size ``s`` of every
class is a category of byte share ``~ s * p_k / n_k`` (``p_k`` the class's
share of requests, ``n_k`` the sizes on its grid), so a class's requests
are ``p_k`` of the total, spread evenly over its grid; directions
use each burst's request count as its weight, so the realised read
fraction of requests misses ``read_fraction`` by at most the largest
burst's share of requests (a checkpoint is all-write, a restart all-read,
so by default the direction is per burst, not per call; ``direction_per =
"run"`` draws it per rank and burst, which holds the share closer in a
short window at the cost of that realism).  In a window of a few dozen
jobs one heavy-tailed burst can carry a third of the requests, so the
window's shares scatter around the targets as a real hour's would;
:func:`request_shares` reports what a draw realised.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError, model_validator

from flashsim.config import Bytes, Seconds, StrictModel, UnitFraction, field_error, quantity
from flashsim.units import Dimension
from flashsim.workloads.trace import (
    FloatArray,
    IntArray,
    JobTrace,
    OpTable,
    TraceFile,
    records_frame,
)

# ------------------------------------------------------------------ distributions
#: Parameters of a distribution table that carry the quantity's unit.
_QUANTITY_KEYS = ("value", "mean", "median", "min", "max", "values")


def _special() -> Any:
    """SciPy's special functions, imported on first use (SciPy is slow to import)."""
    import scipy.special

    return scipy.special


class _Dist(StrictModel):
    """Base of the distribution tables: draws non-negative values of one quantity."""

    def sample(self, rng: np.random.Generator, size: int, upper: float = math.inf) -> FloatArray:
        """Draw ``size`` values, truncated to at most ``upper`` (same unit as the quantity)."""
        raise NotImplementedError

    def expected(self) -> float:
        """Analytic mean (untruncated by any ``upper``)."""
        raise NotImplementedError


def _truncated_inverse(
    rng: np.random.Generator,
    size: int,
    cdf: Callable[[float], float],
    inverse: Callable[[FloatArray], FloatArray],
    upper: float,
) -> FloatArray:
    """Inverse-CDF draws conditioned on ``X <= upper`` (``cdf(upper)`` > 0 is checked)."""
    top = cdf(upper) if math.isfinite(upper) else 1.0
    if top <= 0.0:
        raise ValueError(f"truncation bound {upper:g} lies below the distribution's support")
    u = rng.random(size) * top
    return inverse(u)


class FixedDist(_Dist):
    """Always ``value`` (``dist = "fixed"``)."""

    dist: Literal["fixed"] = Field(description="Distribution tag: a constant.")
    value: Annotated[float, Field(ge=0.0)] = Field(
        description="The value, in the quantity's unit (a unit string for bytes and times)."
    )

    def sample(self, rng: np.random.Generator, size: int, upper: float = math.inf) -> FloatArray:
        """``size`` copies of ``min(value, upper)``."""
        return np.full(size, min(self.value, upper), dtype=np.float64)

    def expected(self) -> float:
        """``value``."""
        return self.value


class ExponentialDist(_Dist):
    """Exponential with the given mean (``dist = "exponential"``)."""

    dist: Literal["exponential"] = Field(description="Distribution tag: exponential.")
    mean: Annotated[float, Field(gt=0.0)] = Field(
        description="Mean, in the quantity's unit (a unit string for bytes and times)."
    )

    def sample(self, rng: np.random.Generator, size: int, upper: float = math.inf) -> FloatArray:
        """Inverse-CDF draws, truncated to ``upper``."""
        return _truncated_inverse(
            rng,
            size,
            lambda x: -math.expm1(-x / self.mean),
            lambda u: -self.mean * np.log1p(-u),
            upper,
        )

    def expected(self) -> float:
        """``mean``."""
        return self.mean


class ParetoDist(_Dist):
    """Pareto (type I): ``P(X > x) = (min / x)^alpha`` for ``x >= min``, optionally truncated.

    ``dist = "pareto"``.  With ``alpha <= 1`` the mean is infinite unless
    ``max`` bounds it; with ``alpha <= 2`` the variance is.
    """

    dist: Literal["pareto"] = Field(description="Distribution tag: Pareto type I (heavy tail).")
    alpha: Annotated[float, Field(gt=0.0, le=10.0)] = Field(
        description="Tail index (dimensionless): P(X > x) = (min/x)^alpha; smaller is heavier."
    )
    min: Annotated[float, Field(gt=0.0)] = Field(
        description="Scale, the smallest value, in the quantity's unit."
    )
    max: Annotated[float, Field(gt=0.0)] | None = Field(
        default=None,
        description="Upper truncation (inverse-CDF, no mass piles up there), or none.",
    )

    @model_validator(mode="after")
    def _bounds(self) -> ParetoDist:
        if self.max is not None and self.max <= self.min:
            raise field_error("max", f"max(={self.max:g}) must be > min(={self.min:g})")
        return self

    def _cdf(self, x: float) -> float:
        return 0.0 if x < self.min else 1.0 - (self.min / x) ** self.alpha

    def sample(self, rng: np.random.Generator, size: int, upper: float = math.inf) -> FloatArray:
        """Inverse-CDF draws, truncated to ``min(max, upper)``."""
        top = min(self.max if self.max is not None else math.inf, upper)
        return _truncated_inverse(
            rng, size, self._cdf, lambda u: self.min * (1.0 - u) ** (-1.0 / self.alpha), top
        )

    def expected(self) -> float:
        """Mean of the (truncated) Pareto; ``inf`` when untruncated with ``alpha <= 1``."""
        a, lo = self.alpha, self.min
        if self.max is None:
            return a * lo / (a - 1.0) if a > 1.0 else math.inf
        hi = self.max
        mass = 1.0 - (lo / hi) ** a
        if abs(a - 1.0) < 1e-12:
            return float(lo * math.log(hi / lo) / mass)
        return float(a * lo**a * (lo ** (1.0 - a) - hi ** (1.0 - a)) / ((a - 1.0) * mass))


class LognormalDist(_Dist):
    """Lognormal: ``ln X ~ Normal(ln median, sigma^2)``, optionally truncated.

    ``dist = "lognormal"``.
    """

    dist: Literal["lognormal"] = Field(description="Distribution tag: lognormal.")
    median: Annotated[float, Field(gt=0.0)] = Field(
        description="Median, in the quantity's unit (a unit string for bytes and times)."
    )
    sigma: Annotated[float, Field(ge=0.0, le=10.0)] = Field(
        description="Standard deviation of ln X (dimensionless); larger is heavier-tailed."
    )
    max: Annotated[float, Field(gt=0.0)] | None = Field(
        default=None, description="Upper truncation (inverse-CDF), or none."
    )

    def _cdf(self, x: float) -> float:
        if x <= 0.0:
            return 0.0
        if self.sigma == 0.0:
            return 1.0 if x >= self.median else 0.0
        return float(_special().ndtr(math.log(x / self.median) / self.sigma))

    def sample(self, rng: np.random.Generator, size: int, upper: float = math.inf) -> FloatArray:
        """Inverse-CDF draws, truncated to ``min(max, upper)``."""
        top = min(self.max if self.max is not None else math.inf, upper)
        if self.sigma == 0.0:
            if top < self.median:
                raise ValueError(f"truncation bound {top:g} lies below the median {self.median:g}")
            return np.full(size, self.median, dtype=np.float64)
        return _truncated_inverse(
            rng,
            size,
            self._cdf,
            lambda u: self.median * np.exp(self.sigma * _special().ndtri(np.maximum(u, 1e-300))),
            top,
        )

    def expected(self) -> float:
        """Mean of the (truncated) lognormal."""
        s, m = self.sigma, self.median
        full = m * math.exp(s * s / 2.0)
        if self.max is None or s == 0.0:
            return full if s > 0.0 or self.max is None else min(m, self.max)
        z = math.log(self.max / m) / s
        ndtr = _special().ndtr
        return full * float(ndtr(z - s)) / float(ndtr(z))


class ChoiceDist(_Dist):
    """One of ``values`` with the given probabilities (``dist = "choice"``)."""

    dist: Literal["choice"] = Field(description="Distribution tag: a discrete choice.")
    values: list[Annotated[float, Field(ge=0.0)]] = Field(
        min_length=1, description="The values, in the quantity's unit."
    )
    probabilities: list[Annotated[float, Field(ge=0.0, le=1.0)]] = Field(
        min_length=1, description="Probability of each value (dimensionless, summing to 1)."
    )

    @model_validator(mode="after")
    def _consistent(self) -> ChoiceDist:
        if len(self.values) != len(self.probabilities):
            raise field_error(
                "probabilities",
                f"probabilities: {len(self.probabilities)} entries for {len(self.values)} values; "
                "expected one probability per value",
            )
        total = math.fsum(self.probabilities)
        if abs(total - 1.0) > 1e-6:
            raise field_error("probabilities", f"probabilities sum to {total:g}; expected 1")
        return self

    def sample(self, rng: np.random.Generator, size: int, upper: float = math.inf) -> FloatArray:
        """Draws among the values not above ``upper`` (probabilities renormalised)."""
        values = np.asarray(self.values, dtype=np.float64)
        p = np.asarray(self.probabilities, dtype=np.float64) * (values <= upper)
        if p.sum() <= 0.0:
            raise ValueError(f"truncation bound {upper:g} lies below every value")
        return rng.choice(values, size=size, p=p / p.sum())

    def expected(self) -> float:
        """Probability-weighted mean of the values."""
        return math.fsum(v * p for v, p in zip(self.values, self.probabilities, strict=True))


_DistUnion = Annotated[
    FixedDist | ExponentialDist | ParetoDist | LognormalDist | ChoiceDist,
    Field(discriminator="dist"),
]


def _with_units(dimension: Dimension) -> Callable[[Any], Any]:
    """A before-validator: parse a distribution table's quantity parameters as ``dimension``.

    Each parameter goes through the same quantity type as any other field
    (:func:`flashsim.config.quantity`: unit strings, physical range); the
    distribution's own bounds (``> 0``, ``max > min`` ...) are checked after.
    """
    adapter: TypeAdapter[float] = TypeAdapter(quantity(dimension, None))

    def one(key: str, value: Any) -> float:
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
            raise field_error(key, f"{key}: {message}") from None

    def parse(data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for key in _QUANTITY_KEYS:
            value = out.get(key)
            if value is None or (key == "values" and not isinstance(value, list)):
                continue
            out[key] = [one(key, v) for v in value] if key == "values" else one(key, value)
        return out

    return parse


#: A distribution of bytes (parameters are unit strings such as "1 GiB").
BytesDist = Annotated[_DistUnion, BeforeValidator(_with_units("bytes"))]
#: A distribution of times (parameters are unit strings such as "10 min").
SecondsDist = Annotated[_DistUnion, BeforeValidator(_with_units("time"))]
#: A distribution of counts (bare numbers), rounded to integers >= 1 when drawn.
CountDist = Annotated[_DistUnion, BeforeValidator(_with_units("number"))]


# ------------------------------------------------------------------ the mix spec
class PoissonArrivals(StrictModel):
    """Job arrivals as a homogeneous Poisson process (``process = "poisson"``): not bursty."""

    process: Literal["poisson"] = Field(description="Arrival process tag: homogeneous Poisson.")
    mean_interarrival: Seconds = Field(description="Mean time between job arrivals (s).")


class OnOffArrivals(StrictModel):
    """Job arrivals as a Poisson process switched by ON/OFF periods (``process = "on-off"``).

    During ON periods jobs arrive at rate ``1 / on_interarrival``, during OFF
    periods at ``off_activity`` times that rate (0: none).  Bursty by
    construction (seed 003 §2: "arrival patterns of I/O requests are
    bursty ... tremendously high for short periods of time but overall
    utilization can be dramatically lower than peak usage").
    """

    process: Literal["on-off"] = Field(
        description="Arrival process tag: Poisson modulated by alternating ON/OFF periods."
    )
    on_interarrival: Seconds = Field(description="Mean time between arrivals while ON (s).")
    off_activity: UnitFraction = Field(
        description="Arrival rate while OFF as a fraction of the ON rate (0 = silent)."
    )
    on_period: SecondsDist = Field(description="Length of an ON period (a time distribution).")
    off_period: SecondsDist = Field(
        description="Length of an OFF period (a time distribution; heavy-tailed for LRD)."
    )


class SizeClass(StrictModel):
    """One entry of the request-size mixture: one size, or a range on a grid.

    Attributes
    ----------
    size : float or None
        A single request size in bytes.
    min, max, step : float or None
        A range of sizes ``min, min+step, ..., <= max`` drawn uniformly.
    probability : float
        Share of *requests* of this class (dimensionless).
    """

    size: Bytes | None = Field(default=None, description="A single request size (bytes).")
    min: Bytes | None = Field(default=None, description="Smallest size of a range (bytes).")
    max: Bytes | None = Field(default=None, description="Largest size of a range (bytes).")
    step: Bytes = Field(
        default="4 KiB",
        description="Grid of a range (bytes); ASSUMED 4 KiB, the page size.",
    )
    probability: UnitFraction = Field(
        description="Share of requests of this class (requests as the controllers count them)."
    )

    @model_validator(mode="after")
    def _one_form(self) -> SizeClass:
        ranged = self.min is not None or self.max is not None
        if (self.size is None) == (not ranged):
            raise ValueError("give either size, or min and max (a range), not both")
        if ranged and (self.min is None or self.max is None or self.max < self.min):
            raise ValueError("a range needs min <= max")
        return self

    def sizes_B(self) -> FloatArray:
        """The class's request sizes (bytes), equally likely."""
        if self.size is not None:
            return np.array([self.size], dtype=np.float64)
        assert self.min is not None and self.max is not None
        count = math.floor((self.max - self.min) / self.step + 1e-9) + 1
        grid: FloatArray = self.min + self.step * np.arange(count, dtype=np.float64)
        return grid


def _seed_size_mix() -> list[SizeClass]:
    """Seed 003 §2: "request sizes from 4-16KB, 512KB and 1MB account for more than 95 %".

    The split among the three spikes is not in the seed: equal shares of
    0.32 (ASSUMED), 0.96 in all, the remaining 0.04 spread over the other
    16 KB bins up to the 4 MB maximum the controllers record (seed 003 §2).
    """
    return [
        SizeClass(min="4 KiB", max="16 KiB", step="4 KiB", probability=0.32),
        SizeClass(size="512 KiB", probability=0.32),
        SizeClass(size="1 MiB", probability=0.32),
        SizeClass(min="32 KiB", max="4 MiB", step="16 KiB", probability=0.04),
    ]


#: Read share of requests per Spider partition (seed 003 §2, Fig. 4, 13-month averages).
PRESETS: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        "widow1": {"read_fraction": 0.616},  # seed 003 §2: "widow1 ... 61.6% ... reads"
        "widow2": {"read_fraction": 0.35},  # seed 003 §2: "around 35% in both widow2 and 3"
        "widow3": {"read_fraction": 0.35},  # seed 003 §2: "around 35% in both widow2 and 3"
    }
)

#: Ranks per client node: Titan's 16-core Opteron 6274 (seed 003 §1).
SEED_RANKS_PER_NODE = 16


class MixSpec(StrictModel):
    """A synthetic production mix (seed 003 §2): bursty arrivals of heavy-tailed jobs.

    Attributes
    ----------
    preset : {"widow1", "widow2", "widow3"} or None
        Spider partition whose measured read share of requests to use.
    read_fraction : float or None
        Share of requests that are reads; overrides the preset.
    duration : float
        Simulated window (s); jobs arrive in ``[0, duration)``.
    arrivals : PoissonArrivals or OnOffArrivals
        Job arrival process.
    nodes : distribution
        Client nodes per job (rounded, truncated to the system).
    ranks_per_node : int
        Ranks per client node.
    bursts : distribution
        I/O bursts per job (rounded, at least 1).
    compute_gap : distribution
        Computation between a job's bursts (s).
    bytes_per_rank : distribution
        Bytes each rank moves in one burst.
    request_sizes : list of SizeClass
        Request-size mixture over requests.
    file_per_process : float
        Share of jobs writing one file per rank (the rest: one shared file).
    max_requests : int
        Guard on the total number of calls generated.
    """

    preset: Literal["widow1", "widow2", "widow3"] | None = Field(
        default=None,
        description=(
            "Spider partition whose read share of requests to use: widow1 61.6 %, widow2 and "
            "widow3 about 35 % (seed 003 §2, Fig. 4)."
        ),
    )
    read_fraction: UnitFraction | None = Field(
        default=None,
        description="Share of requests that are reads; overrides the preset's (seed 003 §2).",
    )
    duration: Seconds = Field(description="Simulated window (s): jobs arrive in [0, duration).")
    arrivals: PoissonArrivals | OnOffArrivals = Field(
        discriminator="process",
        description='Job arrival process: "on-off" (bursty, seed 003 §2 Fig. 1) or "poisson".',
    )
    nodes: CountDist = Field(
        description="Client nodes per job, heavy-tailed; truncated to the system's clients."
    )
    ranks_per_node: Annotated[int, Field(ge=1, le=1024)] = Field(
        default=SEED_RANKS_PER_NODE,
        description="Ranks per client node; 16, Titan's 16-core Opteron 6274 (seed 003 §1).",
    )
    bursts: CountDist = Field(description="I/O bursts (checkpoints, restarts) per job.")
    compute_gap: SecondsDist = Field(description="Computation between a job's bursts (s).")
    bytes_per_rank: BytesDist = Field(description="Bytes each rank moves in one burst.")
    request_sizes: list[SizeClass] = Field(
        default_factory=_seed_size_mix,
        min_length=1,
        description=(
            "Request-size mixture over requests; default 4-16 KiB, 512 KiB and 1 MiB with "
            "0.32 each (more than 95 %, seed 003 §2; equal split ASSUMED) and 0.04 over "
            "32 KiB-4 MiB (16 KB bins up to 4 MB, seed 003 §2)."
        ),
    )
    file_per_process: UnitFraction = Field(
        description="Share of jobs with one file per rank; the rest share one file (N-1)."
    )
    direction_per: Literal["burst", "run"] = Field(
        default="burst",
        description=(
            'Unit that reads or writes as a whole: "burst" (every rank of a burst, as a '
            'checkpoint or a restart; ASSUMED) or "run" (each rank of a burst on its own: '
            "closer read shares in a short window, less realistic)."
        ),
    )
    max_requests: Annotated[int, Field(ge=1)] = Field(
        default=2_000_000,
        description=(
            "Refuse a mix of more calls than this (memory: ~64 B per call); ASSUMED guard."
        ),
    )

    @model_validator(mode="after")
    def _consistent(self) -> MixSpec:
        if self.read_fraction is None and self.preset is None:
            raise field_error(
                "read_fraction",
                "neither preset nor read_fraction is set; give preset = widow1, widow2 or "
                "widow3 (seed 003 §2), or read_fraction",
            )
        total = math.fsum(c.probability for c in self.request_sizes)
        if abs(total - 1.0) > 1e-6:
            raise field_error(
                "request_sizes",
                f"request_sizes: probabilities sum to {total:g}; expected 1 (shares of requests)",
            )
        return self

    @property
    def reads(self) -> float:
        """The read share of requests in force (explicit, else the preset's)."""
        if self.read_fraction is not None:
            return self.read_fraction
        assert self.preset is not None
        return PRESETS[self.preset]["read_fraction"]


# ------------------------------------------------------------------ generation
@dataclass(frozen=True)
class MixJob:
    """One generated job: when it arrives, where it runs, what it does.

    Attributes
    ----------
    name : str
        Job name (``mix00017``).
    arrival_s : float
        Arrival (start) time in the window, seconds.
    nodes : int
        Client nodes.
    ranks_per_node : int
        Ranks per node (``trace.nprocs = nodes * ranks_per_node``).
    trace : JobTrace
        Its calls, times relative to ``arrival_s``.
    """

    name: str
    arrival_s: float
    nodes: int
    ranks_per_node: int
    trace: JobTrace


def draw_arrivals(spec: MixSpec, rng: np.random.Generator) -> FloatArray:
    """Sorted job arrival times in ``[0, duration)`` (s), from ``spec.arrivals``."""
    horizon = spec.duration
    proc = spec.arrivals
    if isinstance(proc, PoissonArrivals):
        count = int(rng.poisson(horizon / proc.mean_interarrival))
        return np.sort(rng.random(count) * horizon)
    mean_on, mean_off = proc.on_period.expected(), proc.off_period.expected()
    cycle = mean_on + mean_off
    if not cycle > 0.0:
        raise ValueError("arrivals: on_period and off_period have zero mean; expected positive")
    if math.isinf(mean_on) and math.isinf(mean_off):
        p_on = 0.5
    else:
        p_on = mean_on / cycle if math.isfinite(cycle) else float(math.isinf(mean_on))
    on_first = bool(rng.random() < p_on)
    # Periods per block: enough for the window in one or two blocks when the mean is finite.
    block = int(min(max(256.0, 0.6 * horizon / cycle if cycle > 0 else 256.0), 1e6))
    starts: list[FloatArray] = []
    lengths: list[FloatArray] = []
    is_on: list[np.ndarray[Any, np.dtype[np.bool_]]] = []
    t, parity = 0.0, on_first
    while t < horizon:
        on_len = _draw("arrivals.on_period", proc.on_period, rng, block)
        off_len = _draw("arrivals.off_period", proc.off_period, rng, block)
        first, second = (on_len, off_len) if parity else (off_len, on_len)
        seq = np.empty(2 * block)
        seq[0::2], seq[1::2] = first, second
        flags = np.empty(2 * block, dtype=bool)
        flags[0::2], flags[1::2] = parity, not parity
        ends = t + np.cumsum(seq)
        if ends[-1] <= t:
            raise ValueError("arrivals: ON and OFF periods are all zero; expected positive lengths")
        starts.append(ends - seq)
        lengths.append(seq)
        is_on.append(flags)
        t = float(ends[-1])
    start = np.concatenate(starts)
    length = np.minimum(np.concatenate(lengths), np.maximum(horizon - start, 0.0))
    rate = np.where(np.concatenate(is_on), 1.0, proc.off_activity) / proc.on_interarrival
    counts = rng.poisson(rate * length)
    times = np.repeat(start, counts) + rng.random(int(counts.sum())) * np.repeat(length, counts)
    return np.sort(times[times < horizon])


def systematic_assignment(
    rng: np.random.Generator, weights: FloatArray, shares: FloatArray
) -> IntArray:
    """Assign each item a category so that weight shares match ``shares`` (see module doc).

    Items are shuffled, each item's cumulative-weight midpoint (as a
    fraction of the total, rotated by one uniform draw) picks the category
    whose slice of ``[0, 1)`` it falls in.  Each item's marginal probability
    of category ``k`` is ``shares[k]``; the realised weight share misses it
    by at most half an item's weight at each of the category's two cuts.

    Parameters
    ----------
    rng : numpy.random.Generator
        One permutation and one uniform draw are taken from it.
    weights : numpy.ndarray of float
        Weight of each item (>= 0), in any unit (bytes, calls).
    shares : numpy.ndarray of float
        Target share of the total weight per category (normalised here).

    Returns
    -------
    numpy.ndarray of int
        Category index of each item.
    """
    n = weights.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = rng.permutation(n)
    w = weights[order]
    total = float(w.sum())
    mid = (np.cumsum(w) - 0.5 * w) / total if total > 0 else (np.arange(n) + 0.5) / n
    pos = (mid + rng.random()) % 1.0
    cuts = np.cumsum(shares)[:-1] / float(np.sum(shares))
    out = np.empty(n, dtype=np.int64)
    out[order] = np.searchsorted(cuts, pos, side="right")
    return out


def _draw(
    key: str, dist: _Dist, rng: np.random.Generator, size: int, upper: float = math.inf
) -> FloatArray:
    """``dist.sample``, with a failure (truncation leaving no mass) naming the spec's key."""
    try:
        return dist.sample(rng, size, upper)
    except ValueError as exc:
        raise ValueError(f"{key}: {exc}") from None


def _check_rows(what: str, count: int, spec: MixSpec) -> None:
    if count > spec.max_requests:
        raise ValueError(
            f"max_requests: the mix needs {count:,} {what}, more than max_requests="
            f"{spec.max_requests:,}; shorten duration, lower bytes_per_rank, nodes or the "
            "arrival rate, or raise max_requests (about 64 B of memory per call)"
        )


def generate_mix(spec: MixSpec, rng: np.random.Generator, max_nodes: int) -> list[MixJob]:
    """Draw the jobs of a production mix (see the module docstring for what is drawn).

    Parameters
    ----------
    spec : MixSpec
        The mix.
    rng : numpy.random.Generator
        The only source of randomness (same seed, same jobs).
    max_nodes : int
        Client nodes of the system; no job is larger.

    Returns
    -------
    list of MixJob
        Jobs ordered by arrival; each trace passes :meth:`JobTrace.check` and
        conserves its records.

    Raises
    ------
    ValueError
        ``max_nodes`` < 1, a distribution whose truncation leaves no mass, or
        more calls than ``spec.max_requests``.
    """
    if max_nodes < 1:
        raise ValueError(f"max_nodes(={max_nodes}) must be >= 1")
    arrival = draw_arrivals(spec, rng)
    n_jobs = arrival.size
    if n_jobs == 0:
        return []
    rpn = spec.ranks_per_node
    drawn_nodes = _draw("nodes", spec.nodes, rng, n_jobs, upper=max_nodes + 0.5)
    nodes = np.clip(np.rint(drawn_nodes), 1, max_nodes)
    nodes = nodes.astype(np.int64)
    ranks = nodes * rpn
    fpp = rng.random(n_jobs) < spec.file_per_process
    n_bursts = np.maximum(np.rint(_draw("bursts", spec.bursts, rng, n_jobs)), 1).astype(np.int64)

    # Burst start times relative to each job's arrival: 0, then cumulative compute gaps.
    burst_job = np.repeat(np.arange(n_jobs), n_bursts)
    first = np.cumsum(n_bursts) - n_bursts
    index_in_job = np.arange(burst_job.size) - first[burst_job]
    gaps = _draw("compute_gap", spec.compute_gap, rng, burst_job.size)
    gaps[index_in_job == 0] = 0.0
    cum = np.cumsum(gaps)
    burst_t = cum - (cum[first] - gaps[first])[burst_job]
    keep = arrival[burst_job] + burst_t < spec.duration
    burst_job, burst_t = burst_job[keep], burst_t[keep]
    n_bursts = np.bincount(burst_job, minlength=n_jobs)
    n_b = burst_job.size

    # Runs: one per (burst, rank); guard before allocating them.
    run_count = int(ranks[burst_job].sum())
    _check_rows("runs (burst x rank)", run_count, spec)
    burst_bytes = _draw("bytes_per_rank", spec.bytes_per_rank, rng, n_b)
    run_burst = np.repeat(np.arange(n_b), ranks[burst_job])
    run_rank = np.arange(run_count) - np.repeat(
        np.cumsum(ranks[burst_job]) - ranks[burst_job], ranks[burst_job]
    )

    # Request size per run: byte-weighted systematic sampling over every size of every class
    # (a class's requests spread evenly over its grid), so request shares hold per size.
    grids = [c.sizes_B() for c in spec.request_sizes]
    sizes = np.concatenate(grids)
    p_size = np.concatenate(
        [
            np.full(g.size, c.probability / g.size)
            for c, g in zip(spec.request_sizes, grids, strict=True)
        ]
    )
    run_size = sizes[systematic_assignment(rng, burst_bytes[run_burst], p_size * sizes)]
    run_calls = np.maximum(np.rint(burst_bytes[run_burst] / run_size), 1).astype(np.int64)
    total_calls = int(run_calls.sum())
    _check_rows("calls", total_calls, spec)

    # Direction per burst (or per run): request-weighted systematic sampling.
    shares = np.array([spec.reads, 1.0 - spec.reads])
    if spec.direction_per == "burst":
        burst_calls = np.bincount(run_burst, weights=run_calls, minlength=n_b).astype(np.float64)
        run_read = (systematic_assignment(rng, burst_calls, shares) == 0)[run_burst]
    else:
        run_read = systematic_assignment(rng, run_calls.astype(np.float64), shares) == 0

    return _assemble(
        spec, arrival, nodes, fpp, n_bursts, burst_t, run_read,
        run_burst, run_rank, run_size, run_calls,
    )  # fmt: skip


def _assemble(
    spec: MixSpec,
    arrival: FloatArray,
    nodes: IntArray,
    fpp: np.ndarray[Any, np.dtype[np.bool_]],
    n_bursts: IntArray,
    burst_t: FloatArray,
    run_read: np.ndarray[Any, np.dtype[np.bool_]],
    run_burst: IntArray,
    run_rank: IntArray,
    run_size: FloatArray,
    run_calls: IntArray,
) -> list[MixJob]:
    """Turn the drawn runs into one :class:`JobTrace` per job (rows by rank, then time)."""
    rpn = spec.ranks_per_node
    run_bytes = run_size * run_calls
    burst_first_run = np.cumsum(np.bincount(run_burst, minlength=burst_t.size))
    burst_first_run = np.concatenate(([0], burst_first_run))
    job_first_burst = np.concatenate(([0], np.cumsum(n_bursts)))
    rows: list[dict[str, Any]] = []
    parts: list[tuple[int, int, tuple[TraceFile, ...], OpTable, tuple[str, ...]]] = []
    for j in range(arrival.size):
        b0, b1 = int(job_first_burst[j]), int(job_first_burst[j + 1])
        if b1 == b0:
            continue
        r0, r1 = int(burst_first_run[b0]), int(burst_first_run[b1])
        nprocs = int(nodes[j]) * rpn
        nb = b1 - b0
        # Runs of this job as a (burst, rank) grid; reorder to (rank, burst).
        order = np.arange(r1 - r0).reshape(nb, nprocs).T.ravel() + r0
        rank = run_rank[order]
        burst = run_burst[order]
        size = run_size[order]
        calls = run_calls[order]
        nbytes = run_bytes[order].reshape(nprocs, nb)
        if fpp[j]:
            # The rank's own file, appended burst after burst.
            base = (np.cumsum(nbytes, axis=1) - nbytes).ravel()
            file_of_run = rank
            files = tuple(TraceFile(f"mix{j:05d}/rank{r:06d}") for r in range(nprocs))
        else:
            # One shared file: burst k fills a region of nprocs equal segments (N-1 segmented).
            stride = nbytes.max(axis=0)
            region = np.cumsum(stride * nprocs) - stride * nprocs
            base = (region[None, :] + np.arange(nprocs)[:, None] * stride[None, :]).ravel()
            file_of_run = np.zeros_like(rank)
            files = (TraceFile(f"mix{j:05d}/shared"),)
        total = int(calls.sum())
        first_call = np.repeat(np.cumsum(calls) - calls, calls)
        within = np.arange(total) - first_call
        run_of_call = np.repeat(np.arange(order.size), calls)
        t = burst_t[burst][run_of_call]
        ops = OpTable(
            rank=rank[run_of_call],
            file=file_of_run[run_of_call],
            record=rank[run_of_call],
            write=~run_read[order][run_of_call],
            offset_B=base[run_of_call] + within * size[run_of_call],
            size_B=size[run_of_call],
            start_s=t,
            end_s=t.copy(),
        )
        w = ops.write
        n_reads = np.bincount(ops.record[~w], minlength=nprocs)
        n_writes = np.bincount(ops.record[w], minlength=nprocs)
        b_read = np.bincount(ops.record[~w], weights=ops.size_B[~w], minlength=nprocs)
        b_written = np.bincount(ops.record[w], weights=ops.size_B[w], minlength=nprocs)
        rows.extend(
            {
                "module": "MIX",
                "file": r if fpp[j] else 0,
                "rank": r,
                "reads": int(n_reads[r]),
                "writes": int(n_writes[r]),
                "bytes_read": float(b_read[r]),
                "bytes_written": float(b_written[r]),
                "io_time_s": math.nan,
                "meta_time_s": math.nan,
                "opens": nb,
            }
            for r in range(nprocs)
        )
        read_runs = int(run_read[r0:r1].sum())
        notes: tuple[str, ...] = (
            f"generated by flashsim.workloads.mix (seed 003 §2): {nb} burst(s) of {nprocs} "
            f"ranks on {int(nodes[j])} nodes ({read_runs} of {r1 - r0} rank-bursts read), "
            f"{'file per process' if fpp[j] else 'one shared file'}",
            "drawn: arrival, nodes, bursts, compute gaps, bytes per rank per burst (rounded to "
            "whole requests), request size per (burst, rank), direction per "
            f"{spec.direction_per}",
            "call times are nominal (burst starts, zero-length calls): the replay keeps each "
            "rank's order and compute gaps, the simulation decides I/O durations",
        )
        parts.append((j, nprocs, files, ops, notes))
    # One frame for every job's records (pandas costs ~ms per frame built), sliced per job.
    frame = records_frame(rows)
    jobs: list[MixJob] = []
    first_row = 0
    for j, job_procs, job_files, job_ops, job_notes in parts:
        name = f"mix{j:05d}"
        trace = JobTrace(
            name=name,
            source="mix",
            nprocs=job_procs,
            run_time_s=math.nan,
            files=job_files,
            records=frame.iloc[first_row : first_row + job_procs].reset_index(drop=True),
            ops=job_ops,
            timing="generated",
            notes=job_notes,
        )
        first_row += job_procs
        jobs.append(MixJob(name, float(arrival[j]), int(nodes[j]), rpn, trace))
    return jobs


def request_shares(jobs: Sequence[MixJob], spec: MixSpec) -> dict[str, Any]:
    """Realised shares over all calls of ``jobs``: reads, and each size class of ``spec``.

    Returns
    -------
    dict
        ``{"requests": int, "read_fraction": float, "size_shares": list of float}``
        (a call of a size in several classes counts in the first).
    """
    sizes = np.concatenate([j.trace.ops.size_B for j in jobs]) if jobs else np.zeros(0)
    writes = np.concatenate([j.trace.ops.write for j in jobs]) if jobs else np.zeros(0, bool)
    n = max(sizes.size, 1)
    shares = []
    claimed = np.zeros(sizes.size, dtype=bool)
    for c in spec.request_sizes:
        mine = np.isin(sizes, c.sizes_B()) & ~claimed
        claimed |= mine
        shares.append(float(mine.sum()) / n)
    return {
        "requests": int(sizes.size),
        "read_fraction": float((~writes).sum()) / n,
        "size_shares": shares,
    }
