r"""Plans that carry the uncertainty of what was measured: :func:`retries_with_confidence`.

A grader audit of 100 labels and a harness of 20 tasks leave the grader's error rates and the
tasks' difficulty uncertain. A plan at the point estimates may meet the target only in a
minority of the worlds the measurements leave plausible; this planner asks for the least
per-step retry budget that meets the target in at least a ``confidence`` share of them.

**The plausible worlds.** Each world draws, from one ``numpy`` Generator seeded with ``seed``
and in this order: ``worlds`` values of ``miss``, ``worlds`` values of ``false_reject`` (with
an audit), then ``worlds`` indices into the fit's bootstrap draws (with a fit, uniformly, with
replacement). A rate with estimate :math:`x` behind :math:`e` effective labels is drawn from

.. math:: \text{Beta}\bigl(e x + \tfrac12,\; e (1 - x) + \tfrac12\bigr)

(the Jeffreys posterior of a binomial count :math:`e x` of :math:`e`; the two rates
independently). A world is the scenario with those rates as its verifier and the drawn refit's
classes (:func:`relsim.plan.evidence.classes_from_fit`) as its ``[[classes]]``.

**The answer.** Success is non-decreasing in the per-step budget in every world (the argument
of :func:`relsim.plan.retries`), so a world that meets the target at budget ``b`` meets it at
every larger one: world ``w`` meets the target exactly at the budgets :math:`b \ge b_w`, its
least budget (found as :func:`relsim.plan.retries` finds it, or none when no budget reaches
the target). The share of worlds met at ``b`` is then :math:`\#\{w : b_w \le b\} / W`, and the
least ``b`` whose share reaches ``confidence`` is the ``k``-th smallest :math:`b_w`, ``k``
the least count with :math:`k / W \ge` ``confidence``. The plan is infeasible when fewer than
that share of worlds reach the target at any budget.

Each world is judged exactly: a scenario that is a chain of independent verified steps apart
from its classes (the usual case: one harness task, a grader, retries) by the closed form
:func:`relsim.formulas.verified_chain` of each class, mixed by the class weights; anything
else by the exact engine, with the work estimated first and a plan over a minute refused.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Mapping

import numpy as np

from relsim import checks, formulas
from relsim.errors import RelsimError, invalid
from relsim.plan import _common
from relsim.plan._common import (
    SuccessValue,
    exact_success,
    goal_of,
    make_plan,
    with_per_step,
)
from relsim.plan.budgets import _budget_range
from relsim.plan.evidence import (
    QUADRATURE_NODES,
    AuditRates,
    DifficultyFit,
    check_one_step,
    classes_from_fit,
    read_audit,
    read_fit,
    refuse_failure_modes,
)
from relsim.plan.result import Plan
from relsim.plan.search import least_budget
from relsim.scenario import Scenario, Verifier, as_scenario, trial_model

__all__ = ["MAX_WORLDS", "plausible_worlds", "retries_with_confidence", "share_met"]

#: The most worlds a plan draws.
MAX_WORLDS = 10_000
#: Seconds of one exact evaluation per task class, at least (the engine's fixed work per
#: class; measured on the development machine), for the work estimate ...
SECONDS_PER_CLASS = 4e-4
#: ... and the exact evaluations one world's search makes (doubling and bisection to a
#: budget in the tens, or doubling to the convergence floor when no budget reaches the target).
WORLD_EVALUATIONS = 12


def retries_with_confidence(
    scenario: Scenario | Mapping[str, Any],
    target: float | None = None,
    *,
    audit: Any = None,
    fit: Any = None,
    confidence: float = 0.9,
    worlds: int = 200,
    seed: int | np.random.SeedSequence | None = 0,
) -> Plan:
    r"""The least uniform per-step retry budget that meets ``target`` in at least a
    ``confidence`` share of the worlds the evidence leaves plausible.

    Parameters
    ----------
    scenario : Scenario
        The design; with ``fit``, of one step (one harness task is one step, one trial one
        attempt); with ``audit``, without ``[[failure_modes]]``. It needs a ``[verifier]``
        unless ``audit`` gives one.
    target : float, optional
        In (0, 1]; default the scenario's.
    audit, fit : path, mapping or object with ``to_dict()``, optional
        A grader audit (:func:`relsim.plan.evidence.read_audit`) and a task-difficulty fit
        with bootstrap ``draws`` (:func:`relsim.plan.evidence.read_fit`): what the worlds are
        drawn from; at least one. Without an audit the scenario's verifier is kept, without a
        fit its ``p`` (or classes).
    confidence : float
        The share of worlds the plan must meet the target in, in (0, 1).
    worlds : int
        Worlds drawn, 1..``MAX_WORLDS``.
    seed : int, SeedSequence or None
        Seeds the draws (module docstring); the same seed gives the same worlds.

    Returns
    -------
    Plan
        ``for_ = "retries"``, ``value`` the budget, and ``success``, ``expected_cost`` of the
        design at the point estimates (the audit's estimates and the fit's point fit) with
        that budget. ``feasible``: the budget meets the target in at least ``confidence`` of
        the worlds; when none does, ``value`` is the budget that meets it in the most,
        ``binding`` is ``"confidence"``, ``ceiling`` None and ``reason`` gives the share that
        any budget reaches. ``details``: ``confidence``, ``worlds``, ``seed``, ``met`` (the
        share of worlds the plan meets the target in), ``reachable`` (the share any budget
        does), ``point_estimate`` (``value``, ``feasible`` and ``met`` of
        :func:`relsim.plan.retries` on the design at the point estimates), ``method``, and
        ``audit`` or ``fit`` (what was drawn from).

    Examples
    --------
    A grader audited on 60 wrong and 140 right answers, one-step tasks with ``p = 0.7``:

    >>> s = Scenario.from_dict({"steps": 1, "p": 0.7, "verifier": {"miss": 0.1}})
    >>> audit = {"miss": {"estimate": 0.05, "ci": [0.01, 0.14], "effective": 60},
    ...          "false_reject": {"estimate": 0.03, "ci": [0.01, 0.07], "effective": 140}}
    >>> plan = retries_with_confidence(s, 0.95, audit=audit, worlds=200, seed=0)
    >>> plan.value, plan.details["met"], plan.details["point_estimate"]["value"]
    (3, 0.905, 2)
    """
    scenario = as_scenario(scenario)
    goal = goal_of(scenario, target)
    if isinstance(confidence, bool):
        raise invalid("confidence", "a number in (0, 1)", confidence)
    confidence = checks.in_range(confidence, "confidence", 0.0, 1.0, low_open=True, high_open=True)
    worlds = checks.integer(worlds, "worlds", 1, MAX_WORLDS)
    rates, fitted = _evidence(scenario, audit, fit)
    base = _point_design(scenario, rates, fitted)
    sequence = _seed_sequence(seed)  # once: a seed of None draws its entropy here
    drawn = plausible_worlds(scenario, audit=rates, fit=fitted, worlds=worlds, seed=sequence)
    method = _check_work(drawn)
    budgets = [_least_budget(world, goal) for world in drawn]

    from relsim.plan.budgets import retries

    plain = retries(base, goal)
    assert isinstance(plain.value, int)  # a verifier is there: a budget, feasible or nearest
    plain_met = share_met(budgets, plain.value)
    reachable = sum(b is not None for b in budgets) / worlds
    needed = _least_count(confidence, worlds)
    ordered = sorted(b for b in budgets if b is not None)
    details: dict[str, Any] = {
        "confidence": confidence,
        "worlds": worlds,
        "seed": seed if isinstance(seed, int) else sequence.entropy,
        "reachable": reachable,
        "point_estimate": {"value": plain.value, "feasible": plain.feasible, "met": plain_met},
        "method": method,
    }
    if rates is not None:
        details["audit"] = {
            name: {"estimate": rate.estimate, "ci": list(rate.ci), "effective": rate.effective}
            for name, rate in (("miss", rates.miss), ("false_reject", rates.false_reject))
        }
    if fitted is not None:
        details["fit"] = {"draws": len(fitted.draws), "nodes": QUADRATURE_NODES}
    if len(ordered) >= needed:
        value = ordered[needed - 1]
        details["met"] = share_met(budgets, value)
        return make_plan("retries", value, with_per_step(base, value), goal, feasible=True,
                         details=details)
    value = ordered[-1] if ordered else plain.value  # meets the target in the most worlds
    details["met"] = share_met(budgets, value)
    reason = (
        f"only {percent(reachable)} of the {worlds} plausible worlds ({len(ordered)} of "
        f"{worlds}) reach the target {goal:g} at any per-step budget, under the confidence "
        f"{confidence:g} asked: in the others success stays below the target however many "
        "retries (the grader's misses, tasks that never pass); more audit labels narrow the "
        "worlds, and a grader that misses less lifts them"
    )
    return make_plan("retries", value, with_per_step(base, value), goal, feasible=False,
                     binding="confidence", reason=reason, details=details)


def plausible_worlds(
    scenario: Scenario | Mapping[str, Any],
    *,
    audit: Any = None,
    fit: Any = None,
    worlds: int = 200,
    seed: int | np.random.SeedSequence | None = 0,
) -> list[Scenario]:
    """The worlds :func:`retries_with_confidence` judges: ``scenario`` with its verifier drawn
    from ``audit`` and its classes from ``fit``'s bootstrap draws, as the module docstring
    says (the same arguments give the same worlds). At least one of ``audit``, ``fit``."""
    scenario = as_scenario(scenario)
    worlds = checks.integer(worlds, "worlds", 1, MAX_WORLDS)
    rates, fitted = _evidence(scenario, audit, fit)
    rng = np.random.default_rng(_seed_sequence(seed))
    if rates is not None:
        misses = _rate_draws(rng, rates.miss.estimate, rates.miss.effective, worlds)
        rejects = _rate_draws(rng, rates.false_reject.estimate, rates.false_reject.effective, worlds)
    if fitted is not None:
        picks = rng.integers(len(fitted.draws), size=worlds)
    classes: dict[int, Any] = {}
    out = []
    for w in range(worlds):
        world = scenario
        if rates is not None:
            world = replace(world, verifier=Verifier(miss=float(misses[w]),
                                                     false_reject=float(rejects[w])))
        if fitted is not None:
            pick = int(picks[w])
            if pick not in classes:
                classes[pick] = classes_from_fit(fitted.draws[pick])
            world = replace(world, classes=classes[pick])
        out.append(world)
    return out


def share_met(budgets: list[int | None], budget: int | None) -> float:
    """The share of worlds whose least budget (None: none reaches the target) is at most
    ``budget``: those whose target ``budget`` meets."""
    if budget is None:
        return 0.0
    return sum(b is not None and b <= budget for b in budgets) / len(budgets)


def percent(share: float) -> str:
    """``0.58`` as ``"58%"``, ``0.915`` as ``"91.5%"``."""
    return f"{100 * share:.3g}%"


# ------------------------------------------------------------------------------ the pieces
def _evidence(
    scenario: Scenario, audit: Any, fit: Any
) -> tuple[AuditRates | None, DifficultyFit | None]:
    """The evidence read and checked against the scenario."""
    if not isinstance(scenario, Scenario):
        raise invalid("scenario", "a Scenario", type(scenario).__name__)
    if audit is None and fit is None:
        raise RelsimError("audit, fit: must be given, at least one (what the plausible worlds "
                          "are drawn from), got neither")
    rates = None if audit is None else read_audit(audit)
    fitted = None if fit is None else read_fit(fit)
    if rates is not None:
        refuse_failure_modes(scenario, rates)
    elif scenario.verifier is None:
        raise RelsimError("verifier: must be a [verifier] table, or an audit to set it, to plan "
                          "retries (without a verifier no retry is ever triggered), got none")
    if fitted is not None:
        check_one_step(scenario, fitted)
        if not fitted.draws:
            prefix = f"{fitted.source}: " if fitted.source else ""
            raise RelsimError(f"{prefix}draws: must be a list of at least 1 bootstrap draw to "
                              "plan under uncertainty, got []")
    return rates, fitted


def _point_design(
    scenario: Scenario, rates: AuditRates | None, fitted: DifficultyFit | None
) -> Scenario:
    """The design at the point estimates: the audit's estimates, the fit's point fit."""
    if rates is not None:
        scenario = replace(scenario, verifier=Verifier(miss=rates.miss.estimate,
                                                       false_reject=rates.false_reject.estimate))
    if fitted is not None:
        scenario = replace(scenario, classes=classes_from_fit(fitted.point))
    return scenario


def _rate_draws(rng: np.random.Generator, estimate: float, effective: float, n: int) -> np.ndarray:
    """``n`` draws of Beta(e x + 1/2, e (1 - x) + 1/2)."""
    return rng.beta(effective * estimate + 0.5, effective * (1.0 - estimate) + 0.5, size=n)


def _least_count(confidence: float, worlds: int) -> int:
    """The least ``k`` with ``k / worlds >= confidence`` (the share compared as it is shown,
    so 180 of 200 meets 0.9)."""
    k = max(1, math.floor(confidence * worlds) - 1)
    while k / worlds < confidence:
        k += 1
    return k


def _mixture_chain(world: Scenario) -> bool:
    """A chain of independent verified steps apart from its classes: judged by closed form."""
    model = trial_model(world)
    return model.has_verifier and not (
        model.has_checkpoints or model.has_total or model.has_random_effects
        or model.has_confusion or model.rungs or model.samples > 1 or model.modes
        or model.fault > 0.0
    )


def _success_at(world: Scenario) -> Callable[[int], SuccessValue]:
    """The world's exact success at a per-step budget."""
    if not _mixture_chain(world):
        return lambda budget: exact_success(with_per_step(world, budget))
    model = trial_model(world)
    p = model.rung_p[:, 0, :]  # (classes, steps): each class's p at every step
    weight = model.class_weight

    def at(budget: int) -> SuccessValue:
        chain = formulas.verified_chain(p, budget, model.miss, model.false_reject)
        failure = np.asarray(chain.silent_failure) + np.asarray(chain.detected_failure)
        return SuccessValue(float(weight @ np.asarray(chain.success)), float(weight @ failure))

    return at


