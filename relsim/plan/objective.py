r"""What a planner optimises: its default criterion, or an objective named by the caller.

Without an objective each planner meets the target at least cost in its own terms (the least
budget, the least count, the spacing or allocation of least cost). ``objective`` names another
criterion where it applies (:data:`OBJECTIVES`); ``"utility"`` maximises the scenario's
``expected_utility`` (docs/model.md section 8, ``[utility]``),

.. math:: U = \sum_o \text{share}_o\, v_o - \text{cost\_weight} \cdot E[\text{cost}],

over every design the planner can buy, with no target to meet: the target (when one is given)
is not the criterion, and the plan says whether the best design meets it
(``details["meets_target"]``). Designs whose utilities differ by at most ``UTILITY_TIE``
(relative to ``max(1, |U|)``) are equal, and the least budget among equals is taken.

``verifier`` and ``p`` state requirements (the largest ``miss``, the least ``p`` that meet the
target), not designs to buy: they take no objective.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Hashable, Iterable, Mapping, TypeVar

import numpy as np

from relsim.errors import RelsimError, invalid
from relsim.plan import _common
from relsim.plan._common import CONVERGED, Plan, checked_target, make_plan, meets_goal, outcome_success
from relsim.results import Outcome
from relsim.scenario import Scenario

__all__ = ["CRITERION", "DEFAULTS", "OBJECTIVES", "UTILITY_TIE", "check_objective"]

#: The objectives each planner takes besides its default (none: a requirement, no objective).
OBJECTIVES: dict[str, tuple[str, ...]] = {
    "retries": ("utility",),
    "total": ("utility",),
    "allocation": ("cost_per_success", "expected_cost", "utility"),
    "verifier": (),
    "p": (),
    "checkpoints": ("expected_cost", "utility"),
    "samples": ("utility",),
    "escalation": ("cost_per_success", "utility"),
}
#: What each planner does without an objective, in words.
DEFAULTS = {
    "retries": "the least per-step budget that meets the target",
    "total": "the least task-wide budget that meets the target",
    "allocation": "the per-step budgets of least cost per success that meet the target",
    "verifier": "the largest miss that meets the target",
    "p": "the least per-attempt success that meets the target",
    "checkpoints": "the spacing of least expected cost that meets the target",
    "samples": "the least number of samples that meets the target",
    "escalation": "the ladder of least cost per success that meets the target",
}
#: How a utility plan states its criterion.
CRITERION = "expected utility (the target is not the criterion)"
#: Utilities within this (relative to max(1, |U|)) are equal: the least budget is taken.
UTILITY_TIE = 1e-12
#: An integer range up to this many values is scanned whole; beyond, a grid and a local walk.
MAX_SCAN = 1_025

T = TypeVar("T", bound=Hashable)


def check_objective(for_: str, objective: Any) -> str | None:
    """``objective`` when ``plan.<for_>`` takes it (None: the default), else the one error.

    Examples
    --------
    >>> check_objective("retries", "utility"), check_objective("retries", None)
    ('utility', None)
    """
    if objective is None:
        return None
    allowed = OBJECTIVES[for_]
    if not allowed:
        raise RelsimError(
            f"objective: must be left out for plan.{for_}, which states a requirement "
            f"({DEFAULTS[for_]}), not a design to optimise; got {objective!r}"
        )
    if not isinstance(objective, str) or objective not in allowed:
        raise invalid("objective", f"one of {', '.join(allowed)} for plan.{for_}", objective)
    return objective


def utility_target(scenario: Scenario, target: Any, for_: str, evaluations: int | None = None) -> float | None:
    """The target a utility plan reports against (``target``, else the scenario's, else None),
    after checking that the scenario has a ``[utility]`` table and estimating the work."""
    if not isinstance(scenario, Scenario):
        raise invalid("scenario", "a Scenario", type(scenario).__name__)
    if scenario.utility is None:
        raise RelsimError(
            f"utility: must be a [utility] table in the scenario (the value of each outcome) "
            f"to plan {for_} for objective 'utility', got none"
        )
    _common._check_work(scenario, for_, evaluations)
    if target is None:
        target = scenario.target
    return None if target is None else checked_target(target)


def is_mixture_chain(scenario: Scenario) -> bool:
    """A chain of independent verified steps for each class of a mixture (or one class): no
    checkpoints, task-wide budget, correlation, ladder, samples, failure modes or faults."""
    from relsim.scenario import trial_model

    model = trial_model(scenario)
    return not (
        model.has_checkpoints or model.has_total or model.has_random_effects
        or model.has_confusion or model.rungs or model.samples > 1 or model.modes
        or model.fault > 0.0
    )


def search_outcome(scenario: Scenario) -> Outcome:
    r"""The outcome a search judges a candidate by: for a mixture of chains
    (:func:`is_mixture_chain`) the closed form of each class's chain
    (:func:`relsim.formulas.verified_chain`, and the cost
    :math:`\sum_i c_i S_i \prod_{j<i} D_j`) weighted by the classes; else the exact engine.
    The two agree to rounding; a plan's own numbers always come from the engine."""
    from relsim import formulas
    from relsim.scenario import trial_model

    if not is_mixture_chain(scenario):
        return _common.evaluate_design(scenario)
    model = trial_model(scenario)
    shares = np.zeros(3)
    attempts = cost = 0.0
    unit = model.cost_per_attempt
    for weight, p in zip(model.class_weight, model.rung_p[:, 0]):
        chain = formulas.verified_chain(p, model.per_step, model.miss, model.false_reject)
        step = formulas.verified_step(p, model.per_step, model.miss, model.false_reject)
        tries = np.asarray(step.expected_attempts, dtype=float)
        passed = 1.0 - np.asarray(step.exhausted, dtype=float)
        reach = np.concatenate(([1.0], np.cumprod(passed)[:-1]))
        shares += weight * np.array([chain.success, chain.silent_failure, chain.detected_failure])
        attempts += weight * float(chain.expected_attempts)
        cost += weight * float(np.sum(reach * tries * unit))
    named = dict(zip(("success", "silent_failure", "detected_failure"), (float(x) for x in shares)))
    return Outcome(named["success"], named["silent_failure"], named["detected_failure"],
                   expected_attempts=attempts, expected_cost=cost,
                   expected_utility=model.utility_of(named, cost))


def utility(outcome: Outcome) -> float:
    """The outcome's expected utility (the scenario has a ``[utility]`` table)."""
    assert outcome.expected_utility is not None  # utility_target checked the table
    return float(outcome.expected_utility)


def best_by_utility(
    candidates: Iterable[T], outcome: Callable[[T], Outcome], budget: Callable[[T], Any]
) -> T:
    """The candidate of largest expected utility; among those within ``UTILITY_TIE`` of it,
    the least ``budget`` (then the first given)."""
    candidates = list(candidates)
    values = {c: utility(outcome(c)) for c in candidates}
    top = max(values.values())
    tie = UTILITY_TIE * max(1.0, abs(top))
    near = [c for c in candidates if values[c] >= top - tie]
    return min(near, key=budget)


def converged(one: Outcome, other: Outcome) -> bool:
    """Every outcome share within ``CONVERGED`` and the cost and utility within ``CONVERGED``
    relative: past such a pair of budgets, more budget changes nothing worth stating."""
    for key in ("success", "silent_failure", "detected_failure", "infra_failure"):
        if abs(getattr(one, key) - getattr(other, key)) > CONVERGED:
            return False
    for a, b in ((one.expected_cost, other.expected_cost),
                 (one.expected_utility or 0.0, other.expected_utility or 0.0)):
        if not (math.isfinite(a) and math.isfinite(b)) or abs(a - b) > CONVERGED * max(1.0, abs(a)):
            return False
    return True


def convergence_budget(outcome_at: Callable[[int], Outcome], start: int, limit: int) -> int:
    """The least budget ``b`` found by doubling from ``start`` with ``outcome_at(b)`` and
    ``outcome_at(2b)`` alike (:func:`converged`), or ``limit``. Success, the failures and the
    cost each move one way as a budget grows, so budgets past ``b`` are all alike: their
    utilities tie with ``b``'s and the least budget, at most ``b``, is taken."""
    budget = min(max(1, start), limit)
    while budget < limit:
        larger = min(2 * budget, limit)
        if converged(outcome_at(budget), outcome_at(larger)):
            return budget
        budget = larger
    return limit


def scan(low: int, high: int) -> tuple[list[int], bool]:
    """The budgets to judge in ``low..high``: all of them up to ``MAX_SCAN`` values (exact),
    else a geometric grid whose best is then walked (the second value: False)."""
    if high - low + 1 <= MAX_SCAN:
        return list(range(low, high + 1)), True
    grid = {int(round(x)) for x in np.geomspace(1, high - low + 1, 64)}
    return sorted({low + g - 1 for g in grid} | {low, high}), False


def best_budget(outcome_at: Callable[[int], Outcome], low: int, high: int) -> tuple[int, str]:
    """The budget in ``low..high`` of largest utility (the least among equals), and the method
    in words: every budget when there are at most ``MAX_SCAN``, else a geometric grid and a
    walk to the better neighbour while one improves."""
    candidates, whole = scan(low, high)
    best = best_by_utility(candidates, outcome_at, lambda b: b)
    if whole:
        return best, f"every budget from {low} to {high} (exact)"
    while True:
        neighbours = [b for b in (best - 1, best + 1) if low <= b <= high]
        new = best_by_utility([best, *neighbours], outcome_at, lambda b: b)
        if new == best:
            return best, (f"a geometric grid of {low}..{high} and a walk to the best neighbour "
                          "(a heuristic: utility need not be unimodal)")
        best = new


def utility_plan(
    for_: str,
    value: Any,
    planned: Scenario,
    target: float | None,
    details: Mapping[str, Any] | None = None,
) -> Plan:
    """The plan of the design of largest utility: feasible (a best design always exists),
    ``details`` with ``objective``, ``criterion`` and ``meets_target``."""
    plan = make_plan(for_, value, planned, target, feasible=True, details=details)
    meets = None
    if target is not None:
        from relsim.exact import evaluate

        meets = meets_goal(outcome_success(evaluate(planned)), target)
    extra = {"objective": "utility", "criterion": CRITERION, "meets_target": meets}
    from dataclasses import replace

    return replace(plan, details={**extra, **plan.details})
