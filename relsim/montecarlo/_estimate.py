r"""The time and memory a Monte Carlo run will take, estimated before it starts.

Private; ``simulate`` refuses a run over ``relsim.limits`` with it, and
``relsim.montecarlo.work_estimate`` exposes it. Numpy only (no numba).

A trial's work is its attempts plus its step executions. Both are bounded in expectation
from the scenario without simulating: an execution of step :math:`i` makes on average
:math:`S_i = (1 - q_i^{r_i+1}) / (1 - q_i)` attempts (docs/model.md section 2), accepts a
wrong result with probability :math:`w_i S_i` and runs out of retries with
:math:`q_i^{r_i+1}` (the trial stops there, so a later step counts with the chance to reach
it); a segment between checkpoints is caught with at most ``false_alarm`` plus ``detect``
times the chance that it holds a wrong result, so it runs again :math:`c/(1-c)` times on
average, within the rollback budget. Random effects and
confusion lower :math:`p`: the estimate takes :math:`p` at two standard deviations of the
effects below, times ``factor`` (more rejections, more taint), which is pessimistic for
ordinary designs and exact in its order of magnitude for the runaway ones.

With docs/model.md section 8's tables (``_kernel_v2``) the same bound holds per class (the
work is their mixture) with each attempt's rejection and taint on its rung: a fault rejects
it; ``n`` samples checked in order are all rejected with :math:`q_s^n`; a vote's winner is
right at least as often as a binary majority of the ``n`` (more wrong answers split the
wrong votes), and the estimate takes whichever end of that range rejects more. An attempt
costs one draw per sample: the samples multiply the time.
"""

from __future__ import annotations

from math import comb
from typing import Any, Mapping

import numpy as np

from relsim.limits import WorkEstimate
from relsim.scenario import Scenario, TrialModel, as_scenario, trial_model

# Seconds per attempt and per step execution, one thread, on the calibration machine
# (benchmarks/limits_calibration.py; two busy cores).
_SIMPLE_ATTEMPT = 5e-9
_GENERAL_ATTEMPT = 25e-9
_GENERAL_EXECUTION = 40e-9  # a step effect: normals, expit and thresholds per execution
# The kernel of section 8's tables: per attempt, per sample drawn, per step execution (its
# thresholds, and with random effects a normal and an expit per rung used).
_V2_ATTEMPT = 15e-9
_V2_SAMPLE = 8e-9
_V2_EXECUTION = 15e-9
# Bytes per recorded trial: the kernel's record (8 columns of 8 bytes), the DataFrame built
# from it, and what printing or JSON makes of it.
_RECORD_BYTES = 8 * 8 * 3
# What a run holds whatever its size: the histograms of each task in flight, numba and LLVM.
_FIXED_BYTES = 200 * 2**20


def work_estimate(
    scenario: Scenario | Mapping[str, Any], trials: int, threads: int = 1, record: int = 0
) -> WorkEstimate:
    """Expected seconds and peak bytes of ``simulate(scenario, trials, threads=threads,
    record=record)`` (see the module docstring); ``threads`` (busy cores) divides the time.

    Examples
    --------
    A million trials of reference value R1 take a moment; recording 10**8 trials does not fit
    in a few GiB:

    >>> from relsim.montecarlo import work_estimate
    >>> r1 = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"per_step": 2}}
    >>> work_estimate(r1, 10**6).seconds < 5
    True
    >>> work_estimate(r1, 10**8, record=10**8).memory > 4 * 2**30
    True
    """
    model = trial_model(as_scenario(scenario))
    work, executions = expected_work(model)
    from relsim.montecarlo._inputs import kernel_input

    simple = kernel_input(model).exact
    if model.has_design_tables:
        per_execution_cost = _V2_EXECUTION + (
            _GENERAL_EXECUTION * (model.rungs + 1) if model.has_random_effects else 0.0)
        per_trial = (work * (_V2_ATTEMPT + _V2_SAMPLE * draws_per_attempt(model))
                     + executions * per_execution_cost)
    elif simple:
        per_trial = work * _SIMPLE_ATTEMPT
    else:
        per_execution_cost = _GENERAL_EXECUTION if model.has_random_effects else 0.0
        per_trial = work * _GENERAL_ATTEMPT + executions * per_execution_cost
    seconds = trials * per_trial / max(1, threads)
    memory = _FIXED_BYTES + record * _RECORD_BYTES
    detail = (
        f"about {work:,.0f} attempts per trial, {trials:,} trials on {threads} "
        f"thread{'s' if threads != 1 else ''}"
    )
    if record:
        detail += f", {record:,} recorded"
    return WorkEstimate(seconds=float(seconds), memory=float(memory), detail=detail)


