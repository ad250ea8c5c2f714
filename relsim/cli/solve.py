"""``relsim solve``: plan for a reliability target (the flag form's chain, or a scenario file's --for).

Flag form (closed forms only, so it starts fast: numpy and nothing heavier)::

    relsim solve --steps 25 --target 0.95 [--p 0.9] [--miss 0.1] [--false-reject 0.02]

With ``--p`` it plans one design (exit 3 when the target is out of reach, saying why and what
would make it reachable); without, it tabulates a grid of ``p``. Scenario form::

    relsim solve design.toml --for retries|total|allocation|verifier|p|checkpoints|samples|escalation
    relsim solve design.toml --for allocation [--objective cost_per_success|expected_cost|utility]
    relsim solve design.toml --for retries [--objective utility]   (any --for but verifier, p)
    relsim solve design.toml --for reviewers|agents|llm_concurrency|rpm [--replications R] [--seed S]
    relsim solve design.toml --for ... [--verifier-from AUDIT.json [--at upper|estimate|lower]]
                             [--difficulty-from FIT.json]
    relsim solve design.toml --for retries --confidence 0.9 --verifier-from AUDIT.json
                             [--difficulty-from FIT.json] [--worlds 200] [--seed 0]

hands over to the planner (``relsim.cli.plan_command``): the exact planners, or with the
timeline the least count of a shared resource that meets the file's targets in time. The
evidence flags set the verifier from a grader audit and the task classes from a difficulty
fit; with ``--confidence``, the plan carries their uncertainty
(``relsim.plan.retries_with_confidence``).
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from relsim.cli._args import (
    EXIT_INFEASIBLE,
    EXIT_OK,
    as_flags,
    nonnegative_int,
    open_probability,
    positive_int,
    print_json,
    probability,
    ranged,
    step_count,
    steps_text,
    target,
)
from relsim.cli._evidence import add_difficulty_argument, add_verifier_arguments
from relsim.errors import RelsimError

if TYPE_CHECKING:  # pragma: no cover
    from relsim.plan.chain import ChainPlan

#: What ``--for`` plans: the exact planners' quantities, then the shared resources planned
#: with the timeline (``relsim.plan.resources``).
TIME_CHOICES = ("reviewers", "agents", "llm_concurrency", "rpm")
FOR_CHOICES = ("retries", "total", "allocation", "verifier", "p", "checkpoints", "samples",
               "escalation", *TIME_CHOICES)
#: The values of ``--objective`` (which apply to which ``--for``: relsim.plan.objective).
OBJECTIVE_CHOICES = ("cost_per_success", "expected_cost", "utility")
#: The ``p`` grid of the table printed without ``--p``.
P_GRID = (0.7, 0.8, 0.85, 0.9, 0.95, 0.97, 0.99, 0.995, 0.999)
_FLAG_ONLY = (("steps", "--steps"), ("p", "--p"), ("miss", "--miss"),
              ("false_reject", "--false-reject"), ("validate", "--validate"), ("seed", "--seed"))
#: What only a plan of a scenario file takes: evidence, and planning under its uncertainty.
_SCENARIO_ONLY = (("verifier_from", "--verifier-from"), ("at", "--at"),
                  ("difficulty_from", "--difficulty-from"), ("confidence", "--confidence"),
                  ("worlds", "--worlds"))
#: ``--worlds``: relsim.plan.uncertainty.MAX_WORLDS, here so the parser imports nothing heavy.
_world_count = ranged("world_count", int, lambda v: 1 <= v <= 10_000, "an integer in 1..10000")
#: The keys of one row of the grid (the flag form without ``--p``).
_ROW_KEYS = ("p", "retries", "success", "step_ceiling", "ceiling", "feasible", "max_miss")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "solve",
        help="plan for a reliability target: the retries a chain needs, or one quantity of a "
             "scenario file (--for)",
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
    parser.add_argument(
        "--steps", type=step_count, help="steps in the task (an integer in 1..2**62)"
    )
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
        "--objective",
        choices=OBJECTIVE_CHOICES,
        help="what the plan optimises instead of its default: utility (maximise the file's "
        "[utility]; any --for but verifier and p), or what --for allocation minimises: cost "
        "per success (its default) or expected cost per trial (also --for checkpoints' default)",
    )
    parser.add_argument(
        "--validate",
        type=positive_int,
        metavar="N",
        help="check the plan by simulating N trials (needs --p)",
    )
    parser.add_argument("--seed", type=nonnegative_int,
                        help="seed of --validate's simulation, of the timeline's runs of "
                        "--for reviewers|agents|llm_concurrency|rpm, or of --confidence's "
                        "plausible worlds (default 0)")
    parser.add_argument("--replications", type=_replication_count, metavar="R",
                        help="--for reviewers|agents|llm_concurrency|rpm: replications of each "
                        "count (>= 2; default: the timeline's rule, the mean duration within 2%%)")
    add_verifier_arguments(parser)
    add_difficulty_argument(parser)
    parser.add_argument("--confidence", type=open_probability, metavar="C",
                        help="--for retries: the least budget that meets the target in at least "
                        "this share of the plausible worlds drawn from --verifier-from and "
                        "--difficulty-from, in (0, 1)")
    parser.add_argument("--worlds", type=_world_count, metavar="N",
                        help="--confidence: plausible worlds drawn (default 200)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.scenario is not None:
        return _run_scenario(args)
    if getattr(args, "objective", None) is not None:
        raise RelsimError("--objective: is what a plan of a SCENARIO file optimises: give one "
                          "and --for")
    if args.for_ is not None:
        raise RelsimError(
            "--for: plans a scenario file: give one, as in 'relsim solve design.toml --for "
            f"{args.for_}'"
        )
    if getattr(args, "replications", None) is not None:
        raise RelsimError("--replications: is for planning a scenario file's shared resources "
                          "(--for reviewers|agents|llm_concurrency|rpm)")
    for dest, flag in _SCENARIO_ONLY:
        if getattr(args, dest, None) is not None:
            raise RelsimError(f"{flag}: plans a scenario file: give one, as in 'relsim solve "
                              f"design.toml --for retries {flag} ...'")
    if args.steps is None:
        raise RelsimError("--steps: must be given (an integer >= 1), or give a SCENARIO file")
    if args.target is None:
        raise RelsimError("--target: must be given (a number in (0, 1])")
    if args.seed is not None and args.validate is None:
        raise RelsimError("--seed: is the seed of --validate's simulation: give --validate N too")
    miss = 0.0 if args.miss is None else args.miss
    false_reject = 0.0 if args.false_reject is None else args.false_reject
    if args.p is None:
        if args.validate is not None:
            raise RelsimError("--validate: needs --p: it simulates one planned design")
        result = solve_grid(args.steps, args.target, miss, false_reject)
        if args.json:
            print_json(result)
        else:
            _print_grid(result)
        return EXIT_OK
    from relsim.plan.chain import plan_chain

    plan = plan_chain(args.steps, args.target, args.p, miss, false_reject)
    result = plan.to_dict()
    if args.validate is not None:  # an infeasible plan has no design to simulate: null
        result["validation"] = validate(plan, args.validate, args.seed) if plan.feasible else None
    if args.json:
        print_json(result)
    else:
        _print_one(result, plan.remedies)
    return EXIT_OK if plan.feasible else EXIT_INFEASIBLE


def _replication_count(text: str) -> int:
    from relsim.cli.timeline import replication_count

    return replication_count(text)


def _run_scenario(args: argparse.Namespace) -> int:
    timed = args.for_ in TIME_CHOICES
    drawn = getattr(args, "confidence", None) is not None  # --seed seeds the worlds
    given = [flag for dest, flag in _FLAG_ONLY
             if getattr(args, dest) is not None and not ((timed or drawn) and dest == "seed")]
    if given:
        raise RelsimError(
            f"{', '.join(given)}: not allowed with a SCENARIO file (the file gives the design); "
            "use either 'relsim solve SCENARIO --for WHAT' or the flag form"
        )
    if args.for_ is None:  # say what to give, not "got None"
        raise RelsimError(
            f"--for: must be given with a SCENARIO file: what to plan, one of "
            f"{', '.join(FOR_CHOICES)} (as in 'relsim solve {args.scenario} --for retries')"
        )
    if args.objective is not None:
        _check_objective(args.for_, args.objective)
    if getattr(args, "replications", None) is not None and not timed:
        raise RelsimError(f"--replications: is for the timeline's --for {', '.join(TIME_CHOICES)}, "
                          f"not --for {args.for_} (the exact engine)")
    _check_confidence(args)
    from relsim.cli.plan_command import run_scenario

    return run_scenario(args)


def _check_confidence(args: argparse.Namespace) -> None:
    """``--confidence`` and ``--worlds`` against the other flags."""
    from relsim.cli._evidence import check_evidence_flags

    check_evidence_flags(args)
    confidence = getattr(args, "confidence", None)
    if confidence is None:
        if getattr(args, "worlds", None) is not None:
            raise RelsimError("--worlds: is how many plausible worlds --confidence draws: give "
                              "--confidence too")
        return
    if args.for_ != "retries":
        raise RelsimError(f"--confidence: plans --for retries only, got --for {args.for_}")
    if getattr(args, "verifier_from", None) is None and getattr(args, "difficulty_from", None) is None:
        raise RelsimError("--confidence: must come with --verifier-from AUDIT or "
                          "--difficulty-from FIT (what the plausible worlds are drawn from)")
    if getattr(args, "at", None) is not None:
        raise RelsimError("--at: must be left out with --confidence, which draws the grader's "
                          "rates from the audit instead of taking one end of its intervals")
    if getattr(args, "objective", None) is not None:
        raise RelsimError("--objective: must be left out with --confidence (the least budget "
                          "that meets the target in that share of the worlds)")


def _check_objective(for_: str, objective: str) -> None:
    """``--objective`` against ``--for``, in the command line's words."""
    if for_ in TIME_CHOICES:
        raise RelsimError(f"--objective: must be left out with --for {for_} (the least count "
                          "that meets the targets in time)")
    from relsim.plan.objective import DEFAULTS, OBJECTIVES

    allowed = OBJECTIVES[for_]
    if not allowed:
        raise RelsimError(f"--objective: must be left out with --for {for_}, which states a "
                          f"requirement ({DEFAULTS[for_]}), not a design to optimise; "
                          f"got {objective!r}")
    if objective not in allowed:
        raise RelsimError(f"--objective: must be {' or '.join(allowed)} with --for {for_}, "
                          f"got {objective!r}")


