"""Every malformed tool output in tests/data/measurements/*/bad is one ``error:`` line, exit 2.

The bad files of each reader go through ``flashsim check`` as a user would give them: once
with the reader forced (``--tool``: a wrong-tool file must be refused by that reader too), and
once sniffed (a file of another tool is then read by its own reader, never a traceback).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from flashsim.cli import main
from flashsim.measurements.readers import READERS

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "measurements"
MODEL = ROOT / "models" / "systems" / "perlmutter.toml"
TOOL_OF_DIR = {module: tool for tool, module in READERS.items()}


def _bad_files() -> list[Path]:
    return sorted(p for p in DATA.glob("*/bad/*") if p.is_file())


def test_every_reader_has_at_least_three_bad_files() -> None:
    per_dir = {d: sum(1 for p in _bad_files() if p.parent.parent.name == d) for d in TOOL_OF_DIR}
    assert all(n >= 3 for n in per_dir.values()), per_dir


@pytest.mark.parametrize("path", _bad_files(), ids=lambda p: str(p.relative_to(DATA)))
def test_a_bad_file_is_one_error_line_naming_it(path: Path) -> None:
    tool = TOOL_OF_DIR[path.parent.parent.name]
    result = CliRunner().invoke(
        main, ["check", "--tool", tool, str(path), "--system", str(MODEL)], catch_exceptions=False
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert str(path) in lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize("path", _bad_files(), ids=lambda p: str(p.relative_to(DATA)))
def test_a_bad_file_sniffed_never_crashes(path: Path) -> None:
    result = CliRunner().invoke(
        main, ["check", str(path), "--system", str(MODEL)], catch_exceptions=False
    )
    assert result.exit_code in (0, 1, 2), result.output
    assert "Traceback" not in result.output
