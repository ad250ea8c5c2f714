"""``relsim solve``: the least retry budget that reaches a reliability target.

Flag form (closed forms only, so it starts fast: numpy and nothing heavier)::

    relsim solve --steps 25 --target 0.95 [--p 0.9] [--miss 0.1] [--false-reject 0.02]

With ``--p`` it plans one design (exit 3 when the target is out of reach, saying why and what
would make it reachable); without, it tabulates a grid of ``p``. Scenario form::

    relsim solve design.toml --for retries|total|allocation|verifier|p|checkpoints

hands over to the planner (``relsim.cli.plan_command``).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from relsim.cli._args import (
    EXIT_INFEASIBLE,
    EXIT_OK,
    nonnegative_int,
    positive_int,
    print_json,
    probability,
    target,
)

FOR_CHOICES = ("retries", "total", "allocation", "verifier", "p", "checkpoints")
#: The ``p`` grid of the table printed without ``--p``.
P_GRID = (0.7, 0.8, 0.85, 0.9, 0.95, 0.97, 0.99, 0.995, 0.999)
_FLAG_ONLY = (("steps", "--steps"), ("p", "--p"), ("miss", "--miss"),
              ("false_reject", "--false-reject"), ("validate", "--validate"), ("seed", "--seed"))


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "solve",
        help="least retries per step for a reliability target",
        description=(
            "Plan for a reliability target. Flag form: the per-step success a chain of STEPS "
            "steps needs, and with --p the least per-step retry budget behind a verifier that "
            "misses --miss of wrong attempts and rejects --false-reject of correct ones. "
            "Scenario form: SCENARIO --for WHAT plans a scenario file."
        ),
    )
    parser.add_argument(
        "scenario", nargs="?", metavar="SCENARIO", help="a scenario file (TOML) to plan --for"
    )
    parser.add_argument("--steps", type=positive_int, help="steps in the task (integer >= 1)")
    parser.add_argument("--target", type=target, help="end-to-end success wanted, in (0, 1]")
    parser.add_argument("--p", type=probability, help="per-attempt success, in [0, 1]")
    parser.add_argument(
        "--miss", type=probability, help="P(verifier accepts a wrong attempt), default 0"
    )
    parser.add_argument(
        "--false-reject",
        type=probability,
        dest="false_reject",
        help="P(verifier rejects a correct attempt), default 0",
    )
    parser.add_argument(
        "--for", dest="for_", choices=FOR_CHOICES, help="what to plan for a SCENARIO file"
    )
    parser.add_argument(
        "--validate",
        type=positive_int,
        metavar="N",
        help="check the plan by simulating N trials (needs --p)",
    )
    parser.add_argument("--seed", type=nonnegative_int, help="seed of --validate's simulation")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.scenario is not None:
        return _run_scenario(args)
    if args.for_ is not None:
        raise ValueError(
            "--for plans a scenario file: give one, as in 'relsim solve design.toml --for "
            f"{args.for_}'"
        )
    if args.steps is None:
        raise ValueError("--steps is required (an integer >= 1), or give a SCENARIO file")
    if args.target is None:
        raise ValueError("--target is required (a number in (0, 1])")
    if args.seed is not None and args.validate is None:
        raise ValueError("--seed is the seed of --validate's simulation: give --validate N too")
    miss = 0.0 if args.miss is None else args.miss
    false_reject = 0.0 if args.false_reject is None else args.false_reject
    if args.p is None:
        if args.validate is not None:
            raise ValueError("--validate needs --p: it simulates one planned design")
        result = solve_grid(args.steps, args.target, miss, false_reject)
        if args.json:
            print_json(result)
        else:
            _print_grid(result)
        return EXIT_OK
    result = solve_one(args.steps, args.target, args.p, miss, false_reject)
    if args.validate is not None:  # an infeasible plan has no design to simulate: null
        feasible = result["feasible"]
        result["validation"] = validate(result, args.validate, args.seed) if feasible else None
    if args.json:
        print_json(result)
    else:
        _print_one(result)
    return EXIT_OK if result["feasible"] else EXIT_INFEASIBLE


def _run_scenario(args: argparse.Namespace) -> int:
    given = [flag for dest, flag in _FLAG_ONLY if getattr(args, dest) is not None]
    if given:
        raise ValueError(
            f"{', '.join(given)}: not allowed with a SCENARIO file (the file gives the design); "
            "use either 'relsim solve SCENARIO --for WHAT' or the flag form"
        )
    if args.for_ is None:
        choices = ", ".join(FOR_CHOICES)
        raise ValueError(f"--for is required with a SCENARIO file: one of {choices}")
    from relsim.cli.plan_command import run_scenario

    return run_scenario(args)


# ------------------------------------------------------------------------------ planning
def solve_one(steps: int, target: float, p: float, miss: float, false_reject: float) -> dict:
    """The flag form's plan for one ``p``: a JSON-ready dict (see the README for the keys)."""
    from relsim import formulas

    retries = formulas.min_retries(p, steps, target, miss, false_reject)
    step_ceiling = formulas.verified_ceiling(p, miss, false_reject)
    ceiling = formulas.compound(step_ceiling, steps)
    feasible = retries is not None
    success = None
    if feasible:
        success = formulas.compound(
            formulas.verified_step(p, retries, miss, false_reject).success, steps
        )
    result = {
        "steps": steps,
        "target": target,
        "p": p,
        "miss": miss,
        "false_reject": false_reject,
        "required_step_success": formulas.required_step_success(target, steps),
        "retries": retries,
        "success": success,
        "step_ceiling": step_ceiling,
        "ceiling": ceiling,
        "feasible": feasible,
        "max_miss": formulas.max_miss(p, steps, target, false_reject),
        "min_p": formulas.min_p(steps, target, miss, false_reject),
        "reason": None,
    }
    if not feasible:
        result["reason"] = _reason(result)
    return result


