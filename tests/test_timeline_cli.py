"""``relsim timeline``: output, JSON keys, the event log, progress bar, Ctrl-C, bad input, the
two modes of docs/model.md section 7 (``--trials`` and ``--replications``), targets."""

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
tasks = 100
[resources]
rpm = 60
"""

#: The same chain alone: a batch sharing nothing, so independent trials.
ALONE = TIMED.replace("[fleet]\nagents = 2\ntasks = 100\n[resources]\nrpm = 60\n", "")


@pytest.fixture
def timed(tmp_path):
    path = tmp_path / "timed.toml"
    path.write_text(TIMED, encoding="utf-8")
    return str(path)


@pytest.fixture
def alone(tmp_path):
    path = tmp_path / "alone.toml"
    path.write_text(ALONE, encoding="utf-8")
    return str(path)


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_summary(capsys, timed):
    code, out, err = run(capsys, "timeline", timed, "--replications", "3", "--seed", "1")
    assert code == 0 and err == ""
    assert out.startswith("timed chain: 4 steps, timeline\nworkload: 3 replications of 100 tasks")
    for label in ("timeout", "infra failure", "duration p90", "wait for agents", "utilisation of agents",
                  "utilisation of rpm limit", "makespan", "trials per hour", "bottleneck: agents",
                  "precision:", "95% interval"):
        assert label in out


def test_independent_trials_summary_has_no_throughput(capsys, alone):
    code, out, err = run(capsys, "timeline", alone, "--trials", "200", "--seed", "1")
    assert code == 0 and err == ""
    assert "independent trials 200   seed 1" in out and "throughput: none" in out
    assert "utilisation" not in out and "bottleneck" not in out


def test_json_keys_and_reproducibility(capsys, timed):
    code, out, _ = run(capsys, "timeline", timed, "--replications", "3", "--seed", "2", "--json")
    assert code == 0
    data = json.loads(out)
    for key in ("success", "silent_failure", "detected_failure", "timeout", "infra_failure"):
        assert 0 <= data[key] <= 1 and f"{key}_se" in data and f"{key}_ci" in data
    for key in ("expected_attempts", "expected_cost", "cost_per_success", "duration", "wait",
                "utilisation", "makespan", "throughput_per_hour", "successes_per_hour", "trials",
                "seed", "bottleneck", "warnings", "replications", "tasks", "warmup", "precision",
                "makespan_ci", "throughput_per_hour_se"):
        assert key in data
    assert data["trials"] == 300 and data["seed"] == 2 and data["partial"] is False
    assert (data["replications"], data["tasks"], data["warmup"]) == (3, 100, 0)
    assert 0 < data["utilisation"]["agents"] <= 1 and data["utilisation"]["llm"] is None
    assert 0 < data["utilisation"]["rpm"] <= 1 and data["bottleneck"] == "agents"
    for key in ("mean", "p50", "p90", "p99"):
        low, high = data["duration"][f"{key}_ci"]
        assert low <= data["duration"][key] <= high and data["duration"][f"{key}_se"] >= 0
    # with constant durations and 2 agents, every trial's time is 10 s per attempt (plus its
    # waits): the duration is never below 10 s x the fewest attempts (4)
    assert data["duration"]["p50"] >= 40
    _, again, _ = run(capsys, "timeline", timed, "--replications", "3", "--seed", "2", "--json")
    assert again == out


def test_independent_trials_json_has_null_rates(capsys, alone):
    code, out, _ = run(capsys, "timeline", alone, "--trials", "300", "--seed", "2", "--json")
    data = json.loads(out)
    assert code == 0 and data["trials"] == 300 and data["replications"] is None
    assert data["makespan"] is None and data["throughput_per_hour"] is None
    assert data["successes_per_hour"] is None and data["warnings"] == []
    low, high = data["duration"]["p90_ci"]
    assert low <= data["duration"]["p90"] <= high


def test_events_file(capsys, timed, tmp_path):
    events = tmp_path / "events.jsonl"
    code, _, _ = run(capsys, "timeline", timed, "--replications", "2", "--seed", "3",
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


def test_trials_on_a_workload_names_replications(capsys, timed, alone):
    code, out, err = run(capsys, "timeline", timed, "--trials", "10", "--seed", "1")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("relsim: error: --trials: not for a workload") and "--replications R" in err
    code, out, err = run(capsys, "timeline", alone, "--replications", "3", "--seed", "1")
    assert code == 2 and out == "" and "give --trials N" in err and err.count("\n") == 1


TARGETS = """
[targets]
success = 0.5
duration_p90 = {p90}
"""


@pytest.mark.parametrize("p90, code, verdict", [(100000, 0, "met"), (10, 3, "MISSED")])
def test_require_target_exits_3_unless_every_target_is_met(capsys, tmp_path, p90, code, verdict):
    path = tmp_path / "targets.toml"
    path.write_text(TIMED + TARGETS.format(p90=p90), encoding="utf-8")
    got, out, err = run(capsys, "timeline", str(path), "--replications", "3", "--seed", "1",
                        "--require-target")
    assert got == code and err == ""
    assert "success >= 0.5: met" in out and f"duration p90 <= {p90} s: {verdict}" in out
    _, out, _ = run(capsys, "timeline", str(path), "--replications", "3", "--seed", "1", "--json")
    data = json.loads(out)["targets"]
    assert data["duration_p90"]["status"] == verdict.lower() and data["success"]["status"] == "met"


def test_require_target_without_targets_is_an_error(capsys, timed):
    code, out, err = run(capsys, "timeline", timed, "--replications", "2", "--seed", "1",
                         "--require-target")
    assert code == 2 and out == "" and "targets: must be set for --require-target" in err


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.slow
def test_progress_bar_only_on_a_terminal(monkeypatch, capsys, alone):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["timeline", alone, "--trials", "3000", "--seed", "1"]) == 0
    assert "trial" in terminal.getvalue()
    monkeypatch.undo()
    assert capsys.readouterr().err == ""


class InterruptingBar:
    """Ctrl-C once ``after`` trials have ended."""

    def __init__(self, after: int) -> None:
        self.after, self.seen = after, 0

    def update(self, trials):
        self.seen += trials
        if self.seen >= self.after:
            raise KeyboardInterrupt

    def close(self):
        pass


#: Trials of the Ctrl-C test: the blocks in flight when it comes (two per thread, up to 16,384
#: trials each on the compiled path's vectorised lane) still end, so the run must hold many
#: more of them for the stop to leave some unrun, however fast the threads are.
CTRL_C_TRIALS = 500_000


@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_prints_the_partial_estimate_and_exits_130(monkeypatch, capsys, alone, as_json):
    monkeypatch.setattr(timeline_command, "_progress_bar", lambda trials: InterruptingBar(1))
    code, out, err = run(capsys, "timeline", alone, "--trials", str(CTRL_C_TRIALS), "--seed", "5",
                         *(["--json"] if as_json else []))
    assert code == 130
    assert err.startswith("relsim: interrupted: the estimate covers") and err.count("\n") == 1
    if as_json:
        data = json.loads(out)
        assert data["partial"] is True and 0 < data["trials"] < CTRL_C_TRIALS
    else:
        assert out.startswith("PARTIAL RESULT: interrupted after")


def test_ctrl_c_in_a_workload_reports_the_replications_that_ended(monkeypatch, capsys, timed):
    # each replication of 100 tasks reports its trials as it ends: Ctrl-C after the third
    monkeypatch.setattr(timeline_command, "_progress_bar", lambda trials: InterruptingBar(300))
    code, out, err = run(capsys, "timeline", timed, "--replications", "10", "--seed", "5", "--json")
    data = json.loads(out)
    assert code == 130 and err == "relsim: interrupted: the estimate covers 3 replications\n"
    assert data["partial"] is True and data["replications"] == 3 and data["trials"] == 300


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--trials", "0", "--seed", "1"], "--trials: must be an integer >= 1"),
        (["--trials", "10", "--seed", "-3"], "--seed: must be an integer >= 0"),
        (["--trials", "10", "--seed", "1", "--record", "2"], "--record: must come with --events"),
        (["--seed", "1"], "--trials: must be given for independent trials"),
        (["--trials", "10", "--seed", "1", "--replications", "1"], "--replications: must be an integer >= 2"),
    ],
)
def test_bad_arguments_one_line_exit_2(capsys, alone, argv, message):
    try:
        code = main(["timeline", alone, *argv])
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
    for name, count in (("fleet_rate_limits", ["--replications", "2"]),
                        ("support_reviewers", ["--replications", "2"]),
                        ("flaky_eval_harness", ["--trials", "40"])):
        out = subprocess.run(
            [sys.executable, "-m", "relsim", "timeline", f"scenarios/{name}.toml", *count,
             "--seed", "1", "--json"],
            capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1],
        )
        assert out.returncode == 0 and out.stderr == "", out.stderr
        data = json.loads(out.stdout)
        assert data["trials"] == (40 if name == "flaky_eval_harness" else 2 * (data["tasks"] - data["warmup"]))
