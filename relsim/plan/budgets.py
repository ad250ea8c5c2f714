"""Retry budgets: the least uniform per-step budget (:func:`retries`) and the least
task-wide budget (:func:`total`) that reach a target, or (``objective="utility"``) the budget
of largest expected utility."""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from relsim.scenario import trial_model
from relsim.plan import diagnosis
from relsim.plan import _common
from relsim.plan import objective as objectives
from relsim.plan._common import (
    CONVERGED,
    NEAR_CEILING,
    Plan,
    budget_floor,
    goal_of,
    ladder_floor,
    per_step_cap,
    make_plan,
    exact_success,
    with_per_step,
    with_total,
)
from relsim.results import Outcome
from relsim.plan.binding import diagnose, no_verifier_plan
from relsim.plan.search import least_budget, least_reaching
from relsim.scenario import Scenario, as_scenario

__all__ = ["retries", "total"]


def retries(
    scenario: Scenario | Mapping[str, Any],
    target: float | None = None,
    *,
    objective: str | None = None,
) -> Plan:
    r"""The least uniform per-step retry budget ``r`` that reaches ``target``; with
    ``objective="utility"``, the budget of largest expected utility.

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
    within ``1e-6`` of the ceiling. With an ``[escalation]`` ladder the budget is at least
    ``after[-1]`` (the top rung must be reachable).

    ``objective="utility"`` (the scenario needs a ``[utility]`` table) maximises
    ``expected_utility`` instead, with no target to meet (:mod:`relsim.plan.objective`):
    every budget from the least to the one past which the outcome no longer moves (by doubling
    from the floor above, until a budget and its double agree within ``1e-12``) is judged
    exactly, and the least of the best (ties within ``1e-12``) is the answer.

    Parameters
    ----------
    scenario : Scenario or mapping
        The design to plan from (a mapping is read as the engines read it); every quantity but
        the planned one is kept.
    target : float, optional
        End-to-end success wanted, in (0, 1]; default the scenario's ``target``.
    objective : str, optional
        None: the least per-step budget that meets the target; or ``"utility"``
        (:mod:`relsim.plan.objective`).

    Returns
    -------
    Plan
        ``value`` is the per-step budget (an int), with the planned design's exact outcome,
        whether it meets the target (``feasible``) and, when not, the ``ceiling``, the
        ``binding`` key and the ``reason``.

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

    Stroebl, Kapoor and Narayanan (2024): easy and hard tasks behind a verifier that passes a
    quarter of wrong answers; a silent failure costs 1, so more than one retry hurts.

    >>> s = Scenario.from_dict({"steps": 1, "classes": [{"weight": 0.58, "p": 0.87},
    ...     {"weight": 0.42, "p": 0.13}], "verifier": {"miss": 0.25},
    ...     "utility": {"silent_failure": -1}})
    >>> plan = retries(s, objective="utility")
    >>> plan.value, round(plan.expected_utility, 6)
    (1, 0.472381)
    """
    scenario = as_scenario(scenario)
    if objectives.check_objective("retries", objective) == "utility":
        return _budget_utility("retries", scenario, target, with_per_step)
    goal = goal_of(scenario, target, "retries")
    return _budget_plan("retries", scenario, goal, with_per_step)


def total(
    scenario: Scenario | Mapping[str, Any],
    target: float | None = None,
    *,
    objective: str | None = None,
) -> Plan:
    r"""The least task-wide retry budget ``total`` that reaches ``target``; with
    ``objective="utility"``, the task-wide budget of largest expected utility (as
    :func:`retries` does for the per-step budget).

    The scenario's per-step cap is kept (none when it sets none: then only the task-wide budget
    limits retries). Relies on success being non-decreasing in ``total`` (the same argument as
    :func:`retries`) and searches the same way. With a per-step cap ``r_i`` the search stops at
    :math:`\sum_i r_i` (a larger budget is never spent); without one, the limit is as in
    :func:`retries` with ``MAX_TOTAL`` in place of ``MAX_BUDGET``. For identical independent
    steps and no per-step cap,

    .. math:: \text{success}(B) = a^n \sum_{j=0}^{B} \binom{n-1+j}{j} q^j.

    Parameters
    ----------
    scenario : Scenario or mapping
        The design to plan from (a mapping is read as the engines read it); every quantity but
        the planned one is kept.
    target : float, optional
        End-to-end success wanted, in (0, 1]; default the scenario's ``target``.
    objective : str, optional
        None: the least task-wide budget that meets the target; or ``"utility"``
        (:mod:`relsim.plan.objective`).

    Returns
    -------
    Plan
        ``value`` is the task-wide budget (an int), with the planned design's exact outcome,
        whether it meets the target (``feasible``) and, when not, the ``ceiling``, the
        ``binding`` key and the ``reason``.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}})
    >>> plan = total(s, 0.95)  # 0.9**25 * sum_{j<=6} C(24+j, j) 0.1**j = 0.969437
    >>> plan.value, round(plan.success, 6)
    (6, 0.969437)
    """
    scenario = as_scenario(scenario)
    if objectives.check_objective("total", objective) == "utility":
        return _budget_utility("total", scenario, target, with_total)
    goal = goal_of(scenario, target, "total")
    return _budget_plan("total", scenario, goal, with_total)


