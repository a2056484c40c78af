"""`flashsim run` names what limited each phase: utilisation counters and bottlenecks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import simpy

from flashsim.engine.flows import FlowNetwork
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation
from flashsim.measure import bottlenecks as bn
from flashsim.measure.report import format_bottlenecks, format_run_text
from flashsim.measure.results import PhaseResult, ResourceLoad, RunResult
from flashsim.scenario import LoadedScenario, load_scenario, run_loaded
from flashsim.systems import system_kind
from flashsim.systems.base import Description

DEMO = "scenarios/examples/pipeline-streams.toml"
TABLE1 = "scenarios/perlmutter/ior-table1.toml"

# ----------------------------------------------------------------- counters


def test_flow_utilization_integrates_capacity_changes_and_late_resources() -> None:
    sim = Simulation(0)
    net = sim.flows
    a = net.add_resource("x.a", capacity_Bps=100.0)
    net.start_flow(500.0, [(a, 1.0)])
    start = bn.mark(sim)

    def later() -> Any:
        yield sim.env.timeout(2.0)
        net.set_capacity(a, capacity_Bps=50.0)  # 200 B moved; 300 B at 50 B/s: done at 8 s
        yield sim.env.timeout(2.0)
        b = net.add_resource("x.b", capacity_Bps=10.0)  # created at 4 s
        net.start_flow(20.0, [(b, 1.0)])  # done at 6 s

    sim.env.process(later())
    sim.run(10.0)
    util = bn.flow_utilization(start.flow, net.usage())
    # a: 500 B over 100 B/s x 2 s + 50 B/s x 8 s; b: 20 B over 10 B/s x 6 s.
    np.testing.assert_allclose(util, [500.0 / 600.0, 20.0 / 60.0], rtol=1e-12)


def test_usage_work_equals_per_resource_counters() -> None:
    """The vectorised counters equal the per-constraint ones, segments and ops included."""
    rng = np.random.default_rng(7)
    env = simpy.Environment()
    net = FlowNetwork(env)
    res = [
        net.add_resource(f"r{i}", capacity_Bps=float(rng.uniform(50, 200)), capacity_ops=None)
        for i in range(8)
    ]
    ops = net.add_resource("ops", capacity_Bps=300.0, capacity_ops=5.0)
    seg = net.add_segment("seg", [(res[0], 0.5), (res[1], 0.5), (ops, 0.25)])

    def driver() -> Any:
        for step in range(30):
            path: list[Any] = [(res[int(k)], 1.0) for k in rng.choice(8, 2, replace=False)]
            if step % 3 == 0:
                path.append((seg, 1.0))
            net.start_flow(float(rng.uniform(50, 500)), path, op_size_B=10.0)
            if step % 7 == 0:
                net.set_capacity(res[2], capacity_Bps=float(rng.uniform(50, 200)))
            yield env.timeout(float(rng.uniform(0.1, 1.0)))

    env.process(driver())
    for t in (0.5, 3.0, 7.5, 12.0, 40.0):
        env.run(t)
        usage = net.usage()
        want = [net.bytes_moved(r) for r in usage.resources]
        np.testing.assert_allclose(usage.work[:, 0], want, rtol=1e-9, atol=1e-6)
        assert usage.work[-1, 1] == pytest.approx(net._bytes(ops._con_ops), rel=1e-9, abs=1e-9)


def test_queue_busy_done_counts_only_service_delivered() -> None:
    sim = Simulation(0)
    q = FifoQueue(sim.env, "x.q", servers=2)
    assert sim.queues == [q]
    for _ in range(3):
        q.visit(1.0)  # servers: [0, 1] then [1, 2]; [0, 1]
    for t, done in ((0.0, 0.0), (0.5, 1.0), (1.5, 2.5), (3.0, 3.0)):
        if t:
            sim.run(t)
        assert q.busy_done_s() == pytest.approx(done)


# ------------------------------------------------------------------- kinds


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("perlmutter.oss3.nic0.ingress", "nic"),
        ("perlmutter.oss3.ost0.drive2.cmd", "drive command"),
        ("perlmutter.oss3.ost0.drive2.data", "drive data"),
        ("perlmutter.oss3.ost0.drive2.pcie.up", "pcie"),
        ("perlmutter.oss3.ost0.raid", "raid"),
        ("perlmutter.oss3.cpu", "cpu"),
        ("perlmutter.client12.osc40", "osc"),
        ("perlmutter.fabric.io0.c-io.ingress.x4", "fabric"),
        ("vast.fabric", "fabric"),
        ("vast.dnode1.scm3", "scm drive"),
        ("vast.dnode1.qlc5", "qlc drive"),
        ("vast.dnode1.qlc5.ops", "qlc ops"),
        ("vast.scm3.cmd", "scm command"),
        ("vast.qlc5.xfer", "qlc data"),
        ("vast.cnode2.fabric_tx", "nic"),
        ("vast.client0.rx", "nic"),
        ("vast.cnode2.fabric_nic3.egress", "nic"),
        ("vast.cnode2.client_nic0.ingress", "nic"),
        ("vast.dnode1.fabric_nic0.ingress", "nic"),
        ("vast.client0.nic2.egress", "nic"),
        ("vast.tier.drain_gate", "tier gate"),
        ("demo.ssd", "ssd"),
        ("demo.stage7", "stage"),
    ],
)
def test_infer_kind(name: str, kind: str) -> None:
    assert bn.infer_kind(name) == kind


def test_explicit_kind_wins() -> None:
    sim = Simulation(0)
    r = sim.flows.add_resource("x.thing0", capacity_Bps=1.0, kind="widget")
    sim.flows.start_flow(10.0, [(r, 1.0)])
    start = bn.mark(sim)
    sim.run()
    found, _ = bn.phase_loads(sim, start)
    assert found == [ResourceLoad("x.thing0", "widget", pytest.approx(1.0))]


# ---------------------------------------------------------------- pipeline


def _run(root: Path, path: str, overrides: dict[str, str] | None = None) -> RunResult:
    return run_loaded(load_scenario(root / path, overrides or {}))


def _one_phase(loaded: LoadedScenario, name: str) -> LoadedScenario:
    """The scenario with only phase ``name`` (no state left over from earlier phases)."""
    keep = [p for p in loaded.phases if p.name == name]
    return LoadedScenario(loaded.path, loaded.spec, loaded.system, keep)


@pytest.mark.parametrize("fidelity", ["flow", "request"])
@pytest.mark.parametrize(("phase", "stage"), [("iops", "cpu"), ("bandwidth", "ssd")])
def test_pipeline_names_its_slow_stage(root: Path, fidelity: str, phase: str, stage: str) -> None:
    # 16 cores at 200 kIOPS: 0.82 GB/s of 4 KiB requests, below the SSD's 3.2 GB/s;
    # 1 MiB requests are still bound by the SSD's bandwidth.
    loaded = load_scenario(
        root / DEMO, {"fidelity": f'"{fidelity}"', "system.stages.cpu.ops_rate": "200 kIOPS"}
    )
    (result,) = run_loaded(_one_phase(loaded, phase)).phases
    assert [(b.name, b.kind) for b in result.bottlenecks] == [(f"demo.{stage}", stage)]
    assert result.bottlenecks[0].utilization == pytest.approx(1.0, abs=0.01)


def test_lightly_loaded_run_has_no_bottleneck(root: Path) -> None:
    result = _run(
        root, DEMO, {"phases.bandwidth.streams": "1", "phases.bandwidth.queue_depth": "1"}
    )
    light = result.phases[0]
    assert light.bottlenecks == []
    assert light.most_utilized[0].name == "demo.ssd"
    assert len(light.most_utilized) == 3
    assert all(0 < m.utilization < bn.BOTTLENECK_UTILIZATION for m in light.most_utilized)
    text = format_run_text(result)
    held = "held by concurrency: stream queue depth q*t/RTT"
    assert f"none saturated; {held}; most utilised: demo.ssd" in text


def test_json_lists_bottlenecks(root: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "flashsim.cli", "run", DEMO, "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    for phase in json.loads(proc.stdout)["phases"]:
        assert phase["bottlenecks"], phase["name"]
        for entry in phase["bottlenecks"] + phase["most_utilized"]:
            assert set(entry) == {"name", "kind", "utilization"}
        utils = [-round(b["utilization"], 9) for b in phase["bottlenecks"]]
        assert utils == sorted(utils)


def test_text_summarises_many_of_one_kind() -> None:
    loads = [ResourceLoad(f"p.oss{i}.nic0.ingress", "nic", 1.0) for i in range(274)]
    loads.append(ResourceLoad("p.oss0.cpu", "cpu", 0.995))
    phase = PhaseResult("w", "write", 1.0, 1.0, 1, 1.0, 1.0, 1.0, bottlenecks=loads)
    text = format_bottlenecks(RunResult("s", "p", 0, "flow", 0.0, [phase]))
    assert "nic \u00d7274 (100.0%): p.oss0.nic0.ingress, p.oss1.nic0.ingress" in text
    assert "(+271 more)" in text
    assert "cpu: p.oss0.cpu 99.5%" in text
    assert RunResult("s", "p", 0, "flow", 0.0, [phase]).to_dataframe().shape[0] == 1


def test_order_is_by_utilisation_then_natural_name() -> None:
    sim = Simulation(0)
    rs = [sim.flows.add_resource(f"x.d{i}", capacity_Bps=1.0) for i in (10, 2, 1)]
    for r in rs:
        sim.flows.start_flow(5.0, [(r, 1.0)])
    start = bn.mark(sim)
    sim.run()
    found, most = bn.phase_loads(sim, start)
    assert [b.name for b in found] == ["x.d1", "x.d2", "x.d10"]
    assert most == found


# --------------------------------------------------------------- perlmutter


@pytest.fixture(scope="module")
def table1() -> RunResult:
    root = Path(__file__).resolve().parent.parent
    return run_loaded(load_scenario(root / TABLE1))


#: Which resource kinds implement each layer of the Lustre `describe` table.
LUSTRE_LAYER_KINDS = {
    "OST stack (ldiskfs+RAID)": {"drive data", "drive command", "raid"},
    "drives (raw)": {"drive data", "drive command"},
    "drives after RAID": {"drive data", "drive command", "raid"},
    "NIC": {"nic"},
    "CPU (RPC handling)": {"cpu"},
}


@pytest.mark.parametrize(
    ("phase", "metric"),
    [
        ("write-bandwidth", "write_Bps"),
        ("read-bandwidth", "read_Bps"),
        ("write-iops", "write_iops"),
        ("read-iops", "read_iops"),
    ],
)
def test_perlmutter_one_ost_agrees_with_describe(
    root: Path, table1: RunResult, phase: str, metric: str
) -> None:
    """Table I's one-OST phases saturate what `describe` names for one OSS."""
    loaded = load_scenario(root / TABLE1)
    desc = loaded.system.kind.describe(loaded.system.model)
    layer = desc.bottlenecks[f"one OSS {metric}"]
    result = next(p for p in table1.phases if p.name == phase)
    kinds = {b.kind for b in result.bottlenecks}
    assert kinds, f"{phase}: no bottleneck; most utilised {result.most_utilized}"
    assert kinds <= LUSTRE_LAYER_KINDS[layer], (phase, layer, result.bottlenecks)


