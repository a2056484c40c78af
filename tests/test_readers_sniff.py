"""Every real tool output in tests/data/measurements is claimed by exactly one reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from flashsim.measurements.readers import READERS, SIDECAR_SUFFIX, SNIFF_BYTES, reader_module

DATA = Path(__file__).resolve().parent / "data" / "measurements"

#: Files beside the outputs that are no tool output (inputs the runs were made with).
NOT_OUTPUTS = {"config.ini", "tiny.ini"}

#: Directories named for their use rather than their tool: the reader that reads them
#: (seed000-check: seed 000's obdfilter-survey medians written in the tool's format).
DIR_READER = {"seed000-check": "obdfilter"}
#: Directories of several tools' outputs, each file named for its reader (seed000: the
#: calibration proof's obdfilter-survey, lnet and ior files, tests/test_calibrate.py; seed002:
#: the VAST one's ior files, tests/test_calibrate_vast.py).
MIXED = {"seed000", "seed002"}


def _outputs() -> list[Path]:
    return sorted(
        p
        for p in DATA.rglob("*")
        if p.is_file()
        and p.suffix != ".md"
        and not p.name.endswith(SIDECAR_SUFFIX)
        and p.name not in NOT_OUTPUTS
        and "bad" not in p.relative_to(DATA).parts
        and "scripts" not in p.relative_to(DATA).parts
    )


def test_there_are_outputs_of_every_text_tool() -> None:
    tools = {p.relative_to(DATA).parts[0] for p in _outputs()}
    assert {"fio", "ior", "io500", "obdfilter", "lnet", "darshan"} <= tools


@pytest.mark.parametrize("path", _outputs(), ids=lambda p: str(p.relative_to(DATA)))
def test_one_reader_claims_each_output(path: Path) -> None:
    head = path.read_bytes()[:SNIFF_BYTES]
    claims = [tool for tool in READERS if reader_module(tool).sniff(head)]
    assert len(claims) == 1, claims
    directory = path.relative_to(DATA).parts[0]
    directory = DIR_READER.get(directory, directory)
    if directory in MIXED:
        directory = path.name.split("-")[0]
    assert READERS[claims[0]] == directory or claims[0].startswith(directory)
