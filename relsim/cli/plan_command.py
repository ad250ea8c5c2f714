"""``relsim solve SCENARIO.toml --for QUANTITY [--target T] [--json]``: the planner.

``relsim.cli.solve`` parses the command line and hands a positional SCENARIO here
(:func:`run_scenario`). Output is readable by default; ``--json`` prints :meth:`Plan.to_dict`
(:meth:`ResourcePlan.to_dict` for the shared resources planned with the timeline). An
infeasible plan exits with status 3 and still says why and what the ceiling is (or which
target binds at any count). The exact planners ignore time: on a scenario whose time tables
end trials early (a deadline, crashes) they print one warning line saying so. Evidence
(``--verifier-from``, ``--difficulty-from``) is applied to the scenario before any plan
(``relsim.cli._evidence``) and said in one line under the title (JSON: ``verifier_from``,
``difficulty_from``); ``--confidence`` hands over to ``relsim.cli._confidence``.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from relsim.cli._args import EXIT_INFEASIBLE, EXIT_OK, as_flags, print_json, status_line, unit_suffix
from relsim.cli._evidence import after_title, apply_evidence, evidence_lines
from relsim.cli._time import target_lines, warn_time_ignored
from relsim.errors import RelsimError, invalid

#: What each ``--for`` plans, for the readable output.
_WHAT = {
    "retries": "retries per step",
    "total": "task-wide retry budget",
    "allocation": "retries per step (allocation)",
    "verifier": "largest miss",
    "p": "least per-attempt success p",
    "checkpoints": "checkpoint spacing (every)",
    "samples": "samples per attempt (n)",
    "escalation": "ladder thresholds (after)",
}
#: When no value meets the target: what the plan's value is instead (where success is best).
_BEST = {
    "retries": "least per_step at the ceiling",
    "total": "least total at the ceiling",
    "allocation": "nearest design",
    "verifier": "miss at the ceiling",
    "p": "p at the ceiling",
    "checkpoints": "every at the ceiling",
    "samples": "least n at the ceiling",
    "escalation": "after at the ceiling",
}
#: The scenario key of each planned quantity whose design value is shown beside the plan's.
_KEY = {"retries": "retries.per_step", "verifier": "verifier.miss", "p": "p",
        "checkpoints": "checkpoints.every"}


def run_scenario(args: argparse.Namespace) -> int:
    """Plan ``args.for_`` for the scenario file ``args.scenario``; returns the exit status.

    Reads ``args.scenario`` (a path), ``args.for_`` (one of :data:`relsim.plan.QUANTITIES`),
    ``args.target`` (None: the scenario's ``target``) and ``args.json``. Bad input raises
    :class:`relsim.errors.RelsimError` (the frame prints it and exits 2).
    """
    from relsim import plan as planner
    from relsim.plan.capacity import RESOURCES
    from relsim.scenario import Scenario

    for_ = getattr(args, "for_", None)
    choices = (*planner.QUANTITIES, *RESOURCES)
    if not isinstance(for_, str) or for_ not in choices:
        raise invalid("--for", f"one of {', '.join(choices)}", for_)
    scenario = Scenario.from_toml(args.scenario)
    if getattr(args, "confidence", None) is not None:
        from relsim.cli._confidence import run_confidence

        return run_confidence(args, scenario)
    scenario, applied = apply_evidence(args, scenario)
    if for_ in RESOURCES:
        return _run_resources(args, scenario, for_, applied)
    target = getattr(args, "target", None)
    objective = getattr(args, "objective", None)
    if target is None:
        target = scenario.target
    if objective == "utility" and scenario.utility is None:
        raise RelsimError(
            f"{args.scenario}: utility: must be a [utility] table (the value of each outcome) "
            "to plan with --objective utility, got none"
        )
    if target is None and objective != "utility":
        raise RelsimError(
            f"--target: must be a number in (0, 1]; {args.scenario} sets no 'target' either"
        )
    try:
        result = planner.solve(scenario, for_, target, objective=objective)
    except RelsimError as error:
        table = {"checkpoints": "checkpoints:", "samples": "sampling:", "escalation": "escalation:"}
        if for_ in table and str(error).startswith(table[for_]):
            raise RelsimError(f"{args.scenario}: {error}") from None
        raise
    if getattr(args, "json", False):
        print_json({**result.to_dict(), **applied})
    else:
        text = format_plan(result, scenario_name=scenario.name or str(args.scenario), design=scenario)
        print(after_title(text, evidence_lines(applied)))
    warn_time_ignored(scenario, args.scenario, f"relsim solve --for {for_}")
    return EXIT_OK if result.feasible else EXIT_INFEASIBLE


def _run_resources(
    args: argparse.Namespace, scenario: Any, for_: str, applied: dict[str, Any] | None = None
) -> int:
    """``--for reviewers|agents|llm_concurrency|rpm``: the timeline's resource planner."""
    import dataclasses

    from relsim.plan.capacity import resources

    target = getattr(args, "target", None)
    if target is not None:  # --target is the success target, as the top-level key
        targets = scenario.targets
        if targets is not None and targets.success is not None:
            targets = dataclasses.replace(targets, success=None)
        scenario = dataclasses.replace(scenario, target=target, targets=targets)
    seed = getattr(args, "seed", None)
    status = status_line(f"relsim solve: running the timeline at each count of {for_} tried, "
                         "each a whole run of the workload (often 10-60 s)...")
    try:
        result = resources(scenario, for_, replications=getattr(args, "replications", None),
                           seed=0 if seed is None else seed)
    finally:
        status()
    applied = applied or {}
    if getattr(args, "json", False):
        print_json({**result.to_dict(), **applied})
    else:
        by_rule = getattr(args, "replications", None) is None
        print(after_title(format_resources(result, scenario.name or str(args.scenario), by_rule),
                          evidence_lines(applied)))
    for line in result.outcome.warnings:
        print(f"relsim: warning: {line}", file=sys.stderr)
    return EXIT_OK if result.feasible else EXIT_INFEASIBLE


def format_resources(result: Any, scenario_name: str = "", by_rule: bool = False) -> str:
    """The readable form of a :class:`relsim.plan.ResourcePlan`; ``by_rule``: the timeline's
    default rule chose each count's replications (so they differ from count to count)."""
    title = f"{scenario_name}: " if scenario_name else ""
    out = result.outcome
    runs = (f"{result.replications} replications a count" if out.replications
            else f"{out.trials} independent trials a count")
    if by_rule and out.replications:  # 17 at the answer need not be the count below's 50
        at = "unlimited" if result.value is None else result.value
        runs = f"each count's replications by the default rule, {result.replications} at {at}"
    lines = [f"{title}plan for {result.for_} with the timeline ({runs}, seed {result.seed}, "
             "the same seeds for every count)"]
    if result.feasible:
        lines.append(f"  {'least ' + result.for_:<30} {result.value}")
        lines.append(f"  {'answer':<30} {result.summary()}")
        lines.append(f"  targets at {result.value}")
    else:
        lines.append(f"  INFEASIBLE: no count of {result.for_} meets every target")
        lines.append(f"  {'binding':<30} {', '.join(result.binding)}")
        lines.append(f"  targets with {result.for_} unlimited")
    lines += [f"    {line}" for line in target_lines(result.targets)]
    if result.below is not None:
        lines.append(f"  targets at {result.value - 1}")
        lines += [f"    {line}" for line in target_lines(result.below)]
    tried = ", ".join(f"{'unlimited' if c is None else c}: {s}" for c, s in result.tried.items())
    lines.append(f"  {'counts run':<30} {tried}")
    if not result.feasible:
        lines.append(f"  why: {as_flags(result.reason)}")
    return "\n".join(lines)


def format_plan(result: Any, scenario_name: str = "", design: Any = None) -> str:
    """The readable form of a :class:`relsim.plan.Plan`; ``design``, the scenario planned for,
    puts its own value beside an infeasible plan's."""
    lines = []
    title = f"{scenario_name}: " if scenario_name else ""
    details = result.details or {}
    utility = details.get("objective") == "utility"
    steps = f"{result.scenario.steps} step{'s' if result.scenario.steps != 1 else ''}"
    if utility:
        lines.append(f"{title}plan for {result.for_}, objective utility ({steps})")
    else:
        lines.append(f"{title}plan for {result.for_}, target {result.target:g} ({steps})")
    label = _WHAT.get(result.for_, result.for_)
    if utility:
        lines.append(f"  {label:<30} {_show_value(result.value)}")
        lines.append(f"  {'criterion':<30} {details.get('criterion')}")
        lines.append(f"  {'expected utility':<30} {result.expected_utility:.6f}")
        meets = details.get("meets_target")
        verdict = ("no target given" if meets is None else
                   f"{'yes' if meets else 'no'} (target {result.target:g})")
        lines.append(f"  {'meets the target':<30} {verdict}")
    elif result.feasible:
        lines.append(f"  {label:<30} {_show_value(result.value)}")
    else:
        lines.append("  INFEASIBLE: no value reaches the target")
        lines.append(f"  {'ceiling':<30} {result.ceiling:.6f}")
        lines.append(f"  {'binding constraint':<30} {result.binding}")
        # the value where success is best, beside the design's own: "0.0745 (the design's:
        # 0.05)" cannot read as an allowance of 7.5% misses
        mine = _design_value(design, result.for_) if design is not None else None
        own = f" (the design's: {_show_value(mine)})" if mine is not None else ""
        lines.append(f"  {_BEST.get(result.for_, 'nearest design'):<30} {_show_value(result.value)}{own}")
    unit = unit_suffix(result.scenario)
    lines.append(f"  {'success':<30} {result.success:.6f}")
    lines.append(f"  {'expected cost':<30} {result.expected_cost:.6f}{unit}")
    lines.append(f"  {'cost per success':<30} {_show_number(result.cost_per_success)}{unit}")
    if result.expected_utility is not None and not utility:
        lines.append(f"  {'expected utility':<30} {result.expected_utility:.6f}")
    if utility and details.get("method"):
        lines.append(f"  {'method':<30} {details['method']}")
    if result.for_ == "verifier" and "false_reject" in details:
        other = details["false_reject"]
        if other.get("feasible"):
            lines.append(
                f"  {'largest false_reject':<30} {_show_value(other['value'])} "
                f"(keeping the design's miss; success {other['success']:.6f})"
            )
        else:  # the design's miss, not the one planned above: else it reads as a contradiction
            lines.append(f"  {'largest false_reject':<30} none reaches the target at the "
                         "design's miss")
    if result.for_ == "escalation" and not utility and "method" in details:
        lines.append(f"  {'minimises':<30} cost per success")
        lines.append(f"  {'method':<30} {details['method']}")
    if result.for_ == "allocation" and "method" in details and not utility:
        objective = details.get("objective", "cost_per_success").replace("_", " ")
        lines.append(f"  {'minimises':<30} {objective}")
        lines.append(f"  {'method':<30} {details['method']}")
        gap = details.get("gap")
        if gap is None:
            lines.append(f"  {'answer':<30} a heuristic: no bound on the gap to the optimum")
        elif gap == 0.0:
            lines.append(f"  {'answer':<30} optimal")
        else:
            weak = ", by monotonicity alone" if details.get("bound") else ""
            # the gap is in the objective's own units: say which, and what it is measured from
            lines.append(
                f"  {'answer':<30} a heuristic: its {objective} is at most {gap:.6g} above the "
                f"optimum's, which is at least {details['lower_bound']:.6f}{weak}"
            )
            correlation = getattr(design, "correlation", None)
            if not weak and correlation is not None and correlation.task_sd > 0:
                # the bound's relaxation picks budgets knowing each task's difficulty: with a
                # task effect its gap holds that knowledge's worth, not only the answer's
                lines.append(f"  {'':<30} (the bound lets each budget know the task's "
                             "difficulty, which no allocation can: part of the gap is that "
                             "knowledge's worth)")
        if details.get("why"):
            lines.append(f"  why: {as_flags(details['why'])}")
    if not result.feasible and result.reason:
        lines.append(f"  why: {as_flags(result.reason)}")
    return "\n".join(lines)


def _design_value(design: Any, for_: str) -> Any:
    """The design's own value of what was planned (None when its steps differ)."""
    if for_ == "samples":
        return None if design.sampling is None else design.sampling.n
    if for_ == "escalation":
        return None if design.escalation is None else list(design.escalation.after)
    if for_ == "total":
        return None if design.retries is None else design.retries.total
    key = _KEY.get(for_)
    if key is None or (key == "checkpoints.every" and design.checkpoints is None):
        return None
    if key != "p" and key != "checkpoints.every" and design.verifier is None:
        return None  # the planner adds a verifier the design does not have
    from relsim.plan.curves import design_value

    return design_value(design, key)


def _show_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _show_number(value: float) -> str:
    return "inf" if not math.isfinite(value) else f"{value:.6f}"
