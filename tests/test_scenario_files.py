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

from relsim.scenario import trial_model
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
    assert out.success + out.silent_failure + out.detected_failure + out.infra_failure == pytest.approx(1.0)
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
    assert trial_model(s).has_random_effects and s.correlation.confusion and s.retries.total == 15
    # cost per success is what a user pays per finished task: 1 / success trials' worth
    assert out.cost_per_success > out.expected_cost and math.isfinite(out.cost_per_success)
    # attempts cost $0.03-0.10 plus $0.01 to verify; the test runs add a little
    assert 0.04 * out.expected_attempts < out.expected_cost < 0.11 * out.expected_attempts + 1


# ------------------------------------------------------------- every claim of every comment
# Each number a scenario's comment states, with the design it is stated for (the file, or the
# file with the change the comment describes) and the key it is about. Percentages are checked
# to the digits printed; "What to look at" claims of a direction (rises, falls, stays) are
# checked as a comparison. Numbers from outside the engine (closed forms) are used where the
# comment quotes one.
def _edit(**changes):
    """A change to a scenario dict: ``table__key=value`` (None deletes), or ``key=value``."""

    def apply(data: dict) -> dict:
        data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
        for name, value in changes.items():
            table, _, key = name.partition("__")
            if not key:
                if value is None:
                    data.pop(table, None)
                else:
                    data[table] = value
            elif value is None:
                data[table].pop(key, None)
            else:
                data.setdefault(table, {})[key] = value
        return data

    return apply


def _mode(index: int, **changes):
    """A change to one failure mode of the file."""

    def apply(data: dict) -> dict:
        modes = [dict(m) for m in data["failure_modes"]]
        modes[index].update(changes)
        return {**data, "failure_modes": modes}

    return apply


SAME = _edit()
INDEPENDENT = _edit(correlation=None)
NO_CHECKPOINTS = _edit(checkpoints=None)

CLAIMS = {
    "cascade.toml": [
        (SAME, "success", "97.77%"),
        (SAME, "cost_per_success", "8.02"),
        (_edit(escalation=None, p=0.95, cost__attempt=1.0), "success", "99.42%"),
        (_edit(escalation=None, p=0.95, cost__attempt=1.0), "cost_per_success", "22.68"),
        (SAME, "silent_failure", "2.09%"),
        (_edit(escalation=None, p=0.95, cost__attempt=1.0), "silent_failure", "0.54%"),
        (_edit(verifier__miss=0.02), "success", "91.75%"),
    ],
    "checkpoint_spacing.toml": [
        (SAME, "expected_cost", "62.0"),
        (_edit(checkpoints__every=10), "expected_cost", "58.7"),
    ],
    "checkpoints_catch_silent_failures.toml": [
        (NO_CHECKPOINTS, "silent_failure", "26%"),
        (NO_CHECKPOINTS, "success", "71.3%"),
        (SAME, "success", "91.0%"),
        (SAME, "silent_failure", "6.1%"),
        (SAME, "expected_attempts", "21.7"),
        (NO_CHECKPOINTS, "expected_attempts", "20.5"),
        (_edit(checkpoints__rollbacks=0), "success", "71.3%"),
        (_edit(checkpoints__rollbacks=0), "silent_failure", "4.8%"),
        (_edit(checkpoints__rollbacks=0), "detected_failure", "23.9%"),
    ],
    "confused_agent.toml": [
        (INDEPENDENT, "success", "83.8%"),
        (SAME, "success", "56.5%"),
        (SAME, "detected_failure", "28.5%"),
        (_edit(checkpoints={"every": 5, "detect": 0.9, "rollbacks": 3}), "success", "69.9%"),
        (SAME, "silent_failure", "14.9%"),
        (_edit(checkpoints={"every": 5, "detect": 0.9, "rollbacks": 3}), "silent_failure",
         "1.7%"),
    ],
    "correlated_retries.toml": [
        (SAME, "success", "73.3%"),
        (_edit(retries__per_step=8), "success", "96%"),
        (SAME, "detected_failure", "27%"),
    ],
    "eval_agent.toml": [
        (SAME, "success", "59.9%"),
    ],
    # the time tables do not change the exact split: the agent alone (test_scenario_files_time.py
    # checks the timeline's numbers, the fleet_rate_limits and support_reviewers ones too)
    "failure_modes.toml": [
        (SAME, "success", "88.60%"),
        (SAME, "silent_failure", "7.20%"),
        (SAME, "silent_by_mode.hallucination", "7.12%"),
        (SAME, "silent_by_mode.wrong_format", "0.08%"),
        (SAME, "infra_failure", "0.83%"),
        (_mode(1, miss=0.15), "success", "92.10%"),
        (_mode(1, detect=0.9), "success", "93.36%"),
    ],
    "flaky_eval_harness.toml": [
        (SAME, "success", "81.2%"),
    ],
    "fleet_rate_limits.toml": [],
    "human_gate.toml": [
        (NO_CHECKPOINTS, "silent_failure", "19.6%"),
        (SAME, "success", "79.9%"),
        (SAME, "detected_failure", "19.2%"),
        (SAME, "silent_failure", "1.0%"),
        (_edit(checkpoints__rollbacks=1), "success", "94.8%"),
    ],
    "lesson_25_steps.toml": [
        (_edit(verifier=None, retries=None), "success", "7%"),
        (SAME, "success", "97.5%"),
        (SAME, "expected_attempts", "27.4"),
        (_edit(retries__per_step=1), "success", "77.8%"),
        (_edit(verifier=None, retries=None), "success", "7.2%"),
    ],
    "production_agent.toml": [
        (SAME, "cost_per_success", "$1.92"),
        (SAME, "expected_cost", "$1.63"),
        (SAME, "success", "84.8%"),
        (_edit(verifier__miss=0.02), "success", "84.7%"),
        (SAME, "silent_failure", "0.9%"),
        (_edit(verifier__miss=0.02), "silent_failure", "0.4%"),
        (_edit(verifier__miss=0.02), "cost_per_success", "$1.89"),
        (_edit(retries__per_step=3), "success", "92.2%"),
        (_edit(retries__per_step=3, verifier__miss=0.02), "success", "92.5%"),
        (_edit(checkpoints__rollbacks=3), "success", "84.85%"),
        (_edit(p=0.97), "success", "93.0%"),
    ],
    "support_reviewers.toml": [],
    "stroebl.toml": [
        (SAME, "expected_utility", "0.472381"),
        (_edit(retries__per_step=0), "expected_utility", "0.449000"),
    ],
    "shared_budget.toml": [
        (_edit(retries={"per_step": 2}), "success", "97.5%"),
        (SAME, "success", "99.6%"),
        (SAME, "expected_attempts", "27.8"),
        (_edit(retries__total=5), "success", "92.7%"),
        (_edit(retries__total=10), "success", "99.96%"),
        (_edit(retries__per_step=2), "success", "97.3%"),
    ],
    "voters.toml": [
        (SAME, "success", "63.05%"),
        (_edit(sampling__n=25), "success", "60.68%"),
        (_edit(sampling__n=25, sampling__wrong_answers=3), "success", "77.77%"),
    ],
    "verifier_ceiling.toml": [
        (SAME, "success", "75.86%"),
        (_edit(retries__per_step=3), "success", "75.74%"),
        (SAME, "silent_failure", "24%"),
    ],
}


