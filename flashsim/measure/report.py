"""Text and JSON renderings of run results and system descriptions."""

from __future__ import annotations

from typing import Any

from flashsim.measure.results import RunResult
from flashsim.systems.base import Description
from flashsim.units import format_quantity

MIB = 2**20


def format_run_text(result: RunResult) -> str:
    """A per-phase table for people (bandwidth in GB/s and MiB/s, IOPS, CI)."""
    lines = [
        f"scenario: {result.scenario}   system: {result.system}   seed: {result.seed}   "
        f"fidelity: {result.fidelity}   wall: {result.wall_time_s:.2f} s",
        "",
        f"{'phase':<24} {'op':<6} {'ranks':>6} {'xfer':>10} {'GB/s':>10} {'MiB/s':>11} "
        f"{'IOPS':>12} {'sim s':>9} {'±CI':>7}",
    ]
    for p in result.phases:
        ci = f"{100 * p.ci_rel_halfwidth:.2f}%" if p.ci_rel_halfwidth is not None else "-"
        lines.append(
            f"{p.name:<24} {p.operation:<6} {p.ranks:>6} "
            f"{format_quantity(p.transfer_size_B, 'bytes', 3):>10} {p.bandwidth_Bps / 1e9:>10.3f} "
            f"{p.bandwidth_Bps / MIB:>11.1f} {p.iops:>12.1f} {p.sim_time_s:>9.3f} {ci:>7}"
        )
    return "\n".join(lines)


def format_run_ior_json(result: RunResult) -> dict[str, Any]:
    """Results in the layout of IOR's ``-O summaryFormat=JSON`` output.

    Each phase is one IOR test with one repetition; ``summary`` carries the
    fields IOR parsers read (``bwMaxMIB``, ``bwMinMIB``, ``bwMeanMIB``,
    ``OPsMean`` ...).  Systems whose phases carry per-repetition results in
    ``extra["repetitions"]`` (a list of ``{"bandwidth_Bps", "iops", "time_s"}``)
    get one ``Results`` entry per repetition.
    """
    tests = []
    summary = []
    for test_id, p in enumerate(result.phases):
        reps = p.extra.get("repetitions") or [
            {"bandwidth_Bps": p.bandwidth_Bps, "iops": p.iops, "time_s": p.sim_time_s}
        ]
        bws = [r["bandwidth_Bps"] / MIB for r in reps]
        ops = [r["iops"] for r in reps]
        times = [r["time_s"] for r in reps]
        block = float(p.extra.get("block_size_B", p.bytes_B / max(p.ranks, 1)))
        tests.append(
            {
                "TestID": test_id,
                "Parameters": {
                    "testID": test_id,
                    "api": "POSIX",
                    "blockSize": block,
                    "transferSize": p.transfer_size_B,
                    "numTasks": p.ranks,
                    "repetitions": len(reps),
                    "filePerProc": int(bool(p.extra.get("file_per_process", True))),
                },
                "Results": [
                    [
                        {
                            "access": p.operation,
                            "bwMiB": bw,
                            "blockKiB": block / 1024,
                            "xferKiB": p.transfer_size_B / 1024,
                            "iops": op,
                            "totalTime": t,
                        }
                    ]
                    for bw, op, t in zip(bws, ops, times, strict=True)
                ],
            }
        )
        n = len(bws)
        mean_bw = sum(bws) / n
        mean_ops = sum(ops) / n
        summary.append(
            {
                "operation": p.operation,
                "API": "POSIX",
                "TestID": test_id,
                "ReferenceNumber": test_id,
                "segmentCount": int(p.extra.get("segments", 1)),
                "blockSize": block,
                "transferSize": p.transfer_size_B,
                "numTasks": p.ranks,
                "repetitions": n,
                "filePerProc": int(bool(p.extra.get("file_per_process", True))),
                "bwMaxMIB": max(bws),
                "bwMinMIB": min(bws),
                "bwMeanMIB": mean_bw,
                "bwStdMIB": (sum((b - mean_bw) ** 2 for b in bws) / n) ** 0.5,
                "OPsMax": max(ops),
                "OPsMin": min(ops),
                "OPsMean": mean_ops,
                "OPsSD": (sum((o - mean_ops) ** 2 for o in ops) / n) ** 0.5,
                "MeanTime": sum(times) / n,
                "xsizeMiB": p.bytes_B / MIB,
            }
        )
    return {
        "Version": "flashsim",
        "Command line": f"flashsim run {result.scenario}",
        "tests": tests,
        "summary": summary,
    }


def _fmt(value: float | None, dimension: str) -> str:
    if value is None:
        return "-"
    return format_quantity(value, dimension, 4)  # type: ignore[arg-type]


def format_description(description: Description) -> str:
    """Per-layer peak table and the named bottlenecks."""
    lines = [f"system: {description.system}   kind: {description.kind}", ""]
    lines.append("components: " + ", ".join(f"{k}={v}" for k, v in description.components.items()))
    lines.append("")
    header = (
        f"{'scope':<12} {'layer':<26} {'count':>6} {'read':>12} {'write':>12} "
        f"{'read ops':>13} {'write ops':>13}  note"
    )
    lines.append(header)
    for layer in description.layers:
        lines.append(
            f"{layer.scope:<12} {layer.layer:<26} {layer.count:>6} "
            f"{_fmt(layer.read_Bps, 'bandwidth'):>12} "
            f"{_fmt(layer.write_Bps, 'bandwidth'):>12} {_fmt(layer.read_iops, 'rate'):>13} "
            f"{_fmt(layer.write_iops, 'rate'):>13}  {layer.note}"
        )
    if description.bottlenecks:
        lines.append("")
        for what, layer_name in description.bottlenecks.items():
            lines.append(f"bottleneck ({what}): {layer_name}")
    if description.derived:
        lines.append("")
        for key, value in description.derived.items():
            lines.append(f"{key}: {value:.6g}")
    return "\n".join(lines)
