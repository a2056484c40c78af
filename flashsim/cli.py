"""The ``flashsim`` command line: run, replay, validate, check, calibrate, describe, sweep.

Every command takes ``--json`` for machines.  A bad file or value prints one
``error:`` line naming the file, key, value and what was expected, and exits
with status 2; ``validate`` exits 1 when a record fails, ``check`` when a
measurement does.

This module imports only click and light modules at the top: each command
imports the machinery it needs (pydantic schemas, the simulator, pandas, Dask)
inside its body, so ``flashsim --help`` starts at once (tests/test_imports.py).
"""

from __future__ import annotations

import json
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from functools import partial, wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from flashsim.errors import MISSING, ConfigError, ModelWarning
from flashsim.executors import EXECUTORS, executor_help
from flashsim.units import UnitError, parse_quantity

F = TypeVar("F", bound=Callable[..., Any])

#: Output formatters a system kind may add for ``run --format`` (name -> callable).
RUN_FORMATS = ("text", "json")


#: Exit statuses of every command (also in ``flashsim --help``).
EXIT_CODES = """Exit status: 0 success; 1 a validation record or measurement failed; 2 a
bad file, value or option (one 'error:' line naming the file, key and value); 3 an internal
error (a flashsim bug: one line, the traceback with --debug); 4 a run stopped by --max-wall or
--max-memory (the phases completed are printed)."""


def _debug() -> bool:
    """Whether ``flashsim --debug`` (or ``FLASHSIM_DEBUG=1``) asked for tracebacks."""
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx is not None else None
    return bool(root is not None and root.params.get("debug"))


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
    *,
    seen: set[str],
) -> None:
    text = str(message)
    if issubclass(category, ModelWarning):
        if text not in seen:
            seen.add(text)
            click.echo(f"warning: {text}", err=True)
    else:
        click.echo(f"warning: {category.__name__}: {text}", err=True)


def _clean_errors(func: F) -> F:
    """Map user errors to one ``error:`` line and exit 2, other exceptions to exit 3.

    :class:`ConfigError`/:class:`UnitError` are a user's bad input; any other
    exception is a flashsim bug: one line says so (exit 3).  ``--debug`` adds
    the traceback and keeps the exit status.  Model warnings are printed once each.
    """

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        seen: set[str] = set()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always", ModelWarning)
                warnings.showwarning = partial(_show_warning, seen=seen)
                return func(*args, **kwargs)
        except (ConfigError, UnitError) as exc:
            if _debug():
                traceback.print_exc()
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            if _debug():
                traceback.print_exc()
                sys.exit(3)
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            click.echo(
                f"error: internal error ({type(exc).__name__}: {first}); this is a flashsim "
                "bug, please report it (rerun with 'flashsim --debug ...' for the traceback)",
                err=True,
            )
            sys.exit(3)

    return wrapper  # type: ignore[return-value]


def _overrides(pairs: Sequence[str]) -> dict[str, str]:
    from flashsim.config import parse_override

    return dict(parse_override(p) for p in pairs)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, allow_nan=False, default=_json_default)


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot encode {type(value).__name__}")


SET_HELP = (
    "Override a value: KEY=VALUE with a dotted key (scenario keys as written, model keys "
    "with a 'system.' prefix, as in every command; list elements by index or name), units "
    "allowed: --set system.stages.nic.bandwidth='400 Gb/s' --set phases.iops.streams=16"
)


