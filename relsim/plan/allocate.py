"""Retry allocation: :func:`allocation`, per-step budgets of least cost per success (or,
with ``objective="expected_cost"``, least expected cost per trial) that reach a target (exact
for chains; a surrogate-guided search with branch and bound otherwise), or
(``objective="utility"``) of largest expected utility."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from relsim.scenario import trial_model
from relsim.errors import RelsimError, invalid
from relsim.plan import _common, _markov
from relsim.plan import objective as objectives
from relsim.plan._common import (
    BRANCH_AND_BOUND_EVALUATIONS,
    BRANCH_AND_BOUND_STEPS,
    BUCKETS,
    POLISH_TRIALS,
    SURROGATE_BISECTIONS,
    Plan,
    budget_floor,
    evaluate_design,
    goal_of,
    is_chain,
    outcome_success,
    make_plan,
    meets_goal,
    exact_success,
    with_per_step,
)
from relsim.plan._chain_alloc import step_table
from relsim.plan.binding import no_verifier_plan
from relsim.plan.budgets import retries
from relsim.plan.search import least_budget
from relsim.results import Outcome
from relsim.scenario import Scenario, as_scenario

__all__ = ["allocation"]


#: The objectives of :func:`allocation`: two costs it minimises, and utility it maximises.
OBJECTIVES = ("cost_per_success", "expected_cost", "utility")
#: ``objective="utility"``: every allocation is judged when there are at most this many.
MAX_ALLOCATIONS = 4_096
#: ``objective="utility"``: sweeps of coordinate ascent at most.
ASCENT_SWEEPS = 8


def allocation(
    scenario: Scenario | Mapping[str, Any],
    target: float | None = None,
    *,
    objective: str = "cost_per_success",
) -> Plan:
    r"""Per-step retry budgets :math:`r_i` of least cost with success >= ``target``.

    ``objective`` says which cost: ``"cost_per_success"`` (the default) minimises
    :math:`\text{cost}/\text{success}`, what a budget owner pays per success when a failed
    trial is run again; ``"expected_cost"`` minimises the expected cost of one trial (a
    failed trial counted once); ``"utility"`` maximises the expected utility (the scenario's
    ``[utility]``) with no target to meet (see the end of this description). ``details`` carries ``objective``, ``optimal`` (True when
    proven optimal), ``method``, the ``gap`` to the optimum where a bound is known (with
    ``lower_bound`` and ``relative_gap`` when it is not 0; None when no bound is known) and
    ``why``, one line on why the budget sits where it does.

    Among designs as good as the answer claims, the smallest budgets are returned: a proven
    optimum is lowered step by step while its objective stays within ``TIE`` (1e-9,
    relative) of the optimum, so no retry is bought that buys less; an answer with a bound
    within ``ALLOCATION_GAP`` (1%) is lowered while its objective stays within that of the
    bound (the gap reported is the lowered design's).

    For a chain of independent steps (no correlation, no checkpoints, no task-wide budget)

    .. math:: \text{success} = \prod_i s_i(r_i), \qquad
              \text{cost} = \sum_i c_i S_i(r_i) \prod_{j<i} e_j(r_j),

    with :math:`s_i = a_i S_i`, :math:`e_i = 1 - q_i^{r_i+1}` (the step is passed) and
    :math:`c_i` the attempt plus verify cost. Read from the last step back, a partial plan is a
    pair (success, cost) of the suffix, and prepending a step maps pairs monotonically, so a
    dominated pair can never become optimal: a dynamic programme over the Pareto front is
    exact (it equals brute force). First the same programme runs on ``BUCKETS`` buckets of
    log-success, rounding each pair's success down (every answer is feasible), and a local
    search of single-step changes follows: its objective bounds the exact front by
    branch and bound. When the front still outgrows ``MAX_FRONT`` pairs, the bucketed answer
    stands and a second run rounding success up gives a valid lower bound on the optimum.
    Budgets are searched from the least ``r_i`` the target allows to the one within ``1e-12``
    of the step's ceiling. Before it starts, the planner estimates the memory of its tables
    and refuses (a :class:`~relsim.errors.RelsimError` with the estimate and what to do
    instead) beyond ``MAX_MEMORY`` bytes.

    With random effects or confusion but no checkpoints and no task-wide budget, a trial given
    its task effect is a Markov chain over the confusion state, and
    :mod:`relsim.plan._markov` tables each step's passing, correct-passing and attempts for
    every budget up to a width where even a step slowed by two standard deviations of the
    effects has converged. Every single-step change is then judged at once (forward and
    backward vectors), and coordinate descent runs from several starts. A relaxation that
    may choose each execution's budget knowing the task effect and the confusion state
    (:mod:`relsim.plan._relax`) bounds every allocation from below, the target entering by a
    Lagrange multiplier; up to ``BRANCH_AND_BOUND_STEPS`` steps a branch and bound on it
    proves the optimum among budgets up to the width (``gap`` 0). Otherwise the bound is
    stated; it is within 1% where the relaxation is close (confusion, step effects) and
    looser with a large task effect (it knows the task's difficulty, an allocation cannot).

    Any other scenario (checkpoints, or a task-wide budget) relies on success and expected
    cost both being non-decreasing in every :math:`r_i` (a larger budget changes a trial only
    where the smaller one would have ended it, and continuing can only succeed more and cost
    more). Its surrogate is the chain without correlation, checkpoints and task-wide budget,
    each step averaged over the random effects (:math:`N(0, \sigma_t^2 + \sigma_s^2)` on the
    logit scale) when there are any. The surrogate's cheapest budgets for a surrogate target
    :math:`t'` are judged by the engine, and :math:`t'` is searched (galloping, then
    ``SURROGATE_BISECTIONS`` bisections) for the cheapest that reaches the target; uniform
    increments take over when even the surrogate's largest budgets fall short. Up to
    ``POLISH_TRIALS`` single-step decrements follow, the largest surrogate saving first. That
    heuristic's gap is bounded by monotonicity alone (the cost with every budget at 0, over
    the success with every budget at ``MAX_BUDGET``), a valid but weak bound. Up to
    ``BRANCH_AND_BOUND_STEPS`` steps, coordinate descent with the engine and a branch and
    bound follow in the box of budgets up to the surrogate's per-step limits (or the
    heuristic's, if larger): a partial allocation whose objective bound (its cost with the
    remaining steps at 0, over its success with them at their limits) already exceeds the
    incumbent is cut. Finished within ``BRANCH_AND_BOUND_EVALUATIONS`` evaluations, the answer
    is exact in that box (``gap`` 0). An answer of this path that is not proven optimal is
    compared with the least uniform budget (:func:`retries`) and the better one is returned.

    A scenario with the tables of docs/model.md section 8 (a mixture, samples, failure modes,
    faults) takes this last path, every design judged by the engine; an ``[escalation]``
    ladder is refused (its rungs are set against one per-step budget: plan ``retries`` or
    ``escalation``).

    ``objective="utility"``: the best uniform budget (:func:`retries` with that objective)
    and the budget past which nothing moves bound each step's range ``0..R``; every
    allocation is judged when there are at most ``MAX_ALLOCATIONS`` (``optimal``), else
    coordinate ascent from the best uniform budget sets each step's budget in turn to its best
    given the others until a sweep changes nothing (a heuristic: utility need not be
    concave). Among equals (within ``1e-12``) the least total budget is taken.

    Parameters
    ----------
    scenario : Scenario or mapping
        The design to plan from (a mapping is read as the engines read it); every quantity but
        the planned one is kept.
    target : float, optional
        End-to-end success wanted, in (0, 1]; default the scenario's ``target``.
    objective : str, default 'cost_per_success'
        The per-step budgets of least cost per success that meet the target; or one of
        ``"cost_per_success"``, ``"expected_cost"``, ``"utility"``
        (:mod:`relsim.plan.objective`).

    Returns
    -------
    Plan
        ``value`` is one budget per step (a tuple of int), with the planned design's exact
        outcome, whether it meets the target (``feasible``) and, when not, the ``ceiling``, the
        ``binding`` key and the ``reason``.

    Examples
    --------
    Per trial, the 0.99 step needs no retry (brute force agrees):

    >>> s = Scenario.from_dict({"steps": 3, "p": [0.9, 0.6, 0.99], "verifier": {"miss": 0.0}})
    >>> allocation(s, 0.95, objective="expected_cost").value
    (1, 3, 0)

    Per success, behind this perfect verifier a retry costs less than a rerun except at the
    first step, where a rerun loses nothing: later steps retry until a retry no longer buys
    a billionth of the cost per success, the first step barely retries.

    >>> plan = allocation(s, 0.95)
    >>> plan.value, plan.details["optimal"]
    ((1, 21, 4), True)
    """
    scenario = as_scenario(scenario)
    if objective not in OBJECTIVES:
        raise invalid("objective", f"one of {', '.join(OBJECTIVES)}", objective)
    if isinstance(scenario, Scenario) and scenario.escalation is not None:
        raise RelsimError(
            "escalation: must be left out to plan an allocation (a ladder's rungs are set "
            "against one per-step budget): plan retries or escalation instead, got a ladder"
        )
    if objective == "utility":
        return _allocation_utility(scenario, target)
    goal = goal_of(scenario, target, "allocation")
    if scenario.verifier is None:
        return no_verifier_plan("allocation", scenario, goal, (0,) * scenario.steps)
    _check_size(scenario)
    if is_chain(scenario):
        plan = _allocation_chain(scenario, goal, objective)
    elif _markov.applies(scenario):
        plan = _allocation_markov(scenario, goal, objective)
    else:
        plan = _allocation_general(scenario, goal, objective)
    searched = is_chain(scenario) or not _markov.applies(scenario)
    if plan.feasible and plan.details.get("gap") != 0.0 and searched:
        uniform = retries(scenario, goal)  # never worse than the least uniform budget
        if uniform.feasible and _plan_score(uniform, objective) < _plan_score(plan, objective):
            budgets = (int(uniform.value),) * scenario.steps  # type: ignore[arg-type]
            method = "uniform budget (better than the search's answer)"
            details = {**plan.details, "method": method}
            if details.get("lower_bound") is not None:  # the bound holds for it too
                details["gap"] = max(0.0, _plan_score(uniform, objective) - details["lower_bound"])
            plan = replace(
                plan,
                value=budgets,
                success=uniform.success,
                expected_cost=uniform.expected_cost,
                scenario=uniform.scenario,
                details=details,
            )
    if plan.feasible:
        details = {**plan.details, "objective": objective}
        details["optimal"] = details.get("gap") == 0.0
        details["why"] = _why(plan.value, objective)  # type: ignore[arg-type]
        plan = replace(plan, details=details)
    return plan


def _allocation_utility(scenario: Scenario, target: float | None) -> Plan:
    """:func:`allocation` under ``objective="utility"``."""
    n = scenario.steps
    if scenario.verifier is None:  # no retry can trigger: the design is the only one
        goal = objectives.utility_target(scenario, target, "allocation", 1)
        details = {"method": "no verifier: retries cannot trigger, so the design is the only one",
                   "optimal": True}
        return objectives.utility_plan("allocation", (0,) * n, scenario, goal, details)
    uniform = retries(scenario, target, objective="utility")
    goal = uniform.target
    start = int(uniform.value)  # type: ignore[arg-type]
    evaluations: dict[tuple[int, ...], Outcome] = {}

    def outcome(budgets: tuple[int, ...]) -> Outcome:
        if budgets not in evaluations:
            evaluations[budgets] = objectives.search_outcome(with_per_step(scenario, budgets))
        return evaluations[budgets]

    def uniform_at(budget: int) -> Outcome:
        return outcome((budget,) * n)

    floor = max(start, budget_floor(scenario))
    high = objectives.convergence_budget(uniform_at, floor, _common.MAX_BUDGET)
    width = high + 1

    def total_budget(budgets: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
        return sum(budgets), budgets

    if width**n <= MAX_ALLOCATIONS:
        objectives.utility_target(scenario, target, "allocation", width**n)
        every = list(itertools.product(range(width), repeat=n))
        best = objectives.best_by_utility(every, outcome, total_budget)
        method, optimal = f"every allocation with budgets 0..{high} per step (exact)", True
    else:
        objectives.utility_target(scenario, target, "allocation", 2 * n * width)
        best = (start,) * n
        for _ in range(ASCENT_SWEEPS):
            before = best
            for i in range(n):
                options = [best[:i] + (b,) + best[i + 1:] for b in range(width)]
                best = objectives.best_by_utility([best, *options], outcome, total_budget)
            if best == before:
                break
        method = (f"coordinate ascent over budgets 0..{high} per step from the best uniform "
                  f"budget {start} (a heuristic: utility need not be concave)")
        optimal = False
    details = {"method": method, "optimal": optimal, "evaluations": len(evaluations)}
    return objectives.utility_plan("allocation", best, with_per_step(scenario, best), goal, details)


def _plan_score(plan: Plan, objective: str) -> float:
    return plan.expected_cost if objective == "expected_cost" else plan.cost_per_success


def _why(budgets: Sequence[int], objective: str) -> str:
    """One line on why the budget sits where it does (the shape of the answer, in words)."""
    budgets = [int(b) for b in budgets]
    top = max(budgets)
    where = [i + 1 for i, b in enumerate(budgets) if b == top]
    span = f"step {where[0]}" if len(where) == 1 else f"steps {where[0]}-{where[-1]}"
    if min(budgets) == top:
        shape = f"every step gets {top}"
    else:
        shape = f"the most, {top}, at {span}"
    if objective == "expected_cost":
        return (
            f"{shape}: per trial, a failure early stops the trial before the later steps "
            "are paid for, so early steps get fewer retries (a failed trial is not run again)"
        )
    return (
        f"{shape}: a failure late in a trial wastes the work of every step before it (the "
        "trial is run again), so later and weaker steps get more retries"
    )


def _check_size(scenario: Scenario) -> None:
    """Refuse, before any work, a chain table or bucketed programme over ``MAX_MEMORY``."""
    width = budget_floor(scenario) + 1
    effect = trial_model(scenario).has_random_effects
    cells = scenario.steps * width * (21 if effect else 1)
    table = 8 * cells * 8  # eight float64 tables and temporaries of that size
    buckets = scenario.steps * (BUCKETS + 1) * 2  # the int16 choice table of the programme
    need = float(table + buckets)
    if not is_chain(scenario) and _markov.applies(scenario):
        need = _markov.memory(scenario)
        width = _markov.table_width(scenario) + 1
    if need > _common.MAX_MEMORY:
        raise RelsimError(
            f"allocation: {scenario.steps} steps with budgets up to {width - 1} need about "
            f"{need / 2**30:.1f} GiB, over the planner's limit of "
            f"{_common.MAX_MEMORY / 2**30:.1f} GiB; plan a uniform budget instead "
            "(plan.retries, which needs little memory), or allocate "
            "over a shorter chain (group steps into stages)"
        )


def _allocation_chain(scenario: Scenario, goal: float, objective: str) -> Plan:
    solved = step_table(scenario).solve(goal, objective)
    if solved is None:
        return _allocation_infeasible(scenario, goal)
    budgets, details = _trim_chain(scenario, *solved, goal, objective)
    planned = with_per_step(scenario, budgets)
    return make_plan("allocation", budgets, planned, goal, feasible=True, details=details)


def _trim_chain(
    scenario: Scenario, budgets: np.ndarray, details: dict[str, Any], goal: float, objective: str
) -> tuple[np.ndarray, dict[str, Any]]:
    """The smallest budgets whose objective stays within ``TIE`` of the chain's optimum (or,
    for the bucketed answer, within ``ALLOCATION_GAP`` of its bound when the bound is that
    close): retries past them buy nothing worth stating."""
    tables = _markov.build(scenario)
    start = np.minimum(budgets, tables.width)
    cost, success = tables.outcome(start)
    value = float(cost if objective == "expected_cost" else cost / success)
    bound = details.get("lower_bound")
    limit = value * (1 + _markov.TIE)
    if bound is not None and value - bound <= _common.ALLOCATION_GAP * value:
        limit = max(limit, bound * (1 + _common.ALLOCATION_GAP))
    trimmed = _markov.trim(tables, start, goal, objective, limit)
    if trimmed.sum() == budgets.sum() or not meets_goal(
        exact_success(with_per_step(scenario, trimmed)), goal
    ):
        return budgets, details
    if bound is not None:
        cost, success = tables.outcome(trimmed)
        value = float(cost if objective == "expected_cost" else cost / success)
        details = {**details, "gap": max(0.0, value - bound)}
        details["relative_gap"] = details["gap"] / value if value > 0 else 0.0
    return trimmed, details


def _allocation_markov(scenario: Scenario, goal: float, objective: str) -> Plan:
    """Without checkpoints and a task-wide budget (see :mod:`relsim.plan._markov`)."""
    solved = _markov.solve(scenario, goal, objective)
    if solved is None:
        return _allocation_infeasible(scenario, goal)
    budgets, details = solved
    design = with_per_step(scenario, budgets)
    for margin in (1e-12, 1e-9, 1e-6):
        if meets_goal(outcome_success(evaluate_design(design)), goal):
            break
        # the tables put the design a rounding error (or the quadrature error of the task
        # effect) above the goal and the engine below it: plan for a goal a little higher
        solved = _markov.solve(scenario, min(1.0, goal + margin), objective)
        if solved is None:
            return _allocation_infeasible(scenario, goal)
        budgets, details = solved
        design = with_per_step(scenario, budgets)
    else:
        return _allocation_infeasible(scenario, goal)
    plan = make_plan("allocation", budgets, design, goal, feasible=True, details=details)
    if "lower_bound" in details:
        value = _plan_score(plan, objective)
        gap = max(0.0, value - details["lower_bound"])
        details = {**details, "gap": gap, "relative_gap": gap / value if value > 0 else 0.0}
        plan = replace(plan, details=details)
    return plan


def _allocation_infeasible(scenario: Scenario, goal: float) -> Plan:
    """Even the largest budgets the table holds fall short: the uniform-budget plan. When
    the uniform search does reach the target (a target within 1e-12 of the ceiling, where the
    table stops), its uniform budget is the answer, with no bound on the gap."""
    plan = retries(scenario, goal)
    budget = plan.value if isinstance(plan.value, int) else 0
    budgets = (budget,) * scenario.steps
    if plan.feasible:
        details = {"method": "uniform budget (the target is at the step ceilings)", "gap": None}
        return make_plan("allocation", budgets, plan.scenario, goal, feasible=True, details=details)
    return make_plan(
        "allocation",
        budgets,
        with_per_step(scenario, budgets),
        goal,
        feasible=False,
        ceiling=plan.ceiling,
        binding=plan.binding,
        reason=plan.reason,
    )


def _allocation_general(scenario: Scenario, goal: float, objective: str) -> Plan:
    n = scenario.steps
    model = trial_model(scenario)
    table = step_table(scenario, math.hypot(model.task_sd, model.step_sd))
    if model.has_total:  # a per-step budget above the total is never spent
        table.high = np.minimum(table.high, model.total)
    if not np.isfinite(table.ceiling()):  # some step can never succeed
        return _allocation_infeasible(scenario, goal)
    evaluations: dict[tuple[int, ...], Outcome] = {}

    def outcome(budgets: Iterable[int]) -> Outcome:
        key = tuple(int(b) for b in budgets)
        if key not in evaluations:
            evaluations[key] = evaluate_design(with_per_step(scenario, key))
        return evaluations[key]

    def reaches_with(budgets: Iterable[int]) -> bool:
        return meets_goal(outcome_success(outcome(budgets)), goal)

    def score(budgets: Iterable[int]) -> float:
        o = outcome(budgets)
        if objective == "expected_cost":
            return float(o.expected_cost)
        return float(o.cost_per_success)

    log_goal = math.log(goal)
    log_top = table.ceiling()
    span = max(log_top - log_goal, 1e-9)
    solutions: dict[float, np.ndarray] = {}

    def planned(theta: float) -> np.ndarray:
        """The surrogate's best budgets for log-target ``log_goal + theta * span``."""
        if theta not in solutions:
            if theta >= 1.0:
                solutions[theta] = table.high.astype(np.int64)
            else:
                surrogate_goal = math.exp(min(0.0, log_goal + theta * span))
                solved = table.solve(surrogate_goal, objective, exact=False)
                solutions[theta] = table.high.astype(np.int64) if solved is None else solved[0]
        return solutions[theta]

    def reaches(theta: float) -> bool:
        return reaches_with(planned(theta))

    budgets: np.ndarray | None = None
    if reaches(1.0):
        if reaches(0.0):  # the surrogate is pessimistic: lower its target
            good, bad = 0.0, None
            for theta in (-0.5, -1.0, -2.0, -4.0, -8.0):
                if reaches(theta):
                    good = theta
                else:
                    bad = theta
                    break
        else:
            good, bad = 1.0, 0.0
            for theta in (0.5, 0.8, 0.95, 0.99):
                if reaches(theta):
                    good = theta
                    break
                bad = theta
        if bad is not None:
            for _ in range(SURROGATE_BISECTIONS):
                middle = 0.5 * (good + bad)
                if reaches(middle):
                    good = middle
                else:
                    bad = middle
        budgets = planned(good).copy()
    else:  # correlation or checkpoints need more than the surrogate: raise every step
        if not retries(scenario, goal).feasible:  # no budget at all: the uniform diagnosis
            return _allocation_infeasible(scenario, goal)
        top = table.high.astype(np.int64)

        def success_at_extra(extra: int) -> float:
            return outcome_success(outcome(np.minimum(top + extra, _common.MAX_BUDGET)))

        floor = budget_floor(scenario)
        extra, _, _ = least_budget(success_at_extra, goal, floor, _common.MAX_BUDGET)
        if extra is None:  # pragma: no cover - a feasible uniform budget is below top + limit
            return _allocation_infeasible(scenario, goal)
        budgets = np.minimum(top + extra, _common.MAX_BUDGET)
    # single-step decrements, the largest surrogate saving first (cost falls with any budget)
    rows = np.arange(n)
    inside = np.minimum(budgets, table.attempts.shape[1] - 1)
    saving = table.unit_cost * (
        table.attempts[rows, inside] - table.attempts[rows, np.maximum(inside - 1, 0)]
    )
    tried = 0
    for i in np.argsort(-saving, kind="stable"):
        if tried >= POLISH_TRIALS:
            break
        if budgets[i] == 0:
            continue
        trial = budgets.copy()
        trial[i] -= 1
        tried += 1
        if reaches_with(trial) and score(trial) <= score(budgets):
            budgets = trial
    method = (
        "surrogate chain optimum at a target tuned with the exact engine, then single-step "
        "decrements (a heuristic)"
    )
    gap: float | None = None
    if n <= BRANCH_AND_BOUND_STEPS:
        box = np.maximum(table.high, budgets)
        budgets = _line_search(box, budgets, goal, outcome, objective)
        exact = _branch_and_bound(box, budgets, goal, outcome, objective)
        if exact is not None:
            budgets, method, gap = exact, "exact (branch and bound in the box of step limits)", 0.0
    details: dict[str, Any] = {"method": method, "gap": gap}
    if gap is None:  # a heuristic: bound it by monotonicity (a weak but valid bound)
        bound, success_bound = _monotone_bound(scenario, outcome, objective)
        details.update(lower_bound=bound, gap=max(0.0, score(budgets) - bound))
        details["bound"] = (
            f"cost with every budget at 0, over success {success_bound}: "
            "valid for every allocation up to MAX_BUDGET per step, and weak"
        )
    details["evaluations"] = len(evaluations)
    design = with_per_step(scenario, budgets)
    return make_plan("allocation", budgets, design, goal, feasible=True, details=details)


