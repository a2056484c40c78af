"""Test helper: a small Perlmutter scenario file (a few OSSes, flow fidelity, seed 1)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = (ROOT / "models" / "systems" / "perlmutter.toml").as_posix()


def write_scenario(tmp_path: Path, body: str, oss_count: int | None = 1) -> Path:
    """Write ``tmp_path/s.toml``: Perlmutter with ``oss_count`` OSSes, then ``body`` (TOML).

    ``oss_count=None``: the model's own OSS count (no ``[system_set]``).
    """
    path = tmp_path / "s.toml"
    sets = "" if oss_count is None else f'[system_set]\n"oss.count" = {oss_count}\n\n'
    path.write_text(f'name = "t"\nsystem = "{MODEL}"\nseed = 1\nfidelity = "flow"\n\n{sets}{body}')
    return path