def _stated(text: str) -> tuple[float, int]:
    """'71.3%' -> (0.713, 3); '$1.92' and '21.7' -> (value, decimals)."""
    digits = text.strip("$%")
    decimals = len(digits.partition(".")[2])
    if text.endswith("%"):
        return float(digits) / 100, decimals + 2
    return float(digits), decimals


@pytest.mark.parametrize(
    "name, index",
    [(name, i) for name, claims in CLAIMS.items() for i in range(len(claims))],
    ids=[f"{name[:-5]}-{claims[i][1]}-{claims[i][2]}" for name, claims in CLAIMS.items()
         for i in range(len(claims))],
)
def test_every_number_in_a_comment_is_what_the_engine_gives(name, index):
    change, key, text = CLAIMS[name][index]
    design = Scenario.from_dict(change(_load(name).to_dict()))
    value, decimals = _stated(text)
    outcome = evaluate(design)
    table, _, name = key.partition(".")  # silent_by_mode.<mode>
    got = getattr(outcome, table)[name] if name else getattr(outcome, key)
    assert round(got, decimals) == pytest.approx(value, abs=1e-12)


def _comment(name: str) -> str:
    lines = (SCENARIOS / name).read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if line.startswith("#"))


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_every_percentage_and_price_in_a_comment_has_a_claim(name):
    import re

    stated = set(re.findall(r"\$?\d+(?:\.\d+)?%?", _comment(name)))
    claimed = {text for _, _, text in CLAIMS[name]}
    quoted = {t for t in stated if t.endswith("%") or t.startswith("$")}
    assert quoted - claimed - OUTSIDE.get(name, set()) == set()
    assert set(CLAIMS) == {p.name for p in FILES}


#: Numbers a comment quotes that are inputs of the design (a miss rate, a price) or checked
#: against a closed form in the tests below.
OUTSIDE = {
    "cascade.toml": {"97%"},
    "checkpoint_spacing.toml": set(),
    "checkpoints_catch_silent_failures.toml": {"80%"},
    "confused_agent.toml": set(),
    "correlated_retries.toml": {"83.2%", "95.4%"},
    "eval_agent.toml": {"95%"},
    # timeline scenarios: inputs (a miss rate, the SLA's 90%), the precision aimed at (2%),
    # intervals' confidence (95%), and the shares and utilisations of a run, checked in
    # test_scenario_files_time.py
    "flaky_eval_harness.toml": {"10%", "59%"},
    # the modes' shares, misses and the checkpoint's detect, and the faults' rate: inputs
    "failure_modes.toml": {"30%", "20%", "5%", "3%", "90%"},
    "fleet_rate_limits.toml": {"5%", "95%"},
    "human_gate.toml": {"20%", "95%"},
    "lesson_25_steps.toml": {"99%", "95%"},
    "production_agent.toml": {"5%", "3%", "$0.03", "$0.10", "$0.01", "$0.05"},
    "shared_budget.toml": set(),
    # the mixture's weights (inputs); the best budgets at other V are the planner's, tested in
    # tests/test_plan_v2.py
    "stroebl.toml": {"58%", "42%"},
    "support_reviewers.toml": {"85%", "90%", "100%", "57%", "43%", "80%", "2%", "95%"},
    "verifier_ceiling.toml": {"10%", "75.9%", "95%"},
    # the mixture's weights (inputs) and the share of easy tasks the vote falls back to
    "voters.toml": {"60%", "40%"},
}


