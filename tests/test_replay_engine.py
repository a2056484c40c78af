"""The job engine: grouping calls, timing them on a system, conservation, jobs at once."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_flashsim

from flashsim.engine.flows import Flow
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_system_model, run_loaded, scenario_from_data
from flashsim.systems.lustre.kind import Lustre
from flashsim.workloads.job_tally import tally_job
from flashsim.workloads.jobs import IorJob, ior_trace
from flashsim.workloads.replay import Access, JobEngine, PlacedJob, group_calls
from flashsim.workloads.trace import JobTrace, OpTable, TraceFile, records_frame

ROOT = Path(__file__).resolve().parents[1]
PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"


def one_rank_trace(
    offsets: list[float], sizes: list[float], starts: list[float], ends: list[float]
) -> JobTrace:
    """One rank writing one file: calls at the given offsets, sizes and times."""
    n = len(sizes)
    rows = [
        {
            "module": "POSIX",
            "file": 0,
            "rank": 0,
            "writes": n,
            "bytes_written": float(sum(sizes)),
            "io_time_s": float(sum(e - s for s, e in zip(starts, ends, strict=True))),
        }
    ]
    ops = OpTable(
        rank=np.zeros(n, dtype=np.int64),
        file=np.zeros(n, dtype=np.int64),
        record=np.zeros(n, dtype=np.int64),
        write=np.ones(n, dtype=bool),
        offset_B=np.array(offsets, dtype=float),
        size_B=np.array(sizes, dtype=float),
        start_s=np.array(starts, dtype=float),
        end_s=np.array(ends, dtype=float),
    )
    trace = JobTrace(
        "t", "test", 1, float(ends[-1]), (TraceFile("f"),), records_frame(rows), ops, timing="dxt"
    )
    trace.check()
    return trace


def lustre() -> Lustre:
    model = load_system_model(PERLMUTTER).model
    return Lustre(model, Simulation(0), "flow")


def test_group_calls_merges_contiguous_calls_and_keeps_their_gaps() -> None:
    # calls 0-1 contiguous with a 0.5 ms gap (merged); call 2 is 2 s later (not merged);
    # call 3 is not contiguous (offset jumps).
    trace = one_rank_trace(
        offsets=[0, 100, 200, 1000],
        sizes=[100, 100, 100, 50],
        starts=[1.0, 1.0015, 3.0015, 3.002],
        ends=[1.001, 1.0015, 3.0015, 3.002],
    )
    merged = group_calls(trace, merge=True, merge_gap_s=1e-3, speedup="none")
    assert merged.calls.tolist() == [2, 1, 1]
    assert merged.size_B.tolist() == [200, 100, 50]
    # the first transfer waits 1 s plus the merged 0.5 ms gap; then 2 s; then 0.5 ms
    assert merged.gap_s == pytest.approx([1.0005, 2.0, 0.0005])
    assert merged.sequential.tolist() == [True, True, False]
    alone = group_calls(trace, merge=False, merge_gap_s=1e-3, speedup="none")
    assert alone.calls.tolist() == [1, 1, 1, 1]
    io_only = group_calls(trace, merge=True, merge_gap_s=1e-3, speedup="io-only")
    assert io_only.gap_s.tolist() == [0.0, 0.0]
    assert io_only.calls.tolist() == [3, 1]  # without gaps calls 0-2 merge
    # drawn (not recorded) times: contiguous calls merge whatever their gaps, all waited first
    drawn = replace(trace, timing="counters")
    merged_drawn = group_calls(drawn, merge=True, merge_gap_s=1e-3, speedup="none")
    assert merged_drawn.calls.tolist() == [3, 1]
    assert merged_drawn.gap_s == pytest.approx([1.0 + 0.0005 + 2.0, 0.0005])


def test_a_small_call_takes_its_round_trip_and_think_time_is_kept() -> None:
    system = lustre()
    size = 4096.0
    trace = one_rank_trace([0, size], [size, size], [2.0, 5.0], [2.001, 5.001])
    engine = JobEngine(system, "flow", "none", merge=True)
    (times,) = engine.run([PlacedJob("j", trace, direct_io=True)])  # O_DIRECT: synchronous
    access = Access(
        node=0,
        ranks_on_node=1,
        file_key="j/0",
        file=TraceFile("f"),
        write=True,
        transfer_B=size,
        sequential=True,
        direct_io=True,
    )
    stream = system.job_stream(access)
    assert stream.rate_cap_Bps is not None
    assert stream.concurrency == 1
    per_call_s = size / stream.rate_cap_Bps  # one rank alone: its own cap (t / L) binds
    assert per_call_s > 20e-6  # a round trip of tens of microseconds, not a NIC's 0.16 us
    assert times.io_time_s == pytest.approx([per_call_s, per_call_s], rel=1e-9)
    # 2 s before the first call, 5 - 2.001 s between them
    assert times.start_s[0] == pytest.approx(2.0)
    assert times.start_s[1] == pytest.approx(2.0 + per_call_s + (5.0 - 2.001))
    assert times.makespan_s == pytest.approx(times.end_s[1])


def test_conservation_is_checked_and_can_fail() -> None:
    job = IorJob(type="ior", name="ior", operation="write", nodes=2, ranks_per_node=4,
                 transfer_size="1 MiB", block_size="16 MiB")  # fmt: skip
    trace = ior_trace(job)
    system = lustre()
    (times,) = JobEngine(system, "flow").run([PlacedJob("ior", trace, ranks_per_node=4)])
    tally = tally_job(times)
    assert tally.conserved and not tally.mismatches
    assert tally.total.writes == 8 * 16
    assert tally.total.bytes_written_B == 8 * 16 * 2**20
    assert len(times.transfers) == 8  # each rank's 16 contiguous calls merge into one
    # a record that claims one more write than was replayed is caught
    records = trace.records.copy()
    records.loc[3, "writes"] += 1
    broken = JobTrace(trace.name, trace.source, trace.nprocs, trace.run_time_s, trace.files,
                      records, trace.ops)  # fmt: skip
    (times2,) = JobEngine(lustre(), "flow").run([PlacedJob("ior", broken, ranks_per_node=4)])
    bad = tally_job(times2)
    assert not bad.conserved
    assert "writes replayed 16, counted 17" in bad.mismatches[0]


def test_request_fidelity_replays_every_server_operation() -> None:
    model = load_system_model(PERLMUTTER).model
    trace = one_rank_trace([0, 2**20], [2**20, 2**20], [0.0, 0.0], [0.0, 0.0])
    # buffered: two 1 MiB writes fill half a 4 MiB RPC, so they return at once (the rank's
    # time ends there) and the last, partial RPC is written back before the run returns
    system = Lustre(model, Simulation(0), "request")
    (times,) = JobEngine(system, "request").run([PlacedJob("r", trace)])
    assert tally_job(times).conserved
    assert len(times.transfers) == 2  # no merging in request fidelity
    assert times.io_time_s.tolist() == [0.0, 0.0]
    assert times.rank_end_s[0] == 0.0
    assert system.sim.now > 0.0
    # O_DIRECT: each call waits for its own RPC
    (direct,) = JobEngine(Lustre(model, Simulation(0), "request"), "request").run(
        [PlacedJob("r", trace, direct_io=True)]
    )
    assert np.all(direct.io_time_s > 0)
    assert direct.rank_end_s[0] == pytest.approx(direct.end_s[-1])


def test_ior_trace_offsets_follow_ior_layouts() -> None:
    shared = IorJob(type="ior", name="s", operation="write", nodes=1, ranks_per_node=2,
                    file_per_process=False, transfer_size="1 KiB", block_size="2 KiB",
                    segments=2)  # fmt: skip
    t = ior_trace(shared)
    # rank 0: segment 0 at 0, 1 KiB; segment 1 at (1*2+0)*2 KiB = 4 KiB
    assert t.ops.offset_B[t.ops.rank == 0].tolist() == [0, 1024, 4096, 5120]
    assert t.ops.offset_B[t.ops.rank == 1].tolist() == [2048, 3072, 6144, 7168]
    rnd = IorJob(type="ior", name="r", operation="read", nodes=1, ranks_per_node=1,
                 access="random", transfer_size="1 KiB", block_size="8 KiB")  # fmt: skip
    offs = ior_trace(rnd, seed=3).ops.offset_B
    assert sorted(offs.tolist()) == [k * 1024 for k in range(8)]
    assert offs.tolist() != sorted(offs.tolist())


def test_jobs_phase_reports_slowdown_against_running_alone(tmp_path: Path) -> None:
    scenario = tmp_path / "jobs.toml"
    scenario.write_text(
        f"""
