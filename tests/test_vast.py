"""The ``vast`` system kind: model file, describe arithmetic, scenarios and the PDSW'21 studies."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from flashsim.config import ConfigError
from flashsim.engine.simulation import Simulation
from flashsim.measure.report import format_run_text
from flashsim.measure.results import RunResult
from flashsim.scenario import load_system_model, run_scenario
from flashsim.studies.vast import (
    VastGridPhase,
    VastIopsGridPhase,
    read_limits,
    run_grid,
    run_iops_grid,
    run_study_phase,
    summarize_grid,
    summarize_iops,
)
from flashsim.systems import system_kind
from flashsim.systems.vast.study import VastStudyDetails
from flashsim.systems.vast.study_units import ior_phase as _ior

MODEL = "models/systems/vast-pdsw21.toml"


def test_kind_is_registered_and_model_loads() -> None:
    loaded = load_system_model(MODEL)
    assert loaded.kind.kind == "vast"
    assert system_kind("vast").kind == "vast"
    d = loaded.kind.describe(loaded.model)
    assert d.components["scm_drives"] == 12 and d.components["qlc_drives"] == 44
    assert d.bottlenecks["read (data in SCM)"] == "SCM drives"
    assert d.bottlenecks["write (migration running)"] == "SCM drives"


def test_turnover_is_computed_from_the_model_parameters() -> None:
    base = load_system_model(MODEL)
    d = base.kind.describe(base.model).derived
    assert d["turnover_buffer_TB"] == pytest.approx(35e3 * 3.0 / 608.256, rel=1e-6)
    assert d["turnover_minutes"] == pytest.approx(
        d["turnover_buffer_TB"] * 1e12 / (2.2e15 / 86400) / 60, rel=1e-9
    )
    # Doubling the write buffer doubles the turnover time: nothing is hard-coded.
    big = load_system_model(MODEL, {"tier.write_buffer": "6 TB"})
    d2 = big.kind.describe(big.model).derived
    assert d2["turnover_minutes"] == pytest.approx(2 * d["turnover_minutes"], rel=1e-9)


def test_bad_model_values_name_the_key() -> None:
    with pytest.raises(ConfigError, match="ec_data"):
        load_system_model(MODEL, {"tier.ec_data": "60"})
    with pytest.raises(ConfigError, match="write_buffer"):
        load_system_model(MODEL, {"tier.write_buffer": "3"})


def build(seed: int = 0):  # type: ignore[no-untyped-def]
    loaded = load_system_model(MODEL)
    sim = Simulation(seed)
    system = loaded.kind.build(loaded.model, sim, "flow")
    system.prefill()
    return system


def age(system, passes: int) -> None:  # type: ignore[no-untyped-def]
    """Flush the SCM: 128 ranks x 8 GiB = 1 TiB of throw-away data per pass, then delete it."""
    system.run_phase(
        _ior(
            "age",
            "write",
            8,
            16,
            2**20,
            "tmp",
            block_size_B=2**20,
            segments=8192,
            fsync=True,
            repetitions=passes,
            delete_after=True,
        )
    )


def test_naive_read_is_bound_by_scm_and_aged_read_by_the_front_end() -> None:
    system = build()
    w = system.run_phase(
        _ior("w", "write", 8, 16, 2**20, "d", fsync=True, stonewall="45 s", wear_out=True)
    )
    assert 4.0e9 < w.bandwidth_Bps < 6.0e9
    naive = system.run_phase(_ior("r", "read", 8, 16, 2**20, "d"))
    scm_read_Bps = 12 * 2.5e9 * system.model.tier.scm_read_efficiency  # 12 x 2.5 GB/s, derated
    # The 12 SCM drives' queues set the rate: just under their bandwidth, not at a corner.
    loaded_Bps = 128 * system.sequential_read_rate_Bps(2**20, 128, 1.0)
    assert naive.bandwidth_Bps == pytest.approx(loaded_Bps, rel=1e-3)
    assert 0.98 * scm_read_Bps < naive.bandwidth_Bps < scm_read_Bps
    obj = system.object_name("d", 0)
    assert system.tier.location(obj)[1] == 0.0  # all of it still in SCM
    age(system, passes=8)
    assert system.tier.location(obj)[0] == 0.0  # all of it on QLC now
    aged = system.run_phase(_ior("r2", "read", 8, 16, 2**20, "d"))
    assert aged.bandwidth_Bps > 1.5 * naive.bandwidth_Bps
    # 8 CNodes x 1 EDR port cap the aged read (100 GB/s), not the 140 GB/s of QLC.
    assert aged.bandwidth_Bps <= 100e9 * (1 + 1e-6)


def test_request_fidelity_reads_what_o_direct_writes_committed() -> None:
    """Issue 11 item 5: an O_DIRECT write in request fidelity commits its bytes to the tier."""
    loaded = load_system_model(MODEL)
    system = loaded.kind.build(loaded.model, Simulation(0), "request")
    common = {"block_size_B": 2**20, "segments": 16, "fidelity": "request"}
    w = system.run_phase(_ior("w", "write", 1, 1, 2**20, "d", direct_io=True, **common))
    assert w.fidelity == "request"
    assert system.tier.committed_B(system.object_name("d", 0)) == pytest.approx(16 * 2**20)
    r = system.run_phase(_ior("r", "read", 1, 1, 2**20, "d", reorder_tasks=False, **common))
    assert r.fidelity == "request" and r.bytes_B == 16 * 2**20
    # A longer read: one copy-bound sequential reader runs at its own rate, as in flow fidelity.
    common["segments"] = 512
    system.run_phase(_ior("w2", "write", 1, 1, 2**20, "e", direct_io=True, **common))
    r2 = system.run_phase(_ior("r2", "read", 1, 1, 2**20, "e", reorder_tasks=False, **common))
    expected_Bps = system.sequential_read_rate_Bps(2**20, 1, 1.0)
    assert r2.bandwidth_Bps == pytest.approx(expected_Bps, rel=0.02)


def test_naive_reads_still_rise_at_128_processes_and_equal_aged_reads_at_few() -> None:
    """Issue 11 item 6: the SCM drives' queues, not a corner, limit naive reads (Fig. 2, 3)."""
    system = build()
    rates = {}
    for n, p in ((1, 1), (4, 16), (8, 16)):
        ds = f"d{n}x{p}"
        system.run_phase(
            _ior(f"w{ds}", "write", n, p, 2**20, ds, fsync=True, stonewall="20 s", wear_out=True)
        )
        rates[n * p] = system.run_phase(_ior(f"r{ds}", "read", n, p, 2**20, ds)).bandwidth_Bps
    assert rates[128] > 1.001 * rates[64]  # still rising: no saturation corner
    assert rates[128] < 12 * 2.5e9 * system.model.tier.scm_read_efficiency
    # One process reads at its own rate wherever the data lives (Fig. 3: the aged advantage
    # appears "at higher concurrencies").
    age(system, passes=8)
    aged = system.run_phase(_ior("r-aged", "read", 1, 1, 2**20, "d1x1")).bandwidth_Bps
    assert aged == pytest.approx(rates[1], rel=0.01)


