"""The timeline's compiled path (independent trials, relsim.timeline._fast) against its simpy path.

The two paths draw from different streams, so they are held together in distribution: on
each scenario below, every outcome share and every time quantity (attempts, cost, cost per
success, the duration's mean and percentiles) of a compiled run is within 5 standard errors
of the simpy run's, the standard errors computed from the two runs. A negative control (a
scenario whose attempts take 15% longer) must fail the same check. The scenarios cover what
the kernel runs of docs/model.md section 7: constant, lognormal and exponential durations
(per step), backoff with and without jitter, a deadline (with constant durations that meet it
on the dot), crashes, checkpoints with rollbacks, task and step effects and confusion. A
human gate holds a reviewer, a shared pool, so it never runs on the compiled path.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from relsim import simulate_timeline
from relsim.scenario.time_tables import Backoff, backoff_wait
from relsim.timeline import _driver
from relsim.timeline._fast import BLOCK_TRIALS, LANES_BLOCK_TRIALS

SIGMAS = 5.0
SIMPY_TRIALS = 3000
KERNEL_TRIALS = 100_000

#: Every share and time quantity of independent trials.
QUANTITIES = (
    "success", "silent_failure", "detected_failure", "timeout", "infra_failure",
    "expected_attempts", "expected_cost", "cost_per_success",
    "duration_mean", "duration_p50", "duration_p90", "duration_p99",
)
SHARES = QUANTITIES[:5]

#: Lognormal, exponential and constant attempts by step, a lognormal verification (with the
#: first step's sigma: one batch of factors serves both), a lognormal checkpoint, backoff
#: with jitter, a task-wide retry budget, a deadline that cuts a fifth of the trials and
#: crashes.
RANDOM_TIMES = {
    "steps": 6,
    "p": [0.9, 0.8, 0.85, 0.9, 0.75, 0.9],
    "verifier": {"miss": 0.15, "false_reject": 0.05},
    "retries": {"per_step": 2, "total": 5},
    "checkpoints": {"every": 3, "detect": 0.7, "rollbacks": 1},
    "cost": {"attempt": [1.0, 2.0, 1.0, 3.0, 1.0, 1.0], "verify": 0.5, "checkpoint": 0.2},
    "timing": {
        "attempt": [{"median": 8, "p95": 30}, {"mean": 6}, 5, {"median": 4, "p95": 12},
                    {"mean": 10}, {"median": 8, "p95": 8}],
        "verify": {"median": 2, "p95": 7.5},
        "checkpoint": {"median": 5, "p95": 20},
        "backoff": {"base": 1, "factor": 2, "max": 10, "jitter": True},
        "deadline": 100,
    },
    "infra": {"crash_per_hour": 6},
}

#: Constant durations whose sums meet the deadline exactly (12 s an attempt with its
#: verification, 3 s a backoff, 5 s a check), checkpoints with rollbacks, task and step
#: effects and confusion.
TIES_AND_CHECKPOINTS = {
    "steps": 8,
    "p": 0.9,
    "verifier": {"miss": 0.2, "false_reject": 0.05},
    "retries": {"per_step": 1},
    "checkpoints": {"every": 4, "detect": 0.6, "false_alarm": 0.05, "rollbacks": 1},
    "cost": {"attempt": 1.0, "checkpoint": 2.0, "rollback": 5.0},
    "correlation": {"task_sd": 0.6, "step_sd": 0.4,
                    "confusion": {"enter": 0.3, "recover": 0.5, "factor": 0.6}},
    "timing": {"attempt": 10, "verify": 2, "checkpoint": 5,
               "backoff": {"base": 3, "factor": 1}, "deadline": 132},
}

#: No time tables: every duration 0, section 3's split; a final checkpoint.
NO_TIME = {
    "steps": 5,
    "p": 0.8,
    "verifier": {"miss": 0.3},
    "retries": {"per_step": 1, "total": 3},
    "checkpoints": {"final": True, "detect": 0.7, "rollbacks": 2},
}

#: Exponential attempts with no verifier, crashes and no deadline: the crash clock alone.
CRASHES = {
    "steps": 3,
    "p": 0.7,
    "timing": {"attempt": {"mean": 300}},
    "infra": {"crash_per_hour": 3},
}

#: The vectorised lane (relsim.timeline._lanes: no checkpoints, effects or confusion, one
#: attempt duration): lognormal attempts and verifications (two sigmas), a task-wide budget
#: that cuts executions short, wrong acceptances, a deadline that cuts about a third of the
#: trials and crashes that end a fifth: the replay runs often.
LANES_LOGNORMAL = {
    "steps": 6,
    "p": [0.9, 0.8, 0.85, 0.9, 0.75, 0.9],
    "verifier": {"miss": 0.15, "false_reject": 0.05},
    "retries": {"per_step": 2, "total": 4},
    "timing": {"attempt": {"median": 8, "p95": 30}, "verify": {"median": 2, "p95": 4},
               "deadline": 110},
    "infra": {"crash_per_hour": 8},
}

#: Constant durations whose sums meet the deadline on the dot (6 attempts of 12 s in 72 s:
#: a success; a 7th is booked and times out), crashes, wrong acceptances.
LANES_CONSTANT = {
    "steps": 5,
    "p": 0.8,
    "verifier": {"miss": 0.2},
    "retries": {"per_step": 1},
    "timing": {"attempt": 10, "verify": 2, "deadline": 72},
    "infra": {"crash_per_hour": 4},
}

#: Executions longer than the vector pass counts (8 attempts) and than a table's row (32):
#: replayed, with fresh uniforms and factors; no verification time, no deadline.
LANES_LONG = {
    "steps": 3,
    "p": 0.2,
    "verifier": {"miss": 0.0},
    "retries": {"per_step": 40},
    "timing": {"attempt": {"median": 1, "p95": 3}},
    "infra": {"crash_per_hour": 100},
}

LANE_SCENARIOS = {"lanes lognormal": LANES_LOGNORMAL, "lanes constant": LANES_CONSTANT,
                  "lanes long": LANES_LONG}

SCENARIOS = {"random times": RANDOM_TIMES, "ties and checkpoints": TIES_AND_CHECKPOINTS,
             "no time": NO_TIME, "crashes": CRASHES, **LANE_SCENARIOS}


def _run(scenario, trials, seed, simpy, monkeypatch, **kwargs):
    monkeypatch.setattr(_driver, "_PATH", "simpy" if simpy else "compiled")
    return simulate_timeline(scenario, trials=trials, seed=seed, **kwargs)


def _disagreements(kernel, simpy) -> list[str]:
    """The quantities on which two runs differ by more than 5 combined standard errors
    (a share's standard error floored at 1/N: a share of 0 in a run has an SE of 0)."""
    out = []
    for key in QUANTITIES:
        a, b = kernel.quantity(key)[0], simpy.quantity(key)[0]
        se_a, se_b = kernel.standard_errors[key], simpy.standard_errors[key]
        if key in SHARES:
            se_a, se_b = max(se_a, 1 / kernel.trials), max(se_b, 1 / simpy.trials)
        if math.isinf(a) or math.isinf(b):  # cost per success with no success
            if a != b:
                out.append(f"{key}: {a} vs {b}")
            continue
        if abs(a - b) > SIGMAS * math.hypot(se_a, se_b):
            out.append(f"{key}: {a:.6g} vs {b:.6g} (se {se_a:.3g}, {se_b:.3g})")
    return out


@pytest.fixture(scope="module")
def simpy_runs():
    """Each scenario's simpy run (shared by the agreement test and the negative control)."""
    with pytest.MonkeyPatch.context() as patch:
        return {name: _run(scenario, SIMPY_TRIALS, 11, True, patch)
                for name, scenario in SCENARIOS.items()}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_compiled_path_draws_the_simpy_paths_distribution(name, simpy_runs, monkeypatch):
    kernel = _run(SCENARIOS[name], KERNEL_TRIALS, 12, False, monkeypatch)
    simpy = simpy_runs[name]
    assert kernel.simpy_events == 0 and simpy.simpy_events > 0  # each ran where it should
    assert _disagreements(kernel, simpy) == []


def test_the_scenarios_exercise_what_they_cover(simpy_runs):
    # every outcome a scenario is there for happens (else agreement would prove little)
    times, ties = simpy_runs["random times"], simpy_runs["ties and checkpoints"]
    assert times.timeout > 0.05 and times.infra_failure > 0.01 and times.detected_failure > 0.01
    assert ties.timeout > 0.05 and ties.silent_failure > 0.01 and ties.detected_failure > 0.01
    assert simpy_runs["no time"].duration["p99"] == 0.0
    assert simpy_runs["crashes"].infra_failure > 0.1
    lognormal, constant = simpy_runs["lanes lognormal"], simpy_runs["lanes constant"]
    assert lognormal.timeout > 0.2 and lognormal.infra_failure > 0.1
    assert lognormal.silent_failure > 0.01 and lognormal.detected_failure > 0.02
    assert constant.timeout > 0.1 and constant.infra_failure > 0.02
    assert constant.silent_failure > 0.05 and constant.duration["p99"] == 72.0
    assert simpy_runs["lanes long"].infra_failure > 0.01


def _kernel_of(scenario) -> str:
    from relsim.scenario import as_scenario, time_model, trial_model
    from relsim.timeline._fast import block_runner, vectorised

    scenario = as_scenario(scenario)
    trial, time = trial_model(scenario), time_model(scenario)
    name = block_runner(trial, time)[0].__name__
    assert vectorised(trial, time) == (name == "lanes")  # what the work estimate reads
    return name


def test_run_simples_chains_take_the_vectorised_lane():
    # relsim.timeline._fast.vectorised: Monte Carlo's fast kernel's chains with one attempt
    # duration (constant or lognormal), a constant or lognormal verification, no backoff
    for scenario in LANE_SCENARIOS.values():
        assert _kernel_of(scenario) == "lanes"
    no_checkpoints = {k: v for k, v in NO_TIME.items() if k != "checkpoints"}
    assert _kernel_of(no_checkpoints) == "lanes"  # no time tables at all
    timing = LANES_LOGNORMAL["timing"]
    for other in (RANDOM_TIMES, TIES_AND_CHECKPOINTS, NO_TIME, CRASHES,  # checkpoints, ...
                  {**LANES_LOGNORMAL, "timing": {**timing, "attempt": [5, 6, 5, 5, 5, 5]}},
                  {**LANES_LOGNORMAL, "timing": {**timing, "verify": {"mean": 2}}},
                  {**LANES_LOGNORMAL, "timing": {**timing, "backoff": {"base": 1}}},
                  {**LANES_LOGNORMAL, "cost": {"attempt": [1.0, 2.0, 1.0, 1.0, 1.0, 1.0]}}):
        assert _kernel_of(other) == "one_by_one"


@pytest.mark.parametrize("name", list(LANE_SCENARIOS))
def test_the_vectorised_lane_keeps_the_trials_its_replay_gives(name):
    # the vector pass keeps the trials that neither the deadline nor the crash clock can
    # reach and that section 3 resolves; replaying every trial one action at a time from
    # the same draws must give the very same trials, bit for bit, and leave the generator
    # in the same state (relsim.montecarlo's replay test, with time)
    from relsim.montecarlo._checks import block_state
    from relsim.montecarlo._inputs import kernel_input
    from relsim.scenario import as_scenario, time_model, trial_model
    from relsim.timeline._fast import timing
    from relsim.timeline._lanes import run_lanes

    scenario = as_scenario(LANE_SCENARIOS[name])
    trial, time = trial_model(scenario), time_model(scenario)
    design, times = kernel_input(trial).design, timing(trial, time)
    runs = []
    for replay_all in (False, True):
        state = block_state(np.random.SeedSequence(5), 0)
        columns = (np.empty(20_000, dtype=np.int8), np.empty(20_000, dtype=np.int64),
                   np.empty(20_000), np.empty(20_000))
        run_lanes(state, design, times, *columns, replay_all)
        runs.append((state, *columns))
    for kept, replayed in zip(*runs):
        assert np.array_equal(kept, replayed)
    # the outcomes the scenario is there for (codes: success, silent, detected, timeout, crash)
    there_for = {"lanes long": [0, 2, 4]}.get(name, [0, 1, 2, 3, 4])
    assert np.unique(runs[0][1]).tolist() == there_for


def test_a_perturbed_scenario_is_rejected(simpy_runs, monkeypatch):
    # negative control: attempts 15% longer must fail the same check
    slower = {**RANDOM_TIMES, "timing": {**RANDOM_TIMES["timing"], "attempt": [
        {"median": 9.2, "p95": 34.5}, {"mean": 6.9}, 5.75, {"median": 4.6, "p95": 13.8},
        {"mean": 11.5}, {"median": 9.2, "p95": 9.2}]}}
    kernel = _run(slower, KERNEL_TRIALS, 12, False, monkeypatch)
    assert _disagreements(kernel, simpy_runs["random times"]) != []
    # and on the vectorised lane
    slower = {**LANES_LOGNORMAL, "timing": {**LANES_LOGNORMAL["timing"],
                                            "attempt": {"median": 9.2, "p95": 34.5}}}
    kernel = _run(slower, KERNEL_TRIALS, 12, False, monkeypatch)
    assert _kernel_of(slower) == "lanes"
    assert _disagreements(kernel, simpy_runs["lanes lognormal"]) != []


def test_a_constant_chain_lasts_its_attempts_times_their_length(monkeypatch):
    # docs/model.md section 7's limit: constant durations, no backoff, no checkpoints,
    # nothing shared: every trial lasts attempts x (attempt + verify), to the float
    scenario = {"steps": 10, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1},
                "timing": {"attempt": 8, "verify": 2}}
    out = _run(scenario, 50_000, 3, False, monkeypatch)
    assert out.simpy_events == 0
    assert out.duration["mean"] == pytest.approx(10 * out.expected_attempts, rel=1e-12)
    assert out.timeout == out.infra_failure == 0.0


