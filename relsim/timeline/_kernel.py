r"""The timeline's compiled kernel: independent trials of docs/model.md sections 3 and 7 at once.

Private; :mod:`relsim.timeline._fast` decides when it runs, builds its inputs and seeds it.
A trial that shares nothing with the others (batch arrivals, no agent pool, LLM slots, rate
limits or reviewers) needs no event loop: its clock is the sum of its own timed actions, and
the deadline and the crash clock are two times to compare each action's end with. So one
numba loop draws section 3's decisions and section 7's durations together, from one
xoshiro256++ stream (``relsim.montecarlo._draws``: the same generator, Bernoulli thresholds
and ziggurat normals as the Monte Carlo kernels), and writes each trial's outcome, attempts,
cost and duration: the per-trial tally the simpy path fills.

The simpy path's order of events at equal times is kept exactly (it matters with constant
durations, whose sums can meet the deadline on the dot). The crash clock and the deadline are
armed before the trial's first action, so at a tie they fire before the action's own end, the
crash first: a crash at an action's end interrupts it; a deadline at an action's end lets the
trial go on until it would start its next timed action (booking that action's cost, as the
simpy path books an attempt or a check as it starts), and it ends there as ``timeout``
unless it ends by itself first. Compiled with ``cache=True``; numba's cache is kept per file,
so after editing ``relsim/montecarlo/_draws.py`` or ``_kernels.py`` touch this one too.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from relsim.montecarlo._draws import (
    _INV_SCALE,
    _LOW_32,
    _SHIFT_11,
    _SHIFT_32,
    _expit,
    _four_way,
    _next,
    _normal,
    threshold,
)
from relsim.montecarlo._kernels import _fixed_thresholds
from relsim.montecarlo._layout import GENERATOR_LANES

# Outcome codes: relsim.timeline._trial's (its module imports nothing numba can freeze).
_SUCCESS, _SILENT, _DETECTED, _TIMEOUT, _INFRA = 0, 1, 2, 3, 4
_GOING = -1  # the trial has not ended

# Duration kinds (``_fast.duration_code``): constant ``a``; lognormal exp(a + b z); exponential of mean ``a``.
CONSTANT, LOGNORMAL, EXPONENTIAL = 0, 1, 2


@numba.njit(inline="always")
def _uniform(s0, s1, s2, s3):
    """A uniform on [0, 1) with 53 bits: (value, new state)."""
    x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
    return np.int64(x >> _SHIFT_11) * _INV_SCALE, s0, s1, s2, s3


@numba.njit(inline="always")
def _duration(kind, a, b, s0, s1, s2, s3):
    """One duration of kind ``kind`` (see ``CONSTANT``): (seconds, new state)."""
    if kind == CONSTANT:
        return a, s0, s1, s2, s3
    if kind == LOGNORMAL:
        z, s0, s1, s2, s3 = _normal(s0, s1, s2, s3)
        return math.exp(a + b * z), s0, s1, s2, s3
    u, s0, s1, s2, s3 = _uniform(s0, s1, s2, s3)
    return -math.log1p(-u) * a, s0, s1, s2, s3


@numba.njit(inline="always")
def backoff_wait(base, factor, cap, retry):
    """``relsim.scenario.time_tables.backoff_wait`` (``cap`` inf: none), the same float
    operations in the same order, so that a constant backoff meets a deadline as it does
    there."""
    exponent = retry - 1
    if base == 0.0 or factor == 1.0 or exponent <= 0:
        wait = base
    elif cap < math.inf and (cap <= base or exponent * math.log(factor) > math.log(cap / base) + 1.0):
        return cap
    else:
        wait = base * factor ** float(exponent)
    return min(cap, wait)


@numba.njit(inline="always")
def _advance(now, seconds, crash_at, deadline, overdue):
    """A timed action of ``seconds`` (> 0) from ``now``: (time after it, how the trial ended
    or ``_GOING``, overdue).

    ``overdue``: the deadline fell exactly at the end of an earlier action, so this one is
    not started. Ties go as the simpy path's events do (the crash clock, then the deadline,
    then the action's end)."""
    if overdue:
        return now, _TIMEOUT, overdue
    end = now + seconds
    if crash_at <= end and crash_at <= deadline:
        return crash_at, _INFRA, overdue
    if deadline < end:
        return deadline, _TIMEOUT, overdue
    return end, _GOING, deadline == end