name = "two"
system = "{PERLMUTTER}"
[[phases]]
name = "both"
workload = "jobs"
[[phases.jobs]]
type = "ior"
name = "a"
operation = "write"
nodes = 4
ranks_per_node = 4
transfer_size = "4 MiB"
block_size = "256 MiB"
stripe_count = 1
first_target = 7
fsync = true
[[phases.jobs]]
type = "ior"
name = "b"
operation = "write"
nodes = 4
ranks_per_node = 4
transfer_size = "4 MiB"
block_size = "256 MiB"
stripe_count = 1
first_target = 7
fsync = true
"""
    )
    out = run_flashsim("run", str(scenario), "--json")
    assert out.returncode == 0, out.stderr
    jobs = json.loads(out.stdout)["phases"][0]["extra"]["jobs"]
    assert [j["name"] for j in jobs] == ["a", "b"]
    for j in jobs:
        assert j["conserved"]
        assert j["bytes_B"] == 16 * 256 * 2**20
        # on their own nodes, but every file on OST 7: each gets about half of it
        assert j["slowdown"] == pytest.approx(2.0, rel=0.05)
    assert (jobs[0]["first_node"], jobs[1]["first_node"]) == (0, 4)


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        ('transfer_size = "3 MiB"\nblock_size = "4 MiB"', "must be a positive multiple"),
        ("nodes = 0", "nodes"),
        ('ranks_per_node = 4\nnodes = 100000\nblock_size = "1 TiB"', "at most"),
        ("nodes = 9000", "do not fit the system's"),
        ("first_target = 274", "OST 274 does not exist"),
    ],
)
def test_bad_jobs_exit_2_with_one_line(tmp_path: Path, job: str, expected: str) -> None:
    scenario = tmp_path / "bad.toml"
    scenario.write_text(
        f"""
