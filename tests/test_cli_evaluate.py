"""``relsim evaluate SCENARIO.toml [--json]``: output, JSON keys, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from relsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "scenarios" / "lesson_25_steps.toml"


def _write(tmp_path: Path, text: str, name: str = "s.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


R2 = """name = "R2"
steps = 25
p = 0.9
target = 0.95
[verifier]
miss = 0.1
[retries]
per_step = 3
"""


def test_readable_summary(tmp_path, capsys):
    assert main(["evaluate", _write(tmp_path, R2)]) == 0
    out = capsys.readouterr().out
    # docs/model.md R2: 0.757383, 0.240978, 0.001639, 27.449108 attempts
    assert "R2: 25 steps, exact" in out
    assert "success                0.757383    75.74%" in out
    assert "silent failure         0.240978    24.10%" in out
    assert "detected failure       0.001639     0.16%" in out
    assert "attempts per trial      27.4491" in out
    assert f"cost per success {27.449108 / 0.757383:>12.6g}"[-8:] in out
    assert "target 0.95: NOT met, 19.26 percentage points short (success 0.757383)" in out


def test_target_met_says_by_how_much(capsys):
    assert main(["evaluate", str(LESSON)]) == 0
    out = capsys.readouterr().out
    # docs/model.md R1: 0.975298 against 0.95
    assert "target 0.95: met, 2.53 percentage points above (success 0.975298)" in out


def test_no_target_no_verdict(tmp_path, capsys):
    assert main(["evaluate", _write(tmp_path, "steps = 20\np = 0.95\n")]) == 0
    out = capsys.readouterr().out
    assert "target " not in out and "met" not in out
    assert "silent failure         0.641514" in out  # docs/model.md R8


def test_json_has_the_model_md_keys(tmp_path, capsys):
    assert main(["evaluate", _write(tmp_path, R2), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for key in ("success", "silent_failure", "detected_failure", "expected_attempts",
                "expected_cost", "cost_per_success"):
        assert key in data
    assert data["method"] == "exact"
    assert round(data["success"], 6) == 0.757383 and round(data["expected_cost"], 6) == 27.449108
    assert data["target"] == 0.95 and data["meets_target"] is False
    assert data["margin"] == pytest.approx(0.757383 - 0.95, abs=1e-6)


def test_json_without_success_has_null_cost_per_success(tmp_path, capsys):
    text = "steps = 2\np = 0.0\n[verifier]\n[retries]\nper_step = 1\n"
    assert main(["evaluate", _write(tmp_path, text), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["success"] == 0.0 and data["cost_per_success"] is None
    assert "target" not in data


BAD = [
    ("missing file", None, "cannot read"),
    ("syntax error", "steps = 3\n\np = 0.9.1\n", "TOML syntax error"),
    ("unknown key", "steps = 3\np = 0.9\n[verifier]\nmis = 0.1\n",
     "verifier.mis: unknown key; did you mean 'miss'?"),
    ("retries without verifier", "steps = 3\np = 0.9\n[retries]\nper_step = 2\n",
     "retries: needs a [verifier]"),
    ("out of range", "steps = 3\np = 1.5\n", "p: must be a probability in [0, 1], got 1.5"),
    ("negative budget", "steps = 3\np = 0.9\n[verifier]\n[retries]\nper_step = -1\n",
     "retries.per_step: must be an integer in 0..10000, got -1"),
    ("wrong list length", "steps = 3\np = [0.9, 0.8]\n",
     "p: must be one value or a list of one value per step (3), got a list of 2"),
    ("checkpoint past the end", "steps = 3\np = 0.9\n[checkpoints]\nat = [4]\n",
     "checkpoints.at: must be an integer in 1..3, got 4"),
]


@pytest.mark.parametrize("text, expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_scenario_is_one_line_and_exit_2(tmp_path, capsys, text, expected):
    path = str(tmp_path / "absent.toml") if text is None else _write(tmp_path, text)
    assert main(["evaluate", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"relsim: error: {path}: ")
    assert expected in lines[0]


def test_syntax_error_names_the_line(tmp_path, capsys):
    assert main(["evaluate", _write(tmp_path, "steps = 3\n\np = 0.9.1\n")]) == 2
    assert "line 3" in capsys.readouterr().err


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["evaluate"])
    assert info.value.code == 2
    assert "relsim evaluate: error:" in capsys.readouterr().err


@pytest.mark.slow
def test_console_script_prints_no_traceback(tmp_path):
    path = _write(tmp_path, "steps = 3\np = 0.9\n[retries]\nper_step = 2\n")
    out = subprocess.run([sys.executable, "-m", "relsim", "evaluate", path],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1


# ------------------------------------------------------------------- --require-target (a CI gate)
def test_require_target_exits_0_when_met_and_3_when_not(tmp_path, capsys):
    # R1 of docs/model.md section 5: success 0.975298 against 0.95 (met) and 0.98 (not met)
    body = 'steps = 25\np = 0.9\n[verifier]\nmiss = 0.0\n[retries]\nper_step = 2\n'
    met = _write(tmp_path, "target = 0.95\n" + body, "met.toml")
    short = _write(tmp_path, "target = 0.98\n" + body, "short.toml")
    assert main(["evaluate", met, "--require-target"]) == 0
    assert "met, 2.53 percentage points above" in capsys.readouterr().out
    assert main(["evaluate", short, "--require-target"]) == 3
    assert "NOT met, 0.47 percentage points short" in capsys.readouterr().out
    assert main(["evaluate", short]) == 0  # without the flag, a report, not a gate
    capsys.readouterr()
    assert main(["evaluate", short, "--require-target", "--json"]) == 3
    result = json.loads(capsys.readouterr().out)
    assert result["meets_target"] is False
    assert result["margin"] == pytest.approx(0.975298 - 0.98, abs=1e-6)


def test_require_target_without_a_target_is_bad_input(tmp_path, capsys):
    path = _write(tmp_path, "steps = 3\np = 0.9\n")
    assert main(["evaluate", path, "--require-target"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "target: must be set for --require-target" in err and "s.toml" in err


def test_a_target_of_one_is_met_only_by_a_design_that_cannot_fail(tmp_path, capsys):
    # 0.9 with 40 retries behind a perfect verifier: success rounds to 1.0 in doubles, but
    # the failure 25 * 0.1**41 is not 0: the target 1 is not met
    body = 'steps = 25\np = 0.9\ntarget = 1.0\n[verifier]\nmiss = 0.0\n[retries]\nper_step = 40\n'
    assert main(["evaluate", _write(tmp_path, body), "--require-target"]) == 3
    certain = 'steps = 25\np = 1.0\ntarget = 1.0\n'
    assert main(["evaluate", _write(tmp_path, certain, "c.toml"), "--require-target"]) == 0
