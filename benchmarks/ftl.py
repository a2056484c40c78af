"""Speed of the FTL aging models.

* :func:`micro_model_throughput`: host unit writes per second of the page-mapped
  micro-model (:class:`flashsim.components.ftl.PageFtl`, greedy GC) on a long
  uniform-random overwrite stream at spare factor 0.1 (``(NAND - logical) /
  NAND``), 4,096 blocks of 64 units, 12 drive writes from fresh (fill, transient
  and steady state, WA about 4.6);
* :func:`fluid_day_s`: seconds of one fluid-model day (0.05 drive writes, about
  Perlmutter's 2.5 PB/day over 274 OSTs of 12 x 15.36 TB) on an aged drive.

Prints one JSON line: ``{"ftl_micro_unit_writes_per_s": ..., "ftl_fluid_day_s": ...}``.

    python -m benchmarks.ftl
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from flashsim.components.ftl import PageFtl
from flashsim.components.ftl_api import fluid_model
from flashsim.components.ftl_traffic import UniformTraffic

SPARE_FACTOR = 0.1
BLOCKS = 4096
UNITS_PER_BLOCK = 64
DRIVE_WRITES = 12


def micro_model_throughput(seed: int = 1) -> float:
    """Host unit writes per second of :class:`PageFtl` on a uniform-random stream."""
    m = UNITS_PER_BLOCK
    logical = int(BLOCKS * m * (1.0 - SPARE_FACTOR))
    ftl = PageFtl(BLOCKS + 6, m, logical, "greedy", reserve_blocks=1, gc_batch=8)
    traffic = UniformTraffic(logical, np.random.default_rng(seed))
    batch = logical // 4
    start = time.perf_counter()
    for _ in range(DRIVE_WRITES * 4):
        ftl.write(traffic.draw(batch, ftl.l2p))
    return ftl.host_units / (time.perf_counter() - start)


def fluid_day_s(days: int = 200) -> float:
    """Mean seconds to advance an aged fluid model by one day (0.05 drive writes)."""
    logical_B = 15.36e12
    model = fluid_model(logical_B, 0.25, 64, spread=4.0, static_fraction=0.3)
    model.write(20 * logical_B)
    start = time.perf_counter()
    for _ in range(days):
        model.write(0.05 * logical_B)
    return (time.perf_counter() - start) / days


def main() -> int:
    rate = micro_model_throughput()
    day = fluid_day_s()
    print(json.dumps({"ftl_micro_unit_writes_per_s": rate, "ftl_fluid_day_s": day}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