@pytest.mark.parametrize("steps, outcome, attempts", [(3, "success", 3), (4, "timeout", 4)])
def test_a_deadline_met_on_the_dot(steps, outcome, attempts, monkeypatch):
    # docs/model.md section 7: a trial times out when now - t0 > deadline, so one that ends
    # at 30 s of a 30 s deadline succeeds; one that would start a fourth attempt at 30 s
    # times out there, that attempt booked (an attempt is booked as it starts): both paths
    scenario = {"steps": steps, "p": 1.0, "timing": {"attempt": 10, "deadline": 30}}
    for simpy in (False, True):
        out = _run(scenario, 20, 1, simpy, monkeypatch)
        assert getattr(out, outcome) == 1.0
        assert out.expected_attempts == attempts and out.duration["p99"] == 30.0


@pytest.mark.parametrize("scenario, block", [(RANDOM_TIMES, BLOCK_TRIALS),
                                             (LANES_LOGNORMAL, LANES_BLOCK_TRIALS)],
                         ids=["one by one", "lanes"])
def test_the_same_seed_gives_the_same_answer_for_any_thread_count(scenario, block, monkeypatch):
    trials = 3 * block + 5  # four blocks, the last partial
    one = _run(scenario, trials, 7, False, monkeypatch, threads=1)
    two = _run(scenario, trials, 7, False, monkeypatch, threads=2)
    again = _run(scenario, trials, 7, False, monkeypatch, threads=3)
    assert one.to_dict() == two.to_dict() == again.to_dict()
    other = _run(scenario, trials, 8, False, monkeypatch, threads=2)
    assert other.to_dict() != one.to_dict()


