"""Numba kernels of the Monte Carlo engine: one trial of MODEL.md section 3, many times.

Private. The driver (``_driver.py``) validates, seeds, chunks and merges; these functions only
run trials on plain arrays and scalars, whose order and types ``_layout.KERNEL_ARGS`` lists.
The driver reaches them through ``_native.kernel``, which keeps a compiled copy on disk so
that a later process runs them without importing numba.

How a draw works
----------------
The generator is xoshiro256+ (Blackman and Vigna), inlined: its state is four ``uint64`` locals
seeded per block by the driver from ``numpy.random.SeedSequence``. A uniform is the top 53
bits of one output, ``u = x >> 11`` (the low bits of xoshiro256+ are weak), and a Bernoulli(p)
draw is ``u < T(p)`` with the integer threshold :math:`T(p) = \\lfloor p\\,2^{53} + 1/2 \\rfloor`,
so :math:`P(u < T(p)) = T(p)/2^{53}` is ``p`` to within :math:`2^{-54}`, exactly 0 for
``p = 0`` and exactly 1 for ``p = 1``. No float conversion on the hot path.

One attempt takes one draw: its correctness and the verifier's verdict are drawn jointly from
their four-way distribution (correct and accepted, wrong and accepted, correct and rejected,
wrong and rejected) by comparing ``u`` with three cumulative thresholds. Structural zeros
(no verifier: never rejected; ``miss = 0``: never a wrong acceptance; ...) are kept exactly.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from relsim.montecarlo._layout import (
    DETECTED_FAILURE,
    F_ATTEMPTS_SQ,
    F_COST,
    F_COST_SQ,
    F_COST_SUCCESS,
    FULL,
    HIST_BINS,
    I_ATTEMPTS,
    I_SUCCESS,
    I_TRIALS,
    R_ATTEMPTS,
    R_CAUGHT_AT,
    R_FIRST_WRONG,
    R_OUTCOME,
    R_RETRIES,
    R_ROLLBACKS,
    R_STOPPED_AT,
    SCALE,
    SILENT_FAILURE,
    SUB_BITS,
    SUCCESS,
)

_SHIFT_11 = np.uint64(11)
_SHIFT_17 = np.uint64(17)
_ROT_45 = np.uint64(45)
_ROT_19 = np.uint64(19)
_ONE = np.uint64(1)
_INV_SCALE = 1.0 / SCALE
_TWO_PI = 2.0 * math.pi


@numba.njit(inline="always")
def _next(s0, s1, s2, s3):
    """One step of xoshiro256+: (output, new state)."""
    result = s0 + s3
    t = s1 << _SHIFT_17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << _ROT_45) | (s3 >> _ROT_19)
    return result, s0, s1, s2, s3


@numba.njit(inline="always")
def threshold(prob):
    """Integer threshold of a Bernoulli(prob) draw on the 53-bit uniform (``prob`` in [0, 1]:
    truncation is the floor, and a signed conversion is one instruction)."""
    return np.uint64(np.int64(prob * SCALE + 0.5))


@numba.njit(inline="always")
def _four_way(pe, miss, false_reject):
    """Cumulative thresholds (t1, t2, t3) of one attempt's joint outcome.

    ``u < t1``: correct and accepted; ``< t2``: wrong and accepted; ``< t3``: correct and
    rejected; else wrong and rejected. Probabilities that are exactly zero stay exactly zero.
    """
    correct_accepted = pe * (1.0 - false_reject)
    wrong_accepted = (1.0 - pe) * miss
    correct_rejected = pe * false_reject
    wrong_rejected = (1.0 - pe) * (1.0 - miss)
    t1 = threshold(correct_accepted)
    if wrong_accepted == 0.0:
        t2 = t1
    elif correct_rejected == 0.0 and wrong_rejected == 0.0:
        t2 = FULL
    else:
        t2 = min(max(threshold(correct_accepted + wrong_accepted), t1), FULL)
    if correct_rejected == 0.0:
        t3 = t2
    elif wrong_rejected == 0.0:
        t3 = FULL
    else:
        t3 = min(max(FULL - threshold(wrong_rejected), t2), FULL)
    return t1, t2, t3


@numba.njit(cache=True)
def four_way_table(pe, miss, false_reject):
    """``_four_way`` over arrays, shape ``(len(pe), 3)`` (the tests hold the driver's numpy
    version to it)."""
    out = np.empty((pe.shape[0], 3), dtype=np.uint64)
    for k in range(pe.shape[0]):
        t1, t2, t3 = _four_way(pe[k], miss[k], false_reject[k])
        out[k, 0] = t1
        out[k, 1] = t2
        out[k, 2] = t3
    return out


@numba.njit(inline="always")
def _expit(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@intrinsic
def _float_bits(typingctx, value):
    """The IEEE-754 bits of a float64 as an int64 (a bit cast, no conversion)."""
    if value != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return types.int64(types.float64), codegen


_MANTISSA_DROP = np.int64(52 - SUB_BITS)


@numba.njit(inline="always")
def _hist_add(counts, lows, highs, offset, value):
    """Add one value (>= 0) to a log-linear histogram; remember its bin's least/greatest."""
    if value <= 0.0:
        k = 0
    else:
        k = (_float_bits(value) >> _MANTISSA_DROP) - offset
        if k < 2:
            k = 1
        elif k >= HIST_BINS:  # cannot happen below the bound; kept in the top bin
            k = HIST_BINS - 1
    if counts[k] == 0:
        lows[k] = value
        highs[k] = value
    else:
        if value < lows[k]:
            lows[k] = value
        if value > highs[k]:
            highs[k] = value
    counts[k] += 1


