"""What every planner shares: the tolerances and limits, the target check, the engine call,
the scenario transformations (one design quantity changed) and :func:`make_plan`, which turns a
chosen design into a :class:`~relsim.plan.result.Plan`.

The search limits (``MAX_BUDGET``, ``MAX_TOTAL``, ``MAX_FRONT``) are read as
``_common.<NAME>`` when a plan runs, so that one assignment here changes every planner."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Iterable, Mapping

import numpy as np

from relsim import checks, formulas
from relsim.scenario import trial_model
from relsim.errors import RelsimError, invalid
from relsim.plan.result import QUANTITIES, Plan
from relsim.results import Outcome
from relsim.scenario import Retries, Scenario, Verifier

__all__ = ["QUANTITIES", "Plan"]  # and the private helpers the planners share

#: Slack on ``success >= target``: none. Every planner judges a target by one rule,
#: :func:`meets_goal` (:func:`relsim.formulas.meets_target`), with no tolerance.
TOLERANCE = 0.0
#: Success that changes by less than this over a doubling of a budget has converged.
CONVERGED = 1e-12
#: The largest per-step retry budget any search tries.
MAX_BUDGET = 1_000
#: The largest task-wide retry budget any search tries.
MAX_TOTAL = 10_000
#: An infeasible budget plan reports the least budget within this of the ceiling.
NEAR_CEILING = 1e-6
#: Continuous searches (p, miss, false_reject) stop when the bracket is this narrow.
BISECTION_WIDTH = 1e-9
#: ``miss`` with checkpoints (where success need not fall with ``miss``): first a scan of
#: this many equal intervals of [0, 1].
SCAN_INTERVALS = 16
#: Allocation: an exact Pareto front larger than this switches to the bucketed method.
MAX_FRONT = 20_000
#: Allocation: the most memory (bytes) its tables may take; beyond, it refuses up front.
MAX_MEMORY = 2 * 2**30
#: Allocation: buckets of log-success in the bucketed dynamic programme ...
BUCKETS = 65_536
#: ... and in the surrogate solves of the general search (run many times).
SURROGATE_BUCKETS = 8_192
#: Allocation beyond the chain: branch and bound up to this many steps ...
BRANCH_AND_BOUND_STEPS = 8
#: ... and this many engine evaluations (beyond, the heuristic's answer stands) ...
BRANCH_AND_BOUND_EVALUATIONS = 600
#: ... or, without checkpoints and a task-wide budget, this many partial allocations x task
#: effect nodes x confusion states examined on the planner's tables.
BRANCH_AND_BOUND_WORK = 20_000_000
#: Allocation: the relative gap to the optimum a bound is sought within. An answer proven
#: within it takes the smallest budgets whose objective stays within it of the bound.
ALLOCATION_GAP = 0.01
#: Allocation beyond the chain: single-step decrements tried after the search.
POLISH_TRIALS = 8
#: Allocation beyond the chain: bisections of the surrogate's target.
SURROGATE_BISECTIONS = 6
#: Checkpoints: every spacing is tried up to this many steps; beyond, a grid and a local walk.
EXHAUSTIVE_CHECKPOINTS = 64

#: Work estimate: exact evaluations each planner makes (an upper estimate for large scenarios:
#: doubling and bisection over the budget, regula falsi, the spacing grid and walk, plus the
#: diagnosis of an infeasible plan).
EVALUATIONS = {
    "retries": 25, "total": 30, "allocation": 40, "verifier": 80, "p": 30, "checkpoints": 30,
    "samples": 64, "escalation": 120,  # their planners count their own candidates
}
#: Work estimate: seconds of one unit (step x rollback round x confusion state) of the exact
#: engine, measured on the development machine (benchmarks/exact_speed.py scale) ...
SECONDS_PER_UNIT = 2.2e-5
#: ... and the most seconds a plan may be estimated to take before it is refused.
MAX_SECONDS = 60.0


def _check_work(scenario: Scenario, for_: str, evaluations: int | None = None) -> None:
    """Refuse, before the search starts, a plan estimated to take over ``MAX_SECONDS``.

    A chain of independent steps is searched with closed forms (one engine call at the end);
    anything else costs ``EVALUATIONS[for_]`` exact evaluations (or ``evaluations``, when the
    search knows how many it makes) of about ``SECONDS_PER_UNIT`` x steps x (rollbacks + 1)
    x (2 with confusion) x classes seconds each."""
    if evaluations is None:
        evaluations = 3 if is_chain(scenario) else EVALUATIONS.get(for_, 30)
    rollbacks = scenario.checkpoints.rollbacks if scenario.checkpoints is not None else 0
    states = 2 if scenario.correlation.confusion is not None else 1
    classes = max(1, len(scenario.classes))  # the exact engine evaluates each class apart
    one = SECONDS_PER_UNIT * scenario.steps * (rollbacks + 1) * states * classes
    seconds = evaluations * one
    if seconds > MAX_SECONDS:
        raise RelsimError(
            f"{for_}: planning this {scenario.steps}-step scenario needs about {evaluations} "
            f"exact evaluations of about {one:.2g} s each (about {seconds / 60:.0f} minutes), "
            f"over the planner's limit of {MAX_SECONDS / 60:.0f} minute; evaluate one design "
            "with relsim.evaluate, simulate it with relsim.simulate, or plan a shorter "
            "model of the task (fewer, coarser steps, or fewer rollbacks)"
        )


def goal_of(scenario: Scenario, target: float | None, for_: str | None = None) -> float:
    """The target to plan for: ``target``, else the scenario's; in (0, 1]. With ``for_``,
    the plan's work is estimated first (:func:`_check_work`)."""
    if not isinstance(scenario, Scenario):
        raise invalid("scenario", "a Scenario", type(scenario).__name__)
    if for_ is not None:
        _check_work(scenario, for_)
    if target is None:
        target = scenario.target
    if target is None:
        raise RelsimError("target: must be a number in (0, 1]; the scenario sets none")
    return checked_target(target)


