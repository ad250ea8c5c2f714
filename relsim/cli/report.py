"""``relsim report``: the design-review report, one self-contained HTML file.

::

    relsim report SCENARIO.toml -o report.html [--target T] [--trials N] [--seed S]
                  [--verifier-from AUDIT.json [--at upper|estimate|lower]]

Writes the page of :func:`relsim.report.render` (the design, its exact outcome, the target and
what meets it, the levers, the design over each lever's range, the compounding context, the
explorer and a Monte Carlo check) and prints where. ``--verifier-from`` sets the verifier from
a grader audit first (at the upper end of its 95% intervals unless ``--at`` says otherwise),
says so in one line, and the page's footer shows the flags.
A progress bar (one step a section) goes to stderr when stderr is a terminal.
Exit status: 0 written; 2 bad input; 3 written, but the design does not meet the target, or
not every target in time (``[targets]``) is met in the report's run in time (as ``relsim
timeline --require-target`` judges them: missed or undecided).
"""

from __future__ import annotations

import argparse
import functools
import shlex
from typing import Any

from relsim.cli._args import EXIT_INFEASIBLE, EXIT_OK, nonnegative_int, progress_bar, target
from relsim.cli._evidence import add_verifier_arguments, apply_evidence, evidence_lines
from relsim.errors import RelsimError


def add_parser(subparsers: Any) -> None:
    # relsim.report is not imported here: every command builds this parser, and `relsim solve`
    # must start fast. The default (relsim.report.DEFAULT_TRIALS) is applied in run().
    parser = subparsers.add_parser(
        "report",
        help="a self-contained HTML design-review report of a scenario file",
        description=(
            "Write one self-contained HTML page (inline SVG figures, one inline script, "
            "nothing fetched; readable offline and printable) that a reviewer reads top to "
            "bottom: the design, its exact outcome, the target and what meets it, the levers "
            "and what each buys (ranked by success, or by expected utility with a [utility] "
            "table), the design over each lever's range, the compounding context, "
            "an explorer of a uniform chain and a Monte Carlo check. Exit status 3 when the "
            "design does not meet the target, or a target in time ([targets]) is not met "
            "(missed or undecided) in the report's run in time (the page is still written)."
        ),
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file (TOML)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    parser.add_argument("--target", type=target, metavar="T", help="target in (0, 1] (default: the file's)")
    parser.add_argument(
        "--trials",
        type=nonnegative_int,
        metavar="N",
        help="Monte Carlo trials of the check (default 100000; 0 leaves it out)",
    )
    parser.add_argument(
        "--seed", type=nonnegative_int, metavar="S",
        help="seed of the check and of the timeline's runs (default 0)",
    )
    add_verifier_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relsim.report import DEFAULT_TRIALS, render, write
    from relsim.scenario import Scenario

    if args.trials == 0 and args.seed is not None:  # nothing is drawn: it would do nothing
        raise RelsimError("--seed: seeds the Monte Carlo check and the timeline's runs, which "
                          "--trials 0 leaves out: leave it out too")
    seed = 0 if args.seed is None else args.seed
    from relsim import checks

    checks.output_file(args.output, "-o")  # before the work, not after it
    scenario, applied = apply_evidence(args, Scenario.from_toml(args.scenario))
    trials = DEFAULT_TRIALS if args.trials is None else args.trials
    audit = applied.get("verifier_from")
    command = "relsim " + shlex.join(
        ["report", args.scenario, "-o", args.output, "--trials", str(trials), "--seed", str(seed)]
        + (["--target", f"{args.target:g}"] if args.target is not None else [])
        + (["--verifier-from", audit["file"], "--at", audit["at"]] if audit else [])
    )
    from relsim.report import SECTIONS

    # a report runs every engine (levers, curves, a Monte Carlo check, a run in time): 10-30 s
    # that a terminal sees pass section by section
    bar = _progress_bar(len(SECTIONS))
    try:
        report = render(
            scenario,
            source=args.scenario,
            target=args.target,
            trials=trials,
            seed=seed,
            command=command,
            sections=SECTIONS if bar is None else tuple(_counted(s, bar) for s in SECTIONS),
        )
    finally:
        if bar is not None:
            bar.close()
    path = write(report, args.output)
    for line in evidence_lines(applied):
        print(line)
    verdict = ""
    if report.meets_target is not None:
        verdict = "; target met" if report.meets_target else "; target NOT met"
    in_time = report.time_targets or {}
    if in_time:  # as `relsim timeline` words them: a reader of this line alone must see a miss
        shown = {"met": "met", "missed": "MISSED", "undecided": "UNDECIDED"}
        verdict += "; in time: " + ", ".join(f"{key} {shown[status]}" for key, status in in_time.items())
    print(f"wrote {path} ({len(report.figures)} figures, {len(report.sections)} sections{verdict})")
    # a gate like `relsim timeline --require-target`: every target in time must be met
    if report.meets_target is False or any(status != "met" for status in in_time.values()):
        return EXIT_INFEASIBLE
    return EXIT_OK


_progress_bar = functools.partial(progress_bar, unit="section")  # tests swap it for a fake bar


def _counted(section: Any, bar: Any) -> Any:
    """``section``, moving ``bar`` on by one once it is built."""

    def build(ctx: Any) -> Any:
        built = section(ctx)
        bar.update(1)
        return built

    return build
