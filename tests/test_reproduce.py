"""flashsim.measurements.reproduce: a measurement's conditions as a scenario, run and compared.

Every run here is small (one OST's obdfilter-survey, an IOR test of 8 ranks moving a few
hundred MiB in flow fidelity): the work is bounded by the plans, not by a clock.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from flashsim.config import ConfigError
from flashsim.measurements.outcome import Outcome
from flashsim.measurements.record import Conditions, Measurement
from flashsim.measurements.reproduce import (
    DATASET_STONEWALL_FACTOR,
    FIO_REASON,
    Plan,
    Skip,
    dataset_transfer_B,
    evaluate,
    plan,
)
from tests.cli_helpers import ROOT

PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"
MiB = 2.0**20

#: seed 000 §IV-A: median obdfilter-survey write efficiency 92.6 % of 12 x 3.2 GB/s x 8/10
#: (the value validation/perlmutter.toml's perlmutter-obdfilter-write-eff reproduces).
OST_WRITE_Bps = 0.926 * 12 * 3.2e9 * 0.8


def obdfilter(value: float, target: int = 0, **kw: Any) -> Measurement:
    """An obdfilter-survey write measurement on one OST."""
    conditions = Conditions(
        tool="obdfilter-survey",
        operation="write",
        threads=1024,
        objects=1,
        transfer_size_B=4 * MiB,
        target=target,
    )
    return Measurement(
        id=f"obd:ost{target}:write:bandwidth",
        quantity="bandwidth",
        value=value,
        unit="B/s",
        conditions=conditions,
        source="obd.txt:1",
        **kw,
    )


def ior(operation: str = "read", scope: str = "", **conditions: Any) -> Measurement:
    """A small IOR file-per-process test on one OST of Perlmutter (8 ranks on 2 nodes)."""
    base: dict[str, Any] = {
        "tool": "ior",
        "operation": operation,
        "access": "sequential",
        "tasks": 8,
        "nodes": 2,
        "transfer_size_B": 1 * MiB,
        "block_size_B": 16 * MiB,
        "segments": 2,
        "file_per_process": True,
        "stripe_count": 1,
        "first_target": 0,
    }
    base.update(conditions)
    return Measurement(
        id=f"ior:test0:{scope or 'all'}:{operation}:bandwidth",
        quantity="bandwidth",
        value=4e10,
        unit="B/s",
        conditions=Conditions(**base),
        source="ior.txt:40",
        scope=scope,
    )


def phases(p: Plan | Skip) -> list[dict[str, Any]]:
    assert isinstance(p, Plan), p
    return list(p.phases)


# ---------------------------------------------------------------------------- plans


def test_an_ior_read_reads_files_written_before_it_with_the_same_layout() -> None:
    dataset, measured = phases(plan(ior("read")))
    assert dataset["operation"] == "write" and measured["operation"] == "read"
    assert dataset["dataset"] == measured["dataset"]
    for key in ("nodes", "ranks_per_node", "block_size", "segments", "file_per_process", "layout"):
        assert dataset[key] == measured[key], key
    assert measured["segments"] == 2 and measured["drop_caches"] is True
    # the files are whole (b x s per rank): no stonewall on a read that had none
    assert "stonewall" not in dataset and "stonewall" not in measured


def test_a_stonewalled_read_reads_a_stonewalled_dataset_with_wear_out() -> None:
    m = ior("read", block_size_B=4 * 2.0**40, stonewall_s=45.0)
    dataset, measured = phases(plan(m))
    assert measured["stonewall"] == "45.0 s"
    assert dataset["stonewall"] == f"{DATASET_STONEWALL_FACTOR * 45.0!r} s"
    assert dataset["wear_out"] is True
    # written in transfers a stonewall can stop (not one 4 TiB call per block)
    assert dataset["transfer_size"] == f"{64 * MiB!r} B"


def test_dataset_transfer_divides_the_block_and_stays_bounded() -> None:
    assert dataset_transfer_B(4096.0, 4 * 2.0**40) == 64 * MiB
    assert dataset_transfer_B(1 * MiB, 16 * MiB) == 16 * MiB
    assert dataset_transfer_B(3 * MiB, 9 * MiB) == 3 * MiB  # 6 MiB does not divide 9 MiB


def test_reorder_and_repetitions_come_from_extra() -> None:
    m = ior("read", extra={"reorder_tasks": True, "task_per_node_offset": 1, "repetitions": 3})
    _, measured = phases(plan(m))
    assert measured["reorder_tasks"] is True and measured["task_per_node_offset"] == 1
    assert measured["repetitions"] == 3
    plain = phases(plan(ior("read")))[1]
    assert "reorder_tasks" not in plain and "repetitions" not in plain


def test_an_iteration_is_compared_with_that_repetition() -> None:
    p = plan(ior("read", scope="iteration 1", extra={"repetitions": 2}))
    assert isinstance(p, Plan)
    assert (p.field, p.scale) == ("extra.repetitions.1.bandwidth_Bps", 1.0)
    beyond = plan(ior("read", scope="iteration 2", extra={"repetitions": 2}))
    assert isinstance(beyond, Skip) and "iteration 2" in beyond.reason


def test_bad_extra_values_skip_with_the_key() -> None:
    p = plan(ior("read", extra={"repetitions": 0}))
    assert isinstance(p, Skip) and "extra.repetitions" in p.reason


def test_small_random_transfers_run_in_request_fidelity() -> None:
    m = ior("write", access="random", transfer_size_B=4096.0, fsync=True)
    (measured,) = phases(plan(m))
    assert measured["fidelity"] == "request" and measured["fsync"] is True
    big = phases(plan(ior("write", access="random")))[0]
    assert "fidelity" not in big


def test_missing_conditions_skip_naming_them() -> None:
    m = ior("read", nodes=None, block_size_B=None)
    p = plan(m)
    assert isinstance(p, Skip)
    assert "nodes" in p.reason and "block_size" in p.reason and "sidecar" in p.reason
    assert "block_size_B" not in p.reason  # the sidecar key, not the Conditions field


def test_fio_measurements_skip_as_drive_level() -> None:
    m = Measurement("fio:job:read:bandwidth", "bandwidth", 3e9, "B/s", Conditions("fio"), "f:1")
    p = plan(m)
    assert isinstance(p, Skip) and p.reason == FIO_REASON


def test_an_unknown_tool_skips() -> None:
    m = Measurement("x", "bandwidth", 3e9, "B/s", Conditions("nobody"), "f:1")
    p = plan(m)
    assert isinstance(p, Skip) and "nobody" in p.reason


# ----------------------------------------------------------------------- evaluate


def test_an_ost_beyond_the_model_skips_with_the_models_message() -> None:
    outcomes = evaluate(
        [obdfilter(OST_WRITE_Bps, target=0), obdfilter(1.0, target=999)], PERLMUTTER
    )
    assert [o.status for o in outcomes] == ["pass", "skip"]
    assert "OST 999 does not exist" in outcomes[1].reason
    assert outcomes[0].rel_error == pytest.approx(0.0, abs=0.005)


def test_a_low_measurement_fails_and_a_model_override_moves_the_value() -> None:
    low = evaluate([obdfilter(0.85 * OST_WRITE_Bps)], PERLMUTTER)[0]
    assert low.status == "fail" and low.rel_error == pytest.approx(1 / 0.85 - 1, rel=0.01)
    # the OST stack's write efficiency (calibrated to 0.926) scales the OST's write
    # bandwidth; as a unit string too ("0.463" is read as a TOML number)
    slower = evaluate(
        [obdfilter(OST_WRITE_Bps)], PERLMUTTER, overrides={"oss.stack_write_efficiency": "0.463"}
    )[0]
    assert slower.simulated == pytest.approx(0.5 * low.simulated, rel=1e-6)


def test_plans_sharing_a_run_get_their_own_fields() -> None:
    """The summary and one iteration of the same test run once, each read from its field."""
    reps = {"repetitions": 2}
    summary, second = evaluate(
        [ior("read", extra=reps), ior("read", scope="iteration 1", extra=reps)], PERLMUTTER
    )
    assert summary.status != "skip" and second.status != "skip"
    # both in B/s: the repetition's field is not the summary's GB/s number
    assert second.simulated == pytest.approx(summary.simulated, rel=0.05)
    assert summary.simulated > 1e9


def test_tolerance_order_command_then_record_then_default() -> None:
    m = obdfilter(1.04 * OST_WRITE_Bps, tolerance=0.0)
    (own,) = evaluate([m], PERLMUTTER)
    assert own.tolerance == 0.0 and own.status == "fail"
    (command,) = evaluate([m], PERLMUTTER, tolerance=0.05)
    assert command.tolerance == 0.05 and command.status == "pass"
    (default,) = evaluate([dataclasses.replace(m, tolerance=None)], PERLMUTTER)
    assert default.tolerance == 0.10 and default.status == "pass"


def test_a_bad_override_is_an_error_not_a_skip() -> None:
    with pytest.raises(ConfigError):
        evaluate([obdfilter(OST_WRITE_Bps)], PERLMUTTER, overrides={"nope.nothing": 3})
    with pytest.raises(ConfigError, match="no such model file"):
        evaluate([obdfilter(OST_WRITE_Bps)], ROOT / "nope.toml")


def test_on_outcome_sees_every_measurement_in_order() -> None:
    seen: list[Outcome] = []
    ms = [obdfilter(OST_WRITE_Bps, target=1), obdfilter(OST_WRITE_Bps, target=999)]
    out = evaluate(ms, PERLMUTTER, on_outcome=seen.append)
    assert seen == out and [o.id for o in out] == [m.id for m in ms]


def test_an_obdfilter_aggregate_over_several_osts_skips() -> None:
    m = obdfilter(8 * OST_WRITE_Bps)
    many = dataclasses.replace(
        m, conditions=dataclasses.replace(m.conditions, extra={"ost_count": 8})
    )
    p = plan(many)
    assert isinstance(p, Skip) and "8 OSTs" in p.reason
    assert isinstance(plan(m), Plan)


def test_an_oss_beyond_the_model_skips_with_the_models_message() -> None:
    conditions = Conditions(
        tool="lnet-selftest",
        operation="write",
        sources=2,
        concurrency=8,
        transfer_size_B=1 * MiB,
        target=999,
        extra={"cross_group": True},
    )
    m = Measurement("lst:write:bandwidth", "bandwidth", 4e10, "B/s", conditions, "lst.txt:3")
    (outcome,) = evaluate([m], PERLMUTTER)
    assert outcome.status == "skip" and outcome.reason.startswith("the model cannot run it: ")
    assert "999" in outcome.reason


def test_a_write_the_client_cache_absorbs_skips_with_the_reason() -> None:
    """64 MiB buffered per rank fits the client cache: no time, no bandwidth to compare."""
    m = ior("write", tasks=2, nodes=1, block_size_B=64 * MiB, segments=1, fsync=False)
    (outcome,) = evaluate([m], PERLMUTTER)
    assert outcome.status == "skip" and "page cache" in outcome.reason
    (synced,) = evaluate([dataclasses.replace(m, conditions=dataclasses.replace(
        m.conditions, fsync=True))], PERLMUTTER)  # fmt: skip
    assert synced.status != "skip"