def test_verifier_ceiling_closed_form_claims():
    assert round(formulas.verified_ceiling(0.9, miss=0.1), 3) == 0.989
    assert round(formulas.verified_ceiling(0.9, miss=0.1) ** 25, 3) == 0.759


def test_correlated_retries_closed_form_claims():
    # first attempt on average: E[expit(logit 0.9 + 1.5 u)], independent retries at that rate
    first = formulas.logit_normal_chain(0.9, 1, 1.5)
    assert round(first, 3) == 0.832
    assert round(formulas.retry_success(0.832, 2) ** 10, 3) == 0.954


def test_human_gate_moves_the_stated_points_and_keeps_the_cost_per_success():
    s = _load("human_gate.toml")
    gate, bare = evaluate(s), evaluate(_replace(s, checkpoints=None))
    assert round(100 * (bare.silent_failure - gate.silent_failure), 1) == 18.6
    redo = evaluate(Scenario.from_dict(_edit(checkpoints__rollbacks=1)(s.to_dict())))
    assert redo.cost_per_success == pytest.approx(bare.cost_per_success, rel=1e-9)


def test_production_agent_stricter_verifier_trades_silent_for_detected():
    # the comment's direction: miss 0.05 -> 0.02 lowers success (the issue found the old
    # comment suggesting otherwise), lowers silent failures, raises detected failures
    s = _load("production_agent.toml")
    strict = Scenario.from_dict(_edit(verifier__miss=0.02)(s.to_dict()))
    base, stricter = evaluate(s), evaluate(strict)
    assert stricter.success < base.success
    assert stricter.silent_failure < base.silent_failure
    assert stricter.detected_failure > base.detected_failure
    assert stricter.cost_per_success < base.cost_per_success


def test_eval_agent_homogeneous_prediction_and_heterogeneous_pass_hat_k():
    # 0.95**10 = 0.599, and pass^k = 0.599**k if every task were alike
    s = _load("eval_agent.toml")
    assert evaluate(s).success == pytest.approx(formulas.compound(0.95, 10), abs=1e-12)
    assert round(formulas.compound(0.95, 10), 3) == 0.599
    # the notebook's tasks: per-step success ~ Beta(10 * 0.95, 10 * 0.05), so pass^k = E[p**10k]
    # (the Beta moments); pass^k falls much more slowly than 0.599**k, and than pass@1**k
    alpha, beta = 10 * s.p, 10 * (1 - s.p)
    pass_hat = [formulas.latent_difficulty_chain(alpha, beta, 10 * k) for k in range(1, 6)]
    for k in range(2, 6):
        assert pass_hat[k - 1] / pass_hat[k - 2] > pass_hat[0] > 0.599
    assert pass_hat[4] > 5 * 0.599**5 and pass_hat[4] > 2 * pass_hat[0] ** 5


def _segments_cost(steps: int, every: int, p: float, check: float) -> float:
    """Expected cost when every error is caught and the segment redone until clean: a segment
    of k steps costs (k + C) / p**k (geometric number of tries); the last may be shorter."""
    sizes = [every] * (steps // every) + ([steps % every] if steps % every else [])
    return sum((k + check) / p**k for k in sizes)


@pytest.mark.slow
def test_checkpoint_spacing_optimum_and_its_closed_form(capsys):
    import json

    from relsim.cli import main

    s = _load("checkpoint_spacing.toml")
    assert s.verifier is None and s.checkpoints.detect == 1.0 and s.cost.checkpoint == 2.0
    costs = {}
    for every in range(1, s.steps + 1):
        out = evaluate(_replace(s, "checkpoints", every=every))
        # rollbacks = 40 are never exhausted in practice, so the redo-until-clean form holds
        assert out.detected_failure < 1e-9 and out.silent_failure == 0.0
        assert out.expected_cost == pytest.approx(_segments_cost(40, every, 0.98, 2.0), rel=1e-9)
        costs[every] = out.expected_cost
    assert min(costs, key=costs.get) == 10  # every 10 steps is the least
    assert costs[5] > costs[10] and costs[1] > costs[5] and costs[40] > costs[10]
    assert math.sqrt(2 / 0.02) == pytest.approx(10)
    # `relsim solve scenarios/checkpoint_spacing.toml --for checkpoints --target 0.99`
    path = str(SCENARIOS / "checkpoint_spacing.toml")
    assert main(["solve", path, "--for", "checkpoints", "--target", "0.99", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == 10
