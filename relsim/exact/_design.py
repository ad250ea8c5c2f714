r"""The exact engine on the tables of docs/model.md section 8: ladders, samples, modes, faults.

Private to ``relsim.exact``; it runs a model of one class (the package mixes the classes) that
has any of section 8's tables, and leaves scenarios without them to ``_chain``'s forward pass
untouched. The method is ``_chain``'s (see the package docstring), with three changes.

**The kernel.** Attempt ``j`` of an execution is served by rung
:math:`\rho(j) = \#\{k: \text{after}_k \le j\}`, so the per-attempt matrices depend on
``j``. Each attempt ends as a result (accepted), a verifier rejection or a fault (probability
``fault``, the confusion state unchanged); with :math:`A_j` (accepted, over the result's kind:
right, or wrong with mode ``m``, and the next confusion state), :math:`J_j` (rejected by the
verifier) and :math:`R_j = J_j + \text{fault}\, I`,

.. math::

    \text{accept}_k = R_0 \cdots R_{k-1} A_k,\quad
    \text{detected}_b = R_0 \cdots R_{b-1} J_b \mathbf{1},\quad
    \text{infra}_b = \text{fault}\, R_0 \cdots R_{b-1} \mathbf{1}.

An attempt's result is the vote's winner, right with
:math:`\sum_K \binom{n}{K} p^K (1-p)^{n-K} w_K` (``vote_weights``), or in ``"verifier"``
mode the first of ``n`` samples the verifier accepts: with
:math:`a = p(1-f)`, :math:`w_m = (1-p)\,\text{share}_m \text{miss}_m`,
:math:`q = pf + (1-p)\sum_m \text{share}_m (1 - \text{miss}_m)` and
:math:`S = \sum_{i<n} q^i`, right and accepted with :math:`aS`, wrong of mode ``m`` and
accepted with :math:`w_m S`, rejected with :math:`q^n` (the confusion moving on the first
sample: right with :math:`pf\,q^{n-1}`). An attempt reached costs
:math:`\text{rung\_cost}\cdot n + \text{verify}\cdot(n \text{ or } 1)(1 - \text{fault})`, so
the expected cost is carried apart from the expected attempts: both are sums over ``j`` of
the probability of reaching attempt ``j``.

**The state.** The tainted bit becomes the mode of the segment's first accepted wrong result
(0 clean, 1..M; without failure modes one mode that is every wrong result), the doomed bit the
mode baked in by a checkpoint passed unseen. A checkpoint catches a segment of taint ``m``
with ``mode_detect[m]``; at the end a silent failure counts under the doomed mode if any,
else the segment's.

**The outcomes.** Two more rows: ``infra_failure`` (a budget that ran out on a fault) and
one row of silent failures per mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from relsim.exact._chain import (
    ATTEMPTS,
    COST,
    DETECTED,
    SILENT,
    SUCCESS,
    ChainModel,
    StepEffectGrid,
    _dot,
    _mass,
)
from relsim.scenario.compiled import shift_array

#: Rows of the conditional result after ``_chain``'s five: infra failures, then one row of
#: silent failures per mode.
INFRA, BY_MODE = 5, 6


# ----------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class DesignModel:
    """A one-class model with section 8's tables, and what this engine derives from it."""

    chain: ChainModel
    modes: int  # M >= 1: without failure modes, one mode that is every wrong result
    share: np.ndarray  # (M,)
    miss: np.ndarray  # (steps, M) P(accept | wrong of this mode)
    detect: np.ndarray  # (M,) checkpoint detect of a segment tainted by this mode
    rung_of: np.ndarray  # (largest cap + 1,) the rung of attempt j of an execution
    attempt_cost: np.ndarray  # (steps, largest cap + 1) expected cost of attempt j, reached
    vote_weights: np.ndarray | None  # (n + 1,) P(right answer wins | K right); None: verifier

    @classmethod
    def from_chain(cls, chain: ChainModel) -> "DesignModel":
        m = chain.trial
        if m.classes != 1:
            raise ValueError("DesignModel: one class at a time (see TrialModel.for_class)")
        if m.modes:
            share, detect = np.asarray(m.mode_share), np.asarray(m.mode_detect)
            miss = np.broadcast_to(m.mode_miss, (m.steps, m.modes))
        else:
            share, detect = np.ones(1), np.full(1, m.detect)
            miss = np.asarray(m.miss)[:, None]
        top = int(chain.cap.max()) + 1
        rung_of = np.searchsorted(m.rung_after, np.arange(top), side="right")
        checks = m.samples if not m.vote else 1
        # A fault charges the attempt, not its verification.
        cost = m.rung_cost[rung_of].T * m.samples + m.verify_cost * checks * (1.0 - m.fault)
        return cls(
            chain=chain,
            modes=max(1, m.modes),
            share=share,
            miss=np.ascontiguousarray(miss),
            detect=detect,
            rung_of=rung_of,
            attempt_cost=cost / m.cost_unit,
            vote_weights=vote_weights(m.samples, m.wrong_answers) if m.vote else None,
        )

    @property
    def taints(self) -> int:
        """Values of the taint (and the doomed) mode: clean and the M modes."""
        return self.modes + 1

    def step_key(self, step: int) -> tuple:
        """Steps with equal keys share a kernel."""
        return self.keys[step]

    @cached_property
    def keys(self) -> list[tuple]:
        m = self.chain.trial
        return list(zip(
            map(tuple, m.rung_p[0].T.tolist()),
            map(tuple, self.attempt_cost.tolist()),
            map(tuple, self.miss.tolist()),
            m.false_reject.tolist(),
            self.chain.cap.tolist(),
        ))


