"""relsim.simulate: the reference values of docs/model.md section 5, a slow reference
simulator, reproducibility, trajectories, percentiles, interruption, bad input, the result
types and numba's cache.

Stochastic checks use fixed seeds and a tolerance of 5 standard errors computed from the run;
each family has a negative control (a slightly wrong scenario) that the same check catches.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import relsim
from relsim import Scenario, simulate
from relsim.scenario import trial_model
from relsim.errors import RelsimError
from relsim.montecarlo import BLOCK_TRIALS, _checks, _draws, _driver, _inputs
from relsim.montecarlo._layout import STATE_WORDS

import test_reference_values
from slow_simulator import simulate_slowly

KEYS = ("success", "silent_failure", "detected_failure", "expected_attempts", "expected_cost")

# docs/model.md section 5 (copied once, in test_reference_values.py): scenario and exact
# (success, silent, detected, E[attempts], E[cost]).
REFERENCE = {
    case: (json.loads(text), tuple(values))
    for case, (text, *values) in test_reference_values.REFERENCE.items()
}


def scenario(case: str, **changes) -> Scenario:
    data = dict(REFERENCE[case][0])
    for dotted, value in changes.items():
        table, _, key = dotted.partition("__")
        if key:
            data[table] = {**data[table], key: value}
        else:
            data[table] = value
    return Scenario.from_dict(data)


def reference(case: str) -> dict[str, float]:
    values = dict(zip(KEYS, REFERENCE[case][1]))
    values["cost_per_success"] = values["expected_cost"] / values["success"]
    return values


PROPORTIONS = ("success", "silent_failure", "detected_failure")


def z_scores(outcome, expected: dict[str, float]) -> dict[str, float]:
    """(estimate - expected) / SE for every key.

    A proportion is tested with its binomial SE at the expected value (the SE of the run's
    own estimate is 0 when a rare outcome did not occur); a structural zero must then be
    exactly zero. A mean uses the run's SE.
    """
    n = outcome.trials
    scores = {}
    for key, value in expected.items():
        estimate = getattr(outcome, key)
        if key in PROPORTIONS:
            se = math.sqrt(max(0.0, value * (1.0 - value)) / n)
        else:
            se = outcome.standard_errors[key]
        if se == 0.0:
            scores[key] = 0.0 if estimate == pytest.approx(value, abs=1e-12) else math.inf
        else:
            scores[key] = (estimate - value) / se
    return scores


# ---------------------------------------------------- reference values (docs/model.md section 5)
@pytest.mark.parametrize("case", sorted(REFERENCE))
def test_reference_values_within_five_standard_errors(case):
    outcome = simulate(scenario(case), trials=300_000, seed=20240611)
    scores = z_scores(outcome, reference(case))
    assert max(abs(z) for z in scores.values()) < 5, scores
    assert outcome.method == "montecarlo" and outcome.trials == 300_000 and not outcome.partial
    assert outcome.success + outcome.silent_failure + outcome.detected_failure == pytest.approx(1.0)


@pytest.mark.parametrize(
    "case, changes",
    [
        ("R1", {"p": 0.89}),  # the simple kernel
        ("R7", {"correlation__step_sd": 0.4}),  # the general kernel, random effects
    ],
)
def test_negative_control_a_slightly_wrong_scenario_is_caught(case, changes):
    outcome = simulate(scenario(case, **changes), trials=300_000, seed=20240611)
    scores = z_scores(outcome, reference(case))
    assert max(abs(z) for z in scores.values()) > 5, scores


def test_structural_zeros_and_certainties_are_exact():
    # miss = 0: no wrong result is ever accepted; no verifier: exactly one attempt per step.
    assert simulate(scenario("R1"), 50_000, seed=1).silent_failure == 0.0
    r8 = simulate(scenario("R8"), 50_000, seed=1)
    assert r8.detected_failure == 0.0
    assert r8.expected_attempts == 20.0 and r8.standard_errors["expected_attempts"] == 0.0
    # p of exactly 0 or 1 is left as it is by random effects (docs/model.md section 3: shift).
    sure = Scenario.from_dict(
        {"steps": 5, "p": 1.0, "correlation": {"task_sd": 3.0, "step_sd": 2.0}}
    )
    assert simulate(sure, 20_000, seed=2).success == 1.0
    hopeless = Scenario.from_dict(
        {"steps": 3, "p": [0.9, 0.0, 0.9], "correlation": {"task_sd": 3.0, "step_sd": 2.0}}
    )
    assert simulate(hopeless, 20_000, seed=2).silent_failure == 1.0


# ----------------------------------------------------------------- the slow reference simulator
SLOW_CASES = {
    "R4": scenario("R4"),
    "R5": scenario("R5"),
    "R7": scenario("R7"),
    "per-step costs and an explicit checkpoint": Scenario.from_dict(
        {
            "steps": 5,
            "p": [0.95, 0.6, 1.0, 0.8, 0.9],
            "verifier": {"miss": [0.1, 0.5, 0.0, 0.2, 1.0], "false_reject": 0.2},
            "retries": {"per_step": [1, 3, 0, 2, 1]},
            "checkpoints": {
                "at": [2],
                "final": True,
                "detect": 0.7,
                "false_alarm": 0.1,
                "rollbacks": 1,
            },
            "correlation": {"task_sd": 1.5},
            "cost": {
                "attempt": [0.5, 2.0, 1.0, 3.0, 0.25],
                "verify": 0.1,
                "checkpoint": 1.0,
                "rollback": 2.0,
            },
        }
    ),
}


def two_sample_z(fast, slow_trials) -> dict[str, float]:
    """z of fast - slow for every key, with the SEs of both runs combined."""
    n = len(slow_trials)
    outcomes = np.array([t.outcome for t in slow_trials])
    values = {
        "success": (outcomes == "success").astype(float),
        "silent_failure": (outcomes == "silent_failure").astype(float),
        "detected_failure": (outcomes == "detected_failure").astype(float),
        "expected_attempts": np.array([t.attempts for t in slow_trials], dtype=float),
        "expected_cost": np.array([t.cost for t in slow_trials]),
    }
    scores = {}
    for key, sample in values.items():
        se = math.hypot(fast.standard_errors[key], sample.std(ddof=1) / math.sqrt(n))
        difference = getattr(fast, key) - sample.mean()
        scores[key] = 0.0 if se == 0 and abs(difference) < 1e-12 else difference / se
    return scores


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_CASES))
def test_agrees_with_the_slow_simulator(name):
    s = SLOW_CASES[name]
    fast = simulate(s, 200_000, seed=5)
    slow = simulate_slowly(s, 6_000, seed=6)
    scores = two_sample_z(fast, slow)
    assert max(abs(z) for z in scores.values()) < 5, scores


@pytest.mark.slow
def test_negative_control_the_slow_comparison_catches_a_changed_detect():
    s = SLOW_CASES["R7"]
    fast = simulate(s, 200_000, seed=5)
    slow = simulate_slowly(scenario("R7", checkpoints__detect=0.6), 6_000, seed=6)
    scores = two_sample_z(fast, slow)
    assert max(abs(z) for z in scores.values()) > 5, scores


# Small scenarios with every feature, for property-style agreement checks.
@st.composite
def small_scenarios(draw):
    steps = draw(st.integers(1, 4))
    prob = st.sampled_from([0.0, 0.3, 0.6, 0.85, 0.95, 1.0])

    def per_step(values):  # one value, or a list of one per step
        return st.one_of(values, st.lists(values, min_size=steps, max_size=steps))

    data: dict = {"steps": steps, "p": draw(st.lists(prob, min_size=steps, max_size=steps))}
    if draw(st.booleans()):
        data["verifier"] = {"miss": draw(per_step(prob)),
                            "false_reject": draw(per_step(st.sampled_from([0.0, 0.1, 0.4])))}
        if draw(st.booleans()):
            data["retries"] = {"per_step": draw(per_step(st.integers(0, 2)))}
            if draw(st.booleans()):
                data["retries"]["total"] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        checkpoints = {
            "detect": draw(st.sampled_from([0.5, 0.9, 1.0])),
            "false_alarm": draw(st.sampled_from([0.0, 0.1])),
            "rollbacks": draw(st.integers(0, 2)),
        }
        where = draw(st.sampled_from(["every", "at", "final"]))
        if where == "every":
            checkpoints["every"] = draw(st.integers(1, steps))
        elif where == "at":
            checkpoints["at"] = sorted(draw(st.sets(st.integers(1, steps), min_size=1)))
        checkpoints["final"] = where == "final" or draw(st.booleans())
        data["checkpoints"] = checkpoints
    correlation: dict = {}
    if draw(st.booleans()):
        correlation["task_sd"] = draw(st.sampled_from([0.5, 1.5]))
    if draw(st.booleans()):
        correlation["step_sd"] = draw(st.sampled_from([0.5, 1.0]))
    if draw(st.booleans()):
        correlation["confusion"] = {
            "enter": draw(prob),
            "recover": draw(prob),
            "factor": draw(st.sampled_from([0.3, 0.8])),
        }
    if correlation:
        data["correlation"] = correlation
    cost = {
        "attempt": draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=steps, max_size=steps))
    }
    if "verifier" in data:
        cost["verify"] = 0.25
    if "checkpoints" in data:
        cost["checkpoint"] = 0.5
        if data["checkpoints"]["rollbacks"] > 0:  # a rollback cost needs rollbacks
            cost["rollback"] = 1.5
    data["cost"] = cost
    return Scenario.from_dict(data)


@pytest.mark.slow
@settings(
    derandomize=True,
    deadline=None,
    max_examples=12,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(small_scenarios())
def test_small_scenarios_agree_with_the_slow_simulator(s):
    fast = simulate(s, 100_000, seed=3)
    slow = simulate_slowly(s, 3_000, seed=4)
    scores = two_sample_z(fast, slow)
    assert max(abs(z) for z in scores.values()) < 5, (s, scores)


@pytest.mark.slow
@settings(
    derandomize=True,
    deadline=None,
    max_examples=25,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(small_scenarios())
def test_small_scenarios_agree_with_the_exact_engine(s):
    truth = relsim.evaluate(s)
    outcome = simulate(s, 200_000, seed=9)
    expected = {key: getattr(truth, key) for key in KEYS}
    if truth.success > 0:
        expected["cost_per_success"] = truth.cost_per_success
    scores = z_scores(outcome, expected)
    assert max(abs(z) for z in scores.values()) < 5, (s, scores)


# ---------------------------------------------------------------------- the two kernels agree
# The fast kernel draws one uniform per step execution and the general one one per attempt,
# so they draw different trials from a seed (they drew the same ones before issue 22): they
# agree in distribution.
@pytest.mark.parametrize("case", ["R1", "R2", "R3", "R8"])
def test_general_kernel_agrees_with_the_fast_one(case, monkeypatch):
    s = scenario(case)
    assert _inputs.kernel_input(trial_model(s)).exact  # these run on the fast kernel
    fast = simulate(s, 200_000, seed=12)
    monkeypatch.setattr(_driver, "_FORCE_GENERAL", True)
    general = simulate(s, 200_000, seed=13)
    scores = two_sample_z_of_runs(fast, general)
    assert max(abs(z) for z in scores.values()) < 5, scores
    # negative control: the general kernel on p 0.01 lower is told apart
    lower = simulate(scenario(case, p=REFERENCE[case][0]["p"] - 0.01), 200_000, seed=13)
    scores = two_sample_z_of_runs(fast, lower)
    assert max(abs(z) for z in scores.values()) > 5, scores


def two_sample_z_of_runs(one, other) -> dict[str, float]:
    """z of one - other for every key, with both runs' standard errors."""
    scores = {}
    for key in KEYS:
        se = math.hypot(one.standard_errors[key], other.standard_errors[key])
        difference = getattr(one, key) - getattr(other, key)
        scores[key] = 0.0 if se == 0 and difference == 0 else difference / se
    return scores


