"""Workloads, replications, targets and warnings of the timeline (docs/model.md section 7,
"Workloads" and "Targets"): the tables that state them, the two modes, the default number of
replications, the warm-up and utilisation's window, the bottleneck, the warnings, the verdicts,
and a many-seed check that every reported standard error is the spread it claims to be."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from relsim import Scenario, simulate_timeline
from relsim.errors import ScenarioError
from relsim.results import judge
from relsim.scenario import time_model
from relsim.timeline import _driver

#: Reviewers fed Poisson arrivals with exponential reviews: an M/M/2 queue at 75% load.
QUEUE = {"steps": 1, "p": 0.9, "verifier": {"miss": 0.2}, "retries": {"per_step": 1},
         "checkpoints": {"final": True, "human": True},
         "fleet": {"arrivals": "poisson", "rate_per_hour": 45, "tasks": 200},
         "resources": {"reviewers": 2, "review": {"mean": 120}}}


# ------------------------------------------------------------------------------ the tables
def test_fleet_tasks_and_warmup_are_validated_and_compiled():
    poisson = {"arrivals": "poisson", "rate_per_hour": 10}
    t = time_model(Scenario.from_dict({"steps": 1, "p": 0.9, "fleet": {**poisson, "tasks": 50}}))
    assert (t.tasks, t.warmup, t.workload) == (50, 5, True)  # default warm-up: 10%
    t = time_model(Scenario.from_dict({"steps": 1, "p": 0.9, "fleet": {"tasks": 50}}))
    assert (t.tasks, t.warmup, t.workload) == (50, 0, False)  # a batch has none
    t = time_model(Scenario.from_dict({"steps": 1, "p": 0.9}))
    assert (t.tasks, t.warmup) == (1000, 0)
    cases = [
        ({"tasks": 0}, "fleet.tasks: must be an integer in 1..1000000, got 0"),
        ({"tasks": 2.5}, "fleet.tasks: must be an integer in 1..1000000, got 2.5"),
        ({"warmup": 3}, 'fleet.warmup: used only with arrivals = "poisson"'),
        ({**poisson, "tasks": 10, "warmup": 10}, "fleet.warmup: must be an integer in 0..9, got 10"),
        ({**poisson, "warmup": -1}, "fleet.warmup: must be an integer in 0..999, got -1"),
    ]
    for fleet, message in cases:
        with pytest.raises(ScenarioError, match=message):
            Scenario.from_dict({"steps": 1, "p": 0.9, "fleet": fleet})


def test_targets_are_validated_and_one_with_the_top_level_target():
    s = Scenario.from_dict({"steps": 1, "p": 0.9, "target": 0.8,
                            "targets": {"duration_p90": 60, "throughput_per_hour": 10}})
    assert time_model(s).targets == (("success", 0.8), ("duration_p90", 60.0),
                                      ("throughput_per_hour", 10.0))
    assert Scenario.from_dict(s.to_dict()) == s
    same = Scenario.from_dict({"steps": 1, "p": 0.9, "target": 0.8, "targets": {"success": 0.8}})
    assert time_model(same).targets == (("success", 0.8),)
    cases = [
        ({"target": 0.8, "targets": {"success": 0.9}},
         "targets.success: must equal the top-level target = 0.8 when both are given"),
        ({"targets": {"success": 0}}, "targets.success: must be a number in"),
        ({"targets": {"timeout": 1.5}}, "targets.timeout: must be a probability in"),
        ({"targets": {"duration_p99": -1}}, "targets.duration_p99: must be a finite number > 0"),
        ({"targets": {"cost_per_success": -1}}, "targets.cost_per_success: must be a finite number >= 0"),
        ({"targets": {"p95": 1}}, "targets.p95: unknown key"),
    ]
    for extra, message in cases:
        with pytest.raises(ScenarioError, match=message):
            Scenario.from_dict({"steps": 1, "p": 0.9, **extra})


def test_a_verdict_is_the_interval_against_the_target():
    assert judge(0.9, (0.91, 0.95), at_least=True) == "met"
    assert judge(0.9, (0.85, 0.89), at_least=True) == "missed"
    assert judge(0.9, (0.85, 0.95), at_least=True) == "undecided"
    assert judge(900.0, (700.0, 900.0), at_least=False) == "met"  # on the line: met
    assert judge(900.0, (901.0, 950.0), at_least=False) == "missed"
    assert judge(900.0, (float("nan"), float("nan")), at_least=False) == "undecided"
    assert judge(900.0, None, at_least=False) == "undecided"


# ------------------------------------------------------------------------------ the modes
def test_independent_trials_have_no_throughput_and_a_throughput_target_says_so():
    s = {"steps": 3, "p": 0.9, "timing": {"attempt": 5},
         "targets": {"throughput_per_hour": 100, "duration_p90": 100}}
    out = simulate_timeline(s, 500, seed=1)
    assert out.replications is None and out.makespan is None and out.throughput_per_hour is None
    assert out.utilisation == {k: None for k in ("agents", "llm", "reviewers", "rpm", "tpm")}
    assert out.targets["throughput_per_hour"]["status"] == "undecided"
    assert out.targets["duration_p90"]["status"] == "met"  # 3 attempts of 5 s, at most a few more
    assert len(out.warnings) == 1 and out.warnings[0].startswith("targets.throughput_per_hour: "
                                                                  "independent trials")
    # the percentiles' intervals are order statistics of the run
    durations = np.sort(np.asarray(simulate_timeline(s, 500, seed=1, record=500).events.query(
        "kind == 'end'").time))
    low, high = out.intervals["duration_p50"]
    assert low in durations and high in durations and low <= out.duration["p50"] <= high


def test_poisson_arrivals_with_nothing_shared_are_a_workload():
    s = {"steps": 1, "p": 0.9, "timing": {"attempt": {"mean": 30}},
         "fleet": {"arrivals": "poisson", "rate_per_hour": 60, "tasks": 200}}
    out = simulate_timeline(s, replications=3, seed=2)
    assert out.replications == 3 and out.trials == 3 * 180 and out.warmup == 20
    # nothing limited: no utilisation, no bottleneck; throughput is the arrival rate (less the
    # drain at the end of a replication)
    assert out.bottleneck is None and out.offered_load == {k: None for k in out.offered_load}
    assert 50 < out.throughput_per_hour <= 61


@pytest.mark.slow
def test_the_default_rule_stops_at_the_least_precise_enough_count(monkeypatch):
    # a queue whose mean duration varies from one replication to the next: the rule runs
    # replications one by one from MIN_REPLICATIONS and stops at the first whose mean
    # duration's standard error is within PRECISION of it
    monkeypatch.setattr(_driver, "PRECISION", 0.05)
    out = simulate_timeline(QUEUE, seed=4)
    values = np.asarray(out.replication_values["duration_mean"])
    assert _driver.MIN_REPLICATIONS <= out.replications < _driver.MAX_DEFAULT_REPLICATIONS
    for count in range(_driver.MIN_REPLICATIONS, out.replications + 1):
        first = values[:count]
        precise = first.std(ddof=1) / math.sqrt(count) <= 0.05 * first.mean()
        assert precise == (count == out.replications), count
    assert out.precision == pytest.approx(values.std(ddof=1) / math.sqrt(values.size) / values.mean())
    # and at the cap it stops whatever the precision reached (which it reports)
    monkeypatch.setattr(_driver, "PRECISION", 1e-9)
    monkeypatch.setattr(_driver, "MAX_DEFAULT_REPLICATIONS", 6)
    capped = simulate_timeline(QUEUE, seed=4)
    assert capped.replications == 6 and capped.precision > 1e-9


def test_the_warmup_is_left_out_and_utilisation_counts_from_its_end():
    # constant 10 s attempts, one agent, Poisson arrivals far apart: the agent works 10 s a
    # task, so over the window after the warm-up its utilisation is 10 s x tasks / window
    s = {"steps": 1, "p": 1.0, "timing": {"attempt": 10},
         "fleet": {"arrivals": "poisson", "rate_per_hour": 36, "agents": 1, "tasks": 60, "warmup": 20}}
    out = simulate_timeline(s, replications=2, seed=1, record=60)
    ev = out.events
    arrive = ev[ev.kind == "arrive"].set_index("trial").time
    end = ev[ev.kind == "end"].set_index("trial").time
    window = end.max() - arrive[20]
    first = out.replication_values
    assert first["makespan"][0] == pytest.approx(window)
    # busy from the window's start: the trials that started after it, and any in progress then
    start = ev[(ev.kind == "acquire") & (ev.resource == "agents")].set_index("trial").time
    busy = sum(max(0.0, end[k] - max(start[k], arrive[20])) for k in start.index)
    assert first["utilisation_agents"][0] == pytest.approx(busy / window)
    assert first["throughput_per_hour"][0] == pytest.approx(40 * 3600 / window)
    assert first["duration_mean"][0] == pytest.approx((end - arrive)[20:].mean())
    assert out.trials == 2 * 40


def test_the_bottleneck_is_the_resource_nearest_its_capacity_without_inner_waits():
    # agents that wait for a tight tpm bucket are busy, but the bucket binds: naming the
    # agents would send the review to the wrong lever
    s = {"steps": 2, "p": 1.0, "timing": {"attempt": 2}, "fleet": {"agents": 4, "tasks": 200},
         "resources": {"tpm": 6000, "tokens": 1000}}
    out = simulate_timeline(s, replications=2, seed=1)
    assert out.utilisation["agents"] > 0.95 and out.utilisation["tpm"] > 0.9
    assert out.bottleneck == "tpm"
    # control: without the bucket the agents bind
    free = simulate_timeline({**s, "resources": {"llm_concurrency": 100}}, replications=2, seed=1)
    assert free.bottleneck == "agents"


# ------------------------------------------------------------------------------ warnings
def test_an_overloaded_queue_warns_and_a_settled_one_does_not():
    overloaded = {**QUEUE, "resources": {"reviewers": 1, "review": {"mean": 120}}}  # load 1.5
    out = simulate_timeline(overloaded, replications=4, seed=1)
    assert out.offered_load["reviewers"] == pytest.approx(45 / 3600 * 120, rel=0.1)  # 1.5
    assert [w.split(":")[0] for w in out.warnings] == ["reviewers", "waits grow within a replication"]
    settled = simulate_timeline({**QUEUE, "resources": {"reviewers": 4, "review": {"mean": 120}}},
                                replications=4, seed=1)
    assert settled.warnings == () and settled.offered_load["reviewers"] < 0.5


def test_a_batch_workload_does_not_warn_of_a_queue_it_must_form():
    # a batch arrives at once: its queue always grows through the run, which says nothing
    # about a steady state
    out = simulate_timeline({"steps": 1, "p": 1.0, "timing": {"attempt": 5},
                             "fleet": {"agents": 2, "tasks": 100}}, replications=2, seed=1)
    assert out.warnings == () and out.offered_load == {}


# ------------------------------------------------------------------------------ honest errors
def _f_test(per_seed: np.ndarray) -> float:
    """Two-sided p-value that the spread of the seeds' means is what their replications'
    spread says: with K seeds of R replications each, the between-seed variance of the means
    over the within-seed variance of one replication / R is F(K - 1, K (R - 1))."""
    count, replications = per_seed.shape
    means = per_seed.mean(axis=1)
    within = per_seed.var(axis=1, ddof=1).mean() / replications
    ratio = means.var(ddof=1) / within
    cdf = stats.f.cdf(ratio, count - 1, count * (replications - 1))
    return 2 * min(cdf, 1 - cdf)


SEEDS, REPLICATIONS = 40, 4
#: Every reported quantity of the queue that is not fixed by it (the waits for agents, LLM
#: slots and the rate limit are 0: nothing limits them).
QUANTITIES = ("success", "detected_failure", "expected_attempts", "expected_cost",
              "duration_mean", "duration_p50", "duration_p90", "duration_p99", "wait_reviewers",
              "utilisation_reviewers", "offered_load_reviewers", "makespan",
              "throughput_per_hour", "successes_per_hour")


@pytest.mark.slow
def test_the_spread_across_seeds_is_the_reported_standard_error():
    # the check: 40 seeds of 4 replications each; for every time quantity the spread
    # of the 40 estimates matches the standard errors the runs reported (an F test at the 1e-4
    # level, so a correct engine fails it once in 10,000 runs of this test)
    runs = [simulate_timeline(QUEUE, replications=REPLICATIONS, seed=seed, record=200)
            for seed in range(SEEDS)]
    for key in QUANTITIES:
        per_seed = np.array([run.replication_values[key] for run in runs], dtype=float)
        assert _f_test(per_seed) > 1e-4, key
        reported = np.array([run.standard_errors[key] for run in runs])
        # each run's reported error is its replications' spread over sqrt(R)
        assert reported == pytest.approx(per_seed.std(axis=1, ddof=1) / math.sqrt(REPLICATIONS))
    # negative control: the error that treats a queue's trials as independent (s / sqrt N
    # over the trials of one replication) is far smaller than the spread of that
    # replication's mean duration across seeds
    naive = []
    for run in runs:
        ev = run.events
        durations = (ev[ev.kind == "end"].set_index("trial").time
                     - ev[ev.kind == "arrive"].set_index("trial").time).to_numpy()[20:]
        naive.append(durations.std(ddof=1) / math.sqrt(durations.size))
    first = np.array([run.replication_values["duration_mean"][0] for run in runs])
    assert first.std(ddof=1) / math.sqrt(np.mean(np.square(naive))) > 1.5


@pytest.mark.slow
def test_independent_trials_percentile_errors_match_the_spread_across_seeds():
    # order-statistic intervals of independent trials: their half-width over 1.96 is the
    # spread of the percentile across seeds (within the chi-square noise of 40 seeds)
    s = {"steps": 4, "p": 0.8, "verifier": {}, "retries": {"per_step": 2},
         "timing": {"attempt": {"median": 5, "p95": 20}}}
    runs = [simulate_timeline(s, 600, seed=seed) for seed in range(SEEDS)]
    for key in ("duration_mean", "duration_p50", "duration_p90", "success", "expected_cost"):
        estimates = np.array([run.quantity(key)[0] for run in runs])
        reported = np.array([run.standard_errors[key] for run in runs])
        statistic = (SEEDS - 1) * estimates.var(ddof=1) / np.mean(reported**2)
        assert stats.chi2.sf(statistic, SEEDS - 1) > 1e-4 and stats.chi2.cdf(statistic, SEEDS - 1) > 1e-4, key
    # negative control: the same test with errors half the size fails
    estimates = np.array([run.duration["p90"] for run in runs])
    half = np.array([run.standard_errors["duration_p90"] for run in runs]) / 2
    assert stats.chi2.sf((SEEDS - 1) * estimates.var(ddof=1) / np.mean(half**2), SEEDS - 1) < 1e-4
