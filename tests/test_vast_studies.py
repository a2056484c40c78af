"""The PDSW'21 VAST studies: deterministic units, any executor, the same rows; figures.

A study's rows depend on the scenario's seed and the study's parameters only:
not on the number of workers, the executor (in-process for a scenario, Dask
for a notebook), the run, or the wall clock.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from flashsim.scenario import load_system_model, run_scenario
from flashsim.studies import vast as study
from flashsim.studies import vast_plots
from flashsim.systems.vast import study as vast_study
from flashsim.systems.vast.kind import VastGridPhase, VastIopsGridPhase, VastSizeSweepPhase
from flashsim.systems.vast.study_units import unit_seed
from flashsim.systems.vast.system import VastSystem

MODEL = "models/systems/vast-pdsw21.toml"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def model() -> Any:
    return load_system_model(MODEL).model


def grid(workers: int, mode: str = "both") -> VastGridPhase:
    """2 node counts x 2 processes per node x 1 size, one repetition, a short stonewall."""
    return VastGridPhase.model_validate(
        {
            "name": "g",
            "workload": "vast-grid",
            "mode": mode,
            "nodes": [1, 2],
            "ranks_per_node": [1, 4],
            "transfer_sizes": ["1 MiB"],
            "repetitions": 1,
            "stonewall": "5 s",
            "aging_bytes": "1 TiB",
            "aging_passes": 2,
            "workers": workers,
            "progress": False,
        }
    )


def iops(workers: int) -> VastIopsGridPhase:
    return VastIopsGridPhase.model_validate(
        {
            "name": "i",
            "workload": "vast-iops-grid",
            "nodes": [1, 2],
            "ranks_per_node": [1, 4],
            "repetitions": 1,
            "stonewall": "5 s",
            "dataset_size": "1 TiB",
            "dataset_files": 32,
            "aging_bytes": "1 TiB",
            "workers": workers,
            "progress": False,
        }
    )


def sizes(workers: int) -> VastSizeSweepPhase:
    return VastSizeSweepPhase.model_validate(
        {
            "name": "s",
            "workload": "vast-size-sweep",
            "sizes": ["0.25 TB", "4 TB"],
            "nodes": 2,
            "ranks_per_node": 2,
            "repetitions": 1,
            "stonewall": "5 s",
            "workers": workers,
            "progress": False,
        }
    )


# ------------------------------------------------------------ determinism
def test_the_same_grid_gives_identical_rows_run_twice(model: Any) -> None:
    a = vast_study.run_grid(model, grid(1), seed=1)
    b = vast_study.run_grid(model, grid(1), seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 2 * 2 * 2 * 2  # modes x ops x N x p (one size, one repetition)
    # Rows come in unit order: mode, then N, then p; each unit's tests in order.
    assert list(a["mode"]) == ["naive"] * 8 + ["aged"] * 8
    assert list(a["N"][:8]) == [1, 1, 1, 1, 2, 2, 2, 2]
    assert list(a["op"][:4]) == ["write", "read", "write", "read"]


def test_the_worker_count_does_not_change_any_row(model: Any) -> None:
    """workers=1 in this process, workers=2 on Dask (run_tasks): bit-identical rows."""
    for run, phase in (
        (study.run_grid, grid),
        (study.run_iops_grid, iops),
        (study.run_size_sweep, sizes),
    ):
        one = run(model, phase(1), 1)  # type: ignore[operator]
        two = run(model, phase(2), 1)  # type: ignore[operator]
        pd.testing.assert_frame_equal(one, two)


def test_a_units_rows_do_not_depend_on_the_other_units(model: Any) -> None:
    """Each unit is a fresh system: the naive half of a 'both' grid is the 'naive' grid."""
    both = vast_study.run_grid(model, grid(1, "both"), seed=1)
    naive = vast_study.run_grid(model, grid(1, "naive"), seed=1)
    pd.testing.assert_frame_equal(both[both["mode"] == "naive"].reset_index(drop=True), naive)


def test_a_scenario_runs_the_study_as_the_notebook_api_does(model: Any) -> None:
    """The kind's in-process executor and Dask give the same phase result; no wall clock."""
    overrides = {
        "phases.sizes.sizes": '["0.25 TB", "4 TB"]',
        "phases.sizes.nodes": "2",
        "phases.sizes.ranks_per_node": "2",
        "phases.sizes.repetitions": "1",
        "phases.sizes.stonewall": "5 s",
    }
    result = run_scenario("scenarios/vast/iops-vs-size.toml", overrides).phases[0]
    again = run_scenario("scenarios/vast/iops-vs-size.toml", overrides).phases[0]
    phase = sizes(2).model_copy(update={"name": "sizes"})
    on_dask = study.run_study_phase(model, phase, seed=1)  # the scenario's seed
    assert result.extra == again.extra == on_dask.extra
    assert not any("wall" in key for key in result.extra.to_dict())
    assert result.details(vast_study.VastStudyDetails).summary["smallest_over_all_qlc"] > 1.0


