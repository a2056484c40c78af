"""Where a job's client nodes sit on the fabric: packed, spread or random over groups.

A scheduler rarely hands a job whole groups: ``packed`` fills one group
before the next (a job on contiguous nodes), ``spread`` deals nodes round
robin over the groups (the widest use of global links), ``random`` draws
free node slots uniformly (a fragmented machine).  ``groups`` limits the job
to the first ``groups`` groups of the role, so a study can sweep how many
groups a job spans.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from flashsim.config import StrictModel

PlacementPolicy = Literal["packed", "spread", "random"]

#: Node slots offered by a group with no stated capacity (a switch or an unsized group).
UNLIMITED_SLOTS = 65_536


class PlacementSpec(StrictModel):
    """How client nodes are placed on the groups of one fabric role.

    Attributes
    ----------
    policy : {"packed", "spread", "random"}
        Fill groups in order, deal round robin, or draw node slots at random.
    role : str
        Fabric role of the groups the clients sit in (``"compute"`` on a dragonfly).
    groups : int or None
        Use only the first ``groups`` groups of the role (``None``: all).
    """

    policy: PlacementPolicy = Field(
        "packed",
        description=(
            "`packed` fills one group before the next, `spread` deals nodes round robin over "
            "the groups, `random` draws free node slots uniformly."
        ),
    )
    role: str = Field("compute", description="Fabric role of the groups clients sit in.")
    groups: Annotated[int, Field(ge=1)] | None = Field(
        None, description="Use only the first `groups` groups of the role (default: all)."
    )


def placement_field(description: str) -> Any:
    """A model's ``placement`` key: a :class:`PlacementSpec`, ``packed`` by default.

    Parameters
    ----------
    description : str
        What the key places, for the reference (e.g. which fabric's groups).
    """
    return Field(default_factory=lambda: PlacementSpec.model_validate({}), description=description)


class Placement:
    """Client index -> group index (within the role), decided once.

    Parameters
    ----------
    spec : PlacementSpec
        The policy.
    capacities : list of int or None
        Node slots of each group of the role, in order (``None``: no limit;
        such a group offers :data:`UNLIMITED_SLOTS`).
    rng : numpy.random.Generator
        Stream for ``random``.
    """

    def __init__(
        self, spec: PlacementSpec, capacities: list[int | None], rng: np.random.Generator
    ) -> None:
        self.spec = spec
        used = capacities[: spec.groups] if spec.groups else capacities
        caps = np.array([UNLIMITED_SLOTS if c is None else c for c in used], dtype=np.int64)
        self.groups = len(caps)
        group = np.repeat(np.arange(self.groups), caps)
        if spec.policy == "spread":
            # Slot k of every group before slot k + 1 of any: round robin over the groups.
            rank = np.concatenate([np.arange(c) for c in caps])
            group = group[np.lexsort((group, rank))]
        elif spec.policy == "random":
            group = group[rng.permutation(len(group))]
        self._group = group

    @property
    def capacity(self) -> int:
        """Node slots the placement can hand out."""
        return len(self._group)

    def group_of(self, client: int) -> int:
        """Group index (within the role) of client ``client``."""
        if not 0 <= client < self.capacity:
            raise ValueError(
                f"client {client} does not fit: the placement has {self.capacity} node slots "
                f"in {self.groups} group(s)"
            )
        return int(self._group[client])
