"""How long and how much memory the exact engine will take, estimated before it starts."""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from relsim._quadrature import LIMIT
from relsim.exact._chain import PRODUCT_LIMIT, DEFAULT_TOL
from relsim.errors import invalid
from relsim.limits import WorkEstimate
from relsim.scenario import Scenario, as_scenario, trial_model
from relsim.scenario.compiled import TrialModel

__all__ = ["check_tol", "work_estimate"]

# ------------------------------------------------------------------- the work estimate
# Rates measured on the calibration machine (benchmarks/limits_calibration.py: two busy
# cores, numpy 2.4): seconds per numpy-level operation of the forward pass, per execution of
# a step; per kernel built; per retry level of a kernel; per multiply-add of the big products
# and per value copied into the stacked shifts.
_SECONDS_PER_EXECUTION = 40e-6
_SECONDS_PER_SHIFT = 10e-6
_SECONDS_PER_KERNEL = 250e-6
_SECONDS_PER_LEVEL = 12e-6
# Without confusion a kernel's levels come from one cumulative product (no loop per level):
# 0.2 us a level measured (25 steps, per-step 10000, 2026-12-01), kept at 0.5 us.
_SECONDS_PER_LEVEL_ONE_STATE = 0.5e-6
_SECONDS_PER_MULTIPLY_ADD = 0.3e-9
# Section 8's kernels (relsim.exact._design) build each rung's attempt matrices apart: 0.1 to
# 0.2 ms a rung measured (300 distinct steps, 4 rungs, load 5, 2026-12-01).
_SECONDS_PER_RUNG = 150e-6
# A product of more than PRODUCT_LIMIT multiply-adds per node runs on OpenBLAS's threads,
# which on a busy machine is far slower per multiply-add (see PRODUCT_LIMIT).
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
    tainted and confusion states (:math:`2C`), the doomed bit (:math:`D = 2` with checkpoints,
    else 1) and the retries used
    (:math:`R = \text{total} + 1` when the task budget binds, else 1); one execution of a step
    is a product with :math:`K = \text{per\_step} + 1` stacked shifts (1 without a binding
    total), and the pass makes about :math:`(\text{rollbacks} + 1)\, n` executions:

    .. math::

        \text{memory} \approx 8\,n_z\,2C\,D\,R\,(K + 3 + P)\ \text{bytes},\qquad
        \text{time} \approx (\text{rollbacks} + 1)\, n\,
            (t_0 + t_1\, n_z (2C + 1)\, K\, 2C\, D R),

    plus each distinct step kernel (:math:`P` counts the rollback targets held, one per
    checkpoint position). With docs/model.md section 8's tables the tainted and doomed bits
    become failure modes (:math:`2C` becomes :math:`(M + 1) C` and :math:`D = M + 1` with
    :math:`M \ge 1` modes), each kernel builds every rung's attempts, and the pass runs once
    per class. The rates :math:`t_0, t_1` were measured on a small, busy machine
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
    return model_estimate(trial_model(as_scenario(scenario)), tol)


