"""A new system kind, added as docs/architecture.md ("A system kind, step by step") says.

The toy kind is one storage server that clients reach through its NIC ports
(:class:`~flashsim.components.nic.NicPorts`, a component written once); it
implements :class:`~flashsim.workloads.streams.StreamsTarget`, so it runs
``streams`` phases in both fidelities.  Its three parts are the walk-through's:

1. the model schema, a :class:`~flashsim.systems.base.KindModel` whose ``kind`` is
   ``Literal["toy"]``;
2. the built system, a :class:`~flashsim.systems.base.BuiltSystem` wiring the
   component into the workload protocol's paths and requests;
3. the :class:`~flashsim.systems.base.SystemKind` naming both, the protocols and
   ``describe``.

A kind shipped with flashsim is registered by one line in ``SYSTEM_KINDS``; a kind
in another package by an entry point of group ``flashsim.kinds``.  This test
takes the second way (it may not edit flashsim): it installs a distribution whose
only content is that entry point, pointing at the classes below, and runs
``flashsim describe`` and ``flashsim run`` on a toy model file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import pytest
from click.testing import CliRunner, Result

from flashsim.components.nic import Direction, NicPorts, NicSpec
from flashsim.engine.closedloop import Request
from flashsim.engine.flows import Resource
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.systems.base import (
    BuiltSystem,
    Description,
    Fidelity,
    KindModel,
    LayerPeak,
    SystemKind,
    bottleneck,
    check_size,
)
from flashsim.workloads.streams import StreamsPhase, StreamsTarget, run_streams


# ------------------------------------------------------------------ the toy kind
class ToyModel(KindModel):
    """Model file of ``kind = "toy"``: one server behind its NIC ports.

    Attributes
    ----------
    nic : NicSpec
        The server's network adapters (port bandwidth in bytes/s, latency in s).
    """

    kind: Literal["toy"]
    nic: NicSpec


class ToySystem(BuiltSystem):
    """A toy system in a simulation: the server's ports, in both fidelities."""

    def __init__(self, model: ToyModel, sim: Simulation, fidelity: Fidelity) -> None:
        super().__init__(sim, fidelity)
        self.model = model
        self.ports = NicPorts(sim, f"{model.name}.server", model.nic)

    def run_phase(self, phase: StreamsPhase) -> PhaseResult:
        """Run a ``streams`` phase in this system's fidelity."""
        return run_streams(self, phase, self.fidelity)

    @staticmethod
    def direction(phase: StreamsPhase) -> Direction:
        """Writes go into the server, reads come out of it."""
        return "ingress" if phase.operation == "write" else "egress"

    # ............................................................ StreamsTarget
    def streams_path(self, phase: StreamsPhase) -> list[tuple[Resource, float]]:
        """A stream is striped over every port (multi-rail)."""
        return self.ports.path(self.direction(phase))

    def streams_round_trip_s(self, phase: StreamsPhase) -> float:
        """One request on one port, then the adapter's latency (s)."""
        nic = self.model.nic
        return float(nic.service_s(phase.transfer_size, self.direction(phase)) + nic.latency)

    def streams_requests(self, phase: StreamsPhase) -> Callable[[int], Request]:
        """A request takes the next port, then the adapter's latency."""
        size_B, direction = phase.transfer_size, self.direction(phase)
        env, latency_s = self.sim.env, self.model.nic.latency

        def request(_customer: int) -> Request:
            yield self.ports.visit(direction, size_B)
            yield env.timeout(latency_s)

        return request


class ToyKind(SystemKind):
    """The ``toy`` system kind (``kind`` is read from ``ToyModel``)."""

    model_type = ToyModel
    built_type = ToySystem
    implements = (StreamsTarget,)

    def check_phase(self, model: ToyModel, phase: StreamsPhase) -> None:
        """Refuse streams that would not fit in memory."""
        streams = phase.streams * phase.queue_depth
        check_size("streams", streams, model.nic.ports, f"{streams:,} streams x queue depth")

    def describe(self, model: ToyModel) -> Description:
        """The ports' peak in each direction."""
        nic = model.nic
        layers = [
            LayerPeak(
                scope="server",
                layer="NIC",
                count=nic.ports,
                read_Bps=nic.node_Bps("egress"),
                write_Bps=nic.node_Bps("ingress"),
                note=f"{nic.ports} x {nic.port_bandwidth * 8 / 1e9:g} Gb/s",
            )
        ]
        return Description(
            system=model.name,
            kind=self.kind,
            components={"servers": 1, "NIC ports": nic.ports},
            layers=layers,
            bottlenecks={"bandwidth": bottleneck(layers, "server", "read_Bps")},
        )


# ------------------------------------------------------------------ its files
MODEL = """\
kind = "toy"
name = "toy1"
description = "one server behind two 100 Gb/s ports"

[nic]
ports = 2
port_bandwidth = "100 Gb/s"
egress_efficiency = 0.9
latency = "5 us"
"""

SCENARIO = """\
name = "toy-streams"
system = "toy.toml"
seed = 1

[[phases]]
name = "write"
workload = "streams"
operation = "write"
streams = 4
queue_depth = 4
transfer_size = "1 MiB"
bytes_per_stream = "1 GiB"
max_requests = 20000

[[phases]]
name = "read"
workload = "streams"
operation = "read"
streams = 4
queue_depth = 4
transfer_size = "1 MiB"
bytes_per_stream = "1 GiB"
max_requests = 20000
"""

#: The ports' capacity into and out of the server (bytes/s): 2 x 100 Gb/s, 90 % out.
WRITE_BPS = 2 * 100e9 / 8
READ_BPS = 0.9 * WRITE_BPS


