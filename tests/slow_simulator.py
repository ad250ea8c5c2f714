"""A slow, obvious simulator of MODEL.md section 3, written straight from its pseudo-code.

It shares no code with ``relsim.montecarlo``: plain Python, separate Bernoulli draws from a
numpy ``Generator`` (no joint four-way draw, no integer thresholds, no xoshiro), so when the
fast engine and this one agree statistically, neither draw encoding nor kernel structure is
hiding a bug. It reads the scenario only through its user-facing fields.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from relsim.scenario import Scenario


@dataclass
class Trial:
    outcome: str  # "success", "silent_failure" or "detected_failure"
    attempts: int
    cost: float


def _per_step(value, steps):
    return list(value) if isinstance(value, tuple) else [value] * steps


def _shift(p: float, x: float) -> float:
    if p in (0.0, 1.0):
        return p
    return 1.0 / (1.0 + math.exp(-(math.log(p / (1.0 - p)) + x)))


def one_trial(s: Scenario, rng: np.random.Generator) -> Trial:
    n = s.steps
    p = _per_step(s.p, n)
    verifier = s.verifier
    miss = _per_step(verifier.miss, n) if verifier else None
    false_reject = _per_step(verifier.false_reject, n) if verifier else None
    retries = s.retries
    if retries is None:
        per_step = [0] * n
        total = math.inf
    else:
        per_step = _per_step(retries.per_step if retries.per_step is not None else retries.total, n)
        total = math.inf if retries.total is None else retries.total
    checks = s.checkpoints
    positions = set()
    if checks is not None:
        positions.update(checks.at)
        if checks.every is not None:
            positions.update(range(checks.every, n + 1, checks.every))
        if checks.final:
            positions.add(n)
    corr = s.correlation
    confusion = corr.confusion
    attempt_cost = _per_step(s.cost.attempt, n)

    z = rng.standard_normal()  # task effect, once per trial
    confused = False
    i = 0
    seg_start = 0
    seg_tainted = doomed = False
    retries_used = rollbacks_used = 0
    cost = 0.0
    attempts = 0
    while True:
        if i == n:
            outcome = "silent_failure" if (seg_tainted or doomed) else "success"
            return Trial(outcome, attempts, cost)
        u = rng.standard_normal()  # step effect, shared by the retries of this execution
        p_step = _shift(p[i], corr.task_sd * z + corr.step_sd * u)
        j = 0
        while True:
            pe = p_step * (confusion.factor if confused else 1.0)
            correct = rng.random() < pe
            cost += attempt_cost[i] + s.cost.verify
            attempts += 1
            if confusion is not None:
                if not correct and not confused:
                    confused = rng.random() < confusion.enter
                elif correct and confused:
                    confused = not (rng.random() < confusion.recover)
            if verifier is None:
                accepted = True
            else:
                accepted = rng.random() < ((1.0 - false_reject[i]) if correct else miss[i])
            if accepted:
                seg_tainted = seg_tainted or not correct
                i += 1
                break
            if j < per_step[i] and retries_used < total:
                j += 1
                retries_used += 1
                continue
            return Trial("detected_failure", attempts, cost)
        if i in positions:
            cost += s.cost.checkpoint
            if rng.random() < (checks.detect if seg_tainted else checks.false_alarm):
                if rollbacks_used == checks.rollbacks:
                    return Trial("detected_failure", attempts, cost)
                rollbacks_used += 1
                cost += s.cost.rollback
                i = seg_start
                seg_tainted = False
                confused = False
                continue
            doomed = doomed or seg_tainted
            seg_tainted = False
            seg_start = i


def simulate_slowly(s: Scenario, trials: int, seed: int) -> list[Trial]:
    """``trials`` independent trials of ``s``."""
    rng = np.random.default_rng(seed)
    return [one_trial(s, rng) for _ in range(trials)]
