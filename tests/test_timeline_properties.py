"""Laws of the timeline engine on random small fleets (hypothesis), checked from its event log:
no trial is lost, no resource runs over its capacity, no LLM call starts without rate budget."""

from __future__ import annotations

from collections import defaultdict

import pytest
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relsim import Scenario, simulate_timeline
from relsim.scenario import time_model

TRIALS = 24
SHARES = ("success", "silent_failure", "detected_failure", "timeout", "infra_failure")


def durations() -> st.SearchStrategy:
    seconds = st.sampled_from([0, 1, 2.5, 10])
    return st.one_of(
        seconds,
        st.builds(lambda m, k: {"median": m, "p95": m * k}, st.sampled_from([1, 5]), st.sampled_from([1, 3])),
        st.builds(lambda m: {"mean": m}, st.sampled_from([1, 4])),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    steps = draw(st.integers(1, 4))
    s: dict = {"steps": steps, "p": draw(st.sampled_from([0.5, 0.8, 1.0]))}
    verified = draw(st.booleans())
    if verified:
        s["verifier"] = {"miss": draw(st.sampled_from([0.0, 0.3])), "false_reject": 0.1}
        s["retries"] = {"per_step": draw(st.integers(0, 2))}
    human = False
    if draw(st.booleans()):
        human = draw(st.booleans())
        s["checkpoints"] = {"final": True, "detect": 0.8, "rollbacks": draw(st.integers(0, 1)), "human": human}
    timing: dict = {"attempt": draw(durations())}
    if verified:
        timing["verify"] = draw(durations())
        if draw(st.booleans()):
            timing["backoff"] = {"base": 1, "factor": 2, "max": 4, "jitter": draw(st.booleans())}
    if "checkpoints" in s and not human:
        timing["checkpoint"] = draw(durations())
    if draw(st.booleans()):
        timing["deadline"] = draw(st.sampled_from([5, 20, 60]))
    s["timing"] = timing
    fleet: dict = {}
    if draw(st.booleans()):
        fleet["agents"] = draw(st.integers(1, 3))
    if draw(st.booleans()):
        fleet["arrivals"] = "poisson"
        fleet["rate_per_hour"] = draw(st.sampled_from([360, 3600]))
    # a workload's replication runs TRIALS tasks, none left out: the log holds them all
    fleet["tasks"] = TRIALS
    if "arrivals" in fleet:
        fleet["warmup"] = 0
    s["fleet"] = fleet
    resources: dict = {}
    if draw(st.booleans()):
        resources["llm_concurrency"] = draw(st.integers(1, 2))
    if draw(st.booleans()):
        resources["rpm"] = draw(st.sampled_from([6, 30]))
    if draw(st.booleans()):
        resources["tpm"] = 600
        resources["tokens"] = draw(st.sampled_from([50, 300]))
    if verified and draw(st.booleans()):
        resources["verifier_calls_llm"] = True
    if human:
        resources["reviewers"] = draw(st.integers(1, 2))
        resources["review"] = draw(durations())
    if resources:
        s["resources"] = resources
    if draw(st.booleans()):
        s["infra"] = {"crash_per_hour": draw(st.sampled_from([10, 200]))}
    return s


def _max_in_use(events, resource: str) -> int:
    """Most holders of ``resource`` at once, releases at an instant counted before grants."""
    ev = events[(events.resource == resource) & events.kind.isin(["acquire", "release"])]
    order = np.lexsort(((ev.kind == "acquire").to_numpy(), ev.time.to_numpy()))
    level = peak = 0
    for kind in ev.kind.to_numpy()[order]:
        level += 1 if kind == "acquire" else -1
        peak = max(peak, level)
    return peak


def _rate_budget_never_short(events, s: Scenario) -> bool:
    """Replay the buckets (full at 0, refilled at limit/60 per second) over the calls' start
    times: each call must find 1 call and its tokens in them."""
    res = s.resources
    calls = events[(events.kind == "acquire") & (events.resource == "rate_limit")]
    calls = calls.iloc[np.argsort(calls.time.to_numpy(), kind="stable")]
    tokens = np.broadcast_to(np.asarray(res.tokens if res.tokens is not None else 0.0), (s.steps,))
    for limit, need_of in ((res.rpm, lambda step: 1.0), (res.tpm, lambda step: tokens[step - 1])):
        if limit is None:
            continue
        level, last = float(limit), 0.0
        for time, step in zip(calls.time.to_numpy(), calls.step.to_numpy()):
            level = min(limit, level + (time - last) * limit / 60.0)
            last = time
            need = need_of(int(step))
            if level < need - 1e-6 * limit:
                return False
            level -= need
    return True


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.integers(0, 2**32 - 1))
def test_random_fleets_keep_the_laws(data, seed):
    s = Scenario.from_dict(data)
    if time_model(s).workload:  # docs/model.md section 7: replications of the workload
        out = simulate_timeline(s, replications=2, seed=seed, record=TRIALS)
        assert out.trials == 2 * TRIALS and out.replications == 2
        for r in range(2):
            shares = sum(out.replication_values[key][r] for key in SHARES)
            assert abs(shares - 1.0) < 1e-12
    else:
        out = simulate_timeline(s, TRIALS, seed=seed, record=TRIALS)
        assert out.trials == TRIALS
    ev = out.events
    # no trial lost: the five shares sum to 1 and every trial has one arrival and one end
    shares = sum(getattr(out, key) for key in SHARES)
    assert abs(shares - 1.0) < 1e-12
    assert sorted(ev[ev.kind == "end"].trial) == list(range(TRIALS))
    assert sorted(ev[ev.kind == "arrive"].trial) == list(range(TRIALS))
    # no resource over its capacity; everything acquired is released by the trial's end
    fleet, res = s.fleet, s.resources
    limits = {"agents": fleet and fleet.agents, "llm": res and res.llm_concurrency,
              "reviewers": res and res.reviewers}
    for resource, capacity in limits.items():
        if capacity:
            assert _max_in_use(ev, resource) <= capacity, resource
        held = ev[ev.resource == resource]
        assert (held.kind == "acquire").sum() == (held.kind == "release").sum(), resource
    # no call without rate budget
    if res is not None and (res.rpm is not None or res.tpm is not None):
        assert _rate_budget_never_short(ev, s)
    # a deadline is never overrun, and a crash only happens with a crash clock
    if s.timing.deadline is not None:
        assert out.duration["p99"] <= s.timing.deadline + 1e-9
    else:
        assert out.timeout == 0.0
    if s.infra is None:
        assert out.infra_failure == 0.0
    # per trial, events run forward in time
    by_trial = defaultdict(list)
    for trial, time in zip(ev.trial.to_numpy(), ev.time.to_numpy()):
        by_trial[trial].append(time)
    assert all(np.all(np.diff(times) >= 0) for times in by_trial.values())


def test_the_budget_replay_sees_a_call_without_budget():
    # negative control for the replay: a log claiming 61 calls at once under rpm = 60 fails
    import pandas as pd

    s = Scenario.from_dict({"steps": 1, "p": 1.0, "resources": {"rpm": 60}})
    calls = pd.DataFrame({"kind": "acquire", "resource": "rate_limit", "time": [0.0] * 61, "step": 1})
    assert not _rate_budget_never_short(calls, s)
    assert _rate_budget_never_short(calls.iloc[:60], s)


def test_the_capacity_replay_sees_an_overrun():
    import pandas as pd

    ev = pd.DataFrame({"resource": "llm", "kind": ["acquire", "acquire", "release", "release"],
                       "time": [0.0, 1.0, 2.0, 3.0]})
    assert _max_in_use(ev, "llm") == 2
