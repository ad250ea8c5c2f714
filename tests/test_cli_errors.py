"""The command line's one error family: bad input exits 2, a bug exits 1 and looks like one.

Only ``relsim.errors.RelsimError`` is bad input (one line on stderr, exit 2, no traceback).
Anything else that escapes a command is an internal error: exit 1 and one line naming the
exception, with the traceback only under ``--debug`` or ``RELSIM_DEBUG=1``.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import relsim
import relsim.exact
from relsim.cli import main
from relsim.cli._args import as_flags
from relsim.errors import RelsimError, invalid
from relsim.scenario import ScenarioError

ROOT = Path(__file__).resolve().parents[1]
LESSON = str(ROOT / "scenarios" / "lesson_25_steps.toml")
HINT = "(please report; run with --debug or RELSIM_DEBUG=1 for the traceback)"


def _engine_raising(error: BaseException):
    def evaluate(*args, **kwargs):
        raise error

    return evaluate


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def _no_debug_from_the_environment(monkeypatch):
    monkeypatch.delenv("RELSIM_DEBUG", raising=False)


# ----------------------------------------------------------------------------- the family
def test_relsim_error_is_exported_and_is_a_value_error():
    assert relsim.RelsimError is RelsimError
    assert "RelsimError" in relsim.__all__
    assert issubclass(RelsimError, ValueError)
    assert issubclass(ScenarioError, RelsimError)
    assert str(invalid("steps", "an integer >= 1", 0)) == "steps: must be an integer >= 1, got 0"


# ---------------------------------------------------------------------- bad input: exit 2
def test_relsim_error_from_an_engine_exits_2_with_one_line(monkeypatch, capsys):
    error = invalid("tol", "a number in (0, 1e-3]", 1.0)
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(error))
    assert main(["evaluate", LESSON]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _lines(captured.err) == ["relsim: error: tol: must be a number in (0, 1e-3], got 1.0"]


def test_missing_file_exits_2_naming_the_file(tmp_path, capsys):
    missing = tmp_path / "no_such.toml"
    assert main(["evaluate", str(missing)]) == 2
    lines = _lines(capsys.readouterr().err)
    assert len(lines) == 1
    assert lines[0].startswith(f"relsim: error: {missing}: cannot read")


def test_a_directory_instead_of_a_file_exits_2(tmp_path, capsys):
    # IsADirectoryError is an OSError: it must become a RelsimError where the file is read
    assert main(["evaluate", str(tmp_path)]) == 2
    lines = _lines(capsys.readouterr().err)
    assert len(lines) == 1 and "cannot read" in lines[0] and "Traceback" not in lines[0]


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate"])
    assert exit_.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_abbreviated_flags_are_refused(capsys):
    # argparse would take --step for --steps (and --mis for --miss): a later flag sharing the
    # prefix would silently change what a user's script means
    with pytest.raises(SystemExit) as exit_:
        main(["solve", "--step", "25", "--target", "0.95"])
    assert exit_.value.code == 2
    (line,) = _lines(capsys.readouterr().err)
    assert line == "relsim: error: unrecognized arguments: --step"
    assert main(["solve", "--steps", "25", "--target", "0.95"]) == 0  # control: the full flag


@pytest.mark.parametrize(
    "argv, abbreviated",
    [
        (["table", "--step", "5"], "--step"),
        (["evaluate", LESSON, "--jso"], "--jso"),
        (["simulate", LESSON, "--trials", "10", "--seed", "1", "--thread", "1"], "--thread"),
        (["timeline", LESSON, "--trials", "10", "--seed", "1", "--rec", "1"], "--rec"),
        (["analyze", LESSON, "--thresh", "0.5"], "--thresh"),
        (["compare", LESSON, LESSON, "--score", "a"], "--score"),
        (["power", "--delta", "0.1", "--baseline", "0.5", "--alph", "0.1"], "--alph"),
        (["levers", LESSON, "--js"], "--js"),
        (["report", LESSON, "-o", "x.html", "--targ", "0.9"], "--targ"),
        (["sweep", LESSON, "-o", "x.parquet", "--work", "2"], "--work"),
    ],
)
def test_no_command_takes_an_abbreviation(argv, abbreviated, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    (line,) = _lines(capsys.readouterr().err)
    assert line.startswith("relsim: error: unrecognized arguments: ") and abbreviated in line


# ------------------------------------------------- the library speaks Python, the CLI flags
@pytest.mark.parametrize(
    "library, cli",
    [
        ("success: must be 0/1 (or a score with threshold=T), got 2",
         "success: must be 0/1 (or a score with --threshold T), got 2"),
        ("scorer: must be named (scorer=NAME) when samples carry several: a, b, got None",
         "scorer: must be named (--scorer NAME) when samples carry several: a, b, got None"),
        ("without it the ceiling is 0.9 (plan it with plan.total)",
         "without it the ceiling is 0.9 (plan it with --for total)"),
        ("(plan it with plan.retries or plan.allocation)",
         "(plan it with --for retries or --for allocation)"),
        ("a better agent (plan.p) is the remedy", "a better agent (--for p) is the remedy"),
        ("plan a uniform budget instead (plan.retries, which needs little memory)",
         "plan a uniform budget instead (--for retries, which needs little memory)"),
        ("evaluate one design with relsim.evaluate, simulate it with relsim.simulate",
         "evaluate one design with 'relsim evaluate', simulate it with 'relsim simulate'"),
        ("use relsim.simulate_timeline", "use 'relsim timeline'"),
    ],
)
def test_library_words_become_the_cli_flags(library, cli):
    assert as_flags(library) == cli


@pytest.mark.parametrize(
    "text",
    ["threshold: must be a finite number", "a threshold= sign", "max_threshold=3",
     "relsim.plan.total", "the plan.totals", "plan.p95", "relsim.simulated", "target = 0.9"],
)
def test_other_words_are_left_alone(text):
    assert as_flags(text) == text


def test_a_library_error_reaches_the_cli_user_with_its_flag(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    path.write_text("task,trial,success\na,1,1\na,2,0.7\n", encoding="utf-8")
    with pytest.raises(RelsimError, match=r"\(or a score with threshold=T\)"):
        relsim.evalstats.read_trials(path)  # the library names its argument
    assert main(["analyze", str(path)]) == 2
    (line,) = _lines(capsys.readouterr().err)
    assert line.endswith("success: must be 0/1 or true/false (or a score with --threshold T), "
                         "got '0.7'")


def test_a_plan_reason_reaches_the_cli_user_with_its_flag(tmp_path, capsys):
    data = {"steps": 5, "p": 0.5, "target": 0.9, "verifier": {"miss": 0.0},
            "retries": {"per_step": 3, "total": 2}}
    plan = relsim.plan.retries(relsim.Scenario.from_dict(data))
    assert not plan.feasible and plan.reason.endswith("(plan it with plan.total)")
    path = tmp_path / "capped.toml"
    path.write_text("steps = 5\np = 0.5\ntarget = 0.9\n[verifier]\nmiss = 0.0\n"
                    "[retries]\nper_step = 3\ntotal = 2\n", encoding="utf-8")
    assert main(["solve", str(path), "--for", "retries"]) == 3
    out = capsys.readouterr().out
    assert "(plan it with --for total)" in out and "plan.total" not in out


HARNESS = str(ROOT / "examples" / "harness" / "exercise1.csv")
GRID = str(ROOT / "scenarios" / "grids" / "verifier_and_retries.toml")


@pytest.mark.parametrize(
    "argv, opening",
    [
        # checks the parser leaves to the library, which names its Python argument
        (["simulate", LESSON, "--trials", "1" + "0" * 30, "--seed", "1"], "--trials: must be"),
        (["simulate", LESSON, "--trials", "10", "--seed", "1", "--threads", "1" + "0" * 30],
         "--threads: must be"),
        (["power", "--baseline", "0.5", "--delta", "0.1", "--difference-sd=inf"],
         "--difference-sd: must be"),
        (["power", "--baseline", "0.5", "--tasks", "1"], "--tasks: must be"),
        (["power", "--baseline", "0.5", "--delta", "0.9"], "--delta: must be"),
        (["analyze", HARNESS, "--k", "9"], "--k: must be"),
        (["analyze", HARNESS, "--rate", "a/b"], "--rate a/b: must be"),
        (["analyze", HARNESS, "--category", "nope"], "--category: must be"),
        (["analyze", HARNESS, "--scorer", "x"], "--scorer: must be"),
        (["analyze", HARNESS, "--report", "out.txt"], "--report: must be"),
        (["sweep", GRID, "-o", "rows.txt"], "-o: must be"),
        (["sweep", GRID, "--out", "rows.txt"], "--out: must be"),
    ],
)
def test_an_argument_the_user_gave_as_a_flag_is_named_by_its_flag(argv, opening, capsys):
    assert main(argv) == 2
    (line,) = _lines(capsys.readouterr().err)
    assert line.startswith(f"relsim: error: {opening}"), line


def test_a_name_the_user_did_not_type_is_left_alone():
    from relsim.cli._args import as_typed_flag

    assert as_typed_flag("trials: must be at least 1", ["--seed", "1"]) == "trials: must be at least 1"
    # a file's key is not the flag of the same name, nor a file named like a flag
    assert as_typed_flag("a.toml: target: must be set", ["--target", "0.9"]) == "a.toml: target: must be set"
    for message in ("seed: cannot read: No such file or directory", "seed: steps: must be 1"):
        assert as_typed_flag(message, ["seed", "--seed", "1"]) == message


AUDIT = str(ROOT / "examples" / "evals_to_plan" / "audit.json")
FIT = str(ROOT / "examples" / "evals_to_plan" / "fit.json")
STROEBL = str(ROOT / "scenarios" / "stroebl.toml")


@pytest.mark.parametrize(
    "argv, line",
    [
        # a grid where a scenario goes: "base: unknown key; it belongs at 'timing.backoff.base'"
        (["evaluate", GRID], f"{GRID}: axes: unknown key; this is a sweep grid (base and [axes]), "
                             "not a scenario: run it with 'relsim sweep'"),
        (["levers", GRID], f"{GRID}: axes: unknown key; this is a sweep grid (base and [axes]), "
                           "not a scenario: run it with 'relsim sweep'"),
        # a scenario where a grid goes: "name: unknown key; allowed keys: base, method, ..."
        (["sweep", LESSON, "-o", "rows.csv"],
         f"{LESSON}: axes: required key is missing: this is a scenario, not a sweep grid; a grid "
         'names one (base = "scenario.toml", or a [base] table) and gives the values to sweep in '
         "[axes]"),
        # a fit where an audit goes, and back: "miss: must be an object with estimate, ci and
        # effective, got no such key"
        (["solve", LESSON, "--for", "retries", "--verifier-from", FIT],
         f"{FIT}: audit: must be a grader audit (the JSON of 'relsim audit --json') with keys miss "
         "and false_reject, got keys tasks, trials_per_task, always, never, beta, identified, "
         "loglik, check"),
        (["solve", STROEBL, "--for", "retries", "--difficulty-from", AUDIT],
         f"{AUDIT}: fit: must be a task-difficulty fit (the JSON of 'relsim fit --json') with keys "
         "always, never and beta, got keys labels, tasks, clustered, interval, miss, false_reject, "
         "better_than_chance, judged"),
        (["solve", STROEBL, "--for", "retries", "--difficulty-from", str(ROOT / "examples")],
         f"{ROOT / 'examples'}: cannot read: not a regular file (a fit JSON file)"),  # was "an fit"
    ],
)
def test_a_file_of_the_wrong_kind_is_named_for_what_it_is(argv, line, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the sweep writes nothing: refused before
    assert main(argv) == 2
    assert _lines(capsys.readouterr().err) == [f"relsim: error: {line}"]
    assert not (tmp_path / "rows.csv").exists()


@pytest.mark.parametrize(
    "argv, line",
    [
        # Path("") is the current folder: it was read as a folder of Inspect logs (every .json
        # under it, recursively), or written to as "."; an empty -o/--report did nothing
        (["analyze", ""], "trials: must be a file or folder name, not empty, got ''"),
        (["compare", "", HARNESS], "baseline: must be a file or folder name, not empty, got ''"),
        (["audit", ""], "labels: must be a file or folder name, not empty, got ''"),
        (["fit", ""], "trials: must be a file or folder name, not empty, got ''"),
        (["analyze", HARNESS, "--labels", ""],
         "--labels: must be a file or folder name, not empty, got ''"),
        (["evaluate", ""], "file: must be the name of a scenario file, got ''"),
        (["sweep", "", "-o", "rows.csv"], "path: must be a grid file name, got ''"),
        (["solve", LESSON, "--for", "retries", "--verifier-from", ""],
         "audit: must be the name of an audit JSON file, a mapping or an object with to_dict(), "
         "got ''"),
        (["fit", HARNESS, "-o", ""], "-o: must be the name of a file to write, got ''"),
        (["analyze", HARNESS, "--report", ""], "--report: must be the name of a file to write, got ''"),
        (["report", LESSON, "-o", "", "--trials", "0"], "-o: must be the name of a file to write, got ''"),
        # checked before the work, not after the page was made
        (["report", LESSON, "-o", "missing/r.html", "--trials", "0"],
         "-o: must be a file that can be written, got 'missing/r.html' (the folder 'missing' does "
         "not exist)"),
    ],
)
def test_an_empty_path_is_refused_naming_its_argument(argv, line, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stray.json").write_text("{}")  # what reading "." as a log folder would find
    assert main(argv) == 2
    assert _lines(capsys.readouterr().err) == [f"relsim: error: {line}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stray.json"]  # nothing written


#: Literals outside relsim/cli that may name flags: a CSS stylesheet's custom properties, and
#: ChainPlan.command(), whose answer is the command line itself.
FLAG_LITERALS_ALLOWED = {"relsim/report/_html.py", "relsim/plan/chain.py"}


@pytest.mark.slow
def test_library_strings_name_no_flags():
    # every string literal (f-string parts too) of relsim outside the CLI, docstrings aside
    flag = re.compile(r"(?<![\w-])--[a-z]")
    found = []
    for path in sorted((ROOT / "relsim").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name.startswith("relsim/cli/") or name in FLAG_LITERALS_ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        found += [
            f"{name}:{node.lineno}: {node.value.strip()[:60]}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings and flag.search(node.value)
        ]
    assert found == []


# --------------------------------------------------------------------- a bug: exit 1
@pytest.mark.parametrize(
    "error, shown",
    [
        (ZeroDivisionError("float division by zero"), "ZeroDivisionError: float division by zero"),
        # a plain ValueError is not bad input: the engine has a bug
        (ValueError("operands could not be broadcast"), "ValueError: operands could not be broadcast"),
        (OSError("disk on fire"), "OSError: disk on fire"),
    ],
)
def test_any_other_exception_is_an_internal_error(monkeypatch, capsys, error, shown):
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(error))
    assert main(["evaluate", LESSON]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _lines(captured.err) == [f"relsim: internal error: {shown} {HINT}"]
    assert "Traceback" not in captured.err


def test_debug_flag_prints_the_traceback(monkeypatch, capsys):
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(ZeroDivisionError("boom")))
    assert main(["--debug", "evaluate", LESSON]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert "raise error" in err  # the frame that raised is shown
    assert _lines(err)[-1] == f"relsim: internal error: ZeroDivisionError: boom {HINT}"


def test_debug_after_the_command_works_too(monkeypatch, capsys):
    # the hint says "run with --debug": appending it to the failing command line must work
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(ZeroDivisionError("boom")))
    assert main(["evaluate", LESSON, "--debug"]) == 1
    assert "Traceback" in capsys.readouterr().err


@pytest.mark.parametrize("value, traceback", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_relsim_debug_environment_variable(monkeypatch, capsys, value, traceback):
    monkeypatch.setenv("RELSIM_DEBUG", value)
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(ZeroDivisionError("boom")))
    assert main(["evaluate", LESSON]) == 1
    assert ("Traceback" in capsys.readouterr().err) is traceback


def test_debug_does_not_change_bad_input(monkeypatch, capsys, tmp_path):
    # bad input stays one line even with --debug: the traceback is for bugs
    assert main(["--debug", "evaluate", str(tmp_path / "missing.toml")]) == 2
    err = capsys.readouterr().err
    assert len(_lines(err)) == 1 and "Traceback" not in err


def test_a_long_message_stays_one_short_line(monkeypatch, capsys):
    message = "first line\nsecond line " + "x" * 1000
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(RuntimeError(message)))
    assert main(["evaluate", LESSON]) == 1
    (line,) = _lines(capsys.readouterr().err)
    assert line.startswith("relsim: internal error: RuntimeError: first line second line xxx")
    assert line.endswith(HINT) and len(line) < 400


# ------------------------------------------------------------------ interrupts stay as they were
def test_ctrl_c_exits_130(monkeypatch, capsys):
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(KeyboardInterrupt()))
    assert main(["evaluate", LESSON]) == 130
    assert _lines(capsys.readouterr().err) == ["relsim: interrupted"]


@pytest.mark.slow
def test_the_console_command_exits_with_the_mapped_status(tmp_path):
    # the real process: the exit status reaches the shell and stderr holds one line
    out = subprocess.run(
        [sys.executable, "-m", "relsim", "evaluate", str(tmp_path / "missing.toml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 2
    assert len(_lines(out.stderr)) == 1 and "Traceback" not in out.stderr
