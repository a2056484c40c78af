"""A failed QLC drive of the VAST system: the erasure-coded rebuild in flow fidelity."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashsim.components.rebuild import ArrayGeometry, rebuild_time_s
from flashsim.scenario import load_scenario, run_loaded
from flashsim.systems.vast.rebuild import VastRebuildDetails

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "vast" / "rebuild.toml"


@pytest.fixture(scope="module")
def details() -> dict[str, VastRebuildDetails]:
    result = run_loaded(load_scenario(SCENARIO))
    return {p.name: p.details(VastRebuildDetails) for p in result.phases}


def test_idle_rebuild_takes_the_analytic_time(details: dict[str, VastRebuildDetails]) -> None:
    """k reads spread over the 43 survivors plus one write into their free space, per byte."""
    idle = details["rebuild-idle"]
    geometry = ArrayGeometry.erasure(36, 4, 44, chunk_B=2.0**20)
    expect = rebuild_time_s(geometry, [0], 15.36e12, read_Bps=3.2e9, write_Bps=1.0e9)
    assert idle.rebuild_time_s == pytest.approx(expect, rel=1e-9)
    assert idle.rebuild_alone_s == pytest.approx(expect, rel=1e-9)


def test_readers_and_rebuild_share_the_drives_by_the_policy(
    details: dict[str, VastRebuildDetails],
) -> None:
    idle = details["rebuild-idle"].rebuild_time_s
    for name, priority in (("rebuild-under-reads", 0.3), ("rebuild-gentle", 0.1)):
        d = details[name]
        # Saturating readers leave the rebuild its guaranteed share (the idle-time flow,
        # at the lowest priority weight, takes a sliver more) ...
        assert d.rebuild_time_s == pytest.approx(idle / priority, rel=1e-3)
        # ... and keep the rest of the 43 survivors' time, where a logical byte costs 43/44
        # healthy reads plus, for the failed drive's 1/44, 36 survivor reads (a degraded
        # read of a 1 MiB RPC in a 111 MB strip, nothing rebuilt yet when the reader starts).
        assert d.read_during_Bps == pytest.approx(
            (1 - priority) * d.read_before_Bps * 43 / 44 / (43 / 44 + 36 / 44), rel=1e-3
        )
    assert (
        details["rebuild-gentle"].read_during_Bps > details["rebuild-under-reads"].read_during_Bps
    )


def test_each_read_cell_tests_its_own_value() -> None:
    # "read before" used to test the "during" value for NaN (issue 20 review)
    from dataclasses import replace

    base = VastRebuildDetails(
        ec_data=8,
        ec_parity=2,
        drives=10,
        rebuild_volume_B=2e12,
        rebuild_time_s=7200.0,
        rebuild_alone_s=3600.0,
        read_before_Bps=5e9,
        read_during_Bps=float("nan"),
    )
    cols = base.columns()
    assert cols["read before GB/s"] == "5.0" and cols["read during GB/s"] == "-"
    cols = replace(base, read_before_Bps=float("nan"), read_during_Bps=3e9).columns()
    assert cols["read before GB/s"] == "-" and cols["read during GB/s"] == "3.0"
