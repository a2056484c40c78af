"""The simulation context: a SimPy environment, its random streams and flow network."""

from __future__ import annotations

import numpy as np
import simpy

from flashsim.engine.flows import FlowNetwork
from flashsim.engine.randomness import RandomStreams


class Simulation:
    """One simulated run: clock, seeded random streams and the flow network.

    Parameters
    ----------
    seed : int
        Seed from which every component stream is derived.

    Attributes
    ----------
    env : simpy.Environment
        The event loop; ``env.now`` is simulated time in seconds.
    flows : FlowNetwork
        Resources and flows of flow fidelity.
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.env = simpy.Environment()
        self._streams = RandomStreams(seed)
        self.flows = FlowNetwork(self.env)

    @property
    def now(self) -> float:
        """Simulated time in seconds."""
        return float(self.env.now)

    def rng(self, name: str) -> np.random.Generator:
        """The random stream of component ``name`` (see :class:`RandomStreams`)."""
        return self._streams.stream(name)

    def run(self, until: float | simpy.Event | None = None) -> None:
        """Run the event loop until a time (s), an event, or no events remain."""
        self.env.run(until=until)
