"""Allocation on a chain of independent verified steps: the closed-form tables, the exact
dynamic programme over the Pareto front, the bucketed programme and its local search (see
:func:`relsim.plan.allocate.allocation`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from relsim import formulas
from relsim.plan import _common
from relsim.plan._common import BUCKETS, CONVERGED, SURROGATE_BUCKETS, budget_floor, log_goal_of
from relsim.scenario import Scenario, trial_model


def _score(cost: Any, log_success: Any, objective: str) -> Any:
    """The objective from a cost and a log-success (arrays or floats)."""
    if objective == "expected_cost":
        return cost
    with np.errstate(over="ignore", invalid="ignore"):
        return cost * np.exp(-np.asarray(log_success, dtype=float))


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


def step_table(scenario: Scenario, effect_sd: float = 0.0) -> _ChainTable:
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
