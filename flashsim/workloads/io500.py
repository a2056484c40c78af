"""The IO-500 benchmark (``workload = "io500"``) on any system kind that implements it.

Follows the phase list, options and scoring of the IO-500 application at tag
``io500-isc26`` (github.com/IO500/io500: ``src/phase-definitions.h``,
``src/phase_*.c``, ``src/main.c``), the version current when this was written.
Standard mode runs, in the application's order::

    ior-easy-write   mdtest-easy-write   ior-hard-write   mdtest-hard-write   find
    ior-easy-read    mdtest-easy-stat    ior-hard-read    mdtest-hard-stat
    mdtest-easy-delete   mdtest-hard-read   mdtest-hard-delete   ior-rnd4K-easy-read

The bandwidth score is the geometric mean of the four ior-easy/ior-hard phases
in GiB/s (IOR's ``aggFileSizeForBW / time / 2^30``), the metadata score the
geometric mean of the eight mdtest/find phases in kIOPS (items / time / 1000),
and the total ``sqrt(bw x md)`` (``calc_score`` in ``src/main.c``; a phase
with a score <= 0 is left out of its mean).  ``ior-rnd4K-easy-read`` (4 KiB
random reads of the ior-easy files) is run and reported but not scored (group
``IO500_NO_SCORE`` since ISC25).  Extended mode adds the optional
``ior-rnd4K-write/read`` and ``ior-rnd1MB-write/read`` phases (one shared file,
random 4 KiB / 1 MiB transfers, 1 GiB blocks), which count only in the
extended score (``[SCOREX]``).  Omitted: ``mdworkbench``, ``find-easy`` and
``find-hard`` (optional, extended mode), data verification (``-R``, ``-X``).

What is modelled
----------------
* IOR phases are :class:`~flashsim.workloads.ior.IorPhase` objects run by the
  system's own IOR path (:meth:`Io500Target.io500_ior`), with the options the
  application passes: ior-easy ``-t/-b`` as configured, file per process by
  default, ``-C -Q 1``, ``-e`` (fsync), ``-D stonewall`` with wear-out on
  writes; ior-hard one shared file, ``-t 47008 -b 47008 -s segments``,
  ``-C -Q 1``, ``-e``; reads read everything the write left (no stonewall).
  A rank's ior-hard transfers are ``ranks x 47,008`` bytes apart, so they
  run as IOR's non-sequential (``access = "random"``) stream: every transfer
  its own RPC and, on RAID6, a sub-stripe read-modify-write.  Whatever the
  system's IOR model includes (RAID read-modify-write, RPC and network
  limits, client caches) applies; on Lustre that includes the extent-lock
  hand-offs between the nodes writing the ior-hard file's objects
  (:mod:`flashsim.systems.lustre.locks`: one object's lock passes from
  client to client on nearly every unaligned write, which is what holds
  real ior-hard-write to tens of GiB/s: seed 001's 14.4 GiB/s on 288 OSTs).
  **Not modelled**: the client merging a node's adjacent transfers into
  larger RPCs, lock expansion and group locks, and MPI-IO collective
  buffering.
* mdtest phases are closed loops of ``ranks`` synchronous ranks, one item in
  flight each, on the system's metadata service
  (:meth:`Io500Target.io500_md_rate`, flow fidelity: analytic;
  :meth:`Io500Target.io500_md_request`, request fidelity: SimPy, run until
  the rate's relative 95 % half-width is below ``md_target_rel_halfwidth``).
  The rate is steady state, so a write phase creates ``min(n, rate x
  stonewall / ranks)`` files per rank (wear-out: every rank the same count),
  and later phases stat, read and delete those files.
* ``find`` scans every file the earlier phases left (mdtest-easy and -hard
  files, the ior-easy and ior-hard files) with ``find_ranks`` processes; the
  processes steal work, so they are split over the easy and hard areas in
  proportion to the entries there and the phase ends when the slower area
  does.  Its score is entries / time / 1000, as pfind's.

A write phase that ends before ``stonewall`` or before the 300 s IO-500
minimum (``opt.minwrite``) is marked ``[INVALID]``, as the application does;
a scenario may use a shorter stonewall for speed, and says so in its output.

How a system plugs in
---------------------
Its built system implements :class:`Io500Target` and hands ``io500`` phases
to :func:`run_io500`; its kind lists ``Io500Target`` in ``implements``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol

from pydantic import Field, model_validator

from flashsim.config import Bytes, Seconds, StrictModel
from flashsim.engine.closedloop import Request, run_closed_loop
from flashsim.engine.runlength import MIN_SAMPLES_FOR_BATCHES, RunLengthControl
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseDetails, PhaseResult
from flashsim.workloads.ior import FileLayout, IorDetails, IorPhase

#: The IO-500 application version whose phase list and scoring this follows.
IO500_VERSION = "io500-isc26"
#: Transfer size of ior-hard (bytes), fixed by the rules (``src/phase_ior_hard.c``).
IOR_HARD_TRANSFER_B = 47008.0
#: Bytes written to and read from each mdtest-hard file (``-w 3901 -e 3901``).
MDTEST_HARD_FILE_B = 3901.0
#: Minimum runtime (s) of a write phase in a valid run (``opt.minwrite``, ``src/main.c``).
IO500_MIN_WRITE_S = 300.0
GIB = 2.0**30

Fidelity = Literal["flow", "request"]
MdKind = Literal["write", "stat", "read", "delete", "find"]
Area = Literal["easy", "hard"]
Group = Literal["bw", "md", "none"]


class Io500Phase(StrictModel):
    """A whole IO-500 run (``workload = "io500"``) as one scenario phase.

    The knobs are the ones the IO-500 rules let a submitter set
    (``io500 --list``): ior-easy's transfer and block size, file per process
    and O_DIRECT, the files per process of the mdtest phases, ior-hard's
    segment count, directory and file striping, and the stonewall.
    """

    name: str = Field(description="Phase name, for output and `--set phases.<name>.<key>`.")
    workload: Literal["io500"]
    nodes: Annotated[int, Field(ge=1)] = Field(description="Client nodes.")
    ranks_per_node: Annotated[int, Field(ge=1)] = Field(description="MPI ranks per client node.")
    mode: Literal["standard", "extended"] = Field(
        "standard",
        description=(
            "`standard`: the scored phases and ior-rnd4K-easy-read; `extended` adds the "
            "optional ior-rnd4K/ior-rnd1MB write and read phases and the [SCOREX] line."
        ),
    )
    stonewall: Seconds = Field(
        "300 s",
        description=(
            "Stonewall of the write phases (IOR -D, mdtest -W). The rules require 300 s; "
            "a write phase shorter than 300 s is marked [INVALID]."
        ),
    )
    ior_easy_transfer_size: Bytes = Field(
        "2 MiB", description="ior-easy transferSize (-t); IO-500's default is 2m."
    )
    ior_easy_block_size: Bytes = Field(
        "9920000 MiB",
        description=(
            "ior-easy blockSize (-b), the most a rank writes; a multiple of the transfer "
            "size. IO-500's default is 9920000m."
        ),
    )
    ior_easy_file_per_process: bool = Field(
        True, description="ior-easy filePerProc (-F): one file per rank, else one shared file."
    )
    ior_easy_direct_io: bool = Field(
        False, description="ior-easy with --posix.odirect (allowed by the rules)."
    )
    ior_easy_layout: FileLayout = Field(
        default_factory=FileLayout,
        description="Striping of the ior-easy files (lfs setstripe on the ior-easy directory).",
    )
    ior_hard_segments: Annotated[int, Field(ge=1)] = Field(
        10_000_000,
        description="ior-hard segmentCount (-s): the most 47,008-byte blocks a rank writes.",
    )
    ior_hard_layout: FileLayout = Field(
        default_factory=FileLayout,
        description=(
            "Striping of the one ior-hard file (and, in extended mode, of the ior-rnd files)."
        ),
    )
    ior_rnd_block_size: Bytes = Field(
        "1 GiB", description="Extended mode: blockSize of the ior-rnd4K/1MB phases (1073741824)."
    )
    mdtest_easy_files_per_proc: Annotated[int, Field(ge=1)] = Field(
        1_000_000,
        description="mdtest-easy n: the most files a rank creates (in its own directory).",
    )
    mdtest_hard_files_per_proc: Annotated[int, Field(ge=1)] = Field(
        1_000_000,
        description="mdtest-hard n: the most files a rank creates in the shared directory.",
    )
    mdtest_hard_dir_stripe_count: Annotated[int, Field(ge=1)] = Field(
        1,
        description=(
            "Metadata servers the shared mdtest-hard directory is striped over (Lustre DNE2 "
            "`lfs setdirstripe -c`); 1 puts it on one MDT. Systems without directory "
            "striping ignore it."
        ),
    )
    find_ranks: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Processes of the find phase ([find] nproc); default: all ranks."
    )
    fidelity: Fidelity | None = Field(
        None, description="Override the scenario's fidelity for every IO-500 phase."
    )
    md_target_rel_halfwidth: Annotated[float, Field(gt=0.0)] = Field(
        0.02,
        description=(
            "Request fidelity: an mdtest/find rate is measured until its relative 95 % "
            "half-width is below this."
        ),
    )
    md_sample_interval: Annotated[int, Field(ge=1)] = Field(
        200, description="Request fidelity: metadata items per throughput sample."
    )
    max_requests: Annotated[int, Field(ge=1)] = Field(
        1_000_000,
        description="Request fidelity: stop a metadata rate measurement after this many items.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Io500Phase:
        ratio = self.ior_easy_block_size / self.ior_easy_transfer_size
        if abs(ratio - round(ratio)) > 1e-9 or ratio < 1:
            raise ValueError(
                f"ior_easy_block_size(={self.ior_easy_block_size:g} B) must be a multiple of "
                f"ior_easy_transfer_size(={self.ior_easy_transfer_size:g} B)"
            )
        mib = float(1 << 20)
        blocks = self.ior_rnd_block_size / mib
        if abs(blocks - round(blocks)) > 1e-9 or blocks < 1:
            raise ValueError(
                f"ior_rnd_block_size(={self.ior_rnd_block_size:g} B) must be a multiple of "
                "1 MiB (the ior-rnd1MB transfer size)"
            )
        if self.find_ranks is not None and self.find_ranks > self.ranks:
            raise ValueError(
                f"find_ranks(={self.find_ranks}) exceeds the run's {self.ranks} ranks "
                "(nodes x ranks_per_node)"
            )
        return self

    @property
    def ranks(self) -> int:
        """MPI ranks of the run."""
        return self.nodes * self.ranks_per_node


@dataclass(frozen=True)
class MdStep:
    """One metadata step as the system sees it.

    Attributes
    ----------
    kind : {"write", "stat", "read", "delete", "find"}
        Create a file (and write ``file_size_B``), stat it, open and read it,
        remove it, or scan one directory entry (find).
    area : {"easy", "hard"}
        ``easy``: each rank in its own directory (mdtest -u); ``hard``: one
        directory shared by all ranks.
    ranks : int
        Closed-loop ranks (one item in flight each).
    nodes : int
        Client nodes the ranks run on.
    file_size_B : float
        Bytes written or read per file (3,901 for mdtest-hard, 0 for easy).
    dir_stripe_count : int
        Servers the shared directory is striped over (``hard`` only).
    directories : int
        Directories of the area (one per mdtest rank for ``easy``, 1 for ``hard``);
        find may scan them with fewer ranks than created them.
    """

    kind: MdKind
    area: Area
    ranks: int
    nodes: int
    file_size_B: float = 0.0
    dir_stripe_count: int = 1
    directories: int = 1


class Io500Target(Protocol):
    """What a system provides so that :func:`run_io500` can drive it."""

    sim: Simulation

    def io500_ior(self, phase: IorPhase) -> PhaseResult:
        """Run one IOR phase of the benchmark through the system's own IOR path."""
        ...

    def io500_md_rate(self, step: MdStep) -> float:
        """Flow fidelity: items per second of ``step.ranks`` closed-loop ranks (analytic)."""
        ...

    def io500_md_request(self, step: MdStep) -> Callable[[int], Request]:
        """Request fidelity: a maker of one item (a SimPy generator) of a rank."""
        ...


