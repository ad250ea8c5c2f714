r"""Standard errors and confidence intervals, one home for every engine and estimator.

The Monte Carlo engine reports binomial standard errors with Wilson intervals for its
proportions and normal intervals for its means; the trial-data statistics (``evalstats``)
build their clustered and bootstrap intervals here too, so one formula has one definition.
Only the standard library and numpy are imported at module level; scipy where it is needed.
"""

from __future__ import annotations

import math

__all__ = ["Z95", "binomial_se", "normal_interval", "wilson"]

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