# ------------------------------------------------------ describe bounds runs

MODELS = Path(__file__).resolve().parent.parent / "models" / "systems"

#: A saturating scenario per shipped model (existing scenarios; the Cori models have
#: none of their own, so Table I's one-OST IOR runs on them), the `describe` scope
#: whose peaks bound it, and the model file.
BOUND_CASES = [
    pytest.param(DEMO, {}, "pipeline", "pipeline-demo.toml", id="pipeline-demo"),
    pytest.param(TABLE1, {}, "one OSS", "perlmutter.toml", id="perlmutter-one-ost"),
    pytest.param(
        "scenarios/perlmutter/full-system.toml",
        {},
        "system",
        "perlmutter.toml",
        id="perlmutter-full-system",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        TABLE1,
        {"system": '"../../models/systems/cori-scratch.toml"'},
        "one OSS",
        "cori-scratch.toml",
        id="cori-scratch-one-ost",
    ),
    pytest.param(
        TABLE1,
        {"system": '"../../models/systems/cori-datawarp.toml"'},
        "one OSS",
        "cori-datawarp.toml",
        id="cori-datawarp-one-ost",
    ),
    pytest.param(
        "scenarios/vast/naive-vs-aged.toml",
        {},
        "system",
        "vast-pdsw21.toml",
        id="vast-pdsw21",
    ),
    pytest.param(
        "scenarios/hybrid/vast-on-perlmutter.toml",
        {},
        "system",
        "vast-on-perlmutter.toml",
        id="vast-on-perlmutter",
    ),
    pytest.param(
        TABLE1,
        {"system": '"../../models/systems/lustre-hot-pool.toml"'},
        "one OSS",
        "lustre-hot-pool.toml",
        id="lustre-hot-pool-one-ost",
    ),
    pytest.param(
        "scenarios/vast/naive-vs-aged.toml",
        {"system": '"../../models/systems/vast-perlmutter-size.toml"'},
        "system",
        "vast-perlmutter-size.toml",
        id="vast-perlmutter-size",
    ),
    pytest.param(
        "scenarios/spider/block-io-rpc-size.toml",
        {},
        "system",
        "spider.toml",
        id="spider-couplet-block-io",
    ),
]


