r"""Escalation ladders: :func:`escalation`, when each rung of a ladder takes over (its
``after``) at least cost per success with a target met, or (``objective="utility"``) with the
largest expected utility."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any, Callable, Mapping

from relsim.errors import RelsimError
from relsim.plan import _common
from relsim.plan import objective as objectives
from relsim.plan._common import (
    NEAR_CEILING,
    Plan,
    evaluate_design,
    goal_of,
    make_plan,
    meets_goal,
    outcome_success,
)
from relsim.plan.binding import diagnose
from relsim.results import Outcome
from relsim.scenario import Scenario, as_scenario

__all__ = ["escalation"]

#: Every ladder is judged when there are at most this many; beyond, the plan is refused.
MAX_LADDERS = 2_000
#: Objectives within this (relative) of the best are equal: the latest ladder is taken.
TIE = 1e-12

Ladder = tuple[int, ...]


def with_after(scenario: Scenario, after: Ladder) -> Scenario:
    """The scenario with ``escalation.after = after`` (its rungs' ``p`` and costs kept)."""
    assert scenario.escalation is not None
    return replace(scenario, escalation=replace(scenario.escalation, after=tuple(after)))


def reach(scenario: Scenario) -> int:
    """The most retries one execution can spend: the largest per-step budget, capped by the
    task-wide one. A rung serves from attempt ``after + 1``, so ``after`` is at most this."""
    assert scenario.retries is not None  # a ladder needs one (the scenario checks it)
    r = scenario.retries
    per_step = r.total if r.per_step is None else r.per_step
    most = max(per_step) if isinstance(per_step, tuple) else int(per_step)  # type: ignore[arg-type]
    return most if r.total is None else min(most, r.total)


def ladders(scenario: Scenario) -> list[Ladder]:
    """Every ``after`` for the scenario's rungs: strictly increasing thresholds in
    ``1..reach``, latest first (the order ties are broken in)."""
    assert scenario.escalation is not None
    rungs, top = scenario.escalation.rungs, reach(scenario)
    return sorted(itertools.combinations(range(1, top + 1), rungs), reverse=True)


def escalation(
    scenario: Scenario | Mapping[str, Any],
    target: float | None = None,
    *,
    objective: str | None = None,
) -> Plan:
    r"""The ladder's ``after`` (attempt counts at which each rung takes over) of least cost
    per success that reaches ``target``; with ``objective="utility"``, of largest expected
    utility.

    The scenario must have an ``[escalation]`` table: its rungs (their ``p`` and
    ``attempt_cost``) are kept, and only when each serves is planned. ``after`` ranges over
    every strictly increasing list of thresholds in ``1..R``, where ``R`` is the most retries
    an execution can spend (the largest ``retries.per_step``, capped by ``retries.total``):
    :math:`\binom{R}{K}` ladders for ``K`` rungs. Every ladder is judged by the exact engine
    when there are at most ``MAX_LADDERS`` (the answer is exact); beyond, the plan is refused
    with the count and what to do instead (fewer rungs or a smaller budget). Among designs
    whose objective is within ``1e-12`` (relative) of the best, the latest ladder is taken
    (the largest ``after``, compared from the first rung): the stronger, dearer rungs then
    serve the fewest attempts.

    ``objective`` is ``"cost_per_success"`` (the default) or ``"utility"`` (the scenario
    needs a ``[utility]`` table; no target to meet). When no ladder meets the target, the plan
    is infeasible with the best success as the ceiling and, as the nearest design, the ladder
    of least cost per success within ``1e-6`` of it.

    Parameters
    ----------
    scenario : Scenario or mapping
        The design to plan from (a mapping is read as the engines read it); every quantity but
        the planned one is kept.
    target : float, optional
        End-to-end success wanted, in (0, 1]; default the scenario's ``target``.
    objective : str, optional
        None: the ladder of least cost per success that meets the target; or one of
        ``"cost_per_success"``, ``"utility"`` (:mod:`relsim.plan.objective`).

    Returns
    -------
    Plan
        ``value`` is the ladder's ``after`` (a tuple of int), with the planned design's exact
        outcome, whether it meets the target (``feasible``) and, when not, the ``ceiling``, the
        ``binding`` key and the ``reason``.

    Examples
    --------
    A cheap model (p 0.6, cost 0.2) first, a strong one (p 0.95, cost 1) once it has been
    rejected, three retries per step: escalating after the first rejection costs 1.86 per
    success, after the second 1.35, after the third 1.14 but with success 0.9904 only.

    >>> s = Scenario.from_dict({"steps": 3, "p": 0.6, "verifier": {}, "retries":
    ...     {"per_step": 3}, "cost": {"attempt": 0.2}, "escalation": {"after": [1],
    ...     "p": [0.95], "attempt_cost": [1.0]}})
    >>> plan = escalation(s, 0.995)
    >>> plan.value, round(plan.success, 6), round(plan.cost_per_success, 4)
    ((2,), 0.9988, 1.3451)
    """
    scenario = as_scenario(scenario)
    chosen = objectives.check_objective("escalation", objective) or "cost_per_success"
    use_utility = chosen == "utility"
    if isinstance(scenario, Scenario) and scenario.escalation is None:
        raise RelsimError(
            "escalation: must be an [escalation] table in the scenario (its rungs' p and "
            "attempt_cost; after, when each takes over, is what is planned), got none"
        )
    candidates = ladders(scenario) if isinstance(scenario, Scenario) else []
    if len(candidates) > MAX_LADDERS:
        assert scenario.escalation is not None
        raise RelsimError(
            f"escalation: {scenario.escalation.rungs} rungs over thresholds 1..{reach(scenario)} "
            f"make {len(candidates)} ladders, over the planner's limit of {MAX_LADDERS} (each "
            "is judged exactly): plan fewer rungs, or a smaller retries.per_step"
        )
    if use_utility:
        goal = objectives.utility_target(scenario, target, "escalation", len(candidates))
    else:
        goal = goal_of(scenario, target)
        _common._check_work(scenario, "escalation", len(candidates) + 1)
    outcomes: dict[Ladder, Outcome] = {}

    def outcome(after: Ladder) -> Outcome:
        if after not in outcomes:
            outcomes[after] = evaluate_design(with_after(scenario, after))
        return outcomes[after]

    order = {after: k for k, after in enumerate(candidates)}  # latest first
    if use_utility:
        best = objectives.best_by_utility(candidates, outcome, order.__getitem__)
        details = {"method": f"every ladder ({len(candidates)}, exact)"}
        return objectives.utility_plan("escalation", best, with_after(scenario, best), goal, details)
    assert goal is not None
    feasible = [a for a in candidates if meets_goal(outcome_success(outcome(a)), goal)]
    details = {"objective": chosen, "method": f"every ladder ({len(candidates)}, exact)"}
    if feasible:
        best = _least(feasible, lambda a: outcome(a).cost_per_success, order)
        return make_plan("escalation", best, with_after(scenario, best), goal, feasible=True,
                         details=details)
    ceiling = max(outcome(a).success for a in candidates)
    near = [a for a in candidates if outcome(a).success >= ceiling - NEAR_CEILING]
    nearest = _least(near, lambda a: outcome(a).cost_per_success, order)

    def ceiling_of(candidate: Scenario) -> float:
        return evaluate_design(with_after(candidate, nearest)).success

    binding, reason = diagnose(
        scenario, goal, ceiling, "escalation", ceiling_of, skip={"escalation.after"}
    )
    return make_plan(
        "escalation",
        nearest,
        with_after(scenario, nearest),
        goal,
        feasible=False,
        ceiling=ceiling,
        binding=binding,
        reason=reason,
        details=details,
    )


def _least(candidates: list[Ladder], value: Callable[[Ladder], float], order: dict[Ladder, int]) -> Ladder:
    """The candidate of least ``value``; among those within ``TIE`` of it, the first in
    ``order`` (the latest ladder)."""
    values = {a: value(a) for a in candidates}
    low = min(values.values())
    if math.isinf(low):
        near = candidates
    else:
        near = [a for a in candidates if values[a] <= low + TIE * max(1.0, abs(low))]
    return min(near, key=order.__getitem__)