# ------------------------------------------------------------------ scoring
def geometric_mean(scores: Sequence[float]) -> float:
    """IO-500's mean of one score group: scores <= 0 left out, 0 when none is left."""
    kept = [s for s in scores if s > 0]
    if not kept:
        return 0.0
    return math.exp(sum(math.log(s) for s in kept) / len(kept))


def io500_score(bw_GiBps: Sequence[float], md_kiops: Sequence[float]) -> tuple[float, float, float]:
    """``(bandwidth GiB/s, IOPS kIOPS, total)`` as ``calc_score`` in the application's main.c.

    Each group is the geometric mean of its phases' scores; the total is the
    square root of their product.
    """
    bw = geometric_mean(bw_GiBps)
    md = geometric_mean(md_kiops)
    return bw, md, math.sqrt(bw * md)


@dataclass(frozen=True)
class Io500Step:
    """One IO-500 phase's result (``extra.phases[i]``).

    Attributes
    ----------
    name : str
        The IO-500 phase name (``ior-easy-write`` ...).
    score : float
        GiB/s for ``ior*`` phases, kIOPS otherwise.
    unit : str
        ``"GiB/s"`` or ``"kIOPS"``.
    time_s : float
        Simulated runtime of the phase (s).
    group : {"bw", "md", "none"}
        Score group (``none``: reported, not scored).
    optional : bool
        An extended-mode phase (counts only in the extended score).
    valid : bool
        False for a write phase shorter than the stonewall or 300 s, or a score of 0.
    amount : float
        Bytes moved (IOR) or items done (mdtest, find).
    """

    name: str
    score: float
    unit: str
    time_s: float
    group: Group
    optional: bool
    valid: bool
    amount: float

    def result_line(self) -> str:
        """The phase's line of result_summary.txt (``[RESULT]``, or ``[      ]`` if unscored)."""
        tag = "[RESULT]" if self.group != "none" else "[      ]"
        flag = "" if self.valid else " [INVALID]"
        return (
            f"{tag} {self.name:>20} {f'{self.score:f}':>15} {self.unit} : "
            f"time {self.time_s:.3f} seconds{flag}"
        )


