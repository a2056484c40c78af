"""A bounded least-squares fit of a model's calibratable parameters to measurements.

:func:`calibrate` moves chosen calibratable parameters
(:mod:`flashsim.measurements.parameters`) with ``scipy.optimize.least_squares``
until the model reproduces the measurements: residuals ``simulated / measured - 1``
from :func:`flashsim.measurements.reproduce.evaluate` with the parameters as
model overrides.

* The fit runs in log space (``x = ln(p / p_start)``, bounds likewise), so an
  efficiency and a cost of microseconds move on the same scale and a bandwidth
  proportional to an efficiency, or IOPS inverse to a cost, is linear in ``x``.
* One sensitivity probe first moves each parameter by :data:`PROBE_STEP` and
  records which measurements it moves (elasticity ``|d ln sim / d ln p|`` above
  :data:`MIN_ELASTICITY`).  That pattern is the fit's ``jac_sparsity``: columns
  that move disjoint measurements are perturbed together, so an iteration
  costs about two evaluations whatever the number of parameters.
* A measurement no fitted parameter moves is not a fit target but a
  prediction; a parameter no measurement moves is an error naming it.
* Request-fidelity results are deterministic per seed but not smooth at the
  scale of 1e-8: the finite-difference step (:data:`DIFF_STEP`, 2 % of the
  parameter) is far above that jitter, and evaluations are cached by parameter
  vector so no point runs twice.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy.optimize import least_squares

from flashsim.errors import MISSING, ConfigError
from flashsim.measurements.outcome import Outcome
from flashsim.measurements.parameters import Calibratable, calibratable_parameters
from flashsim.measurements.record import Measurement
from flashsim.measurements.reproduce import Plan, Skip, evaluate, plan
from flashsim.scenario import load_system_model

FloatArray = npt.NDArray[np.float64]

#: Log step of the sensitivity probe (a 10 % move of each parameter).
PROBE_STEP = math.log(1.10)
#: Elasticity ``|d ln simulated / d ln parameter|`` above which a parameter moves a measurement.
MIN_ELASTICITY = 0.1
#: Offset of the fit's variable ``x = X_OFFSET + ln(p / p_start)``: ``least_squares`` takes a
#: step relative to ``x`` (``x * diff_step``), so ``x`` stays near this value, never near 0,
#: over any bounds (the widest span ln(high / low) of a declaration is ~9.2).
X_OFFSET = 10.0
#: Relative finite-difference step of the fit: ``X_OFFSET * DIFF_STEP`` = 0.02, a 2 % move of
#: the parameter.
DIFF_STEP = 0.002
#: Relative change of ``x`` at which the fit stops (``least_squares`` ``xtol``).
XTOL = 1e-4
#: Relative change of the cost at which the fit stops (``least_squares`` ``ftol``).
FTOL = 1e-6
#: Most residual evaluations of one fit (finite-difference ones not counted).
MAX_NFEV = 40
#: Residual given to a measurement the model cannot run at a trial point.
FAILED_RESIDUAL = 10.0
#: The fit stops once every target is reproduced this closely (relative): ten times
#: tighter than the 1 % a calibration must meet, above request fidelity's run-to-run jitter.
CONVERGED = 1e-3


class _Converged(Exception):  # noqa: N818 (a signal, not an error)
    """Raised inside the residual function to end the fit at a good enough point."""


@dataclass(frozen=True)
class FittedParameter:
    """One fitted parameter.

    Attributes
    ----------
    parameter : Calibratable
        The declaration, with the model's value before the fit.
    old : float
        Value before the fit, in ``parameter.unit``.
    new : float
        Fitted value, in ``parameter.unit``.
    fitted_to : tuple of Measurement
        The measurements it moves (its fit targets).
    """

    parameter: Calibratable
    old: float
    new: float
    fitted_to: tuple[Measurement, ...]

    @property
    def key(self) -> str:
        """The dotted model key."""
        return self.parameter.key


@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` found.

    Attributes
    ----------
    parameters : tuple of FittedParameter
        The fitted parameters, in schema order.
    calibration : list of Outcome
        The fit targets at the fitted values (role ``calibration``).
    prediction : list of Outcome
        Every other measurement at the fitted values (role ``prediction``;
        skipped when the model cannot reproduce it).
    not_fitted : tuple of str
        Calibratable parameters left out (without ``--fit``) and why.
    evaluations : int
        Scenario runs of distinct measurement sets (cache misses).
    message : str
        ``least_squares``'s termination message.
    """

    parameters: tuple[FittedParameter, ...]
    calibration: list[Outcome]
    prediction: list[Outcome]
    not_fitted: tuple[str, ...]
    evaluations: int
    message: str

    def values(self) -> dict[str, float]:
        """Fitted values by dotted key, in each parameter's SI unit."""
        return {p.key: p.new for p in self.parameters}