@pytest.mark.parametrize(
    "data",
    [
        REFERENCE["R1"][0],
        REFERENCE["R2"][0],
        REFERENCE["R3"][0],  # a task-wide budget: trials over it are replayed
        REFERENCE["R8"][0],
        {"steps": 6, "p": 0.2, "verifier": {"miss": 0.1, "false_reject": 0.3},
         "retries": {"per_step": 40}},  # executions past the vector pass and the chunk
    ],
)
def test_the_fast_kernels_vector_pass_is_its_replay(data):
    """A recorded trial is replayed execution by execution (the kernel's definition); with
    every trial recorded, the run must be the very same as the one counted by the vector
    pass."""
    counted = simulate(data, 70_000, seed=3)
    replayed = simulate(data, 70_000, seed=3, record=70_000)
    assert counted == replayed  # every field, floats bit for bit


def test_four_way_thresholds_are_the_cumulative_probabilities():
    rng = np.random.default_rng(0)
    edge = np.array([0.0, 1.0, 0.5, 1e-300, 1 - 1e-16])
    pe = np.concatenate([rng.random(500), np.repeat(edge, 25)])
    miss = np.concatenate([rng.random(500), np.tile(edge, 25)])
    false_reject = np.concatenate([rng.random(500), np.tile(np.roll(edge, 2), 25)])
    table = _draws.four_way_table(pe, miss, false_reject)
    full = 2**32
    assert np.all(table[:, 0] <= table[:, 1]) and np.all(table[:, 1] <= table[:, 2])
    assert np.all(table[:, 2] <= full)
    for (t1, t2, t3), p, m, f in zip(table.tolist(), pe, miss, false_reject):
        # each cumulative threshold is its probability times 2**32, to within one unit
        assert abs(t1 - p * (1 - f) * full) <= 1
        assert abs(t2 - (p * (1 - f) + (1 - p) * m) * full) <= 1
        assert abs(t3 - (1 - (1 - p) * (1 - m)) * full) <= 1


