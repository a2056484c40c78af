"""The units of work of the PDSW'21 VAST studies: each a few IOR tests on one fresh system.

A unit is the smallest piece of a study that needs a system of its own:

* :func:`grid_unit` -- one ``(mode, N, p)`` of the bandwidth grid: every
  transfer size written then read (``naive``), or all written, the SCM
  flushed, then all read (``aged``);
* :func:`iops_unit` -- one ``(N, p)`` of Fig. 4: the read dataset generated
  and aged, then buffered and O_DIRECT random writes and random reads;
* :func:`size_unit` -- one dataset size of Fig. 5 (fresh, or aged onto QLC).

Each unit builds its own system, seeded by :func:`unit_seed` from the
scenario's seed and the unit's key, so a unit's rows depend on nothing but
the unit: not on which worker runs it, nor on what ran before it there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.systems.vast.model import VastModel
from flashsim.systems.vast.phases import (
    VastGridPhase,
    VastIopsGridPhase,
    VastIorPhase,
    VastSizeSweepPhase,
)
from flashsim.systems.vast.system import VastSystem
from flashsim.units import MIB, TIB
from flashsim.workloads.ior import IorDetails

#: IOR segment count of the bandwidth tests: the lesser of 16 TiB per rank or 2**31 - 1 (App. B).
MAX_SEGMENTS = 2_147_483_647

#: Bytes of throw-away data the size sweep writes to age a dataset onto QLC (App. B, 8 x 1 TiB).
SIZE_SWEEP_AGING_B = 8 * TIB

#: Passes of the pre-read flush: App. B writes and deletes 1 TiB eight times.
AGING_PASSES = 8

#: Processes per node of the pre-read flush (App. B: 8 nodes x 16 processes).
AGING_RANKS_PER_NODE = 16

Progress = Callable[[int], None]
Rows = list[dict[str, Any]]


def unit_seed(seed: int, key: str) -> int:
    """The seed of one unit's simulation: a stable 63-bit hash of the scenario seed and ``key``.

    Parameters
    ----------
    seed : int
        The scenario's seed (>= 0).
    key : str
        The unit's name, e.g. ``"vast-grid/naive/N8/p16"``.
    """
    digest = hashlib.blake2b(f"{seed}/{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def ior_phase(
    name: str,
    operation: str,
    nodes: int,
    ppn: int,
    transfer_B: float,
    dataset: str,
    **options: Any,
) -> VastIorPhase:
    """A :class:`VastIorPhase` with the seed's Table I defaults for bandwidth tests.

    File per process, ``reorder_tasks``, block = transfer (bytes), and as many
    segments as 16 TiB per rank allows (at most :data:`MAX_SEGMENTS`), unless
    ``block_size_B`` or ``segments`` say otherwise; other ``options`` are
    :class:`VastIorPhase` keys.
    """
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


def fresh_system(model: VastModel, seed: int, fidelity: str | None = None) -> VastSystem:
    """A new system in a new simulation, its SCM buffer prefilled to the hold level.

    It runs IOR phases only (a unit of a study is made of IOR tests).
    """
    system = VastSystem(model, Simulation(seed), "request" if fidelity == "request" else "flow")
    system.prefill()
    return system


def fidelity_of_test(study_fidelity: str | None, operation: str, direct_io: bool = False) -> str:
    """Fidelity one test of a study runs at: the study's, but buffered writes need flow."""
    if operation == "write" and not direct_io:
        return "flow"
    return "request" if study_fidelity == "request" else "flow"


