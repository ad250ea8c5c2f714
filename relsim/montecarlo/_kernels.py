"""Numba kernels of the Monte Carlo engine: one trial of docs/model.md section 3, many times.

Private. The driver (``_driver.py``) validates, seeds, chunks and merges; these functions only
run trials. They read the scenario from one ``_layout.Design`` (a named tuple of arrays and
scalars) and fill named tuples of arrays (``BlockSums``, ``Histogram``, ``Record``). They are
compiled by numba with ``cache=True``: the first process on a machine compiles them and keeps
the machine code in numba's cache (``__pycache__`` beside this file, or ``NUMBA_CACHE_DIR``);
later processes load it from there. How they draw (the generator, the thresholds, the
per-execution tables, the normals) is in ``_draws.py``.

Two kernels:

- ``run_simple``, for scenarios without checkpoints, confusion or random effects whose
  attempts all cost the same: 64 trials side by side, one 32-bit uniform per step execution
  inverted through the step's table, the counting done for the 64 at once (numba vectorizes
  it); a trial that runs out of retries, needs a longer execution than the vector pass counts,
  or meets the task-wide budget is replayed one execution at a time from the same uniforms.
- ``run_general``, for everything else: the pseudo-code line by line, one draw per attempt.

Scenarios with section 8's tables run on a third kernel, ``_kernel_v2.run_v2``, so that these
two keep their trials and their speed.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from relsim.montecarlo._draws import (
    _LOW_32,
    _SHIFT_32,
    _expit,
    _four_way,
    _next,
    _normal,
    _step_lanes,
    _uniform32,
    execution_table,
    threshold,
)
from relsim.montecarlo._layout import (
    DETECTED_FAILURE,
    GENERATOR_LANES,
    SILENT_FAILURE,
    SUCCESS,
)

#: Trials the fast kernel runs side by side (a group; the last group of a block may be
#: partial).
LANES = 64

#: The most attempts of one execution that the fast kernel's vector pass counts; a trial with
#: a longer execution is replayed execution by execution.
FAST_COLUMNS = 8

# Word w of the first stream of a block's generator (the general kernel's) is at
# state[block, w * GENERATOR_LANES].
_W0, _W1, _W2, _W3 = 0, GENERATOR_LANES, 2 * GENERATOR_LANES, 3 * GENERATOR_LANES


@numba.njit(inline="always")
def _fixed_thresholds(design):
    """Four-way thresholds of each step without random effects, shape ``(steps, 2, 3)``:
    ``[:, 0]`` for the focused agent, ``[:, 1]`` for the confused one (``p * factor``)."""
    steps = design.p.shape[0]
    out = np.empty((steps, 2, 3), dtype=np.int64)
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


@intrinsic
def _float_bits(typingctx, value):
    """The IEEE-754 bits of a float64 as an int64 (a bit cast, no conversion)."""
    if value != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return types.int64(types.float64), codegen


@numba.njit(inline="always")
def _hist_add(counts, lows, highs, offset, mantissa_drop, value):
    """Add one value (>= 0) to a log-linear histogram and keep its bin's least and greatest
    value (``lows`` start at +inf, ``highs`` at -inf: ``min``/``max`` need no branch).

    The three arrays are taken out of the ``Histogram`` once per kernel call: numba counts a
    reference each time it takes an array out of a tuple."""
    if value <= 0.0:
        k = 0
    else:
        # numba's stub types the Python-level call of an intrinsic, whose first parameter is
        # the typing context; compiled callers pass only the value
        k = (_float_bits(value) >> mantissa_drop) - offset  # type: ignore[call-arg]
        # below the window: bin 1; above it (cannot happen below the bound): the top bin
        k = min(max(k, 1), counts.shape[0] - 1)
    lows[k] = min(lows[k], value)
    highs[k] = max(highs[k], value)
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
def _save_stream(streams, block, s0, s1, s2, s3, done):
    """Keep the general kernel's stream state and trials done, to resume in a later call."""
    streams.state[block, _W0] = s0
    streams.state[block, _W1] = s1
    streams.state[block, _W2] = s2
    streams.state[block, _W3] = s3
    streams.done[block] = done


