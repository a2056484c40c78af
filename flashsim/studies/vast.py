"""The PDSW 2021 VAST study (seed 002): the bandwidth grid, random I/O and dataset-size sweeps.

Each study is a phase type of the ``vast`` kind so scenarios and validation
records can run it, and a function so notebooks can:

* :func:`run_grid` -- Figs 2 and 3: every ``(N, p, t)`` written then read,
  five times, naively (read right after write) and aged (all datasets written,
  the SCM flushed with 8 TiB of throw-away data, then read), with the IOR
  arguments of Table I (``-F -C -e -D 45 -O stoneWallingWearOut=1``);
* :func:`run_iops_grid` -- Fig. 4: random 4 KiB writes (buffered and
  O_DIRECT) and reads of an aged dataset over the same ``N x p``;
* :func:`run_size_sweep` -- Fig. 5: random-read rate of 64 processes against
  the size of a freshly generated dataset.

The grid is split over worker processes, each with its own simulated system
(the SCM buffer is small against the 275 TiB the grid writes, so splitting it
does not change where any dataset lives when it is read); a progress bar
follows every completed test.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from flashsim.config import Bytes, Seconds, StrictModel
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.units import MIB, TIB

#: IOR segment count of the bandwidth tests: the lesser of 16 TiB per rank or 2**31 - 1 (App. B).
MAX_SEGMENTS = 2_147_483_647

Progress = Callable[[int], None]


#: A study phase's fidelity (``None``: the scenario's).
StudyFidelity = Annotated[
    Literal["flow", "request"] | None,
    Field(
        description=(
            "Fidelity of the study's tests (default: the scenario's). Buffered writes, "
            "including dataset generation and the aging flush, always run in flow fidelity "
            "(the client page cache is a flow-fidelity buffer); each test's row says which "
            "fidelity it ran at."
        ),
    ),
]


class VastGridPhase(StrictModel):
    """The seed's bandwidth grid as one phase (``workload = "vast-grid"``).

    Every combination of ``nodes`` x ``ranks_per_node`` x ``transfer_sizes``
    is written then read, ``repetitions`` times each, file per process,
    stonewalled at ``stonewall`` seconds with wear-out and fsync (Table I).
    ``naive`` reads each dataset right after writing it; ``aged`` writes all
    datasets, flushes the SCM with ``aging_bytes`` of throw-away data written
    in ``aging_passes`` passes of 1 MiB transfers, then reads them; ``both``
    runs the two.

    Attributes
    ----------
    stonewall : float
        ``-D`` in seconds.
    aging_bytes : float
        Throw-away bytes of the pre-read flush (8 TiB in the seed).
    data_entropy : float
        Bits per byte of the written data (8: ``ior-incompress``).
    workers : int
        Processes the grid is split over.
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["vast-grid"]
    mode: Literal["naive", "aged", "both"] = Field(
        "both",
        description=(
            "`naive`: read each dataset right after writing it; `aged`: flush the SCM "
            "first; `both`: both."
        ),
    )
    nodes: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1, 2, 4, 8], description="Client node counts N of the grid."
    )
    ranks_per_node: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16], description="Processes per node p of the grid."
    )
    transfer_sizes: list[Bytes] = Field(
        default_factory=lambda: ["4 KiB", "512 KiB", "1 MiB", "4 MiB", "8 MiB", "32 MiB"],
        description="Transfer sizes t of the grid (IOR `-t`).",
    )
    repetitions: Annotated[int, Field(ge=1)] = Field(
        5, description="Runs of each (N, p, t) combination."
    )
    stonewall: Seconds = "45 s"
    aging_bytes: Bytes = "8 TiB"
    aging_passes: Annotated[int, Field(ge=1)] = Field(
        8, description="Passes the aging bytes are written in (1 MiB transfers)."
    )
    data_entropy: Annotated[float, Field(ge=0.0, le=8.0)] = 8.0
    workers: Annotated[int, Field(ge=1)] = 2
    progress: bool = Field(True, description="Show a progress bar.")
    fidelity: StudyFidelity = None