@dataclass(frozen=True, kw_only=True)
class Io500Details(PhaseDetails):
    """``PhaseResult.extra`` of an ``io500`` phase: every phase's score and the scores.

    Attributes
    ----------
    version : str
        IO-500 application version whose rules are followed.
    phases : list of Io500Step
        Each phase in run order.
    bandwidth_GiBps, iops_kiops, total_score : float
        The ``[SCORE ]`` line: geometric means of the standard bw and md phases, and
        ``sqrt(bw x md)``.
    extended_bandwidth_GiBps, extended_iops_kiops, extended_total_score : float or None
        The ``[SCOREX]`` line (extended mode only).
    valid : bool
        Every non-optional phase valid.
    stonewall_s : float
        Stonewall of the write phases (s).
    mdtest_easy_files, mdtest_hard_files, find_entries : float
        Files the mdtest-easy / -hard writes created, and entries find scanned.
    """

    version: str
    phases: list[Io500Step]
    bandwidth_GiBps: float
    iops_kiops: float
    total_score: float
    valid: bool
    stonewall_s: float
    mdtest_easy_files: float
    mdtest_hard_files: float
    find_entries: float
    extended_bandwidth_GiBps: float | None = None
    extended_iops_kiops: float | None = None
    extended_total_score: float | None = None

    def summary_lines(self) -> list[str]:
        """result_summary.txt: the phases' lines, the ``[SCORE ]`` and (extended) ``[SCOREX]``."""
        flag = "" if self.valid else " [INVALID]"
        lines = [p.result_line() for p in self.phases]
        lines.append(
            f"[SCORE ] Bandwidth {self.bandwidth_GiBps:f} GiB/s : IOPS {self.iops_kiops:f} kiops "
            f": TOTAL {self.total_score:f}{flag}"
        )
        if self.extended_total_score is not None:
            lines.append(
                f"[SCOREX] Bandwidth {self.extended_bandwidth_GiBps:f} GiB/s : IOPS "
                f"{self.extended_iops_kiops:f} kiops : TOTAL {self.extended_total_score:f}{flag}"
            )
        return lines

    def findings(self) -> list[str]:
        """The result summary, as the IO-500 application prints it."""
        return [
            f"IO-500 ({self.version} rules, stonewall {self.stonewall_s:g} s)",
            *self.summary_lines(),
        ]