@numba.njit(inline="always")
def _uniform(outputs, step, lane):
    """Trial ``lane``'s uniform for the first chunk of step ``step``: the top half (even
    steps) or the bottom half (odd steps) of its output in row ``step // 2``."""
    x = outputs[(step >> 1) * LANES + lane]
    if step & 1 == 0:
        return np.int64(x >> _SHIFT_32)
    return np.int64(x & _LOW_32)


@numba.njit(cache=True)
def _replay(outputs, lane, accept_correct, accept_any, width, per_step, total_retries, s0, s1,
            s2, s3):
    """Trial ``lane`` of the group, one step execution at a time: docs/model.md section 3
    for a scenario without checkpoints, confusion or random effects.

    Execution ``i`` inverts the trial's uniform for step ``i`` through the step's rows of
    ``accept_any`` and ``accept_correct`` (``_draws.execution_table``): the first entry of
    ``accept_any`` above it is the attempt that was accepted, right when the uniform is also
    below ``accept_correct`` there; none within the retries left (``per_step[i]``, capped by
    what is left of ``total_retries``) means the step ran out of them and the trial stops. A
    whole row rejected with retries left takes a fresh uniform for the next chunk of attempts
    from the generator's first stream, stepped alone (``s0..s3`` are updated in place; the
    trials of a group are replayed in order, so the draws do not depend on which others are).

    Returns
    -------
    (outcome, attempts, retries_used, first_wrong, stopped_at)
        ``first_wrong`` and ``stopped_at`` are 1-based steps, -1 for none.
    """
    tainted = False
    retries_used = 0
    attempts = 0
    first_wrong = -1
    for i in range(width.shape[0]):
        u = _uniform(outputs, i, lane)
        allowed = min(per_step[i], total_retries - retries_used)  # retries this execution
        made = 0  # attempts in earlier chunks
        while True:
            last = min(width[i], allowed + 1 - made)  # attempts of this chunk within budget
            k = 0
            while k < last and u >= accept_any[i, k]:
                k += 1
            if k < last or made + last > allowed:
                break
            made += last
            u = _uniform32(s0, s1, s2, s3)
        if k == last:  # out of retries after allowed + 1 attempts
            return (DETECTED_FAILURE, attempts + allowed + 1, retries_used + allowed,
                    first_wrong, i + 1)
        attempts += made + k + 1
        retries_used += made + k
        if u >= accept_correct[i, k]:
            tainted = True
            if first_wrong < 0:
                first_wrong = i + 1
    return (SILENT_FAILURE if tainted else SUCCESS), attempts, retries_used, first_wrong, -1


