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

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from relsim.intervals import normal_interval
from relsim.montecarlo._layout import OUTCOME_NAMES, BlockSums, Histogram
from relsim.results import SimulatedOutcome, Tally, estimate
from relsim.scenario.design_tables import UTILITY_OUTCOMES

if TYPE_CHECKING:  # pragma: no cover
    from relsim.scenario import TrialModel

_PERCENTS = (50, 90, 99)


@dataclass(frozen=True)
class Estimates:
    """What the trials say, before it becomes an outcome (population moments).

    ``by_outcome`` counts success, silent, detected and infrastructure failures;
    ``cov_cost_outcome`` is the covariance of a trial's cost with each of their indicators
    (the utility's standard error needs them all); ``silent_by_mode`` counts the silent
    failures under each failure mode (empty without modes).
    """

    trials: int
    by_outcome: tuple[int, int, int, int]
    mean_attempts: float
    var_attempts: float
    mean_cost: float
    var_cost: float
    cov_cost_outcome: tuple[float, float, float, float]
    percentiles: dict[str, dict[str, float]]
    silent_by_mode: tuple[int, ...] = ()

    @property
    def cov_cost_success(self) -> float:
        return self.cov_cost_outcome[0]


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
        by_outcome = (success, silent, detected, 0)  # no faults on this kernel
        per_value = [int(c) for c in counts.sum(axis=0)]
        s1 = sum(a * c for a, c in enumerate(per_value))
        s2 = sum(a * a * c for a, c in enumerate(per_value))
        var_attempts = (n * s2 - s1 * s1) / (n * n)  # exact integers, one rounding
        unit = self.unit_cost
        cov_cost_outcome = []
        for code, count in enumerate(by_outcome[:3]):
            s1_outcome = sum(a * int(c) for a, c in enumerate(counts[code]))
            cov_cost_outcome.append(unit * ((n * s1_outcome - s1 * count) / (n * n)))
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
            cov_cost_outcome=(*cov_cost_outcome, 0.0),  # type: ignore[arg-type]
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


_INT_FIELDS = ("trials", "success", "silent_failure", "detected_failure", "infra_failure", "attempts")
_FLOAT_FIELDS = ("attempts_sq", "cost", "cost_sq", "cost_success", "cost_silent", "cost_infra")


@dataclass(frozen=True)
class StreamTally:
    """Running sums over the general kernels' blocks (keyed by ``BlockSums`` field), added
    in block order so that the float sums are the same whatever the threads and chunks."""

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
    silent_by_mode: tuple[int, ...] | None = None

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
        by_mode = tuple(int(c) for c in sums.silent_by_mode.sum(axis=0))
        if self.silent_by_mode is not None:
            by_mode = tuple(a + b for a, b in zip(self.silent_by_mode, by_mode))
        if self.cost_hist is None or self.attempts_hist is None:  # the first result
            cost_hist, attempts_hist = result.cost_hist, result.attempts_hist
        else:
            cost_hist = self.cost_hist.merged(result.cost_hist)
            attempts_hist = self.attempts_hist.merged(result.attempts_hist)
        return StreamTally(self.attempts_shift, self.cost_shift, totals, cost_hist, attempts_hist,
                           by_mode)

    def estimates(self) -> Estimates:
        # the driver estimates only after some trials, so both histograms are there
        assert self.cost_hist is not None and self.attempts_hist is not None
        t = self.totals
        n = int(t["trials"])
        # Sums of values shifted by a typical trial's value: the variances do not cancel.
        attempts_d = t["attempts"] / n - self.attempts_shift
        cost_d = t["cost"] / n
        by_outcome = (int(t["success"]), int(t["silent_failure"]), int(t["detected_failure"]),
                      int(t["infra_failure"]))
        # Cov(C, 1[outcome]) = E[(C - shift) 1[outcome]] - E[C - shift] P(outcome); the
        # indicators sum to 1, so the detected failures' is minus the others'.
        cov_success, cov_silent, cov_infra = (
            t[key] / n - cost_d * (count / n)
            for key, count in (("cost_success", by_outcome[0]), ("cost_silent", by_outcome[1]),
                               ("cost_infra", by_outcome[3]))
        )
        return Estimates(
            trials=n,
            by_outcome=by_outcome,
            mean_attempts=t["attempts"] / n,
            var_attempts=max(0.0, t["attempts_sq"] / n - attempts_d**2),
            mean_cost=self.cost_shift + cost_d,
            var_cost=max(0.0, t["cost_sq"] / n - cost_d**2),
            cov_cost_outcome=(cov_success, cov_silent, -(cov_success + cov_silent + cov_infra),
                              cov_infra),
            percentiles={
                "cost": {f"p{q}": self.cost_hist.percentile(q) for q in _PERCENTS},
                "attempts": {f"p{q}": self.attempts_hist.percentile(q) for q in _PERCENTS},
            },
            silent_by_mode=self.silent_by_mode or (),
        )


