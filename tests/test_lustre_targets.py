"""Lustre OSTs on every target type (issue 18): a run never beats what `describe` says.

A small Lustre system (2 OSSes, one OST each, a switch) is built on each target
type the model file can choose: RAID6 over NVMe SSDs, RAID6 over SAS HDDs,
RAID6 of SATA disks behind an external controller shared by both OSSes (a DDN
couplet, as Spider), and an SCM write buffer over compressed QLC (``oss.tier``).
An IOR write (with fsync) and read over both OSTs run at or below the system
peaks ``describe`` gives, in flow fidelity and (for the SSD and tier targets)
request fidelity.  Bad ``oss.tier`` tables give one error line naming the key.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flashsim.components.raid_target_spec import RaidTargetSpec
from flashsim.components.target_life import TargetLife
from flashsim.engine.simulation import Simulation
from flashsim.measure.results import PhaseResult
from flashsim.scenario import load_scenario, load_system_model, run_loaded
from flashsim.systems.lustre.io500 import build_mds_service
from flashsim.systems.lustre.ior import PathCache
from tests.cli_helpers import ROOT, run_flashsim

DRIVES = ROOT / "models" / "drives"

COMMON = """
[oss.cpu]
cores = 16

[oss.nic]
ports = 2
port_bandwidth = "200 Gb/s"
latency = "2 us"

[client]
nic = { ports = 4, port_bandwidth = "200 Gb/s", latency = "2 us" }

[client.lustre]
stripe_count = 2

[fabric]
topology = "switch"
switches = 1
switch_bandwidth = "1 TB/s"
latency = "1 us"
"""

HEAD = 'kind = "lustre"\nname = "t"\n\n[oss]\ncount = 2\ntargets_per_server = 1\n'

#: The OSTs of each target type (the [oss] keys that choose them).
TARGETS = {
    "raid6-ssd": f"""
drives_per_target = 10
drive = "{(DRIVES / "samsung-pm1733-15.36TB.toml").as_posix()}"
drive_link = {{ generation = 4, lanes = 4 }}
raid = {{ level = "raid6", data = 8, parity = 2, spares = 0 }}
stack_write_efficiency = 0.9
""",
    "raid6-hdd": f"""
drives_per_target = 10
drive = "{(DRIVES / "seagate-st4000nm0034.toml").as_posix()}"
raid = {{ level = "raid6", data = 8, parity = 2, spares = 0, declustered = false }}
""",
    "raid6-controller": f"""
drives_per_target = 10
drive = "{(DRIVES / "seagate-st31000340ns.toml").as_posix()}"
raid = {{ level = "raid6", data = 8, parity = 2, spares = 0, declustered = false }}
controller = {{ servers = 2, read_bandwidth = "1 GB/s", write_bandwidth = "0.8 GB/s" }}
""",
    "tier": f"""
