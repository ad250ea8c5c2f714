"""The search methods the planners share, on plain functions of one number.

* :func:`least_budget`: the least integer budget whose success reaches a goal, for a
  non-decreasing success (doubling, then bisection), with a convergence stop.
* :func:`least_reaching`: bisection for the least integer reaching a level.
* :func:`boundary`: the boundary of a monotone function on [0, 1] (regula falsi, Illinois).
"""

from __future__ import annotations

from typing import Callable

from relsim.plan._common import BISECTION_WIDTH, CONVERGED, meets_goal

def least_budget(
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

    if meets_goal(at(0), goal):
        return 0, 0, at
    low, high = 0, 1
    floor = min(floor, limit)
    while not meets_goal(at(high), goal):
        if high >= limit or (high >= floor and at(high) - at(low) <= CONVERGED):
            return None, high, at
        low, high = high, min(2 * high, limit)
    while high - low > 1:
        middle = (low + high) // 2
        if meets_goal(at(middle), goal):
            high = middle
        else:
            low = middle
    return high, high, at


def least_reaching(at: Callable[[int], float], level: float, high: int) -> int:
    """Least ``b`` in ``0..high`` with ``at(b) >= level``, ``at`` non-decreasing."""
    low = -1
    while high - low > 1:
        middle = (low + high) // 2
        if at(middle) >= level:
            high = middle
        else:
            low = middle
    return high


def boundary(at: Callable[[float], float], goal: float, good: float, bad: float) -> float:
    """Close a bracket (``at(good)`` reaches ``goal``, ``at(bad)`` does not, by
    :func:`meets_goal`) of a monotone function to ``BISECTION_WIDTH`` by regula falsi with the
    Illinois modification (superlinear, a handful of evaluations), falling back to
    bisection; returns the feasible end."""
    reached = goal
    f_good, f_bad = at(good) - reached, at(bad) - reached
    w_good, w_bad = f_good, f_bad  # the weights, halved when one end sticks
    last = 0
    for _ in range(200):
        if abs(good - bad) <= BISECTION_WIDTH or f_good <= 1e-15:
            break
        slope = w_bad - w_good
        x = good - w_good * (bad - good) / slope if slope != 0 else 0.5 * (good + bad)
        low, high = min(good, bad), max(good, bad)
        margin = 0.01 * (high - low)
        if not low + margin < x < high - margin:
            x = 0.5 * (good + bad)
        value = at(x)
        fx = value - reached
        if meets_goal(value, goal):
            fx = max(fx, 0.0)  # feasible by the rule though it may round below the goal
            good, f_good, w_good = x, fx, fx
            if last == 1:
                w_bad *= 0.5
            last = 1
        else:
            fx = min(fx, -1e-300)  # infeasible by the rule though it may round to the goal
            bad, f_bad, w_bad = x, fx, fx
            if last == -1:
                w_good *= 0.5
            last = -1
    return good
