"""Typed phase details: the JSON/DataFrame shape of ``PhaseResult.extra``."""

from __future__ import annotations

import math

import pytest

from flashsim.measure.results import PhaseDetails, PhaseResult, RunResult
from flashsim.systems.lustre.phases import LnetSurveyDetails, ObdfilterDetails
from flashsim.systems.vast.study import VastStudyDetails
from flashsim.systems.vast.system import VastIorDetails
from flashsim.workloads.ior import IorDetails, IorRepetition


def ior_details(**changes: object) -> IorDetails:
    values: dict[str, object] = dict(
        repetitions=[IorRepetition(2e9, 2e9 / 2**20, 1.0, 2e9)],
        block_size_B=2.0**20,
        segments=1,
        file_per_process=True,
        tasks_per_node=2,
        nodes=1,
        stonewall_s=0.0,
        wear_out=False,
        fsync=False,
        direct_io=False,
        access="sequential",
        reorder_tasks=False,
        task_per_node_offset=1,
        fidelity="flow",
        bw_max_Bps=2e9,
        bw_min_Bps=2e9,
        t_max_s=1.0,
        b_max_B=1e9,
        simulated_s=math.nan,
    )
    values.update(changes)
    return IorDetails(**values)  # type: ignore[arg-type]


def phase(extra: PhaseDetails) -> PhaseResult:
    return PhaseResult("p", "write", 2e9, 2e9 / 2**20, 2, 2.0**20, 1.0, 2e9, extra=extra)


def test_unmeasured_fields_are_left_out_and_repetitions_are_dicts() -> None:
    out = phase(ior_details()).to_dict()["extra"]
    assert "mean_response_s" not in out and "bandwidth_efficiency" not in out
    assert out["repetitions"] == [
        {"bandwidth_Bps": 2e9, "iops": 2e9 / 2**20, "time_s": 1.0, "bytes_B": 2e9}
    ]
    assert out["simulated_s"] is None  # NaN is null in JSON
    timed = phase(ior_details(mean_response_s=1e-3, bandwidth_efficiency=0.5)).to_dict()
    assert list(timed["extra"])[-2:] == ["mean_response_s", "bandwidth_efficiency"]


def test_subclass_fields_follow_the_base_fields() -> None:
    vast = VastIorDetails.of(ior_details(), tier_scm_B=1.0, tier_migrated_B=2.0)
    keys = list(vast.to_dict())
    assert keys[: len(ior_details().to_dict())] == list(ior_details().to_dict())
    assert keys[-2:] == ["tier_scm_B", "tier_migrated_B"]
    assert phase(vast).details(IorDetails) is vast


def test_details_names_the_kind_it_got() -> None:
    p = phase(ObdfilterDetails(efficiency=0.9, peak_Bps=1e9, ost=3))
    assert p.details(ObdfilterDetails).ost == 3
    with pytest.raises(TypeError, match="ObdfilterDetails, expected IorDetails"):
        p.details(IorDetails)


def test_study_summary_is_flattened_and_scalars_become_columns() -> None:
    study = VastStudyDetails(
        summary={"write-buffered_xmax_over_prev": 1.0, "x_max": 8.0},
        tests=1,
        rows=[{"x": 8, "bandwidth_Bps": 1e9}],
    )
    assert study.to_dict() == {
        "write-buffered_xmax_over_prev": 1.0,
        "x_max": 8.0,
        "tests": 1,
        "rows": [{"x": 8, "bandwidth_Bps": 1e9}],
    }
    survey = LnetSurveyDetails(
        efficiencies={5: 0.9},
        sources=[0, 4],
        median_efficiency=0.9,
        local_sinks=1,
        local_median=0.9,
        local_p10=0.9,
        local_p90=0.9,
        cross_group_sinks=0,
        cross_group_median=math.nan,
        cross_group_p10=math.nan,
        cross_group_p90=math.nan,
    )
    frame = RunResult("s", "m", 1, "flow", 0.0, [phase(study), phase(survey)]).to_dataframe()
    assert frame.loc[0, "write-buffered_xmax_over_prev"] == 1.0
    assert frame.loc[1, "local_sinks"] == 1
    assert "rows" not in frame and "efficiencies" not in frame and "sources" not in frame
