"""The kernels' input from the compiled trial model: a ``_layout.Design`` and which kernel runs it.

Private. A scenario with docs/model.md section 8's tables (``TrialModel.has_design_tables``)
runs on ``_kernel_v2.run_v2``, which also reads a ``_layout.Tables``. Of the others, those
without checkpoints, confusion or random effects, whose attempts all cost the same, run on
the fast ``run_simple`` kernel, which keeps the exact joint histogram of outcome and
attempts; every other one runs on ``run_general``. The branch is taken once, here: a
scenario without section 8's tables gets the very input it got before them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from relsim.montecarlo._layout import MANTISSA_DROP, Design, Tables, histogram_offset
from relsim.scenario import TrialModel

#: Largest number of attempts per trial for which the fast kernel's exact histogram is used.
EXACT_ATTEMPTS_LIMIT = 1 << 16

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
        The power of two the design's costs are divided by (``TrialModel.cost_unit``):
        every cost the kernels sum is in this unit, and the estimates are multiplied back.
    tables : Tables or None
        Section 8's tables: set when ``_kernel_v2.run_v2`` runs the scenario.
    """

    design: Design
    exact: bool
    max_attempts: int
    cost_unit: float = 1.0
    tables: Tables | None = None


def kernel_input(
    model: TrialModel, force_general: bool = False, force_v2: bool = False
) -> KernelInput:
    """Turn the compiled trial model into the kernels' input; ``force_general`` keeps it off
    the fast kernel and ``force_v2`` puts it on ``run_v2`` (the tests use them: the kernels
    must then agree in distribution)."""
    if model.has_design_tables or force_v2:
        return _v2_input(model)
    unit = model.cost_unit
    # copies: writable arrays, so that the kernels compile once for every scenario
    attempt_cost = np.array(model.cost_per_attempt, dtype=np.float64) / unit
    checkpoint_cost = model.checkpoint_cost / unit
    rollback_cost = model.rollback_cost / unit
    positions = model.checkpoint_positions
    rollbacks = model.rollbacks

    # Bounds of a trial: attempts and cost.
    max_attempts = model.max_attempts
    max_cost = (
        max_attempts * float(attempt_cost.max())
        + (len(positions) + rollbacks) * checkpoint_cost
        + rollbacks * rollback_cost
    )
    exact = (
        not model.has_checkpoints
        and not model.has_confusion
        and not model.has_random_effects
        and bool(np.all(attempt_cost == attempt_cost[0]))
        and max_attempts < EXACT_ATTEMPTS_LIMIT
        and not force_general
    )
    design = _design(model, attempt_cost, max_attempts, max_cost)
    return KernelInput(
        design=design, exact=exact, max_attempts=int(max_attempts), cost_unit=unit
    )


def _design(model: TrialModel, attempt_cost: np.ndarray, max_attempts: int, max_cost: float) -> Design:
    """Section 3's part of the kernels' input, in the model's cost unit: ``attempt_cost`` the
    cost of one attempt at each step (rung 0's for ``run_v2``), ``max_attempts`` and
    ``max_cost`` a trial's bounds (the histograms' windows)."""
    unit = model.cost_unit
    checkpoint_cost = model.checkpoint_cost / unit
    # copies: writable arrays, so that the kernels compile once for every scenario
    return Design(
        p=np.array(model.p, dtype=np.float64),
        logit_p=np.array(model.logit_p, dtype=np.float64),
        p_is_fixed=np.array(model.p_fixed),
        miss=np.array(model.miss, dtype=np.float64),
        false_reject=np.array(model.false_reject, dtype=np.float64),
        per_step=np.array(model.per_step, dtype=np.int64),
        total_retries=int(model.total),
        attempt_cost=attempt_cost,
        unit_cost=float(attempt_cost[0]),
        is_checkpoint=np.array(model.is_checkpoint),
        detect=float(model.detect),
        false_alarm=float(model.false_alarm),
        rollbacks=int(model.rollbacks),
        checkpoint_cost=float(checkpoint_cost),
        rollback_cost=float(model.rollback_cost / unit),
        has_confusion=model.has_confusion,
        enter=float(model.enter),
        recover=float(model.recover),
        factor=float(model.factor),
        task_sd=float(model.task_sd),
        step_sd=float(model.step_sd),
        attempts_shift=float(model.steps),  # a trial without retries or rollbacks
        cost_shift=float(attempt_cost.sum() + len(model.checkpoint_positions) * checkpoint_cost),
        attempts_offset=histogram_offset(_top_exponent(max_attempts)),
        cost_offset=histogram_offset(_top_exponent(max_cost * (1.0 + 1e-9))),
        mantissa_drop=MANTISSA_DROP,
    )


def _v2_input(model: TrialModel) -> KernelInput:
    """The input of ``run_v2``: a ``Design`` for section 3 (``miss`` the modes' mixture, the
    shifts and the histograms' windows from section 8's costs) and the ``Tables``."""
    unit = model.cost_unit
    samples = model.samples
    voted = model.vote and samples > 1
    rung_cost = np.array(model.rung_cost, dtype=np.float64) / unit
    verify_cost = model.verify_cost / unit
    # one attempt at each step on rung 0 and at most, as section 8 charges them
    verify_per_attempt = verify_cost * (1 if voted else samples)
    first_rung = rung_cost[0] * samples + verify_per_attempt
    dearest = float(rung_cost.max()) * samples + verify_per_attempt
    checkpoint_cost = model.checkpoint_cost / unit
    rollback_cost = model.rollback_cost / unit
    positions = model.checkpoint_positions
    rollbacks = model.rollbacks
    max_attempts = model.max_attempts
    max_cost = (
        max_attempts * dearest
        + (len(positions) + rollbacks) * checkpoint_cost
        + rollbacks * rollback_cost
    )
    design = _design(model, first_rung, max_attempts, max_cost)
    # An accepted wrong result's mode: P(mode | wrong, accepted) is share x miss, normalised
    # (no verifier: every miss is 1). Never drawn when no wrong result can be accepted.
    accepted = np.asarray(model.mode_share) * np.asarray(model.mode_miss)
    weights = accepted if accepted.sum() > 0 else np.asarray(model.mode_share, dtype=float)
    tables = Tables(
        class_cumulative=_cumulative(model.class_weight),
        rung_after=np.array(model.rung_after, dtype=np.int64),
        rung_p=np.array(model.rung_p, dtype=np.float64),
        rung_logit_p=np.array(model.rung_logit_p, dtype=np.float64),
        rung_p_fixed=np.array(model.rung_p_fixed),
        rung_cost=rung_cost,
        verify_cost=float(verify_cost),
        samples=int(samples),
        vote=bool(model.vote),
        wrong_answers=int(model.wrong_answers),
        mode_cumulative=_cumulative(weights),
        mode_detect=np.array(model.mode_detect, dtype=np.float64),
        fault=float(model.fault),
    )
    return KernelInput(
        design=design, exact=False, max_attempts=int(max_attempts), cost_unit=unit,
        tables=tables,
    )


def _cumulative(weights: np.ndarray) -> np.ndarray:
    """Cumulative probabilities of ``weights`` (normalised), the last exactly 1."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.size == 0:
        return np.zeros(0)
    out = np.cumsum(weights / weights.sum())
    out[-1] = 1.0
    return out


def _top_exponent(bound: float) -> int:
    """The least ``e >= 1`` with ``bound < 2**e``."""
    return max(1, math.frexp(float(bound))[1]) if bound > 0 else 1