class VastIopsGridPhase(StrictModel):
    """Fig. 4 as one phase (``workload = "vast-iops-grid"``): random 4 KiB I/O over ``N x p``.

    For every ``(N, p)``: buffered random writes (``-e -D 45 -z``), O_DIRECT
    random writes, and random reads of a dataset generated beforehand and
    aged (flushed to QLC), ``repetitions`` times each.

    Attributes
    ----------
    dataset_size : float
        Bytes of the pre-generated read dataset (27 TiB in 1,024 files).
    dataset_files : int
        Files of the read dataset.
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["vast-iops-grid"]
    nodes: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1, 2, 4, 8], description="Client node counts N of the grid."
    )
    ranks_per_node: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1, 2, 4, 8, 16], description="Processes per node p of the grid."
    )
    transfer_size: Bytes = Field("4 KiB", description="Bytes per random I/O call (IOR `-t`).")
    block_size: Bytes = Field(
        "64 GiB", description="Bytes per rank of the random-write tests (IOR `-b`)."
    )
    repetitions: Annotated[int, Field(ge=1)] = Field(
        5, description="Runs of each (N, p) combination and test."
    )
    stonewall: Seconds = Field("45 s", description="IOR `-D` in seconds.")
    dataset_size: Bytes = "27 TiB"
    dataset_files: Annotated[int, Field(ge=1)] = 1024
    aging_bytes: Bytes = Field(
        "8 TiB", description="Throw-away bytes written to flush the read dataset to QLC."
    )
    workers: Annotated[int, Field(ge=1)] = Field(2, description="Processes the grid is split over.")
    progress: bool = Field(True, description="Show a progress bar.")
    fidelity: StudyFidelity = None


class VastSizeSweepPhase(StrictModel):
    """Fig. 5 as one phase (``workload = "vast-size-sweep"``).

    For each dataset size: generate it with sequential 1 MiB writes of
    ``nodes x ranks_per_node`` processes (file per process), then read it at
    random 4 KiB offsets with the same processes for ``stonewall`` seconds.

    Attributes
    ----------
    sizes : list of float
        Dataset sizes in bytes.
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["vast-size-sweep"]
    sizes: list[Bytes] = Field(
        default_factory=lambda: [
            "0.25 TB",
            "0.5 TB",
            "1 TB",
            "2 TB",
            "3 TB",
            "4 TB",
            "6 TB",
            "8 TB",
            "12 TB",
        ]
    )
    nodes: Annotated[int, Field(ge=1)] = Field(
        8, description="Client nodes that generate and read each dataset."
    )
    ranks_per_node: Annotated[int, Field(ge=1)] = Field(8, description="Processes per node.")
    transfer_size: Bytes = Field("4 KiB", description="Bytes per random read (IOR `-t`).")
    repetitions: Annotated[int, Field(ge=1)] = Field(
        5, description="Random-read runs per dataset size."
    )
    stonewall: Seconds = Field("45 s", description="Seconds each random read runs (IOR `-D`).")
    workers: Annotated[int, Field(ge=1)] = Field(
        2, description="Processes the sizes are split over."
    )
    progress: bool = Field(True, description="Show a progress bar.")
    fidelity: StudyFidelity = None


# ------------------------------------------------------------------ helpers
def _ior(
    name: str,
    operation: str,
    nodes: int,
    ppn: int,
    transfer_B: float,
    dataset: str,
    **options: Any,
) -> Any:
    """A :class:`VastIorPhase` with the seed's Table I defaults for bandwidth tests."""
    from flashsim.systems.vast import VastIorPhase

    block = options.pop("block_size_B", transfer_B)
    segments = options.pop("segments", int(min(16 * TIB / block, MAX_SEGMENTS)))
    fields: dict[str, Any] = {
        "name": name,
        "workload": "ior",
        "operation": operation,
        "nodes": nodes,
        "ranks_per_node": ppn,
        "transfer_size": f"{transfer_B!r} B",
        "block_size": f"{block!r} B",
        "segments": segments,
        "reorder_tasks": True,
        "dataset": dataset,
        "file_per_process": True,
    }
    fields.update(options)
    return VastIorPhase(**fields)


def _system(model: Any, seed: int, fidelity: str | None = None) -> Any:
    from flashsim.systems.vast import VastSystem

    sim = Simulation(seed)
    system = VastSystem(model, sim, "request" if fidelity == "request" else "flow")
    system.prefill()
    return system


def _test_fidelity(phase: Any, operation: str, direct_io: bool = False) -> str:
    """Fidelity one test of a study runs at: the study's, but buffered writes need flow."""
    if operation == "write" and not direct_io:
        return "flow"
    return "request" if phase.fidelity == "request" else "flow"


def _fidelity_summary(df: pd.DataFrame) -> str:
    """The fidelities a study's tests ran at, e.g. ``"flow"`` or ``"flow+request"``."""
    if "fidelity" not in df or not len(df):
        return "flow"
    return "+".join(sorted(str(f) for f in df["fidelity"].unique()))


