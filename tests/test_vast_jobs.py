"""Jobs on a ``vast`` system: Darshan replays and many jobs at once through the NFS client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_system_model, run_scenario
from flashsim.systems.base import Fidelity
from flashsim.systems.vast.jobs import job_fidelity
from flashsim.systems.vast.kind import VastKind, VastSystem
from flashsim.systems.vast.phases import VastIorPhase
from flashsim.workloads.jobs import JobsDetails, JobsPhase
from flashsim.workloads.replay import Access
from flashsim.workloads.trace import TraceFile

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "systems" / "vast-pdsw21.toml"
MIB = 2**20


def system(fidelity: Fidelity = "flow", overrides: dict[str, str] | None = None) -> VastSystem:
    model = load_system_model(MODEL, overrides or {}).model
    built = VastKind().build(model, Simulation(3), fidelity)
    assert isinstance(built, VastSystem)
    return built


def ior_job(name: str, operation: str, **keys: Any) -> dict[str, Any]:
    job = {
        "type": "ior",
        "name": name,
        "operation": operation,
        "nodes": 2,
        "ranks_per_node": 2,
        "transfer_size": "1 MiB",
        "block_size": "64 MiB",
    }
    return job | keys


def jobs_phase(*jobs: dict[str, Any], alone: bool = True) -> JobsPhase:
    return JobsPhase.model_validate(
        {"name": "p", "workload": "jobs", "alone": alone, "jobs": list(jobs)}
    )


def details(result: Any) -> JobsDetails:
    extra = result.extra
    assert isinstance(extra, JobsDetails)
    return extra


@pytest.mark.parametrize("fidelity", ["flow", "request"])
def test_jobs_run_in_both_fidelities_and_conserve_calls_and_bytes(fidelity: Fidelity) -> None:
    phase = jobs_phase(
        ior_job("dump", "write", direct_io=True),
        ior_job("input", "read"),
        ior_job("lookup", "read", access="random", transfer_size="64 KiB", block_size="4 MiB"),
        alone=False,
    )
    result = system(fidelity).run_phase(phase)
    assert result.fidelity == fidelity  # no buffered writes: request fidelity stays
    jobs = details(result).jobs
    expected = {"dump": 4 * 64 * MIB, "input": 4 * 64 * MIB, "lookup": 4 * 4 * MIB}
    calls = {"dump": 4 * 64, "input": 4 * 64, "lookup": 4 * 64}
    for j in jobs:
        assert j.conserved
        assert j.bytes_B == expected[j.name]
        assert j.calls == calls[j.name]
        assert j.time_s > 0
    assert result.bytes_B == sum(expected.values())


@pytest.mark.parametrize("fidelity", ["flow", "request"])
def test_an_ior_job_on_one_node_runs_as_the_ior_phase_does(fidelity: Fidelity) -> None:
    # One piece of physics: an IOR job's calls cross the system as an ior phase's ranks do
    # (on one node the job's ranks are the ranks that share the SCM drives' queues).
    keys = {"nodes": 1, "ranks_per_node": 8, "direct_io": True}
    job = jobs_phase(ior_job("dump", "write", **keys), alone=False)
    as_job = details(system(fidelity).run_phase(job)).jobs[0].bandwidth_Bps
    ior = VastIorPhase.model_validate(
        {
            "name": "w",
            "workload": "ior",
            "operation": "write",
            "transfer_size": "1 MiB",
            "block_size": "64 MiB",
            "fidelity": fidelity,
            **keys,
        }
    )
    as_ior = system(fidelity).run_phase(ior).bandwidth_Bps
    assert as_job == pytest.approx(as_ior, rel=1e-9)


def test_buffered_writes_move_a_request_phase_to_flow_fidelity() -> None:
    buffered = jobs_phase(ior_job("ckpt", "write"))
    direct = jobs_phase(ior_job("ckpt", "write", direct_io=True))
    assert job_fidelity(buffered, "request", 0) == "flow"
    assert job_fidelity(direct, "request", 0) == "request"
    assert job_fidelity(buffered, "flow", 0) == "flow"
    result = system("request").run_phase(buffered)
    assert result.fidelity == "flow"
    # the written bytes are in the client page caches (flow fidelity's buffer)
    assert details(result).jobs[0].bytes_B == 4 * 64 * MIB


def test_a_job_alone_has_slowdown_exactly_one() -> None:
    result = system().run_phase(jobs_phase(ior_job("only", "read", ranks_per_node=4)))
    (job,) = details(result).jobs
    assert job.slowdown == 1.0
    assert job.alone_time_s == job.time_s


def test_a_writer_and_a_reader_slow_each_other_on_a_shared_fabric() -> None:
    # A slow NVMe fabric (12.5 GB/s for both directions) carries the writer's two
    # SCM replicas and the reader's bytes from QLC: together each gets less than alone.
    vast = system(overrides={"fabric.switch_bandwidth": "50 Gb/s", "fabric.switches": "2"})
    phase = jobs_phase(
        ior_job("writer", "write", direct_io=True, nodes=4, ranks_per_node=8, block_size="1 GiB"),
        ior_job("reader", "read", nodes=4, ranks_per_node=8, block_size="1 GiB"),
    )
    result = vast.run_phase(phase)
    jobs = {j.name: j for j in details(result).jobs}
    for name in ("writer", "reader"):
        slowdown = jobs[name].slowdown
        assert slowdown is not None and slowdown > 1.05, (name, slowdown)
        assert jobs[name].conserved
    assert result.bytes_B == jobs["writer"].bytes_B + jobs["reader"].bytes_B == 2 * 32 * 2**30


def access(name: str, write: bool, node: int = 0, direct_io: bool = False) -> Access:
    return Access(
        node=node,
        ranks_on_node=1,
        file_key=name,
        file=TraceFile(name),
        write=write,
        transfer_B=float(MIB),
        sequential=True,
        direct_io=direct_io,
    )


def drive_kinds(vast: VastSystem, path: Any) -> set[str]:
    names = {res.name for res, _ in path}
    return {kind for kind in ("scm", "qlc") if any(f".{kind}" in n for n in names)}


def test_a_read_of_never_written_data_goes_to_qlc_as_aged_data() -> None:
    vast = system()
    vast.job_begin()
    stream = vast.job_stream(access("old/0", write=False))
    assert drive_kinds(vast, stream.path) == {"qlc"}
    check = vast.tier.check()
    assert check.aged_B == float(vast.model.tier.stripe_size)
    assert check.migrated_B == 0.0  # aged data was not migrated during the run
    assert check.qlc_objects_B == check.migrated_B + check.aged_B
    assert vast.tier.qlc_phys_written_B.sum() == 0.0  # nor did it wear the drives now


def test_a_read_of_just_written_data_goes_to_scm() -> None:
    vast = system()
    vast.job_begin()
    for name, direct in (("fresh/0", True), ("dirty/0", False)):
        write = access(name, write=True, direct_io=direct)
        stream = vast.job_stream(write)
        flow = vast.sim.flows.start_flow(
            256 * MIB, stream.path, rate_cap_Bps=stream.rate_cap_Bps, op_size_B=stream.op_size_B
        )
        vast.job_flow_started(write, flow)
        vast.sim.run(flow.done)
        read = vast.job_stream(access(name, write=False, node=1))
        assert drive_kinds(vast, read.path) == {"scm"}, name
    # the buffered file's bytes are still dirty in node 0's page cache, not in the tier
    assert vast.caches[0].bytes_of("job:dirty/0") == pytest.approx(256 * MIB)
    assert vast.tier.committed_B("job:dirty/0") == 0.0
    assert vast.tier.aged_B == 0.0


def test_ior_and_jobs_share_one_stream_physics() -> None:
    # An IOR job run as a job gets IOR's per-rank stream when it runs with as many ranks
    # sharing the drives as IOR counts (here one rank on one node).
    vast = system()
    vast.job_begin()
    job = vast.job_stream(access("x/0", write=False))
    where = vast.tier.read_weights("job:x/0")
    ior = vast.access_stream(
        0, False, float(MIB), random=False, direct_io=False, sharers=1, where=where
    )
    assert job == ior


def test_darshan_replay_runs_on_vast(tmp_path: Path) -> None:
    pytest.importorskip("darshan")
    scenario = tmp_path / "replay.toml"
    scenario.write_text(
        f"""