def max_wall_option(help_text: str) -> Callable[[F], F]:
    """The ``--max-wall SECONDS`` option (a wall-clock limit, exit 4 when reached)."""
    return click.option(
        "--max-wall",
        "max_wall_s",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        metavar="SECONDS",
        help=help_text,
    )


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES.replace("\n", " ")
)
@click.version_option(package_name="flashsim")
@click.option(
    "--debug",
    is_flag=True,
    envvar="FLASHSIM_DEBUG",
    help="Also show the Python traceback of an error; the exit status stays the same (3 for "
    "an internal error, 2 for a bad input).",
)
def main(debug: bool) -> None:
    """flashsim: simulate tiered all-flash HPC storage systems."""


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the result as a JSON object.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "ior-json"]),
    default=None,
    help="Output format (default text; --json is --format json).",
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help=SET_HELP)
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Override the seed.")
@click.option(
    "--fidelity", type=click.Choice(["flow", "request"]), default=None, help="Override fidelity."
)
@max_wall_option("Stop after this many wall-clock seconds: print the phases completed, exit 4.")
@click.option(
    "--max-memory",
    "max_memory",
    default=None,
    metavar="SIZE",
    help="Stop when resident memory exceeds SIZE (e.g. '2 GiB'): print the phases completed, "
    "exit 4.",
)
@_clean_errors
def run(
    scenario: Path,
    as_json: bool,
    fmt: str | None,
    sets: Sequence[str],
    seed: int | None,
    fidelity: str | None,
    max_wall_s: float | None,
    max_memory: str | None,
) -> None:
    """Run SCENARIO (a TOML file) and print its results.

    Exit status 2 for a bad file or value, 3 for an internal error, 4 when
    --max-wall or --max-memory stopped the run (the phases completed are printed).
    """
    from flashsim.measure.report import format_run_ior_json, format_run_text
    from flashsim.scenario import RunLimits, RunStopped, load_scenario, run_loaded
    from flashsim.wallclock import process_wall_s

    if max_wall_s is not None and not max_wall_s < float("inf"):
        raise ConfigError(
            "--max-wall", "", MISSING, f"{max_wall_s}: expected a finite number of seconds"
        )
    memory_B = None
    if max_memory is not None:
        try:
            memory_B = parse_quantity(max_memory, "bytes")
        except UnitError as exc:
            raise ConfigError("--max-memory", "", MISSING, str(exc)) from None
    overrides = _overrides(sets)
    if seed is not None:
        overrides["seed"] = str(seed)
    if fidelity is not None:
        overrides["fidelity"] = f'"{fidelity}"'
    loaded = load_scenario(scenario, overrides)
    stopped: str | None = None
    fmt = "json" if as_json else (fmt or "text")
    try:  # progress on stderr when it is a terminal, for people only (flashsim.progress)
        result = run_loaded(loaded, progress=fmt == "text", limits=RunLimits(max_wall_s, memory_B))
    except RunStopped as stop:
        result, stopped = stop.partial, stop.reason
    if fmt == "json":
        click.echo(_dumps(result.to_dict()))
    elif fmt == "ior-json":
        click.echo(_dumps(format_run_ior_json(result)))
    else:
        click.echo(format_run_text(result, process_wall_s=process_wall_s()))
    if stopped is not None:
        done, total = len(result.phases), len(loaded.phases)
        click.echo(f"stopped: {stopped}; {done} of {total} phases completed", err=True)
        sys.exit(4)


@main.command()
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--system",
    "system",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Model file of the system to replay the log on.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as a JSON object.")
@click.option(
    "--speedup",
    type=click.Choice(["none", "io-only"]),
    default="none",
    show_default=True,
    help="Keep the computation between each rank's calls, or drop it.",
)
@click.option(
    "--ranks-per-node",
    type=click.IntRange(min=1),
    default=32,
    show_default=True,
    help="MPI ranks per client node (Darshan does not record it).",
)
@click.option(
    "--fidelity", type=click.Choice(["flow", "request"]), default="flow", show_default=True
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help=SET_HELP)
@_clean_errors
def replay(
    log: Path,
    system: Path,
    as_json: bool,
    speedup: str,
    ranks_per_node: int,
    fidelity: str,
    seed: int,
    sets: Sequence[str],
) -> None:
    """Replay the Darshan LOG on a system: per file and rank, simulated beside recorded.

    DXT calls are replayed as recorded; without DXT, calls are drawn from the
    counters (the output's notes say what is exact).  POSIX and STDIO calls
    are replayed, their bytes and calls equal to the log's counters for every
    record; modules above POSIX (MPI-IO, HDF5, PnetCDF) are their POSIX calls,
    and any other (DFS, DAOS) is listed as not replayed.  The text lists the
    files moving most bytes and the ranks with most I/O time (--json: all of
    them, and per module).
    """
    from flashsim.measure.report import format_run_text
    from flashsim.scenario import run_loaded, scenario_from_data
    from flashsim.wallclock import process_wall_s
    from flashsim.workloads.darshan import darshan_phase_data

    if not log.is_file():
        raise ConfigError(str(log), "", MISSING, "no such Darshan log file")
    _require_model_file(system)
    data: dict[str, Any] = {
        "name": f"replay {log.name}",
        "system": str(system.resolve()),
        "seed": seed,
        "fidelity": fidelity,
        "phases": [darshan_phase_data(log.resolve(), speedup, ranks_per_node=ranks_per_node)],
    }
    # the log is read once, here (the phase keeps its trace for the run); a bad one is
    # named by its own path alone (scenario.check_phases)
    loaded = scenario_from_data(data, Path("flashsim replay"), _overrides(sets))
    result = run_loaded(loaded, progress=not as_json)
    if as_json:
        click.echo(_dumps(result.to_dict()))
    else:
        click.echo(format_run_text(result, process_wall_s=process_wall_s()))


