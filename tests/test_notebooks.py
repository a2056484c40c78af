"""Every notebook in notebooks/ executes headless without error and draws figures.

The notebooks run with ``FLASHSIM_NOTEBOOK_QUICK=1``: the heavy ones then run a few points of
each study (fewer spans, priorities, grid points), which proves they still run and plot, while
a person running them gets the full study.  No cell has a wall-time limit: the work is bounded,
and how long it takes depends on the machine's load (pytest-timeout stays as a hang guard).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
QUICK_NOTEBOOKS = {
    "fabric_whatif",
    "hybrids",
    "perlmutter_over_time",
    "perlmutter_year",
    "vast_pdsw21",
}
KERNEL_STARTUP_S = 600.0  # a kernel's start-up (imports) on a loaded machine; not its work


def execute(path: Path, workdir: Path) -> nbformat.NotebookNode:
    """Run the notebook at ``path`` in a fresh kernel; return it with its outputs.

    The kernel talks over Unix sockets under ``workdir`` rather than TCP ports: two kernels
    starting at once (two xdist workers) cannot pick the same port.
    """
    notebook = nbformat.read(path, as_version=4)
    manager = KernelManager(kernel_name="python3", transport="ipc", ip=str(workdir / "kernel"))
    client = NotebookClient(
        notebook,
        km=manager,
        timeout=None,
        startup_timeout=KERNEL_STARTUP_S,
        iopub_timeout=60,
        raise_on_iopub_timeout=True,
        resources={"metadata": {"path": path.parent}},
    )
    client.execute()
    return notebook


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ipykernel's inline backend (its default): each figure becomes a PNG output, no display.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("FLASHSIM_NOTEBOOK_QUICK", "1")
    notebook = execute(path, tmp_path)
    outputs = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    ]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, [f"{e['ename']}: {e['evalue']}" for e in errors]
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert figures, f"{path.name} drew no figure"


def test_heavy_notebooks_read_the_quick_switch() -> None:
    """The notebooks the test runs small do read FLASHSIM_NOTEBOOK_QUICK."""
    for path in NOTEBOOKS:
        source = "".join(c.source for c in nbformat.read(path, as_version=4).cells)
        assert ('"FLASHSIM_NOTEBOOK_QUICK"' in source) == (path.stem in QUICK_NOTEBOOKS), path.name
