r"""The timeline's vectorised kernel: 64 independent trials side by side, with their time.

Private; :mod:`relsim.timeline._fast` runs it (instead of ``_kernel.run_trials``) on the
chains that Monte Carlo runs on its fast kernel (``relsim.montecarlo._kernels.run_simple``:
no checkpoints, no confusion, no random effects, every attempt at the same cost) whose
attempts all take the same duration, constant or lognormal, whose verification is constant
or lognormal, and which have no backoff (``_fast.vectorised``). It is ``run_simple`` with docs/model.md
section 7's durations added:

- section 3 as ``run_simple`` draws it: one 32-bit uniform per step execution, inverted
  through the step's table (``_draws.execution_table``), the attempts and the outcome counted
  for 64 trials at once (a trial that runs out of retries masked from that step on);
- the durations of a group's attempts: one lognormal factor ``exp(sigma z)`` per trial and
  attempt (ziggurat normals without a branch, their exponentials in vector instructions),
  summed per trial over its own attempts in their order; a constant duration is its count
  times the value, a lognormal one its median times its factors' sum, and the
  verifications likewise;
- the crash clock (one 53-bit uniform per trial) and the deadline compared with the trial's
  end once: a trial that ends before both (its end strictly before the deadline, its crash
  clock ringing after its end by a margin of 1e-9 relative, which an exponential
  without a logarithm tells) keeps the vector pass's outcome, attempts and duration.

Every other trial (it ran longer than the vector pass counts or met the task-wide budget, or
it may meet the deadline or the crash clock) is replayed one action at a time from the same
uniforms and factors (``_replay``, which is the definition, section 7's pseudo-code: an
attempt is booked as it starts, the clock advances by each timed action, and the crash
clock, the deadline and the end of the action are compared as the simpy path's events are:
``_kernel._advance``; a trial whose section 3 the pass resolved is walked from the pass's
counts of attempts per step, ``_walk``, without drawing section 3 again). The clock after an action is written as the vector pass
writes a trial's end (``a * (sum of the attempts' factors so far) + b * (sum of the
verifications' factors so far)``), so a trial that the vector pass keeps is the trial that
its replay gives, bit for bit (``tests/test_timeline_kernel.py`` replays every trial and
compares). Compiled with ``cache=True``: after editing ``relsim/montecarlo/_draws.py``,
``_kernels.py`` or ``relsim/timeline/_kernel.py``, touch this file too.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from relsim.montecarlo._draws import (
    _INV_SCALE,
    _LOW_8,
    _LOW_32,
    _LOW_52,
    _ONE,
    _SHIFT_8,
    _SHIFT_9,
    _SHIFT_11,
    _SHIFT_32,
    _ZIG_INNER,
    _ZIG_WIDTH,
    _bits_float,
    _exp_nonpositive,
    _normal,
    _normal_edge,
    _step_lanes,
    execution_table,
)
from relsim.montecarlo._kernels import FAST_COLUMNS, LANES, _execution, _float_bits, _uniform
from relsim.montecarlo._layout import GENERATOR_LANES
from relsim.timeline._kernel import (
    _DETECTED,
    _EXPONENT_BIAS,
    _GOING,
    _INFRA,
    _MANTISSA_BITS,
    _ROUNDER_BITS,
    _SILENT,
    _SUCCESS,
    _TIMEOUT,
    LOGNORMAL,
    exp_parts,
)

#: A trial's crash clock must ring later than ``1 / (1 - CRASH_MARGIN)`` times its end (in
#: the exponential's scale) for the vector pass to keep it; closer ones are replayed, where
#: the clock is computed as ``_kernel`` computes it.
CRASH_MARGIN = 1e-9

_TWO52 = 4503599627370496.0  # 2**52: a float whose low mantissa bits are an integer's
_TWO52_BITS = np.int64(0x4330000000000000)
_SIGN_SHIFT = np.int64(63)


@numba.njit(inline="always")
def _advance_to(now, end, crash_at, deadline, overdue):
    """``_kernel._advance`` for an action that ends at ``end`` (> ``now``)."""
    if overdue:
        return now, _TIMEOUT, overdue
    if crash_at <= end and crash_at <= deadline:
        return crash_at, _INFRA, overdue
    if deadline < end:
        return deadline, _TIMEOUT, overdue
    return end, _GOING, deadline == end


@numba.njit(inline="always")
def _exp(v):
    """``_kernel.exp_many`` of one value (its polynomial, ``_kernel.exp_parts``), inlined in
    a loop that numba vectorizes: the same result, within 3e-16 of ``math.exp``."""
    p, t = exp_parts(v)
    # 2**whole from the low bits of t (numba's stubs type an intrinsic's Python-level call
    # with its typing context first)
    bits: int = _float_bits(t)  # type: ignore[call-arg]
    scale: float = _bits_float((bits - _ROUNDER_BITS + _EXPONENT_BIAS) << _MANTISSA_BITS)
    return p * scale


@numba.njit(inline="always")
def _candidate(x, width):
    """``_kernels._ziggurat_fast`` of the output ``x`` whose layer's width (its
    ``_ZIG_WIDTH``) is ``width``, without an integer-to-float conversion (which AVX2 does
    not have in vector form): the 52-bit mantissa made a float by its bits, the sign put in
    by its bit. The same value (a zero may come out as -0.0), and the mantissa."""
    mantissa = np.int64((x >> _SHIFT_9) & _LOW_52)
    # (numba's stubs type an intrinsic's Python-level call with its typing context first)
    whole = _bits_float(mantissa | _TWO52_BITS) - _TWO52  # type: ignore[call-arg]
    sign = np.int64((x >> _SHIFT_8) & _ONE) << _SIGN_SHIFT
    return _bits_float(_float_bits(whole * width) ^ sign), mantissa


@numba.njit(nogil=True, cache=True, fastmath={"contract"})
def _draw_factors(s0, s1, s2, s3, raw, edges, normals, inners, out, count, sigma):
    """``out[:count] = exp(sigma z)`` for ``count`` (a multiple of ``GENERATOR_LANES``, and
    so of 8) fresh standard normals ``z`` (``_draws._normal``'s ziggurat): the 16 streams stepped
    together; the layers' table entries looked up in a loop of their own (LLVM makes no
    AVX2 gather of them), so that the ziggurat's fast path runs in vector instructions, with
    no branch; its rare cases (``edges``) in order from the first stream alone; the
    exponentials side by side (``_exp``, its multiply-adds fused: a function of its own, so
    that nothing of the kernel's own arithmetic is fused, which its replay would not be).
    ``inners`` and ``out`` (the layers' widths at first) are scratch until the end."""
    for at in range(0, count, GENERATOR_LANES):
        _step_lanes(s0, s1, s2, s3, raw, at)
    for k in range(count):
        layer = np.intp(raw[k] & _LOW_8)
        out[k] = _ZIG_WIDTH[layer]
        inners[k] = _ZIG_INNER[layer]
    for k in range(count):
        z, mantissa = _candidate(raw[k], out[k])
        normals[k] = sigma * z
        edges[k] = mantissa >= inners[k]
    # the rare cases (1.5%), in order: eight flags read at once as a word (about one word
    # in nine has one)
    words = edges[:count].view(np.uint64)
    o0, o1, o2, o3 = s0[0], s1[0], s2[0], s3[0]
    for w in range(count // 8):
        if words[w]:
            for k in range(8 * w, 8 * w + 8):
                if edges[k]:
                    z, o0, o1, o2, o3 = _normal_edge(raw[k], o0, o1, o2, o3)
                    normals[k] = sigma * z
    s0[0], s1[0], s2[0], s3[0] = o0, o1, o2, o3
    for k in range(count):
        out[k] = _exp(normals[k])


@numba.njit(inline="always")
def _factor(factors, spare, m, lane, steps, extras, extra_at, lognormal):
    """The factor of a trial's attempt ``m`` (or its verification's): 1 for a constant
    duration; the group's draw (row ``m`` of the first ``steps``, then the trial's
    ``extras`` from ``extra_at`` on); past those the trial's fresh ones, ``spare``."""
    if not lognormal:
        return 1.0
    if m < steps:
        return factors[m * LANES + lane]
    if m - steps < extras:
        return factors[extra_at + m - steps]
    return spare[m - steps - extras]


@numba.njit(cache=True)
def _fresh_factor(s0, s1, s2, s3, sigma):
    """``exp(sigma z)`` for a fresh normal from the first stream."""
    z, a, b, c, d = _normal(s0[0], s1[0], s2[0], s3[0])
    s0[0], s1[0], s2[0], s3[0] = a, b, c, d
    return math.exp(sigma * z)


@numba.njit(inline="always")
def _sum_factors(factors, steps, extra_at, attempts, out):
    """``out[lane]``: the sum of trial ``lane``'s factors (``_factor``'s) over its counted
    attempts, added in the order of the attempts (as its replay adds them)."""
    for lane in range(LANES):
        out[lane] = 0.0
    for m in range(steps):
        base = m * LANES
        for lane in range(LANES):
            out[lane] += factors[base + lane] if m < attempts[lane] else 0.0
    for lane in range(LANES):
        at = extra_at[lane]
        total = out[lane]
        for j in range(attempts[lane] - steps):
            total += factors[at + j]
        out[lane] = total


@numba.njit(inline="always")
def _executions(outputs, lane, accept_correct, accept_any, width, per_step, total_retries,
                s0, s1, s2, s3, executed):
    """Section 3 of trial ``lane`` as ``relsim.montecarlo._kernels._replay`` draws it (the
    same uniforms; a fresh uniform from the first stream for each chunk past a table's row):
    ``executed[i]`` the attempts of step ``i``'s execution. Returns (the last step executed,
    the outcome without time: a detected failure there, else a success or a silent
    failure)."""
    tainted = False
    retries_used = 0
    for i in range(width.shape[0]):
        allowed = min(per_step[i], total_retries - retries_used)  # retries this execution
        k, last, made, u = _execution(_uniform(outputs, i, lane), i, allowed, accept_any, width,
                                      s0, s1, s2, s3)
        if k == last:  # out of retries after allowed + 1 attempts
            executed[i] = allowed + 1
            return i, _DETECTED
        executed[i] = made + k + 1
        retries_used += made + k
        if u >= accept_correct[i, k]:
            tainted = True
    return width.shape[0] - 1, (_SILENT if tainted else _SUCCESS)


@numba.njit(inline="always")
def _walk(executed, stride, last_step, outcome, lane, steps, att_factors, ver_factors,
          extra_at, extras, att_spare, ver_spare, att_a, att_lognormal, ver_a, ver_lognormal,
          crash_at, deadline):
    """Section 7 of a trial whose step ``i`` made ``executed[i * stride]`` attempts (from
    ``_executions``, or the vector pass's counts): each attempt booked as
    it starts, its duration and its verification's taking the clock to
    ``att_a * A + ver_a * V`` (``A`` and ``V`` the sums of the factors so far,
    ``_factor``'s), each end compared with the crash clock ``crash_at`` and the deadline as
    ``_kernel._advance`` does: (outcome, attempts, duration). No call in its loops (one,
    even untaken, made them several times slower)."""
    attempts = 0
    att_sum = 0.0
    ver_sum = 0.0
    now = 0.0
    overdue = False
    for i in range(last_step + 1):
        for _ in range(executed[i * stride]):
            f = _factor(att_factors, att_spare, attempts, lane, steps, extras, extra_at,
                        att_lognormal)
            g = _factor(ver_factors, ver_spare, attempts, lane, steps, extras, extra_at,
                        ver_lognormal)
            attempts += 1  # booked as it starts
            att_sum += f
            if att_a * f > 0.0:
                end = att_a * att_sum + ver_a * ver_sum
                now, ended, overdue = _advance_to(now, end, crash_at, deadline, overdue)
                if ended != _GOING:
                    return ended, attempts, now
            ver_sum += g
            if ver_a * g > 0.0:
                end = att_a * att_sum + ver_a * ver_sum
                now, ended, overdue = _advance_to(now, end, crash_at, deadline, overdue)
                if ended != _GOING:
                    return ended, attempts, now
    return outcome, attempts, now


@numba.njit(cache=True, error_model="numpy")
def _replay(outputs, lane, accept_correct, accept_any, width, per_step, total_retries,
            s0, s1, s2, s3, executed, att_factors, ver_factors, extra_at, extras, att_spare,
            ver_spare, att_a, att_lognormal, att_sigma, ver_a, ver_lognormal, ver_sigma,
            crash_u, crash_rate, deadline):
    """Trial ``lane`` of the group, one action at a time (the definition of its trial):
    ``_executions``, then a fresh factor from the first stream for each attempt past the
    ``steps + extras`` the group drew for it (its attempt's, then its verification's), then
    ``_walk`` from the crash clock ``-log1p(-crash_u) / crash_rate``: (outcome, attempts,
    duration)."""
    steps = width.shape[0]
    last_step, outcome = _executions(outputs, lane, accept_correct, accept_any, width,
                                     per_step, total_retries, s0, s1, s2, s3, executed)
    total = 0
    for i in range(last_step + 1):
        total += executed[i]
    for m in range(steps + extras, total):
        if att_lognormal:
            att_spare[m - steps - extras] = _fresh_factor(s0, s1, s2, s3, att_sigma)
        if ver_lognormal:
            ver_spare[m - steps - extras] = _fresh_factor(s0, s1, s2, s3, ver_sigma)
    crash_at = math.inf
    if crash_rate > 0.0:
        crash_at = -math.log1p(-crash_u) / crash_rate
    return _walk(executed, 1, last_step, outcome, lane, steps, att_factors, ver_factors,
                 extra_at, extras, att_spare, ver_spare, att_a, att_lognormal, ver_a,
                 ver_lognormal, crash_at, deadline)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def run_lanes(state, design, timing, outcome_out, attempts_out, cost_out, duration_out,
              replay_all):
    r"""Run ``len(outcome_out)`` independent trials, 64 side by side; write each one's outcome
    code, attempts, cost (attempts times ``design.unit_cost``) and duration, as
    ``_kernel.run_trials`` does.

    Per group of 64 trials, from the block's generator (``state``, updated in place: the 16
    streams stepped together): one output row per two steps (``run_simple``'s uniforms), one
    for the crash clocks (when ``crash_rate > 0``), and for a lognormal attempt (then a
    lognormal verification) a normal per attempt: a row of 64 for each of the first
    ``steps`` attempts, then each trial's further attempts, as the vector pass counts them,
    one after another (``_factor``). The ziggurat's rare cases, the replayed trials' chunks
    past their table and their factors past those the group drew come from the first stream
    alone, in order.

    The vector pass counts each step's attempts as ``run_simple`` does, with a mask that
    ends a trial at the step that runs out of retries (a detected failure, kept by the
    pass when that step's row is counted whole). A trial that the pass resolves but that the
    deadline or its crash clock may end is walked action by action from the pass's counts
    (``_walk``); one that the pass does not resolve is replayed (``_replay``).
    ``replay_all`` replays every trial (the tests: the same trials, bit for bit).

    Parameters
    ----------
    state : (STATE_WORDS,) uint64
    design : relsim.montecarlo._layout.Design
    timing : relsim.timeline._fast.Timing
        Of a scenario that :func:`eligible` accepts.
    outcome_out : (trials,) int8
    attempts_out : (trials,) int64
    cost_out, duration_out : (trials,) float64
    replay_all : bool
    """
    per_step = design.per_step
    total_retries = design.total_retries
    accept_correct, accept_any, width = execution_table(
        design.p, design.miss, design.false_reject, per_step, total_retries
    )
    unit_cost = design.unit_cost
    steps = per_step.shape[0]
    att_a = timing.attempt_a[0]
    att_lognormal = timing.attempt_kind[0] == LOGNORMAL
    att_sigma = timing.sigmas[timing.attempt_which[0]] if att_lognormal else 0.0
    ver_a = timing.verify_a
    ver_lognormal = timing.verify_kind == LOGNORMAL
    ver_sigma = timing.sigmas[timing.verify_which] if ver_lognormal else 0.0
    deadline = timing.deadline
    crash_rate = timing.crash_rate
    columns = min(accept_any.shape[1], FAST_COLUMNS)
    # A uniform at or above replay_at[i] is beyond what the vector pass resolves: out of
    # retries when the step's whole row is counted (whole[i]: the trial ends there as a
    # detected failure, which the vector pass keeps), else a longer execution (replayed).
    replay_at = np.empty(steps, dtype=np.int64)
    whole = np.empty(steps, dtype=np.bool_)
    can_be_wrong = False
    for i in range(steps):
        replay_at[i] = accept_any[i, min(width[i], columns) - 1]
        whole[i] = width[i] <= columns
        for j in range(columns):
            can_be_wrong |= accept_correct[i, j] != accept_any[i, j]
    outputs = np.empty(((steps + 1) // 2) * LANES, dtype=np.uint64)
    uniforms = np.empty(LANES, dtype=np.int64)
    attempts = np.empty(LANES, dtype=np.int64)
    passed_correct = np.empty(LANES, dtype=np.int64)  # sum over steps of #{j: u >= C_ij}
    replay = np.empty(LANES, dtype=np.int64)
    alive = np.empty(LANES, dtype=np.int64)  # 1 until a step runs out of retries
    executions = np.empty(LANES, dtype=np.int64)  # steps executed
    crash_raw = np.empty(LANES, dtype=np.uint64)
    crash_u = np.zeros(LANES)
    att_sum = np.empty(LANES)
    ver_sum = np.empty(LANES)
    end = np.empty(LANES)
    # exp(-crash_rate * end), the chance of no crash by the end, less the margin; without
    # crashes 2, above any 1 - u
    survive = np.full(LANES, 2.0)
    # the factors of a group: the dense rows, then room for a retry every other step a
    # trial on average (grown when a group needs more)
    dense = steps * LANES
    factor_rows = dense + (steps // 2 + 1) * LANES if att_lognormal or ver_lognormal else 1
    extra_at = np.empty(LANES, dtype=np.int64)
    longest = 0  # attempts of one trial, at most
    for i in range(steps):
        longest += min(per_step[i], total_retries) + 1
    longest = min(longest, steps + total_retries)
    att_spare = np.empty(longest if att_lognormal else 1)
    ver_spare = np.empty(longest if ver_lognormal else 1)
    executed = np.empty(steps, dtype=np.int64)
    counts = np.empty(steps * LANES, dtype=np.int64)  # [i * LANES + lane]: step i's attempts
    raw = np.empty(factor_rows, dtype=np.uint64)
    normals = np.empty(factor_rows)
    edges = np.empty(factor_rows, dtype=np.bool_)
    inners = np.empty(factor_rows, dtype=np.int64)
    att_factors = np.empty(factor_rows if att_lognormal else 1)
    ver_factors = np.empty(factor_rows if ver_lognormal else 1)
    s0 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    s1 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    s2 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    s3 = np.empty(GENERATOR_LANES, dtype=np.uint64)
    for lane in range(GENERATOR_LANES):
        s0[lane] = state[lane]
        s1[lane] = state[GENERATOR_LANES + lane]
        s2[lane] = state[2 * GENERATOR_LANES + lane]
        s3[lane] = state[3 * GENERATOR_LANES + lane]
    n_trials = outcome_out.shape[0]
    trial = 0
    while trial < n_trials:
        # ---- section 3, as run_simple counts it
        for at in range(0, outputs.shape[0], GENERATOR_LANES):
            _step_lanes(s0, s1, s2, s3, outputs, at)
        for lane in range(LANES):
            attempts[lane] = 0
            passed_correct[lane] = 0
            replay[lane] = 0
            alive[lane] = 1
            executions[lane] = 0
        for i in range(steps):
            row = (i >> 1) * LANES
            if i & 1 == 0:
                for lane in range(LANES):
                    uniforms[lane] = np.int64(outputs[row + lane] >> _SHIFT_32)
            else:
                for lane in range(LANES):
                    uniforms[lane] = np.int64(outputs[row + lane] & _LOW_32)
            here = counts[i * LANES:(i + 1) * LANES]  # this step's attempts, by trial
            for lane in range(LANES):  # (a trial that ended makes no more attempts)
                executions[lane] += alive[lane]
                here[lane] = alive[lane]
            for j in range(columns):
                level = accept_any[i, j]
                for lane in range(LANES):
                    here[lane] += alive[lane] & (uniforms[lane] >= level)
            if can_be_wrong:
                for j in range(columns):
                    level = accept_correct[i, j]
                    for lane in range(LANES):
                        passed_correct[lane] += alive[lane] & (uniforms[lane] >= level)
            level = replay_at[i]
            if whole[i]:  # out of retries: width[i] attempts, one less than counted
                for lane in range(LANES):
                    failed = alive[lane] & (uniforms[lane] >= level)
                    here[lane] -= failed
                    alive[lane] -= failed
            else:
                for lane in range(LANES):
                    replay[lane] |= alive[lane] & (uniforms[lane] >= level)
            for lane in range(LANES):
                attempts[lane] += here[lane]
        # ---- section 7: the crash clocks, then the durations of the counted attempts
        if crash_rate > 0.0:
            for at in range(0, LANES, GENERATOR_LANES):
                _step_lanes(s0, s1, s2, s3, crash_raw, at)
            for lane in range(LANES):
                crash_u[lane] = np.int64(crash_raw[lane] >> _SHIFT_11) * _INV_SCALE
        # the factors: a row of 64 for each of the first `steps` attempts (most trials
        # make them), then each trial's further attempts (as counted) one after another
        total = 0
        for lane in range(LANES):
            extra_at[lane] = dense + total
            total += max(attempts[lane] - steps, 0)
        count = dense + -(-total // GENERATOR_LANES) * GENERATOR_LANES
        if (att_lognormal or ver_lognormal) and count > raw.shape[0]:  # (refilled below)
            raw = np.empty(2 * count, dtype=np.uint64)
            normals = np.empty(2 * count)
            edges = np.empty(2 * count, dtype=np.bool_)
            inners = np.empty(2 * count, dtype=np.int64)
            att_factors = np.empty(2 * count if att_lognormal else 1)
            ver_factors = np.empty(2 * count if ver_lognormal else 1)
        if att_lognormal:
            _draw_factors(s0, s1, s2, s3, raw, edges, normals, inners, att_factors, count,
                          att_sigma)
            _sum_factors(att_factors, steps, extra_at, attempts, att_sum)
        else:
            for lane in range(LANES):
                att_sum[lane] = float(attempts[lane])
        if ver_lognormal:
            _draw_factors(s0, s1, s2, s3, raw, edges, normals, inners, ver_factors, count,
                          ver_sigma)
            _sum_factors(ver_factors, steps, extra_at, attempts, ver_sum)
        else:
            for lane in range(LANES):
                ver_sum[lane] = float(attempts[lane])
        for lane in range(LANES):
            end[lane] = att_a * att_sum[lane] + ver_a * ver_sum[lane]
        if crash_rate > 0.0:
            for lane in range(LANES):
                survive[lane] = _exp_nonpositive(-crash_rate * end[lane]) * (1.0 - CRASH_MARGIN)
        # ---- each trial: the vector pass's, or its replay
        lanes = min(LANES, n_trials - trial)
        for lane in range(lanes):
            retries = attempts[lane] - executions[lane]
            row = trial + lane
            kept = (not replay_all and not replay[lane] and retries <= total_retries
                    and end[lane] < deadline and 1.0 - crash_u[lane] < survive[lane])
            resolved = not replay_all and not replay[lane] and retries <= total_retries
            if not alive[lane]:
                outcome = _DETECTED
            elif passed_correct[lane] > retries:
                outcome = _SILENT
            else:
                outcome = _SUCCESS
            if kept:
                made = attempts[lane]
                outcome_out[row] = outcome
                duration_out[row] = end[lane]
            elif resolved:  # the deadline or the crash clock may end it: walk its actions
                crash_at = math.inf
                if crash_rate > 0.0:
                    crash_at = -math.log1p(-crash_u[lane]) / crash_rate
                outcome, made, seconds = _walk(
                    counts[lane:], LANES, steps - 1, outcome, lane, steps, att_factors,
                    ver_factors, extra_at[lane], max(attempts[lane] - steps, 0), att_spare,
                    ver_spare, att_a, att_lognormal, ver_a, ver_lognormal, crash_at, deadline)
                outcome_out[row] = outcome
                duration_out[row] = seconds
            else:
                outcome, made, seconds = _replay(
                    outputs, lane, accept_correct, accept_any, width, per_step, total_retries,
                    s0, s1, s2, s3, executed, att_factors, ver_factors, extra_at[lane],
                    max(attempts[lane] - steps, 0), att_spare, ver_spare, att_a, att_lognormal,
                    att_sigma, ver_a, ver_lognormal, ver_sigma, crash_u[lane], crash_rate,
                    deadline)
                outcome_out[row] = outcome
                duration_out[row] = seconds
            attempts_out[row] = made
            cost_out[row] = made * unit_cost
        trial += lanes
    for lane in range(GENERATOR_LANES):
        state[lane] = s0[lane]
        state[GENERATOR_LANES + lane] = s1[lane]
        state[2 * GENERATOR_LANES + lane] = s2[lane]
        state[3 * GENERATOR_LANES + lane] = s3[lane]