[oss.tier]
scm_drive = "{(DRIVES / "intel-optane-p4800x-1.5tb.toml").as_posix()}"
scm_drives = 4
qlc_drive = "{(DRIVES / "intel-d5-p4326-15.36tb.toml").as_posix()}"
qlc_drives = 12
drive_link = {{ generation = 4, lanes = 4 }}
write_buffer = "20 GB"
migrate_above = 0.5
stripe_size = "1 GB"
ec_data = 8
ec_parity = 2
""",
}


def model_text(target: str) -> str:
    """A model file of the small system with OSTs of type ``target``."""
    return HEAD + TARGETS[target] + COMMON


def write_model(tmp_path: Path, target: str) -> Path:
    path = tmp_path / f"{target}.toml"
    path.write_text(model_text(target))
    return path


def ior(op: str, block: str, fidelity: str) -> str:
    """An IOR phase over both OSTs: 4 nodes x 2 ranks, 16 MiB transfers."""
    extra = 'fsync = true\ndataset = "d"\n' if op == "write" else 'dataset = "d"\n'
    limit = "max_requests = 4000\nsample_interval_requests = 200\n" if fidelity == "request" else ""
    return (
        f'[[phases]]\nname = "{op}"\nworkload = "ior"\noperation = "{op}"\nnodes = 4\n'
        f'ranks_per_node = 2\ntransfer_size = "16 MiB"\nblock_size = "{block}"\n'
        f'fidelity = "{fidelity}"\n{extra}{limit}'
    )


def run_write_read(tmp_path: Path, target: str, fidelity: str, block: str) -> list[PhaseResult]:
    model = write_model(tmp_path, target)
    scenario = tmp_path / f"{target}-{fidelity}.toml"
    scenario.write_text(
        f'name = "s"\nsystem = "{model.as_posix()}"\nseed = 1\nfidelity = "{fidelity}"\n\n'
        + ior("write", block, fidelity)
        + "\n"
        + ior("read", block, fidelity)
    )
    return run_loaded(load_scenario(scenario)).phases


#: (target type, fidelity, bytes per rank): request fidelity where its requests are few.
CASES = [
    ("raid6-ssd", "flow", "4 GiB"),
    ("raid6-hdd", "flow", "1 GiB"),
    ("raid6-controller", "flow", "1 GiB"),
    ("tier", "flow", "8 GiB"),  # 64 GiB over two 20 GB buffers: most of it migrates to QLC
    ("raid6-ssd", "request", "1 GiB"),
    ("raid6-hdd", "request", "256 MiB"),
    ("raid6-controller", "request", "256 MiB"),
    ("tier", "request", "1 GiB"),
]


@pytest.mark.parametrize(("target", "fidelity", "block"), CASES)
def test_ior_runs_at_or_below_describe(
    tmp_path: Path, target: str, fidelity: str, block: str
) -> None:
    """IOR write and read over both OSTs move at most the system peaks `describe` gives,
    and at least a tenth of them (the run reaches the targets it is bounded by)."""
    loaded = load_system_model(write_model(tmp_path, target))
    desc = loaded.kind.describe(loaded.model)
    phases = run_write_read(tmp_path, target, fidelity, block)
    for result in phases:
        peak = desc.derived[f"system_{result.operation}_Bps_peak"]
        assert 0.1 * peak < result.bandwidth_Bps <= peak * (1 + 1e-9), (
            target,
            fidelity,
            result.operation,
            result.bandwidth_Bps,
            peak,
            result.bottlenecks,
        )


@pytest.mark.parametrize("target", list(TARGETS))
def test_obdfilter_survey_at_or_below_the_target_peak(tmp_path: Path, target: str) -> None:
    """obdfilter-survey drives one OST of any type through the interface, within its peak."""
    model = write_model(tmp_path, target)
    scenario = tmp_path / "s.toml"
    phases = "".join(
        f'[[phases]]\nname = "{op}"\nworkload = "obdfilter-survey"\noperation = "{op}"\n'
        'threads = 16\nsize = "8 GiB"\nrecord_size = "1 MiB"\n\n'
        for op in ("write", "read")
    )
    scenario.write_text(f'name = "s"\nsystem = "{model.as_posix()}"\nseed = 1\n\n{phases}')
    for result in run_loaded(load_scenario(scenario)).phases:
        extra = result.extra
        assert extra is not None
        peak = extra.peak_Bps  # type: ignore[attr-defined]
        assert 0.05 * peak < result.bandwidth_Bps <= peak * (1 + 1e-9), (target, result)


def test_describe_of_each_target_type(tmp_path: Path) -> None:
    """Labels, drive counts, capacity and the rows that bind, per target type."""
    out = {}
    for target in TARGETS:
        loaded = load_system_model(write_model(tmp_path, target))
        out[target] = loaded.kind.describe(loaded.model)
    ssd = out["raid6-ssd"]
    assert ssd.components["oss_drives"] == 20
    assert ssd.derived["usable_capacity_B"] == pytest.approx(2 * 8 * 15.36e12)
    tier = out["tier"]
    assert tier.components["oss_drives"] == 2 * (4 + 12)
    assert tier.derived["usable_capacity_B"] == pytest.approx(2 * 12 * 15.36e12 * 8 / 10)
    assert tier.derived["ost_write_buffer_B"] == pytest.approx(20e9)
    layers = {la.layer for la in tier.layers}
    assert {"SCM ingest", "tier read (QLC + SCM)"} <= layers
    assert not layers & {"drives (raw)", "drives after RAID", "OST stack (ldiskfs+RAID)"}
    # SCM ingest: 4 Optane x 2 GB/s / 2 copies per OST
    assert tier.derived["ost_drive_write_Bps"] == pytest.approx(4 * 2e9 / 2)
    assert tier.bottlenecks["system write_Bps"] == "SCM ingest"
    ctrl = out["raid6-controller"]
    assert ctrl.bottlenecks["system write_Bps"] == "RAID controller (share)"


def test_tier_write_flows_fill_the_buffers(tmp_path: Path) -> None:
    """The flows of an IOR write reach the tier targets (flow_started): their buffers fill."""
    model = write_model(tmp_path, "tier")
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        f'name = "s"\nsystem = "{model.as_posix()}"\nseed = 1\nfidelity = "flow"\n\n'
        + ior("write", "1 GiB", "flow")
    )
    loaded = load_scenario(scenario)
    system = loaded.system.kind.build(loaded.system.model, Simulation(1), "flow")
    system.run_phase(loaded.phases[0])
    fills = [life.status().buffer_fill for _, life in system.built_targets()]
    assert len(fills) == 2
    assert all(f is not None and f > 0 for f in fills), fills


# ................................................................. bad input
def describe_error(tmp_path: Path, text: str) -> str:
    """``flashsim describe`` of a model written from ``text``: exit 2 and one ``error:`` line."""
    path = tmp_path / "m.toml"
    path.write_text(text)
    proc = run_flashsim("describe", str(path), timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("extra", "key", "words"),
    [
        # both a tier and the RAID keys
        ('drive = "DRIVE"\n', "oss.drive", "remove drive"),
        ("drives_per_target = 10\n", "oss.drives_per_target", "remove drives_per_target"),
        # a RAID-only key with a tier
        ("raid_threads = 4\n", "oss.raid_threads", "means nothing for tier targets"),
        (
            'controller = { servers = 2, read_bandwidth = "1 GB/s", write_bandwidth = "1 GB/s" }\n',
            "oss.controller",
            "external RAID controller",
        ),
    ],
)
def test_tier_with_raid_keys_is_one_error_line(
    tmp_path: Path, extra: str, key: str, words: str
) -> None:
    text = model_text("tier").replace(
        "targets_per_server = 1\n",
        "targets_per_server = 1\n"
        + extra.replace("DRIVE", (DRIVES / "samsung-pm1733-15.36TB.toml").as_posix()),
    )
    line = describe_error(tmp_path, text)
    assert key in line and words in line, line


def test_neither_tier_nor_raid_keys_is_one_error_line(tmp_path: Path) -> None:
    text = model_text("raid6-ssd").replace("drives_per_target = 10\n", "")
    line = describe_error(tmp_path, text)
    assert "drives_per_target" in line and "tier" in line, line


def test_bad_tier_value_names_the_key(tmp_path: Path) -> None:
    text = model_text("tier").replace("ec_data = 8\n", "ec_data = 11\n")
    line = describe_error(tmp_path, text)
    assert "oss.tier.ec_data" in line, line


@pytest.mark.parametrize(
    ("phase", "workload"),
    [
        ('workload = "rebuild"\noperation = "read"\n', "rebuild"),
        ('workload = "block-io"\noperation = "write"\nduration = "1 s"\n', "block-io"),
    ],
)
def test_raid_only_phase_on_tier_osts_is_one_error_line(
    tmp_path: Path, phase: str, workload: str
) -> None:
    model = write_model(tmp_path, "tier")
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        f'name = "s"\nsystem = "{model.as_posix()}"\n\n[[phases]]\nname = "p"\n{phase}'
    )
    proc = run_flashsim("run", str(scenario), timeout=120)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert line.startswith("error:") and "\n" not in line, proc.stderr
    assert f"{workload!r} needs RAID OSTs" in line and "oss.tier" in line, line


def test_tier_paths_are_cached_by_object(tmp_path: Path) -> None:
    """A file written to a tier OST reads from its SCM buffer, one never written (data
    older than the run) from QLC: their cached paths differ (a cache keyed by operation
    alone would hand the second file the first one's path)."""

    model = write_model(tmp_path, "tier")
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        f'name = "s"\nsystem = "{model.as_posix()}"\nseed = 1\nfidelity = "flow"\n\n'
        + ior("write", "1 GiB", "flow").replace("nodes = 4", "nodes = 1")
        + "layout = { stripe_count = 1, first_target = 0 }\n"
    )
    loaded = load_scenario(scenario)
    system = loaded.system.kind.build(loaded.system.model, Simulation(1), "flow")
    write = loaded.phases[0]
    system.run_phase(write)
    cache = PathCache()
    objs = [system.ior_object(write, 0), "never-written"]
    paths = [
        system.access_stream(0, (0,), "read", 2**24, True, False, 1, cache, obj=obj)[0].path
        for obj in objs
    ]
    names = [{res.name for res, _ in path} for path in paths]
    assert any(".scm" in n for n in names[0]), names[0]
    assert not any(".scm" in n for n in names[1]), names[1]


