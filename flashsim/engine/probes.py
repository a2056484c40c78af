"""Probes: time series of resource throughput and utilisation for plots.

A :class:`ThroughputProbe` samples the bytes that have crossed each watched
resource every ``interval_s`` seconds of simulated time and turns the
differences into average throughputs per interval.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy

if TYPE_CHECKING:  # pandas is imported where a frame is built, not at start-up
    import pandas as pd

from flashsim.engine.flows import FlowNetwork, Resource


class ThroughputProbe:
    """Periodic throughput samples of flow-fidelity resources.

    Parameters
    ----------
    network : FlowNetwork
        The network the resources belong to.
    resources : sequence of Resource
        What to watch (their bandwidth constraints).
    interval_s : float
        Sampling period in simulated seconds (> 0).
    """

    def __init__(
        self, network: FlowNetwork, resources: Sequence[Resource], interval_s: float
    ) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s(={interval_s}) must be > 0")
        self.network = network
        self.resources = list(resources)
        self.interval_s = interval_s
        self._times: list[float] = []
        self._bytes: list[list[float]] = []
        self._stop = network.env.event()
        self.process = network.env.process(self._run())

    def _sample(self) -> None:
        self._times.append(float(self.network.env.now))
        self._bytes.append([self.network.bytes_moved(r) for r in self.resources])

    def _run(self) -> Generator[simpy.Event, Any, None]:
        self._sample()
        while not self._stop.triggered:
            yield self.network.env.timeout(self.interval_s) | self._stop
            self._sample()

    def stop(self) -> None:
        """Stop sampling (takes a last sample now)."""
        if not self._stop.triggered:
            self._stop.succeed()

    def to_dataframe(self) -> pd.DataFrame:
        """Long table: ``time_s`` (interval end), ``resource``, ``throughput_Bps``."""
        import pandas as pd

        if len(self._times) < 2:
            return pd.DataFrame(columns=["time_s", "resource", "throughput_Bps"])
        t = np.asarray(self._times)
        b = np.asarray(self._bytes)
        dt = np.diff(t)
        keep = dt > 0
        rates = np.diff(b, axis=0)[keep] / dt[keep, None]
        ends = t[1:][keep]
        return pd.DataFrame(
            {
                "time_s": np.repeat(ends, len(self.resources)),
                "resource": [r.name for r in self.resources] * len(ends),
                "throughput_Bps": rates.reshape(-1),
            }
        )
