"""Every target type meets the one interface a system kind wires (components.target)."""

from __future__ import annotations

from flashsim.components.pcie import PcieLink
from flashsim.components.raid import RaidSpec
from flashsim.components.raid_target import build_target
from flashsim.components.ssd import SsdSpec
from flashsim.components.target import StorageTarget
from flashsim.engine.simulation import Simulation


def _ssd() -> SsdSpec:
    return SsdSpec.model_validate(
        {
            "kind": "ssd",
            "name": "test",
            "capacity": "1 TB",
            "read_bandwidth": "3 GB/s",
            "write_bandwidth": "2 GB/s",
            "read_iops": "500 kIOPS",
            "write_iops": "100 kIOPS",
            "read_latency": "80 us",
            "write_latency": "20 us",
        }
    )


def test_a_raid_target_is_a_storage_target() -> None:
    sim = Simulation(seed=1)
    raid = RaidSpec.model_validate({"level": "raid6", "data": 8, "parity": 2})
    link = PcieLink(generation=4, lanes=4)  # without links account_wear has nothing to read
    target = build_target(
        sim, "t.ost0", _ssd(), 10, raid, 1, {"read": 1.0, "write": 1.0}, drive_link=link
    )
    assert isinstance(target, StorageTarget)
    assert not target.object_aware
    cost = target.cost("write", 2**20, True, obj="file")
    assert cost.obj == "" and cost.size_B == 2**20
    moved = {id(r): 1e6 for r in target.link_down}
    target.account_wear(lambda r: moved.get(id(r), 0.0))
    assert [s.bytes_written_B for s in target.states] == [1e6] * 10
