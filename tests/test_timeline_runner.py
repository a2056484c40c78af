"""The timeline on a fake system: overlap, start, after, repeat, reset and events in time.

Every phase of :mod:`tests.timeline_fakes` moves its bytes through one 10 B/s
NIC, so the expected times are plain arithmetic.
"""

from __future__ import annotations

import warnings

import pytest

from flashsim.config import ModelWarning
from flashsim.engine.simulation import Simulation
from flashsim.timeline.scheduler import Scheduler, Task
from flashsim.timeline.timing import time_label
from tests.timeline_fakes import NIC_BPS, by_name, run_fake


def test_sequential_phases_run_one_after_the_other() -> None:
    result, _ = run_fake([{"name": "a"}, {"name": "b", "size_B": 50.0}])
    a, b = by_name(result)["a"], by_name(result)["b"]
    assert a.start_s == 0.0 and a.sim_time_s == pytest.approx(100 / NIC_BPS)
    assert b.start_s == pytest.approx(10.0) and b.bandwidth_Bps == pytest.approx(NIC_BPS)
    assert [p.name for p in result.phases] == ["a", "b"]
    assert a.start_state is not None and a.start_state["targets"] == 3


def test_overlapping_phases_share_the_bottleneck() -> None:
    """Two phases started together on one NIC each get half of it, and both take longer."""
    result, _ = run_fake([{"name": "a"}, {"name": "b", "start": "0 s"}])
    a, b = by_name(result)["a"], by_name(result)["b"]
    assert a.start_s == b.start_s == 0.0
    assert a.bandwidth_Bps == pytest.approx(NIC_BPS / 2)
    assert b.bandwidth_Bps == pytest.approx(NIC_BPS / 2)
    assert a.sim_time_s == pytest.approx(20.0)


def test_partial_overlap_slows_only_the_shared_interval() -> None:
    """b starts at 5 s: a moved 50 B alone, then both share; a ends at 15 s, b at 20 s."""
    result, _ = run_fake([{"name": "a"}, {"name": "b", "start": "5 s"}])
    a, b = by_name(result)["a"], by_name(result)["b"]
    assert b.start_s == pytest.approx(5.0)
    assert a.sim_time_s == pytest.approx(15.0)
    assert b.sim_time_s == pytest.approx(15.0)


def test_a_phase_with_start_begins_then_even_after_an_idle_gap() -> None:
    result, _ = run_fake([{"name": "a", "start": "30 s"}])
    assert result.phases[0].start_s == pytest.approx(30.0)
    assert result.phases[0].sim_time_s == pytest.approx(10.0)


def test_after_starts_at_the_named_phase_end() -> None:
    """c waits for a (not for b, the phase before it in the file)."""
    result, _ = run_fake(
        [
            {"name": "a", "size_B": 50.0},
            {"name": "b", "start": "100 s"},
            {"name": "c", "after": "a"},
        ]
    )
    got = by_name(result)
    assert got["c"].start_s == pytest.approx(5.0)
    assert got["b"].start_s == pytest.approx(100.0)
    assert [p.name for p in result.phases] == ["a", "c", "b"]  # in order of start


def test_repeat_names_each_run_by_its_start() -> None:
    result, _ = run_fake(
        [{"name": "probe", "size_B": 10.0, "repeat": {"every": "1 day", "until": "3 days"}}]
    )
    assert [p.name for p in result.phases] == ["probe@0s", "probe@1d", "probe@2d"]
    assert [p.start_s for p in result.phases] == [0.0, 86_400.0, 172_800.0]


def test_repeat_count_and_a_run_longer_than_the_period() -> None:
    """Runs of 10 s every 4 s: each starts when the one before ends (no self-overlap)."""
    result, _ = run_fake([{"name": "p", "repeat": {"every": "4 s", "count": 3}}])
    assert [p.start_s for p in result.phases] == pytest.approx([0.0, 10.0, 20.0])
    assert [p.name for p in result.phases] == ["p@0s", "p@10s", "p@20s"]


def test_a_phase_after_a_repeated_one_waits_for_its_last_run() -> None:
    result, _ = run_fake(
        [{"name": "p", "size_B": 10.0, "repeat": {"every": "5 s", "count": 2}}, {"name": "q"}]
    )
    assert by_name(result)["q"].start_s == pytest.approx(6.0)


