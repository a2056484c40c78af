"""NIC port sets (components/nic.py): names, flow weights and request queues per port."""

from __future__ import annotations

import pytest

from flashsim.components.nic import NicPorts, NicSpec
from flashsim.engine.simulation import Simulation
from flashsim.measure.bottlenecks import infer_kind


def _spec(ports: int = 4, egress_efficiency: float = 1.0) -> NicSpec:
    return NicSpec.model_validate(
        {"ports": ports, "port_bandwidth": "100 Gb/s", "egress_efficiency": egress_efficiency}
    )


def test_a_labelled_port_set_names_its_ports_apart_from_the_nodes_other_set() -> None:
    """A CNode has two port sets; ``label`` keeps their resources and queues apart."""
    sim = Simulation(0)
    client = NicPorts(sim, "v.cnode2", _spec(1), "client_nic")
    fabric = NicPorts(sim, "v.cnode2", _spec(4), "fabric_nic")
    assert [r.name for r in client.flow["ingress"]] == ["v.cnode2.client_nic0.ingress"]
    assert [q.name for q in fabric.queues["egress"]] == [
        f"v.cnode2.fabric_nic{p}.egress" for p in range(4)
    ]
    plain = NicPorts(sim, "v.client3", _spec(2))
    assert plain.flow["egress"][1].name == "v.client3.nic1.egress"
    for res in (*client.flow["ingress"], *fabric.flow["egress"], *plain.flow["egress"]):
        assert infer_kind(res.name) == "nic"


def test_ports_in_parallel_are_the_nodes_aggregate() -> None:
    """A flow crosses every port with its share over the ports: capacity / weight = aggregate."""
    sim = Simulation(0)
    spec = _spec(4, egress_efficiency=0.8)
    nic = NicPorts(sim, "n", spec)
    path = nic.path("egress", 0.5)
    assert [w for _, w in path] == [0.125] * 4
    rates = [float(r.capacity_Bps or 0.0) / w for r, w in path]
    assert min(rates) == pytest.approx(spec.node_Bps("egress") / 0.5)


def test_a_request_takes_the_next_port_and_queues_there() -> None:
    """Round robin over the ports; a port busy with one request delays the next on it."""
    sim = Simulation(0)
    spec = _spec(2)
    nic = NicPorts(sim, "n", spec)
    size = 1e6
    service = nic.service_s("ingress", size)
    assert service == pytest.approx(size / 12.5e9)
    done = [nic.visit("ingress", size) for _ in range(3)]
    sim.env.run()
    assert [q.visits for q in nic.queues["ingress"]] == [2, 1]
    # Two ports in parallel: the third request waits for the first port.
    assert [ev.value for ev in done] == [None] * 3
    assert sim.env.now == pytest.approx(2 * service)
