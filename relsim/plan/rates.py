"""Rates: the least per-attempt success :func:`p` and the verifier rates (:func:`verifier`:
the largest ``miss`` and, separately, the largest ``false_reject``) that reach a target."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Mapping

from relsim.errors import RelsimError
from relsim.plan._common import (
    BISECTION_WIDTH,
    SCAN_INTERVALS,
    Plan,
    goal_of,
    make_plan,
    meets_goal,
    exact_success,
    with_rate,
)
from relsim.plan.binding import diagnose
from relsim.plan.search import boundary
from relsim.scenario import Scenario, as_scenario

__all__ = ["p", "verifier"]


def verifier(scenario: Scenario | Mapping[str, Any], target: float | None = None) -> Plan:
    r"""The largest ``miss`` at which ``target`` is reachable with the scenario's budgets; in
    ``details["false_reject"]``, separately, the largest ``false_reject``.

    Each is uniform across steps and the other rate is kept. A scenario without a verifier
    gets one (``false_reject = 0``) and no retries. The search relies on success being
    non-increasing in each rate: rejecting a correct result never beats accepting it, and
    without checkpoints an accepted wrong result is a certain failure, never better than a
    rejection. For a verified step the success

    .. math:: a S_r = p(1-f)\,\frac{1 - q^{r+1}}{1 - q}, \qquad q = pf + (1-p)(1-m),

    falls as either rate grows. The bracket [0, 1] is closed to ``1e-9`` by regula falsi.
    With ``[[failure_modes]]`` (each mode its own miss) there is no one miss to plan: refused.
    With checkpoints and scarce retries an accepted wrong result may be caught and rolled back
    while a rejected one ends the trial, so success can *rise* with ``miss``: there the
    ``miss`` search first scans [0, 1] in ``SCAN_INTERVALS`` intervals and closes the last
    feasible one (exact when monotone, and blind only to features narrower than 1/16);
    when no grid point reaches the target, a bounded Brent search around the best one
    finds the peak between grid points (the ceiling, or a feasible ``miss`` after all).

    Parameters
    ----------
    scenario : Scenario or mapping
        The design to plan from (a mapping is read as the engines read it); every quantity but
        the planned one is kept.
    target : float, optional
        End-to-end success wanted, in (0, 1]; default the scenario's ``target``.

    Returns
    -------
    Plan
        ``value`` is the largest ``miss`` (a float; the largest ``false_reject`` in
        ``details``), with the planned design's exact outcome, whether it meets the target
        (``feasible``) and, when not, the ``ceiling``, the ``binding`` key and the ``reason``.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
    ...                         "retries": {"per_step": 3}})
    >>> plan = verifier(s, 0.95)
    >>> round(plan.value, 6), plan.feasible  # solves (0.9 S_3)**25 = 0.95, q = 0.1 (1-m)
    (0.017645, True)
    """
    scenario = as_scenario(scenario)
    goal = goal_of(scenario, target, "verifier")
    if scenario.failure_modes:
        raise RelsimError(
            f"failure_modes: must be left out to plan the verifier's one miss (each of the "
            f"{len(scenario.failure_modes)} modes has its own; relsim.plan.levers halves each "
            "in turn), got failure modes"
        )
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


def p(scenario: Scenario | Mapping[str, Any], target: float | None = None) -> Plan:
    r"""The least per-attempt success ``p`` (the same at every step) that reaches ``target``
    with the scenario's verifier and budgets.

    Relies on success being non-decreasing in ``p`` (a correct attempt is never worse than a
    wrong one: it is accepted at least as often, is never caught at a checkpoint and never
    confuses the agent), so [0, 1] brackets the answer and regula falsi closes it to
    ``1e-9``, reporting the feasible end. Infeasible when even ``p = 1`` falls short (false
    rejections or false alarms spending the budgets). Without a verifier the answer is
    :math:`T^{1/n}`; with a perfect one and ``r`` retries,
    :math:`1 - (1 - T^{1/n})^{1/(r+1)}`. With ``[[classes]]`` (each class its own ``p``)
    there is no one ``p`` to plan: refused.

    Parameters
    ----------
    scenario : Scenario or mapping
        The design to plan from (a mapping is read as the engines read it); every quantity but
        the planned one is kept.
    target : float, optional
        End-to-end success wanted, in (0, 1]; default the scenario's ``target``.

    Returns
    -------
    Plan
        ``value`` is the least per-attempt success (a float), with the planned design's exact
        outcome, whether it meets the target (``feasible``) and, when not, the ``ceiling``, the
        ``binding`` key and the ``reason``.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 20, "p": 0.9})
    >>> round(p(s, 0.9).value, 6)  # 0.9 ** (1/20): no verifier, success is p ** steps
    0.994746
    """
    scenario = as_scenario(scenario)
    goal = goal_of(scenario, target, "p")
    if scenario.classes:
        raise RelsimError(
            f"classes: must be left out to plan one p (each of the {len(scenario.classes)} "
            "classes has its own; relsim.plan.levers raises them together), got classes"
        )
    return _probability_search(
        "p",
        scenario,
        goal,
        lambda value: replace(scenario, p=value),
        increasing=True,
    )


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
    :func:`boundary` closes in; with ``scan``, a grid of ``SCAN_INTERVALS`` intervals comes
    first and the last (first) feasible interval is the bracket."""
    values: dict[float, float] = {}

    def at(value: float) -> float:
        if value not in values:
            values[value] = exact_success(apply(value))
        return values[value]

    intervals = SCAN_INTERVALS if scan else 1
    grid = [i / intervals for i in range(intervals + 1)]
    feasible = [x for x in grid if meets_goal(at(x), goal)]
    if feasible:
        if increasing:
            good = min(feasible)
            bad = good - 1.0 / intervals
        else:
            good = max(feasible)
            bad = good + 1.0 / intervals
        if 0.0 <= bad <= 1.0:
            good = boundary(at, goal, good, bad)
        return make_plan(for_, good, apply(good), goal, feasible=True)
    candidates = list(grid)
    if scan:  # the best grid point's neighbourhood may hold a higher peak: look for it
        peak = _refine_peak(at, max(grid, key=at), 1.0 / intervals)
        candidates.append(peak)
        if meets_goal(at(peak), goal):  # feasible after all: close towards the cheap end,
            # up to the next grid point that way (infeasible, as every grid point is)
            beyond = [x for x in grid if (x < peak if increasing else x > peak)]
            good = peak
            if beyond:
                good = boundary(at, goal, peak, max(beyond) if increasing else min(beyond))
            return make_plan(for_, good, apply(good), goal, feasible=True)
    ceiling = max(at(x) for x in candidates)
    # the nearest design: the cheapest value (least p, largest rate) at the ceiling
    near = [x for x in candidates if at(x) >= ceiling]
    best = min(near) if increasing else max(near)
    perfect = 1.0 if increasing else 0.0  # where success is largest when monotone

    def ceiling_of(candidate: Scenario) -> float:
        if key is None:
            return exact_success(replace(candidate, p=perfect))
        return exact_success(with_rate(candidate, key, perfect))

    skip = {"p"} if key is None else {f"verifier.{key}"}
    binding, reason = diagnose(scenario, goal, ceiling, for_, ceiling_of, skip=skip)
    return make_plan(
        for_,
        best,
        apply(best),
        goal,
        feasible=False,
        ceiling=ceiling,
        binding=binding,
        reason=reason,
    )


def _refine_peak(at: Callable[[float], float], centre: float, width: float) -> float:
    """The value of largest success within ``width`` of the grid point ``centre`` (bounded
    Brent search, to ``BISECTION_WIDTH``; ``centre`` itself when nothing beats it). The scan's
    grid point next to a peak can sit well below it; the ceiling is the peak."""
    from scipy.optimize import minimize_scalar

    low, high = max(0.0, centre - width), min(1.0, centre + width)
    found = minimize_scalar(
        lambda x: -at(float(x)),
        bounds=(low, high),
        method="bounded",
        options={"xatol": BISECTION_WIDTH},
    )
    peak = float(found.x)
    return peak if at(peak) > at(centre) else centre


def _rate_plan(scenario: Scenario, goal: float, key: str) -> Plan:
    plan = _probability_search(
        "verifier",
        scenario,
        goal,
        lambda value: with_rate(scenario, key, value),
        increasing=False,
        key=key,
        scan=key == "miss" and scenario.checkpoints is not None,
    )
    return replace(plan, details={"key": key})


