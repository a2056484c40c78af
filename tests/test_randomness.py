"""Seeded streams: reproducible and independent of other components."""

from __future__ import annotations

import numpy as np
import pytest

from flashsim.engine.randomness import RandomStreams
from flashsim.scenario import run_scenario


def test_same_seed_same_draws() -> None:
    a = RandomStreams(42).stream("perlmutter.oss17.ssd3").random(10)
    b = RandomStreams(42).stream("perlmutter.oss17.ssd3").random(10)
    assert np.array_equal(a, b)


def test_different_seed_or_name_differs() -> None:
    base = RandomStreams(42).stream("x").random(4)
    assert not np.array_equal(base, RandomStreams(43).stream("x").random(4))
    assert not np.array_equal(base, RandomStreams(42).stream("y").random(4))


def test_adding_a_component_does_not_shift_other_streams() -> None:
    lone = RandomStreams(7)
    crowded = RandomStreams(7)
    crowded.stream("new.component").random(1000)
    assert np.array_equal(lone.stream("ssd0").random(8), crowded.stream("ssd0").random(8))


def test_negative_seed_refused() -> None:
    with pytest.raises(ValueError, match="seed"):
        RandomStreams(-1)


def test_request_fidelity_run_is_bit_identical_for_a_seed(root) -> None:
    over = {"fidelity": '"request"', "seed": "9"}
    a = run_scenario(root / "scenarios/examples/pipeline-streams.toml", over)
    b = run_scenario(root / "scenarios/examples/pipeline-streams.toml", over)
    assert [p.to_dict() for p in a.phases] == [p.to_dict() for p in b.phases]
    c = run_scenario(root / "scenarios/examples/pipeline-streams.toml", {**over, "seed": "10"})
    assert [p.bandwidth_Bps for p in a.phases] != [p.bandwidth_Bps for p in c.phases]
