"""Issue 18 item 2: a VAST system's client, CNode and DNode ports are the shared ``NicPorts``.

Every node's adapters are a flow resource and a request queue per port and
direction (:class:`~flashsim.components.nic.NicPorts`), as a Lustre server's
and client's are; a node's ports in parallel are its aggregate, so flow
fidelity's figures stay, and request fidelity now queues at each port.
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from flashsim.components.nic import Direction, NicPorts
from flashsim.engine.flows import Resource
from flashsim.engine.simulation import Simulation
from flashsim.measure.bottlenecks import infer_kind, mark, phase_loads
from flashsim.scenario import load_system_model
from flashsim.systems.vast.describe import describe_model
from flashsim.systems.vast.kind import VastSystem
from flashsim.systems.vast.study_units import ior_phase as _ior

MODEL = "models/systems/vast-pdsw21.toml"
#: A node's port resource: ``<name>.<node>.<set><port>.<direction>``.
PORT = re.compile(r"\.(client\d+|cnode\d+|dnode\d+)\.(nic|client_nic|fabric_nic)\d+\.(\w+)$")


def build(overrides: dict[str, str] | None = None, fidelity: str = "flow") -> VastSystem:
    loaded = load_system_model(MODEL, overrides or {})
    system = loaded.kind.build(loaded.model, Simulation(0), fidelity)  # type: ignore[arg-type]
    assert isinstance(system, VastSystem)
    return system


def per_node(path: list[tuple[Resource, float]]) -> dict[tuple[str, str, str], float]:
    """Bytes per user byte through each node's port set and direction, its ports added up."""
    sums: dict[tuple[str, str, str], float] = defaultdict(float)
    for res, w in path:
        m = PORT.search(res.name)
        if m:
            sums[(m[1], m[2], m[3])] += w
    return dict(sums)


def test_every_node_has_a_nicports_per_adapter_set_of_the_model() -> None:
    system = build()
    net, m = system.net, system.model
    assert all(isinstance(n, NicPorts) for n in net.client_nics + net.dnode_nics)
    # The mount uses localports = 4 of the client's 4 HCAs; a CNode has 1 client port, 4 fabric.
    assert [len(n.flow["egress"]) for n in net.client_nics] == [4] * m.client.count
    assert [len(n.flow["ingress"]) for n in net.cnode_client_nics] == [1] * m.cnode.count
    assert [len(n.queues["egress"]) for n in net.cnode_fabric_nics] == [4] * m.cnode.count
    assert [len(n.flow["ingress"]) for n in net.dnode_nics] == [4] * m.dnode.count
    names = {
        r.name for n in net.front_nic.values() for d in ("ingress", "egress") for r in n.flow[d]
    }
    names |= {
        r.name for n in net.back_nic.values() for d in ("ingress", "egress") for r in n.flow[d]
    }
    assert "vast-pdsw21.cnode2.fabric_nic3.egress" in names
    assert "vast-pdsw21.cnode2.client_nic0.ingress" in names
    assert "vast-pdsw21.dnode1.fabric_nic0.ingress" in names
    assert "vast-pdsw21.client7.nic3.egress" in names
    assert {infer_kind(n) for n in names} == {"nic"}
    # A port's capacity is one port's line rate (the aggregate was ports x this).
    port = net.cnode_fabric_nics[0].flow["egress"][0]
    assert port.capacity_Bps == pytest.approx(50e9 / 8)


def test_a_mount_with_fewer_localports_gets_that_many_ports() -> None:
    system = build({"client.mount.local_ports": "2"})
    assert [len(n.flow["ingress"]) for n in system.net.client_nics] == [2] * 8


