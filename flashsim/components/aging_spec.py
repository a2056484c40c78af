"""Model-file schema of drive aging: how a file system's writes reach each drive's FTL."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from flashsim.config import StrictModel, calibratable

GcPolicy = Literal["greedy", "cost-benefit"]

#: What constrains the calibratable aging parameters (``flashsim calibrate`` names it).
AGING_RUNS = (
    "aging runs of seed 000 Fig. 8 (tools/calibrate_aging.py refits it), which no reader reproduces"
)


class AgingSpec(StrictModel):
    """How a target's file system allocations reach each drive's FTL (model file ``[*.aging]``).

    Attributes
    ----------
    units_per_block : int
        Pieces of independently deleted data that share an erase block: the
        streams a drive's open block interleaves (1 = every block holds one
        file's data and dies whole, no garbage-collection copies).
    spread : float
        How widely the file system spreads new allocations over the drive's
        logical space: each written unit lands on space the drive holds no
        data for with probability ``1 / spread`` x (that space's share), else
        it reuses space freed without TRIM.  ``1`` is uniform random overwrite;
        larger values reach the last never-written space later.
    cold_fraction : float
        Fraction of the space each drive's array writes that holds cold data
        (live files, file-system metadata) the churn of writes and deletes
        never touches; scenarios may set their own (``fill``).
    allocation : {"uniform", "high-water"}
        Where writes to space the drive holds no data for land: uniformly over
        it, or (``high-water``) in order, the file system extending into
        never-used space at a steady pace.
    gc_policy : {"greedy", "cost-benefit"}
        Garbage-collection victim policy of the drive.
    micro_blocks : int
        Erase blocks of the scaled page-mapped micro-model (request fidelity).
    wa_window : float
        Host writes, as a fraction of a drive's written space, over which the
        current write amplification is measured (both fidelities).
    """

    units_per_block: Annotated[int, Field(ge=1, le=4096)] = Field(
        description="Independently deleted pieces of data sharing an erase block (1 = none)."
    )
    spread: Annotated[float, Field(ge=1.0)] = Field(
        description=(
            "How widely allocations spread over the drive's logical space "
            "(1 = uniform random overwrite)."
        ),
        json_schema_extra=calibratable(
            1.0,
            100.0,
            "",
            [],
            AGING_RUNS,
            "Aging and the fleet",
            where=["oss.aging"],
        ),
    )
    cold_fraction: Annotated[float, Field(ge=0.0, lt=1.0)] = Field(
        0.0,
        description=(
            "Fraction of the drives' written space holding cold data that writes and "
            "deletes never touch."
        ),
        json_schema_extra=calibratable(
            0.01,
            0.9,
            "",
            [],
            AGING_RUNS,
            "Aging and the fleet",
            where=["oss.aging"],
        ),
    )
    allocation: Literal["uniform", "high-water"] = Field(
        "uniform",
        description=(
            "Where writes to never-used space land: uniformly, or in order (`high-water`: "
            "the file system extends into unused space at a steady pace)."
        ),
    )
    gc_policy: GcPolicy = Field("greedy", description="Garbage-collection victim policy.")
    micro_blocks: Annotated[int, Field(ge=16)] = Field(
        4096, description="Erase blocks of the scaled micro-model (request fidelity)."
    )
    wa_window: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        0.125,
        description=(
            "Host writes (fraction of a drive's written space) over which the current "
            "write amplification is measured."
        ),
    )
