"""``relsim levers``: which single design change moves success most.

::

    relsim levers SCENARIO.toml [--json]

Evaluates every single change that applies to the scenario (a point more ``p``, the
verifier's errors halved, one more retry, ...; see :mod:`relsim.plan.sensitivity`) with the exact engine
and prints them sorted by the gain in success, with the cost per success each leads to.
``--json``: ``{"baseline": {success, cost_per_success}, "levers": [rows]}``, each row with
``lever``, ``set`` (dotted scenario keys to new values), ``success``, ``delta_success``,
``cost_per_success`` and ``delta_cost_per_success`` (infinities and NaN as ``null``).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from relsim.cli._args import EXIT_OK, print_json


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "levers",
        help="which single design change moves success most",
        description=(
            "Evaluate, exactly, every single change a designer could make to a scenario "
            "(more p, a better verifier, one more retry, denser checkpoints, ...) and list "
            "them by the gain in end-to-end success, with the cost per success of each."
        ),
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file (TOML)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relsim.plan import levers
    from relsim.scenario import Scenario

    scenario = Scenario.from_toml(args.scenario)
    table = levers(scenario)
    if args.json:
        print_json({"baseline": table.attrs["baseline"], "levers": table.to_dict("records")})
    else:
        print(format_levers(table, scenario.name or str(args.scenario), scenario.steps,
                            unit=scenario.cost.unit))
    return EXIT_OK


def format_levers(table: Any, title: str, steps: int, unit: str = "") -> str:
    """The readable table of :func:`relsim.plan.levers`; costs in ``unit`` when given (the
    scenario's ``[cost] unit``)."""
    baseline = table.attrs["baseline"]
    lines = [
        f"{title}: {steps} steps, exact success {baseline['success']:.6f}, "
        f"cost per success {_number(baseline['cost_per_success'])}{' ' + unit if unit else ''}",
        "",
    ]
    width = max([len("lever")] + [len(lever) for lever in table["lever"]])
    per_success = f"{unit or 'cost'}/success"
    lines.append(
        f"{'lever':<{width}}  {'success':>9}  {'change':>10}  {per_success:>12}  {'change':>10}"
    )
    for row in table.itertuples(index=False):
        lines.append(
            f"{row.lever:<{width}}  {row.success:>9.6f}  {100 * row.delta_success:>+8.3f}pp"
            f"  {_number(row.cost_per_success):>12}  {_signed(row.delta_cost_per_success):>10}"
        )
    if len(table) == 0:
        lines.append("(no change applies to this scenario)")
    return "\n".join(lines)


def _number(value: float) -> str:
    return f"{value:.6g}" if math.isfinite(value) else "inf"


def _signed(value: float) -> str:
    if math.isnan(value):
        return "-"
    if value == 0:
        return "0"  # no change (the planner rounds float noise away): no sign to show
    return f"{value:+.6g}" if math.isfinite(value) else ("-inf" if value < 0 else "+inf")