def override_text(value: float, unit: str) -> str | float:
    """A parameter value as a model override (a unit string, or a bare ratio)."""
    return f"{value!r} {unit}" if unit else value


def _start(p: Calibratable) -> float:
    """Where the fit starts: the model's value, moved strictly inside the bounds."""
    inside = math.exp(0.5 * (math.log(p.low) + math.log(p.high)))
    value = p.value if p.value is not None and p.value > 0.0 else inside
    margin = 1e-6 * (math.log(p.high) - math.log(p.low))
    x = min(max(math.log(value), math.log(p.low) + margin), math.log(p.high) - margin)
    return math.exp(x)


class _Evaluator:
    """Ratios ``simulated / measured`` at parameter vectors, each point run once."""

    def __init__(
        self,
        measurements: Sequence[Measurement],
        system: Path,
        params: Sequence[Calibratable],
        start: Sequence[float],
        tolerance: float | None,
        seed: int,
        on_run: Callable[[], None] | None,
    ) -> None:
        self.measurements = list(measurements)
        self.system = system
        self.params = list(params)
        self.start = np.asarray(start, dtype=float)
        self.low = np.array([p.low for p in self.params])
        self.high = np.array([p.high for p in self.params])
        self.tolerance = tolerance
        self.seed = seed
        self.on_run = on_run
        self.cache: dict[tuple[float, ...], dict[int, Outcome]] = {}
        self.runs = 0

    def values(self, x: FloatArray) -> FloatArray:
        """Parameter values at ``x`` (clipped: ``exp(ln(high))`` may round above ``high``)."""
        clipped: FloatArray = np.clip(self.start * np.exp(x), self.low, self.high)
        return clipped

    def overrides(self, x: FloatArray) -> dict[str, object]:
        values = self.values(x)
        return {
            p.key: override_text(float(v), p.unit) for p, v in zip(self.params, values, strict=True)
        }

    def outcomes(self, x: FloatArray, which: Sequence[int]) -> list[Outcome]:
        known = self.cache.setdefault(tuple(float(v) for v in x), {})
        missing = [i for i in which if i not in known]
        if missing:
            self.runs += 1
            found = evaluate(
                [self.measurements[i] for i in missing],
                self.system,
                overrides=self.overrides(x),
                tolerance=self.tolerance,
                seed=self.seed,
            )
            known.update(zip(missing, found, strict=True))
            if self.on_run is not None:
                self.on_run()
        return [known[i] for i in which]

    def ratios(self, x: FloatArray, which: Sequence[int]) -> FloatArray:
        return np.array(
            [
                o.simulated / o.published if o.published else math.nan
                for o in self.outcomes(x, which)
            ]
        )


def _choose(
    params: Sequence[Calibratable],
    fit: Sequence[str] | None,
    measurements: Sequence[Measurement],
    kind: str,
) -> tuple[list[Calibratable], list[str]]:
    """The parameters to probe, and notes on the ones left out (without ``fit``)."""
    by_key = {p.key: p for p in params}
    if fit:
        unknown = [k for k in fit if k not in by_key]
        if unknown:
            raise ConfigError(
                "--fit",
                "",
                MISSING,
                f"{unknown[0]!r} is not a calibratable parameter of a {kind} model "
                f"(expected one of: {', '.join(by_key)})",
            )
        chosen = [by_key[k] for k in dict.fromkeys(fit)]
        for p in chosen:
            if not p.tools:
                raise ConfigError(
                    "--fit",
                    "",
                    MISSING,
                    f"nothing measured constrains {p.key}: it is fitted to {p.measured_by}; "
                    "drop it from --fit",
                )
        return chosen, []
    tools = {m.conditions.tool for m in measurements}
    chosen = [p for p in params if tools & set(p.tools)]
    notes = [
        f"{p.key}: no {' or '.join(p.tools)} measurement given"
        if p.tools
        else f"{p.key}: not fitted by calibrate (it is fitted to {p.measured_by})"
        for p in params
        if p not in chosen
    ]
    if not chosen:
        raise ConfigError(
            "calibrate",
            "",
            MISSING,
            f"nothing to fit: no calibratable parameter of a {kind} model is informed by "
            f"{', '.join(sorted(tools)) or 'no'} measurements (calibratable: "
            + "; ".join(f"{p.key} from {p.measured_by}" for p in params)
            + ")",
        )
    return chosen, notes


