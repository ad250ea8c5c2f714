"""Issue 15, items 2 and 3: no runaway work or memory, no traceback on extreme input.

Every engine estimates its time and memory before it starts and refuses, naming the estimate
and what to do, what it could not finish in about a minute or hold in a few GiB (the quoted
runaways of the issue are refused; docs/model.md section 5's reference scenarios and the
files in scenarios/ are not). Scenario files are read with a size and nesting limit. Costs
near the float range give finite answers or a stated infinity, never a warning.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from relsim import RelsimError, Scenario, evaluate, simulate
from relsim.exact import work_estimate as exact_estimate
from relsim.limits import WorkEstimate, format_bytes, memory_limit, time_limit
from relsim.montecarlo import work_estimate as mc_estimate
from relsim.scenario import (
    MAX_FILE_BYTES,
    MAX_NESTING,
    MAX_PER_STEP,
    MAX_ROLLBACKS,
    MAX_STEPS,
    MAX_TOTAL,
    ScenarioError,
)

SCENARIOS = sorted((Path(__file__).parent.parent / "scenarios").glob("*.toml"))

# docs/model.md section 5 (R1-R8), as JSON there.
REFERENCE = {
    "R1": {"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"per_step": 2}},
    "R2": {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 3}},
    "R3": {"steps": 10, "p": 0.85, "verifier": {"miss": 0.2, "false_reject": 0.05},
           "retries": {"per_step": 2, "total": 4}, "cost": {"attempt": 0.02, "verify": 0.01}},
    "R4": {"steps": 12, "p": 0.9, "checkpoints": {"every": 4, "detect": 0.8, "false_alarm": 0.05,
           "rollbacks": 2}, "cost": {"checkpoint": 0.1, "rollback": 0.5}},
    "R5": {"steps": 8, "p": 0.9, "verifier": {"miss": 0.3}, "retries": {"per_step": 2},
           "correlation": {"confusion": {"enter": 0.7, "recover": 0.3, "factor": 0.5}}},
    "R6": {"steps": 8, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"per_step": 2},
           "correlation": {"task_sd": 1.0, "step_sd": 0.8}},
    "R7": {"steps": 9, "p": [0.99, 0.9, 0.8, 0.95, 0.9, 0.7, 0.99, 0.9, 0.85],
           "verifier": {"miss": 0.15, "false_reject": 0.1}, "retries": {"per_step": 3, "total": 5},
           "checkpoints": {"every": 3, "final": True, "detect": 0.9, "rollbacks": 2},
           "correlation": {"task_sd": 0.5, "step_sd": 0.5,
                           "confusion": {"enter": 0.5, "recover": 0.5, "factor": 0.7}},
           "cost": {"attempt": 1, "verify": 0.2, "checkpoint": 0.5, "rollback": 1}},
    "R8": {"steps": 20, "p": 0.95},
}

EVERY_FEATURE = {
    "verifier": {"miss": 0.15, "false_reject": 0.1},
    "correlation": {"task_sd": 0.5, "step_sd": 0.5,
                    "confusion": {"enter": 0.5, "recover": 0.5, "factor": 0.7}},
}

# The runaways for the exact engine (149 GiB; hours; hours; minutes).
EXACT_RUNAWAYS = {
    "149 GiB": {"steps": 100_000, "p": 0.9, "verifier": {"miss": 0.1},
                "retries": {"per_step": 10_000, "total": 1_000_000}},
    "10,000 rollbacks, false alarm 1": {
        "steps": 2000, "p": 0.9,
        "checkpoints": {"final": True, "false_alarm": 1.0, "rollbacks": 10_000}},
    "a checkpoint after every step, 10,000 rollbacks": {
        "steps": 2000, "p": 0.9, "checkpoints": {"every": 1, "rollbacks": 10_000}},
    "2,000 steps, every feature, binding total": {
        "steps": 2000, "p": 0.9, **EVERY_FEATURE, "retries": {"per_step": 3, "total": 400},
        "checkpoints": {"every": 3, "final": True, "detect": 0.9, "rollbacks": 10}},
}


@pytest.fixture(autouse=True)
def _default_limits(monkeypatch):
    monkeypatch.delenv("RELSIM_TIME_LIMIT", raising=False)
    monkeypatch.delenv("RELSIM_MEMORY_LIMIT", raising=False)


# ------------------------------------------------------------------------ the exact engine
@pytest.mark.parametrize("name", EXACT_RUNAWAYS)
def test_evaluate_refuses_the_runaways_naming_the_estimate_and_what_to_do(name):
    s = Scenario.from_dict(EXACT_RUNAWAYS[name])
    estimate = exact_estimate(s)
    assert estimate.seconds > time_limit() or estimate.memory > memory_limit()
    with pytest.raises(RelsimError) as caught:
        evaluate(s)
    message = str(caught.value)
    assert message.startswith("scenario: must be within about 60 s and 4 GiB, got an estimated")
    assert format_bytes(estimate.memory) in message
    assert "relsim.simulate" in message


def test_the_149_gib_scenario_is_estimated_at_about_that():
    # 100,001 steps x 1,000,001 retry states x 2 tainted states x 8 bytes in the state alone,
    # times the 10,001 stacked shifts of one execution: far above 100 GiB.
    estimate = exact_estimate(EXACT_RUNAWAYS["149 GiB"])
    assert estimate.memory > 100 * 2**30
    assert "1,000,001 counter states" in estimate.detail


@pytest.mark.parametrize("name", REFERENCE)
def test_reference_scenarios_are_estimated_far_below_the_limits(name):
    estimate = exact_estimate(REFERENCE[name])
    assert estimate.seconds < 1 and estimate.memory < 2**26


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_files_are_estimated_below_the_limits_by_both_engines(path):
    s = Scenario.from_toml(path)
    assert exact_estimate(s).seconds < 5
    assert mc_estimate(s, 10**6, threads=1).seconds < time_limit()


def test_each_integer_limit_alone_is_served_by_both_engines():
    """The scenario format's maxima, one at a time, pass both engines' estimates."""
    alone = [
        {"steps": MAX_STEPS, "p": 0.9},
        {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": MAX_PER_STEP}},
        {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
         "retries": {"per_step": 3, "total": MAX_TOTAL}},
        {"steps": 25, "p": 0.9, "checkpoints": {"final": True, "false_alarm": 1.0,
                                                "rollbacks": MAX_ROLLBACKS}},
    ]
    for data in alone:
        exact_estimate(data).check("scenario", "")
        mc_estimate(data, 1000, threads=1).check("trials", "")


def test_a_binding_total_of_the_format_maximum_is_left_to_monte_carlo():
    # Alone (per_step defaults to the total) the exact engine's product grows as total**2.
    data = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"total": MAX_TOTAL}}
    with pytest.raises(RelsimError, match=r"relsim\.simulate"):
        evaluate(data)
    mc_estimate(data, 10**5, threads=1).check("trials", "")


def test_the_estimate_grows_with_what_drives_the_work():
    base = {"steps": 200, "p": 0.9, "checkpoints": {"every": 4, "rollbacks": 2}}
    more = {**base, "checkpoints": {"every": 4, "rollbacks": 20}}
    longer = {**base, "steps": 400}
    assert exact_estimate(more).seconds > 5 * exact_estimate(base).seconds
    assert exact_estimate(longer).seconds > 1.5 * exact_estimate(base).seconds


def test_the_limits_can_be_raised_from_the_environment(monkeypatch):
    s = Scenario.from_dict(EXACT_RUNAWAYS["a checkpoint after every step, 10,000 rollbacks"])
    with pytest.raises(RelsimError):
        exact_estimate(s).check("scenario", "")
    monkeypatch.setenv("RELSIM_TIME_LIMIT", "1e9")
    assert exact_estimate(s).check("scenario", "") is not None
    monkeypatch.setenv("RELSIM_MEMORY_LIMIT", "1K")
    with pytest.raises(RelsimError, match="1 KiB"):
        WorkEstimate(seconds=0.0, memory=2048.0).check("scenario", "")


@pytest.mark.parametrize("variable, value", [("RELSIM_TIME_LIMIT", "soon"),
                                             ("RELSIM_TIME_LIMIT", "-1"),
                                             ("RELSIM_MEMORY_LIMIT", "lots")])
def test_a_bad_limit_in_the_environment_is_one_clear_error(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(RelsimError, match=f"{variable}: must be"):
        WorkEstimate(seconds=0.0, memory=0.0).check("scenario", "")


# ------------------------------------------------------------------------- Monte Carlo
def test_simulate_refuses_recording_1e8_trials_naming_the_memory():
    with pytest.raises(RelsimError) as caught:
        simulate(REFERENCE["R1"], trials=10**8, seed=1, record=10**8)
    message = str(caught.value)
    assert message.startswith("record: must be within about")
    assert "GiB" in message and "record at most about" in message


def test_simulate_refuses_a_run_estimated_past_the_time_limit_with_the_trials_that_fit():
    with pytest.raises(RelsimError) as caught:
        simulate(REFERENCE["R1"], trials=10**12, seed=1)
    message = str(caught.value)
    assert message.startswith("trials: must be within about 60 s")
    assert "run at most about" in message


def test_simulate_refuses_a_scenario_whose_single_trial_is_too_long():
    # 100,000 steps redone 10,000 times after false alarms: 1e9 attempts in one trial.
    data = {"steps": MAX_STEPS, "p": 0.9,
            "checkpoints": {"final": True, "false_alarm": 1.0, "rollbacks": MAX_ROLLBACKS}}
    with pytest.raises(RelsimError, match=r"^scenario: must take at most about 1 s a trial"):
        simulate(data, trials=1, seed=1)


def test_the_monte_carlo_estimate_follows_the_rollbacks_that_false_alarms_force():
    # False alarm 1: every pass is rolled back, the whole budget is spent on every trial.
    data = {"steps": 100, "p": 0.9, "checkpoints": {"final": True, "false_alarm": 1.0,
                                                    "rollbacks": 50}}
    assert "5,100 attempts per trial" in mc_estimate(data, 1).detail


# ------------------------------------------------------------------------- scenario files
def test_a_file_without_end_is_refused_after_the_size_limit():
    with pytest.raises(ScenarioError, match=r"^/dev/zero: must be a scenario file of at most"):
        Scenario.from_toml("/dev/zero")


def test_a_file_over_the_size_limit_is_refused(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text("steps = 3\np = 0.9\n" + "#" * MAX_FILE_BYTES)
    with pytest.raises(ScenarioError, match="big.toml: must be a scenario file of at most"):
        Scenario.from_toml(path)


@pytest.mark.parametrize(
    "value",
    ["[" * 500 + "]" * 500, "{a = " * 500 + "1" + "}" * 500, "[{a = [" * 200 + "]}]" * 200],
    ids=["arrays", "inline tables", "both"],
)
def test_deep_nesting_is_one_error_naming_the_file_and_line(tmp_path, value):
    path = tmp_path / "deep.toml"
    path.write_text(f"steps = 3\np = 0.9\nname = 'x'\nx = {value}\n")
    expected = rf"deep.toml line 4: must nest .* at most {MAX_NESTING}"
    with pytest.raises(ScenarioError, match=expected):
        Scenario.from_toml(path)


def test_brackets_in_strings_and_comments_are_not_nesting(tmp_path):
    path = tmp_path / "strings.toml"
    brackets = "[" * 100 + "{" * 100
    path.write_text(
        f'name = "{brackets}"  # {brackets}\n'
        f"steps = 3\np = [0.9, 0.9, 0.9]\n"
        f"# {brackets}\n"
        "[cost]\nattempt = [1.0, 1.0, 1.0]\n"
    )
    assert Scenario.from_toml(path).name == brackets


def test_nesting_just_within_the_limit_reaches_the_scenario_checks(tmp_path):
    path = tmp_path / "nested.toml"
    depth = MAX_NESTING
    path.write_text(f"steps = 3\np = {'[' * depth}0.9{']' * depth}\n")
    with pytest.raises(ScenarioError, match=r"nested.toml: p: must be one value or a list"):
        Scenario.from_toml(path)


def test_an_integer_of_5000_digits_is_one_error_naming_the_file(tmp_path):
    path = tmp_path / "digits.toml"
    path.write_text(f"steps = {'9' * 5000}\np = 0.9\n")
    with pytest.raises(ScenarioError, match=r"digits.toml: cannot read a value") as caught:
        Scenario.from_toml(path)
    assert "set_int_max_str_digits" not in str(caught.value)


# ---------------------------------------------------------------- costs near the float range
def _no_warnings(function):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return function()


def test_costs_of_1e160_give_finite_answers_that_the_engines_agree_on():
    data = {"steps": 5, "p": 0.9, "verifier": {"miss": 0.2}, "retries": {"per_step": 2},
            "cost": {"attempt": 1e160, "verify": 1e159}}
    exact = _no_warnings(lambda: evaluate(data))
    mc = _no_warnings(lambda: simulate(data, trials=200_000, seed=3, record=4))
    # closed form: the expected attempts times the cost of one attempt and its check
    assert exact.expected_cost == pytest.approx(exact.expected_attempts * 1.1e160, rel=1e-12)
    se = mc.standard_errors["expected_cost"]
    assert math.isfinite(mc.expected_cost) and 0 < se < math.inf
    assert abs(mc.expected_cost - exact.expected_cost) < 5 * se
    # negative control: a cost 1% off is told apart
    assert abs(mc.expected_cost - 1.01 * exact.expected_cost) > 5 * se
    assert mc.trajectories["cost"].between(1e160, 1e162).all()
    assert mc.percentiles["cost"]["p50"] >= 1.1e160 * 5


def test_costs_past_the_float_range_are_stated_infinite_without_warnings():
    data = {"steps": 5, "p": 0.9, "cost": {"attempt": 1e308}}
    exact = _no_warnings(lambda: evaluate(data))
    mc = _no_warnings(lambda: simulate(data, trials=1000, seed=3, record=2))
    for outcome in (exact, mc):
        assert outcome.expected_cost == math.inf and outcome.cost_per_success == math.inf
        assert outcome.to_dict()["expected_cost"] is None
        assert outcome.expected_attempts == 5
    assert np.isinf(mc.trajectories["cost"]).all()


def test_tiny_costs_do_not_underflow():
    data = {"steps": 5, "p": 0.9, "cost": {"attempt": 1e-300}}
    assert evaluate(data).expected_cost == pytest.approx(5e-300, rel=1e-12)
    assert simulate(data, trials=1000, seed=3).expected_cost == pytest.approx(5e-300, rel=1e-12)


def test_an_estimate_is_a_result_with_to_dict_and_to_frame():
    estimate = exact_estimate(REFERENCE["R7"])
    data = estimate.to_dict()
    assert set(data) == {"seconds", "memory", "detail"} and data["seconds"] == estimate.seconds
    frame = estimate.to_frame()
    assert frame.shape == (1, 3) and frame["memory"].iloc[0] == estimate.memory


def test_relsim_evaluate_refuses_a_runaway_in_one_line(tmp_path, capsys):
    from relsim.cli import main

    path = tmp_path / "huge.toml"
    path.write_text("steps = 100000\np = 0.9\n[verifier]\nmiss = 0.1\n"
                    "[retries]\nper_step = 10000\ntotal = 1000000\n")
    code = main(["evaluate", str(path)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.startswith("relsim: error: scenario: must be within about 60 s")
    assert "149 GiB" in captured.err and captured.err.count("\n") == 1


def test_relsim_evaluate_of_an_endless_file_stops(capsys):
    from relsim.cli import main

    assert main(["evaluate", "/dev/zero"]) == 2
    assert "/dev/zero: must be a scenario file of at most 32 MiB" in capsys.readouterr().err


def test_a_trial_that_stops_at_its_first_step_is_not_refused_for_its_length():
    # p = 0 with a perfect verifier: the first step exhausts its 10,000 retries and the trial
    # stops there (10,001 attempts, detected), however many steps follow.
    data = {"steps": MAX_STEPS, "p": 0.0, "verifier": {"miss": 0.0},
            "retries": {"per_step": MAX_PER_STEP}}
    assert "10,001 attempts per trial" in mc_estimate(data, 1).detail
    outcome = simulate(data, trials=1000, seed=2)
    assert outcome.detected_failure == 1.0 and outcome.expected_attempts == 10_001
