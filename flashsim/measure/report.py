"""Text and JSON renderings of run results and system descriptions."""

from __future__ import annotations

import math
from typing import Any

from flashsim.measure.results import PhaseResult, ResourceLoad, RunResult
from flashsim.measure.timeline import same_state, status_from_dict
from flashsim.systems.base import Description
from flashsim.units import MIB, format_quantity
from flashsim.workloads.ior import IorDetails, IorRepetition


def format_run_text(result: RunResult, process_wall_s: float | None = None) -> str:
    """A per-phase table for people (bandwidth in GB/s and MiB/s, IOPS, time, CI).

    Phases whose details have columns of their own (a study over days, a
    rebuild: :meth:`~flashsim.measure.results.PhaseDetails.columns`) get a
    table per kind with those columns instead of the transfer ones.  The
    ``time s`` column is the phase's time as its workload measures it: for
    an IOR phase run in request fidelity, the IOR time its steady-state rate
    was applied to (the IOR block's ``total(s)``), with the simulated seconds
    in the findings.  ``process_wall_s`` (s), when given, is the command's
    whole wall time, start-up included (:func:`flashsim.wallclock.process_wall_s`);
    the header's ``wall:`` says which of the two it shows.
    """
    wall = (
        f"{process_wall_s:.2f} s (whole command; run {result.wall_time_s:.2f} s)"
        if process_wall_s is not None
        else f"{result.wall_time_s:.2f} s (run only)"
    )
    lines = [
        f"scenario: {result.scenario}   system: {result.system}   seed: {result.seed}   "
        f"fidelity: {result.fidelity}   wall: {wall}",
    ]
    transfer = [p for p in result.phases if p.extra.columns() is None]
    if transfer:
        lines.append("")
        lines.append(
            f"{'phase':<24} {'op':<6} {'ranks':>6} {'xfer':>10} {'GB/s':>10} {'MiB/s':>11} "
            f"{'IOPS':>12} {'time s':>9} {'±CI':>7} {'fidelity':<12}"
        )
    for p in transfer:
        ci = f"{100 * p.ci_rel_halfwidth:.2f}%" if p.ci_rel_halfwidth is not None else "-"
        xfer = format_quantity(p.transfer_size_B, "bytes", 3)
        lines.append(
            f"{p.name:<24} {p.operation:<6} {p.ranks:>6} "
            f"{_or_dash(xfer, p.transfer_size_B):>10} {_num(p.bandwidth_Bps / 1e9, '.3f'):>10} "
            f"{_num(p.bandwidth_Bps / MIB, '.1f'):>11} {_num(p.iops, '.1f'):>12} "
            f"{_num(phase_time_s(p), '.3f'):>9} {ci:>7} {p.fidelity or '-':<12}"
        )
    lines.extend(_own_tables([p for p in result.phases if p.extra.columns() is not None]))
    summaries = [
        f"{p.name:<24} {line}" if i == 0 else f"{'':<24} {line}"
        for p in result.phases
        for i, line in enumerate([*p.extra.findings(), *_time_notes(p)])
    ]
    if summaries:
        lines.extend(["", "findings:", *summaries])
    limits = format_bottlenecks(result)
    if limits:
        lines.extend(["", limits])
    when = format_intervals(result)
    if when:
        lines.extend(["", when])
    ior = format_run_ior_text(result)
    if ior:
        lines.extend(["", ior])
    timeline = format_timeline(result)
    if timeline:
        lines.extend(["", timeline])
    return "\n".join(lines)


def phase_time_s(p: PhaseResult) -> float:
    """The phase's time as its workload measures it (s); see :func:`format_run_text`.

    An IOR phase's is the sum of its repetitions' times (IOR's ``total(s)``),
    which in request fidelity is the window the steady-state rate was applied
    to, not the seconds simulated; other phases' is their simulated time.
    """
    ex = _ior(p)
    if ex is not None and ex.repetitions:
        return float(sum(r.time_s for r in ex.repetitions))
    return p.sim_time_s


def _time_notes(p: PhaseResult) -> list[str]:
    """A finding when the phase's time is not the time simulated (request-fidelity IOR)."""
    t = phase_time_s(p)
    if not (math.isfinite(t) and math.isfinite(p.sim_time_s)) or t <= 0:
        return []
    if abs(t - p.sim_time_s) <= 1e-6 * max(t, 1.0):
        return []
    return [
        f"time {t:.4g} s: the steady-state rate of {p.sim_time_s:.4g} simulated s "
        "applied to the IOR window"
    ]


