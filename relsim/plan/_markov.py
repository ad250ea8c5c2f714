r"""Allocation on scenarios without checkpoints or a task-wide budget: tables, search, bound.

Without checkpoints and a task-wide budget, a trial given its task effect :math:`z` is a
Markov chain over the confusion state :math:`c` (one state without confusion), and one
execution of step :math:`i` with budget :math:`b` is summarised by three tables, integrated
over the step effect (:mod:`relsim.exact`'s kernels):

- ``passed[b, z, c, c2]``: accepted within :math:`b` retries, leaving in state ``c2``;
- ``correct[b, z, c, c2]``: the same, with a correct result;
- ``attempts[b, z, c]``: the expected attempts.

A wrong result that is accepted taints the trial for good but changes nothing else, so the
mass of all trials follows ``passed`` and the mass of untainted ones ``correct``. With row
vectors :math:`A_i` (all trials reaching step :math:`i`, by state) and :math:`U_i`
(untainted ones) and column vectors :math:`\gamma_i` (expected cost from step :math:`i`) and
:math:`\sigma_i` (success from step :math:`i`, untainted)

.. math::

    A_{i+1} = A_i P_i,\quad U_{i+1} = U_i K_i,\quad
    \gamma_i = u_i a_i + P_i \gamma_{i+1},\quad \sigma_i = K_i \sigma_{i+1},

and for every :math:`i`, cost :math:`= \sum_{j<i} A_j u_j a_j + A_i \gamma_i` and success
:math:`= U_i \sigma_i` (weighted over the :math:`z` nodes). So every single-step change is
judged at once, and :func:`search` does coordinate descent with an exact line search per step.

:func:`solve` plans with these tables: coordinate descent from several starts, the
relaxation of :mod:`relsim.plan._relax` for a lower bound on every allocation (and, on short
chains, a branch and bound that proves the optimum), and :func:`trim` for the smallest
budgets that stay as good as claimed. Costs are held in units of the model's ``cost_unit``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from relsim.plan import _common
from relsim.scenario import Scenario, trial_model

#: Gauss-Hermite nodes for the task effect in the planner's tables: ``TASK_NODES_MIN`` plus
#: ``TASK_NODES_PER_SD`` per unit of ``task_sd * sqrt(steps)`` (a long chain's success is a
#: steeper function of the effect), at most ``TASK_NODES_MAX``.
TASK_NODES_MIN = 16
TASK_NODES_PER_SD = 8
TASK_NODES_MAX = 160
#: The table width: budgets where the slowest step has converged with p shifted down by this
#: many standard deviations of the random effects.
WIDTH_SDS = 2.0
#: Points of the grid of the untainted share held for each state in the relaxation (with
#: confusion; without it the shares at a step lie in a narrow band and 4 points do).
SHARE_POINTS = 24
#: Bytes of the relaxation's read positions kept between solves at different rewards.
READ_CACHE = 256 * 2**20
#: Objectives within this relative difference are ties (the smaller budgets win).
TIE = 1e-9
#: Allocations read off the relaxation as starts of the search, at rewards that move from the
#: incumbent's objective towards the bound's reward by these fractions (the first three on
#: long chains).
ROLLOUTS = (1.0, 0.0, 2.0, 0.5, 1.5, 0.25, 3.0)
#: Branch and bound: partial allocations x z nodes x states expanded at once.
CHUNK = 2_000_000
#: Branch and bound: the last steps are enumerated whole while they have at most this many
#: allocations (at least the last step is).
SUFFIXES = 20_000


@dataclass
class Tables:
    """Per-step tables of a Markov scenario for budgets ``0..width`` (see the module)."""

    passed: np.ndarray  # (steps, width + 1, z, C, C)
    correct: np.ndarray  # (steps, width + 1, z, C, C)
    attempts: np.ndarray  # (steps, width + 1, z, C)
    unit: np.ndarray  # (steps,) cost of one attempt (attempt + verify)
    weights: np.ndarray  # (z,) quadrature weights, summing to 1
    width: int  # the largest budget tabled
    unbounded: bool  # budgets above ``width`` exist (width < MAX_BUDGET)

    @property
    def steps(self) -> int:
        return self.passed.shape[0]

    @property
    def states(self) -> int:
        return self.passed.shape[-1]

    # ------------------------------------------------------------------ one design
    def passes(self, budgets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``passed``, ``correct`` and ``u * attempts`` of each step at ``budgets``."""
        rows = np.arange(self.steps)
        return (
            self.passed[rows, budgets],
            self.correct[rows, budgets],
            self.unit[:, None, None] * self.attempts[rows, budgets],
        )

    def forward(self, budgets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``A_i``, ``U_i`` (steps + 1, z, C) and the cost spent before each step (steps + 1,)."""
        passed, correct, spent = self.passes(budgets)
        n, z, c = self.steps, self.weights.size, self.states
        every = np.zeros((n + 1, z, c))
        clean = np.zeros((n + 1, z, c))
        every[0, :, 0] = clean[0, :, 0] = 1.0
        before = np.zeros(n + 1)
        for i in range(n):
            before[i + 1] = before[i] + self.weights @ np.sum(every[i] * spent[i], axis=1)
            every[i + 1] = _row_times(every[i], passed[i])
            clean[i + 1] = _row_times(clean[i], correct[i])
        return every, clean, before

    def backward(self, budgets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``gamma_i`` (cost from step i) and ``sigma_i`` (success from step i): (steps + 1, z, C)."""
        passed, correct, spent = self.passes(budgets)
        n, z, c = self.steps, self.weights.size, self.states
        cost = np.zeros((n + 1, z, c))
        success = np.zeros((n + 1, z, c))
        success[n] = 1.0
        for i in range(n - 1, -1, -1):
            cost[i] = spent[i] + _times_column(passed[i], cost[i + 1])
            success[i] = _times_column(correct[i], success[i + 1])
        return cost, success

    def outcome(self, budgets: np.ndarray) -> tuple[float, float]:
        """Expected cost and success of one allocation."""
        every, clean, before = self.forward(np.asarray(budgets))
        return float(before[-1]), float(self.weights @ clean[-1].sum(axis=1))

    def outcomes(self, designs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Expected cost and success of many allocations at once: ``designs`` (m, steps)."""
        designs = np.asarray(designs)
        m = designs.shape[0]
        z, c = self.weights.size, self.states
        every = np.zeros((m, z, c))
        every[:, :, 0] = 1.0
        clean = every.copy()
        cost = np.zeros(m)
        for i in range(self.steps):
            b = designs[:, i]
            spent = self.unit[i] * self.attempts[i, b]  # (m, z, C)
            cost += np.sum(every * spent, axis=2) @ self.weights
            every = np.einsum("mzc,mzcd->mzd", every, self.passed[i, b])
            clean = np.einsum("mzc,mzcd->mzd", clean, self.correct[i, b])
        return cost, clean.sum(axis=2) @ self.weights


def _row_times(row: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``row @ matrix`` per z node: (..., z, C) x (..., z, C, C)."""
    if row.shape[-1] == 1:
        return row * matrix[..., 0]
    return np.einsum("...c,...cd->...d", row, matrix)


def _times_column(matrix: np.ndarray, column: np.ndarray) -> np.ndarray:
    """``matrix @ column`` per z node: (..., z, C, C) x (..., z, C)."""
    if column.shape[-1] == 1:
        return matrix[..., 0] * column
    return np.einsum("...cd,...d->...c", matrix, column)


def applies(scenario: Scenario) -> bool:
    """The scenario's trial is a Markov chain over the confusion state (given z), tabled by
    this module (none of the tables of docs/model.md section 8 that change a trial)."""
    model = trial_model(scenario)
    return not (model.has_checkpoints or model.has_total or model.has_design_tables)


def table_width(scenario: Scenario) -> int:
    r"""The largest budget tabled: the least ``r`` with :math:`q^r \le 10^{-12}` at the
    slowest step, confused or not, with :math:`p` shifted down by ``WIDTH_SDS`` standard
    deviations of the random effects; at most ``MAX_BUDGET``. Larger budgets are left to the
    relaxation's last option (see :class:`Relaxation`)."""
    model = trial_model(scenario)
    spread = WIDTH_SDS * math.hypot(model.task_sd, model.step_sd)
    low = np.where(model.p_fixed, model.p, _expit(model.logit_p - spread))
    rates = [low, low * model.factor] if model.has_confusion else [low]
    q = np.concatenate([x * model.false_reject + (1 - x) * (1 - model.miss) for x in rates])
    q = q[q < 1.0]
    worst = float(np.max(q)) if q.size else 0.0
    if worst <= 0.0:
        return 1
    need = math.ceil(math.log(_common.CONVERGED) / math.log(worst))
    return int(min(_common.MAX_BUDGET, max(1, need)))


def task_nodes(task_sd: float, steps: int) -> int:
    """Gauss-Hermite nodes for the task effect (see ``TASK_NODES_MIN``)."""
    extra = math.ceil(TASK_NODES_PER_SD * task_sd * math.sqrt(steps))
    return int(min(TASK_NODES_MAX, TASK_NODES_MIN + extra))


def _expit(y: np.ndarray) -> np.ndarray:
    from relsim.scenario.compiled import expit_array

    return expit_array(y)


def build(scenario: Scenario, width: int | None = None) -> Tables:
    """The tables of ``scenario`` (a Markov one: see :func:`applies`) for budgets 0..width."""
    from relsim._quadrature import LIMIT
    from relsim.exact._chain import (
        DEFAULT_TOL,
        kernel_values,
        ChainModel,
        StepEffectGrid,
    )
    from relsim.plan._common import with_per_step
    from relsim.scenario.compiled import shift_array

    if width is None:
        width = table_width(scenario)
    n = scenario.steps
    design = with_per_step(scenario, [width] * n)
    model = ChainModel.from_trial(trial_model(design), DEFAULT_TOL)
    trial = model.trial
    if trial.task_sd > 0:
        nodes, weights = np.polynomial.hermite_e.hermegauss(task_nodes(trial.task_sd, n))
        # the engine's step-effect grids reach 8.5 sds; nodes beyond weigh under 1e-17
        inside = np.abs(nodes) <= LIMIT
        nodes, weights = nodes[inside], weights[inside]
        weights = weights / weights.sum()
        z_shift = trial.task_sd * nodes
    else:
        weights = np.ones(1)
        z_shift = np.zeros(1)
    c = model.n_conf
    z = z_shift.size
    passed = np.empty((n, width + 1, z, c, c))
    correct = np.empty((n, width + 1, z, c, c))
    attempts = np.empty((n, width + 1, z, c))
    grids: dict = {}
    bands: dict = {}
    done: dict[tuple, int] = {}
    counts = np.arange(1, width + 2)[:, None, None]
    for step in range(n):
        key = model.step_key(step)
        if key in done:
            first = done[key]
            passed[step], correct[step], attempts[step] = passed[first], correct[first], attempts[first]
            continue
        done[key] = step
        p = float(trial.p[step])
        if trial.step_sd == 0.0 or p <= 0.0 or p >= 1.0:
            logit = float(trial.logit_p[step])
            values = np.moveaxis(kernel_values(model, step, shift_array(p, logit, z_shift)), 2, 1)
        else:
            grids[key] = StepEffectGrid(model, step)
            values = grids[key].integrate(z_shift, bands)
        accept = values[..., : 2 * c * c].reshape(width + 1, z, c, 2 * c)
        exhaust = values[..., 2 * c * c :]  # (width + 1, z, C)
        good = np.cumsum(accept[..., :c], axis=0)
        bad = np.cumsum(accept[..., c:], axis=0)
        correct[step] = good
        passed[step] = good + bad
        attempts[step] = np.cumsum(accept.sum(axis=3) * counts, axis=0) + exhaust * counts
    unit = trial.cost_per_attempt / trial.cost_unit
    return Tables(
        passed=passed,
        correct=correct,
        attempts=attempts,
        unit=np.asarray(unit, dtype=float),
        weights=weights,
        width=width,
        unbounded=width < _common.MAX_BUDGET,
    )


# ------------------------------------------------------------------------------ search
def _value(cost: Any, success: Any, objective: str, reward: float) -> Any:
    """What the search minimises: cost per success, or ``cost - reward * success``."""
    if objective == "cost_per_success":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(success > 0, cost / np.maximum(success, 1e-300), np.inf)
    return cost - reward * success


def search(
    tables: Tables,
    start: np.ndarray,
    goal: float,
    objective: str,
    reward: float = 0.0,
    low: np.ndarray | None = None,
    high: np.ndarray | None = None,
    sweeps: int = 50,
) -> np.ndarray:
    """Coordinate descent from ``start``: each step's budget in turn set to the best in
    ``low..high`` given the others (success kept >= ``goal``), forward then backward, until a
    pair of sweeps changes nothing. ``objective`` ``"cost_per_success"`` minimises cost over
    success; anything else minimises ``cost - reward * success``."""
    n = tables.steps
    budgets = np.array(start, dtype=np.int64)
    low = np.zeros(n, dtype=np.int64) if low is None else np.asarray(low)
    high = np.full(n, tables.width, dtype=np.int64) if high is None else np.asarray(high)
    weights = tables.weights[:, None]
    last = math.inf
    for _ in range(sweeps):
        changed = False
        for forward in (True, False):
            every, clean, before = tables.forward(budgets)
            cost_to_go, success_to_go = tables.backward(budgets)
            for i in range(n) if forward else range(n - 1, -1, -1):
                options = np.arange(low[i], high[i] + 1)
                if options.size > 1:
                    spent = tables.unit[i] * tables.attempts[i, options]  # (b, z, C)
                    after = spent + _times_column(tables.passed[i, options], cost_to_go[i + 1])
                    cost = before[i] + np.einsum("zc,bzc->b", every[i] * weights, after)
                    good = _times_column(tables.correct[i, options], success_to_go[i + 1])
                    success = np.einsum("zc,bzc->b", clean[i] * weights, good)
                    now = int(budgets[i] - low[i])
                    feasible = success >= goal
                    if not feasible[now] and not feasible.any():  # short of the goal: climb
                        best = int(np.argmax(success))
                        if success[best] > success[now]:
                            budgets[i] = options[best]
                            changed = True
                        value = None
                    else:
                        # a start short of the goal takes any budget that reaches it; the
                        # current budget stays allowed (its success may round below the goal)
                        allowed = feasible | ((options == budgets[i]) & bool(feasible[now]))
                        value = np.where(allowed, _value(cost, success, objective, reward), np.inf)
                        best = int(np.argmin(value))
                        if not feasible[now]:
                            budgets[i] = options[best]
                            changed = True
                            value = None
                    # a change must gain more than rounding, except a decrement that costs nothing
                    if value is not None and (
                        value[best] < value[now] - 1e-13 * abs(value[now])
                        or (best < now and value[best] <= value[now])
                    ):
                        budgets[i] = options[best]
                        changed = True
                b = budgets[i]
                if forward:  # the mass reaching the next step, with this step's budget now
                    spent_now = tables.unit[i] * tables.attempts[i, b]
                    before[i + 1] = before[i] + float(tables.weights @ np.sum(every[i] * spent_now, axis=1))
                    every[i + 1] = _row_times(every[i], tables.passed[i, b])
                    clean[i + 1] = _row_times(clean[i], tables.correct[i, b])
                else:  # what follows the previous step, with this step's budget now
                    cost_to_go[i] = tables.unit[i] * tables.attempts[i, b] + _times_column(
                        tables.passed[i, b], cost_to_go[i + 1]
                    )
                    success_to_go[i] = _times_column(tables.correct[i, b], success_to_go[i + 1])
        cost, success = tables.outcome(budgets)
        reached = float(_value(np.float64(cost), np.float64(success), objective, reward))
        # stop when a pair of sweeps changes nothing, or gains only rounding errors (a
        # design on the goal can trade budgets back and forth at that level)
        if not changed or (success >= goal and reached >= last - 1e-12 * abs(last)):
            break
        last = reached if success >= goal else math.inf
    return budgets


# ------------------------------------------------------------------------- trimming
def trim(
    tables: Tables, budgets: np.ndarray, goal: float, objective: str, limit: float
) -> np.ndarray:
    """The budgets lowered, a step at a time (forward, then backward, until nothing moves),
    each to the least that keeps the objective <= ``limit`` and success >= ``goal``."""
    budgets = np.array(budgets, dtype=np.int64)
    weights = tables.weights[:, None]
    n = tables.steps
    for _ in range(20):
        changed = False
        for forward in (True, False):
            every, clean, before = tables.forward(budgets)
            cost_to_go, success_to_go = tables.backward(budgets)
            for i in range(n) if forward else range(n - 1, -1, -1):
                if budgets[i] > 0:
                    options = np.arange(budgets[i] + 1)
                    spent = tables.unit[i] * tables.attempts[i, options]
                    after = spent + _times_column(tables.passed[i, options], cost_to_go[i + 1])
                    cost = before[i] + np.einsum("zc,bzc->b", every[i] * weights, after)
                    good = _times_column(tables.correct[i, options], success_to_go[i + 1])
                    success = np.einsum("zc,bzc->b", clean[i] * weights, good)
                    value = _value(cost, success, objective, 0.0)
                    ok = (value <= limit) & (success >= goal)
                    ok[-1] = True
                    least = int(np.argmax(ok))
                    if least < budgets[i]:
                        budgets[i] = least
                        changed = True
                b = budgets[i]
                if forward:
                    spent_now = tables.unit[i] * tables.attempts[i, b]
                    before[i + 1] = before[i] + float(tables.weights @ np.sum(every[i] * spent_now, axis=1))
                    every[i + 1] = _row_times(every[i], tables.passed[i, b])
                    clean[i + 1] = _row_times(clean[i], tables.correct[i, b])
                else:
                    cost_to_go[i] = tables.unit[i] * tables.attempts[i, b] + _times_column(
                        tables.passed[i, b], cost_to_go[i + 1]
                    )
                    success_to_go[i] = _times_column(tables.correct[i, b], success_to_go[i + 1])
        if not changed:
            break
    return budgets


# ------------------------------------------------------------------------- the planner
def memory(scenario: Scenario) -> float:
    """Bytes the tables and the relaxation of :func:`solve` take (an estimate)."""
    model = trial_model(scenario)
    width = table_width(scenario)
    z = 1
    if model.task_sd > 0:
        z = task_nodes(model.task_sd, scenario.steps)
    c = 2 if model.has_confusion else 1
    points = 4 if c == 1 else SHARE_POINTS
    cells = scenario.steps * (width + 1) * z * c * c
    return 8.0 * (3 * cells + 2 * scenario.steps * z * c * points) + min(READ_CACHE, 24.0 * cells * points)


def solve(scenario: Scenario, goal: float, objective: str) -> tuple[np.ndarray, dict[str, Any]] | None:
    """The allocation of a Markov scenario (:func:`applies`) for ``goal``, and the method
    notes; None when even the largest budgets tabled fall short of the goal.

    Candidates come from coordinate descent (:func:`search`) started at the largest
    budgets, at the least uniform budget that reaches the goal and at allocations read off
    the relaxation (:func:`rollout`) at the rewards of its bound; the best is judged against
    :func:`lower_bound`. Up to ``BRANCH_AND_BOUND_STEPS`` steps, :func:`branch_and_bound`
    then proves the optimum (within ``TIE``) among budgets up to the table width. Last, the
    budgets are lowered (:func:`trim`) as far as the objective stays within ``TIE`` of the
    optimum, or, when only a bound is known and it is within ``ALLOCATION_GAP``, within
    ``ALLOCATION_GAP`` of the bound."""
    tables = build(scenario)
    n = tables.steps
    top = np.full(n, tables.width, dtype=np.int64)
    _, most = tables.outcome(top)
    if most < goal:
        return None

    def score(budgets: np.ndarray) -> float:
        cost, success = tables.outcome(budgets)
        return float(_value(np.float64(cost), np.float64(success), objective, 0.0))

    candidates = [search(tables, top, goal, objective)]
    low, high = 0, tables.width  # the least uniform budget that reaches the goal
    while high - low > 1:
        middle = (low + high) // 2
        if tables.outcome(np.full(n, middle))[1] >= goal:
            high = middle
        else:
            low = middle
    uniform = np.full(n, high if tables.outcome(np.full(n, low))[1] < goal else low)
    candidates.append(search(tables, uniform, goal, objective))
    best = min(candidates, key=score)
    from relsim.plan._relax import Relaxation, branch_and_bound, lower_bound, rollout

    relaxation = Relaxation(tables)
    bound, reward = lower_bound(relaxation, goal, objective, score(best))
    lam = score(best) if objective == "cost_per_success" else 0.0
    # allocations read off the relaxation at rewards from the incumbent's to past the bound's
    # (coordinate descent stalls in different places from different starts)
    shares = ROLLOUTS if n <= _common.BRANCH_AND_BOUND_STEPS else ROLLOUTS[:3]
    for at in sorted({lam + (reward - lam) * f for f in shares}):
        relaxation.solve(max(at, 0.0))
        candidates.append(search(tables, rollout(relaxation), goal, objective))
    best = min(candidates, key=score)
    proven = False
    if n <= _common.BRANCH_AND_BOUND_STEPS:
        lam = score(best) if objective == "cost_per_success" else 0.0
        # rewards around the bound's: different partial allocations are cut at different ones
        rewards = [lam] + [lam + (reward - lam) * f for f in (0.5, 1.0, 1.5, 2.5)]
        exact = branch_and_bound(
            tables, goal, objective, best, rewards, _common.BRANCH_AND_BOUND_WORK
        )
        if exact is not None:
            best, proven = exact, True
    value = score(best)
    bound = min(bound, value)
    relative = (value - bound) / abs(value) if value else 0.0
    if proven:
        limit = value * (1 + TIE)
        method = "exact (branch and bound over the budgets up to the table width)"
    elif relative <= _common.ALLOCATION_GAP:
        limit = max(value * (1 + TIE), bound * (1 + _common.ALLOCATION_GAP))
        method = "coordinate search, within a proven bound"
    else:
        limit = value * (1 + TIE)
        method = "coordinate search (a heuristic), with a proven bound"
    best = trim(tables, best, goal, objective, limit)
    details: dict[str, Any] = {"method": method, "width": tables.width}
    if proven:
        details["gap"] = 0.0
    else:  # in the scenario's cost units (the tables hold costs in units of cost_unit)
        details["lower_bound"] = bound * trial_model(scenario).cost_unit
    return best, details
