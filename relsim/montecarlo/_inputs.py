"""The kernels' input from a scenario: a ``_layout.Design`` and which kernel runs it.

Private. Scenarios without checkpoints, confusion or random effects, whose attempts all cost
the same, run on the fast ``run_simple`` kernel, which keeps the exact joint histogram of
outcome and attempts; every other scenario runs on ``run_general``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from relsim.limits import cost_unit
from relsim.montecarlo._layout import MANTISSA_DROP, Design, histogram_offset
from relsim.scenario import Scenario

#: Largest number of attempts per trial for which the fast kernel's exact histogram is used.
EXACT_ATTEMPTS_LIMIT = 1 << 16

# A task-wide retry cap that no trial reaches: "no cap" without a branch in the kernel.
_NO_CAP = 1 << 62


@dataclass(frozen=True)
class KernelInput:
    """A scenario ready to simulate.

    Attributes
    ----------
    design : Design
        What both kernels read.
    exact : bool
        True when the fast kernel (exact joint histogram of outcome and attempts) runs it.
    max_attempts : int
        The most attempts one trial can make (the fast kernel's histogram has one more bin).
    cost_unit : float
        The power of two the design's costs are divided by (``relsim.limits.cost_unit``):
        every cost the kernels sum is in this unit, and the estimates are multiplied back.
    """

    design: Design
    exact: bool
    max_attempts: int
    cost_unit: float = 1.0


def kernel_input(scenario: Scenario, force_general: bool = False) -> KernelInput:
    """Turn ``scenario`` into the kernels' input; ``force_general`` keeps it off the fast
    kernel (the tests use it: both kernels must then draw the very same trials)."""
    n = scenario.steps
    # copies: writable arrays, so that the kernels compile once for every scenario
    p = np.array(scenario.p_array, dtype=np.float64)
    miss = np.array(scenario.miss_array, dtype=np.float64)
    false_reject = np.array(scenario.false_reject_array, dtype=np.float64)
    confusion = scenario.correlation.confusion
    fixed = (p == 0.0) | (p == 1.0)  # shift() leaves p of exactly 0 or 1 as it is
    inner = np.where(fixed, 0.5, p)
    logit_p = np.log(inner) - np.log1p(-inner)
    per_step = np.array(scenario.per_step_array, dtype=np.int64)
    total = scenario.total_retries
    cost = scenario.cost
    unit = cost_unit(scenario)
    attempt_cost = (
        np.array(scenario.attempt_cost_array, dtype=np.float64) / unit + cost.verify / unit
    )
    checkpoint_cost = cost.checkpoint / unit
    rollback_cost = cost.rollback / unit
    positions = scenario.checkpoint_positions
    is_checkpoint = np.zeros(n + 1, dtype=np.bool_)
    is_checkpoint[list(positions)] = True
    checks = scenario.checkpoints
    rollbacks = 0 if checks is None else int(checks.rollbacks)

    # Bounds of a trial: executions of steps, attempts, cost.
    edges = (0, *positions)
    longest_segment = max((b - a for a, b in zip(edges, edges[1:])), default=0)
    executions = n + rollbacks * longest_segment
    max_attempts = executions * (int(per_step.max()) + 1)
    if total is not None:
        max_attempts = min(max_attempts, executions + total)
    max_cost = (
        max_attempts * float(attempt_cost.max())
        + (len(positions) + rollbacks) * checkpoint_cost
        + rollbacks * rollback_cost
    )
    exact = (
        checks is None
        and confusion is None
        and not scenario.has_random_effects
        and bool(np.all(attempt_cost == attempt_cost[0]))
        and max_attempts < EXACT_ATTEMPTS_LIMIT
        and not force_general
    )
    design = Design(
        p=p,
        logit_p=logit_p,
        p_is_fixed=fixed,
        miss=miss,
        false_reject=false_reject,
        per_step=per_step,
        total_retries=int(_NO_CAP if total is None else total),
        attempt_cost=attempt_cost,
        unit_cost=float(attempt_cost[0]),
        is_checkpoint=is_checkpoint,
        detect=float(1.0 if checks is None else checks.detect),
        false_alarm=float(0.0 if checks is None else checks.false_alarm),
        rollbacks=rollbacks,
        checkpoint_cost=float(checkpoint_cost),
        rollback_cost=float(rollback_cost),
        has_confusion=confusion is not None,
        enter=float(0.0 if confusion is None else confusion.enter),
        recover=float(0.0 if confusion is None else confusion.recover),
        factor=float(1.0 if confusion is None else confusion.factor),
        task_sd=float(scenario.correlation.task_sd),
        step_sd=float(scenario.correlation.step_sd),
        attempts_shift=float(n),  # a trial without retries or rollbacks
        cost_shift=float(attempt_cost.sum() + len(positions) * checkpoint_cost),
        attempts_offset=histogram_offset(_top_exponent(max_attempts)),
        cost_offset=histogram_offset(_top_exponent(max_cost * (1.0 + 1e-9))),
        mantissa_drop=MANTISSA_DROP,
    )
    return KernelInput(
        design=design, exact=exact, max_attempts=int(max_attempts), cost_unit=unit
    )


def _top_exponent(bound: float) -> int:
    """The least ``e >= 1`` with ``bound < 2**e``."""
    return max(1, math.frexp(float(bound))[1]) if bound > 0 else 1