name = "replay"
system = "{MODEL}"
[[phases]]
name = "hdf5"
workload = "darshan"
log = "pydarshan:examples/example_logs/ior_hdf5_example.darshan"
"""
    )
    result = run_scenario(scenario).phases[0]
    extra: Any = result.extra
    assert extra.conserved and extra.timing == "dxt"
    assert result.bytes_B == pytest.approx(extra.total.bytes_read_B + extra.total.bytes_written_B)
    assert result.bytes_B > 0 and result.sim_time_s > 0


def test_random_reads_of_aged_input_match_the_seeds_qlc_rate() -> None:
    # 64 processes reading 4 KiB at random from data on QLC: 52 KIOPS (seed 002 Sec. IV-B; the
    # figure dnode.qlc_read_overhead was fitted to with IOR's aged dataset). A job's input that
    # the run never wrote is placed on QLC as aged data, so it reads at the same rate.
    phase = jobs_phase(
        ior_job(
            "lookup",
            "read",
            access="random",
            transfer_size="4 KiB",
            block_size="1 MiB",
            nodes=8,
            ranks_per_node=8,
        ),
        alone=False,
    )
    job = details(system("request").run_phase(phase)).jobs[0]
    assert job.calls / job.time_s == pytest.approx(52e3, rel=0.05)
