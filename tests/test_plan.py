"""The planner (relsim.plan) against brute force, closed forms and the lesson's numbers.

Every search is checked against an exhaustive evaluation with the exact engine (or the closed
forms of docs/model.md section 2) that does not share the planner's search code, and the
monotonicity each search relies on is checked on its own.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relsim.scenario import trial_model
import relsim
from relsim import formulas
from relsim import plan as planner
from relsim.errors import RelsimError
from relsim.plan import Plan
from relsim.plan import _common as plan_limits
from relsim.plan._common import is_chain, exact_success
from relsim.plan.binding import relaxations
from relsim.scenario import Scenario


def scenario(**data) -> Scenario:
    return Scenario.from_dict(data)


def evaluate(s: Scenario):
    return relsim.evaluate(s)


def with_retries(s: Scenario, per_step=None, total=None) -> Scenario:
    data = s.to_dict()
    retries = {}
    if per_step is not None:
        retries["per_step"] = list(per_step) if isinstance(per_step, (list, tuple)) else per_step
    if total is not None:
        retries["total"] = total
    data["retries"] = retries
    return Scenario.from_dict(data)


def with_table(s: Scenario, table: str, **values) -> Scenario:
    data = s.to_dict()
    data[table] = {**data.get(table, {}), **values}
    return Scenario.from_dict(data)


# Small scenarios of every kind the engine handles, for the brute-force comparisons.
SMALL = {
    "chain": scenario(
        steps=4, p=[0.9, 0.7, 0.95, 0.8], verifier={"miss": 0.05, "false_reject": 0.1}
    ),
    "total cap": scenario(
        steps=4, p=0.8, verifier={"miss": 0.02}, retries={"per_step": 3, "total": 4}
    ),
    "confusion": scenario(
        steps=3,
        p=0.85,
        verifier={"miss": 0.1},
        retries={"per_step": 1},
        correlation={"confusion": {"enter": 0.5, "recover": 0.4, "factor": 0.6}},
    ),
    "random effects": scenario(
        steps=3, p=0.9, verifier={"miss": 0.0}, correlation={"task_sd": 0.8, "step_sd": 0.5}
    ),
    "checkpoints": scenario(
        steps=4,
        p=0.85,
        verifier={"miss": 0.2},
        checkpoints={"every": 2, "detect": 0.9, "false_alarm": 0.05, "rollbacks": 2},
        cost={"checkpoint": 0.3, "rollback": 0.5},
    ),
}


# ============================================================================ the lesson
def test_lesson_perfect_verifier_needs_two_retries():
    # seeds/ exercise: 25 steps, p = 0.9, target 0.95, perfect verifier -> r = 2
    # (docs/model.md section 2: 0.999**25 = 0.975298).
    s = scenario(steps=25, p=0.9, verifier={"miss": 0.0})
    plan = planner.retries(s, 0.95)
    assert plan.feasible and plan.value == 2
    assert plan.success == pytest.approx(0.975298, abs=1e-6)
    assert plan.success == pytest.approx(0.999**25, rel=1e-12)
    # docs/model.md section 5: R1 is this very design
    assert plan.expected_cost == pytest.approx(27.419539, abs=1e-6)
    assert plan.value == formulas.min_retries(0.9, 25, 0.95)


def test_lesson_imperfect_verifier_is_infeasible_with_its_ceiling():
    # the same with a verifier that misses 10%: the step ceiling 0.989011 caps the task at
    # 0.758626 < 0.95 (docs/model.md section 2)
    s = scenario(steps=25, p=0.9, verifier={"miss": 0.1}, target=0.95)
    plan = planner.retries(s)
    assert not plan.feasible
    assert plan.ceiling == pytest.approx(0.758626, abs=1e-6)
    assert plan.binding == "verifier.miss"
    assert "0.989011" in plan.reason and "miss" in plan.reason
    # the nearest design comes within 1e-6 of the ceiling, and one retry fewer does not
    assert plan.success >= plan.ceiling - 1e-6
    assert evaluate(with_retries(s, plan.value - 1)).success < plan.ceiling - 1e-6
    # the remedy it names (a verifier missing at most m*) is the closed-form max_miss
    m_star = formulas.max_miss(0.9, 25, 0.95)
    assert f"miss <= {m_star:.4g}" in plan.reason


# ======================================================================= retries and total
def least_by_enumeration(success_of, target, limit):
    for budget in range(limit + 1):
        if success_of(budget) >= target - 1e-12:
            return budget
    return None


@pytest.mark.parametrize("name", list(SMALL))
@pytest.mark.parametrize("target", [0.5, 0.8, 0.9])
def test_retries_equals_enumeration(name, target):
    s = SMALL[name]
    total = None if s.retries is None else s.retries.total
    expected = least_by_enumeration(
        lambda r: evaluate(with_retries(s, r, total)).success, target, 40
    )
    plan = planner.retries(s, target)
    if expected is None:
        assert not plan.feasible
        assert plan.success < target
    else:
        assert plan.feasible and plan.value == expected
        assert plan.success == pytest.approx(evaluate(with_retries(s, expected, total)).success)


@pytest.mark.parametrize("name", ["chain", "total cap", "confusion", "checkpoints"])
@pytest.mark.parametrize("target", [0.6, 0.85])
def test_total_equals_enumeration(name, target):
    s = SMALL[name]
    per_step = None if s.retries is None else s.retries.per_step
    expected = least_by_enumeration(
        lambda b: evaluate(with_retries(s, per_step, b)).success, target, 40
    )
    plan = planner.total(s, target)
    if expected is None:
        assert not plan.feasible
    else:
        assert plan.feasible and plan.value == expected
        assert plan.scenario.retries.total == expected
        if per_step is not None:  # the per-step cap is kept
            assert plan.scenario.retries.per_step == per_step


def test_total_with_no_per_step_cap_matches_shared_budget_formula():
    # docs/model.md section 2: a task-wide budget with no per-step cap gives a**n * sum_j C(n-1+j, j) q**j
    s = scenario(steps=10, p=0.8, verifier={"miss": 0.0})
    plan = planner.total(s, 0.9)
    n, q = 10, 0.2

    def shared(budget):
        return 0.8**n * sum(math.comb(n - 1 + j, j) * q**j for j in range(budget + 1))

    expected = next(b for b in range(100) if shared(b) >= 0.9)
    assert plan.value == expected
    assert plan.success == pytest.approx(shared(expected), abs=1e-9)


def test_total_infeasible_under_per_step_cap_names_it():
    s = scenario(steps=10, p=0.7, verifier={"miss": 0.0}, retries={"per_step": 1})
    plan = planner.total(s, 0.99)
    assert not plan.feasible
    # the ceiling is the per-step cap with no task-wide budget: (1 - 0.3**2)**10
    assert plan.ceiling == pytest.approx(0.91**10, rel=1e-9)
    assert plan.binding == "retries.per_step"
    assert "per_step = 1" in plan.reason


def test_retries_infeasible_under_total_cap_names_it():
    s = scenario(steps=10, p=0.8, verifier={"miss": 0.0}, retries={"per_step": 1, "total": 2})
    plan = planner.retries(s, 0.9)
    assert not plan.feasible
    assert plan.binding == "retries.total"
    assert "total = 2" in plan.reason
    # with a total of 2, more per-step retries than 2 are never spent
    assert plan.ceiling == pytest.approx(evaluate(with_retries(s, 2, 2)).success, abs=1e-12)


def test_correlated_errors_named_when_they_cap_retries():
    # a confused agent never succeeds (factor 0) and so never recovers: per step at most
    # p / (p + (1-p) enter) however many retries, even with a perfect verifier
    s = scenario(
        steps=5,
        p=0.9,
        verifier={"miss": 0.0},
        correlation={"confusion": {"enter": 0.5, "recover": 0.5, "factor": 0.0}},
    )
    plan = planner.retries(s, 0.9)
    assert not plan.feasible
    assert plan.binding == "correlation"
    assert "confused" in plan.reason
    assert plan.ceiling == pytest.approx((0.9 / (0.9 + 0.1 * 0.5)) ** 5, abs=1e-9)


def test_no_verifier_means_no_retries():
    s = scenario(steps=10, p=0.9)
    plan = planner.retries(s, 0.9)
    assert not plan.feasible and plan.binding == "verifier"
    assert "no [verifier]" in plan.reason
    assert plan.ceiling == pytest.approx(0.9**10)
    # a target the agent already meets needs no retry at all
    assert planner.retries(s, 0.3).value == 0


@pytest.mark.parametrize("quantity", ["retries", "total", "allocation"])
def test_no_verifier_remedy_states_what_a_perfect_verifier_buys(quantity):
    # with a perfect verifier a step with r retries succeeds with 1 - (1 - p)**(r+1) (docs/model.md
    # section 2), which tends to 1: the remedy must say so, not the value at r = 1 (0.975279)
    s = scenario(steps=10, p=0.95)
    plan = planner.solve(s, quantity, 0.9)
    assert not plan.feasible and plan.binding == "verifier"
    pattern = r"perfect one and (\d+) retries per step success reaches ([0-9.]+)"
    match = re.search(pattern, plan.reason)
    assert match, plan.reason
    budget, stated = int(match.group(1)), float(match.group(2))
    assert stated == pytest.approx((1 - 0.05 ** (budget + 1)) ** 10, abs=1e-6)
    assert stated == pytest.approx(1.0, abs=1e-6)
    # the budget stated is where success stops moving: q = 1 - p, q**r <= 1e-12 (_budget_floor)
    assert 0.05**budget <= 1e-12 < 0.05 ** (budget - 1)


def test_no_verifier_relaxation_lifts_the_ceiling_to_one():
    s = scenario(steps=10, p=0.95)
    remedy = dict(relaxations(s))["retries.per_step"]
    assert remedy.verifier is not None and remedy.retries is not None
    assert evaluate(remedy).success == pytest.approx(
        (1 - 0.05 ** (remedy.retries.per_step + 1)) ** 10, abs=1e-12
    )
    assert evaluate(remedy).success == pytest.approx(1.0, abs=1e-6)
    plan = planner.verifier(s, 0.9)  # a verifier alone, without retries, cannot help
    assert not plan.feasible and plan.binding == "retries.per_step"
    lifted = float(re.search(r"the ceiling is ([0-9.]+)", plan.reason).group(1))
    assert lifted == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("quantity", ["retries", "total", "allocation", "verifier"])
def test_agent_that_never_succeeds_binds_before_a_missing_verifier(quantity):
    s = scenario(steps=10, p=0.0)
    plan = planner.solve(s, quantity, 0.9)
    assert not plan.feasible and plan.binding == "p"
    assert plan.ceiling == 0.0
    assert "agent never succeeds" in plan.reason and "(p = 0)" in plan.reason
    assert "add a verifier" not in plan.reason


def test_target_one_is_met_only_by_a_design_that_cannot_fail():
    # success reaches 1 only in the limit of unlimited retries: every planner calls target 1
    # infeasible here, as the flag form does (formulas.min_retries is None)
    s = scenario(steps=3, p=0.9, verifier={"miss": 0.0})
    assert formulas.min_retries(0.9, 3, 1.0) is None
    for plan in (planner.retries(s, 1.0), planner.allocation(s, 1.0), planner.total(s, 1.0)):
        assert not plan.feasible and plan.success < 1.0
    certain = scenario(steps=3, p=1.0, verifier={"miss": 0.0})
    assert planner.retries(certain, 1.0).feasible and planner.retries(certain, 1.0).value == 0
    assert planner.allocation(certain, 1.0).value == (0, 0, 0)


def test_search_limit_is_named_when_it_binds(monkeypatch):
    # p = 0.01 needs ~1400 retries per step for 0.95 over 5 steps; with a limit of 64 the
    # plan must blame the limit, not the model
    monkeypatch.setattr(plan_limits, "MAX_BUDGET", 64)
    s = scenario(steps=5, p=0.01, verifier={"miss": 0.0})
    plan = planner.retries(s, 0.95)
    assert not plan.feasible and plan.binding == "search limit"
    assert plan.ceiling == pytest.approx((1 - 0.99**65) ** 5, rel=1e-9)


# =============================================================================== allocation
def chain_brute_force(s: Scenario, target: float, top: int, objective: str = "expected_cost"):
    """Least objective (expected cost, or cost per success) over every allocation in
    {0..top}^n, from docs/model.md section 2's chain closed forms: success = prod a_i S_i,
    cost = sum_i c_i S_i prod_{j<i} (1 - q_j^(r_j+1))."""
    n = s.steps
    grids = np.array(list(itertools.product(range(top + 1), repeat=n)))
    step = formulas.verified_step(trial_model(s).p, grids, trial_model(s).miss, trial_model(s).false_reject)
    success = np.prod(step.success, axis=1)
    passed = 1 - step.exhausted
    reach = np.concatenate([np.ones((len(grids), 1)), np.cumprod(passed, axis=1)[:, :-1]], axis=1)
    unit = trial_model(s).cost_per_attempt
    cost = np.sum(unit * step.expected_attempts * reach, axis=1)
    value = cost if objective == "expected_cost" else cost / success
    ok = success >= target
    if not np.any(ok):
        return None, None
    best = np.argmin(np.where(ok, value, np.inf))
    return grids[best], value[best]


ALLOCATION_CHAINS = [
    scenario(steps=3, p=[0.9, 0.6, 0.99], verifier={"miss": 0.0}),
    scenario(
        steps=4,
        p=[0.95, 0.7, 0.85, 0.6],
        verifier={"miss": 0.03, "false_reject": 0.05},
        cost={"attempt": [1.0, 5.0, 0.5, 2.0], "verify": 0.2},
    ),
    scenario(steps=5, p=[0.8, 0.9, 0.75, 0.95, 0.7], verifier={"miss": 0.01}),
]


@pytest.mark.parametrize("index", range(len(ALLOCATION_CHAINS)))
@pytest.mark.parametrize("target", [0.7, 0.9])
def test_allocation_equals_brute_force_on_chains(index, target):
    s = ALLOCATION_CHAINS[index]
    top = 9
    best, cost = chain_brute_force(s, target, top)
    plan = planner.allocation(s, target, objective="expected_cost")
    assert best is not None and plan.feasible
    assert max(plan.value) <= top  # the brute-force box holds the answer
    assert plan.details["gap"] == 0.0
    assert plan.expected_cost == pytest.approx(cost, rel=1e-9)
    assert plan.success >= target - 1e-12
    assert plan.expected_cost == pytest.approx(evaluate(plan.scenario).expected_cost, rel=1e-12)


def test_allocation_docstring_example_is_brute_force_optimum():
    s = ALLOCATION_CHAINS[0]
    best, _ = chain_brute_force(s, 0.95, 8)
    assert planner.allocation(s, 0.95, objective="expected_cost").value == tuple(best)


def test_bucketed_allocation_brackets_the_optimum(monkeypatch):
    # force the bucketed programme: its answer is feasible, its lower bound is below the
    # brute-force optimum and its answer above, and the reported gap is their difference
    monkeypatch.setattr(plan_limits, "MAX_FRONT", 0)
    s = ALLOCATION_CHAINS[2]
    best, cost = chain_brute_force(s, 0.9, 9)
    plan = planner.allocation(s, 0.9, objective="expected_cost")
    assert plan.feasible and plan.success >= 0.9 - 1e-12
    assert plan.details["lower_bound"] <= cost + 1e-12
    assert plan.expected_cost >= cost - 1e-12
    assert plan.details["gap"] == pytest.approx(plan.expected_cost - plan.details["lower_bound"])
    assert plan.details["gap"] <= 1e-3 * cost


@pytest.mark.slow
def test_allocation_never_costs_more_than_the_uniform_budget():
    rng = np.random.default_rng(5)
    s = scenario(
        steps=40,
        p=list(np.round(rng.uniform(0.6, 0.99, 40), 3)),
        verifier={"miss": 0.01, "false_reject": 0.02},
        cost={"attempt": list(np.round(rng.uniform(0.5, 2.0, 40), 3)), "verify": 0.1},
    )
    uniform = planner.retries(s, 0.8)
    plan = planner.allocation(s, 0.8, objective="expected_cost")
    assert plan.feasible and plan.success >= 0.8 - 1e-12
    assert plan.expected_cost <= uniform.expected_cost + 1e-9
    per_success = planner.allocation(s, 0.8)
    assert per_success.cost_per_success <= uniform.cost_per_success + 1e-9
    if "lower_bound" in plan.details:
        assert plan.details["lower_bound"] <= plan.expected_cost


@pytest.mark.slow
@pytest.mark.parametrize("name", ["total cap", "confusion", "checkpoints"])
def test_allocation_general_equals_brute_force(name):
    s = SMALL[name]
    target = 0.6
    top = 3
    total = None if s.retries is None else s.retries.total
    best_cost = math.inf
    for budgets in itertools.product(range(top + 1), repeat=s.steps):
        o = evaluate(with_retries(s, list(budgets), total))
        if o.success >= target - 1e-12:
            best_cost = min(best_cost, o.expected_cost)
    plan = planner.allocation(s, target, objective="expected_cost")
    assert plan.feasible and plan.success >= target - 1e-12
    if max(plan.value) <= top:  # same box: the same optimum
        assert plan.expected_cost == pytest.approx(best_cost, rel=1e-9)
    else:
        assert plan.expected_cost <= best_cost + 1e-9


# Small correlated scenarios whose every allocation up to the planner's table width can be
# evaluated by the engine (beyond it a budget changes success by under 1e-12 at a step
# slowed by two standard deviations of the effects): the planner must find their optimum.
MARKOV_SMALL = {
    "confusion": scenario(
        steps=3, p=[0.95, 0.9, 0.97], verifier={"miss": 0.02, "false_reject": 0.01},
        correlation={"confusion": {"enter": 0.6, "recover": 0.3, "factor": 0.9}},
        cost={"attempt": [1.0, 8.0, 2.0], "verify": 0.2},
    ),
    "step effect": scenario(
        steps=3, p=[0.95, 0.9, 0.97], verifier={"miss": 0.02, "false_reject": 0.01},
        correlation={"step_sd": 0.3}, cost={"attempt": [1.0, 8.0, 2.0], "verify": 0.2},
    ),
    "task effect": scenario(
        steps=3, p=[0.95, 0.9, 0.97], verifier={"miss": 0.02, "false_reject": 0.01},
        correlation={"task_sd": 0.3}, cost={"attempt": [1.0, 8.0, 2.0], "verify": 0.2},
    ),
    # two steps: with every effect each evaluation is dear, and three steps take the brute
    # force to thousands of them
    "every effect": scenario(
        steps=2, p=[0.96, 0.93], verifier={"miss": 0.02, "false_reject": 0.01},
        correlation={"task_sd": 0.2, "step_sd": 0.2,
                     "confusion": {"enter": 0.6, "recover": 0.3, "factor": 0.9}},
        cost={"attempt": [1.0, 8.0], "verify": 0.2},
    ),
}


def engine_brute_force(s: Scenario, target: float, top: int, objective: str):
    """The least objective over every allocation in {0..top}^n, each judged by the engine."""
    best, best_budgets = math.inf, None
    for budgets in itertools.product(range(top + 1), repeat=s.steps):
        o = evaluate(with_retries(s, list(budgets), None))
        value = o.cost_per_success if objective == "cost_per_success" else o.expected_cost
        if o.success >= target and value < best:
            best, best_budgets = value, budgets
    return best, best_budgets


# Each effect with one objective, the two objectives alternating (every pair costs a brute
# force over thousands of allocations: the suite's time budget pays for four).
@pytest.mark.slow
@pytest.mark.parametrize("name, objective", [
    (name, ("cost_per_success", "expected_cost")[i % 2]) for i, name in enumerate(MARKOV_SMALL)])
def test_allocation_with_correlation_equals_brute_force(name, objective):
    from relsim.plan import _markov

    s = MARKOV_SMALL[name]
    top = _markov.table_width(s)
    assert top <= 20  # small enough to enumerate
    value, _ = engine_brute_force(s, 0.9, top, objective)
    plan = planner.allocation(s, 0.9, objective=objective)
    assert plan.feasible and plan.success >= 0.9
    assert plan.details["optimal"] is True and plan.details["gap"] == 0.0
    got = plan.cost_per_success if objective == "cost_per_success" else plan.expected_cost
    # the optimum, or a design within 1e-9 of it with smaller budgets (a retry that buys less
    # than that is not bought)
    assert value <= got <= value * (1 + 1e-9) + 1e-12


def confusion_chain_reference(s: Scenario, top: int):
    """Per-step tables of a confusion chain without random effects, written from
    docs/model.md section 3 (not the planner's code): for budgets 0..top, from each confusion
    state, the probability of passing (correct or wrong, by the state left in), of passing
    with a correct result, and the expected attempts."""
    m = trial_model(s)
    enter, recover, factor = m.enter, m.recover, m.factor
    tables = []
    for i in range(s.steps):
        p, miss, reject = m.p[i], m.miss[i], m.false_reject[i]
        right = np.array([[p, 0.0], [p * factor * recover, p * factor * (1 - recover)]])
        wrong = np.array([[(1 - p) * (1 - enter), (1 - p) * enter], [0.0, 1 - p * factor]])
        good, bad, again = (1 - reject) * right, miss * wrong, reject * right + (1 - miss) * wrong
        passed, correct, attempts = [], [], []
        stay = np.eye(2)  # J^k: k rejections in a row, by the state left in
        acc_good, acc_bad, tries = np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2)
        for k in range(top + 1):
            acc_good = acc_good + stay @ good
            acc_bad = acc_bad + stay @ bad
            tries = tries + (k + 1) * (stay @ (good + bad)).sum(axis=1)
            stay = stay @ again
            passed.append(acc_good + acc_bad)
            correct.append(acc_good.copy())
            attempts.append(tries + (k + 1) * stay.sum(axis=1))
        tables.append((np.array(passed), np.array(correct), np.array(attempts)))
    return tables, m.cost_per_attempt


def test_allocation_on_a_confused_four_step_chain_equals_brute_force():
    # four confused steps (no random effects): every allocation up to the planner's width is
    # enumerated with a reference written from the model (checked against the engine first)
    s = scenario(
        steps=4, p=[0.87, 0.74, 0.77, 0.74], verifier={"miss": 0.03, "false_reject": 0.05},
        correlation={"confusion": {"enter": 0.5, "recover": 0.6, "factor": 0.7}},
        cost={"attempt": [1.0, 1.4, 1.8, 1.9], "verify": 0.2},
    )
    from relsim.plan import _markov

    top = _markov.table_width(s)
    tables, unit = confusion_chain_reference(s, top)

    def reference(budgets):
        every = clean = np.array([1.0, 0.0])
        cost = 0.0
        for (passed, correct, attempts), u, b in zip(tables, unit, budgets):
            cost += u * every @ attempts[b]
            every, clean = every @ passed[b], clean @ correct[b]
        return cost, clean.sum()

    for budgets in ([0, 0, 0, 0], [1, 21, 25, 28], [4, 22, 20, 22], [top] * 4):
        o = evaluate(with_retries(s, budgets, None))
        assert reference(budgets) == pytest.approx((o.expected_cost, o.success), rel=1e-12)
    # every allocation: the first step's budget in a loop, the other three at once
    best = math.inf
    grid = np.arange(top + 1)
    for b0 in grid:
        p0, k0, a0 = (t[b0] for t in tables[0])
        every1, clean1, cost1 = np.array([1.0, 0.0]) @ p0, np.array([1.0, 0.0]) @ k0, unit[0] * a0[0]
        p1, k1, a1 = tables[1]
        cost2 = cost1 + unit[1] * np.einsum("c,bc->b", every1, a1)
        every2, clean2 = np.einsum("c,bcd->bd", every1, p1), np.einsum("c,bcd->bd", clean1, k1)
        p2, k2, a2 = tables[2]
        cost3 = cost2[:, None] + unit[2] * np.einsum("bc,xc->bx", every2, a2)
        every3 = np.einsum("bc,xcd->bxd", every2, p2)
        clean3 = np.einsum("bc,xcd->bxd", clean2, k2)
        p3, k3, a3 = tables[3]
        cost4 = cost3[..., None] + unit[3] * np.einsum("bxc,yc->bxy", every3, a3)
        success = np.einsum("bxc,ycd->bxy", clean3, k3)
        value = np.where(success >= 0.9, cost4 / success, np.inf)
        best = min(best, float(value.min()))
    plan = planner.allocation(s, 0.9)
    assert plan.details["optimal"] is True
    assert best <= plan.cost_per_success <= best * (1 + 1e-9)


def test_allocation_rebuilt_issue_example_beats_the_old_heuristic():
    # Issue 22's example (4 correlated steps; its exact scenario was not recorded), rebuilt:
    # with a strong task effect the old surrogate heuristic answered [3, 12, 15, 24] (cost per
    # success 15.716, "within 8.3 of the optimum"), buying retries at steps 2 and 3 that cost
    # more than they buy. The planner now proves its optimum, which costs less per success with
    # fewer retries; the old answer is checked with the engine, independently.
    s = scenario(
        steps=4, p=[0.75, 0.71, 0.91, 0.65], verifier={"miss": 0.03, "false_reject": 0.05},
        correlation={"task_sd": 1.0}, cost={"attempt": [3.8, 1.3, 2.3, 1.5], "verify": 0.2},
    )
    plan = planner.allocation(s, 0.9)
    old = evaluate(with_retries(s, [3, 12, 15, 24], None))
    assert old.success >= 0.9 and old.cost_per_success == pytest.approx(15.716122, abs=1e-6)
    assert plan.details["optimal"] is True and plan.details["gap"] == 0.0
    assert plan.success >= 0.9
    assert plan.cost_per_success < old.cost_per_success * (1 - 1e-3)
    assert sum(plan.value) < sum([3, 12, 15, 24])
    # no single step's budget can be lowered or raised to do better (engine-evaluated)
    for i in range(4):
        for change in (-1, 1):
            budgets = list(plan.value)
            budgets[i] += change
            if budgets[i] < 0:
                continue
            o = evaluate(with_retries(s, budgets, None))
            if o.success >= 0.9:
                assert o.cost_per_success >= plan.cost_per_success * (1 - 1e-9)


@pytest.mark.slow
def test_allocation_with_checkpoints_equals_brute_force():
    # checkpoints and rollbacks: the engine-guided path, held to every allocation up to the
    # budget past which a step's success moves by under 1e-12
    s = scenario(
        steps=3, p=[0.85, 0.7, 0.9], verifier={"miss": 0.2, "false_reject": 0.05},
        checkpoints={"every": 2, "final": True, "detect": 0.9, "false_alarm": 0.05,
                     "rollbacks": 2},
        cost={"attempt": [1.0, 3.0, 1.0], "checkpoint": 0.3, "rollback": 0.5},
    )
    top = plan_limits.budget_floor(s)
    for objective in ("cost_per_success",):  # expected_cost: the correlated cases above
        value, _ = engine_brute_force(s, 0.7, top, objective)
        plan = planner.allocation(s, 0.7, objective=objective)
        got = plan.cost_per_success if objective == "cost_per_success" else plan.expected_cost
        assert plan.feasible and plan.success >= 0.7
        assert value * (1 - 1e-12) <= got <= value * (1 + 1e-9), objective


PER_SUCCESS_CHAINS = [
    # an expensive middle step: its retries cost about as much as a rerun, so the optimum is
    # interior; the cheap steps get many retries (a retry is cheaper than a rerun)
    scenario(
        steps=3,
        p=[0.9, 0.7, 0.95],
        verifier={"miss": 0.05},
        cost={"attempt": [1.0, 30.0, 1.0]},
    ),
    scenario(
        steps=3,
        p=[0.8, 0.9, 0.85],
        verifier={"miss": 0.02, "false_reject": 0.1},
        cost={"attempt": [5.0, 1.0, 8.0], "verify": 0.5},
    ),
]


@pytest.mark.parametrize("index", range(len(PER_SUCCESS_CHAINS)))
@pytest.mark.parametrize("target", [0.5, 0.8])
def test_allocation_minimises_cost_per_success_by_brute_force(index, target):
    s = PER_SUCCESS_CHAINS[index]
    plan = planner.allocation(s, target)
    assert plan.feasible and plan.details["objective"] == "cost_per_success"
    assert plan.details["optimal"] is True and plan.details["gap"] == 0.0
    top = max(14, max(plan.value) + 3)  # a box that holds the answer with room around it
    best, value = chain_brute_force(s, target, top, objective="cost_per_success")
    assert plan.cost_per_success == pytest.approx(value, rel=1e-9)
    assert plan.success >= target
    # the two objectives differ: expected cost per trial is no measure of cost per success
    cheap = planner.allocation(s, target, objective="expected_cost")
    assert cheap.expected_cost <= plan.expected_cost + 1e-12
    assert plan.cost_per_success <= cheap.cost_per_success + 1e-12


def test_allocation_on_identical_steps_says_why_and_whether_optimal():
    s = scenario(steps=25, p=0.9, verifier={"miss": 0.0})
    plan = planner.allocation(s, 0.95)
    # optimal, or a bound within 1% (the Pareto front of 25 alike steps is large), and then the
    # smallest budgets that stay within 1% of the bound
    assert plan.details["optimal"] or plan.details["relative_gap"] <= plan_limits.ALLOCATION_GAP
    if not plan.details["optimal"]:
        assert plan.details["lower_bound"] <= 25 / 0.9 + 1e-9
    # a perfect verifier and cheap attempts: a retry costs less than a rerun, so the optimum
    # retries up to the step ceilings, where the cost per success is 25 / 0.9
    assert 25 / 0.9 - 1e-9 <= plan.cost_per_success <= 25 / 0.9 * (1 + plan_limits.ALLOCATION_GAP)
    assert "wastes the work of every step before it" in plan.details["why"]
    # later steps get at least as much as earlier ones (a late failure wastes more work)
    assert list(plan.value) == sorted(plan.value)
    old = planner.allocation(s, 0.95, objective="expected_cost")
    assert "not run again" in old.details["why"]
    assert plan.cost_per_success <= old.cost_per_success


def test_allocation_rejects_an_unknown_objective():
    s = scenario(steps=3, p=0.9, verifier={"miss": 0.0})
    with pytest.raises(RelsimError, match="objective: must be one of cost_per_success"):
        planner.allocation(s, 0.9, objective="cost")


def test_allocation_infeasible_reports_the_verifier_ceiling():
    s = scenario(steps=25, p=0.9, verifier={"miss": 0.1})
    plan = planner.allocation(s, 0.95)
    assert not plan.feasible
    assert plan.binding == "verifier.miss"
    assert plan.ceiling == pytest.approx(0.758626, abs=1e-6)
    assert len(plan.value) == 25


# ================================================================================= verifier
def largest_by_scan(success_of, target, step=1e-3):
    grid = np.arange(0.0, 1.0 + step / 2, step)
    ok = [x for x in grid if success_of(x) >= target - 1e-12]
    return max(ok) if ok else None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chain", "total cap", "confusion", "checkpoints"])
def test_verifier_miss_equals_scan(name):
    s = SMALL[name]

    def success_of(miss):
        return evaluate(with_table(s, "verifier", miss=float(miss))).success

    target = 0.6
    expected = largest_by_scan(success_of, target, step=1 / 256)
    plan = planner.verifier(s, target)
    if expected is None:
        assert not plan.feasible
        return
    assert plan.feasible
    assert expected - 1e-9 <= plan.value <= expected + 1 / 256
    assert success_of(plan.value) >= target - 1e-12
    if plan.value < 1:  # the largest: a hair more misses too much
        assert success_of(min(1.0, plan.value + 1e-6)) < target


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chain", "total cap", "confusion", "checkpoints"])
def test_verifier_false_reject_equals_scan(name):
    s = SMALL[name]

    def success_of(rate):
        return evaluate(with_table(s, "verifier", false_reject=float(rate))).success

    target = 0.6
    expected = largest_by_scan(success_of, target, step=1 / 256)
    other = planner.verifier(s, target).details["false_reject"]
    if expected is None:  # the chain has no retries: prod p = 0.4788 < 0.6 at any rate
        assert not other["feasible"]
        assert other["ceiling"] == pytest.approx(success_of(0.0), abs=1e-12)
        return
    assert other["feasible"]
    assert expected - 1e-9 <= other["value"] <= expected + 1 / 256
    assert success_of(other["value"]) >= target - 1e-12
    assert success_of(other["value"] + 1e-6) < target


def test_verifier_with_many_retries_tends_to_max_miss():
    # with unlimited retries the largest miss solves a/(a+w) = target**(1/n): formulas.max_miss
    s = scenario(steps=25, p=0.9, verifier={"miss": 0.1}, retries={"per_step": 60})
    plan = planner.verifier(s, 0.95)
    assert plan.value == pytest.approx(formulas.max_miss(0.9, 25, 0.95), abs=1e-7)


def test_verifier_infeasible_when_budgets_fall_short():
    # even a perfect verifier cannot lift (1 - 0.5**2)**10 = 0.056 to 0.9 with one retry
    s = scenario(steps=10, p=0.5, verifier={"miss": 0.1}, retries={"per_step": 1})
    plan = planner.verifier(s, 0.9)
    assert not plan.feasible
    assert plan.ceiling == pytest.approx(0.75**10, rel=1e-9)
    assert plan.binding == "retries.per_step"
    assert plan.value == 0.0  # nearest design: a perfect verifier


def test_verifier_scan_catches_success_rising_with_miss():
    # retries are scarce and rollbacks plentiful: a wrong result accepted and caught at the
    # checkpoint is redone, a rejected one ends the trial, so success RISES with miss and a
    # pure bisection would be misled. The scan finds the same answer as brute force.
    s = scenario(
        steps=3,
        p=0.7,
        verifier={"miss": 0.0},
        checkpoints={"every": 1, "detect": 1.0, "rollbacks": 6},
    )

    def success_of(miss):
        return evaluate(with_table(s, "verifier", miss=float(miss))).success

    assert success_of(1.0) > success_of(0.0) + 0.1  # the non-monotone case is real
    target = 0.5 * (success_of(1.0) + success_of(0.0))
    plan = planner.verifier(s, target)
    assert plan.feasible and plan.value == 1.0


R7 = {  # docs/model.md section 5, reference case R7
    "steps": 9,
    "p": [0.99, 0.9, 0.8, 0.95, 0.9, 0.7, 0.99, 0.9, 0.85],
    "verifier": {"miss": 0.15, "false_reject": 0.1},
    "retries": {"per_step": 3, "total": 5},
    "checkpoints": {"every": 3, "final": True, "detect": 0.9, "rollbacks": 2},
    "correlation": {
        "task_sd": 0.5, "step_sd": 0.5, "confusion": {"enter": 0.5, "recover": 0.5, "factor": 0.7}
    },
    "cost": {"attempt": 1, "verify": 0.2, "checkpoint": 0.5, "rollback": 1},
}


@pytest.mark.slow
def test_verifier_scan_finds_a_peak_between_its_grid_points():
    # R7 with scarce retries: success over miss peaks near 0.265, between the scan's grid
    # points 0.25 and 0.3125. Brute force on a grid of 1/200 finds a miss reaching a target
    # above every grid point's success; the plan must find it too, and an infeasible plan's
    # ceiling ("success is at most ...") must not sit below a success brute force reaches.
    s = Scenario.from_dict(R7)

    def success_of(miss):
        return evaluate(with_table(s, "verifier", miss=float(miss))).success

    grid = np.arange(201) / 200
    brute = max(success_of(m) for m in grid)
    coarse = max(success_of(m) for m in np.arange(17) / 16)
    assert brute > coarse + 5e-5  # the peak between grid points is real
    target = brute - 1e-5
    plan = planner.verifier(s, target)
    assert plan.feasible
    assert success_of(plan.value) >= target
    out_of_reach = planner.verifier(s, 0.9)
    assert not out_of_reach.feasible
    assert out_of_reach.ceiling >= brute - 1e-9
    assert out_of_reach.success == pytest.approx(out_of_reach.ceiling, abs=1e-9)


# ======================================================================================== p
def test_p_without_verifier_is_required_step_success():
    s = scenario(steps=20, p=0.5)
    plan = planner.p(s, 0.9)
    assert plan.value == pytest.approx(formulas.required_step_success(0.9, 20), abs=2e-9)
    assert plan.value >= formulas.required_step_success(0.9, 20) - 1e-15


def test_p_with_perfect_verifier_inverts_retry_success():
    # 1 - (1-p)^(r+1) = target^(1/n)  =>  p = 1 - (1 - target^(1/n))^(1/(r+1))
    s = scenario(steps=25, p=0.5, verifier={"miss": 0.0}, retries={"per_step": 2})
    plan = planner.p(s, 0.95)
    expected = 1 - (1 - 0.95 ** (1 / 25)) ** (1 / 3)
    assert plan.value == pytest.approx(expected, abs=2e-9)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SMALL))
def test_p_equals_scan(name):
    s = SMALL[name]

    def success_of(prob):
        return evaluate(Scenario.from_dict({**s.to_dict(), "p": float(prob)})).success

    target = 0.7
    grid = np.arange(0, 1 + 1 / 512, 1 / 512)
    ok = [x for x in grid if success_of(x) >= target - 1e-12]
    plan = planner.p(s, target)
    if not ok:  # the chain rejects 10% of correct work with no retry: 0.9**4 < 0.7 at p = 1
        assert not plan.feasible
        assert plan.ceiling == pytest.approx(success_of(1.0), abs=1e-12)
        return
    assert plan.feasible
    assert min(ok) - 1 / 512 <= plan.value <= min(ok) + 1e-9
    assert success_of(plan.value) >= target - 1e-12
    assert success_of(plan.value - 1e-6) < target


def test_p_infeasible_when_false_rejections_spend_the_budget():
    # even p = 1 fails when the verifier rejects correct work: (1 - 0.3**2)**10 = 0.389
    s = scenario(steps=10, p=0.9, verifier={"false_reject": 0.3}, retries={"per_step": 1})
    plan = planner.p(s, 0.9)
    assert not plan.feasible
    assert plan.ceiling == pytest.approx(0.91**10, rel=1e-9)
    assert plan.binding in ("retries.per_step", "verifier.false_reject")
    assert plan.value == 1.0


def test_p_infeasible_when_false_alarms_exhaust_rollbacks():
    s = scenario(steps=6, p=0.9, checkpoints={"every": 1, "false_alarm": 0.3, "rollbacks": 0})
    plan = planner.p(s, 0.9)
    assert not plan.feasible
    assert plan.ceiling == pytest.approx(0.7**6, rel=1e-9)
    assert plan.binding in ("checkpoints.rollbacks", "checkpoints.false_alarm")
    assert "false alarm" in plan.reason


# ============================================================================== checkpoints
def test_checkpoints_equal_enumeration():
    s = scenario(
        steps=12,
        p=0.9,
        verifier={"miss": 0.3},
        retries={"per_step": 1},
        checkpoints={"every": 1, "final": True, "detect": 0.9, "rollbacks": 3},
        cost={"checkpoint": 0.4, "rollback": 0.2},
    )
    target = 0.7
    results = {k: evaluate(with_table(s, "checkpoints", every=k)) for k in range(1, 13)}
    feasible = {k: o for k, o in results.items() if o.success >= target - 1e-12}
    plan = planner.checkpoints(s, target)
    assert feasible and plan.feasible
    best = min(feasible, key=lambda k: (feasible[k].expected_cost, -k))
    assert plan.value == best
    assert plan.expected_cost == pytest.approx(results[best].expected_cost, rel=1e-12)


def test_checkpoints_against_youngs_interval():
    # no verifier, plenty of free rollbacks: a wrong step is seen only at the checkpoint, so a
    # segment of k steps is redone until clean: cost per step ~ (1 + C/k) p**-k, optimum
    # ~ sqrt(C/(1-p)). formulas.checkpoint_interval is Young's sqrt(2C/(1-p)) (a fault seen
    # when it happens, losing half a segment on average): in this model the exact optimum is
    # near that interval divided by sqrt(2).
    for prob, checkpoint_cost, n, rollbacks in [(0.98, 2.0, 20, 4), (0.95, 3.0, 24, 5)]:
        s = scenario(
            steps=n,
            p=prob,
            checkpoints={"every": 1, "final": True, "rollbacks": rollbacks},
            cost={"checkpoint": checkpoint_cost},
        )
        plan = planner.checkpoints(s, 0.5)
        young = formulas.checkpoint_interval(prob, checkpoint_cost)
        ks = np.arange(1, n + 1)
        first_order = ks[np.argmin((1 + checkpoint_cost / ks) * prob ** (-ks.astype(float)))]
        assert abs(plan.value - first_order) <= 1
        # closer to Young / sqrt(2) than to Young's interval itself (the first-order optimum
        # sqrt(C/(1-p)) drifts when k(1-p) is not small: 6 against 7.7 at p = 0.95)
        assert abs(plan.value - young / math.sqrt(2)) < abs(plan.value - young)
        assert plan.value < young


def test_checkpoints_infeasible_when_rollbacks_run_out():
    s = scenario(steps=12, p=0.8, checkpoints={"every": 3, "rollbacks": 1})
    plan = planner.checkpoints(s, 0.9)
    assert not plan.feasible
    assert plan.binding == "checkpoints.rollbacks"
    assert "rollbacks = 1" in plan.reason
    brute = max(evaluate(with_table(s, "checkpoints", every=k)).success for k in range(1, 13))
    assert plan.ceiling == pytest.approx(brute, abs=1e-12)


def test_checkpoints_need_a_checkpoints_table():
    with pytest.raises(ValueError, match=r"checkpoints: .*\[checkpoints\]"):
        planner.checkpoints(scenario(steps=5, p=0.9), 0.5)


# ========================================================== the monotonicity each search uses
small_scenarios = st.fixed_dictionaries(
    {
        "steps": st.integers(1, 3),
        "p": st.floats(0.3, 0.99),
        "miss": st.floats(0.0, 0.5),
        "false_reject": st.floats(0.0, 0.3),
        "per_step": st.integers(0, 3),
        "total": st.one_of(st.none(), st.integers(0, 4)),
        "confusion": st.booleans(),
        "checkpoint": st.booleans(),
    }
)


def build(d, **override) -> Scenario:
    d = {**d, **override}
    data = {
        "steps": d["steps"],
        "p": d["p"],
        "verifier": {"miss": d["miss"], "false_reject": d["false_reject"]},
        "retries": {"per_step": d["per_step"]},
    }
    if d["total"] is not None:
        data["retries"]["total"] = d["total"]
    if d["confusion"]:
        data["correlation"] = {"confusion": {"enter": 0.5, "recover": 0.5, "factor": 0.5}}
    if d["checkpoint"]:
        data["checkpoints"] = {"final": True, "detect": 0.8, "false_alarm": 0.05, "rollbacks": 1}
    return Scenario.from_dict(data)


@settings(max_examples=25, deadline=None)
@given(small_scenarios)
def test_success_non_decreasing_in_per_step_budget(d):
    values = [evaluate(build(d, per_step=r)).success for r in range(5)]
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:]))


@settings(max_examples=25, deadline=None)
@given(small_scenarios)
def test_success_non_decreasing_in_total_budget(d):
    values = [evaluate(build(d, total=b)).success for b in range(5)]
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:]))


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(small_scenarios)
def test_success_non_increasing_in_false_reject_and_in_miss_without_checkpoints(d):
    # rejecting a correct result never helps; an accepted wrong result never helps unless a
    # checkpoint may catch it (test_verifier_scan_catches_success_rising_with_miss), which is
    # why the miss search scans when there are checkpoints
    grid = np.linspace(0, 0.9, 5)
    values = [evaluate(build(d, false_reject=x)).success for x in grid]
    assert all(b <= a + 1e-12 for a, b in zip(values, values[1:]))
    values = [evaluate(build(d, miss=x, checkpoint=False)).success for x in grid]
    assert all(b <= a + 1e-12 for a, b in zip(values, values[1:]))


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(small_scenarios)
def test_success_non_decreasing_in_p(d):
    values = [evaluate(build(d, p=x)).success for x in np.linspace(0, 1, 6)]
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:]))


@settings(max_examples=25, deadline=None)
@given(small_scenarios)
def test_success_non_decreasing_in_each_step_budget(d):
    # allocation bisects a nested sequence: raising one step's budget never lowers success
    n = d["steps"]
    base = [d["per_step"]] * n
    before = evaluate(with_retries(build(d), base, d["total"])).success
    for i in range(n):
        more = list(base)
        more[i] += 1
        after = evaluate(with_retries(build(d), more, d["total"])).success
        assert after >= before - 1e-12


@settings(max_examples=25, deadline=None)
@given(small_scenarios)
def test_cost_non_decreasing_in_each_step_budget(d):
    # the general allocation's branch and bound cuts on this: a larger budget only changes a
    # trial where the smaller one would have ended it, and continuing costs more
    n = d["steps"]
    base = [d["per_step"]] * n
    before = evaluate(with_retries(build(d), base, d["total"])).expected_cost
    for i in range(n):
        more = list(base)
        more[i] += 1
        after = evaluate(with_retries(build(d), more, d["total"])).expected_cost
        assert after >= before - 1e-12


@settings(max_examples=30, deadline=None)
@given(
    st.integers(1, 6),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 0.99),
    st.integers(0, 6),
)
def test_closed_form_fast_path_equals_engine(steps, prob, miss, false_reject, budget):
    s = scenario(
        steps=steps,
        p=prob,
        verifier={"miss": miss, "false_reject": false_reject},
        retries={"per_step": budget},
    )
    assert is_chain(s)
    assert exact_success(s) == pytest.approx(evaluate(s).success, abs=1e-12)


# ==================================================================== the Plan and its inputs
def test_plan_to_dict_keys_and_json():
    s = scenario(steps=25, p=0.9, verifier={"miss": 0.1})
    feasible = planner.retries(scenario(steps=25, p=0.9, verifier={"miss": 0.0}), 0.95).to_dict()
    assert {"for", "value", "success", "expected_cost", "cost_per_success", "feasible"} <= set(
        feasible
    )
    assert "ceiling" not in feasible and "reason" not in feasible
    assert feasible["for"] == "retries" and feasible["value"] == 2
    infeasible = planner.retries(s, 0.95).to_dict()
    assert infeasible["feasible"] is False
    assert infeasible["ceiling"] == pytest.approx(0.758626, abs=1e-6)
    assert isinstance(infeasible["reason"], str)
    allocation = planner.allocation(ALLOCATION_CHAINS[0], 0.9).to_dict()
    assert isinstance(allocation["value"], list)
    json.dumps(allocation, allow_nan=False)


def test_plan_cost_per_success_is_infinite_at_zero_success():
    s = scenario(steps=3, p=[0.9, 0.0, 0.9], verifier={"miss": 0.0})
    plan = planner.retries(s, 0.5)
    assert not plan.feasible and plan.binding == "p"
    assert "step 2" in plan.reason
    assert plan.cost_per_success == math.inf
    assert plan.to_dict()["cost_per_success"] is None
    json.dumps(plan.to_dict(), allow_nan=False)


def test_plan_keeps_no_copy_of_the_json_helpers():
    # the plan types convert with relsim.results.jsonable, the one JSON helper
    from relsim import results
    from relsim.plan import chain, result

    assert result.jsonable is results.jsonable and chain.jsonable is results.jsonable
    for module in (planner, result, chain):
        for name in ("_finite_or_none", "_finite", "_jsonable"):
            assert not hasattr(module, name), (module.__name__, name)
    code = "import sys, relsim.plan; print(any(m.startswith('relsim.cli') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("quantity", ["verifier", "allocation"])
def test_plan_details_are_plain_json_and_a_copy(quantity):
    plan = planner.solve(ALLOCATION_CHAINS[0], quantity, 0.9)
    data = plan.to_dict()
    assert data["details"] == dict(plan.details)
    json.dumps(data, allow_nan=False)
    for value in data["details"].values():
        if isinstance(value, dict):
            value.clear()
    data["details"].clear()
    assert plan.details and all(v != {} for v in plan.details.values())


def test_target_comes_from_argument_or_scenario():
    s = scenario(steps=25, p=0.9, verifier={"miss": 0.0}, target=0.95)
    assert planner.retries(s).value == 2
    assert planner.retries(s, 0.99).value == 3  # the argument wins
    with pytest.raises(ValueError, match="target"):
        planner.retries(scenario(steps=3, p=0.9, verifier={}))


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, float("nan"), "0.9", True])
def test_bad_target_names_the_range(bad):
    with pytest.raises(ValueError, match=r"target.*\(0, 1\]"):
        planner.retries(scenario(steps=3, p=0.9, verifier={}), bad)


def test_solve_dispatches_and_rejects_unknown_quantities():
    s = scenario(steps=25, p=0.9, verifier={"miss": 0.0})
    assert planner.solve(s, "retries", 0.95) == planner.retries(s, 0.95)
    with pytest.raises(ValueError, match="for_: must be one of retries, total"):
        planner.solve(s, "budget", 0.95)
    assert set(planner.QUANTITIES) == {
        "retries",
        "total",
        "allocation",
        "verifier",
        "p",
        "checkpoints",
        "samples",
        "escalation",
    }


@pytest.mark.slow
def test_every_plan_is_a_plan_of_its_scenario():
    s = SMALL["checkpoints"]
    # samples and escalation plan tables this scenario does not have (tests/test_plan_v2.py)
    for quantity in set(planner.QUANTITIES) - {"samples", "escalation"}:
        plan = planner.solve(s, quantity, 0.5)
        assert isinstance(plan, Plan) and plan.for_ == quantity
        outcome = evaluate(plan.scenario)
        assert plan.success == outcome.success
        assert plan.expected_cost == outcome.expected_cost


@pytest.mark.slow
def test_allocation_with_correlation_beyond_branch_and_bound():
    # 12 steps with confusion and a task effect: past branch and bound, the answer comes with a
    # lower bound from the relaxation; the bound must hold for every allocation, so it is
    # checked here against designs evaluated independently by the engine (the answer, uniform
    # budgets, and random allocations), and the answer must reach the target
    s = scenario(
        steps=12,
        p=[0.95, 0.7, 0.9, 0.8, 0.99, 0.85, 0.9, 0.75, 0.95, 0.9, 0.8, 0.97],
        verifier={"miss": 0.01, "false_reject": 0.05},
        correlation={"task_sd": 0.3, "confusion": {"enter": 0.3, "recover": 0.5, "factor": 0.7}},
        cost={"attempt": [1, 4, 1, 2, 1, 1, 3, 1, 1, 2, 1, 1], "verify": 0.2},
    )
    plan = planner.allocation(s, 0.8, objective="expected_cost")
    per_success = planner.allocation(s, 0.8)
    uniform = planner.retries(s, 0.8)
    assert plan.feasible and per_success.feasible and uniform.feasible
    for result in (plan, per_success):
        assert result.success >= 0.8
        assert result.success == evaluate(result.scenario).success
    rng = np.random.default_rng(12)
    designs = [list(rng.integers(0, 12, 12)) for _ in range(30)] + [[uniform.value] * 12]
    others = [evaluate(with_retries(s, design, None)) for design in designs]
    others = [o for o in others if o.success >= 0.8]
    assert len(others) >= 5
    for result, value, of in (
        (plan, plan.expected_cost, "expected_cost"),
        (per_success, per_success.cost_per_success, "cost_per_success"),
    ):
        bound = result.details["lower_bound"]
        assert bound <= value and result.details["gap"] == pytest.approx(value - bound)
        assert all(bound <= getattr(o, of) * (1 + 1e-9) for o in others), of
        # the relaxation knows the task's difficulty, which an allocation cannot: with this
        # task effect the bound is a little over 1% below the answer (see the docstring)
        assert result.details["relative_gap"] <= 0.05
        # an answer within 1% of its bound takes the smallest budgets that stay there, and
        # may then cost up to that much more than the least uniform budget; else it never does
        slack = plan_limits.ALLOCATION_GAP if result.details["relative_gap"] <= 0.01 else 0.0
        assert value <= getattr(uniform, of) * (1 + slack) + 1e-12
        assert result.details["optimal"] is False
    # negative control: a bound that ignored the target would sit below the cheapest design
    # of all (every budget 0 costs least), which is far from feasible
    zeros = evaluate(with_retries(s, [0] * 12, None))
    assert zeros.success < 0.8 and plan.details["lower_bound"] > zeros.expected_cost


# ================================================================ the closed-form chain planner
def chain_success_by_hand(p, r, miss, false_reject, steps):
    """docs/model.md section 2, written out: (a S_r)**n with S_r = sum_{j<=r} q**j."""
    a = p * (1 - false_reject)
    q = p * false_reject + (1 - p) * (1 - miss)
    return (a * sum(q**j for j in range(r + 1))) ** steps


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 30),
    st.floats(0.5, 0.999),
    st.sampled_from([0.0, 0.001, 0.01, 0.05]),
    st.sampled_from([0.0, 0.02, 0.1]),
    st.sampled_from([0.5, 0.8, 0.9, 0.95]),
)
def test_plan_chain_is_the_least_budget_by_enumeration(steps, prob, miss, false_reject, target):
    from relsim.plan.chain import plan_chain

    plan = plan_chain(steps, target, prob, miss, false_reject)
    reaching = [
        r for r in range(400) if chain_success_by_hand(prob, r, miss, false_reject, steps) >= target
    ]
    a, w = prob * (1 - false_reject), (1 - prob) * miss
    assert plan.ceiling == pytest.approx((a / (a + w)) ** steps, rel=1e-12)
    if not reaching:  # far from the target, or only at the ceiling in the limit
        assert plan.retries is None and not plan.feasible and plan.success is None
        assert plan.ceiling <= target + 1e-9 and isinstance(plan.reason, str)
        return
    r = reaching[0]
    if abs(chain_success_by_hand(prob, r, miss, false_reject, steps) - target) < 1e-12:
        return  # a tie at rounding: either neighbour is defensible
    assert plan.retries == r and plan.feasible and plan.reason is None
    assert plan.success == pytest.approx(
        chain_success_by_hand(prob, r, miss, false_reject, steps), rel=1e-12
    )


def test_plan_chain_lesson_values_and_the_remedies():
    from relsim.plan.chain import plan_chain

    # docs/model.md section 2: 2 retries, 0.999**25; miss 0.1 caps the task at 0.758626
    good = plan_chain(25, 0.95, 0.9)
    assert good.retries == 2 and good.success == pytest.approx(0.999**25, rel=1e-12)
    assert good.required_step_success == pytest.approx(0.95 ** (1 / 25), rel=1e-12)
    assert good.remedies == []
    bad = plan_chain(25, 0.95, 0.9, miss=0.1)
    assert not bad.feasible and round(bad.ceiling, 6) == 0.758626
    assert "0.989011" in bad.reason and "whatever the retry budget" in bad.reason
    t = 0.95 ** (1 / 25)  # a/(a+w) = t solved for miss, and for p
    assert bad.max_miss == pytest.approx(0.9 * (1 - t) / (t * 0.1), rel=1e-12)
    assert bad.min_p == pytest.approx(t * 0.1 / ((1 - t) + t * 0.1), rel=1e-12)
    assert len(bad.remedies) == 2 and "1.85%" in bad.remedies[0]
    assert "p above 0.979875" in bad.remedies[1]


@pytest.mark.parametrize(
    "args, words",
    [
        ((5, 0.5, 0.0), "never succeeds (p = 0)"),
        ((5, 0.5, 0.9, 0.0, 1.0), "rejects every correct attempt"),
        ((5, 1.0, 0.9), "only in the limit"),
        ((5, 0.99, 0.9, 0.5), "caps each step"),
    ],
)
def test_plan_chain_names_each_cause(args, words):
    from relsim.plan.chain import plan_chain

    plan = plan_chain(*args)
    assert not plan.feasible and words in plan.reason
    assert plan.remedies  # something always helps, if only a lower target


def test_plan_chain_to_dict_keys_frame_command_and_scenario():
    from relsim.plan.chain import plan_chain

    plan = plan_chain(25, 0.95, 0.9, miss=0.01)
    data = plan.to_dict()
    assert list(data) == [
        "steps", "target", "p", "miss", "false_reject", "required_step_success", "retries",
        "success", "step_ceiling", "ceiling", "feasible", "max_miss", "min_p", "reason",
    ]
    json.dumps(data, allow_nan=False)
    frame = plan.to_frame()
    assert frame.shape == (1, len(data)) and frame.loc[0, "retries"] == plan.retries
    assert plan.command() == "relsim solve --steps 25 --target 0.95 --p 0.9 --miss 0.01"
    design = plan.to_scenario()
    assert evaluate(design).success == pytest.approx(plan.success, abs=1e-12)
    with pytest.raises(RelsimError, match="retries: must be"):
        plan_chain(25, 0.95, 0.9, miss=0.1).to_scenario()


@pytest.mark.slow
def test_plan_chain_imports_no_scenario_and_no_engine():
    code = (
        "import sys, relsim.plan.chain\n"
        "print(sorted(m for m in sys.modules if m in ('relsim.scenario', 'relsim.exact', "
        "'relsim.plan.budgets', 'relsim.plan._common')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    # negative control: the same probe sees the scenario once a scenario planner is loaded
    code = code.replace("relsim.plan.chain", "relsim.plan.budgets")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "relsim.scenario" in out.stdout


def test_plan_to_frame_is_one_row_of_to_dict():
    feasible = planner.verifier(ALLOCATION_CHAINS[0], 0.9)
    frame = feasible.to_frame()
    data = feasible.to_dict()
    assert frame.shape[0] == 1
    assert frame.loc[0, "value"] == data["value"] and frame.loc[0, "for"] == "verifier"
    assert frame.loc[0, "details_false_reject_feasible"] == data["details"]["false_reject"][
        "feasible"
    ]
    infeasible = planner.retries(scenario(steps=25, p=0.9, verifier={"miss": 0.1}), 0.95)
    row = infeasible.to_frame().iloc[0]
    assert row["binding"] == "verifier.miss" and row["ceiling"] == pytest.approx(0.758626, abs=1e-6)
    allocation = planner.allocation(ALLOCATION_CHAINS[0], 0.9)
    assert allocation.to_frame().loc[0, "value"] == list(allocation.value)


def test_plan_modules_fit_in_a_head():
    from pathlib import Path

    folder = Path(planner.__file__).parent
    sizes = {path.name: len(path.read_text().splitlines()) for path in folder.glob("*.py")}
    assert len(sizes) >= 8 and max(sizes.values()) <= 800, sizes


def test_bad_input_is_a_relsim_error_in_the_one_format():
    s = scenario(steps=3, p=0.9, verifier={})
    with pytest.raises(RelsimError, match=r"^for_: must be one of retries, .*, got 'budget'$"):
        planner.solve(s, "budget", 0.9)
    with pytest.raises(RelsimError, match=r"^target: must be a number in \(0, 1\], got 1.5$"):
        planner.retries(s, 1.5)
    with pytest.raises(RelsimError, match=r"^checkpoints: must be a \[checkpoints\] table"):
        planner.checkpoints(s, 0.9)
    with pytest.raises(RelsimError, match=r"^p: required key is missing"):
        planner.p({"steps": 3}, 0.9)  # a mapping is read as the engines read it
    with pytest.raises(RelsimError, match=r"^scenario: must be a relsim.Scenario or a mapping"):
        planner.p([3, 0.9], 0.9)
