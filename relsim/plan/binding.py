"""Which constraint binds an infeasible plan: lift each on its own and see what it buys.

The words come from :mod:`relsim.plan.diagnosis`; this module decides which of them apply.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import numpy as np

from relsim.scenario import trial_model
from relsim.plan import diagnosis
from relsim.plan._common import (
    Plan,
    budget_floor,
    is_chain,
    make_plan,
    meets_goal,
    exact_success,
    with_perfect_verifier,
    with_per_step,
    with_rate,
    with_total,
    without_misses,
)
from relsim.scenario import Correlation, Scenario

def relaxations(scenario: Scenario) -> list[tuple[str, Scenario]]:
    """Each constraint that can cap success, and the scenario with that constraint lifted,
    in the order they are blamed. Without a verifier, adding one (a perfect one, with
    retries) is the largest change, so it is blamed after the constraints the scenario sets."""
    out: list[tuple[str, Scenario]] = []
    s = scenario
    model = trial_model(s)
    if model.has_total:
        out.append(("retries.total", with_total(s, None)))
    if model.has_verifier and np.any(model.miss > 0):
        key = "failure_modes.miss" if s.failure_modes else "verifier.miss"
        out.append((key, without_misses(s)))
    if model.has_verifier:
        budget = budget_floor(s)
        if s.escalation is not None:  # every rung stays reachable, whatever its after
            budget = max(budget, int(model.per_step.max()))
        out.append(("retries.per_step", with_per_step(s, budget)))
    if model.has_random_effects or model.has_confusion:
        out.append(("correlation", replace(s, correlation=Correlation())))
    if s.checkpoints is not None:
        c = s.checkpoints
        more = replace(c, rollbacks=2 * c.rollbacks + 4)
        out.append(("checkpoints.rollbacks", replace(s, checkpoints=more)))
        if c.false_alarm > 0:
            quiet = replace(c, false_alarm=0.0)
            out.append(("checkpoints.false_alarm", replace(s, checkpoints=quiet)))
        if c.detect < 1:
            out.append(("checkpoints.detect", replace(s, checkpoints=replace(c, detect=1.0))))
    if model.has_verifier and np.any(model.false_reject > 0):
        out.append(("verifier.false_reject", with_rate(s, "false_reject", 0.0)))
    if not model.has_verifier:  # no verifier, so no retries: a perfect verifier with retries
        out.append(("retries.per_step", with_perfect_verifier(s)))
    return out


def diagnose(
    scenario: Scenario,
    goal: float,
    ceiling: float,
    for_: str,
    ceiling_of: Callable[[Scenario], float],
    skip: set[str],
) -> tuple[str, str]:
    """Which constraint binds, and why, in words.

    Each constraint is lifted on its own (``relaxations``) and the planned quantity's
    ceiling recomputed: the first whose lifting reaches the target binds; when none does
    alone, the one that lifts the ceiling most."""
    reasons = diagnosis.REASONS
    head = diagnosis.head(goal, ceiling)
    never = diagnosis.never_succeeds(scenario, goal, ceiling)
    if never is not None and for_ != "p":
        return never
    lifted: list[tuple[str, float]] = []
    for key, relaxed in relaxations(scenario):
        if key in skip:
            continue
        if for_ in ("retries", "allocation") and key == "retries.per_step":
            continue  # the planned quantity itself
        lifted.append((key, ceiling_of(relaxed)))
    chain = is_chain(scenario)

    def why(key: str, value: float) -> str:
        return diagnosis.why(scenario, key, value, goal, for_, chain=chain)

    alone = [(key, value) for key, value in lifted if meets_goal(value, goal)]
    if alone:
        key, value = alone[0]
        return key, reasons["alone"].format(head=head, why=why(key, value))
    useful = [(key, value) for key, value in lifted if value > ceiling + 1e-9]
    if useful:
        key, value = max(useful, key=lambda kv: kv[1])
        others = ", ".join(k for k, _ in useful if k != key)
        more = reasons["also"].format(others=others) if others else ""
        return key, reasons["together"].format(head=head, why=why(key, value), more=more)
    if ceiling >= goal - 1e-9:
        return "target", reasons["only_in_the_limit"].format(
            head=head, ceiling=ceiling, for_=for_, goal=goal
        )
    if for_ in ("verifier", "checkpoints", "total"):
        return "p", reasons["agent_despite_remedy"].format(head=head)
    return "p", reasons["agent"].format(head=head)


def no_verifier_plan(for_: str, scenario: Scenario, goal: float, value: Any) -> Plan:
    """Retries need a verifier: without one, the plan is feasible only if no retry is needed.

    A step that never succeeds (``p = 0``) is blamed first: no verifier can help it."""
    success = exact_success(scenario)
    if meets_goal(success, goal):
        return make_plan(for_, value, scenario, goal, feasible=True)
    never = diagnosis.never_succeeds(scenario, goal, success)
    if never is not None:
        binding, reason = never
    else:
        perfect = with_perfect_verifier(scenario)
        assert perfect.retries is not None
        binding = "verifier"
        reason = diagnosis.REASONS["no_verifier"].format(
            success=success,
            goal=goal,
            per_step=perfect.retries.per_step,
            perfect=exact_success(perfect),
        )
    return make_plan(
        for_,
        value,
        scenario,
        goal,
        feasible=False,
        ceiling=success,
        binding=binding,
        reason=reason,
    )