def test_drive_failure_event_on_a_tier_ost(tmp_path: Path) -> None:
    """A timeline `fail-drive` on a tier OST degrades it through its life (both phases run)."""
    model = write_model(tmp_path, "tier")
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        f'name = "s"\nsystem = "{model.as_posix()}"\nseed = 1\nfidelity = "flow"\n\n'
        + ior("write", "1 GiB", "flow")
        + "\n"
        + ior("read", "1 GiB", "flow")
        + '\n[[events]]\nrelative_to = "write"\nedge = "end"\naction = "fail-drive"\n'
        + "target = 0\ndrive = 5\n"
    )
    result = run_loaded(load_scenario(scenario))
    read = next(p for p in result.phases if p.name == "read")
    assert read.start_state is not None
    assert read.start_state["failed_drives"] == 1
    assert read.start_state["degraded_targets"] == [0]
    assert read.bandwidth_Bps > 0


def test_raid_labels_name_the_layout(tmp_path: Path) -> None:
    """A RAID10 target is labelled by its mirrors, not RAID6's default 8+2 (issue 18 item 5)."""
    text = model_text("raid6-ssd").replace(
        'raid = { level = "raid6", data = 8, parity = 2, spares = 0 }',
        'raid = { level = "raid10", mirrors = 2, spares = 0 }',
    )
    path = tmp_path / "m.toml"
    path.write_text(text)
    loaded = load_system_model(path)
    desc = loaded.kind.describe(loaded.model)
    notes = " ".join(la.note for la in desc.layers)
    assert "raid10 5x2 mirrors of 10x Samsung PM1733" in notes
    assert "8+2" not in notes