def test_flow_paths_put_the_aggregates_weights_on_each_nodes_ports() -> None:
    """Per node and direction the ports carry what the node's aggregate carried, evenly."""
    system = build()
    copies = system.model.tier.scm_copies
    write = per_node(system._write_server_path(3))
    assert write[("client3", "nic", "egress")] == pytest.approx(1.0)
    for c in range(8):  # nconnect/multipath: every client reaches all 8 CNodes
        assert write[(f"cnode{c}", "client_nic", "ingress")] == pytest.approx(1 / 8)
        assert write[(f"cnode{c}", "fabric_nic", "egress")] == pytest.approx(copies / 8)
    for d in range(2):  # 6 SCM drives per DNode: half the replicas each
        assert write[(f"dnode{d}", "fabric_nic", "ingress")] == pytest.approx(copies / 2)
    assert len(write) == 1 + 8 + 8 + 2
    # Each port of a node takes its share over the node's ports.
    weights = {res.name: w for res, w in system._write_server_path(3) if "fabric_nic" in res.name}
    assert weights["vast-pdsw21.cnode0.fabric_nic3.egress"] == pytest.approx(copies / 8 / 4)
    where = system.tier.read_weights("nothing-written")
    read_path, _ = system._read_path(5, where)
    read = per_node(read_path)
    assert read[("client5", "nic", "ingress")] == pytest.approx(1.0)
    assert read[("cnode4", "client_nic", "egress")] == pytest.approx(1 / 8)
    migration = per_node(system._migration_extra(1.0))
    assert sum(w for (n, _, d), w in migration.items() if "cnode" in n and d == "ingress") == (
        pytest.approx(1.0)
    )


def test_a_port_bound_write_binds_at_the_client_port_in_both_fidelities() -> None:
    """One client, one 1 GB/s HCA port: O_DIRECT writes bind there, request fidelity too.

    Before the ports were queues, request fidelity only paid each RPC's wire time,
    so 16 synchronous ranks wrote at the SCM drives' ~5 GB/s past a 1 GB/s port.
    """
    slow = {"client.nic.port_bandwidth": "8 Gb/s", "client.mount.local_ports": "1"}
    rates = {}
    for fidelity in ("flow", "request"):
        system = build(slow, fidelity)
        phase = _ior(
            "w",
            "write",
            1,
            16,
            2**20,
            "d",
            block_size_B=2**20,
            segments=48,
            direct_io=True,
            fidelity=fidelity,
        )
        start = mark(system.sim)
        result = system.run_phase(phase)
        limited_by, _ = phase_loads(system.sim, start)
        assert result.fidelity == fidelity
        assert result.bandwidth_Bps <= 1e9 * (1 + 1e-6)
        assert [(b.name, b.kind) for b in limited_by] == [
            ("vast-pdsw21.client0.nic0.egress", "nic")
        ]
        rates[fidelity] = result.bandwidth_Bps
    assert rates["flow"] > 0.95e9
    assert rates["request"] == pytest.approx(rates["flow"], rel=0.03)


def test_describes_port_layers_are_the_built_ports_in_parallel() -> None:
    """``describe``'s port peaks are the sums of the built ports' capacities (run <= describe)."""
    system = build()
    layers = {layer.layer: layer for layer in describe_model(system.model).layers}
    net = system.net

    def total(nics: list[NicPorts], direction: Direction) -> float:
        return sum(float(r.capacity_Bps or 0.0) for n in nics for r in n.flow[direction])

    assert layers["client HCAs"].read_Bps == pytest.approx(total(net.client_nics, "ingress"))
    cnode = layers["CNode client ports"]
    assert cnode.read_Bps == pytest.approx(total(net.cnode_client_nics, "egress"))
    assert cnode.note == "1 x 100 Gb/s per CNode"
    fabric = layers["CNode fabric ports"]
    assert fabric.read_Bps == pytest.approx(total(net.cnode_fabric_nics, "ingress"))
    assert fabric.note.startswith("4 x 50 Gb/s per CNode")
    assert layers["DNode fabric ports"].read_Bps == pytest.approx(total(net.dnode_nics, "egress"))
