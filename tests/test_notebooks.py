"""Every scenario notebook executes from top to bottom without an error.

The notebooks in ``scenarios/notebooks/`` are jupytext percent-format ``.py`` files. Each one
ends with ``assert``s on its headline numbers (values from the lesson, docs/model.md section
5, closed forms, Monte Carlo within 5 standard errors), so this test fails when a change in an
engine alters a conclusion a design review relies on, as well as when a cell errors.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "scenarios" / "notebooks").glob("*.py"))

# Generous: a notebook takes seconds, but the first Monte Carlo run in a fresh checkout also
# compiles the kernels, on a machine that may be busy.
CELL_TIMEOUT_S = 600


def test_every_notebook_is_found() -> None:
    names = {path.stem for path in NOTEBOOKS}
    assert {"01_compounding", "02_verifier_quality", "03_correlated_errors",
            "04_checkpoints_and_gates", "05_eval_tasks_and_trials",
            "06_time_and_throughput"} <= names


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_has_the_parts_a_review_needs(path: Path) -> None:
    """A scenario file, prose, a relsim.plot figure, and pinned headline numbers at the end."""
    import jupytext

    cells = jupytext.read(path).cells
    code = [cell.source for cell in cells if cell.cell_type == "code"]
    prose = [cell.source for cell in cells if cell.cell_type == "markdown"]
    assert any("Scenario.from_toml(" in source for source in code), "loads a scenarios/*.toml"
    assert len(prose) >= 4 and prose[0].startswith("# "), "a title and prose to follow"
    assert any("relsim.plot." in source for source in code), "a figure drawn with relsim.plot"
    last = [line for line in code[-1].splitlines() if line.strip()]
    assert sum(line.lstrip().startswith("assert ") for line in last) >= 3, "ends with asserts"


@pytest.fixture
def kernel_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``python3`` kernel that runs this interpreter on this checkout, without a display.

    The installed ``python3`` kernelspec may start whatever ``python`` is first on PATH;
    a kernelspec written for ``sys.executable`` into a directory put first on JUPYTER_PATH
    takes precedence. The kernel is a child process and inherits the environment, so
    PYTHONPATH makes it import the relsim of this checkout, not another installed copy.
    """
    from ipykernel.kernelspec import write_kernel_spec

    write_kernel_spec(tmp_path / "kernels" / "python3")
    for variable, first in [("JUPYTER_PATH", tmp_path), ("PYTHONPATH", ROOT)]:
        entries = [str(first), *filter(None, [os.environ.get(variable)])]
        monkeypatch.setenv(variable, os.pathsep.join(entries))
    monkeypatch.setenv("MPLBACKEND", "Agg")


def execute(path: Path) -> None:
    """Run the notebook at ``path`` in a fresh kernel whose working directory is the root."""
    import jupytext
    import nbclient

    notebook = jupytext.read(path)
    client = nbclient.NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=CELL_TIMEOUT_S,
        resources={"metadata": {"path": str(ROOT)}},
    )
    client.execute()


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, kernel_env: None) -> None:
    import nbclient

    try:
        execute(path)
    except nbclient.exceptions.CellExecutionError as error:
        pytest.fail(f"{path.name}: a cell failed:\n{error}")


@pytest.mark.slow
def test_a_failing_headline_assert_fails(tmp_path: Path, kernel_env: None) -> None:
    """The negative control: a notebook whose pinned number is wrong does not pass."""
    import nbclient

    broken = tmp_path / "broken.py"
    broken.write_text(
        "# %%\nfrom relsim import formulas\n\n# %%\n"
        "assert formulas.min_retries(0.9, 25, 0.95) == 3  # wrong on purpose: it is 2\n",
        encoding="utf-8",
    )
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="AssertionError"):
        execute(broken)
