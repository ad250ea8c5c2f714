"""The exact engine's forward pass: the step kernels, the step-effect grids and the chain.

Private to ``relsim.exact`` (its docstring describes the method). Reads the compiled
``relsim.scenario.TrialModel`` through :class:`ChainModel`, which adds what only this engine needs
(the binding task budget, costs in the model's cost unit, each kernel's tolerance).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import numpy as np

from relsim._quadrature import LIMIT
from relsim.scenario.compiled import TrialModel, shift_array

#: Default error tolerance of the quadrature (an estimate that is pessimistic by orders of
#: magnitude: tests/test_exact.py measures the true error below 1e-10 at this setting).
DEFAULT_TOL = 1e-8

# Rows of the conditional result returned by the forward pass.
SUCCESS, SILENT, DETECTED, ATTEMPTS, COST = range(5)


# ----------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class ChainModel:
    """The compiled trial model and what only this engine derives from it."""

    trial: TrialModel
    cap: np.ndarray  # (steps,) retries allowed per execution (per_step, capped by total)
    total: int | None  # the task-wide budget when it can bind, else None
    attempt_cost: np.ndarray  # (steps,) attempt + verify cost, in units of cost_unit
    positions: frozenset[int]
    checkpoint_cost: float  # in units of cost_unit, as rollback_cost
    rollback_cost: float
    kernel_tol: float  # tolerance of each step kernel's integral over u

    @classmethod
    def from_trial(cls, m: TrialModel, tol: float) -> "ChainModel":
        unit = m.cost_unit
        return cls(
            trial=m,
            cap=m.step_caps,
            total=m.binding_total,
            attempt_cost=m.cost_per_attempt / unit,
            positions=frozenset(m.checkpoint_positions),
            checkpoint_cost=m.checkpoint_cost / unit,
            rollback_cost=m.rollback_cost / unit,
            # An error in a kernel reaches the outcome once per execution of its step, and a
            # trial has at most steps * (rollbacks + 1) executions.
            kernel_tol=tol / (m.steps * (m.rollbacks + 1)),
        )

    @property
    def confusion(self) -> tuple[float, float, float] | None:
        """enter, recover, factor; None without confusion."""
        m = self.trial
        return (m.enter, m.recover, m.factor) if m.has_confusion else None

    @property
    def n_conf(self) -> int:
        return 2 if self.trial.has_confusion else 1

    def step_key(self, step: int) -> tuple[float, float, float, int]:
        """Steps with equal keys share a kernel."""
        return (
            float(self.trial.p[step]),
            float(self.trial.miss[step]),
            float(self.trial.false_reject[step]),
            int(self.cap[step]),
        )


# ------------------------------------------------------------------------- quadrature
_EPS = float(np.finfo(float).eps)
_KERNEL_NOISE = 256 * _EPS  # see StepEffectGrid.integrate


# ------------------------------------------------------------------- one step execution
@dataclass(frozen=True)
class _Kernel:
    """One execution of a step, integrated over the step effect, for every z node.

    The kernel acts on ``s = tainted * C + c`` (the tainted bit and the confusion state ``c``,
    ``tainted`` meaning that the current segment holds an accepted wrong result); the doomed
    bit and the retries used pass through it. ``move[z, s2, k, s]``: accepted after exactly
    ``k`` rejections, moving from ``s`` to ``s2`` (an accepted wrong result sets the tainted
    bit); ``k`` runs over the shifts of the retry counter that stay inside its range, and
    without a task budget the shifts are summed (the counter is not tracked). `moves` gives
    the matrices that `_execute` uses. ``lost[z, c * R + r, :]``: from confusion state ``c``
    with ``r`` retries used, the probability that the execution runs out of retries, and its
    expected attempts. ``false_alarm`` and ``detect`` are the checkpoint's, for the checkpoint
    rows; ``variants`` caches what `moves` builds.
    """

    move: np.ndarray
    lost: np.ndarray
    false_alarm: float
    detect: float
    variants: dict[tuple[bool, bool], np.ndarray] = field(default_factory=dict)

    def moves(self, clean: bool, checkpoint: bool) -> np.ndarray:
        """``move`` as one matrix per z node, over (s2, k * n_in + s).

        With ``clean``, the columns from the untainted states alone (``n_in = C``; else
        ``2C``). With ``checkpoint``, the rows of a checkpoint met right after: the untainted
        states that pass it, the tainted states that pass it, and the mass it catches (see
        `_pass_checkpoint`). Built on first use: a scenario needs only some of the four.
        """
        if (clean, checkpoint) not in self.variants:
            n_z, n_s, n_shift, _ = self.move.shape
            c = n_s // 2
            columns = self.move[..., :c] if clean else self.move
            columns = np.ascontiguousarray(columns).reshape(n_z, n_s, -1)
            if checkpoint:
                untainted, tainted = columns[:, :c], columns[:, c:]
                caught = self.false_alarm * untainted.sum(axis=1)
                caught += self.detect * tainted.sum(axis=1)
                columns = np.concatenate(
                    [
                        (1.0 - self.false_alarm) * untainted,
                        (1.0 - self.detect) * tainted,
                        caught[:, None],
                    ],
                    axis=1,
                )
            self.variants[clean, checkpoint] = columns
        return self.variants[clean, checkpoint]


def _attempt_matrices(
    model: ChainModel, step: int, p_focused: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-attempt moves over the confusion states, for an array of :math:`p'`, nodes last.

    With :math:`T^{+}` (correct) and :math:`T^{-}` (wrong) the moves of one attempt between
    confusion states, returns :math:`(A, J)`: :math:`A = [(1-f) T^{+} \mid m T^{-}]`
    (accepted; correct block first) and :math:`J = f T^{+} + (1-m) T^{-}` (rejected), of
    shapes ``(C, 2C, n)`` and ``(C, C, n)`` for ``p_focused`` of shape ``(n,)``.
    """
    c = model.n_conf
    correct = np.zeros((c, c) + p_focused.shape)
    wrong = np.zeros((c, c) + p_focused.shape)
    if model.confusion is None:
        correct[0, 0] = p_focused
        wrong[0, 0] = 1.0 - p_focused
    else:
        enter, recover, factor = model.confusion
        p_confused = p_focused * factor
        correct[0, 0] = p_focused
        correct[1, 0] = p_confused * recover
        correct[1, 1] = p_confused * (1.0 - recover)
        wrong[0, 0] = (1.0 - p_focused) * (1.0 - enter)
        wrong[0, 1] = (1.0 - p_focused) * enter
        wrong[1, 1] = 1.0 - p_confused
    miss, false_reject = model.trial.miss[step], model.trial.false_reject[step]
    accept = np.concatenate([correct * (1.0 - false_reject), wrong * miss], axis=1)
    reject = correct * false_reject + wrong * (1.0 - miss)
    return accept, reject


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Matrix products over the first two axes, node by node: ``(i, k, n) x (k, j, n)``.

    Written out over the short inner axis: numpy's batched ``matmul`` would make one BLAS call
    per 2x2 matrix, which costs far more than the arithmetic.
    """
    out = a[:, 0, None] * b[0]
    for k in range(1, a.shape[1]):
        out += a[:, k, None] * b[k]
    return out


def kernel_values(model: ChainModel, step: int, p_focused: np.ndarray) -> np.ndarray:
    r"""Accept and exhaust probabilities for each :math:`p'`, flattened, nodes last.

    .. math::

        \text{accept}_k = J^k A,\qquad \text{exhaust}_b = J^{b+1}\mathbf{1},
        \qquad k, b = 0..\text{cap}.

    Returns shape ``(cap + 1, 2 C^2 + C, n)`` for ``p_focused`` of shape ``(n,)``.
    """
    cap = int(model.cap[step])
    c = model.n_conf
    accept_now, reject = _attempt_matrices(model, step, p_focused)
    values = np.empty((cap + 1, 2 * c * c + c, p_focused.size))
    accept = values[:, : 2 * c * c].reshape(cap + 1, c, 2 * c, -1)
    exhaust = values[:, 2 * c * c :]
    accept[0] = accept_now
    if c == 1:  # 1 x 1 matrices: the loop's products, J^(k+1) = J^k J in order, in one pass
        powers = np.cumprod(np.broadcast_to(reject, (cap + 1,) + reject.shape), axis=0)
        accept[1:] = powers[:-1] * accept_now
        exhaust[:] = powers[:, :, 0]
        return values
    power = reject  # J^(k+1)
    for k in range(cap + 1):
        if k:
            accept[k] = _dot(power, accept_now)
            power = _dot(power, reject)
        exhaust[k] = power.sum(axis=1)
    return values


def _step_kernel(
    model: ChainModel, step: int, z_shift: np.ndarray, n_r: int, grids: dict, bands: dict
) -> _Kernel:
    """The kernel of step ``step`` (0-based) at these task-effect shifts.

    ``grids`` keeps each step's `StepEffectGrid` across rounds of task-effect nodes,
    ``bands`` the quadrature weights shared by every grid in this round.
    """
    cap = int(model.cap[step])
    c = model.n_conf
    n_z = z_shift.size
    p = float(model.trial.p[step])
    if model.trial.step_sd == 0.0 or p <= 0.0 or p >= 1.0:
        values = np.moveaxis(
            kernel_values(model, step, shift_array(p, float(model.trial.logit_p[step]), z_shift)), 2, 1
        )
    else:
        key = model.step_key(step)
        if key not in grids:
            grids[key] = StepEffectGrid(model, step)
        values = grids[key].integrate(z_shift, bands)
    accept = values[..., : 2 * c * c].reshape(cap + 1, n_z, c, 2, c)  # k, z, c, wrong, c2
    exhaust = values[..., 2 * c * c :]  # (cap + 1, z, c)

    # A shift past the last counter value never happens: the budget stops the retries first.
    shifts = accept.sum(axis=0, keepdims=True) if model.total is None else accept[:n_r]
    correct = np.moveaxis(shifts[:, :, :, 0], (1, 3), (0, 1))  # (z, c2, k, c)
    wrong = np.moveaxis(shifts[:, :, :, 1], (1, 3), (0, 1))
    move = np.zeros((n_z, 2, c, len(shifts), 2, c))  # z, tainted2, c2, k, tainted, c
    move[:, 0, :, :, 0] = correct
    move[:, 1, :, :, 0] = wrong
    move[:, 1, :, :, 1] = correct + wrong

    # Expected attempts with budget b: k + 1 when accepted after k rejections, b + 1 when the
    # budget runs out.
    counts = np.arange(1, cap + 2)[:, None, None]
    attempts = np.cumsum(accept.sum(axis=(3, 4)) * counts, axis=0) + exhaust * counts
    # With r retries used, the execution may retry min(cap, total - r) times.
    if model.total is None:
        budget = np.full(1, cap)
    else:
        budget = np.minimum(cap, model.total - np.arange(n_r))
    lost = np.stack([exhaust[budget], attempts[budget]], axis=-1)  # (r, z, c, 2)
    lost = np.ascontiguousarray(lost.transpose(1, 2, 0, 3)).reshape(n_z, c * n_r, 2)
    return _Kernel(
        move=move.reshape(n_z, 2 * c, len(shifts), 2 * c),
        lost=lost,
        false_alarm=model.trial.false_alarm,
        detect=model.trial.detect,
    )


class StepEffectGrid:
    r"""The step-effect integral of one step's kernel values, for any task-effect shifts.

    With :math:`y = \operatorname{logit} p + x_{\text{task}}` the kernel values are
    :math:`K(y) = \int k(y + \sigma u)\,\phi(u)\,du` for a function :math:`k` of the logit
    alone. :math:`k` is evaluated once on the grid :math:`x_i = \operatorname{logit} p + i h`
    that covers every task-effect node, and each :math:`K(y_j)` is the trapezoidal rule over
    the grid points within :math:`8.5\sigma` of :math:`y_j`, with weights
    :math:`\propto \phi((x_i - y_j)/\sigma)` normalised to sum to 1. The rule on the even
    grid points (step :math:`2h`) must agree to the kernel tolerance; otherwise ``h`` is
    halved. The start, :math:`h = 0.3 \min(1, \sigma)`, is already accurate to rounding in
    the tests; its error falls like :math:`\exp(-2\pi^2\sigma^2/h^2)`.
    """

    def __init__(self, model: ChainModel, step: int) -> None:
        self.model = model
        self.step = step
        self.p = float(model.trial.p[step])
        self.center = float(model.trial.logit_p[step])
        self.sd = model.trial.step_sd
        self._build(0.3 * min(1.0, self.sd))

    def _build(self, h: float) -> None:
        reach = LIMIT * (self.model.trial.task_sd + self.sd)
        half = 2 * math.ceil(reach / (2 * h))  # even, so the even points form the 2h rule
        self.h = h
        self.offsets = h * np.arange(-half, half + 1)
        values = self._values(self.offsets)  # (cap + 1, entries, grid)
        self.shape = values.shape[:2]
        self.values = np.ascontiguousarray(np.moveaxis(values, 2, 0)).reshape(self.offsets.size, -1)

    def _values(self, offsets: np.ndarray) -> np.ndarray:
        """The kernel values at these shifts of the logit, nodes last."""
        return kernel_values(self.model, self.step, shift_array(self.p, self.center, offsets))

    def integrate(self, z_shift: np.ndarray, bands: dict) -> np.ndarray:
        """Kernel values at these task-effect shifts: shape ``(cap + 1, z, entries)``.

        ``bands`` caches the rules' weights for these shifts (see `_rules`).
        """
        while True:
            fine, coarse = self._rules(z_shift, bands)
            # The values are probabilities summed over the grid: a difference within a few
            # hundred rounding errors is noise that no finer grid removes.
            if np.abs(fine - coarse).max() <= max(self.model.kernel_tol, _KERNEL_NOISE) or (
                self.h < 1e-4
            ):
                return fine
            self._build(self.h / 2)

    def _rules(self, z_shift: np.ndarray, bands: dict) -> tuple[np.ndarray, np.ndarray]:
        # The weights depend on the grid's offsets from its centre, not on the centre, so
        # every step's grid with the same spacing shares them.
        key = (self.h, self.offsets.size)
        if key not in bands:
            bands[key] = self._weights(z_shift)
        rules = _product(bands[key], self.values)  # (z * 2, (cap + 1) * entries)
        rules = np.moveaxis(rules.reshape(z_shift.size, 2, *self.shape), 0, 2)
        return rules[0], rules[1]  # each (cap + 1, z, entries)

    def _weights(self, z_shift: np.ndarray) -> np.ndarray:
        """The fine and the coarse rule for each shift, over the grid: ``(z * 2, grid)``."""
        width = int(math.ceil(2 * LIMIT * self.sd / self.h)) + 2
        count = self.offsets.size
        first = np.floor((z_shift - LIMIT * self.sd - self.offsets[0]) / self.h).astype(np.int64)
        index = np.clip(first, 0, max(0, count - width))[:, None] + np.arange(min(width, count))
        distance = (self.offsets[index] - z_shift[:, None]) / self.sd
        weight = np.exp(-0.5 * distance * distance)  # (z, band)
        weights = np.stack([weight, weight * (index % 2 == 0)], axis=1)  # fine, coarse
        weights /= weights.sum(axis=2, keepdims=True)
        # Spread over the whole grid, zero off the band: one matrix product for all nodes
        # instead of gathering a band of kernel values for each (a large copy).
        dense = np.zeros((z_shift.size, 2, count))
        rows = np.arange(2 * z_shift.size).reshape(-1, 2, 1)
        dense.reshape(-1)[rows * count + index[:, None]] = weights
        return dense.reshape(-1, count)


#: The largest matrix product (rows * inner * columns) done in one call. OpenBLAS runs larger
#: ones on several threads; on a small, busy machine waiting for them costs far more than the
#: product itself (measured on two cores: 6 ms instead of 0.1 ms).
PRODUCT_LIMIT = 2**18


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for 2-d arrays, in blocks of rows small enough to stay on one thread."""
    rows = max(1, PRODUCT_LIMIT // (a.shape[1] * b.shape[1]))
    if a.shape[0] <= rows:
        return a @ b
    out = np.empty((a.shape[0], b.shape[1]))
    for first in range(0, a.shape[0], rows):
        np.matmul(a[first : first + rows], b, out=out[first : first + rows])
    return out


# ------------------------------------------------------------------------ the forward pass
def conditional_values(
    model: ChainModel, z_shift: np.ndarray, grids: dict, compiled: bool = False
) -> np.ndarray:
    """The five expectations given the task effect, for each shift: shape (5, z).

    The state array has axes (z, tainted * C + confusion state, doomed, retries used). A step
    acts on the second axis and shifts the last, the same way for either doomed bit (which
    only decides success against silent failure at the end), so one matrix product per z node
    executes a step from every state. Without checkpoints nothing is ever doomed, and the
    doomed axis has length 1. Right after a checkpoint, and where a layer starts, no segment
    holds a wrong result: the state then keeps its C untainted rows alone. With ``compiled``
    the same pass runs in ``_compiled.forward_pass`` (numba; see `use_compiled`).
    """
    n = model.trial.steps
    n_z = z_shift.size
    n_r = 1 if model.total is None else model.total + 1
    n_d = 2 if model.positions else 1  # without checkpoints nothing is ever doomed
    result = np.zeros((5, n_z))
    kernels: dict[tuple, _Kernel] = {}
    bands: dict = {}  # quadrature weights shared by the step-effect grids for these shifts
    for step in range(n):
        key = model.step_key(step)
        if key not in kernels:
            kernels[key] = _step_kernel(model, step, z_shift, n_r, grids, bands)
    step_kernels = [kernels[model.step_key(step)] for step in range(n)]

    seg_start = np.zeros(n + 1, dtype=np.int64)  # last checkpoint position <= i
    for i in range(1, n + 1):
        seg_start[i] = i if i in model.positions else seg_start[i - 1]
    if compiled:
        return _compiled_pass(model, kernels, seg_start, n_z)

    # The stacked shifts of `_execute`, allocated once per layout: a fresh array for every
    # execution costs more than filling it (new pages from the system).
    work: dict[tuple[int, int], np.ndarray] = {}
    # Mass enters a layer only at the start or by a rollback, so always untainted and focused
    # (kernel state 0): it is kept over (z, doomed, retries used) alone.
    start = np.zeros((n_z, n_d, n_r))
    start[:, 0, 0] = 1.0
    pending: dict[int, np.ndarray] = {0: start}  # mass entering the layer, by position
    for layer in range(model.trial.rollbacks + 1):
        arrivals, pending = pending, {}
        if not arrivals:
            break
        i = min(arrivals)
        state = np.zeros((n_z, model.n_conf, n_d, n_r))
        state[:, 0] = arrivals.pop(i)
        while True:
            if i == n:
                mass = _mass(state)
                clean = _mass(state[:, : model.n_conf, 0])  # neither tainted nor doomed
                result[SUCCESS] += clean
                result[SILENT] += mass - clean
                break
            checkpoint = i + 1 in model.positions
            state = _execute(model, step_kernels[i], i, state, result, work, checkpoint)
            i += 1
            if checkpoint:
                state, caught = _pass_checkpoint(model, state)
                if layer == model.trial.rollbacks:
                    result[DETECTED] += _mass(caught)
                else:
                    result[COST] += model.rollback_cost * _mass(caught)
                    target = int(seg_start[i - 1])
                    pending[target] = pending.get(target, 0.0) + caught
            if i in arrivals:
                state[:, 0] += arrivals.pop(i)
    return result


def _mass(state: np.ndarray) -> np.ndarray:
    """Total probability per z node."""
    return state.reshape(state.shape[0], -1).sum(axis=1)


def _execute(
    model: ChainModel,
    kernel: _Kernel,
    step: int,
    state: np.ndarray,
    result: np.ndarray,
    work: dict[tuple[int, int], np.ndarray],
    checkpoint: bool = False,
) -> np.ndarray:
    """One execution of step ``step`` from every state.

    ``state`` holds either all 2C kernel states or, where none is tainted, the C untainted
    ones alone. Returns the states after it, over (z, tainted * C + c, doomed, retries used);
    with ``checkpoint``, the rows of the checkpoint met right after instead
    (`_pass_checkpoint` reads them). The mass that runs out of retries, and the attempts and
    cost of every execution (and of the checkpoint), go into ``result``. ``work`` holds the
    buffers of the stacked shifts, one per (shifts, states) layout.
    """
    n_z, n_in, n_d, n_r = state.shape
    c = model.n_conf
    clean = n_in == c
    move = kernel.moves(clean, checkpoint)
    n_shift = move.shape[2] // n_in
    # shifted[:, k, ..., r] = state[..., r - k]: accepted after k rejections, it ends with r
    # retries used. Stacking the shifts makes the whole execution one product per z node.
    # Each layout has its own buffer, zero where a shift leaves no mass (written once).
    if (n_shift, n_in) not in work:
        work[n_shift, n_in] = np.zeros((n_z, n_shift, n_in, n_d, n_r))
    shifted = work[n_shift, n_in]
    for k in range(n_shift):
        shifted[:, k, ..., k:] = state[..., : n_r - k]
    out = move @ shifted.reshape(n_z, n_shift * n_in, n_d * n_r)
    # Running out of retries depends on the confusion state and the retries used alone.
    # (Sums of slices: numpy reduces a short middle axis slowly.)
    by_conf = state if clean else state[:, :c] + state[:, c:]  # (z, C, doomed, r)
    if n_d == 2:
        by_conf = by_conf[:, :, 0] + by_conf[:, :, 1]
    by_conf = by_conf.reshape(n_z, -1)
    lost = (by_conf[:, None] @ kernel.lost)[:, 0]  # (z, 2)
    result[DETECTED] += lost[:, 0]
    result[ATTEMPTS] += lost[:, 1]
    result[COST] += model.attempt_cost[step] * lost[:, 1]
    if checkpoint:
        # Every execution that does not run out of retries is accepted and meets the
        # checkpoint (cheaper than a row of the product that sums the accepted mass).
        result[COST] += model.checkpoint_cost * (by_conf.sum(axis=1) - lost[:, 0])
    return out.reshape(n_z, -1, n_d, n_r)


def _pass_checkpoint(model: ChainModel, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A checkpoint met after an execution, from the rows that `_execute` returns for it.

    A segment holding an accepted wrong result is caught with ``detect``, a clean one raises
    a false alarm with ``false_alarm``. Passing unseen: ``doomed |= seg_tainted``,
    ``seg_tainted = False``. Caught: back to the segment start, ``seg_tainted = False``,
    ``doomed`` kept, the confusion state reset to focused. The kernel's checkpoint rows
    already hold the untainted and the tainted states that pass and the mass caught, so one
    product did most of the work.

    Returns the states that pass (all untainted: over (z, c, doomed, retries used)) and the
    mass caught over (z, doomed, retries used).
    """
    c = model.n_conf
    state = rows[:, :c]
    state[:, :, 1] += rows[:, c : 2 * c, 0] + rows[:, c : 2 * c, 1]
    return state, rows[:, 2 * c]



# ------------------------------------------------------------------- the compiled pass
#: Estimated seconds of the numpy pass (``_work``'s estimate, about 2-3 times the time
#: measured) from which loading numba's compiled pass pays, where the one built ahead of time
#: (`relsim.exact._aot`) is missing: numba's import and the first load of its cached machine
#: code cost 1-1.3 s at a process start, and the compiled pass takes about 0.28x the numpy
#: one's time. Measured in fresh processes on the 2-core machine (2026-12-01,
#: benchmarks/README.md, "Exact engine, issue 22"): the two first calls break even at an
#: estimate of about 4 s (2.19 s numpy against 2.21 s compiled); at 3 s numpy is quicker
#: (1.46 against 1.58 s), at 6 s the compiled pass (2.72 against 2.42 s).
LOAD_ESTIMATE = 4.0

#: None: choose by `use_compiled`'s rule; True or False: always the compiled or the numpy
#: pass (tests and benchmarks set it).
COMPILED: bool | None = None


def use_compiled(estimate: float) -> bool:
    """Whether a pass whose numpy form is estimated at ``estimate`` seconds runs compiled.

    It does when the pass built ahead of time is installed and runs on this CPU (it costs
    nothing to load), or numba's is loaded in this process already (a later load is free), or
    the estimate is at least `LOAD_ESTIMATE`; else numba's load would cost more than it
    saves. The passes agree to rounding (1e-12 held by the tests), so the choice changes only
    the last bits of a result.
    """
    if COMPILED is not None:
        return COMPILED
    from relsim.exact import _aot  # standard library only

    return (
        _aot.forward_pass() is not None
        or "relsim.exact._compiled" in sys.modules
        or estimate >= LOAD_ESTIMATE
    )


def _compiled_pass(
    model: ChainModel, kernels: dict[tuple, _Kernel], seg_start: np.ndarray, n_z: int
) -> np.ndarray:
    """`conditional_values` by ``_compiled.forward_pass``, from the kernels built here: the
    build made ahead of time where there is one, else numba's."""
    from relsim.exact import _aot

    forward_pass = _aot.forward_pass()
    if forward_pass is None:
        from relsim.exact import _compiled  # numba: only for a pass that pays

        forward_pass = _compiled.forward_pass

    n = model.trial.steps
    c = model.n_conf
    index = {key: j for j, key in enumerate(kernels)}
    kernel_of = np.array([index[model.step_key(step)] for step in range(n)], dtype=np.int64)
    # Accepted correct from untainted states; accepted at all, from untainted or tainted ones
    # (kernel.move is over (z, tainted2 * C + c2, k, tainted * C + c)); the shifts padded
    # with zeros to blocks of four (the compiled loop's unit) past the kernel's own.
    most = max(kernel.move.shape[2] for kernel in kernels.values())
    padded = (len(kernels), n_z, c, 4 * -(-most // 4), c)
    correct, accepted = np.zeros(padded), np.zeros(padded)
    for j, kernel in enumerate(kernels.values()):
        n_shift = kernel.move.shape[2]
        correct[j, :, :, :n_shift] = kernel.move[:, :c, :, :c]
        accepted[j, :, :, :n_shift] = kernel.move[:, c:, :, c:]
    lost = np.stack([kernel.lost for kernel in kernels.values()])
    lost = np.ascontiguousarray(np.moveaxis(lost.reshape(len(kernels), n_z, c, -1, 2), 4, 2))
    checkpoint_after = np.array([step + 1 in model.positions for step in range(n)])
    slot_position = np.array(sorted({0} | set(model.positions)), dtype=np.int64)
    slot_at = np.full(n + 1, -1, dtype=np.int64)
    slot_at[slot_position] = np.arange(slot_position.size)
    result = np.zeros((5, n_z))
    forward_pass(
        kernel_of,
        correct,
        accepted,
        lost,
        checkpoint_after,
        slot_at[seg_start[:n]],
        slot_at,
        slot_position,
        np.ascontiguousarray(model.attempt_cost, dtype=float),
        float(model.checkpoint_cost),
        float(model.rollback_cost),
        float(model.trial.false_alarm),
        float(model.trial.detect),
        int(model.trial.rollbacks),
        2 if model.positions else 1,
        result,
    )
    return result
