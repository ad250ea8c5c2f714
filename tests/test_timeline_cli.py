"""``relsim timeline``: output, JSON keys, the event log, progress bar, Ctrl-C, bad input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import relsim.cli.timeline as timeline_command
from relsim.cli import main

TIMED = """\
name = "timed chain"
steps = 4
p = 0.9
[verifier]
miss = 0.1
[retries]
per_step = 1
[timing]
attempt = 7
verify = 3
[fleet]
agents = 2
[resources]
rpm = 60
"""


@pytest.fixture
def timed(tmp_path):
    path = tmp_path / "timed.toml"
    path.write_text(TIMED, encoding="utf-8")
    return str(path)


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_summary(capsys, timed):
    code, out, err = run(capsys, "timeline", timed, "--trials", "200", "--seed", "1")
    assert code == 0 and err == ""
    assert out.startswith("timed chain: 4 steps, timeline")
    for label in ("timeout", "infra failure", "duration", "mean wait for", "utilisation",
                  "makespan", "throughput"):
        assert label in out


def test_json_keys_and_reproducibility(capsys, timed):
    code, out, _ = run(capsys, "timeline", timed, "--trials", "300", "--seed", "2", "--json")
    assert code == 0
    data = json.loads(out)
    for key in ("success", "silent_failure", "detected_failure", "timeout", "infra_failure"):
        assert 0 <= data[key] <= 1 and f"{key}_se" in data
    for key in ("expected_attempts", "expected_cost", "cost_per_success", "duration", "wait",
                "utilisation", "makespan", "throughput_per_hour", "successes_per_hour", "trials", "seed"):
        assert key in data
    assert data["trials"] == 300 and data["seed"] == 2 and data["partial"] is False
    assert 0 < data["utilisation"]["agents"] <= 1 and data["utilisation"]["llm"] is None
    # with constant durations and 2 agents, every trial's time is 10 s per attempt (plus its
    # waits): the duration is never below 10 s x the fewest attempts (4)
    assert data["duration"]["p50"] >= 40
    _, again, _ = run(capsys, "timeline", timed, "--trials", "300", "--seed", "2", "--json")
    assert again == out


def test_events_file(capsys, timed, tmp_path):
    events = tmp_path / "events.jsonl"
    code, _, _ = run(capsys, "timeline", timed, "--trials", "50", "--seed", "3",
                     "--events", str(events), "--record", "5")
    assert code == 0
    rows = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    assert {row["trial"] for row in rows} == set(range(5))
    assert all(set(row) == {"trial", "time", "kind", "step", "attempt", "resource", "outcome"} for row in rows)
    ends = [row for row in rows if row["kind"] == "end"]
    assert len(ends) == 5 and all(row["outcome"] in ("success", "silent_failure", "detected_failure")
                                   for row in ends)
    attempts = [row for row in rows if row["kind"] == "attempt"]
    assert attempts and all(row["step"] >= 1 and row["attempt"] >= 1 for row in attempts)


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.slow
def test_progress_bar_only_on_a_terminal(monkeypatch, capsys, timed):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["timeline", timed, "--trials", "3000", "--seed", "1"]) == 0
    assert "trial" in terminal.getvalue()
    monkeypatch.undo()
    assert capsys.readouterr().err == ""


class InterruptingBar:
    def update(self, trials):
        raise KeyboardInterrupt

    def close(self):
        pass


@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_prints_the_partial_estimate_and_exits_130(monkeypatch, capsys, timed, as_json):
    monkeypatch.setattr(timeline_command, "_progress_bar", lambda trials: InterruptingBar())
    code, out, err = run(capsys, "timeline", timed, "--trials", "50000", "--seed", "5",
                         *(["--json"] if as_json else []))
    assert code == 130
    assert err.startswith("relsim: interrupted: the estimate covers") and err.count("\n") == 1
    if as_json:
        data = json.loads(out)
        assert data["partial"] is True and 0 < data["trials"] < 50000
    else:
        assert out.startswith("PARTIAL RESULT: interrupted after")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--trials", "0", "--seed", "1"], "--trials: must be an integer >= 1"),
        (["--trials", "10", "--seed", "-3"], "--seed: must be an integer >= 0"),
        (["--trials", "10", "--seed", "1", "--record", "2"], "--record: must come with --events"),
        (["--seed", "1"], "--trials"),
    ],
)
def test_bad_arguments_one_line_exit_2(capsys, timed, argv, message):
    try:
        code = main(["timeline", timed, *argv])
    except SystemExit as exit_info:
        code = exit_info.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_bad_scenario_file_one_line_exit_2(capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("steps = 2\np = 0.9\n[fleet]\narrivals = \"poisson\"\n", encoding="utf-8")
    code, out, err = run(capsys, "timeline", str(path), "--trials", "10", "--seed", "1")
    assert code == 2 and out == ""
    assert err == f'relsim: error: {path}: fleet.rate_per_hour: needed with arrivals = "poisson"\n'


@pytest.mark.slow
def test_ready_scenarios_run_from_a_fresh_process():
    for name in ("fleet_rate_limits", "support_reviewers", "flaky_eval_harness"):
        out = subprocess.run(
            [sys.executable, "-m", "relsim", "timeline", f"scenarios/{name}.toml", "--trials", "40",
             "--seed", "1", "--json"],
            capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1],
        )
        assert out.returncode == 0 and out.stderr == "", out.stderr
        assert json.loads(out.stdout)["trials"] == 40