def checked_target(target: Any) -> float:
    """``target`` as a float in (0, 1], else the one error of every planner."""
    target = checks.scalar(target)  # a 0-d array is the number it holds
    if isinstance(target, bool) or not isinstance(target, (int, float, np.floating)):
        raise invalid("target", "a number in (0, 1]", target)
    target = float(target)
    if not 0.0 < target <= 1.0:
        raise invalid("target", "a number in (0, 1]", target)
    return target


class SuccessValue(float):
    """A success probability that carries its failure probability (silent + detected,
    summed without the cancellation of ``1 - success``), for the target rule."""

    failure: float

    def __new__(cls, success: float, failure: float) -> "SuccessValue":
        value = super().__new__(cls, success)
        value.failure = float(failure)
        return value


def outcome_success(outcome: Outcome) -> SuccessValue:
    failure = outcome.silent_failure + outcome.detected_failure
    if outcome.infra_failure:  # faults (0 without them: the sum is left as it was)
        failure += outcome.infra_failure
    return SuccessValue(outcome.success, failure)


def meets_goal(success: float, goal: float) -> bool:
    """The one target rule of every planner: ``log(success) >= log(goal)``, both logs from
    the failure probability where it is small (:func:`relsim.formulas.meets_target`). So a
    target a few ulps below 1 is judged by the failure probability, and target 1 is met only
    by a design whose failure probability is exactly 0 (one that cannot fail)."""
    failure = getattr(success, "failure", None)
    if failure is None:  # a plain float: its complement, to rounding
        failure = 1.0 - float(success)
    if failure < 0.5:
        log_success = math.log1p(-failure)
    else:
        log_success = math.log(success) if success > 0 else -math.inf
    return formulas.meets_target(log_success, goal)


def log_goal_of(goal: float) -> float:
    """``log(goal)`` to full relative accuracy (the target side of :func:`meets_goal`)."""
    return formulas._log_target(goal)


def evaluate_design(scenario: Scenario) -> Outcome:
    from relsim.exact import evaluate

    return evaluate(scenario)


def is_chain(scenario: Scenario) -> bool:
    """True when the scenario is a chain of independent verified steps (the closed form):
    no checkpoints, task-wide budget, correlation, nor any table of docs/model.md section 8
    that changes a trial (a mixture, a ladder, samples, failure modes, faults)."""
    model = trial_model(scenario)
    return not (
        model.has_checkpoints or model.has_total or model.has_random_effects or model.has_confusion
        or model.has_design_tables
    )


def exact_success(scenario: Scenario) -> SuccessValue:
    """Exact success (with its failure probability, for :func:`meets_goal`): the closed-form
    chain where it applies, else the engine."""
    if is_chain(scenario):
        model = trial_model(scenario)
        chain = formulas.verified_chain(model.p, model.per_step, model.miss, model.false_reject)
        return SuccessValue(chain.success, chain.silent_failure + chain.detected_failure)
    return outcome_success(evaluate_design(scenario))


