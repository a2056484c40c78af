"""Request fidelity of the network fabric: per-bundle FCFS queues and per-request routes.

Each link bundle a request crosses is a :class:`LinkQueue` of ``links``
servers whose service time for ``size_B`` bytes is ``size_B / link_Bps``, so
its saturation throughput equals the flow resource's capacity.  The route is
chosen per request (:meth:`RequestRouting.request_hops`); UGAL compares the
queues' backlogs.  :class:`flashsim.components.fabric.Fabric` mixes this in.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from flashsim.components.fabric_spec import GroupId, Routing
from flashsim.components.routing import Route, Topology
from flashsim.engine.queues import FifoQueue
from flashsim.engine.simulation import Simulation


class LinkQueue(FifoQueue):
    """A link bundle's FCFS queue (``servers`` = links) that reports its backlog."""

    def backlog_s(self) -> float:
        """Work (s) queued or in service per server: the wait a request joining now expects."""
        return self.ahead_s() / self.servers


class RequestRouting:
    """Request-fidelity part of a fabric: its bundle queues and per-request route choice.

    The class using it provides the attributes below and :meth:`group_of` /
    :meth:`_routes` (as :class:`~flashsim.components.fabric.Fabric` does).
    """

    sim: Simulation
    name: str
    topology: Topology
    routing: Routing
    ugal_threshold: float
    _queues: dict[str, LinkQueue]
    _hops: dict[Route, tuple[tuple[LinkQueue, float], ...]]

    def group_of(self, endpoint: str) -> GroupId:
        """The group an attached endpoint is in."""
        raise NotImplementedError

    def _routes(self, a: GroupId, b: GroupId) -> tuple[list[Route], list[Route]]:
        raise NotImplementedError

    def _queue(self, bundle: str) -> LinkQueue:
        queue = self._queues.get(bundle)
        if queue is None:
            links = self.topology.bundles[bundle].links
            queue = LinkQueue(self.sim.env, bundle, servers=links)
            self._queues[bundle] = queue
        return queue

    def _cost(self, route: Route) -> float:
        backlog = max((self._queue(n).backlog_s() for n in route.bundles), default=0.0)
        return route.hops * backlog

    def request_hops(
        self, src: str, dst: str, size_B: float, rng: np.random.Generator
    ) -> list[tuple[FifoQueue, float]]:
        """Queues one request (packet group) of ``size_B`` bytes visits, and its service there.

        The route is chosen per request: minimal (uniform among minimal
        routes), Valiant (uniform intermediate group), or UGAL: a minimal
        route and a random Valiant route, taking the Valiant one when
        ``hops_min * backlog_min > ugal_threshold * hops_nm * backlog_nm``,
        a route's backlog being that of its most loaded bundle queue (UGAL-G).
        Visit the queues in order (``queue.visit(service_s)``); add
        :meth:`latency_s` for the wire.

        Parameters
        ----------
        src, dst : str
            Attached endpoint names.
        size_B : float
            Bytes of the request (> 0).
        rng : numpy.random.Generator
            Stream for route choices, e.g. ``sim.rng("perlmutter.fabric.routing")``.

        Returns
        -------
        list of (FifoQueue, float)
            Each bundle queue on the route and the service time (s) of the request there.
        """
        if not size_B > 0:
            raise ValueError(f"{self.name}: size_B(={size_B}) must be > 0")
        a, b = self.group_of(src), self.group_of(dst)
        mins, nms = self._routes(a, b)
        route = mins[int(rng.integers(len(mins)))] if len(mins) > 1 else mins[0]
        if nms and self.routing == "valiant":
            route = nms[int(rng.integers(len(nms)))]
        elif nms and self.routing == "ugal":
            other = nms[int(rng.integers(len(nms)))]
            if self._cost(route) > self.ugal_threshold * self._cost(other):
                route = other
        hops = self._hops.get(route)
        if hops is None:
            bundles = self.topology.bundles
            hops = tuple((self._queue(n), bundles[n].link_Bps) for n in route.bundles)
            self._hops[route] = hops
        return [(queue, size_B / link_Bps) for queue, link_Bps in hops]

    def minimal_service_s(self, src: str, dst: str, size_B: float) -> float:
        """Service time (s) of ``size_B`` bytes at the bundle queues of a minimal route.

        What :meth:`cross` adds at zero load on a minimal route (the first, when
        there are several; they have the same hops): a kind whose fixed wire
        time already counts the bytes' serialisation takes it out of that time,
        so a bundle queue adds only its waiting.

        Parameters
        ----------
        src, dst : str
            Attached endpoint names.
        size_B : float
            Bytes of the request.
        """
        route = self._routes(self.group_of(src), self.group_of(dst))[0][0]
        bundles = self.topology.bundles
        return size_B * sum(1.0 / bundles[n].link_Bps for n in route.bundles)

    def cross(
        self, src: str, dst: str, size_B: float, rng: np.random.Generator
    ) -> Generator[simpy.Event, Any, None]:
        """Visit the bundle queues of a route chosen now (when the data reaches the fabric).

        A SimPy process body: :meth:`request_hops`, visited in order.
        """
        for queue, service_s in self.request_hops(src, dst, size_B, rng):
            yield queue.visit(service_s)