def vote_weights(samples: int, wrong_answers: int) -> np.ndarray:
    r"""P(the right answer wins a plurality vote | ``K`` of ``samples`` are right), ``K = 0..n``.

    The ``m = n - K`` wrong samples pick uniformly among ``W = wrong_answers`` wrong answers
    (0: each its own). Ties are broken uniformly, so the right answer wins with
    :math:`1/(t+1)` when ``t`` wrong answers tie it at ``K``. Counting the maps of the wrong
    samples onto the answers with ``t`` answers at ``K`` and ``e`` at 1..K-1,

    .. math::

        w_K = \sum_{t, e} \frac{W^{\underline{t+e}}\, m!}{W^m\, t!\, e!\, (t+1)\, K!^t}
              [x^{m - tK}] \Big(\sum_{i=1}^{K-1} \frac{x^i}{i!}\Big)^e .

    Examples
    --------
    Binary votes of three: the right answer wins with two or three votes.

    >>> vote_weights(3, 1).tolist()
    [0.0, 0.0, 1.0, 1.0]
    >>> vote_weights(2, 1).tolist(), vote_weights(3, 0).tolist()
    ([0.0, 0.5, 1.0], [0.0, 0.3333333333333333, 1.0, 1.0])
    """
    return np.array(_vote_weights(samples, wrong_answers))


@lru_cache(maxsize=256)
def _vote_weights(samples: int, wrong_answers: int) -> tuple[float, ...]:
    n = samples
    weights = [0.0] * (n + 1)
    for right in range(1, n + 1):
        wrong = n - right
        if wrong == 0 or (wrong_answers == 0 and right >= 2):
            weights[right] = 1.0
        elif wrong_answers == 0:  # every answer has one vote: a tie of n
            weights[right] = 1.0 / n
        else:
            weights[right] = _plurality_weight(right, wrong, wrong_answers)
    return tuple(weights)


