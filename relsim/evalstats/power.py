r"""Power of a paired comparison: tasks needed, and the smallest detectable gain.

A normal approximation for a paired design: both systems run :math:`K` trials on each of the
same :math:`T` independent tasks (see :func:`tasks_needed`).
"""

from __future__ import annotations

import math

from relsim.errors import invalid
from relsim.evalstats._common import is_count, is_real

__all__ = ["minimum_detectable_effect", "tasks_needed"]


def tasks_needed(
    delta: float,
    baseline: float,
    *,
    trials_per_task: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    difference_sd: float = 0.0,
) -> int:
    r"""Number of tasks a paired comparison needs to detect a difference ``delta``.

    .. math::

        T = \left\lceil \frac{(z_{1-\alpha/2} + z_{\mathrm{power}})^2
            \bigl(W^2 + (P(1-P) + Q(1-Q))/K\bigr)}{D^2} \right\rceil,
        \qquad Q = P + D

    with :math:`P` the baseline success, :math:`D` the difference, :math:`K` trials per task
    and :math:`W` the standard deviation of the true per-task differences (at least 1 task).

    Assumptions: both systems run :math:`K` trials on each of the same :math:`T` tasks,
    drawn independently; the per-task difference of observed rates has variance
    :math:`W^2 + (P(1-P)+Q(1-Q))/K` (binomial trials at every task's rate P or Q: when tasks
    differ in difficulty, the true binomial variance is smaller, so :math:`T` errs on the
    large side); the test is the two-sided paired test at level :math:`\alpha`, and the
    normal approximation holds (for small :math:`T` the t-test needs a few more tasks).

    Parameters
    ----------
    delta : float
        :math:`D \ne 0`, with :math:`P + D` in [0, 1].
    baseline : float
        :math:`P` in [0, 1].
    trials_per_task : int
        :math:`K \ge 1`.
    alpha, power : float
        In (0, 1).
    difference_sd : float
        :math:`W \ge 0`.

    Examples
    --------
    A 3-point gain over a 70% baseline, one trial per task (the lesson: "with 100 tasks, a
    3-point difference is usually within the confidence interval"):

    >>> tasks_needed(0.03, 0.7)
    3551
    """
    _check_power_inputs(baseline, trials_per_task, alpha, power, difference_sd)
    if not (is_real(delta) and math.isfinite(delta)) or delta == 0:
        raise invalid("delta", "a nonzero number", delta)
    if not 0.0 <= baseline + delta <= 1.0:
        raise invalid(
            "delta",
            f"a number keeping baseline + delta in [0, 1], i.e. in [{-baseline:g}, "
            f"{1 - baseline:g}]",
            delta,
        )
    z = _z_sum(alpha, power)
    value = z**2 * _difference_variance(baseline, delta, trials_per_task, difference_sd) / delta**2
    return max(1, math.ceil(round(value, 9)))


def minimum_detectable_effect(
    tasks: int,
    baseline: float,
    *,
    trials_per_task: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    difference_sd: float = 0.0,
) -> float | None:
    r"""The smallest gain :math:`D > 0` that ``tasks`` tasks detect with the given power.

    Solves the equation of :func:`tasks_needed` (without the ceiling) for :math:`D`:

    .. math::

        T D^2 = (z_{1-\alpha/2} + z_{\mathrm{power}})^2
                \bigl(W^2 + (P(1-P) + Q(1-Q))/K\bigr), \qquad Q = P + D,

    by Brent's method on :math:`(0, 1-P]` (its left side minus its right side increases with
    :math:`D` there, so the root is unique). Same assumptions as :func:`tasks_needed`.

    Returns
    -------
    float or None
        None when no gain up to :math:`Q = 1` is detectable with ``tasks`` tasks.

    Examples
    --------
    >>> round(minimum_detectable_effect(100, 0.7), 4)
    0.1609
    """
    from scipy.optimize import brentq

    _check_power_inputs(baseline, trials_per_task, alpha, power, difference_sd)
    if not is_count(tasks) or tasks < 1:
        raise invalid("tasks", "an integer >= 1", tasks)
    z2 = _z_sum(alpha, power) ** 2

    def excess(delta: float) -> float:
        return tasks * delta**2 - z2 * _difference_variance(
            baseline, delta, trials_per_task, difference_sd
        )

    largest = 1.0 - baseline
    if largest <= 0 or excess(largest) < 0:
        return None
    return float(brentq(excess, 1e-15, largest, xtol=1e-14, rtol=1e-12))


def _difference_variance(baseline: float, delta: float, trials: int, difference_sd: float) -> float:
    other = baseline + delta
    return difference_sd**2 + (baseline * (1 - baseline) + other * (1 - other)) / trials


def _z_sum(alpha: float, power: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2) + norm.ppf(power))


def _check_power_inputs(baseline, trials_per_task, alpha, power, difference_sd) -> None:
    if not (is_real(baseline) and 0.0 <= baseline <= 1.0):
        raise invalid("baseline", "in [0, 1]", baseline)
    if not is_count(trials_per_task) or trials_per_task < 1:
        raise invalid("trials_per_task", "an integer >= 1", trials_per_task)
    for name, value in (("alpha", alpha), ("power", power)):
        if not (is_real(value) and 0.0 < value < 1.0):
            raise invalid(name, "in (0, 1)", value)
    if not (is_real(difference_sd) and math.isfinite(difference_sd) and difference_sd >= 0):
        raise invalid("difference_sd", "a number >= 0", difference_sd)
