"""A small fake system for the timeline tests: one NIC resource and stateful fake targets.

Each phase moves ``size_B`` bytes through the NIC (10 B/s) as one flow, so a
phase alone takes ``size_B / 10`` s and two phases at once share the NIC.
The targets log every call of the :class:`StatefulTarget` interface with the
simulated time, so a test sees when an event reached them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import simpy

from flashsim.components.target_state import StatefulTarget, TargetStatus
from flashsim.config import validate
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult, RunResult
from flashsim.scenario import LoadedModel, LoadedScenario, ScenarioFile, run_loaded
from flashsim.systems.base import BuiltSystem, Description
from flashsim.timeline.events import load_events
from flashsim.timeline.timing import TimedPhase, check_order, split_timing

#: Capacity of the fake NIC (bytes/s).
NIC_BPS = 10.0
#: Drives in each fake target.
DRIVES = 4
PATH = Path("fake-scenario.toml")


@dataclass(frozen=True)
class FakePhase:
    """A phase of the fake system: ``size_B`` bytes through the NIC."""

    name: str
    size_B: float = 100.0


class FakeTarget:
    """A target that logs (time, call, argument) of every interface call."""

    def __init__(self, sim: Simulation, name: str) -> None:
        self.sim = sim
        self.name = name
        self.log: list[tuple[float, str, Any]] = []
        self.failed: set[int] = set()

    def status(self) -> TargetStatus:
        return TargetStatus(self.name, failed_drives=tuple(sorted(self.failed)))

    def fail_drive(self, drive: int) -> None:
        if not 0 <= drive < DRIVES:
            raise ValueError(f"drive: index {drive} is outside 0..{DRIVES - 1}")
        self.failed.add(drive)
        self.log.append((self.sim.now, "fail_drive", drive))

    def replace_drive(self, drive: int) -> None:
        self.failed.discard(drive)
        self.log.append((self.sim.now, "replace_drive", drive))

    def trim(self) -> simpy.Event:
        self.log.append((self.sim.now, "trim", None))
        return self.sim.env.timeout(1.0, value=1.0)

    def age(self, host_B: float) -> None:
        self.log.append((self.sim.now, "age", host_B))

    def reset(self) -> None:
        self.failed.clear()
        self.log.append((self.sim.now, "reset", None))


class FakeSystem(BuiltSystem):
    """One NIC, ``targets`` fake targets built on first use."""

    def __init__(self, sim: Simulation, targets: int = 3) -> None:
        super().__init__(sim, "flow")
        self.nic = sim.flows.add_resource("fake.nic", NIC_BPS)
        self.count = targets
        self.targets: dict[int, FakeTarget] = {}

    def run_phase(self, phase: Any) -> PhaseResult:
        t0 = self.sim.now
        flow = self.sim.flows.start_flow(phase.size_B, [(self.nic, 1.0)], name=phase.name)
        self.sim.run(flow.done)
        took = self.sim.now - t0
        return PhaseResult(
            name=phase.name,
            operation="write",
            bandwidth_Bps=phase.size_B / took,
            iops=0.0,
            ranks=1,
            transfer_size_B=phase.size_B,
            sim_time_s=took,
            bytes_B=phase.size_B,
        )

    def target_count(self) -> int:
        return self.count

    def target(self, index: int) -> StatefulTarget:
        if not 0 <= index < self.count:
            raise ValueError(f"target: index {index} is outside 0..{self.count - 1}")
        if index not in self.targets:
            self.targets[index] = FakeTarget(self.sim, f"fake.t{index}")
        return self.targets[index]

    def built_targets(self) -> list[tuple[int, StatefulTarget]]:
        return sorted(self.targets.items())


class FakeKind:
    """Builds a :class:`FakeSystem` and remembers it for the test."""

    def __init__(self) -> None:
        self.built: FakeSystem | None = None

    def build(self, model: Any, sim: Simulation, fidelity: str) -> FakeSystem:
        self.built = FakeSystem(sim)
        return self.built

    def describe(self, model: Any) -> Description:  # pragma: no cover - unused
        raise NotImplementedError


def fake_scenario(
    phases: list[dict[str, Any]], events: list[dict[str, Any]] | None = None
) -> tuple[LoadedScenario, FakeKind]:
    """A loaded scenario of fake phases (``name``, ``size_B`` and timing keys)."""
    kind = FakeKind()
    spec = validate(
        ScenarioFile,
        {"name": "fake", "system": "none.toml", "phases": phases, "events": events or []},
        PATH,
    )
    timed = []
    for i, raw in enumerate(phases):
        rest, timing = split_timing(raw, PATH, i)
        phase = FakePhase(**rest)
        timed.append(TimedPhase(i, phase.name, phase, timing))
    check_order(PATH, timed)
    loaded_events = load_events(spec.events, PATH, [t.name for t in timed])
    model = LoadedModel(PATH, kind, None)  # type: ignore[arg-type]
    scenario = LoadedScenario(PATH, spec, model, [t.phase for t in timed], timed, loaded_events)
    return scenario, kind


def run_fake(
    phases: list[dict[str, Any]], events: list[dict[str, Any]] | None = None
) -> tuple[RunResult, FakeSystem]:
    """Run fake phases and events; the result and the system they ran on."""
    scenario, kind = fake_scenario(phases, events)
    result = run_loaded(scenario)
    assert kind.built is not None
    return result, kind.built


def by_name(result: RunResult) -> dict[str, PhaseResult]:
    """The phase results by name."""
    return {p.name: p for p in result.phases}
