"""``block-io``: OLCF's fair-lio block-level test (seed 003 §6) on a Lustre system's targets.

fair-lio drives the SCSI block devices (RAID tiers, LUNs) an OSS sees with
libaio: sequential or random, reads or writes, one request size, a fixed
number of requests in flight per device, for 30 s per test.  No Lustre,
ldiskfs, client or network is involved.  Here each device is one OST's
:class:`~flashsim.components.raid_target.RaidTarget` and the request path is
the target's own (RAID geometry, drive command stages) behind the external
RAID controller the servers share (``oss.controller``, e.g. a DDN S2A9900
couplet), so what a request costs comes out of the components:

* **random**: every request lands at a new place on its tier, so each drive
  of the tier positions (seek + half a revolution) once per request and then
  transfers its contiguous share: 128 KiB for a 1 MiB full-stripe write of an
  8+2 tier, 512 KiB for a 4 MiB one (:meth:`RaidSpec.write_ops`, fixed tiers);
* **sequential**: the drives stream their contiguous runs with the head on
  track (:class:`~flashsim.components.hdd.HddStream`; SSDs are unchanged).

The efficiency reported is the bandwidth over the tested tiers' *peak*: the
sequential large-request bandwidth of the same tiers and controllers, the
smaller of the controllers' bandwidth and the drives' streaming rate after
parity (seed 003 §5 measures "block-level performance ... of peak").
"""

from __future__ import annotations

import copy
from collections.abc import Generator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import simpy
from pydantic import Field

from flashsim.components.hdd import HddSpec, HddStream
from flashsim.components.raid_target import RaidTarget
from flashsim.config import Bytes, Seconds, StrictModel
from flashsim.engine.flows import Flow, Resource
from flashsim.measure.results import PhaseDetails, PhaseResult
from flashsim.systems.base import Fidelity, no_such
from flashsim.systems.lustre.core import LustreCore
from flashsim.systems.lustre.model import LustreModel

OpKind = Literal["read", "write"]
Access = Literal["random", "sequential"]

#: Bytes a flow could move in any phase: flows run for ``duration`` and are cancelled.
_ENDLESS_B = 1e18


class BlockIoPhase(StrictModel):
    """fair-lio (seed 003 §6): asynchronous block I/O to every target of some servers.

    Attributes
    ----------
    operation : {"read", "write"}
    access : {"random", "sequential"}
        Offsets of successive requests on a device.
    request_size : float
        Bytes per request (fair-lio's block size).
    queue_depth : int
        Requests in flight per device (fair-lio's queue size: 4, 8 or 16 in §6).
    server : int
        First OSS whose targets are tested.
    servers : int or None
        OSSes tested from ``server`` on (default: those sharing its controller, or 1).
    duration : float
        Test length (s); §6 runs each test for 30 s.
    fidelity : {"flow", "request"} or None
        Fidelity of this phase (default: the run's).
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["block-io"]
    operation: OpKind = Field(description="Write or read requests to the block devices.")
    access: Access = Field(
        "random",
        description=(
            "`random`: each request at a new offset (every drive of the tier positions once "
            "per request); `sequential`: contiguous requests (drives stream)."
        ),
    )
    request_size: Bytes = Field("1 MiB", description="Bytes per request (fair-lio block size).")
    queue_depth: Annotated[int, Field(ge=1)] = Field(
        4, description="Requests in flight per device (fair-lio queue size; §6 uses 4, 8, 16)."
    )
    server: Annotated[int, Field(ge=0)] = Field(
        0, description="First OSS whose targets are tested."
    )
    servers: Annotated[int, Field(ge=1)] | None = Field(
        None,
        description=(
            "OSSes tested from `server` on (default: the OSSes sharing its controller, "
            "`oss.controller.servers`, or 1 without a controller)."
        ),
    )
    duration: Seconds = Field("30 s", description="Test length (§6: 30 s per test).")
    fidelity: Fidelity | None = Field(
        None, description="Fidelity of this phase (default: the run's `--fidelity`)."
    )


@dataclass(frozen=True, kw_only=True)
class BlockIoDetails(PhaseDetails):
    """``PhaseResult.extra`` of a ``block-io`` phase.

    Attributes
    ----------
    efficiency : float
        Bandwidth over ``peak_Bps`` (dimensionless).
    peak_Bps : float
        Sequential large-request bandwidth of the same tiers and controllers (bytes/s).
    devices : int
        Block devices (targets) tested.
    servers : int
        OSSes whose devices were tested.
    controllers : int
        External controllers those OSSes sit behind (0 without one).
    queue_depth : int
        Requests in flight per device.
    drive_run_B : float
        Contiguous bytes one drive transfers per request (per positioning, for random access).
    drive_busy_per_request_s : float
        Time (s) the busiest drive of a tier is held by one request.
    """

    efficiency: float
    peak_Bps: float
    devices: int
    servers: int
    controllers: int
    queue_depth: int
    drive_run_B: float
    drive_busy_per_request_s: float

    def findings(self) -> list[str]:
        """The efficiency against the peak and the drive's contiguous run per request."""
        return [
            f"{self.efficiency:.1%} of the peak {self.peak_Bps / 1e9:.3g} GB/s "
            f"({self.devices} devices, {self.servers} OSS, {self.controllers} controller(s), "
            f"queue depth {self.queue_depth}); each drive moves "
            f"{self.drive_run_B / 1024:.4g} KiB per request in "
            f"{self.drive_busy_per_request_s * 1e3:.3g} ms"
        ]


