"""A class event checks what it can have changed, not everything its class touches (issue 20).

The class fast path of :class:`~flashsim.engine.flows.FlowNetwork` re-checks,
after a flow starts or ends, that the bottleneck structure still holds.  A
500k-call replay spent most of its time re-checking things the event could not
have broken; these tests pin the cuts (each would fail without it) and that
every rate still equals a from-scratch max-min solve:

* a class that rises checks only the segments it shares, has no guard for,
  or whose guard level it passed, not every segment it uses;
* a flow's leave only lowers loads, so its constraints keep their escrow
  thresholds (nothing is re-derived when nothing is crossed);
* constraints tied with the class's bottleneck (parallel links of one route)
  are checked directly, not by a new threshold entry on every event;
* ``start_flow`` remembers a path tuple's checked entries, and still refuses
  a bad path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import simpy
from flow_helpers import matches_full_solve

from flashsim.engine.flowclasses import own_entries
from flashsim.engine.flows import FlowNetwork, Resource


def _count_calls(net: FlowNetwork, method: str) -> list[int]:
    """Wrap ``net.<method>`` so that each call adds one to the returned counter."""
    counter = [0]
    inner: Callable[..., Any] = getattr(net, method)

    def counted(*args: Any) -> Any:
        counter[0] += 1
        return inner(*args)

    setattr(net, method, counted)
    return counter


def _nodes_on_a_fabric(nodes: int) -> tuple[FlowNetwork, Resource, list[Any]]:
    """``nodes`` client nodes, each with its own segment (two fast ports), behind one
    100 B/s fabric link, the bottleneck of every flow."""
    net = FlowNetwork(simpy.Environment())
    fabric = net.add_resource("fabric", capacity_Bps=100.0)
    segments = []
    for i in range(nodes):
        ports = [net.add_resource(f"node{i}.port{j}", capacity_Bps=1e6) for j in range(2)]
        segments.append(net.add_segment(f"node{i}.osc", [(p, 0.5) for p in ports]))
    return net, fabric, segments


def test_a_rising_class_rechecks_only_the_segments_it_may_overload() -> None:
    """40 nodes' flows share the fabric's class; each leave raises its level.  The
    first rise checks every segment once (none has a guard yet), the next ones at most
    the one the previous event touched (each other one's guard level is far above):
    before, every rise checked all 40 segments of the class."""
    nodes = 40
    net, fabric, segments = _nodes_on_a_fabric(nodes)
    flows = []
    for seg in segments:
        for _ in range(2):
            flows.append(net.start_flow(1e12, ((fabric, 1.0), (seg, 1.0))))
            net.solve_now()  # one class event per start
    assert net.stats["full_solves"] == 0 and len(net._classes) == 1

    def checks_in(event: Callable[[], Any]) -> int:
        before = net.stats["segment_checks"]
        event()
        net.solve_now()
        assert matches_full_solve(net)
        return net.stats["segment_checks"] - before

    # The first rise: no segment had a guard.
    assert checks_in(lambda: net.cancel_flow(flows.pop())) == nodes
    for _ in range(5):
        # The leave lowered its segment's rate; the others pass their guards.
        assert checks_in(lambda: net.cancel_flow(flows.pop(0))) <= 1
    # A join raises a segment's rate: that one segment is checked.
    flow = ((fabric, 1.0), (segments[3], 1.0))
    assert checks_in(lambda: flows.append(net.start_flow(1e12, flow))) == 1


def test_a_guard_is_passed_when_a_segment_nears_its_limit() -> None:
    """A node whose ports are barely faster than its share of the fabric: once enough
    flows leave, the class's rise passes that segment's guard, the segment is checked,
    and its port becomes the bottleneck of its flows (the repair runs): the rates stay
    a full solve's."""
    net = FlowNetwork(simpy.Environment())
    fabric = net.add_resource("fabric", capacity_Bps=100.0)
    slow = [net.add_resource(f"slow.port{j}", capacity_Bps=6.0) for j in range(2)]
    slow_seg = net.add_segment("slow.osc", [(p, 0.5) for p in slow])
    fast = [net.add_resource(f"fast{j}", capacity_Bps=1e6) for j in range(2)]
    fast_seg = net.add_segment("fast.osc", [(p, 0.5) for p in fast])
    flows = [net.start_flow(1e12, ((fabric, 1.0), (fast_seg, 1.0))) for _ in range(30)]
    net.solve_now()
    slow_flow = net.start_flow(1e12, ((fabric, 1.0), (slow_seg, 1.0)))
    net.solve_now()
    assert matches_full_solve(net)
    while flows:
        net.cancel_flow(flows.pop())
        net.solve_now()
        assert matches_full_solve(net)
    assert slow_flow.rate_Bps == pytest.approx(12.0)  # 6 B/s per port at weight 1/2


def test_a_leave_re_derives_no_threshold() -> None:
    """Flows through private NICs into one bottleneck link: a flow's end raises the
    others' level but crosses no threshold, so no constraint is re-derived (before,
    its NIC and the link were, on every end)."""
    net = FlowNetwork(simpy.Environment())
    link = net.add_resource("link", capacity_Bps=100.0)
    nics = [net.add_resource(f"nic{i}", capacity_Bps=1e6) for i in range(10)]
    flows = []
    for nic in nics:
        flows.append(net.start_flow(1e12, ((nic, 1.0), (link, 1.0))))
        net.solve_now()
    refreshes = _count_calls(net, "_refresh_constraint")
    for _ in range(5):
        refreshes[0] = 0
        net.cancel_flow(flows.pop())
        net.solve_now()
        assert refreshes[0] == 0
        assert matches_full_solve(net)


def test_tied_links_add_no_threshold_entries_per_event() -> None:
    """Each flow crosses four parallel 100 B/s links with weight 1/4 (a route striped
    over four I/O groups): the first is the class's bottleneck, the other three are
    tied with it.  After 300 starts and ends the class's threshold heap holds no entry
    for a tied link (before, each event pushed one for each), and stale entries are
    dropped as it grows (it stays within a few per constraint the class crosses)."""
    net = FlowNetwork(simpy.Environment())
    links = [net.add_resource(f"link{j}", capacity_Bps=100.0) for j in range(4)]
    nics = [net.add_resource(f"nic{i}", capacity_Bps=1e6) for i in range(20)]
    route = tuple((link, 0.25) for link in links)
    flows = []
    for i in range(150):
        flows.append(net.start_flow(1e12, ((nics[i % 20], 1.0), *route)))
        net.solve_now()
        if len(flows) > 40:
            net.cancel_flow(flows.pop(0))
            net.solve_now()
        assert matches_full_solve(net)
    (cls,) = net._classes.values()
    assert cls.con == links[0]._con_bytes
    tied = {link._con_bytes for link in links[1:]}
    assert tied <= cls.near
    assert not [entry for entry in cls.thr if entry[1] in tied]
    assert len(cls.thr) <= 4 * len(cls.w) + 64


def test_start_flow_remembers_a_path_but_still_checks_it() -> None:
    """The same path tuple started twice gives the same entries as a fresh list; a
    path crossing an operation-limited resource without ``op_size_B`` is refused even
    after the same tuple was started with one; a bad weight is refused."""
    net = FlowNetwork(simpy.Environment())
    disk = net.add_resource("disk", capacity_Bps=100.0, capacity_ops=10.0)
    nic = net.add_resource("nic", capacity_Bps=50.0)
    path = ((nic, 1.0), (disk, 2.0))
    a = net.start_flow(100.0, path, op_size_B=4.0)
    b = net.start_flow(100.0, path, op_size_B=4.0)
    c = net.start_flow(100.0, list(path), op_size_B=4.0)
    specs = [spec for f in (a, b, c) if (spec := net._spec[f._slot]) is not None]
    assert len(specs) == 3
    # the same entries; the own pairs are kept zipped for the tuple (used again) alone
    assert specs[0] == specs[1] and specs[0][:6] == specs[2][:6]
    assert specs[0][6] is not None and specs[2][6] is None
    pairs = list(zip(specs[0][0], specs[0][1], strict=True))
    assert [list(own_entries(spec)) for spec in specs] == [pairs] * 3
    with pytest.raises(ValueError, match="op_size_B must be given"):
        net.start_flow(100.0, path)
    d = net.start_flow(100.0, path, op_size_B=8.0)  # another op size: other coefficients
    assert net._spec[d._slot][1] == (1.0, 2.0, 2.0 / 8.0)
    with pytest.raises(ValueError, match="weight"):
        net.start_flow(100.0, ((nic, 0.0),))
    net.solve_now()
    assert matches_full_solve(net)
