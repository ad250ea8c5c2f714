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
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from relsim.limits import WorkEstimate
from relsim.scenario import Scenario, TrialModel, as_scenario, trial_model

# Seconds per attempt and per step execution, one thread, on the calibration machine
# (benchmarks/limits_calibration.py; two busy cores).
_SIMPLE_ATTEMPT = 5e-9
_GENERAL_ATTEMPT = 25e-9
_GENERAL_EXECUTION = 40e-9  # a step effect: normals, expit and thresholds per execution
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
    if simple:
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


def expected_work(model: TrialModel) -> tuple[float, float]:
    """Attempts and step executions per trial, in expectation (pessimistic; see above)."""
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
    # A trial stops where a step runs out of retries: step i runs only if every step before
    # it was accepted (the likelier of the two p's, to stay on the high side).
    exhaust = np.minimum(exhaust_high, exhaust_low)
    reach = np.concatenate([[1.0], np.cumprod(1.0 - exhaust)[:-1]])

    executions = float(reach.sum())
    work = float((reach * attempts).sum())
    if model.has_checkpoints and model.rollbacks > 0:
        positions = np.asarray(model.checkpoint_positions)
        starts = np.concatenate([[0], positions[:-1]])  # segment i is steps starts[i]..positions[i]
        lengths = positions - starts
        with np.errstate(divide="ignore"):
            clean = np.exp(np.add.reduceat(np.log1p(-taint), starts))  # P(no taint) per segment
        caught = np.minimum(1.0, model.false_alarm + model.detect * (1.0 - clean))
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
