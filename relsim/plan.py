"""Planning: what must change for a scenario to reach a reliability target, and at what cost.

Each planner takes any :class:`~relsim.scenario.Scenario`, varies one design quantity, judges
every candidate with the exact engine (:func:`relsim.evaluate`) and returns a :class:`Plan`:

============  ===========================================================================
``for``       the quantity planned
============  ===========================================================================
retries       the least uniform per-step retry budget ``r`` (the task-wide cap is kept)
total         the least task-wide budget ``B`` (the per-step cap is kept; none if unset)
allocation    per-step budgets ``r_i`` of least expected cost
verifier      the largest ``miss`` (and, separately, the largest ``false_reject``)
p             the least uniform per-attempt success ``p``
checkpoints   the spacing ``every = k`` of least expected cost
============  ===========================================================================

A plan is feasible when the exact success is at least ``target - 1e-12`` (the slack absorbs
rounding only). When no value reaches the target, the plan says so (``feasible=False``), gives
the ceiling (the best success the planned quantity can buy), the constraint that binds and the
reason in words, and its ``value`` is the nearest design: the one that comes closest.

A scenario with no correlation, no checkpoints and no task-wide budget is a chain of
independent verified steps; the searches then use the closed form
:func:`relsim.formulas.verified_chain` instead of the engine (they agree to rounding), and the
final numbers of every plan come from the engine.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from relsim import formulas
from relsim.results import Outcome, _finite_or_none, cost_per_success
from relsim.scenario import Correlation, Retries, Scenario, Verifier

__all__ = [
    "QUANTITIES",
    "Plan",
    "allocation",
    "checkpoints",
    "p",
    "retries",
    "solve",
    "total",
    "verifier",
]

#: The quantities a plan can be made for, in the order of ``relsim solve --for``.
QUANTITIES = ("retries", "total", "allocation", "verifier", "p", "checkpoints")

#: Slack on ``success >= target``: rounding only, far below the engine's accuracy (1e-9).
TOLERANCE = 1e-12
#: Success that changes by less than this over a doubling of a budget has converged.
CONVERGED = 1e-12
#: The largest per-step retry budget any search tries.
MAX_BUDGET = 1_000
#: The largest task-wide retry budget any search tries.
MAX_TOTAL = 10_000
#: An infeasible budget plan reports the least budget within this of the ceiling.
NEAR_CEILING = 1e-6
#: Continuous searches (p, miss, false_reject) stop when the bracket is this narrow.
BISECTION_WIDTH = 1e-9
#: ``miss`` with checkpoints (where success need not fall with ``miss``): first a scan of
#: this many equal intervals of [0, 1].
SCAN_INTERVALS = 16
#: Allocation: an exact Pareto front larger than this switches to the bucketed method.
MAX_FRONT = 20_000
#: Allocation: buckets of log-success in the bucketed dynamic programme ...
BUCKETS = 65_536
#: ... and in the surrogate solves of the general search (run many times).
SURROGATE_BUCKETS = 8_192
#: Allocation beyond the chain: branch and bound up to this many steps ...
BRANCH_AND_BOUND_STEPS = 8
#: ... and this many engine evaluations (beyond, the heuristic's answer stands).
BRANCH_AND_BOUND_EVALUATIONS = 600
#: Allocation beyond the chain: single-step decrements tried after the search.
POLISH_TRIALS = 8
#: Allocation beyond the chain: bisections of the surrogate's target.
SURROGATE_BISECTIONS = 6
#: Checkpoints: every spacing is tried up to this many steps; beyond, a grid and a local walk.
EXHAUSTIVE_CHECKPOINTS = 64


@dataclass(frozen=True)
class Plan:
    """A planned design and what it leads to.

    Attributes
    ----------
    for_ : str
        The quantity planned, one of :data:`QUANTITIES` (``"for"`` in JSON).
    value : int, float, tuple of int or None
        The chosen value: a budget (int), a probability (float) or, for ``allocation``, one
        budget per step (a tuple; a list in JSON). When infeasible, the nearest design.
    success, expected_cost : float
        The exact outcome of :attr:`scenario`.
    feasible : bool
        Whether ``success >= target`` (to ``TOLERANCE``).
    target : float
        The target planned for.
    scenario : Scenario
        The planned scenario: the input with :attr:`value` applied.
    ceiling : float or None
        When infeasible: the best success the planned quantity can reach.
    binding : str or None
        When infeasible: the scenario key whose value caps success (``"verifier.miss"``,
        ``"retries.total"``, ``"correlation"``, ``"checkpoints.rollbacks"``, ...).
    reason : str or None
        When infeasible: why, in words, with the ceiling and where possible the nearest design
        that does reach the target.
    details : mapping
        Method notes: for ``allocation`` the method and the gap to the optimum where a bound is
        known; for ``verifier`` the separate ``false_reject`` answer.
    """

    for_: str
    value: int | float | tuple[int, ...] | None
    success: float
    expected_cost: float
    feasible: bool
    target: float
    scenario: Scenario = field(repr=False)
    ceiling: float | None = None
    binding: str | None = None
    reason: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def cost_per_success(self) -> float:
        """``expected_cost / success``; infinite when success is 0."""
        return cost_per_success(self.expected_cost, self.success)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``for``, ``value``, ``success``, ``expected_cost``, ``cost_per_success``,
        ``feasible``, ``target``; ``ceiling``, ``binding`` and ``reason`` when infeasible;
        ``details`` when there are any (a copy: the planners fill them with plain Python
        values). Infinities become None."""
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        out: dict[str, Any] = {
            "for": self.for_,
            "value": value,
            "success": _finite_or_none(self.success),
            "expected_cost": _finite_or_none(self.expected_cost),
            "cost_per_success": _finite_or_none(self.cost_per_success),
            "feasible": self.feasible,
            "target": self.target,
        }
        if not self.feasible:
            out["ceiling"] = _finite_or_none(self.ceiling)
            out["binding"] = self.binding
            out["reason"] = self.reason
        if self.details:
            out["details"] = copy.deepcopy(dict(self.details))
        return out


# =============================================================================== the planners
def solve(scenario: Scenario, for_: str, target: float | None = None) -> Plan:
    """Plan ``for_`` (one of :data:`QUANTITIES`) for ``scenario``.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}})
    >>> solve(s, "retries", target=0.95).value
    2
    """
    planners: dict[str, Callable[..., Plan]] = {
        "retries": retries,
        "total": total,
        "allocation": allocation,
        "verifier": verifier,
        "p": p,
        "checkpoints": checkpoints,
    }
    if for_ not in planners:
        raise ValueError(f"for: must be one of {', '.join(QUANTITIES)}, got {for_!r}")
    return planners[for_](scenario, target)


