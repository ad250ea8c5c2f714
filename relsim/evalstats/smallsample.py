r"""Small-sample intervals for trial data: paired differences of per-task proportions, ratios
of per-task totals (metrics, rates, cost per success), and their p-values.

``compare`` and ``analyze`` take every interval they report from here or from
:mod:`relsim.intervals`. Each function takes arrays whose last axis is the tasks and is
vectorised over any leading axes, so ``tests/test_coverage.py`` measures exactly these
functions on thousands of simulated evals at once; internally each works at a level
``alpha = 1 - confidence``, so :func:`relsim.intervals.p_value_by_inversion` can ask for
intervals at any level. Their coverage, measured, is in docs/commands/trials.md ("Measured coverage").
"""

from __future__ import annotations

import math
from typing import Any

from relsim.intervals import (
    effective_bounds,
    jeffreys_bounds,
    t_quantile,
    z_quantile,
    mover_difference,
    p_value_by_inversion,
    sign_test,
)

__all__ = [
    "cost_per_success_interval",
    "paired_proportion_interval",
    "paired_proportion_p_value",
    "paired_ratio_interval",
    "ratio_interval",
]


def paired_proportion_interval(
    baseline: Any,
    candidate: Any,
    n_baseline: Any,
    n_candidate: Any,
    k: int = 1,
    confidence: float = 0.95,
) -> tuple[Any, Any, Any, Any]:
    r"""Difference of two means of per-task values in [0, 1], paired by task, with an interval
    that holds down to a few tasks and at values of exactly 0 or 1.

    With per-task values :math:`a_i, b_i` (success rate, or the unbiased pass@k or pass^k of
    each task) over :math:`T` tasks, the difference :math:`\bar d = \bar b - \bar a` splits
    into the movement up and down, :math:`\bar u = \overline{b(1-a)}` and :math:`\bar v =
    \overline{a(1-b)}` (for one trial a task, the shares of tasks that went 0 -> 1 and 1 -> 0),
    seen in an *effective* number of paired draws,

    .. math::

        V = \max\Bigl(\frac{s_d^2}{T},\ \frac{1}{T^2}\sum_i \Bigl(\frac{k a_i(1-a_i)}{n^a_i}
            + \frac{k b_i(1-b_i)}{n^b_i}\Bigr)\Bigr), \qquad
        n^* = \min\Bigl(\frac{\bar u + \bar v - \bar d^2}{V},\ N_{\max}\Bigr)
              \Bigl(\frac{z_{(1+\gamma)/2}}{t_{(1+\gamma)/2,\,T-1}}\Bigr)^2

    (:math:`n^* = N_{\max}` times the same factor when nothing moved or nothing varies;
    :math:`N_{\max} = T / (k\,\overline{1/\min(n^a_i, n^b_i)})` counts the disjoint pairs of
    k-trial groups, as in :func:`effective_count_interval`). The interval combines the
    Jeffreys intervals of :math:`n^*\bar u` and :math:`n^*\bar v` successes in :math:`n^*`
    (:func:`mover_difference`, with the trinomial correlation :math:`-\sqrt{\bar u\bar v /
    ((1-\bar u)(1-\bar v))}`), cut to [-1, 1]. It never has zero width: four tasks that all
    went 0 -> 1 give [-0.06, 1], ten tasks that did not move at all (one trial each) give
    about [-0.22, 0.22], the rule of three's width. Its coverage is measured in
    ``tests/test_coverage.py`` (docs/commands/trials.md: "Measured coverage").

    Parameters
    ----------
    baseline, candidate : array_like
        Per-task values in [0, 1], tasks on the last axis (no NaN), at least two tasks.
    n_baseline, n_candidate : array_like
        Trials behind each value (broadcast against the values).
    k : int
        The k of pass@k or pass^k (1 for success).
    confidence : float

    Returns
    -------
    (difference, se, low, high)
        ``se`` is :math:`\sqrt V`, or where :math:`V = 0` the standard error the Jeffreys
        pseudo-counts imply (never 0 beside an interval of positive width).

    Examples
    --------
    >>> import numpy as np
    >>> _, _, low, high = paired_proportion_interval(np.zeros(4), np.ones(4), 1, 1)
    >>> round(float(low), 3), float(high)
    (-0.061, 1.0)
    """
    parts = _paired_parts(baseline, candidate, n_baseline, n_candidate, k)
    low, high = _paired_bounds(parts, 1.0 - confidence)
    difference, up, down, variance, _, max_count, _ = parts
    import numpy as np

    smooth_up = (up * max_count + 0.5) / (max_count + 1.0)
    smooth_down = (down * max_count + 0.5) / (max_count + 1.0)
    pseudo = (smooth_up + smooth_down - (smooth_up - smooth_down) ** 2) / (max_count + 1.0)
    se = np.where(variance > 0, np.sqrt(variance), np.sqrt(pseudo))
    se = np.where(np.isnan(low), np.nan, se)
    if np.ndim(difference) == 0:
        return float(difference), float(se), float(low), float(high)
    return difference, se, low, high