# -------------------------------------------------------------- IOR phases
def _ior(phase: Io500Phase, name: str, **options: object) -> IorPhase:
    base: dict[str, object] = {
        "name": f"{phase.name}.{name}",
        "workload": "ior",
        "nodes": phase.nodes,
        "ranks_per_node": phase.ranks_per_node,
        "fsync": True,
        "reorder_tasks": True,
        "task_per_node_offset": 1,
        "fidelity": phase.fidelity,
    }
    base.update(options)
    # The phase schema wants units written out (SI floats here: bytes and seconds).
    for key in ("transfer_size", "block_size"):
        base[key] = f"{base[key]!r} B"
    if "stonewall" in base:
        base["stonewall"] = f"{base['stonewall']!r} s"
    return IorPhase.model_validate(base)


def ior_phases(phase: Io500Phase) -> dict[str, IorPhase]:
    """The IOR phases of ``phase`` by IO-500 name, with the options the application passes."""
    sw = phase.stonewall
    easy = {
        "file_per_process": phase.ior_easy_file_per_process,
        "transfer_size": phase.ior_easy_transfer_size,
        "block_size": phase.ior_easy_block_size,
        "direct_io": phase.ior_easy_direct_io,
        "layout": phase.ior_easy_layout,
        "dataset": f"{phase.name}.ior-easy",
    }
    hard = {
        "file_per_process": False,
        # Strided: a rank's transfers are N x 47,008 B apart, so none is contiguous with
        # the rank's previous one; IOR's non-sequential (random) access is that stream.
        "access": "random",
        "transfer_size": IOR_HARD_TRANSFER_B,
        "block_size": IOR_HARD_TRANSFER_B,
        "segments": phase.ior_hard_segments,
        "layout": phase.ior_hard_layout,
        "dataset": f"{phase.name}.ior-hard",
    }
    out = {
        "ior-easy-write": _ior(
            phase, "ior-easy-write", operation="write", stonewall=sw, wear_out=True, **easy
        ),
        "ior-hard-write": _ior(
            phase, "ior-hard-write", operation="write", stonewall=sw, wear_out=True, **hard
        ),
        "ior-easy-read": _ior(phase, "ior-easy-read", operation="read", **easy),
        "ior-hard-read": _ior(phase, "ior-hard-read", operation="read", **hard),
        # 4 KiB random reads of the ior-easy files, -C -Q 2 when file per process.
        "ior-rnd4K-easy-read": _ior(
            phase,
            "ior-rnd4K-easy-read",
            operation="read",
            stonewall=sw,
            wear_out=True,
            access="random",
            transfer_size=4096.0,
            block_size=4096.0,
            segments=10_000_000,
            reorder_tasks=phase.ior_easy_file_per_process,  # -C -Q 2 only with -F
            task_per_node_offset=2,
            **{k: v for k, v in easy.items() if k not in ("transfer_size", "block_size")},
        ),
    }
    if phase.mode == "extended":
        for label, size in (("4K", 4096.0), ("1MB", float(1 << 20))):
            rnd = {
                "file_per_process": False,
                "access": "random",
                "transfer_size": size,
                "block_size": phase.ior_rnd_block_size,
                "segments": 10_000_000,
                "layout": phase.ior_hard_layout,
                "dataset": f"{phase.name}.ior-rnd{label}",
                "reorder_tasks": False,
            }
            out[f"ior-rnd{label}-write"] = _ior(
                phase,
                f"ior-rnd{label}-write",
                operation="write",
                stonewall=sw,
                wear_out=True,
                **rnd,
            )
            out[f"ior-rnd{label}-read"] = _ior(
                phase, f"ior-rnd{label}-read", operation="read", **rnd
            )
    return out


