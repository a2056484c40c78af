"""IOR arithmetic: stonewalling, wear-out and IOR's bandwidth formula."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import pytest
import simpy

from flashsim.config import ConfigError, validate
from flashsim.engine.simulation import Simulation
from flashsim.workloads.ior import (
    IorDetails,
    IorPhase,
    IorRunner,
    IorTargetDefaults,
    RankStream,
    ior_bandwidth,
    stonewall_bytes,
)

MIB = 2**20


def test_stonewall_rounds_up_to_whole_transfers_and_respects_limit() -> None:
    got = stonewall_bytes([10 * MIB + 1, 64 * MIB, 0.0], 64 * MIB, [1e12, 1e12, 1e12], False)
    assert list(got) == [64 * MIB, 64 * MIB, 0.0]
    capped = stonewall_bytes([100 * MIB], 64 * MIB, [64 * MIB], False)
    assert capped[0] == 64 * MIB


def test_wear_out_makes_every_rank_write_b_max() -> None:
    got = stonewall_bytes([1 * MIB, 5 * MIB, 3 * MIB], MIB, [1e12] * 3, True)
    assert list(got) == [5 * MIB] * 3


def test_ior_bandwidth_is_n_times_b_max_over_t_max() -> None:
    b_max = 5.0e9
    times = [40.0, 45.0, 47.5]
    assert ior_bandwidth([b_max] * 3, times) == pytest.approx(3 * b_max / 47.5)


def phase(**kw: Any) -> IorPhase:
    base: dict[str, Any] = {
        "name": "p",
        "workload": "ior",
        "operation": "write",
        "transfer_size": "1 MiB",
        "block_size": "1 TiB",
    }
    base.update(kw)
    return IorPhase.model_validate(base)


def test_block_must_be_multiple_of_transfer() -> None:
    with pytest.raises(ConfigError, match="multiple of transfer_size"):
        validate(
            IorPhase,
            {
                "name": "p",
                "workload": "ior",
                "operation": "write",
                "transfer_size": "3 MiB",
                "block_size": "4 MiB",
            },
            "x.toml",
        )


def test_reorder_tasks_shifts_by_whole_nodes() -> None:
    p = phase(nodes=3, ranks_per_node=2, reorder_tasks=True)
    assert [p.file_of(r) for r in range(6)] == [2, 3, 4, 5, 0, 1]
    assert [p.node_of(r) for r in range(6)] == [0, 0, 1, 1, 2, 2]


class ToySystem(IorTargetDefaults):
    """Each rank writes through its own resource of a given rate (bytes/s)."""

    def __init__(self, rates: list[float], write_behind: float = 0.0) -> None:
        self.sim = Simulation(0)
        self.res = [self.sim.flows.add_resource(f"r{i}", r) for i, r in enumerate(rates)]
        self.rates = rates
        self.write_behind = write_behind

    def ior_prepare(self, phase: IorPhase, repetition: int) -> None:
        pass

    def ior_streams(self, phase: IorPhase) -> list[RankStream]:
        return [
            RankStream(((self.res[i], 1.0),), MIB, None, 1, self.write_behind)
            for i in range(phase.ranks)
        ]

    def ior_request(
        self, phase: IorPhase, rank: int, stream: RankStream
    ) -> Generator[simpy.Event, Any, None]:
        yield self.sim.env.timeout(stream.op_size_B / self.rates[rank])

    def ior_peaks(self, phase: IorPhase) -> dict[str, float]:
        return {"bandwidth_Bps": float(sum(self.rates))}


def test_runner_stonewall_wear_out_formula() -> None:
    # Rank 0 at 1 GB/s, rank 1 at 0.5 GB/s; 10 s stonewall with wear-out.
    system = ToySystem([1e9, 0.5e9])
    runner = IorRunner(system)
    result = runner.run(phase(ranks_per_node=2, stonewall="10 s", wear_out=True, fsync=True))
    rep = result.details(IorDetails).repetitions[0]
    b_max = np.ceil(10 * 1e9 / MIB - 1e-9) * MIB  # rank 0 finishes the transfer in progress
    t_max = b_max / 0.5e9  # the slow rank writes B_max at its own rate
    assert result.details(IorDetails).b_max_B == pytest.approx(b_max)
    assert rep.bytes_B == pytest.approx(2 * b_max)
    assert rep.time_s == pytest.approx(t_max, rel=1e-6)
    assert result.bandwidth_Bps == pytest.approx(2 * b_max / t_max, rel=1e-6)
    assert result.iops == pytest.approx(result.bandwidth_Bps / MIB)
    assert result.details(IorDetails).bandwidth_efficiency == pytest.approx(
        result.bandwidth_Bps / 1.5e9
    )


def test_runner_stonewall_without_wear_out_sums_bytes() -> None:
    system = ToySystem([1e9, 0.5e9])
    result = IorRunner(system).run(phase(ranks_per_node=2, stonewall="10 s"))
    rep = result.details(IorDetails).repetitions[0]
    b0 = np.ceil(10 * 1e9 / MIB - 1e-9) * MIB
    b1 = np.ceil(10 * 0.5e9 / MIB - 1e-9) * MIB
    assert rep.bytes_B == pytest.approx(b0 + b1)
    assert rep.time_s == pytest.approx(max(b0 / 1e9, b1 / 0.5e9), rel=1e-6)


def test_fsync_counts_write_behind_drain() -> None:
    # 1 GiB per rank, 256 MiB may sit in the client cache: the write() calls end early,
    # but with fsync the rank's time runs until the server has everything.
    p_sync = phase(block_size="1 GiB", fsync=True)
    p_nosync = phase(block_size="1 GiB", fsync=False)
    synced = IorRunner(ToySystem([1e9], write_behind=256 * MIB)).run(p_sync)
    unsynced = IorRunner(ToySystem([1e9], write_behind=256 * MIB)).run(p_nosync)
    assert synced.details(IorDetails).repetitions[0].time_s == pytest.approx(2**30 / 1e9)
    assert unsynced.details(IorDetails).repetitions[0].time_s == pytest.approx(
        (2**30 - 256 * MIB) / 1e9
    )
    assert unsynced.bandwidth_Bps > synced.bandwidth_Bps


def test_repetitions_and_datasets() -> None:
    system = ToySystem([1e9, 1e9])
    runner = IorRunner(system)
    w = runner.run(phase(ranks_per_node=2, block_size="64 MiB", repetitions=3, dataset="d"))
    assert len(w.details(IorDetails).repetitions) == 3
    assert list(runner.datasets["d"]) == [64 * MIB, 64 * MIB]
    r = runner.run(phase(operation="read", ranks_per_node=2, block_size="1 TiB", dataset="d"))
    assert r.bytes_B == pytest.approx(2 * 64 * MIB)  # reads stop at the end of the files
    with pytest.raises(ValueError, match="was not written"):
        runner.run(phase(operation="read", dataset="missing"))


def test_request_fidelity_steady_state_with_confidence_interval() -> None:
    system = ToySystem([1e9])
    p = phase(
        operation="read",
        block_size="1 TiB",
        stonewall="100 s",
        fidelity="request",
        sample_interval_requests=20,
    )
    result = IorRunner(system).run(p)
    assert result.bandwidth_Bps == pytest.approx(1e9, rel=1e-6)
    assert result.ci_rel_halfwidth is not None and result.ci_rel_halfwidth < 0.01
    assert result.details(IorDetails).repetitions[0].time_s == pytest.approx(100.0)
