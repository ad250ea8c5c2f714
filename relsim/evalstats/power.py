r"""Power of a paired comparison: tasks needed, and the smallest detectable gain.

A paired design: both systems run :math:`K` trials on each of the same :math:`T` independent
tasks, compared by the two-sided paired t-test, whose power is computed exactly from the
noncentral t distribution (see :func:`paired_power`), so the count :func:`tasks_needed`
reports delivers the power asked, down to a few tasks.
"""

from __future__ import annotations

import math
import struct

from relsim.errors import invalid
from relsim.evalstats._common import is_count, is_real

__all__ = ["MIN_TASKS", "minimum_detectable_effect", "paired_power", "tasks_needed"]

#: The fewest tasks a paired comparison takes (:func:`relsim.evalstats.compare` needs two).
MIN_TASKS = 2
#: The largest answer :func:`tasks_needed` gives, as a power of ten.
MAX_TASKS_DIGITS = 15


def paired_power(
    tasks: int,
    delta: float,
    baseline: float,
    *,
    trials_per_task: int = 1,
    alpha: float = 0.05,
    difference_sd: float = 0.0,
) -> float:
    r"""Power of the two-sided paired t-test at level :math:`\alpha` with :math:`T` tasks.

    The per-task differences of observed rates have mean :math:`D` and variance

    .. math::

        \sigma^2 = W^2 + \bigl(P(1-P) + Q(1-Q)\bigr)/K, \qquad Q = P + D,

    so :math:`t = \bar d / (s_d/\sqrt T)` follows the noncentral t with :math:`T-1` degrees of
    freedom and noncentrality :math:`\lambda = |D|\sqrt T/\sigma`, and the power is

    .. math::

        \Pr(t > t_{1-\alpha/2,\,T-1}) + \Pr(t < -t_{1-\alpha/2,\,T-1})

    (``scipy.stats.nct``; 1 when :math:`\sigma = 0`). Same assumptions as
    :func:`tasks_needed`.

    Parameters
    ----------
    tasks : int
        :math:`T \ge 2`, the tasks both systems ran.
    delta : float
        :math:`D`, with :math:`P + D` in [0, 1].
    baseline : float
        :math:`P` in [0, 1].
    trials_per_task : int
        :math:`K \ge 1`.
    alpha : float
        In (0, 1).
    difference_sd : float
        :math:`W \ge 0`.

    Returns
    -------
    float
        The power, in [0, 1].

    Examples
    --------
    >>> round(paired_power(4, 0.5, 0.5, trials_per_task=5), 3)  # sigma^2 = 0.25/5, lambda 4.47
    0.834
    """
    _check_power_inputs(baseline, trials_per_task, alpha, 0.5, difference_sd)
    _check_delta(delta, baseline)
    _check_tasks(tasks)
    variance = _difference_variance(baseline, delta, trials_per_task, difference_sd)
    return _t_power(int(tasks), delta, variance, alpha)


def _t_power(tasks: int, delta: float, variance: float, alpha: float) -> float:
    """:func:`paired_power` from the variance of a per-task difference."""
    import warnings

    import numpy as np
    from scipy import stats

    if variance == 0:
        return 1.0
    degrees = tasks - 1
    critical = float(stats.t.isf(alpha / 2, degrees))
    shift = abs(delta) / math.sqrt(variance) * math.sqrt(tasks)  # no overflow at tiny delta
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # scipy's noncentral t says so (and gives NaN) where a tail is below 1e-18
        warnings.simplefilter("ignore")
        upper = float(stats.nct.sf(critical, degrees, shift))
        lower = float(stats.nct.cdf(-critical, degrees, shift))
    if not math.isfinite(upper):
        upper = 1.0 if shift > critical else 0.0
    return min(1.0, upper + (lower if math.isfinite(lower) else 0.0))


def tasks_needed(
    delta: float,
    baseline: float,
    *,
    trials_per_task: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    difference_sd: float = 0.0,
) -> int:
    r"""Number of tasks a paired comparison needs to detect a difference ``delta``: the
    least :math:`T \ge 2` whose paired t-test has at least the power asked,

    .. math::

        T = \min\{T \ge 2 : \mathrm{power}_t(T) \ge \mathrm{power}\}

    with :math:`\mathrm{power}_t` the exact power of :func:`paired_power` (noncentral t,
    :math:`T-1` degrees of freedom), :math:`P` the baseline success, :math:`D` the difference,
    :math:`K` trials per task and :math:`W` the standard deviation of the true per-task
    differences. The search starts from the normal approximation

    .. math::

        T_z = \frac{(z_{1-\alpha/2} + z_{\mathrm{power}})^2
            \bigl(W^2 + (P(1-P) + Q(1-Q))/K\bigr)}{D^2}, \qquad Q = P + D,

    which the t-test needs a few tasks more than (at 80% power and 5%: a gain of 0.17 over 0
    with 10 trials a task needs 7 tasks where :math:`T_z` says 4, whose power is 0.50; 0.11
    over 0.6 needs 31 where it says 29).

    Assumptions: both systems run :math:`K` trials on each of the same :math:`T` tasks,
    drawn independently; the per-task difference of observed rates has variance
    :math:`W^2 + (P(1-P)+Q(1-Q))/K` (binomial trials at every task's rate P or Q: when tasks
    differ in difficulty, the true binomial variance is smaller, so :math:`T` errs on the
    large side); the test is the two-sided paired t-test at level :math:`\alpha` on
    differences close enough to normal (``relsim compare``'s own interval is more cautious
    than the t-test on a handful of tasks, see the coverage table in docs/commands/trials.md).

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

    Returns
    -------
    int
        The least number of tasks :math:`T`, at least :data:`MIN_TASKS`.

    Examples
    --------
    A 3-point gain over a 70% baseline, one trial per task (the lesson: "with 100 tasks, a
    3-point difference is usually within the confidence interval"):

    >>> tasks_needed(0.03, 0.7)
    3553

    At least :data:`MIN_TASKS` (2): a paired comparison needs two tasks to see their spread.
    A difference so small that more than :math:`10^{15}` tasks would be needed is refused
    with the number it would take (a :class:`relsim.errors.RelsimError`).
    """
    _check_power_inputs(baseline, trials_per_task, alpha, power, difference_sd)
    _check_delta(delta, baseline)
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

    def enough(tasks: int) -> bool:
        return _t_power(tasks, delta, variance, alpha) >= power

    # start from the normal approximation's count (the two-sided t-test can need a few tasks
    # more, or at astronomic counts fewer: its other tail), then gallop and bisect
    guess = max(MIN_TASKS, math.ceil(need / (delta * delta)))
    return _least(enough, guess)


