"""``relsim evaluate``: the exact outcome of a scenario file.

::

    relsim evaluate SCENARIO.toml [--json] [--require-target]

Prints the split of outcomes (success, silent failure, detected failure), the expected
attempts and cost per trial, the cost per success and, when the scenario sets ``target``,
whether the design meets it and by how much. ``--json``: ``Outcome.to_dict()`` (docs/model.md
section 3's keys and ``method``), plus ``target``, ``meets_target`` and ``margin`` when a
target is set. ``--require-target`` makes the file a gate for a pipeline: exit 3 when the
target is not met (saying by how much), 0 when it is, 2 when the file sets no target. A target
is met by the planners' one rule (:func:`relsim.formulas.meets_target`). The exact engine
ignores time: on a file whose time tables end trials early (a deadline, crashes) a warning
line on stderr says so.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from relsim.cli._args import (
    EXIT_INFEASIBLE,
    EXIT_OK,
    outcome_rows,
    outcome_value,
    plain_number,
    print_json,
    steps_text,
    unit_suffix,
)
from relsim.cli._time import warn_time_ignored
from relsim.errors import RelsimError


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="exact outcome of a scenario file",
        description=(
            "Evaluate a scenario (docs/model.md section 3) exactly: how often a trial succeeds, "
            "fails silently or fails detectably, how many attempts it makes, what it costs, "
            "and whether it meets the scenario's target."
        ),
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file (TOML)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--require-target",
        action="store_true",
        dest="require_target",
        help="exit 3 when the file's target is not met (a gate for a pipeline)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relsim.exact import evaluate
    from relsim.scenario import Scenario

    scenario = Scenario.from_toml(args.scenario)
    require = getattr(args, "require_target", False)
    if require and scenario.target is None:
        raise RelsimError(
            f"{args.scenario}: target: must be set for --require-target (a number in (0, 1])"
        )
    outcome = evaluate(scenario)
    met = None if scenario.target is None else meets(outcome, scenario.target)
    if args.json:
        result = outcome.to_dict()
        if scenario.target is not None:
            result["target"] = scenario.target
            result["meets_target"] = met
            result["margin"] = outcome.success - scenario.target
        print_json(result)
    else:
        print(summary(scenario, args.scenario, outcome))
    warn_time_ignored(scenario, args.scenario, "relsim evaluate")
    if require and not met:
        return EXIT_INFEASIBLE
    return EXIT_OK


def meets(outcome: Any, target: float) -> bool:
    """Whether ``outcome`` meets ``target`` by the planners' rule: log success from the
    failure probability where it is small (:func:`relsim.formulas.meets_target`)."""
    from relsim.formulas import meets_target

    failure = outcome.silent_failure + outcome.detected_failure + outcome.infra_failure
    if failure < 0.5:
        log_success = math.log1p(-failure)
    else:
        log_success = math.log(outcome.success) if outcome.success > 0 else -math.inf
    return meets_target(log_success, target)


def summary(scenario: Any, path: str, outcome: Any) -> str:
    """The readable report of one exact evaluation."""
    title = scenario.name or path
    lines = [f"{title}: {steps_text(scenario.steps)}, exact", ""]
    for key, label in outcome_rows(scenario, outcome):
        value = outcome_value(outcome, key)
        lines.append(f"{label:20} {value:>10.6f}   {100 * value:6.2f}%")
    lines.append("")
    lines.append(f"{'attempts per trial':20} {_number(outcome.expected_attempts):>10}")
    unit = unit_suffix(scenario)
    lines.append(f"{'cost per trial':20} {_number(outcome.expected_cost):>10}{unit}")
    lines.append(f"{'cost per success':20} {_number(outcome.cost_per_success):>10}{unit}")
    if outcome.expected_utility is not None:
        lines.append(f"{'expected utility':20} {_number(outcome.expected_utility):>10}")
    if scenario.target is not None:
        lines.append("")
        margin = outcome.success - scenario.target
        if meets(outcome, scenario.target):
            verdict = f"met, {_points(max(margin, 0.0))} above"
        else:
            verdict = f"NOT met, {_points(max(-margin, 0.0))} short"
        lines.append(f"target {scenario.target:g}: {verdict} (success {outcome.success:.6f})")
    return "\n".join(lines)


def _points(difference: float) -> str:
    return f"{100 * difference:.2f} percentage points"


def _number(value: float) -> str:
    """6 significant figures with their trailing zeros (28.1140 under 27.4195, not 28.114:
    the column's points line up, and a 0 that is a figure is shown)."""
    if not math.isfinite(value):
        return "inf"
    if value == 0:
        return "0"
    text = f"{value:#.6g}"
    return plain_number(value) if "e" in text else text.rstrip(".")