@numba.njit(nogil=True, cache=True, error_model="numpy")
def run_simple(streams, block_trials, design, counts_by_attempts, record, budget):
    r"""Trials of a scenario without checkpoints, confusion or random effects, whose attempts
    all cost ``design.unit_cost``.

    Trials run in groups of ``LANES`` (64), side by side. A group's generator step writes
    one 64-bit output per trial and two steps of the scenario: trial ``l`` takes the top
    half of its output for step ``2h`` and the bottom half for step ``2h + 1`` (``_uniform``)
    and inverts it through the step's rows of the thresholds :math:`A` and :math:`C` of
    ``_draws.execution_table``: one 32-bit uniform per step execution decides how many
    attempts the execution takes and how it ends, each probability to within
    :math:`2^{-32} \approx 2.3 \times 10^{-10}`.

    The inversion is a count. With :math:`A_{ij}` the row's thresholds, step ``i`` takes
    :math:`1 + k_i` attempts where :math:`k_i = \#\{j : u_i \ge A_{ij}\}`, so a trial that
    every step accepts makes :math:`n + \sum_i k_i` attempts, and it is a silent failure when
    :math:`\sum_{i,j} [u_i \ge C_{ij}] > \sum_i k_i` (step ``i`` accepted a wrong result
    when :math:`C_{ik_i} \le u_i < A_{ik_i}`, and :math:`C_{ij} \le A_{ij} \le C_{i,j+1}`). The vector pass counts these for the 64
    trials at once over the first ``FAST_COLUMNS`` thresholds of each row, loops numba
    compiles into vector instructions. A trial is then replayed execution by execution
    (``_replay``, which is the definition: the same uniforms give the same trial) when a
    uniform reaches the last counted threshold of its row (the step ran out of retries, or
    its execution ran longer than the vector pass counts), when its retries exceed the
    task-wide budget (which may then have cut an execution short), or when it is recorded.

    A trial's cost is ``attempts * unit_cost``, so all it keeps is ``counts_by_attempts[outcome,
    attempts] += 1``: the exact joint histogram of outcome and attempts, from which the
    driver computes every count, mean, variance and percentile.

    A call runs the blocks' trials in order, from where ``streams`` says each block stands,
    and returns once it has run at least ``budget`` trials (whole groups) or finished every
    block: a bounded slice of work, so that the driver can stop between slices. A block
    resumed in a later call continues its own generator: the trials do not depend on where
    the slices fall.

    Parameters
    ----------
    streams : _layout.Streams
        In/out: each block's generator state and trials done.
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
    per_step = design.per_step
    total_retries = design.total_retries
    # built here, not by the driver: one compiled function to load from numba's cache
    accept_correct, accept_any, width = execution_table(
        design.p, design.miss, design.false_reject, per_step, total_retries
    )
    unit_cost = design.unit_cost
    record_rows = record.outcome.shape[0]
    steps = per_step.shape[0]
    columns = min(accept_any.shape[1], FAST_COLUMNS)
    # A uniform at or above replay_at[i] is beyond what the vector pass resolves.
    replay_at = np.empty(steps, dtype=np.int64)
    can_be_wrong = False
    for i in range(steps):
        replay_at[i] = accept_any[i, min(width[i], columns) - 1]
        for j in range(columns):
            can_be_wrong |= accept_correct[i, j] != accept_any[i, j]
    outputs = np.empty(((steps + 1) // 2) * LANES, dtype=np.uint64)
    uniforms = np.empty(LANES, dtype=np.int64)
    attempts = np.empty(LANES, dtype=np.int64)
    passed_correct = np.empty(LANES, dtype=np.int64)  # sum over steps of #{j: u >= C_ij}
    replay = np.empty(LANES, dtype=np.int64)
    s0 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    s1 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    s2 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    s3 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    remaining = budget
    first_row = 0  # the record row of the block's first trial
    for block in range(block_trials.shape[0]):
        n_trials = block_trials[block]
        trial = streams.done[block]
        # the block's generator, word w of stream l in s<w>[l] (loops, not slice copies:
        # numba compiles a slice assignment slowly)
        for lane in range(GENERATOR_LANES):
            s0[lane] = streams.state[block, _W0 + lane]
            s1[lane] = streams.state[block, _W1 + lane]
            s2[lane] = streams.state[block, _W2 + lane]
            s3[lane] = streams.state[block, _W3 + lane]
        while trial < n_trials and remaining > 0:
            for at in range(0, outputs.shape[0], GENERATOR_LANES):
                _step_lanes(s0, s1, s2, s3, outputs, at)
            for lane in range(LANES):
                attempts[lane] = steps
                passed_correct[lane] = 0
                replay[lane] = 0
            for i in range(steps):
                row = (i >> 1) * LANES
                if i & 1 == 0:
                    for lane in range(LANES):
                        uniforms[lane] = np.int64(outputs[row + lane] >> _SHIFT_32)
                else:
                    for lane in range(LANES):
                        uniforms[lane] = np.int64(outputs[row + lane] & _LOW_32)
                for j in range(columns):
                    level = accept_any[i, j]
                    for lane in range(LANES):
                        attempts[lane] += uniforms[lane] >= level
                if can_be_wrong:
                    for j in range(columns):
                        level = accept_correct[i, j]
                        for lane in range(LANES):
                            passed_correct[lane] += uniforms[lane] >= level
                level = replay_at[i]
                for lane in range(LANES):
                    replay[lane] |= uniforms[lane] >= level
            lanes = min(LANES, n_trials - trial)
            for lane in range(lanes):
                row = first_row + trial + lane
                retries = attempts[lane] - steps
                if replay[lane] or retries > total_retries or row < record_rows:
                    outcome, made, retries_used, first_wrong, stopped_at = _replay(
                        outputs, lane, accept_correct, accept_any, width, per_step,
                        total_retries, s0, s1, s2, s3
                    )
                    if row < record_rows:
                        _record(record, row, outcome, made, made * unit_cost, retries_used, 0,
                                first_wrong, -1, stopped_at)
                else:
                    made = attempts[lane]
                    outcome = SILENT_FAILURE if passed_correct[lane] > retries else SUCCESS
                counts_by_attempts[outcome, made] += 1
            trial += lanes
            remaining -= lanes
        for lane in range(GENERATOR_LANES):
            streams.state[block, _W0 + lane] = s0[lane]
            streams.state[block, _W1 + lane] = s1[lane]
            streams.state[block, _W2 + lane] = s2[lane]
            streams.state[block, _W3 + lane] = s3[lane]
        streams.done[block] = trial
        first_row += n_trials
        if remaining <= 0:
            return trial == n_trials and block + 1 == block_trials.shape[0]
    return True


@numba.njit(nogil=True, cache=True, error_model="numpy")
def run_general(streams, block_trials, design, sums, cost_hist, attempts_hist, record, budget):
    r"""Trials of any scenario: docs/model.md section 3's pseudo-code, line by line.

    It draws from the first stream of each block's generator. Draw order within a trial: the
    task effect (when ``task_sd > 0``); for each execution of a step, its step effect (when
    ``step_sd > 0``); for each attempt one 64-bit output, whose top half draws the joint
    outcome (``_draws._four_way``) and whose bottom half the confusion transition (used when
    one is possible); at a checkpoint, the top half of one output for the check. Every
    probability is resolved to within :math:`2^{-32}`. Normals come from the ziggurat
    (``_draws._normal``), one output each but for about 2 in 100.

    The thresholds of a shifted ``p`` are computed once per distinct shifted value: for each
    execution when it has a step effect (an ``exp``, no transcendental function per attempt),
    and with a task effect alone once per trial for each step (kept in a cache that the next
    trial invalidates); the confused agent's thresholds only once it is confused at that
    value. An attempt's outcome and the confusion transition are computed without branches
    on the draws (a mispredicted branch costs more than the arithmetic).

    Like ``run_simple`` it runs a bounded slice (``budget`` trials) and resumes each block
    where ``streams`` says it stands; a block's sums are kept in ``sums`` between slices and
    continued in the same order, so they do not depend on where the slices fall.

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
    # the chance to change state after an attempt: [0] focused -> confused, [1] back
    transition = np.empty(2, dtype=np.int64)
    transition[0] = threshold(design.enter)
    transition[1] = threshold(design.recover)
    factor = design.factor
    task_sd = design.task_sd
    step_sd = design.step_sd
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
    steps = logit_p.shape[0]
    # The thresholds of each step's current execution, focused [i, 0] and confused [i, 1]
    # (the latter computed when first needed: confused_ready[i]): fixed for a step without
    # random effects or with a p of 0 or 1 (which shift() keeps), else recomputed for each
    # execution, or with a task effect alone once per trial (kept while shifted_at[i] ==
    # trial_stamp). One array throughout: numba counts references on an array variable
    # that is reassigned in a loop.
    thresholds = _fixed_thresholds(design)
    shifted = np.empty(steps)
    confused_ready = np.empty(steps, dtype=np.bool_)
    shifted_at = np.empty(steps, dtype=np.int64)
    for i in range(steps):
        confused_ready[i] = True
        shifted_at[i] = -1
    trial_stamp = 0
    remaining = budget
    first_row = 0  # the record row of the block's first trial
    for block in range(block_trials.shape[0]):
        n_trials = block_trials[block]
        start = streams.done[block]
        end = min(n_trials, start + remaining)
        s0 = streams.state[block, _W0]
        s1 = streams.state[block, _W1]
        s2 = streams.state[block, _W2]
        s3 = streams.state[block, _W3]
        # the block's sums, kept in registers and stored when the slice or the block ends
        n_success = sums.success[block]
        n_silent = sums.silent_failure[block]
        n_detected = sums.detected_failure[block]
        sum_attempts = sums.attempts[block]
        sum_attempts_sq = sums.attempts_sq[block]
        sum_cost = sums.cost[block]
        sum_cost_sq = sums.cost_sq[block]
        sum_cost_success = sums.cost_success[block]
        sum_cost_silent = sums.cost_silent[block]
        for trial in range(start, end):
            task_effect = 0.0
            if task_sd > 0.0:
                z, s0, s1, s2, s3 = _normal(s0, s1, s2, s3)
                task_effect = task_sd * z
            trial_stamp += 1  # the thresholds kept from the last trial's shift are stale
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
                shifted_here = not p_is_fixed[i] and (task_sd > 0.0 or step_sd > 0.0)
                if shifted_here and (step_sd > 0.0 or shifted_at[i] != trial_stamp):
                    shift = task_effect
                    if step_sd > 0.0:  # a p of its own for this execution
                        z, s0, s1, s2, s3 = _normal(s0, s1, s2, s3)
                        shift += step_sd * z
                    shifted[i] = _expit(logit_p[i] + shift)
                    t1, t2, t3 = _four_way(shifted[i], miss[i], false_reject[i])
                    thresholds[i, 0, 0] = t1
                    thresholds[i, 0, 1] = t2
                    thresholds[i, 0, 2] = t3
                    confused_ready[i] = False
                    shifted_at[i] = trial_stamp
                step_cost = attempt_cost[i]
                retry_cap = per_step[i]
                retries_here = 0
                while True:
                    x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                    attempts += 1
                    cost += step_cost
                    if confused and not confused_ready[i]:  # first confused at this p
                        t1, t2, t3 = _four_way(shifted[i] * factor, miss[i], false_reject[i])
                        thresholds[i, 1, 0] = t1
                        thresholds[i, 1, 1] = t2
                        thresholds[i, 1, 2] = t3
                        confused_ready[i] = True
                    state = 1 if confused else 0
                    u = np.int64(x >> _SHIFT_32)
                    accepted = u < thresholds[i, state, 1]
                    correct = (u < thresholds[i, state, 0]) | (
                        (u >= thresholds[i, state, 1]) & (u < thresholds[i, state, 2]))
                    if has_confusion:
                        # focused and wrong: enters with chance `enter`; confused and right:
                        # recovers with chance `recover`
                        confused ^= (confused == correct) & (
                            np.int64(x & _LOW_32) < transition[state])
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
            elif outcome == SILENT_FAILURE:  # with the success's: the utility's error
                sum_cost_silent += d
            _hist_add(cost_counts, cost_lows, cost_highs, cost_offset, mantissa_drop, cost)
            _hist_add(attempts_counts, attempts_lows, attempts_highs, attempts_offset,
                      mantissa_drop, float(attempts))
            row = first_row + trial
            if row < record_rows:
                _record(record, row, outcome, attempts, cost, retries_used, rollbacks_used,
                        first_wrong, caught_at, stopped_at)
        _save_stream(streams, block, s0, s1, s2, s3, end)
        sums.trials[block] = end
        sums.success[block] = n_success
        sums.silent_failure[block] = n_silent
        sums.detected_failure[block] = n_detected
        sums.attempts[block] = sum_attempts
        sums.attempts_sq[block] = sum_attempts_sq
        sums.cost[block] = sum_cost
        sums.cost_sq[block] = sum_cost_sq
        sums.cost_success[block] = sum_cost_success
        sums.cost_silent[block] = sum_cost_silent
        remaining -= end - start
        first_row += n_trials
        if remaining == 0:
            return end == n_trials and block + 1 == block_trials.shape[0]
    return True
