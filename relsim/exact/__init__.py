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

The tables of docs/model.md section 8 keep this method and widen it (``_design``): a class is
drawn once per trial, so the outcome is the mixture of one pass per class; a kernel's
attempts follow the escalation ladder's rungs, draw samples (a vote, or the first the verifier
accepts) and may fault; the tainted and doomed bits become failure modes; and the pass also
reports infra failures and silent failures by mode. A scenario without those tables takes
``_chain``'s pass exactly as before.

The package: ``_chain`` holds the forward pass and the step kernels, ``_compiled`` the same
section 3 pass as one numba loop, ``_aot`` its build made ahead of time at install (taken
whenever it is installed and runs on this CPU; else numba's form is taken when the numpy pass
would take long enough to pay for loading numba, or it is loaded already; they agree to
rounding), ``_design`` their section 8 forms, ``_work`` the estimate of their time and memory;
all read the compiled ``relsim.scenario.TrialModel``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from relsim._quadrature import integrate_normal
from relsim.exact._chain import (
    DEFAULT_TOL,
    ATTEMPTS,
    COST,
    ChainModel,
    StepEffectGrid,
    conditional_values,
    use_compiled,
)
from relsim.exact._design import BY_MODE, INFRA, DesignModel, design_values
from relsim.exact._work import check_tol, model_estimate, work_estimate
from relsim.results import Outcome
from relsim.scenario import Scenario, as_scenario, trial_model
from relsim.scenario.compiled import TrialModel

__all__ = ["DEFAULT_TOL", "evaluate", "work_estimate"]

def evaluate(scenario: Scenario | Mapping[str, Any], *, tol: float = DEFAULT_TOL) -> Outcome:
    r"""Exact outcome of a scenario (docs/model.md section 3), with every feature combined.

    The probabilities of success, silent failure, detected failure and infra failure, the
    expected number of attempts and the expected cost of one trial; with failure modes, the
    silent failures by mode, and with ``[utility]`` the expected utility (docs/model.md
    section 8). Without random effects the answer is exact up
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
    check_tol(tol)
    estimate = work_estimate(scenario, tol=tol)
    estimate.check(
        "scenario",
        "use relsim.simulate (Monte Carlo) for this scenario, or lower the budgets "
        "(retries.total, retries.per_step, checkpoints.rollbacks) or the steps",
    )
    values, _ = _evaluate(scenario, tol, estimate.seconds)
    trial = trial_model(scenario)
    success, silent, detected = (_share(values[k]) for k in range(3))
    # the rows of section 8 (design_values): absent from section 3's forward pass
    infra = _share(values[INFRA]) if values.size > INFRA else 0.0
    by_mode = {name: _share(values[BY_MODE + m]) for m, name in enumerate(trial.mode_names)}
    if not trial.miss.any():
        # A verifier that never accepts a wrong attempt leaves no silent failure: an exact 0,
        # not the rounding of a difference of probabilities near 1 (about 1e-16), which would
        # keep targets within 2**-53 of 1 out of the planners' reach.
        silent = 0.0
        by_mode = dict.fromkeys(by_mode, 0.0)
    cost = float(values[COST])
    shares = {"success": success, "silent_failure": silent, "detected_failure": detected,
              "infra_failure": infra}
    return Outcome(
        success=success,
        silent_failure=silent,
        detected_failure=detected,
        infra_failure=infra,
        expected_attempts=float(values[ATTEMPTS]),
        expected_cost=cost,
        silent_by_mode=by_mode if trial.modes else None,
        expected_utility=trial.utility_of(shares, cost),
    )


def _share(value: float) -> float:
    """A probability summed from many terms, clipped to [0, 1] (rounding can overstep)."""
    return min(1.0, max(0.0, float(value)))


def _evaluate(
    scenario: Scenario, tol: float, seconds: float | None = None
) -> tuple[np.ndarray, int]:
    """The expectations and the number of task-effect nodes used (no work check).

    ``seconds``: the work estimate's time, when the caller has it (it chooses the pass).

    The rows are ``_chain``'s five (success, silent, detected, attempts, cost); a scenario
    with section 8's tables adds infra failures and one row of silent failures per mode
    (``_design.design_values``).
    """
    check_tol(tol)
    trial = trial_model(scenario)
    # Section 3's pass runs compiled where its build made at install runs, or when the numpy
    # one would take long enough to pay for loading numba (or it is loaded already);
    # section 8's pass is numpy alone.
    if seconds is None:
        seconds = model_estimate(trial, tol).seconds
    compiled = use_compiled(seconds)
    if trial.classes > 1:
        # A class is drawn once per trial, before anything else: the outcome is the mixture
        # of the classes' outcomes (expectations are linear in the weights).
        parts = [
            _evaluate_model(trial.for_class(c), tol, compiled) for c in range(trial.classes)
        ]
        values = sum(w * v for w, (v, _) in zip(trial.class_weight, parts))
        return np.asarray(values), sum(used for _, used in parts)
    return _evaluate_model(trial, tol, compiled)


def _evaluate_model(
    trial: TrialModel, tol: float, compiled: bool = False
) -> tuple[np.ndarray, int]:
    """:func:`_evaluate` for a model of one class (``compiled``: section 3's compiled pass)."""
    model = ChainModel.from_trial(trial, float(tol))
    grids: dict[tuple, StepEffectGrid] = {}  # shared by every round of task-effect nodes
    forward: Callable[[np.ndarray], np.ndarray]
    if trial.has_design_tables:
        design = DesignModel.from_chain(model)

        def forward(z_shift: np.ndarray) -> np.ndarray:
            return design_values(design, z_shift, grids)

    else:  # section 3's model: the forward pass it always had

        def forward(z_shift: np.ndarray) -> np.ndarray:
            return conditional_values(model, z_shift, grids, compiled)

    if model.trial.task_sd == 0.0:
        values, used = forward(np.zeros(1))[:, 0], 1
    else:

        def conditional(z: np.ndarray) -> np.ndarray:
            # with a row of ones: dividing by its integral makes the weights sum to exactly 1
            return np.vstack([forward(model.trial.task_sd * z), np.ones(z.size)])

        values, used = integrate_normal(conditional, float(tol))
        values = values[:-1] / values[-1]
    with np.errstate(over="ignore"):  # a cost past the float range is stated as infinite
        values[COST] *= model.trial.cost_unit
    return values, used