def test_structural_zeros_of_the_four_way_draw():
    full = 2**32

    def t(p, miss, false_reject):
        return _draws.four_way_table(np.array([p]), np.array([miss]), np.array([false_reject]))[0]

    # no verifier (miss 1, false_reject 0): never rejected
    t1, t2, t3 = t(0.3, 1.0, 0.0).tolist()
    assert abs(t1 - 0.3 * full) <= 1 and t2 == t3 == full
    # miss 0: no wrong acceptance (t1 == t2); false_reject 0: no correct rejection (t2 == t3)
    row = t(0.3, 0.0, 0.0)
    assert row[0] == row[1] == row[2]
    assert t(1.0, 0.5, 0.0).tolist() == [full] * 3
    # wrong attempts never rejected (miss 1) but correct ones are: t3 reaches the top exactly
    assert t(0.3, 1.0, 0.5)[2] == full


# ------------------------------------------------------------ the general kernel's group pass
# run_general draws a group's random effects and computes their shifted thresholds before
# its trials run: a first execution reads them from that pass, a re-execution after a
# rollback draws its own effect, a step past PRE_STEPS computes its own, a task effect alone
# is the pass's for every execution. Each of these paths is held to the exact engine.
GROUP_PASS = {
    # rollbacks re-execute steps (fresh step effects), confusion at a shifted p
    "rollbacks": {
        "steps": 4, "p": [0.7, 0.9, 0.6, 0.8], "verifier": {"miss": 0.4, "false_reject": 0.1},
        "retries": {"per_step": 1, "total": 3},
        "checkpoints": {"every": 2, "detect": 0.9, "false_alarm": 0.05, "rollbacks": 3},
        "correlation": {"task_sd": 0.5, "step_sd": 1.0,
                        "confusion": {"enter": 0.5, "recover": 0.3, "factor": 0.6}},
        "cost": {"attempt": [1, 2, 1, 3], "verify": 0.25, "checkpoint": 0.5, "rollback": 1.5},
    },
    # 70 steps: past the pass's 64, with re-executions on both sides of it
    "long": {
        "steps": 70, "p": 0.97, "verifier": {"miss": 0.3}, "retries": {"per_step": 2},
        "checkpoints": {"every": 10, "detect": 0.9, "rollbacks": 2},
        "correlation": {"task_sd": 0.5, "step_sd": 0.7},
    },
    # a task effect alone: every execution of a step at the trial's shift
    "long, task effect": {
        "steps": 70, "p": 0.97, "verifier": {"miss": 0.3}, "retries": {"per_step": 2},
        "checkpoints": {"every": 10, "detect": 0.9, "rollbacks": 2},
        "correlation": {"task_sd": 0.8},
    },
}