def age(system: VastSystem, total_B: float, passes: int, nodes: int, ppn: int) -> None:
    """The seed's pre-read flush: write and delete ``total_B / passes`` bytes ``passes`` times."""
    ranks = nodes * ppn
    per_pass = total_B / passes
    segments = max(1, round(per_pass / (ranks * MIB)))
    phase = ior_phase(
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


def rows_of(result: PhaseResult, **keys: Any) -> Rows:
    """One row per repetition of ``result``: ``keys``, then rep, bandwidth, IOPS, time, fidelity."""
    out = []
    details = result.details(IorDetails)
    for rep, r in enumerate(details.repetitions):
        row = dict(keys)
        row.update(
            rep=rep,
            bandwidth_Bps=r.bandwidth_Bps,
            iops=r.iops,
            time_s=r.time_s,
            fidelity=result.fidelity or details.fidelity,
        )
        out.append(row)
    return out


# ------------------------------------------------------------------- units
def grid_unit(
    model: VastModel, phase: VastGridPhase, seed: int, mode: str, n: int, p: int, tick: Progress
) -> Rows:
    """One ``(mode, N, p)`` of the bandwidth grid, every transfer size, on a fresh system.

    ``naive``: each size written then read back at once.  ``aged``: every
    size written, the SCM flushed with ``aging_bytes`` (the seed's pre-read
    flush, ``max(nodes)`` x 16 processes), then every size read.
    """
    system = fresh_system(model, seed, phase.fidelity)
    rows: Rows = []
    common = {
        "stonewall": f"{phase.stonewall} s",
        "wear_out": True,
        "repetitions": phase.repetitions,
        "data_entropy": phase.data_entropy,
    }

    def test(op: str, t: float) -> None:
        ds = f"{mode}-N{n}-p{p}-t{int(t)}"
        fsync = {"fsync": True} if op == "write" else {}
        fid = fidelity_of_test(phase.fidelity, op)
        res = system.run_phase(
            ior_phase(f"{op[0]}-{ds}", op, n, p, t, ds, **fsync, **common, fidelity=fid)
        )
        rows.extend(rows_of(res, mode=mode, op=op, N=n, p=p, x=n * p, t=t))
        tick(phase.repetitions)

    if mode == "naive":
        for t in phase.transfer_sizes:
            test("write", t)
            test("read", t)
    else:
        for t in phase.transfer_sizes:
            test("write", t)
        age(system, phase.aging_bytes, phase.aging_passes, max(phase.nodes), AGING_RANKS_PER_NODE)
        for t in phase.transfer_sizes:
            test("read", t)
    return rows


def iops_unit(
    model: VastModel, phase: VastIopsGridPhase, seed: int, n: int, p: int, tick: Progress
) -> Rows:
    """Fig. 4 at one ``(N, p)`` on a fresh system: the three random 4 KiB tests.

    The read dataset (``dataset_size`` in ``dataset_files`` files) is
    generated and aged onto QLC first; then buffered random writes, O_DIRECT
    random writes and random reads of that dataset, ``repetitions`` each.
    """
    system = fresh_system(model, seed, phase.fidelity)
    n_gen = max(phase.nodes)
    ppn_gen = max(1, phase.dataset_files // n_gen)
    per_file = phase.dataset_size / (n_gen * ppn_gen)
    gen = ior_phase(
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
    age(system, phase.aging_bytes, AGING_PASSES, n_gen, AGING_RANKS_PER_NODE)
    rows: Rows = []
    common = {
        "stonewall": f"{phase.stonewall} s",
        "repetitions": phase.repetitions,
        "access": "random",
        "block_size_B": phase.block_size,
        "segments": 1,
    }
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
            ior_phase(
                f"{label}-N{n}-p{p}",
                op,
                n,
                p,
                phase.transfer_size,
                ds,
                fsync=(op == "write"),
                direct_io=direct,
                fidelity=fidelity_of_test(phase.fidelity, op, direct),
                **opts,
            )
        )
        rows.extend(rows_of(res, test=label, N=n, p=p, x=n * p))
        tick(phase.repetitions)
    return rows


def size_unit(
    model: VastModel,
    phase: VastSizeSweepPhase,
    seed: int,
    size_B: float,
    aged: bool,
    tick: Progress,
) -> Rows:
    """Fig. 5 for one dataset of ``size_B`` bytes on a fresh system.

    The dataset is generated with sequential 1 MiB writes; an ``aged`` one
    is then flushed to QLC (:data:`SIZE_SWEEP_AGING_B` of throw-away data),
    the reference rate of a dataset fully on QLC.  Then random reads, one row
    per repetition with the fraction of the dataset read from SCM.
    """
    n, p = phase.nodes, phase.ranks_per_node
    system = fresh_system(model, seed, phase.fidelity)
    ds = f"size-{size_B:.6g}"
    segments = max(1, int(size_B / (n * p) // MIB))
    gen = ior_phase(
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
        age(system, SIZE_SWEEP_AGING_B, AGING_PASSES, n, AGING_RANKS_PER_NODE)
    scm, qlc = 0.0, 0.0
    for r in range(n * p):
        s_, q_ = system.tier.location(system.object_name(ds, r))
        scm, qlc = scm + s_, qlc + q_
    res = system.run_phase(
        ior_phase(
            f"read-{ds}",
            "read",
            n,
            p,
            phase.transfer_size,
            ds,
            stonewall=f"{phase.stonewall} s",
            repetitions=phase.repetitions,
            access="random",
            block_size_B=segments * MIB,
            segments=1,
            fidelity=fidelity_of_test(phase.fidelity, "read"),
        )
    )
    fraction = scm / max(scm + qlc, 1.0)
    tick(phase.repetitions)
    return rows_of(res, size_B=size_B, scm_fraction=fraction, aged=aged)