def _age(system: Any, total_B: float, passes: int, nodes: int, ppn: int) -> None:
    """The seed's pre-read flush: write and delete ``total_B / passes`` bytes ``passes`` times."""
    ranks = nodes * ppn
    per_pass = total_B / passes
    segments = max(1, round(per_pass / (ranks * MIB)))
    phase = _ior(
        "age",
        "write",
        nodes,
        ppn,
        MIB,
        "age",
        block_size_B=MIB,
        segments=segments,
        fsync=True,
        repetitions=passes,
        delete_after=True,
        fidelity="flow",  # buffered writes
    )
    system.run_phase(phase)


def _rows(result: PhaseResult, **keys: Any) -> list[dict[str, Any]]:
    out = []
    for rep, r in enumerate(result.extra["repetitions"]):
        row = dict(keys)
        row.update(
            rep=rep,
            bandwidth_Bps=r["bandwidth_Bps"],
            iops=r["iops"],
            time_s=r["time_s"],
            fidelity=result.fidelity or result.extra.get("fidelity", "flow"),
        )
        out.append(row)
    return out


def _split(items: Sequence[Any], workers: int) -> list[list[Any]]:
    """Deal ``items`` round-robin over ``workers`` lists (largest concurrency spread)."""
    n = max(1, min(workers, len(items)))
    return [list(items[i::n]) for i in range(n)]


# ------------------------------------------------------------------ workers
def grid_worker(
    model: Any,
    phase: VastGridPhase,
    combos: list[tuple[int, int, float]],
    seed: int,
    progress: Progress,
) -> list[dict[str, Any]]:
    """Run ``combos`` of the bandwidth grid on one fresh system; one row per repetition."""
    rows: list[dict[str, Any]] = []
    modes = ["naive", "aged"] if phase.mode == "both" else [phase.mode]
    common = {
        "stonewall": f"{phase.stonewall} s",
        "wear_out": True,
        "repetitions": phase.repetitions,
        "data_entropy": phase.data_entropy,
    }
    for mode in modes:
        system = _system(model, seed, phase.fidelity)

        def test(op: str, n: int, p: int, t: float, mode: str = mode, system: Any = system) -> None:
            ds = f"{mode}-N{n}-p{p}-t{int(t)}"
            fsync = {"fsync": True} if op == "write" else {}
            fid = _test_fidelity(phase, op)
            res = system.run_phase(
                _ior(f"{op[0]}-{ds}", op, n, p, t, ds, **fsync, **common, fidelity=fid)
            )
            rows.extend(_rows(res, mode=mode, op=op, N=n, p=p, x=n * p, t=t))
            progress(phase.repetitions)

        if mode == "naive":
            for n, p, t in combos:
                test("write", n, p, t)
                test("read", n, p, t)
        else:
            for n, p, t in combos:
                test("write", n, p, t)
            _age(system, phase.aging_bytes, phase.aging_passes, max(phase.nodes), 16)
            for n, p, t in combos:
                test("read", n, p, t)
    return rows


def _parallel(
    func: Callable[..., list[dict[str, Any]]],
    arg_sets: list[tuple[Any, ...]],
    total: int,
    label: str,
    progress: bool,
) -> list[dict[str, Any]]:
    """Run ``func(*args, progress)`` for each argument set as its own Dask task, with a bar.

    :func:`flashsim.sweep.run_tasks` is the executor (one argument set: this
    process; otherwise a local Dask cluster, or the cluster of the sweep this
    study is a point of).  Rows come back in argument-set order.
    """
    from tqdm import tqdm

    from flashsim.sweep import run_tasks

    show = progress and sys.stderr.isatty()
    bar = tqdm(total=total, desc=label, unit="test", disable=not show, leave=False)
    try:
        parts = run_tasks(func, arg_sets, bar.update)
    finally:
        bar.close()
    return [row for rows in parts for row in rows]


# ------------------------------------------------------------------ studies
def run_grid(model: Any, phase: VastGridPhase, seed: int = 0) -> pd.DataFrame:
    """Run the bandwidth grid; one row per test (mode, op, N, p, x, t, rep, bandwidth)."""
    combos = [
        (n, p, t) for n in phase.nodes for p in phase.ranks_per_node for t in phase.transfer_sizes
    ]
    # Deal the most expensive combinations (large N x p) evenly.
    combos.sort(key=lambda c: -c[0] * c[1])
    parts = _split(combos, phase.workers)
    n_modes = 2 if phase.mode == "both" else 1
    total = len(combos) * 2 * phase.repetitions * n_modes
    arg_sets = [(model, phase, part, seed + i) for i, part in enumerate(parts)]
    rows = _parallel(grid_worker, arg_sets, total, phase.name, phase.progress)
    return pd.DataFrame(rows)