def group_pass_scores(data: dict, truth: dict, trials: int) -> dict[str, float]:
    exact = relsim.evaluate(Scenario.from_dict(truth))
    expected = {key: getattr(exact, key) for key in KEYS}
    expected["cost_per_success"] = exact.cost_per_success
    return z_scores(simulate(data, trials, seed=17), expected)


@pytest.mark.parametrize("name", sorted(GROUP_PASS))
def test_general_kernels_group_pass_agrees_with_the_exact_engine(name):
    data = GROUP_PASS[name]
    assert not _inputs.kernel_input(trial_model(Scenario.from_dict(data))).exact
    scores = group_pass_scores(data, data, 120_000 if name == "rollbacks" else 40_000)
    assert max(abs(z) for z in scores.values()) < 5, scores


@pytest.mark.parametrize(
    "name, wrong",
    [
        # the same checks tell a spread a fifth smaller apart
        ("rollbacks", {"correlation": {"task_sd": 0.5, "step_sd": 0.8, "confusion": {
            "enter": 0.5, "recover": 0.3, "factor": 0.6}}}),
        ("long", {"correlation": {"task_sd": 0.5, "step_sd": 0.55}}),
        ("long, task effect", {"correlation": {"task_sd": 0.65}}),
    ],
)
def test_negative_control_the_group_pass_check_catches_another_spread(name, wrong):
    data = GROUP_PASS[name]
    scores = group_pass_scores(data, {**data, **wrong}, 120_000 if name == "rollbacks" else 40_000)
    assert max(abs(z) for z in scores.values()) > 5, scores