def _budget_range(for_: str, scenario: Scenario) -> tuple[int, int, int]:
    """The least budget (a ladder's top rung must be reachable), the convergence floor and
    the largest budget searched."""
    low = ladder_floor(scenario)
    floor = budget_floor(scenario)
    limit = _common.MAX_BUDGET if for_ == "retries" else _common.MAX_TOTAL
    if for_ == "total" and per_step_cap(scenario) is not None:
        limit = min(limit, int(np.sum(trial_model(scenario).per_step)))
        floor = limit
    return low, max(low, min(floor, limit)), max(low, limit)


def _budget_utility(
    for_: str, scenario: Scenario, target: float | None, apply: Callable[[Scenario, int], Scenario]
) -> Plan:
    """:func:`retries` and :func:`total` under ``objective="utility"``."""
    if scenario.verifier is None:  # no retry can trigger: the design is the only one
        goal = objectives.utility_target(scenario, target, for_, 1)
        details = {"method": "no verifier: retries cannot trigger, so the design is the only one"}
        return objectives.utility_plan(for_, 0, scenario, goal, details)
    low, floor, limit = _budget_range(for_, scenario)
    goal = objectives.utility_target(scenario, target, for_, floor - low + 4)
    outcomes: dict[int, Outcome] = {}

    def outcome_at(budget: int) -> Outcome:
        if budget not in outcomes:
            outcomes[budget] = objectives.search_outcome(apply(scenario, budget))
        return outcomes[budget]

    high = objectives.convergence_budget(outcome_at, floor, limit)
    best, method = objectives.best_budget(outcome_at, low, high)
    found: dict[str, object] = {"method": method, "evaluations": len(outcomes)}
    return objectives.utility_plan(for_, best, apply(scenario, best), goal, found)


def _budget_plan(
    for_: str, scenario: Scenario, goal: float, apply: Callable[[Scenario, int], Scenario]
) -> Plan:
    """Shared by :func:`retries` and :func:`total`."""
    if scenario.verifier is None:
        return no_verifier_plan(for_, scenario, goal, 0)
    low, floor, limit = _budget_range(for_, scenario)
    if low:  # with a ladder: budgets from its top rung on, searched as offsets from it
        plain = apply

        def apply(candidate: Scenario, budget: int) -> Scenario:
            return plain(candidate, budget + low)

        floor, limit = floor - low, limit - low

    def success_at(budget: int) -> float:
        return exact_success(apply(scenario, budget))

    answer, stop, at = least_budget(success_at, goal, floor, limit)
    if answer is not None:
        return make_plan(for_, answer + low, apply(scenario, answer), goal, feasible=True)
    ceiling = at(stop)
    nearest = least_reaching(at, ceiling - NEAR_CEILING, stop)
    rising = stop >= limit and ceiling - at(stop // 2) > CONVERGED
    if rising and not (for_ == "total" and per_step_cap(scenario) is not None):
        reason = diagnosis.REASONS["search_limit"].format(
            for_=for_, limit=limit + low, goal=goal, ceiling=ceiling
        )
        return make_plan(
            for_,
            stop + low,
            apply(scenario, stop),
            goal,
            feasible=False,
            ceiling=ceiling,
            binding="search limit",
            reason=reason,
        )

    def ceiling_of(candidate: Scenario) -> float:
        budget = stop if for_ == "total" else max(stop, budget_floor(candidate))
        if candidate.verifier is None:
            return exact_success(candidate)
        return exact_success(apply(candidate, min(2 * budget, limit)))

    binding, reason = diagnose(scenario, goal, ceiling, for_, ceiling_of, skip={f"retries.{for_}"})
    return make_plan(
        for_,
        nearest + low,
        apply(scenario, nearest),
        goal,
        feasible=False,
        ceiling=ceiling,
        binding=binding,
        reason=reason,
    )