def test_reset_gives_fresh_targets_before_the_phase() -> None:
    result, system = run_fake(
        [{"name": "a"}, {"name": "b", "reset": True}],
        [{"action": "fail-drive", "at": "1 s", "target": 1, "drive": 2}],
    )
    got = by_name(result)
    assert got["b"].start_state is not None
    assert got["b"].start_state["failed_drives"] == 0
    calls = [(t, c) for t, c, _ in system.targets[1].log]
    assert calls == [(1.0, "fail_drive"), (10.0, "reset")]


def test_start_state_records_a_failure_before_the_phase() -> None:
    result, _ = run_fake(
        [{"name": "a"}, {"name": "b"}],
        [{"action": "fail-drive", "at": "3 s", "target": 0, "drive": 1}],
    )
    got = by_name(result)
    assert got["a"].start_state is not None and got["b"].start_state is not None
    assert got["a"].start_state["failed_drives"] == 0
    assert got["b"].start_state["failed_drives"] == 1
    assert got["b"].start_state["degraded_targets"] == [0]


def test_events_fire_at_their_time_during_a_phase() -> None:
    _, system = run_fake(
        [{"name": "a"}],
        [
            {"name": "boom", "action": "fail-drive", "at": "4 s", "target": 2, "drive": 0},
            {
                "action": "replace-drive",
                "relative_to": "boom",
                "offset": "3 s",
                "target": 2,
                "drive": 0,
            },
            {"action": "trim", "relative_to": "a", "edge": "start", "offset": "1 s"},
        ],
    )
    assert system.targets[2].log == [
        (1.0, "trim", None),
        (4.0, "fail_drive", 0),
        (7.0, "replace_drive", 0),
    ]
    assert [(t, c) for t, c, _ in system.targets[0].log] == [(1.0, "trim")]
    assert sorted(system.targets) == [0, 1, 2]  # trim "all" built every target


def test_event_at_a_phase_end_fires_before_the_next_phase_starts() -> None:
    result, _ = run_fake(
        [{"name": "a"}, {"name": "b"}],
        [{"action": "fail-drive", "relative_to": "a", "edge": "end", "target": 0, "drive": 3}],
    )
    state = by_name(result)["b"].start_state
    assert state is not None and state["failed_drives"] == 1


def test_trim_policy_trims_periodically_while_phases_run() -> None:
    _, system = run_fake(
        [{"name": "a", "size_B": 250.0}],
        [{"action": "trim-policy", "at": "0 s", "every": "10 s", "targets": [1]}],
    )
    assert [t for t, c, _ in system.targets[1].log if c == "trim"] == [10.0, 20.0]


def test_set_capacity_halving_the_nic_mid_phase_lowers_its_bandwidth() -> None:
    """100 B at 10 B/s, halved at 5 s: 50 B then 50 B at 5 B/s, 15 s in all."""
    result, system = run_fake(
        [{"name": "a"}],
        [{"action": "set-capacity", "at": "5 s", "resource": "fake.n*", "factor": 0.5}],
    )
    assert result.phases[0].sim_time_s == pytest.approx(15.0)
    assert result.phases[0].bandwidth_Bps == pytest.approx(100 / 15)
    assert system.nic.capacity_Bps == pytest.approx(5.0)


def test_set_capacity_to_a_bandwidth() -> None:
    result, _ = run_fake(
        [{"name": "a"}],
        [{"action": "set-capacity", "at": "0 s", "resource": "fake.nic", "capacity": "20 B/s"}],
    )
    assert result.phases[0].sim_time_s == pytest.approx(5.0)


def test_reset_event_resets_the_built_targets() -> None:
    _, system = run_fake(
        [{"name": "a"}],
        [
            {"action": "fail-drive", "at": "1 s", "target": 0, "drive": 0},
            {"action": "reset", "at": "2 s"},
        ],
    )
    assert system.targets[0].log[-1] == (2.0, "reset", None)
    assert system.targets[0].failed == set()


def test_events_after_the_last_phase_never_fire_and_say_so() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, system = run_fake(
            [{"name": "a"}], [{"action": "fail-drive", "at": "1 h", "target": 0, "drive": 0}]
        )
    assert system.targets == {}
    messages = [str(w.message) for w in caught if issubclass(w.category, ModelWarning)]
    assert any("events.0" in m and "never fired" in m for m in messages)


def test_a_drive_index_the_target_refuses_names_the_event_key() -> None:
    from flashsim.config import ConfigError

    with pytest.raises(ConfigError) as err:
        run_fake([{"name": "a"}], [{"action": "fail-drive", "at": "1 s", "target": 0, "drive": 9}])
    assert err.value.key == "events.0.drive"
    assert err.value.value == 9