@numba.njit(inline="always")
def _tally(
    int_row, float_row, outcome, attempts, cost, retries_used, rollbacks_used,
    first_wrong, caught_at, stopped_at, attempts_shift, cost_shift,
    cost_offset, cost_counts, cost_lows, cost_highs,
    attempts_offset, attempts_counts, attempts_lows, attempts_highs,
    record, record_cost, recorded,
):
    """Add one finished trial to its block's sums, the histograms and the record."""
    int_row[I_TRIALS] += 1
    int_row[I_SUCCESS + outcome] += 1
    int_row[I_ATTEMPTS] += attempts
    d = attempts - attempts_shift
    float_row[F_ATTEMPTS_SQ] += d * d
    d = cost - cost_shift
    float_row[F_COST] += d
    float_row[F_COST_SQ] += d * d
    if outcome == SUCCESS:
        float_row[F_COST_SUCCESS] += d
    _hist_add(cost_counts, cost_lows, cost_highs, cost_offset, cost)
    _hist_add(attempts_counts, attempts_lows, attempts_highs, attempts_offset, float(attempts))
    if recorded < record.shape[0]:
        record[recorded, R_OUTCOME] = outcome
        record[recorded, R_ATTEMPTS] = attempts
        record[recorded, R_RETRIES] = retries_used
        record[recorded, R_ROLLBACKS] = rollbacks_used
        record[recorded, R_FIRST_WRONG] = first_wrong
        record[recorded, R_CAUGHT_AT] = caught_at
        record[recorded, R_STOPPED_AT] = stopped_at
        record_cost[recorded] = cost
        return recorded + 1
    return recorded


@numba.njit(inline="always")
def _normal_pair(s0, s1, s2, s3):
    """Two independent standard normals by Box-Muller from two draws (u1 in (0, 1] keeps
    the log finite)."""
    x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
    u1 = ((x >> _SHIFT_11) + _ONE) * _INV_SCALE
    x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
    angle = _TWO_PI * ((x >> _SHIFT_11) * _INV_SCALE)
    radius = math.sqrt(-2.0 * math.log(u1))
    return radius * math.cos(angle), radius * math.sin(angle), s0, s1, s2, s3