def calibrate(
    measurements: Sequence[Measurement],
    system: Path,
    fit: Sequence[str] | None = None,
    predict: Sequence[Measurement] = (),
    tolerance: float | None = None,
    seed: int = 1,
    on_run: Callable[[], None] | None = None,
) -> Calibration:
    """Fit a model's calibratable parameters to measurements.

    Parameters
    ----------
    measurements : sequence of Measurement
        Candidate fit targets: each one a fitted parameter moves is fitted,
        the others are predictions.
    system : Path
        The model file.
    fit : sequence of str, optional
        Dotted keys to fit (``--fit``); default: every calibratable parameter
        informed by the measurements' tools that some measurement moves.
    predict : sequence of Measurement
        Measurements never fitted, reported as predictions.
    tolerance : float, optional
        Relative tolerance of every outcome (else each measurement's own).
    seed : int
        Seed of every scenario.
    on_run : callable, optional
        Called after each scenario run (progress).

    Returns
    -------
    Calibration
        Fitted values, calibration outcomes and prediction outcomes.

    Raises
    ------
    ConfigError
        A ``--fit`` key that is not calibratable, or that no measurement
        moves; no parameter to fit; fewer fit targets than parameters.
    """
    loaded = load_system_model(system)
    kind = loaded.kind.kind
    params, notes = _choose(
        calibratable_parameters(loaded.kind.model_type, loaded.model), fit, measurements, kind
    )
    start = [_start(p) for p in params]
    every = list(measurements) + list(predict)
    plans = [plan(m, loaded) for m in measurements]
    runnable = [i for i, pl in enumerate(plans) if isinstance(pl, Plan)]
    ev = _Evaluator(every, system, params, start, tolerance, seed, on_run)

    # the probe: which measurement each parameter moves
    x0 = np.zeros(len(params))
    base = ev.ratios(x0, runnable)
    moved = np.zeros((len(runnable), len(params)), dtype=bool)
    for j, p in enumerate(params):
        step = PROBE_STEP if start[j] * math.exp(PROBE_STEP) <= p.high else -PROBE_STEP
        xj = x0.copy()
        xj[j] = step
        with np.errstate(divide="ignore", invalid="ignore"):
            elasticity = (np.log(ev.ratios(xj, runnable)) - np.log(base)) / step
        moved[:, j] = np.isfinite(elasticity) & (np.abs(elasticity) > MIN_ELASTICITY)

    unmoved = [p for j, p in enumerate(params) if not moved[:, j].any()]
    if fit and unmoved:
        p = unmoved[0]
        raise ConfigError(
            "--fit",
            "",
            MISSING,
            f"nothing measured constrains {p.key}: give {p.measured_by} or drop it from --fit",
        )
    notes += [f"{p.key}: nothing measured moves it (give {p.measured_by})" for p in unmoved]
    keep = [j for j, p in enumerate(params) if p not in unmoved]
    if not keep:
        raise ConfigError(
            "calibrate",
            "",
            MISSING,
            "nothing to fit: no measurement moves "
            + "; ".join(f"{p.key} (give {p.measured_by})" for p in params),
        )
    rows = [r for r in range(len(runnable)) if moved[r, keep].any()]
    targets = [runnable[r] for r in rows]
    # a test's bandwidth and IOPS, its summary and its iterations are one run: one constraint
    distinct = len({plan_key(plans[i]) for i in targets})
    if distinct < len(keep):
        raise ConfigError(
            "calibrate",
            "",
            MISSING,
            f"{len(keep)} parameters ({', '.join(params[j].key for j in keep)}) but only "
            f"{distinct} distinct measurement(s) (a test's bandwidth and IOPS count once) move "
            "them: give one measurement per parameter, or name fewer with --fit",
        )
    sparsity = moved[np.ix_(rows, keep)].astype(int)

    best: list[tuple[float, FloatArray]] = []

    def residuals(zk: FloatArray) -> FloatArray:
        x = x0.copy()
        x[keep] = xk = zk - X_OFFSET
        r = np.where(np.isfinite(r := ev.ratios(x, targets) - 1.0), r, FAILED_RESIDUAL)
        worst = float(np.max(np.abs(r)))
        if not best or worst < best[0][0]:
            best[:] = [(worst, xk.copy())]
        if worst <= CONVERGED:
            raise _Converged
        return r

    lower = np.array([math.log(params[j].low / start[j]) for j in keep])
    upper = np.array([math.log(params[j].high / start[j]) for j in keep])
    try:
        message = str(
            least_squares(
                residuals,
                np.full(len(keep), X_OFFSET),
                bounds=(lower + X_OFFSET, upper + X_OFFSET),
                method="dogbox",
                jac_sparsity=sparsity,
                diff_step=DIFF_STEP,
                xtol=XTOL,
                ftol=FTOL,
                max_nfev=MAX_NFEV,
            ).message
        )
    except _Converged:
        message = f"every fit target within {CONVERGED:.1%}"
    x_fit = x0.copy()
    x_fit[keep] = best[0][1]

    fitted_values = ev.values(x_fit)
    fitted = tuple(
        FittedParameter(
            parameter=params[j],
            old=math.nan if (before := params[j].value) is None else before,
            new=float(fitted_values[j]),
            fitted_to=tuple(measurements[runnable[r]] for r in rows if moved[r, j]),
        )
        for j in keep
    )
    calibration = [replace(o, role="calibration") for o in ev.outcomes(x_fit, targets)]
    fitted_rows = set(targets)
    others = [i for i in range(len(every)) if i not in fitted_rows]
    prediction = [replace(o, role="prediction") for o in ev.outcomes(x_fit, others)]
    return Calibration(
        parameters=fitted,
        calibration=calibration,
        prediction=prediction,
        not_fitted=tuple(notes),
        evaluations=ev.runs,
        message=message,
    )


