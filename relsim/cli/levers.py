"""``relsim levers``: which single design change buys the most (success, or expected utility
with a ``[utility]`` table), and what the time levers do to the targets in time.

::

    relsim levers SCENARIO.toml [--json] [--seed S] [--replications R | --trials N]
                  [--verifier-from AUDIT.json [--at upper|estimate|lower]]

Evaluates every single change that applies to the scenario (a point more ``p``, the
verifier's errors halved, one more retry, ...; see :mod:`relsim.plan.sensitivity`) with the exact engine
and prints them sorted by the gain in success (in expected utility with a ``[utility]``
table), with the cost per success each leads to and, when the file sets a ``target``, whether
that change alone meets it.
``--json``: ``{"baseline": {success, cost_per_success}, "levers": [rows]}``, each row with
``lever``, ``set`` (dotted scenario keys to new values), ``success``, ``delta_success``,
``cost_per_success`` and ``delta_cost_per_success`` (infinities and NaN as ``null``); with
``[utility]`` the baseline and every row add ``expected_utility`` (rows also
``delta_expected_utility``).
``--verifier-from`` sets the verifier from a grader audit first (``--at``: upper, the default,
estimate or lower), says so under the title and in JSON as ``verifier_from``.

When the scenario has time tables, the time levers follow (:func:`relsim.plan.time_levers`:
one more reviewer, agent or LLM slot, rpm or tpm doubled, a faster review, a longer deadline),
each with its effect on every target in time and a 95% interval, run on the timeline with the
baseline's seeds (``--seed``, default 0; a workload's ``--replications``, independent trials'
``--trials``). ``--json`` adds ``"time": {"baseline", "replications", "trials", "seed",
"levers"}``. The exact table is printed first; while the time levers run, a terminal's stderr
says so.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from relsim.cli._args import EXIT_OK, nonnegative_int, positive_int, print_json, status_line
from relsim.cli._evidence import add_verifier_arguments, after_title, apply_evidence, evidence_lines
from relsim.cli._time import TARGET_WORDS
from relsim.cli.timeline import replication_count
from relsim.errors import RelsimError


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "levers",
        help="which single design change buys the most: success, or expected utility with a "
             "[utility] table",
        description=(
            "Evaluate, exactly, every single change a designer could make to a scenario "
            "(more p, a better verifier, one more retry, denser checkpoints, ...) and list "
            "them by the gain in end-to-end success (in expected utility when the scenario has "
            "a [utility] table), with the cost per success of each."
        ),
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file (TOML)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seed", type=nonnegative_int, metavar="S",
                        help="seed of the time levers' timeline runs (default 0)")
    parser.add_argument("--replications", type=replication_count, metavar="R",
                        help="replications of each time lever's run of a workload (default: the "
                        "timeline's rule for the baseline)")
    parser.add_argument("--trials", type=positive_int, metavar="N",
                        help="trials of each time lever's run of independent trials (default 2000)")
    add_verifier_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relsim.plan import levers, time_levers
    from relsim.scenario import Scenario, time_model

    scenario, applied = apply_evidence(args, Scenario.from_toml(args.scenario))
    time = time_model(scenario)
    replications, trials = getattr(args, "replications", None), getattr(args, "trials", None)
    seed = getattr(args, "seed", None)
    timed = any(getattr(scenario, name) is not None for name in TIME_TABLES)
    if not timed:  # no time levers to run: a flag of their runs would be silently ignored
        for flag, value in (("--trials", trials), ("--replications", replications), ("--seed", seed)):
            if value is not None:
                raise RelsimError(
                    f"{flag}: sets the time levers' timeline runs, but the scenario has no time "
                    f"table ({', '.join(f'[{name}]' for name in TIME_TABLES)}): leave it out"
                )
    check_mode(time, trials, replications)
    table = levers(scenario)
    if not args.json:  # the exact table is ready in a second: show it before the runs in time
        print(after_title(format_levers(table, scenario.name or str(args.scenario), scenario.steps,
                                        unit=scenario.cost.unit, target=scenario.target),
                          evidence_lines(applied)),
              flush=True)
    timing = None
    if timed:
        status = status_line("relsim levers: running the time levers on the timeline engine, "
                             "each a whole run like the baseline's (often 10-60 s)...")
        try:
            timing = time_levers(scenario, replications=replications, trials=trials,
                                 seed=0 if seed is None else seed)
        finally:
            status()
    if args.json:
        result: dict[str, Any] = {"baseline": table.attrs["baseline"], "levers": table.to_dict("records")}
        if timing is not None:
            result["time"] = {key: timing.attrs[key] for key in ("baseline", "replications", "trials", "seed")}
            result["time"]["levers"] = timing.to_dict("records")
        print_json({**result, **applied})
    elif timing is not None:
        print()
        print(format_time_levers(timing))
    return EXIT_OK


#: The tables that give a scenario time levers.
TIME_TABLES = ("timing", "fleet", "resources", "infra", "targets")


def check_mode(time: Any, trials: int | None, replications: int | None) -> None:
    """``--replications`` for a workload, ``--trials`` for independent trials."""
    if replications is not None and not time.workload:
        raise RelsimError("--replications: only for a workload (Poisson arrivals or a shared "
                          "resource); these trials are independent: give --trials N")
    if trials is not None and time.workload:
        raise RelsimError("--trials: not for a workload (Poisson arrivals or a shared resource): "
                          "give --replications R")


def format_time_levers(table: Any) -> str:
    """The readable table of :func:`relsim.plan.time_levers`: one block per lever."""
    attrs = table.attrs
    runs = (f"{attrs['replications']} replications" if attrs["replications"]
            else f"{attrs['trials']:,} independent trials")
    lines = [f"time levers (timeline, {runs} a run, seed {attrs['seed']}, the same seeds for "
             "every lever): each change against the baseline, with its 95% interval"]
    targets = attrs["targets"]
    baseline = attrs["baseline"]
    lines.append("baseline")
    for key in attrs["quantities"]:
        lines.append(("  " + _quantity(key, targets, baseline[key], baseline.get(f"status_{key}"))).rstrip())
    if len(table) == 0:
        lines.append("(no time lever applies to this scenario)")
    from relsim.report._html import scenario_value  # a value as the scenario file writes it

    for row in table.to_dict("records"):
        changed = ", ".join(f"{k} = {scenario_value(v)}" for k, v in row["set"].items())
        met = f": targets met {row['met']} of {len(targets)}" if targets else ""
        lines.append(f"{row['lever']} ({changed}){met}")
        for key in attrs["quantities"]:
            low, high = row[f"delta_{key}_low"], row[f"delta_{key}_high"]
            unit = TARGET_WORDS[key][2]  # a change is in its quantity's unit (" s" for durations)
            delta = row[f"delta_{key}"]
            change = f"change {_signed(delta)}{unit if math.isfinite(delta) and delta else ''}"
            if not (math.isnan(low) or math.isnan(high)):
                change += f" (95% interval {_signed(low)} to {_signed(high)}{unit})"
            lines.append("  " + _quantity(key, targets, row[key], row.get(f"status_{key}")) + f"  {change}")
    return "\n".join(lines)


def _quantity(key: str, targets: Any, value: Any, status: Any) -> str:
    words, side, unit = TARGET_WORDS[key]
    label = f"{words} ({side} {targets[key]:g}{unit})" if key in targets else words
    shown = "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{_number(value)}{unit}"
    verdict = {"met": "met", "missed": "MISSED", "undecided": "UNDECIDED"}.get(status, "")
    return f"{label:34} {shown:>14}  {verdict:9}"


def format_levers(table: Any, title: str, steps: int, unit: str = "",
                  target: float | None = None) -> str:
    """The readable table of :func:`relsim.plan.levers`; costs in ``unit`` when given (the
    scenario's ``[cost] unit``); with a ``target``, whether each lever alone meets it (by the
    planners' rule, :func:`relsim.formulas.meets_target`)."""
    from relsim.formulas import meets_target
    from relsim.report._html import decimals_for

    baseline = table.attrs["baseline"]
    valued = "expected_utility" in baseline
    # a column and its change to the decimals of the baseline's 6 significant figures, so
    # that their points line up (1.85470 over 2.06469, -0.06951 over +0.14048) instead of %g's
    # -0.0695104 over -0.000917185; the baseline itself as evaluate shows it (28.1140)
    cost = decimals_for(baseline["cost_per_success"])
    utility = decimals_for(baseline.get("expected_utility", math.nan))
    lines = [
        f"{title}: {steps} step{'' if steps == 1 else 's'}, exact success {baseline['success']:.6f}, "
        f"cost per success {_number(baseline['cost_per_success'], cost)}{' ' + unit if unit else ''}"
        + (f", expected utility {_number(baseline['expected_utility'], utility)}" if valued else ""),
    ]
    if valued:
        lines.append("ranked by the change in expected utility (the [utility] table's values)")
    lines.append("")
    width = max([len("lever")] + [len(lever) for lever in table["lever"]])
    per_success = f"{unit or 'cost'}/success"
    header = f"{'lever':<{width}}  {'success':>9}  {'change':>10}  {per_success:>12}  {'change':>10}"
    header += f"  {'utility':>10}  {'change':>10}" if valued else ""
    lines.append(header + (f"  meets {target:g}" if target is not None else ""))
    for row in table.to_dict("records"):
        line = (
            f"{row['lever']:<{width}}  {row['success']:>9.6f}  {100 * row['delta_success']:>+8.3f}pp"
            f"  {_number(row['cost_per_success'], cost):>12}  {_signed(row['delta_cost_per_success'], cost):>10}"
        )
        if valued:
            line += (f"  {_number(row['expected_utility'], utility):>10}"
                     f"  {_signed(row['delta_expected_utility'], utility):>10}")
        if target is not None:  # the question a reader with a target asks of every row
            success = row["success"]
            met = success > 0 and meets_target(math.log(success), target)
            line += f"  {'yes' if met else 'no':>{len(f'meets {target:g}')}}"
        lines.append(line)
    if len(table) == 0:
        lines.append("(no change applies to this scenario)")
    return "\n".join(lines)


def _number(value: float, decimals: int | None = None) -> str:
    if not math.isfinite(value):
        return "inf"
    return f"{value:.6g}" if decimals is None else f"{value:.{decimals}f}"


def _signed(value: float, decimals: int | None = None) -> str:
    if math.isnan(value):
        return "-"
    if value == 0:
        return "0"  # no change (the planner rounds float noise away): no sign to show
    if not math.isfinite(value):
        return "-inf" if value < 0 else "+inf"
    return f"{value:+.6g}" if decimals is None else f"{value:+.{decimals}f}"