def _own_tables(phases: list[PhaseResult]) -> list[str]:
    """One table per kind of phase with columns of its own (phase, op, columns, fidelity)."""
    lines: list[str] = []
    kinds: dict[type, list[PhaseResult]] = {}
    for p in phases:
        kinds.setdefault(type(p.extra), []).append(p)
    for members in kinds.values():
        cols = [p.extra.columns() or {} for p in members]
        heads = list(cols[0])
        width = {h: max(len(h), *(len(c.get(h, "-")) for c in cols)) for h in heads}
        name_w = max([24, *(len(p.name) for p in members)])
        op_w = max([6, *(len(p.operation) for p in members)])
        lines.append("")
        lines.append(
            f"{'phase':<{name_w}} {'op':<{op_w}} "
            + " ".join(f"{h:>{width[h]}}" for h in heads)
            + f" {'fidelity':<12}"
        )
        for p, c in zip(members, cols, strict=True):
            lines.append(
                f"{p.name:<{name_w}} {p.operation:<{op_w}} "
                + " ".join(f"{c.get(h, '-'):>{width[h]}}" for h in heads)
                + f" {p.fidelity or '-':<12}"
            )
    return lines


#: Names listed for a kind before the rest are counted ("... (+271 more)").
LISTED_PER_KIND = 3


def _pct(utilization: float) -> str:
    return f"{100 * utilization:.1f}%"


def _kind_groups(loads: list[ResourceLoad]) -> list[str]:
    """One summary per kind, in order of the kind's most utilised resource."""
    groups: dict[str, list[ResourceLoad]] = {}
    for load in loads:
        groups.setdefault(load.kind, []).append(load)
    out = []
    for kind, members in groups.items():
        if len(members) <= LISTED_PER_KIND:
            out.append(f"{kind}: " + ", ".join(f"{m.name} {_pct(m.utilization)}" for m in members))
            continue
        lo = min(m.utilization for m in members)
        hi = max(m.utilization for m in members)
        span = _pct(hi) if _pct(lo) == _pct(hi) else f"{_pct(lo)}-{_pct(hi)}"
        names = ", ".join(m.name for m in members[:LISTED_PER_KIND])
        out.append(
            f"{kind} \u00d7{len(members)} ({span}): {names}, ... "
            f"(+{len(members) - LISTED_PER_KIND} more)"
        )
    return out


def format_bottlenecks(result: RunResult) -> str:
    """Per phase, the resources that limited it (empty when no phase was measured).

    A phase lists its bottlenecks grouped by kind (many of one kind are
    summarised as ``nic \u00d7274 (100.0%): first names, ... (+271 more)``; ``--json``
    lists them all), or, when nothing reached the threshold, ``none`` and
    its most utilised resources.
    """
    from flashsim.measure.bottlenecks import BOTTLENECK_UTILIZATION

    measured = [p for p in result.phases if p.bottlenecks or p.most_utilized]
    if not measured:
        return ""
    width = max([24, *(len(p.name) for p in measured)])
    lines = [f"bottlenecks (mean utilisation >= {_pct(BOTTLENECK_UTILIZATION)} over the phase):"]
    for p in measured:
        if p.bottlenecks:
            rows = _kind_groups(p.bottlenecks)
        else:
            most = ", ".join(f"{m.name} {_pct(m.utilization)} ({m.kind})" for m in p.most_utilized)
            held = _held_by(p)
            rows = [f"none{held}; most utilised: {most}"]
        lines.append(f"{p.name:<{width}} {rows[0]}")
        lines.extend(f"{'':<{width}} {row}" for row in rows[1:])
    return "\n".join(lines)


#: Interval lines listed per phase before the rest are counted (``--json`` lists them all).
LISTED_INTERVALS = 16


def _held_by(p: PhaseResult) -> str:
    """``" saturated; held by <bound> (<kind>)"`` when a latency or concurrency bound
    held most of the phase's time (:func:`~flashsim.measure.limits.held_by`), else ``""``."""
    from flashsim.measure.limits import held_by

    bound = held_by(p)
    return f" saturated; held by {_named(*bound)}" if bound else ""


def _named(limiter: str, kind: str) -> str:
    """``limiter (kind)``, or the limiter alone when it starts with its kind (``nic \u00d74``)."""
    if limiter.startswith((f"{kind}:", f"{kind} \u00d7")) or kind == limiter:
        return limiter
    return f"{limiter} ({kind})"


