"""Numba kernels of the Monte Carlo engine: one trial of docs/model.md section 3, many times.

Private. The driver (``_driver.py``) validates, seeds, chunks and merges; these functions only
run trials. They read the scenario from one ``_layout.Design`` (a named tuple of arrays and
scalars) and fill named tuples of arrays (``BlockSums``, ``Histogram``, ``Record``). They are
compiled by numba with ``cache=True``: the first process on a machine compiles them and keeps
the machine code in numba's cache (``__pycache__`` beside this file, or ``NUMBA_CACHE_DIR``);
later processes load it from there.

How a draw works
----------------
The generator is xoshiro256+ (Blackman and Vigna), inlined: its state is four ``uint64`` locals
seeded per block by the driver from ``numpy.random.SeedSequence``. A uniform is the top 53
bits of one output, ``u = x >> 11`` (the low bits of xoshiro256+ are weak), and a Bernoulli(p)
draw is ``u < T(p)`` with the integer threshold :math:`T(p) = \\lfloor p\\,2^{53} + 1/2 \\rfloor`,
so :math:`P(u < T(p)) = T(p)/2^{53}` is ``p`` to within :math:`2^{-54}`, exactly 0 for
``p = 0`` and exactly 1 for ``p = 1``. No float conversion on the hot path.

The integer thresholds are computed here and only here (``threshold``, ``_four_way``), from
the probabilities the ``Design`` carries.

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

from relsim.montecarlo._layout import DETECTED_FAILURE, FULL, SCALE, SILENT_FAILURE, SUCCESS

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
    """``_four_way`` over arrays, shape ``(len(pe), 3)`` (for the tests)."""
    out = np.empty((pe.shape[0], 3), dtype=np.uint64)
    for k in range(pe.shape[0]):
        t1, t2, t3 = _four_way(pe[k], miss[k], false_reject[k])
        out[k, 0] = t1
        out[k, 1] = t2
        out[k, 2] = t3
    return out


@numba.njit(inline="always")
def _fixed_thresholds(design):
    """Four-way thresholds of each step without random effects, shape ``(steps, 2, 3)``:
    ``[:, 0]`` for the focused agent, ``[:, 1]`` for the confused one (``p * factor``)."""
    steps = design.p.shape[0]
    out = np.empty((steps, 2, 3), dtype=np.uint64)
    for k in range(steps):
        p = design.p[k]
        t1, t2, t3 = _four_way(p, design.miss[k], design.false_reject[k])
        out[k, 0, 0] = t1
        out[k, 0, 1] = t2
        out[k, 0, 2] = t3
        t1, t2, t3 = _four_way(p * design.factor, design.miss[k], design.false_reject[k])
        out[k, 1, 0] = t1
        out[k, 1, 1] = t2
        out[k, 1, 2] = t3
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


@numba.njit(inline="always")
def _hist_add(hist, offset, mantissa_drop, value):
    """Add one value (>= 0) to a log-linear histogram; remember its bin's least/greatest."""
    counts = hist.counts
    lows = hist.lows
    highs = hist.highs
    bins = counts.shape[0]
    if value <= 0.0:
        k = 0
    else:
        # numba's stub types the Python-level call of an intrinsic, whose first parameter is
        # the typing context; compiled callers pass only the value
        k = (_float_bits(value) >> mantissa_drop) - offset  # type: ignore[call-arg]
        if k < 2:
            k = 1
        elif k >= bins:  # cannot happen below the bound; kept in the top bin
            k = bins - 1
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
def _record(record, row, outcome, attempts, cost, retries_used, rollbacks_used, first_wrong,
            caught_at, stopped_at):
    """Write one trial into row ``row`` of the record."""
    record.outcome[row] = outcome
    record.attempts[row] = attempts
    record.cost[row] = cost
    record.retries_used[row] = retries_used
    record.rollbacks[row] = rollbacks_used
    record.first_wrong_step[row] = first_wrong
    record.caught_at[row] = caught_at
    record.stopped_at[row] = stopped_at


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


@numba.njit(inline="always")
def _save_stream(streams, block, s0, s1, s2, s3, done):
    """Keep a block's generator state and trials done, to resume it in a later call."""
    streams.state[block, 0] = s0
    streams.state[block, 1] = s1
    streams.state[block, 2] = s2
    streams.state[block, 3] = s3
    streams.done[block] = done


@numba.njit(nogil=True, cache=True, error_model="numpy")
def run_simple(streams, block_trials, design, counts_by_attempts, record, budget):
    """Trials of a scenario without checkpoints, confusion or random effects, whose attempts
    all cost ``design.unit_cost``.

    It draws the same trials as ``run_general`` does for such a scenario (one draw per
    attempt, in the same order), with the absent features out of the hot loop. A trial's
    cost is ``attempts * unit_cost``, so all it keeps is ``counts_by_attempts[outcome,
    attempts] += 1``: the exact joint histogram of outcome and attempts, from which the
    driver computes every count, mean, variance and percentile.

    A call runs the blocks' trials in order, from where ``streams`` says each block stands,
    and returns once it has run ``budget`` trials or finished every block: a bounded slice of
    work, so that the driver can stop between slices. A block resumed in a later call
    continues its own stream: the trials do not depend on where the slices fall. (The
    budget counts trials, not attempts: a per-trial counter in the hot loop cost 10%.)

    Parameters
    ----------
    streams : _layout.Streams
        In/out: each block's xoshiro256+ state and trials done.
    block_trials : (blocks,) int64
    design : _layout.Design
    counts_by_attempts : (3, max_attempts + 1) int64
        In/out.
    record : _layout.Record
        Out: the first ``len(record.outcome)`` trials of these blocks.
    budget : int
        Trials after which the call returns (>= 1).

    Returns
    -------
    bool
        True when every block is finished.
    """
    fixed_thresholds = _fixed_thresholds(design)
    per_step = design.per_step
    total_retries = design.total_retries
    unit_cost = design.unit_cost
    record_rows = record.outcome.shape[0]
    steps = per_step.shape[0]
    remaining = budget
    first_row = 0  # the record row of the block's first trial
    for block in range(block_trials.shape[0]):
        n_trials = block_trials[block]
        start = streams.done[block]
        end = min(n_trials, start + remaining)
        s0 = streams.state[block, 0]
        s1 = streams.state[block, 1]
        s2 = streams.state[block, 2]
        s3 = streams.state[block, 3]
        recorded = first_row + start  # the record row of the next trial
        for _ in range(end - start):
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
            if recorded < record_rows:
                _record(record, recorded, outcome, attempts, attempts * unit_cost, retries_used,
                        0, first_wrong, -1, stopped_at)
                recorded += 1
        _save_stream(streams, block, s0, s1, s2, s3, end)
        remaining -= end - start
        first_row += n_trials
        if remaining == 0:
            return end == n_trials and block + 1 == block_trials.shape[0]
    return True