name = "bad"
system = "{PERLMUTTER}"
[[phases]]
name = "p"
workload = "jobs"
[[phases.jobs]]
type = "ior"
name = "a"
operation = "write"
{job}
"""
    )
    out = run_flashsim("run", str(scenario))
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("error: ") and "Traceback" not in out.stderr
    assert expected in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_duplicate_job_names_and_missing_logs_exit_2(tmp_path: Path) -> None:
    scenario = tmp_path / "dup.toml"
    scenario.write_text(
        f"""
name = "dup"
system = "{PERLMUTTER}"
[[phases]]
name = "p"
workload = "jobs"
jobs = [{{ type = "ior", name = "a", operation = "write" }},
        {{ type = "ior", name = "a", operation = "read" }}]
[[phases]]
name = "q"
workload = "darshan"
log = "missing.darshan"
"""
    )
    out = run_flashsim("run", str(scenario))
    assert out.returncode == 2
    assert "job names must be unique" in out.stderr and "Traceback" not in out.stderr
    scenario.write_text(scenario.read_text().replace('name = "a", operation = "read"',
                                                     'name = "b", operation = "read"'))  # fmt: skip
    out = run_flashsim("run", str(scenario))
    assert out.returncode == 2
    assert "no such log file" in out.stderr and "Traceback" not in out.stderr
    second = 'name = "b", operation = "read"'
    text = scenario.read_text().replace(second, second + ", first_node = 0")
    scenario.write_text(text.split('[[phases]]\nname = "q"')[0])
    out = run_flashsim("run", str(scenario))
    assert out.returncode == 2
    assert "each job runs on its own client nodes" in out.stderr


def test_an_ior_job_runs_as_fast_as_the_ior_phase_it_mirrors() -> None:
    common = {
        "operation": "write",
        "nodes": 2,
        "ranks_per_node": 4,
        "transfer_size": "1 MiB",
        "block_size": "4 GiB",
        "fsync": True,
    }
    data = {
        "name": "mirror",
        "system": str(PERLMUTTER),
        "phases": [
            {"name": "ior", "workload": "ior", **common,
             "layout": {"stripe_count": 1, "first_target": 5}},
            {"name": "job", "workload": "jobs", "alone": False,
             "jobs": [{"type": "ior", "name": "j", **common, "stripe_count": 1,
                       "first_target": 5}]},
        ],
    }  # fmt: skip
    ior, jobs = run_loaded(scenario_from_data(data, ROOT / "mirror")).phases
    (job,) = jobs.extra.to_dict()["jobs"]
    assert job["bytes_B"] == ior.bytes_B
    # the same streams, write-behind and fsync: the same bandwidth
    assert job["bandwidth_Bps"] == pytest.approx(ior.bandwidth_Bps, rel=0.01)


CORI = ROOT / "models" / "systems" / "cori-scratch.toml"


def two_rank_reads(sizes: list[float], starts: list[float]) -> JobTrace:
    """Rank ``r`` reads ``sizes[r]`` bytes of its own file at a random offset, at ``starts[r]``."""
    n = len(sizes)
    rows = [
        {"module": "POSIX", "file": r, "rank": r, "reads": 1, "bytes_read": sizes[r]}
        for r in range(n)
    ]
    ops = OpTable(
        rank=np.arange(n, dtype=np.int64),
        file=np.arange(n, dtype=np.int64),
        record=np.arange(n, dtype=np.int64),
        write=np.zeros(n, dtype=bool),
        offset_B=np.full(n, 7.0 * 2**20),  # not at 0: a random (not sequential) read
        size_B=np.array(sizes, dtype=float),
        start_s=np.array(starts, dtype=float),
        end_s=np.array(starts, dtype=float),
    )
    files = tuple(TraceFile(f"f{r}", stripe_count=1, osts=(3,)) for r in range(n))
    trace = JobTrace("t", "test", n, 1.0, files, records_frame(rows), ops, timing="dxt")
    trace.check()
    return trace


def test_a_small_call_does_not_narrow_the_osc_window_of_large_calls_beside_it() -> None:
    # The seed-0 outlier of issue 20 (a 4-rank IOR-HDF5 log on cori-scratch: 64 s of I/O for
    # 8 MB): the OSC window of a (node, OST) was one capacity that each new kind of call
    # overwrote, so a 1-byte read started beside a 256 KiB read cut the big read's window to
    # the small kind's (8 x 1 B per HDD round trip): ~20 s instead of milliseconds.
    model = load_system_model(CORI).model
    big = 256.0 * 1024

    def run(sizes: list[float]) -> np.ndarray:
        system = Lustre(model, Simulation(0), "flow")
        trace = two_rank_reads(sizes, [0.0, 1e-4][: len(sizes)])
        (times,) = JobEngine(system, "flow").run([PlacedJob("j", trace, ranks_per_node=2)])
        return np.asarray(times.io_time_s)

    (alone,) = run([big])
    with_small = run([big, 1.0])
    assert alone < 0.01  # a 256 KiB read alone: about a millisecond
    # the small read beside it takes its share of the window's slots, not the window
    assert with_small[0] < 2 * alone
    assert with_small[1] < 0.1


def test_buffered_writes_run_ahead_of_the_servers_by_at_most_the_budget() -> None:
    # issue 20: buffered writes must wait once the client's dirty budget is full.  One rank
    # issues 80 writes of 64 MiB back to back (5 GiB, unmerged): when each returns, the bytes
    # it has written that have not yet reached the servers fit in its budget.
    system = lustre()
    n, size = 80, 64.0 * 2**20
    trace = one_rank_trace([k * size for k in range(n)], [size] * n, [0.0] * n, [0.0] * n)
    engine = JobEngine(system, "flow", merge=False)
    (times,) = engine.run([PlacedJob("j", trace)])
    budget = engine.write_behind_B()
    assert 0 < budget < n * size / 2
    for k in range(n):
        pending = (times.server_end_s[: k + 1] > times.end_s[k] * (1 + 1e-12)) * size
        assert pending.sum() <= budget
    # so the rank waited for all but a budget's worth to drain
    assert times.end_s[-1] > 0
    assert times.io_time_s.sum() > 0


def test_a_near_empty_job_does_not_saturate_a_nic_it_met_at_its_first_call() -> None:
    # issue 20: a 151 B job named its client NIC as its >= 99 % bottleneck: the node was
    # built at the rank's first call (after 1 s of computation), so its NIC's utilisation
    # was measured over the nanoseconds it existed.  Built at the job's start, it is idle.
    from flashsim.measure.bottlenecks import mark, phase_loads

    system = lustre()
    trace = one_rank_trace([0.0], [151.0], [1.0], [1.0])
    start = mark(system.sim)
    JobEngine(system, "flow").run([PlacedJob("j", trace)])
    bottlenecks, most = phase_loads(system.sim, start)
    assert system.sim.now >= 1.0
    assert bottlenecks == []
    assert all(m.utilization < 0.01 for m in most)


def test_ranks_making_the_same_kind_of_call_share_one_access_object() -> None:
    """Four ranks of one node reading one file make one Access: the system's maps keyed
    by it (streams, contexts) then find it by identity on every call, never by the
    dataclass's field-by-field ``__eq__`` (a 500k-call replay's cost, issue 20)."""
    n, calls = 4, 3
    rank = np.repeat(np.arange(n, dtype=np.int64), calls)
    start = np.tile(np.arange(calls, dtype=float) * 0.01, n)
    rows = [
        {"module": "POSIX", "file": 0, "rank": r, "reads": calls, "bytes_read": calls * 2.0**20}
        for r in range(n)
    ]
    ops = OpTable(
        rank=rank,
        file=np.zeros(n * calls, dtype=np.int64),
        record=rank.copy(),
        write=np.zeros(n * calls, dtype=bool),
        offset_B=np.arange(n * calls, dtype=float)[::-1] * 2.0**22,  # not sequential
        size_B=np.full(n * calls, 2.0**20),
        start_s=start,
        end_s=start + 1e-3,
    )
    files = (TraceFile("shared", stripe_count=2, osts=(0, 1)),)
    trace = JobTrace("t", "test", n, 1.0, files, records_frame(rows), ops, timing="dxt")
    trace.check()
    system = lustre()
    started: list[Access] = []
    hook = system.job_flow_started

    def record(a: Access, flow: Flow) -> None:
        started.append(a)
        hook(a, flow)

    system.job_flow_started = record  # type: ignore[method-assign]
    engine = JobEngine(system, "flow")
    engine.run([PlacedJob("j", trace, ranks_per_node=n)])
    (access,) = engine._accesses.values()
    assert len(started) == n * calls
    assert all(a is access for a in started)
    assert all(key is access for key in engine._streams)
    assert all(key is access for key in system._job_contexts)