def retries(scenario: Scenario, target: float | None = None) -> Plan:
    r"""The least uniform per-step retry budget ``r`` that reaches ``target``.

    Every step gets ``per_step = r``; a task-wide ``total`` in the scenario is kept. The search
    relies on success being non-decreasing in ``r`` (a retry replaces a certain detected failure
    by a chance; budgets are never refunded, so nothing else changes). It doubles ``r`` until
    the target is met, then bisects. For a chain of independent steps

    .. math:: \text{success}(r) = \prod_i a_i S_{r,i}, \qquad
              S_{r,i} = \frac{1 - q_i^{r+1}}{1 - q_i},

    which tends to :math:`\prod_i a_i/(a_i+w_i)`. The upper search limit: doubling stops when
    success improves by less than ``1e-12`` over a doubling once ``r`` is past the budget at
    which the slowest step (largest :math:`q < 1`, confused or not) has
    :math:`q^{r+1} \le 10^{-12}`, and at ``MAX_BUDGET`` in any case (then, if success is still
    rising, the plan blames the ``"search limit"``). Infeasible: the value is the least ``r``
    within ``1e-6`` of the ceiling.

    Examples
    --------
    The lesson's exercise (25 steps, ``p = 0.9``, target 0.95): two retries with a perfect
    verifier; with a verifier that misses 10% of wrong results, no budget is enough.

    >>> s = Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}})
    >>> plan = retries(s, 0.95)
    >>> plan.value, round(plan.success, 6)
    (2, 0.975298)
    >>> plan = retries(Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}}), 0.95)
    >>> plan.feasible, round(plan.ceiling, 6), plan.binding
    (False, 0.758626, 'verifier.miss')
    """
    goal = _goal(scenario, target)
    return _budget_plan("retries", scenario, goal, _with_per_step)


def total(scenario: Scenario, target: float | None = None) -> Plan:
    r"""The least task-wide retry budget ``total`` that reaches ``target``.

    The scenario's per-step cap is kept (none when it sets none: then only the task-wide budget
    limits retries). Relies on success being non-decreasing in ``total`` (the same argument as
    :func:`retries`) and searches the same way. With a per-step cap ``r_i`` the search stops at
    :math:`\sum_i r_i` (a larger budget is never spent); without one, the limit is as in
    :func:`retries` with ``MAX_TOTAL`` in place of ``MAX_BUDGET``. For identical independent
    steps and no per-step cap,

    .. math:: \text{success}(B) = a^n \sum_{j=0}^{B} \binom{n-1+j}{j} q^j.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}})
    >>> plan = total(s, 0.95)  # 0.9**25 * sum_{j<=6} C(24+j, j) 0.1**j = 0.969437
    >>> plan.value, round(plan.success, 6)
    (6, 0.969437)
    """
    goal = _goal(scenario, target)
    return _budget_plan("total", scenario, goal, _with_total)


def allocation(scenario: Scenario, target: float | None = None) -> Plan:
    r"""Per-step retry budgets :math:`r_i` of least expected cost with success >= ``target``.

    For a chain of independent steps (no correlation, no checkpoints, no task-wide budget)

    .. math:: \text{success} = \prod_i s_i(r_i), \qquad
              \text{cost} = \sum_i c_i S_i(r_i) \prod_{j<i} e_j(r_j),

    with :math:`s_i = a_i S_i`, :math:`e_i = 1 - q_i^{r_i+1}` (the step is passed) and
    :math:`c_i` the attempt plus verify cost. Read from the last step back, a partial plan is a
    pair (success, cost) of the suffix, and prepending a step maps pairs monotonically, so a
    dominated pair can never become optimal: a dynamic programme over the Pareto front is
    exact (it equals brute force). First the same programme runs on ``BUCKETS`` buckets of
    log-success, rounding each pair's success down (every answer is feasible), and greedy
    decrements follow while the exact success allows: its cost bounds the exact front by
    branch and bound. When the front still outgrows ``MAX_FRONT`` pairs, the bucketed answer
    stands and a second run rounding success up gives a valid lower bound on the optimum.
    ``details`` reports the method, the bound and the gap. Budgets are searched from the
    least ``r_i`` the target allows to the one within ``1e-12`` of the step's ceiling.

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
    decrements follow, the largest surrogate saving first. No bound on the gap is known for
    that heuristic. Up to ``BRANCH_AND_BOUND_STEPS`` steps, a branch and bound then searches
    the box of budgets up to the surrogate's per-step limits (or the heuristic's, if larger;
    never above a task-wide budget) with the heuristic as incumbent: a partial allocation
    whose cost with the remaining steps at 0 already exceeds the incumbent, or whose success
    with them at their limits falls short, is cut; the last step takes the least budget that
    reaches the target. Finished within ``BRANCH_AND_BOUND_EVALUATIONS`` evaluations, the
    answer is exact in that box (``gap`` 0).

    Whenever an answer is not proven optimal, it is compared with the least uniform budget
    (:func:`retries`) and the cheaper one is returned.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 3, "p": [0.9, 0.6, 0.99], "verifier": {"miss": 0.0}})
    >>> allocation(s, 0.95).value  # brute force agrees; the 0.99 step needs no retry
    (1, 3, 0)
    """
    goal = _goal(scenario, target)
    if scenario.verifier is None:
        return _no_verifier_plan("allocation", scenario, goal, (0,) * scenario.steps)
    if _is_chain(scenario):
        plan = _allocation_chain(scenario, goal)
    else:
        plan = _allocation_general(scenario, goal)
    if plan.feasible and plan.details.get("gap") != 0.0:
        uniform = retries(scenario, goal)  # never worse than the best uniform budget
        if uniform.feasible and uniform.expected_cost < plan.expected_cost:
            budgets = (int(uniform.value),) * scenario.steps  # type: ignore[arg-type]
            method = "uniform budget (cheaper than the search's answer)"
            return replace(
                plan,
                value=budgets,
                success=uniform.success,
                expected_cost=uniform.expected_cost,
                scenario=uniform.scenario,
                details={**plan.details, "method": method},
            )
    return plan


def verifier(scenario: Scenario, target: float | None = None) -> Plan:
    r"""The largest ``miss`` at which ``target`` is reachable with the scenario's budgets; in
    ``details["false_reject"]``, separately, the largest ``false_reject``.

    Each is uniform across steps and the other rate is kept. A scenario without a verifier
    gets one (``false_reject = 0``) and no retries. The search relies on success being
    non-increasing in each rate: rejecting a correct result never beats accepting it, and
    without checkpoints an accepted wrong result is a certain failure, never better than a
    rejection. For a verified step the success

    .. math:: a S_r = p(1-f)\,\frac{1 - q^{r+1}}{1 - q}, \qquad q = pf + (1-p)(1-m),

    falls as either rate grows. The bracket [0, 1] is closed to ``1e-9`` by regula falsi.
    With checkpoints and scarce retries an accepted wrong result may be caught and rolled back
    while a rejected one ends the trial, so success can *rise* with ``miss``: there the
    ``miss`` search first scans [0, 1] in ``SCAN_INTERVALS`` intervals and closes the last
    feasible one (exact when monotone, and blind only to features narrower than 1/16).

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
    ...                         "retries": {"per_step": 3}})
    >>> plan = verifier(s, 0.95)
    >>> round(plan.value, 6), plan.feasible  # solves (0.9 S_3)**25 = 0.95, q = 0.1 (1-m)
    (0.017645, True)
    """
    goal = _goal(scenario, target)
    miss_plan = _rate_plan(scenario, goal, "miss")
    reject_plan = _rate_plan(scenario, goal, "false_reject")
    extra = {
        "false_reject": {
            "value": reject_plan.value,
            "success": reject_plan.success,
            "feasible": reject_plan.feasible,
            "ceiling": reject_plan.ceiling,
            "reason": reject_plan.reason,
        }
    }
    return replace(miss_plan, details={**miss_plan.details, **extra})


