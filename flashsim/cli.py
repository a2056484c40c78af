"""The ``flashsim`` command line: run, validate, describe, sweep.

Every command takes ``--json`` for machines.  A bad file or value prints one
``error:`` line naming the file, key, value and what was expected, and exits
with status 2; ``validate`` exits 1 when a record fails.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from flashsim.config import MISSING, ConfigError, parse_override
from flashsim.units import UnitError

F = TypeVar("F", bound=Callable[..., Any])

#: Output formatters a system kind may add for ``run --format`` (name -> callable).
RUN_FORMATS = ("text", "json")


def _clean_errors(func: F) -> F:
    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (ConfigError, UnitError) as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


def _overrides(pairs: Sequence[str]) -> dict[str, str]:
    return dict(parse_override(p) for p in pairs)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, allow_nan=False, default=_json_default)


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot encode {type(value).__name__}")


SET_HELP = (
    "Override a value: KEY=VALUE with a dotted key (scenario keys as written, model keys "
    "with a 'system.' prefix; list elements by index or name), units allowed: "
    "--set system.stages.nic.bandwidth='400 Gb/s' --set phases.iops.streams=16"
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="flashsim")
def main() -> None:
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
@_clean_errors
def run(
    scenario: Path,
    as_json: bool,
    fmt: str | None,
    sets: Sequence[str],
    seed: int | None,
    fidelity: str | None,
) -> None:
    """Run SCENARIO (a TOML file) and print its results."""
    from flashsim.measure.report import format_run_ior_json, format_run_text
    from flashsim.scenario import load_scenario, run_loaded

    overrides = _overrides(sets)
    if seed is not None:
        overrides["seed"] = str(seed)
    if fidelity is not None:
        overrides["fidelity"] = f'"{fidelity}"'
    loaded = load_scenario(scenario, overrides)
    result = run_loaded(loaded, progress=sys.stderr.isatty())
    fmt = "json" if as_json else (fmt or "text")
    if fmt == "json":
        click.echo(_dumps(result.to_dict()))
    elif fmt == "ior-json":
        click.echo(_dumps(format_run_ior_json(result)))
    else:
        click.echo(format_run_text(result))


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
@_clean_errors
def validate_cmd(as_json: bool, only: str, directory: Path) -> None:
    """Run every validation record and print published vs simulated values.

    Exits 1 when any record falls outside its tolerance.
    """
    from tqdm import tqdm

    from flashsim.validation import format_table, load_records, run_records

    if not directory.is_dir():
        raise ConfigError(str(directory), "", MISSING, "validation directory not found")
    records = [(p, r) for p, r in load_records(directory) if only in r.id]
    bar = tqdm(total=len(records), desc="validate", unit="record", disable=not sys.stderr.isatty())

    def tick(_result: object) -> None:
        bar.update()

    results = run_records(records, on_record=tick)
    bar.close()
    if as_json:
        click.echo(_dumps([r.to_dict() for r in results]))
    else:
        click.echo(format_table(results) if results else "no validation records")
    if any(not r.passed for r in results):
        sys.exit(1)


@main.command()
@click.argument("model", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the description as JSON.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a model value.")
@_clean_errors
def describe(model: Path, as_json: bool, sets: Sequence[str]) -> None:
    """Component counts and each layer's theoretical peak; names the bottleneck."""
    from flashsim.measure.report import format_description
    from flashsim.scenario import load_system_model

    loaded = load_system_model(model, _overrides(sets))
    description = loaded.kind.describe(loaded.model)
    if as_json:
        click.echo(_dumps(description.to_dict()))
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
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array of rows.")
@click.option(
    "--csv",
    "csv_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the table to this CSV file.",
)
@_clean_errors
def sweep(
    scenario: Path,
    varies: Sequence[str],
    sets: Sequence[str],
    jobs: int,
    as_json: bool,
    csv_path: Path | None,
) -> None:
    """Run SCENARIO over the cross product of --vary values; one row per phase and point."""
    from flashsim.sweep import run_sweep

    axes: list[tuple[str, list[str]]] = []
    for text in varies:
        key, raw = parse_override(text)
        values = [v.strip() for v in raw.split(",") if v.strip()]
        if not values:
            raise ConfigError("--vary", key, raw, "expected a comma-separated list of values")
        axes.append((key, values))
    table = run_sweep(scenario, axes, _overrides(sets), jobs=jobs, progress=sys.stderr.isatty())
    if csv_path is not None:
        table.to_csv(csv_path, index=False)
    if as_json:
        click.echo(table.to_json(orient="records", indent=2))
    else:
        keys = [k for k, _ in axes]
        cols = [*keys, "name", "bandwidth_GBps", "iops", "ci_rel_halfwidth"]
        click.echo(table[cols].to_string(index=False))


if __name__ == "__main__":  # pragma: no cover
    main()