@pytest.mark.parametrize("scenario", [
    {**RANDOM_TIMES, "fleet": {"agents": 4, "tasks": 40}},  # an agent pool
    {**RANDOM_TIMES, "resources": {"llm_concurrency": 2}, "fleet": {"tasks": 40}},
    {**RANDOM_TIMES, "resources": {"rpm": 60}, "fleet": {"tasks": 40}},  # a rate limit
    {**NO_TIME, "checkpoints": {"final": True, "human": True}, "fleet": {"tasks": 40},
     "resources": {"reviewers": 1, "review": 30}},  # a human gate
    {**RANDOM_TIMES, "fleet": {"arrivals": "poisson", "rate_per_hour": 600, "tasks": 40}},
], ids=["agents", "llm slots", "rpm", "reviewers", "poisson"])
def test_shared_resources_and_workloads_stay_on_simpy(scenario, monkeypatch):
    out = _run(scenario, None, 1, False, monkeypatch, replications=2)
    assert out.simpy_events > 0


def test_small_runs_stay_on_simpy_and_large_ones_are_compiled():
    # the rule (relsim.timeline._estimate.compiled): simpy when it would take under 2 s by
    # the run's estimate, numba's start costing more than it saves
    from relsim.timeline._estimate import COMPILED_FROM_SECONDS, compiled, work_estimate

    assert not compiled(RANDOM_TIMES, 100) and compiled(RANDOM_TIMES, 100_000)
    assert simulate_timeline(RANDOM_TIMES, trials=100, seed=1).simpy_events > 0
    assert simulate_timeline(RANDOM_TIMES, trials=100_000, seed=1).simpy_events == 0
    assert not compiled({**RANDOM_TIMES, "fleet": {"agents": 2}}, 10**6)
    for trials in (100, 1000, 10_000, 100_000):  # the estimates are the path's
        detail = work_estimate(RANDOM_TIMES, trials).detail
        assert detail.endswith("compiled") == compiled(RANDOM_TIMES, trials)
    assert COMPILED_FROM_SECONDS == 2.0