def p(scenario: Scenario, target: float | None = None) -> Plan:
    r"""The least per-attempt success ``p`` (the same at every step) that reaches ``target``
    with the scenario's verifier and budgets.

    Relies on success being non-decreasing in ``p`` (a correct attempt is never worse than a
    wrong one: it is accepted at least as often, is never caught at a checkpoint and never
    confuses the agent), so [0, 1] brackets the answer and regula falsi closes it to
    ``1e-9``, reporting the feasible end. Infeasible when even ``p = 1`` falls short (false
    rejections or false alarms spending the budgets). Without a verifier the answer is
    :math:`T^{1/n}`; with a perfect one and ``r`` retries,
    :math:`1 - (1 - T^{1/n})^{1/(r+1)}`.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 20, "p": 0.9})
    >>> round(p(s, 0.9).value, 6)  # 0.9 ** (1/20): no verifier, success is p ** steps
    0.994746
    """
    goal = _goal(scenario, target)
    return _probability_search(
        "p",
        scenario,
        goal,
        lambda value: replace(scenario, p=value),
        increasing=True,
    )


def checkpoints(scenario: Scenario, target: float | None = None) -> Plan:
    r"""The checkpoint spacing ``every = k`` of least expected cost with success >= target.

    The scenario must have a ``[checkpoints]`` table (its ``detect``, ``false_alarm``,
    ``rollbacks``, ``at`` and ``final`` are kept). Every ``k`` in ``1..steps`` is tried up to
    ``EXHAUSTIVE_CHECKPOINTS`` steps (exact); longer chains try a geometric grid of 16
    spacings, then walk to the best neighbour while it improves, relying on the expected cost
    being unimodal in ``k`` there. Ties go to the larger ``k``. With no verifier and plentiful,
    free rollbacks, each segment of ``k`` steps is redone until clean, so per step

    .. math:: \text{cost}(k) \approx \Bigl(1 + \frac{C}{k}\Bigr) p^{-k},
              \qquad k^* \approx \sqrt{C/(1-p)},

    the discrete analogue of Young's interval for a fault seen only at the checkpoint
    (``C``: checkpoint cost in attempt units). :func:`relsim.formulas.checkpoint_interval`
    gives Young's :math:`\sqrt{2C/(1-p)}`, for a fault seen when it happens (half a segment
    lost on average); in this model the whole segment is redone, and the optimum is about
    :math:`1/\sqrt{2}` of it.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 20, "p": 0.98, "checkpoints": {"every": 1,
    ...     "final": True, "rollbacks": 4}, "cost": {"checkpoint": 2.0}})
    >>> checkpoints(s, 0.9).value  # sqrt(2 / 0.02) = 10
    10
    """
    goal = _goal(scenario, target)
    if scenario.checkpoints is None:
        raise ValueError(
            "checkpoints: the scenario has no [checkpoints] table; give one with detect, "
            "false_alarm and rollbacks (every is what is planned)"
        )
    n = scenario.steps
    results: dict[int, Outcome] = {}

    def outcome(k: int) -> Outcome:
        if k not in results:
            results[k] = _evaluate(_with_every(scenario, k))
        return results[k]

    if n <= EXHAUSTIVE_CHECKPOINTS:
        candidates = list(range(1, n + 1))
    else:
        grid = {int(round(x)) for x in np.geomspace(1, n, 16)} | {n}
        candidates = sorted(k for k in grid if 1 <= k <= n)
    for k in candidates:
        outcome(k)

    def best_of() -> int | None:
        feasible_ks = [k for k, o in results.items() if o.success >= goal - TOLERANCE]
        if not feasible_ks:
            return None
        return min(feasible_ks, key=lambda k: (results[k].expected_cost, -k))

    best = best_of()
    if best is not None and n > EXHAUSTIVE_CHECKPOINTS:
        while True:  # walk to the best neighbour until none improves
            for k in (best - 1, best + 1):
                if 1 <= k <= n:
                    outcome(k)
            new_best = best_of()
            if new_best == best:
                break
            best = new_best
    if best is not None:
        return _plan("checkpoints", best, _with_every(scenario, best), goal, feasible=True)
    top = max(results, key=lambda k: (results[k].success, k))
    ceiling = results[top].success

    def ceiling_of(candidate: Scenario) -> float:
        return _evaluate(_with_every(candidate, top)).success

    binding, reason = _diagnose(
        scenario, goal, ceiling, "checkpoints", ceiling_of, skip={"checkpoints.every"}
    )
    return _plan(
        "checkpoints",
        top,
        _with_every(scenario, top),
        goal,
        feasible=False,
        ceiling=ceiling,
        binding=binding,
        reason=reason,
    )


# =========================================================================== shared machinery
def _goal(scenario: Scenario, target: float | None) -> float:
    if not isinstance(scenario, Scenario):
        raise ValueError(f"scenario: must be a Scenario, got {type(scenario).__name__}")
    if target is None:
        target = scenario.target
    if target is None:
        raise ValueError("target: give a target in (0, 1]; the scenario sets none")
    if isinstance(target, bool) or not isinstance(target, (int, float, np.floating)):
        raise ValueError(f"target: must be a number in (0, 1], got {target!r}")
    target = float(target)
    if not 0.0 < target <= 1.0:
        raise ValueError(f"target: must be in (0, 1], got {target!r}")
    return target


def _evaluate(scenario: Scenario) -> Outcome:
    from relsim.exact import evaluate

    return evaluate(scenario)


def _is_chain(scenario: Scenario) -> bool:
    """True when the scenario is a chain of independent verified steps (the closed form)."""
    return (
        scenario.checkpoints is None
        and scenario.total_retries is None
        and not scenario.has_random_effects
        and scenario.correlation.confusion is None
    )


def _success(scenario: Scenario) -> float:
    """Exact success: the closed-form chain where it applies, else the engine."""
    if _is_chain(scenario):
        chain = formulas.verified_chain(
            scenario.p_array,
            scenario.per_step_array,
            scenario.miss_array,
            scenario.false_reject_array,
        )
        return float(chain.success)
    return float(_evaluate(scenario).success)


def _plan(
    for_: str,
    value: Any,
    planned: Scenario,
    goal: float,
    *,
    feasible: bool,
    ceiling: float | None = None,
    binding: str | None = None,
    reason: str | None = None,
    details: Mapping[str, Any] | None = None,
) -> Plan:
    outcome = _evaluate(planned)
    if isinstance(value, (list, tuple, np.ndarray)):
        value = tuple(int(v) for v in value)
    elif isinstance(value, (bool, np.bool_)):
        raise TypeError("a plan value is a number or a list")
    elif isinstance(value, (int, np.integer)):
        value = int(value)
    elif value is not None:
        value = float(value)
    return Plan(
        for_=for_,
        value=value,
        success=float(outcome.success),
        expected_cost=float(outcome.expected_cost),
        feasible=feasible,
        target=goal,
        scenario=planned,
        ceiling=None if ceiling is None else float(ceiling),
        binding=binding,
        reason=reason,
        details=dict(details or {}),
    )


# ------------------------------------------------------------------ scenario transformations
def _per_step_cap(scenario: Scenario) -> int | tuple[int, ...] | None:
    """The per-step budget the user set (None when only a total, or no retries, is set)."""
    return None if scenario.retries is None else scenario.retries.per_step


def _with_per_step(scenario: Scenario, budget: int | Sequence[int]) -> Scenario:
    if not isinstance(budget, (int, np.integer)):
        budget = tuple(int(b) for b in budget)
    else:
        budget = int(budget)
    return replace(scenario, retries=Retries(per_step=budget, total=scenario.total_retries))


