r"""The forward pass of ``_chain.conditional_values`` as one compiled loop (numba).

Private to ``relsim.exact``. The pass is the same Markov chain, swept in the same order
(rollback layers outside, steps inside); two things change, neither what is computed:

- **One task-effect node at a time.** The nodes never interact, so the loop runs the whole
  layered pass for one node before the next: its state (a few hundred numbers) and its step
  kernels stay in the first-level cache, and no product is a thin BLAS call.
- **(untainted, all) instead of (untainted, tainted).** A step moves untainted mass with the
  accepted-correct matrices :math:`U_k` and every mass, tainted or not, with the accepted
  matrices :math:`U_k + W_k` (a wrong result taints a clean segment, and a tainted one stays
  tainted), so carrying ``u`` and ``a = u + t`` needs two of the three blocks of the numpy
  product's non-zero ones:

  .. math::

      u'_{c_2}(r) = \sum_{k, c} U_k[c_2, c]\, u_c(r - k),\qquad
      a'_{c_2}(r) = \sum_{k, c} (U_k + W_k)[c_2, c]\, a_c(r - k),

  and the tainted mass a checkpoint reads is :math:`a' - u'`. The numbers agree with the numpy
  pass to rounding (tests/test_exact_compiled.py holds them within 1e-12).

Compiled by numba with ``cache=True`` (the machine code is kept in ``__pycache__`` beside this
file, or ``NUMBA_CACHE_DIR``); importing this module imports numba, so ``_chain`` imports it
only when the pass is long enough to pay for that (see ``_chain.use_compiled``).
"""

from __future__ import annotations

import numba
import numpy as np

# Rows of the result: _chain's SUCCESS, SILENT, DETECTED, ATTEMPTS, COST.
_SUCCESS, _SILENT, _DETECTED, _ATTEMPTS, _COST = range(5)


@numba.njit(cache=True, nogil=True)
def forward_pass(
    kernel_of,
    correct,
    accepted,
    lost,
    checkpoint_after,
    target_slot,
    slot_at,
    slot_position,
    attempt_cost,
    checkpoint_cost,
    rollback_cost,
    false_alarm,
    detect,
    rollbacks,
    n_d,
    result,
):
    """Add the five expectations of every node's pass to ``result`` ``(5, z)``.

    ``kernel_of[i]``: the kernel of step ``i``; ``correct`` and ``accepted`` ``(kernels, z,
    C, 4 B, C)``: :math:`U_k[c_2, c]` and :math:`(U_k + W_k)[c_2, c]` at ``[.., c2, k, c]``,
    zero past the last shift (``B`` blocks of four shifts); ``lost`` ``(kernels, z, C, R,
    2)``: from confusion state ``c`` with ``r`` retries used, the probability of running out
    of retries and the expected attempts. ``checkpoint_after[i]``: a checkpoint right after
    step ``i``; ``target_slot[i]``: the slot of the segment start a rollback from it returns
    to; ``slot_at[j]``: the slot of position ``j`` (-1 when no rollback returns there);
    ``slot_position``: each slot's position. ``n_d``: 2 with checkpoints (the doomed bit),
    else 1.
    """
    n = kernel_of.size
    n_z = correct.shape[1]
    c_n = correct.shape[2]
    blocks = correct.shape[3] // 4
    n_r = lost.shape[4]
    n_slots = slot_position.size
    # The state over (c, doomed, retries used), after `pad` zeros on the last axis: shifts of
    # up to 4 B - 1 read them instead of testing bounds (the loops then vectorise).
    pad = 4 * blocks - 1
    untainted = np.zeros((c_n, n_d, pad + n_r))
    every = np.zeros((c_n, n_d, pad + n_r))
    next_untainted = np.zeros((c_n, n_d, pad + n_r))
    next_every = np.zeros((c_n, n_d, pad + n_r))
    pending = np.zeros((n_slots, n_d, n_r))  # mass entering this layer, by segment start
    arriving = np.zeros(n_slots, dtype=np.bool_)
    onward = np.zeros((n_slots, n_d, n_r))  # mass entering the next layer
    onward_set = np.zeros(n_slots, dtype=np.bool_)
    caught = np.zeros((n_d, n_r))
    by_conf = np.zeros(n_r)
    for z in range(n_z):
        pending[:] = 0.0
        arriving[:] = False
        pending[0, 0, 0] = 1.0  # slot 0 is position 0
        arriving[0] = True
        for layer in range(rollbacks + 1):
            first = -1
            for slot in range(n_slots):
                if arriving[slot]:
                    first = slot
                    break
            if first < 0:
                break
            onward[:] = 0.0
            onward_set[:] = False
            untainted[:] = 0.0
            every[:] = 0.0
            untainted[0, :, pad:] = pending[first]
            every[0, :, pad:] = pending[first]
            arriving[first] = False
            i = slot_position[first]
            while True:
                if i == n:
                    mass = 0.0
                    clean = 0.0
                    for c in range(c_n):
                        for d in range(n_d):
                            for r in range(pad, pad + n_r):
                                mass += every[c, d, r]
                        for r in range(pad, pad + n_r):
                            clean += untainted[c, 0, r]
                    result[_SUCCESS, z] += clean
                    result[_SILENT, z] += mass - clean
                    break
                kernel = kernel_of[i]
                # Running out of retries depends on the confusion state and the retries used.
                exhausted = 0.0
                attempts = 0.0
                entering = 0.0
                for c in range(c_n):
                    starting = every[c, 0, pad:]  # the mass in state c, by retries used
                    if n_d == 2:
                        for r in range(n_r):
                            by_conf[r] = starting[r] + every[c, 1, pad + r]
                        starting = by_conf
                    exhaust_row = lost[kernel, z, 0, c]
                    attempts_row = lost[kernel, z, 1, c]
                    for r in range(n_r):
                        exhausted += starting[r] * exhaust_row[r]
                        attempts += starting[r] * attempts_row[r]
                        entering += starting[r]
                result[_DETECTED, z] += exhausted
                result[_ATTEMPTS, z] += attempts
                result[_COST, z] += attempt_cost[i] * attempts
                checkpoint = checkpoint_after[i]
                if checkpoint:
                    result[_COST, z] += checkpoint_cost * (entering - exhausted)
                for c2 in range(c_n):
                    for d in range(n_d):
                        if c_n == 2:
                            _execute2(next_untainted, untainted, correct[kernel, z, c2], c2, d,
                                      blocks, pad, n_r)
                            _execute2(next_every, every, accepted[kernel, z, c2], c2, d,
                                      blocks, pad, n_r)
                        else:
                            _execute1(next_untainted, untainted, correct[kernel, z, c2], c2, d,
                                      blocks, pad, n_r)
                            _execute1(next_every, every, accepted[kernel, z, c2], c2, d,
                                      blocks, pad, n_r)
                untainted, next_untainted = next_untainted, untainted
                every, next_every = next_every, every
                i += 1
                if checkpoint:
                    # Caught: a clean segment with false_alarm, a tainted one with detect.
                    # Passing unseen, a tainted segment dooms the trial (n_d is 2 here).
                    total_caught = 0.0
                    for d in range(n_d):
                        for r in range(n_r):
                            clean_sum = 0.0
                            tainted_sum = 0.0
                            for c in range(c_n):
                                clean_sum += untainted[c, d, pad + r]
                                tainted_sum += every[c, d, pad + r] - untainted[c, d, pad + r]
                            caught[d, r] = false_alarm * clean_sum + detect * tainted_sum
                            total_caught += caught[d, r]
                    for c in range(c_n):
                        for r in range(pad, pad + n_r):
                            tainted = (every[c, 0, r] - untainted[c, 0, r]) + (
                                every[c, 1, r] - untainted[c, 1, r]
                            )
                            untainted[c, 0, r] = (1.0 - false_alarm) * untainted[c, 0, r]
                            untainted[c, 1, r] = (1.0 - false_alarm) * untainted[c, 1, r] + (
                                1.0 - detect
                            ) * tainted
                            every[c, 0, r] = untainted[c, 0, r]
                            every[c, 1, r] = untainted[c, 1, r]
                    if layer == rollbacks:
                        result[_DETECTED, z] += total_caught
                    else:
                        result[_COST, z] += rollback_cost * total_caught
                        slot = target_slot[i - 1]
                        onward[slot] += caught
                        onward_set[slot] = True
                slot = slot_at[i]
                if slot >= 0 and arriving[slot]:
                    untainted[0, :, pad:] += pending[slot]
                    every[0, :, pad:] += pending[slot]
                    arriving[slot] = False
            pending, onward = onward, pending
            arriving, onward_set = onward_set, arriving