@pytest.mark.parametrize("aged", [False, True])
def test_flow_and_request_fidelity_agree_on_sequential_reads(aged: bool) -> None:
    """Read-ahead RPCs through the copy stage and the drive queues: both fidelities agree."""
    system = build()
    system.run_phase(_ior("w", "write", 8, 4, 2**20, "d", fsync=True, stonewall="20 s"))
    if aged:
        age(system, passes=8)
    rates = [
        system.run_phase(_ior(f"r-{f}", "read", 8, 4, 2**20, "d", fidelity=f)).bandwidth_Bps
        for f in ("flow", "request")
    ]
    # Flow fidelity's queues are an approximate MVA with exponential service; the request
    # path's drives serve deterministically (a little closer to the drives' bandwidth).
    assert rates[1] == pytest.approx(rates[0], rel=0.03)


def test_read_limits_name_the_mechanism_at_each_concurrency() -> None:
    """Per process up to N x p = 8, the SCM drives' queues above; never read-ahead or HCAs."""
    limits = read_limits(load_system_model(MODEL).model).set_index("x")
    assert set(limits.loc[[1, 2, 4, 8], "naive_limit"]) == {"process"}
    assert set(limits.loc[[16, 32, 64, 128], "naive_limit"]) == {"SCM drives' queues"}
    assert (limits["naive_Bps"] < limits["scm_Bps"]).all()
    assert limits["naive_Bps"].is_monotonic_increasing
    assert limits.loc[128, "aged_limit"] == "CNode ports"
    assert not limits["naive_limit"].isin(["read-ahead", "client HCAs"]).any()
    assert 1.5 < limits.loc[32, "aged_Bps"] / limits.loc[32, "naive_Bps"] < 2.0


