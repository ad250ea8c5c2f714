"""The result types, the one tally-to-estimate rule and the one flattening convention.

Both stochastic engines turn their tallies into estimates through ``relsim.results.estimate``:
the same trials, tallied by Monte Carlo (its two tallies) and by the timeline, must report the
same estimates, standard errors and intervals, including when nothing succeeds. The expected
numbers come from the per-trial values themselves (numpy's mean and sample standard
deviation, the residuals of the ratio), not from the code under test.
"""

from __future__ import annotations

from types import SimpleNamespace

import math

import numpy as np
import pytest

import relsim
from relsim import Scenario, evaluate, simulate, simulate_timeline
from relsim.montecarlo._layout import HIST_BINS, BlockSums, Histogram
from relsim.montecarlo._tally import ExactTally, GeneralResult, StreamTally, simulated_outcome
from relsim.results import (
    OUTCOME_KEYS,
    Outcome,
    SimulatedOutcome,
    Tally,
    TimelineOutcome,
    estimate,
    flatten,
)
from relsim.timeline._driver import _Tally as TimelineTally


def _model(cost_unit: float) -> SimpleNamespace:
    """What the timeline's tally reads of its model: section 3 trials in this cost unit."""
    return SimpleNamespace(cost_unit=cost_unit, mode_names=(), utility=None)

Z95 = 1.959963984540054


