"""``relsim simulate``: output, JSON keys, reproducibility, progress bar, Ctrl-C, bad input."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys

import pytest

import relsim.cli.simulate as simulate_command
from relsim.cli import main

R2 = """\
name = "R2 of docs/model.md section 5"
steps = 25
p = 0.9
[verifier]
miss = 0.1
[retries]
per_step = 3
"""

R4 = """\
steps = 12
p = 0.9
[checkpoints]
every = 4
detect = 0.8
false_alarm = 0.05
rollbacks = 2
[cost]
checkpoint = 0.1
rollback = 0.5
"""

# docs/model.md section 5, R2: success, silent, detected
R2_EXACT = (0.757383, 0.240978, 0.001639)


@pytest.fixture
def r2(tmp_path):
    path = tmp_path / "r2.toml"
    path.write_text(R2)
    return str(path)


@pytest.fixture
def r4(tmp_path):
    path = tmp_path / "r4.toml"
    path.write_text(R4)
    return str(path)


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_summary_has_estimates_errors_intervals_and_percentiles(capsys, r2):
    code, out, err = run(capsys, "simulate", r2, "--trials", "100000", "--seed", "7")
    assert code == 0 and err == ""  # stderr is not a terminal here: no progress bar
    assert "R2 of docs/model.md section 5" in out and "seed 7" in out and "100,000" in out
    for label in (
        "success",
        "silent failure",
        "detected failure",
        "attempts per trial",
        "cost per trial",
        "cost per success",
        "p50",
        "p90",
        "p99",
    ):
        assert label in out
    assert "PARTIAL" not in out


def test_json_keys_and_agreement_with_model(capsys, r2):
    code, out, _ = run(capsys, "simulate", r2, "--trials", "200000", "--seed", "3", "--json")
    assert code == 0
    data = json.loads(out)
    for key in (
        "success",
        "silent_failure",
        "detected_failure",
        "expected_attempts",
        "expected_cost",
        "cost_per_success",
    ):
        assert f"{key}_se" in data and len(data[f"{key}_ci"]) == 2
    assert data["trials"] == 200000 and data["seed"] == 3 and data["partial"] is False
    assert data["method"] == "montecarlo"
    assert set(data["percentiles"]) == {"cost", "attempts"}
    for key, exact in zip(("success", "silent_failure", "detected_failure"), R2_EXACT):
        se = math.sqrt(exact * (1 - exact) / data["trials"])
        assert abs(data[key] - exact) < 5 * se


def test_same_seed_same_output_whatever_threads(capsys, r4):
    outputs = set()
    for threads in ("1", "2"):
        code, out, _ = run(
            capsys,
            "simulate",
            r4,
            "--trials",
            "150000",
            "--seed",
            "11",
            "--threads",
            threads,
            "--json",
        )
        assert code == 0
        outputs.add(out)
    assert len(outputs) == 1
    _, other, _ = run(capsys, "simulate", r4, "--trials", "150000", "--seed", "12", "--json")
    assert other not in outputs


def test_seed_is_required(capsys, r4):
    # docs/model.md section 6: `relsim simulate SCENARIO.toml --trials N --seed S`; a run is
    # always reproducible from its command line.
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", r4, "--trials", "5000"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "--seed" in err and err.count("\n") == 1


def test_record(capsys, r4):
    code, out, _ = run(
        capsys, "simulate", r4, "--trials", "1000", "--seed", "2", "--record", "4", "--json"
    )
    rows = json.loads(out)["trajectories"]
    assert code == 0 and [row["trial"] for row in rows] == [0, 1, 2, 3]
    assert set(rows[0]) == {
        "trial",
        "outcome",
        "attempts",
        "cost",
        "retries_used",
        "rollbacks",
        "first_wrong_step",
        "caught_at",
        "stopped_at",
    }
    for row in rows:
        assert row["outcome"] in ("success", "silent_failure", "detected_failure")
        assert (row["stopped_at"] is None) == (row["outcome"] != "detected_failure")
    code, out, _ = run(capsys, "simulate", r4, "--trials", "1000", "--seed", "2", "--record", "4")
    assert "first_wrong_step" in out and "caught_at" in out


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal(monkeypatch, capsys, r2):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["simulate", r2, "--trials", "300000", "--seed", "1"]) == 0
    assert "trial" in terminal.getvalue()  # tqdm's bar, with its unit
    monkeypatch.undo()
    assert capsys.readouterr().err == ""


class InterruptingBar:
    """Stands in for the progress bar: Ctrl-C after the second finished chunk."""

    def __init__(self):
        self.updates = 0

    def update(self, trials):
        self.updates += 1
        if self.updates == 2:
            raise KeyboardInterrupt

    def close(self):
        pass


@pytest.mark.slow
@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_prints_the_partial_estimate_and_exits_130(monkeypatch, capsys, r2, as_json):
    monkeypatch.setattr(simulate_command, "_progress_bar", lambda trials: InterruptingBar())
    argv = ["simulate", r2, "--trials", "5000000", "--seed", "5", "--threads", "1"]
    code, out, err = run(capsys, *argv, *(["--json"] if as_json else []))
    assert code == 130
    assert err.startswith("relsim: interrupted: the estimate covers") and err.count("\n") == 1
    if as_json:
        data = json.loads(out)
        assert data["partial"] is True and 0 < data["trials"] < 5000000
    else:
        assert out.startswith("PARTIAL RESULT: interrupted after")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--trials", "0", "--seed", "1"], "--trials: must be an integer >= 1"),
        (["--trials", "many", "--seed", "1"], "--trials: must be an integer >= 1"),
        (["--trials", "10", "--seed", "1", "--threads", "0"], "--threads: must be an integer >= 1"),
        (["--trials", "10", "--seed", "-3"], "--seed: must be an integer >= 0"),
        (["--trials", "10", "--seed", "1", "--record", "-1"], "--record: must be an integer >= 0"),
        (["--seed", "1"], "--trials"),
    ],
)
def test_bad_arguments_one_line_exit_2(capsys, r2, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", r2, *argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and err.count("\n") == 1


def test_bad_scenario_files_one_line_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("steps = 5\np = 0.9\n[verifier]\nmis = 0.1\n")
    code, _, err = run(capsys, "simulate", str(bad), "--trials", "10", "--seed", "1")
    assert code == 2 and "verifier.mis" in err and "miss" in err and err.count("\n") == 1
    code, _, err = run(capsys, "simulate", str(tmp_path / "missing.toml"), "--trials", "10", "--seed", "1")
    assert code == 2 and "missing.toml" in err and err.count("\n") == 1


@pytest.mark.slow
def test_piped_run_has_no_progress_bar_and_no_traceback(r4):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "relsim",
            "simulate",
            r4,
            "--trials",
            "20000",
            "--seed",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and result.stderr == ""
    assert json.loads(result.stdout)["trials"] == 20000


# ------------------------------------------------------- issue 15: limits, extreme values
def test_recording_1e8_trials_is_refused_in_one_line_naming_the_memory(capsys, r2, monkeypatch):
    monkeypatch.delenv("RELSIM_MEMORY_LIMIT", raising=False)
    code, out, err = run(capsys, "simulate", r2, "--trials", "100000000", "--seed", "1",
                         "--record", "100000000")
    assert code == 2 and out == ""
    assert err.startswith("relsim: error: --record: must be within about") and err.count("\n") == 1
    assert "GiB" in err and "record at most about" in err


def test_a_run_over_the_time_limit_is_refused_with_the_trials_that_fit(capsys, r2, monkeypatch):
    monkeypatch.delenv("RELSIM_TIME_LIMIT", raising=False)
    code, out, err = run(capsys, "simulate", r2, "--trials", "10" + "0" * 12, "--seed", "1")
    assert code == 2 and out == ""
    assert err.startswith("relsim: error: --trials: must be within about 60 s")
    assert "run at most about" in err and err.count("\n") == 1


@pytest.mark.slow
def test_costs_of_1e160_are_answered_without_a_warning_or_traceback(tmp_path):
    path = tmp_path / "costly.toml"
    path.write_text("steps = 5\np = 0.9\n[cost]\nattempt = 1e160\n")
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "relsim", "simulate", str(path), "--trials",
         "1000", "--seed", "1", "--json"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0 and done.stderr == ""
    # five attempts of 1e160 in every trial: the closed form
    assert json.loads(done.stdout)["expected_cost"] == pytest.approx(5e160, rel=1e-12)


def test_an_endless_file_is_refused(capsys):
    code, out, err = run(capsys, "simulate", "/dev/zero", "--trials", "10", "--seed", "1")
    assert code == 2 and err.startswith("relsim: error: /dev/zero: must be a scenario file")