# ---------------------------------------------------------------------------- reproducibility
@pytest.mark.slow
@pytest.mark.parametrize("case", ["R2", "R7"])
def test_same_seed_same_result_whatever_threads_and_chunks(case):
    s = scenario(case)
    trials = 3 * BLOCK_TRIALS + 1234
    runs = [
        simulate(s, trials, seed=99, threads=1),
        simulate(s, trials, seed=99, threads=2),
        simulate(s, trials, seed=99, threads=2, chunk_size=1),
        simulate(s, trials, seed=99, threads=1, chunk_size=3 * BLOCK_TRIALS),
        simulate(s, trials, seed=99, threads=3, chunk_size=2 * BLOCK_TRIALS - 5),
    ]
    for other in runs[1:]:
        assert other == runs[0]  # every field, floats bit for bit
    assert simulate(s, trials, seed=100, threads=2) != runs[0]
    # a seed is a stream: fewer trials are a prefix of the same trials
    shorter = simulate(s, BLOCK_TRIALS, seed=99, record=20)
    longer = simulate(s, trials, seed=99, record=20)
    assert shorter.trajectories.equals(longer.trajectories)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["R2", "R6", "R7"])
def test_same_seed_same_result_whatever_the_slices_of_work(case, monkeypatch):
    """A kernel call runs a bounded slice of attempts and a block cut by it resumes its own
    stream (generator state, sums) in the next call: the trials are the same."""
    s = scenario(case)
    trials = BLOCK_TRIALS + 999
    whole = simulate(s, trials, seed=5, threads=1, record=300)
    small = simulate(s, 3000, seed=6, threads=1)
    monkeypatch.setattr(_driver, "SIMPLE_SLICE", 97)  # a few trials per call
    monkeypatch.setattr(_driver, "GENERAL_SLICE", 61)
    sliced = simulate(s, trials, seed=5, threads=2, record=300)
    assert sliced == whole
    assert sliced.trajectories.equals(whole.trajectories)
    monkeypatch.setattr(_driver, "SIMPLE_SLICE", 1)  # one trial per call
    monkeypatch.setattr(_driver, "GENERAL_SLICE", 1)
    assert simulate(s, 3000, seed=6, threads=1) == small


