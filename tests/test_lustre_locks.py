"""Extent-lock hand-offs, write conflicts, page-cache reads and stdio buffering in replay."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_scenario, load_system_model, run_loaded, scenario_from_data
from flashsim.systems.lustre.ior import PathCache
from flashsim.systems.lustre.kind import Lustre
from flashsim.systems.lustre.locks import handoff_s, ior_conflict_probability
from flashsim.workloads.jobs import IorJob, ior_trace
from flashsim.workloads.replay import (
    JobEngine,
    PlacedJob,
    cached_reads,
    write_conflicts,
)
from flashsim.workloads.trace import JobTrace, OpTable, TraceFile, records_frame

ROOT = Path(__file__).resolve().parents[1]
PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"
MiB = 2.0**20


def brute_force_conflict(nodes: int, per_node: int, block_B: float, stripe_B: float) -> float:
    """Mean over one segment's stripes of 1 - 1/(nodes writing the stripe), by sets."""
    ranks = nodes * per_node
    stripes = int(np.ceil(ranks * block_B / stripe_B - 1e-9))
    values = []
    for j in range(stripes):
        lo, hi = j * stripe_B, (j + 1) * stripe_B
        writers = {
            r // per_node for r in range(ranks) if r * block_B < hi and (r + 1) * block_B > lo
        }
        values.append(1 - 1 / len(writers))
    return float(np.mean(values))


@pytest.mark.parametrize(
    ("nodes", "per_node", "block_B"),
    [(10, 16, 47008.0), (3, 4, 300_000.0), (2, 1, 47008.0), (8, 2, 2 * MiB), (1, 64, 47008.0)],
)
def test_ior_conflict_probability_matches_a_brute_force_count(
    nodes: int, per_node: int, block_B: float
) -> None:
    expected = brute_force_conflict(nodes, per_node, block_B, MiB)
    assert ior_conflict_probability(nodes, per_node, block_B, MiB) == pytest.approx(expected)


def test_whole_separate_stripes_never_conflict() -> None:
    assert ior_conflict_probability(64, 16, 1024 * MiB, MiB) == 0.0
    assert ior_conflict_probability(1, 128, 47008.0, MiB) == 0.0  # one node: its own locks


def test_trace_conflicts_equal_the_layout_formula() -> None:
    # 8 ranks on 4 nodes, 256 KiB blocks: each 1 MiB stripe holds 4 ranks of 2 nodes
    job = IorJob(type="ior", name="s", operation="write", nodes=4, ranks_per_node=2,
                 file_per_process=False, transfer_size="64 KiB", block_size="256 KiB")  # fmt: skip
    placed = PlacedJob("s", ior_trace(job), ranks_per_node=2)
    from_trace = write_conflicts(placed, client_nodes=100)
    assert from_trace.tolist() == [0.5]
    assert ior_conflict_probability(4, 2, 256 * 1024, MiB) == 0.5


def test_a_lock_bound_shared_file_write_runs_at_the_hand_off_rate() -> None:
    model = load_system_model(PERLMUTTER).model
    data = {
        "name": "hard",
        "system": str(PERLMUTTER),
        "phases": [
            {
                "name": "w",
                "workload": "ior",
                "operation": "write",
                "nodes": 10,
                "ranks_per_node": 16,
                "file_per_process": False,
                "access": "random",
                "transfer_size": "47008 B",
                "block_size": "47008 B",
                "segments": 2000,
                "fsync": True,
                "layout": {"stripe_count": 8},
            }
        ],
    }
    result = run_loaded(scenario_from_data(data, ROOT / "hard")).phases[0]
    system = Lustre(model, Simulation(0), "flow")
    _, ctx = system.access_stream(
        0, tuple(range(8)), "write", 47008.0, False, False, 16, PathCache(),
        lock_file="x", write_conflict=1.0,
    )  # fmt: skip
    p = ior_conflict_probability(10, 16, 47008.0, MiB)
    calls_per_s = 8 / (handoff_s(ctx.cost, model.oss.rpc_cost) * p)  # 8 objects, one holder each
    assert result.bandwidth_Bps == pytest.approx(calls_per_s * 47008.0, rel=0.02)
    assert result.bottlenecks and result.bottlenecks[0].kind == "extent lock"