def test_study_phases_run_at_the_requested_fidelity_and_say_so() -> None:
    """Issue 11 item 5: ``--fidelity request`` reaches the study's tests, and results say so."""
    loaded = load_system_model(MODEL)
    phase = VastIopsGridPhase.model_validate(
        {
            "name": "i",
            "workload": "vast-iops-grid",
            "nodes": [1, 2],
            "ranks_per_node": [1, 4],
            "repetitions": 1,
            "stonewall": "5 s",
            "dataset_size": "1 TiB",
            "dataset_files": 64,
            "aging_bytes": "2 TiB",
            "workers": 1,
            "progress": False,
        }
    )
    flow = run_study_phase(loaded.model, phase, 1, "flow")
    assert flow.fidelity == "flow"
    request = run_study_phase(loaded.model, phase, 1, "request")
    assert request.fidelity == "flow+request"
    assert request.details(VastStudyDetails).fidelity_by_test == {
        "read": "request",
        "write-buffered": "flow",  # the page cache is a flow-fidelity buffer
        "write-direct": "request",
    }
    assert {
        row["fidelity"] for row in request.details(VastStudyDetails).rows if row["test"] == "read"
    } == {"request"}
    # QD1 random I/O with deterministic service: both fidelities give the same rate.
    assert request.details(VastStudyDetails).summary["read_iops_x8"] == pytest.approx(
        flow.details(VastStudyDetails).summary["read_iops_x8"], rel=0.03
    )
    # The run's text table has a fidelity column per phase.
    result = RunResult("s", "vast", 1, "request", 0.0, [request])
    header, row = format_run_text(result).splitlines()[2:4]
    assert header.split()[-1] == "fidelity" and row.split()[-1] == "flow+request"


def test_ior_phases_say_which_fidelity_they_ran_at() -> None:
    """Under a request-fidelity scenario buffered writes run (and say they ran) in flow."""
    result = run_scenario("scenarios/vast/naive-vs-aged.toml", {"fidelity": '"request"'})
    assert [p.fidelity for p in result.phases] == ["flow", "request", "flow", "request"]
    naive, aged = result.phases[1].bandwidth_Bps, result.phases[3].bandwidth_Bps
    assert 1.5 < aged / naive < 2.0  # Fig. 3 at N x p = 32, in request fidelity too
    with pytest.raises(ConfigError, match="flow fidelity only"):
        run_scenario("scenarios/vast/naive-vs-aged.toml", {"phases.write.fidelity": "request"})


def test_reads_of_an_unwritten_dataset_fail_clearly() -> None:
    system = build()
    with pytest.raises(ValueError, match="was not written"):
        system.run_phase(_ior("r", "read", 1, 1, 2**20, "nothing"))
    with pytest.raises(ValueError, match="exceeds the model's 8 clients"):
        system.run_phase(_ior("w", "write", 9, 1, 2**20, "x", segments=10))


def test_same_seed_gives_identical_results() -> None:
    a = run_scenario("scenarios/vast/naive-vs-aged.toml")
    b = run_scenario("scenarios/vast/naive-vs-aged.toml")
    assert [p.bandwidth_Bps for p in a.phases] == [p.bandwidth_Bps for p in b.phases]
    names = [p.name for p in a.phases]
    naive = a.phases[names.index("read-naive")].bandwidth_Bps
    aged = a.phases[names.index("read-aged")].bandwidth_Bps
    assert aged > 1.5 * naive


def small_grid(mode: str, workers: int = 1) -> VastGridPhase:
    return VastGridPhase.model_validate(
        {
            "name": "g",
            "workload": "vast-grid",
            "mode": mode,
            "nodes": [1, 8],
            "ranks_per_node": [1, 16],
            "transfer_sizes": ["4 KiB", "1 MiB"],
            "repetitions": 2,
            "aging_bytes": "4 TiB",
            "aging_passes": 4,
            "workers": workers,
            "progress": False,
        }
    )


def test_small_grid_shapes() -> None:
    loaded = load_system_model(MODEL)
    df = run_grid(loaded.model, small_grid("both"), seed=1)
    assert len(df) == 2 * 2 * 2 * 2 * 2 * 2  # modes x ops x N x p x t x reps
    s = summarize_grid(df)
    assert s["naive_write_GBps_x128"] < s["naive_read_GBps_x128"] <= 30.0 * (1 + 1e-6)
    assert s["aged_over_naive_read_x128"] > 1.5
    assert s["aged_over_naive_read_x1"] == pytest.approx(1.0, rel=0.05)  # client-bound
    # Two workers give the same rows as one: each (mode, N, p) runs on a system of its own.
    df2 = run_grid(loaded.model, small_grid("both", workers=2), seed=1)
    pd.testing.assert_frame_equal(df2, df)


