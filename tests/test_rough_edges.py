"""Rough edges a new user hit, each fixed and held here: pipes, scripts, messages, units and
the numbers a reviewer reads. Where the edge is in how a process meets the shell (a closed
pipe, a script without a main guard), the test runs a real process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import relsim
from relsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
PRODUCTION = str(SCENARIOS / "production_agent.toml")


def _env() -> dict[str, str]:
    """This checkout's relsim for a child process."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err


# ------------------------------------------------------------------------- a broken pipe
@pytest.mark.slow
def test_a_reader_that_leaves_early_ends_the_command_quietly_with_141():
    # 20,000 step counts as JSON: far more than a pipe holds, so the reader's leaving is seen
    steps = ",".join(str(n) for n in range(1, 20_001))
    child = subprocess.Popen([sys.executable, "-m", "relsim", "table", "--steps", steps, "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=ROOT)
    assert child.stdout.read(100).startswith(b"{")
    child.stdout.close()  # the reader leaves, as `| head -c 100` does
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 141  # 128 + SIGPIPE, as a Unix tool it ends
    assert err == ""


@pytest.mark.slow
def test_analyze_into_head_exits_0_or_141_and_says_nothing():
    # the README's `relsim analyze ... | head -9`, through a real shell pipe, several times
    command = (f"{sys.executable} -m relsim analyze examples/harness/exercise1.csv --k 3 --per-task "
               "2>err.txt | head -9 >/dev/null; echo ${PIPESTATUS[0]}; cat err.txt; rm -f err.txt")
    for _ in range(3):
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=_env(),
                              cwd=ROOT, timeout=120)
        status, *rest = done.stdout.splitlines()
        assert status in ("0", "141") and rest == [], done.stdout


# --------------------------------------------------------------- sweep workers from a script
GRID = {"base": {"steps": 5, "p": 0.9, "verifier": {"miss": 0.0}}, "axes": {"retries.per_step": [0, 1, 2]}}


def _script(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    path = tmp_path / "my_sweep.py"
    path.write_text(textwrap.dedent(body).format(grid=json.dumps(GRID)), encoding="utf-8")
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=_env(),
                          cwd=tmp_path, timeout=600)


def test_a_plain_script_sweeping_on_workers_is_refused_at_once_in_one_line(tmp_path):
    started = time.monotonic()
    done = _script(tmp_path, """\
        import json
        import relsim
        frame = relsim.sweep(json.loads('{grid}'), workers=2)
        print(frame["success"].round(6).tolist())
        """)
    assert done.returncode == 1 and done.stdout == ""
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "relsim.errors.RelsimError: workers: a local cluster's worker processes import the main "
        "script again, so a script must call relsim.sweep(..., workers=N) under "
        "'if __name__ == \"__main__\":' (my_sweep.py, line 3); add that guard, or leave workers "
        "out to run the points in this process")
    # refused before any worker started: no bootstrap traceback, no cluster
    assert "freeze_support" not in done.stderr and "Nanny" not in done.stderr
    assert time.monotonic() - started < 60


@pytest.mark.slow
def test_the_same_script_with_the_guard_sweeps_on_workers(tmp_path):
    done = _script(tmp_path, """\
        import json
        import relsim

        def run():
            frame = relsim.sweep(json.loads('{grid}'), workers=2)
            print(frame["success"].round(6).tolist())

        if __name__ == "__main__":
            run()
        """)
    assert done.returncode == 0, done.stderr[-2000:]
    # 1 - 0.1**(r+1) per step, 5 steps: the closed form
    assert done.stdout.strip() == str([round((1 - 0.1 ** (r + 1)) ** 5, 6) for r in range(3)])


def test_the_guard_check_reads_the_guard_either_way_round(tmp_path):
    from relsim.sweeps._main_guard import _guarded_lines

    path = tmp_path / "s.py"
    path.write_text('x = 1\nif "__main__" == __name__:\n    y = 2\n    z = 3\nif __name__ == "x":\n    w = 4\n')
    assert _guarded_lines(str(path)) == [(3, 4)]
    path.write_text("def broken(:\n")
    assert _guarded_lines(str(path)) is None  # unreadable source: not refused