def test_phase_errors_propagate_out_of_their_greenlet() -> None:
    """A phase raising (here: a flow of zero bytes) fails the run as it would alone."""
    with pytest.raises(ValueError):
        run_fake([{"name": "a"}, {"name": "b", "start": "1 s", "size_B": -1.0}])


def test_scheduler_resumes_phases_in_clock_order() -> None:
    sim = Simulation(0)
    seen: list[tuple[str, float]] = []

    def body(label: str, waits: list[float]) -> None:
        for w in waits:
            sim.run(sim.now + w)
            seen.append((label, sim.now))

    sched = Scheduler(sim)
    sched.start(Task("x", lambda: body("x", [3.0, 3.0]), lambda _t: None))
    sched.start(Task("y", lambda: body("y", [2.0, 2.0, 2.0]), lambda _t: None))
    sched.run(lambda: False)
    assert seen == [("y", 2.0), ("x", 3.0), ("y", 4.0), ("x", 6.0), ("y", 6.0)]
    assert sim._scheduler is None
    sim.run(10.0)  # outside the timeline, run is the environment's again
    assert sim.now == 10.0


def test_until_in_the_past_is_refused_as_by_simpy() -> None:
    sim = Simulation(0)

    def body() -> None:
        sim.run(sim.now + 1.0)
        sim.run(0.5)

    sched = Scheduler(sim)
    sched.start(Task("x", body, lambda _t: None))
    with pytest.raises(ValueError, match="must be greater than the current simulation time"):
        sched.run(lambda: False)


@pytest.mark.parametrize(
    ("seconds", "label"),
    [
        (0.0, "0s"),
        (12.5, "12.5s"),
        (90.0, "90s"),
        (600.0, "10min"),
        (7200.0, "2h"),
        (7 * 86_400.0, "7d"),
        (1.5 * 86_400.0, "36h"),
    ],
)
def test_time_labels(seconds: float, label: str) -> None:
    assert time_label(seconds) == label


def test_an_event_error_mid_run_unwinds_every_phase() -> None:
    """Two phases live when an event fails: the error is reported, nothing runs on."""
    from flashsim.config import ConfigError

    with pytest.raises(ConfigError) as err:
        run_fake(
            [{"name": "a"}, {"name": "b", "start": "0 s", "size_B": 1000.0}],
            [{"action": "set-capacity", "at": "3 s", "resource": "nothing*", "factor": 2.0}],
        )
    assert err.value.key == "events.0.resource"


def test_labels_that_coincide_are_told_apart() -> None:
    """Runs 1 ms apart at 10^8 s: nine digits cannot tell them apart, a run number does."""
    result, _ = run_fake(
        [
            {
                "name": "p",
                "size_B": 1e-3,
                "start": "100000000 s",
                "repeat": {"every": "1 ms", "count": 3},
            }
        ]
    )
    assert [p.name for p in result.phases] == ["p@100000000s", "p@100000000s#1", "p@100000000s#2"]


def test_a_limit_reached_inside_overlapping_phases_stops_the_run_with_partial_results() -> None:
    """The watchdog's stop, raised in a phase's greenlet, ends the run as RunStopped."""
    from flashsim.scenario import RunLimits, RunStopped, run_loaded
    from tests.timeline_fakes import fake_scenario

    scenario, _ = fake_scenario([{"name": "a"}, {"name": "b", "start": "0 s"}])
    with pytest.raises(RunStopped) as stop:
        run_loaded(scenario, limits=RunLimits(max_memory_B=1.0))
    assert "--max-memory" in stop.value.reason
    assert stop.value.partial.phases == []


def test_a_failure_at_the_start_of_a_reset_phase_survives_the_reset() -> None:
    result, system = run_fake(
        [{"name": "a", "size_B": 10.0}, {"name": "b", "reset": True}],
        [
            {"action": "fail-drive", "at": "0.5 s", "target": 0, "drive": 2},
            {"action": "fail-drive", "relative_to": "b", "target": 0, "drive": 1},
        ],
    )
    assert system.targets[0].log == [
        (0.5, "fail_drive", 2),
        (1.0, "reset", None),
        (1.0, "fail_drive", 1),
    ]
    assert system.targets[0].failed == {1}
    state = by_name(result)["b"].start_state
    assert state is not None and state["failed_drives"] == 1