def test_an_event_log_or_section_8_keeps_independent_trials_on_simpy(monkeypatch):
    recorded = _run(RANDOM_TIMES, 50, 1, False, monkeypatch, record=2)
    assert recorded.simpy_events > 0 and len(recorded.events) > 0
    sampled = _run({**RANDOM_TIMES, "sampling": {"n": 2}}, 50, 1, False, monkeypatch)
    assert sampled.simpy_events > 0


@pytest.mark.parametrize("backoff", [
    Backoff(base=1, factor=2, max=60), Backoff(base=0.3, factor=1.7), Backoff(base=3, factor=1),
    Backoff(base=2, factor=1e300, max=60), Backoff(base=5, factor=3, max=4),
    Backoff(base=1e-3, factor=10),
])
def test_the_kernels_backoff_is_the_scenarios_to_the_bit(backoff):
    from relsim.timeline._kernel import backoff_wait as compiled

    cap = math.inf if backoff.max is None else backoff.max
    for retry in (1, 2, 3, 5, 8, 13, 40, 400, 2000):
        assert compiled(backoff.base, backoff.factor, cap, retry) == backoff_wait(backoff, retry)


def test_threads_is_checked():
    from relsim.errors import RelsimError

    with pytest.raises(RelsimError, match="threads: must be"):
        simulate_timeline(NO_TIME, trials=10, threads=0)