MDS_TIER = f"""
[mds]
count = 2
targets_per_server = 1
cpu = {{ cores = 8 }}
nic = {{ ports = 1, port_bandwidth = "200 Gb/s" }}

[mds.tier]
scm_drive = "{(DRIVES / "intel-optane-p4800x-1.5tb.toml").as_posix()}"
scm_drives = 2
qlc_drive = "{(DRIVES / "intel-d5-p4326-15.36tb.toml").as_posix()}"
qlc_drives = 10
write_buffer = "100 GB"
ec_data = 8
ec_parity = 2
scm_write_efficiency = 0.5

[mds.metadata]
service_threads = 8
shared_dir_parallelism = 4
client_overhead = "20 us"
create = "250 us"
close = "60 us"
open = "120 us"
stat = "200 us"
unlink = "400 us"
readdir_entry = "2 us"
readdir_entries_per_rpc = 100
create_journal = "8 KiB"
unlink_journal = "8 KiB"
"""


def test_mdts_on_a_tier_write_metadata_to_scm(tmp_path: Path) -> None:
    """An MDT may be a tier too: its metadata updates land on the SCM buffer's drives, each
    on `scm_copies` of them at the tier's write efficiency; describe counts its drives."""
    path = tmp_path / "m.toml"
    path.write_text(model_text("tier") + MDS_TIER)
    loaded = load_system_model(path)
    device = build_mds_service(loaded.model).device
    assert device is not None
    assert device.drives == 2
    # 8 KiB x 2 copies at 2 GB/s x 0.5
    assert device.write_s(8192.0) == pytest.approx(8192.0 * 2 / 1e9)
    desc = loaded.kind.describe(loaded.model)
    assert desc.components["mdt_drives"] == 2 * (2 + 10)


def test_raid_osts_share_one_aging_memo_per_built_system() -> None:
    """The RAID target spec a built system keeps owns the aged states its OSTs' lives share
    (a fast-forward of identical arrays advances one FTL model); another system has its own."""
    loaded = load_system_model(
        Path(__file__).resolve().parent.parent / "models/systems/perlmutter.toml"
    )
    systems = [loaded.kind.build(loaded.model, Simulation(1), "flow") for _ in range(2)]
    memos = []
    for system in systems:
        spec = system.ost_spec
        assert isinstance(spec, RaidTargetSpec)
        lives = [system.target(i) for i in (0, 5)]
        assert all(isinstance(life, TargetLife) and life.memo is spec.memo for life in lives)
        memos.append(spec.memo)
        for life in lives:
            life.age(1e12)
        a, b = (life.status() for life in lives)
        assert a.write_amplification == b.write_amplification
        assert a.host_written_B == b.host_written_B > 0
    assert memos[0] is not memos[1]


def test_a_job_replayed_on_tier_osts_fills_their_buffers(tmp_path: Path) -> None:
    """Job replay (a `jobs` phase) on tier OSTs: its write flows reach the targets
    (job_flow_started), and the job runs within describe's system write peak."""
    model = write_model(tmp_path, "tier")
    scenario = tmp_path / "s.toml"
    scenario.write_text(
        f'name = "s"\nsystem = "{model.as_posix()}"\nseed = 1\nfidelity = "flow"\n\n'
        '[[phases]]\nname = "jobs"\nworkload = "jobs"\n\n[[phases.jobs]]\ntype = "ior"\n'
        'name = "ckpt"\nfsync = true\noperation = "write"\nnodes = 4\nranks_per_node = 2\n'
        'transfer_size = "16 MiB"\nblock_size = "1 GiB"\nstripe_count = 2\n'
    )
    loaded = load_scenario(scenario)
    system = loaded.system.kind.build(loaded.system.model, Simulation(1), "flow")
    result = system.run_phase(loaded.phases[0])
    fills = [life.status().buffer_fill for _, life in system.built_targets()]
    assert fills and all(f is not None and f > 0 for f in fills), fills
    desc = loaded.system.kind.describe(loaded.system.model)
    assert 0 < result.bandwidth_Bps <= desc.derived["system_write_Bps_peak"] * (1 + 1e-9)