@numba.njit(nogil=True, cache=True, error_model="numpy")
def run_general(streams, block_trials, design, sums, cost_hist, attempts_hist, record, budget):
    """Trials of any scenario: docs/model.md section 3's pseudo-code, line by line.

    Draw order within a trial: the task effect (when ``task_sd > 0``); for each execution of
    a step, its step effect (when ``step_sd > 0``); for each attempt, the joint outcome, then
    the confusion transition when one is possible; at a checkpoint, the check. Normals come
    in Box-Muller pairs (two draws make two normals), the second kept for the next normal
    the block needs.

    Like ``run_simple`` it runs a bounded slice (``budget`` trials) and resumes each block where ``streams`` says it stands, spare normal included; a
    block's sums are kept in ``sums`` between slices and continued in the same order, so
    they do not depend on where the slices fall.

    Parameters
    ----------
    streams, block_trials
        As in ``run_simple``.
    design : _layout.Design
    sums : _layout.BlockSums
        In/out (zeroed at first): per-block sums, ``trials`` the trials done.
    cost_hist, attempts_hist : _layout.Histogram
        In/out: the log-linear histograms of cost and attempts (see ``histogram_offset``).
    record : _layout.Record
        Out: the first ``len(record.outcome)`` trials of these blocks.
    budget : int
        As in ``run_simple``.

    Returns
    -------
    bool
        True when every block is finished.
    """
    fixed_thresholds = _fixed_thresholds(design)
    p = design.p
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
    enter_threshold = threshold(design.enter)
    recover_threshold = threshold(design.recover)
    factor = design.factor
    task_sd = design.task_sd
    step_sd = design.step_sd
    attempts_shift = design.attempts_shift
    cost_shift = design.cost_shift
    attempts_offset = design.attempts_offset
    cost_offset = design.cost_offset
    mantissa_drop = design.mantissa_drop
    record_rows = record.outcome.shape[0]
    steps = p.shape[0]
    random_effects = task_sd > 0.0 or step_sd > 0.0
    remaining = budget
    first_row = 0  # the record row of the block's first trial
    for block in range(block_trials.shape[0]):
        n_trials = block_trials[block]
        start = streams.done[block]
        end = min(n_trials, start + remaining)
        s0 = streams.state[block, 0]
        s1 = streams.state[block, 1]
        s2 = streams.state[block, 2]
        s3 = streams.state[block, 3]
        spare = streams.spare[block]
        have_spare = streams.have_spare[block]
        # the block's sums, kept in registers and stored when the slice or the block ends
        n_success = sums.success[block]
        n_silent = sums.silent_failure[block]
        n_detected = sums.detected_failure[block]
        sum_attempts = sums.attempts[block]
        sum_attempts_sq = sums.attempts_sq[block]
        sum_cost = sums.cost[block]
        sum_cost_sq = sums.cost_sq[block]
        sum_cost_success = sums.cost_success[block]
        for trial in range(start, end):
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
            if outcome == SUCCESS:
                n_success += 1
            elif outcome == SILENT_FAILURE:
                n_silent += 1
            else:
                n_detected += 1
            sum_attempts += attempts
            d = attempts - attempts_shift
            sum_attempts_sq += d * d
            d = cost - cost_shift
            sum_cost += d
            sum_cost_sq += d * d
            if outcome == SUCCESS:
                sum_cost_success += d
            _hist_add(cost_hist, cost_offset, mantissa_drop, cost)
            _hist_add(attempts_hist, attempts_offset, mantissa_drop, float(attempts))
            row = first_row + trial
            if row < record_rows:
                _record(record, row, outcome, attempts, cost, retries_used, rollbacks_used,
                        first_wrong, caught_at, stopped_at)
        _save_stream(streams, block, s0, s1, s2, s3, end)
        streams.spare[block] = spare
        streams.have_spare[block] = have_spare
        sums.trials[block] = end
        sums.success[block] = n_success
        sums.silent_failure[block] = n_silent
        sums.detected_failure[block] = n_detected
        sums.attempts[block] = sum_attempts
        sums.attempts_sq[block] = sum_attempts_sq
        sums.cost[block] = sum_cost
        sums.cost_sq[block] = sum_cost_sq
        sums.cost_success[block] = sum_cost_success
        remaining -= end - start
        first_row += n_trials
        if remaining == 0:
            return end == n_trials and block + 1 == block_trials.shape[0]
    return True