def _plurality_weight(right: int, wrong: int, answers: int) -> float:
    """:func:`vote_weights`'s sum for ``K = right >= 1`` and ``m = wrong >= 1``."""
    below = np.zeros(wrong + 1)  # E(x) = sum_{i=1}^{K-1} x^i / i!, truncated at degree m
    for i in range(1, min(right - 1, wrong) + 1):
        below[i] = 1.0 / math.factorial(i)
    most = min(wrong, answers)  # no more occupied answers than W
    powers = np.zeros((most + 1, wrong + 1))  # E(x)^e
    powers[0, 0] = 1.0
    for e in range(1, most + 1):
        powers[e] = np.convolve(powers[e - 1], below)[: wrong + 1]
    # W^(b, falling) / W^m for b occupied answers (b <= m), kept in range for large W
    boxes = np.arange(wrong + 1)
    falling = np.concatenate([[1.0], np.cumprod((answers - boxes[:-1]) / answers)])
    share = np.maximum(falling, 0.0) * np.exp((boxes - wrong) * math.log(answers))
    inverse = np.array([1.0 / math.factorial(i) for i in range(wrong + 1)])  # 1 / e!
    total = 0.0
    for tied in range(min(wrong // right, answers) + 1):
        degree = wrong - tied * right
        other = np.arange(min(degree, answers - tied, most) + 1)
        terms = share[tied + other] * powers[other, degree] * inverse[other]
        total += float(terms.sum()) * math.factorial(wrong) / (
            math.factorial(tied) * (tied + 1) * math.factorial(right) ** tied)
    return min(1.0, total)


# ------------------------------------------------------------------- one step execution
def _results(dm: DesignModel, step: int, p: np.ndarray) -> tuple[np.ndarray, ...]:
    """One attempt with per-sample success ``p`` (nodes last), by its result: right and
    accepted, wrong of each mode and accepted ``(M, n)``, rejected with the result (the
    confusion's guide) right, rejected with it wrong; each given no fault."""
    m = dm.chain.trial
    false_reject = float(m.false_reject[step])
    share_miss = (dm.share * dm.miss[step])[:, None]
    reject_wrong = float(dm.share @ (1.0 - dm.miss[step]))
    if dm.vote_weights is not None:
        n = m.samples
        if n == 1:
            right, wrong = p, 1.0 - p
        else:
            k = np.arange(n + 1)[:, None]
            binomial = np.array([math.comb(n, int(i)) for i in range(n + 1)])[:, None]
            pmf = binomial * p[None] ** k * (1.0 - p)[None] ** (n - k)  # (K, nodes)
            right = dm.vote_weights @ pmf
            wrong = (1.0 - dm.vote_weights) @ pmf
        return (right * (1.0 - false_reject), wrong * share_miss, right * false_reject,
                wrong * reject_wrong)
    rejected_right = p * false_reject
    rejected_wrong = (1.0 - p) * reject_wrong
    q = rejected_right + rejected_wrong
    first = np.ones_like(p)  # q^(n-1)
    total = np.ones_like(p)  # sum_{i < n} q^i
    for _ in range(m.samples - 1):
        first = first * q
        total = total + first
    return (p * (1.0 - false_reject) * total, (1.0 - p) * share_miss * total,
            rejected_right * first, rejected_wrong * first)


def _attempt_matrices(dm: DesignModel, step: int, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(A, J)`` of one attempt on a rung with per-sample success ``p`` (nodes last):
    ``A`` over (c, kind * C + c2) with kind 0 right and m a wrong result of mode m, ``J`` (the
    verifier's rejections) over (c, c2); both include the chance of no fault."""
    m = dm.chain.trial
    c, kinds = dm.chain.n_conf, dm.taints
    keep = 1.0 - m.fault
    accept = np.zeros((c, kinds * c) + p.shape)
    reject = np.zeros((c, c) + p.shape)
    states = [p] if c == 1 else [p, p * m.factor]
    for s, p_state in enumerate(states):
        right, wrong, rejected_right, rejected_wrong = (keep * v for v in _results(dm, step, p_state))
        if c == 1:
            accept[0, 0] = right
            accept[0, 1:] = wrong
            reject[0, 0] = rejected_right + rejected_wrong
            continue
        # moves between confusion states on a right result (to_right) or a wrong one
        to_right = (1.0, 0.0) if s == 0 else (m.recover, 1.0 - m.recover)
        to_wrong = (1.0 - m.enter, m.enter) if s == 0 else (0.0, 1.0)
        for s2 in range(2):
            accept[s, s2] = right * to_right[s2]
            accept[s, c + s2 :: c] = wrong * to_wrong[s2]
            reject[s, s2] = rejected_right * to_right[s2] + rejected_wrong * to_wrong[s2]
    return accept, reject


def design_kernel_values(dm: DesignModel, step: int, shift: np.ndarray) -> np.ndarray:
    """Accept, verifier-exhaust and fault-exhaust probabilities at these logit shifts.

    Returns shape ``(cap + 1, C * T * C + 2 C, n)`` for ``shift`` of shape ``(n,)``: per level
    ``k``, ``accept_k`` over (c, kind * C + c2), then ``detected_k`` and ``infra_k`` over c.
    """
    m = dm.chain.trial
    cap = int(dm.chain.cap[step])
    c, kinds = dm.chain.n_conf, dm.taints
    rungs = dm.rung_of[: cap + 1]
    per_rung = {}
    for rung in sorted(set(rungs.tolist())):
        p = shift_array(float(m.rung_p[0, rung, step]), float(m.rung_logit_p[0, rung, step]), shift)
        per_rung[rung] = _attempt_matrices(dm, step, p)
    values = np.empty((cap + 1, c * kinds * c + 2 * c, shift.size))
    accept = values[:, : c * kinds * c].reshape(cap + 1, c, kinds * c, -1)
    detected = values[:, c * kinds * c : c * kinds * c + c]
    infra = values[:, c * kinds * c + c :]
    if c == 1:  # 1 x 1 matrices: R_0 ... R_{k-1} is a number per node
        reach = np.ones(shift.size)
        for k in range(cap + 1):
            now, reject = per_rung[int(rungs[k])]
            accept[k] = reach * now
            detected[k, 0] = reach * reject[0, 0]
            infra[k, 0] = reach * m.fault
            reach = reach * (reject[0, 0] + m.fault)
        return values
    power = None  # R_0 ... R_{k-1}; None for the identity
    for k in range(cap + 1):
        now, reject = per_rung[int(rungs[k])]
        onward = reject.copy()  # R_k: rejected by the verifier or lost to a fault
        onward[0, 0] += m.fault
        onward[1, 1] += m.fault
        if power is None:
            accept[k] = now
            detected[k] = reject.sum(axis=1)
            infra[k] = m.fault
            power = onward
        else:
            accept[k] = _dot(power, now)
            detected[k] = _dot(power, reject).sum(axis=1)
            infra[k] = m.fault * power.sum(axis=1)
            power = _dot(power, onward)
    return values


class DesignEffectGrid(StepEffectGrid):
    """:class:`StepEffectGrid` over :func:`design_kernel_values`: every rung is shifted by the
    same task and step effects, so the kernel is a function of the shift alone."""

    def __init__(self, dm: DesignModel, step: int) -> None:
        self.design = dm
        super().__init__(dm.chain, step)

    def _values(self, offsets: np.ndarray) -> np.ndarray:
        return design_kernel_values(self.design, self.step, offsets)


@dataclass(frozen=True)
class _Kernel:
    """One execution of a step over the states ``s = taint * C + c`` (``_chain._Kernel`` with
    the tainted bit widened to a mode). ``lost[z, c * R + r]``: the probability of running
    out of retries on a verifier rejection and on a fault, the expected attempts and the
    expected cost (in cost units)."""

    move: np.ndarray  # (z, T * C, shifts, T * C)
    lost: np.ndarray  # (z, C * R, 4)
    false_alarm: float
    detect: np.ndarray  # (M,)
    variants: dict[tuple[bool, bool], np.ndarray] = field(default_factory=dict)

    def moves(self, clean: bool, checkpoint: bool) -> np.ndarray:
        """As ``_chain._Kernel.moves``; a checkpoint's rows are the clean states that pass,
        each mode's tainted states that pass (with ``1 - detect[m]``) and the mass caught."""
        if (clean, checkpoint) not in self.variants:
            n_z, n_s = self.move.shape[:2]
            c = n_s // (self.detect.size + 1)
            columns = self.move[..., :c] if clean else self.move
            columns = np.ascontiguousarray(columns).reshape(n_z, n_s, -1)
            if checkpoint:
                untainted = columns[:, :c]
                rows = [(1.0 - self.false_alarm) * untainted]
                caught = self.false_alarm * untainted.sum(axis=1)
                for mode, detect in enumerate(self.detect.tolist(), start=1):
                    tainted = columns[:, mode * c : (mode + 1) * c]
                    rows.append((1.0 - detect) * tainted)
                    caught = caught + detect * tainted.sum(axis=1)
                columns = np.concatenate(rows + [caught[:, None]], axis=1)
            self.variants[clean, checkpoint] = columns
        return self.variants[clean, checkpoint]


def _step_kernel(
    dm: DesignModel, step: int, z_shift: np.ndarray, n_r: int, grids: dict, bands: dict
) -> _Kernel:
    """The kernel of step ``step`` (0-based) at these task-effect shifts."""
    chain, m = dm.chain, dm.chain.trial
    cap = int(chain.cap[step])
    c, kinds = chain.n_conf, dm.taints
    n_z = z_shift.size
    if m.step_sd == 0.0 or bool(m.rung_p_fixed[0, :, step].all()):
        values = np.moveaxis(design_kernel_values(dm, step, z_shift), 2, 1)
    else:
        key = dm.step_key(step)
        if key not in grids:
            grids[key] = DesignEffectGrid(dm, step)
        values = grids[key].integrate(z_shift, bands)
    edge = c * kinds * c
    accept = values[..., :edge].reshape(cap + 1, n_z, c, kinds, c)  # k, z, c, kind, c2
    detected = values[..., edge : edge + c]  # (cap + 1, z, c)
    infra = values[..., edge + c :]

    shifts = accept.sum(axis=0, keepdims=True) if chain.total is None else accept[:n_r]
    by_kind = np.moveaxis(shifts, (1, 3, 4), (0, 1, 2))  # (z, kind, c2, k, c)
    move = np.zeros((n_z, kinds, c, len(shifts), kinds, c))  # z, taint2, c2, k, taint, c
    move[:, :, :, :, 0] = by_kind  # a clean segment takes the result's kind as its taint
    either = by_kind.sum(axis=1)
    for taint in range(1, kinds):  # a tainted one keeps its first mode
        move[:, taint, :, :, taint] = either

    # The mass that reaches attempt j leaves it accepted, rejected (level j's exhaust) or
    # faulted; with budget b the execution makes attempts 0..b, each costing its rung's.
    reach = accept.sum(axis=(3, 4)) + detected + infra  # (cap + 1, z, c)
    attempts = np.cumsum(reach, axis=0)
    cost = np.cumsum(reach * dm.attempt_cost[step, : cap + 1, None, None], axis=0)
    if chain.total is None:
        budget = np.full(1, cap)
    else:
        budget = np.minimum(cap, chain.total - np.arange(n_r))
    lost = np.stack([detected[budget], infra[budget], attempts[budget], cost[budget]], axis=-1)
    lost = np.ascontiguousarray(lost.transpose(1, 2, 0, 3)).reshape(n_z, c * n_r, 4)
    return _Kernel(
        move=move.reshape(n_z, kinds * c, len(shifts), kinds * c),
        lost=lost,
        false_alarm=m.false_alarm,
        detect=dm.detect,
    )


# ------------------------------------------------------------------------ the forward pass
def design_values(dm: DesignModel, z_shift: np.ndarray, grids: dict) -> np.ndarray:
    """The expectations given the task effect, for each shift: shape ``(6 + M, z)``.

    ``_chain.conditional_values`` with the state over (z, taint * C + c, doomed mode, retries
    used): ``T = M + 1`` taint values, and as many doomed ones with checkpoints (else 1).
    """
    chain = dm.chain
    n = chain.trial.steps
    n_z = z_shift.size
    c, kinds = chain.n_conf, dm.taints
    n_r = 1 if chain.total is None else chain.total + 1
    n_d = kinds if chain.positions else 1
    result = np.zeros((BY_MODE + dm.modes, n_z))
    kernels: dict[tuple, _Kernel] = {}
    bands: dict = {}
    for step in range(n):
        key = dm.step_key(step)
        if key not in kernels:
            kernels[key] = _step_kernel(dm, step, z_shift, n_r, grids, bands)
    step_kernels = [kernels[dm.step_key(step)] for step in range(n)]

    seg_start = np.zeros(n + 1, dtype=np.int64)
    for i in range(1, n + 1):
        seg_start[i] = i if i in chain.positions else seg_start[i - 1]

    work: dict[tuple[int, int], np.ndarray] = {}
    start = np.zeros((n_z, n_d, n_r))
    start[:, 0, 0] = 1.0
    pending: dict[int, np.ndarray] = {0: start}
    for layer in range(chain.trial.rollbacks + 1):
        arrivals, pending = pending, {}
        if not arrivals:
            break
        i = min(arrivals)
        state = np.zeros((n_z, c, n_d, n_r))
        state[:, 0] = arrivals.pop(i)
        while True:
            if i == n:
                _finish(dm, state, result)
                break
            checkpoint = i + 1 in chain.positions
            state = _execute(dm, step_kernels[i], state, result, work, checkpoint)
            i += 1
            if checkpoint:
                state, caught = _pass_checkpoint(dm, state)
                if layer == chain.trial.rollbacks:
                    result[DETECTED] += _mass(caught)
                else:
                    result[COST] += chain.rollback_cost * _mass(caught)
                    target = int(seg_start[i - 1])
                    pending[target] = pending.get(target, 0.0) + caught
            if i in arrivals:
                state[:, 0] += arrivals.pop(i)
    return result


def _finish(dm: DesignModel, state: np.ndarray, result: np.ndarray) -> None:
    """The trials that reach the end: success when neither tainted nor doomed, else a silent
    failure under the doomed mode, or the segment's taint when nothing is doomed."""
    c = dm.chain.n_conf
    n_z, n_in, n_d, _ = state.shape
    mass = _mass(state)
    clean = _mass(state[:, :c, 0])
    result[SUCCESS] += clean
    result[SILENT] += mass - clean
    for mode in range(1, dm.taints):
        silent = _mass(state[:, mode * c : (mode + 1) * c, 0]) if n_in > c else 0.0
        if n_d > 1:
            silent = silent + _mass(state[:, :, mode])
        result[BY_MODE + mode - 1] += silent


def _execute(
    dm: DesignModel,
    kernel: _Kernel,
    state: np.ndarray,
    result: np.ndarray,
    work: dict[tuple[int, int], np.ndarray],
    checkpoint: bool,
) -> np.ndarray:
    """One execution of a step from every state (``_chain._execute`` over taint modes)."""
    chain = dm.chain
    n_z, n_in, n_d, n_r = state.shape
    c = chain.n_conf
    clean = n_in == c
    move = kernel.moves(clean, checkpoint)
    n_shift = move.shape[2] // n_in
    if (n_shift, n_in) not in work:
        work[n_shift, n_in] = np.zeros((n_z, n_shift, n_in, n_d, n_r))
    shifted = work[n_shift, n_in]
    for k in range(n_shift):
        shifted[:, k, ..., k:] = state[..., : n_r - k]
    out = move @ shifted.reshape(n_z, n_shift * n_in, n_d * n_r)
    # Running out of retries depends on the confusion state and the retries used alone.
    # (Sums of slices: numpy reduces a short middle axis slowly.)
    by_conf = state[:, :c]
    for first in range(c, n_in, c):
        by_conf = by_conf + state[:, first : first + c]
    by_doomed = by_conf[:, :, 0]
    for doomed in range(1, n_d):
        by_doomed = by_doomed + by_conf[:, :, doomed]
    by_conf = by_doomed.reshape(n_z, -1)  # (z, C * R)
    lost = (by_conf[:, None] @ kernel.lost)[:, 0].T  # (4, z)
    result[[DETECTED, INFRA, ATTEMPTS, COST]] += lost
    if checkpoint:
        result[COST] += chain.checkpoint_cost * (by_conf.sum(axis=1) - lost[0] - lost[1])
    return out.reshape(n_z, -1, n_d, n_r)


def _pass_checkpoint(dm: DesignModel, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A checkpoint met after an execution (``_chain._pass_checkpoint`` over modes).

    Passing unseen, a segment tainted by mode ``m`` dooms the trial to ``m`` unless it is
    doomed already; the states that pass are all clean. Returns them, over (z, c, doomed,
    retries used), and the mass caught over (z, doomed, retries used).
    """
    c = dm.chain.n_conf
    state = rows[:, :c].copy()
    for mode in range(1, dm.taints):
        tainted = rows[:, mode * c : (mode + 1) * c]
        state[:, :, 1:] += tainted[:, :, 1:]
        state[:, :, mode] += tainted[:, :, 0]
    return state, rows[:, dm.taints * c]