def _least(enough, guess: int) -> int:
    """The least integer >= MIN_TASKS where ``enough`` (monotone) holds, searched from
    ``guess`` by doubling steps, then bisection."""
    if enough(guess):
        high, step = guess, 1
        while high > MIN_TASKS:
            low = max(MIN_TASKS, high - step)
            if not enough(low):
                break
            high, step = low, step * 2
        else:
            return MIN_TASKS
    else:
        low, step = guess, 1
        high = low + step
        while not enough(high):
            low, step = high, step * 2
            high = low + step
    while high - low > 1:  # enough(high), not enough(low)
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


def minimum_detectable_effect(
    tasks: int,
    baseline: float,
    *,
    trials_per_task: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    difference_sd: float = 0.0,
) -> float | None:
    r"""The smallest gain :math:`D > 0` that ``tasks`` tasks detect with the given power:
    the least :math:`D` in :math:`(0, 1-P]` at which :func:`paired_power` reaches ``power``
    (the power rises with :math:`D` there), found by bisection on the floats. Same
    assumptions as :func:`tasks_needed`.

    Parameters
    ----------
    tasks : int
        :math:`T \ge 2`, the tasks both systems run.
    baseline : float
        :math:`P` in [0, 1] (at 1 no gain is possible: None).
    trials_per_task, alpha, power, difference_sd
        As in :func:`tasks_needed`.

    Returns
    -------
    float or None
        None when no gain up to :math:`Q = 1` is detectable with ``tasks`` tasks. The
        returned gain is the least float at which the power holds, so
        ``tasks_needed(minimum_detectable_effect(T, P), P) == T``.

    Examples
    --------
    >>> round(minimum_detectable_effect(100, 0.7), 4)
    0.1622
    """
    _check_power_inputs(baseline, trials_per_task, alpha, power, difference_sd)
    _check_tasks(tasks)

    def enough(delta: float) -> bool:
        variance = _difference_variance(baseline, delta, trials_per_task, difference_sd)
        return _t_power(int(tasks), delta, variance, alpha) >= power

    largest = 1.0 - baseline
    if largest <= 0 or not enough(largest):
        return None
    smallest = 5e-324
    if enough(smallest):
        return smallest
    from scipy.optimize import brentq

    def shortfall(delta: float) -> float:
        variance = _difference_variance(baseline, delta, trials_per_task, difference_sd)
        return _t_power(int(tasks), delta, variance, alpha) - power

    # near the root by Brent's method, then bisection on the floats' bit patterns (positive
    # floats sort as their integers) to the least float that passes
    root = float(brentq(shortfall, smallest, largest, xtol=1e-300, rtol=1e-13, maxiter=200))
    low, high = _bits(smallest), _bits(largest)
    for near in (root * (1 - 1e-12), root * (1 + 1e-12)):
        if smallest < near < largest:
            if enough(near):
                high = min(high, _bits(near))
            else:
                low = max(low, _bits(near))
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(_float(middle)) else (middle, high)
    return _float(high)


def _bits(value: float) -> int:
    return struct.unpack("<q", struct.pack("<d", value))[0]


def _float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def _check_tasks(tasks: int) -> None:
    # the upper bound is tasks_needed's largest answer; past int64 scipy's t quantile fails
    if not is_count(tasks) or not MIN_TASKS <= tasks <= 10**MAX_TASKS_DIGITS:
        raise invalid(
            "tasks",
            f"an integer in {MIN_TASKS}..10^{MAX_TASKS_DIGITS} (a paired comparison needs two)",
            tasks,
        )


def _check_delta(delta: float, baseline: float) -> None:
    if not (is_real(delta) and math.isfinite(delta)) or delta == 0:
        raise invalid("delta", "a nonzero number", delta)
    if not 0.0 <= baseline + delta <= 1.0:
        raise invalid(
            "delta",
            f"a number keeping baseline + delta in [0, 1], i.e. in [{-baseline:g}, "
            f"{1 - baseline:g}]",
            delta,
        )


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