def plan_key(planned: Plan | Skip) -> str:
    """The run a plan makes (:meth:`Plan.key`); a skip's reason for a skip."""
    return planned.key() if isinstance(planned, Plan) else planned.reason


def fitted_to_text(p: FittedParameter) -> str:
    """The measurements ``p`` was fitted to, one per distinct reproduction.

    An IOR test's bandwidth and IOPS, of its summary and of each iteration,
    are one run: it is named by the whole test's (empty scope) measurements,
    with the quantities fitted, e.g. ``ior-read-iops:test0:read:bandwidth/iops``.
    """
    chosen: dict[str, list[Measurement]] = {}
    for m in p.fitted_to:
        planned = plan(m)
        key = planned.key() if isinstance(planned, Plan) else m.id
        group = chosen.setdefault(key, [])
        if group and group[0].scope and not m.scope:
            group.clear()  # the whole test's measurements name it, not an iteration's
        if not group or group[0].scope == m.scope:
            group.append(m)
    names = []
    for group in chosen.values():
        first = group[0]
        base = first.id.removesuffix(f":{first.quantity}")
        quantities = "/".join(dict.fromkeys(m.quantity for m in group))
        names.append(f"{base}:{quantities} ({first.source})")
    return "; ".join(names)


def fitted_comment(p: FittedParameter, date: str) -> str:
    """The comment written beside a fitted value in the new model file."""
    what = fitted_to_text(p)
    return f"CALIBRATED by flashsim calibrate {date}: fitted to {what}"


def values_by_key(calibration: Calibration) -> Mapping[str, tuple[float, str]]:
    """Fitted values and units by dotted key (what the model writer needs)."""
    return {p.key: (p.new, p.parameter.unit) for p in calibration.parameters}