def trace_of(rows: list[tuple[int, int, bool, float, float, float]], module: str = "POSIX",
             nprocs: int = 2) -> JobTrace:  # fmt: skip
    """A trace from (rank, file, write, offset, size, start) rows; one record per rank/file."""
    rows = sorted(rows, key=lambda r: (r[0], r[5]))
    keys = sorted({(r[0], r[1]) for r in rows})
    record = [keys.index((r[0], r[1])) for r in rows]
    recs = []
    for rank, file in keys:
        mine = [r for r in rows if (r[0], r[1]) == (rank, file)]
        recs.append({
            "module": module, "file": file, "rank": rank,
            "reads": sum(not r[2] for r in mine), "writes": sum(r[2] for r in mine),
            "bytes_read": sum(r[4] for r in mine if not r[2]),
            "bytes_written": sum(r[4] for r in mine if r[2]),
        })  # fmt: skip
    ops = OpTable(
        rank=np.array([r[0] for r in rows], dtype=np.int64),
        file=np.array([r[1] for r in rows], dtype=np.int64),
        record=np.array(record, dtype=np.int64),
        write=np.array([r[2] for r in rows]),
        offset_B=np.array([r[3] for r in rows], dtype=float),
        size_B=np.array([r[4] for r in rows], dtype=float),
        start_s=np.array([r[5] for r in rows], dtype=float),
        end_s=np.array([r[5] for r in rows], dtype=float),
    )
    trace = JobTrace("t", "test", nprocs, 10.0, (TraceFile("a"), TraceFile("b")),
                     records_frame(recs), ops, timing="dxt")  # fmt: skip
    trace.check()
    return trace


def test_reads_of_what_the_node_alone_wrote_come_from_its_page_cache() -> None:
    # ranks 0 and 1 on nodes 0 and 1 (one rank per node)
    trace = trace_of([
        (0, 0, True, 0.0, MiB, 1.0),        # node 0 writes region 0 of file a
        (0, 0, False, 0.0, MiB, 2.0),       # ... and reads it back: cached
        (1, 0, False, 0.0, MiB, 3.0),       # node 1 reads it: not its cache
        (0, 0, False, 3 * MiB, 4096, 4.0),  # node 0 reads a region nobody wrote
        (0, 1, False, 0.0, 4096, 0.5),      # file b read before it is written: not cached
        (0, 1, True, 0.0, 4096, 5.0),
        (1, 1, True, 8192.0, 4096, 5.5),    # region 0 of file b written by both nodes
        (0, 1, False, 0.0, 4096, 6.0),      # so node 0's read of it is not cached
    ])  # fmt: skip
    hit = cached_reads(PlacedJob("t", trace, ranks_per_node=1), client_nodes=10)
    order = np.lexsort((trace.ops.start_s, trace.ops.rank))
    assert np.array_equal(order, np.arange(len(trace.ops)))
    expected = {(0, 2.0): True, (1, 3.0): False, (0, 4.0): False, (0, 0.5): False, (0, 6.0): False}
    got = {
        (int(r), float(s)): bool(h)
        for r, s, w, h in zip(trace.ops.rank, trace.ops.start_s, trace.ops.write, hit, strict=True)
        if not w
    }
    assert got == expected


def test_stdio_calls_cross_the_file_system_as_whole_buffers() -> None:
    model = load_system_model(PERLMUTTER).model
    lines = [(0, 0, True, 100.0 * i, 100.0, 0.0) for i in range(50)]  # 50 lines of 100 B
    for module, smallest in (("STDIO", MiB), ("POSIX", 100.0)):
        engine = JobEngine(Lustre(model, Simulation(0), "flow"), "flow")
        engine.run([PlacedJob("t", trace_of(lines, module, nprocs=1))])
        (access,) = engine._streams
        assert access.transfer_B == pytest.approx(smallest, rel=0.1)


def test_the_io500_scenario_puts_ior_hard_write_below_ior_easy() -> None:
    result = run_loaded(load_scenario(ROOT / "scenarios" / "perlmutter" / "io500.toml",
                                      {"phases.io500-256node.nodes": "16"}))  # fmt: skip
    for phase in result.phases:
        lines = "\n".join(phase.extra.findings())
        easy = float(lines.split("ior-easy-write")[1].split()[0])
        hard = float(lines.split("ior-hard-write")[1].split()[0])
        assert hard < easy / 2, (easy, hard)