def _paired_parts(baseline, candidate, n_baseline, n_candidate, k):
    import numpy as np

    a = np.asarray(baseline, dtype=float)
    b = np.asarray(candidate, dtype=float)
    n_a = np.broadcast_to(np.asarray(n_baseline, dtype=float), a.shape)
    n_b = np.broadcast_to(np.asarray(n_candidate, dtype=float), b.shape)
    tasks = a.shape[-1]
    d = b - a
    difference = d.mean(axis=-1)
    up = (b * (1.0 - a)).mean(axis=-1)
    down = (a * (1.0 - b)).mean(axis=-1)
    within = (k * a * (1 - a) / n_a + k * b * (1 - b) / n_b).sum(axis=-1) / tasks**2
    spread = d.var(axis=-1, ddof=1) / tasks if tasks > 1 else np.full(difference.shape, np.nan)
    # a spread of zero's rounding dust is no spread
    spread = np.where(spread <= 1e-24 * np.maximum(1.0, difference**2), 0.0, spread)
    variance = np.maximum(spread, within)
    max_count = tasks / (k * np.mean(1.0 / np.minimum(n_a, n_b), axis=-1))
    draw = np.maximum(up + down - difference**2, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        count = np.where((variance > 0) & (draw > 0), draw / variance, max_count)
    count = np.minimum(count, max_count)
    return difference, up, down, variance, count, max_count, tasks


def _paired_bounds(parts, alpha):
    import numpy as np

    difference, up, down, _, count, _, tasks = parts
    if tasks < 2:
        nan = np.full(np.shape(difference), np.nan)
        return nan, nan
    scaled = count * (z_quantile(alpha) / t_quantile(alpha, tasks - 1)) ** 2
    up_low, up_high = jeffreys_bounds(scaled * up, scaled, alpha)
    down_low, down_high = jeffreys_bounds(scaled * down, scaled, alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        trinomial = -np.sqrt(up * down / ((1.0 - up) * (1.0 - down)))
    # the movement up is "cand", the movement down "base": d = u - v
    low, high = mover_difference(down, down_low, down_high, up, up_low, up_high,
                                 np.nan_to_num(trinomial, nan=0.0))
    return np.clip(low, -1.0, 1.0), np.clip(high, -1.0, 1.0)


def paired_proportion_p_value(
    baseline: Any, candidate: Any, n_baseline: Any, n_candidate: Any, k: int = 1
) -> float:
    """Two-sided p-value of a paired difference of per-task values (1-D, no NaN): the exact
    sign test (:func:`sign_test`) when every value is 0 or 1, else the level at which
    :func:`paired_proportion_interval` first excludes 0 (:func:`p_value_by_inversion`)."""
    import numpy as np

    a = np.asarray(baseline, dtype=float)
    b = np.asarray(candidate, dtype=float)
    if np.all((a == 0) | (a == 1)) and np.all((b == 0) | (b == 1)):
        return sign_test(int(np.sum((a == 0) & (b == 1))), int(np.sum((a == 1) & (b == 0))))
    parts = _paired_parts(a, b, n_baseline, n_candidate, k)
    return p_value_by_inversion(lambda alpha: _paired_bounds(parts, alpha))


def ratio_interval(
    numerator: Any, denominator: Any, confidence: float = 0.95
) -> tuple[Any, Any, Any, Any]:
    r"""A ratio of per-task totals :math:`R = \sum_i Y_i / \sum_i X_i` with an interval that
    holds for skewed, heavy-tailed values and for a column of zeros.

    Over the :math:`T'` tasks holding data (:math:`X_i > 0` or :math:`Y_i \ne 0`), the
    linearised contributions :math:`u_i = (Y_i - R X_i)/\bar X` give the clustered standard
    error :math:`\mathrm{se}^2 = \sum_i u_i^2 / (T'(T'-1))` (Cochran 1977, section 6.4) and
    their skewness :math:`\hat\gamma = \overline{u^3} / \overline{u^2}^{3/2}`. The interval is
    the hull of two:

    - **skewness-corrected t** (Hall 1992): :math:`[R - \mathrm{se}\,g^{-1}(t),\ R -
      \mathrm{se}\,g^{-1}(-t)]`, :math:`g(s) = s + a s^2 + a^2 s^3/3 + a/2`, :math:`a =
      \hat\gamma / (3\sqrt{T'})`, :math:`t = t_{(1+\gamma)/2,\,T'-1}`: it moves the interval
      toward the long tail, whatever the values' distribution;
    - **log scale** (the modified Cox method, Olsson 2005), when every task's ratio
      :math:`m_i = Y_i/X_i` is positive and the logs do not lean left (their skewness is at
      least :math:`-2\sqrt{6/T'}`, twice its standard error under a log-normal): with :math:`\ell_i = \log m_i` weighted by
      :math:`X_i`, mean :math:`\bar\ell`, variance :math:`s^2` and effective count
      :math:`T_e = (\sum X_i)^2 / \sum X_i^2`, :math:`\exp(\bar\ell + s^2/2 \pm t
      \sqrt{s^2/T_e + s^4/(2(T'-1))})`. Its spread does not fall with the estimate when the
      sample misses the tail, the way heavy-tailed (lognormal-like) values fool the first.

    An interval of a ratio of nonnegative totals is cut at 0. When every :math:`Y_i` is 0
    (a count that never happened), the interval is :math:`[0,\ -\log(\alpha/2) / (n^*)]`,
    the rule of three (3.69 / n at 95%, the exact Poisson bound for no event), with
    :math:`n^* = \sum X_i\,(z/t)^2` for the clustering it cannot see; its ``se`` is the
    Jeffreys one, :math:`\sqrt{1/2} / \sum X_i`. Coverage measured in ``tests/test_coverage.py``.

    Parameters
    ----------
    numerator, denominator : array_like
        Per-task totals :math:`Y_i` and :math:`X_i`, tasks on the last axis (no NaN).
    confidence : float

    Returns
    -------
    (estimate, se, low, high)
        The estimate is infinite when :math:`\sum X_i = 0 \ne \sum Y_i` and NaN when both are
        0; ``se`` and the interval are NaN with fewer than two tasks holding data.

    Examples
    --------
    >>> import numpy as np
    >>> estimate, se, low, high = ratio_interval(np.zeros(10), np.full(10, 3.0))
    >>> estimate, round(float(high), 4)  # 30 trials, no event: 3.69 / (30 (z/t_9)^2)
    (0.0, 0.1638)
    """
    parts = _ratio_parts(numerator, denominator)
    low, high = _ratio_bounds(parts, 1.0 - confidence)
    estimate, se = parts["estimate"], _ratio_se(parts)
    import numpy as np

    if np.ndim(estimate) == 0:
        return float(estimate), float(se), float(low), float(high)
    return estimate, se, low, high


def _ratio_parts(numerator, denominator):
    import numpy as np

    y = np.asarray(numerator, dtype=float)
    x = np.asarray(denominator, dtype=float)
    # sums of values divided by the largest magnitude, so totals of huge values do not overflow
    y_scale = np.max(np.abs(y), axis=-1, keepdims=True)
    x_scale = np.max(np.abs(x), axis=-1, keepdims=True)
    y_scale = np.where(y_scale > 0, y_scale, 1.0)
    x_scale = np.where(x_scale > 0, x_scale, 1.0)
    ys, xs = y / y_scale, x / x_scale
    unit = (y_scale / x_scale)[..., 0]
    y_total, x_total = ys.sum(axis=-1), xs.sum(axis=-1)
    informed = (x > 0) | (y != 0)
    tasks = informed.sum(axis=-1)
    nonnegative = np.all(y >= 0, axis=-1) & np.all(x >= 0, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = y_total / x_total  # in units of y_scale / x_scale
        estimate = np.where(
            x_total != 0, ratio * unit, np.where(y_total != 0, np.inf, np.nan)
        )
        estimate = np.where((x_total == 0) & (y_total != 0), np.sign(y_total) * np.inf, estimate)
        mean_x = x_total / tasks
        u = np.where(informed, (ys - ratio[..., None] * xs) / mean_x[..., None], 0.0)
        square = np.sum(u * u, axis=-1)
        se_scaled = np.sqrt(square / (tasks * (tasks - 1.0)))
        second = square / tasks
        skew = np.where(second > 0, np.sum(u**3, axis=-1) / tasks / second**1.5, 0.0)
        # the log scale: tasks with X_i > 0, each ratio positive
        positive = x > 0
        weights = np.where(positive, xs, 0.0)
        logs = np.where(positive & (ys > 0), np.log(np.where(positive & (ys > 0), ys / xs, 1.0)),
                        0.0)
        wsum = weights.sum(axis=-1)
        center = np.sum(weights * logs, axis=-1) / wsum
        effective = wsum**2 / np.sum(weights * weights, axis=-1)
        spread = (
            np.sum(weights * (logs - center[..., None]) ** 2, axis=-1) / wsum
            * effective / (effective - 1.0)
        )
        positives = positive.sum(axis=-1)
        # the logs' skewness: a log-normal has none; logs that lean left (a few small values)
        # would make the log scale overstate the mean
        deviation = np.where(positive, logs - center[..., None], 0.0)
        second_log = np.sum(weights * deviation**2, axis=-1) / wsum
        log_skew = np.where(
            second_log > 0, np.sum(weights * deviation**3, axis=-1) / wsum / second_log**1.5, 0.0
        )
    usable = (tasks >= 2) & np.isfinite(estimate)
    # the log scale guards against a long right tail: used unless the logs lean left by more
    # than twice the standard error of a skewness, sqrt(6 / T)
    log_usable = (
        usable & nonnegative & (positives >= 2)
        & (log_skew >= -2.0 * np.sqrt(6.0 / np.maximum(positives, 1)))
        & np.all(~positive | (ys > 0), axis=-1) & np.all(~informed | positive, axis=-1)
    )
    return {
        "estimate": estimate,
        "se": np.where(usable, se_scaled * unit, np.nan),
        "se_scaled": se_scaled,
        "ratio": ratio,
        "unit": unit,
        "skew": skew,
        "tasks": tasks,
        "usable": usable,
        "nonnegative": nonnegative,
        "zero": usable & nonnegative & (y_total == 0),
        "x_total": x_total * x_scale[..., 0],
        "log_usable": log_usable,
        "center": center,
        "spread": spread,
        "effective": effective,
        "positives": positives,
        "u": u,
    }


def _ratio_bounds(parts, alpha):
    import numpy as np

    tasks = parts["tasks"]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        t = t_quantile(alpha, tasks - 1.0)
        skew, ratio, se = parts["skew"], parts["ratio"], parts["se_scaled"]
        a = skew / (3.0 * np.sqrt(tasks))

        def inverse(q):  # g^{-1}: g(s) = ((1 + a s)^3 - 1) / (3a) + a/2 is increasing
            small = np.abs(a) < 1e-12
            safe = np.where(small, 1.0, a)
            return np.where(small, q, (np.cbrt(1.0 + 3.0 * safe * (q - safe / 2)) - 1.0) / safe)

        low = ratio - se * inverse(t)
        high = ratio - se * inverse(-t)
        spread = parts["spread"]
        half = t_quantile(alpha, parts["positives"] - 1.0) * np.sqrt(
            spread / parts["effective"] + spread**2 / (2.0 * (parts["positives"] - 1.0))
        )
        middle = parts["center"] + spread / 2
        log_low = np.where(parts["log_usable"], np.exp(np.minimum(middle - half, 700.0)), np.nan)
        log_high = np.where(parts["log_usable"], np.exp(np.minimum(middle + half, 700.0)), np.nan)
        low, high = np.fmin(low, log_low), np.fmax(high, log_high)
        low = np.where(parts["nonnegative"], np.maximum(low, 0.0), low)
        unit = parts["unit"]
        low, high = low * unit, high * unit
        # no event at all: the rule of three, on the trials the clustering leaves
        scaled = parts["x_total"] * (z_quantile(alpha) / t) ** 2
        low = np.where(parts["zero"], 0.0, low)
        high = np.where(parts["zero"], -np.log(alpha / 2) / scaled, high)
    usable = parts["usable"]
    return np.where(usable, low, np.nan), np.where(usable, high, np.nan)


def _ratio_se(parts):
    """``se`` of :func:`ratio_interval`'s parts: the Jeffreys one for a column of zeros."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(parts["zero"], math.sqrt(0.5) / parts["x_total"], parts["se"])


def cost_per_success_interval(
    cost: Any, successes: Any, trials: Any, confidence: float = 0.95
) -> tuple[Any, Any, Any, Any]:
    r"""Cost per success :math:`R = \sum_i C_i / \sum_i S_i` (per-task totals of cost,
    successes and trials, tasks on the last axis) with an interval that carries the
    uncertainty of the success count.

    :math:`R = \hat C / \hat P`, the cost per trial :math:`\hat C = \sum C_i / \sum n_i`
    over the pooled success :math:`\hat P = \sum S_i / \sum n_i`. The interval combines, on
    the log scale, :func:`ratio_interval`'s interval of :math:`\hat C` (heavy-tailed costs)
    with :func:`relsim.intervals.effective_count_interval`'s of :math:`\hat P` (clustered
    variance, binomial floor over the :math:`\sum n_i` trials, Jeffreys), correlated through
    the tasks (the correlation of their linearised contributions;
    :func:`relsim.intervals.mover_difference` of the logs). So a constant cost per trial,
    whose ratio alone shows no spread, gets exactly the width of its success count: every
    task 2 of 3 at a fixed cost is not pinned to one number. (Measured: this composition
    covers 93-98% where the ratio's own interval, and the hull of it with the success
    floor, covered down to 91%.) Without a success the estimate is infinite and the interval
    :math:`[l_C / u_P, \infty)`; without any cost it is :func:`ratio_interval`'s (the rule
    of three). ``se`` is the larger of the ratio's and :math:`R\,\mathrm{se}_P/\hat P`.

    Examples
    --------
    >>> import numpy as np
    >>> estimate, se, low, high = cost_per_success_interval(
    ...     np.full(10, 0.3), np.full(10, 2.0), np.full(10, 3.0))
    >>> round(estimate, 3), round(low, 3), round(high, 3)  # 0.1 / the success's [0.46, 0.83]
    (0.15, 0.12, 0.217)
    """
    import numpy as np

    parts = _cost_parts(cost, successes, trials)
    low, high = _cost_bounds(parts, 1.0 - confidence)
    estimate, se = parts["estimate"], parts["se"]
    if np.ndim(estimate) == 0:
        return float(estimate), float(se), float(low), float(high)
    return estimate, se, low, high


def _cost_parts(cost, successes, trials):
    import numpy as np

    ratio = _ratio_parts(cost, successes)
    per_trial = _ratio_parts(cost, trials)
    success = _ratio_parts(successes, trials)
    pooled, variance = success["estimate"], success["se"] ** 2
    estimate = ratio["estimate"]
    with np.errstate(divide="ignore", invalid="ignore"):
        success_se = np.sqrt(np.maximum(variance, pooled * (1 - pooled) / success["x_total"]))
        se = np.where(
            pooled > 0, np.fmax(_ratio_se(ratio), estimate * success_se / pooled), np.nan
        )
    return {"ratio": ratio, "per_trial": per_trial, "success": success, "pooled": pooled,
            "variance": variance, "estimate": estimate, "se": se}


def _cost_bounds(parts, alpha):
    import numpy as np

    low, high = _ratio_bounds(parts["ratio"], alpha)
    success, pooled = parts["success"], parts["pooled"]
    per_trial = parts["per_trial"]
    p_low, p_high = effective_bounds(
        pooled, parts["variance"], success["x_total"], success["tasks"], alpha
    )
    cost_low, cost_high = _ratio_bounds(per_trial, alpha)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # cost per trial over success per trial, on the log scale (MOVER), correlated through
        # the tasks: a constant cost per trial gives exactly cost / the success interval
        u_cost, u_success = per_trial["u"], success["u"]
        correlation = np.sum(u_cost * u_success, axis=-1) / np.sqrt(
            np.sum(u_cost**2, axis=-1) * np.sum(u_success**2, axis=-1)
        )
        log_low, log_high = mover_difference(
            np.log(pooled), np.log(p_low), np.log(p_high),
            np.log(per_trial["estimate"]), np.log(cost_low), np.log(cost_high),
            np.nan_to_num(correlation, nan=0.0),
        )
        composed = (pooled > 0) & (per_trial["estimate"] > 0) & ~np.isnan(p_low)
        low = np.where(composed, np.exp(log_low), low)
        high = np.where(composed, np.exp(log_high), high)
        none = (pooled == 0) & (per_trial["estimate"] > 0) & ~np.isnan(p_high)
        low = np.where(none, cost_low / p_high, low)
        high = np.where(none, np.inf, high)
    return low, high

MODE = "hull"


def paired_ratio_interval(
    baseline: tuple[Any, ...],
    candidate: tuple[Any, ...],
    confidence: float = 0.95,
    *,
    p_value: bool = False,
) -> tuple[Any, ...]:
    r"""Difference ``candidate - baseline`` of two ratios of per-task totals over the same
    tasks, each with its own interval, combined by :func:`relsim.intervals.mover_difference`.

    Each side is ``(Y, X)`` (a metric: :func:`ratio_interval`) or ``(cost, successes,
    trials)`` (cost per success: :func:`cost_per_success_interval`), tasks on the last axis in
    the same order. The correlation :math:`r` of the two estimates is that of their
    linearised contributions, :math:`\sum_i u^b_i u^c_i / \sqrt{\sum_i (u^b_i)^2 \sum_i
    (u^c_i)^2}` (tasks shared: a hard task is hard for both). The interval keeps each side's
    asymmetry (a heavy tail, the rule of three of a column of zeros, the success count's
    floor), so it never has zero width unless both sides are exact. ``se`` is
    :math:`\sqrt{\mathrm{se}_b^2 + \mathrm{se}_c^2 - 2 r\,\mathrm{se}_b \mathrm{se}_c}`.

    Returns
    -------
    (difference, se, low, high), plus the two-sided p-value (1-D input only) with
    ``p_value=True``: the level at which the interval first excludes 0
    (:func:`relsim.intervals.p_value_by_inversion`). NaN where either ratio is not finite.
    """
    import numpy as np

    def side(totals):
        if len(totals) == 3:
            parts = _cost_parts(*totals)
            return parts, parts["ratio"]["u"], parts["se"], lambda a: _cost_bounds(parts, a)
        parts = _ratio_parts(*totals)
        return parts, parts["u"], _ratio_se(parts), lambda a: _ratio_bounds(parts, a)

    base, base_u, base_se, base_bounds = side(baseline)
    cand, cand_u, cand_se, cand_bounds = side(candidate)
    with np.errstate(invalid="ignore", divide="ignore"):
        correlation = np.sum(base_u * cand_u, axis=-1) / np.sqrt(
            np.sum(base_u * base_u, axis=-1) * np.sum(cand_u * cand_u, axis=-1)
        )
    correlation = np.clip(np.nan_to_num(correlation, nan=0.0), -1.0, 1.0)
    base_estimate, cand_estimate = base["estimate"], cand["estimate"]
    finite = np.isfinite(base_estimate) & np.isfinite(cand_estimate)
    with np.errstate(invalid="ignore"):
        difference = np.where(finite, cand_estimate - base_estimate, np.nan)
        se = np.sqrt(np.maximum(
            base_se**2 + cand_se**2 - 2 * correlation * base_se * cand_se, 0.0
        ))
    se = np.where(finite, se, np.nan)

    def bounds(alpha):
        base_low, base_high = base_bounds(alpha)
        cand_low, cand_high = cand_bounds(alpha)
        low, high = mover_difference(base_estimate, base_low, base_high, cand_estimate,
                                     cand_low, cand_high, correlation)
        return np.where(finite, low, np.nan), np.where(finite, high, np.nan)

    low, high = bounds(1.0 - confidence)
    out: tuple[Any, ...] = (difference, se, low, high)
    if np.ndim(difference) == 0:
        out = tuple(float(value) for value in out)
        if p_value:
            out += (p_value_by_inversion(bounds) if finite else math.nan,)
    return out
