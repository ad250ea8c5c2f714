"""``mypy relsim`` passes with the project's own configuration (issue 18 item 6).

The configuration is ``[tool.mypy]`` in pyproject.toml; the ``test`` extra installs mypy and
the pandas and scipy stubs, so this runs in CI like any other test. mypy runs in a fresh
process from the repository root, as a developer would run it.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # a cold mypy run over the package takes about a minute
def test_mypy_passes_on_the_package():
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "relsim"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, f"mypy relsim failed:\n{run.stdout}{run.stderr}"