def simulated_outcome(
    estimates: Estimates,
    seed: int | None,
    partial: bool,
    trajectories: Any,
    cost_unit: float = 1.0,
    model: TrialModel | None = None,
) -> SimulatedOutcome:
    """Point estimates, standard errors and 95% intervals (:func:`relsim.results.estimate`,
    the one rule of both stochastic engines), with ``model``'s failure modes (their shares of
    silent failures, as the other shares, keyed ``silent_by_mode_<name>``) and utility.

    The cost estimates are computed in ``cost_unit`` (the kernels' unit, a power of two) and
    multiplied back last, so that a cost beyond the float range comes out infinite (Python
    floats: no exception, no warning) instead of overflowing half-way.
    """
    e = estimates
    mode_names = () if model is None else model.mode_names
    result = estimate(_as_tally(e, cost_unit, mode_names))
    values = result.values
    standard_errors = result.standard_errors
    intervals = result.intervals
    percentiles = e.percentiles
    if cost_unit != 1.0:
        percentiles = {
            **percentiles,
            "cost": {q: _in_unit(v, cost_unit) for q, v in percentiles["cost"].items()},
        }
    silent_by_mode = None
    if mode_names:
        silent_by_mode = {name: values[f"silent_by_mode_{name}"] for name in mode_names}
    expected_utility = None
    if model is not None and model.utility is not None:
        shares = {key: values[key] for key in UTILITY_OUTCOMES if key in values}
        utility = model.utility_of(shares, values["expected_cost"])
        assert utility is not None  # the model has a [utility]
        se = _utility_se(e, model.utility, cost_unit)
        standard_errors = {**standard_errors, "expected_utility": se}
        intervals = {**intervals, "expected_utility": normal_interval(utility, se)}
        expected_utility = utility
    return SimulatedOutcome(
        success=values["success"],
        silent_failure=values["silent_failure"],
        detected_failure=values["detected_failure"],
        infra_failure=values["infra_failure"],
        expected_attempts=values["expected_attempts"],
        expected_cost=values["expected_cost"],
        silent_by_mode=silent_by_mode,
        expected_utility=expected_utility,
        standard_errors=standard_errors,
        intervals=intervals,
        percentiles=percentiles,
        trials=e.trials,
        seed=seed,
        partial=partial,
        trajectories=trajectories,
    )


def _utility_se(estimates: Estimates, utility: np.ndarray, cost_unit: float) -> float:
    r"""Standard error of the mean utility per trial, :math:`U = v_O - w C` (``v_O`` the value
    of the trial's outcome, ``w`` the cost weight), from the counts and cost moments:

    .. math::

        \mathrm{Var}(U) = \mathrm{Var}(v_O) + w^2 \mathrm{Var}(C)
        - 2 w \sum_o v_o \mathrm{Cov}(C, 1[O = o]),

    the sample variance over :math:`N` (NaN with one trial)."""
    e = estimates
    n = e.trials
    values = [float(v) for v in utility[: len(e.by_outcome)]]  # the timeout's is unused here
    weight = float(utility[-1]) * cost_unit  # the moments are in the kernels' cost unit
    # Var(U) / scale**2, so that costs near the float range do not overflow when squared
    scale = max(1.0, abs(weight))
    shares = [count / n for count in e.by_outcome]
    mean_value = math.fsum(v / scale * p for v, p in zip(values, shares))
    variance = math.fsum((v / scale) ** 2 * p for v, p in zip(values, shares)) - mean_value**2
    if weight:
        covariance = math.fsum(v / scale * c for v, c in zip(values, e.cov_cost_outcome))
        share = weight / scale
        variance += share * share * e.var_cost - 2.0 * share * covariance
    if math.isnan(variance):  # a cost beyond the float range: undefined, as cost's own
        return math.nan
    sample = n / (n - 1) if n > 1 else math.nan
    return scale * math.sqrt(max(0.0, variance) * sample / n)


def _as_tally(estimates: Estimates, cost_unit: float, mode_names: tuple[str, ...] = ()) -> Tally:
    """The counts and moments of :class:`Estimates` as :func:`relsim.results.estimate` takes
    them (costs in the kernels' unit)."""
    e = estimates
    counts = dict(zip(OUTCOME_NAMES, e.by_outcome))
    counts.update(
        (f"silent_by_mode_{name}", count) for name, count in zip(mode_names, e.silent_by_mode)
    )
    return Tally(
        trials=e.trials,
        counts=counts,
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