def draws_per_attempt(model: TrialModel) -> float:
    """The draws one attempt takes, at most: 1 without section 8's tables; with them its
    samples, plus one for a fault or confusion, plus a vote's check and tie."""
    if not model.has_design_tables:
        return 1.0
    extra = 1.0 if (model.fault > 0.0 or model.has_confusion) else 0.0
    if model.vote and model.samples > 1:
        extra += 2.0
    return model.samples + extra


def expected_work(model: TrialModel) -> tuple[float, float]:
    """Attempts and step executions per trial, in expectation (pessimistic; see above)."""
    if model.has_design_tables:
        parts = [_v2_work(model.for_class(c)) for c in range(model.classes)]
        weights = model.class_weight
        return (float(sum(w * a for w, (a, _) in zip(weights, parts))),
                float(sum(w * e for w, (_, e) in zip(weights, parts))))
    p = np.asarray(model.p, dtype=float)
    spread = 2.0 * float(np.hypot(model.task_sd, model.step_sd))
    p_low = model.shifted_p(-spread) if spread > 0 else p
    p_low = p_low * model.factor  # 1 without confusion
    miss = np.asarray(model.miss, dtype=float)
    false_reject = np.asarray(model.false_reject, dtype=float)
    retries = np.asarray(model.step_caps, dtype=float)

    def per_execution(prob: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rejected = prob * false_reject + (1 - prob) * (1 - miss)
        below = np.minimum(rejected, 1 - 1e-12)  # S_r -> r + 1 as q -> 1
        attempts = np.where(
            rejected < 1 - 1e-12, (1 - below ** (retries + 1)) / (1 - below), retries + 1
        )
        return attempts, (1 - prob) * miss * attempts, rejected ** (retries + 1)

    attempts_high, taint_high, exhaust_high = per_execution(p)
    attempts_low, taint_low, exhaust_low = per_execution(p_low)
    attempts = np.maximum(attempts_high, attempts_low)
    taint = np.minimum(1.0, np.maximum(taint_high, taint_low))
    exhaust = np.minimum(exhaust_high, exhaust_low)
    return _with_rollbacks(model, attempts, taint, exhaust)


def _with_rollbacks(
    model: TrialModel, attempts: np.ndarray, taint: np.ndarray, exhaust: np.ndarray
) -> tuple[float, float]:
    """Attempts and executions per trial from each step execution's expected attempts, its
    chance to accept a wrong result and its chance to run out of retries."""
    # A trial stops where a step runs out of retries: step i runs only if every step before
    # it was accepted (the likelier of the two p's, to stay on the high side).
    reach = np.concatenate([[1.0], np.cumprod(1.0 - exhaust)[:-1]])

    executions = float(reach.sum())
    work = float((reach * attempts).sum())
    if model.has_checkpoints and model.rollbacks > 0:
        positions = np.asarray(model.checkpoint_positions)
        starts = np.concatenate([[0], positions[:-1]])  # segment i is steps starts[i]..positions[i]
        lengths = positions - starts
        with np.errstate(divide="ignore"):
            clean = np.exp(np.add.reduceat(np.log1p(-taint), starts))  # P(no taint) per segment
        detect = float(np.max(model.mode_detect)) if model.modes else model.detect
        caught = np.minimum(1.0, model.false_alarm + detect * (1.0 - clean))
        # a segment caught with probability c runs again c / (1 - c) times on average
        with np.errstate(divide="ignore"):
            reruns = np.where(
                caught >= 1.0, model.rollbacks, np.minimum(model.rollbacks, caught / (1 - caught))
            )
        extra_executions = float((reruns * lengths).sum())
        extra_attempts = float((reruns * np.add.reduceat(attempts, starts)).sum())
        longest = int(lengths.max())
        bound = model.rollbacks * longest  # the budget is shared by every segment
        scale = min(1.0, bound / extra_executions) if extra_executions else 1.0
        executions += extra_executions * scale
        work += extra_attempts * scale
    return work, executions


def _v2_work(model: TrialModel) -> tuple[float, float]:
    """``expected_work`` of one class with section 8's ladder, samples, votes and faults."""
    spread = 2.0 * float(np.hypot(model.task_sd, model.step_sd))
    miss = np.asarray(model.miss, dtype=float)  # the modes' mixture
    false_reject = np.asarray(model.false_reject, dtype=float)
    caps = np.asarray(model.step_caps, dtype=float)
    n = model.samples
    voted = model.vote and n > 1

    def attempt(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """An attempt's chance to be rejected and to accept a wrong result, at ``p``."""
        if voted:
            # the winner is right with a chance between a binary majority's and 1
            k = np.arange(n + 1)
            ways = np.array([comb(n, int(j)) for j in k], dtype=float)
            weight = np.where(2 * k > n, 1.0, np.where(2 * k == n, 0.5, 0.0))
            low = np.sum(weight * ways * p[:, None] ** k * (1 - p[:, None]) ** (n - k), axis=1)
            rejected = np.maximum(low * false_reject + (1 - low) * (1 - miss), false_reject)
            wrong = (1 - low) * miss
        else:
            one = p * false_reject + (1 - p) * (1 - miss)
            rejected = one**n
            below = np.minimum(one, 1 - 1e-12)
            wrong = (1 - p) * miss * np.where(one < 1 - 1e-12, (1 - below**n) / (1 - below), n)
        fault = model.fault
        return fault + (1 - fault) * rejected, (1 - fault) * wrong

    def per_execution(shift: float, factor: float):
        """Expected attempts, taint and exhaustion of each step's execution."""
        reach = np.ones(model.steps)  # P(the attempts so far were all rejected)
        attempts = np.zeros(model.steps)
        taint = np.zeros(model.steps)
        edges = [0, *model.rung_after.tolist(), None]
        for rung in range(model.rungs + 1):
            first = np.minimum(edges[rung], caps + 1)
            last = caps + 1 if edges[rung + 1] is None else np.minimum(edges[rung + 1], caps + 1)
            length = last - first  # this rung's attempts within the budget
            base = model.rung_p[0, rung]
            logit = model.rung_logit_p[0, rung]
            fixed = model.rung_p_fixed[0, rung]
            p = base if shift == 0 else np.where(fixed, base, 1 / (1 + np.exp(-(logit + shift))))
            rejected, wrong = attempt(p * factor)
            below = np.minimum(rejected, 1 - 1e-12)
            with np.errstate(divide="ignore", invalid="ignore"):
                run = np.where(rejected < 1 - 1e-12, (1 - below**length) / (1 - below), length)
            attempts += reach * run
            taint += reach * run * wrong
            reach = reach * rejected**length
        return attempts, np.minimum(1.0, taint), reach

    attempts_high, taint_high, exhaust_high = per_execution(0.0, 1.0)
    attempts_low, taint_low, exhaust_low = per_execution(-spread, model.factor)
    attempts = np.maximum(attempts_high, attempts_low)
    taint = np.maximum(taint_high, taint_low)
    exhaust = np.minimum(exhaust_high, exhaust_low)
    return _with_rollbacks(model, attempts, taint, exhaust)