# ------------------------------------------------------------------------------ planning
def solve_one(steps: int, target: float, p: float, miss: float, false_reject: float) -> dict:
    """The flag form's plan for one ``p``, JSON-ready: :func:`relsim.plan.chain.plan_chain`'s
    :meth:`~relsim.plan.chain.ChainPlan.to_dict` (docs/commands/solve.md lists the keys)."""
    from relsim.plan.chain import plan_chain

    return plan_chain(steps, target, p, miss, false_reject).to_dict()


def solve_grid(steps: int, target: float, miss: float, false_reject: float) -> dict:
    """The flag form without ``--p``: one row per ``p`` of :data:`P_GRID`."""
    from relsim.plan.chain import plan_chain

    plans = [plan_chain(steps, target, p, miss, false_reject) for p in P_GRID]
    rows = [
        {key: one[key] for key in _ROW_KEYS} for one in (plan.to_dict() for plan in plans)
    ]
    first = plans[0]  # the keys that do not depend on p
    return {
        "steps": steps,
        "target": target,
        "miss": miss,
        "false_reject": false_reject,
        "required_step_success": first.required_step_success,
        "min_p": first.min_p,
        "rows": rows,
    }


def validate(plan: "ChainPlan", trials: int, seed: int | None) -> dict:
    """Simulate the planned design and compare its success with the exact one (a z-score)."""
    import relsim

    assert plan.success is not None  # only a feasible plan is validated
    try:
        outcome = relsim.simulate(plan.to_scenario(), trials=trials, seed=seed)
    except RelsimError as error:  # the simulation's trials are --validate's N
        text = str(error)
        if text.startswith("trials:"):
            raise RelsimError("--validate" + text[len("trials"):]) from None
        raise
    se = float(outcome.standard_errors["success"])
    difference = float(outcome.success) - plan.success
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
        f"{steps_text(result['steps'])}, target {result['target']:g}: each step must succeed with "
        f"probability >= {result['required_step_success']:.6f}"
    )
    print(f"verifier: miss {result['miss']:g}, false_reject {result['false_reject']:g}")


def _print_one(result: dict, remedies: list[str]) -> None:
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
        print(f"infeasible: {as_flags(result['reason'])}.")
        print("reachable with enough retries given any of:")
        for line in remedies:
            print(f"  - {as_flags(line)}")
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
