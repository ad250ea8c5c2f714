"""``relsim solve`` starts fast: it never imports the heavy libraries (issue 2 item 5).

Timing is measured by ``benchmarks/cli_startup.py``; this test only checks the imports, in a
fresh interpreter (the test process itself has imported everything by now).
"""

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("numba", "pandas", "scipy", "matplotlib", "simpy")


def _modules_after(argv: list[str]) -> set[str]:
    code = (
        "import contextlib, io, sys\n"
        "from relsim.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    status = main({argv!r})\n"
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})\n"
        "print(status, ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    status, _, heavy = out.stdout.strip().partition(" ")
    return int(status), {name for name in heavy.split(",") if name}


@pytest.mark.parametrize(
    "argv, status",
    [
        (["solve", "--steps", "25", "--target", "0.95"], 0),
        (["solve", "--steps", "25", "--target", "0.95", "--p", "0.9"], 0),
        (["solve", "--steps", "25", "--target", "0.95", "--p", "0.9", "--miss", "0.1"], 3),
        (["solve", "--steps", "25", "--target", "0.95", "--json"], 0),
        (["table"], 0),
    ],
)
def test_solve_imports_nothing_heavy(argv, status):
    got_status, heavy = _modules_after(argv)
    assert got_status == status
    assert heavy == set(), f"relsim {' '.join(argv)} imported {sorted(heavy)}"


def test_the_check_would_see_a_heavy_import():
    # negative control: the same probe reports a heavy module once something imports it
    code = (
        "import sys, scipy\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "scipy" in out.stdout


def test_a_timeline_workload_takes_its_t_quantiles_from_scipy_special():
    # scipy.stats costs a timeline run about 45 MB and half a second to import, for the
    # replications' t intervals and section 9's growth test alone: scipy.special has the same
    # quantile (stdtrit, which scipy.stats.t.ppf calls); the negative control is the probe above
    code = (
        "import sys\n"
        "from dataclasses import replace\n"
        "import relsim\n"
        "s = relsim.Scenario.from_toml('scenarios/support_reviewers.toml')\n"
        "out = relsim.simulate_timeline(replace(s, fleet=replace(s.fleet, tasks=200)),\n"
        "                               replications=3, seed=1)\n"
        "low, high = out.intervals['throughput_per_hour']\n"
        "print(low < out.throughput_per_hour < high, 'scipy.stats' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.split() == ["True", "False"]
