"""The timeline engine's queues against times worked by hand (docs/model.md section 7): the
rate-limit gate (rpm and tpm buckets, at a late clock too) and the agent queue at a deadline.

Expected values come from the contract, worked by hand, never from the engine.
"""

from __future__ import annotations

import simpy

from relsim.timeline._buckets import RateGate


def _served_times(start: float, rpm: float, calls: int, max_events: int = 10_000) -> list[float]:
    """Times at which ``calls`` back-to-back calls of one caller pass an rpm gate whose clock
    starts at ``start``; the event loop is bounded so that a livelock fails instead of hanging."""
    env = simpy.Environment(initial_time=start)
    gate = RateGate(env, rpm, None)
    served: list[float] = []

    def caller():
        for _ in range(calls):
            waiting = gate.take(0.0)
            if waiting is not None:
                yield waiting
            served.append(env.now)

    env.process(caller())
    events = 0
    while env.peek() != float("inf") and events < max_events:
        env.step()
        events += 1
    return served


def test_rpm_gate_serves_at_a_late_clock():
    # A full bucket of 7 lets 7 calls start at once; then one call per 60/7 s (the refill
    # rate). At a clock of 1.3e10 s (a long Poisson run) a refill timer can land a rounding
    # error short, and a timer shorter than the clock's resolution does not move it: the gate
    # must still serve the call its timer was armed for.
    start, rpm = 1.3e10, 7.0
    served = _served_times(start, rpm, 9)
    expected = [start] * 7 + [start + 60.0 / rpm, start + 120.0 / rpm]
    assert len(served) == 9
    resolution = 4e-6  # two ulps of 1.3e10
    assert all(abs(a - b) <= resolution for a, b in zip(served, expected))


def test_rpm_gate_negative_control_a_wrong_rate_is_seen():
    # The same check with the refill of rpm = 8 must not match the times of rpm = 7.
    start = 1.0e6
    served = _served_times(start, 8.0, 9)
    expected = [start] * 7 + [start + 60.0 / 7.0, start + 120.0 / 7.0]
    assert len(served) == 9
    assert not all(abs(a - b) <= 4e-6 for a, b in zip(served, expected))


def test_a_trial_still_queued_for_an_agent_at_its_deadline_makes_no_attempt():
    # One agent, 8 trials at 0, each one 10 s attempt, deadline 25 s (worked by hand): trial 0
    # runs 0-10, trial 1 10-20 (both succeed), trial 2 starts at 20 and is stopped at 25 in
    # its attempt. Trials 3-7 are still in the agent queue at 25, their deadline: each leaves
    # it as a timeout with no attempts (docs/model.md section 7; README "Deadline"), so
    # 3 attempts in all and every timeout lasts 25 s.
    from relsim import simulate_timeline

    scenario = {"steps": 1, "p": 1.0, "timing": {"attempt": 10, "deadline": 25},
                "fleet": {"agents": 1, "tasks": 8}}
    out = simulate_timeline(scenario, replications=2, seed=1, record=8)
    assert out.success == 2 / 8 and out.timeout == 6 / 8
    assert out.expected_attempts == 3 / 8
    assert out.expected_cost == 3 / 8  # one unit per attempt
    per_trial = out.events[out.events.kind == "attempt"].groupby("trial").size()
    assert per_trial.to_dict() == {0: 1, 1: 1, 2: 1}
    assert out.duration["mean"] == (10 + 20 + 6 * 25) / 8
    # control: with a deadline of 26 s trial 2 is still stopped, and the others still queue
    out = simulate_timeline({**scenario, "timing": {"attempt": 10, "deadline": 26}},
                            replications=2, seed=1)
    assert out.expected_attempts == 3 / 8 and out.duration["mean"] == (10 + 20 + 6 * 26) / 8


def _replay_gate(calls, rpm, tpm, tokens):
    """docs/model.md section 7's buckets replayed by hand: calls served FIFO by request time,
    each at the first moment both buckets (full at 0, capacity one minute's allowance,
    continuous refill) hold 1 call and its tokens. Returns the start times."""
    calls_level, token_level, last, previous = float(rpm), float(tpm), 0.0, 0.0
    starts = []
    for requested, step in calls:
        t = max(requested, previous)
        c = min(rpm, calls_level + (t - last) * rpm / 60)
        k = min(tpm, token_level + (t - last) * tpm / 60)
        t += max(0.0, (1 - c) * 60 / rpm, (tokens[step - 1] - k) * 60 / tpm)
        calls_level = min(rpm, calls_level + (t - last) * rpm / 60) - 1
        token_level = min(tpm, token_level + (t - last) * tpm / 60) - tokens[step - 1]
        last = previous = t
        starts.append(t)
    return starts


def test_rate_gate_matches_the_buckets_replayed_by_hand():
    # Poisson arrivals, retries and model-graded verifications (each an LLM call with the
    # step's tokens): every call's start, read from the event log, is where a hand replay of
    # the two buckets puts it. Control: the replay with a wrong tpm disagrees.
    from relsim import simulate_timeline

    rpm, tpm, tokens = 20.0, 200.0, [30.0, 70.0, 10.0]
    scenario = {"steps": 3, "p": 0.7, "verifier": {"miss": 0.1}, "retries": {"per_step": 2},
                "timing": {"attempt": {"mean": 3}, "verify": 1},
                "fleet": {"arrivals": "poisson", "rate_per_hour": 1500, "tasks": 120, "warmup": 0},
                "resources": {"rpm": rpm, "tpm": tpm, "tokens": tokens,
                              "verifier_calls_llm": True, "llm_concurrency": 2}}
    out = simulate_timeline(scenario, replications=2, seed=5, record=120)  # the first one's log
    events = out.events[out.events.resource == "rate_limit"]
    requested: dict[int, float] = {}
    calls = []
    for row in events.itertuples():
        if row.kind == "request":
            requested[row.trial] = row.time
        else:
            calls.append((requested.pop(row.trial, row.time), int(row.step), row.time))
    calls.sort()
    assert len(calls) > 300 and out.wait["rate_limit"] > 60  # the buckets do bind
    engine = [c[2] for c in calls]
    replay = _replay_gate([c[:2] for c in calls], rpm, tpm, tokens)
    assert max(abs(a - b) for a, b in zip(engine, replay)) < 1e-6
    wrong = _replay_gate([c[:2] for c in calls], rpm, 1.1 * tpm, tokens)
    assert max(abs(a - b) for a, b in zip(engine, wrong)) > 1.0