def solve_grid(steps: int, target: float, miss: float, false_reject: float) -> dict:
    """The flag form without ``--p``: one row per ``p`` of :data:`P_GRID`."""
    from relsim import formulas

    rows = []
    for p in P_GRID:
        one = solve_one(steps, target, p, miss, false_reject)
        rows.append({key: one[key] for key in (
            "p", "retries", "success", "step_ceiling", "ceiling", "feasible", "max_miss")})
    return {
        "steps": steps,
        "target": target,
        "miss": miss,
        "false_reject": false_reject,
        "required_step_success": formulas.required_step_success(target, steps),
        "min_p": formulas.min_p(steps, target, miss, false_reject),
        "rows": rows,
    }


def _reason(result: dict) -> str:
    step_ceiling, ceiling = result["step_ceiling"], result["ceiling"]
    steps, target = result["steps"], result["target"]
    if result["p"] == 0.0:
        return "the agent never succeeds (p = 0): no verifier or retry budget can help"
    if result["false_reject"] == 1.0:
        return "the verifier rejects every correct attempt (false_reject = 1), so no step succeeds"
    if ceiling < target:
        return (
            f"the verifier caps each step at {step_ceiling:.6f} (it accepts wrong attempts "
            f"with miss = {result['miss']:g} and rejects correct ones with false_reject = "
            f"{result['false_reject']:g}), so {steps} steps reach at most {ceiling:.6f} < "
            f"{target:g} whatever the retry budget"
        )
    return (
        f"{steps} steps reach at most {ceiling:.6f} = the target {target:g} only in the limit "
        "of unlimited retries; no finite budget reaches it"
    )


