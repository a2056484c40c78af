"""IO-500 (issue 10): score arithmetic, result format, metadata service, scenarios, bad input."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from flashsim.cli import main
from flashsim.components.mds import MdDevice, MdItem, MetadataService, MetadataSpec
from flashsim.engine.closedloop import run_closed_loop
from flashsim.engine.runlength import MIN_SAMPLES_FOR_BATCHES, RunLengthControl
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_scenario, run_loaded, scenario_from_data
from flashsim.workloads.io500 import (
    Io500Details,
    Io500Step,
    geometric_mean,
    io500_score,
)

ROOT = Path(__file__).resolve().parent.parent
PERL = ROOT / "scenarios" / "perlmutter" / "io500.toml"
VAST = ROOT / "scenarios" / "vast" / "io500.toml"
GIB = 2.0**30

SCORED = [
    "ior-easy-write",
    "mdtest-easy-write",
    "ior-hard-write",
    "mdtest-hard-write",
    "find",
    "ior-easy-read",
    "mdtest-easy-stat",
    "ior-hard-read",
    "mdtest-hard-stat",
    "mdtest-easy-delete",
    "mdtest-hard-read",
    "mdtest-hard-delete",
]


# ------------------------------------------------------------------- score
def test_score_against_hand_computation() -> None:
    # bw: (100 * 25 * 400 * 4)^(1/4) = (4e6)^(1/4) = 44.72135955 GiB/s
    # md: (1 * 2 * 4 * ... * 128)^(1/8) = 2^(28/8) = 2^3.5 = 11.3137085 kIOPS
    # total: sqrt(44.72135955 * 11.3137085) = sqrt(505.9644256) = 22.4936530
    bw, md, total = io500_score([100.0, 25.0, 400.0, 4.0], [1, 2, 4, 8, 16, 32, 64, 128])
    assert bw == pytest.approx(44.72135955, rel=1e-9)
    assert md == pytest.approx(11.3137085, rel=1e-8)
    assert total == pytest.approx(22.4936530, rel=1e-8)


def test_score_skips_non_positive_phases_as_the_application_does() -> None:
    # calc_score leaves out t <= 0: (4 * 9)^(1/2) = 6; none left -> 0 and a total of 0.
    assert geometric_mean([0.0, 4.0, 9.0]) == pytest.approx(6.0)
    assert geometric_mean([0.0, -1.0]) == 0.0
    assert io500_score([], [3.0])[2] == 0.0


def test_score_reproduces_seed_001_june_2019_submission() -> None:
    # Seed 001: Cambridge DAC, June 2019 phase results and its line
    # "[SCORE] Bandwidth 162.049 GB/s : IOPS 2377.44 kiops : TOTAL 620.695".
    bw = [328.875, 50.664, 509.259, 81.267]
    md = [1784.640, 558.621, 1721.020, 183233.000, 5763.560, 1122.060, 858.445, 584.785]
    # The slides print the phases to 3 decimals, so the scores agree to a few parts per million.
    b, m, t = io500_score(bw, md)
    assert b == pytest.approx(162.049, rel=5e-6)
    assert m == pytest.approx(2377.44, rel=5e-6)
    assert t == pytest.approx(620.695, rel=5e-6)


# ------------------------------------------------------------------ format
def test_result_lines_follow_result_summary_txt() -> None:
    # main.c: dupprintf(" %20s %15s %s : time %.3f seconds%s\n", name, "%f" score, unit, ...)
    write = Io500Step("ior-easy-write", 337.891, "GiB/s", 300.5, "bw", False, True, 1.0)
    assert write.result_line() == (
        "[RESULT]       ior-easy-write      337.891000 GiB/s : time 300.500 seconds"
    )
    rnd = Io500Step("ior-rnd4K-easy-read", 1.5, "GiB/s", 12.0, "none", False, True, 1.0)
    assert rnd.result_line() == (
        "[      ]  ior-rnd4K-easy-read        1.500000 GiB/s : time 12.000 seconds"
    )
    short = Io500Step("mdtest-hard-write", 20.0, "kIOPS", 10.0, "md", False, False, 1.0)
    assert short.result_line().endswith("kIOPS : time 10.000 seconds [INVALID]")
    details = Io500Details(
        version="io500-isc26",
        phases=[write],
        bandwidth_GiBps=162.049,
        iops_kiops=2377.44,
        total_score=620.695,
        valid=True,
        stonewall_s=300.0,
        mdtest_easy_files=0.0,
        mdtest_hard_files=0.0,
        find_entries=0.0,
    )
    assert details.summary_lines()[-1] == (
        "[SCORE ] Bandwidth 162.049000 GiB/s : IOPS 2377.440000 kiops : TOTAL 620.695000"
    )


# ---------------------------------------------------------- the MDS service
def _spec(threads: int = 32, dir_width: int = 8) -> MetadataSpec:
    return MetadataSpec.model_validate(
        {
            "service_threads": threads,
            "shared_dir_parallelism": dir_width,
            "client_overhead": "20 us",
            "create": "250 us",
            "close": "60 us",
            "open": "120 us",
            "stat": "200 us",
            "unlink": "400 us",
            "readdir_entry": "2 us",
            "create_journal": "8 KiB",
            "unlink_journal": "8 KiB",
        }
    )


CREATE = MdItem((("create", 1.0), ("close", 1.0)))


def test_mds_one_client_is_its_round_trips_plus_its_demands() -> None:
    # One client never queues: X = 1 / (2 RPCs x (10 + 20) us + 250 + 60 us + device), the device
    # writing 8 KiB x 2 copies over one of 12 drives of 3.2 GB/s: 16384 / 3.2e9 = 5.12 us.
    service = MetadataService(_spec(), 16, MdDevice(12, 3.2e9, 2.0), "t")
    expected = 1.0 / (60e-6 + 310e-6 + 5.12e-6)  # 2665.81 items/s
    assert service.items_per_s(1, CREATE, 10e-6, 16, "fixed") == pytest.approx(expected, rel=1e-9)


def test_mds_saturates_at_the_thread_pools_and_the_directory_lock() -> None:
    service = MetadataService(_spec(), 16, MdDevice(12, 3.2e9, 2.0), "t")
    # 16 MDS x 32 threads / 310 us = 1,651,612.9 creates/s
    sat = service.items_per_s(20_000, CREATE, 10e-6, 16, "fixed")
    assert sat == pytest.approx(16 * 32 / 310e-6, rel=0.01)
    assert sat <= 16 * 32 / 310e-6 * (1 + 1e-9)
    # One shared directory on one MDS: 8 creates at once under its lock, 250 us each = 32,000/s
    shared = dataclasses.replace(CREATE, shared_dir=True)
    assert service.items_per_s(4096, shared, 10e-6, 1, "random") == pytest.approx(32_000, rel=0.01)


def test_mds_below_the_servers_nobody_waits() -> None:
    # 8 clients over 2 servers of 4 threads (fixed routing): 4 per server never wait, so each
    # completes one item per (2 x 30 + 310 + 5.12) us.
    service = MetadataService(_spec(threads=4), 2, MdDevice(12, 3.2e9, 2.0), "t")
    rate = service.items_per_s(8, CREATE, 10e-6, 2, "fixed")
    assert rate == pytest.approx(8 / 375.12e-6, rel=1e-9)


@pytest.mark.parametrize("routing", ["fixed", "random"])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("clients", [8, 12, 64])
def test_mds_analytic_rate_agrees_with_request_fidelity(
    routing: str, shared: bool, clients: int
) -> None:
    # Approximate MVA (Seidmann's c-server approximation) against the SimPy queues: within 8 %
    # where queues form (the worst case is the knee, clients ~ servers x threads).
    item = dataclasses.replace(CREATE, shared_dir=shared)
    service = MetadataService(_spec(threads=4, dir_width=2), 2, MdDevice(12, 3.2e9, 2.0), "t")
    analytic = service.items_per_s(clients, item, 10e-6, 2, routing)  # type: ignore[arg-type]
    sim = Simulation(3)
    rng = sim.rng("routing")
    control = RunLengthControl(
        target_rel_halfwidth=0.01, min_samples=MIN_SAMPLES_FOR_BATCHES, max_samples=2000
    )

    request = service.requests(sim, item, 10e-6, 2, routing, rng)  # type: ignore[arg-type]
    loop = run_closed_loop(sim, request, list(range(clients)), control, 200)
    assert analytic == pytest.approx(loop.ops_per_s, rel=0.08)


# --------------------------------------------------------------- scenarios
def _details(path: Path, first_only: bool = False) -> list[Io500Details]:
    scenario = load_scenario(path)
    if first_only:
        scenario = dataclasses.replace(scenario, phases=scenario.phases[:1])
    result = run_loaded(scenario)
    out = []
    for phase in result.phases:
        details = phase.details(Io500Details)
        names = [p.name for p in details.phases]
        assert names == [*SCORED, "ior-rnd4K-easy-read"]
        bw = [p.score for p in details.phases if p.group == "bw"]
        md = [p.score for p in details.phases if p.group == "md"]
        assert (len(bw), len(md)) == (4, 8)
        b, m, t = io500_score(bw, md)
        assert details.bandwidth_GiBps == pytest.approx(b)
        assert details.iops_kiops == pytest.approx(m)
        assert details.total_score == pytest.approx(t)
        assert phase.bandwidth_Bps == pytest.approx(b * GIB)
        assert details.valid, details.summary_lines()
        lines = details.findings()
        assert sum(line.startswith("[RESULT]") for line in lines) == 12
        assert lines[-1].startswith("[SCORE ] Bandwidth ")
        assert all(math.isfinite(p.score) and p.score > 0 for p in details.phases)
        out.append(details)
    return out


def test_perlmutter_10node_io500() -> None:
    (d,) = _details(PERL, first_only=True)
    by = {p.name: p for p in d.phases}
    # 10 nodes x one 200 Gb/s NIC: ior-easy is bound by the clients, 10 x 25 GB/s = 232.8 GiB/s.
    assert by["ior-easy-write"].score == pytest.approx(10 * 25e9 / GIB, rel=0.01)
    # The stonewall holds every write phase to at least 300 s (valid run).
    assert all(by[n].time_s >= 300.0 for n in ("ior-easy-write", "mdtest-easy-write"))
    # find scans what the writes left: mdtest files plus the 160 ior-easy files and 1 ior-hard file.
    assert d.find_entries == pytest.approx(d.mdtest_easy_files + d.mdtest_hard_files + 161)


def test_vast_io500() -> None:
    (d,) = _details(VAST)
    by = {p.name: p for p in d.phases}
    # The write path is calibrated to ~5 GB/s (seed 002 Fig. 2); ior-easy-write with fsync lands
    # near it (the page cache adds a little) and far below the ~25 GB/s naive reads.
    assert 4.0 < by["ior-easy-write"].score < 7.0
    assert by["ior-easy-read"].score > 3 * by["ior-easy-write"].score


def _tiny(system: str, fidelity: str, mode: str = "standard") -> Io500Details:
    """A 2-node x 4-rank IO-500 with a 5 s stonewall and small counts (not a valid run)."""
    data = {
        "name": "tiny",
        "system": f"../../models/systems/{system}.toml",
        "seed": 1,
        "fidelity": fidelity,
        "phases": [
            {
                "name": "io500",
                "workload": "io500",
                "mode": mode,
                "nodes": 2,
                "ranks_per_node": 4,
                "stonewall": "5 s",
                "ior_easy_block_size": "64 MiB",
                "ior_hard_segments": 1000,
                "mdtest_easy_files_per_proc": 2000,
                "mdtest_hard_files_per_proc": 2000,
                "ior_rnd_block_size": "16 MiB",
            }
        ],
    }
    scenario = scenario_from_data(data, PERL)
    (phase,) = run_loaded(scenario).phases
    return phase.details(Io500Details)


@pytest.mark.parametrize("system", ["perlmutter", "vast-pdsw21"])
def test_metadata_phases_agree_across_fidelities(system: str) -> None:
    flow, request = _tiny(system, "flow"), _tiny(system, "request")
    md_flow = {p.name: p.score for p in flow.phases if p.group == "md"}
    md_request = {p.name: p.score for p in request.phases if p.group == "md"}
    assert md_flow.keys() == md_request.keys()
    for name, score in md_flow.items():
        assert md_request[name] == pytest.approx(score, rel=0.08), name
    # Writes that stop before the stonewall (too few files) are invalid, as in the application.
    assert not flow.valid
    assert "[INVALID]" in flow.summary_lines()[-1]


def test_extended_mode_adds_the_random_phases_and_scorex() -> None:
    d = _tiny("vast-pdsw21", "flow", mode="extended")
    optional = [p.name for p in d.phases if p.optional]
    assert optional == ["ior-rnd4K-write", "ior-rnd1MB-write", "ior-rnd4K-read", "ior-rnd1MB-read"]
    assert all(p.group == "bw" for p in d.phases if p.optional)
    bw_all = [p.score for p in d.phases if p.group == "bw"]
    assert d.extended_bandwidth_GiBps == pytest.approx(geometric_mean(bw_all))
    assert d.extended_total_score == pytest.approx(math.sqrt(geometric_mean(bw_all) * d.iops_kiops))
    assert d.summary_lines()[-1].startswith("[SCOREX] Bandwidth ")


@pytest.mark.slow
def test_perlmutter_io500_scenario_whole() -> None:
    small, large = _details(PERL)
    # More clients: more bandwidth and more metadata rate.
    assert large.bandwidth_GiBps > small.bandwidth_GiBps
    assert large.iops_kiops > small.iops_kiops


# --------------------------------------------------------------- bad input
def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _clean_error(result: Result, *needles: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize(
    ("scenario", "setting", "needles"),
    [
        (VAST, 'phases.io500.ior_easy_block_size="3 MiB"', ["ior_easy_block_size", "multiple"]),
        (VAST, "phases.io500.find_ranks=1000", ["find_ranks(=1000)", "128 ranks"]),
        (VAST, "phases.io500.nodes=9", ["nodes", "the model has 8"]),
        (VAST, 'phases.io500.stonewall="0 s"', ["stonewall", "> 0"]),
        (VAST, "phases.io500.mdtest_hard_files_per_proc=0", ["mdtest_hard_files_per_proc"]),
        (VAST, 'phases.io500.ior_rnd_block_size="1.5 MiB"', ["ior_rnd_block_size", "1 MiB"]),
        (
            PERL,
            "phases.io500-10node.mdtest_hard_dir_stripe_count=17",
            ["mdtest_hard_dir_stripe_count", "16 MDSs"],
        ),
        (
            PERL,
            "phases.io500-10node.ior_hard_layout.stripe_count=300",
            ["ior_hard_layout.stripe_count", "274", "ior-hard-write"],
        ),
        (
            PERL,
            'system="../../models/systems/cori-scratch.toml"',
            ["workload", "[mds.metadata]"],
        ),
    ],
)
def test_bad_io500_input_is_one_clean_error(
    scenario: Path, setting: str, needles: list[str]
) -> None:
    _clean_error(_cli("run", str(scenario), "--set", setting), *needles)