def check_ior_phases(phase: Io500Phase, check: Callable[[IorPhase], None]) -> None:
    """Check every IOR phase of ``phase`` with a system kind's IOR check.

    A ``ValueError("key: message")`` about a derived phase is raised again
    with the ``io500`` key it comes from (``layout.stripe_count`` of
    ior-hard-write becomes ``ior_hard_layout.stripe_count``) and the phase named.
    """
    for name, ior in ior_phases(phase).items():
        try:
            check(ior)
        except ValueError as err:
            text = str(err)
            if text.startswith("layout"):
                easy = "easy" in name
                text = ("ior_easy_layout" if easy else "ior_hard_layout") + text[len("layout") :]
            raise ValueError(f"{text} (IO-500 phase {name})") from err


#: Run order (``src/phase-definitions.h``), extended-only phases marked.
ORDER: tuple[tuple[str, bool], ...] = (
    ("ior-easy-write", False),
    ("ior-rnd4K-write", True),
    ("mdtest-easy-write", False),
    ("ior-rnd1MB-write", True),
    ("ior-hard-write", False),
    ("mdtest-hard-write", False),
    ("find", False),
    ("ior-rnd4K-read", True),
    ("ior-rnd1MB-read", True),
    ("ior-easy-read", False),
    ("mdtest-easy-stat", False),
    ("ior-hard-read", False),
    ("mdtest-hard-stat", False),
    ("mdtest-easy-delete", False),
    ("mdtest-hard-read", False),
    ("mdtest-hard-delete", False),
    ("ior-rnd4K-easy-read", False),
)
#: Phases in the score's groups; the rest of :data:`ORDER` is reported only.
BW_PHASES = frozenset(
    {
        "ior-easy-write",
        "ior-hard-write",
        "ior-easy-read",
        "ior-hard-read",
        "ior-rnd4K-write",
        "ior-rnd4K-read",
        "ior-rnd1MB-write",
        "ior-rnd1MB-read",
    }
)
WRITE_PHASES = frozenset(
    {
        "ior-easy-write",
        "ior-hard-write",
        "mdtest-easy-write",
        "mdtest-hard-write",
        "ior-rnd4K-write",
        "ior-rnd1MB-write",
    }
)


