"""Replays whose cost is their calls: a call must cost what its own path touches (issue 20).

* ``replay_random_reads_3000_s``: one rank reading 3,000 blocks of 3.6 MB at
  random offsets of a file striped over 160 OSTs on Perlmutter, the issue's
  case (each read alone in the system, on a path of thousands of constraints;
  target 3 s);
* ``replay_sequential_reads_3000_s``: the same with 3,000 4 MiB reads each
  starting where the last ended, more than the merge gap later, as the DLIO
  logs of darshan-hpc's collection read (drawn from counters): the client's
  read-ahead cap then exceeds what its NIC carries, so every read forms a new
  bottleneck, which the engine's class layer finds on the lone flow's own path
  (before: the flow-level repair, ~3.7 s; target 3 s);
* ``replay_500k_calls_s``: 2,048 ranks on 32 nodes each reading 245 random
  1 MiB blocks of a file striped over 16 OSTs, with exponential think times of
  2 ms mean between calls (501,760 calls, each its own flow; target 30 s).

The traces are synthetic (:class:`flashsim.workloads.trace.JobTrace` built
here), not the fetched logs.  Each times building the system and replaying
the trace in this process (imports excluded); prints one JSON line with
``wall_s`` (and ``cpu_s``, this process's CPU time: on a shared machine the
fairer figure), ``calls`` and the flow network's solver counters.

    python -m benchmarks.replay_calls {reads3000|seqreads3000|calls500k} [calls per rank]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import cast

import numpy as np

from flashsim.engine.simulation import Simulation
from flashsim.scenario import load_system_model
from flashsim.workloads.replay import JobEngine, JobTarget, PlacedJob
from flashsim.workloads.trace import JobTrace, OpTable, TraceFile, records_frame

ROOT = Path(__file__).resolve().parents[1]
PERLMUTTER = ROOT / "models" / "systems" / "perlmutter.toml"


def random_reads(
    ranks: int,
    calls_per_rank: int,
    size_B: float,
    stripes: int,
    think_s: float,
    sequential: bool = False,
    seed: int = 1,
) -> JobTrace:
    """Each rank reads ``calls_per_rank`` random blocks of one shared file.

    Parameters
    ----------
    ranks, calls_per_rank : int
        Ranks, and read calls each.
    size_B : float
        Bytes per call; offsets are random multiples of it in a 100 GB file.
    stripes : int
        OSTs the file is striped over (OSTs ``0 .. stripes-1``, 1 MiB stripes).
    think_s : float
        Mean of the exponential computation between a rank's calls, seconds
        (a call's record lasts 1 ms and the next starts this plus 2 ms after it ends,
        past the replay's merge gap, so every call is its own flow).
    sequential : bool
        Each rank reads on from where its previous call ended (at a random
        start), instead of at random offsets: the client then reads ahead.
    seed : int
        Seed of the offsets and think times.
    """
    rng = np.random.default_rng(seed)
    n = ranks * calls_per_rank
    rank = np.repeat(np.arange(ranks, dtype=np.int64), calls_per_rank)
    offset = np.floor(rng.uniform(0.0, 100e9 / size_B, n)) * size_B
    if sequential:
        first = offset.reshape(ranks, calls_per_rank)[:, :1]
        offset = (first + np.arange(calls_per_rank) * size_B).ravel()
    gaps = rng.exponential(think_s, (ranks, calls_per_rank)) + 3e-3
    start = (np.cumsum(gaps, axis=1) - 1e-3).ravel()
    ops = OpTable(
        rank=rank,
        file=np.zeros(n, dtype=np.int64),
        record=rank.copy(),
        write=np.zeros(n, dtype=bool),
        offset_B=offset,
        size_B=np.full(n, size_B),
        start_s=start,
        end_s=start + 1e-3,
    )
    rows = [
        {"module": "POSIX", "file": 0, "rank": r, "reads": calls_per_rank,
         "bytes_read": calls_per_rank * size_B}
        for r in range(ranks)
    ]  # fmt: skip
    data = TraceFile("train.npz", "lustre", stripes, 1048576.0, tuple(range(stripes)))
    trace = JobTrace(
        "random-reads", "synthetic", ranks, float(start.max() + 1e-3), (data,),
        records_frame(rows), ops, timing="dxt",
    )  # fmt: skip
    trace.check()
    return trace


def replay(trace: JobTrace, ranks_per_node: int) -> dict[str, float]:
    """Build Perlmutter and replay ``trace`` in flow fidelity; return wall time and counters."""
    loaded = load_system_model(PERLMUTTER)
    start = time.perf_counter()
    cpu = time.process_time()
    sim = Simulation(0)
    system = loaded.kind.build(loaded.model, sim, "flow")
    (times,) = JobEngine(cast(JobTarget, system), "flow").run(
        [PlacedJob("bench", trace, ranks_per_node=ranks_per_node)]
    )
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu
    assert np.isfinite(times.end_s).all()
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "calls": float(len(trace.ops)),
        "transfers": float(len(times.transfers)),
        **{k: float(v) for k, v in sim.flows.stats.items()},
    }


def main(argv: list[str]) -> int:
    which = argv[1] if len(argv) > 1 else "reads3000"
    if which == "reads3000":
        record = replay(random_reads(1, 3000, 3.6e6, 160, 1e-3), 1)
    elif which == "seqreads3000":
        record = replay(random_reads(1, 3000, 4194304.0, 160, 1e-3, sequential=True), 1)
    elif which == "calls500k":
        per_rank = int(argv[2]) if len(argv) > 2 else 245
        record = replay(random_reads(2048, per_rank, 1048576.0, 16, 2e-3), 64)
    else:
        raise SystemExit(
            f"unknown benchmark {which!r}: expected reads3000, seqreads3000 or calls500k"
        )
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
