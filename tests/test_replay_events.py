"""A flow-fidelity call costs its think time and its flow, not a process and two events more.

A replayed rank is a callback state machine (``_FlowRank``); when nothing
else is due at the instant, a call's start is solved at once rather than by
the network's zero-delay event (:meth:`FlowNetwork.nothing_else_due`) and its
completion calls the rank back directly rather than through a ``done`` event
(:meth:`FlowNetwork.when_done`): the same steps at the same points of the
event order, so the times are the ones the event paths give, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import simpy

from flashsim.engine.flows import Flow, FlowNetwork
from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_system_model
from flashsim.workloads.replay import JobEngine, JobTimes, PlacedJob
from flashsim.workloads.trace import JobTrace, OpTable, TraceFile, records_frame
from tests.cli_helpers import ROOT

PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"


def synthetic_trace(
    name: str,
    rank: np.ndarray,
    write: np.ndarray,
    offset: np.ndarray,
    size: np.ndarray,
    start: np.ndarray,
) -> JobTrace:
    """A checked DXT trace of one Lustre file (4 stripes of 1 MiB): call ``i`` is rank
    ``rank[i]``'s read or write (``write[i]``) of ``size[i]`` bytes at ``offset[i]`` from
    ``start[i]`` for 1 ms; each rank's POSIX record counts its calls and bytes."""
    n = len(rank)
    ranks = int(rank.max()) + 1
    ops = OpTable(
        rank=rank,
        file=np.zeros(n, dtype=np.int64),
        record=rank.copy(),
        write=write,
        offset_B=offset,
        size_B=size,
        start_s=start,
        end_s=start + 1e-3,
    )
    rows = [
        {"module": "POSIX", "file": 0, "rank": r,
         "reads": int((~write[rank == r]).sum()), "writes": int(write[rank == r].sum()),
         "bytes_read": float(size[(rank == r) & ~write].sum()),
         "bytes_written": float(size[(rank == r) & write].sum())}
        for r in range(ranks)
    ]  # fmt: skip
    data = TraceFile("data", "lustre", 4, 1048576.0, (0, 1, 2, 3))
    trace = JobTrace(
        name, "synthetic", ranks, float(start.max() + 1e-3), (data,),
        records_frame(rows), ops, timing="dxt",
    )  # fmt: skip
    trace.check()
    return trace


def mixed_trace(ranks: int, calls: int, seed: int) -> JobTrace:
    """``ranks`` ranks of ``calls`` calls each: random reads and writes, some contiguous.

    Think times are drawn from a few round values (0 and 2-4 ms), so that calls of
    different ranks start at the same instants; writes are large enough to leave
    bytes behind in the dirty budget, and some reads re-read what the rank wrote.
    """
    rng = np.random.default_rng(seed)
    n = ranks * calls
    rank = np.repeat(np.arange(ranks, dtype=np.int64), calls)
    write = rng.random(n) < 0.5
    size = rng.choice([4096.0, 1048576.0, 64 * 1048576.0], n)
    offset = np.floor(rng.uniform(0.0, 64.0, n)) * 64 * 1048576.0
    contiguous = rng.random(n) < 0.3
    gap = rng.choice([0.0, 2e-3, 3e-3, 4e-3], (ranks, calls))
    start = np.cumsum(gap + 1e-3, axis=1).ravel()
    for i in np.flatnonzero(contiguous[1:]) + 1:
        if rank[i] == rank[i - 1]:
            offset[i] = offset[i - 1] + size[i - 1]
    return synthetic_trace("mixed", rank, write, offset, size, start)


def replay(trace: JobTrace, ranks_per_node: int, **job: Any) -> tuple[JobTimes, Simulation]:
    """Replay ``trace`` on Perlmutter in flow fidelity."""
    loaded = load_system_model(PERLMUTTER)
    sim = Simulation(0)
    system = loaded.kind.build(loaded.model, sim, "flow")
    (times,) = JobEngine(system, "flow").run(
        [PlacedJob("j", trace, ranks_per_node=ranks_per_node, **job)]
    )
    return times, sim


def test_a_call_costs_its_think_time_and_its_flow_not_a_process_and_two_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Reads with random think times: per call, the think time's timeout and the
    # completion timers of its start and end; no process resumed, no zero-delay
    # solve event and no done event (before: 5 events a call).
    scheduled = [0]
    original = simpy.Environment.schedule

    def counting(self: simpy.Environment, *args: Any, **kwargs: Any) -> None:
        scheduled[0] += 1
        original(self, *args, **kwargs)

    monkeypatch.setattr(simpy.Environment, "schedule", counting)
    rng = np.random.default_rng(5)
    ranks, calls = 8, 40
    n = ranks * calls
    rank = np.repeat(np.arange(ranks, dtype=np.int64), calls)
    start = (np.cumsum(rng.exponential(2e-3, (ranks, calls)) + 3e-3, axis=1) - 1e-3).ravel()
    offset = np.floor(rng.uniform(0.0, 1e4, n)) * 1048576.0
    write = np.zeros(n, dtype=bool)
    trace = synthetic_trace("reads", rank, write, offset, np.full(n, 1048576.0), start)
    times, _sim = replay(trace, 4)
    assert np.isfinite(times.end_s).all()
    assert len(times.transfers) == n
    assert scheduled[0] <= 3 * n + 4 * ranks + 20


