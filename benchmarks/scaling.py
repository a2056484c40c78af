"""Scaling curves: wall time and peak memory against problem size, with growth exponents.

Runs each point in its own process (so peak memory is its own):

* the shared-backbone fabric (:mod:`benchmarks.fabric`, variant a) for N flows;
* the Perlmutter full-system IOR scenario (:mod:`benchmarks.full_system`) for a
  growing number of file-per-process ranks (the 1,024 striped ranks stay).

Writes ``docs/scaling.md`` (tables and the fitted exponent ``b`` of
``wall ~ N**b``, over the points at or above the median size) and
``docs/scaling.png``, and prints the Markdown.  Takes a few minutes.

    python -m benchmarks.scaling
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from benchmarks.run import child

DOCS = Path(__file__).resolve().parents[1] / "docs"
FABRIC_N = (1_000, 3_000, 10_000, 30_000, 100_000)
FPP_NODES = (16, 64, 256, 1_024, 4_096)  # 64 ranks per node


def _exponent(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log y on log x over the upper half of the points."""
    keep = slice(len(x) // 2, None)
    return float(np.polyfit(np.log(x[keep]), np.log(y[keep]), 1)[0])


def main() -> int:
    fabric = [child("benchmarks.fabric", str(n), "a") for n in FABRIC_N]
    system = [child("benchmarks.full_system", str(nodes)) for nodes in FPP_NODES]
    fpp_ranks = [64 * nodes for nodes in FPP_NODES]
    lines = [
        "# Scaling of the flow engine",
        "",
        "Measured by `python -m benchmarks.scaling` on the 2-core development machine "
        "(each point its own process; wall time of the simulation, peak resident memory "
        "of the process).",
        "",
        "## Shared-backbone fabric (issue 7), all flows start at t = 0",
        "",
        "| flows N | wall (s) | peak RSS (MiB) | simulated makespan (s) |",
        "|---:|---:|---:|---:|",
    ]
    for n, r in zip(FABRIC_N, fabric, strict=True):
        lines.append(
            f"| {n:,} | {r['wall_s']:.3g} | {r['peak_rss_MiB']:.0f} | {r['makespan_s']:.2f} |"
        )
    b_wall = _exponent(list(FABRIC_N), [r["wall_s"] for r in fabric])
    b_mem = _exponent(list(FABRIC_N), [r["peak_rss_MiB"] for r in fabric])
    lines += [
        "",
        f"Growth: wall ~ N^{b_wall:.2f}, peak memory ~ N^{b_mem:.2f} (fit over N >= 10,000). "
        "Every completion changes the shared backbone's level, so the run has N events at "
        "O(log N) each.",
        "",
        "## Perlmutter full system: file-per-process ranks over 274 OSTs (+ 1,024 striped)",
        "",
        "| FPP ranks | wall (s) | peak RSS (MiB) |",
        "|---:|---:|---:|",
    ]
    for ranks, r in zip(fpp_ranks, system, strict=True):
        lines.append(f"| {ranks:,} | {r['wall_s']:.3g} | {r['peak_rss_MiB']:.0f} |")
    s_wall = _exponent(fpp_ranks, [r["wall_s"] for r in system])
    s_mem = _exponent(fpp_ranks, [r["peak_rss_MiB"] for r in system])
    lines += [
        "",
        f"Growth: wall ~ ranks^{s_wall:.2f}, peak memory ~ ranks^{s_mem:.2f} "
        "(fit over the larger half).",
        "",
        "![scaling](scaling.png)",
        "",
    ]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    axes[0].loglog(FABRIC_N, [r["wall_s"] for r in fabric], "o-", label="fabric: wall (s)")
    axes[0].loglog(fpp_ranks, [r["wall_s"] for r in system], "s-", label="Perlmutter: wall (s)")
    axes[0].set_xlabel("flows N / file-per-process ranks")
    axes[0].set_ylabel("wall time (s)")
    axes[0].legend()
    axes[1].loglog(FABRIC_N, [r["peak_rss_MiB"] for r in fabric], "o-", label="fabric")
    axes[1].loglog(fpp_ranks, [r["peak_rss_MiB"] for r in system], "s-", label="Perlmutter")
    axes[1].set_xlabel("flows N / file-per-process ranks")
    axes[1].set_ylabel("peak RSS (MiB)")
    axes[1].legend()
    fig.tight_layout()
    DOCS.mkdir(exist_ok=True)
    fig.savefig(DOCS / "scaling.png", dpi=100)
    text = "\n".join(lines)
    (DOCS / "scaling.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
