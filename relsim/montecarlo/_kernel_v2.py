r"""The numba kernel of docs/model.md section 8: one trial with the model v2 tables, many times.

Private. ``run_v2`` runs the scenarios whose compiled model has section 8's tables
(``TrialModel.has_design_tables``: classes, an escalation ladder, several samples per attempt,
failure modes or faults); every other scenario keeps the kernels of ``_kernels.py``, whose
trials and speed these tables do not touch. It reads a ``_layout.Design`` (section 3, with
``miss`` the failure modes' mixture) and a ``_layout.Tables`` (section 8), and fills the same
``BlockSums``, ``Histogram`` and ``Record`` as ``run_general``, with the infrastructure
failures, the cost sums by outcome and the silent failures by mode.

Like ``run_general`` it draws from the first stream of each block's generator, so the same
seed gives the same trials whatever the threads and chunks (``_driver``). Draw order within a
trial, each draw one 64-bit output (``hi``/``lo``: its top and bottom 32 bits):

- the class (``hi``), with more than one class; then the task effect, as ``run_general``;
- for each execution of a step, its step effect (when ``step_sd > 0``);
- for each attempt, with faults or confusion, one output: ``hi`` the fault, ``lo`` the
  confusion transition (drawn whether or not it is used, so a scenario's draws do not
  depend on the outcome);
- unless the attempt faulted, its samples:

  - with ``select = "verifier"`` (or one sample), one output per sample in order until one is
    accepted: ``hi`` the sample's correctness and verdict jointly (``_draws._four_way``, with
    the modes' mixture miss), ``lo`` the mode of an accepted wrong sample;
  - with a vote, one output per sample: ``hi`` whether it is right, ``lo`` which wrong
    answer it gives (with more than one); a tie for the plurality takes one more output
    (``hi``: a winner uniformly among the tied answers); then one output for the verifier's
    check of the winner: ``hi`` the verdict, ``lo`` the mode of an accepted wrong winner;

- at a checkpoint, ``hi`` of one output for the check (``detect`` of the segment's first
  accepted wrong result's mode).

A wrong result that is accepted draws its mode from :math:`P(m \mid \text{wrong, accepted})
\propto \text{share}_m\,\text{miss}_m` (with no verifier every miss is 1: the shares), which
is drawing the mode first and accepting with its miss, seen only where it matters. A uniform
integer below ``k`` is :math:`\lfloor u k / 2^{32} \rfloor` of a 32-bit ``u``; every
probability is drawn to within :math:`2^{-32}`, as in the other kernels.
"""

from __future__ import annotations

import numba
import numpy as np

from relsim.montecarlo._draws import (
    _LOW_32,
    _SHIFT_32,
    _expit,
    _four_way,
    _next,
    _normal,
    threshold,
)
from relsim.montecarlo._kernels import _hist_add, _record, _save_stream
from relsim.montecarlo._layout import (
    DETECTED_FAILURE,
    FULL32,
    GENERATOR_LANES,
    INFRA_FAILURE,
    SILENT_FAILURE,
    SUCCESS,
)

_W0, _W1, _W2, _W3 = 0, GENERATOR_LANES, 2 * GENERATOR_LANES, 3 * GENERATOR_LANES


@numba.njit(inline="always")
def _levels(cumulative):
    """Thresholds of a categorical draw from cumulative probabilities: the first ``k`` with
    ``u < levels[k]``; the last is ``2**32``, so every 32-bit ``u`` finds one."""
    out = np.empty(cumulative.shape[0], dtype=np.int64)
    for k in range(cumulative.shape[0]):
        out[k] = threshold(min(cumulative[k], 1.0))
    if out.shape[0] > 0:
        out[out.shape[0] - 1] = np.int64(FULL32)
    return out


@numba.njit(inline="always")
def _categorical(levels, u):
    k = 0
    while u >= levels[k]:
        k += 1
    return k


@numba.njit(inline="always")
def _below(u, k):
    """A uniform integer in ``0..k-1`` from a 32-bit uniform ``u``."""
    return (u * k) >> 32