def _require_model_file(system: Path) -> None:
    """``--system`` names an existing file (a bad input, exit 2, before any work)."""
    if not system.is_file():
        raise ConfigError(str(system), "", MISSING, "no such model file (--system)")


def junit_option(suite: str) -> Callable[[F], F]:
    """The ``--junit FILE`` option (JUnit XML of the verdicts, one test case each)."""
    return click.option(
        "--junit",
        "junit_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        metavar="FILE",
        help=f"Also write the verdicts as JUnit XML to FILE (test suite {suite!r}; one test "
        "case per record, failed or skipped ones marked) for a CI system's test report.",
    )


def _junit_directory(path: Path | None) -> None:
    """``--junit FILE``'s directory exists: refused before the runs, not after them."""
    if path is not None and not path.resolve().parent.is_dir():
        raise ConfigError(str(path), "--junit", MISSING, "cannot write it (no such directory)")


def _write_junit(path: Path | None, results: Sequence[Any], suite: str) -> None:
    """Write ``results`` as JUnit XML to ``path`` (an unwritable path is a bad input)."""
    if path is None:
        return
    from flashsim.measurements.outcome import junit_xml

    try:
        path.write_text(junit_xml(results, suite), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), "--junit", MISSING, f"cannot write it ({exc})") from None


@main.command(name="validate")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of records.")
@click.option("--only", default="", help="Run only records whose id contains this substring.")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("validation"),
    show_default=True,
    help="Directory of validation records.",
)
@junit_option("flashsim validate")
@_clean_errors
def validate_cmd(as_json: bool, only: str, directory: Path, junit_path: Path | None) -> None:
    """Run every validation record and print published vs simulated values.

    Exits 1 when any record falls outside its tolerance.
    """
    from flashsim.progress import Progress
    from flashsim.validation import format_table, load_records, run_records

    _junit_directory(junit_path)
    if not directory.is_dir():
        raise ConfigError(str(directory), "", MISSING, "validation directory not found")
    records = [(p, r) for p, r in load_records(directory) if only in r.id]
    if not records:
        raise ConfigError(
            "--only",
            "",
            MISSING,
            f"no validation record in {directory} has an id containing {only!r}",
        )
    # records done and each record's run on stderr when it is a terminal (flashsim.progress)
    with (
        Progress(enabled=not as_json) as progress,
        progress.task("validate", total=len(records), unit="record") as done,
    ):
        results = run_records(records, on_record=lambda _result: done.advance())
    _write_junit(junit_path, results, "flashsim validate")
    if as_json:
        click.echo(_dumps([r.to_dict() for r in results]))
    else:
        click.echo(format_table(results) if results else "no validation records")
    if any(r.status == "fail" for r in results):
        sys.exit(1)


# The inputs check and calibrate share: benchmark outputs, the tool that reads them, the seed.
_measurements_argument = click.argument(
    "measurements", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path)
)
_tool_option = click.option(
    "--tool",
    default=None,
    metavar="TOOL",
    help="Read every file as this tool's output (fio, ior, io500, obdfilter-survey, "
    "lnet-selftest, darshan) instead of recognising it.",
)
_seed_option = click.option(
    "--seed", type=click.IntRange(min=0), default=1, show_default=True, help="Seed of every run."
)


def _tolerance(text: str | None) -> float | None:
    """``--tolerance`` as a fraction: ``0.05`` or ``5%``."""
    if text is None:
        return None
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        value = float("nan")
    if not (0.0 <= value < float("inf")):
        raise ConfigError(
            "command line",
            "--tolerance",
            text,
            "expected a relative tolerance >= 0, e.g. 0.1 or 10%",
        )
    return value


