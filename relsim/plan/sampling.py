r"""Samples per attempt: :func:`samples`, the least ``sampling.n`` that reaches a target, or
(``objective="utility"``) the ``n`` of largest expected utility."""

from __future__ import annotations

from typing import Any, Mapping

from dataclasses import replace

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
from relsim.scenario.design_tables import MAX_SAMPLES

__all__ = ["samples"]


def with_samples(scenario: Scenario, n: int) -> Scenario:
    """The scenario with ``sampling.n = n`` (its ``select`` and ``wrong_answers`` kept)."""
    assert scenario.sampling is not None
    return replace(scenario, sampling=replace(scenario.sampling, n=int(n)))


def samples(
    scenario: Scenario | Mapping[str, Any],
    target: float | None = None,
    *,
    objective: str | None = None,
) -> Plan:
    r"""The least number of samples per attempt, ``sampling.n`` in ``1..64``, that reaches
    ``target``; with ``objective="utility"``, the ``n`` of largest expected utility.

    The scenario must have a ``[sampling]`` table: its ``select`` (a vote, or the verifier
    checking the samples in order) and ``wrong_answers`` (how wrong samples split their votes)
    decide what more samples buy, and the planner does not guess them; ``n`` is what is
    planned. Success need not rise with ``n``: a vote over a mixture of easy and hard tasks
    rises, then falls back toward the share of easy tasks, and an even ``n`` ties with
    ``n - 1`` under random tie-breaks. So ``n = 1, 2, ...`` are judged in turn by the exact
    engine and the first that meets the target is the answer (exact); when none up to 64
    does, the plan is infeasible with the best success as the ceiling and the least ``n``
    within ``1e-6`` of it as the nearest design. Under utility every ``n`` in ``1..64`` is
    judged and the least of the best (ties within ``1e-12``) is taken.

    For a binary vote (``wrong_answers = 1``) with no verifier on one step, success is
    :math:`\sum_c w_c P(\text{Binomial}(n, p_c) > n/2)` plus half the tie at even ``n``.

    Parameters
    ----------
    scenario : Scenario or mapping
        The design to plan from (a mapping is read as the engines read it); every quantity but
        the planned one is kept.
    target : float, optional
        End-to-end success wanted, in (0, 1]; default the scenario's ``target``.
    objective : str, optional
        None: the least number of samples that meets the target; or ``"utility"``
        (:mod:`relsim.plan.objective`).

    Returns
    -------
    Plan
        ``value`` is the number of samples ``sampling.n`` (an int), with the planned design's
        exact outcome, whether it meets the target (``feasible``) and, when not, the
        ``ceiling``, the ``binding`` key and the ``reason``.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 1, "p": 0.7, "sampling": {"n": 1}})
    >>> samples(s, 0.9).value  # P(Binomial(9, 0.7) >= 5) = 0.901191
    9
    """
    scenario = as_scenario(scenario)
    use_utility = objectives.check_objective("samples", objective) == "utility"
    if isinstance(scenario, Scenario) and scenario.sampling is None:
        raise RelsimError(
            "sampling: must be a [sampling] table in the scenario (its select and "
            "wrong_answers say how the samples are combined; n is what is planned), got none"
        )
    if use_utility:
        goal = objectives.utility_target(scenario, target, "samples", MAX_SAMPLES)
    else:
        goal = goal_of(scenario, target)
        _common._check_work(scenario, "samples", MAX_SAMPLES)
    outcomes: dict[int, Outcome] = {}

    def outcome(n: int) -> Outcome:
        if n not in outcomes:
            outcomes[n] = evaluate_design(with_samples(scenario, n))
        return outcomes[n]

    counts = range(1, MAX_SAMPLES + 1)
    if use_utility:
        best = objectives.best_by_utility(counts, outcome, lambda n: n)
        details = {"method": f"every n from 1 to {MAX_SAMPLES} (exact)"}
        return objectives.utility_plan("samples", best, with_samples(scenario, best), goal, details)
    assert goal is not None
    for n in counts:
        if meets_goal(outcome_success(outcome(n)), goal):
            return make_plan("samples", n, with_samples(scenario, n), goal, feasible=True)
    ceiling = max(o.success for o in outcomes.values())
    nearest = min(n for n, o in outcomes.items() if o.success >= ceiling - NEAR_CEILING)

    def ceiling_of(candidate: Scenario) -> float:
        return evaluate_design(with_samples(candidate, nearest)).success

    binding, reason = diagnose(scenario, goal, ceiling, "samples", ceiling_of, skip={"sampling.n"})
    return make_plan(
        "samples",
        nearest,
        with_samples(scenario, nearest),
        goal,
        feasible=False,
        ceiling=ceiling,
        binding=binding,
        reason=reason,
    )
