"""Retry allocation: :func:`allocation`, per-step budgets of least cost per success (or,
with ``objective="expected_cost"``, least expected cost per trial) that reach a target (exact
for chains; a surrogate-guided search with branch and bound otherwise)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from relsim import formulas
from relsim.scenario import trial_model
from relsim.errors import RelsimError, invalid
from relsim.plan import _common
from relsim.plan._common import (
    BRANCH_AND_BOUND_EVALUATIONS,
    BRANCH_AND_BOUND_STEPS,
    BUCKETS,
    CONVERGED,
    POLISH_TRIALS,
    SURROGATE_BISECTIONS,
    SURROGATE_BUCKETS,
    Plan,
    budget_floor,
    evaluate_design,
    goal_of,
    is_chain,
    log_goal_of,
    outcome_success,
    make_plan,
    meets_goal,
    with_per_step,
)
from relsim.plan.binding import no_verifier_plan
from relsim.plan.budgets import retries
from relsim.plan.search import least_budget
from relsim.results import Outcome
from relsim.scenario import Scenario

__all__ = ["allocation"]


#: The objectives :func:`allocation` can minimise.
OBJECTIVES = ("cost_per_success", "expected_cost")


def allocation(
    scenario: Scenario, target: float | None = None, *, objective: str = "cost_per_success"
) -> Plan:
    r"""Per-step retry budgets :math:`r_i` of least cost with success >= ``target``.

    ``objective`` says which cost: ``"cost_per_success"`` (the default) minimises
    :math:`\text{cost}/\text{success}`, what a budget owner pays per success when a failed
    trial is run again; ``"expected_cost"`` minimises the expected cost of one trial (a
    failed trial counted once). Both are non-decreasing in cost and non-increasing in
    success, so everything below holds for either. ``details`` carries ``objective``,
    ``optimal`` (True when proven optimal), ``method``, the ``gap`` to the optimum where a
    bound is known (None when none is) and ``why``, one line on why the budget sits where it
    does.

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

    Any other scenario relies on success and expected cost both being non-decreasing in
    every :math:`r_i` (a larger budget changes a trial only where the smaller one would have
    ended it, and continuing can only succeed more and cost more). Its surrogate is the chain
    without correlation, checkpoints and task-wide budget, each step averaged over the random
    effects (:math:`N(0, \sigma_t^2 + \sigma_s^2)` on the logit scale) when there are any. The
    surrogate's cheapest budgets for a surrogate target :math:`t'` are judged by the engine,
    and :math:`t'` is searched (galloping, then ``SURROGATE_BISECTIONS`` bisections between
    the target and the surrogate's ceiling, or below the target when the surrogate is
    pessimistic) for the cheapest that reaches the target; uniform increments take over when
    even the surrogate's largest budgets fall short. Up to ``POLISH_TRIALS`` single-step
    decrements follow, the largest surrogate saving first. That heuristic's gap is bounded by
    monotonicity alone (two evaluations: the cost with every budget at 0, over the success
    with every budget at ``MAX_BUDGET``), a valid but weak bound. Up to
    ``BRANCH_AND_BOUND_STEPS`` steps, a branch and bound then searches
    the box of budgets up to the surrogate's per-step limits (or the heuristic's, if larger;
    never above a task-wide budget) with the heuristic as incumbent: a partial allocation
    whose objective bound (its cost with the remaining steps at 0, over its success with
    them at their limits) already exceeds the incumbent, or whose success with them at their
    limits falls short, is cut. Finished within ``BRANCH_AND_BOUND_EVALUATIONS`` evaluations,
    the answer is exact in that box (``gap`` 0).

    Whenever an answer is not proven optimal, it is compared with the least uniform budget
    (:func:`retries`) and the better one is returned.

    Examples
    --------
    Per trial, the 0.99 step needs no retry (brute force agrees):

    >>> s = Scenario.from_dict({"steps": 3, "p": [0.9, 0.6, 0.99], "verifier": {"miss": 0.0}})
    >>> allocation(s, 0.95, objective="expected_cost").value
    (1, 3, 0)

    Per success, behind this perfect verifier a retry always costs less than a rerun, so every
    step retries until its success is within 1e-12 of 1:

    >>> plan = allocation(s, 0.95)
    >>> plan.value, plan.details["optimal"]
    ((9, 29, 6), True)
    """
    goal = goal_of(scenario, target, "allocation")
    if objective not in OBJECTIVES:
        raise invalid("objective", f"one of {', '.join(OBJECTIVES)}", objective)
    if scenario.verifier is None:
        return no_verifier_plan("allocation", scenario, goal, (0,) * scenario.steps)
    _check_size(scenario)
    if is_chain(scenario):
        plan = _allocation_chain(scenario, goal, objective)
    else:
        plan = _allocation_general(scenario, goal, objective)
    if plan.feasible and plan.details.get("gap") != 0.0:
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


def _plan_score(plan: Plan, objective: str) -> float:
    return plan.expected_cost if objective == "expected_cost" else plan.cost_per_success


def _score(cost: Any, log_success: Any, objective: str) -> Any:
    """The objective from a cost and a log-success (arrays or floats)."""
    if objective == "expected_cost":
        return cost
    with np.errstate(over="ignore", invalid="ignore"):
        return cost * np.exp(-np.asarray(log_success, dtype=float))


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
    need = table + buckets
    if need > _common.MAX_MEMORY:
        raise RelsimError(
            f"allocation: {scenario.steps} steps with budgets up to {width - 1} need about "
            f"{need / 2**30:.1f} GiB, over the planner's limit of "
            f"{_common.MAX_MEMORY / 2**30:.1f} GiB; plan a uniform budget instead "
            "(plan.retries, which needs little memory), or allocate "
            "over a shorter chain (group steps into stages)"
        )


@dataclass
class _ChainTable:
    """Per-step closed forms of a chain for budgets ``0..width-1`` (rows: steps)."""

    success: np.ndarray  # s_i(r) = a_i S_i(r)
    passed: np.ndarray  # e_i(r) = 1 - q_i^(r+1)
    attempts: np.ndarray  # S_i(r)
    unit_cost: np.ndarray  # c_i = attempt_i + verify
    low: np.ndarray  # least budget each step may take
    high: np.ndarray  # largest budget worth searching
    log_table: np.ndarray  # log s_i(r), from the step's failure where it is small

    def cost(self, budgets: np.ndarray) -> float:
        rows = np.arange(len(budgets))
        attempts = self.attempts[rows, budgets]
        passed = self.passed[rows, budgets]
        reach = np.concatenate([[1.0], np.cumprod(passed)[:-1]])
        return float(np.sum(self.unit_cost * attempts * reach))

    def log_success(self, budgets: np.ndarray) -> float:
        rows = np.arange(len(budgets))
        return float(np.sum(self.log_table[rows, budgets]))

    def score(self, budgets: np.ndarray, objective: str) -> float:
        return float(_score(self.cost(budgets), self.log_success(budgets), objective))

    def ceiling(self) -> float:
        """Log-success with every step at its largest budget."""
        return self.log_success(self.high)

    def for_goal(self, goal: float) -> "_ChainTable | None":
        """A copy whose ``low`` is the least budget each step needs for ``goal`` (with every
        other step at its best); None when even the best falls short."""
        n = len(self.high)
        best = self.log_table[np.arange(n), self.high]
        log_goal = log_goal_of(goal)
        if not np.all(np.isfinite(best)) or float(np.sum(best)) < log_goal:
            return None
        need = log_goal - (float(np.sum(best)) - best)
        low = np.argmax(self.log_table >= need[:, None], axis=1)
        return replace(self, low=np.minimum(low, self.high))

    def solve(
        self, goal: float, objective: str, exact: bool = True
    ) -> tuple[np.ndarray, dict[str, Any]] | None:
        """The chain's best budgets for ``goal`` and the method notes; None if infeasible.

        The bucketed programme rounding success down, then a local search, give a
        feasible answer; with ``exact`` its objective bounds the exact Pareto programme, and
        when that outgrows its limits a second bucketed run rounding up gives a lower bound."""
        table = self.for_goal(goal)
        if table is None:
            return None
        if log_goal_of(goal) == 0.0:  # target 1, met: every step is certain at its least budget
            return table.low.astype(np.int64), {"method": "exact (every step certain)", "gap": 0.0}
        buckets = BUCKETS if exact else SURROGATE_BUCKETS
        _, found_budgets = _bucketed(table, goal, objective, optimistic=False, buckets=buckets)
        if found_budgets is None:  # the target is within the rounding of the ceiling
            found_budgets = table.high.astype(np.int64)  # feasible: for_goal checked it
        found_budgets = _improve_locally(table, found_budgets, goal, objective)
        found = table.score(found_budgets, objective)
        budgets = _pareto_allocation(table, goal, found, objective) if exact else None
        if budgets is not None:
            method = "exact (dynamic programme over the Pareto front)"
            return budgets, {"method": method, "gap": 0.0}
        if not exact:
            return found_budgets, {}
        bound, _ = _bucketed(table, goal, objective, optimistic=True)
        gap = max(0.0, found - bound)
        return found_budgets, {
            "method": f"bucketed dynamic programme ({BUCKETS} levels of log-success) "
            "with a local search",
            "lower_bound": bound,
            "gap": gap,
            "relative_gap": gap / found if found > 0 else 0.0,
        }


def _step_table(scenario: Scenario, effect_sd: float = 0.0) -> _ChainTable:
    r"""Per-step closed forms for budgets up to the convergence limit, the goal left open.

    With ``effect_sd > 0`` each step's success, passing probability and attempts are averaged
    over a logit-scale effect :math:`N(0, \sigma^2)` (Gauss-Hermite): the marginal step of a
    scenario with random effects, the surrogate of :func:`_allocation_general`."""
    width = budget_floor(scenario) + 1
    budgets = np.arange(width)
    shape = (scenario.steps, width)
    model = trial_model(scenario)
    if effect_sd > 0:
        nodes, weights = np.polynomial.hermite_e.hermegauss(21)
        weights = weights / weights.sum()
        step = formulas.verified_step(
            model.shifted_p(effect_sd * nodes)[:, :, None],
            budgets[None, None, :],
            model.miss[:, None, None],
            model.false_reject[:, None, None],
        )
        full = shape[:1] + (len(nodes),) + shape[1:]
        w = weights[None, :, None]
        success = np.sum(w * np.broadcast_to(np.asarray(step.success, float), full), axis=1)
        failed = np.asarray(step.silent_failure, float) + np.asarray(step.exhausted, float)
        failure = np.sum(w * np.broadcast_to(failed, full), axis=1)
        passed = 1.0 - np.sum(w * np.broadcast_to(np.asarray(step.exhausted, float), full), axis=1)
        attempts = np.sum(
            w * np.broadcast_to(np.asarray(step.expected_attempts, float), full), axis=1
        )
    else:
        step = formulas.verified_step(
            model.p[:, None], budgets[None, :], model.miss[:, None], model.false_reject[:, None]
        )
        success = np.broadcast_to(np.asarray(step.success, float), shape).copy()
        failed = np.asarray(step.silent_failure, float) + np.asarray(step.exhausted, float)
        failure = np.broadcast_to(failed, shape)
        passed = 1.0 - np.broadcast_to(np.asarray(step.exhausted, float), shape)
        attempts = np.broadcast_to(np.asarray(step.expected_attempts, float), shape).copy()
    with np.errstate(divide="ignore"):  # log s from the failure where it is small
        log_success = np.where(failure < 0.5, np.log1p(-np.minimum(failure, 0.5)), np.log(success))
    top = log_success[:, -1]
    # least budget within 1e-12 (relative) of the step's ceiling: more is never worth it
    high = np.argmax(log_success >= (top - CONVERGED)[:, None], axis=1)
    unit_cost = model.cost_per_attempt
    low = np.zeros(scenario.steps, dtype=np.int64)
    return _ChainTable(success, passed, attempts, unit_cost, low, high, log_success)


def _pareto_allocation(
    table: _ChainTable, goal: float, bound: float, objective: str
) -> np.ndarray | None:
    """Exact: dynamic programme over the Pareto front of (suffix success, suffix cost),
    pruned by branch and bound against ``bound``, the objective of a known feasible plan.

    A suffix pair can only end in a plan costing at least ``prefix_cost + reach * cost``
    with the steps before it at their least budgets (both are non-decreasing in every
    budget), and succeeding at most its success times the best the steps before it can add;
    pairs whose objective bound exceeds ``bound`` are dropped. None when the front outgrows
    ``MAX_FRONT`` or the work (pairs examined) exceeds ``100 * MAX_FRONT * steps``."""
    n = len(table.low)
    rows = np.arange(n)
    least_attempts = table.attempts[rows, table.low]
    least_passed = table.passed[rows, table.low]
    least_reach = np.concatenate([[1.0], np.cumprod(least_passed)])  # before step i
    least_cost = table.unit_cost * least_attempts * least_reach[:-1]
    least_prefix = np.concatenate([[0.0], np.cumsum(least_cost)])
    limit = bound * (1 + 1e-12) + 1e-300
    work = 0
    log_goal = log_goal_of(goal)
    log_table = table.log_table
    best = log_table[np.arange(n), table.high]
    # best log-success the steps before i can still add
    prefix_best = np.concatenate([[0.0], np.cumsum(best)])
    log_success = np.array([0.0])
    cost = np.array([0.0])
    choices: list[np.ndarray] = []
    parents: list[np.ndarray] = []
    for i in range(n - 1, -1, -1):
        budgets = np.arange(table.low[i], table.high[i] + 1)
        new_log = log_table[i, budgets][:, None] + log_success[None, :]
        new_cost = (
            table.unit_cost[i] * table.attempts[i, budgets][:, None]
            + table.passed[i, budgets][:, None] * cost[None, :]
        )
        choice = np.broadcast_to(budgets[:, None], new_log.shape).ravel()
        parent = np.broadcast_to(np.arange(len(cost))[None, :], new_log.shape).ravel()
        new_log = new_log.ravel()
        new_cost = new_cost.ravel()
        optimistic = _score(
            least_prefix[i] + least_reach[i] * new_cost, new_log + prefix_best[i], objective
        )
        keep = (new_log + prefix_best[i] >= log_goal) & (optimistic <= limit)
        new_log, new_cost = new_log[keep], new_cost[keep]
        choice, parent = choice[keep], parent[keep]
        work += keep.size
        if new_log.size == 0 or work > 100 * _common.MAX_FRONT * n:
            return None
        order = np.lexsort((new_cost, -new_log))
        new_log, new_cost = new_log[order], new_cost[order]
        choice, parent = choice[order], parent[order]
        running = np.minimum.accumulate(new_cost)
        front = np.concatenate([[True], new_cost[1:] < running[:-1]])
        log_success, cost = new_log[front], new_cost[front]
        choices.append(choice[front])
        parents.append(parent[front])
        if len(cost) > _common.MAX_FRONT:
            return None
    index = int(np.argmin(_score(cost, log_success, objective)))
    budgets = np.empty(n, dtype=np.int64)
    for i in range(n):  # choices[-1] is step 0
        level = n - 1 - i
        budgets[i] = choices[level][index]
        index = int(parents[level][index])
    return budgets


def _bucketed(
    table: _ChainTable,
    goal: float,
    objective: str,
    optimistic: bool,
    buckets: int | None = None,
) -> tuple[float, np.ndarray | None]:
    """The dynamic programme on ``buckets`` (default ``BUCKETS``) levels of log-success
    between log(goal) and 0.

    Rounding success down at each step (``optimistic=False``) keeps only real, feasible
    plans; rounding up (``optimistic=True``) keeps, for every real plan, a relaxed one at
    least as good (no more cost, a level at least its log-success), so the least objective
    over the buckets, each taken at its level, is a lower bound on the optimum. Returns that
    least objective and (rounding down) the budgets of the best bucket."""
    n = len(table.low)
    count = BUCKETS if buckets is None else buckets
    log_goal = log_goal_of(goal)
    width = -log_goal / count
    log_table = table.log_table
    best = log_table[np.arange(n), table.high]
    prefix_best = np.concatenate([[0.0], np.cumsum(best)])
    # bucket b holds level log_goal + b * width; the empty suffix has success 1 (b = count)
    cost = np.full(count + 1, np.inf)
    cost[count] = 0.0
    choice_of = np.full((n, count + 1), -1, dtype=np.int16)  # budgets <= MAX_BUDGET
    rounding = np.ceil if optimistic else np.floor
    levels = log_goal + width * np.arange(count + 1)
    for i in range(n - 1, -1, -1):
        new_cost = np.full(count + 1, np.inf)
        new_choice = np.full(count + 1, -1, dtype=np.int16)
        for budget in range(table.low[i], table.high[i] + 1):
            shift = int(rounding(log_table[i, budget] / width))  # <= 0
            if -shift > count:
                continue
            source = cost[-shift:] if shift else cost
            here = table.unit_cost[i] * table.attempts[i, budget]
            candidate = here + table.passed[i, budget] * source
            target_slice = slice(0, count + 1 + shift)
            better = candidate < new_cost[target_slice]
            new_cost[target_slice][better] = candidate[better]
            new_choice[target_slice][better] = budget
        # a suffix the earlier steps cannot lift to the goal is dropped
        new_cost[levels + prefix_best[i] < log_goal] = np.inf
        cost = new_cost
        choice_of[i] = new_choice
    if not np.any(np.isfinite(cost)):
        return math.inf, None
    scores = _score(cost, levels, objective)
    bucket = int(np.argmin(scores))
    lowest = float(scores[bucket])
    if optimistic:
        return lowest, None
    budgets = np.empty(n, dtype=np.int64)
    for i in range(n):
        budget = int(choice_of[i, bucket])
        budgets[i] = budget
        bucket -= int(np.floor(log_table[i, budget] / width))
    return lowest, budgets


def _improve_locally(
    table: _ChainTable, budgets: np.ndarray, goal: float, objective: str
) -> np.ndarray:
    """Single-step changes (one budget down, or for cost per success also up), the best
    improvement of the objective first, while success stays >= goal."""
    budgets = budgets.copy()
    log_goal = log_goal_of(goal)
    n = len(budgets)
    rows = np.arange(n)
    moves = (-1,) if objective == "expected_cost" else (-1, 1)
    for _ in range(100 * n + 100):  # each move improves the objective: this is a backstop
        attempts = table.attempts[rows, budgets]
        passed = table.passed[rows, budgets]
        reach = np.concatenate([[1.0], np.cumprod(passed)[:-1]])
        # cost of the steps after i, given step i is passed: the suffix sum of
        # c_j S_j reach_j over reach_{i+1} (reach >= success >= goal > 0: no underflow)
        share = table.unit_cost * attempts * reach
        suffix = np.concatenate([np.cumsum(share[::-1])[::-1][1:], [0.0]])
        reach_next = np.concatenate([reach[1:], [1.0]])
        after = suffix / reach_next
        cost = float(np.sum(share))
        log_now = table.log_table[rows, budgets]
        total_log = float(np.sum(log_now))
        current = float(_score(cost, total_log, objective))
        best_gain, best_move = -math.inf, None
        for move in moves:
            other = budgets + move
            can = (other >= table.low) & (other <= table.high)
            other = np.clip(other, table.low, table.high)
            new_log = total_log - log_now + table.log_table[rows, other]
            new_cost = cost - reach * (
                table.unit_cost * (attempts - table.attempts[rows, other])
                + (passed - table.passed[rows, other]) * after
            )
            gain = current - _score(new_cost, new_log, objective)
            # a decrement that costs nothing is taken (the smaller budget), an increment only
            # for a real gain: no move can undo the last one, so the search ends
            needed = 0.0 if move < 0 else 1e-15 * abs(current)
            ok = can & (new_log >= log_goal) & (gain >= needed) & ~((move > 0) & (gain <= 0))
            if np.any(ok):
                i = int(np.argmax(np.where(ok, gain, -np.inf)))
                if best_move is None or gain[i] > best_gain:
                    best_gain, best_move = float(gain[i]), (i, move)
        if best_move is None:
            return budgets
        budgets[best_move[0]] += best_move[1]
    return budgets


def _allocation_chain(scenario: Scenario, goal: float, objective: str) -> Plan:
    solved = _step_table(scenario).solve(goal, objective)
    if solved is None:
        return _allocation_infeasible(scenario, goal)
    budgets, details = solved
    planned = with_per_step(scenario, budgets)
    return make_plan("allocation", budgets, planned, goal, feasible=True, details=details)


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
    table = _step_table(scenario, math.hypot(model.task_sd, model.step_sd))
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