def _monotone_bound(
    scenario: Scenario, outcome: Callable[[Iterable[int]], Outcome], objective: str
) -> tuple[float, str]:
    """A lower bound on the objective of every allocation in ``0..MAX_BUDGET`` per step, and
    what bounds its success, in words: expected cost and success are non-decreasing in every
    budget, so the cost is at least that of all budgets at 0 and the success at most that of
    all at ``MAX_BUDGET``. That one design's evaluation is far larger than any the plan makes
    (its tables grow with the budget); when the engine would refuse it (over the time or
    memory limit), success is bounded by 1 instead, and the plan still stands."""
    from relsim.exact import work_estimate
    from relsim.limits import memory_limit, time_limit

    n = scenario.steps
    low = float(outcome([0] * n).expected_cost)
    if objective == "expected_cost":
        return low, "with every budget at MAX_BUDGET"
    widest = [_common.MAX_BUDGET] * n
    estimate = work_estimate(with_per_step(scenario, widest))
    if estimate.seconds > time_limit() or estimate.memory > memory_limit():
        return low, "at most 1 (every budget at MAX_BUDGET is too large to evaluate)"
    high = float(outcome(widest).success)
    return (low / high if high > 0 else math.inf), "with every budget at MAX_BUDGET"


class _OutOfEvaluations(Exception):
    pass