def _secs(value: float) -> str:
    return f"{value:.4g}"


def format_intervals(result: RunResult) -> str:
    """Per phase, what limited each interval: one line per part or time window.

    ``start-end s  part  limiter utilisation (kind), share of bytes``; a phase
    with one interval and no parts gets one line too, so every measured phase
    names its limit.  Empty when no phase recorded intervals.
    """
    shown = [p for p in result.phases if p.intervals]
    if not shown:
        return ""
    width = max([24, *(len(p.name) for p in shown)])
    lines = ["what limited it, when (s from the phase's start; the limit most bytes moved under):"]
    for p in shown:
        rows = []
        for i in p.intervals[:LISTED_INTERVALS]:
            span = f"{_secs(i.start_s)}-{_secs(i.end_s)} s"
            util = f" {_pct(i.utilization)} busy" if i.utilization is not None else ""
            share = f", {100 * i.share:.0f}% of bytes" if 0.0 < i.share < 0.995 else ""
            part = f"{i.label}: " if i.label else ""
            rows.append(f"{span:<20} {part}{_named(i.limiter, i.kind)}{util}{share}")
        more = len(p.intervals) - LISTED_INTERVALS
        if more > 0:
            rows.append(f"... (+{more} more; --json lists them all)")
        lines.append(f"{p.name:<{width}} {rows[0]}")
        lines.extend(f"{'':<{width}} {row}" for row in rows[1:])
    return "\n".join(lines)


#: Event marks the timeline summary lists before it says how many more there are.
LISTED_EVENTS = 20


def when(time_s: float) -> str:
    """A simulated time for people: seconds below 2 min, then min, h, days (``"7.00 d"``)."""
    for scale, unit in ((86400.0, "d"), (3600.0, "h"), (60.0, "min")):
        if abs(time_s) >= 2 * scale:
            return f"{time_s / scale:.2f} {unit}"
    return f"{time_s:.4g} s"


def format_timeline(result: RunResult) -> str:
    """The system's state at the run's start, at each event and at its end, one line each.

    ``time  mark  state`` with :meth:`~flashsim.components.target_state.SystemStatus.summary`
    (write amplification, write loss, drives down and rebuilding, SCM fill).
    Empty (so the run's text is as before) unless the run had events or its
    state changed; the event lines stop at :data:`LISTED_EVENTS` (``--json``
    and ``RunResult.timeline_dataframe()`` hold every sample).
    """
    samples = result.timeline
    if not samples:
        return ""
    events = [s for s in samples if s.event]
    first, last = samples[0], samples[-1]
    changed = any(not same_state(first.state, s.state) for s in samples[1:])
    if not events and not changed:
        return ""
    listed = [s for s in events[:LISTED_EVENTS] if s is not first]
    closing = [] if last is first or any(s is last for s in listed) else [last]
    rows = [
        (when(s.time_s), s.label or "-", status_from_dict(s.state).summary())
        for s in [first, *listed, *closing]
    ]
    w_time = max(len(r[0]) for r in rows)
    w_mark = max([12, *(len(r[1]) for r in rows)])
    lines = [f"  {t:>{w_time}}  {m:<{w_mark}}  {state}" for t, m, state in rows]
    more = len(events) - LISTED_EVENTS
    if more > 0:
        lines.insert(1 + len(listed), f"  ... (+{more} more events; --json lists them all)")
    return "\n".join(["timeline (simulated time; the system's state):", *lines])


def _num(value: float, spec: str) -> str:
    """``value`` formatted, or "-" when it is not a finite number (not measured)."""
    return format(value, spec) if math.isfinite(value) else "-"


def _or_dash(text: str, value: float) -> str:
    return text if math.isfinite(value) else "-"


def _ior(p: PhaseResult) -> IorDetails | None:
    return p.extra if isinstance(p.extra, IorDetails) else None


def _reps(p: PhaseResult) -> list[IorRepetition]:
    """The phase's repetitions; a phase without them counts as one of all it measured."""
    ex = _ior(p)
    if ex is not None and ex.repetitions:
        return ex.repetitions
    return [IorRepetition(p.bandwidth_Bps, p.iops, p.sim_time_s, p.bytes_B)]


def _task_offset(p: PhaseResult) -> int:
    """IOR's ``-Q`` (task per node offset) of the phase; 1 when it has none."""
    ex = _ior(p)
    return ex.task_per_node_offset if ex else 1


