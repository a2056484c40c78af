"""A model that swaps in another drive warns that its calibrated stack values carry over."""

from __future__ import annotations

import warnings

import pytest

from flashsim.components.drive import check_calibrated_drive, load_drive
from flashsim.errors import ModelWarning
from flashsim.scenario import load_system_model
from tests.cli_helpers import ROOT, run_flashsim

MODEL = ROOT / "models/systems/perlmutter.toml"
QLC = "../drives/intel-d5-p4326-15.36tb.toml"


def _model_warnings(overrides: dict[str, object]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_system_model(MODEL, overrides)
    assert loaded.model is not None
    return [str(w.message) for w in caught if issubclass(w.category, ModelWarning)]


def test_perlmutter_records_the_drive_its_efficiencies_were_fitted_on() -> None:
    loaded = load_system_model(MODEL)
    assert loaded.model.oss.calibrated_with == loaded.model.oss.drive.name
    assert not [m for m in _model_warnings({}) if "calibrated" in m]


def test_another_drive_warns_once_naming_both_and_the_calibration_doc() -> None:
    found = [m for m in _model_warnings({"oss.drive": QLC}) if "calibrated" in m]
    assert found == [
        "oss.drive is 'Intel SSD D5-P4326 15.36TB', but oss's calibrated parameters (stack "
        "efficiencies, per-operation costs, aging) were fitted on 'Samsung PM1733 15.36TB' "
        "(oss.calibrated_with): they carry over unchanged; docs/calibration.md says which "
        "hold for another drive"
    ]


def test_no_record_no_warning() -> None:
    assert not [
        m
        for m in _model_warnings({"oss.drive": QLC, "oss.calibrated_with": None})
        if "calibrated" in m
    ]
    drive = load_drive(ROOT / "models/drives/intel-d5-p4326-15.36tb.toml")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_calibrated_drive(drive, None, "oss")
        check_calibrated_drive(drive, drive.name, "oss")
    with pytest.warns(ModelWarning, match="mds.calibrated_with"):
        check_calibrated_drive(drive, "Samsung PM1733 15.36TB", "mds")


def test_the_cli_prints_it_as_one_warning_line() -> None:
    proc = run_flashsim("describe", str(MODEL), "--set", f"system.oss.drive={QLC}")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "calibrated" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: oss.drive is 'Intel SSD D5-P4326")