def model_estimate(m: TrialModel, tol: float = DEFAULT_TOL) -> WorkEstimate:
    """`work_estimate` of a compiled trial model (``evaluate`` reads it to choose its pass)."""
    n = m.steps
    cap, total = m.step_caps, m.binding_total
    positions = m.checkpoint_positions
    rollbacks = m.rollbacks
    c = 2 if m.has_confusion else 1
    n_r = 1 if total is None else total + 1
    # Section 8 (relsim.exact._design): the tainted and doomed bits become modes (clean and
    # M modes, M >= 1), a kernel level also holds the fault exhausts, and the forward pass
    # runs once per class.
    design = m.has_design_tables and (m.rungs > 0 or m.samples > 1 or m.modes > 0 or m.fault > 0)
    taints = 1 + max(1, m.modes) if design else 2
    n_d = taints if positions else 1
    task_sd, step_sd = m.task_sd, m.step_sd
    check_tol(tol)
    tighter = min(4.0, 1.0 + max(0.0, -math.log10(tol) - 8.0) / 4.0)
    n_z, rounds = (1, 1) if task_sd == 0 else (_FIRST_ROUND_NODES, _ROUNDS * tighter)
    entries = c * taints * c + 2 * c if design else 2 * c * c + c

    # Distinct step kernels (one when nothing varies by step) and their retry levels, cap + 1.
    columns: tuple[np.ndarray, ...] = (m.p, m.miss, m.false_reject, cap)
    if design:  # a step's kernel also reads every rung's p and cost (each class in turn)
        columns += tuple(m.rung_p.reshape(-1, n)) + tuple(m.rung_cost)
    if all(bool(np.all(column == column[0])) for column in columns):
        n_kernels, level_sum, level_max = 1, int(cap[0]) + 1, int(cap[0]) + 1
    else:
        keys = set(
            zip(cap.tolist(), *(column.tolist() for column in columns[:3] + columns[4:]))
        )  # a set of tuples: far quicker than np.unique(axis=0) on short chains
        levels = [key[0] + 1 for key in keys]
        n_kernels, level_sum, level_max = len(levels), sum(levels), max(levels)
    shifts = level_max if total is not None else 1
    grid = 0
    if step_sd > 0:
        grid = 2 * math.ceil(LIMIT * (task_sd + step_sd) / (2 * 0.3 * min(1.0, step_sd))) * 2 + 1
    points = grid if grid else n_z
    kernel_cells = (
        n_z * taints * c * taints * c * 5 * (level_sum if total is not None else n_kernels)  # move, variants
        + n_kernels * n_z * c * n_r * (4 if design else 2)  # lost
        + level_sum * entries * (2 * points + 2 * n_z)  # values, grid values and rules
    )

    state = n_z * taints * c * n_d * n_r
    held = len(positions) * n_z * n_d * n_r if rollbacks and positions else 0
    memory = 8.0 * (kernel_cells + state * (shifts + 3) + held)

    detects = bool(np.any(m.mode_detect > 0)) if design and m.modes else m.detect > 0
    rolls_back = bool(positions) and rollbacks > 0 and (
        (detects and bool(np.any(m.miss > 0))) or m.false_alarm > 0
    )
    executions = n * (rollbacks + 1 if rolls_back else 1)
    product = (taints * c + 1) * shifts * taints * c * n_d * n_r  # multiply-adds per node
    rate = _SECONDS_PER_MULTIPLY_ADD if product <= PRODUCT_LIMIT else (
        _SECONDS_PER_THREADED_MULTIPLY_ADD
    )
    per_execution = (
        _SECONDS_PER_EXECUTION
        + _SECONDS_PER_SHIFT * shifts
        + rate * n_z * product
        + _SECONDS_PER_COPY * state * shifts
        # with modes, a few operations more per mode (sums over taints, checkpoint passes)
        + (_SECONDS_PER_SHIFT * 2 * taints if design else 0.0)
    )
    # A design kernel loops over its levels (its attempts' rungs differ) at any C.
    per_level = _SECONDS_PER_LEVEL * c * c if c > 1 or design else _SECONDS_PER_LEVEL_ONE_STATE
    kernels = (
        n_kernels * _SECONDS_PER_KERNEL
        + level_sum * (per_level + _SECONDS_PER_MULTIPLY_ADD * c**3 * (taints if design else 1) * points)
        + _SECONDS_PER_MULTIPLY_ADD * 2 * n_z * grid * (level_sum * entries)
    )
    if design:  # each rung's attempt matrices: a vote's binomial terms, or the samples in turn
        kernels += n_kernels * (m.rungs + 1) * (
            _SECONDS_PER_RUNG + c * _SECONDS_PER_MULTIPLY_ADD * 4 * (m.samples + 1) * taints * points)
    # one pass per class (with classes alone, section 3's pass)
    seconds = m.classes * rounds * (executions * per_execution + kernels)

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
    if m.classes > 1:
        drivers.append(f"{m.classes} classes, one pass each")
    if design and m.modes:
        drivers.append(f"{m.modes} failure modes: {taints * c * n_d} states per counter value")
    return WorkEstimate(seconds=float(seconds), memory=float(memory), detail=", ".join(drivers))


def check_tol(tol: Any) -> None:
    """A RelsimError unless ``tol`` is a number in (0, 1e-3]."""
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating)) or not (
        0.0 < tol <= 1e-3
    ):
        raise invalid("tol", "a number in (0, 1e-3]", tol)
