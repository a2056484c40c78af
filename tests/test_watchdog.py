"""The run watchdog (``--max-wall``/``--max-memory``): once tripped, it raises until taken.

A limit is raised from a ``SIGALRM`` handler; Python swallows an exception
raised inside a gc callback or a finaliser, so a tripped watchdog re-arms its
timer every ``RETRY_S`` and raises again at each signal until the run stops
it, never inside a garbage collection nor in the frames that take the stop.
The handler is called directly here: the timer and the handler's
installation are recorded, not made, so no real signal lands in a test.
"""

from __future__ import annotations

import signal
import sys
import time

import pytest

from flashsim.scenario import RETRY_S, RunLimits, _LimitReached, _Watchdog, run_loaded

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no interval timer")


@pytest.fixture(autouse=True)
def timer(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float]]:
    """The intervals the watchdog arms its timer with, in order (no real timer)."""
    armed: list[tuple[float, float]] = []
    monkeypatch.setattr(
        signal, "setitimer", lambda which, first, every=0.0: armed.append((first, every))
    )
    monkeypatch.setattr(signal, "signal", lambda signum, handler: None)
    return armed


def tripped_dog() -> _Watchdog:
    """A watchdog whose one-second wall limit has passed (it started 10 s ago)."""
    return _Watchdog(RunLimits(max_wall_s=1.0), time.perf_counter() - 10.0)


def test_a_tripped_watchdog_retries_quickly_and_keeps_raising_until_stopped(
    timer: list[tuple[float, float]],
) -> None:
    with tripped_dog() as dog:
        assert dog.active
        frame = sys._getframe()
        with pytest.raises(_LimitReached, match="exceeded --max-wall 1 s") as first:
            dog._on_timer(signal.SIGALRM, frame)
        assert timer == [(0.1, 0.1), (RETRY_S, RETRY_S)]  # now every RETRY_S, not 0.1 s
        for _ in range(3):  # say the exception was swallowed: it comes again, unchanged
            with pytest.raises(_LimitReached) as again:
                dog._on_timer(signal.SIGALRM, frame)
            assert str(again.value) == str(first.value)
        with pytest.raises(_LimitReached):  # and between phases
            dog.check()
        dog.stop()
        dog._on_timer(signal.SIGALRM, frame)  # taken: nothing more
        assert timer[-1] == (0.0, 0.0)


def test_a_signal_during_a_garbage_collection_waits_for_its_end() -> None:
    with tripped_dog() as dog:
        frame = sys._getframe()
        dog._on_gc("start", {"generation": 2})
        dog._on_timer(signal.SIGALRM, frame)  # would be swallowed: not raised now
        assert dog.tripped is not None
        dog._on_gc("stop", {"generation": 2})
        with pytest.raises(_LimitReached):
            dog._on_timer(signal.SIGALRM, frame)


def test_a_signal_in_the_frame_taking_the_stop_does_not_raise() -> None:
    with tripped_dog() as dog:
        taking = type("Frame", (), {"f_code": run_loaded.__code__})()
        dog._on_timer(signal.SIGALRM, taking)  # type: ignore[arg-type]
        assert dog.tripped is not None


def test_within_its_limits_the_watchdog_is_silent(timer: list[tuple[float, float]]) -> None:
    with _Watchdog(RunLimits(max_wall_s=3600.0), time.perf_counter()) as dog:
        dog._on_timer(signal.SIGALRM, sys._getframe())
        dog.check()
        assert dog.tripped is None
    assert timer == [(0.1, 0.1), (0.0, 0.0)]