def tested_servers(model: LustreModel, phase: BlockIoPhase) -> list[int]:
    """OSS indices a phase tests: ``servers`` from ``server`` (default: its controller's)."""
    ctrl = model.oss.controller
    if phase.servers is not None:
        count = phase.servers
        first = phase.server
    elif ctrl is not None:
        count = ctrl.servers
        first = ctrl.index_of(phase.server) * ctrl.servers
    else:
        count, first = 1, phase.server
    return list(range(first, min(first + count, model.oss.count)))


def check_block_io_phase(model: LustreModel, phase: BlockIoPhase) -> None:
    """Indices within the model; raise ``ValueError("key: message")``."""
    count = model.oss.count
    if phase.server >= count:
        raise no_such("server", "OSS", phase.server, count)
    if phase.servers is not None and phase.server + phase.servers > count:
        raise ValueError(
            f"servers: {phase.servers} OSSes from OSS {phase.server} run past the last one "
            f"({count - 1}); expected at most {count - phase.server}"
        )


def device_view(ost: RaidTarget, access: Access) -> RaidTarget:
    """The target as a request stream of ``access`` sees it.

    Random access: the target itself.  Sequential: the same resources and
    queues with its hard disks streaming (:class:`HddStream`; no positioning
    between contiguous runs).
    """
    if access == "random" or not isinstance(ost.drive, HddSpec):
        return ost
    view = copy.copy(ost)
    view.drive = HddStream(ost.drive)
    return view


def peak_Bps(model: LustreModel, devices_per_controller: dict[int, int], op: OpKind) -> float:
    """Sequential large-request bandwidth (bytes/s) of the tested tiers and their controllers.

    Each controller delivers the smaller of its own bandwidth and its tested
    tiers' drives streaming after parity (the target type's ``peak_Bps``).
    """
    oss = model.oss
    tier = oss.target_spec().peak_Bps(op)
    total = 0.0
    for devices in devices_per_controller.values():
        drives = devices * tier
        total += drives if oss.controller is None else min(drives, oss.controller.bandwidth_Bps(op))
    return total


def _path(
    view: RaidTarget, op: OpKind, size_B: float, sequential: bool
) -> tuple[list[tuple[Resource, float]], float]:
    """Flow path of one device's request stream and one request's zero-load time (s).

    The path is the target's own (controller, RAID engine, drives).
    """
    cost = view.cost(op, size_B, sequential)
    latency = cost.raid_s + cost.drive_latency_s + cost.delay_s
    if view.controller is not None:
        latency += view.controller.spec.busy_s(op, size_B)
    return view.path(cost), latency


def _device_worker(
    env: simpy.Environment,
    view: RaidTarget,
    op: OpKind,
    size_B: float,
    sequential: bool,
    until_s: float,
    moved: list[float],
) -> Generator[simpy.Event, Any, None]:
    """Request fidelity: one of a device's in-flight slots, issuing requests until ``until_s``."""
    cost = view.cost(op, size_B, sequential)
    while env.now < until_s:
        yield from view.visit(env, cost)
        if env.now <= until_s:
            moved[0] += size_B


def run_block_io(system: LustreCore, phase: BlockIoPhase) -> PhaseResult:
    """Run fair-lio on every target of the tested OSSes for ``duration``.

    Flow fidelity: one flow per device, capped at ``queue_depth`` requests per
    zero-load request time; request fidelity: ``queue_depth`` workers per
    device through the controller queue and the drives' queues.  Bandwidth
    counts requests completed within ``duration``.
    """
    sim = system.sim
    model = system.model
    op = phase.operation
    size = float(phase.request_size)
    sequential = phase.access == "sequential"
    fidelity = phase.fidelity or system.fidelity
    servers = tested_servers(model, phase)
    devices: list[RaidTarget] = []
    per_ctrl: dict[int, int] = {}
    per = model.oss.targets_per_server
    for s in servers:
        key = -1 - s if model.oss.controller is None else model.oss.controller.index_of(s)
        for t in range(per):
            _, ost = system.raid_ost(s * per + t, phase.workload)
            devices.append(device_view(ost, phase.access))
            per_ctrl[key] = per_ctrl.get(key, 0) + 1
    start = sim.now
    if fidelity == "flow":
        flows: list[Flow] = []
        for i, view in enumerate(devices):
            path, latency = _path(view, op, size, sequential)
            cap = phase.queue_depth * size / max(latency, 1e-12)
            flows.append(
                sim.flows.start_flow(
                    _ENDLESS_B,
                    path,
                    rate_cap_Bps=cap,
                    op_size_B=size,
                    name=f"{phase.name}.d{i}",
                    cap_label="concurrency: device queue depth q*t/L",
                )
            )
        sim.run(start + phase.duration)
        total = sum(sim.flows.cancel_flow(f) for f in flows)
    else:
        moved = [0.0]
        until = start + phase.duration
        for view in devices:
            for _ in range(phase.queue_depth):
                sim.env.process(_device_worker(sim.env, view, op, size, sequential, until, moved))
        sim.run(until)
        total = moved[0]
    elapsed = sim.now - start
    bw = total / elapsed
    peak = peak_Bps(model, per_ctrl, op)
    cost = devices[0].cost(op, size, sequential)
    run_B = max(st.size_B for st in cost.stages)
    return PhaseResult(
        name=phase.name,
        operation=op,
        bandwidth_Bps=bw,
        iops=bw / size,
        ranks=len(devices) * phase.queue_depth,
        transfer_size_B=size,
        sim_time_s=elapsed,
        bytes_B=total,
        extra=BlockIoDetails(
            efficiency=bw / peak,
            peak_Bps=peak,
            devices=len(devices),
            servers=len(servers),
            controllers=len(per_ctrl) if model.oss.controller is not None else 0,
            queue_depth=phase.queue_depth,
            drive_run_B=run_B,
            drive_busy_per_request_s=cost.drive_latency_s,
        ),
        fidelity=fidelity,
    )
