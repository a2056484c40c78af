"""``flashsim calibrate``'s pieces: the calibratable declarations, the fit's choices and errors,
the model writer and the command's refusals.  Every fit here uses obdfilter-survey and LNet
measurements only (flow-fidelity runs of milliseconds)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from flashsim.components.drive import load_drive
from flashsim.components.ssd import SsdSpec
from flashsim.config import ConfigError
from flashsim.measurements.calibrate import calibrate
from flashsim.measurements.drive_file import drive_model_from_fio
from flashsim.measurements.model_file import value_text, write_model
from flashsim.measurements.parameters import calibratable_parameters
from flashsim.measurements.readers import read_measurements
from flashsim.scenario import load_system_model
from flashsim.systems.lustre.model import LustreModel
from flashsim.systems.vast.model import VastModel
from tests.cli_helpers import ROOT, run_flashsim

SEED = ROOT / "tests" / "data" / "measurements" / "seed000"
MODEL = ROOT / "models" / "systems" / "perlmutter.toml"


def _doc_parameters() -> set[str]:
    """First-column keys of docs/calibration.md's ``| parameter |`` tables.

    A row that says it is "not a performance fit" (VAST's erasure-code geometry, two
    integers fitted to a capacity) is no parameter a least-squares fit moves.
    """
    keys: set[str] = set()
    in_table = False
    for line in (ROOT / "docs" / "calibration.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| parameter |"):
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and not line.startswith("|---") and "not a performance fit" not in line:
            keys.update(re.findall(r"`([a-z_.]+)`", line.split("|")[1]))
    return keys


def test_declared_calibratables_are_the_parameters_docs_calibration_lists() -> None:
    declared = {p.key for t in (LustreModel, VastModel) for p in calibratable_parameters(t)}
    assert declared == _doc_parameters()
    assert len(declared) == 14


def test_each_declaration_names_its_docs_section_and_has_sane_bounds() -> None:
    text = (ROOT / "docs" / "calibration.md").read_text(encoding="utf-8")
    for t in (LustreModel, VastModel):
        for p in calibratable_parameters(t):
            assert p.row in text, p.key
            assert 0 < p.low < p.high, p.key
            assert p.unit in ("", "s", "B/s"), p.key
            assert p.measured_by, p.key


def test_a_shared_schema_is_calibratable_only_where_declared() -> None:
    loaded = load_system_model(MODEL)
    found = {p.key: p for p in calibratable_parameters(LustreModel, loaded.model)}
    assert "oss.nic.ingress_efficiency" in found
    assert "client.nic.ingress_efficiency" not in found  # the same NicSpec on clients
    assert "mds.nic.ingress_efficiency" not in found
    assert "mds.rpc_cost" not in found  # the same ServerSpec for MDSes
    assert found["oss.rpc_cost"].value == pytest.approx(22.04e-6)
    assert found["oss.rpc_cost"].unit == "s"
    assert found["oss.nic.egress_efficiency"].value == pytest.approx(0.970)
    assert found["oss.aging.cold_fraction"].value == pytest.approx(0.266)
    assert found["oss.aging.cold_fraction"].tools == ()  # fitted by tools/calibrate_aging.py
    cori = load_system_model(ROOT / "models" / "systems" / "cori-scratch.toml")
    by_key = {p.key: p for p in calibratable_parameters(LustreModel, cori.model)}
    assert by_key["oss.aging.spread"].value is None  # no [oss.aging] table


@pytest.fixture
def moved(tmp_path: Path) -> Path:
    """Perlmutter with its four bandwidth efficiencies at 0.8, in another directory."""
    out = tmp_path / "perlmutter.toml"
    keys = (
        "oss.stack_write_efficiency",
        "oss.stack_read_efficiency",
        "oss.nic.ingress_efficiency",
        "oss.nic.egress_efficiency",
    )
    write_model(MODEL, out, {k: (0.8, "") for k in keys}, {k: "moved" for k in keys})
    return out


def _bandwidths() -> list:  # type: ignore[type-arg]
    return read_measurements(
        [SEED / "obdfilter-survey.summary", SEED / "lnet-write.txt", SEED / "lnet-read.txt"]
    )


def test_without_fit_the_measured_tools_choose_the_parameters(moved: Path) -> None:
    result = calibrate(_bandwidths(), moved)
    assert set(result.values()) == {
        "oss.stack_write_efficiency",
        "oss.stack_read_efficiency",
        "oss.nic.ingress_efficiency",
        "oss.nic.egress_efficiency",
    }
    assert result.values()["oss.nic.ingress_efficiency"] == pytest.approx(0.848, rel=1e-3)
    assert all(o.status == "pass" and o.role == "calibration" for o in result.calibration)
    # message rates: read, not reproduced, so predictions skipped with the reason
    assert {o.quantity for o in result.prediction} == {"message_rate"}
    assert all(o.status == "skip" for o in result.prediction)
    notes = "\n".join(result.not_fitted)
    assert "oss.rpc_cost: no ior measurement given" in notes
    assert "oss.aging.spread: not fitted by calibrate" in notes


def test_a_parameter_no_measurement_moves_is_left_out_and_named(moved: Path) -> None:
    write_only = [m for m in _bandwidths() if m.conditions.operation == "write"]
    result = calibrate(write_only, moved)
    assert "oss.stack_read_efficiency" not in result.values()
    assert any(
        n.startswith("oss.stack_read_efficiency: nothing measured moves it")
        for n in result.not_fitted
    )


def test_measurements_no_fitted_parameter_moves_are_predictions(moved: Path) -> None:
    result = calibrate(_bandwidths(), moved, fit=["oss.nic.ingress_efficiency"])
    assert [p.key for p in result.parameters] == ["oss.nic.ingress_efficiency"]
    assert [o.id for o in result.calibration] == ["lnet-write:servers:write:bandwidth"]
    predicted = {o.id: o for o in result.prediction}
    read = predicted["obdfilter-survey:obj1-thr1024-rsz4096K:ost 0:read:bandwidth"]
    assert read.role == "prediction"
    assert read.rel_error == pytest.approx(0.8 / 0.999 - 1, rel=1e-3)  # still at 0.8
    assert result.parameters[0].fitted_to[0].id == "lnet-write:servers:write:bandwidth"


def test_predict_measurements_are_never_fitted(moved: Path) -> None:
    ms = _bandwidths()
    fit_on = [m for m in ms if m.conditions.tool == "obdfilter-survey"]
    lnet = [m for m in ms if m.conditions.tool == "lnet-selftest"]
    result = calibrate(fit_on, moved, predict=lnet)
    assert set(result.values()) == {"oss.stack_write_efficiency", "oss.stack_read_efficiency"}
    assert {o.id for o in result.prediction} == {m.id for m in lnet}


def test_nothing_measured_constrains_a_chosen_parameter(moved: Path) -> None:
    obdfilter = read_measurements([SEED / "obdfilter-survey.summary"])
    with pytest.raises(ConfigError) as err:
        calibrate(obdfilter, moved, fit=["oss.stack_write_efficiency", "oss.rpc_cost"])
    assert str(err.value) == (
        "--fit: nothing measured constrains oss.rpc_cost: give an IOR random 4 KiB read IOPS "
        "measurement on one OST or drop it from --fit"
    )


def test_fit_keys_that_cannot_be_fitted_are_refused_before_any_run(moved: Path) -> None:
    ms = _bandwidths()
    with pytest.raises(
        ConfigError,
        match=r"'oss\.count' is not a calibratable parameter of a "
        r"lustre model \(expected one of: oss\.nic\.ingress_efficiency",
    ):
        calibrate(ms, moved, fit=["oss.count"])
    with pytest.raises(
        ConfigError,
        match=r"nothing measured constrains oss\.aging\.spread: it "
        r"is fitted to aging runs .* drop it from --fit",
    ):
        calibrate(ms, moved, fit=["oss.aging.spread"])


def test_no_parameter_informed_by_the_measurements_is_an_error(moved: Path) -> None:
    darshan = [replace(m, conditions=replace(m.conditions, tool="darshan")) for m in _bandwidths()]
    with pytest.raises(ConfigError, match="nothing to fit: no calibratable parameter of a lustre"):
        calibrate(darshan, moved)


def test_value_text_keeps_the_unit_the_file_wrote() -> None:
    assert value_text(22.0312e-6, "s", "30 us") == "22.03 us"
    assert value_text(0.0123, "s", "10 ms") == "12.3 ms"
    assert value_text(1.46e9, "B/s", "2 GB/s") == "1.46 GB/s"
    assert value_text(0.92612, "", 0.8) == 0.9261
    assert value_text(3.5e-5, "s", None) == "35 us"


def test_write_model_keeps_comments_order_and_relocates_drive_paths(tmp_path: Path) -> None:
    out = tmp_path / "deeper" / "x.toml"
    out.parent.mkdir()
    write_model(
        MODEL,
        out,
        {"oss.rpc_cost": (25e-6, "s"), "mds.nic.ingress_efficiency": (0.9, "")},
        {"oss.rpc_cost": "CALIBRATED by test", "mds.nic.ingress_efficiency": "INLINE"},
    )
    old = MODEL.read_text(encoding="utf-8").splitlines()
    new = out.read_text(encoding="utf-8").splitlines()
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    assert [b.split(" =")[0] for _, b in changed] == ["drive", "rpc_cost", "drive", "nic"]
    rpc = changed[1][1]
    assert rpc.index("#") == changed[1][0].index("#")  # the comment column is kept
    assert rpc.startswith('rpc_cost = "25 us"')
    assert rpc.endswith(
        '# CALIBRATED by test; was "22.04 us": CALIBRATED: 32 cores / 1452.1 '
        "kIOPS (Table I read IOPS);"
    )
    assert "ingress_efficiency = 0.9" in changed[3][1] and changed[3][1].endswith("# INLINE")
    model = load_system_model(out).model  # the drive paths resolve from the new directory
    assert model.oss.rpc_cost == pytest.approx(25e-6)
    assert model.mds is not None and model.mds.nic.ingress_efficiency == 0.9


def test_write_model_names_a_missing_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the model has no \\[nowhere\\] table"):
        write_model(MODEL, tmp_path / "x.toml", {"nowhere.x": (1.0, "")}, {"nowhere.x": ""})


def _error_line(args: list[str]) -> str:
    proc = run_flashsim("calibrate", *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def test_the_command_refuses_bad_input_with_one_error_line(tmp_path: Path) -> None:
    summary = str(SEED / "obdfilter-survey.summary")
    existing = tmp_path / "exists.toml"
    existing.write_text("", encoding="utf-8")
    line = _error_line([summary, "--system", str(MODEL), "--out", str(existing)])
    assert line == f"error: {existing}: exists: give --force to overwrite it, or another --out"
    out = str(tmp_path / "new.toml")
    line = _error_line([summary, "--system", str(MODEL), "--out", out, "--tolerance", "two"])
    assert "'--tolerance' = 'two': expected a relative tolerance" in line
    line = _error_line([summary, "--out", out])
    assert "expected a model file (--system MODEL.toml)" in line
    assert "these are obdfilter-survey measurements" in line
    line = _error_line([summary, "--system", str(MODEL), "--out", out, "--fit", "oss.count"])
    assert "'oss.count' is not a calibratable parameter" in line
    assert not Path(out).exists()


def test_fio_output_alone_writes_a_drive_file(tmp_path: Path) -> None:
    fio = ROOT / "tests" / "data" / "measurements" / "fio"
    names = [
        "seqread-1m.json",
        "seqwrite-1m.json",
        "randread-4k-qd32.json",
        "randwrite-4k-qd32.json",
        "qd1-4k.json",
    ]
    out = tmp_path / "ci-drive.toml"
    paths = [fio / n for n in names]
    proc = run_flashsim("calibrate", *[str(p) for p in paths], "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout
    drive = load_drive(out)
    assert isinstance(drive, SsdSpec) and drive.read_bandwidth > 0
    # the file the library writes from the same outputs, named after --out
    assert out.read_text(encoding="utf-8") == drive_model_from_fio(
        read_measurements(paths), out.stem
    )


def test_a_fit_held_at_its_bound_fails_its_calibration_row_and_exits_1(tmp_path: Path) -> None:
    """A write faster than the drives allow: the efficiency stops at its bound of 1."""
    summary = tmp_path / "fast.summary"
    # hand-written (an impossible measurement): 40000 MiB/s of writes, above the 12 drives'
    # 30.7 GB/s after parity; the sidecar names OST 0
    summary.write_text(
        "ost  1 sz 4194304K rsz 4096K obj    1 thr 1024 write 40000.00 [40000.00,40000.00] \n",
        encoding="utf-8",
    )
    (tmp_path / "fast.summary.conditions.toml").write_text(
        "[conditions]\ntarget = 0\n", encoding="utf-8"
    )
    out = tmp_path / "out.toml"
    proc = run_flashsim(
        "calibrate",
        str(summary),
        "--tool",
        "obdfilter-survey",
        "--seed",
        "3",
        "--system",
        str(MODEL),
        "--out",
        str(out),
    )
    assert proc.returncode == 1, proc.stderr
    assert "| oss.stack_write_efficiency | 0.926 | 1 | 0.3 .. 1 |" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.startswith("| fast:"))
    assert "| calibration | FAIL |" in row
    assert load_system_model(out).model.oss.stack_write_efficiency == 1.0  # written anyway
