"""Exact evaluation of a scenario: a forward pass over a finite Markov chain, with quadrature.

docs/model.md section 3 defines one trial. Conditional on the task effect ``z`` the trial is a
finite Markov chain over the states

    (rollbacks_used, i, retries_used, seg_tainted, doomed, confusion state)

(``seg_start`` is a function of ``i``: the last checkpoint position at or before it). A rollback
raises ``rollbacks_used`` and every other move raises ``i``, so sweeping ``rollbacks_used`` in
the outer loop and ``i`` in the inner one visits every state after all of its predecessors:
one forward pass of probability mass is exact. Expected attempts and cost follow by linearity:
each step execution adds its expected attempts times the mass that starts it, each checkpoint
and rollback its cost times the mass that meets it.

One execution of a step (its first attempt and the retries inside it) is summarised by a
kernel: the probability of being accepted after exactly ``k`` rejections with a correct or a
wrong result, leaving in each confusion state, and the probability of exhausting a budget of
``b`` retries. The step effect ``u`` is fresh for each execution and shared by its retries, so
the kernel is integrated over ``u`` before it enters the chain. The task effect ``z`` is shared
by the whole trial, so the chain runs for many ``z`` nodes at once (numpy broadcasting) and
the outcomes are integrated over ``z`` at the end.

The task-effect integral is an adaptive Gauss-Kronrod (7-15) rule against the normal density
on ``[-8.5, 8.5]`` (outside it lies 2e-17 of the mass). A Gauss-Hermite rule, the obvious
choice, does not converge fast enough here: for a long chain with a large task effect the
conditional success is a steep function of ``z`` (a step's failure rate falls like
``exp(-(r+1) sd z)``), and 128 Hermite nodes still miss the success of a 200-step chain with
``task_sd = 3`` by more than 1e-6. The step-effect integral is a convolution of a function of the logit,
``K(y) = E k(y + step_sd u)``; it is computed by the trapezoidal rule on one grid of logits
shared by every ``z`` node, which converges geometrically for these analytic integrands and
checks itself against the rule on every other grid point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from relsim._quadrature import _G_WEIGHTS, _GK_NODES, _GK_WEIGHTS, _LIMIT, _integrate_normal
from relsim.errors import invalid
from relsim.limits import WorkEstimate, cost_unit
from relsim.results import Outcome
from relsim.scenario import Scenario, as_scenario

__all__ = ["evaluate", "work_estimate"]

#: Default error tolerance of the quadrature (an estimate that is pessimistic by orders of
#: magnitude: tests/test_exact.py measures the true error below 1e-10 at this setting).
DEFAULT_TOL = 1e-8

# Rows of the conditional result returned by the forward pass.
_SUCCESS, _SILENT, _DETECTED, _ATTEMPTS, _COST = range(5)


def evaluate(scenario: Scenario | Mapping[str, Any], *, tol: float = DEFAULT_TOL) -> Outcome:
    r"""Exact outcome of a scenario (docs/model.md section 3), with every feature combined.

    The probabilities of success, silent failure and detected failure, the expected number of
    attempts and the expected cost of one trial. Without random effects the answer is exact up
    to rounding (1e-12 or better). With them, the task effect :math:`z` and each execution's
    step effect :math:`u` (both standard normal) enter through

    .. math::

        p' = \operatorname{expit}\left(\operatorname{logit} p_i
             + \sigma_{\text{task}} z + \sigma_{\text{step}} u\right),
        \qquad
        \Pr(\text{outcome}) = \int \phi(z)\, \Pr(\text{outcome} \mid z)\, dz,

    computed by quadrature to ``tol``: adaptive Gauss-Kronrod over :math:`z`, and a
    self-checking trapezoidal rule over :math:`u` inside each step's kernel.

    Parameters
    ----------
    scenario : relsim.Scenario or mapping
        The design to evaluate (a mapping is read with ``Scenario.from_dict``).
    tol : float, default 1e-8
        Error tolerance of the quadrature, in (0, 1e-3]. The estimate is pessimistic: the
        true error at the default is below 1e-10 in the tests. Unused without random effects.

    Returns
    -------
    relsim.Outcome
        With ``method="exact"``.

    Raises
    ------
    relsim.errors.RelsimError
        When ``tol`` is not a number in (0, 1e-3], or ``scenario`` is not a valid scenario.

    Examples
    --------
    A 25-step chain with ``p = 0.9``, a perfect verifier and two retries per step (reference
    value R1): each step succeeds with :math:`1 - 0.1^3`, so the task with :math:`0.999^{25}`.

    >>> from relsim import Scenario, evaluate
    >>> s = Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.0},
    ...                         "retries": {"per_step": 2}})
    >>> out = evaluate(s)
    >>> round(out.success, 6), round(out.detected_failure, 6), round(out.expected_attempts, 6)
    (0.975298, 0.024702, 27.419539)
    """
    scenario = as_scenario(scenario)
    _check_tol(tol)
    work_estimate(scenario, tol=tol).check(
        "scenario",
        "use relsim simulate (Monte Carlo) for this scenario, or lower the budgets "
        "(retries.total, retries.per_step, checkpoints.rollbacks) or the steps",
    )
    values, _ = _evaluate(scenario, tol)
    success, silent, detected = (min(1.0, max(0.0, float(values[k]))) for k in range(3))
    if not scenario.miss_array.any():
        # A verifier that never accepts a wrong attempt leaves no silent failure: an exact 0,
        # not the rounding of a difference of probabilities near 1 (about 1e-16), which would
        # keep targets within 2**-53 of 1 out of the planners' reach.
        silent = 0.0
    return Outcome(
        success=success,
        silent_failure=silent,
        detected_failure=detected,
        expected_attempts=float(values[_ATTEMPTS]),
        expected_cost=float(values[_COST]),
    )


def _evaluate(scenario: Scenario, tol: float) -> tuple[np.ndarray, int]:
    """The five expectations and the number of task-effect nodes used (no work check)."""
    _check_tol(tol)
    model = _Model.from_scenario(scenario, float(tol))
    grids: dict[tuple, _StepEffectGrid] = {}  # shared by every round of task-effect nodes
    if model.task_sd == 0.0:
        values, used = _conditional(model, np.zeros(1), grids)[:, 0], 1
    else:

        def conditional(z: np.ndarray) -> np.ndarray:
            # with a row of ones: dividing by its integral makes the weights sum to exactly 1
            return np.vstack([_conditional(model, model.task_sd * z, grids), np.ones(z.size)])

        values, used = _integrate_normal(conditional, float(tol))
        values = values[:-1] / values[-1]
    with np.errstate(over="ignore"):  # a cost past the float range is stated as infinite
        values[_COST] *= model.cost_unit
    return values, used


def _check_tol(tol: Any) -> None:
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating)) or not (
        0.0 < tol <= 1e-3
    ):
        raise invalid("tol", "a number in (0, 1e-3]", tol)


def _budgets(s: Scenario) -> tuple[np.ndarray, int | None]:
    """Retries allowed per execution of each step, and the task-wide budget when it binds."""
    rollbacks = 0 if s.checkpoints is None else s.checkpoints.rollbacks
    total = s.total_retries
    cap = np.array(s.per_step_array, dtype=np.int64)
    if total is not None:
        cap = np.minimum(cap, total)
        # Each step runs at most rollbacks + 1 times, so a total that covers every
        # possible retry never binds, and its counter need not be tracked.
        if total >= int(cap.sum()) * (rollbacks + 1):
            total = None
    return cap, total


# ------------------------------------------------------------------- the work estimate
# Rates measured on the calibration machine (benchmarks/limits_calibration.py: two busy
# cores, numpy 2.4): seconds per numpy-level operation of the forward pass, per execution of
# a step; per kernel built; per retry level of a kernel; per multiply-add of the big products
# and per value copied into the stacked shifts.
_SECONDS_PER_EXECUTION = 40e-6
_SECONDS_PER_SHIFT = 10e-6
_SECONDS_PER_KERNEL = 250e-6
_SECONDS_PER_LEVEL = 12e-6
_SECONDS_PER_MULTIPLY_ADD = 0.3e-9
# A product of more than _PRODUCT_LIMIT multiply-adds per node runs on OpenBLAS's threads,
# which on a busy machine is far slower per multiply-add (see _PRODUCT_LIMIT).
_SECONDS_PER_THREADED_MULTIPLY_ADD = 5e-9
_SECONDS_PER_COPY = 1.0e-9
# Task-effect nodes: the first round of the adaptive rule has 6 panels of 15 nodes, and the
# later rounds, on the panels that did not converge, add about as many again in all.
_FIRST_ROUND_NODES = 90
_ROUNDS = 2


def work_estimate(
    scenario: Scenario | Mapping[str, Any], *, tol: float = DEFAULT_TOL
) -> WorkEstimate:
    r"""The time and memory ``evaluate`` will take on a scenario, estimated before it starts.

    The forward pass holds, for each of :math:`n_z` task-effect nodes, a state over the
    tainted and confusion states (:math:`2C`), the doomed bit (:math:`D`) and the retries used
    (:math:`R = 	ext{total} + 1` when the task budget binds, else 1); one execution of a step
    is a product with :math:`K = 	ext{per\_step} + 1` stacked shifts (1 without a binding
    total), and the pass makes about :math:`(	ext{rollbacks} + 1)\, n` executions:

    .. math::

        	ext{memory} pprox 8\,n_z\,2C\,D\,R\,(K + 3 + P)\ 	ext{bytes},\qquad
        	ext{time} pprox (	ext{rollbacks} + 1)\, n\,
            (t_0 + t_1\, n_z (2C + 1)\, K\, 2C\, D R),

    plus each distinct step kernel (:math:`P` counts the rollback targets held, one per
    checkpoint position). The rates :math:`t_0, t_1` were measured on a small, busy machine
    (``benchmarks/limits_calibration.py``); the estimate is meant to be within a few times the
    truth there, to refuse hours and hundreds of GiB, not to time a run.

    Parameters
    ----------
    scenario : relsim.Scenario or mapping
    tol : float, default 1e-8
        The quadrature tolerance ``evaluate`` will use: a tighter one takes more task-effect
        nodes (at most about 4 times as many: below rounding, the rule stops refining).

    Returns
    -------
    relsim.limits.WorkEstimate
        ``seconds``, ``memory`` (bytes) and ``detail`` (what drives them). ``evaluate``
        refuses when ``estimate.check`` does (over ``relsim.limits.time_limit()`` or
        ``memory_limit()``).

    Examples
    --------
    Reference value R1 is instant; a binding task budget of a million retries on 100,000
    steps is not:

    >>> from relsim.exact import work_estimate
    >>> r1 = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"per_step": 2}}
    >>> work_estimate(r1).seconds < 0.1
    True
    >>> huge = {"steps": 100000, "p": 0.9, "verifier": {"miss": 0.1},
    ...         "retries": {"per_step": 10000, "total": 1000000}}
    >>> work_estimate(huge).memory > 100 * 2**30
    True
    """
    s = as_scenario(scenario)
    n = s.steps
    cap, total = _budgets(s)
    ck = s.checkpoints
    positions = s.checkpoint_positions
    rollbacks = 0 if ck is None else ck.rollbacks
    c = 1 if s.correlation.confusion is None else 2
    n_r = 1 if total is None else total + 1
    n_d = 2 if positions else 1
    task_sd, step_sd = s.correlation.task_sd, s.correlation.step_sd
    _check_tol(tol)
    tighter = min(4.0, 1.0 + max(0.0, -math.log10(tol) - 8.0) / 4.0)
    n_z, rounds = (1, 1) if task_sd == 0 else (_FIRST_ROUND_NODES, _ROUNDS * tighter)
    entries = 2 * c * c + c

    # Distinct step kernels (one when nothing varies by step) and their retry levels, cap + 1.
    per_step_values = (s.p, s.miss_array if s.verifier is None else s.verifier.miss)
    if s.verifier is not None:
        per_step_values += (s.verifier.false_reject,)
    if s.retries is not None:
        per_step_values += (s.retries.per_step,)
    if not any(isinstance(value, tuple) for value in per_step_values):
        n_kernels, level_sum, level_max = 1, int(cap[0]) + 1, int(cap[0]) + 1
    else:
        keys = set(
            zip(s.p_array.tolist(), s.miss_array.tolist(), s.false_reject_array.tolist(),
                cap.tolist())
        )  # a set of tuples: far quicker than np.unique(axis=0) on short chains
        levels = [key[3] + 1 for key in keys]
        n_kernels, level_sum, level_max = len(levels), sum(levels), max(levels)
    shifts = level_max if total is not None else 1
    grid = 0
    if step_sd > 0:
        grid = 2 * math.ceil(_LIMIT * (task_sd + step_sd) / (2 * 0.3 * min(1.0, step_sd))) * 2 + 1
    points = grid if grid else n_z
    kernel_cells = (
        n_z * 2 * c * 2 * c * 5 * (level_sum if total is not None else n_kernels)  # move, variants
        + n_kernels * n_z * c * n_r * 2  # lost
        + level_sum * entries * (2 * points + 2 * n_z)  # values, grid values and rules
    )

    state = n_z * 2 * c * n_d * n_r
    held = len(positions) * n_z * n_d * n_r if rollbacks and positions else 0
    memory = 8.0 * (kernel_cells + state * (shifts + 3) + held)

    rolls_back = bool(positions) and rollbacks > 0 and (
        (ck.detect > 0 and (s.verifier is None or np.any(s.miss_array > 0)))
        or ck.false_alarm > 0
    )
    executions = n * (rollbacks + 1 if rolls_back else 1)
    product = (2 * c + 1) * shifts * 2 * c * n_d * n_r  # multiply-adds per node
    rate = _SECONDS_PER_MULTIPLY_ADD if product <= _PRODUCT_LIMIT else (
        _SECONDS_PER_THREADED_MULTIPLY_ADD
    )
    per_execution = (
        _SECONDS_PER_EXECUTION
        + _SECONDS_PER_SHIFT * shifts
        + rate * n_z * product
        + _SECONDS_PER_COPY * state * shifts
    )
    kernels = (
        n_kernels * _SECONDS_PER_KERNEL
        + level_sum * (_SECONDS_PER_LEVEL * c * c + _SECONDS_PER_MULTIPLY_ADD * c**3 * points)
        + _SECONDS_PER_MULTIPLY_ADD * 2 * n_z * grid * (level_sum * entries)
    )
    seconds = rounds * (executions * per_execution + kernels)

    drivers = [f"{n} steps"]
    if rolls_back:
        drivers.append(f"{rollbacks} rollbacks: about {executions:,} step executions")
    if total is not None:
        drivers.append(f"a binding retries.total = {total}: {n_r:,} counter states")
        if shifts > 1:
            drivers.append(f"per_step up to {shifts - 1}")
    if n_kernels > 1:
        drivers.append(f"{n_kernels} distinct steps")
    if task_sd > 0:
        drivers.append(f"task_sd: {n_z} task-effect nodes per round")
    return WorkEstimate(seconds=float(seconds), memory=float(memory), detail=", ".join(drivers))


# ----------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class _Model:
    """The scenario as plain arrays."""

    steps: int
    p: np.ndarray  # (steps,) per-attempt success before the random effects
    miss: np.ndarray  # (steps,) P(accept | wrong), 1 without a verifier
    false_reject: np.ndarray  # (steps,)
    cap: np.ndarray  # (steps,) retries allowed per execution (per_step, capped by total)
    total: int | None  # the task-wide budget when it can bind, else None
    attempt_cost: np.ndarray  # (steps,) attempt + verify cost, in units of cost_unit
    positions: frozenset[int]
    detect: float
    false_alarm: float
    rollbacks: int
    checkpoint_cost: float  # in units of cost_unit, as rollback_cost
    rollback_cost: float
    cost_unit: float  # a power of two: costs are held divided by it (limits.cost_unit)
    confusion: tuple[float, float, float] | None  # enter, recover, factor
    task_sd: float
    step_sd: float
    kernel_tol: float  # tolerance of each step kernel's integral over u

    @classmethod
    def from_scenario(cls, s: Scenario, tol: float) -> "_Model":
        ck = s.checkpoints
        rollbacks = 0 if ck is None else ck.rollbacks
        cap, total = _budgets(s)
        unit = cost_unit(s)
        conf = s.correlation.confusion
        return cls(
            steps=s.steps,
            p=np.array(s.p_array, dtype=float),
            miss=np.array(s.miss_array, dtype=float),
            false_reject=np.array(s.false_reject_array, dtype=float),
            cap=cap,
            total=total,
            attempt_cost=np.array(s.attempt_cost_array, dtype=float) / unit + s.cost.verify / unit,
            positions=frozenset(s.checkpoint_positions),
            detect=1.0 if ck is None else ck.detect,
            false_alarm=0.0 if ck is None else ck.false_alarm,
            rollbacks=rollbacks,
            checkpoint_cost=s.cost.checkpoint / unit,
            rollback_cost=s.cost.rollback / unit,
            cost_unit=unit,
            confusion=None if conf is None else (conf.enter, conf.recover, conf.factor),
            task_sd=s.correlation.task_sd,
            step_sd=s.correlation.step_sd,
            # An error in a kernel reaches the outcome once per execution of its step, and a
            # trial has at most steps * (rollbacks + 1) executions.
            kernel_tol=tol / (s.steps * (rollbacks + 1)),
        )

    @property
    def n_conf(self) -> int:
        return 1 if self.confusion is None else 2

    def step_key(self, step: int) -> tuple[float, float, float, int]:
        """Steps with equal keys share a kernel."""
        return (
            float(self.p[step]),
            float(self.miss[step]),
            float(self.false_reject[step]),
            int(self.cap[step]),
        )


# ------------------------------------------------------------------------- quadrature
_EPS = float(np.finfo(float).eps)
_KERNEL_NOISE = 256 * _EPS  # see _StepEffectGrid.integrate


def _shift(p: float, x: np.ndarray) -> np.ndarray:
    r""":math:`\operatorname{expit}(\operatorname{logit} p + x)`; p of exactly 0 or 1 stays."""
    if p <= 0.0 or p >= 1.0:
        return np.full(x.shape, p)
    logit = math.log(p) - math.log1p(-p)
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-(logit + x)))


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
    model: _Model, step: int, p_focused: np.ndarray
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
    miss, false_reject = model.miss[step], model.false_reject[step]
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


def _kernel_values(model: _Model, step: int, p_focused: np.ndarray) -> np.ndarray:
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
    model: _Model, step: int, z_shift: np.ndarray, n_r: int, grids: dict, bands: dict
) -> _Kernel:
    """The kernel of step ``step`` (0-based) at these task-effect shifts.

    ``grids`` keeps each step's `_StepEffectGrid` across rounds of task-effect nodes,
    ``bands`` the quadrature weights shared by every grid in this round.
    """
    cap = int(model.cap[step])
    c = model.n_conf
    n_z = z_shift.size
    p = float(model.p[step])
    if model.step_sd == 0.0 or p <= 0.0 or p >= 1.0:
        values = np.moveaxis(_kernel_values(model, step, _shift(p, z_shift)), 2, 1)
    else:
        key = model.step_key(step)
        if key not in grids:
            grids[key] = _StepEffectGrid(model, step)
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
        false_alarm=model.false_alarm,
        detect=model.detect,
    )


class _StepEffectGrid:
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

    def __init__(self, model: _Model, step: int) -> None:
        self.model = model
        self.step = step
        self.center = float(np.log(model.p[step]) - np.log1p(-model.p[step]))
        self.sd = model.step_sd
        self._build(0.3 * min(1.0, self.sd))

    def _build(self, h: float) -> None:
        reach = _LIMIT * (self.model.task_sd + self.sd)
        half = 2 * math.ceil(reach / (2 * h))  # even, so the even points form the 2h rule
        self.h = h
        self.offsets = h * np.arange(-half, half + 1)
        p = 1.0 / (1.0 + np.exp(-(self.center + self.offsets)))
        values = _kernel_values(self.model, self.step, p)  # (cap + 1, entries, grid)
        self.shape = values.shape[:2]
        self.values = np.ascontiguousarray(np.moveaxis(values, 2, 0)).reshape(p.size, -1)

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
        width = int(math.ceil(2 * _LIMIT * self.sd / self.h)) + 2
        count = self.offsets.size
        first = np.floor((z_shift - _LIMIT * self.sd - self.offsets[0]) / self.h).astype(np.int64)
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
_PRODUCT_LIMIT = 2**18


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for 2-d arrays, in blocks of rows small enough to stay on one thread."""
    rows = max(1, _PRODUCT_LIMIT // (a.shape[1] * b.shape[1]))
    if a.shape[0] <= rows:
        return a @ b
    out = np.empty((a.shape[0], b.shape[1]))
    for first in range(0, a.shape[0], rows):
        np.matmul(a[first : first + rows], b, out=out[first : first + rows])
    return out


# ------------------------------------------------------------------------ the forward pass
def _conditional(model: _Model, z_shift: np.ndarray, grids: dict) -> np.ndarray:
    """The five expectations given the task effect, for each shift: shape (5, z).

    The state array has axes (z, tainted * C + confusion state, doomed, retries used). A step
    acts on the second axis and shifts the last, the same way for either doomed bit (which
    only decides success against silent failure at the end), so one matrix product per z node
    executes a step from every state. Without checkpoints nothing is ever doomed, and the
    doomed axis has length 1. Right after a checkpoint, and where a layer starts, no segment
    holds a wrong result: the state then keeps its C untainted rows alone.
    """
    n = model.steps
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

    # The stacked shifts of `_execute`, allocated once: a fresh array for every execution
    # costs more than filling it (new pages from the system).
    columns = max(kernel.move[0, 0].size for kernel in kernels.values())
    work = np.empty(n_z * columns * n_d * n_r)
    # Mass enters a layer only at the start or by a rollback, so always untainted and focused
    # (kernel state 0): it is kept over (z, doomed, retries used) alone.
    start = np.zeros((n_z, n_d, n_r))
    start[:, 0, 0] = 1.0
    pending: dict[int, np.ndarray] = {0: start}  # mass entering the layer, by position
    for layer in range(model.rollbacks + 1):
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
                result[_SUCCESS] += clean
                result[_SILENT] += mass - clean
                break
            checkpoint = i + 1 in model.positions
            state = _execute(model, step_kernels[i], i, state, result, work, checkpoint)
            i += 1
            if checkpoint:
                state, caught = _pass_checkpoint(model, state)
                if layer == model.rollbacks:
                    result[_DETECTED] += _mass(caught)
                else:
                    result[_COST] += model.rollback_cost * _mass(caught)
                    target = int(seg_start[i - 1])
                    pending[target] = pending.get(target, 0.0) + caught
            if i in arrivals:
                state[:, 0] += arrivals.pop(i)
    return result


def _mass(state: np.ndarray) -> np.ndarray:
    """Total probability per z node."""
    return state.reshape(state.shape[0], -1).sum(axis=1)


def _execute(
    model: _Model,
    kernel: _Kernel,
    step: int,
    state: np.ndarray,
    result: np.ndarray,
    work: np.ndarray,
    checkpoint: bool = False,
) -> np.ndarray:
    """One execution of step ``step`` from every state.

    ``state`` holds either all 2C kernel states or, where none is tainted, the C untainted
    ones alone. Returns the states after it, over (z, tainted * C + c, doomed, retries used);
    with ``checkpoint``, the rows of the checkpoint met right after instead
    (`_pass_checkpoint` reads them). The mass that runs out of retries, and the attempts and
    cost of every execution (and of the checkpoint), go into ``result``. ``work`` is scratch
    space for the stacked shifts, of at least ``z * 2C * shifts * doomed * R`` values.
    """
    n_z, n_in, n_d, n_r = state.shape
    c = model.n_conf
    clean = n_in == c
    move = kernel.moves(clean, checkpoint)
    n_shift = move.shape[2] // n_in
    # shifted[:, k, ..., r] = state[..., r - k]: accepted after k rejections, it ends with r
    # retries used. Stacking the shifts makes the whole execution one product per z node.
    shifted = work[: n_z * n_shift * n_in * n_d * n_r].reshape(n_z, n_shift, n_in, n_d, n_r)
    for k in range(n_shift):
        shifted[:, k, ..., :k] = 0.0
        shifted[:, k, ..., k:] = state[..., : n_r - k]
    out = move @ shifted.reshape(n_z, n_shift * n_in, n_d * n_r)
    # Running out of retries depends on the confusion state and the retries used alone.
    # (Sums of slices: numpy reduces a short middle axis slowly.)
    by_conf = state if clean else state[:, :c] + state[:, c:]  # (z, C, doomed, r)
    if n_d == 2:
        by_conf = by_conf[:, :, 0] + by_conf[:, :, 1]
    by_conf = by_conf.reshape(n_z, -1)
    lost = (by_conf[:, None] @ kernel.lost)[:, 0]  # (z, 2)
    result[_DETECTED] += lost[:, 0]
    result[_ATTEMPTS] += lost[:, 1]
    result[_COST] += model.attempt_cost[step] * lost[:, 1]
    if checkpoint:
        # Every execution that does not run out of retries is accepted and meets the
        # checkpoint (cheaper than a row of the product that sums the accepted mass).
        result[_COST] += model.checkpoint_cost * (by_conf.sum(axis=1) - lost[:, 0])
    return out.reshape(n_z, -1, n_d, n_r)


def _pass_checkpoint(model: _Model, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
