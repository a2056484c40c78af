"""write_conflicts (extent-lock sharing of a job's writes) equals a brute-force count.

The function keys (file, region) and (key, node) pairs as single int64 numbers
for speed; these tests hold it to a per-write dictionary count, including
offsets so large that the keys must first be compacted to fit in 64 bits.
"""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import pytest

from flashsim.workloads.replay import DEFAULT_STRIPE_B, write_conflicts
from flashsim.workloads.trace import OpTable, TraceFile


def brute_force(
    ops: OpTable, stripes_B: list[float], node: np.ndarray, n_files: int
) -> list[float]:
    """Per file: mean over its writes of 1 - 1/(nodes writing the write's region)."""
    writers: dict[tuple[int, int], set[int]] = defaultdict(set)
    calls = []
    for i in np.nonzero(ops.write)[0]:
        f = int(ops.file[i])
        key = (f, int(np.floor(ops.offset_B[i] / stripes_B[f])))
        writers[key].add(int(node[i]))
        calls.append((f, key))
    per_file: dict[int, list[float]] = defaultdict(list)
    for f, key in calls:
        per_file[f].append(1.0 - 1.0 / len(writers[key]))
    return [float(np.mean(per_file[f])) if per_file[f] else 0.0 for f in range(n_files)]


@pytest.mark.parametrize(
    ("seed", "max_offset_B", "n_files"),
    # the last: 80,000 files x 9e18 B / 64 KiB regions > 2**63: the keys must be compacted
    [(0, 64 * 2**20, 7), (1, 4e9, 7), (2, 9e18, 80_000)],
)
def test_write_conflicts_equal_a_brute_force_count(
    seed: int, max_offset_B: float, n_files: int
) -> None:
    rng = np.random.default_rng(seed)
    n, ranks, ranks_per_node, client_nodes = 3000, 48, 4, 10
    choices = [2**16] if n_files > 100 else [2**16, 2**20, 2**22]
    stripes_B = [float(s) for s in rng.choice(choices, n_files)]
    stripes_B[0] = DEFAULT_STRIPE_B  # the default for a file with no recorded stripe
    files = tuple(
        TraceFile(f"f{i}", stripe_size_B=None if i == 0 else stripes_B[i]) for i in range(n_files)
    )
    rank = rng.integers(0, ranks, n)
    # few distinct regions (so regions are shared) spread up to max_offset_B
    offsets = np.unique(rng.uniform(0.0, max_offset_B, 40))
    ops = OpTable(
        rank=rank,
        file=rng.integers(n_files - 7, n_files, n),  # the last files: high keys
        record=np.zeros(n, dtype=np.int64),
        write=rng.random(n) < 0.7,
        offset_B=rng.choice(offsets, n),
        size_B=np.full(n, 4096.0),
        start_s=np.zeros(n),
        end_s=np.zeros(n),
    )

    def nodes_of(r: np.ndarray, nodes: int) -> np.ndarray:
        return (3 + r // ranks_per_node) % nodes

    job = SimpleNamespace(trace=SimpleNamespace(ops=ops, files=files), nodes_of=nodes_of)
    got = write_conflicts(job, client_nodes)  # type: ignore[arg-type]
    expected = brute_force(ops, stripes_B, nodes_of(rank, client_nodes), n_files)
    assert got.tolist() == pytest.approx(expected, rel=1e-12, abs=0.0)
    assert 0.0 < max(expected) < 1.0  # the data has shared and unshared regions
