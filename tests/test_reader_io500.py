"""The IO-500 reader (flashsim/measurements/readers/io500.py) and plan_io500.

Fixtures: tests/data/measurements/io500/ (README.md there: a real io500 run on
this container; ``bad/`` holds the error cases and a real IOR output).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from flashsim.measurements.readers import detect_tool, io500, read_file, read_measurements
from flashsim.measurements.readers.ior import ior_bytes
from flashsim.measurements.record import Measurement, MeasurementError
from flashsim.measurements.reproduce import Plan, Skip, evaluate, plan, plan_io500
from tests.reader_helpers import assert_one_error, by_id

DATA = Path(__file__).parent / "data" / "measurements" / "io500"
ROOT = Path(__file__).parent.parent
GIB = float(2**30)


# ------------------------------------------------------------------ sniffing
@pytest.mark.parametrize("name", ["result.txt", "result_summary.txt", "stdout.txt"])
def test_sniff_claims_io500_outputs(name: str) -> None:
    assert io500.sniff((DATA / name).read_bytes())
    assert detect_tool(DATA / name) == "io500"


@pytest.mark.parametrize("name", ["bad/ior_output.txt", "tiny.ini", "config.ini"])
def test_sniff_does_not_claim_ior_text_or_a_config(name: str) -> None:
    assert not io500.sniff((DATA / name).read_bytes())


# ------------------------------------------------------- result_summary.txt
def test_summary_exact_values() -> None:
    ms = read_file(DATA / "result_summary.txt")
    got = by_id(ms)
    # 13 phases (the timestamp marker is not a measurement) + score, score_bw, score_md.
    assert len(ms) == 16
    assert "result_summary:timestamp:ops" not in got
    easy = got["result_summary:ior-easy-write:bandwidth"]
    assert easy.quantity == "bandwidth" and easy.unit == "B/s"
    assert easy.value == 1.721144 * GIB
    assert easy.source == f"{DATA / 'result_summary.txt'}:2"
    assert easy.conditions.tool == "io500"
    assert easy.conditions.tool_version == "02091cf254d8"
    assert easy.conditions.operation == "ior-easy-write"
    assert easy.conditions.duration_s == 0.074
    assert easy.conditions.extra["valid"] is False
    assert easy.conditions.extra["scored"] is True
    assert easy.conditions.extra["io500_mode"] == "standard"
    assert easy.note.startswith("invalid")
    md = got["result_summary:mdtest-hard-delete:ops"]
    assert md.quantity == "ops" and md.unit == "1/s"
    assert md.value == 0.469599 * 1000
    assert md.conditions.duration_s == 5.385
    assert md.conditions.extra["valid"] is True and md.note == ""
    rnd = got["result_summary:ior-rnd4K-easy-read:bandwidth"]
    assert rnd.value == 1.691373 * GIB
    assert rnd.conditions.extra["scored"] is False
    assert rnd.conditions.access == "random"
    hard = got["result_summary:ior-hard-write:bandwidth"]
    assert hard.conditions.transfer_size_B == 47008.0  # fixed by the rules
    assert got["result_summary:score:score"].value == 10.625477
    assert got["result_summary:score:score"].unit == ""
    assert got["result_summary:score:score_bw"].value == 1.582447 * GIB
    assert got["result_summary:score:score_md"].value == 71.345673 * 1000
    assert got["result_summary:score:score"].note.startswith("invalid")
    assert got["result_summary:score:score"].source.endswith("result_summary.txt:16")


# ---------------------------------------------------------------- result.txt
def test_result_txt_exact_values_and_conditions() -> None:
    got = by_id(read_file(DATA / "result.txt"))
    assert len(got) == 16
    easy = got["result:ior-easy-write:bandwidth"]
    assert easy.value == 1.721144 * GIB
    assert easy.source == f"{DATA / 'result.txt'}:18"
    c = easy.conditions
    assert c.tasks == 2
    assert c.command_line is not None and c.command_line.startswith("./ior ")
    assert c.transfer_size_B == 2**20  # -t 1m: IOR's binary multiplier
    assert c.block_size_B == 64 * 2**20
    assert c.file_per_process is True
    assert c.stonewall_s == 2.0
    assert c.duration_s == 0.0743
    assert "Write phase needed 0.072626s" in str(c.extra["invalid_reason"])
    assert easy.note.startswith("invalid: Write phase needed")
    hard = got["result:ior-hard-write:bandwidth"].conditions
    assert (hard.transfer_size_B, hard.block_size_B, hard.segments) == (47008.0, 47008.0, 1000)
    assert hard.file_per_process is False
    find = got["result:find:ops"]
    assert find.value == 3263.929743 * 1000
    assert find.conditions.tasks == 2 and find.conditions.duration_s == 0.002
    assert got["result:ior-easy-read:bandwidth"].conditions.extra["valid"] is True
    # The run's options, on every record (what plan_io500 builds the run from).
    options = {
        "io500_ior_easy_transfer_size_B": 1048576.0,
        "io500_ior_easy_block_size_B": 67108864.0,
        "io500_ior_easy_file_per_process": True,
        "io500_ior_hard_segments": 1000,
        "io500_mdtest_easy_files_per_proc": 2000,
        "io500_mdtest_hard_files_per_proc": 1000,
        "io500_find_nproc": 2,
        "io500_stonewall_s": 2.0,
        "io500_api": "POSIX",
        "io500_mode": "standard",
    }
    assert options.items() <= dict(got["result:mdtest-easy-stat:ops"].conditions.extra).items()
    score = got["result:score:score"]
    assert score.value == 10.625477
    assert score.source == f"{DATA / 'result.txt'}:127"
    assert score.note == "invalid: stonewall-time 2s != 300s"
    assert got["result:score:score_md"].value == 71.345673 * 1000


def test_the_three_outputs_of_one_run_agree() -> None:
    files = [DATA / n for n in ("result.txt", "result_summary.txt", "stdout.txt")]
    values: dict[str, set[float]] = {}
    for m in read_measurements(files):
        values.setdefault(m.id.split(":", 1)[1], set()).add(m.value)
    assert len(values) == 16
    assert all(len(v) == 1 for v in values.values()), values


def test_stdout_error_lines_go_to_the_next_phase() -> None:
    got = by_id(read_file(DATA / "stdout.txt"))
    hard = got["stdout:ior-hard-write:bandwidth"]
    assert hard.note == (
        "invalid: Write phase needed 0.199412s instead of stonewall 2s. Stonewall was hit at "
        "0.2s; Runtime of phase (0.199928) is below stonewall time. This shouldn't happen!; "
        "Runtime is smaller than expected minimum runtime"
    )
    assert got["stdout:find:ops"].note == ""
    # The debug options' check (src/phase_dbg.c) is the run's, as result.txt's [run] says.
    assert "stonewall-time" not in got["stdout:ior-easy-write:bandwidth"].note
    assert got["stdout:score:score"].note == "invalid: stonewall-time 2s != 300s"


def test_sidecar_fills_nodes(tmp_path: Path) -> None:
    copy = tmp_path / "result.txt"
    copy.write_bytes((DATA / "result.txt").read_bytes())
    (tmp_path / "result.txt.conditions.toml").write_text("[conditions]\nnodes = 1\n")
    assert {m.conditions.nodes for m in read_file(copy)} == {1}


# ------------------------------------------- versions in the source's history
def test_older_result_and_score_variants(tmp_path: Path) -> None:
    # Formats of src/main.c before commits 68ada56 (Feb 2021: "[RESULT%s]" with
    # "-invalid", "[SCORE%s]", "[SCORE_EXTENDED]") and 4e0acfc (Oct 2020: "GB/s" on
    # the score line), and the io500.sh of 2017-2019 ("[RESULT] BW   phase 1 ...").
    path = tmp_path / "old.txt"
    path.write_text(
        "[RESULT-invalid]       ior-easy-write        0.015926 GiB/s : time 300.414 seconds\n"
        "[RESULT]    mdtest-easy-write        0.011581 kIOPS : time 300.392 seconds\n"
        "[RESULT] BW   phase 2            ior_hard_write                1.128 GB/s : "
        "time 312.58 seconds\n"
        "[RESULT] IOPS phase 2         mdtest_hard_write               19.016 kiops : "
        "time 322.68 seconds\n"
        "[SCORE-invalid] Bandwidth 0.857843 GB/s : IOPS 7.78484 kiops : TOTAL 2.58421\n"
        "[SCORE_EXTENDED] Bandwidth 0.9 GiB/s : IOPS 8.0 kiops : TOTAL 2.683282\n"
    )
    got = by_id(read_file(path))
    assert got["old:ior-easy-write:bandwidth"].value == 0.015926 * GIB
    assert got["old:ior-easy-write:bandwidth"].conditions.extra["valid"] is False
    assert got["old:mdtest-easy-write:ops"].conditions.extra["valid"] is True
    assert got["old:ior-hard-write:bandwidth"].value == 1.128 * GIB
    assert got["old:ior-hard-write:bandwidth"].conditions.duration_s == 312.58
    assert got["old:mdtest-hard-write:ops"].value == 19.016 * 1000
    assert got["old:score:score"].value == 2.58421
    assert got["old:score:score_bw"].value == 0.857843 * GIB
    assert got["old:score:score"].note.startswith("invalid")
    assert got["old:scorex:score"].value == 2.683282
    assert got["old:scorex:score"].conditions.extra["extended"] is True


def test_size_strings_use_ior_binary_multipliers() -> None:
    assert ior_bytes("47008") == 47008.0
    assert ior_bytes("2m") == 2.0 * 2**20
    assert ior_bytes("9920000m") == 9920000.0 * 2**20
    assert ior_bytes("1G") == float(2**30)
    assert ior_bytes("lots") is None


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("name", "where", "expected"),
    [
        ("bad/truncated_summary.txt", "line 8", "truncated"),
        ("bad/truncated_result.txt", "line 59", "truncated: the file ends inside a line"),
        ("bad/bad_value_summary.txt", "line 3", "expected a '[RESULT]"),
        ("bad/bad_score_result.txt", "line 127", "expected a number for SCORE"),
        ("bad/bad_pair_result.txt", "line 2", "expected 'key = value' in section [run]"),
        ("bad/header_only.txt", "line 1", "no IO-500 phase result found"),
        ("bad/ior_output.txt", "line", "no IO-500 phase result found"),
    ],
)
def test_malformed_files_give_one_error_naming_file_and_line(
    name: str, where: str, expected: str
) -> None:
    assert_one_error(DATA / name, "io500", where, expected)


def test_not_utf8_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.txt"
    path.write_bytes(b"IO500 version x\n\xff\xfe\n")
    with pytest.raises(MeasurementError, match="cannot read an IO-500 result file"):
        read_file(path, tool="io500")


# --------------------------------------------------------------- plan_io500
def with_nodes(ms: list[Measurement], nodes: int) -> list[Measurement]:
    return [
        dataclasses.replace(m, conditions=dataclasses.replace(m.conditions, nodes=nodes))
        for m in ms
    ]


def test_plan_io500_needs_nodes() -> None:
    m = by_id(read_file(DATA / "result.txt"))["result:ior-easy-write:bandwidth"]
    p = plan(m)
    assert isinstance(p, Skip) and "nodes" in p.reason


def test_plan_io500_builds_the_run_from_the_options() -> None:
    ms = by_id(with_nodes(read_file(DATA / "result.txt"), 1))
    p = plan_io500(ms["result:mdtest-hard-stat:ops"])
    assert isinstance(p, Plan)
    assert p.phases == (
        {
            "name": "measured",
            "workload": "io500",
            "nodes": 1,
            "ranks_per_node": 2,
            "mode": "standard",
            "ior_easy_transfer_size": "1048576.0 B",
            "ior_easy_block_size": "67108864.0 B",
            "ior_easy_file_per_process": True,
            "ior_hard_segments": 1000,
            "mdtest_easy_files_per_proc": 2000,
            "mdtest_hard_files_per_proc": 1000,
            "find_ranks": 2,
            "stonewall": "2.0 s",
        },
    )
    assert (p.field, p.scale) == ("extra.phases.mdtest-hard-stat.score", 1000.0)
    easy = plan_io500(ms["result:ior-easy-write:bandwidth"])
    assert isinstance(easy, Plan) and easy.scale == GIB and easy.key() == p.key()
    score = plan_io500(ms["result:score:score_bw"])
    assert isinstance(score, Plan) and (score.field, score.scale) == (
        "extra.bandwidth_GiBps",
        GIB,
    )


def test_plan_io500_skips_what_the_model_lacks() -> None:
    m = with_nodes(read_file(DATA / "result.txt"), 1)[0]
    c = m.conditions
    bench = dataclasses.replace(m, conditions=dataclasses.replace(c, operation="mdworkbench-bench"))
    p = plan_io500(bench)
    assert isinstance(p, Skip) and "does not run the 'mdworkbench-bench' phase" in p.reason
    dfs = dataclasses.replace(
        m, conditions=dataclasses.replace(c, extra={**c.extra, "io500_api": "DFS"})
    )
    p = plan_io500(dfs)
    assert isinstance(p, Skip) and "DFS" in p.reason
    uneven = dataclasses.replace(m, conditions=dataclasses.replace(c, nodes=3))
    assert isinstance(plan_io500(uneven), Skip)
    extended = dataclasses.replace(
        m, conditions=dataclasses.replace(c, operation="ior-rnd4K-write")
    )
    p = plan_io500(extended)
    assert isinstance(p, Plan) and p.phases[0]["mode"] == "extended"


def test_evaluate_reproduces_each_phase_of_one_run_once() -> None:
    # Every record of the run shares one scenario; each reads its own phase's score
    # (the run's result is cached, not one field's value).
    ms = with_nodes(read_file(DATA / "result.txt"), 1)
    outcomes = evaluate(ms, ROOT / "models" / "systems" / "perlmutter.toml")
    sim = {o.id: o.simulated for o in outcomes}
    assert all(o.status in ("pass", "fail") for o in outcomes)
    assert all(math.isfinite(v) and v > 0 for v in sim.values())
    assert sim["result:ior-easy-write:bandwidth"] != sim["result:ior-hard-write:bandwidth"]
    assert sim["result:mdtest-easy-write:ops"] != sim["result:find:ops"]
    bw = [
        sim[f"result:{n}:bandwidth"] / GIB
        for n in ("ior-easy-write", "ior-hard-write", "ior-easy-read", "ior-hard-read")
    ]
    assert sim["result:score:score_bw"] / GIB == pytest.approx(math.prod(bw) ** 0.25, rel=1e-12)
    total = sim["result:score:score"]
    assert total == pytest.approx(
        math.sqrt(sim["result:score:score_bw"] / GIB * sim["result:score:score_md"] / 1000),
        rel=1e-12,
    )


def test_evaluate_skips_a_kind_without_io500() -> None:
    ms = with_nodes(read_file(DATA / "result_summary.txt"), 1)
    ms = [dataclasses.replace(m, conditions=dataclasses.replace(m.conditions, tasks=2)) for m in ms]
    outcomes = evaluate(ms[:1], ROOT / "models" / "systems" / "pipeline-demo.toml")
    assert outcomes[0].status == "skip"
    assert outcomes[0].reason.startswith("the model cannot run it")


def test_echoed_configuration_gives_the_run_options(tmp_path: Path) -> None:
    # The configuration io500 wrote beside its results (config.ini, with the
    # defaults filled in), echoed above the summary.
    path = tmp_path / "echoed.txt"
    path.write_text(
        "# io500 --list style comment\n"
        + (DATA / "config.ini").read_text()
        + (DATA / "result_summary.txt").read_text()
    )
    got = by_id(read_file(path))
    assert len(got) == 16
    extra = got["echoed:mdtest-easy-write:ops"].conditions.extra
    assert {k: v for k, v in extra.items() if k.startswith("io500_")} == {
        "io500_api": "POSIX",
        "io500_stonewall_s": 2.0,
        "io500_ior_easy_transfer_size_B": 2.0**20,
        "io500_ior_easy_block_size_B": 64.0 * 2**20,
        "io500_ior_easy_file_per_process": True,
        "io500_mdtest_easy_files_per_proc": 2000,
        "io500_ior_hard_segments": 1000,
        "io500_mdtest_hard_files_per_proc": 1000,
        "io500_mode": "standard",
    }
    easy = got["echoed:ior-easy-write:bandwidth"].conditions
    assert (easy.transfer_size_B, easy.block_size_B, easy.file_per_process) == (
        2.0**20,
        64.0 * 2**20,
        True,
    )
    assert easy.stonewall_s == 2.0


def test_result_txt_sections_and_summary_lines_of_one_run_merge(tmp_path: Path) -> None:
    # Before commit 3c23921 (2020) io500 printed result.txt's sections and the
    # summary lines on stdout together: one record per phase and score.
    path = tmp_path / "both.txt"
    path.write_text((DATA / "result.txt").read_text() + (DATA / "result_summary.txt").read_text())
    got = by_id(read_file(path))
    assert len(got) == 16
    easy = got["both:ior-easy-write:bandwidth"]
    assert easy.value == 1.721144 * GIB
    assert easy.conditions.tasks == 2 and easy.conditions.duration_s == 0.074


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("[RESULT] find 1.0 kIOPS : time 1.0 seconds\n" * 2, 2, "a second [RESULT] line for find"),
        (
            "[RESULT] find 1.0 kIOPS : time 1.0 seconds\n"
            + "[SCORE ] Bandwidth 1 GiB/s : IOPS 1 kiops : TOTAL 1\n" * 2,
            3,
            "a second [SCORE] score",
        ),
        (
            "[RESULT] find 1.0 kIOPS : time 1.0 seconds\n[SCORE ] Bandwidth 1 GiB/s : IO",
            2,
            "truncated: the file ends inside a line",
        ),
        ("[RESULT] find nan kIOPS : time 1.0 seconds\n", 1, "finite non-negative"),
    ],
)
def test_duplicated_truncated_or_non_finite_lines(
    tmp_path: Path, text: str, line: int, expected: str
) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(MeasurementError) as info:
        read_file(path, tool="io500")
    assert str(info.value).startswith(f"{path}: line {line}: ")
    assert expected in str(info.value)


def test_no_corruption_of_a_real_output_escapes_as_another_exception(tmp_path: Path) -> None:
    # Bounded work: every 7th-byte truncation and 300 one-byte corruptions per file.
    import random

    rng = random.Random(19)
    path = tmp_path / "x.txt"
    for name in ("result.txt", "result_summary.txt", "stdout.txt"):
        data = (DATA / name).read_bytes()
        cases = [data[:i] for i in range(0, len(data), 7)]
        for _ in range(300):
            b = bytearray(data)
            b[rng.randrange(len(b))] = rng.randrange(256)
            cases.append(bytes(b))
        for case in cases:
            path.write_bytes(case)
            try:
                io500.read(path)
            except MeasurementError as exc:
                assert str(exc).startswith(f"{path}: line ")