def _line_search(
    box: np.ndarray,
    budgets: np.ndarray,
    goal: float,
    outcome: Callable[[Iterable[int]], Outcome],
    objective: str,
) -> np.ndarray:
    """Coordinate descent with the engine: each step's budget in turn set to the best in
    ``0..box_i`` given the others (success kept >= goal), until a sweep changes nothing or
    ``BRANCH_AND_BOUND_EVALUATIONS`` evaluations are spent."""
    budgets = np.array(budgets, dtype=np.int64)
    spent = 0

    def value(o: Outcome) -> float:
        return float(o.expected_cost if objective == "expected_cost" else o.cost_per_success)

    best = value(outcome(budgets))
    for _ in range(4):
        changed = False
        for i in range(len(budgets)):
            for b in range(int(box[i]) + 1):
                if b == budgets[i]:
                    continue
                spent += 1
                if spent > BRANCH_AND_BOUND_EVALUATIONS:
                    return budgets
                trial = budgets.copy()
                trial[i] = b
                o = outcome(trial)
                if meets_goal(outcome_success(o), goal) and value(o) < best * (1 - 1e-13):
                    best, budgets, changed = value(o), trial, True
        if not changed:
            break
    return budgets


def _branch_and_bound(
    box: np.ndarray,
    incumbent: np.ndarray,
    goal: float,
    outcome: Callable[[Iterable[int]], Outcome],
    objective: str,
) -> np.ndarray | None:
    """Least objective over allocations ``0..box_i`` with success reaching ``goal``,
    relying on success and cost being non-decreasing in every budget. None when the search
    needs more than ``BRANCH_AND_BOUND_EVALUATIONS`` new evaluations."""
    n = len(box)
    count = [0]

    def look(budgets: Iterable[int]) -> Outcome:
        count[0] += 1
        if count[0] > BRANCH_AND_BOUND_EVALUATIONS:
            raise _OutOfEvaluations
        return outcome(budgets)

    def value(o: Outcome) -> float:
        return float(o.expected_cost if objective == "expected_cost" else o.cost_per_success)

    def meets(o: Outcome) -> bool:
        return meets_goal(outcome_success(o), goal)

    def bound(low: Outcome, high: Outcome) -> float:
        """The objective of any allocation between ``low`` and ``high`` is at least this."""
        if objective == "expected_cost":
            return float(low.expected_cost)
        return float(low.expected_cost) / float(high.success) if high.success > 0 else math.inf

    best_value = value(outcome(incumbent))
    best_budgets = incumbent.copy()

    def search(prefix: list[int]) -> None:
        nonlocal best_value, best_budgets
        i = len(prefix)
        rest_high = [int(b) for b in box[i + 1 :]]
        rest_zero = [0] * (n - i - 1)
        if i == n - 1:
            if not meets(look(prefix + [int(box[i])])):
                return
            low, high = -1, int(box[i])  # the least budget that reaches the target
            while high - low > 1:
                middle = (low + high) // 2
                if meets(look(prefix + [middle])):
                    high = middle
                else:
                    low = middle
            # expected cost: the least is the cheapest; cost per success: scan upwards while
            # the bound says a larger budget could still be better
            last = [high] if objective == "expected_cost" else range(high, int(box[i]) + 1)
            top = look(prefix + [int(box[i])])
            for budget in last:
                o = look(prefix + [budget])
                if bound(o, top) >= best_value:
                    break
                if value(o) < best_value:
                    best_value = value(o)
                    best_budgets = np.array(prefix + [budget], dtype=np.int64)
            return
        for budget in range(int(box[i]) + 1):
            low_outcome = look(prefix + [budget] + rest_zero)
            high_outcome = look(prefix + [budget] + rest_high)
            if bound(low_outcome, high_outcome) >= best_value:
                if objective == "expected_cost":
                    return  # cost only grows with the budget
                continue
            if not meets(high_outcome):
                continue  # success only grows with the budget
            search(prefix + [budget])

    try:
        search([])
    except _OutOfEvaluations:
        return None
    return best_budgets
