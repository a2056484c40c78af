"""A drive file (``models/drives/*.toml``) built from fio measurements alone.

:func:`drive_model_from_fio` picks, for each datasheet value of an SSD drive
file (:class:`flashsim.components.ssd.SsdSpec`), the fio job that measures it:

* ``read_bandwidth`` / ``write_bandwidth``: the sequential job of that
  direction with the largest transfer size (the highest bandwidth among
  equal sizes), fio ``bw_bytes``;
* ``read_iops`` / ``write_iops``: the random 4 KiB job of that direction with
  the highest IOPS (usually the deepest queue);
* ``read_latency`` / ``write_latency``: the mean total latency (fio
  ``lat_ns``) of a queue-depth-1, one-task random job of that direction (the
  drive file's zero-load latency), else of the random job with the fewest I/Os
  in flight, named in its comment as not zero-load;
* ``parallelism``: Little's law at the knee, ``read_iops * read_latency``
  (the queue depth at which ``q / latency`` reaches the IOPS ceiling, the way
  the shipped drive files set it);
* ``trim_bandwidth``: a sequential trim job's bandwidth, when there is one.

Every value carries a comment naming the measurement (id and ``file:line``)
it came from.  ``capacity`` is required by the schema and fio does not measure
it: it is written as an explicit ASSUMED value (the caller's, or the largest
region a fio job addressed, a lower bound), never silently.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from flashsim.components.drive import DriveSpec
from flashsim.config import validate
from flashsim.errors import MISSING, ConfigError
from flashsim.measurements.record import Conditions, Measurement
from flashsim.units import UnitError, parse_quantity

#: Transfer size of the random jobs that give a drive's IOPS (datasheets: 4 KiB), B.
RANDOM_SIZE_B = 4096.0

#: Where the error of :func:`drive_model_from_fio` points.
_WHERE = "fio measurements"


@dataclass(frozen=True)
class FioJob:
    """One fio job's direction: its measured values and conditions.

    Attributes
    ----------
    key : str
        ``<file stem>:<job>:<direction>`` (the measurement id without the quantity).
    conditions : Conditions
        The job's conditions.
    source : str
        ``file:line`` of the job object.
    bandwidth : Measurement or None
        ``bandwidth``, B/s.
    iops : Measurement or None
        ``iops``, 1/s.
    latency : Measurement or None
        ``latency_mean``, s.
    """

    key: str
    conditions: Conditions
    source: str
    bandwidth: Measurement | None
    iops: Measurement | None
    latency: Measurement | None

    @property
    def in_flight(self) -> int:
        """I/Os the job kept in flight: queue depth x tasks (1 when unknown)."""
        return (self.conditions.queue_depth or 1) * (self.conditions.tasks or 1)


def fio_jobs(measurements: Sequence[Measurement]) -> list[FioJob]:
    """The fio measurements grouped by job and direction, in reading order."""
    groups: dict[str, dict[str, Measurement]] = {}
    for m in measurements:
        if m.conditions.tool != "fio" or m.scope:
            continue
        key = m.id.rsplit(":", 1)[0]
        groups.setdefault(key, {})[m.quantity] = m
    jobs: list[FioJob] = []
    for key, by_quantity in groups.items():
        first = next(iter(by_quantity.values()))
        jobs.append(
            FioJob(
                key=key,
                conditions=first.conditions,
                source=first.source,
                bandwidth=by_quantity.get("bandwidth"),
                iops=by_quantity.get("iops"),
                latency=by_quantity.get("latency_mean"),
            )
        )
    return jobs


def _cite(m: Measurement) -> str:
    """``id (file:line)`` for a comment, on one line."""
    return f"{m.id} ({m.source})".replace("\n", " ")


def _describe(job: FioJob) -> str:
    """The job's conditions in a comment: rw, bs, queue depth, tasks."""
    c = job.conditions
    size = c.transfer_size_B
    if not size:
        bs = "bs ?"
    elif size >= 2**20 and size % 2**20 == 0:
        bs = f"{size / 2**20:g} MiB"
    else:
        bs = f"{size / 1024:g} KiB"
    return (
        f"{c.access or '?'} {c.operation}, {bs}, queue depth {c.queue_depth or '?'}, "
        f"{c.tasks or 1} task(s)"
    )


