"""What held each byte back: bytes moved under a saturated constraint or a flow's own cap.

Every flow of a :class:`~flashsim.engine.flows.FlowNetwork` moves, at any
moment, in one class (:mod:`flashsim.engine.flowclasses`): a *bottleneck*
class, whose rate a saturated constraint sets, or a *cap* class, whose rate
the flow's own ``rate_cap_Bps`` sets (a window of requests over a round trip,
a throttle, an offered load).  The :class:`LimitLedger` charges the bytes a
flow moves while in a class to that class's *limit key*:

* ``k > 0``: the bottleneck constraint ``k`` (a resource's bandwidth or
  operation-rate constraint);
* ``k < 0``: the cap label ``-k - 1`` (:meth:`LimitLedger.label_id`), named
  where the cap was created (``start_flow(..., cap_label=...)``).

It is settled only when a flow joins or leaves a class (O(1) each) and when
the classes are rebuilt (vectorised), so it costs nothing per solved rate; a
reading (:meth:`LimitLedger.totals`) adds the bytes the flows in progress have
moved in their current class.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flashsim.engine.maxmin import FloatArray, IntArray

#: Label of a rate cap created without one.
DEFAULT_CAP_LABEL = "rate cap"


class LimitLedger:
    """Cumulative user bytes per limit key (see the module docstring)."""

    def __init__(self) -> None:
        self.labels: list[str] = [DEFAULT_CAP_LABEL]
        self._label_ids: dict[str, int] = {DEFAULT_CAP_LABEL: 0}
        self.settled: dict[int, float] = {}
        # Per slot: its class's clock when it joined (B per unit priority; a clock, not
        # the bytes left, so that endless flows of 1e30 B lose no precision), class key,
        # cap label id.  Lists: every join and leave reads or writes one entry, which
        # Python values do several times faster than NumPy scalars.
        self.v0: list[float] = []
        self.key: list[int] = []
        self.label: list[int] = []

    def grow(self, extra: int) -> None:
        """The slot arrays grew by ``extra`` rows."""
        self.v0.extend([0.0] * extra)
        self.key.extend([0] * extra)
        self.label.extend([0] * extra)

    def label_id(self, name: str | None) -> int:
        """The id of cap label ``name`` (``None``: :data:`DEFAULT_CAP_LABEL`)."""
        name = DEFAULT_CAP_LABEL if name is None else name
        found = self._label_ids.get(name)
        if found is None:
            found = len(self.labels)
            self.labels.append(name)
            self._label_ids[name] = found
        return found

    def join(self, slot: int, con: int, vtime: float) -> None:
        """Flow ``slot`` enters a class of bottleneck ``con`` (0: a cap class) whose clock
        reads ``vtime``."""
        self.v0[slot] = vtime
        self.key[slot] = con if con else -self.label[slot] - 1

    def leave(self, slot: int, vtime: float, priority: float) -> None:
        """Flow ``slot`` (of share ``priority``) leaves its class, whose clock reads ``vtime``."""
        moved = priority * (vtime - self.v0[slot])
        if moved > 0.0:
            k = self.key[slot]
            self.settled[k] = self.settled.get(k, 0.0) + moved

    def settle_many(
        self,
        slots: IntArray,
        vtime: FloatArray,
        priority: FloatArray,
        known: npt.NDArray[np.bool_],
    ) -> None:
        """Settle the flows ``slots`` (those in a class: ``known``) before a rebuild."""
        settling = slots[known]
        moved = priority[known] * (vtime[known] - np.array(self.v0)[settling])
        _sum_into(self.settled, np.array(self.key, dtype=np.int64)[settling], moved)

    def join_many(self, slots: IntArray, cons: IntArray) -> None:
        """Flows ``slots`` enter new classes (clocks at 0) of bottlenecks ``cons`` (0: cap)."""
        v0 = np.array(self.v0)
        v0[slots] = 0.0
        self.v0 = v0.tolist()
        key = np.array(self.key, dtype=np.int64)
        key[slots] = np.where(cons > 0, cons, -np.array(self.label, dtype=np.int64)[slots] - 1)
        self.key = key.tolist()

    def totals(self, slots: IntArray, vtime: FloatArray, priority: FloatArray) -> dict[int, float]:
        """Bytes moved so far per key, counting flows ``slots`` (in a class) whose class
        clocks read ``vtime`` now."""
        out = dict(self.settled)
        _sum_into(
            out,
            np.array(self.key, dtype=np.int64)[slots],
            priority * (vtime - np.array(self.v0)[slots]),
        )
        return out


def _sum_into(out: dict[int, float], keys: IntArray, moved: FloatArray) -> None:
    """Add the positive ``moved`` (B) to ``out`` per key."""
    ok = moved > 0.0
    if not ok.any():
        return
    uniq, inv = np.unique(keys[ok], return_inverse=True)
    sums = np.bincount(inv, weights=moved[ok])
    for k, b in zip(uniq.tolist(), sums.tolist(), strict=True):
        out[k] = out.get(k, 0.0) + b
