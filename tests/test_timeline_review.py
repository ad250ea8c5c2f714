"""Regression tests from the timeline engine's correctness review (docs/model.md section 7).

Each test fails on the code before its fix; expected values come from the contract, worked
by hand, never from the engine.
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