def _stats(values: list[float]) -> tuple[float, float, float, float]:
    """Max, min, mean and population standard deviation, as IOR computes them."""
    n = len(values)
    mean = sum(values) / n
    sd = (sum((v - mean) ** 2 for v in values) / n) ** 0.5
    return max(values), min(values), mean, sd


def _ior_params(p: PhaseResult, test_id: int) -> dict[str, Any]:
    """IOR's ``Parameters`` section for one phase (the keys IOR 3.3 prints)."""
    ex = _ior(p)
    block = ex.block_size_B if ex else p.bytes_B / max(p.ranks, 1)
    write = p.operation == "write"
    return {
        "testID": test_id,
        "refnum": test_id,
        "api": "POSIX",
        "platform": "flashsim",
        "testFileName": p.name,
        "deadlineForStonewall": round(ex.stonewall_s if ex else 0.0),
        "stoneWallingWearOut": int(ex.wear_out if ex else False),
        "maxTimeDuration": 0,
        "outlierThreshold": 0,
        "options": "",
        "nodes": ex.nodes if ex else 1,
        "memoryPerTask": 0,
        "memoryPerNode": 0,
        "tasksPerNode": ex.tasks_per_node if ex else p.ranks,
        "repetitions": len(_reps(p)),
        "multiFile": 0,
        "interTestDelay": 0,
        "fsync": int(ex.fsync if ex else False),
        "fsyncperwrite": 0,
        "useExistingTestFile": 0,
        "uniqueDir": 0,
        "singleXferAttempt": 0,
        "readFile": int(not write),
        "writeFile": int(write),
        "filePerProc": int(ex.file_per_process if ex else True),
        "reorderTasks": int(ex.reorder_tasks if ex else False),
        "reorderTasksRandom": 0,
        "reorderTasksRandomSeed": 0,
        "randomOffset": int(ex is not None and ex.access == "random"),
        "checkWrite": 0,
        "checkRead": 0,
        "preallocate": 0,
        "useFileView": 0,
        "setAlignment": 1,
        "storeFileOffset": 0,
        "useSharedFilePointer": 0,
        "useO_DIRECT": int(ex.direct_io if ex else False),
        "useStridedDatatype": 0,
        "keepFile": 1,
        "keepFileWithError": 1,
        "quitOnError": 0,
        "verbose": 0,
        "data packet type": "g",
        "setTimeStampSignature/incompressibleSeed": 0,
        "collective": 0,
        "segmentCount": ex.segments if ex else 1,
        "transferSize": int(p.transfer_size_B),
        "blockSize": int(block),
    }