def _peak_Bps(desc: Description, scope: str, operation: str) -> float:
    peaks = [
        getattr(layer, f"{operation}_Bps")
        for layer in desc.layers
        if layer.scope == scope and getattr(layer, f"{operation}_Bps") is not None
    ]
    assert peaks, f"{desc.system}: describe has no {operation} peak in scope {scope!r}"
    return float(min(peaks))


def _flow_phases_only(loaded: LoadedScenario) -> LoadedScenario:
    """The scenario without its request-fidelity phases (statistical estimates)."""
    keep = [p for p in loaded.phases if getattr(p, "fidelity", None) != "request"]
    return LoadedScenario(loaded.path, loaded.spec, loaded.system, keep)


def test_every_shipped_model_has_a_bound_case() -> None:
    covered = {case.values[3] for case in BOUND_CASES}
    assert covered == {p.name for p in MODELS.glob("*.toml")}


@pytest.mark.parametrize(("scenario", "overrides", "scope", "model"), BOUND_CASES)
def test_run_bandwidth_within_describe_bound(
    root: Path, scenario: str, overrides: dict[str, str], scope: str, model: str
) -> None:
    """No flow-fidelity phase beats the peak `describe` gives for the scope it loads."""
    loaded = _flow_phases_only(load_scenario(root / scenario, overrides))
    assert loaded.system.path.name == model
    desc = system_kind(loaded.system.kind.kind).describe(loaded.system.model)
    result = run_loaded(loaded)
    checked = 0
    for phase in result.phases:
        if phase.operation not in ("read", "write"):
            continue
        bound = _peak_Bps(desc, scope, phase.operation)
        assert phase.bandwidth_Bps <= bound * (1 + 1e-9), (phase.name, phase.bandwidth_Bps, bound)
        checked += 1
    assert checked