def test_the_kernels_exponential_is_maths_to_a_few_ulps():
    # the lognormal factors' exp (relsim.timeline._kernel.exp_many) against math.exp
    from relsim.timeline._kernel import exp_many

    x = np.concatenate([np.random.default_rng(5).normal(0.0, 3.0, 20_000),
                        np.linspace(-700.0, 700.0, 20_001), [0.0, 1.0, -1.0, math.log(2.0)]])
    out, scratch = np.empty_like(x), np.empty_like(x)
    exp_many(x, out, scratch)
    assert np.max(np.abs(out / np.exp(x) - 1.0)) < 1e-15
    assert out[-4] == 1.0  # exp(0)
    # a wrong constant is seen (negative control of the check)
    assert np.max(np.abs(out * (1 + 4e-15) / np.exp(x) - 1.0)) > 1e-15


def test_a_stop_gives_the_finished_blocks_marked_partial(monkeypatch):
    # KeyboardInterrupt from progress (as Ctrl-C): the blocks in flight end, no other starts
    calls = []

    def progress(done: int) -> None:
        calls.append(done)
        raise KeyboardInterrupt

    with pytest.warns(RuntimeWarning, match="interrupted"):
        out = _run(NO_TIME, 10 * BLOCK_TRIALS, 1, False, monkeypatch, threads=1, progress=progress)
    assert out.partial and 0 < out.trials < 10 * BLOCK_TRIALS and calls == [BLOCK_TRIALS]
    assert out.success + out.silent_failure + out.detected_failure == pytest.approx(1.0)