@numba.njit(nogil=True, cache=True, error_model="numpy")
def run_simple(
    seeds, block_trials, fixed_thresholds, per_step, total_retries, unit_cost,
    counts_by_attempts, record, record_cost,
):
    """Trials of a scenario without checkpoints, confusion or random effects, whose attempts
    all cost ``unit_cost``.

    It draws the same trials as ``run_general`` does for such a scenario (one draw per
    attempt, in the same order), with the absent features out of the hot loop. A trial's
    cost is ``attempts * unit_cost``, so all it keeps is ``counts_by_attempts[outcome,
    attempts] += 1``: the exact joint histogram of outcome and attempts, from which the
    driver computes every count, mean, variance and percentile.

    Parameters
    ----------
    seeds : (blocks, 4) uint64
        xoshiro256+ state of each block.
    block_trials : (blocks,) int64
    fixed_thresholds : (steps, 2, 3) uint64
        Four-way thresholds of each step, ``[:, 0]`` for the focused agent.
    per_step : (steps,) int64
    total_retries : int64
        A huge number when there is no task-wide cap.
    unit_cost : float64
        ``attempt + verify``.
    counts_by_attempts : (3, max_attempts + 1) int64
        In/out.
    record : (K, N_RECORD) int64, record_cost : (K,) float64
        Out: the first K trials of these blocks.
    """
    steps = per_step.shape[0]
    recorded = 0
    for block in range(seeds.shape[0]):
        s0 = seeds[block, 0]
        s1 = seeds[block, 1]
        s2 = seeds[block, 2]
        s3 = seeds[block, 3]
        for _ in range(block_trials[block]):
            i = 0
            tainted = False
            retries_used = 0
            attempts = 0
            first_wrong = -1
            stopped_at = -1
            while i < steps:
                accept_correct = fixed_thresholds[i, 0, 0]
                accept_any = fixed_thresholds[i, 0, 1]
                retry_cap = per_step[i]
                retries_here = 0
                while True:
                    x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                    u = x >> _SHIFT_11
                    attempts += 1
                    if u < accept_correct:
                        break
                    if u < accept_any:
                        tainted = True
                        if first_wrong < 0:
                            first_wrong = i + 1
                        break
                    if retries_here < retry_cap and retries_used < total_retries:
                        retries_here += 1
                        retries_used += 1
                        continue
                    stopped_at = i + 1
                    break
                if stopped_at >= 0:
                    break
                i += 1
            if stopped_at >= 0:
                outcome = DETECTED_FAILURE
            elif tainted:
                outcome = SILENT_FAILURE
            else:
                outcome = SUCCESS
            counts_by_attempts[outcome, attempts] += 1
            if recorded < record.shape[0]:
                record[recorded, R_OUTCOME] = outcome
                record[recorded, R_ATTEMPTS] = attempts
                record[recorded, R_RETRIES] = retries_used
                record[recorded, R_ROLLBACKS] = 0
                record[recorded, R_FIRST_WRONG] = first_wrong
                record[recorded, R_CAUGHT_AT] = -1
                record[recorded, R_STOPPED_AT] = stopped_at
                record_cost[recorded] = attempts * unit_cost
                recorded += 1