@pytest.mark.parametrize("exact", [True, False])
def test_a_kernel_told_to_stop_returns_after_one_slice_with_the_trials_it_did(exact, monkeypatch):
    from relsim.montecarlo._layout import Record
    from relsim._running import InterruptFlag

    monkeypatch.setattr(_driver, "SIMPLE_SLICE", 1000)
    monkeypatch.setattr(_driver, "GENERAL_SLICE", 1000)
    s = scenario("R1" if exact else "R7")
    kernel = _driver._Kernel(_inputs.kernel_input(trial_model(s)), attempts_per_trial=25.0)
    assert kernel.prepared.exact is exact
    stop = InterruptFlag()
    stop.set()
    record = Record.empty(2 * BLOCK_TRIALS)
    result = kernel.run(np.random.SeedSequence(1), range(2), 2 * BLOCK_TRIALS, record, stop)
    tally = kernel.tally().add(result)
    # a slice of 1000 attempts at 25 attempts a trial: 40 trials, then the stop is seen (the
    # kernels run whole groups of trials side by side: 64 in the fast one, 2 x 32 here)
    assert tally.trials == 64
    assert (record.outcome[: tally.trials] >= 0).all()
    assert (record.outcome[tally.trials :] < 0).all()


def test_seed_none_is_reported_and_reproduces():
    s = scenario("R3")
    first = simulate(s, 20_000)
    assert isinstance(first.seed, int) and first.seed >= 0
    assert simulate(s, 20_000, seed=first.seed) == first
    again = simulate(s, 20_000, seed=np.random.SeedSequence(first.seed))
    assert again == first


def test_blocks_are_the_children_of_seed_sequence_spawn():
    parent = np.random.SeedSequence(42)
    children = parent.spawn(3)
    for block, child in enumerate(children):
        np.testing.assert_array_equal(
            _checks.block_state(np.random.SeedSequence(42), block),
            child.generate_state(STATE_WORDS, np.uint64),
        )


# ------------------------------------------------------------------ trajectories and percentiles
def test_record_rows_are_the_counted_trials():
    s = scenario("R7")
    outcome = simulate(s, 5_000, seed=8, record=5_000)
    frame = outcome.trajectories
    assert list(frame.columns) == [
        "outcome",
        "attempts",
        "cost",
        "retries_used",
        "rollbacks",
        "first_wrong_step",
        "caught_at",
        "stopped_at",
    ]
    assert len(frame) == 5_000 and frame.index.name == "trial"
    shares = frame["outcome"].value_counts(normalize=True)
    for key in ("success", "silent_failure", "detected_failure"):
        assert shares[key] == pytest.approx(getattr(outcome, key), abs=1e-12)
    assert frame["attempts"].mean() == pytest.approx(outcome.expected_attempts, rel=1e-12)
    assert frame["cost"].mean() == pytest.approx(outcome.expected_cost, rel=1e-9)
    # the semantics of the columns
    detected = frame["outcome"] == "detected_failure"
    assert frame.loc[detected, "stopped_at"].notna().all()
    assert frame.loc[~detected, "stopped_at"].isna().all()
    assert (frame["rollbacks"] <= 2).all() and (frame["retries_used"] <= 5).all()
    silent = frame["outcome"] == "silent_failure"
    assert frame.loc[silent, "first_wrong_step"].notna().all()  # something wrong got through
    caught = frame["caught_at"].notna()
    assert frame.loc[caught, "caught_at"].isin([3, 6, 9]).all()
    assert ((frame.loc[caught, "rollbacks"] > 0) | detected[caught]).all()
    assert (frame.loc[caught, "caught_at"] >= frame.loc[caught, "first_wrong_step"]).all()
    # percentiles: the inverted-CDF percentiles of these very trials
    for q in (50, 90, 99):
        attempts = np.percentile(frame["attempts"], q, method="inverted_cdf")
        assert outcome.percentiles["attempts"][f"p{q}"] == attempts
        cost = np.percentile(frame["cost"], q, method="inverted_cdf")
        assert outcome.percentiles["cost"][f"p{q}"] == pytest.approx(cost, rel=2**-10)


def test_record_on_the_simple_kernel_and_record_larger_than_trials():
    outcome = simulate(scenario("R2"), 300, seed=8, record=1_000)
    frame = outcome.trajectories
    assert len(frame) == 300
    assert (frame["cost"] == frame["attempts"] * 1.0).all()
    assert frame["caught_at"].isna().all() and (frame["rollbacks"] == 0).all()
    silent = frame["outcome"] == "silent_failure"
    assert frame.loc[silent, "first_wrong_step"].notna().all()
    assert frame.loc[frame["outcome"] == "success", "first_wrong_step"].isna().all()
    assert simulate(scenario("R2"), 300, seed=8).trajectories is None


