"""Issue 17: a server fails on the timeline; its partner serves its targets (Lustre OSS pairs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flashsim.config import ConfigError
from flashsim.scenario import load_scenario, run_loaded
from tests.lustre_scenario import write_scenario

#: 64 ranks writing one file each over both OSTs of a two-OSS Perlmutter: both OSSes' drives
#: busy, each OSS's NIC below its line rate.
IOR = """
[[phases]]
name = "NAME"
workload = "ior"
operation = "write"
nodes = 16
ranks_per_node = 4
transfer_size = "4 MiB"
block_size = "4 GiB"
file_per_process = true
layout = { stripe_count = STRIPES }
"""


def _run(tmp_path: Path, body: str) -> Any:
    return run_loaded(load_scenario(write_scenario(tmp_path, body, oss_count=2)))


def _ior(name: str, stripes: int = 1) -> str:
    return IOR.replace("NAME", name).replace("STRIPES", str(stripes))


@pytest.mark.parametrize("stripes", [1, 2])
def test_a_failed_oss_puts_both_osts_behind_its_partner(tmp_path: Path, stripes: int) -> None:
    events = (
        '[[events]]\nrelative_to = "healthy"\nedge = "end"\naction = "fail-server"\nserver = 0\n'
        '[[events]]\nrelative_to = "failed-over"\nedge = "end"\naction = "restore-server"\n'
        "server = 0\n"
    )
    body = _ior("healthy", stripes) + _ior("failed-over", stripes) + _ior("restored", stripes)
    result = _run(tmp_path, body + events)
    bw = {p.name: p.bandwidth_Bps for p in result.phases}
    # Two OSTs' writes through one OSS's NIC ports and CPU: slower than through two
    # (striped files too: their stripe-set paths are made anew after the failover).
    assert bw["failed-over"] < 0.9 * bw["healthy"]
    assert bw["restored"] == pytest.approx(bw["healthy"], rel=1e-9)
    failed = next(p for p in result.phases if p.name == "failed-over")
    limits = {r.name for r in failed.bottlenecks} | {r.name for r in failed.most_utilized}
    assert any(".oss1." in n and "nic" in n for n in limits), limits
    assert not any(".oss0." in n and "nic" in n for n in limits), limits
    labels = [s.label for s in result.timeline]
    assert "perlmutter.oss0: failed over to oss1" in labels
    assert "perlmutter.oss0: restored" in labels


def test_server_events_are_checked(tmp_path: Path) -> None:
    bad = '[[events]]\nat = "0 s"\naction = "fail-server"\nserver = 2\n'
    with pytest.raises(ConfigError, match=r"events\.0\.server"):
        _run(tmp_path, _ior("w") + bad)
    both = (
        '[[events]]\nat = "0 s"\naction = "fail-server"\nserver = 0\n'
        '[[events]]\nat = "0 s"\naction = "fail-server"\nserver = 1\n'
    )
    with pytest.raises(ConfigError, match="partner OSS 0 has failed too"):
        _run(tmp_path, _ior("w") + both)