def _with_total(scenario: Scenario, budget: int | None) -> Scenario:
    per_step = _per_step_cap(scenario)
    if budget is None and per_step is None:
        per_step = _budget_floor(scenario)
    return replace(scenario, retries=Retries(per_step=per_step, total=budget))


def _with_rate(scenario: Scenario, key: str, value: float) -> Scenario:
    current = scenario.verifier or Verifier()
    return replace(scenario, verifier=replace(current, **{key: value}))


def _with_every(scenario: Scenario, every: int) -> Scenario:
    assert scenario.checkpoints is not None
    return replace(scenario, checkpoints=replace(scenario.checkpoints, every=int(every)))


def _budget_floor(scenario: Scenario) -> int:
    r"""Least ``r >= 1`` with :math:`q^r \le 10^{-12}` at the slowest step (confused or not;
    a state that can never pass, :math:`q = 1`, is left out: it never converges and never
    contributes): past it a chain's success no longer moves; capped at ``MAX_BUDGET``."""
    prob = scenario.p_array
    miss = scenario.miss_array
    reject = scenario.false_reject_array
    rates = [prob]
    confusion = scenario.correlation.confusion
    if confusion is not None:
        rates.append(prob * confusion.factor)
    q = np.concatenate([x * reject + (1 - x) * (1 - miss) for x in rates])
    q = q[q < 1.0]
    q_max = float(np.max(q)) if q.size else 0.0
    if q_max <= 0.0:
        return 1
    return int(min(MAX_BUDGET, max(1, math.ceil(math.log(CONVERGED) / math.log(q_max)))))


# ------------------------------------------------------------------------------ budget search
def _least_budget(
    success_at: Callable[[int], float], goal: float, floor: int, limit: int
) -> tuple[int | None, int, Callable[[int], float]]:
    """Least ``b`` in ``0..limit`` with ``success_at(b) >= goal``, for a non-decreasing
    ``success_at``: doubling, then bisection. Gives up (None) at ``limit``, or once past
    ``floor`` when a doubling improves success by less than ``CONVERGED``. Returns the answer,
    the largest budget tried and the memoised ``success_at``."""
    values: dict[int, float] = {}

    def at(budget: int) -> float:
        if budget not in values:
            values[budget] = success_at(budget)
        return values[budget]

    reached = goal - TOLERANCE
    if at(0) >= reached:
        return 0, 0, at
    low, high = 0, 1
    floor = min(floor, limit)
    while at(high) < reached:
        if high >= limit or (high >= floor and at(high) - at(low) <= CONVERGED):
            return None, high, at
        low, high = high, min(2 * high, limit)
    while high - low > 1:
        middle = (low + high) // 2
        if at(middle) >= reached:
            high = middle
        else:
            low = middle
    return high, high, at


def _least_reaching(at: Callable[[int], float], level: float, high: int) -> int:
    """Least ``b`` in ``0..high`` with ``at(b) >= level``, ``at`` non-decreasing."""
    low = -1
    while high - low > 1:
        middle = (low + high) // 2
        if at(middle) >= level:
            high = middle
        else:
            low = middle
    return high


