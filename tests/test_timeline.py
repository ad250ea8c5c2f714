"""The timeline engine against numbers from outside it (docs/model.md section 7's limits).

Every statistical check uses a fixed seed and a tolerance of 5 standard errors computed from
the run itself, and has a negative control: the same run compared with a wrong parameter's
value must fail the same check. The reference numbers come from the reference table of
docs/model.md section 5, closed forms computed here from the attempt-count distribution of a
plain chain, Erlang C's formula, and the token bucket's arithmetic; none from the engine.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import test_reference_values
from relsim import Scenario, TimelineOutcome, evaluate, simulate_timeline

SIGMAS = 5.0
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _close(estimate: float, se: float, expected: float, trials: int) -> bool:
    """``|estimate - expected| <= 5 SE``; the SE is floored at 1/N so a share of 0 or 1 in
    the run (SE 0) does not demand exact equality with a small non-zero truth."""
    return abs(estimate - expected) <= SIGMAS * max(se, 1.0 / trials)


# ------------------------------------------------------------------ plain chains, exactly
def attempt_distribution(n: int, p: float, miss: float, false_reject: float, per_step: int) -> dict[int, float]:
    """P(a trial makes exactly A attempts), for a chain with a per-step budget and no
    checkpoints: each step ends at attempt j <= r+1 with probability q^(j-1)(1-q) and goes on,
    or is rejected r+1 times (probability q^(r+1)) and the trial stops there."""
    q = p * false_reject + (1 - p) * (1 - miss)
    alive = {0: 1.0}  # attempts so far -> probability, trials still running
    ended: dict[int, float] = {}
    for _ in range(n):
        nxt: dict[int, float] = {}
        for a, prob in alive.items():
            for j in range(1, per_step + 2):
                nxt[a + j] = nxt.get(a + j, 0.0) + prob * q ** (j - 1) * (1 - q)
            stop = a + per_step + 1
            ended[stop] = ended.get(stop, 0.0) + prob * q ** (per_step + 1)
        alive = nxt
    for a, prob in alive.items():
        ended[a] = ended.get(a, 0.0) + prob
    return ended


def test_attempt_distribution_matches_the_closed_forms():
    # a check of the test's own helper: it sums to 1 and its mean is verified_chain's
    from relsim import formulas

    dist = attempt_distribution(6, 0.8, 0.1, 0.05, 2)
    assert sum(dist.values()) == pytest.approx(1.0, abs=1e-12)
    mean = sum(a * prob for a, prob in dist.items())
    chain = formulas.verified_chain([0.8] * 6, 2, miss=0.1, false_reject=0.05)
    assert mean == pytest.approx(chain.expected_attempts, abs=1e-12)


# --------------------------------------------------------- no time tables: section 3's split
@pytest.mark.parametrize("case", sorted(test_reference_values.REFERENCE))
@pytest.mark.slow
def test_without_time_tables_the_split_is_section_3s(case):
    text, success, silent, detected, attempts, cost = test_reference_values.REFERENCE[case]
    trials = 6000
    out = simulate_timeline(json.loads(text), trials, seed=11)
    se = out.standard_errors
    for key, exact in (("success", success), ("silent_failure", silent),
                       ("detected_failure", detected), ("expected_attempts", attempts),
                       ("expected_cost", cost)):
        assert _close(getattr(out, key), se[key], exact, trials), (case, key)
    assert out.timeout == 0.0 and out.infra_failure == 0.0
    assert out.trials == trials and out.duration["mean"] == 0.0
    # negative control: the same design with an agent 5 points worse per attempt is caught
    worse = dict(json.loads(text))
    worse["p"] = [x - 0.05 for x in np.broadcast_to(worse["p"], worse["steps"])]
    assert not _close(out.success, se["success"], evaluate(worse).success, trials)


# ------------------------------------------------------------------- constant durations
CHAIN = {"steps": 8, "p": 0.8, "verifier": {"miss": 0.1, "false_reject": 0.05},
         "retries": {"per_step": 2}, "timing": {"attempt": 7, "verify": 3}}


@pytest.mark.slow
def test_constant_durations_every_trial_lasts_attempts_times_attempt_plus_verify():
    trials = 4000
    out = simulate_timeline(CHAIN, trials, seed=3, record=trials)
    ev = out.events
    arrive = ev[ev.kind == "arrive"].set_index("trial").time
    end = ev[ev.kind == "end"].set_index("trial").time
    attempts = ev[ev.kind == "attempt"].groupby("trial").size()
    assert len(arrive) == len(end) == len(attempts) == trials
    np.testing.assert_allclose((end - arrive).to_numpy(), 10.0 * attempts.to_numpy(), rtol=0, atol=1e-9)
    # the mean against the exact engine's expected attempts
    exact = evaluate(CHAIN).expected_attempts
    se = out.standard_errors["duration"]
    assert _close(out.duration["mean"], se, 10.0 * exact, trials)
    wrong = evaluate({**CHAIN, "p": 0.75}).expected_attempts
    assert not _close(out.duration["mean"], se, 10.0 * wrong, trials)  # negative control


@pytest.mark.slow
def test_deadline_timeout_share_is_the_attempt_count_tail():
    # 10 s per attempt, deadline 120 s: a trial times out iff it needs more than 12 attempts
    # (one that needs exactly 12 ends at the deadline itself, and is not late)
    trials = 6000
    scenario = {**CHAIN, "timing": {"attempt": 7, "verify": 3, "deadline": 120}}
    out = simulate_timeline(scenario, trials, seed=5)
    dist = attempt_distribution(8, 0.8, 0.1, 0.05, 2)
    tail = {k: sum(prob for a, prob in dist.items() if a > k) for k in (11, 12, 13)}
    se = out.standard_errors["timeout"]
    assert _close(out.timeout, se, tail[12], trials)
    assert not _close(out.timeout, se, tail[11], trials)  # negative controls: off by one
    assert not _close(out.timeout, se, tail[13], trials)
    assert out.duration["p99"] <= 120.0 and out.infra_failure == 0.0


def test_deadline_counts_from_arrival_including_the_agent_queue():
    # one agent, batch arrivals, constant 10 s trials (p = 1, one step, no verifier):
    # trial k starts at 10k; with a deadline of 35 s, trials 0..2 end by 30 s, trial 3 would
    # end at 40 s (late: interrupted at 35 s) and the rest time out in the queue at 35 s
    scenario = {"steps": 1, "p": 1.0, "timing": {"attempt": 10, "deadline": 35},
                "fleet": {"agents": 1, "tasks": 6}}
    out = simulate_timeline(scenario, replications=2, seed=0, record=6)
    assert out.success == pytest.approx(3 / 6) and out.timeout == pytest.approx(3 / 6)
    ends = out.events[out.events.kind == "end"].set_index("trial").time
    assert ends.tolist() == [10.0, 20.0, 30.0, 35.0, 35.0, 35.0]
    assert out.makespan == 35.0 and out.wait["agents"] == pytest.approx((0 + 10 + 20 + 30 + 35 + 35) / 6)


@pytest.mark.slow
def test_crashes_match_the_crash_clock_against_the_uncrashed_length():
    # 60 s per attempt; a crash clock of 3 per hour ends a trial of A attempts with
    # probability 1 - exp(-rate * 60 A)
    trials = 6000
    rate = 3.0 / 3600
    scenario = {**CHAIN, "timing": {"attempt": 50, "verify": 10}, "infra": {"crash_per_hour": 3.0}}
    out = simulate_timeline(scenario, trials, seed=9)
    dist = attempt_distribution(8, 0.8, 0.1, 0.05, 2)

    def infra(r: float) -> float:
        return sum(prob * (1 - math.exp(-r * 60.0 * a)) for a, prob in dist.items())

    se = out.standard_errors["infra_failure"]
    assert _close(out.infra_failure, se, infra(rate), trials)
    assert not _close(out.infra_failure, se, infra(2.5 / 3600), trials)  # negative control
    assert out.timeout == 0.0


# ---------------------------------------------------------------- queues: Erlang C
def erlang_c(servers: int, load: float) -> float:
    """P(an arrival waits) in M/M/c with offered load ``a = lambda / mu``."""
    top = load**servers / math.factorial(servers) * servers / (servers - load)
    return top / (sum(load**k / math.factorial(k) for k in range(servers)) + top)


@pytest.mark.slow
def test_reviewer_pool_is_an_mm_c_queue():
    # one step that always succeeds, then a human gate: Poisson arrivals (12.6 an hour) at 3
    # reviewers with exponential reviews of mean 600 s: load a = 2.1, utilisation 0.7. The
    # library's replications give the standard errors (docs/model.md section 7, "Workloads"): a queue's neighbouring
    # waits are correlated, whole replications are not.
    servers, mean_review, rate_per_hour = 3, 600.0, 12.6
    scenario = {"steps": 1, "p": 1.0, "checkpoints": {"final": True, "human": True},
                "fleet": {"arrivals": "poisson", "rate_per_hour": rate_per_hour,
                          "tasks": 3000, "warmup": 300},
                "resources": {"reviewers": servers, "review": {"mean": mean_review}}}
    out = simulate_timeline(scenario, replications=10, seed=21, record=3000)
    se = out.standard_errors

    lam, mu = rate_per_hour / 3600, 1 / mean_review
    load = lam / mu
    p_wait = erlang_c(servers, load)
    mean_wait = p_wait / (servers * mu - lam)
    assert abs(out.wait["reviewers"] - mean_wait) <= SIGMAS * se["wait_reviewers"]
    assert abs(out.duration["mean"] - (mean_wait + mean_review)) <= SIGMAS * se["duration_mean"]
    assert abs(out.utilisation["reviewers"] - load / servers) <= SIGMAS * se["utilisation_reviewers"]
    assert abs(out.offered_load["reviewers"] - load / servers) <= SIGMAS * se["offered_load_reviewers"]
    assert out.bottleneck == "reviewers" and out.warnings == ()
    # the first replication's log: the share that waited at all is Erlang C's P(wait)
    ev = out.events[out.events.resource == "reviewers"]
    granted = ev[ev.kind == "acquire"].set_index("trial").time
    asked = ev[ev.kind == "request"].set_index("trial").time.reindex(granted.index)
    waited = (granted - asked.fillna(granted)).to_numpy()[300:] > 0
    assert abs(waited.mean() - p_wait) < 0.05
    # negative control: four reviewers' Erlang C is far outside the same tolerance
    p4 = erlang_c(4, load)
    assert abs(out.wait["reviewers"] - p4 / (4 * mu - lam)) > SIGMAS * se["wait_reviewers"]


# ---------------------------------------------------------------- rate limits
@pytest.mark.slow
def test_rpm_bucket_caps_the_call_rate():
    # 60 calls a minute: the first 60 start at once (the bucket starts full), then one a second
    scenario = {"steps": 1, "p": 1.0, "timing": {"attempt": 1}, "resources": {"rpm": 60},
                "fleet": {"tasks": 300}}
    out = simulate_timeline(scenario, replications=2, seed=0, record=300)
    starts = np.sort(out.events[out.events.kind == "attempt"].time.to_numpy())
    expected = np.maximum(0.0, np.arange(300) - 59.0)
    np.testing.assert_allclose(starts, expected, rtol=0, atol=1e-6)
    assert out.makespan == pytest.approx(241.0)
    # 300 calls taken of the 60 + 241 the bucket could give (a full minute, then its refill)
    assert out.utilisation["rpm"] == pytest.approx(300 / (60 + 241.0))
    # negative control: the same check against a 120-per-minute bucket fails
    assert not np.allclose(starts, np.maximum(0.0, (np.arange(300) - 119.0) / 2), atol=1e-6)


def test_tpm_bucket_caps_the_token_rate():
    # 6000 tokens a minute, 1000 per call: 6 calls at once, then one every 10 s
    scenario = {"steps": 1, "p": 1.0, "timing": {"attempt": 1},
                "resources": {"rpm": 600, "tpm": 6000, "tokens": 1000}, "fleet": {"tasks": 30}}
    out = simulate_timeline(scenario, replications=2, seed=0, record=30)
    starts = np.sort(out.events[out.events.kind == "attempt"].time.to_numpy())
    np.testing.assert_allclose(starts, np.maximum(0.0, (np.arange(30) - 5.0) * 10.0), atol=1e-6)
    assert out.wait["rate_limit"] == pytest.approx(np.mean(starts))
    # 30,000 tokens of the 6,000 + 100 x 241 the bucket could give by the last end (241 s):
    # the tpm bucket is the bottleneck
    assert out.utilisation["tpm"] == pytest.approx(30 * 1000 / (6000 + 6000 / 60 * 241.0))
    assert out.bottleneck == "tpm" and out.utilisation["rpm"] < out.utilisation["tpm"]


def test_model_graded_verifications_are_llm_calls_too():
    # verifier_calls_llm: each trial makes 2 calls (attempt, then verification) under rpm 60
    scenario = {"steps": 1, "p": 1.0, "verifier": {}, "timing": {"attempt": 1, "verify": 1},
                "resources": {"rpm": 60, "verifier_calls_llm": True}, "fleet": {"tasks": 100}}
    out = simulate_timeline(scenario, replications=2, seed=0, record=100)
    calls = out.events[(out.events.kind == "acquire") & (out.events.resource == "rate_limit")]
    assert len(calls) == 200
    np.testing.assert_allclose(np.sort(calls.time.to_numpy()), np.maximum(0.0, np.arange(200) - 59.0),
                               atol=1e-6)


@pytest.mark.slow
def test_backoffs_and_checkpoint_checks_add_their_time():
    # constant durations: a trial lasts 10 s per attempt, min(3, 2^(j-1)) s before its j-th
    # retry of a step execution, and 4 s per automatic check
    scenario = {**CHAIN, "checkpoints": {"every": 2, "detect": 0.5, "rollbacks": 1},
                "timing": {"attempt": 7, "verify": 3, "checkpoint": 4,
                           "backoff": {"base": 1, "factor": 2, "max": 3}}}
    out = simulate_timeline(scenario, 1500, seed=6, record=1500)
    ev = out.events
    length = ev[ev.kind == "end"].set_index("trial").time - ev[ev.kind == "arrive"].set_index("trial").time
    retries = ev[ev.kind == "backoff"]
    waits = np.minimum(3.0, 2.0 ** (retries.attempt.astype(float) - 2)).groupby(retries.trial).sum()
    expected = (10.0 * ev[ev.kind == "attempt"].groupby("trial").size()
                + 4.0 * ev[ev.kind == "checkpoint"].groupby("trial").size().reindex(length.index, fill_value=0)
                + waits.reindex(length.index, fill_value=0.0))
    np.testing.assert_allclose(length.to_numpy(), expected.to_numpy(), atol=1e-9)
    assert (ev.kind == "rollback").any() and len(retries) > 0  # both mechanisms were exercised


def test_llm_slots_and_agents_queue_fifo():
    # 2 LLM slots, 10 s calls, 6 trials at once: starts 0, 0, 10, 10, 20, 20
    scenario = {"steps": 1, "p": 1.0, "timing": {"attempt": 10}, "resources": {"llm_concurrency": 2},
                "fleet": {"tasks": 6}}
    out = simulate_timeline(scenario, replications=2, seed=0, record=6)
    starts = out.events[out.events.kind == "attempt"].set_index("trial").time
    assert starts.tolist() == [0.0, 0.0, 10.0, 10.0, 20.0, 20.0]
    assert out.wait["llm"] == pytest.approx(10.0) and out.utilisation["llm"] == pytest.approx(1.0)
    assert out.throughput_per_hour == pytest.approx(6 * 3600 / 30)


# ---------------------------------------------------------------- results and seeds
def test_same_seed_same_numbers_and_the_result_shape():
    data = Scenario.from_toml(SCENARIOS / "support_reviewers.toml").to_dict()
    scenario = Scenario.from_dict({**data, "fleet": {**data["fleet"], "tasks": 150}})
    a = simulate_timeline(scenario, replications=2, seed=4)
    b = simulate_timeline(scenario, replications=2, seed=4)
    c = simulate_timeline(scenario, replications=2, seed=5)
    assert a == b and a.to_dict() == b.to_dict() and a.to_dict() != c.to_dict()
    assert isinstance(a, TimelineOutcome)
    d = a.to_dict()
    for key in ("success", "silent_failure", "detected_failure", "timeout", "infra_failure"):
        assert f"{key}_se" in d and f"{key}_ci" in d
    figures = {"duration": ("mean", "p50", "p90", "p99"),
               "wait": ("agents", "rate_limit", "llm", "reviewers"),
               "utilisation": ("agents", "llm", "reviewers", "rpm", "tpm")}
    for table, names in figures.items():
        assert [key for key in d[table] if "_" not in key or key == "rate_limit"] == list(names)
    assert d["utilisation"]["agents"] is None and d["utilisation"]["llm"] is None
    assert set(d["duration"]) == {f"{k}{s}" for k in figures["duration"] for s in ("", "_se", "_ci")}
    json.dumps(d, allow_nan=False)
    frame = a.to_frame()
    assert len(frame) == 1 and frame["duration_p90"].iloc[0] == d["duration"]["p90"]
    assert frame["duration_p90_ci_low"].iloc[0] == d["duration"]["p90_ci"][0]
    assert frame["utilisation_reviewers_se"].iloc[0] == d["utilisation"]["reviewers_se"]


def test_replication_r_is_the_seed_spawned_by_r(monkeypatch):
    # docs/model.md section 7: replication r runs on SeedSequence(seed, spawn_key=(r,)). Time changes no
    # decision, so replication r's successes are those of the same 40 trials run alone (no
    # time tables) on that sequence, on simpy (the compiled path draws other streams); and a
    # replication's numbers do not depend on how many others run (common random numbers for
    # every comparison)
    from relsim.timeline import _driver

    monkeypatch.setattr(_driver, "_PATH", "simpy")
    plain = {"steps": 2, "p": 0.8, "verifier": {}, "retries": {"per_step": 1}}
    scenario = {**plain, "timing": {"attempt": {"mean": 5}}, "fleet": {"agents": 2, "tasks": 40}}
    out = simulate_timeline(scenario, replications=3, seed=7)
    more = simulate_timeline(scenario, replications=4, seed=7)
    for r in range(3):
        alone = simulate_timeline(plain, 40, seed=np.random.SeedSequence(7, spawn_key=(r,)))
        assert out.replication_values["success"][r] == alone.success
        assert more.replication_values["duration_p90"][r] == out.replication_values["duration_p90"][r]
    assert len(set(out.replication_values["duration_p90"])) == 3
    values = out.replication_values["duration_mean"]
    assert out.duration["mean"] == pytest.approx(np.mean(values))
    assert out.standard_errors["duration_mean"] == pytest.approx(np.std(values, ddof=1) / math.sqrt(3))


@pytest.mark.slow
def test_decisions_do_not_depend_on_time():
    # the same seed with and without the time tables: a trial that ends by itself makes the
    # same decisions, so its outcome and attempt count are the same
    plain = {k: v for k, v in CHAIN.items() if k != "timing"}
    timed = {**CHAIN, "timing": {"attempt": {"median": 5, "p95": 40}, "verify": {"mean": 2}},
             "resources": {"llm_concurrency": 3}, "fleet": {"arrivals": "poisson", "rate_per_hour": 900}}
    # replication 0 of a workload draws from SeedSequence(8, spawn_key=(0,)): so do the plain trials
    a = simulate_timeline(plain, 500, seed=np.random.SeedSequence(8, spawn_key=(0,)), record=500).events
    b = simulate_timeline({**timed, "fleet": {**timed["fleet"], "tasks": 500}}, replications=2,
                          seed=8, record=500).events
    key = ["trial", "kind", "step", "attempt", "outcome"]
    pick = lambda e: e[e.kind.isin(["attempt", "verify", "end"])][key].reset_index(drop=True)  # noqa: E731
    assert pick(a).equals(pick(b))


@pytest.mark.slow
def test_ctrl_c_gives_the_finished_trials_marked_partial(monkeypatch):
    # on simpy (tests/test_timeline_kernel.py stops the compiled path)
    from relsim.timeline import _driver

    monkeypatch.setattr(_driver, "_PATH", "simpy")
    calls = []

    def progress(done: int) -> None:
        calls.append(done)
        raise KeyboardInterrupt

    with pytest.warns(RuntimeWarning, match="interrupted"):
        out = simulate_timeline(CHAIN, 20000, seed=1, progress=progress)
    assert out.partial and 0 < out.trials < 20000 and calls
    assert out.success + out.silent_failure + out.detected_failure == pytest.approx(1.0)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="trials: must be an integer >= 1, got 0"):
        simulate_timeline(CHAIN, 0, seed=1)
    with pytest.raises(ValueError, match="seed: must be"):
        simulate_timeline(CHAIN, 10, seed=-1)
    with pytest.raises(ValueError, match="record: must be an integer >= 0"):
        simulate_timeline(CHAIN, 10, seed=1, record=-2)
    with pytest.raises(ValueError, match="trials: must be given for independent trials"):
        simulate_timeline(CHAIN, seed=1)
    with pytest.raises(ValueError, match="replications: must be None for independent trials"):
        simulate_timeline(CHAIN, 10, replications=3, seed=1)
    workload = {**CHAIN, "fleet": {"agents": 2}}
    with pytest.raises(ValueError, match=r"trials: must be None for a workload .* replications=R"):
        simulate_timeline(workload, 10, seed=1)
    with pytest.raises(ValueError, match="replications: must be an integer in 2.."):
        simulate_timeline(workload, replications=1, seed=1)