def test_cost_percentiles_over_a_wide_range_of_costs():
    s = Scenario.from_dict(
        {
            "steps": 6,
            "p": 0.7,
            "verifier": {"miss": 0.2},
            "retries": {"per_step": 4},
            "checkpoints": {"every": 2, "detect": 0.9, "rollbacks": 3},
            "cost": {
                "attempt": [0.013, 1.7, 250.0, 3e-3, 12.5, 0.5],
                "checkpoint": 0.01,
                "rollback": 7.0,
            },
        }
    )
    outcome = simulate(s, 4_000, seed=13, record=4_000)
    for q in (50, 90, 99):
        cost = np.percentile(outcome.trajectories["cost"], q, method="inverted_cdf")
        assert outcome.percentiles["cost"][f"p{q}"] == pytest.approx(cost, rel=2**-10)


def test_intervals_and_standard_errors():
    outcome = simulate(scenario("R2"), 100_000, seed=21)
    n = outcome.trials
    for key in ("success", "silent_failure", "detected_failure"):
        p = getattr(outcome, key)
        assert outcome.standard_errors[key] == pytest.approx(math.sqrt(p * (1 - p) / n))
        low, high = outcome.intervals[key]
        assert 0 <= low < p < high <= 1
    for key in ("expected_attempts", "expected_cost", "cost_per_success"):
        low, high = outcome.intervals[key]
        assert (low + high) / 2 == pytest.approx(getattr(outcome, key))
        assert (high - low) / 2 == pytest.approx(1.959963984540054 * outcome.standard_errors[key])
    data = outcome.to_dict()
    for key in KEYS + ("cost_per_success",):
        assert f"{key}_se" in data and f"{key}_ci" in data
    # no success at all: infinite cost per success, null in JSON
    hopeless = simulate(Scenario.from_dict({"steps": 2, "p": 0.0}), 1_000, seed=1)
    assert (
        hopeless.cost_per_success == math.inf and hopeless.to_dict()["cost_per_success_se"] is None
    )
    assert hopeless.intervals["success"][0] == 0.0


def test_ratio_standard_error_matches_the_spread_over_seeds():
    # the delta-method SE of cost_per_success against the spread of 30 independent estimates
    # (100 estimates: the sample SD is within 7% (1 SE) of the truth, so 5 SE is 36%)
    s = scenario("R3")
    estimates = [simulate(s, 2_000, seed=seed).cost_per_success for seed in range(100)]
    outcome = simulate(s, 2_000, seed=999)
    se = outcome.standard_errors["cost_per_success"]
    assert np.std(estimates, ddof=1) == pytest.approx(se, rel=0.36)
    # negative control: the SE of the mean cost over the success rate, which ignores the
    # covariance of cost and success, is caught by the same check
    naive = outcome.standard_errors["expected_cost"] / outcome.success
    assert np.std(estimates, ddof=1) != pytest.approx(naive, rel=0.36)


# -------------------------------------------------------------------------------- interruption
def test_interrupt_returns_the_finished_blocks_as_partial():
    calls = []

    def progress(done):
        calls.append(done)
        if len(calls) == 2:
            raise KeyboardInterrupt

    before = signal.getsignal(signal.SIGINT)
    with pytest.warns(RuntimeWarning, match="interrupted"):
        outcome = simulate(
            scenario("R1"),
            20 * BLOCK_TRIALS,
            seed=4,
            threads=1,
            chunk_size=BLOCK_TRIALS,
            progress=progress,
        )
    assert signal.getsignal(signal.SIGINT) is before
    assert outcome.partial and outcome.to_dict()["partial"] is True
    assert 2 * BLOCK_TRIALS <= outcome.trials < 20 * BLOCK_TRIALS
    assert outcome.trials % BLOCK_TRIALS == 0
    # the partial estimate is a proper estimate over the trials done
    assert abs(z_scores(outcome, reference("R1"))["success"]) < 5