def _least_budget(world: Scenario, goal: float) -> int | None:
    """The world's least per-step budget meeting ``goal`` (None: none does), searched as
    :func:`relsim.plan.retries` searches (a ladder's top rung reachable, the same limits)."""
    low, floor, limit = _budget_range("retries", world)
    success = _success_at(world)
    answer, _, _ = least_budget(lambda b: success(b + low), goal, floor - low, limit - low)
    return None if answer is None else answer + low


def _check_work(worlds: list[Scenario]) -> str:
    """The method, after refusing a plan estimated to take over a minute."""
    first = worlds[0]  # the worlds differ in their rates and classes only
    if _mixture_chain(first):
        return "closed form per world (a chain of verified steps for each task class)"
    rollbacks = first.checkpoints.rollbacks if first.checkpoints is not None else 0
    states = 2 if first.correlation.confusion is not None else 1
    classes = max(1, *(len(world.classes) for world in worlds))
    one = max(_common.SECONDS_PER_UNIT * first.steps * (rollbacks + 1) * states * classes,
              SECONDS_PER_CLASS * classes)
    per_world = WORLD_EVALUATIONS * one
    if len(worlds) * per_world > _common.MAX_SECONDS:
        most = max(1, int(_common.MAX_SECONDS // per_world))
        raise invalid(
            "worlds", f"at most {most} for this scenario (each world is planned with the exact "
            f"engine, about {per_world:.2g} s a world, and a plan may take about "
            f"{_common.MAX_SECONDS / 60:.0f} minute)", len(worlds),
        )
    return "exact engine per world"


def _seed_sequence(seed: Any) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None:
        return np.random.SeedSequence()
    return np.random.SeedSequence(checks.integer(seed, "seed", 0))

