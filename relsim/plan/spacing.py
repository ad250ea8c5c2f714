"""Checkpoint spacing: :func:`checkpoints`, the ``every = k`` of least expected cost that
reaches a target, or (``objective="utility"``) of largest expected utility."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from relsim.errors import RelsimError
from relsim.plan import objective as objectives
from relsim.plan._common import (
    EXHAUSTIVE_CHECKPOINTS,
    Plan,
    evaluate_design,
    goal_of,
    outcome_success,
    make_plan,
    meets_goal,
    with_every,
)
from relsim.plan.binding import diagnose
from relsim.results import Outcome
from relsim.scenario import Scenario, as_scenario

__all__ = ["checkpoints"]


def checkpoints(
    scenario: Scenario | Mapping[str, Any],
    target: float | None = None,
    *,
    objective: str | None = None,
) -> Plan:
    r"""The checkpoint spacing ``every = k`` of least expected cost with success >= target;
    with ``objective="utility"``, the spacing of largest expected utility.

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

    ``objective="expected_cost"`` is the default; ``objective="utility"`` (the scenario needs
    a ``[utility]`` table) judges the same spacings by expected utility, with no target to
    meet; among equals (within ``1e-12``) the fewest checks, the larger ``k``.

    Parameters
    ----------
    scenario : Scenario or mapping
        The design to plan from (a mapping is read as the engines read it); every quantity but
        the planned one is kept.
    target : float, optional
        End-to-end success wanted, in (0, 1]; default the scenario's ``target``.
    objective : str, optional
        None: the spacing of least expected cost that meets the target; or one of
        ``"expected_cost"``, ``"utility"`` (:mod:`relsim.plan.objective`).

    Returns
    -------
    Plan
        ``value`` is the spacing ``every`` (an int), with the planned design's exact outcome,
        whether it meets the target (``feasible``) and, when not, the ``ceiling``, the
        ``binding`` key and the ``reason``.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 20, "p": 0.98, "checkpoints": {"every": 1,
    ...     "final": True, "rollbacks": 4}, "cost": {"checkpoint": 2.0}})
    >>> checkpoints(s, 0.9).value  # sqrt(2 / 0.02) = 10
    10
    """
    scenario = as_scenario(scenario)
    use_utility = objectives.check_objective("checkpoints", objective) == "utility"
    if use_utility:
        goal = objectives.utility_target(scenario, target, "checkpoints")
    else:
        goal = goal_of(scenario, target, "checkpoints")
    if scenario.checkpoints is None:
        raise RelsimError(
            "checkpoints: must be a [checkpoints] table in the scenario (with detect, "
            "false_alarm and rollbacks; every is what is planned), got none"
        )
    n = scenario.steps
    results: dict[int, Outcome] = {}

    def outcome(k: int) -> Outcome:
        if k not in results:
            results[k] = evaluate_design(with_every(scenario, k))
        return results[k]

    if n <= EXHAUSTIVE_CHECKPOINTS:
        candidates = list(range(1, n + 1))
    else:
        grid = {int(round(x)) for x in np.geomspace(1, n, 16)} | {n}
        candidates = sorted(k for k in grid if 1 <= k <= n)
    for k in candidates:
        outcome(k)

    def best_of() -> int | None:
        if use_utility:  # every spacing is a candidate; among equals the fewest checks
            return objectives.best_by_utility(sorted(results), outcome, lambda k: -k)
        assert goal is not None
        feasible_ks = [k for k, o in results.items() if meets_goal(outcome_success(o), goal)]
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
            assert new_best is not None  # results only grow: a feasible spacing stays one
            if new_best == best:
                break
            best = new_best
    if best is not None and use_utility:
        method = ("every spacing (exact)" if n <= EXHAUSTIVE_CHECKPOINTS else
                  "a geometric grid and a walk to the best neighbour")
        return objectives.utility_plan("checkpoints", best, with_every(scenario, best), goal,
                                       {"method": method})
    if best is not None:
        details = {} if objective is None else {"objective": objective}
        return make_plan("checkpoints", best, with_every(scenario, best), goal, feasible=True,
                         details=details)
    assert goal is not None
    top = max(results, key=lambda k: (results[k].success, k))
    ceiling = results[top].success

    def ceiling_of(candidate: Scenario) -> float:
        return evaluate_design(with_every(candidate, top)).success

    binding, reason = diagnose(
        scenario, goal, ceiling, "checkpoints", ceiling_of, skip={"checkpoints.every"}
    )
    return make_plan(
        "checkpoints",
        top,
        with_every(scenario, top),
        goal,
        feasible=False,
        ceiling=ceiling,
        binding=binding,
        reason=reason,
    )