def test_unit_seeds_are_stable_and_distinct() -> None:
    assert unit_seed(1, "vast-grid/naive/N1/p1") == unit_seed(1, "vast-grid/naive/N1/p1")
    seeds = {unit_seed(s, f"vast-grid/{m}/N{n}/p1") for s in (0, 1) for m in "ab" for n in "12"}
    assert len(seeds) == 8
    assert all(0 <= s < 2**63 for s in seeds)


def test_dealing_covers_every_unit_once_whatever_the_workers() -> None:
    units = [vast_study.Unit(i, f"u{i}", cost, ()) for i, cost in enumerate([1, 8, 4, 2, 16])]
    for workers in (1, 2, 3, 10):
        chunks = vast_study.deal(units, workers)
        assert len(chunks) == min(workers, len(units))
        assert sorted(u.index for chunk in chunks for u in chunk) == list(range(5))
    assert [u.cost for u in vast_study.deal(units, 2)[0]] == [16, 4, 1]  # costliest first


def test_a_system_built_without_studies_refuses_a_study_phase(model: Any) -> None:
    from flashsim.engine.simulation import Simulation

    system = VastSystem(model, Simulation(0), "flow")
    with pytest.raises(ValueError, match="is a study"):
        system.run_phase(grid(1))


# ---------------------------------------------------------------- figures
def test_published_values_come_from_the_validation_records() -> None:
    records = tomllib.loads((ROOT / "validation" / "vast.toml").read_text())["record"]
    values = vast_plots.published_values()
    assert values == {r["id"]: float(r["published"]) for r in records}
    for key in (
        vast_plots.WRITE_SATURATION,
        vast_plots.NAIVE_READ_X128,
        vast_plots.SCM_READ,
        vast_plots.QLC_READ,
        vast_plots.AGED_OVER_NAIVE_MIN,
        vast_plots.AGED_OVER_NAIVE_MAX,
        vast_plots.RANDREAD_QLC_64,
        vast_plots.RANDREAD_SCM_OVER_QLC,
    ):
        assert math.isfinite(values[key])


def test_the_figures_draw(model: Any) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = vast_study.run_grid(model, grid(1), seed=1)
    i = vast_study.run_iops_grid(model, iops(1), seed=1)
    s = vast_study.run_size_sweep(model, sizes(1), seed=1)
    fig, axes = plt.subplots(1, 4)
    vast_plots.plot_fig2(g, axes[0])
    vast_plots.plot_fig3(g, axes[1])
    vast_plots.plot_fig4(i, axes[2])
    vast_plots.plot_fig5(s, axes[3], scm_buffer_B=model.tier.write_buffer)
    labels = [t.get_text() for t in axes[3].get_legend().get_texts()]
    assert "seed: 52 KIOPS all on QLC" in labels and "3 TB SCM buffer" in labels
    plt.close(fig)
