"""Planning shared resources with the timeline (``relsim solve --for reviewers | agents |
llm_concurrency | rpm``; docs/model.md section 7, "Targets"): held to Erlang C where queueing
theory has the answer, to the support scenario's SLA, and to its own rules (infeasible names
the target that binds at any count; every count on the same seeds)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from relsim import Scenario, plan
from relsim.cli import main
from relsim.errors import RelsimError
from relsim.plan.capacity import ResourcePlan

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def erlang_c(servers: int, load: float) -> float:
    """P(an arrival waits) in M/M/c with offered load ``a = lambda / mu`` (``a < c``)."""
    top = load**servers / math.factorial(servers) * servers / (servers - load)
    return top / (sum(load**k / math.factorial(k) for k in range(servers)) + top)


def erlang_sojourn(servers: int, rate_per_hour: float, review: float) -> float:
    """Mean seconds from arrival to the end of the review in M/M/c (infinite when unstable)."""
    load = rate_per_hour / 3600 * review
    if load >= servers:
        return math.inf
    return erlang_c(servers, load) * review / (servers - load) + review


def least_by_erlang(rate_per_hour: float, review: float, target: float) -> int:
    return next(c for c in range(1, 100) if erlang_sojourn(c, rate_per_hour, review) <= target)


#: A reviewer pool fed Poisson arrivals (52.5 an hour) with exponential reviews of 4 minutes:
#: offered load 3.5 reviewers. Target: 400 s from arrival to the end of the review, on average.
RATE, REVIEW, TARGET = 52.5, 240.0, 400.0
GATE = {"steps": 1, "p": 1.0, "checkpoints": {"final": True, "human": True},
        "fleet": {"arrivals": "poisson", "rate_per_hour": RATE, "tasks": 1500},
        "resources": {"reviewers": 1, "review": {"mean": REVIEW}},
        "targets": {"duration_mean": TARGET}}


def test_the_erlang_answer_is_clear_of_the_target():
    # the reference, from queueing theory alone: 5 reviewers (4 give 594 s, 5 give 300 s)
    assert least_by_erlang(RATE, REVIEW, TARGET) == 5
    assert erlang_sojourn(4, RATE, REVIEW) > TARGET + 150 > TARGET - 90 > erlang_sojourn(5, RATE, REVIEW)
    # the negative control's reference: reviews 20% longer need 6
    assert least_by_erlang(RATE, 1.2 * REVIEW, TARGET) == 6


@pytest.mark.slow
def test_the_planner_finds_erlang_cs_least_pool():
    result = plan.resources(GATE, "reviewers", replications=6, seed=3)
    assert isinstance(result, ResourcePlan) and result.feasible
    assert result.value == least_by_erlang(RATE, REVIEW, TARGET) == 5
    assert result.value != least_by_erlang(RATE, 1.2 * REVIEW, TARGET)  # negative control
    # sure: met at 5 and missed at 4, both beyond doubt
    assert result.sure and result.below["duration_mean"]["status"] == "missed"
    assert result.confidence > 0.99 and result.below_confidence > 0.99
    # the estimate at the answer is Erlang's mean sojourn within 5 standard errors
    out = result.outcome
    expected = erlang_sojourn(5, RATE, REVIEW)
    assert abs(out.duration["mean"] - expected) <= 5 * out.standard_errors["duration_mean"]
    assert abs(out.duration["mean"] - erlang_sojourn(5, RATE, 1.2 * REVIEW)) > 5 * out.standard_errors["duration_mean"]
    # the search started above the offered load (3.5): fewer than 4 can never keep up
    assert min(c for c in result.tried if c is not None) == 4
    assert result.tried[None] == "met" and result.tried[4] == "not met"


@pytest.mark.slow
def test_every_count_runs_on_the_same_seeds():
    # common random numbers: the answer's run is simulate_timeline on the planned scenario with
    # the plan's seed, and replication r of every count draws the same tasks and decisions (so
    # the per-replication successes agree across counts while the durations do not)
    from relsim import simulate_timeline
    from relsim.plan.sensitivity import apply

    design = {**GATE, "fleet": {**GATE["fleet"], "tasks": 300}}
    result = plan.resources(design, "reviewers", replications=3, seed=5)
    again = simulate_timeline(result.scenario, replications=3, seed=5)
    assert again.to_dict() == result.outcome.to_dict()
    runs = {c: simulate_timeline(apply(design, {"resources.reviewers": c}), replications=3, seed=5)
            for c in (4, 9)}
    assert runs[4].replication_values["success"] == runs[9].replication_values["success"]
    assert runs[4].duration["mean"] > runs[9].duration["mean"]


def test_infeasible_names_the_target_that_binds_at_any_count():
    # a review takes 240 s on average: no pool brings the mean under 200 s
    design = {**GATE, "fleet": {**GATE["fleet"], "tasks": 200}, "targets": {"duration_mean": 200.0}}
    result = plan.resources(design, "reviewers", replications=3, seed=1)
    assert not result.feasible and result.value is None and result.binding == ("duration_mean",)
    assert result.targets["duration_mean"]["status"] == "missed"
    assert "with reviewers unlimited, duration_mean <= 200 is missed" in result.reason
    assert list(result.tried) == [None]  # nothing else is worth running
    data = result.to_dict()
    assert data["feasible"] is False and data["binding"] == ["duration_mean"]
    assert data["tried"] == [{"count": None, "status": "not met"}] and data["method"] == "timeline"
    assert result.to_frame().at[0, "targets_duration_mean_status"] == "missed"


def test_bad_requests_name_what_is_wrong():
    with pytest.raises(RelsimError, match="targets: the scenario sets none"):
        plan.resources({k: v for k, v in GATE.items() if k != "targets"}, "reviewers")
    with pytest.raises(RelsimError, match="for_: must be one of reviewers, agents"):
        plan.resources(GATE, "retries")
    with pytest.raises(RelsimError, match="checkpoints.human: must be true to plan reviewers"):
        plan.resources({"steps": 1, "p": 0.9, "targets": {"duration_mean": 10}}, "reviewers")


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
def test_solve_for_reviewers_on_the_support_scenario(capsys):
    # the check: with duration_p90 = 900 (the file's [targets]) the least pool is 3,
    # and the answer says how sure it is
    path = str(SCENARIOS / "support_reviewers.toml")
    assert Scenario.from_toml(path).targets.duration_p90 == 900
    code, out, err = run(capsys, "solve", path, "--for", "reviewers", "--replications", "6",
                         "--seed", "2", "--json")
    data = json.loads(out)
    assert code == 0 and err == ""
    assert data["value"] == 3 and data["sure"] is True and data["feasible"] is True
    assert data["below"]["duration_p90"]["status"] == "missed"
    assert data["targets"]["duration_p90"]["status"] == "met"
    assert data["confidence"] > 0.99 and data["replications"] == 6 and data["seed"] == 2
    code, out, _ = run(capsys, "solve", path, "--for", "reviewers", "--replications", "6",
                       "--seed", "2")
    assert code == 0 and "least reviewers                3" in out
    assert "at 2 duration_p90 missed" in out and "duration p90 <= 900 s: met" in out


def test_solve_for_a_resource_exits_3_when_infeasible(capsys, tmp_path):
    path = tmp_path / "gate.toml"
    path.write_text(
        'steps = 1\np = 1.0\n[checkpoints]\nfinal = true\nhuman = true\n'
        '[fleet]\narrivals = "poisson"\nrate_per_hour = 60\ntasks = 200\n'
        '[resources]\nreviewers = 1\nreview = { mean = 240 }\n[targets]\nduration_mean = 200\n',
        encoding="utf-8")
    code, out, err = run(capsys, "solve", str(path), "--for", "reviewers", "--replications", "2")
    assert code == 3 and err == ""
    assert "INFEASIBLE: no count of reviewers meets every target" in out
    assert "binding                        duration_mean" in out


@pytest.mark.parametrize("argv, message", [
    (["--for", "retries", "--replications", "3"], "--replications: is for the timeline's --for"),
    (["--for", "retries", "--seed", "3"], "--seed: not allowed with a SCENARIO file"),
    (["--for", "agents"], "targets: the scenario sets none"),
])
def test_solve_flags_of_the_timeline_planner(capsys, argv, message):
    code, out, err = run(capsys, "solve", str(SCENARIOS / "flaky_eval_harness.toml"), *argv)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


# -------------------------------------------------- the commands that ignore time say so
@pytest.mark.parametrize("argv, command", [
    (["evaluate"], "relsim evaluate"),
    (["simulate", "--trials", "2000", "--seed", "1"], "relsim simulate"),
    (["solve", "--for", "retries", "--target", "0.5"], "relsim solve --for retries"),
])
def test_commands_that_ignore_time_warn_on_a_deadline_or_crashes(capsys, argv, command):
    path = str(SCENARIOS / "flaky_eval_harness.toml")
    code, out, err = run(capsys, argv[0], path, *argv[1:])
    assert code == 0 and out
    assert err == (f"relsim: warning: {path} sets timing.deadline and infra.crash_per_hour, which "
                   f"end trials early in time; '{command}' ignores them (the agent's outcome "
                   "alone): 'relsim timeline' gives the outcome in time\n")
    # negative control: a timed file with neither (support_reviewers) gets no warning
    code, _, err = run(capsys, argv[0], str(SCENARIOS / "support_reviewers.toml"), *argv[1:])
    assert err == ""


def test_no_warning_with_an_error(capsys):
    # exit 2 prints the error line alone
    path = str(SCENARIOS / "flaky_eval_harness.toml")
    code, out, err = run(capsys, "evaluate", path, "--require-target")
    assert code == 2 and err.count("\n") == 1 and "warning" not in err


@pytest.mark.parametrize("for_", ["agents", "llm_concurrency", "rpm"])
def test_a_count_is_not_planned_for_a_scenario_without_time(for_, capsys):
    # no time table: trials take no time and share nothing, so every count is the same;
    # "least agents 1: every target met; sure" was printed as a plan
    lesson = {"steps": 25, "p": 0.9, "target": 0.95, "verifier": {"miss": 0.0},
              "retries": {"per_step": 2}}
    with pytest.raises(RelsimError, match=rf"^{for_}: is planned in time, but the scenario has "
                                          r"no time table \(\[timing\], \[fleet\], \[resources\] or "
                                          r"\[infra\]\)"):
        plan.resources(lesson, for_)
    code, out, err = run(capsys, "solve", str(SCENARIOS / "lesson_25_steps.toml"), "--for", for_)
    assert code == 2 and out == "" and err.startswith(f"relsim: error: {for_}: is planned in time")
