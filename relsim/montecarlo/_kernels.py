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
- ``run_general``, for everything else: the pseudo-code line by line, one draw per attempt,
  after a pass over 32 trials at once that draws their random effects and computes their
  shifted thresholds.

Scenarios with section 8's tables run on a third kernel, ``_kernel_v2.run_v2``, so that these
two keep their trials and their speed.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from relsim.montecarlo._draws import (
    _LOW_8,
    _LOW_32,
    _LOW_52,
    _ONE,
    _SHIFT_8,
    _SHIFT_9,
    _SHIFT_32,
    _ZIG_INNER,
    _ZIG_WIDTH,
    _expit_select,
    _four_way,
    _next,
    _normal_edge,
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

#: Trials the general kernel runs side by side (a group): a pass over the group draws their
#: normals and computes their shifted thresholds before the trials run one by one.
GENERAL_LANES = 32

#: Steps whose first execution's shifted p and thresholds the general kernel's group pass
#: computes (4 numbers per step and trial); a later step computes its own in the trial.
PRE_STEPS = 64

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


@numba.njit(inline="always")
def _execution(u, i, allowed, accept_any, width, s0, s1, s2, s3):
    """One execution of step ``i`` with ``allowed`` retries, inverted from the uniform ``u``
    through the step's row of ``accept_any``; a whole row rejected with retries left takes a
    fresh uniform from the first stream (``s0..s3``, updated in place) for the next chunk.

    Returns (k, last, made, u): the attempt accepted in the last chunk (``k == last``: none,
    out of retries after ``allowed + 1`` attempts), that chunk's length, the attempts of the
    chunks before it, and the uniform the accepted attempt is judged by (right when it is
    below ``accept_correct[i, k]``)."""
    made = 0  # attempts in earlier chunks
    while True:
        last = min(width[i], allowed + 1 - made)  # attempts of this chunk within budget
        k = 0
        while k < last and u >= accept_any[i, k]:
            k += 1
        if k < last or made + last > allowed:
            return k, last, made, u
        made += last
        u = _uniform32(s0, s1, s2, s3)


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
        allowed = min(per_step[i], total_retries - retries_used)  # retries this execution
        k, last, made, u = _execution(_uniform(outputs, i, lane), i, allowed, accept_any, width,
                                      s0, s1, s2, s3)
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


@numba.njit(inline="always")
def _ziggurat_fast(x):
    """The ziggurat's candidate for the output ``x`` and whether it needs ``_normal_edge``
    (1.5% of the draws): ``_draws._normal`` without its branch."""
    layer = np.intp(x & _LOW_8)
    mantissa = np.int64((x >> _SHIFT_9) & _LOW_52)
    negative = np.int64((x >> _SHIFT_8) & _ONE)
    signed = (mantissa ^ -negative) + negative  # -mantissa when negative
    return signed * _ZIG_WIDTH[layer], mantissa >= _ZIG_INNER[layer]


@numba.njit(cache=True)
def _normal_from(x, s0, s1, s2, s3):
    """The standard normal of the output ``x`` (``_draws._normal``), its rare cases drawing
    from the stream ``s0..s3``: (value, new state)."""
    z, edge = _ziggurat_fast(x)
    if edge:
        return _normal_edge(x, s0, s1, s2, s3)
    return z, s0, s1, s2, s3


@numba.njit(inline="always")
def _group_pass(s0, s1, s2, s3, raw, normals, needs_edge, task_effect, pre_p, pre, task_rows,
                pre_steps, shifted_step, logit_p, miss, false_reject, task_sd, step_sd):
    """``run_general``'s pass over a group of ``GENERAL_LANES`` trials (inlined: called, it
    made R7 10% slower, for no shorter a first compilation).

    Steps the 16 streams ``s0..s3`` together to fill ``raw`` with one output per normal
    (row 0 the task effects when ``task_rows`` is 1, then one row per step of the pass),
    turns them into ``normals`` (the ziggurat's fast path without a branch; its rare cases
    then in order, from the first stream stepped alone), the task effects into
    ``task_effect``, and each shifted step's ``p`` and four-way thresholds into ``pre_p``
    and ``pre``.
    """
    lanes_n = GENERAL_LANES
    count = raw.shape[0]
    for at in range(0, count, GENERATOR_LANES):
        _step_lanes(s0, s1, s2, s3, raw, at)
    for k in range(count):
        z, edge = _ziggurat_fast(raw[k])
        normals[k] = z
        needs_edge[k] = edge
    o0, o1, o2, o3 = s0[0], s1[0], s2[0], s3[0]
    for k in range(count):  # 1.5% of them, in order
        if needs_edge[k]:
            normals[k], o0, o1, o2, o3 = _normal_edge(raw[k], o0, o1, o2, o3)
    s0[0], s1[0], s2[0], s3[0] = o0, o1, o2, o3
    if task_sd > 0.0:
        for lane in range(lanes_n):
            task_effect[lane] = task_sd * normals[lane]
    for i in range(pre_steps):
        if not shifted_step[i]:
            continue
        base = logit_p[i]
        # (without a step effect, row 0: the task effect's normals, times 0)
        row = (task_rows + i) * lanes_n if step_sd > 0.0 else 0
        for lane in range(lanes_n):
            pre_p[i, lane] = _expit_select(
                base + (task_effect[lane] + step_sd * normals[row + lane]))
        for lane in range(lanes_n):
            t1, t2, t3 = _four_way(pre_p[i, lane], miss[i], false_reject[i])
            pre[i, 0, lane] = t1
            pre[i, 1, lane] = t2
            pre[i, 2, lane] = t3


# The general kernel's rare paths, called rather than inlined: each is compiled once, not
# into every place that needs it (the kernel's first compilation stays short).
@numba.njit(cache=True, error_model="numpy")
def _shifted_p(logit_p, shift):
    """``expit(logit_p + shift)``, as the group pass computes it."""
    return _expit_select(logit_p + shift)


@numba.njit(cache=True)
def _four_way_call(pe, miss, false_reject):
    """``_draws._four_way``."""
    return _four_way(pe, miss, false_reject)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def run_general(streams, block_trials, design, sums, cost_hist, attempts_hist, record, budget):
    r"""Trials of any scenario: docs/model.md section 3's pseudo-code, one draw per attempt.

    Trials run in groups of ``GENERAL_LANES`` (32). A group pass first does for the 32 at
    once what does not depend on a trial's path: it steps the 16 streams of the block's
    generator together to draw each trial's task effect and the step effect of the first
    execution of each of its first ``PRE_STEPS`` steps (the ziggurat's fast path without a
    branch, then its rare cases in order), and computes each trial's shifted ``p`` for
    those executions (``_draws._expit_select``: no call, so the loop is vectorized) and
    their four-way thresholds. Then the trials run one by one, the pseudo-code line by
    line, from the generator's first stream stepped alone: the first execution of a step
    reads its ``p`` and thresholds from the pass; a later one (after a rollback) draws a
    fresh step effect and computes its own (with a task effect alone, the trial's shift is
    the pass's). Each attempt takes one 64-bit output: its top half draws the joint
    outcome, its bottom half the confusion transition; a check takes the top half of one
    (none when its chance is 0). The confused agent's thresholds are computed once it is
    confused at that ``p``. Every probability is resolved to within :math:`2^{-32}`.

    Each step execution's effect is a fresh normal (a first execution's from the pass, used
    once, whatever the trial's path), and every draw is used once: the distribution is
    section 3's. The pass draws for all 32 trials of a group, counted or not, so the trials
    do not depend on how many a call runs.

    Like ``run_simple`` it runs a bounded slice (``budget`` trials, whole groups) and
    resumes each block where ``streams`` says it stands; a block's sums are kept in ``sums``
    between slices and continued in the same order, so they do not depend on where the
    slices fall.

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
    # Thresholds chosen by a state are read from small arrays, not selected between two
    # scalars: LLVM would move the threshold's arithmetic past such a select, into the loop.
    check_level = np.empty(2, dtype=np.int64)  # [seg_tainted]: a check catches the segment
    check_level[0] = threshold(design.false_alarm)
    check_level[1] = threshold(design.detect)
    rollbacks = design.rollbacks
    checkpoint_cost = design.checkpoint_cost
    rollback_cost = design.rollback_cost
    has_confusion = design.has_confusion
    transition = np.empty(2, dtype=np.int64)  # [confused]: the chance to change state
    transition[0] = threshold(design.enter)  # focused -> confused after a wrong attempt
    transition[1] = threshold(design.recover)  # confused -> focused after a right one
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
    lanes_n = GENERAL_LANES
    fixed = _fixed_thresholds(design)
    # A step whose p an effect shifts (p of 0 or 1 stays): its thresholds come from the pass.
    shifted_step = np.empty(steps, dtype=np.bool_)
    for i in range(steps):
        shifted_step[i] = not p_is_fixed[i] and (task_sd > 0.0 or step_sd > 0.0)
    pre_steps = min(steps, PRE_STEPS) if step_sd > 0.0 or task_sd > 0.0 else 0
    task_rows = 1 if task_sd > 0.0 else 0
    normal_rows = task_rows + (pre_steps if step_sd > 0.0 else 0)
    raw = np.empty(normal_rows * lanes_n, dtype=np.uint64)
    normals = np.empty(normal_rows * lanes_n)
    needs_edge = np.empty(normal_rows * lanes_n, dtype=np.bool_)
    task_effect = np.zeros(lanes_n)
    # the first execution of step i: its shifted p and its (focused) thresholds
    pre_p = np.empty((max(pre_steps, 1), lanes_n))
    pre = np.empty((max(pre_steps, 1), 3, lanes_n), dtype=np.int64)
    s0 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    s1 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    s2 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    s3 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    remaining = budget
    first_row = 0  # the record row of the block's first trial
    for block in range(block_trials.shape[0]):
        n_trials = block_trials[block]
        trial = streams.done[block]
        for lane in range(GENERATOR_LANES):
            s0[lane] = streams.state[block, _W0 + lane]
            s1[lane] = streams.state[block, _W1 + lane]
            s2[lane] = streams.state[block, _W2 + lane]
            s3[lane] = streams.state[block, _W3 + lane]
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
        while trial < n_trials and remaining > 0:
            # ---- the group pass: the same for every group, whichever of its trials count
            if normal_rows > 0:
                _group_pass(s0, s1, s2, s3, raw, normals, needs_edge, task_effect, pre_p, pre,
                            task_rows, pre_steps, shifted_step, logit_p, miss, false_reject,
                            task_sd, step_sd)
            # ---- the trials, one by one
            lanes = min(lanes_n, n_trials - trial)
            # the first stream, stepped alone (the next group's pass steps all 16 again)
            o0, o1, o2, o3 = s0[0], s1[0], s2[0], s3[0]
            for lane in range(lanes):
                effect = task_effect[lane]
                i = 0
                seg_start = 0
                done_once = 0  # steps 0 .. done_once - 1 have been executed
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
                    # this execution's thresholds, focused (f) and confused (c: computed
                    # once the agent is confused here, c_ready)
                    pe = 0.0
                    if not shifted_step[i]:
                        f1 = fixed[i, 0, 0]
                        f2 = fixed[i, 0, 1]
                        f3 = fixed[i, 0, 2]
                        c1 = fixed[i, 1, 0]
                        c2 = fixed[i, 1, 1]
                        c3 = fixed[i, 1, 2]
                        c_ready = True
                    else:
                        if i < pre_steps and (i >= done_once or step_sd == 0.0):
                            pe = pre_p[i, lane]
                            f1 = pre[i, 0, lane]
                            f2 = pre[i, 1, lane]
                            f3 = pre[i, 2, lane]
                        else:  # a fresh effect for this execution, or a step past the pass
                            shift = effect
                            if step_sd > 0.0:
                                x, o0, o1, o2, o3 = _next(o0, o1, o2, o3)
                                z, o0, o1, o2, o3 = _normal_from(x, o0, o1, o2, o3)
                                shift += step_sd * z
                            pe = _shifted_p(logit_p[i], shift)
                            f1, f2, f3 = _four_way_call(pe, miss[i], false_reject[i])
                        c1, c2, c3 = f1, f2, f3
                        c_ready = not has_confusion
                    done_once = max(done_once, i + 1)
                    step_cost = attempt_cost[i]
                    retry_cap = per_step[i]
                    retries_here = 0
                    while True:
                        x, o0, o1, o2, o3 = _next(o0, o1, o2, o3)
                        attempts += 1
                        cost += step_cost
                        if confused and not c_ready:  # first confused at this p
                            c1, c2, c3 = _four_way_call(pe * factor, miss[i], false_reject[i])
                            c_ready = True
                        u = np.int64(x >> _SHIFT_32)
                        a1 = c1 if confused else f1
                        a2 = c2 if confused else f2
                        a3 = c3 if confused else f3
                        accepted = u < a2
                        correct = (u < a1) | ((u >= a2) & (u < a3))
                        if has_confusion:
                            # focused and wrong: enters with chance `enter`; confused and
                            # right: recovers with chance `recover`
                            level = transition[np.intp(confused)]
                            confused ^= (confused == correct) & (np.int64(x & _LOW_32) < level)
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
                        level = check_level[np.intp(seg_tainted)]
                        caught = False
                        if level > 0:  # (a chance of 0 needs no draw)
                            x, o0, o1, o2, o3 = _next(o0, o1, o2, o3)
                            caught = np.int64(x >> _SHIFT_32) < level
                        if caught:
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
                row = first_row + trial + lane
                if row < record_rows:
                    _record(record, row, outcome, attempts, cost, retries_used,
                            rollbacks_used, first_wrong, caught_at, stopped_at)
            s0[0], s1[0], s2[0], s3[0] = o0, o1, o2, o3
            trial += lanes
            remaining -= lanes
        for lane in range(GENERATOR_LANES):
            streams.state[block, _W0 + lane] = s0[lane]
            streams.state[block, _W1 + lane] = s1[lane]
            streams.state[block, _W2 + lane] = s2[lane]
            streams.state[block, _W3 + lane] = s3[lane]
        streams.done[block] = trial
        sums.trials[block] = trial
        sums.success[block] = n_success
        sums.silent_failure[block] = n_silent
        sums.detected_failure[block] = n_detected
        sums.attempts[block] = sum_attempts
        sums.attempts_sq[block] = sum_attempts_sq
        sums.cost[block] = sum_cost
        sums.cost_sq[block] = sum_cost_sq
        sums.cost_success[block] = sum_cost_success
        sums.cost_silent[block] = sum_cost_silent
        first_row += n_trials
        if remaining <= 0:
            return trial == n_trials and block + 1 == block_trials.shape[0]
    return True