def _jobs_of(jobs: Sequence[FioJob], op: str, access: str, has: str) -> list[FioJob]:
    """The ``access`` jobs that did ``op`` and measured ``has`` (an attribute of FioJob)."""
    return [
        j
        for j in jobs
        if j.conditions.operation == op
        and j.conditions.access == access
        and getattr(j, has) is not None
    ]


def _sequential(jobs: Sequence[FioJob], op: str) -> FioJob | None:
    """The sequential ``op`` job with the largest transfer (then the highest bandwidth)."""
    return max(
        _jobs_of(jobs, op, "sequential", "bandwidth"),
        key=lambda j: (
            j.conditions.transfer_size_B or 0.0,
            j.bandwidth.value if j.bandwidth else 0,
        ),
        default=None,
    )


def _random_iops(jobs: Sequence[FioJob], op: str) -> FioJob | None:
    """The random 4 KiB ``op`` job with the highest IOPS."""
    candidates = [
        j
        for j in _jobs_of(jobs, op, "random", "iops")
        if j.conditions.transfer_size_B == RANDOM_SIZE_B
    ]
    return max(candidates, key=lambda j: j.iops.value if j.iops else 0.0, default=None)


def _latency(jobs: Sequence[FioJob], op: str) -> FioJob | None:
    """A queue-depth-1 one-task random ``op`` job (4 KiB first), else the least loaded one."""
    return min(
        _jobs_of(jobs, op, "random", "latency"),
        key=lambda j: (
            j.in_flight,
            j.conditions.transfer_size_B != RANDOM_SIZE_B,
            j.conditions.transfer_size_B or 0.0,
        ),
        default=None,
    )


def _missing(key: str, what: str, run: str) -> ConfigError:
    return ConfigError(
        _WHERE,
        key,
        MISSING,
        f"no {what} among the fio measurements, so the drive file cannot give {key} "
        f"(run e.g. `fio {run} --direct=1 --output-format=json`)",
    )


