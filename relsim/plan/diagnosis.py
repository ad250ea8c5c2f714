r"""Why a target is out of reach, and what would reach it: message templates keyed by cause.

Every sentence a planner writes about an infeasible plan is a template in one of the tables
below, keyed by its cause; the functions here only pick the cause and fill in the numbers.

* :data:`CHAIN_REASONS`, :data:`CHAIN_REMEDIES`: the closed-form chain planner
  (:mod:`relsim.plan.chain`, ``relsim solve`` in flag form).
* :data:`REASONS`: the scenario planners' verdict (which constraint binds, ``Plan.reason``);
  :data:`WHY` and :data:`CAUSES`: the clause that explains one binding constraint, keyed by
  the scenario key whose lifting reaches the target (``"verifier.miss"``, ...).

Only numpy and :mod:`relsim.formulas` are imported, so the flag-form ``relsim solve`` can
use this module and still start fast; a scenario is read through its attributes only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from relsim import formulas

if TYPE_CHECKING:  # pragma: no cover
    from relsim.scenario import Scenario

#: Bisection width of :func:`largest_miss_for_ceiling` (the planners' ``BISECTION_WIDTH``).
_WIDTH = 1e-9

# ------------------------------------------------------------------------- the chain planner
#: Why a chain of verified steps cannot reach its target, by cause (the first that applies).
CHAIN_REASONS = {
    "never_succeeds": "the agent never succeeds (p = 0): no verifier or retry budget can help",
    "rejects_all": (
        "the verifier rejects every correct attempt (false_reject = 1), so no step succeeds"
    ),
    "verifier_cap": (
        "the verifier caps each step at {step_ceiling:.6f} (it accepts wrong attempts with "
        "miss = {miss:g} and rejects correct ones with false_reject = {false_reject:g}), so "
        "{steps} steps reach at most {ceiling:.6f} < {target:g} whatever the retry budget"
    ),
    "only_in_the_limit": (
        "{steps} steps reach at most {ceiling:.6f} = the target {target:g} only in the limit "
        "of unlimited retries; no finite budget reaches it"
    ),
    "astronomical": (
        "the budget needed is astronomically large: about {needed} retries per step "
        "(p = {p:g} makes almost every attempt fail), beyond {limit:.3g}, so infeasible in "
        "practice"
    ),
}

#: What would make a chain's target reachable, by remedy (every one that applies).
CHAIN_REMEDIES = {
    "certainty": (
        "certainty: every attempt correct and accepted (p = 1, false_reject = 0); "
        "or a target below 1"
    ),
    "better_agent": "an agent that succeeds far more often per attempt (a larger p)",
    "at_the_ceiling": "a verifier that misses less, a better agent, or a slightly lower target",
    "max_miss": (
        "a verifier that misses under {max_miss_percent:.3g}% of wrong attempts "
        "(miss < {max_miss:.6g} at p = {p:g}, false_reject = {false_reject:g})"
    ),
    "min_p": (
        "an agent with p above {min_p:.6g} per attempt "
        "(at miss = {miss:g}, false_reject = {false_reject:g})"
    ),
    "accept_correct": (
        "a verifier that accepts correct attempts (false_reject 1 rejects them all)"
    ),
}


def chain_cause(
    p: float, false_reject: float, ceiling: float, target: float
) -> str:
    """The key of :data:`CHAIN_REASONS` for an infeasible chain."""
    if p == 0.0:
        return "never_succeeds"
    if false_reject == 1.0:
        return "rejects_all"
    if ceiling < target:
        return "verifier_cap"
    return "only_in_the_limit"


def chain_remedies(fields: dict[str, Any]) -> list[str]:
    """The remedies of :data:`CHAIN_REMEDIES` that apply to an infeasible chain, in words.

    ``fields`` holds the chain plan's numbers: ``p``, ``miss``, ``false_reject``, ``target``,
    ``ceiling``, ``max_miss`` and ``min_p`` (the last two may be None)."""
    if fields["reason"] is not None and fields["reason"].startswith("the budget needed"):
        return [CHAIN_REMEDIES["better_agent"]]
    if fields["target"] == 1.0:
        return [CHAIN_REMEDIES["certainty"]]
    if fields["ceiling"] >= fields["target"]:  # exactly at the ceiling: only the limit
        return [CHAIN_REMEDIES["at_the_ceiling"]]
    keys = []
    if fields["max_miss"] is not None and fields["max_miss"] > 0:
        keys.append("max_miss")
    if fields["min_p"] is not None and fields["min_p"] < 1:
        keys.append("min_p")
    if fields["false_reject"] == 1.0:
        keys.append("accept_correct")
    percent = None if fields["max_miss"] is None else 100 * fields["max_miss"]
    return [CHAIN_REMEDIES[key].format(max_miss_percent=percent, **fields) for key in keys]


# ------------------------------------------------------------------------ the scenario planners
#: The verdict of a scenario planner, by how the binding constraint was found.
REASONS = {
    "head": "success cannot reach the target {goal:g}: it is at most {ceiling:.6f}",
    # lifting one constraint alone reaches the target
    "alone": "{head}; {why}",
    # no single lifting reaches it: the one that lifts the ceiling most
    "together": (
        "{head}; several constraints bind together: {why} (still short of the target){more}"
    ),
    "also": "; {others} also cap it",
    "only_in_the_limit": (
        "{head}: success approaches {ceiling:.6f} only in the limit, so no finite "
        "{for_} reaches the target {goal:g}"
    ),
    "agent": "{head}; the agent's per-step success p caps it",
    "agent_despite_remedy": "{head}; the agent's per-step success p caps it even with this remedy",
    "never_succeeds": (
        "{head}, because the agent never succeeds at {where} (p = 0): no retry, verifier or "
        "checkpoint can help; a better agent (plan.p) is the remedy"
    ),
    "no_verifier": (
        "there is no [verifier], so no attempt is rejected and retries never run: success "
        "stays at {success:.6f} < target {goal:g}; add a verifier (with a perfect one and "
        "{per_step} retries per step success reaches {perfect:.6f})"
    ),
    "search_limit": (
        "no {for_} budget up to the search limit {limit} reaches the target {goal:g}: "
        "success there is {ceiling:.6f} and still rising; the limit binds, not the model"
    ),
}

#: Why one constraint binds, keyed by the scenario key whose lifting gives ``lifted``.
WHY = {
    "verifier.miss": "{cap}{fix}",
    "verifier.miss/cap": (
        "the verifier accepts a wrong result with probability miss = {miss:g}, which caps "
        "each step at a/(a+w) = {step_ceiling:.6f} however many retries, and the chain of "
        "{steps} at {chain_ceiling:.6f}"
    ),
    "verifier.miss/cap_mixed": (
        "the verifier accepts wrong results (miss > 0), which caps each step at a/(a+w) "
        "(weakest step {weakest:.6f}) however many retries, and the chain at "
        "{chain_ceiling:.6f}"
    ),
    "verifier.miss/cap_classes": (
        "the verifier accepts a wrong result with probability miss = {miss:g}, which caps "
        "each step at a/(a+w) however many retries, from {lowest:.6f} to {highest:.6f} over "
        "the {classes} task classes, and the chain, averaged over them, at {chain_ceiling:.6f}"
    ),
    "verifier.miss/fix_needed": (
        "; a verifier with miss <= {needed:.4g} reaches it with enough retries"
    ),
    "verifier.miss/fix_perfect": "; a perfect verifier would lift the ceiling to {lifted:.6f}",
    "retries.total": (
        "the task-wide budget total = {total} runs out; without it the ceiling is "
        "{lifted:.6f} (plan it with plan.total)"
    ),
    "retries.per_step/no_verifier": (
        "there is no [verifier], so no attempt is rejected and no retry runs; with a "
        "verifier and retries the ceiling is {lifted:.6f}"
    ),
    "retries.per_step": (
        "{budget}; with more retries the ceiling is {lifted:.6f} "
        "(plan it with plan.retries or plan.allocation)"
    ),
    "retries.per_step/no_retries": "there are no retries (no [retries] table)",
    "retries.per_step/total_only": "the budget (total = {total}, no per-step cap) runs out",
    "retries.per_step/cap": "the per-step budget per_step = {per_step} runs out",
    "correlation": (
        "correlated errors erode retries: {causes}; with independent errors the ceiling "
        "would be {lifted:.6f}"
    ),
    "checkpoints.rollbacks": (
        "rollbacks run out: with rollbacks = {rollbacks}, a catch or a false alarm past the "
        "budget ends the trial; with {more_rollbacks} the ceiling is {lifted:.6f}"
    ),
    "checkpoints.false_alarm": (
        "false alarms (false_alarm = {false_alarm:g}) spend the rollbacks; without them the "
        "ceiling is {lifted:.6f}"
    ),
    "checkpoints.detect": (
        "checkpoints miss wrong results (detect = {detect:g}); with detect = 1 the ceiling "
        "is {lifted:.6f}"
    ),
    "verifier.false_reject": (
        "the verifier rejects correct results (false_reject > 0) and the budgets run out; "
        "with false_reject = 0 the ceiling is {lifted:.6f}"
    ),
    "other": "lifting {key} gives {lifted:.6f}",
}

#: The kinds of correlation that erode retries, for :data:`WHY` ``["correlation"]``.
CAUSES = {
    "confusion": (
        "a confused agent stays confused (enter {enter:g}, recover {recover:g}, "
        "factor {factor:g})"
    ),
    "task_sd": "a hard task stays hard at every retry (task_sd {task_sd:g})",
    "step_sd": "a hard step stays hard across its retries (step_sd {step_sd:g})",
}


def head(goal: float, ceiling: float) -> str:
    """The opening of every scenario verdict: the target and the ceiling."""
    return REASONS["head"].format(goal=goal, ceiling=ceiling)


def never_succeeds(scenario: "Scenario", goal: float, ceiling: float) -> tuple[str, str] | None:
    """``("p", reason)`` when some step has ``p = 0``: no retry, verifier or checkpoint can
    make it succeed, so the agent binds whatever is planned (except ``p`` itself)."""
    from relsim.scenario import trial_model  # loaded by the scenario planners only

    # a step that no class on no rung of a ladder can pass (rung 0 alone without them)
    zero = np.flatnonzero(np.all(trial_model(scenario).rung_p == 0.0, axis=(0, 1)))
    if not zero.size:
        return None
    shown = ", ".join(str(i + 1) for i in zero[:5])
    more = f" and {zero.size - 5} more" if zero.size > 5 else ""
    where = f"step {shown}" if zero.size == 1 else f"steps {shown}{more}"
    return "p", REASONS["never_succeeds"].format(head=head(goal, ceiling), where=where)


def why(scenario: "Scenario", key: str, lifted: float, goal: float, for_: str, *,
        chain: bool) -> str:
    """The clause of :data:`WHY` for the binding constraint ``key``; ``lifted`` is the ceiling
    with that constraint lifted, ``chain`` whether the scenario is a chain of independent
    verified steps (then the largest workable ``miss`` is known in closed form)."""
    from relsim.scenario import trial_model  # loaded by the scenario planners only

    s = scenario
    m = trial_model(s)
    if key == "verifier.miss":
        miss = m.miss
        step_ceiling = formulas.verified_ceiling(m.p, miss, m.false_reject)
        step_ceiling = np.broadcast_to(np.asarray(step_ceiling, float), (s.steps,))
        chain_ceiling = float(np.prod(step_ceiling))
        if m.classes > 1:  # a mixture: each class has its own cap, the chain their average
            per_class = formulas.verified_ceiling(m.rung_p[:, 0, :], miss, m.false_reject)
            per_class = np.broadcast_to(np.asarray(per_class, float), (m.classes, s.steps))
            cap = WHY["verifier.miss/cap_classes"].format(
                miss=float(np.max(miss)), lowest=float(np.min(per_class)),
                highest=float(np.max(per_class)), classes=m.classes,
                chain_ceiling=float(m.class_weight @ np.prod(per_class, axis=1)),
            )
        elif np.all(step_ceiling == step_ceiling[0]) and np.all(miss == miss[0]):
            cap = WHY["verifier.miss/cap"].format(
                miss=miss[0], step_ceiling=step_ceiling[0], steps=s.steps,
                chain_ceiling=chain_ceiling,
            )
        else:
            cap = WHY["verifier.miss/cap_mixed"].format(
                weakest=float(np.min(step_ceiling)), chain_ceiling=chain_ceiling
            )
        needed = largest_miss_for_ceiling(s, goal)
        if needed is not None and chain and for_ in ("retries", "allocation"):
            fix = WHY["verifier.miss/fix_needed"].format(needed=needed)
        else:
            fix = WHY["verifier.miss/fix_perfect"].format(lifted=lifted)
        return WHY["verifier.miss"].format(cap=cap, fix=fix)
    if key == "retries.total":
        return WHY[key].format(total=m.total, lifted=lifted)
    if key == "retries.per_step" and not m.has_verifier:
        return WHY["retries.per_step/no_verifier"].format(lifted=lifted)
    if key == "retries.per_step":
        per_step = None if s.retries is None else s.retries.per_step
        if s.retries is None:
            budget = WHY["retries.per_step/no_retries"]
        elif per_step is None:
            budget = WHY["retries.per_step/total_only"].format(total=m.total)
        else:
            shown = per_step if isinstance(per_step, int) else list(per_step)
            budget = WHY["retries.per_step/cap"].format(per_step=shown)
        return WHY[key].format(budget=budget, lifted=lifted)
    if key == "correlation":
        causes = []
        if m.has_confusion:
            causes.append(CAUSES["confusion"].format(enter=m.enter, recover=m.recover, factor=m.factor))
        if m.task_sd > 0:
            causes.append(CAUSES["task_sd"].format(task_sd=m.task_sd))
        if m.step_sd > 0:
            causes.append(CAUSES["step_sd"].format(step_sd=m.step_sd))
        return WHY[key].format(causes="; ".join(causes), lifted=lifted)
    if key.startswith("checkpoints."):
        checkpoints = s.checkpoints
        assert checkpoints is not None
        return WHY[key].format(
            rollbacks=checkpoints.rollbacks, more_rollbacks=2 * checkpoints.rollbacks + 4,
            lifted=lifted, false_alarm=checkpoints.false_alarm, detect=checkpoints.detect,
        )
    if key == "verifier.false_reject":
        return WHY[key].format(lifted=lifted)
    return WHY["other"].format(key=key, lifted=lifted)  # pragma: no cover - all handled


def largest_miss_for_ceiling(scenario: "Scenario", goal: float) -> float | None:
    r"""Largest uniform miss with :math:`\prod_i a_i/(a_i+w_i) \ge` goal (keeping p and
    false_reject): what a verifier must achieve for retries to reach the goal at all."""
    from relsim.scenario import trial_model  # loaded by the scenario planners only

    model = trial_model(scenario)

    def chain_ceiling(miss: float) -> float:
        ceiling = formulas.verified_ceiling(model.p, miss, model.false_reject)
        return float(np.prod(np.broadcast_to(ceiling, (scenario.steps,))))

    if chain_ceiling(0.0) < goal:
        return None
    good, bad = 0.0, 1.0
    if chain_ceiling(bad) >= goal:
        return 1.0
    while bad - good > _WIDTH:
        middle = 0.5 * (good + bad)
        if chain_ceiling(middle) >= goal:
            good = middle
        else:
            bad = middle
    return good
