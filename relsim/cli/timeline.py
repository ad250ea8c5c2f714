"""``relsim timeline``: a scenario in time (docs/model.md section 7).

::

    relsim timeline SCENARIO.toml --trials N --seed S [--json] [--require-target]
    relsim timeline SCENARIO.toml [--replications R] --seed S [--json] [--require-target]
                    [--events FILE.jsonl --record K]

Independent trials (a batch sharing nothing) run ``--trials N``; a workload (Poisson arrivals
or a shared resource) runs ``--replications R`` of its ``fleet.tasks`` (by default the
least that brings the mean duration within 2%, capped), and ``--trials`` on it is an error
naming ``--replications``. Prints the five outcome shares, attempts and cost, the duration
percentiles, the waits per resource, utilisation, throughput, the bottleneck, each target
met, missed or undecided, and the warnings, every figure with its standard error and 95%
interval (``--json``: ``TimelineOutcome.to_dict()``). ``--require-target`` exits 3 unless
every target is met. ``--events`` writes every event of the first K trials as JSON lines. A
progress bar goes to stderr on a terminal; Ctrl-C prints the estimate over what had ended,
marked partial, and exits 130.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import warnings
from typing import Any

from relsim.cli._args import (
    EXIT_INFEASIBLE,
    EXIT_OK,
    error_number,
    nonnegative_int,
    steps_text,
    positive_int,
    print_json,
    progress_bar,
    ranged,
    unit_suffix,
)
from relsim.cli._time import number, target_lines
from relsim.errors import RelsimError

#: Exit status of a run stopped by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130

#: ``--replications``: a standard error needs two.
replication_count = ranged("replication_count", int, lambda v: v >= 2, "an integer >= 2")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "timeline",
        help="simulate a scenario in time: latency, deadlines, rate limits, reviewers, crashes",
        description=(
            "Run a scenario on the timeline engine (docs/model.md section 7): how long "
            "a task takes, how many a fleet finishes per hour, who waits for what, how many "
            "end by timeout or infrastructure failure, and whether the targets are met. "
            "Independent trials (a batch sharing nothing) take --trials; a workload (Poisson "
            "arrivals or a shared resource) runs --replications of its fleet.tasks."
        ),
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file (TOML)")
    parser.add_argument(
        "--trials", type=positive_int, metavar="N",
        help="independent trials to run (>= 1): a batch that shares nothing",
    )
    parser.add_argument(
        "--replications", type=replication_count, metavar="R",
        help="replications of a workload (>= 2); default: the least that brings the mean "
        "duration's standard error under 2%% of it (at most 50)",
    )
    parser.add_argument(
        "--seed", type=nonnegative_int, required=True, metavar="S",
        help="seed (integer >= 0): the same seed gives the same numbers",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--require-target", action="store_true", dest="require_target",
        help="exit 3 unless every target of the file is met (a gate for a pipeline)",
    )
    parser.add_argument(
        "--events", metavar="FILE.jsonl",
        help="write every event of the first K trials (--record) to FILE as JSON lines",
    )
    parser.add_argument(
        "--record", type=nonnegative_int, metavar="K",
        help="trials whose events --events writes (default 10)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relsim import checks
    from relsim.scenario import Scenario, time_model
    from relsim.timeline import simulate_timeline

    if args.record is not None and args.events is None:
        raise RelsimError("--record: must come with --events FILE.jsonl, got --record alone")
    record = 0 if args.events is None else (10 if args.record is None else args.record)
    scenario = Scenario.from_toml(args.scenario)
    time = time_model(scenario)
    check_mode(time, args.trials, args.replications)
    if getattr(args, "require_target", False) and not time.targets:
        raise RelsimError(
            f"{args.scenario}: targets: must be set for --require-target (a [targets] table "
            "or a top-level target)"
        )
    if args.events is not None:  # fail before the run, not after it
        checks.output_file(args.events, "--events")
    total = args.trials if args.trials is not None else (
        None if args.replications is None else args.replications * time.tasks)
    bar = _progress_bar(total)
    try:
        with warnings.catch_warnings():  # the partial result is reported below, on one line
            warnings.filterwarnings("ignore", "timeline interrupted", RuntimeWarning)
            outcome = simulate_timeline(
                scenario, args.trials, replications=args.replications, seed=args.seed,
                record=record, progress=None if bar is None else bar.update,
            )
    finally:
        if bar is not None:
            bar.close()

    if args.events is not None:
        _write_events(args.events, outcome.events)
    if args.json:
        print_json(outcome.to_dict())
    else:
        print(summary(scenario, args.scenario, outcome, by_rule=args.replications is None))
    for line in outcome.warnings:
        print(f"relsim: warning: {line}", file=sys.stderr)
    if outcome.partial:
        done = (f"{outcome.replications} replications" if outcome.replications
                else f"{outcome.trials} of {args.trials} trials")
        print(f"relsim: interrupted: the estimate covers {done}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if getattr(args, "require_target", False) and not outcome.meets_targets:
        return EXIT_INFEASIBLE
    return EXIT_OK


def check_mode(time: Any, trials: int | None, replications: int | None) -> None:
    """``--trials`` for independent trials, ``--replications`` for a workload
    (docs/model.md section 7, "Workloads"); the other is an error naming the right one."""
    if time.workload:
        if trials is not None:
            raise RelsimError(
                "--trials: not for a workload (Poisson arrivals or a shared resource), whose "
                "trials share queues: give --replications R (each runs the file's fleet.tasks "
                f"= {time.tasks} tasks), or leave it out for the default"
            )
    else:
        if replications is not None:
            raise RelsimError(
                "--replications: only for a workload (Poisson arrivals or a shared resource); "
                "these trials are independent (a batch sharing nothing): give --trials N"
            )
        if trials is None:
            raise RelsimError(
                "--trials: must be given for independent trials (a batch sharing nothing), "
                "an integer >= 1"
            )


def _write_events(path: str, frame: Any) -> None:
    """One JSON object per event: trial, time, kind, step, attempt, resource, outcome (none
    with ``--record 0``: an empty file)."""
    try:
        with open(path, "w", encoding="utf-8") as out:
            if frame is not None:
                _write_rows(out, frame)
    except OSError as error:  # a full disk, a file gone read-only: the environment's, not ours
        raise RelsimError(f"--events: cannot write {path!r}: {error.strerror or error}") from None


def _write_rows(out: Any, frame: Any) -> None:
    from relsim.results import jsonable

    for row in frame.itertuples(index=False):
        record = {
            "trial": int(row.trial),
            "time": float(row.time),
            "kind": row.kind,
            "step": None if _missing(row.step) else int(row.step),
            "attempt": None if _missing(row.attempt) else int(row.attempt),
            "resource": None if _missing(row.resource) else row.resource,
            "outcome": None if _missing(row.outcome) else row.outcome,
        }
        out.write(json.dumps(jsonable(record), allow_nan=False) + "\n")


def _missing(value: Any) -> bool:
    import pandas as pd

    return value is None or bool(pd.isna(value))


_progress_bar = functools.partial(progress_bar, unit="trial")  # tests swap it for a fake bar

_SHARES = (
    ("success", "success"),
    ("silent_failure", "silent failure"),
    ("detected_failure", "detected failure"),
    ("timeout", "timeout"),
    ("infra_failure", "infra failure"),
    ("expected_attempts", "attempts per trial"),
    ("expected_cost", "cost per trial"),
    ("cost_per_success", "cost per success"),
)
_RESOURCES = {"agents": "agents", "rate_limit": "rate limit", "llm": "LLM slots",
              "reviewers": "reviewers", "rpm": "rpm limit", "tpm": "tpm limit"}
def summary(scenario: Any, path: str, out: Any, by_rule: bool = False) -> str:
    """The readable report of one timeline run (either mode); ``by_rule``: the default rule
    chose the number of replications."""
    title = scenario.name or path
    lines = []
    if out.partial:
        done = f"{out.replications} replications" if out.replications else f"{out.trials:,} trials"
        lines.append(f"PARTIAL RESULT: interrupted after {done}")
    lines.append(f"{title}: {steps_text(scenario.steps)}, timeline")
    lines.append(run_line(out))
    precision = precision_line(out, by_rule)
    if precision:
        lines.append(precision)
    lines.append("")
    lines.append(f"{'':26} {'estimate':>11} {'std error':>11}   95% interval")
    for key, label in _SHARES:
        lines.append(_row(label, out, key) + (unit_suffix(scenario) if "cost" in key else ""))
        if key == "silent_failure":  # each failure mode's share of the silent failures
            for name, value in (out.silent_by_mode or {}).items():
                lines.append(_row(f"  {name}", out, f"silent_by_mode_{name}", value))
    if out.expected_utility is not None:
        lines.append(_row("expected utility", out, "expected_utility"))
    lines.append("")
    for key in ("mean", "p50", "p90", "p99"):
        lines.append(_row(f"duration {key} (s)", out, f"duration_{key}", out.duration[key]))
    for key, value in out.wait.items():
        if out.replications is None and value == 0.0:
            continue  # independent trials wait for nothing
        lines.append(_row(f"wait for {_RESOURCES[key]} (s)", out, f"wait_{key}", value))
    for key, value in out.utilisation.items():
        if value is not None:
            lines.append(_row(f"utilisation of {_RESOURCES[key]}", out, f"utilisation_{key}", value))
    for key, value in out.offered_load.items():
        if value is not None:
            lines.append(_row(f"offered load of {_RESOURCES[key]}", out, f"offered_load_{key}", value))
    lines.append("")
    if out.throughput_per_hour is None:
        lines.append("throughput: none (independent trials: a batch has no rate)"
                     if out.replications is None else "throughput: none (no time passed)")
    else:
        lines.append(_row("makespan (s)", out, "makespan", out.makespan))
        lines.append(_row("trials per hour", out, "throughput_per_hour", out.throughput_per_hour))
        lines.append(_row("successes per hour", out, "successes_per_hour", out.successes_per_hour))
    if out.bottleneck is not None:
        lines.append(f"bottleneck: {_RESOURCES[out.bottleneck]}")
    if out.targets:
        lines.append("")
        lines.append("targets")
        lines += [f"  {line}" for line in target_lines(out.targets)]
    return "\n".join(lines)


def run_line(out: Any) -> str:
    """What was run: the trials, or the replications of the workload, and the seed."""
    if out.replications is None:
        return f"independent trials {out.trials:,}   seed {out.seed}"
    warm = f", the first {out.warmup:,} left out" if out.warmup else ""
    return (f"workload: {out.replications} replications of {out.tasks:,} tasks{warm}   "
            f"seed {out.seed}")


def precision_line(out: Any, by_rule: bool = False) -> str:
    """How precise the run is: the mean duration's standard error against the mean, and for
    a workload whose replications the default rule chose, whether the rule's aim was reached."""
    if out.precision is None:
        return ""
    line = f"precision: the mean duration's standard error is {out.precision:.1%} of it"
    if by_rule and out.replications is not None:
        from relsim.timeline._driver import MAX_DEFAULT_REPLICATIONS, PRECISION

        if out.precision > PRECISION and out.replications >= MAX_DEFAULT_REPLICATIONS:
            line += (f" (the default aims at {PRECISION:.0%} but stops at {MAX_DEFAULT_REPLICATIONS} "
                     "replications: give --replications for more)")
        else:
            line += f" (the default: the least replications within {PRECISION:.0%})"
    return line


def _row(label: str, out: Any, key: str, value: Any = None) -> str:
    if value is None:
        value = getattr(out, key)
    se = out.standard_errors.get(key)
    interval = out.intervals.get(key)
    shown = "" if interval is None else f"[{number(interval[0])}, {number(interval[1])}]"
    return f"{label:26} {number(value):>11} {'-' if se is None else error_number(se):>11}   {shown}"
