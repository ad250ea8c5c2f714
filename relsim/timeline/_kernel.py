r"""The timeline's compiled kernel: independent trials of docs/model.md sections 3 and 7 at once.

Private; :mod:`relsim.timeline._fast` decides when it runs, builds its inputs and seeds it.
A trial that shares nothing with the others (batch arrivals, no agent pool, LLM slots, rate
limits or reviewers) needs no event loop: its clock is the sum of its own timed actions, and
the deadline and the crash clock are two times to compare each action's end with. So one
numba loop draws section 3's decisions and section 7's durations together, from one
xoshiro256++ stream (``relsim.montecarlo._draws``: the same generator, Bernoulli thresholds
and ziggurat normals as the Monte Carlo kernels), and writes each trial's outcome, attempts,
cost and duration: the per-trial tally the simpy path fills. Lognormal durations are a
median times a factor ``exp(sigma z)`` taken from a batch drawn ahead for each distinct
sigma (``LOGNORMAL_BATCH``: the batch's exponentials are computed side by side), so a trial
spends no ``math.exp`` on them.

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

# Duration kinds (``_fast.duration_code``): constant ``a``; lognormal ``a`` (the median)
# times exp(sigmas[which] z); exponential of mean ``a``.
CONSTANT, LOGNORMAL, EXPONENTIAL = 0, 1, 2

#: Lognormal factors drawn at once for each distinct sigma: a batch's exponentials are
#: computed side by side (``exp_many``, which numba turns into vector instructions), a third
#: of the time of one ``math.exp`` after another.
LOGNORMAL_BATCH = 1024
#: A trial starts with at least this many factors of each sigma left in its batch (a new
#: batch is drawn otherwise, the rest of the old one unused: draws are independent, so
#: leaving some out changes no distribution); one that needs more draws them one by one.
LOGNORMAL_ROOM = 64

# exp_many: x = k ln2 + r with |r| <= ln2 / 2 (Cody and Waite's two-part ln2, whose high part
# has its low 32 bits zero, so that k * LN2_HI is exact), exp(r) by its Taylor polynomial of
# degree 12 (the remainder r**13 / 13! is under 2e-16 of it) and 2**k put in the exponent.
_INV_LN2 = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_ROUNDER = 6755399441055744.0  # 1.5 * 2**52: adding it rounds to an integer, kept in the low bits
_ROUNDER_BITS = np.int64(np.float64(_ROUNDER).view(np.int64))
_EXPONENT_BIAS = np.int64(1023)
_MANTISSA_BITS = np.int64(52)
_C = [1.0 / math.factorial(k) for k in range(13)]
_C0, _C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12 = _C


@numba.njit(inline="always")
def exp_parts(v):
    """``exp(v)`` in two parts, for ``v`` in [-708, 709] (clamped there): the polynomial
    ``exp(r)`` and ``t``, whose low bits hold the ``k`` of ``v = k ln2 + r`` (the caller puts
    ``2**k`` in the exponent: :func:`exp_many`, ``relsim.timeline._lanes._exp``)."""
    v = min(max(v, -708.0), 709.0)
    t = v * _INV_LN2 + _ROUNDER
    whole = t - _ROUNDER
    r = (v - whole * _LN2_HI) - whole * _LN2_LO
    p = _C12
    p = p * r + _C11
    p = p * r + _C10
    p = p * r + _C9
    p = p * r + _C8
    p = p * r + _C7
    p = p * r + _C6
    p = p * r + _C5
    p = p * r + _C4
    p = p * r + _C3
    p = p * r + _C2
    p = p * r + _C1
    return p * r + _C0, t


@numba.njit(nogil=True, cache=True, fastmath={"contract"})
def exp_many(x, out, scratch):
    """``out[k] = exp(x[k])`` for each ``k``, within 3e-16 relative (the tests hold it to
    ``math.exp``), for ``x`` in [-708, 709] (clamped there: exp's normal range).

    No branch, call or table in the loops, so that numba vectorizes them, and the
    polynomial's multiply-adds fused (``fastmath={"contract"}``: one rounding each, half the
    time). ``scratch`` (as long as ``x``) holds the rounded multiples of ln2."""
    for k in range(x.shape[0]):
        out[k], scratch[k] = exp_parts(x[k])
    bits = scratch.view(np.int64)
    for k in range(x.shape[0]):  # 2**whole, from the low bits of t
        bits[k] = (bits[k] - _ROUNDER_BITS + _EXPONENT_BIAS) << _MANTISSA_BITS
    scale = bits.view(np.float64)
    for k in range(x.shape[0]):
        out[k] *= scale[k]


@numba.njit(nogil=True, cache=True)
def _refill(s0, s1, s2, s3, sigma, out, normals, scratch):
    """``out[:] = exp(sigma z)`` for fresh standard normals ``z``: the new state."""
    for k in range(normals.shape[0]):
        z, s0, s1, s2, s3 = _normal(s0, s1, s2, s3)
        normals[k] = sigma * z
    exp_many(normals, out, scratch)
    return s0, s1, s2, s3


@numba.njit(inline="always")
def _uniform(s0, s1, s2, s3):
    """A uniform on [0, 1) with 53 bits: (value, new state)."""
    x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
    return np.int64(x >> _SHIFT_11) * _INV_SCALE, s0, s1, s2, s3


@numba.njit(inline="always")
def _duration(kind, a, s0, s1, s2, s3):
    """One duration of kind ``kind`` (see ``CONSTANT``): (seconds, new state). A lognormal
    is returned as its median ``a``: the caller multiplies it by the next factor of its
    sigma's batch, written out at each of the three calls (attempt, verification, check)
    rather than in a helper, since numba counts a reference to each array passed at every
    call: too dear once per attempt."""
    if kind == EXPONENTIAL:
        u, s0, s1, s2, s3 = _uniform(s0, s1, s2, s3)
        return -math.log1p(-u) * a, s0, s1, s2, s3
    return a, s0, s1, s2, s3


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
    layout), updated in place. Per trial: a new batch of lognormal factors for each sigma
    whose batch has fewer than ``LOGNORMAL_ROOM`` left, the crash clock (when
    ``crash_rate > 0``), the task effect; per step execution its step effect; per attempt one
    64-bit output (the joint outcome of the attempt and the verdict in its top half, the
    confusion transition in its bottom half, as ``run_general``), then the attempt's duration
    and the verification's (an exponential one uniform); a retry's jitter; at a checkpoint one
    output for the check, then its duration. Every probability is resolved to within
    :math:`2^{-32}`.

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
    attempt_which = timing.attempt_which
    verify_kind = timing.verify_kind
    verify_a = timing.verify_a
    verify_which = timing.verify_which
    checkpoint_kind = timing.checkpoint_kind
    checkpoint_a = timing.checkpoint_a
    checkpoint_which = timing.checkpoint_which
    # each distinct lognormal sigma's batch of factors (none without a lognormal)
    sigmas = timing.sigmas
    batches = np.empty((sigmas.shape[0], LOGNORMAL_BATCH))
    used = np.full(sigmas.shape[0], LOGNORMAL_BATCH, dtype=np.int64)
    normals = np.empty(LOGNORMAL_BATCH)  # (a batch's z, then sigma z)
    scratch = np.empty(LOGNORMAL_BATCH)
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
        for which in range(sigmas.shape[0]):  # a batch with room for this trial's factors
            if used[which] > LOGNORMAL_BATCH - LOGNORMAL_ROOM:
                s0, s1, s2, s3 = _refill(s0, s1, s2, s3, sigmas[which], batches[which],
                                         normals, scratch)
                used[which] = 0
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
                seconds, s0, s1, s2, s3 = _duration(attempt_kind[i], attempt_a[i], s0, s1, s2, s3)
                if attempt_kind[i] == LOGNORMAL:  # the next factor of its sigma's batch
                    k = used[attempt_which[i]]
                    if k < LOGNORMAL_BATCH:
                        used[attempt_which[i]] = k + 1
                        seconds *= batches[attempt_which[i], k]
                    else:  # a long trial that spent its batch
                        z, s0, s1, s2, s3 = _normal(s0, s1, s2, s3)
                        seconds *= math.exp(sigmas[attempt_which[i]] * z)
                if seconds > 0.0:
                    now, ended, overdue = _advance(now, seconds, crash_at, deadline, overdue)
                    if ended != _GOING:
                        break
                seconds, s0, s1, s2, s3 = _duration(verify_kind, verify_a, s0, s1, s2, s3)
                if verify_kind == LOGNORMAL:  # the next factor of its sigma's batch
                    k = used[verify_which]
                    if k < LOGNORMAL_BATCH:
                        used[verify_which] = k + 1
                        seconds *= batches[verify_which, k]
                    else:  # a long trial that spent its batch
                        z, s0, s1, s2, s3 = _normal(s0, s1, s2, s3)
                        seconds *= math.exp(sigmas[verify_which] * z)
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
                seconds, s0, s1, s2, s3 = _duration(checkpoint_kind, checkpoint_a, s0, s1, s2, s3)
                if checkpoint_kind == LOGNORMAL:  # the next factor of its sigma's batch
                    k = used[checkpoint_which]
                    if k < LOGNORMAL_BATCH:
                        used[checkpoint_which] = k + 1
                        seconds *= batches[checkpoint_which, k]
                    else:  # a long trial that spent its batch
                        z, s0, s1, s2, s3 = _normal(s0, s1, s2, s3)
                        seconds *= math.exp(sigmas[checkpoint_which] * z)
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
