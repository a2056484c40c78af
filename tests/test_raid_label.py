"""RaidSpec.label: what each RAID level really is, and describe's RAID layer shows it."""

from __future__ import annotations

import pytest

from flashsim.components.raid import RaidSpec
from flashsim.scenario import load_system_model
from tests.cli_helpers import ROOT


@pytest.mark.parametrize(
    ("raid", "drives", "label"),
    [
        ({"level": "raid6", "data": 8, "parity": 2, "spares": 1}, 12, "raid6 8+2 +1 spare"),
        ({"level": "raid6", "data": 4, "parity": 2}, 6, "raid6 4+2"),
        ({"level": "raid10", "mirrors": 2}, 10, "raid10 5x2 mirrors"),
        ({"level": "raid10", "mirrors": 3, "spares": 1}, 7, "raid10 2x3 mirrors +1 spare"),
        ({"level": "raid10", "mirrors": 2}, None, "raid10 2-way mirrors"),
        ({"level": "none", "data": 10, "parity": 0}, 10, "raid0 x10 (no protection)"),
    ],
)
def test_label_says_what_each_level_is(
    raid: dict[str, object], drives: int | None, label: str
) -> None:
    assert RaidSpec.model_validate(raid).label(drives) == label


def test_describe_labels_a_raid10_target_by_its_mirrors() -> None:
    """It said ``raid10 8+2+0`` (RAID6's default data and parity) before."""
    raid10 = {"level": "raid10", "mirrors": 2, "chunk": "128 KiB"}
    loaded = load_system_model(ROOT / "models/systems/perlmutter.toml", {"oss.raid": raid10})
    layers = loaded.kind.describe(loaded.model).layers
    note = next(la.note for la in layers if la.layer == "drives after RAID")
    assert note.startswith("raid10 6x2 mirrors: writes x2"), note
    assert "8+2" not in note


def test_describe_labels_perlmutter_raid6() -> None:
    loaded = load_system_model(ROOT / "models/systems/perlmutter.toml")
    layers = loaded.kind.describe(loaded.model).layers
    note = next(la.note for la in layers if la.layer == "drives after RAID")
    assert note.startswith("raid6 8+2 +1 spare: writes x1.25"), note
