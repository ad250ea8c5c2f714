"""The simpy path's own plumbing against the library it stands in for: the FIFO slot pool
(``Slots``) against ``simpy.Resource``, and the block seeding of trials against numpy's
``SeedSequence`` (the same seeds, so the same runs as seeding trial by trial)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import simpy

from relsim import simulate_timeline
from relsim.timeline import _driver
from relsim.timeline._seeds import trial_seeds
from relsim.timeline._trial import Slots


def _workload(use_slots: bool, seed: int, capacity: int = 3, users: int = 60) -> list[tuple]:
    """Users arrive (half of the gaps whole seconds, so that things meet), queue FIFO for one
    unit, hold it, give it back; some give up while queued (interrupted at a patience, now
    and then at the very instant a unit is handed to them). Returns (user, what, time)."""
    draw = random.Random(seed)
    env = simpy.Environment()
    pool = Slots(env, capacity) if use_slots else simpy.Resource(env, capacity)
    seen: list[tuple] = []
    plans = []
    t = 0.0
    for u in range(users):
        t += draw.expovariate(1.0) if draw.random() < 0.5 else float(draw.choice([0, 1, 2]))
        hold = float(draw.choice([1, 2, 3])) if draw.random() < 0.5 else draw.expovariate(0.4)
        patience = draw.choice([None, 0.5, 1.0, 2.0])  # whole numbers meet whole holds
        plans.append((t, hold, patience))

    def user(u: int, hold: float):
        if use_slots:
            request = pool.take()
            try:
                if request is not None:
                    yield request
            except simpy.Interrupt:
                pool.cancel(request)
                seen.append((u, "gave up", env.now))
                return
            seen.append((u, "got", env.now))
            yield env.timeout(hold)
            pool.give()
        else:
            request = pool.request()
            try:
                yield request
            except simpy.Interrupt:
                request.cancel()
                pool.release(request)
                seen.append((u, "gave up", env.now))
                return
            seen.append((u, "got", env.now))
            yield env.timeout(hold)
            pool.release(request)
        seen.append((u, "gave back", env.now))

    def arrive(u: int, at: float, hold: float, patience: float | None):
        yield env.timeout(at)
        process = env.process(user(u, hold))
        if patience is not None:
            yield env.timeout(patience)
            if process.is_alive and not any(s[0] == u for s in seen):
                process.interrupt()

    for u, (at, hold, patience) in enumerate(plans):
        env.process(arrive(u, at, hold, patience))
    env.run()
    return seen


@pytest.mark.parametrize("seed", [1, 2, 10, 13])
def test_slots_grant_as_simpy_resource_does(seed):
    # simpy.Resource is the reference: the same users get a unit at the same times, the same
    # ones give up (seeds 10 and 13 have one give up at the very instant a unit is handed to
    # it, which must pass the unit on)
    reference = _workload(False, seed)
    assert sorted(reference, key=lambda s: (s[2], s[0])) == sorted(
        _workload(True, seed), key=lambda s: (s[2], s[0]))
    assert any(what == "gave up" for _, what, _ in reference)  # the queue was left
    assert sum(what == "got" for _, what, _ in reference) > 30


def test_slots_negative_control_capacity_matters():
    # a pool of another size grants at other times: the comparison above can fail
    assert sorted(_workload(False, 1, capacity=3)) != sorted(_workload(True, 1, capacity=2))


def test_slots_fifo_and_cancel_after_hand_over():
    env = simpy.Environment()
    pool = Slots(env, 1)
    assert pool.take() is None and pool.free == 0
    first, second = pool.take(), pool.take()
    assert first is not None and second is not None
    pool.give()  # handed to the longest waiter
    assert first.triggered and not second.triggered
    pool.cancel(first)  # stopped in that instant: the unit goes on to the next
    assert second.triggered and pool.free == 0
    pool.give()
    assert pool.free == 1 and not pool.queue


@pytest.mark.parametrize("entropy, spawn_key", [
    (1, ()), (0, ()), (7, (3,)), (2**127 + 12345, ()), (123456789012345678901234567890, (4, 9)),
    ([1, 2, 3], ()), ([5, 2**40], (1,)),
])
def test_trial_seeds_are_numpys_seed_sequence(entropy, spawn_key):
    root = np.random.SeedSequence(entropy, spawn_key=spawn_key)
    for first, count in ((0, 300), (4096, 50)):
        seeds = trial_seeds(root, first, count)
        assert seeds is not None and len(seeds) == count
        for k in (first, first + 1, first + 17, first + count - 1):
            sequence = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, 0, k))
            words = sequence.generate_state(8)
            assert seeds[k - first] == (int.from_bytes(words[:4].tobytes(), "little"),
                                        int.from_bytes(words[4:].tobytes(), "little"))


def test_trial_seeds_leave_what_they_do_not_cover():
    root = np.random.SeedSequence(1)
    assert trial_seeds(root, 2**32 - 1, 2) is None  # an index past one 32-bit word
    assert trial_seeds(np.random.SeedSequence(np.array([1, 2], dtype=np.uint32)), 0, 3) is not None


SHARED = {
    "steps": 4, "p": 0.85, "verifier": {"miss": 0.2}, "retries": {"per_step": 2},
    "correlation": {"task_sd": 0.4},
    "timing": {"attempt": {"median": 5, "p95": 20}, "verify": 1, "deadline": 120},
    "fleet": {"arrivals": "poisson", "rate_per_hour": 900, "agents": 5, "tasks": 120},
    "resources": {"llm_concurrency": 3, "rpm": 120},
    "infra": {"crash_per_hour": 1.0},
}


def test_block_seeds_give_the_run_seeding_trial_by_trial_gives(monkeypatch):
    fast = simulate_timeline(SHARED, replications=2, seed=11, record=120)
    monkeypatch.setattr(_driver, "trial_seeds", lambda root, first, count: None)
    slow = simulate_timeline(SHARED, replications=2, seed=11, record=120)
    assert fast.to_dict() == slow.to_dict()
    assert fast.events.equals(slow.events)
    other = simulate_timeline(SHARED, replications=2, seed=12)
    assert other.to_dict() != slow.to_dict()  # the seed matters: the comparison can fail
