"""The phases a ``vast`` system kind accepts: IOR with data entropy, and the PDSW'21 studies.

These are schemas only.  :class:`VastIorPhase` runs on one built
:class:`~flashsim.systems.vast.kind.VastSystem`; the study phases
(:class:`VastGridPhase`, :class:`VastIopsGridPhase`,
:class:`VastSizeSweepPhase`) describe many IOR tests, each on a fresh system,
and are run by :mod:`flashsim.studies` (the scenario layer hands them there),
never by the system itself: systems do not import studies.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from flashsim.config import Bytes, Seconds, StrictModel
from flashsim.workloads.ior import IorPhase


class VastIorPhase(IorPhase):
    """An IOR phase on a VAST system, with the entropy of the data it writes.

    Attributes
    ----------
    data_entropy : float
        Bits of entropy per byte of the written data (8 = random,
        incompressible, as ``ior-incompress``; IOR's default pattern is far
        lower).
    delete_after : bool
        Delete the files after the phase (the seed's pre-read flush wrote and
        deleted 1 TiB eight times).
    """

    data_entropy: Annotated[float, Field(ge=0.0, le=8.0)] = 8.0
    delete_after: bool = False


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


#: Every study phase type of the ``vast`` kind.
VastStudyPhase = VastGridPhase | VastIopsGridPhase | VastSizeSweepPhase


def buffered_write(phase: Any) -> bool:
    """Whether ``phase`` is an IOR write through the client page cache."""
    return isinstance(phase, IorPhase) and phase.operation == "write" and not phase.direct_io
