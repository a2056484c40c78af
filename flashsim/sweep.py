"""Parameter sweeps: run a scenario over the cross product of overrides.

Points are independent runs, so they go to a process pool (``jobs`` workers);
results come back as one pandas DataFrame with a row per phase and point and a
column per swept key.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from flashsim.scenario import load_scenario, run_loaded


def sweep_points(axes: Sequence[tuple[str, Sequence[str]]]) -> list[dict[str, str]]:
    """The cross product of ``(key, values)`` axes as override dicts."""
    keys = [key for key, _ in axes]
    return [
        dict(zip(keys, combo, strict=True))
        for combo in itertools.product(*[values for _, values in axes])
    ]


def _run_point(scenario: Path, overrides: dict[str, str], point: dict[str, str]) -> pd.DataFrame:
    frame = run_loaded(load_scenario(scenario, {**overrides, **point})).to_dataframe()
    for key, value in point.items():
        frame[key] = value
    return frame


def run_sweep(
    scenario: str | Path,
    axes: Sequence[tuple[str, Sequence[str]]],
    overrides: Mapping[str, str] = {},
    jobs: int = 1,
    progress: bool = False,
) -> pd.DataFrame:
    """Run ``scenario`` at every point of ``axes`` and stack the results.

    Parameters
    ----------
    scenario : path
        Scenario file.
    axes : sequence of (str, sequence of str)
        Dotted override keys and the values to take (unit strings allowed).
    overrides : mapping
        Overrides applied at every point.
    jobs : int
        Worker processes (1 runs in this process).
    progress : bool
        Show a progress bar on standard error.
    """
    path = Path(scenario)
    points = sweep_points(axes)
    base = dict(overrides)
    # Validate once up front so a bad key fails before any worker starts.
    for point in points[:1]:
        load_scenario(path, {**base, **point})
    bar = tqdm(total=len(points), desc="sweep", unit="point", disable=not progress)
    frames: list[pd.DataFrame] = []
    if jobs <= 1:
        for point in points:
            frames.append(_run_point(path, base, point))
            bar.update()
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_run_point, path, base, point) for point in points]
            for future in futures:
                frames.append(future.result())
                bar.update()
    bar.close()
    return pd.concat(frames, ignore_index=True)
