"""The claims in the comments of the timeline scenarios, checked (docs/model.md section 7).

``fleet_rate_limits.toml``, ``support_reviewers.toml`` and ``flaky_eval_harness.toml`` quote
runs of ``relsim timeline``. Each number is checked against a run of the engine at another
seed (so a lucky seed cannot carry it) with a tolerance of 5 standard errors computed from
that run, and against a reference from outside the engine where one exists: closed forms of
the agent's work, the token bucket's capacity, Little's law, a fluid model of an overloaded
queue. Trials of a batch with no shared resource are independent, so binomial and ``s/sqrt N``
errors hold; durations and waits in a queue are correlated from trial to trial, so they get
batch means (consecutive trials in arrival order) or a stated bound with a margin. Exact
claims (``relsim evaluate``) are in test_scenario_files.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from relsim import Scenario, evaluate, formulas, simulate_timeline

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
Z_LOGNORMAL_P95 = 1.6448536  # docs/model.md section 7: sigma = ln(p95 / median) / 1.6448536


def _data(name: str) -> dict:
    return Scenario.from_toml(SCENARIOS / name).to_dict()


def _with(data: dict, **tables) -> dict:
    """``data`` with ``table={key: value}`` merged in (``None`` for a key or a table deletes)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    for table, changes in tables.items():
        if changes is None:
            out.pop(table, None)
            continue
        out.setdefault(table, {})
        for key, value in changes.items():
            if value is None:
                out[table].pop(key, None)
            else:
                out[table][key] = value
    return out


def _lognormal_mean(median: float, p95: float) -> float:
    sigma = math.log(p95 / median) / Z_LOGNORMAL_P95
    return median * math.exp(sigma**2 / 2)


def _within(stated: float, estimate: float, se: float) -> bool:
    return abs(stated - estimate) <= 5 * se


def _batch_means(values: np.ndarray, batches: int = 20) -> tuple[float, float]:
    """Mean and standard error of ``values`` (in arrival order) by batch means."""
    means = np.array([b.mean() for b in np.array_split(np.asarray(values, float), batches)])
    return float(means.mean()), float(means.std(ddof=1) / math.sqrt(batches))


def _batch_quantile(values: np.ndarray, q: float, batches: int = 20) -> tuple[float, float]:
    parts = [np.quantile(b, q) for b in np.array_split(np.asarray(values, float), batches)]
    return float(np.mean(parts)), float(np.std(parts, ddof=1) / math.sqrt(batches))


# ------------------------------------------------------------------------ fleet_rate_limits
FLEET = "fleet_rate_limits.toml"


def _fleet_work() -> dict:
    """The fleet's closed forms: work per task, the token bucket's capacity, the knee."""
    data = _data(FLEET)
    p, miss, per_step = data["p"], data["verifier"]["miss"], data["retries"]["per_step"]
    chain = formulas.verified_chain([p] * data["steps"], per_step, miss=miss)
    q = (1 - p) * (1 - miss)  # an attempt is rejected (no false rejects here)
    # each step execution makes attempt j (j = 1..3) with probability q**(j-1); the wait before
    # retry j is U(0,1) x min(30, 2 * 2**(j-1)), mean 1 s then 2 s
    backoff_per_attempt = (q * 1.0 + q**2 * 2.0) / (1 + q + q**2)
    attempt = _lognormal_mean(20.0, 60.0) + 5.0
    service = chain.expected_attempts * (attempt + backoff_per_attempt)
    tokens = chain.expected_attempts * data["resources"]["tokens"]
    bound = 60 * data["resources"]["tpm"] / tokens  # tasks an hour the tpm bucket serves
    return {"calls": chain.expected_attempts, "tokens": tokens, "service": service,
            "per_agent": 3600 / service, "bound": bound, "success": chain.success}


def test_fleet_closed_form_claims():
    work = _fleet_work()
    assert round(work["calls"], 1) == 27.3 and round(work["tokens"], -3) == 219_000
    assert round(60 * 1e6 / 219_000) == 274 and math.floor(work["bound"]) == 274
    assert round(274 * work["calls"] / 60) == 125 < 600  # calls a minute at the bound: rpm is slack
    assert round(_lognormal_mean(20.0, 60.0)) == 25
    assert 0 < work["service"] - work["calls"] * 30.0 < 5  # a few seconds of backoff
    assert round(work["per_agent"], 1) == 4.4  # one agent's tasks an hour
    assert round(274 / 4.4) == 62 and abs(work["bound"] / work["per_agent"] - 62) < 1  # the knee