def make_plan(
    for_: str,
    value: Any,
    planned: Scenario,
    goal: float | None,
    *,
    feasible: bool,
    ceiling: float | None = None,
    binding: str | None = None,
    reason: str | None = None,
    details: Mapping[str, Any] | None = None,
) -> Plan:
    outcome = evaluate_design(planned)
    if isinstance(value, (list, tuple, np.ndarray)):
        value = tuple(int(v) for v in value)
    elif isinstance(value, (bool, np.bool_)):
        raise TypeError("a plan value is a number or a list")  # a bug, not bad input
    elif isinstance(value, (int, np.integer)):
        value = int(value)
    elif value is not None:
        value = float(value)
    return Plan(
        for_=for_,
        value=value,
        success=float(outcome.success),
        expected_cost=float(outcome.expected_cost),
        feasible=feasible,
        target=goal,
        scenario=planned,
        ceiling=None if ceiling is None else float(ceiling),
        binding=binding,
        reason=reason,
        details=dict(details or {}),
        expected_utility=outcome.expected_utility,
    )


# ------------------------------------------------------------------ scenario transformations
def per_step_cap(scenario: Scenario) -> int | tuple[int, ...] | None:
    """The per-step budget the user set (None when only a total, or no retries, is set)."""
    return None if scenario.retries is None else scenario.retries.per_step


def with_per_step(scenario: Scenario, budget: int | Iterable[int]) -> Scenario:
    if not isinstance(budget, (int, np.integer)):
        budget = tuple(int(b) for b in budget)
    else:
        budget = int(budget)
    return replace(scenario, retries=Retries(per_step=budget, total=None if scenario.retries is None else scenario.retries.total))


def with_total(scenario: Scenario, budget: int | None) -> Scenario:
    per_step = per_step_cap(scenario)
    if budget is None and per_step is None:
        per_step = budget_floor(scenario)
    return replace(scenario, retries=Retries(per_step=per_step, total=budget))


def with_rate(scenario: Scenario, key: str, value: float) -> Scenario:
    current = scenario.verifier or Verifier()
    return replace(scenario, verifier=replace(current, **{key: value}))


def without_misses(scenario: Scenario) -> Scenario:
    """The scenario with a verifier that accepts no wrong result: ``miss = 0``, or with
    failure modes every mode's ``miss = 0`` (``verifier.miss`` is then left out)."""
    if scenario.failure_modes:
        modes = tuple(replace(m, miss=0.0) for m in scenario.failure_modes)
        return replace(scenario, failure_modes=modes)
    return with_rate(scenario, "miss", 0.0)


def ladder_floor(scenario: Scenario) -> int:
    """The least retry budget an execution may have with the scenario's ladder: its top
    rung must be reachable (``escalation.after[-1]``); 0 without a ladder."""
    return 0 if scenario.escalation is None else int(scenario.escalation.after[-1])


def with_every(scenario: Scenario, every: int) -> Scenario:
    assert scenario.checkpoints is not None
    return replace(scenario, checkpoints=replace(scenario.checkpoints, every=int(every)))


def budget_floor(scenario: Scenario) -> int:
    r"""Least ``r >= 1`` with :math:`q^r \le 10^{-12}` at the slowest step (confused or not,
    any class, any rung of a ladder; a state that can never pass, :math:`q = 1`, is left out:
    it never converges and never contributes): past it a chain's success no longer moves;
    capped at ``MAX_BUDGET``."""
    model = trial_model(scenario)
    miss, reject = model.miss, model.false_reject
    # every class on every rung (rung 0 alone without section 8's tables)
    probs = model.rung_p.reshape(-1, scenario.steps)
    rates = [probs, probs * model.factor] if model.has_confusion else [probs]
    q = np.concatenate([(x * reject + (1 - x) * (1 - miss)).ravel() for x in rates])
    if model.samples > 1:
        # a vote's answer may be wrong more often than one sample: bound its rejection by
        # the larger of a wrong and a correct answer's (a verifier's samples only help)
        q = np.concatenate([q, np.maximum(reject, 1 - miss)])
    if model.fault > 0.0:
        q = model.fault + (1 - model.fault) * q  # a lost attempt is rejected
    q = q[q < 1.0]
    q_max = float(np.max(q)) if q.size else 0.0
    if q_max <= 0.0:
        return 1
    return int(min(MAX_BUDGET, max(1, math.ceil(math.log(CONVERGED) / math.log(q_max)))))


def with_perfect_verifier(scenario: Scenario) -> Scenario:
    """The remedy for a scenario without a verifier: a perfect one, and per-step retries up to
    the budget at which that verifier's success stops moving (the floor is taken with the
    verifier in place; without one no attempt is rejected and any floor is 1)."""
    verified = replace(scenario, verifier=Verifier())
    return replace(verified, retries=Retries(per_step=budget_floor(verified)))