def summarize_grid(df: pd.DataFrame) -> dict[str, float]:
    """Fig. 2/3 numbers: per mode, operation and ``x = N p``, the mean and CV of bandwidth."""
    out: dict[str, float] = {}
    for (mode, op, x), g in df.groupby(["mode", "op", "x"]):
        bw = g["bandwidth_Bps"].to_numpy()
        out[f"{mode}_{op}_GBps_x{x}"] = float(bw.mean() / 1e9)
        out[f"{mode}_{op}_cv_x{x}"] = (
            float(bw.std(ddof=0)) / float(bw.mean()) if bw.mean() > 0 else math.nan
        )
        by_t = g.groupby("t")["bandwidth_Bps"].mean().to_numpy()
        out[f"{mode}_{op}_cv_t_x{x}"] = float(by_t.std(ddof=0) / by_t.mean())
    for mode in ("naive", "aged"):
        for op in ("write", "read"):
            cvs = [v for k, v in out.items() if k.startswith(f"{mode}_{op}_cv_x")]
            if cvs:
                out[f"{mode}_{op}_cv_max"] = float(max(cvs))
                out[f"{mode}_{op}_cv_mean"] = float(np.mean(cvs))
            cvt = [v for k, v in out.items() if k.startswith(f"{mode}_{op}_cv_t_x")]
            if cvt:
                out[f"{mode}_{op}_cv_t_max"] = float(max(cvt))
    xs = sorted(df["x"].unique())
    if xs:
        top = xs[-1]
        w = out.get(f"naive_write_GBps_x{top}")
        r = out.get(f"naive_read_GBps_x{top}")
        if w and r:
            out["naive_read_write_ratio_xmax"] = r / w
        if len(xs) >= 2:
            # Fig. 2's slope at the top: the mean at the largest x over the next smaller x.
            for mode in ("naive", "aged"):
                for op in ("write", "read"):
                    hi = out.get(f"{mode}_{op}_GBps_x{top}")
                    lo = out.get(f"{mode}_{op}_GBps_x{xs[-2]}")
                    if hi and lo:
                        out[f"{mode}_{op}_xmax_over_prev"] = hi / lo
        w_mid = out.get("naive_write_GBps_x32")
        if w and w_mid:
            out["naive_write_saturation_xmax_over_x32"] = w / w_mid
        for x in xs:
            a = out.get(f"aged_read_GBps_x{x}")
            n = out.get(f"naive_read_GBps_x{x}")
            if a and n:
                out[f"aged_over_naive_read_x{x}"] = a / n
        out["x_max"] = float(top)
    return out


def read_limits(model: Any, transfer_B: float = MIB) -> pd.DataFrame:
    """What bounds sequential reads at each ``x = N p`` of Fig. 2/3, from the model alone.

    For each ``x`` (``N = min(8, x)`` clients, ``p = x / N`` processes each):
    the aggregate each candidate mechanism alone would allow, in bytes/s --
    every process at its own read rate (``process_Bps``), every read-ahead
    window over its zero-load round trip (``readahead_Bps``), the client HCAs
    the ``nconnect``/multipath mount uses (``client_hcas_Bps``), the CNodes'
    client ports (``cnode_ports_Bps``), the SCM drives (``scm_Bps``) and the
    QLC drives (``qlc_Bps``) -- and what the model predicts with the drives'
    queues (``naive_Bps``: data in SCM; ``aged_Bps``: data on QLC) with the
    mechanism that binds each.
    """
    from flashsim.systems.vast import VastSystem

    system = VastSystem(model, Simulation(0), "flow")
    cm = system.client_model
    rsize = float(cm.mount.rsize)
    window_B = max(cm.readahead_B(), transfer_B)
    n_scm, n_qlc = len(system.scm), len(system.qlc)
    scm_Bps = n_scm * system.scm_spec.read_bandwidth * model.tier.scm_read_efficiency
    qlc_Bps = n_qlc * system.qlc_spec.read_bandwidth
    cnode_Bps = model.cnode.count * model.cnode.client_nic.node_Bps("egress")
    rows = []
    for x in (1, 2, 4, 8, 16, 32, 64, 128):
        n = min(model.client.count, x)
        bounds = {
            "process": x * cm.copy_rate_Bps(transfer_B),
            "read-ahead": x * window_B / system.rtt_s(rsize, "read", 1.0),
            "client HCAs": n * cm.nic_Bps("ingress"),
            "CNode ports": cnode_Bps,
        }
        naive = min(x * system.sequential_read_rate_Bps(transfer_B, x, 1.0), *bounds.values())
        aged = min(
            x * system.sequential_read_rate_Bps(transfer_B, x, 0.0), *bounds.values(), qlc_Bps
        )
        corner = min(*bounds.values(), scm_Bps)
        naive_limit = min(bounds, key=lambda k: bounds[k])
        if naive < 0.97 * min(bounds.values()):
            naive_limit = "SCM drives' queues"
        aged_bounds = {**bounds, "QLC drives": qlc_Bps}
        rows.append(
            {
                "x": x,
                "N": n,
                "p": x // n,
                **{f"{k}_Bps": v for k, v in bounds.items()},
                "scm_Bps": scm_Bps,
                "qlc_Bps": qlc_Bps,
                "corner_naive_Bps": corner,
                "naive_Bps": naive,
                "aged_Bps": aged,
                "naive_limit": naive_limit,
                "aged_limit": min(aged_bounds, key=lambda k: aged_bounds[k]),
            }
        )
    return pd.DataFrame(rows)


