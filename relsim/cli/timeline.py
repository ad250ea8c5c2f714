"""``relsim timeline``: a scenario's trials in time (docs/model.md section 7).

::

    relsim timeline SCENARIO.toml --trials N --seed S [--json] [--events FILE.jsonl --record K]

Prints the five outcome shares with standard errors, attempts and cost, the duration
percentiles, the waits per resource, utilisation, makespan and throughput (``--json``:
``TimelineOutcome.to_dict()``). ``--events`` writes every event of the first K trials as JSON
lines. A progress bar goes to stderr on a terminal; Ctrl-C prints the estimate over the trials
that ended, marked partial, and exits 130.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import warnings
from typing import Any

from relsim.cli._args import EXIT_OK, nonnegative_int, positive_int, print_json, progress_bar, unit_suffix
from relsim.errors import RelsimError

#: Exit status of a run stopped by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "timeline",
        help="simulate a scenario in time: latency, deadlines, rate limits, reviewers, crashes",
        description=(
            "Run TRIALS trials of a scenario on the timeline engine (docs/model.md section 7): "
            "how long a task takes, how many a fleet finishes per hour, who waits for what, "
            "and how many end by timeout or infrastructure failure."
        ),
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file (TOML)")
    parser.add_argument(
        "--trials", type=positive_int, required=True, metavar="N", help="trials to run (>= 1)"
    )
    parser.add_argument(
        "--seed", type=nonnegative_int, required=True, metavar="S",
        help="seed (integer >= 0): the same seed gives the same numbers",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
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
    from relsim.scenario import Scenario
    from relsim.timeline import simulate_timeline

    if args.record is not None and args.events is None:
        raise RelsimError("--record: must come with --events FILE.jsonl, got --record alone")
    record = 0 if args.events is None else (10 if args.record is None else args.record)
    scenario = Scenario.from_toml(args.scenario)
    if args.events is not None:  # fail before the run, not after it
        checks.output_file(args.events, "--events")
    bar = _progress_bar(args.trials)
    try:
        with warnings.catch_warnings():  # the partial result is reported below, on one line
            warnings.filterwarnings("ignore", "timeline interrupted", RuntimeWarning)
            outcome = simulate_timeline(
                scenario, args.trials, seed=args.seed, record=record,
                progress=None if bar is None else bar.update,
            )
    finally:
        if bar is not None:
            bar.close()

    if args.events is not None:
        _write_events(args.events, outcome.events)
    if args.json:
        print_json(outcome.to_dict())
    else:
        print(_summary(scenario, args.scenario, outcome))
    if outcome.partial:
        print(
            f"relsim: interrupted: the estimate covers {outcome.trials} of {args.trials} trials",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return EXIT_OK


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
)


def _summary(scenario: Any, path: str, out: Any) -> str:
    title = scenario.name or path
    lines = []
    if out.partial:
        lines.append(f"PARTIAL RESULT: interrupted after {out.trials:,} trials")
    lines.append(f"{title}: {scenario.steps} steps, timeline")
    lines.append(f"trials {out.trials:,}   seed {out.seed}")
    lines.append("")
    lines.append(f"{'':20} {'estimate':>12} {'std error':>11}")
    for key, label in _SHARES:
        lines.append(f"{label:20} {_number(getattr(out, key)):>12} {_number(out.standard_errors[key]):>11}")
    for key, label in (("expected_attempts", "attempts per trial"), ("expected_cost", "cost per trial"),
                       ("cost_per_success", "cost per success")):
        se = out.standard_errors.get(key, math.nan)
        lines.append(f"{label:20} {_number(getattr(out, key)):>12} {_number(se):>11}"
                     + (unit_suffix(scenario) if "cost" in key else ""))
    lines.append("")
    d = out.duration
    lines.append(f"{'seconds per trial':20} {'mean':>12} {'p50':>11} {'p90':>11} {'p99':>11}")
    lines.append(
        f"{'duration':20} {_number(d['mean']):>12} {_number(d['p50']):>11} "
        f"{_number(d['p90']):>11} {_number(d['p99']):>11}"
    )
    lines.append("")
    lines.append(f"{'mean wait for':20} {'agents':>12} {'rate limit':>11} {'llm':>11} {'reviewers':>11}")
    w = out.wait
    lines.append(
        f"{'seconds':20} {_number(w['agents']):>12} {_number(w['rate_limit']):>11} "
        f"{_number(w['llm']):>11} {_number(w['reviewers']):>11}"
    )
    u = out.utilisation
    lines.append(
        f"{'utilisation':20} {_share(u['agents']):>12} {'':>11} {_share(u['llm']):>11} "
        f"{_share(u['reviewers']):>11}"
    )
    lines.append("")
    lines.append(f"makespan             {out.makespan:,.0f} s ({out.makespan / 3600:,.1f} h)")
    lines.append(f"throughput           {_number(out.throughput_per_hour)} trials per hour")
    lines.append(f"successes            {_number(out.successes_per_hour)} per hour")
    return "\n".join(lines)


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if not math.isfinite(value):
        return "inf" if value == math.inf else "n/a"
    return f"{value:.6g}" if value != 0 else "0"