def install_plugin(
    root: Path, monkeypatch: pytest.MonkeyPatch, target: str, name: str = "toy"
) -> None:
    """Install (on ``sys.path``) a distribution whose entry point registers kind ``name``."""
    dist = root / "site" / "flashsim_toy_kind-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: flashsim-toy-kind\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[flashsim.kinds]\n{name} = {target}\n")
    monkeypatch.syspath_prepend(str(root / "site"))


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy kind installed, and its model and scenario files; yields the scenario."""
    install_plugin(tmp_path, monkeypatch, f"{__name__}:ToyKind")
    (tmp_path / "toy.toml").write_text(MODEL)
    (tmp_path / "streams.toml").write_text(SCENARIO)
    yield tmp_path / "streams.toml"


def flashsim(*args: str) -> Result:
    from flashsim.cli import main

    return CliRunner().invoke(main, list(args))


# ------------------------------------------------------------------ tests
def test_the_toy_kind_is_found_and_described(toy: Path) -> None:
    from flashsim.systems import SYSTEM_KINDS, system_kind, system_kinds

    assert "toy" not in SYSTEM_KINDS and system_kinds()["toy"] == f"{__name__}:ToyKind"
    kind = system_kind("toy")
    assert isinstance(kind, ToyKind) and kind.kind == "toy"
    result = flashsim("describe", "--json", str(toy.parent / "toy.toml"))
    assert result.exit_code == 0, result.output
    described = json.loads(result.output)
    assert described["kind"] == "toy" and described["components"]["NIC ports"] == 2
    [nic] = described["layers"]
    assert nic["write_Bps"] == pytest.approx(WRITE_BPS)
    assert nic["read_Bps"] == pytest.approx(READ_BPS)


@pytest.mark.parametrize("fidelity", ["flow", "request"])
def test_flashsim_runs_the_toy_kind_at_its_ports_rate(toy: Path, fidelity: str) -> None:
    result = flashsim("run", "--json", "--fidelity", fidelity, str(toy))
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)
    phases = {p["name"]: p for p in run["phases"]}
    assert set(phases) == {"write", "read"}
    # 16 requests of 1 MiB in flight over 2 ports: saturated in both fidelities.
    assert phases["write"]["bandwidth_Bps"] == pytest.approx(WRITE_BPS, rel=0.02)
    assert phases["read"]["bandwidth_Bps"] == pytest.approx(READ_BPS, rel=0.02)
    assert all(p["fidelity"] == fidelity for p in phases.values())
    # The component's dotted names reach the bottleneck report as for any kind.
    names = {b["name"] for b in phases["write"]["bottlenecks"]}
    assert names == {"toy1.server.nic0.ingress", "toy1.server.nic1.ingress"}


def test_the_toy_kind_refuses_a_workload_it_does_not_implement(toy: Path) -> None:
    result = flashsim("run", str(toy), "--set", 'phases.0.workload="ior"')
    assert result.exit_code == 2
    assert "phases.0.workload" in result.output and "'streams'" in result.output
    assert "Traceback" not in result.output


def test_an_unknown_kind_lists_the_installed_ones(toy: Path) -> None:
    result = flashsim("describe", str(toy.parent / "toy.toml"), "--set", 'kind="toy2"')
    assert result.exit_code == 2
    [line] = result.output.splitlines()
    assert line.startswith("error:") and "'kind'" in line and "toy2" in line
    assert "lustre, pipeline, toy, vast" in line


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("flashsim_no_such_module_xyz:ToyKind", "No module named"),
        (f"{__name__}:NoSuchKind", "NoSuchKind"),
        (f"{__name__}:ToyModel", "not a SystemKind subclass"),
    ],
)
def test_a_broken_plugin_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, why: str
) -> None:
    install_plugin(tmp_path, monkeypatch, target)
    (tmp_path / "toy.toml").write_text(MODEL)
    result = flashsim("describe", str(tmp_path / "toy.toml"))
    assert result.exit_code == 2, result.output
    [line] = result.output.splitlines()
    assert line.startswith("error:") and "'kind'" in line and target in line and why in line


def test_a_shipped_kind_is_found_without_reading_entry_points(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import flashsim.systems as systems

    def refuse(**_: object) -> list[object]:
        raise AssertionError("entry points read for a shipped kind")

    monkeypatch.setattr(systems, "entry_points", refuse)
    assert systems.system_kind("pipeline").kind == "pipeline"


def test_a_shipped_kind_wins_over_an_entry_point_of_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flashsim.systems import SYSTEM_KINDS, system_kind, system_kinds

    install_plugin(tmp_path, monkeypatch, f"{__name__}:ToyKind", name="pipeline")
    assert system_kinds()["pipeline"] == SYSTEM_KINDS["pipeline"]
    assert not isinstance(system_kind("pipeline"), ToyKind)


def test_a_kind_reads_its_name_from_its_model() -> None:
    assert ToyKind.kind == "toy"
    with pytest.raises(TypeError, match="kind"):

        class Nameless(SystemKind):  # a model with no Literal kind: the kind must say it
            model_type = KindModel
            built_type = ToySystem
            implements = (StreamsTarget,)

            def describe(self, model: KindModel) -> Description:
                raise NotImplementedError


def test_the_walk_through_names_this_test() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text()
    section = doc.split("## A system kind, step by step", 1)[1].split("\n## ", 1)[0]
    for step in ("KindModel", "BuiltSystem", "SystemKind", "SYSTEM_KINDS", "flashsim.kinds"):
        assert step in section, step
    assert "tests/test_toy_kind.py" in section


def test_a_kind_named_unlike_its_model_is_refused() -> None:
    with pytest.raises(TypeError, match="kind 'toy2' but its model's is 'toy'"):

        class Misnamed(ToyKind):
            kind = "toy2"
            model_type = ToyModel