def iops_worker(
    model: Any,
    phase: VastIopsGridPhase,
    combos: list[tuple[int, int]],
    seed: int,
    progress: Progress,
) -> list[dict[str, Any]]:
    """Fig. 4 for ``combos`` on one fresh system; one row per repetition."""
    system = _system(model, seed, phase.fidelity)
    t = phase.transfer_size
    files = phase.dataset_files
    n_gen = max(phase.nodes)
    ppn_gen = max(1, files // n_gen)
    per_file = phase.dataset_size / (n_gen * ppn_gen)
    gen = _ior(
        "generate",
        "write",
        n_gen,
        ppn_gen,
        MIB,
        "iops-data",
        block_size_B=MIB,
        segments=max(1, int(per_file // MIB)),
        fsync=True,
        fidelity="flow",  # buffered writes
    )
    system.run_phase(gen)
    _age(system, phase.aging_bytes, 8, n_gen, 16)
    rows: list[dict[str, Any]] = []
    common = {
        "stonewall": f"{phase.stonewall} s",
        "repetitions": phase.repetitions,
        "access": "random",
        "block_size_B": phase.block_size,
        "segments": 1,
    }
    for n, p in combos:
        for label, op, direct in (
            ("write-buffered", "write", False),
            ("write-direct", "write", True),
            ("read", "read", False),
        ):
            ds = "iops-data" if op == "read" else f"iops-w-N{n}-p{p}-{label}"
            opts = dict(common)
            if op == "read":
                opts["block_size_B"] = per_file
                opts["reorder_tasks"] = True
            res = system.run_phase(
                _ior(
                    f"{label}-N{n}-p{p}",
                    op,
                    n,
                    p,
                    t,
                    ds,
                    fsync=(op == "write"),
                    direct_io=direct,
                    fidelity=_test_fidelity(phase, op, direct),
                    **opts,
                )
            )
            rows.extend(_rows(res, test=label, N=n, p=p, x=n * p))
            progress(phase.repetitions)
    return rows


def run_iops_grid(model: Any, phase: VastIopsGridPhase, seed: int = 0) -> pd.DataFrame:
    """Run Fig. 4's random I/O grid; one row per test (test, N, p, x, rep, iops)."""
    combos = [(n, p) for n in phase.nodes for p in phase.ranks_per_node]
    combos.sort(key=lambda c: -c[0] * c[1])
    parts = _split(combos, phase.workers)
    total = len(combos) * 3 * phase.repetitions
    arg_sets = [(model, phase, part, seed + i) for i, part in enumerate(parts)]
    return pd.DataFrame(_parallel(iops_worker, arg_sets, total, phase.name, phase.progress))


def summarize_iops(df: pd.DataFrame) -> dict[str, float]:
    """Fig. 4 numbers: mean IOPS per test and x, N-vs-p spread, and scaling ratios."""
    out: dict[str, float] = {}
    for (test, x), g in df.groupby(["test", "x"]):
        out[f"{test}_iops_x{x}"] = float(g["iops"].mean())
        per_np = g.groupby(["N", "p"])["iops"].mean()
        if per_np.size > 1:
            out[f"{test}_np_spread_x{x}"] = float(per_np.max() / per_np.min())
    for test in df["test"].unique():
        spreads = [v for k, v in out.items() if k.startswith(f"{test}_np_spread_x")]
        if spreads:
            out[f"{test}_np_spread_max"] = float(max(spreads))
        xs = sorted(df.loc[df["test"] == test, "x"].unique())
        if len(xs) >= 2:
            top = xs[-1]
            half = xs[-2]
            out[f"{test}_xmax_over_prev"] = out[f"{test}_iops_x{top}"] / out[f"{test}_iops_x{half}"]
            if 16 in xs:
                out[f"{test}_xmax_over_x16"] = out[f"{test}_iops_x{top}"] / out[f"{test}_iops_x16"]
    return out


def size_worker(
    model: Any,
    phase: VastSizeSweepPhase,
    jobs: list[tuple[float, bool]],
    seed: int,
    progress: Progress,
) -> list[dict[str, Any]]:
    """Fig. 5 for ``jobs`` of (dataset size in bytes, aged), each on a fresh system.

    An aged dataset is flushed to QLC (8 TiB of throw-away data) before it is
    read: the reference rate of a dataset fully on QLC.  One row per repetition.
    """
    n, p = phase.nodes, phase.ranks_per_node
    rows: list[dict[str, Any]] = []
    for size, aged in jobs:
        system = _system(model, seed, phase.fidelity)
        ds = f"size-{size:.6g}"
        segments = max(1, int(size / (n * p) // MIB))
        per_rank = segments * MIB
        gen = _ior(
            f"gen-{ds}",
            "write",
            n,
            p,
            MIB,
            ds,
            block_size_B=MIB,
            segments=segments,
            fsync=True,
            reorder_tasks=False,
            fidelity="flow",  # buffered writes
        )
        system.run_phase(gen)
        if aged:
            _age(system, 8 * TIB, 8, n, 16)
        scm, qlc = 0.0, 0.0
        for r in range(n * p):
            s_, q_ = system.tier.location(system.object_name(ds, r))
            scm, qlc = scm + s_, qlc + q_
        res = system.run_phase(
            _ior(
                f"read-{ds}",
                "read",
                n,
                p,
                phase.transfer_size,
                ds,
                stonewall=f"{phase.stonewall} s",
                repetitions=phase.repetitions,
                access="random",
                block_size_B=per_rank,
                segments=1,
                fidelity=_test_fidelity(phase, "read"),
            )
        )
        fraction = scm / max(scm + qlc, 1.0)
        rows.extend(_rows(res, size_B=size, scm_fraction=fraction, aged=aged))
        progress(phase.repetitions)
    return rows


def run_size_sweep(model: Any, phase: VastSizeSweepPhase, seed: int = 0) -> pd.DataFrame:
    """Run Fig. 5's sweep; one row per test (size, SCM fraction, aged, rep, iops).

    Every size is generated on a fresh system in the same steady state; one
    extra job reads the smallest dataset after aging it (the all-QLC reference).
    """
    jobs = [(s, False) for s in phase.sizes] + [(min(phase.sizes), True)]
    groups = _split(jobs, phase.workers)
    arg_sets = [(model, phase, group, seed) for group in groups]
    total = len(jobs) * phase.repetitions
    return pd.DataFrame(_parallel(size_worker, arg_sets, total, phase.name, phase.progress))


def summarize_sizes(df: pd.DataFrame) -> dict[str, float]:
    """Fig. 5 numbers: IOPS per size, and the fresh-smallest over the all-QLC rate."""
    out: dict[str, float] = {}
    fresh = df[~df["aged"].astype(bool)]
    means = fresh.groupby("size_B")["iops"].mean().sort_index()
    fractions = fresh.groupby("size_B")["scm_fraction"].mean().sort_index()
    for size, iops, frac in zip(
        means.index.to_numpy(dtype=float), means.to_numpy(), fractions.to_numpy(), strict=True
    ):
        out[f"iops_{size / 1e12:g}TB"] = float(iops)
        out[f"scm_fraction_{size / 1e12:g}TB"] = float(frac)
    aged = df[df["aged"].astype(bool)]
    if len(aged):
        out["iops_all_qlc"] = float(aged["iops"].mean())
        out["scm_fraction_aged"] = float(aged["scm_fraction"].mean())
        out["smallest_over_all_qlc"] = float(means.iloc[0]) / out["iops_all_qlc"]
    if means.size >= 2:
        out["smallest_over_largest"] = float(means.iloc[0] / means.iloc[-1])
        steps = np.diff(means.to_numpy())
        out["monotone_nonincreasing"] = float(bool(np.all(steps <= 1e-9 * means.max())))
    return out


# ------------------------------------------------------------ phase adapters
def run_study_phase(model: Any, phase: Any, seed: int, fidelity: str = "flow") -> PhaseResult:
    """Run a grid/sweep phase and return its summary as a :class:`PhaseResult`.

    ``fidelity`` (the scenario's) applies unless the phase sets its own; the
    result's ``fidelity`` and ``extra["fidelity_by_test"]`` say what each kind
    of test actually ran at (buffered writes always run in flow fidelity).
    """
    started = time.perf_counter()
    if phase.fidelity is None:
        phase = phase.model_copy(update={"fidelity": fidelity})
    if isinstance(phase, VastGridPhase):
        df = run_grid(model, phase, seed)
        summary = summarize_grid(df)
        value_key = f"naive_read_GBps_x{int(summary.get('x_max', 0))}"
        bandwidth = summary.get(value_key, math.nan) * 1e9
        op = "grid"
        iops = math.nan
    elif isinstance(phase, VastIopsGridPhase):
        df = run_iops_grid(model, phase, seed)
        summary = summarize_iops(df)
        bandwidth = math.nan
        iops = summary.get(f"read_iops_x{int(df['x'].max())}", math.nan)
        op = "iops-grid"
    else:
        df = run_size_sweep(model, phase, seed)
        summary = summarize_sizes(df)
        bandwidth = math.nan
        iops = float(df.loc[~df["aged"].astype(bool), "iops"].iloc[0]) if len(df) else math.nan
        op = "size-sweep"
    extra: dict[str, Any] = dict(summary)
    extra["tests"] = len(df)
    extra["wall_s"] = time.perf_counter() - started
    extra["rows"] = df.to_dict(orient="records")
    kind = "op" if "op" in df else "test" if "test" in df else None
    if "fidelity" in df and len(df):
        groups = df.groupby(kind)["fidelity"] if kind else [("read", df["fidelity"])]
        extra["fidelity_by_test"] = {
            str(k): "+".join(sorted(str(f) for f in g.unique())) for k, g in groups
        }
    return PhaseResult(
        name=phase.name,
        operation=op,
        bandwidth_Bps=bandwidth,
        iops=iops,
        ranks=int(df["x"].max()) if "x" in df else phase.nodes * phase.ranks_per_node,
        transfer_size_B=math.nan,
        sim_time_s=math.nan,
        bytes_B=math.nan,
        extra=extra,
        fidelity=_fidelity_summary(df),
    )


# ------------------------------------------------------------------ figures
#: Values the seed states in its text and slides (the figures' data are not published).
PUBLISHED: dict[str, float] = {
    "write_saturation_GBps": 5.0,  # Fig. 2; slides "saturates at 5 GB/s"
    "naive_read_min_GBps_x128": 25.0,  # slides "mu > 25 GB/s"
    "scm_read_GBps": 30.0,  # Sec. III-B, 12 SCM drives
    "qlc_read_GBps": 140.0,  # Sec. III-B, 44 QLC drives
    "read_write_ratio": 5.0,  # Sec. III-A
    "aged_over_naive_x32_min": 1.5,  # Sec. III-B "over 50% higher"
    "aged_over_naive_x32_max": 2.0,  # ... and not "twice" (our reading of the same words)
    "randread_qlc_64_iops": 52_000.0,  # Sec. IV-B
    "randread_scm_over_qlc": 3.0,  # Fig. 5 "up to 3x"
    "scm_buffer_TB": 3.0,  # Sec. III-B
}


def plot_fig2(df: pd.DataFrame, ax: Any) -> None:
    """Fig. 2: naive mean bandwidth and CV against ``x = N p`` (published statements dashed)."""
    naive = df[df["mode"] == "naive"]
    for op, color in (("write", "tab:red"), ("read", "tab:blue")):
        g = naive[naive["op"] == op].groupby("x")["bandwidth_Bps"]
        ax.plot(g.mean().index, g.mean() / 1e9, "o-", color=color, label=f"{op} (flashsim)")
    ax.axhline(
        PUBLISHED["write_saturation_GBps"],
        color="tab:red",
        ls="--",
        lw=1,
        label="write saturation 5 GB/s (seed)",
    )
    ax.axhline(
        PUBLISHED["naive_read_min_GBps_x128"],
        color="tab:blue",
        ls="--",
        lw=1,
        label="read > 25 GB/s at x=128 (seed)",
    )
    ax.axhline(PUBLISHED["scm_read_GBps"], color="grey", ls=":", lw=1, label="12 SCM: 30 GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N x p")
    ax.set_ylabel("mean bandwidth (GB/s)")
    ax.set_title("Fig. 2: naive bandwidth")
    ax.legend(fontsize=7)
    twin = ax.twinx()
    for op, color in (("write", "tab:red"), ("read", "tab:blue")):
        g = naive[naive["op"] == op].groupby("x")["bandwidth_Bps"]
        twin.plot(g.mean().index, g.std(ddof=0) / g.mean(), "x:", color=color, alpha=0.6)
    twin.set_ylabel("CV (x markers)")
    twin.set_ylim(0, 1)


def plot_fig3(df: pd.DataFrame, ax: Any) -> None:
    """Fig. 3: naive vs aged read bandwidth with one-standard-deviation error bars."""
    reads = df[df["op"] == "read"]
    for mode, color in (("naive", "tab:blue"), ("aged", "tab:green")):
        g = reads[reads["mode"] == mode].groupby("x")["bandwidth_Bps"]
        ax.errorbar(
            g.mean().index,
            g.mean() / 1e9,
            yerr=g.std(ddof=0) / 1e9,
            fmt="o-",
            color=color,
            capsize=3,
            label=f"{mode} (flashsim)",
        )
    naive32 = reads[(reads["mode"] == "naive") & (reads["x"] == 32)]["bandwidth_Bps"].mean()
    ax.vlines(
        [32],
        PUBLISHED["aged_over_naive_x32_min"] * naive32 / 1e9,
        PUBLISHED["aged_over_naive_x32_max"] * naive32 / 1e9,
        color="k",
        lw=3,
        label="seed: aged 'over 50%' above naive at x=32 (1.5-2x)",
    )
    ax.axhline(PUBLISHED["qlc_read_GBps"], color="grey", ls=":", lw=1, label="44 QLC: 140 GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N x p")
    ax.set_ylabel("read bandwidth (GB/s)")
    ax.set_title("Fig. 3: naive vs aged reads")
    ax.legend(fontsize=7)


def plot_fig4(df: pd.DataFrame, ax: Any) -> None:
    """Fig. 4: random 4 KiB IOPS against ``x = N p`` for each test."""
    for test, color in (
        ("read", "tab:blue"),
        ("write-buffered", "tab:red"),
        ("write-direct", "tab:orange"),
    ):
        g = df[df["test"] == test].groupby("x")["iops"]
        ax.errorbar(
            g.mean().index,
            g.mean(),
            yerr=g.std(ddof=0),
            fmt="o-",
            color=color,
            capsize=3,
            label=f"{test} (flashsim)",
        )
    ax.plot(
        [64],
        [PUBLISHED["randread_qlc_64_iops"]],
        "k*",
        ms=10,
        label="seed: 52 KIOPS read at 64 procs",
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N x p")
    ax.set_ylabel("IOPS")
    ax.set_title("Fig. 4: random 4 KiB I/O")
    ax.legend(fontsize=7)


def plot_fig5(df: pd.DataFrame, ax: Any) -> None:
    """Fig. 5: 64-process random-read rate against dataset size."""
    fresh = df[~df["aged"].astype(bool)]
    g = fresh.groupby("size_B")["iops"]
    ax.errorbar(
        g.mean().index / 1e12,
        g.mean() / 1e3,
        yerr=g.std(ddof=0) / 1e3,
        fmt="o-",
        capsize=3,
        label="fresh dataset (flashsim)",
    )
    ax.axhline(
        PUBLISHED["randread_qlc_64_iops"] / 1e3,
        color="k",
        ls="--",
        lw=1,
        label="seed: 52 KIOPS all on QLC",
    )
    ax.axhline(
        PUBLISHED["randread_scm_over_qlc"] * PUBLISHED["randread_qlc_64_iops"] / 1e3,
        color="k",
        ls=":",
        lw=1,
        label="seed: up to 3x in SCM",
    )
    ax.axvline(PUBLISHED["scm_buffer_TB"], color="grey", ls=":", lw=1, label="3 TB SCM buffer")
    ax.set_xlabel("dataset size (TB)")
    ax.set_ylabel("KIOPS")
    ax.set_title("Fig. 5: random reads vs dataset size")
    ax.legend(fontsize=7)
