"""``relsim solve SCENARIO --for retries --confidence C --verifier-from AUDIT
[--difficulty-from FIT] [--worlds N] [--seed S]``: the plan that carries the uncertainty of
the evidence (:func:`relsim.plan.uncertainty.retries_with_confidence`), readable or
``--json`` (:meth:`Plan.to_dict` with ``verifier_from`` and ``difficulty_from``, each
``{"file", "at": "sampled", ...}``). Exit 3 when no budget meets the target in that share of
the worlds."""

from __future__ import annotations

import argparse
import math
from typing import Any

from relsim.cli._args import EXIT_INFEASIBLE, EXIT_OK, as_flags, print_json, unit_suffix
from relsim.cli._time import warn_time_ignored
from relsim.errors import RelsimError

#: What --worlds is when not given.
DEFAULT_WORLDS = 200


def run_confidence(args: argparse.Namespace, scenario: Any) -> int:
    """Plan ``--for retries`` under the evidence's uncertainty; returns the exit status."""
    from relsim.plan.evidence import read_audit, read_fit
    from relsim.plan.uncertainty import retries_with_confidence

    target = getattr(args, "target", None)
    if target is None:
        target = scenario.target
    if target is None:
        raise RelsimError(
            f"--target: must be a number in (0, 1]; {args.scenario} sets no 'target' either"
        )
    audit_file, fit_file = getattr(args, "verifier_from", None), getattr(args, "difficulty_from", None)
    audit = None if audit_file is None else read_audit(audit_file)
    fit = None if fit_file is None else read_fit(fit_file)
    seed = getattr(args, "seed", None)
    worlds = getattr(args, "worlds", None)
    try:
        plan = retries_with_confidence(
            scenario, target, audit=audit, fit=fit, confidence=args.confidence,
            worlds=DEFAULT_WORLDS if worlds is None else worlds, seed=0 if seed is None else seed,
        )
    except RelsimError as error:  # the library names its arguments; say the flag
        if str(error).startswith("worlds:"):
            raise RelsimError(f"--{error}") from None
        raise
    applied = _applied(plan, audit_file, fit_file)
    if getattr(args, "json", False):
        print_json({**plan.to_dict(), **applied})
    else:
        print(format_confidence(plan, scenario.name or str(args.scenario), applied))
    warn_time_ignored(scenario, args.scenario, "relsim solve --for retries")
    return EXIT_OK if plan.feasible else EXIT_INFEASIBLE


def _applied(plan: Any, audit_file: str | None, fit_file: str | None) -> dict[str, Any]:
    """The JSON's ``verifier_from`` and ``difficulty_from``: what the worlds were drawn from."""
    details = plan.details
    out: dict[str, Any] = {}
    if audit_file is not None:
        audit = details["audit"]
        out["verifier_from"] = {
            "file": audit_file, "at": "sampled",
            "miss": audit["miss"]["estimate"], "false_reject": audit["false_reject"]["estimate"],
            "effective": {name: audit[name]["effective"] for name in ("miss", "false_reject")},
        }
    if fit_file is not None:
        out["difficulty_from"] = {"file": fit_file, "at": "sampled",
                                  "draws": details["fit"]["draws"]}
    return out


def format_confidence(plan: Any, title: str, applied: dict[str, Any]) -> str:
    """The readable form of a plan of :func:`relsim.plan.retries_with_confidence`."""
    from relsim.plan.uncertainty import percent

    details = plan.details
    worlds, confidence = details["worlds"], details["confidence"]
    steps = plan.scenario.steps
    lines = [f"{title}: plan for retries, target {plan.target:g} ({steps} step"
             f"{'s' if steps != 1 else ''}), in at least {percent(confidence)} of {worlds} "
             f"plausible worlds (seed {details['seed']})"]
    audit = applied.get("verifier_from")
    if audit is not None:
        rates = details["audit"]
        shown = ", ".join(
            f"{name} {rates[name]['estimate']:.4g} (95% {rates[name]['ci'][0]:.4g} to "
            f"{rates[name]['ci'][1]:.4g}, {rates[name]['effective']:.4g} effective labels)"
            for name in ("miss", "false_reject")
        )
        lines.append(f"verifier drawn from {audit['file']}: {shown}")
    fit = applied.get("difficulty_from")
    if fit is not None:
        lines.append(f"difficulty drawn from {fit['file']}: one of its {fit['draws']} bootstrap "
                     "fits a world, as task classes")
    met = details["met"]
    count = round(met * worlds)
    if plan.feasible:
        lines.append(f"  {'retries per step':<34} {plan.value}")
        lines.append(f"  {'worlds meeting the target':<34} {percent(met)} ({count} of {worlds})")
    else:
        lines.append(f"  INFEASIBLE: no budget meets the target in {percent(confidence)} of the "
                     "worlds")
        lines.append(f"  {'worlds reaching it at any budget':<34} {percent(details['reachable'])}")
        lines.append(f"  {'least per_step meeting the most':<34} {plan.value} ({count} of "
                     f"{worlds} worlds)")
    unit = unit_suffix(plan.scenario)
    lines.append(f"  {'success at the point estimates':<34} {plan.success:.6f}")
    lines.append(f"  {'expected cost':<34} {plan.expected_cost:.6f}{unit}")
    per_success = plan.cost_per_success
    shown = f"{per_success:.6f}" if math.isfinite(per_success) else "inf"
    lines.append(f"  {'cost per success':<34} {shown}{unit}")
    lines.append(f"  {'method':<34} {details['method']}")
    if not plan.feasible and plan.reason:
        lines.append(f"  why: {as_flags(plan.reason)}")
    lines.append(_point_estimate_line(plan))
    return "\n".join(lines)


def _point_estimate_line(plan: Any) -> str:
    """``the plan at the point estimate, 2 retries, meets 0.95 in 58% of plausible worlds``."""
    from relsim.plan.uncertainty import percent

    point = plan.details["point_estimate"]
    retries = f"{point['value']} retr{'y' if point['value'] == 1 else 'ies'}"
    share = percent(point["met"])
    if point["feasible"]:
        return (f"the plan at the point estimate, {retries}, meets {plan.target:g} in {share} "
                "of plausible worlds")
    return (f"at the point estimate no budget meets {plan.target:g} (its nearest design, "
            f"{retries}, meets it in {share} of plausible worlds)")