def test_random_io_grid_shapes() -> None:
    loaded = load_system_model(MODEL)
    phase = VastIopsGridPhase.model_validate(
        {
            "name": "i",
            "workload": "vast-iops-grid",
            "nodes": [1, 8],
            "ranks_per_node": [1, 8],
            "repetitions": 1,
            "dataset_size": "2 TiB",
            "dataset_files": 64,
            "aging_bytes": "4 TiB",
            "workers": 1,
            "progress": False,
        }
    )
    s = summarize_iops(run_iops_grid(loaded.model, phase, seed=1))
    assert s["read_iops_x64"] == pytest.approx(52_000, rel=0.03)
    assert s["read_np_spread_x8"] == pytest.approx(1.0, rel=1e-6)
    # Linear in the ranks, less the SCM drives' queueing (0.08 % at 64 ranks of 4 KiB).
    assert s["write-direct_iops_x64"] == pytest.approx(64 * s["write-direct_iops_x1"], rel=2e-3)
    assert s["write-direct_iops_x64"] < 64 * s["write-direct_iops_x1"]
    assert s["write-buffered_iops_x64"] > s["write-direct_iops_x64"]


@pytest.mark.slow
def test_full_bandwidth_grid_within_a_minute_on_two_cores() -> None:
    loaded = load_system_model(MODEL)
    phase = VastGridPhase.model_validate(
        {"name": "g", "workload": "vast-grid", "mode": "both", "workers": 2, "progress": False}
    )
    started = time.perf_counter()
    df = run_grid(loaded.model, phase, seed=1)
    wall = time.perf_counter() - started
    assert len(df) == 2400
    assert wall <= 60.0


@pytest.mark.parametrize("aged", [False, True])
def test_flow_and_request_fidelity_agree_on_random_io(aged: bool) -> None:
    """Random 4 KiB reads (SCM or QLC) and O_DIRECT writes: both fidelities, one answer."""
    system = build()
    system.run_phase(
        _ior("gen", "write", 2, 4, 2**20, "d", block_size_B=2**20, segments=2000, fsync=True)
    )
    if aged:
        age(system, passes=4)
    rates = {}
    for fidelity in ("flow", "request"):
        common = {
            "access": "random",
            "stonewall": "20 s",
            "fidelity": fidelity,
            "block_size_B": 2000 * 2**20,
            "segments": 1,
            "target_rel_halfwidth": 0.01,
        }
        r = system.run_phase(_ior(f"r-{fidelity}", "read", 2, 4, 4096, "d", **common))
        w = system.run_phase(
            _ior(
                f"w-{fidelity}",
                "write",
                2,
                4,
                4096,
                f"w-{fidelity}",
                direct_io=True,
                fsync=True,
                **common,
            )
        )
        rates[fidelity] = (r.iops, w.iops)
    assert rates["request"][0] == pytest.approx(rates["flow"][0], rel=0.03)
    assert rates["request"][1] == pytest.approx(rates["flow"][1], rel=0.03)
    # 8 ranks at QD1: the zero-load round trip, less a little queueing at the SCM drives
    # (the closed loop both fidelities run; none for data on QLC).
    f_scm = 0.0 if aged else 1.0
    expected = 8 * system.direct_rate_Bps(4096, "read", 8, f_scm) / 4096
    assert rates["flow"][0] == pytest.approx(expected, rel=1e-6)
    zero_load = 8 / (2e-6 + system.rtt_s(4096, "read", f_scm))
    assert rates["flow"][0] == pytest.approx(zero_load, rel=1e-4)


@pytest.mark.parametrize(("nodes", "ppn"), [(2, 8), (8, 16)])
def test_flow_and_request_fidelity_agree_on_o_direct_ior(nodes: int, ppn: int) -> None:
    """IOR O_DIRECT 1 MiB write then read at N x p = 16 and 128: both fidelities within 5 %.

    Both cross the same stages: the fixed round trip, the SCM drives' data stages as a
    closed loop of synchronous ranks (flow: an approximate MVA with deterministic
    service; request: the drive queues), a write's two replicas, and, with the buffer at
    its hold level, one migration read of every written byte on SCM.
    """
    rates: dict[str, tuple[float, float]] = {}
    for fidelity in ("flow", "request"):
        system = build()
        common = {"direct_io": True, "stonewall": "5 s", "fidelity": fidelity}
        w = system.run_phase(_ior("w", "write", nodes, ppn, 2**20, "d", fsync=True, **common))
        r = system.run_phase(_ior("r", "read", nodes, ppn, 2**20, "d", **common))
        assert w.fidelity == r.fidelity == fidelity
        rates[fidelity] = (w.bandwidth_Bps, r.bandwidth_Bps)
    for op, flow, request in zip(("write", "read"), rates["flow"], rates["request"], strict=True):
        assert request == pytest.approx(flow, rel=0.05), (op, flow, request)