def _budget_plan(
    for_: str, scenario: Scenario, goal: float, apply: Callable[[Scenario, int], Scenario]
) -> Plan:
    """Shared by :func:`retries` and :func:`total`."""
    if scenario.verifier is None:
        return _no_verifier_plan(for_, scenario, goal, 0)
    floor = _budget_floor(scenario)
    limit = MAX_BUDGET if for_ == "retries" else MAX_TOTAL
    if for_ == "total" and _per_step_cap(scenario) is not None:
        limit = min(limit, int(np.sum(scenario.per_step_array)))
        floor = limit

    def success_at(budget: int) -> float:
        return _success(apply(scenario, budget))

    answer, stop, at = _least_budget(success_at, goal, floor, limit)
    if answer is not None:
        return _plan(for_, answer, apply(scenario, answer), goal, feasible=True)
    ceiling = at(stop)
    nearest = _least_reaching(at, ceiling - NEAR_CEILING, stop)
    rising = stop >= limit and ceiling - at(stop // 2) > CONVERGED
    if rising and not (for_ == "total" and _per_step_cap(scenario) is not None):
        reason = (
            f"no {for_} budget up to the search limit {limit} reaches the target {goal:g}: "
            f"success there is {ceiling:.6f} and still rising; the limit binds, not the model"
        )
        return _plan(
            for_,
            stop,
            apply(scenario, stop),
            goal,
            feasible=False,
            ceiling=ceiling,
            binding="search limit",
            reason=reason,
        )

    def ceiling_of(candidate: Scenario) -> float:
        budget = stop if for_ == "total" else max(stop, _budget_floor(candidate))
        if candidate.verifier is None:
            return _success(candidate)
        return _success(apply(candidate, min(2 * budget, limit)))

    binding, reason = _diagnose(scenario, goal, ceiling, for_, ceiling_of, skip={f"retries.{for_}"})
    return _plan(
        for_,
        nearest,
        apply(scenario, nearest),
        goal,
        feasible=False,
        ceiling=ceiling,
        binding=binding,
        reason=reason,
    )


def _no_verifier_plan(for_: str, scenario: Scenario, goal: float, value: Any) -> Plan:
    """Retries need a verifier: without one, the plan is feasible only if no retry is needed.

    A step that never succeeds (``p = 0``) is blamed first: no verifier can help it."""
    success = _success(scenario)
    if success >= goal - TOLERANCE:
        return _plan(for_, value, scenario, goal, feasible=True)
    never = _never_succeeds(scenario, goal, success)
    if never is not None:
        binding, reason = never
    else:
        perfect = _with_perfect_verifier(scenario)
        assert perfect.retries is not None
        binding = "verifier"
        reason = (
            f"there is no [verifier], so no attempt is rejected and retries never run: success "
            f"stays at {success:.6f} < target {goal:g}; add a verifier (with a perfect one and "
            f"{perfect.retries.per_step} retries per step success reaches "
            f"{_success(perfect):.6f})"
        )
    return _plan(
        for_,
        value,
        scenario,
        goal,
        feasible=False,
        ceiling=success,
        binding=binding,
        reason=reason,
    )


def _with_perfect_verifier(scenario: Scenario) -> Scenario:
    """The remedy for a scenario without a verifier: a perfect one, and per-step retries up to
    the budget at which that verifier's success stops moving (the floor is taken with the
    verifier in place; without one no attempt is rejected and any floor is 1)."""
    verified = replace(scenario, verifier=Verifier())
    return replace(verified, retries=Retries(per_step=_budget_floor(verified)))


# ------------------------------------------------------------------------- probability search
def _probability_search(
    for_: str,
    scenario: Scenario,
    goal: float,
    apply: Callable[[float], Scenario],
    *,
    increasing: bool,
    key: str | None = None,
    scan: bool = False,
) -> Plan:
    """The least (``increasing``) or largest value in [0, 1] whose success reaches ``goal``.

    Success is monotone in the value, so the endpoints bracket the answer and
    :func:`_boundary` closes in; with ``scan``, a grid of ``SCAN_INTERVALS`` intervals comes
    first and the last (first) feasible interval is the bracket."""
    reached = goal - TOLERANCE
    values: dict[float, float] = {}

    def at(value: float) -> float:
        if value not in values:
            values[value] = _success(apply(value))
        return values[value]

    intervals = SCAN_INTERVALS if scan else 1
    grid = [i / intervals for i in range(intervals + 1)]
    feasible = [x for x in grid if at(x) >= reached]
    if feasible:
        if increasing:
            good = min(feasible)
            bad = good - 1.0 / intervals
        else:
            good = max(feasible)
            bad = good + 1.0 / intervals
        if 0.0 <= bad <= 1.0:
            good = _boundary(at, reached, good, bad)
        return _plan(for_, good, apply(good), goal, feasible=True)
    ceiling = max(at(x) for x in grid)
    # the nearest design: the cheapest value (least p, largest rate) at the ceiling
    near = [x for x in grid if at(x) >= ceiling - TOLERANCE]
    best = min(near) if increasing else max(near)
    perfect = 1.0 if increasing else 0.0  # where success is largest when monotone

    def ceiling_of(candidate: Scenario) -> float:
        if key is None:
            return _success(replace(candidate, p=perfect))
        return _success(_with_rate(candidate, key, perfect))

    skip = {"p"} if key is None else {f"verifier.{key}"}
    binding, reason = _diagnose(scenario, goal, ceiling, for_, ceiling_of, skip=skip)
    return _plan(
        for_,
        best,
        apply(best),
        goal,
        feasible=False,
        ceiling=ceiling,
        binding=binding,
        reason=reason,
    )


def _boundary(at: Callable[[float], float], reached: float, good: float, bad: float) -> float:
    """Close a bracket ``at(good) >= reached > at(bad)`` of a monotone function to
    ``BISECTION_WIDTH`` by regula falsi with the Illinois modification (superlinear, a
    handful of evaluations), falling back to bisection; returns the feasible end."""
    f_good, f_bad = at(good) - reached, at(bad) - reached
    w_good, w_bad = f_good, f_bad  # the weights, halved when one end sticks
    last = 0
    for _ in range(200):
        if abs(good - bad) <= BISECTION_WIDTH or f_good <= 1e-15:
            break
        x = good - w_good * (bad - good) / (w_bad - w_good)
        low, high = min(good, bad), max(good, bad)
        margin = 0.01 * (high - low)
        if not low + margin < x < high - margin:
            x = 0.5 * (good + bad)
        fx = at(x) - reached
        if fx >= 0:
            good, f_good, w_good = x, fx, fx
            if last == 1:
                w_bad *= 0.5
            last = 1
        else:
            bad, f_bad, w_bad = x, fx, fx
            if last == -1:
                w_good *= 0.5
            last = -1
    return good


def _rate_plan(scenario: Scenario, goal: float, key: str) -> Plan:
    plan = _probability_search(
        "verifier",
        scenario,
        goal,
        lambda value: _with_rate(scenario, key, value),
        increasing=False,
        key=key,
        scan=key == "miss" and scenario.checkpoints is not None,
    )
    return replace(plan, details={"key": key})


# ------------------------------------------------------------------------------- diagnosis
def _relaxations(scenario: Scenario) -> list[tuple[str, Scenario]]:
    """Each constraint that can cap success, and the scenario with that constraint lifted,
    in the order they are blamed. Without a verifier, adding one (a perfect one, with
    retries) is the largest change, so it is blamed after the constraints the scenario sets."""
    out: list[tuple[str, Scenario]] = []
    s = scenario
    if s.retries is not None and s.retries.total is not None:
        out.append(("retries.total", _with_total(s, None)))
    if s.verifier is not None and np.any(s.miss_array > 0):
        out.append(("verifier.miss", _with_rate(s, "miss", 0.0)))
    if s.verifier is not None:
        out.append(("retries.per_step", _with_per_step(s, _budget_floor(s))))
    correlation = s.correlation
    if s.has_random_effects or correlation.confusion is not None:
        out.append(("correlation", replace(s, correlation=Correlation())))
    if s.checkpoints is not None:
        c = s.checkpoints
        more = replace(c, rollbacks=2 * c.rollbacks + 4)
        out.append(("checkpoints.rollbacks", replace(s, checkpoints=more)))
        if c.false_alarm > 0:
            quiet = replace(c, false_alarm=0.0)
            out.append(("checkpoints.false_alarm", replace(s, checkpoints=quiet)))
        if c.detect < 1:
            out.append(("checkpoints.detect", replace(s, checkpoints=replace(c, detect=1.0))))
    if s.verifier is not None and np.any(s.false_reject_array > 0):
        out.append(("verifier.false_reject", _with_rate(s, "false_reject", 0.0)))
    if s.verifier is None:  # no verifier, so no retries: a perfect verifier with retries
        out.append(("retries.per_step", _with_perfect_verifier(s)))
    return out


def _diagnose(
    scenario: Scenario,
    goal: float,
    ceiling: float,
    for_: str,
    ceiling_of: Callable[[Scenario], float],
    skip: set[str],
) -> tuple[str, str]:
    """Which constraint binds, and why, in words.

    Each constraint is lifted on its own (``_relaxations``) and the planned quantity's
    ceiling recomputed: the first whose lifting reaches the target binds; when none does
    alone, the one that lifts the ceiling most."""
    reached = goal - TOLERANCE
    head = _head(goal, ceiling)
    never = _never_succeeds(scenario, goal, ceiling)
    if never is not None and for_ != "p":
        return never
    lifted: list[tuple[str, float]] = []
    for key, relaxed in _relaxations(scenario):
        if key in skip:
            continue
        if for_ in ("retries", "allocation") and key == "retries.per_step":
            continue
        lifted.append((key, ceiling_of(relaxed)))
    alone = [(key, value) for key, value in lifted if value >= reached]
    if alone:
        key, value = alone[0]
        return key, f"{head}; {_why(scenario, key, value, goal, for_)}"
    useful = [(key, value) for key, value in lifted if value > ceiling + 1e-9]
    if useful:
        key, value = max(useful, key=lambda kv: kv[1])
        others = ", ".join(k for k, _ in useful if k != key)
        more = f"; {others} also cap it" if others else ""
        return key, (
            f"{head}; several constraints bind together: {_why(scenario, key, value, goal, for_)}"
            f" (still short of the target){more}"
        )
    if ceiling >= goal - 1e-9:
        return "target", (
            f"{head}: success approaches {ceiling:.6f} only in the limit, so no finite "
            f"{for_} reaches the target {goal:g}"
        )
    if for_ in ("verifier", "checkpoints", "total"):
        return "p", f"{head}; the agent's per-step success p caps it even with this remedy"
    return "p", f"{head}; the agent's per-step success p caps it"


def _head(goal: float, ceiling: float) -> str:
    return f"success cannot reach the target {goal:g}: it is at most {ceiling:.6f}"


def _never_succeeds(scenario: Scenario, goal: float, ceiling: float) -> tuple[str, str] | None:
    """``("p", reason)`` when some step has ``p = 0``: no retry, verifier or checkpoint can
    make it succeed, so the agent binds whatever is planned (except ``p`` itself)."""
    zero = np.flatnonzero(scenario.p_array == 0.0)
    if not zero.size:
        return None
    shown = ", ".join(str(i + 1) for i in zero[:5])
    more = f" and {zero.size - 5} more" if zero.size > 5 else ""
    where = f"step {shown}" if zero.size == 1 else f"steps {shown}{more}"
    return "p", (
        f"{_head(goal, ceiling)}, because the agent never succeeds at {where} (p = 0): no "
        "retry, verifier or checkpoint can help; a better agent (--for p) is the remedy"
    )


def _why(scenario: Scenario, key: str, lifted: float, goal: float, for_: str) -> str:
    s = scenario
    if key == "verifier.miss":
        miss = s.miss_array
        step_ceiling = formulas.verified_ceiling(s.p_array, miss, s.false_reject_array)
        step_ceiling = np.broadcast_to(np.asarray(step_ceiling, float), (s.steps,))
        if np.all(step_ceiling == step_ceiling[0]) and np.all(miss == miss[0]):
            cap = (
                f"the verifier accepts a wrong result with probability miss = {miss[0]:g}, "
                f"which caps each step at a/(a+w) = {step_ceiling[0]:.6f} however many retries, "
                f"and the chain of {s.steps} at {float(np.prod(step_ceiling)):.6f}"
            )
        else:
            cap = (
                "the verifier accepts wrong results (miss > 0), which caps each step at "
                f"a/(a+w) (weakest step {float(np.min(step_ceiling)):.6f}) however many retries, "
                f"and the chain at {float(np.prod(step_ceiling)):.6f}"
            )
        needed = _largest_miss_for_ceiling(s, goal)
        if needed is not None and _is_chain(s) and for_ in ("retries", "allocation"):
            fix = f"; a verifier with miss <= {needed:.4g} reaches it with enough retries"
        else:
            fix = f"; a perfect verifier would lift the ceiling to {lifted:.6f}"
        return cap + fix
    if key == "retries.total":
        return (
            f"the task-wide budget total = {s.total_retries} runs out; without it the "
            f"ceiling is {lifted:.6f} (plan it with --for total)"
        )
    if key == "retries.per_step" and s.verifier is None:
        return (
            "there is no [verifier], so no attempt is rejected and no retry runs; with a "
            f"verifier and retries the ceiling is {lifted:.6f}"
        )
    if key == "retries.per_step":
        cap = _per_step_cap(s)
        if s.retries is None:
            budget = "there are no retries (no [retries] table)"
        elif cap is None:
            budget = f"the budget (total = {s.total_retries}, no per-step cap) runs out"
        else:
            shown = cap if isinstance(cap, int) else list(cap)
            budget = f"the per-step budget per_step = {shown} runs out"
        return (
            f"{budget}; with more retries the ceiling is {lifted:.6f} "
            "(plan it with --for retries or --for allocation)"
        )
    if key == "correlation":
        c = s.correlation
        causes = []
        if c.confusion is not None:
            causes.append(
                f"a confused agent stays confused (enter {c.confusion.enter:g}, recover "
                f"{c.confusion.recover:g}, factor {c.confusion.factor:g})"
            )
        if c.task_sd > 0:
            causes.append(f"a hard task stays hard at every retry (task_sd {c.task_sd:g})")
        if c.step_sd > 0:
            causes.append(f"a hard step stays hard across its retries (step_sd {c.step_sd:g})")
        return (
            f"correlated errors erode retries: {'; '.join(causes)}; with independent errors "
            f"the ceiling would be {lifted:.6f}"
        )
    if key == "checkpoints.rollbacks":
        c = s.checkpoints
        assert c is not None
        return (
            f"rollbacks run out: with rollbacks = {c.rollbacks}, a catch or a false alarm past "
            f"the budget ends the trial; with {2 * c.rollbacks + 4} the ceiling is {lifted:.6f}"
        )
    if key == "checkpoints.false_alarm":
        c = s.checkpoints
        assert c is not None
        return (
            f"false alarms (false_alarm = {c.false_alarm:g}) spend the rollbacks; without "
            f"them the ceiling is {lifted:.6f}"
        )
    if key == "checkpoints.detect":
        c = s.checkpoints
        assert c is not None
        return (
            f"checkpoints miss wrong results (detect = {c.detect:g}); with detect = 1 the "
            f"ceiling is {lifted:.6f}"
        )
    if key == "verifier.false_reject":
        return (
            "the verifier rejects correct results (false_reject > 0) and the budgets run out; "
            f"with false_reject = 0 the ceiling is {lifted:.6f}"
        )
    return f"lifting {key} gives {lifted:.6f}"  # pragma: no cover - every key is handled


def _largest_miss_for_ceiling(scenario: Scenario, goal: float) -> float | None:
    r"""Largest uniform miss with :math:`\prod_i a_i/(a_i+w_i) \ge` goal (keeping p and
    false_reject): what a verifier must achieve for retries to reach the goal at all."""

    def chain_ceiling(miss: float) -> float:
        ceiling = formulas.verified_ceiling(scenario.p_array, miss, scenario.false_reject_array)
        return float(np.prod(np.broadcast_to(ceiling, (scenario.steps,))))

    if chain_ceiling(0.0) < goal:
        return None
    good, bad = 0.0, 1.0
    if chain_ceiling(bad) >= goal:
        return 1.0
    while bad - good > BISECTION_WIDTH:
        middle = 0.5 * (good + bad)
        if chain_ceiling(middle) >= goal:
            good = middle
        else:
            bad = middle
    return good


# ================================================================================ allocation
@dataclass
class _ChainTable:
    """Per-step closed forms of a chain for budgets ``0..width-1`` (rows: steps)."""

    success: np.ndarray  # s_i(r) = a_i S_i(r)
    passed: np.ndarray  # e_i(r) = 1 - q_i^(r+1)
    attempts: np.ndarray  # S_i(r)
    unit_cost: np.ndarray  # c_i = attempt_i + verify
    low: np.ndarray  # least budget each step may take
    high: np.ndarray  # largest budget worth searching

    def cost(self, budgets: np.ndarray) -> float:
        rows = np.arange(len(budgets))
        attempts = self.attempts[rows, budgets]
        passed = self.passed[rows, budgets]
        reach = np.concatenate([[1.0], np.cumprod(passed)[:-1]])
        return float(np.sum(self.unit_cost * attempts * reach))

    def log_success(self, budgets: np.ndarray) -> float:
        rows = np.arange(len(budgets))
        with np.errstate(divide="ignore"):
            return float(np.sum(np.log(self.success[rows, budgets])))

    def ceiling(self) -> float:
        """Log-success with every step at its largest budget."""
        return self.log_success(self.high)

    def for_goal(self, goal: float) -> "_ChainTable | None":
        """A copy whose ``low`` is the least budget each step needs for ``goal`` (with every
        other step at its best); None when even the best falls short."""
        n = len(self.high)
        with np.errstate(divide="ignore"):
            log_success = np.log(self.success)
        best = log_success[np.arange(n), self.high]
        log_goal = math.log(goal) - TOLERANCE
        if not np.all(np.isfinite(best)) or float(np.sum(best)) < log_goal:
            return None
        need = log_goal - (float(np.sum(best)) - best)
        low = np.argmax(log_success >= need[:, None], axis=1)
        return replace(self, low=np.minimum(low, self.high))

    def solve(self, goal: float, exact: bool = True) -> tuple[np.ndarray, dict[str, Any]] | None:
        """The chain's cheapest budgets for ``goal`` and the method notes; None if infeasible.

        The bucketed programme rounding success down, then greedy decrements, give a
        feasible answer; with ``exact`` its cost bounds the exact Pareto programme, and when
        that outgrows its limits a second bucketed run rounding up gives a lower bound."""
        table = self.for_goal(goal)
        if table is None:
            return None
        buckets = BUCKETS if exact else SURROGATE_BUCKETS
        _, found_budgets = _bucketed(table, goal, optimistic=False, buckets=buckets)
        if found_budgets is None:  # the target is within the rounding of the ceiling
            found_budgets = table.high.astype(np.int64)  # feasible: for_goal checked it
        found_budgets = _decrement_greedily(table, found_budgets, goal)
        found = table.cost(found_budgets)
        budgets = _pareto_allocation(table, goal, found) if exact else None
        if budgets is not None:
            method = "exact (dynamic programme over the Pareto front)"
            return budgets, {"method": method, "gap": 0.0}
        if not exact:
            return found_budgets, {}
        bound, _ = _bucketed(table, goal, optimistic=True)
        gap = max(0.0, found - bound)
        return found_budgets, {
            "method": f"bucketed dynamic programme ({BUCKETS} levels of log-success) "
            "with greedy decrements",
            "lower_bound": bound,
            "gap": gap,
            "relative_gap": gap / found if found > 0 else 0.0,
        }


def _step_table(scenario: Scenario, effect_sd: float = 0.0) -> _ChainTable:
    r"""Per-step closed forms for budgets up to the convergence limit, the goal left open.

    With ``effect_sd > 0`` each step's success, passing probability and attempts are averaged
    over a logit-scale effect :math:`N(0, \sigma^2)` (Gauss-Hermite): the marginal step of a
    scenario with random effects, the surrogate of :func:`_allocation_general`."""
    width = _budget_floor(scenario) + 1
    budgets = np.arange(width)
    shape = (scenario.steps, width)
    if effect_sd > 0:
        nodes, weights = np.polynomial.hermite_e.hermegauss(21)
        weights = weights / weights.sum()
        prob = scenario.p_array
        inner = np.clip(prob, 1e-300, 1 - 1e-16)
        logit = np.log(inner) - np.log1p(-inner)
        shifted = 1.0 / (1.0 + np.exp(-(logit[:, None] + effect_sd * nodes[None, :])))
        fixed = ((prob == 0) | (prob == 1))[:, None]  # p of 0 or 1 is left as it is
        shifted = np.where(fixed, prob[:, None], shifted)
        step = formulas.verified_step(
            shifted[:, :, None],
            budgets[None, None, :],
            scenario.miss_array[:, None, None],
            scenario.false_reject_array[:, None, None],
        )
        full = shape[:1] + (len(nodes),) + shape[1:]
        w = weights[None, :, None]
        success = np.sum(w * np.broadcast_to(np.asarray(step.success, float), full), axis=1)
        passed = 1.0 - np.sum(w * np.broadcast_to(np.asarray(step.exhausted, float), full), axis=1)
        attempts = np.sum(
            w * np.broadcast_to(np.asarray(step.expected_attempts, float), full), axis=1
        )
    else:
        step = formulas.verified_step(
            scenario.p_array[:, None],
            budgets[None, :],
            scenario.miss_array[:, None],
            scenario.false_reject_array[:, None],
        )
        success = np.broadcast_to(np.asarray(step.success, float), shape).copy()
        passed = 1.0 - np.broadcast_to(np.asarray(step.exhausted, float), shape)
        attempts = np.broadcast_to(np.asarray(step.expected_attempts, float), shape).copy()
    with np.errstate(divide="ignore"):
        log_success = np.log(success)
    top = log_success[:, -1]
    # least budget within 1e-12 (relative) of the step's ceiling: more is never worth it
    high = np.argmax(log_success >= (top - CONVERGED)[:, None], axis=1)
    unit_cost = scenario.attempt_cost_array + scenario.cost.verify
    low = np.zeros(scenario.steps, dtype=np.int64)
    return _ChainTable(success, passed, attempts, unit_cost, low, high)


def _pareto_allocation(table: _ChainTable, goal: float, bound: float) -> np.ndarray | None:
    """Exact: dynamic programme over the Pareto front of (suffix success, suffix cost),
    pruned by branch and bound against ``bound``, the cost of a known feasible plan.

    A suffix pair can only end in a plan costing at least ``prefix_cost + reach * cost``
    with the steps before it at their least budgets (both are non-decreasing in every
    budget); pairs above ``bound`` are dropped. None when the front outgrows ``MAX_FRONT``
    or the work (pairs examined) exceeds ``100 * MAX_FRONT * steps``."""
    n = len(table.low)
    rows = np.arange(n)
    least_attempts = table.attempts[rows, table.low]
    least_passed = table.passed[rows, table.low]
    least_reach = np.concatenate([[1.0], np.cumprod(least_passed)])  # before step i
    least_cost = table.unit_cost * least_attempts * least_reach[:-1]
    least_prefix = np.concatenate([[0.0], np.cumsum(least_cost)])
    limit = bound * (1 + 1e-12) + 1e-300
    work = 0
    log_goal = math.log(goal) - TOLERANCE
    with np.errstate(divide="ignore"):
        log_table = np.log(table.success)
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
        keep = (new_log + prefix_best[i] >= log_goal) & (
            least_prefix[i] + least_reach[i] * new_cost <= limit
        )
        new_log, new_cost = new_log[keep], new_cost[keep]
        choice, parent = choice[keep], parent[keep]
        work += keep.size
        if new_log.size == 0 or work > 100 * MAX_FRONT * n:
            return None
        order = np.lexsort((new_cost, -new_log))
        new_log, new_cost = new_log[order], new_cost[order]
        choice, parent = choice[order], parent[order]
        running = np.minimum.accumulate(new_cost)
        front = np.concatenate([[True], new_cost[1:] < running[:-1]])
        log_success, cost = new_log[front], new_cost[front]
        choices.append(choice[front])
        parents.append(parent[front])
        if len(cost) > MAX_FRONT:
            return None
    index = int(np.argmin(cost))
    budgets = np.empty(n, dtype=np.int64)
    for i in range(n):  # choices[-1] is step 0
        level = n - 1 - i
        budgets[i] = choices[level][index]
        index = int(parents[level][index])
    return budgets


def _bucketed(
    table: _ChainTable, goal: float, optimistic: bool, buckets: int | None = None
) -> tuple[float, np.ndarray | None]:
    """The dynamic programme on ``buckets`` (default ``BUCKETS``) levels of log-success
    between log(goal) and 0.

    Rounding success down at each step (``optimistic=False``) keeps only real, feasible
    plans; rounding up (``optimistic=True``) keeps, for every real plan, a relaxed one at
    least as good, so its least cost is a lower bound on the optimum. Returns the least cost
    and (rounding down) the budgets."""
    n = len(table.low)
    count = BUCKETS if buckets is None else buckets
    log_goal = math.log(goal) - TOLERANCE
    width = -log_goal / count
    with np.errstate(divide="ignore"):
        log_table = np.log(table.success)
    best = log_table[np.arange(n), table.high]
    prefix_best = np.concatenate([[0.0], np.cumsum(best)])
    # bucket b holds level log_goal + b * width; the empty suffix has success 1 (b = count)
    cost = np.full(count + 1, np.inf)
    cost[count] = 0.0
    choice_of = np.full((n, count + 1), -1, dtype=np.int16)  # budgets <= MAX_BUDGET
    rounding = np.ceil if optimistic else np.floor
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
        levels = log_goal + width * np.arange(count + 1)
        new_cost[levels + prefix_best[i] < log_goal] = np.inf
        cost = new_cost
        choice_of[i] = new_choice
    if not np.any(np.isfinite(cost)):
        return math.inf, None
    bucket = int(np.argmin(cost))
    lowest = float(cost[bucket])
    if optimistic:
        return lowest, None
    budgets = np.empty(n, dtype=np.int64)
    for i in range(n):
        budget = int(choice_of[i, bucket])
        budgets[i] = budget
        bucket -= int(np.floor(log_table[i, budget] / width))
    return lowest, budgets


def _decrement_greedily(table: _ChainTable, budgets: np.ndarray, goal: float) -> np.ndarray:
    """Lower single budgets, the largest exact saving first, while success stays >= goal."""
    budgets = budgets.copy()
    log_goal = math.log(goal) - TOLERANCE
    n = len(budgets)
    rows = np.arange(n)
    with np.errstate(divide="ignore"):
        log_table = np.log(table.success)
    while True:
        can = budgets > table.low
        if not np.any(can):
            return budgets
        lower = np.where(can, budgets - 1, budgets)
        log_now = log_table[rows, budgets]
        total_log = float(np.sum(log_now))
        new_log = total_log - log_now + log_table[rows, lower]
        attempts = table.attempts[rows, budgets]
        passed = table.passed[rows, budgets]
        reach = np.concatenate([[1.0], np.cumprod(passed)[:-1]])
        # cost of the steps after i, given step i is passed
        after = np.zeros(n)
        for i in range(n - 2, -1, -1):
            after[i] = table.unit_cost[i + 1] * attempts[i + 1] + passed[i + 1] * after[i + 1]
        saving = reach * (
            table.unit_cost * (attempts - table.attempts[rows, lower])
            + (passed - table.passed[rows, lower]) * after
        )
        ok = can & (new_log >= log_goal)
        if not np.any(ok):
            return budgets
        i = int(np.argmax(np.where(ok, saving, -np.inf)))
        budgets[i] -= 1


def _allocation_chain(scenario: Scenario, goal: float) -> Plan:
    solved = _step_table(scenario).solve(goal)
    if solved is None:
        return _allocation_infeasible(scenario, goal)
    budgets, details = solved
    planned = _with_per_step(scenario, budgets)
    return _plan("allocation", budgets, planned, goal, feasible=True, details=details)


def _allocation_infeasible(scenario: Scenario, goal: float) -> Plan:
    """Even unlimited budgets at every step fall short: the uniform-budget diagnosis."""
    plan = retries(scenario, goal)
    if plan.feasible:  # pragma: no cover - the chain table and the search agree
        raise AssertionError("allocation found infeasible where a uniform budget is feasible")
    budget = plan.value if isinstance(plan.value, int) else 0
    budgets = (budget,) * scenario.steps
    return _plan(
        "allocation",
        budgets,
        _with_per_step(scenario, budgets),
        goal,
        feasible=False,
        ceiling=plan.ceiling,
        binding=plan.binding,
        reason=plan.reason,
    )


def _allocation_general(scenario: Scenario, goal: float) -> Plan:
    reached = goal - TOLERANCE
    n = scenario.steps
    correlation = scenario.correlation
    table = _step_table(scenario, math.hypot(correlation.task_sd, correlation.step_sd))
    if scenario.total_retries is not None:  # a per-step budget above the total is never spent
        table.high = np.minimum(table.high, scenario.total_retries)
    if not np.isfinite(table.ceiling()):  # some step can never succeed
        return _allocation_infeasible(scenario, goal)
    evaluations: dict[tuple[int, ...], Outcome] = {}

    def outcome(budgets: Sequence[int]) -> Outcome:
        key = tuple(int(b) for b in budgets)
        if key not in evaluations:
            evaluations[key] = _evaluate(_with_per_step(scenario, key))
        return evaluations[key]

    log_goal = math.log(goal)
    log_top = table.ceiling()
    span = max(log_top - log_goal, 1e-9)
    solutions: dict[float, np.ndarray] = {}

    def planned(theta: float) -> np.ndarray:
        """The surrogate's cheapest budgets for log-target ``log_goal + theta * span``."""
        if theta not in solutions:
            if theta >= 1.0:
                solutions[theta] = table.high.astype(np.int64)
            else:
                solved = table.solve(math.exp(min(0.0, log_goal + theta * span)), exact=False)
                solutions[theta] = table.high.astype(np.int64) if solved is None else solved[0]
        return solutions[theta]

    def reaches(theta: float) -> bool:
        return float(outcome(planned(theta)).success) >= reached

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
            return float(outcome(np.minimum(top + extra, MAX_BUDGET)).success)

        floor = _budget_floor(scenario)
        extra, _, _ = _least_budget(success_at_extra, goal, floor, MAX_BUDGET)
        if extra is None:  # pragma: no cover - a feasible uniform budget is below top + limit
            return _allocation_infeasible(scenario, goal)
        budgets = np.minimum(top + extra, MAX_BUDGET)
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
        if outcome(trial).success >= reached:
            budgets = trial
    method = (
        "surrogate chain optimum at a target tuned with the exact engine, then single-step "
        "decrements"
    )
    gap: float | None = None
    if n <= BRANCH_AND_BOUND_STEPS:
        box = np.maximum(table.high, budgets)
        exact = _branch_and_bound(box, budgets, reached, outcome)
        if exact is not None:
            budgets, method, gap = exact, "exact (branch and bound in the box of step limits)", 0.0
    details = {"method": method, "gap": gap, "evaluations": len(evaluations)}
    design = _with_per_step(scenario, budgets)
    return _plan("allocation", budgets, design, goal, feasible=True, details=details)


class _OutOfEvaluations(Exception):
    pass


def _branch_and_bound(
    box: np.ndarray,
    incumbent: np.ndarray,
    reached: float,
    outcome: Callable[[Sequence[int]], Outcome],
) -> np.ndarray | None:
    """Least expected cost over allocations ``0..box_i`` with success >= ``reached``,
    relying on success and cost being non-decreasing in every budget. None when the search
    needs more than ``BRANCH_AND_BOUND_EVALUATIONS`` new evaluations."""
    n = len(box)
    best = [float(outcome(incumbent).expected_cost), incumbent.copy()]
    count = [0]

    def look(budgets: Sequence[int]) -> Outcome:
        count[0] += 1
        if count[0] > BRANCH_AND_BOUND_EVALUATIONS:
            raise _OutOfEvaluations
        return outcome(budgets)

    def search(prefix: list[int]) -> None:
        i = len(prefix)
        rest_high = [int(b) for b in box[i + 1 :]]
        rest_zero = [0] * (n - i - 1)
        if i == n - 1:  # the least budget that reaches the target is the cheapest
            if look(prefix + [int(box[i])]).success < reached:
                return
            low, high = -1, int(box[i])
            while high - low > 1:
                middle = (low + high) // 2
                if look(prefix + [middle]).success >= reached:
                    high = middle
                else:
                    low = middle
            cost = float(look(prefix + [high]).expected_cost)
            if cost < best[0]:
                best[0], best[1] = cost, np.array(prefix + [high], dtype=np.int64)
            return
        for budget in range(int(box[i]) + 1):
            if look(prefix + [budget] + rest_zero).expected_cost >= best[0]:
                return  # cost only grows with the budget
            if look(prefix + [budget] + rest_high).success < reached:
                continue  # success only grows with the budget
            search(prefix + [budget])

    try:
        search([])
    except _OutOfEvaluations:
        return None
    return best[1]