@pytest.mark.parametrize("seed", [1, 2])
def test_direct_calls_give_the_times_of_the_event_paths(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    # Ties (ranks starting calls at the same instants, zero think times, merged calls),
    # write-back, page-cache hits: the direct paths take the same steps in the same
    # order as the events they save, so every time is the same to the bit.
    trace = mixed_trace(12, 25, seed)
    direct_taken = [0]
    original = FlowNetwork.nothing_else_due

    def counting(self: FlowNetwork) -> bool:
        alone = original(self)
        direct_taken[0] += alone
        return alone

    monkeypatch.setattr(FlowNetwork, "nothing_else_due", counting)
    direct, sim_a = replay(trace, 4)
    monkeypatch.setattr(FlowNetwork, "nothing_else_due", lambda self: False)
    events, sim_b = replay(trace, 4)
    assert direct_taken[0] > 0
    assert np.isfinite(direct.end_s).all()
    for name in ("start_s", "end_s", "server_end_s", "rank_end_s"):
        np.testing.assert_array_equal(getattr(direct, name), getattr(events, name))
    assert sim_a.now == sim_b.now
    assert sim_a.flows.stats == sim_b.flows.stats


def test_a_lazy_flow_calls_its_waiter_back_and_its_done_event_follows() -> None:
    env = simpy.Environment()
    net = FlowNetwork(env)
    link = net.add_resource("link", capacity_Bps=10.0)
    ended: list[tuple[str, float]] = []

    def back(flow: Flow) -> None:
        ended.append((flow.name, float(env.now)))

    a = net.start_flow(10.0, [(link, 1.0)], name="a", lazy_done=True)
    net.when_done(a, back)
    b = net.start_flow(30.0, [(link, 1.0)], name="b", lazy_done=True)
    b_done = b.done  # asked for before it ends: an ordinary event
    net.when_done(b, back)
    c = net.start_flow(50.0, [(link, 1.0)], name="c", lazy_done=True)
    net.cancel_flow(c)
    env.run()
    assert ended == [("a", pytest.approx(2.0)), ("b", pytest.approx(4.0))]
    assert a.end_s == pytest.approx(2.0) and b.end_s == pytest.approx(4.0)
    assert a._done is None  # no event was made for a
    assert a.done.triggered and a.done.value is a  # asked for afterwards: it has succeeded
    assert b_done.processed and b_done.value is b
    assert not c.done.triggered  # a cancelled flow's done event never triggers


def test_a_waiter_goes_through_the_event_when_something_else_is_due_then() -> None:
    # Another event due at the completion instant: the waiter runs after it, as it
    # would have through the done event.
    env = simpy.Environment()
    net = FlowNetwork(env)
    link = net.add_resource("link", capacity_Bps=10.0)
    order: list[str] = []
    flow = net.start_flow(10.0, [(link, 1.0)], name="f", lazy_done=True)
    net.when_done(flow, lambda f: order.append("waiter"))

    def other() -> Any:
        yield env.timeout(0.5)
        # due at the completion instant (1 s), scheduled before the completion
        env.timeout(0.5).callbacks.append(lambda e: order.append("other"))

    env.process(other())
    env.run()
    assert order == ["other", "waiter"]
    assert flow._done is not None and flow._done.processed


def test_a_rank_looks_a_calls_kind_up_only_when_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # A call of the same kind as the rank's previous one reuses its access and stream;
    # every call still runs on the access and stream the first call of its kind got.
    trace = mixed_trace(6, 25, 3)
    looked: list[int] = []
    started: dict[int, tuple[Any, Any]] = {}
    kind_of = JobEngine._kind
    start = JobEngine._start

    def counting(self: JobEngine, times: JobTimes, node: int, k: int, *args: Any) -> Any:
        looked.append(k)
        return kind_of(self, times, node, k, *args)

    def recording(
        self: JobEngine, times: JobTimes, rank: int, k: int, t0: float, access: Any, stream: Any,
        *args: Any, **kwargs: Any,
    ) -> Flow:  # fmt: skip
        started.setdefault(k, (access, stream))
        return start(self, times, rank, k, t0, access, stream, *args, **kwargs)

    monkeypatch.setattr(JobEngine, "_kind", counting)
    monkeypatch.setattr(JobEngine, "_start", recording)
    times, _sim = replay(trace, 4)
    tr = times.transfers
    first: dict[tuple[Any, ...], tuple[Any, Any]] = {}
    issued = 0
    previous: tuple[Any, ...] | None = None
    changes = 0
    for k in range(len(tr)):
        if not (tr.size_B[k] > 0 and not tr.cached[k]):
            continue
        kind = (int(tr.rank[k]), int(tr.file[k]), int(tr.record[k]), bool(tr.write[k]),
                bool(tr.sequential[k]), int(tr.calls[k]), float(tr.size_B[k]))  # fmt: skip
        changes += kind != previous
        previous = kind
        issued += 1
        assert started[k][0] is first.setdefault(kind, started[k])[0]
        assert started[k][1] is first[kind][1]
    assert issued == len(started)
    assert len(looked) == changes < issued