def _remedies(result: dict) -> list[str]:
    """What would make an infeasible target reachable, in words."""
    if result["target"] == 1.0:
        return ["certainty: every attempt correct and accepted (p = 1, false_reject = 0); "
                "or a target below 1"]
    if result["ceiling"] >= result["target"]:  # exactly at the ceiling: only the limit reaches it
        return ["a verifier that misses less, a better agent, or a slightly lower target"]
    lines = []
    if result["max_miss"] is not None and result["max_miss"] > 0:
        lines.append(
            f"a verifier that misses under {100 * result['max_miss']:.3g}% of wrong attempts "
            f"(miss < {result['max_miss']:.6g} at p = {result['p']:g}, false_reject = "
            f"{result['false_reject']:g})"
        )
    if result["min_p"] is not None and result["min_p"] < 1:
        lines.append(
            f"an agent with p above {result['min_p']:.6g} per attempt "
            f"(at miss = {result['miss']:g}, false_reject = {result['false_reject']:g})"
        )
    if result["false_reject"] == 1.0:
        lines.append("a verifier that accepts correct attempts (false_reject 1 rejects them all)")
    return lines


def validate(result: dict, trials: int, seed: int | None) -> dict:
    """Simulate the planned design and compare its success with the exact one (a z-score)."""
    import relsim
    from relsim.scenario import Retries, Scenario, Verifier

    scenario = Scenario(
        steps=result["steps"],
        p=result["p"],
        verifier=Verifier(miss=result["miss"], false_reject=result["false_reject"]),
        retries=Retries(per_step=result["retries"]),
    )
    outcome = relsim.simulate(scenario, trials=trials, seed=seed)
    se = float(outcome.standard_errors["success"])
    difference = float(outcome.success) - result["success"]
    if se > 0:
        z = difference / se
    else:  # every trial alike: agreement is exact or not at all
        z = 0.0 if difference == 0 else math.copysign(math.inf, difference)
    return {
        "trials": trials,
        "seed": outcome.seed if outcome.seed is not None else seed,
        "success": float(outcome.success),
        "se": se,
        "z": z,
    }


# ------------------------------------------------------------------------------ printing
def _number(value: float | None, digits: int = 6) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _print_header(result: dict) -> None:
    print(
        f"{result['steps']} steps, target {result['target']:g}: each step must succeed with "
        f"probability >= {result['required_step_success']:.6f}"
    )
    print(f"verifier: miss {result['miss']:g}, false_reject {result['false_reject']:g}")


def _print_one(result: dict) -> None:
    _print_header(result)
    rows = [
        ("p", f"{result['p']:g}"),
        ("step ceiling", _number(result["step_ceiling"])),
        ("task ceiling", _number(result["ceiling"])),
        ("retries per step", "-" if result["retries"] is None else str(result["retries"])),
        ("success", _number(result["success"])),
        ("feasible", "yes" if result["feasible"] else "no"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    if not result["feasible"]:
        print(f"infeasible: {result['reason']}.")
        print("reachable with enough retries given any of:")
        for line in _remedies(result):
            print(f"  - {line}")
    validation = result.get("validation", False)
    if validation is None:
        print("--validate: nothing simulated, no retry budget reaches the target")
    elif validation:
        z = validation["z"]
        print(
            f"simulated {validation['trials']} trials (seed {validation['seed']}): success "
            f"{validation['success']:.6f} +- {validation['se']:.6f} (SE), z = {z:+.2f} against "
            f"the exact {result['success']:.6f}"
        )


def _print_grid(result: dict) -> None:
    _print_header(result)
    header = ("p", "retries", "success", "step ceiling", "ceiling", "feasible")
    table = [
        (
            f"{row['p']:g}",
            "-" if row["retries"] is None else str(row["retries"]),
            _number(row["success"]),
            _number(row["step_ceiling"]),
            _number(row["ceiling"]),
            "yes" if row["feasible"] else "no",
        )
        for row in result["rows"]
    ]
    widths = [max(len(header[i]), *(len(r[i]) for r in table)) for i in range(len(header))]
    print()
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for r in table:
        print("  ".join(cell.rjust(w) for cell, w in zip(r, widths)))
    if not all(row["feasible"] for row in result["rows"]):
        min_p = result["min_p"]
        if min_p is None:
            print("no p reaches the target: false_reject = 1 rejects every correct attempt")
        else:
            print(f"at miss {result['miss']:g}, the target needs p above {min_p:.6g}")
