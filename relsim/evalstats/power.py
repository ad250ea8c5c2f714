r"""Power of a paired comparison: tasks needed, and the smallest detectable gain.

A normal approximation for a paired design: both systems run :math:`K` trials on each of the
same :math:`T` independent tasks (see :func:`tasks_needed`).
"""

from __future__ import annotations

import math

from relsim.errors import invalid
from relsim.evalstats._common import is_count, is_real

__all__ = ["MIN_TASKS", "minimum_detectable_effect", "tasks_needed"]

#: The fewest tasks a paired comparison takes (:func:`relsim.evalstats.compare` needs two).
MIN_TASKS = 2
#: The largest answer :func:`tasks_needed` gives, as a power of ten.
MAX_TASKS_DIGITS = 15


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

    At least :data:`MIN_TASKS` (2): a paired comparison needs two tasks to see their spread.
    A difference so small that more than :math:`10^{15}` tasks would be needed is refused
    with the number it would take (a :class:`relsim.errors.RelsimError`).
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
    z2 = _z_sum(alpha, power) ** 2
    variance = _difference_variance(baseline, delta, trials_per_task, difference_sd)
    need = z2 * variance
    if need == 0:  # no noise at all (rates 0 and 1, no spread): the fewest tasks a test takes
        return MIN_TASKS
    # the size of the answer, in logs: delta**2 may underflow and need / delta**2 overflow
    digits = (math.log10(z2) if z2 > 0 else -math.inf) + math.log10(variance) - 2 * math.log10(
        abs(delta)
    )
    if digits > MAX_TASKS_DIGITS:
        huge = not math.isfinite(digits) or digits > 300
        about = "more than 10^300" if huge else f"about 10^{digits:.0f}"
        raise invalid(
            "delta",
            f"a difference that at most 10^{MAX_TASKS_DIGITS} tasks can detect (with this "
            f"noise, alpha and power it would take {about} tasks)",
            delta,
        )
    square = delta * delta
    tasks = max(MIN_TASKS, math.ceil(need / square))
    # the ceiling of a rounded quotient can be one off: settle it on the inequality itself,
    # T * delta^2 >= need, the one minimum_detectable_effect solves
    while tasks > MIN_TASKS and (tasks - 1) * square >= need:
        tasks -= 1
    while tasks * square < need:
        tasks += 1
    return tasks


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
        None when no gain up to :math:`Q = 1` is detectable with ``tasks`` tasks. The
        returned gain is the least float at which the equation's inequality holds, so
        ``tasks_needed(minimum_detectable_effect(T, P), P) == T``.

    Examples
    --------
    >>> round(minimum_detectable_effect(100, 0.7), 4)
    0.1609
    """
    from scipy.optimize import brentq

    _check_power_inputs(baseline, trials_per_task, alpha, power, difference_sd)
    if not is_count(tasks) or tasks < MIN_TASKS:
        raise invalid("tasks", f"an integer >= {MIN_TASKS} (a paired comparison needs two)", tasks)
    z2 = _z_sum(alpha, power) ** 2

    def excess(delta: float) -> float:
        return tasks * (delta * delta) - z2 * _difference_variance(
            baseline, delta, trials_per_task, difference_sd
        )

    largest = 1.0 - baseline
    if largest <= 0 or not excess(largest) >= 0:
        return None
    smallest = 1e-300
    if excess(smallest) >= 0:
        return smallest
    root = float(brentq(excess, smallest, largest, xtol=1e-300, rtol=1e-15, maxiter=500))
    # the root as the least float that passes: tasks_needed(root) is then `tasks` exactly
    while excess(root) < 0 and root < largest:
        root = math.nextafter(root, math.inf)
    while root > smallest and excess(math.nextafter(root, 0.0)) >= 0:
        root = math.nextafter(root, 0.0)
    return root


def _difference_variance(baseline: float, delta: float, trials: int, difference_sd: float) -> float:
    other = baseline + delta
    # W * W, not W ** 2: float ** raises OverflowError where * gives infinity
    binomial = (baseline * (1 - baseline) + other * (1 - other)) / trials
    return difference_sd * difference_sd + binomial


def _z_sum(alpha: float, power: float) -> float:
    """:math:`z_{1-\\alpha/2} + z_{\\mathrm{power}}`, from the upper tail (``1 - alpha/2``
    rounds to 1 for alpha below 1e-16, where ``ppf`` would give infinity), and never below
    0: when it is negative (a power below the level) any number of tasks has that power, and
    squaring the negative sum would ask for tasks that are not needed."""
    from scipy.stats import norm

    return max(0.0, float(norm.isf(alpha / 2) - norm.isf(power)))


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