@pytest.mark.slow
def test_fleet_one_task_takes_its_closed_form_time():
    # with nothing shared each trial's duration is its service time, independent trial to trial
    work = _fleet_work()
    alone = _with(_data(FLEET), fleet=None, resources=None)
    run = simulate_timeline(alone, 1000, seed=2)
    se = run.standard_errors["duration"]
    assert _within(work["service"], run.duration["mean"], se)
    assert round(3600 / run.duration["mean"], 1) == 4.4
    # negative control: the median attempt time (20 s) in place of the mean is rejected
    median_time = work["calls"] * (20.0 + 5.0)
    assert not _within(median_time, run.duration["mean"], se)


#: The comment's table: agents -> (throughput_per_hour, mean rate-limit wait in seconds).
FLEET_TABLE = {20: (87.1, 0), 40: (173, 0), 60: (258, 0), 80: (270, 222), 100: (271, 480)}


@pytest.mark.slow
def test_fleet_throughput_grows_to_the_token_bucket_knee():
    work = _fleet_work()
    data = _data(FLEET)
    trials = 2000  # the quoted run's size: a batch's tail (the last tasks) depends on it
    alone = simulate_timeline(_with(data, fleet=None, resources=None), trials, seed=2)
    # throughput is trials / makespan; its relative error is the mean service time's (below
    # the knee) or the mean token use's (above it)
    service_cv = alone.standard_errors["duration"] / alone.duration["mean"]
    runs = {}
    for agents, (throughput, wait) in FLEET_TABLE.items():
        fleet = _with(data, fleet={"agents": agents})
        run = runs[agents] = simulate_timeline(fleet, trials, seed=2)
        tokens_cv = run.standard_errors["expected_attempts"] / run.expected_attempts
        se = run.throughput_per_hour * (service_cv if wait == 0 else tokens_cv)
        assert _within(throughput, run.throughput_per_hour, se), agents
        # the tpm bucket's capacity (it starts with one minute's allowance) is never exceeded
        assert run.throughput_per_hour <= work["bound"] * (1 + 60 / run.makespan) + 5 * se
        if wait == 0:
            assert run.wait["rate_limit"] < 1.0  # below the knee the bucket never empties
            assert run.throughput_per_hour <= agents * work["per_agent"] + 5 * se
        else:
            # Little's law above the knee: each agent is held agents / bound hours per task,
            # the service time and the wait at the bucket
            little = agents * 3600 / work["bound"] - work["service"]
            assert abs(run.wait["rate_limit"] - little) < 0.1 * little, agents
            assert abs(wait - little) < 0.1 * little, agents
    # past the knee more agents only queue: throughput flat, the wait grows
    assert runs[100].throughput_per_hour < 1.01 * runs[80].throughput_per_hour
    assert runs[100].wait["rate_limit"] > 2 * runs[80].wait["rate_limit"]
    assert runs[40].throughput_per_hour > 1.9 * runs[20].throughput_per_hour
    # success does not move: the same seed makes the same decisions whatever the fleet
    assert len({run.success for run in runs.values()}) == 1
    assert _within(work["success"], runs[20].success, runs[20].standard_errors["success"])
    # negative control: without the rate limits 100 agents would do 100 agents' work
    free = simulate_timeline(_with(data, fleet={"agents": 100}, resources=None), trials, seed=2)
    assert free.throughput_per_hour > 1.4 * work["bound"]


@pytest.mark.slow
def test_fleet_rpm_never_binds_and_tpm_does():
    data = _with(_data(FLEET), fleet={"agents": 100})
    run = simulate_timeline(data, 400, seed=3)
    no_rpm = simulate_timeline(_with(data, resources={"rpm": None}), 400, seed=3)
    assert no_rpm.to_dict() == run.to_dict()  # the rpm bucket never held a call back
    no_tpm = simulate_timeline(_with(data, resources={"tpm": None, "tokens": None}), 400, seed=3)
    assert no_tpm.wait["rate_limit"] == 0 < run.wait["rate_limit"]
    assert no_tpm.makespan < 0.8 * run.makespan
    # shorter prompts move the knee: half the tokens, twice the bucket's capacity in tasks
    short = simulate_timeline(_with(data, resources={"tokens": 4000}), 400, seed=3)
    assert short.wait["rate_limit"] < 0.2 * run.wait["rate_limit"]
    assert short.throughput_per_hour > 1.3 * run.throughput_per_hour


