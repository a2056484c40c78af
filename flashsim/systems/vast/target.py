"""The SCM/QLC pool of a ``vast`` system as the one stateful target of the timeline.

A VAST system is one shared pool, not a set of independent targets (seed 002
Sec. II; slides 004 "VAST write path in a nutshell"): every CNode writes into
one SCM write buffer replicated over all the SCM drives of every DBox/DNode,
and migrates it into erasure-coded stripes spread over all the QLC drives of
every enclosure.  A drive failure degrades stripes over the whole pool and
its rebuild reads every survivor; no enclosure has state of its own.  So the
system has **one** target (index 0), :class:`VastPool`, named
``<system>.tier``, and a :class:`~flashsim.components.target_state.SystemStatus`
of it reads as the pool's: its write amplification, SCM fill, failed drives
and rebuild progress.

The pool's life is the one every SCM/QLC tier has
(:class:`~flashsim.components.tier_life.TierLife`: fill, wear, failures and
rebuilds, fast-forward, reset), over the system's tier and the drives of
every DNode (:class:`~flashsim.components.tier_drives.TierDrives`, built by
:class:`~flashsim.systems.vast.topology.VastTopology`).  Drive indices:
``0 .. q-1`` are the QLC drives (as the ``vast-rebuild`` phase's ``drive``),
``q .. q+s-1`` the SCM drives, over all DNodes in their order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashsim.components.tier_life import TierLife

if TYPE_CHECKING:
    from flashsim.systems.vast.topology import VastTopology

__all__ = ["VastPool"]


class VastPool(TierLife):
    """The shared SCM/QLC pool of a VAST system: the tier's life, named ``<system>.tier``.

    Parameters
    ----------
    system : VastTopology
        The built system whose tier, drives and wear states this target owns.
    """

    def __init__(self, system: VastTopology) -> None:
        super().__init__(f"{system.model.name}.tier", system.tier, system.drives)
