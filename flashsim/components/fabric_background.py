"""Background traffic on a fabric: the flows other jobs put on its links, and their load.

A :class:`~flashsim.components.fabric.Fabric` starts one rate-capped flow per
group pair of each background job of its spec
(:class:`~flashsim.components.fabric_spec.BackgroundJobSpec`) and keeps them
in a :class:`BackgroundTraffic`, which tells the UGAL plan the load they offer
on each bundle (:meth:`BackgroundTraffic.load_Bps`).
"""

from __future__ import annotations

from collections.abc import Sequence

from flashsim.engine.flows import Flow, Resource
from flashsim.engine.simulation import Simulation

#: Duration (s) at its rate cap of a background flow given no volume: far beyond any run.
FOREVER_S = 1e9
#: Sweeps and tolerance of the UGAL plan that routes the background jobs: their split to
#: 0.1 % is plenty, and 552 overloaded compute pairs take ~1 s so, ~20 s at the I/O plan's 1e-6.
PLAN_ROUNDS = 10
PLAN_TOL = 1e-3


class BackgroundTraffic:
    """The background flows a fabric has started and the load they offer.

    Parameters
    ----------
    sim : Simulation
        The simulation whose flow network carries the flows.
    name : str
        Dotted name of the fabric; flows are named ``f"{name}.background.{label}"``.
    """

    def __init__(self, sim: Simulation, name: str) -> None:
        self.sim = sim
        self.name = name
        #: Each flow, its offered rate (bytes/s) and the bytes it puts on each bundle per byte.
        self.started: list[tuple[Flow, float, dict[str, float]]] = []
        #: The flows started under each label (:meth:`Fabric.start_background_jobs`).
        self.by_label: dict[str, list[Flow]] = {}

    def start(
        self,
        path: Sequence[tuple[Resource, float]],
        rate_Bps: float,
        volume_B: float | None,
        streams: float,
        label: str,
    ) -> Flow:
        """Start one flow along ``path`` capped at ``rate_Bps`` with priority ``streams``.

        Parameters
        ----------
        path : sequence of (Resource, float)
            The bundles crossed and the bytes on each per byte (a fabric path).
        rate_Bps : float
            Offered rate in bytes/s (> 0).
        volume_B : float or None
            Bytes to move; ``None``: :data:`FOREVER_S` at the offered rate.
        streams : float
            Max-min priority at a shared bottleneck (> 0).
        label : str
            Last part of the flow's name, e.g. ``alltoall.compute0-compute1``.
        """
        size = rate_Bps * FOREVER_S if volume_B is None else volume_B
        flow = self.sim.flows.start_flow(
            size,
            path,
            rate_cap_Bps=rate_Bps,
            priority=streams,
            name=f"{self.name}.background.{label}",
            cap_label="offered load: fabric background traffic",
        )
        self.started.append((flow, rate_Bps, {res.name: w for res, w in path}))
        return flow

    def stop(self, label: str) -> int:
        """Cancel the flows started under ``label`` (still running); return how many there were."""
        flows = self.by_label.pop(label, [])
        gone = {id(f) for f in flows}
        for flow in flows:
            if flow.remaining_B > 0:
                self.sim.flows.cancel_flow(flow)
        self.started = [entry for entry in self.started if id(entry[0]) not in gone]
        return len(flows)

    def load_Bps(self) -> dict[str, float]:
        """Offered load (bytes/s) of the flows still running, per bundle name."""
        load: dict[str, float] = {}
        for flow, rate, weights in self.started:
            if flow.remaining_B > 0:
                for name, w in weights.items():
                    load[name] = load.get(name, 0.0) + rate * w
        return load

    def note(self) -> str:
        """``"; background: N flows, X GB/s offered"``, or ``""`` when there are none."""
        if not self.started:
            return ""
        offered = sum(rate for _, rate, _ in self.started)
        return f"; background: {len(self.started)} flows, {offered / 1e9:.4g} GB/s offered"