@numba.njit(inline="always")  # called 8 times a step and node: inlined, 7% off the pass
def _execute2(out, state, weight, c2, d, blocks, pad, n_r):
    """``out[c2, d, r] = sum_{k, c} weight[k, c] * state[c, d, r - k]`` (two confusion
    states): accepted after ``k`` rejections, ``r - k`` retries were used before. Four shifts
    at a time, each loop reading every source once (it vectorises)."""
    result = out[c2, d, pad:]
    for block in range(blocks):
        k = 4 * block
        w00, w01 = weight[k, 0], weight[k, 1]
        w10, w11 = weight[k + 1, 0], weight[k + 1, 1]
        w20, w21 = weight[k + 2, 0], weight[k + 2, 1]
        w30, w31 = weight[k + 3, 0], weight[k + 3, 1]
        x = state[0, d, pad - k - 3 :]
        y = state[1, d, pad - k - 3 :]
        if block == 0:
            for j in range(n_r):
                result[j] = (w00 * x[j + 3] + w01 * y[j + 3] + w10 * x[j + 2] + w11 * y[j + 2]
                             + w20 * x[j + 1] + w21 * y[j + 1] + w30 * x[j] + w31 * y[j])
        else:
            for j in range(n_r):
                result[j] += (w00 * x[j + 3] + w01 * y[j + 3] + w10 * x[j + 2] + w11 * y[j + 2]
                              + w20 * x[j + 1] + w21 * y[j + 1] + w30 * x[j] + w31 * y[j])


@numba.njit(inline="always")
def _execute1(out, state, weight, c2, d, blocks, pad, n_r):
    """`_execute2` for one confusion state (no confusion)."""
    result = out[c2, d, pad:]
    for block in range(blocks):
        k = 4 * block
        w0, w1, w2, w3 = weight[k, 0], weight[k + 1, 0], weight[k + 2, 0], weight[k + 3, 0]
        x = state[0, d, pad - k - 3 :]
        if block == 0:
            for j in range(n_r):
                result[j] = w0 * x[j + 3] + w1 * x[j + 2] + w2 * x[j + 1] + w3 * x[j]
        else:
            for j in range(n_r):
                result[j] += w0 * x[j + 3] + w1 * x[j + 2] + w2 * x[j + 1] + w3 * x[j]
