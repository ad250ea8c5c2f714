"""The ready scenarios in scenarios/: each loads, evaluates and tells the story it claims.

The claims are checked against numbers from outside the engine where one exists (closed
forms of relsim.formulas, the lesson's arithmetic) and otherwise against the comparison the
file's comment describes (the same scenario with one thing changed).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from relsim import Scenario, evaluate, formulas

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
FILES = sorted(SCENARIOS.glob("*.toml"))


def _load(name: str) -> Scenario:
    return Scenario.from_toml(SCENARIOS / name)


def _replace(s: Scenario, table: str | None = None, **changes) -> Scenario:
    if table is None:
        return dataclasses.replace(s, **changes)
    return dataclasses.replace(s, **{table: dataclasses.replace(getattr(s, table), **changes)})


def test_at_least_six_scenarios():
    assert len(FILES) >= 6


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_file_loads_evaluates_and_explains_itself(path):
    text = path.read_text(encoding="utf-8")
    assert text.startswith("#"), "a comment block on top says what the file shows"
    assert "What it shows" in text and "What to look at" in text
    s = Scenario.from_toml(path)
    assert s.name
    out = evaluate(s)
    assert out.success + out.silent_failure + out.detected_failure == pytest.approx(1.0)
    assert Scenario.from_dict(s.to_dict()) == s


def test_lesson_plan_meets_its_target():
    s = _load("lesson_25_steps.toml")
    out = evaluate(s)
    assert out.success == pytest.approx((1 - 0.1**3) ** 25, abs=1e-12) and out.success >= s.target
    assert out.silent_failure == 0.0
    bare = Scenario.from_dict({"steps": 25, "p": 0.9})
    assert evaluate(bare).success == pytest.approx(0.9**25, abs=1e-12)


def test_imperfect_verifier_sits_at_its_ceiling():
    s = _load("verifier_ceiling.toml")
    ceiling = formulas.verified_ceiling(0.9, miss=0.1) ** 25
    out = evaluate(s)
    assert out.success == pytest.approx(ceiling, abs=1e-6) and out.success < s.target
    assert formulas.min_retries(0.9, 25, s.target, miss=0.1) is None
    fewer = evaluate(_replace(s, "retries", per_step=3))
    assert out.success - fewer.success < 0.002  # retries beyond 3 buy almost nothing


def test_correlated_retries_lose_their_value():
    s = _load("correlated_retries.toml")
    out = evaluate(s)
    # the first attempt's mean success, from the engine with no retries: E[p'] ** 10
    mean_p = evaluate(_replace(s, "retries", per_step=0)).success ** (1 / s.steps)
    independent = formulas.verified_chain([mean_p] * s.steps, 2).success
    assert independent > s.target > out.success + 0.15
    assert evaluate(_replace(s, "retries", per_step=8)).success > 0.96


def test_checkpoints_turn_silent_failures_into_detected_ones():
    s = _load("checkpoints_catch_silent_failures.toml")
    without = evaluate(_replace(s, checkpoints=None))
    no_rollback = evaluate(_replace(s, "checkpoints", rollbacks=0))
    out = evaluate(s)
    # without checkpoints the chain is the closed form of a verified chain
    closed = formulas.verified_chain([0.95] * 20, 1, miss=0.3)
    assert without.success == pytest.approx(closed.success, abs=1e-12)
    assert without.silent_failure == pytest.approx(closed.silent_failure, abs=1e-12)
    # checking without rollbacks cannot create success, only expose failures
    assert no_rollback.success == pytest.approx(without.success, abs=1e-12)
    assert no_rollback.silent_failure < without.silent_failure / 5
    assert no_rollback.detected_failure > without.detected_failure + 0.2
    # rollbacks turn the caught failures into successes
    assert out.success > without.success + 0.15


def test_shared_budget_beats_a_larger_per_step_budget():
    s = _load("shared_budget.toml")
    out = evaluate(s)
    assert out.success == pytest.approx(formulas.shared_budget_success(0.9, 25, 8), abs=1e-12)
    per_step = formulas.verified_chain([0.9] * 25, 2)
    assert out.success > per_step.success and out.success >= s.target
    assert abs(out.expected_attempts - per_step.expected_attempts) < 0.5


def test_human_gate_moves_silent_failures_to_detected():
    s = _load("human_gate.toml")
    ungated = evaluate(_replace(s, checkpoints=None))
    out = evaluate(s)
    assert s.checkpoints.final and s.checkpoints.rollbacks == 0
    assert out.success == pytest.approx(ungated.success, abs=1e-12)
    # the gate catches 95% of the silently wrong trials and escalates them
    assert out.silent_failure == pytest.approx(0.05 * ungated.silent_failure, abs=1e-12)
    assert out.detected_failure == pytest.approx(
        ungated.detected_failure + 0.95 * ungated.silent_failure, abs=1e-12
    )


def test_confused_agent_matches_the_forward_recursion():
    s = _load("confused_agent.toml")
    c = s.correlation.confusion
    closed = formulas.confusion_chain(0.9, 15, c.enter, c.recover, c.factor, retries=2, miss=0.1)
    out = evaluate(s)
    assert out.success == pytest.approx(closed.success, abs=1e-12)
    assert out.success < formulas.verified_chain([0.9] * 15, 2, miss=0.1).success - 0.2
    reset = _replace(s, checkpoints=Scenario.from_dict(
        {"steps": 15, "p": 0.9, "checkpoints": {"every": 5, "detect": 0.9, "rollbacks": 3}}
    ).checkpoints)
    assert evaluate(reset).success > out.success + 0.1


def test_production_agent_reports_cost_per_success():
    s = _load("production_agent.toml")
    out = evaluate(s)
    assert s.has_random_effects and s.correlation.confusion and s.total_retries == 15
    # cost per success is what a user pays per finished task: 1 / success trials' worth
    assert out.cost_per_success > out.expected_cost and math.isfinite(out.cost_per_success)
    # attempts cost $0.03-0.10 plus $0.01 to verify; the test runs add a little
    assert 0.04 * out.expected_attempts < out.expected_cost < 0.11 * out.expected_attempts + 1
