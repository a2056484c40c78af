"""Closed-loop throughput of synchronous ranks at deterministic drive queues (approximate MVA).

The function lives in :mod:`flashsim.components.closed_loop` (the metadata
service uses it too); it is re-exported here for the ``vast`` kind.
"""

from __future__ import annotations

from flashsim.components.closed_loop import closed_loop_rpcs_per_s

__all__ = ["closed_loop_rpcs_per_s"]