# ------------------------------------------------------------------------ support_reviewers
SUPPORT = "support_reviewers.toml"
SLA = 900.0


def _review_load() -> dict:
    data = _data(SUPPORT)
    review = _lognormal_mean(120.0, 600.0)
    # reviews per ticket: the expected cost when only a check costs (1 each)
    checks = evaluate(_with(data, cost={"attempt": 0, "verify": 0, "checkpoint": 1,
                                        "rollback": 0})).expected_cost
    load = data["fleet"]["rate_per_hour"] * checks * review / 3600  # reviewer-hours an hour
    return {"review": review, "checks": checks, "load": load}


def test_support_review_load_closed_form_claims():
    load = _review_load()
    assert round(load["review"] / 60, 1) == 3.2  # the review's mean, minutes
    assert 1 < load["checks"] < 1.1  # a caught reply is reviewed again
    assert round(load["load"], 1) == 1.7
    assert [round(100 * load["load"] / c) for c in (2, 3, 4)] == [85, 57, 43]


def _per_trial(run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Durations, reviewer waits and review seconds of the recorded trials, in arrival order."""
    ev = run.events
    arrive = ev[ev.kind == "arrive"].set_index("trial").time
    end = ev[ev.kind == "end"].set_index("trial").time
    reviewers = ev[ev.resource == "reviewers"]
    after = reviewers.time.shift(-1)  # a request is followed by its trial's acquire
    asked = reviewers.kind == "request"
    wait = (after[asked] - reviewers.time[asked]).groupby(reviewers.trial[asked]).sum()
    wait = wait.reindex(arrive.index, fill_value=0.0)
    held = reviewers.time.where(reviewers.kind == "release", 0.0) - reviewers.time.where(
        reviewers.kind == "acquire", 0.0)
    work = held.groupby(reviewers.trial).sum().reindex(arrive.index, fill_value=0.0)
    return (end - arrive).to_numpy(), wait.to_numpy(), work.to_numpy()


#: reviewers -> (duration p90 in seconds, mean reviewer wait in seconds, utilisation)
SUPPORT_TABLE = {2: (2251, 688, 0.85), 3: (660, 60, 0.57), 4: (548, 11, 0.43)}


@pytest.mark.slow
@pytest.mark.parametrize("reviewers", sorted(SUPPORT_TABLE))
def test_support_reviewers_table_and_the_sla(reviewers):
    p90, wait, utilisation = SUPPORT_TABLE[reviewers]
    trials = 4000
    data = _with(_data(SUPPORT), resources={"reviewers": reviewers})
    run = simulate_timeline(data, trials, seed=2, record=trials)
    duration, waited, work = _per_trial(run)
    assert waited.mean() == pytest.approx(run.wait["reviewers"], rel=1e-9, abs=1e-9)
    assert _within(p90, *_batch_quantile(duration, 0.9))
    assert _within(wait, *_batch_means(waited))
    # the SLA: 90% of tickets within 900 s; 2 reviewers miss it, 3 and 4 meet it
    within, se = _batch_means(duration <= SLA)
    if reviewers == 2:
        assert within + 5 * se < 0.9 and p90 > SLA
    else:
        assert within - 5 * se > 0.9 and p90 < SLA
    # utilisation: the offered load over the reviewers, within the run's error (the busy time
    # is a sum of independent reviews, the makespan about a sum of exponential arrival gaps)
    load = _review_load()["load"] / reviewers
    assert round(utilisation, 2) == round(load, 2)
    assert work.sum() == pytest.approx(
        run.utilisation["reviewers"] * reviewers * run.makespan, rel=1e-6)
    relative = math.sqrt((work.std(ddof=1) / work.mean()) ** 2 + 1) / math.sqrt(trials)
    assert _within(load, run.utilisation["reviewers"], relative * load)


@pytest.mark.slow
def test_one_reviewer_never_keeps_up():
    # fluid model of an overloaded queue: the backlog grows at (load - 1) reviewer-hours an
    # hour, so a ticket arriving at hour t waits about (load - 1) t; the 90th percentile ticket
    # arrives at 0.9 x 20000 / 30 hours
    load = _review_load()["load"]
    fluid = (load - 1) * 0.9 * 20000 / 30 * 3600
    run = simulate_timeline(_with(_data(SUPPORT), resources={"reviewers": 1}), 20000, seed=2)
    assert abs(run.duration["p90"] - fluid) < 0.05 * fluid
    assert round(fluid / 86400, 1) == 17.6 and round(run.duration["p90"] / 86400) in (17, 18)
    assert run.utilisation["reviewers"] > 0.999


def test_past_80_percent_the_wait_explodes():
    # "queueing, not slow reviews": the same reviews, 2 reviewers instead of 3, wait 10x longer
    data = _data(SUPPORT)
    waits = {c: simulate_timeline(_with(data, resources={"reviewers": c}), 1500, seed=4)
             for c in (2, 3)}
    assert waits[2].utilisation["reviewers"] > 0.8 > waits[3].utilisation["reviewers"]
    assert waits[2].wait["reviewers"] > 5 * waits[3].wait["reviewers"]


# ----------------------------------------------------------------------- flaky_eval_harness
HARNESS = "flaky_eval_harness.toml"
#: the comment's quoted split, with crash_per_hour = 1 and = 0
HARNESS_SPLIT = {"success": 0.622, "silent_failure": 0.090, "detected_failure": 0.065,
                 "timeout": 0.026, "infra_failure": 0.197}


@pytest.mark.slow
def test_flaky_harness_split_and_the_harness_share_of_failures():
    data = _data(HARNESS)
    assert "fleet" not in data and "resources" not in data  # every run at once, nothing shared
    run = simulate_timeline(data, 3000, seed=2, record=3000)
    for key, stated in HARNESS_SPLIT.items():
        assert _within(stated, getattr(run, key), run.standard_errors[key]), key
    agent = evaluate(data).success  # the time tables do not change the agent's own split
    assert round(agent, 3) == 0.812
    # negative control: the agent-alone success is not what the harness reports
    assert not _within(agent, run.success, run.standard_errors["success"])
    harness = HARNESS_SPLIT["infra_failure"] + HARNESS_SPLIT["timeout"]
    assert round(harness, 3) == 0.223 and round(harness / (1 - HARNESS_SPLIT["success"]), 2) == 0.59
    assert round(100 * (agent - HARNESS_SPLIT["success"])) == 19
    # without a crash clock: success 0.776, timeout 0.042
    steady = simulate_timeline(_with(data, infra=None), 3000, seed=3, record=3000)
    assert _within(0.776, steady.success, steady.standard_errors["success"])
    assert _within(0.042, steady.timeout, steady.standard_errors["timeout"])
    assert steady.infra_failure == 0
    # the crash clock (rate 1/3600 s, from the start) thins that run: a trial live for d
    # seconds survives it with probability exp(-d / 3600), so a run that would time out at
    # 1200 s does with exp(-1/3) (the slow runs a crash cuts short first), and the expected
    # split with crashes follows trial by trial; it must match the run with crashes
    ev = steady.events
    ends = ev[ev.kind == "end"].set_index("trial")
    live = (ends.time - ev[ev.kind == "arrive"].set_index("trial").time).to_numpy()
    survive = np.exp(-live / 3600)
    predicted = {"success": (ends.outcome == "success").to_numpy() * survive,
                 "timeout": (ends.outcome == "timeout").to_numpy() * survive,
                 "infra_failure": 1 - survive}
    assert np.allclose(live[(ends.outcome == "timeout").to_numpy()], 1200)
    for key, values in predicted.items():
        se = math.hypot(values.std(ddof=1) / math.sqrt(len(values)), run.standard_errors[key])
        assert _within(values.mean(), getattr(run, key), se), key
    assert predicted["timeout"].mean() == pytest.approx(steady.timeout * math.exp(-1 / 3))
    # negative control: a crash clock at half the rate predicts a split the run rejects
    half = 1 - np.exp(-live / 7200)
    se = math.hypot(half.std(ddof=1) / math.sqrt(len(half)), run.standard_errors["infra_failure"])
    assert not _within(half.mean(), run.infra_failure, se)
    # and with neither clock nor deadline, the agent's own split (docs/model.md section 7)
    free = simulate_timeline(_with(data, infra=None, timing={"deadline": None}), 3000, seed=2)
    assert _within(agent, free.success, free.standard_errors["success"])
    assert free.timeout == 0 == free.infra_failure
