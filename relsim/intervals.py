r"""Standard errors and confidence intervals, one home for every engine and estimator.

The Monte Carlo engine reports binomial standard errors with Wilson intervals for its
proportions and normal intervals for its means; the trial-data statistics (``evalstats``)
take their standard errors, Jeffreys intervals on effective counts, percentile and BCa
bootstrap intervals, the MOVER combination of two intervals and the tests that intervals
invert from here (and compose them in :mod:`relsim.evalstats.smallsample`), so one formula
has one definition. Only the standard library is
imported at module level; numpy and scipy inside the functions that need them.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "Z95",
    "bca_interval",
    "binomial_se",
    "effective_count_interval",
    "holm",
    "jeffreys_sd",
    "mean_se",
    "mover_difference",
    "normal_interval",
    "p_value_by_inversion",
    "percentile_interval",
    "quantile_interval",
    "quantile_interval_ranks",
    "sign_test",
    "t_interval",
    "wilson",
]

#: The two-sided 95% normal quantile, ``Phi^{-1}(0.975)``.
Z95 = 1.959963984540054


def binomial_se(count: int, n: int) -> float:
    r"""Standard error of the proportion ``count / n``: :math:`\sqrt{\hat p(1-\hat p)/n}`.

    Examples
    --------
    >>> round(binomial_se(50, 100), 6)
    0.05
    """
    proportion = count / n
    return math.sqrt(proportion * (1.0 - proportion) / n)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    r"""Wilson score interval for ``successes`` out of ``n``,

    .. math::

        \Bigl(\hat p + \tfrac{z^2}{2n} \pm z\sqrt{\hat p(1-\hat p)/n + z^2/4n^2}\Bigr)
        \Big/ \bigl(1 + z^2/n\bigr).

    It stays inside [0, 1] and keeps a positive width at 0 and ``n`` successes.

    Examples
    --------
    >>> [round(x, 4) for x in wilson(0, 10)]
    [0.0, 0.2775]
    """
    proportion = successes / n
    denominator = 1.0 + z * z / n
    if successes == 0:  # the closed form, without its rounding
        return (0.0, z * z / n / denominator)
    if successes == n:
        return (1.0 / denominator, 1.0)
    center = (proportion + z * z / (2 * n)) / denominator
    half = z * math.sqrt(proportion * (1.0 - proportion) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, center - half), min(1.0, center + half))


def normal_interval(value: float, se: float, z: float = Z95) -> tuple[float, float]:
    r"""The normal interval :math:`\text{value} \pm z\,\text{se}`."""
    return (value - z * se, value + z * se)


def mean_se(values: Any) -> tuple[float, float]:
    r"""The mean of ``values`` and its standard error :math:`s/\sqrt n`, ``s`` with ddof=1.

    The standard error is NaN with fewer than two values (one value shows no spread); the
    mean is NaN with none.

    Examples
    --------
    >>> mean, se = mean_se([1.0, 0.5, 0.0])  # s = 0.5, se = 0.5 / sqrt(3)
    >>> mean, round(se, 6)
    (0.5, 0.288675)
    """
    import numpy as np

    values = np.asarray(values, dtype=float)
    count = values.size
    mean = float(values.mean()) if count else math.nan
    se = float(values.std(ddof=1) / math.sqrt(count)) if count > 1 else math.nan
    return mean, se


def t_interval(mean: float, se: float, count: int, confidence: float = 0.95) -> tuple[float, float]:
    r"""The t interval of a mean of ``count`` values,
    :math:`\bar x \pm t_{(1+\gamma)/2,\,\text{count}-1}\,\mathrm{se}` (:math:`\gamma` the
    confidence); NaN at both ends with fewer than two values.

    Examples
    --------
    >>> [round(x, 6) for x in t_interval(0.5, 0.1, 4)]  # t(0.975, 3) = 3.182446
    [0.181755, 0.818245]
    """
    if count < 2:
        return (math.nan, math.nan)
    # scipy.special's t quantile, the one scipy.stats.t.ppf calls: importing scipy.stats for it
    # would cost a timeline run some 45 MB and half a second
    from scipy.special import stdtrit

    half = float(stdtrit(count - 1, 0.5 + confidence / 2)) * se
    return (mean - half, mean + half)


def quantile_interval(values: Any, q: float, confidence: float = 0.95, *,
                      presorted: bool = False) -> tuple[float, float]:
    r"""A distribution-free interval of the ``q`` quantile of the distribution ``values`` were
    drawn from: the order statistics :math:`(x_{(l)}, x_{(u)})` with ``l`` the
    :math:`(1-\gamma)/2` quantile of :math:`B \sim \mathrm{Binomial}(n, q)` and ``u`` one
    above its :math:`(1+\gamma)/2` quantile, so that
    :math:`P(x_{(l)} \le \xi_q < x_{(u)}) = P(l \le B < u) \ge \gamma` (clipped to the
    sample's ends). NaN at both ends with no values.

    Examples
    --------
    >>> quantile_interval(range(1, 101), 0.5)  # ranks 40 and 61 of 1..100
    (40.0, 61.0)
    """
    import numpy as np

    x = np.asarray(values, dtype=float)
    if not presorted:
        x = np.sort(x)
    n = x.size
    if n == 0:
        return (math.nan, math.nan)
    low, high = quantile_interval_ranks(n, q, confidence)
    return (float(x[low]), float(x[high]))


def quantile_interval_ranks(n: int, q: float, confidence: float = 0.95) -> tuple[int, int]:
    """The 0-based ranks, among ``n >= 1`` sorted values, of :func:`quantile_interval`'s
    two order statistics.

    Examples
    --------
    >>> quantile_interval_ranks(100, 0.5)  # the 40th and 61st of 100
    (39, 60)
    """
    from scipy import stats

    low = int(stats.binom.ppf((1.0 - confidence) / 2, n, q))
    high = int(stats.binom.ppf((1.0 + confidence) / 2, n, q)) + 1
    return min(max(low, 1), n) - 1, min(max(high, 1), n) - 1


def percentile_interval(replicates: Any, confidence: float = 0.95) -> tuple[float, float]:
    r"""The percentile interval of bootstrap ``replicates``: their :math:`(1\mp\gamma)/2`
    quantiles (numpy's linear interpolation). NaN replicates are dropped; NaN at both ends
    when none is left.
    """
    import numpy as np

    replicates = np.asarray(replicates, dtype=float)
    replicates = replicates[~np.isnan(replicates)]
    if replicates.size == 0:
        return (math.nan, math.nan)
    low, high = np.quantile(replicates, [0.5 - confidence / 2, 0.5 + confidence / 2])
    return (float(low), float(high))


def bca_interval(
    replicates: Any, estimate: float, jackknife: Any, confidence: float = 0.95
) -> tuple[float, float]:
    r"""The bias-corrected and accelerated (BCa) bootstrap interval (Efron 1987).

    It takes the quantiles of the replicates :math:`\theta^*` at

    .. math::

        \alpha_{\pm} = \Phi\Bigl(z_0 + \frac{z_0 + z_\pm}{1 - a (z_0 + z_\pm)}\Bigr),
        \qquad z_0 = \Phi^{-1}\bigl(\Pr{}^*(\theta^* < \hat\theta)\bigr), \qquad
        a = \frac{\sum_i U_i^3}{6 (\sum_i U_i^2)^{3/2}},

    with :math:`z_\pm = \Phi^{-1}((1\pm\gamma)/2)`, :math:`U_i = \bar\theta_{(\cdot)} -
    \theta_{(i)}` the jackknife influence of observation :math:`i` and
    :math:`\theta_{(i)}` the statistic with observation :math:`i` left out (``a`` does not
    change with the scale of :math:`U`, so the usual factor :math:`n-1` is left out). This is
    ``scipy.stats.bootstrap(method="BCa")`` given the same replicates, with two guards for
    discrete data: replicates equal to :math:`\hat\theta` up to rounding count as half below,
    and :math:`\Pr^*` is kept within :math:`[1/2B, 1 - 1/2B]` so :math:`z_0` stays finite.

    Parameters
    ----------
    replicates : array_like
        The statistic on each bootstrap resample; NaN entries (resamples where it is not
        defined) are dropped.
    estimate : float
        :math:`\hat\theta`, the statistic on the data.
    jackknife : array_like
        :math:`\theta_{(i)}` for each observation.
    confidence : float
        :math:`\gamma`, in (0, 1).

    Returns
    -------
    (float, float)
        NaN at both ends without replicates; the point when every replicate is the same.
    """
    import numpy as np
    from scipy.stats import norm

    replicates = np.asarray(replicates, dtype=float)
    replicates = replicates[~np.isnan(replicates)]
    tails = np.array([0.5 - confidence / 2, 0.5 + confidence / 2])
    if replicates.size == 0:
        return (math.nan, math.nan)
    if replicates.max() > replicates.min():
        count = replicates.size
        # resample statistics of discrete data often tie with the estimate: count ties as
        # half (scipy's rule), "equal" meaning equal up to rounding
        tie = np.abs(replicates - estimate) <= 1e-9 * max(1.0, abs(estimate))
        below = (
            np.count_nonzero(~tie & (replicates < estimate)) + 0.5 * np.count_nonzero(tie)
        ) / count
        bias = norm.ppf(min(max(below, 0.5 / count), 1 - 0.5 / count))
        jackknife = np.asarray(jackknife, dtype=float)
        influence = jackknife.mean() - jackknife
        spread = float(np.sum(influence**2))
        acceleration = float(np.sum(influence**3)) / (6.0 * spread**1.5) if spread > 0 else 0.0
        z = norm.ppf(tails)
        tails = norm.cdf(bias + (bias + z) / (1.0 - acceleration * (bias + z)))
        tails = np.clip(np.nan_to_num(tails, nan=0.5), 0.0, 1.0)
    low, high = np.quantile(replicates, tails)
    return (float(low), float(high))


def effective_count_interval(
    estimate: Any,
    variance: Any,
    max_count: Any,
    clusters: Any,
    confidence: float = 0.95,
) -> tuple[Any, Any]:
    r"""An interval for a mean of per-cluster values in [0, 1]: Jeffreys on effective counts.

    The mean :math:`\hat\theta` of per-task values in [0, 1] (a success rate, an unbiased
    pass@k or pass^k per task) is treated as a proportion seen in an *effective* number of
    Bernoulli trials (Kish's design effect, with the small-sample correction of Korn and
    Graubard 1998),

    .. math::

        V = \max\bigl(\hat V,\ \hat\theta(1-\hat\theta)/N_{\max}\bigr), \qquad
        n^* = \frac{\hat\theta(1-\hat\theta)}{V}
              \Bigl(\frac{z_{(1+\gamma)/2}}{t_{(1+\gamma)/2,\,T-1}}\Bigr)^2, \qquad
        x^* = n^*\hat\theta

    (:math:`n^* = N_{\max}` when :math:`\hat\theta \in \{0, 1\}`, :math:`T` the clusters),
    and the interval is the Jeffreys interval of :math:`x^*` successes in :math:`n^*`:
    the :math:`(1\mp\gamma)/2` quantiles of :math:`\mathrm{Beta}(x^* + 1/2, n^* - x^* + 1/2)`,
    with the lower end 0 when :math:`\hat\theta = 0` and the upper end 1 when
    :math:`\hat\theta = 1`. :math:`\hat V` is the clustered variance of the mean (the spread
    between tasks, which holds the binomial noise within them); :math:`N_{\max}` caps the
    information, so the interval never has zero width. For success rates (``k = 1``),
    :math:`N_{\max} = T/\overline{1/n_i}` is the pooled trial count, and the floor is never
    above the variance of the mean (:math:`\bar p(1-\bar p) = \overline{p(1-p)} +
    \mathrm{Var}(p)`, each part within the variance of a task's rate). For pass@k and pass^k
    per task, :math:`N_{\max} = T / (k\,\overline{1/n_i})` counts the :math:`n_i / k`
    disjoint groups of :math:`k` trials of each task as Bernoulli draws of the k-fold event:
    the unbiased estimator averages all :math:`\binom{n}{k}` groups and is at least as
    precise, so where this floor binds (tasks that all look alike) it is conservative, never
    optimistic. The interval always lies in [0, 1].

    Parameters
    ----------
    estimate, variance, max_count, clusters : float or array_like
        :math:`\hat\theta` in [0, 1], :math:`\hat V \ge 0` (NaN counts as 0), :math:`N_{\max}
        > 0`, :math:`T \ge 2` (broadcast together).
    confidence : float
        :math:`\gamma` in (0, 1).

    Returns
    -------
    (low, high)
        Floats for scalar input, arrays otherwise; NaN where ``clusters < 2`` or the
        estimate is NaN.

    Examples
    --------
    Ten tasks, every one 4 successes in 5 trials: no spread between tasks, so the binomial
    floor of 50 trials holds (the Jeffreys interval of 40 in 50, widened for 9 degrees of
    freedom).

    >>> [round(x, 3) for x in effective_count_interval(0.8, 0.0, 50, 10)]
    [0.653, 0.903]
    """
    import numpy as np

    estimate, variance, max_count, clusters = np.broadcast_arrays(
        *(np.asarray(x, dtype=float) for x in (estimate, variance, max_count, clusters))
    )
    low, high = effective_bounds(estimate, variance, max_count, clusters, 1.0 - confidence)
    if estimate.ndim == 0:
        return (float(low), float(high))
    return (low, high)


def effective_bounds(estimate, variance, max_count, clusters, alpha):
    """:func:`effective_count_interval` at level ``1 - alpha`` (arrays, broadcast)."""
    import numpy as np

    theta = np.clip(estimate, 0.0, 1.0)
    spread = theta * (1.0 - theta)
    with np.errstate(divide="ignore", invalid="ignore"):
        floor = spread / max_count
        total = np.maximum(np.nan_to_num(variance, nan=0.0), floor)
        count = np.where(total > 0, spread / total, max_count)
        usable = (clusters >= 2) & np.isfinite(theta)
        degrees = np.where(usable, clusters - 1.0, 1.0)
        count = count * (z_quantile(alpha) / t_quantile(alpha, degrees)) ** 2
        low, high = jeffreys_bounds(count * theta, count, alpha)
    return np.where(usable, low, np.nan), np.where(usable, high, np.nan)


def holm(p_values: Any) -> Any:
    r"""Holm's step-down adjustment of ``p_values`` (family-wise error, any dependence).

    With the :math:`m` p-values sorted, :math:`p_{(1)} \le \dots \le p_{(m)}`, the adjusted
    value of the :math:`j`-th is :math:`\max_{i \le j} \min(1, (m - i + 1)\,p_{(i)})`; NaN
    entries are left out of :math:`m` and stay NaN.

    Examples
    --------
    >>> [round(float(p), 3) for p in holm([0.01, 0.04, 0.03])]
    [0.03, 0.06, 0.06]
    """
    import numpy as np

    values = np.asarray(p_values, dtype=float)
    out = np.full(values.shape, np.nan)
    present = np.flatnonzero(~np.isnan(values))
    order = present[np.argsort(values[present], kind="stable")]
    m = order.size
    scaled = np.minimum(1.0, (m - np.arange(m)) * values[order])
    out[order] = np.maximum.accumulate(scaled) if m else scaled
    return out


# ------------------------------------------------------------------------------------------
# The parts of the small-sample intervals of relsim.evalstats.smallsample. They work at a level
# alpha = 1 - confidence (not the confidence, which rounds to 1 for tiny alpha), so that
# p_value_by_inversion can ask for intervals at any level, down to alpha = 1e-300.


def z_quantile(alpha: Any) -> Any:
    """The normal quantile at 1 - alpha/2, from the lower tail (exact for tiny alpha)."""
    from scipy import special

    return -special.ndtri(alpha / 2)


def t_quantile(alpha: Any, degrees: Any) -> Any:
    """Student's t quantile at 1 - alpha/2 with ``degrees`` (NaN below 1), from the lower tail."""
    import numpy as np
    from scipy import special

    degrees = np.asarray(degrees, dtype=float)
    safe = np.where(degrees >= 1, degrees, 1.0)
    return np.where(degrees >= 1, -special.stdtrit(safe, alpha / 2), np.nan)


def jeffreys_bounds(successes: Any, trials: Any, alpha: Any) -> tuple[Any, Any]:
    """The Jeffreys interval of (real) ``successes`` in ``trials``: the alpha/2 quantiles of
    Beta(x + 1/2, n - x + 1/2), 0 below at x = 0 and 1 above at x = n; it holds the estimate."""
    import numpy as np
    from scipy import special

    x, n = np.broadcast_arrays(np.asarray(successes, float), np.asarray(trials, float))
    with np.errstate(invalid="ignore", divide="ignore"):
        # no trial at all (an effective count that a tiny alpha shrank to 0): anything
        theta = np.where(n > 0, np.clip(x / n, 0.0, 1.0), 0.5)
        shape_a, shape_b = x + 0.5, np.maximum(n - x, 0.0) + 0.5
        low = special.betaincinv(shape_a, shape_b, alpha / 2)
        high = special.betainccinv(shape_a, shape_b, alpha / 2)
        # the inverses can fail (NaN) far in a tail: the mirror image, Beta(b, a), then
        low = np.where(np.isnan(low), 1.0 - special.betainccinv(shape_b, shape_a, alpha / 2), low)
        high = np.where(np.isnan(high), 1.0 - special.betaincinv(shape_b, shape_a, alpha / 2),
                        high)
        low = np.where((x > 0) & (n > 0), np.nan_to_num(low, nan=0.0), 0.0)
        high = np.where((x < n) & (n > 0), np.nan_to_num(high, nan=1.0), 1.0)
    return np.minimum(low, theta), np.maximum(high, theta)


def jeffreys_sd(estimate: Any, count: Any) -> Any:
    r"""The standard deviation of :math:`\mathrm{Beta}(x + 1/2, n - x + 1/2)`, :math:`x =
    \hat\theta n`: the standard error reported beside a Jeffreys interval where the binomial
    one, :math:`\sqrt{\hat\theta(1-\hat\theta)/n}`, is 0 (every trial passed, or none did).

    Examples
    --------
    >>> round(float(jeffreys_sd(1.0, 50)), 4)  # 50 of 50: Beta(50.5, 0.5)
    0.0137
    """
    import numpy as np

    shape_a = np.asarray(estimate, float) * count + 0.5
    shape_b = count - shape_a + 1.0
    total = shape_a + shape_b
    return np.sqrt(shape_a * shape_b / (total * total * (total + 1.0)))


def sign_test(up: int, down: int) -> float:
    r"""The exact two-sided sign test (McNemar's exact test) of ``up`` tasks that went
    0 -> 1 against ``down`` that went 1 -> 0: :math:`\min(1, 2\,\Pr(X \le \min(u, d)))`,
    :math:`X \sim \mathrm{Bin}(u + d, 1/2)`; 1 with no discordant task.

    Examples
    --------
    >>> sign_test(4, 0)  # four tasks, all 0 -> 1: 2 / 2^4
    0.125
    """
    from scipy import special

    discordant = int(up) + int(down)
    if discordant == 0:
        return 1.0
    return float(min(1.0, 2.0 * special.bdtr(min(int(up), int(down)), discordant, 0.5)))


def mover_difference(
    base: Any, base_low: Any, base_high: Any, cand: Any, cand_low: Any, cand_high: Any,
    correlation: Any = 0.0,
) -> tuple[Any, Any]:
    r"""An interval for ``cand - base`` from intervals of each (MOVER, Zou and Donner 2008):

    .. math::

        L = \hat\theta_c - \hat\theta_b - \sqrt{(\hat\theta_c - l_c)^2 + (u_b - \hat\theta_b)^2
            - 2 r (\hat\theta_c - l_c)(u_b - \hat\theta_b)}

    and :math:`U` likewise with the other ends; :math:`r` is the correlation of the two
    estimates (paired evals share their tasks). It keeps each interval's asymmetry (a bound
    near 0 or 1, a skewed metric), and an infinite end stays infinite.

    Examples
    --------
    >>> [round(float(x), 4) for x in mover_difference(0.5, 0.4, 0.6, 0.7, 0.6, 0.8)]
    [0.0586, 0.3414]
    """
    import numpy as np

    arrays = np.broadcast_arrays(
        *(np.asarray(v, float) for v in (base, base_low, base_high, cand, cand_low, cand_high,
                                          correlation))
    )
    base, base_low, base_high, cand, cand_low, cand_high, r = arrays
    r = np.clip(np.nan_to_num(r, nan=0.0), -1.0, 1.0)

    def half(first, second):
        # scaled by the larger excursion, so huge ones (1e200) neither overflow nor cancel
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            scale = np.maximum(np.abs(first), np.abs(second))
            safe = np.where(scale > 0, scale, 1.0)
            f, s = first / safe, second / safe
            out = scale * np.sqrt(np.maximum(f * f + s * s - 2.0 * r * f * s, 0.0))
        return np.where(np.isinf(first) | np.isinf(second), np.inf, out)

    with np.errstate(invalid="ignore"):  # infinite estimates: NaN, said by the caller
        difference = cand - base
        low = difference - half(cand - cand_low, base_high - base)
        high = difference + half(cand_high - cand, base - base_low)
    if low.ndim == 0:
        return (float(low), float(high))
    return (low, high)


def p_value_by_inversion(bounds: Any, null: float = 0.0) -> float:
    r"""The two-sided p-value of the test an interval family inverts: the :math:`\alpha` at
    which the :math:`1-\alpha` interval ``bounds(alpha)`` has ``null`` at an end (so ``p <
    0.05`` exactly when the 95% interval excludes ``null``). 1 when the null stays inside as
    the interval shrinks to its centre, 0 when it is outside even at :math:`\alpha =
    10^{-300}`, NaN when the interval is."""
    import numpy as np
    from scipy.optimize import brentq

    def distance(log_alpha: float) -> float:
        low, high = bounds(math.exp(log_alpha))
        return float(max(np.asarray(low) - null, null - np.asarray(high)))

    def inward(log_alpha: float) -> float:  # an interval too wide to compute holds the null
        value = distance(log_alpha)
        return -1.0 if math.isnan(value) else value

    smallest, largest = math.log(1e-300), math.log1p(-1e-6)
    at_largest = distance(largest)
    if math.isnan(at_largest):
        return math.nan
    if at_largest <= 0:
        return 1.0
    # bracket the root from the 5% level outwards (most p-values read are near it), then
    # Brent's method inside the bracket
    inside, outside = smallest, largest  # null inside the interval at inside, outside at outside
    start = math.log(0.05)
    if distance(start) > 0:
        outside, step = start, 2.0
        while outside - step > smallest and inward(outside - step) > 0:
            outside, step = outside - step, step * 2
        if outside - step <= smallest:
            if inward(smallest) > 0:
                return 0.0
        else:
            inside = outside - step
    else:
        inside = start
    # log(alpha) to 1e-7: the p-value to a relative 1e-7, far finer than it is ever read
    root = brentq(inward, inside, outside, xtol=1e-7, rtol=1e-12, maxiter=200)
    return float(min(1.0, math.exp(root)))