@main.command(name="check")
@_measurements_argument
@click.option(
    "--system",
    "system",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Model file of the measured system.",
)
@_tool_option
@click.option(
    "--tolerance",
    "tolerance_text",
    default=None,
    metavar="REL",
    help="Relative tolerance of every measurement (0.1 or 10%), overriding a sidecar's "
    "'tolerance'; default: the sidecar's, else 10%.",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a model value, spelled as for run: --set system.oss.rpc_cost='25 us' (the "
    "'system.' prefix may be left out here: check changes only the model).",
)
@_seed_option
@click.option(
    "--strict", is_flag=True, help="Fail (exit 1) when a measurement cannot be reproduced too."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of verdicts.")
@junit_option("flashsim check")
@_clean_errors
def check_cmd(
    measurements: Sequence[Path],
    system: Path,
    tool: str | None,
    tolerance_text: str | None,
    sets: Sequence[str],
    seed: int,
    strict: bool,
    as_json: bool,
    junit_path: Path | None,
) -> None:
    """Reproduce each measurement in MEASUREMENTS (benchmark tools' outputs) on a model.

    Each file is read by the reader of its tool (fio, IOR, IO-500,
    obdfilter-survey, LNet Self-Test, Darshan), completed by its sidecar
    <file>.conditions.toml; each measurement's conditions become a scenario
    run on the model, and the simulated value is compared with the measured
    one.  A measurement the model cannot reproduce is listed as skipped with
    the reason.  Exit status 1 when a measurement is outside its tolerance
    (or, with --strict, skipped), 2 for a bad file or value.
    """
    from flashsim.config import model_overrides
    from flashsim.measurements.outcome import format_table
    from flashsim.measurements.readers import read_measurements
    from flashsim.measurements.reproduce import evaluate
    from flashsim.progress import Progress

    tolerance = _tolerance(tolerance_text)
    _junit_directory(junit_path)
    _require_model_file(system)
    read = read_measurements(measurements, tool)
    overrides = model_overrides(_overrides(sets))
    # measurements done and each one's run on stderr when it is a terminal (flashsim.progress)
    with (
        Progress(enabled=not as_json) as progress,
        progress.task("check", total=len(read), unit="measurement") as done,
    ):
        results = evaluate(
            read,
            system,
            overrides=overrides,
            tolerance=tolerance,
            seed=seed,
            on_outcome=lambda _outcome: done.advance(),
        )
    _write_junit(junit_path, results, "flashsim check")
    if as_json:
        click.echo(_dumps([r.to_dict() for r in results]))
    else:
        click.echo(format_table(results, reference="measured"))
    if any(r.status == "fail" or (strict and r.status == "skip") for r in results):
        sys.exit(1)


# ------------------------------------------------------------------ calibrate
def _fitted_table(calibration: Any) -> str:
    """The fitted parameters as a Markdown table (old, new, bounds, fitted to)."""
    from flashsim.measurements.calibrate import fitted_to_text
    from flashsim.measurements.model_file import DIMENSIONS
    from flashsim.units import format_quantity

    def shown(value: float, unit: str) -> str:
        dimension = DIMENSIONS.get(unit)
        if value != value:  # NaN: no value in the model before
            return "-"
        return format_quantity(value, dimension) if dimension else f"{value:.4g}"

    lines = ["| parameter | old | new | bounds | fitted to |", "|---|---:|---:|---|---|"]
    for p in calibration.parameters:
        unit = p.parameter.unit
        lines.append(
            f"| {p.key} | {shown(p.old, unit)} | {shown(p.new, unit)} | "
            f"{shown(p.parameter.low, unit)} .. {shown(p.parameter.high, unit)} | "
            f"{fitted_to_text(p)} |"
        )
    return "\n".join(lines)


@main.command(name="calibrate")
@_measurements_argument
@click.option(
    "--system",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The model file to calibrate (without it, fio output alone writes a drive file).",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The new model file: the model with the fitted values, each with a comment naming "
    "the measurement it was fitted to.",
)
@click.option(
    "--fit",
    "fit",
    multiple=True,
    metavar="KEY",
    help="Fit only this calibratable key (repeat, or comma-separate); default: every "
    "calibratable parameter the measurements move (docs/calibration.md).",
)
@click.option(
    "--predict",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A tool output never fitted, reported as a prediction of the new model (repeatable).",
)
@click.option(
    "--tolerance",
    default=None,
    metavar="REL",
    help="Relative tolerance of every measurement in the report (0.05 or 5%; default: "
    "the sidecar's, else 10%).",
)
@_tool_option
@_seed_option
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the fit and outcomes as JSON.")
@_clean_errors
def calibrate_cmd(
    measurements: Sequence[Path],
    system: Path | None,
    out: Path,
    fit: Sequence[str],
    predict: Sequence[Path],
    tolerance: str | None,
    tool: str | None,
    seed: int,
    force: bool,
    as_json: bool,
) -> None:
    """Fit a model's calibrated parameters to benchmark outputs and write a new model.

    Each measurement a fitted parameter moves is fitted (role calibration);
    every other one, and every --predict file, is a prediction of the new
    model.  Exits 1 when the fit cannot reproduce a calibration measurement
    within its tolerance.
    """
    from datetime import UTC, datetime

    from flashsim.measurements.readers import read_measurements

    tol = _tolerance(tolerance)
    if out.exists() and not force:
        raise ConfigError(
            str(out), "", MISSING, "exists: give --force to overwrite it, or another --out"
        )
    if not out.resolve().parent.is_dir():
        raise ConfigError(str(out), "", MISSING, "its directory does not exist")
    found = read_measurements(measurements, tool)
    predicted = read_measurements(predict, tool) if predict else []
    if system is None:
        _drive_from_fio(found, out)
        return
    _require_model_file(system)

    from flashsim.measurements.calibrate import calibrate, fitted_comment, values_by_key
    from flashsim.measurements.model_file import write_model
    from flashsim.measurements.outcome import format_table
    from flashsim.progress import Progress
    from flashsim.scenario import load_system_model

    keys = [k.strip() for item in fit for k in item.split(",") if k.strip()]
    with (
        Progress(enabled=not as_json) as progress,
        progress.task("calibrate", unit="run") as runs,
    ):
        result = calibrate(
            found, system, keys or None, predicted, tol, seed, on_run=lambda: runs.advance()
        )
    date = datetime.now(UTC).date().isoformat()
    write_model(
        system,
        out,
        values_by_key(result),
        {p.key: fitted_comment(p, date) for p in result.parameters},
    )
    load_system_model(out)  # the new model loads (its drive paths resolve from --out)
    outcomes = result.calibration + result.prediction
    if as_json:
        click.echo(
            _dumps(
                {
                    "model": str(out),
                    "parameters": [
                        {
                            "key": p.key,
                            "unit": p.parameter.unit,
                            "old": None if p.old != p.old else p.old,
                            "new": p.new,
                            "low": p.parameter.low,
                            "high": p.parameter.high,
                            "fitted_to": [m.id for m in p.fitted_to],
                        }
                        for p in result.parameters
                    ],
                    "not_fitted": list(result.not_fitted),
                    "message": result.message,
                    "runs": result.evaluations,
                    "outcomes": [o.to_dict() for o in outcomes],
                }
            )
        )
    else:
        click.echo(_fitted_table(result))
        click.echo("")
        click.echo(format_table(outcomes, reference="measured"))
        for note in result.not_fitted:
            click.echo(f"not fitted: {note}")
        click.echo(f"wrote {out} ({result.message}; {result.evaluations} runs)")
    if any(o.status != "pass" for o in result.calibration):
        sys.exit(1)


def _drive_from_fio(found: Sequence[Any], out: Path) -> None:
    """``calibrate`` without ``--system``: a drive file from fio output alone."""
    tools = sorted({m.conditions.tool for m in found})
    if tools != ["fio"]:
        raise ConfigError(
            "--system",
            "",
            MISSING,
            "expected a model file (--system MODEL.toml) to calibrate; without one only fio "
            f"output writes a drive file (these are {', '.join(tools)} measurements)",
        )
    from flashsim.measurements.drive_file import drive_model_from_fio

    out.write_text(drive_model_from_fio(found, out.stem), encoding="utf-8")
    click.echo(f"wrote {out}")


@main.command()
@click.argument("model", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the description as JSON.")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a model value, spelled as for run, sweep and replay: "
    "--set system.oss.count=4 (the 'system.' prefix may be left out here: describe reads "
    "only a model).",
)
@_clean_errors
def describe(model: Path, as_json: bool, sets: Sequence[str]) -> None:
    """Component counts and each layer's theoretical peak; names the bottleneck."""
    from flashsim.config import model_overrides
    from flashsim.measure.report import format_description
    from flashsim.measure.results import jsonable
    from flashsim.scenario import load_system_model

    loaded = load_system_model(model, model_overrides(_overrides(sets)))
    description = loaded.kind.describe(loaded.model)
    if as_json:
        # JSON has no inf or NaN: a layer with no bound, a peak not defined -> null
        click.echo(_dumps(jsonable(description.to_dict())))
    else:
        click.echo(format_description(description))


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--vary",
    "varies",
    multiple=True,
    required=True,
    metavar="KEY=V1,V2,...",
    help="A key and the values to sweep; several --vary give their cross product.",
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help=SET_HELP)
@click.option(
    "--jobs",
    "-j",
    type=int,
    default=None,
    help="Local Dask worker processes (default: one per core, at most one per point; more "
    "than the cores is refused). 1 runs every point in this process, with no cluster.",
)
@click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    default="auto",
    show_default=True,
    help=executor_help(),
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    default=None,
    help="Run the points on this running Dask scheduler (tcp://host:8786), e.g. a Slurm "
    "cluster started with dask-jobqueue (docs/sweeps.md).",
)
@click.option(
    "--store",
    "store",
    type=click.Path(path_type=Path),
    default=None,
    help="Results store: a directory with one Parquet file per finished point. Default: "
    "<scenario>-<hash>.parquet in the user cache, ~/.cache/flashsim/sweeps (or under "
    "$XDG_CACHE_HOME), never the current directory unless named here.",
)
@click.option(
    "--resume", is_flag=True, help="Keep the points already in the store; run only the others."
)
@max_wall_option("Stop cleanly after this many wall-clock seconds (exit 4); --resume finishes.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array of rows.")
@click.option(
    "--csv",
    "csv_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Also write the table to this CSV file.",
)
@_clean_errors
def sweep(
    scenario: Path,
    varies: Sequence[str],
    sets: Sequence[str],
    jobs: int | None,
    executor: str,
    scheduler: str | None,
    store: Path | None,
    resume: bool,
    max_wall_s: float | None,
    as_json: bool,
    csv_path: Path | None,
) -> None:
    """Run SCENARIO over the cross product of --vary values; one row per phase and point.

    Each row names what limited its phase (the bottleneck, or 'none' and the
    most utilised resource), as the run report does.  Every finished point is
    written at once to the results store, so an interrupted sweep loses
    nothing: rerun the same command with --resume.
    Exit status: 0 done; 1 some points crashed; 2 a bad value (nothing ran, or
    every failed point had one); 4 --max-wall reached; 130/143 SIGINT/SIGTERM.
    """
    from flashsim.sweep import (
        SweepFailedError,
        SweepStoppedError,
        check_axes,
        check_executor,
        check_writable_file,
        default_store,
        local_workers,
        run_sweep,
        sweep_points,
    )

    axes = _sweep_axes(varies)
    overrides = _overrides(sets)
    check_axes(axes, overrides)
    check_executor(executor, jobs, scheduler)
    n_points = len(sweep_points(axes))
    workers = local_workers(jobs, n_points, scheduler)
    if jobs is not None and scheduler is None and jobs > workers:
        click.echo(
            f"warning: --jobs {jobs} is more than the {n_points} point(s); using {workers}",
            err=True,
        )
    if csv_path is not None:
        check_writable_file(csv_path, "--csv")
    where = store if store is not None else default_store(scenario, axes, overrides)
    try:
        table = run_sweep(
            scenario,
            axes,
            overrides,
            jobs=workers,
            progress=not as_json,
            store=where,
            resume=resume,
            overwrite=store is None,
            scheduler=scheduler,
            max_wall_s=max_wall_s,
            executor=executor,
        )
    except SweepStoppedError as exc:
        click.echo(f"stopped: {exc}", err=True)
        sys.exit(exc.exit_status)
    except SweepFailedError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2 if exc.user_error else 1)
    from flashsim.sweep import ran_where
    from flashsim.sweep_limits import format_table

    click.echo(f"sweep: {n_points} point(s) in the store {where} ({ran_where(table)})", err=True)
    if csv_path is not None:
        table.to_csv(csv_path, index=False)
    if as_json:
        click.echo(table.to_json(orient="records", indent=2))
    else:
        click.echo(format_table(table, [k for k, _ in axes]))


def _sweep_axes(varies: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``--vary KEY=V1,V2,...`` options as ``(key, values)`` axes."""
    from flashsim.config import parse_override

    axes: list[tuple[str, list[str]]] = []
    for text in varies:
        key, raw = parse_override(text)
        values = [v.strip() for v in raw.split(",") if v.strip()]
        if not values:
            raise ConfigError("--vary", key, raw, "expected a comma-separated list of values")
        axes.append((key, values))
    return axes


if __name__ == "__main__":  # pragma: no cover
    main()