# ------------------------------------------------------------------------------ messages
def test_solve_with_a_file_and_no_for_says_what_to_give(capsys):
    status, out, err = _run(["solve", PRODUCTION], capsys)
    assert status == 2 and out == "" and "None" not in err
    assert err.strip() == (
        "relsim: error: --for: must be given with a SCENARIO file: what to plan, one of retries, "
        f"total, allocation, verifier, p, checkpoints, samples, escalation, reviewers, agents, "
        "llm_concurrency, rpm "
        f"(as in 'relsim solve {PRODUCTION} --for retries')")


def test_a_missing_inspect_log_folder_says_how_the_example_makes_it(capsys):
    status, _, err = _run(["analyze", "examples/harness/logs/exercise1", "--k", "3"], capsys)
    assert status == 2 and err.count("\n") == 1
    assert "examples/harness/logs/exercise1: file: must exist, got no such file or folder" in err
    assert "python examples/harness/make_trials.py --inspect" in err
    # a missing CSV is not an Inspect log: no such hint
    status, _, err = _run(["analyze", "no/such.csv"], capsys)
    assert status == 2 and "make_trials" not in err and "no such file" in err


@pytest.mark.slow
def test_an_infeasible_verifier_plan_shows_its_best_beside_the_design(capsys):
    status, out, _ = _run(["solve", PRODUCTION, "--for", "verifier", "--target", "0.95"], capsys)
    assert status == 3
    assert "nearest design" not in out
    plan = relsim.plan.verifier(relsim.Scenario.from_toml(PRODUCTION), 0.95)
    assert plan.value > 0.05 and not plan.feasible  # success peaks above the design's miss
    assert re.search(rf"miss at the ceiling +{plan.value:.6g} \(the design's: 0\.05\)", out)


# ----------------------------------------------------------------------- the cost's unit
UNIT = {"name": "priced", "steps": 4, "p": 0.9, "target": 0.5, "verifier": {"miss": 0.1},
        "retries": {"per_step": 1}, "checkpoints": {"final": True, "rollbacks": 1},
        "cost": {"attempt": 0.02, "verify": 0.01, "checkpoint": 0.05, "unit": "USD"}}


def _toml(tmp_path: Path, unit: str | None) -> str:
    cost = "" if unit is None else f'unit = "{unit}"\n'
    text = textwrap.dedent("""\
        name = "priced"
        steps = 4
        p = 0.9
        target = 0.5
        [verifier]
        miss = 0.1
        [retries]
        per_step = 1
        [checkpoints]
        final = true
        rollbacks = 1
        [cost]
        attempt = 0.02
        verify = 0.01
        checkpoint = 0.05
        """) + cost
    path = tmp_path / f"priced-{unit}.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("command", [
    ["evaluate"], ["simulate", "--trials", "2000", "--seed", "1"],
    ["timeline", "--trials", "200", "--seed", "1"],
    ["solve", "--for", "retries"], ["levers"],
])
def test_every_cost_printed_carries_the_scenarios_unit(command, tmp_path, capsys):
    priced = _toml(tmp_path, "USD")
    status, out, _ = _run([command[0], priced, *command[1:]], capsys)
    assert status == 0
    costs = [line for line in out.splitlines() if re.search(r"\bcost\b|/success", line)]
    assert costs and all("USD" in line for line in costs), costs
    # without a unit, none is made up
    status, plain, _ = _run([command[0], _toml(tmp_path, None), *command[1:]], capsys)
    assert status == 0 and "USD" not in plain


@pytest.mark.slow
def test_the_report_carries_the_unit_in_every_cost_heading():
    page = relsim.report.render(UNIT, trials=0).html
    # every heading or row label of a cost (the design table's own keys, cost.attempt ...,
    # are the file's, with its cost.unit row beside them)
    headings = re.findall(r"(?:<th>|<td class=\"wrap\">)([^<]*cost per[^<]*)</t[hd]>", page)
    assert len(headings) >= 6 and all(h.endswith("(USD)") for h in headings), headings
    assert "<th>change (USD)</th>" in page  # the levers' change in cost per success
    assert "cost per success (USD)" in page.split('data-figure="checkpoints"', 1)[1].split("</svg>", 1)[0]


@pytest.mark.parametrize("unit", [3, "x" * 17, "a\nb", ""])
def test_the_unit_is_short_printable_text(unit):
    if unit == "":
        assert relsim.Scenario.from_dict({**UNIT, "cost": {"unit": unit}}).cost.unit == ""
        return
    with pytest.raises(relsim.errors.RelsimError, match=r"^cost\.unit: must be text of at most 16 printable"):
        relsim.Scenario.from_dict({**UNIT, "cost": {"unit": unit}})