@numba.njit(nogil=True, cache=True, error_model="numpy")
def run_general(
    seeds, block_trials, fixed_thresholds, per_step, total_retries,
    logit_p, p_is_fixed, p, miss, false_reject, attempt_cost, is_checkpoint, detect_threshold,
    false_alarm_threshold, rollbacks, checkpoint_cost, rollback_cost, has_confusion,
    enter_threshold, recover_threshold, factor, task_sd, step_sd, attempts_shift, cost_shift,
    int_sums, float_sums, cost_offset, cost_counts, cost_lows, cost_highs,
    attempts_offset, attempts_counts, attempts_lows, attempts_highs, record, record_cost,
):
    """Trials of any scenario: MODEL.md section 3's pseudo-code, line by line.

    Draw order within a trial: the task effect (when ``task_sd > 0``); for each execution of
    a step, its step effect (when ``step_sd > 0``); for each attempt, the joint outcome, then
    the confusion transition when one is possible; at a checkpoint, the check. Normals come
    in Box-Muller pairs (two draws make two normals), the second kept for the next normal
    the block needs.

    Parameters
    ----------
    seeds, block_trials, fixed_thresholds, per_step, total_retries
        As in ``run_simple``; ``fixed_thresholds[:, 1]`` is for the confused agent.
    logit_p, p_is_fixed, p, miss, false_reject : (steps,)
        For the thresholds under random effects (``p_is_fixed``: p is exactly 0 or 1).
    attempt_cost : (steps,) float64
        ``attempt[i] + verify``.
    is_checkpoint : (steps + 1,) bool
        Indexed by the number of steps done.
    detect_threshold, false_alarm_threshold : uint64
    rollbacks : int64
    checkpoint_cost, rollback_cost : float64
    has_confusion : bool
    enter_threshold, recover_threshold : uint64
    factor, task_sd, step_sd : float64
    attempts_shift, cost_shift : float64
        Subtracted from a trial's value before it is squared (numerical stability).
    int_sums : (blocks, N_INT_SUMS) int64, float_sums : (blocks, N_FLOAT_SUMS) float64
        Out (zeroed): per-block sums.
    cost_offset, cost_counts, cost_lows, cost_highs
        In/out: the log-linear histogram of cost (see ``histogram_offset``).
    attempts_offset, attempts_counts, attempts_lows, attempts_highs
        In/out: the log-linear histogram of attempts.
    record : (K, N_RECORD) int64, record_cost : (K,) float64
        Out: the first K trials of these blocks.
    """
    steps = p.shape[0]
    random_effects = task_sd > 0.0 or step_sd > 0.0
    recorded = 0
    for block in range(seeds.shape[0]):
        s0 = seeds[block, 0]
        s1 = seeds[block, 1]
        s2 = seeds[block, 2]
        s3 = seeds[block, 3]
        int_row = int_sums[block]
        float_row = float_sums[block]
        spare = 0.0
        have_spare = False
        for _ in range(block_trials[block]):
            task_effect = 0.0
            if task_sd > 0.0:
                if have_spare:
                    z = spare
                    have_spare = False
                else:
                    z, spare, s0, s1, s2, s3 = _normal_pair(s0, s1, s2, s3)
                    have_spare = True
                task_effect = task_sd * z
            i = 0
            seg_start = 0
            seg_tainted = False
            doomed = False
            confused = False
            retries_used = 0
            rollbacks_used = 0
            attempts = 0
            cost = 0.0
            first_wrong = -1
            caught_at = -1
            stopped_at = -1
            outcome = SUCCESS
            while True:
                if i == steps:
                    outcome = SILENT_FAILURE if (seg_tainted or doomed) else SUCCESS
                    break
                if random_effects and not p_is_fixed[i]:
                    shift = task_effect
                    if step_sd > 0.0:
                        if have_spare:
                            z = spare
                            have_spare = False
                        else:
                            z, spare, s0, s1, s2, s3 = _normal_pair(s0, s1, s2, s3)
                            have_spare = True
                        shift += step_sd * z
                    p_shifted = _expit(logit_p[i] + shift)
                    f1, f2, f3 = _four_way(p_shifted, miss[i], false_reject[i])
                    c1 = c2 = c3 = FULL
                    confused_ready = False  # their thresholds, when first needed
                else:  # no random effects, or a p of exactly 0 or 1 (shift leaves it)
                    p_shifted = p[i]
                    confused_ready = True
                    f1 = fixed_thresholds[i, 0, 0]
                    f2 = fixed_thresholds[i, 0, 1]
                    f3 = fixed_thresholds[i, 0, 2]
                    c1 = fixed_thresholds[i, 1, 0]
                    c2 = fixed_thresholds[i, 1, 1]
                    c3 = fixed_thresholds[i, 1, 2]
                step_cost = attempt_cost[i]
                retry_cap = per_step[i]
                retries_here = 0
                while True:
                    x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                    u = x >> _SHIFT_11
                    attempts += 1
                    cost += step_cost
                    if confused:
                        if not confused_ready:
                            c1, c2, c3 = _four_way(p_shifted * factor, miss[i], false_reject[i])
                            confused_ready = True
                        t1, t2, t3 = c1, c2, c3
                    else:
                        t1, t2, t3 = f1, f2, f3
                    if u < t1:
                        correct = True
                        accepted = True
                    elif u < t2:
                        correct = False
                        accepted = True
                    elif u < t3:
                        correct = True
                        accepted = False
                    else:
                        correct = False
                        accepted = False
                    if has_confusion:
                        if confused:
                            if correct:
                                x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                                if (x >> _SHIFT_11) < recover_threshold:
                                    confused = False
                        elif not correct:
                            x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                            if (x >> _SHIFT_11) < enter_threshold:
                                confused = True
                    if accepted:
                        if not correct:
                            seg_tainted = True
                            if first_wrong < 0:
                                first_wrong = i + 1
                        i += 1
                        break
                    if retries_here < retry_cap and retries_used < total_retries:
                        retries_here += 1
                        retries_used += 1
                        continue
                    stopped_at = i + 1
                    break
                if stopped_at >= 0:
                    outcome = DETECTED_FAILURE
                    break
                if is_checkpoint[i]:
                    cost += checkpoint_cost
                    x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                    level = detect_threshold if seg_tainted else false_alarm_threshold
                    if (x >> _SHIFT_11) < level:
                        if seg_tainted and caught_at < 0:
                            caught_at = i
                        if rollbacks_used == rollbacks:
                            outcome = DETECTED_FAILURE
                            stopped_at = i
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
            recorded = _tally(
                int_row, float_row, outcome, attempts, cost, retries_used, rollbacks_used,
                first_wrong, caught_at, stopped_at, attempts_shift, cost_shift,
                cost_offset, cost_counts, cost_lows, cost_highs,
                attempts_offset, attempts_counts, attempts_lows, attempts_highs,
                record, record_cost, recorded,
            )