def format_run_ior_json(result: RunResult) -> dict[str, Any]:
    """Results in the layout of IOR 3.3's ``-O summaryFormat=JSON`` output.

    ``tests[]`` holds one test per phase with its ``Parameters``, ``Options``
    and ``Results`` (one list per repetition, each holding that repetition's
    access record: ``bwMiB``, ``blockKiB``, ``xferKiB``, ``iops``,
    ``openTime``, ``wrRdTime``, ``closeTime``, ``totalTime``); ``summary[]``
    holds one record per test with IOR's statistics over repetitions
    (``bwMaxMIB``, ``bwMinMIB``, ``bwMeanMIB``, ``bwStdMIB``, ``OPsMax``,
    ``OPsMin``, ``OPsMean``, ``OPsSD``, ``MeanTime``, ``xsizeMiB`` ...), with
    population standard deviations as IOR computes them.  Per-repetition
    results come from ``extra["repetitions"]`` (a list of ``{"bandwidth_Bps",
    "iops", "time_s"}``); phases without it count as one repetition.  Open and
    close are not simulated, so their times are 0.
    """
    tests = []
    summary = []
    for test_id, p in enumerate(result.phases):
        reps = _reps(p)
        params = _ior_params(p, test_id)
        bws = [r.bandwidth_Bps / MIB for r in reps]
        ops = [r.iops for r in reps]
        times = [r.time_s for r in reps]
        block = float(params["blockSize"])
        offset = _task_offset(p)
        options: dict[str, Any] = {
            "api": "POSIX",
            "apiVersion": "",
            "test filename": p.name,
            "access": "file-per-process" if params["filePerProc"] else "single-shared-file",
            "type": "independent",
            "segments": params["segmentCount"],
            "ordering in a file": "random" if params["randomOffset"] else "sequential",
            "ordering inter file": "constant task offset"
            if params["reorderTasks"]
            else "no tasks offsets",
        }
        if params["reorderTasks"]:
            options["task offset"] = offset
        options.update(
            {
                "nodes": params["nodes"],
                "tasks": p.ranks,
                "clients per node": params["tasksPerNode"],
                "repetitions": len(reps),
                "xfersize": _binary(p.transfer_size_B),
                "blocksize": _binary(block),
                "aggregate filesize": _binary(block * p.ranks * params["segmentCount"]),
            }
        )
        if params["deadlineForStonewall"]:
            options["stonewallingTime"] = params["deadlineForStonewall"]
            options["stoneWallingWearOut"] = params["stoneWallingWearOut"]
        tests.append(
            {
                "TestID": test_id,
                "StartTime": "",
                "Parameters": params,
                "Options": options,
                "Results": [
                    [
                        {
                            "access": p.operation,
                            "bwMiB": bw,
                            "blockKiB": block / 1024,
                            "xferKiB": p.transfer_size_B / 1024,
                            "iops": op,
                            "latency": t / max(1.0, bw * MIB * t / p.transfer_size_B / p.ranks)
                            if bw > 0
                            else 0.0,
                            "openTime": 0.0,
                            "wrRdTime": t,
                            "closeTime": 0.0,
                            "totalTime": t,
                        }
                    ]
                    for bw, op, t in zip(bws, ops, times, strict=True)
                ],
                "Finished": "",
            }
        )
        bw_max, bw_min, bw_mean, bw_sd = _stats(bws)
        op_max, op_min, op_mean, op_sd = _stats(ops)
        first_B = reps[0].bytes_B
        summary.append(
            {
                "operation": p.operation,
                "API": "POSIX",
                "TestID": test_id,
                "ReferenceNumber": test_id,
                "segmentCount": params["segmentCount"],
                "blockSize": params["blockSize"],
                "transferSize": params["transferSize"],
                "numTasks": p.ranks,
                "tasksPerNode": params["tasksPerNode"],
                "repetitions": len(reps),
                "filePerProc": params["filePerProc"],
                "reorderTasks": params["reorderTasks"],
                "taskPerNodeOffset": offset,
                "reorderTasksRandom": 0,
                "reorderTasksRandomSeed": 0,
                "bwMaxMIB": bw_max,
                "bwMinMIB": bw_min,
                "bwMeanMIB": bw_mean,
                "bwStdMIB": bw_sd,
                "OPsMax": op_max,
                "OPsMin": op_min,
                "OPsMean": op_mean,
                "OPsSD": op_sd,
                "MeanTime": sum(times) / len(times),
                "xsizeMiB": first_B / MIB,
            }
        )
    return {
        "Version": "3.3.0 (flashsim)",
        "Began": "",
        "Command line": f"flashsim run {result.scenario}",
        "Machine": f"flashsim {result.system} ({result.fidelity} fidelity, seed {result.seed})",
        "tests": tests,
        "summary": summary,
        "Finished": "",
    }


def _binary(size_B: float) -> str:
    """A size in binary units as IOR's ``HumanReadable`` prints it (``64 MiB``)."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_B >= scale:
            return f"{size_B / scale:.2f} {unit}"
    return f"{size_B:.0f} bytes"


def _pp(number: float) -> str:
    """IOR's ``PPDouble``: width 10, 6 decimals below 1, 2 below 3600, else 0."""
    if number < 0:
        return "   -      "
    precision = 6 if number < 1 else (2 if number < 3600 else 0)
    return f"{number:<10.{precision}f}"