def _numpy_tally_figures(outcome, attempts, cost, duration):
    """What the tally computed before the compiled path had its summary: numpy's."""
    from relsim.intervals import quantile_interval

    ordered = np.sort(duration)
    percents = (0.5, 0.9, 0.99)
    return {
        "counts": np.bincount(outcome, minlength=5).tolist(),
        "moments": [(float(x.mean()), float(x.var())) for x in (attempts, cost, duration)],
        "cov": float(np.mean((cost - cost.mean()) * ((outcome == 0) - (outcome == 0).mean()))),
        "quantiles": [float(v) for v in np.quantile(duration, percents, method="inverted_cdf")],
        "intervals": [quantile_interval(ordered, q, presorted=True) for q in percents],
    }


@pytest.mark.parametrize("n, kind", [(1, "lognormal"), (7, "lognormal"), (1000, "ties"),
                                     (300_001, "lognormal"), (300_001, "ties"),
                                     (300_001, "few values")])
def test_the_compiled_summary_is_numpys(n, kind):
    # relsim.timeline._summary.Summary (numba passes, order statistics picked from brackets)
    # against numpy's moments, np.quantile and a sort, through the tally's own code
    from relsim.scenario import as_scenario, time_model, trial_model
    from relsim.timeline._driver import _Tally, build_model
    from relsim.timeline._summary import Summary

    rng = np.random.default_rng(n)
    outcome = rng.choice(np.array([0, 1, 2, 3, 4], dtype=np.int8), n, p=[.8, .05, .05, .05, .05])
    attempts = rng.poisson(20, n).astype(np.int64)
    cost = attempts * 0.75
    duration = {"lognormal": rng.lognormal(5.0, 0.4, n), "ties": np.full(n, 72.0),
                "few values": rng.integers(0, 4, n) * 12.0}[kind]
    expected = _numpy_tally_figures(outcome, attempts, cost, duration)
    summary = Summary(outcome, attempts, cost, duration, 5)
    assert summary.counts.tolist() == expected["counts"]
    got = summary.moments
    for k, (mean, var) in enumerate(expected["moments"]):
        assert got[2 * k] == pytest.approx(mean, rel=1e-12)
        assert got[2 * k + 1] == pytest.approx(var, rel=1e-9, abs=1e-12)
    assert got[6] == pytest.approx(expected["cov"], rel=1e-9, abs=1e-12)
    scenario = as_scenario(LANES_CONSTANT)
    tally = _Tally(n, build_model(trial_model(scenario), time_model(scenario)))
    tally.outcome_code[:], tally.duration[:] = outcome, duration
    for compiled in (None, summary):  # the tally's two ways to the order statistics
        tally.compiled = compiled
        quantiles, bounds = tally._duration_percentiles(slice(None))
        assert quantiles == expected["quantiles"] and bounds == expected["intervals"]