# ------------------------------------------------------------------ runner
class Io500Runner:
    """Runs one :class:`Io500Phase` on a system implementing :class:`Io500Target`."""

    def __init__(self, target: Io500Target, phase: Io500Phase, fidelity: Fidelity) -> None:
        self.target = target
        self.phase = phase
        self.fidelity: Fidelity = phase.fidelity or fidelity
        self.created: dict[Area, float] = {"easy": 0.0, "hard": 0.0}
        self.ior_bytes_B = 0.0
        self.find_entries = 0.0

    def run(self) -> PhaseResult:
        """Every phase in order, then the scores."""
        iors = ior_phases(self.phase)
        steps: list[Io500Step] = []
        for name, optional in ORDER:
            if optional and self.phase.mode != "extended":
                continue
            if name in iors:
                self.target.sim.begin_part(name)
                steps.append(self._run_ior(name, iors[name], optional))
            else:
                analytic = "analytic metadata rate" if self.fidelity == "flow" else None
                self.target.sim.begin_part(name, analytic)
                steps.append(self._run_md(name))
        return self._result(steps, sum(s.time_s for s in steps))

    # ........................................................... IOR phases
    def _run_ior(self, name: str, ior: IorPhase, optional: bool) -> Io500Step:
        result = self.target.io500_ior(ior)
        self.ior_bytes_B += result.bytes_B
        score = result.bandwidth_Bps / GIB
        # IOR's time (the slowest rank's, fsync included); request fidelity simulates only
        # enough of it for a steady-state rate, so the simulated time is shorter.
        extra = result.extra
        time_s = extra.t_max_s if isinstance(extra, IorDetails) else result.sim_time_s
        group: Group = "bw" if name in BW_PHASES else "none"
        return Io500Step(
            name=name,
            score=score,
            unit="GiB/s",
            time_s=time_s,
            group=group,
            optional=optional,
            valid=self._valid(name, score, time_s),
            amount=result.bytes_B,
        )

    # ...................................................... metadata phases
    def _step(self, kind: MdKind, area: Area, ranks: int | None = None) -> MdStep:
        p = self.phase
        return MdStep(
            kind=kind,
            area=area,
            ranks=ranks if ranks is not None else p.ranks,
            nodes=p.nodes,
            file_size_B=MDTEST_HARD_FILE_B if area == "hard" else 0.0,
            dir_stripe_count=p.mdtest_hard_dir_stripe_count,
            directories=p.ranks if area == "easy" else 1,
        )

    def _rate(self, step: MdStep) -> float:
        """Items/s of ``step``: analytic in flow fidelity, a SimPy closed loop in request."""
        if self.fidelity == "flow":
            return self.target.io500_md_rate(step)
        p = self.phase
        control = RunLengthControl(
            target_rel_halfwidth=p.md_target_rel_halfwidth,
            min_samples=MIN_SAMPLES_FOR_BATCHES,
            max_samples=max(40, p.max_requests // p.md_sample_interval),
        )
        request = self.target.io500_md_request(step)
        loop = run_closed_loop(
            self.target.sim,
            request,
            list(range(step.ranks)),
            control,
            p.md_sample_interval,
            drain=True,
        )
        return loop.ops_per_s

    def _run_md(self, name: str) -> Io500Step:
        p = self.phase
        if name == "find":
            return self._run_find()
        _, area_name, verb = name.split("-")
        area: Area = "easy" if area_name == "easy" else "hard"
        kind: MdKind = {"write": "write", "stat": "stat", "read": "read", "delete": "delete"}[verb]  # type: ignore[assignment]
        rate = self._rate(self._step(kind, area))
        if kind == "write":
            most = p.mdtest_easy_files_per_proc if area == "easy" else p.mdtest_hard_files_per_proc
            per_rank = min(float(most), math.ceil(rate / p.ranks * p.stonewall))
            self.created[area] = per_rank * p.ranks
        items = self.created[area]
        time_s = items / rate if rate > 0 else math.inf
        score = items / time_s / 1000.0 if time_s > 0 else 0.0
        self._advance(time_s)
        return Io500Step(
            name=name,
            score=score,
            unit="kIOPS",
            time_s=time_s,
            group="md",
            optional=False,
            valid=self._valid(name, score, time_s),
            amount=items,
        )

    def _run_find(self) -> Io500Step:
        p = self.phase
        ior_files = float(p.ranks if p.ior_easy_file_per_process else 1) + 1.0
        if p.mode == "extended":
            ior_files += 2.0  # the two ior-rnd files
        entries = {"easy": self.created["easy"] + ior_files, "hard": self.created["hard"]}
        procs = p.find_ranks or p.ranks
        areas: list[Area] = [a for a in ("easy", "hard") if entries[a] > 0]  # type: ignore[misc]
        total = sum(entries[a] for a in areas)
        time_s = 0.0
        for area in areas:
            share = max(1, round(procs * entries[area] / total))
            rate = self._rate(self._step("find", area, min(share, procs)))
            time_s = max(time_s, entries[area] / rate)
        self.find_entries = total
        self._advance(time_s)
        score = total / time_s / 1000.0 if time_s > 0 else 0.0
        return Io500Step(
            name="find",
            score=score,
            unit="kIOPS",
            time_s=time_s,
            group="md",
            optional=False,
            valid=score > 0,
            amount=total,
        )

    def _advance(self, time_s: float) -> None:
        """Move the clock over a metadata phase (its rate is steady state)."""
        sim = self.target.sim
        if math.isfinite(time_s) and time_s > 0:
            sim.run(sim.env.timeout(time_s))

    # .............................................................. scoring
    def _valid(self, name: str, score: float, time_s: float) -> bool:
        if score <= 0:
            return False
        if name in WRITE_PHASES:  # verify_stonewall and opt.minwrite (src/main.c)
            short = time_s < self.phase.stonewall * (1 - 1e-9)
            return not short and time_s >= IO500_MIN_WRITE_S * (1 - 1e-9)
        return True

    def _result(self, steps: list[Io500Step], sim_time_s: float) -> PhaseResult:
        """The phase result; ``sim_time_s`` is the runtimes of the phases summed (s)."""
        standard = [s for s in steps if not s.optional]
        bw, md, total = io500_score(
            [s.score for s in standard if s.group == "bw"],
            [s.score for s in standard if s.group == "md"],
        )
        ext: tuple[float, float, float] | None = None
        if self.phase.mode == "extended":
            ext = io500_score(
                [s.score for s in steps if s.group == "bw"],
                [s.score for s in steps if s.group == "md"],
            )
        p = self.phase
        details = Io500Details(
            version=IO500_VERSION,
            phases=steps,
            bandwidth_GiBps=bw,
            iops_kiops=md,
            total_score=total,
            valid=all(s.valid for s in standard if s.group != "none"),
            stonewall_s=p.stonewall,
            mdtest_easy_files=self.created["easy"],
            mdtest_hard_files=self.created["hard"],
            find_entries=self.find_entries,
            extended_bandwidth_GiBps=ext[0] if ext else None,
            extended_iops_kiops=ext[1] if ext else None,
            extended_total_score=ext[2] if ext else None,
        )
        return PhaseResult(
            name=p.name,
            operation="io500",
            bandwidth_Bps=bw * GIB,
            iops=md * 1000.0,
            ranks=p.ranks,
            transfer_size_B=p.ior_easy_transfer_size,
            sim_time_s=sim_time_s,
            bytes_B=self.ior_bytes_B,
            extra=details,
            fidelity=self.fidelity,
        )


def run_io500(target: Io500Target, phase: Io500Phase, fidelity: Fidelity) -> PhaseResult:
    """Run every IO-500 phase of ``phase`` on ``target`` and return the scores.

    ``PhaseResult.bandwidth_Bps`` is the bandwidth score in bytes/s (GiB/s x
    2^30), ``iops`` the metadata score in items/s (kIOPS x 1000); the phases
    and the result summary are in ``extra`` (:class:`Io500Details`).
    """
    return Io500Runner(target, phase, fidelity).run()