def format_run_ior_text(result: RunResult) -> str:
    """IOR-style text for the IOR phases of a run (empty when there are none).

    Per test: the ``access bw(MiB/s) block(KiB) xfer(KiB) open(s) wr/rd(s)
    close(s) total(s) iter`` rows of each repetition, then IOR's ``Summary of
    all tests`` table (Max/Min/Mean/StdDev of MiB/s and OPs over repetitions).
    """
    ior = [(i, p) for i, p in enumerate(result.phases) if _ior(p) is not None]
    if not ior:
        return ""
    lines = ["IOR-3.3.0: MPI Coordinated Test of Parallel I/O (simulated by flashsim)", ""]
    for test_id, p in ior:
        params = _ior_params(p, test_id)
        lines.append(f"Test {test_id}: {p.name}")
        lines.append(
            f"  tasks {p.ranks} ({params['tasksPerNode']} per node), "
            f"{'file-per-process' if params['filePerProc'] else 'single-shared-file'}, "
            f"{'random' if params['randomOffset'] else 'sequential'} offsets, "
            f"xfersize {_binary(p.transfer_size_B)}, "
            f"blocksize {_binary(float(params['blockSize']))}"
            + (
                f", stonewall {params['deadlineForStonewall']} s"
                + (" with wear-out" if params["stoneWallingWearOut"] else "")
                if params["deadlineForStonewall"]
                else ""
            )
        )
        lines.append("")
        lines.append(
            "access    bw(MiB/s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   "
            "total(s)   iter"
        )
        lines.append(
            "------    ---------  ---------- ---------  --------   --------   --------   "
            "--------   ----"
        )
        for it, rep in enumerate(_reps(p)):
            t = rep.time_s
            lines.append(
                f"{p.operation:<10}{_pp(rep.bandwidth_Bps / MIB)} "
                f"{_pp(float(params['blockSize']) / 1024)} {_pp(p.transfer_size_B / 1024)} "
                f"{_pp(0.0)} {_pp(t)} {_pp(0.0)} {_pp(t)} {it:<4d}"
            )
        lines.append("")
    lines.append("Summary of all tests:")
    lines.append(
        f"{'Operation':<9} {'Max(MiB)':>10} {'Min(MiB)':>10} {'Mean(MiB)':>10} {'StdDev':>10} "
        f"{'Max(OPs)':>10} {'Min(OPs)':>10} {'Mean(OPs)':>10} {'StdDev':>10} {'Mean(s)':>10}"
        " Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt "
        f"{'blksiz':>8} {'xsize':>8} {'aggs(MiB)':>9} {'API':>5} RefNum"
    )
    for test_id, p in ior:
        params = _ior_params(p, test_id)
        reps = _reps(p)
        bw = _stats([r.bandwidth_Bps / MIB for r in reps])
        ops = _stats([r.iops for r in reps])
        mean_t = sum(r.time_s for r in reps) / len(reps)
        agg = reps[0].bytes_B / MIB
        lines.append(
            f"{p.operation:<9} {bw[0]:10.2f} {bw[1]:10.2f} {bw[2]:10.2f} {bw[3]:10.2f} "
            f"{ops[0]:10.2f} {ops[1]:10.2f} {ops[2]:10.2f} {ops[3]:10.2f} {mean_t:10.5f} "
            f"{test_id:5d} {p.ranks:6d} {params['tasksPerNode']:3d} {len(reps):4d} "
            f"{params['filePerProc']:3d} {params['reorderTasks']:5d} "
            f"{_task_offset(p):8d} {0:9d} {0:4d} "
            f"{params['segmentCount']:6d} {params['blockSize']:8d} {params['transferSize']:8d} "
            f"{agg:9.1f} {'POSIX':>5} {test_id:6d}"
        )
    return "\n".join(lines)


def _fmt(value: float | None, dimension: str) -> str:
    if value is None:
        return "-"
    return format_quantity(value, dimension, 4)  # type: ignore[arg-type]


def format_description(description: Description) -> str:
    """Per-layer peak table and the named bottlenecks."""
    lines = [f"system: {description.system}   kind: {description.kind}", ""]
    lines.append("components: " + ", ".join(f"{k}={v}" for k, v in description.components.items()))
    lines.append("")
    scope_w = max([5, *(len(layer.scope) for layer in description.layers)])
    layer_w = max([5, *(len(layer.layer) for layer in description.layers)])
    lines.append(
        f"{'scope':<{scope_w}} {'layer':<{layer_w}} {'count':>6} {'read':>12} {'write':>12} "
        f"{'read ops':>13} {'write ops':>13}  note"
    )
    for layer in description.layers:
        lines.append(
            f"{layer.scope:<{scope_w}} {layer.layer:<{layer_w}} {layer.count:>6} "
            f"{_fmt(layer.read_Bps, 'bandwidth'):>12} "
            f"{_fmt(layer.write_Bps, 'bandwidth'):>12} {_fmt(layer.read_iops, 'rate'):>13} "
            f"{_fmt(layer.write_iops, 'rate'):>13}  {layer.note}"
        )
    if description.bottlenecks:
        lines.append("")
        for what, layer_name in description.bottlenecks.items():
            lines.append(f"bottleneck ({what}): {layer_name}")
    if description.derived:
        lines.append("")
        for key, value in description.derived.items():
            lines.append(f"{key}: {value:.6g}")
    return "\n".join(lines)