def _toml_str(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def _mbps(value: float) -> str:
    return f'"{value / 1e6:.12g} MB/s"'


def drive_model_from_fio(
    measurements: Sequence[Measurement], name: str, capacity: str | None = None
) -> str:
    """The TOML text of an SSD drive file built from fio measurements alone.

    Parameters
    ----------
    measurements : sequence of Measurement
        fio measurements (others are ignored), e.g. from
        :func:`flashsim.measurements.readers.read_measurements`.
    name : str
        The drive's model name (the file's ``name``).
    capacity : str or None
        The drive's user capacity as a unit string (e.g. ``"3.84 TB"``), which
        fio does not measure; ``None`` writes an ASSUMED lower bound (the
        largest region a fio job addressed) with a comment saying so.

    Returns
    -------
    str
        A drive file that :func:`flashsim.components.drive.load_drive` accepts;
        each value's comment names the measurement it came from.

    Raises
    ------
    ConfigError
        No sequential read or write job, no random 4 KiB read or write job, or
        a ``capacity`` that is not a size.
    """
    jobs = fio_jobs(measurements)
    seq_read = _sequential(jobs, "read")
    seq_write = _sequential(jobs, "write")
    if seq_read is None or seq_read.bandwidth is None:
        raise _missing("read_bandwidth", "sequential read job", "--rw=read --bs=1M --iodepth=32")
    if seq_write is None or seq_write.bandwidth is None:
        raise _missing("write_bandwidth", "sequential write job", "--rw=write --bs=1M --iodepth=32")
    rand_read = _random_iops(jobs, "read")
    rand_write = _random_iops(jobs, "write")
    if rand_read is None or rand_read.iops is None:
        raise _missing("read_iops", "random 4 KiB read job", "--rw=randread --bs=4k --iodepth=32")
    if rand_write is None or rand_write.iops is None:
        raise _missing(
            "write_iops", "random 4 KiB write job", "--rw=randwrite --bs=4k --iodepth=32"
        )
    files = sorted({j.source.rsplit(":", 1)[0] for j in jobs})
    names = sorted({PurePath(f).name for f in files})
    versions = sorted({j.conditions.tool_version or "fio ?" for j in jobs})
    lines = [
        f"# {name}: drive file built by flashsim from fio measurements alone.",
        f"# fio output read: {', '.join(files)} ({', '.join(versions)}).",
        "# Each value names the measurement (id and file:line) it came from; values fio does",
        "# not measure are marked ASSUMED or left at the schema's defaults (see the end).",
        'kind = "ssd"',
        f"name = {_toml_str(name)}",
        f"description = {_toml_str('Measured with fio: ' + ', '.join(names))}",
    ]
    lines += _capacity_lines(jobs, capacity)
    for key, job in (("read_bandwidth", seq_read), ("write_bandwidth", seq_write)):
        assert job.bandwidth is not None
        lines.append(f"# {_describe(job)}; fio bw_bytes")
        lines.append(f"{key} = {_mbps(job.bandwidth.value)}  # {_cite(job.bandwidth)}")
    for key, job in (("read_iops", rand_read), ("write_iops", rand_write)):
        assert job.iops is not None
        lines.append(f"# {_describe(job)}")
        lines.append(f'{key} = "{job.iops.value:.12g} IOPS"  # {_cite(job.iops)}')
    latencies: dict[str, float] = {}
    for op in ("read", "write"):
        key = f"{op}_latency"
        lat_job = _latency(jobs, op)
        if lat_job is None or lat_job.latency is None:
            lines.append(
                f"# {key}: left out (schema default 0 s): no random {op} job gives a latency"
            )
            continue
        latencies[op] = lat_job.latency.value
        if lat_job.in_flight == 1:
            lines.append(f"# {_describe(lat_job)}: zero-load latency, fio lat_ns mean")
        else:
            lines.append(
                f"# {_describe(lat_job)}: NOT zero-load (no queue-depth-1 random {op} job; "
                f"{lat_job.in_flight} I/Os in flight), fio lat_ns mean: an upper bound"
            )
        lines.append(f'{key} = "{lat_job.latency.value * 1e6:.12g} us"  # {_cite(lat_job.latency)}')
    lines += _parallelism_lines(rand_read, latencies.get("read"))
    lines += _trim_lines(jobs)
    lines += [
        "# Left at the schema's defaults (fio does not measure them): overprovisioning,",
        "# flash_write_bandwidth, endurance_dwpd, warranty, service_cv.",
    ]
    text = "\n".join(lines) + "\n"
    validate(DriveSpec, tomllib.loads(text), f"drive file for {name}")
    return text


def _capacity_lines(jobs: Sequence[FioJob], capacity: str | None) -> list[str]:
    """``capacity``: the caller's, or an ASSUMED lower bound from the jobs' sizes."""
    if capacity is not None:
        try:
            parse_quantity(capacity, "bytes")
        except UnitError as exc:
            raise ConfigError(_WHERE, "capacity", capacity, f"expected a size ({exc})") from None
        return [f"capacity = {_toml_str(capacity)}  # given when the file was written"]
    sized = [j for j in jobs if j.conditions.block_size_B]
    if not sized:
        return [
            "# ASSUMED: fio does not measure capacity and no job recorded its size;",
            "# set the drive's user capacity from its datasheet.",
            'capacity = "1 TB"  # ASSUMED placeholder',
        ]
    largest = max(sized, key=lambda j: j.conditions.block_size_B or 0.0)
    size = largest.conditions.block_size_B or 0.0
    return [
        "# ASSUMED: fio does not measure capacity; this is the largest region a fio job",
        f"# addressed ({largest.key}, {largest.source}), a lower bound.",
        "# Set the drive's user capacity from its datasheet.",
        f'capacity = "{size:.0f} B"  # ASSUMED lower bound',
    ]


def _parallelism_lines(rand_read: FioJob, read_latency: float | None) -> list[str]:
    """``parallelism`` by Little's law from the read IOPS and zero-load latency."""
    if read_latency is None or rand_read.iops is None:
        return ["# parallelism: left out (schema default 32): no random read latency measured"]
    units = max(1, round(rand_read.iops.value * read_latency))
    return [
        "# Little's law at the knee: read_iops x read_latency = "
        f"{rand_read.iops.value:.6g} /s x {read_latency * 1e6:.6g} us = "
        f"{rand_read.iops.value * read_latency:.3g} I/Os in flight "
        f"(the IOPS job kept {rand_read.in_flight} in flight)",
        f"parallelism = {units}",
    ]


def _trim_lines(jobs: Sequence[FioJob]) -> list[str]:
    """``trim_bandwidth`` from a sequential trim job, if any."""
    trim = _sequential(jobs, "trim")
    if trim is None or trim.bandwidth is None:
        return ["# trim_bandwidth: left out (no sequential trim job)"]
    return [
        f"# {_describe(trim)}; fio bw_bytes",
        f"trim_bandwidth = {_mbps(trim.bandwidth.value)}  # {_cite(trim.bandwidth)}",
    ]
