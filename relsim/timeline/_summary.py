"""The compiled path's estimates: the tally's moments and order statistics in numba passes.

Private; :mod:`relsim.timeline._fast` hands a :class:`Summary` to the tally
(``relsim.timeline._driver._Tally.compiled``) once its kernel has run, and the tally reads
its means, variances, covariance and duration order statistics from it instead of from
numpy's whole-array passes (a dozen of them, and a sort: 0.1 s of a 0.5 s call on 2,000,000
trials; these take a few milliseconds). The same quantities: sums in blocks (each block's
sum in order, then the blocks' in order: within a few ulps of numpy's pairwise sums), the
variances from the deviations about the mean (two passes, as numpy's ``var``), the order
statistics exact (the values around each rank asked for, then a sort of those).
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: Values a block sum adds one after another.
_BLOCK = 1024


@numba.njit(nogil=True, cache=True)
def _moments(outcome, attempts, cost, duration, counts):
    """``counts[k]``: trials with outcome code ``k``; returns the means and population
    variances of attempts, cost and duration and the covariance of cost and success."""
    n = outcome.shape[0]
    for k in range(n):
        counts[outcome[k]] += 1
    sums = np.zeros(3)
    for start in range(0, n, _BLOCK):
        a = 0.0
        c = 0.0
        d = 0.0
        for k in range(start, min(start + _BLOCK, n)):
            a += attempts[k]
            c += cost[k]
            d += duration[k]
        sums[0] += a
        sums[1] += c
        sums[2] += d
    mean_a, mean_c, mean_d = sums[0] / n, sums[1] / n, sums[2] / n
    squares = np.zeros(5)
    for start in range(0, n, _BLOCK):
        a = 0.0
        c = 0.0
        d = 0.0
        cs = 0.0  # the successes' cost deviations
        ct = 0.0  # every trial's
        for k in range(start, min(start + _BLOCK, n)):
            x = attempts[k] - mean_a
            y = cost[k] - mean_c
            z = duration[k] - mean_d
            a += x * x
            c += y * y
            d += z * z
            ct += y
            cs += y if outcome[k] == 0 else 0.0
        squares[0] += a
        squares[1] += c
        squares[2] += d
        squares[3] += cs
        squares[4] += ct
    share = counts[0] / n
    cov = (squares[3] - share * squares[4]) / n
    return (mean_a, squares[0] / n, mean_c, squares[1] / n, mean_d, squares[2] / n, cov)


@numba.njit(nogil=True, cache=True)
def _count_brackets(values, lows, highs, below, inside):
    """For each bracket ``j``: ``below[j]`` values under ``lows[j]``, ``inside[j]`` within
    ``[lows[j], highs[j]]``."""
    for j in range(lows.shape[0]):  # (a bracket at a time: vector instructions)
        low, high = lows[j], highs[j]
        under = 0
        within = 0
        for k in range(values.shape[0]):
            v = values[k]
            under += v < low
            within += (v >= low) & (v <= high)
        below[j] = under
        inside[j] = within


@numba.njit(nogil=True, cache=True)
def _fill_brackets(values, lows, highs, starts, out):
    """The values within each bracket, bracket ``j``'s from ``out[starts[j]]`` on (``out``
    one longer than they all: the last write may fall past them)."""
    for j in range(lows.shape[0]):
        low, high = lows[j], highs[j]
        at = starts[j]
        for k in range(values.shape[0]):  # (no branch: a write, kept or overwritten)
            v = values[k]
            out[at] = v
            at += (v >= low) & (v <= high)


#: A sample this large (evenly spaced: the trials are independent, so a random one) brackets
#: the ranks asked for.
_SAMPLE = 1 << 16


class Summary:
    """What the tally asks of the compiled path's columns (every trial ended)."""

    def __init__(self, outcome: np.ndarray, attempts: np.ndarray, cost: np.ndarray,
                 duration: np.ndarray, outcomes: int) -> None:
        self.duration = duration
        self.counts = np.zeros(outcomes, dtype=np.int64)
        self.moments = _moments(outcome, attempts, cost, duration, self.counts)

    def order_statistics(self, ranks: list[int]) -> dict[int, float]:
        """``{k: np.sort(duration)[k]}`` for the 0-based ``ranks`` (sorted), exactly: each
        cluster of ranks is bracketed by two values of a sorted sample (6 binomial standard
        deviations either side), one pass counts the values below and within each bracket,
        another collects those within, and only they are sorted; a bracket that misses its
        ranks (about one chance in 10**9) falls back to a sort of them all."""
        values = self.duration
        n = values.size
        if n <= 4 * _SAMPLE:
            ordered = np.sort(values)
            return {k: float(ordered[k]) for k in ranks}
        sample = np.sort(values[:: n // _SAMPLE])
        m = sample.size
        clusters: list[list[int]] = []
        for k in ranks:  # ranks whose brackets would overlap share one
            if clusters and k - clusters[-1][-1] <= n // 64:
                clusters[-1].append(k)
            else:
                clusters.append([k])
        lows, highs = np.empty(len(clusters)), np.empty(len(clusters))
        for j, cluster in enumerate(clusters):
            # the sample's count below the k-th smallest value is Binomial(m, k / n)
            first, last = cluster[0] / n, cluster[-1] / n
            lo = int(m * first - 6.0 * math.sqrt(m * first * (1.0 - first)) - 2.0)
            hi = int(math.ceil(m * last + 6.0 * math.sqrt(m * last * (1.0 - last)) + 2.0))
            lows[j] = sample[lo] if lo >= 0 else -math.inf
            highs[j] = sample[hi] if hi < m else math.inf
        below = np.zeros(len(clusters), dtype=np.int64)
        inside = np.zeros(len(clusters), dtype=np.int64)
        _count_brackets(values, lows, highs, below, inside)
        if any(not (below[j] <= c[0] and c[-1] < below[j] + inside[j])
               for j, c in enumerate(clusters)):
            ordered = np.sort(values)
            return {k: float(ordered[k]) for k in ranks}
        starts = np.concatenate([[0], np.cumsum(inside)[:-1]]).astype(np.int64)
        within = np.empty(int(inside.sum()) + 1)
        _fill_brackets(values, lows, highs, starts, within)
        out: dict[int, float] = {}
        for j, cluster in enumerate(clusters):
            part = np.sort(within[starts[j]:starts[j] + inside[j]])
            for k in cluster:
                out[k] = float(part[k - below[j]])
        return out
