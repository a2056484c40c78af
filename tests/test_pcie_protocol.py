"""PCIe protocol overhead: a link carries 256/276 of its encoded rate as data by default."""

from __future__ import annotations

import pytest

from flashsim.components.pcie import PCIE_PROTOCOL_EFFICIENCY, PcieLink
from flashsim.config import ConfigError, validate
from flashsim.scenario import load_system_model, run_scenario
from tests.cli_helpers import ROOT


def test_default_is_the_256_byte_payload_tlp_efficiency() -> None:
    """Intel AN 456 §1.1.2: 256-byte payload, 20 bytes of TLP overhead."""
    assert pytest.approx(0.9275, abs=1e-4) == PCIE_PROTOCOL_EFFICIENCY
    link = PcieLink(generation=4, lanes=2)
    assert link.protocol_efficiency == PCIE_PROTOCOL_EFFICIENCY
    assert link.bandwidth_Bps == pytest.approx(2 * 16e9 * 128 / 130 / 8 * 256 / 276)
    assert link.service_s(1e6) == pytest.approx(1e6 / link.bandwidth_Bps)


def test_a_drive_faster_than_its_link_is_held_to_the_link_after_overhead() -> None:
    """A 5 GB/s drive (Intel P3608) on Gen3 x4: 3.94 GB/s encoded, 3.65 GB/s of data."""
    link = PcieLink(generation=3, lanes=4)
    assert link.line_Bps == pytest.approx(3.938e9, rel=1e-3)
    assert link.bandwidth_Bps == pytest.approx(3.653e9, rel=1e-3)
    assert PcieLink(generation=3, lanes=4, protocol_efficiency=0.865).bandwidth_Bps == (
        pytest.approx(3.406e9, rel=1e-3)
    )


def test_the_pm1733_datasheet_read_fits_its_link() -> None:
    """Perlmutter's drives: 3.5 GB/s read stays below Gen4 x2's 3.65 GB/s of data."""
    assert PcieLink(generation=4, lanes=2).bandwidth_Bps > 3.5e9


@pytest.mark.parametrize("value", [0, 0.0, 1.2, "120 %", -0.1])
def test_an_efficiency_outside_0_1_is_refused_naming_the_key(value: object) -> None:
    raw = {"generation": 4, "lanes": 2, "protocol_efficiency": value}
    with pytest.raises(ConfigError) as err:
        validate(PcieLink, raw, "m.toml")
    assert "key 'protocol_efficiency'" in str(err.value)


def test_describe_shows_the_link_after_overhead() -> None:
    loaded = load_system_model(ROOT / "models/systems/cori-datawarp.toml")
    layers = loaded.kind.describe(loaded.model).layers
    link = next(la for la in layers if la.layer.startswith("PCIe drive links"))
    assert link.read_Bps is not None
    per_drive = link.read_Bps / link.count
    assert per_drive == pytest.approx(4 * 8e9 * 128 / 130 / 8 * 256 / 276)
    assert "3.65 GB/s per drive" in link.note


def test_a_binding_drive_link_delivers_its_data_rate_not_its_encoded_rate() -> None:
    """obdfilter-survey read on Gen3 x2 drive links (1.97 GB/s encoded < 3.5 GB/s drives):
    12 links x 1.97 GB/s x 256/276 = 21.9 GB/s (23.6 GB/s before the protocol overhead)."""
    result = run_scenario(
        ROOT / "scenarios/perlmutter/obdfilter-survey.toml",
        {"system.oss.drive_link.generation": "3"},
    )
    read = next(p for p in result.phases if p.name == "obdfilter-read")
    line = PcieLink(generation=3, lanes=2).line_Bps
    assert read.bandwidth_Bps == pytest.approx(12 * line * PCIE_PROTOCOL_EFFICIENCY, rel=1e-6)
    assert {b.kind for b in read.bottlenecks} == {"pcie"}
