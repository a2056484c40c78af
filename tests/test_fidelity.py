"""Flow and request fidelity agree on the same pipeline."""

from __future__ import annotations

import pytest

from flashsim.scenario import run_scenario

SCENARIO = "scenarios/examples/pipeline-streams.toml"


@pytest.mark.parametrize("seed", [1, 2])
def test_saturated_pipeline_throughput_agrees(root, seed: int) -> None:
    flow = run_scenario(root / SCENARIO, {"fidelity": '"flow"', "seed": str(seed)})
    request = run_scenario(root / SCENARIO, {"fidelity": '"request"', "seed": str(seed)})
    for f, r in zip(flow.phases, request.phases, strict=True):
        assert r.ci_rel_halfwidth is not None and r.ci_rel_halfwidth < 0.01
        assert r.bandwidth_Bps == pytest.approx(f.bandwidth_Bps, rel=0.03), f.name


def test_latency_bound_streams_agree(root) -> None:
    # One request in flight per stream, deterministic service: no stage saturates,
    # so both fidelities must give streams * t / round_trip.
    overrides = {
        "phases.bandwidth.queue_depth": "1",
        "phases.bandwidth.streams": "2",
        "system.stages.nic.service_distribution": '"deterministic"',
        "system.stages.cpu.service_distribution": '"deterministic"',
        "system.stages.ssd.service_distribution": '"deterministic"',
    }
    flow = run_scenario(root / SCENARIO, {**overrides, "fidelity": '"flow"'})
    request = run_scenario(root / SCENARIO, {**overrides, "fidelity": '"request"'})
    f, r = flow.phases[0], request.phases[0]
    t = 1024 * 1024
    round_trip = 2e-6 + t / 25e9 + 1e-6 + 16 / 1.6e6 + 80e-6 + max(8 * t / 3.2e9, 8 / 8e5)
    assert f.bandwidth_Bps == pytest.approx(2 * t / round_trip, rel=1e-9)
    assert r.bandwidth_Bps == pytest.approx(f.bandwidth_Bps, rel=0.03)


def test_more_ssd_bandwidth_never_lowers_throughput(root) -> None:
    previous = 0.0
    for bw in ("1 GB/s", "2 GB/s", "3.2 GB/s", "6 GB/s"):
        result = run_scenario(root / SCENARIO, {"system.stages.ssd.bandwidth": bw})
        assert result.phases[0].bandwidth_Bps >= previous
        previous = result.phases[0].bandwidth_Bps


PERLMUTTER = "scenarios/perlmutter/fidelity-check.toml"


def _layout(ranks: int) -> dict[str, str]:
    """``ranks`` ranks, 16 per node (one node below 16)."""
    per_node = min(ranks, 16)
    out: dict[str, str] = {}
    for phase in ("write", "read"):
        out[f"phases.{phase}.nodes"] = str(ranks // per_node)
        out[f"phases.{phase}.ranks_per_node"] = str(per_node)
    return out


@pytest.mark.parametrize(
    "ranks", [4, 64, 256, pytest.param(1024, marks=pytest.mark.slow)], ids=lambda n: f"{n}r"
)
def test_perlmutter_fidelities_agree(root, ranks: int) -> None:
    """Both fidelities cross the same stages (client NIC, fabric, server NIC, CPU, RAID,
    drives), so the same IOR job gets the same bandwidth within 5 %: the client NICs
    bind from 4 to 1,024 ranks, and at 1,024 ranks (64 nodes in one compute group) the
    job needs adaptive routing to leave its group."""
    flow = run_scenario(root / PERLMUTTER, {**_layout(ranks), "fidelity": '"flow"'})
    request = run_scenario(root / PERLMUTTER, {**_layout(ranks), "fidelity": '"request"'})
    for f, r in zip(flow.phases, request.phases, strict=True):
        assert r.fidelity == "request" and f.fidelity == "flow"
        assert r.bandwidth_Bps == pytest.approx(f.bandwidth_Bps, rel=0.05), (
            f.name,
            f.bandwidth_Bps / 1e9,
            r.bandwidth_Bps / 1e9,
        )


def test_perlmutter_fidelities_agree_where_the_fabric_binds(root) -> None:
    """512 ranks on 32 nodes of one compute group with minimal routing: the group's
    4 x 4 global links to the I/O groups (400 GB/s) bind in both fidelities, not the
    client NICs (800 GB/s)."""
    overrides = {**_layout(512), "system.fabric.routing": '"minimal"'}
    flow = run_scenario(root / PERLMUTTER, {**overrides, "fidelity": '"flow"'})
    request = run_scenario(root / PERLMUTTER, {**overrides, "fidelity": '"request"'})
    for f, r in zip(flow.phases, request.phases, strict=True):
        # Writes also fill the 32 nodes' dirty page caches (2000 MiB each) in the 5 s.
        extra = 32 * 2000 * 2**20 / 5.0 if f.name == "write" else 0.0
        assert f.bandwidth_Bps == pytest.approx(400e9 + extra, rel=0.01), f.name
        assert r.bandwidth_Bps == pytest.approx(f.bandwidth_Bps, rel=0.05), f.name
        assert {b.kind for b in f.bottlenecks} == {"fabric"}, f.bottlenecks