def test_ctrl_c_stops_after_the_tasks_in_flight_and_a_second_one_aborts():
    def once(done):
        signal.raise_signal(signal.SIGINT)

    with pytest.warns(RuntimeWarning):
        outcome = simulate(
            scenario("R7"),
            30 * BLOCK_TRIALS,
            seed=4,
            threads=2,
            chunk_size=BLOCK_TRIALS,
            progress=once,
        )
    assert outcome.partial and outcome.trials < 30 * BLOCK_TRIALS

    def twice(done):
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        simulate(
            scenario("R7"),
            30 * BLOCK_TRIALS,
            seed=4,
            threads=2,
            chunk_size=BLOCK_TRIALS,
            progress=twice,
        )


def test_progress_counts_every_trial():
    seen = []
    simulate(
        scenario("R4"), 5 * BLOCK_TRIALS + 7, seed=1, chunk_size=BLOCK_TRIALS, progress=seen.append
    )
    assert sum(seen) == 5 * BLOCK_TRIALS + 7 and len(seen) == 6


# ---------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"trials": 0}, "trials"),
        ({"trials": -5}, "trials"),
        ({"trials": 10.0}, "trials"),
        ({"trials": True}, "trials"),
        ({"threads": 0}, "threads"),
        ({"record": -1}, "record"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"seed": -1}, "seed"),
        ({"seed": "abc"}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"progress": 3}, "progress"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, name):
    arguments = {"trials": 100, **kwargs}
    with pytest.raises(RelsimError, match=rf"^{name}: must be .*, got "):
        simulate(scenario("R1"), **arguments)


def test_bad_scenarios():
    with pytest.raises(ValueError, match="scenario: must be"):
        simulate("R1.toml", 100)
    with pytest.raises(ValueError, match="steps"):
        simulate({"steps": 0, "p": 0.5}, 100)
    assert simulate({"steps": 2, "p": 1.0}, 100, seed=1).success == 1.0  # a mapping is fine


def test_public_api():
    assert relsim.simulate is simulate
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a normal run warns about nothing
        simulate(scenario("R1"), 1_000, seed=1)


# ------------------------------------------------------------------------------ result types
def test_simulate_returns_a_simulated_outcome_and_evaluate_a_plain_one():
    s = scenario("R4")
    simulated = simulate(s, 5_000, seed=3)
    exact = relsim.evaluate(s)
    assert type(simulated) is relsim.SimulatedOutcome and isinstance(simulated, relsim.Outcome)
    assert type(exact) is relsim.Outcome and not isinstance(exact, relsim.SimulatedOutcome)
    assert not hasattr(exact, "standard_errors") and not hasattr(exact, "trials")
    # the method key comes from the type
    assert (simulated.method, exact.method) == ("montecarlo", "exact")
    assert simulated.to_dict()["method"] == "montecarlo" and exact.to_dict()["method"] == "exact"
    assert list(exact.to_dict()) == [*relsim.results.OUTCOME_KEYS, "method"]
    keys = list(simulated.to_dict())
    assert keys[:3] == ["success", "success_se", "success_ci"]
    assert keys[-5:] == ["method", "percentiles", "trials", "seed", "partial"]
    assert len(simulated.to_frame()) == len(exact.to_frame()) == 1
    assert simulated.to_frame()["percentiles_cost_p99"].iloc[0] == simulated.percentiles["cost"]["p99"]


# ------------------------------------------------------------------------------ numba's cache
_CACHE_RUN = (
    "import json, relsim\n"
    "out = relsim.simulate({'steps': 6, 'p': 0.8, 'verifier': {'miss': 0.1},"
    " 'retries': {'per_step': 1}}, 20000, seed=4)\n"
    "print(json.dumps(out.to_dict()))\n"
)


@pytest.mark.slow
def test_kernels_are_kept_in_numba_cache_and_loaded_from_it(tmp_path):
    # numba's documented NUMBA_CACHE_DIR: the first process writes the compiled kernel there,
    # the second finds it (an index and data file per kernel) and draws the same trials
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [
        subprocess.run([sys.executable, "-c", _CACHE_RUN], env=env, capture_output=True,
                       text=True, check=True).stdout
        for _ in range(2)
    ]
    names = sorted(path.name for path in tmp_path.rglob("*") if path.is_file())
    assert any(name.startswith("_kernels.run_simple") and name.endswith(".nbi") for name in names)
    assert any(name.startswith("_kernels.run_simple") and name.endswith(".nbc") for name in names)
    assert runs[0] == runs[1] and json.loads(runs[0])["trials"] == 20_000