@numba.njit(nogil=True, cache=True, error_model="numpy")
def run_trials(state, design, timing, outcome_out, attempts_out, cost_out, duration_out):
    r"""Run ``len(outcome_out)`` independent trials; write each one's outcome code (as
    ``relsim.timeline._trial``), attempts, cost (in the model's cost unit) and duration.

    Draws come from the first stream of ``state`` (a block's generator, ``_layout``'s word
    layout), updated in place. Per trial: the crash clock (when ``crash_rate > 0``), the task
    effect; per step execution its step effect; per attempt one 64-bit output (the joint
    outcome of the attempt and the verdict in its top half, the confusion transition in its
    bottom half, as ``run_general``), then the attempt's duration and the verification's; a
    retry's jitter; at a checkpoint one output for the check, then its duration. Every
    probability is resolved to within :math:`2^{-32}`.

    Parameters
    ----------
    state : (STATE_WORDS,) uint64
    design : relsim.montecarlo._layout.Design
    timing : relsim.timeline._fast.Timing
    outcome_out : (trials,) int8
    attempts_out : (trials,) int64
    cost_out, duration_out : (trials,) float64
    """
    s0 = state[0]
    s1 = state[GENERATOR_LANES]
    s2 = state[2 * GENERATOR_LANES]
    s3 = state[3 * GENERATOR_LANES]
    logit_p = design.logit_p
    p_is_fixed = design.p_is_fixed
    miss = design.miss
    false_reject = design.false_reject
    per_step = design.per_step
    total_retries = design.total_retries
    attempt_cost = design.attempt_cost
    is_checkpoint = design.is_checkpoint
    detect_threshold = threshold(design.detect)
    false_alarm_threshold = threshold(design.false_alarm)
    rollbacks = design.rollbacks
    checkpoint_cost = design.checkpoint_cost
    rollback_cost = design.rollback_cost
    has_confusion = design.has_confusion
    transition = np.empty(2, dtype=np.int64)
    transition[0] = threshold(design.enter)
    transition[1] = threshold(design.recover)
    factor = design.factor
    task_sd = design.task_sd
    step_sd = design.step_sd
    attempt_kind = timing.attempt_kind
    attempt_a = timing.attempt_a
    attempt_b = timing.attempt_b
    verify_kind = timing.verify_kind
    verify_a = timing.verify_a
    verify_b = timing.verify_b
    checkpoint_kind = timing.checkpoint_kind
    checkpoint_a = timing.checkpoint_a
    checkpoint_b = timing.checkpoint_b
    has_backoff = timing.has_backoff
    backoff_base = timing.backoff_base
    backoff_factor = timing.backoff_factor
    backoff_cap = timing.backoff_cap
    jitter = timing.jitter
    deadline = timing.deadline
    crash_rate = timing.crash_rate
    steps = logit_p.shape[0]
    # Each step's thresholds, focused [i, 0] and confused [i, 1], kept as run_general keeps
    # them: fixed without random effects, else per execution (a step effect) or per trial
    # (a task effect alone, while shifted_at[i] == trial_stamp).
    thresholds = _fixed_thresholds(design)
    shifted = np.empty(steps)
    confused_ready = np.empty(steps, dtype=np.bool_)
    shifted_at = np.empty(steps, dtype=np.int64)
    for i in range(steps):
        confused_ready[i] = True
        shifted_at[i] = -1
    for trial in range(outcome_out.shape[0]):
        crash_at = math.inf
        if crash_rate > 0.0:
            u, s0, s1, s2, s3 = _uniform(s0, s1, s2, s3)
            crash_at = -math.log1p(-u) / crash_rate
        task_effect = 0.0
        if task_sd > 0.0:
            z, s0, s1, s2, s3 = _normal(s0, s1, s2, s3)
            task_effect = task_sd * z
        now = 0.0
        overdue = False
        i = 0
        seg_start = 0
        seg_tainted = False
        doomed = False
        confused = False
        retries_used = 0
        rollbacks_used = 0
        attempts = 0
        cost = 0.0
        ended = _GOING
        while True:
            if i == steps:
                ended = _SILENT if (seg_tainted or doomed) else _SUCCESS
                break
            shifted_here = not p_is_fixed[i] and (task_sd > 0.0 or step_sd > 0.0)
            if shifted_here and (step_sd > 0.0 or shifted_at[i] != trial):
                shift = task_effect
                if step_sd > 0.0:
                    z, s0, s1, s2, s3 = _normal(s0, s1, s2, s3)
                    shift += step_sd * z
                shifted[i] = _expit(logit_p[i] + shift)
                t1, t2, t3 = _four_way(shifted[i], miss[i], false_reject[i])
                thresholds[i, 0, 0] = t1
                thresholds[i, 0, 1] = t2
                thresholds[i, 0, 2] = t3
                confused_ready[i] = False
                shifted_at[i] = trial
            retries_here = 0
            while True:
                x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                if confused and not confused_ready[i]:  # first confused at this p
                    t1, t2, t3 = _four_way(shifted[i] * factor, miss[i], false_reject[i])
                    thresholds[i, 1, 0] = t1
                    thresholds[i, 1, 1] = t2
                    thresholds[i, 1, 2] = t3
                    confused_ready[i] = True
                level = 1 if confused else 0
                u32 = np.int64(x >> _SHIFT_32)
                accepted = u32 < thresholds[i, level, 1]
                correct = (u32 < thresholds[i, level, 0]) | (
                    (u32 >= thresholds[i, level, 1]) & (u32 < thresholds[i, level, 2]))
                if has_confusion:
                    confused ^= (confused == correct) & (
                        np.int64(x & _LOW_32) < transition[level])
                # the attempt is booked as it starts, then takes its time
                attempts += 1
                cost += attempt_cost[i]
                seconds, s0, s1, s2, s3 = _duration(attempt_kind[i], attempt_a[i], attempt_b[i],
                                                    s0, s1, s2, s3)
                if seconds > 0.0:
                    now, ended, overdue = _advance(now, seconds, crash_at, deadline, overdue)
                    if ended != _GOING:
                        break
                seconds, s0, s1, s2, s3 = _duration(verify_kind, verify_a, verify_b,
                                                    s0, s1, s2, s3)
                if seconds > 0.0:
                    now, ended, overdue = _advance(now, seconds, crash_at, deadline, overdue)
                    if ended != _GOING:
                        break
                if accepted:
                    if not correct:
                        seg_tainted = True
                    i += 1
                    break
                if retries_here < per_step[i] and retries_used < total_retries:
                    retries_here += 1
                    retries_used += 1
                    if has_backoff:
                        seconds = backoff_wait(backoff_base, backoff_factor, backoff_cap,
                                               retries_here)
                        if jitter:
                            u, s0, s1, s2, s3 = _uniform(s0, s1, s2, s3)
                            seconds *= u
                        if seconds > 0.0:
                            now, ended, overdue = _advance(now, seconds, crash_at, deadline,
                                                           overdue)
                            if ended != _GOING:
                                break
                    continue
                ended = _DETECTED
                break
            if ended != _GOING:
                break
            if is_checkpoint[i]:
                cost += checkpoint_cost
                x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                bar = detect_threshold if seg_tainted else false_alarm_threshold
                caught = np.int64(x >> _SHIFT_32) < bar
                seconds, s0, s1, s2, s3 = _duration(checkpoint_kind, checkpoint_a, checkpoint_b,
                                                    s0, s1, s2, s3)
                if seconds > 0.0:
                    now, ended, overdue = _advance(now, seconds, crash_at, deadline, overdue)
                    if ended != _GOING:
                        break
                if caught:
                    if rollbacks_used == rollbacks:
                        ended = _DETECTED
                        break
                    rollbacks_used += 1
                    cost += rollback_cost
                    i = seg_start
                    seg_tainted = False
                    confused = False
                    continue
                if seg_tainted:
                    doomed = True
                seg_tainted = False
                seg_start = i
        outcome_out[trial] = ended
        attempts_out[trial] = attempts
        cost_out[trial] = cost
        duration_out[trial] = now
    state[0] = s0
    state[GENERATOR_LANES] = s1
    state[2 * GENERATOR_LANES] = s2
    state[3 * GENERATOR_LANES] = s3