def test_the_unit_is_display_only():
    priced = relsim.evaluate(UNIT)
    plain = relsim.evaluate({**UNIT, "cost": {k: v for k, v in UNIT["cost"].items() if k != "unit"}})
    assert priced == plain


# ---------------------------------------------------------------------- numbers that read
def test_a_cost_change_of_float_noise_is_no_change(capsys):
    # support_reviewers: one more rollback, or fewer checkpoint misses, changes success but not
    # the cost per success (each rollback redoes what it paid for): the engine's two sums
    # differ by 8.9e-16, which is noise, not a change
    table = relsim.plan.levers(relsim.Scenario.from_toml(SCENARIOS / "support_reviewers.toml"))
    rows = table.set_index("lever")
    base = table.attrs["baseline"]["cost_per_success"]
    for lever in ("one more rollback", "checkpoint misses halved"):
        assert abs(rows.loc[lever, "cost_per_success"] - base) < 1e-12 * base
        assert rows.loc[lever, "delta_cost_per_success"] == 0.0
        assert rows.loc[lever, "delta_success"] > 0  # a real change is kept
    # two replications keep the time levers (not what this test is about) quick
    status, out, _ = _run(["levers", str(SCENARIOS / "support_reviewers.toml"), "--replications", "2"], capsys)
    assert status == 0 and "e-16" not in out
    assert re.search(r"one more rollback .* 0$", out, re.M)


@pytest.mark.slow
def test_the_design_table_does_not_show_the_files_target_as_the_reviews():
    production = relsim.Scenario.from_toml(PRODUCTION)
    page = relsim.report.render(production, target=0.95, trials=0).html
    design = page.split('<section id="design">', 1)[1].split("</section>", 1)[0]
    row = re.search(r'<td class="wrap">target</td><td class="wrap">([^<]*)</td>', design).group(1)
    assert row == "0.9 (the file&#x27;s; this review judges against 0.95)"
    assert "Target 0.95 NOT met" in page
    same = relsim.report.render(production, trials=0).html.split("</section>", 1)[0]
    assert '<td class="wrap">target</td><td class="wrap">0.9</td>' in same


@pytest.mark.slow
def test_utilisation_reads_the_same_in_the_report_and_the_cli(tmp_path, capsys):
    # a workload (Poisson arrivals, a reviewer pool), run by the default replication rule
    design = {"steps": 3, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1},
              "checkpoints": {"final": True, "human": True, "rollbacks": 1},
              "timing": {"attempt": 10, "verify": 2},
              "fleet": {"arrivals": "poisson", "rate_per_hour": 40, "tasks": 100},
              "resources": {"reviewers": 2, "review": {"mean": 120}}}
    page = relsim.report.render(design, trials=300, seed=2).html
    shown = re.search(r'utilisation of reviewers</td><td class="num">([^<]*)</td>', page).group(1)
    path = tmp_path / "d.toml"
    path.write_text(textwrap.dedent("""\
        steps = 3
        p = 0.9
        [verifier]
        miss = 0.1
        [retries]
        per_step = 1
        [checkpoints]
        final = true
        human = true
        rollbacks = 1
        [timing]
        attempt = 10
        verify = 2
        [fleet]
        arrivals = "poisson"
        rate_per_hour = 40
        tasks = 100
        [resources]
        reviewers = 2
        review = { mean = 120 }
        """), encoding="utf-8")
    status, out, _ = _run(["timeline", str(path), "--seed", "2"], capsys)
    assert status == 0
    row = re.search(r"^utilisation of reviewers\s+(\S+)", out, re.M)
    assert row is not None and row.group(1) == shown


# ------------------------------------------------------------------------ the example grids
@pytest.mark.slow
@pytest.mark.parametrize("grid", sorted((SCENARIOS / "grids").glob("*.toml")), ids=lambda p: p.stem)
def test_every_example_grid_prices_its_levers_so_its_frontier_is_a_choice(grid):
    frame = relsim.sweep(grid)
    frontier = relsim.plan.frontier(frame, "cost_per_success", "success")
    assert len(frontier) > 1
    # every axis that buys a better verifier or agent moves its price with it
    import tomllib

    for key in tomllib.loads(grid.read_text(encoding="utf-8"))["axes"]:
        parts = key.split(",")
        if any(part.startswith("verifier.") or part == "p" for part in parts):
            assert any(part.startswith("cost.") for part in parts), key
