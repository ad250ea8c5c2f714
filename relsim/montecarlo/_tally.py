r"""Tallies of the kernels' results, and the estimates they give (-> ``SimulatedOutcome``).

Private. A tally is immutable: ``add`` returns a new one, so a Ctrl-C between two merges sees
one or the other. Results are added in block order, so every float sum is the same whatever
the threads and chunks.

A tally's counts and moments become estimates through :func:`relsim.results.estimate`, the
one rule of both stochastic engines: the proportions are outcome frequencies with binomial
standard errors and Wilson 95% intervals; the means have standard error :math:`s/\sqrt N` and
normal intervals; the ratio :math:`\hat R = \bar C / \hat p_S` has the delta-method
standard error :math:`\sqrt{\widehat{\mathrm{Var}}(C - \hat R S)/N} / \hat p_S` (see
``simulate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from relsim.montecarlo._layout import OUTCOME_NAMES, BlockSums, Histogram
from relsim.results import SimulatedOutcome, Tally, estimate

_PERCENTS = (50, 90, 99)


@dataclass(frozen=True)
class Estimates:
    """What the trials say, before it becomes an outcome (population moments)."""

    trials: int
    by_outcome: tuple[int, int, int]
    mean_attempts: float
    var_attempts: float
    mean_cost: float
    var_cost: float
    cov_cost_success: float
    percentiles: dict[str, dict[str, float]]


@dataclass(frozen=True)
class ExactTally:
    """Sum of ``run_simple``'s joint histograms of (outcome, attempts): integers, so the
    merge order does not matter and every moment is computed exactly."""

    unit_cost: float
    counts: np.ndarray | None = None

    @property
    def trials(self) -> int:
        return 0 if self.counts is None else int(self.counts.sum())

    def add(self, counts: np.ndarray) -> "ExactTally":
        return ExactTally(self.unit_cost, counts if self.counts is None else self.counts + counts)

    def estimates(self) -> Estimates:
        counts = self.counts
        assert counts is not None  # the driver estimates only after some trials
        n = int(counts.sum())
        success, silent, detected = (int(c) for c in counts.sum(axis=1))
        by_outcome = (success, silent, detected)
        per_value = [int(c) for c in counts.sum(axis=0)]
        success_values = [int(c) for c in counts[0]]
        s1 = sum(a * c for a, c in enumerate(per_value))
        s2 = sum(a * a * c for a, c in enumerate(per_value))
        s1_success = sum(a * c for a, c in enumerate(success_values))
        var_attempts = (n * s2 - s1 * s1) / (n * n)  # exact integers, one rounding
        cov_attempts_success = (n * s1_success - s1 * by_outcome[0]) / (n * n)
        unit = self.unit_cost
        attempts_percentiles = {
            f"p{q}": float(_inverted_cdf(counts.sum(axis=0), q)) for q in _PERCENTS
        }
        return Estimates(
            trials=n,
            by_outcome=by_outcome,
            mean_attempts=s1 / n,
            var_attempts=var_attempts,
            mean_cost=unit * (s1 / n),
            var_cost=unit * unit * var_attempts,
            cov_cost_success=unit * cov_attempts_success,
            percentiles={
                "cost": {key: unit * value for key, value in attempts_percentiles.items()},
                "attempts": attempts_percentiles,
            },
        )


def _inverted_cdf(counts: np.ndarray, percent: int) -> int:
    """Index of the ``ceil(percent/100 N)``-th smallest value of a histogram of integers."""
    total = int(counts.sum())
    rank = max(1, -(-percent * total // 100))  # integer ceil: no rounding surprises
    return int(np.searchsorted(np.cumsum(counts), rank))


@dataclass(frozen=True)
class GeneralResult:
    """What one ``run_general`` call fills: per-block sums and two histograms."""

    sums: BlockSums
    cost_hist: Histogram
    attempts_hist: Histogram


_INT_FIELDS = ("trials", "success", "silent_failure", "detected_failure", "attempts")
_FLOAT_FIELDS = ("attempts_sq", "cost", "cost_sq", "cost_success")


@dataclass(frozen=True)
class StreamTally:
    """Running sums over ``run_general``'s blocks (keyed by ``BlockSums`` field), added in
    block order so that the float sums are the same whatever the threads and chunks."""

    attempts_shift: float
    cost_shift: float
    totals: Mapping[str, int | float] = field(
        default_factory=lambda: {
            **dict.fromkeys(_INT_FIELDS, 0),
            **dict.fromkeys(_FLOAT_FIELDS, 0.0),
        }
    )
    cost_hist: Histogram | None = None
    attempts_hist: Histogram | None = None

    @property
    def trials(self) -> int:
        return int(self.totals["trials"])

    def add(self, result: GeneralResult) -> "StreamTally":
        totals = dict(self.totals)  # a new mapping: this tally stays as it was
        sums = result.sums
        for block in range(sums.trials.shape[0]):
            for name in _INT_FIELDS:
                totals[name] += int(getattr(sums, name)[block])
            for name in _FLOAT_FIELDS:
                totals[name] += float(getattr(sums, name)[block])
        if self.cost_hist is None or self.attempts_hist is None:  # the first result
            cost_hist, attempts_hist = result.cost_hist, result.attempts_hist
        else:
            cost_hist = self.cost_hist.merged(result.cost_hist)
            attempts_hist = self.attempts_hist.merged(result.attempts_hist)
        return StreamTally(self.attempts_shift, self.cost_shift, totals, cost_hist, attempts_hist)

    def estimates(self) -> Estimates:
        # the driver estimates only after some trials, so both histograms are there
        assert self.cost_hist is not None and self.attempts_hist is not None
        t = self.totals
        n = int(t["trials"])
        # Sums of values shifted by a typical trial's value: the variances do not cancel.
        attempts_d = t["attempts"] / n - self.attempts_shift
        cost_d = t["cost"] / n
        return Estimates(
            trials=n,
            by_outcome=(int(t["success"]), int(t["silent_failure"]), int(t["detected_failure"])),
            mean_attempts=t["attempts"] / n,
            var_attempts=max(0.0, t["attempts_sq"] / n - attempts_d**2),
            mean_cost=self.cost_shift + cost_d,
            var_cost=max(0.0, t["cost_sq"] / n - cost_d**2),
            cov_cost_success=t["cost_success"] / n - cost_d * (t["success"] / n),
            percentiles={
                "cost": {f"p{q}": self.cost_hist.percentile(q) for q in _PERCENTS},
                "attempts": {f"p{q}": self.attempts_hist.percentile(q) for q in _PERCENTS},
            },
        )


def simulated_outcome(
    estimates: Estimates,
    seed: int | None,
    partial: bool,
    trajectories: Any,
    cost_unit: float = 1.0,
) -> SimulatedOutcome:
    """Point estimates, standard errors and 95% intervals (:func:`relsim.results.estimate`,
    the one rule of both stochastic engines).

    The cost estimates are computed in ``cost_unit`` (the kernels' unit, a power of two) and
    multiplied back last, so that a cost beyond the float range comes out infinite (Python
    floats: no exception, no warning) instead of overflowing half-way.
    """
    e = estimates
    result = estimate(_as_tally(e, cost_unit))
    values = result.values
    percentiles = e.percentiles
    if cost_unit != 1.0:
        percentiles = {
            **percentiles,
            "cost": {q: _in_unit(v, cost_unit) for q, v in percentiles["cost"].items()},
        }
    return SimulatedOutcome(
        success=values["success"],
        silent_failure=values["silent_failure"],
        detected_failure=values["detected_failure"],
        infra_failure=values["infra_failure"],
        expected_attempts=values["expected_attempts"],
        expected_cost=values["expected_cost"],
        standard_errors=result.standard_errors,
        intervals=result.intervals,
        percentiles=percentiles,
        trials=e.trials,
        seed=seed,
        partial=partial,
        trajectories=trajectories,
    )


def _as_tally(estimates: Estimates, cost_unit: float) -> Tally:
    """The counts and moments of :class:`Estimates` as :func:`relsim.results.estimate` takes
    them (costs in the kernels' unit)."""
    e = estimates
    return Tally(
        trials=e.trials,
        # no attempt is lost to faults in these kernels: infra_failure is a count of 0
        counts={**dict(zip(OUTCOME_NAMES, e.by_outcome)), "infra_failure": 0},
        means={
            "expected_attempts": (e.mean_attempts, e.var_attempts),
            "expected_cost": (e.mean_cost, e.var_cost),
        },
        cov_cost_success=e.cov_cost_success,
        cost_unit=cost_unit,
    )


def _in_unit(value: float, unit: float) -> float:
    """``value * unit`` as a Python float: infinite past the float range, never an error."""
    return float(value) * unit
