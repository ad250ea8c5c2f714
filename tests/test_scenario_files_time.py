"""The claims in the comments of the timeline scenarios, checked (docs/model.md section 7).

``fleet_rate_limits.toml``, ``support_reviewers.toml`` and ``flaky_eval_harness.toml`` quote
runs of ``relsim timeline``. Each number is checked against a run of the engine at another
seed (so a lucky seed cannot carry it) with a tolerance of 5 standard errors computed from
that run, and against a reference from outside the engine where one exists: closed forms of
the agent's work, the token bucket's capacity, Little's law, a fluid model of an overloaded
queue. Trials of a batch with no shared resource are independent, so binomial and ``s/sqrt N``
errors hold; a workload's trials share queues, so its errors come from the spread of whole
replications (docs/model.md section 7), as the engine reports them. Exact claims (``relsim
evaluate``) are in test_scenario_files.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from relsim import Scenario, evaluate, formulas, simulate_timeline
from relsim.scenario import time_model

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


def _agree(stated: float, run, key: str) -> bool:
    """The comment's figure (from a run at seed 1) and this run's estimate differ by less
    than 5 combined standard errors: this run's, and the stated one's taken as equal."""
    estimate, _ = run.quantity(key)
    return abs(stated - estimate) <= 5 * math.sqrt(2) * run.standard_errors[key]


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


#: The comment's table: agents -> (throughput_per_hour, mean rate-limit wait in seconds,
#: bottleneck), from 5 replications of the 2,000-task backlog at seed 1.
FLEET_TABLE = {20: (87.2, 0, "agents"), 40: (173.2, 0, "agents"), 60: (257.8, 0, "agents"),
               80: (270.8, 221, "tpm"), 100: (271.4, 478, "tpm")}


@pytest.mark.slow
@pytest.mark.parametrize("agents", [40, 100])
def test_fleet_throughput_grows_to_the_token_bucket_knee(agents):
    # one fleet below the knee and one past it, 4 replications of the backlog at seed 2
    work = _fleet_work()
    throughput, wait, bottleneck = FLEET_TABLE[agents]
    run = simulate_timeline(_with(_data(FLEET), fleet={"agents": agents}), replications=4, seed=2)
    assert run.tasks == 2000 and run.warmup == 0  # the backlog: a batch has no warm-up
    assert _agree(throughput, run, "throughput_per_hour")
    assert run.bottleneck == bottleneck
    # the tpm bucket's capacity (it starts with one minute's allowance) is never exceeded
    assert run.throughput_per_hour <= work["bound"] * (1 + 60 / run.makespan)
    assert run.utilisation["rpm"] < 0.25  # 274 tasks an hour are 125 calls a minute of 600
    if wait == 0:
        assert run.wait["rate_limit"] < 1.0  # below the knee the bucket never empties
        assert run.throughput_per_hour <= agents * work["per_agent"] * 1.01
        assert run.utilisation["agents"] > 0.95 and run.utilisation["tpm"] < 0.9
    else:
        assert _agree(wait, run, "wait_rate_limit")
        # Little's law above the knee: each agent is held agents / bound hours per task,
        # the service time and the wait at the bucket
        little = agents * 3600 / work["bound"] - work["service"]
        assert abs(run.wait["rate_limit"] - little) < 0.1 * little
        assert run.utilisation["tpm"] > 0.95
    # success does not move with the fleet (the same seeds make the same decisions), and
    # it is the agent's own
    assert _within(work["success"], run.success, run.standard_errors["success"])
    assert not _within(work["success"] - 0.02, run.success, run.standard_errors["success"])


@pytest.mark.slow
def test_fleet_rpm_never_binds_and_tpm_does():
    data = _with(_data(FLEET), fleet={"agents": 100, "tasks": 400})
    run = simulate_timeline(data, replications=2, seed=3)
    no_rpm = simulate_timeline(_with(data, resources={"rpm": None}), replications=2, seed=3)
    for key in ("duration_mean", "duration_p90", "wait_rate_limit", "throughput_per_hour"):
        assert no_rpm.replication_values[key] == run.replication_values[key]  # rpm held no call back
    no_tpm = simulate_timeline(_with(data, resources={"tpm": None, "tokens": None}),
                               replications=2, seed=3)
    assert no_tpm.wait["rate_limit"] == 0 < run.wait["rate_limit"]
    assert no_tpm.makespan < 0.8 * run.makespan
    # shorter prompts move the knee: half the tokens, twice the bucket's capacity in tasks
    short = simulate_timeline(_with(data, resources={"tokens": 4000}), replications=2, seed=3)
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


#: reviewers -> (duration p90 and mean reviewer wait, seconds; utilisation; the SLA's verdict)
SUPPORT_TABLE = {2: (2215, 716, 0.85, "missed"), 3: (662, 59, 0.57, "met"),
                 4: (544, 9, 0.43, "met")}


@pytest.mark.slow
@pytest.mark.parametrize("reviewers", sorted(SUPPORT_TABLE))
def test_support_reviewers_table_and_the_sla(reviewers):
    p90, wait, utilisation, verdict = SUPPORT_TABLE[reviewers]
    data = _with(_data(SUPPORT), resources={"reviewers": reviewers})
    assert data["targets"] == {"duration_p90": SLA}
    run = simulate_timeline(data, replications=8, seed=2)
    assert _agree(p90, run, "duration_p90") and _agree(wait, run, "wait_reviewers")
    # the SLA: 2 reviewers miss it, 3 and 4 meet it, each surely (its interval is clear of it)
    assert run.targets["duration_p90"]["status"] == verdict and run.bottleneck == "reviewers"
    # utilisation: the offered load over the reviewers (a closed form), within the run's error
    load = _review_load()["load"] / reviewers
    assert round(utilisation, 2) == round(load, 2)
    for key in ("utilisation_reviewers", "offered_load_reviewers"):
        assert _within(load, run.quantity(key)[0], run.standard_errors[key]), key
    assert not _within(1.1 * load, run.utilisation["reviewers"], run.standard_errors["utilisation_reviewers"])
    assert run.warnings == ()


@pytest.mark.slow
def test_one_reviewer_never_keeps_up():
    # fluid model of an overloaded queue: the backlog grows at (load - 1) reviewer-hours an
    # hour, so a ticket arriving at hour t waits about (load - 1) t; of the tickets after the
    # warm-up (100..999 of 1000, arriving at 30 an hour) the 90th percentile is ticket 910
    load = _review_load()["load"]
    fluid = (load - 1) * (100 + 0.9 * 900) / 30 * 3600
    run = simulate_timeline(_with(_data(SUPPORT), resources={"reviewers": 1}), replications=6, seed=2)
    se = run.standard_errors["duration_p90"]
    assert _within(fluid, run.duration["p90"], se) and round(fluid / 3600) == 21
    # negative control: the fluid model of a pool with 30% more capacity (load 1.3) is rejected
    assert not _within((load / 1.3 - 1) * (100 + 0.9 * 900) / 30 * 3600, run.duration["p90"], se)
    assert run.utilisation["reviewers"] > 0.999
    # the engine says so: the offered load is 1.7 reviewers' work, and waits grow
    assert round(run.offered_load["reviewers"], 1) == 1.7
    assert any(w.startswith("reviewers: offered load 1.") for w in run.warnings)
    assert any(w.startswith("waits grow within a replication") for w in run.warnings)


def test_past_80_percent_the_wait_explodes():
    # "queueing, not slow reviews": the same reviews, 2 reviewers instead of 3, wait 5x longer
    data = _with(_data(SUPPORT), fleet={"tasks": 600})
    waits = {c: simulate_timeline(_with(data, resources={"reviewers": c}), replications=2, seed=4)
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
    assert not time_model(Scenario.from_dict(data)).workload  # independent trials: --trials
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
