"""An SCM write buffer over compressed, erasure-coded QLC as one server target.

The target type of a Lustre hot pool, or of any server that exports a tier
as one target: its own SCM and QLC drives (with their PCIe links), an
:class:`~flashsim.components.tier.ScmQlcTier` over them (the write buffer,
the migration compressed by the data's entropy, the QLC erasure code, the
location of every object's bytes, data older than the run), and the tier's
life for the timeline (failures and rebuild of SCM or QLC drives, the
buffer's fill, the fast-forward).  It implements
:class:`~flashsim.components.target.StorageTarget`, so a system kind wires it
as it wires a RAID target.

The model-file table is :class:`TierTargetSpec`: the ``[tier]`` keys of a
VAST model (:class:`~flashsim.components.tier.TierSpec`) plus the drives one
target holds.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from flashsim.components.drive import DriveField
from flashsim.components.pcie import PcieLink
from flashsim.components.tier import TierSpec


class TierTargetSpec(TierSpec):
    """One tier target: an SCM write buffer over QLC, the drives it holds and its tier policy.

    Attributes
    ----------
    scm_drive, qlc_drive : SsdSpec
        Drive datasheets (a path relative to the model file, or a table);
        both must be SSDs.
    scm_drives, qlc_drives : int
        Drives of each medium in one target.  ``ec_data + ec_parity`` must
        not exceed ``qlc_drives`` and ``scm_copies`` not ``scm_drives``.
    drive_link : PcieLink or None
        Host PCIe link of each drive (``None``: not modelled).
    data_entropy : float
        Entropy (bits per byte, 0..8) of data whose entropy the workload does
        not give: what the migration compresses it to (8: incompressible).
    """

    scm_drive: DriveField
    scm_drives: Annotated[int, Field(ge=1)]
    qlc_drive: DriveField
    qlc_drives: Annotated[int, Field(ge=1)]
    drive_link: PcieLink | None = None
    data_entropy: Annotated[float, Field(ge=0.0, le=8.0)] = 8.0
