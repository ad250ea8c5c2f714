"""Every scenario notebook executes from top to bottom without an error.

The notebooks in ``scenarios/notebooks/`` are jupytext percent-format ``.py`` files. Each one
ends with ``assert``s on its headline numbers (values from the lesson, docs/model.md section
5, closed forms and Monte Carlo within 5 standard errors), so this test fails when a change
in an engine alters a conclusion a design review relies on, as well as when a cell errors.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "scenarios" / "notebooks").glob("*.py"))

# Generous: a notebook takes seconds; the first Monte Carlo run in a fresh checkout also
# compiles the kernels.
CELL_TIMEOUT_S = 600


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 5, NOTEBOOKS


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")

    # The kernel is a child process: it inherits this environment. It must import the
    # relsim of this checkout (not another installed copy) and draw without a display.
    path_entries = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path_entries))
    monkeypatch.setenv("MPLBACKEND", "Agg")

    notebook = jupytext.read(path)
    client = nbclient.NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(ROOT)}},  # the kernel's working directory
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as error:
        pytest.fail(f"{path.name}: a cell failed:\n{error}")