# ------------------------------------------------------------------------------ the trials
def trials(case: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-trial outcome codes (0 success, 1 silent, 2 detected) and attempts."""
    rng = np.random.default_rng(11)
    if case == "mixed":  # failures take more attempts: cost and success are correlated
        codes = rng.choice(3, size=500, p=[0.7, 0.2, 0.1])
        return codes, rng.integers(1, 9, size=500) + 4 * (codes != 0)
    if case == "nothing succeeds":
        return rng.choice([1, 2], size=300), rng.integers(1, 9, size=300)
    if case == "everything succeeds":  # shares of 1 and 0
        return np.zeros(200, dtype=int), rng.integers(1, 9, size=200)
    if case == "one success":
        return np.array([0]), np.array([3])
    if case == "one failure":
        return np.array([2]), np.array([3])
    raise AssertionError(case)


CASES = ("mixed", "nothing succeeds", "everything succeeds", "one success", "one failure")
UNIT_COST = 1.5  # every attempt costs the same: the fast kernel's tally can hold these trials


def montecarlo_exact(codes, attempts) -> SimulatedOutcome:
    """The fast kernel's tally: the joint histogram of (outcome, attempts)."""
    counts = np.zeros((3, int(attempts.max()) + 1), dtype=np.int64)
    np.add.at(counts, (codes, attempts), 1)
    return simulated_outcome(ExactTally(UNIT_COST).add(counts).estimates(), 1, False, None)


def montecarlo_stream(codes, attempts) -> SimulatedOutcome:
    """The general kernel's tally: one block of sums shifted by a typical trial's value."""
    cost = attempts * UNIT_COST
    attempts_shift, cost_shift = 5.0, 5.0 * UNIT_COST
    sums = BlockSums.zeros(1)
    sums.trials[0] = len(codes)
    for code, name in enumerate(("success", "silent_failure", "detected_failure")):
        getattr(sums, name)[0] = np.count_nonzero(codes == code)
    sums.attempts[0] = attempts.sum()
    sums.attempts_sq[0] = np.sum((attempts - attempts_shift) ** 2)
    sums.cost[0] = np.sum(cost - cost_shift)
    sums.cost_sq[0] = np.sum((cost - cost_shift) ** 2)
    sums.cost_success[0] = np.sum((cost - cost_shift)[codes == 0])
    lump = np.zeros(HIST_BINS, np.int64)
    lump[0] = len(codes)  # the percentiles are not compared here
    hist = Histogram(lump, np.zeros(HIST_BINS), np.zeros(HIST_BINS))
    tally = StreamTally(attempts_shift, cost_shift).add(GeneralResult(sums, hist, hist))
    return simulated_outcome(tally.estimates(), 1, False, None)


def timeline(codes, attempts):
    """The timeline's tally: one entry per trial."""
    tally = TimelineTally(len(codes), _model(1.0))
    tally.outcome_code[:] = codes
    tally.attempts[:] = attempts
    tally.cost[:] = attempts * UNIT_COST
    tally.duration[:] = attempts * 10.0
    tally.done = len(codes)
    return tally.estimate()


def same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or a == pytest.approx(b, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("case", CASES)
def test_one_tally_gives_the_same_estimates_in_both_engines(case):
    codes, attempts = trials(case)
    line = timeline(codes, attempts)
    for mc in (montecarlo_exact(codes, attempts), montecarlo_stream(codes, attempts)):
        for key in OUTCOME_KEYS:
            assert same(getattr(mc, key), line.values[key]), (key, getattr(mc, key), line.values[key])
            assert same(mc.standard_errors[key], line.standard_errors[key]), key
            for got, want in zip(mc.intervals[key], line.intervals[key]):
                assert same(got, want), (key, mc.intervals[key], line.intervals[key])
        # the shares are counts over trials: exactly the same numbers
        for key in OUTCOME_KEYS[:3]:
            assert mc.standard_errors[key] == line.standard_errors[key]
            assert mc.intervals[key] == line.intervals[key]


@pytest.mark.parametrize("case", CASES)
def test_the_estimates_are_those_of_the_trials_themselves(case):
    codes, attempts = trials(case)
    cost = attempts * UNIT_COST
    n = len(codes)
    line = timeline(codes, attempts)
    for code, key in enumerate(("success", "silent_failure", "detected_failure")):
        p = np.count_nonzero(codes == code) / n
        assert line.values[key] == p
        assert line.standard_errors[key] == pytest.approx(math.sqrt(p * (1 - p) / n), abs=1e-15)
        low, high = line.intervals[key]
        if p == 0:  # Wilson's closed form at no success: (0, z^2/n / (1 + z^2/n))
            assert (low, high) == (0.0, pytest.approx(Z95**2 / n / (1 + Z95**2 / n)))
        assert 0 <= low <= p <= high <= 1
    for key, values in (("expected_attempts", attempts), ("expected_cost", cost)):
        se = np.std(values, ddof=1) / math.sqrt(n) if n > 1 else math.nan
        assert same(line.values[key], values.mean()) and same(line.standard_errors[key], se)
    success = codes == 0
    if not success.any():  # no success: infinite, as the exact engine says
        assert line.values["cost_per_success"] == math.inf
        assert line.standard_errors["cost_per_success"] == math.inf
        assert line.intervals["cost_per_success"] == (math.inf, math.inf)
        return
    ratio = cost.mean() / success.mean()
    residual_se = (np.std(cost - ratio * success, ddof=1) / math.sqrt(n) / success.mean()
                   if n > 1 else math.nan)
    assert same(line.values["cost_per_success"], ratio)
    assert same(line.standard_errors["cost_per_success"], residual_se)


def test_negative_control_a_tally_without_its_covariance_is_caught():
    codes, attempts = trials("mixed")
    cost = attempts * UNIT_COST
    success = codes == 0
    n = len(codes)
    means = {"expected_attempts": (attempts.mean(), attempts.var()),
             "expected_cost": (cost.mean(), cost.var())}
    counts = {"success": int(success.sum())}
    ratio = cost.mean() / success.mean()
    truth = np.std(cost - ratio * success, ddof=1) / math.sqrt(n) / success.mean()
    covariance = float(np.mean((cost - cost.mean()) * (success - success.mean())))
    right = estimate(Tally(n, counts, means, covariance)).standard_errors["cost_per_success"]
    wrong = estimate(Tally(n, counts, means, 0.0)).standard_errors["cost_per_success"]
    assert right == pytest.approx(truth, rel=1e-12)
    assert wrong != pytest.approx(truth, rel=1e-3)


def test_the_cost_unit_rescales_exactly_and_keeps_huge_costs_finite():
    codes, attempts = trials("mixed")
    plain = timeline(codes, attempts)
    # the trial process sums costs in the model's unit (here 2**1000), the tally multiplies back
    tally = TimelineTally(len(codes), _model(2.0**1000))
    tally.outcome_code[:] = codes
    tally.attempts[:] = attempts
    tally.cost[:] = attempts * UNIT_COST
    tally.done = len(codes)
    huge = tally.estimate()
    for key in ("expected_cost", "cost_per_success"):
        assert huge.values[key] == plain.values[key] * 2.0**1000
        assert huge.standard_errors[key] == plain.standard_errors[key] * 2.0**1000
        assert math.isfinite(huge.standard_errors[key])


# ------------------------------------------------------------------------------ the engines
@pytest.mark.parametrize("p", [0.0, 1.0])
def test_both_engines_report_certain_outcomes_alike(p):
    scenario = {"steps": 2, "p": p}
    mc = simulate(scenario, 400, seed=1, threads=1)
    line = simulate_timeline(scenario, 400, seed=1)
    for key in OUTCOME_KEYS:
        assert getattr(mc, key) == getattr(line, key), key
        assert mc.standard_errors[key] == line.standard_errors[key], key
        assert mc.intervals[key] == line.intervals[key], key
        assert mc.to_dict()[f"{key}_se"] == line.to_dict()[f"{key}_se"], key
        assert mc.to_dict()[f"{key}_ci"] == line.to_dict()[f"{key}_ci"], key
    if p == 0.0:  # nothing succeeds: infinite cost per success, null in JSON, in both
        assert line.standard_errors["cost_per_success"] == math.inf
        assert line.to_dict()["cost_per_success_se"] is None
        assert line.to_dict()["cost_per_success_ci"] == [None, None]


def test_the_timeline_result_is_a_simulated_outcome():
    out = simulate_timeline({"steps": 3, "p": 0.8, "verifier": {"miss": 0.1},
                             "timing": {"attempt": 5}}, 200, seed=2)
    assert type(out) is TimelineOutcome and isinstance(out, SimulatedOutcome)
    assert isinstance(out, Outcome) and out.method == "timeline"
    assert relsim.TimelineOutcome is TimelineOutcome is relsim.timeline.TimelineOutcome
    keys = list(out.to_dict())
    shares = ("success", "silent_failure", "detected_failure", "timeout", "infra_failure",
              "expected_attempts", "expected_cost", "cost_per_success")
    assert keys == [
        *(name for key in shares for name in (key, f"{key}_se", f"{key}_ci")),
        "duration", "duration_se", "wait", "utilisation", "bottleneck",
        *(name for key in ("makespan", "throughput_per_hour", "successes_per_hour")
          for name in (key, f"{key}_se", f"{key}_ci")),
        "warnings",
        "method", "trials", "seed", "partial", "replications", "tasks", "warmup", "precision",
    ]
    # independent trials: the percentiles have intervals, there is no throughput
    d = out.to_dict()
    assert list(d["duration"]) == [f"{key}{suffix}" for key in ("mean", "p50", "p90", "p99")
                                   for suffix in ("", "_se", "_ci")]
    assert d["makespan"] is None and d["throughput_per_hour"] is None and d["replications"] is None


def test_a_workload_result_reports_every_figure_with_its_error():
    out = simulate_timeline({"steps": 2, "p": 0.8, "verifier": {}, "retries": {"per_step": 1},
                             "timing": {"attempt": {"mean": 4}},
                             "fleet": {"arrivals": "poisson", "rate_per_hour": 600, "tasks": 60},
                             "resources": {"llm_concurrency": 1}, "targets": {"duration_p90": 60}},
                            replications=3, seed=2)
    d = out.to_dict()
    assert list(d)[-4:] == ["replications", "tasks", "warmup", "precision"]
    assert (d["replications"], d["tasks"], d["warmup"], d["trials"]) == (3, 60, 6, 3 * 54)
    for table in ("duration", "wait", "utilisation", "offered_load"):
        for key, value in list(d[table].items()):
            if value is not None and not key.endswith(("_se", "_ci")):
                assert f"{key}_se" in d[table] and f"{key}_ci" in d[table], (table, key)
    assert d["bottleneck"] == "llm" and set(d["targets"]) == {"duration_p90"}
    verdict = d["targets"]["duration_p90"]
    assert verdict["estimate"] == d["duration"]["p90"] and verdict["ci"] == d["duration"]["p90_ci"]
    row = out.to_row()
    assert row["targets_duration_p90_ci_low"] == verdict["ci"][0]
    assert row["offered_load_llm_se"] == d["offered_load"]["llm_se"]


# ------------------------------------------------------------------------------ flattening
def test_flatten_joins_splits_intervals_only_and_keeps_other_lists():
    row = flatten({
        "success": np.float64(0.5),
        "success_ci": (0.25, 0.75),
        "metrics": {"steps": {"mean": 4.0, "ci": [3.0, 5.0], "ci_success": [None, 6.0]}},
        "value": [1, 2],  # an allocation's budgets: a pair, but not an interval
        "cost_per_success": math.inf,
        "reason": None,
    })
    assert list(row) == [
        "success", "success_ci_low", "success_ci_high", "metrics_steps_mean",
        "metrics_steps_ci_low", "metrics_steps_ci_high", "metrics_steps_ci_success_low",
        "metrics_steps_ci_success_high", "value", "cost_per_success", "reason",
    ]
    assert type(row["success"]) is float and row["value"] == [1, 2]
    assert row["cost_per_success"] == math.inf
    assert math.isnan(row["reason"]) and math.isnan(row["metrics_steps_ci_success_low"])


def results_of_every_kind():
    from relsim import plan
    from relsim.plan.chain import plan_chain

    two_steps = Scenario.from_dict({"steps": 2, "p": [0.9, 0.6], "verifier": {"miss": 0.0}})
    return {
        "exact": evaluate(two_steps),
        "montecarlo": simulate({"steps": 2, "p": 0.0}, 500, seed=3, threads=1),
        "timeline": simulate_timeline({"steps": 2, "p": 0.7, "timing": {"attempt": 3}}, 100, seed=3),
        "allocation": plan.allocation(two_steps, 0.9),
        "verifier": plan.verifier(two_steps, 0.9),
        "chain": plan_chain(25, 0.95, 0.9, miss=0.01),
    }


def test_every_to_frame_is_one_row_of_its_to_dict_flattened():
    for name, result in results_of_every_kind().items():
        frame = result.to_frame()
        data = flatten(result.to_dict())  # JSON's None where the frame keeps inf or NaN
        assert len(frame) == 1 and list(frame.columns) == list(data), name
        for column, value in data.items():
            cell = frame.at[0, column]
            if isinstance(value, float) and math.isnan(value):
                assert cell is None or not np.isfinite(cell), (name, column)
            else:
                assert cell == value, (name, column)
    plans = results_of_every_kind()
    assert plans["allocation"].to_frame().at[0, "value"] == list(plans["allocation"].value)
    assert plans["montecarlo"].to_frame().at[0, "cost_per_success"] == math.inf


def test_an_outcomes_row_is_its_frame():
    for name in ("exact", "montecarlo", "timeline"):
        result = results_of_every_kind()[name]
        frame = result.to_frame()
        row = result.to_row()
        assert list(row) == list(frame.columns)
        for column, value in row.items():
            cell = frame.at[0, column]
            assert value == cell or (math.isnan(value) and math.isnan(cell)), (name, column)