@numba.njit(nogil=True, cache=True, error_model="numpy")
def run_v2(streams, block_trials, design, tables, sums, cost_hist, attempts_hist, record,
           budget):
    """Trials of a scenario with section 8's tables: its pseudo-code, line by line (see the
    module docstring for the draws).

    Parameters
    ----------
    streams, block_trials, sums, cost_hist, attempts_hist, record, budget
        As in ``_kernels.run_general`` (``sums.silent_by_mode`` has one column per mode).
    design : _layout.Design
    tables : _layout.Tables

    Returns
    -------
    bool
        True when every block is finished.
    """
    miss = design.miss
    false_reject = design.false_reject
    per_step = design.per_step
    total_retries = design.total_retries
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
    random_effects = task_sd > 0.0 or step_sd > 0.0
    attempts_shift = design.attempts_shift
    cost_shift = design.cost_shift
    attempts_offset = design.attempts_offset
    cost_offset = design.cost_offset
    mantissa_drop = design.mantissa_drop
    cost_counts, cost_lows, cost_highs = cost_hist.counts, cost_hist.lows, cost_hist.highs
    attempts_counts = attempts_hist.counts
    attempts_lows = attempts_hist.lows
    attempts_highs = attempts_hist.highs
    record_rows = record.outcome.shape[0]
    steps = per_step.shape[0]

    class_levels = _levels(tables.class_cumulative)
    classes = class_levels.shape[0]
    rung_after = tables.rung_after
    rungs = rung_after.shape[0]
    rung_p = tables.rung_p
    rung_logit_p = tables.rung_logit_p
    rung_p_fixed = tables.rung_p_fixed
    rung_cost = tables.rung_cost
    samples = tables.samples
    vote = tables.vote and samples > 1  # one sample: the vote is the verifier's order
    wrong_answers = tables.wrong_answers
    # one verification of the winner, or one per sample checked in order
    verify_cost = tables.verify_cost * (1.0 if vote else float(samples))
    mode_levels = _levels(tables.mode_cumulative)
    modes = mode_levels.shape[0]
    mode_detect = np.empty(modes, dtype=np.int64)
    for k in range(modes):
        mode_detect[k] = threshold(tables.mode_detect[k])
    fault_level = threshold(tables.fault)
    draw_per_attempt = tables.fault > 0.0 or has_confusion
    # Each execution's thresholds by rung and state (focused 0, confused 1): the four-way
    # (t1, t2, t3) and T(pe), computed when first needed in the execution (ready_at).
    levels = np.empty((rungs + 1, 2, 4), dtype=np.int64)
    ready_at = np.full((rungs + 1, 2), -1, dtype=np.int64)
    shifted = np.empty(rungs + 1)
    shifted_at = np.full(rungs + 1, -1, dtype=np.int64)
    execution = 0
    # A vote's wrong answers: how many samples gave each (reset after each vote), and which.
    counts = np.zeros(max(wrong_answers, 1), dtype=np.uint8)  # at most 64 samples
    picks = np.empty(samples, dtype=np.int64)

    remaining = budget
    first_row = 0
    for block in range(block_trials.shape[0]):
        n_trials = block_trials[block]
        start = streams.done[block]
        end = min(n_trials, start + remaining)
        s0 = streams.state[block, _W0]
        s1 = streams.state[block, _W1]
        s2 = streams.state[block, _W2]
        s3 = streams.state[block, _W3]
        n_success = sums.success[block]
        n_silent = sums.silent_failure[block]
        n_detected = sums.detected_failure[block]
        n_infra = sums.infra_failure[block]
        sum_attempts = sums.attempts[block]
        sum_attempts_sq = sums.attempts_sq[block]
        sum_cost = sums.cost[block]
        sum_cost_sq = sums.cost_sq[block]
        sum_cost_success = sums.cost_success[block]
        sum_cost_silent = sums.cost_silent[block]
        sum_cost_infra = sums.cost_infra[block]
        for trial in range(start, end):
            task_class = 0
            if classes > 1:
                x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                task_class = _categorical(class_levels, np.int64(x >> _SHIFT_32))
            task_effect = 0.0
            if task_sd > 0.0:
                z, s0, s1, s2, s3 = _normal(s0, s1, s2, s3)
                task_effect = task_sd * z
            i = 0
            seg_start = 0
            seg_tainted = False
            seg_mode = -1  # the mode of the segment's first accepted wrong result
            doomed = False
            doomed_mode = -1  # ... of the first segment baked in
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
                execution += 1
                shift = task_effect
                if step_sd > 0.0:
                    z, s0, s1, s2, s3 = _normal(s0, s1, s2, s3)
                    shift += step_sd * z
                accept_right = threshold(1.0 - false_reject[i])  # a vote's winner, checked
                accept_wrong = threshold(miss[i])
                retry_cap = per_step[i]
                retries_here = 0
                rung = 0
                faulted = False
                while True:
                    while rung < rungs and retries_here >= rung_after[rung]:
                        rung += 1
                    attempts += 1
                    cost += rung_cost[rung, i] * samples
                    state = 1 if confused else 0
                    if ready_at[rung, state] != execution:
                        if shifted_at[rung] != execution:
                            if random_effects and not rung_p_fixed[task_class, rung, i]:
                                shifted[rung] = _expit(rung_logit_p[task_class, rung, i] + shift)
                            else:
                                shifted[rung] = rung_p[task_class, rung, i]
                            shifted_at[rung] = execution
                        pe = shifted[rung] * factor if confused else shifted[rung]
                        t1, t2, t3 = _four_way(pe, miss[i], false_reject[i])
                        levels[rung, state, 0] = t1
                        levels[rung, state, 1] = t2
                        levels[rung, state, 2] = t3
                        levels[rung, state, 3] = threshold(pe)
                        ready_at[rung, state] = execution
                    fault = False
                    change = np.int64(0)
                    if draw_per_attempt:
                        x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                        fault = np.int64(x >> _SHIFT_32) < fault_level
                        change = np.int64(x & _LOW_32)
                    accepted = False
                    correct = False
                    mode = -1
                    if not fault:
                        cost += verify_cost
                        if vote:
                            right = 0
                            wrong = 0
                            top = 0  # the most samples on one wrong answer
                            at_top = 0  # wrong answers with that many
                            level = levels[rung, state, 3]
                            for _ in range(samples):
                                x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                                if np.int64(x >> _SHIFT_32) < level:
                                    right += 1
                                elif wrong_answers > 1:
                                    a = _below(np.int64(x & _LOW_32), wrong_answers)
                                    counts[a] += 1
                                    picks[wrong] = a
                                    wrong += 1
                                    here = int(counts[a])
                                    if here > top:
                                        top = here
                                        at_top = 1
                                    elif here == top:
                                        at_top += 1
                                else:
                                    wrong += 1
                            if wrong_answers > 1:
                                for k in range(wrong):
                                    counts[picks[k]] = 0
                            elif wrong_answers == 1:  # one wrong answer: binary
                                top = wrong
                                at_top = 1
                            elif wrong > 0:  # every wrong sample its own answer
                                top = 1
                                at_top = wrong
                            if right != top:
                                correct = right > top
                            else:  # a tie (right >= 1): a winner among the 1 + at_top
                                x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                                correct = _below(np.int64(x >> _SHIFT_32), 1 + at_top) == 0
                            x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                            accepted = np.int64(x >> _SHIFT_32) < (
                                accept_right if correct else accept_wrong)
                            if accepted and not correct and modes > 0:
                                mode = _categorical(mode_levels, np.int64(x & _LOW_32))
                        else:
                            t1 = levels[rung, state, 0]
                            t2 = levels[rung, state, 1]
                            t3 = levels[rung, state, 2]
                            for sample in range(samples):
                                x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                                u = np.int64(x >> _SHIFT_32)
                                right_here = (u < t1) | ((u >= t2) & (u < t3))
                                if sample == 0:  # the result when none is accepted
                                    correct = right_here
                                if u < t2:
                                    accepted = True
                                    correct = right_here
                                    if not right_here and modes > 0:
                                        mode = _categorical(mode_levels, np.int64(x & _LOW_32))
                                    break
                        if has_confusion:
                            confused ^= (confused == correct) & (change < transition[state])
                    if accepted:
                        if not correct:
                            if not seg_tainted:
                                seg_mode = mode
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
                    faulted = fault
                    break
                if stopped_at >= 0:
                    outcome = INFRA_FAILURE if faulted else DETECTED_FAILURE
                    break
                if is_checkpoint[i]:
                    cost += checkpoint_cost
                    x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                    if not seg_tainted:
                        level = false_alarm_threshold
                    elif modes > 0:
                        level = mode_detect[seg_mode]
                    else:
                        level = detect_threshold
                    if np.int64(x >> _SHIFT_32) < level:
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
                        seg_mode = -1
                        confused = False
                        continue
                    if seg_tainted and not doomed:
                        doomed = True
                        doomed_mode = seg_mode
                    seg_tainted = False
                    seg_mode = -1
                    seg_start = i
            silent_mode = -1
            d = cost - cost_shift
            if outcome == SUCCESS:
                n_success += 1
                sum_cost_success += d
            elif outcome == SILENT_FAILURE:
                n_silent += 1
                sum_cost_silent += d
                silent_mode = doomed_mode if doomed else seg_mode
                if silent_mode >= 0:
                    sums.silent_by_mode[block, silent_mode] += 1
            elif outcome == DETECTED_FAILURE:
                n_detected += 1
            else:
                n_infra += 1
                sum_cost_infra += d
            sum_attempts += attempts
            e = attempts - attempts_shift
            sum_attempts_sq += e * e
            sum_cost += d
            sum_cost_sq += d * d
            _hist_add(cost_counts, cost_lows, cost_highs, cost_offset, mantissa_drop, cost)
            _hist_add(attempts_counts, attempts_lows, attempts_highs, attempts_offset,
                      mantissa_drop, float(attempts))
            row = first_row + trial
            if row < record_rows:
                _record(record, row, outcome, attempts, cost, retries_used, rollbacks_used,
                        first_wrong, caught_at, stopped_at)
                record.task_class[row] = task_class
                record.failure_mode[row] = silent_mode
        _save_stream(streams, block, s0, s1, s2, s3, end)
        sums.trials[block] = end
        sums.success[block] = n_success
        sums.silent_failure[block] = n_silent
        sums.detected_failure[block] = n_detected
        sums.infra_failure[block] = n_infra
        sums.attempts[block] = sum_attempts
        sums.attempts_sq[block] = sum_attempts_sq
        sums.cost[block] = sum_cost
        sums.cost_sq[block] = sum_cost_sq
        sums.cost_success[block] = sum_cost_success
        sums.cost_silent[block] = sum_cost_silent
        sums.cost_infra[block] = sum_cost_infra
        remaining -= end - start
        first_row += n_trials
        if remaining == 0:
            return end == n_trials and block + 1 == block_trials.shape[0]
    return True
