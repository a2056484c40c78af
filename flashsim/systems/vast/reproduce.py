"""How a ``vast`` system reproduces a measured IOR test (``flashsim check``, ``calibrate``).

The generic planner (:mod:`flashsim.measurements.reproduce`) turns an IOR
output's conditions into ``ior`` phases; a VAST system measured in the field
had long been written to, and a read may have read a dataset already migrated
to QLC, which an IOR output does not record.  :func:`vast_ior_phases` adds the
phases that put the system in that state (sidecar keys ``dataset_state``,
``aging_bytes``, ``data_entropy`` in ``[conditions.extra]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flashsim.measurements.record import Conditions
from flashsim.systems.vast.model import VastModel
from flashsim.units import UnitError, parse_quantity

#: ``Conditions.extra`` keys of an IOR measurement on a ``vast`` model (a sidecar's
#: ``[conditions.extra]``): the state of the dataset a read reads (``"fresh"``: just
#: written, in SCM; ``"aged"``: flushed onto QLC as seed 002's aged tests and its
#: Fig. 4 reads were), the throw-away bytes of the flush (a unit string or B) and the
#: bits of entropy per byte of the written data (8: random, ``ior-incompress``).
VAST_DATASET_STATE = "dataset_state"
VAST_AGING_BYTES = "aging_bytes"
VAST_DATA_ENTROPY = "data_entropy"

#: Seed 002 App. B's pre-read flush: 8 x 1 TiB of throw-away data, written (1 MiB
#: transfers, fsync) and deleted eight times.
VAST_AGING_B = 8 * 2.0**40
VAST_AGING_PASSES = 8

#: Transfer size of the preamble writes (the SCM prefill and the aging flush), B.
VAST_PREAMBLE_TRANSFER_B = 2.0**20


def _vast_write(
    name: str, nodes: int, ranks_per_node: int, total_B: float, repetitions: int
) -> dict[str, Any]:
    """A buffered, fsynced write of ``total_B`` bytes of throw-away files, deleted after."""
    ranks = nodes * ranks_per_node
    segments = max(1, round(total_B / (ranks * VAST_PREAMBLE_TRANSFER_B)))
    phase: dict[str, Any] = {
        "name": name,
        "workload": "ior",
        "operation": "write",
        "nodes": nodes,
        "ranks_per_node": ranks_per_node,
        "file_per_process": True,
        "transfer_size": f"{VAST_PREAMBLE_TRANSFER_B!r} B",
        "block_size": f"{VAST_PREAMBLE_TRANSFER_B!r} B",
        "segments": segments,
        "fsync": True,
        "dataset": name,
        "delete_after": True,
        "fidelity": "flow",
    }
    if repetitions > 1:
        phase["repetitions"] = repetitions
    return phase


def vast_ior_phases(
    model: VastModel, c: Conditions, phases: Sequence[dict[str, Any]]
) -> list[dict[str, Any]] | str:
    """An IOR measurement's phases on a ``vast`` model, or why they cannot be.

    :meth:`VastKind.ior_reproduction <flashsim.systems.vast.kind.VastKind.ior_reproduction>`
    (``flashsim check`` and ``calibrate``, :mod:`flashsim.measurements.reproduce`):

    * First the SCM write buffer is filled to its hold level
      (``tier.migrate_above`` x ``tier.write_buffer``) with throw-away data,
      deleted after: the seed's system had long been written to, so every
      write also pays the migration of older data to QLC (as
      ``VastSystem.prefill`` does for the seed's study units).
    * A read of an ``extra.dataset_state = "aged"`` dataset: after its files
      are written, :data:`VAST_AGING_B` (or ``extra.aging_bytes``) of
      throw-away data is written and deleted in :data:`VAST_AGING_PASSES`
      passes, which moves the files to QLC (seed 002 App. B's pre-read flush).
    * ``extra.data_entropy`` (bits per byte) is that of every write's data
      (default: the VAST IOR phase's, 8 = incompressible).
    """
    assert c.tasks is not None and c.nodes is not None
    ppn = c.tasks // c.nodes
    state = c.extra.get(VAST_DATASET_STATE, "fresh")
    if state not in ("fresh", "aged"):
        return f"extra.{VAST_DATASET_STATE} = {state!r}: expected 'fresh' or 'aged'"
    if state == "aged" and c.operation != "read":
        return f"extra.{VAST_DATASET_STATE} = 'aged' describes the dataset a read reads"
    aging = c.extra.get(VAST_AGING_BYTES, VAST_AGING_B)
    if isinstance(aging, str):
        try:
            aging = parse_quantity(aging, "bytes")
        except UnitError as exc:
            return f"extra.{VAST_AGING_BYTES} = {aging!r}: {exc}"
    if isinstance(aging, bool) or not isinstance(aging, (int, float)) or aging <= 0:
        return f"extra.{VAST_AGING_BYTES} = {aging!r}: expected a positive byte count"
    entropy = c.extra.get(VAST_DATA_ENTROPY)
    if entropy is not None and (
        isinstance(entropy, bool) or not isinstance(entropy, (int, float)) or not 0 <= entropy <= 8
    ):
        return f"extra.{VAST_DATA_ENTROPY} = {entropy!r}: expected bits per byte, 0 to 8"
    hold_B = model.tier.migrate_above * model.tier.write_buffer
    out = [_vast_write("scm-prefill", c.nodes, ppn, hold_B, 1)]
    for phase in phases:
        if entropy is not None and phase["operation"] == "write":
            phase = {**phase, "data_entropy": float(entropy)}
        if state == "aged" and phase["operation"] == "read":
            out.append(
                _vast_write(
                    "aging-flush", c.nodes, ppn, float(aging) / VAST_AGING_PASSES, VAST_AGING_PASSES
                )
            )
        out.append(phase)
    return out
