"""``relsim simulate``: Monte Carlo estimate of a scenario file.

::

    relsim simulate SCENARIO.toml --trials N --seed S [--threads T] [--record K] [--json]

Prints the estimates with standard errors, 95% intervals and percentiles of cost and attempts
(``--json``: ``SimulatedOutcome.to_dict()``, with ``<key>_se``, ``<key>_ci``, ``trials``,
``seed`` and ``partial``). A progress bar goes to stderr when stderr is a terminal. Ctrl-C stops the run
within about a second (no new chunk starts; the kernels stop at the end of their slice of
work) and prints the estimate over the trials done, marked partial, with exit status 130 (a
second Ctrl-C exits at once). A run estimated past the time or memory limit
(``relsim.limits``) is refused before it starts: exit 2, one line with the trials or the
recorded trials that fit. Monte Carlo ignores time: on a file whose time tables end trials
early (a deadline, crashes) a warning line on stderr says so.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import warnings
from typing import Any

from relsim.cli._args import (
    EXIT_OK,
    error_number,
    nonnegative_int,
    outcome_rows,
    outcome_value,
    positive_int,
    plain_number,
    print_json,
    progress_bar,
    steps_text,
    unit_suffix,
)
from relsim.cli._time import warn_time_ignored

#: Exit status of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="Monte Carlo estimate of a scenario file",
        description=(
            "Simulate TRIALS independent trials of a scenario (docs/model.md section 3) and print "
            "each outcome's estimate with its standard error and 95% interval, and the "
            "percentiles of cost and attempts per trial. The same --seed gives the same "
            "result whatever --threads."
        ),
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file (TOML)")
    parser.add_argument(
        "--trials", type=positive_int, required=True, metavar="N", help="trials to run (>= 1)"
    )
    parser.add_argument(
        "--seed",
        type=nonnegative_int,
        required=True,
        metavar="S",
        help="seed (integer >= 0): the same seed gives the same numbers",
    )
    parser.add_argument(
        "--threads", type=positive_int, metavar="T", help="worker threads (default: all cores)"
    )
    parser.add_argument(
        "--record",
        type=nonnegative_int,
        default=0,
        metavar="K",
        help="also print the first K trials (outcome, attempts, cost, ...)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relsim import simulate
    from relsim.scenario import Scenario

    scenario = Scenario.from_toml(args.scenario)
    bar = _progress_bar(args.trials)
    try:
        with warnings.catch_warnings():  # the partial result is reported below, on one line
            warnings.filterwarnings("ignore", "simulation interrupted", RuntimeWarning)
            outcome = simulate(
                scenario,
                args.trials,
                seed=args.seed,
                threads=args.threads,
                record=args.record,
                progress=None if bar is None else bar.update,
            )
    finally:
        if bar is not None:
            bar.close()

    if args.json:
        result = outcome.to_dict()
        if outcome.trajectories is not None:
            result["trajectories"] = _records(outcome.trajectories)
        print_json(result)
    else:
        print(_summary(scenario, args.scenario, outcome))
        if outcome.trajectories is not None:
            print()
            print(outcome.trajectories.to_string())
    warn_time_ignored(scenario, args.scenario, "relsim simulate")
    if outcome.partial:
        print(
            f"relsim: interrupted: the estimate covers {outcome.trials} of {args.trials} trials",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return EXIT_OK


_progress_bar = functools.partial(progress_bar, unit="trial")  # tests swap it for a fake bar

_ROWS = (
    ("success", "success"),
    ("silent_failure", "silent failure"),
    ("detected_failure", "detected failure"),
    ("expected_attempts", "attempts per trial"),
    ("expected_cost", "cost per trial"),
    ("cost_per_success", "cost per success"),
)


def _summary(scenario: Any, path: str, outcome: Any) -> str:
    title = scenario.name or path
    lines = []
    if outcome.partial:
        lines.append(f"PARTIAL RESULT: interrupted after {outcome.trials:,} trials")
    lines.append(f"{title}: {steps_text(scenario.steps)}, Monte Carlo")
    lines.append(f"trials {outcome.trials:,}   seed {outcome.seed}")
    lines.append("")
    lines.append(f"{'':20} {'estimate':>12} {'std error':>11}   95% interval")
    unit = unit_suffix(scenario)
    shares = outcome_rows(scenario, outcome)
    rows = [*shares, *_ROWS[3:]]
    if outcome.expected_utility is not None:
        rows.append(("expected_utility", "expected utility"))
    for key, label in rows:
        value = outcome_value(outcome, key)
        name = key.replace(":", "_")  # silent_by_mode:<name> is filed as silent_by_mode_<name>
        se = outcome.standard_errors.get(name, math.nan)
        low, high = outcome.intervals.get(name, (math.nan, math.nan))
        lines.append(f"{label:20} {_number(value):>12} {error_number(se):>11}   [{_number(low)}, {_number(high)}]"
                     + (unit if "cost" in key else ""))
    lines.append("")
    lines.append(f"{'per trial':20} {'p50':>12} {'p90':>11} {'p99':>11}")
    for quantity in ("attempts", "cost"):
        table = outcome.percentiles[quantity]
        lines.append(
            f"{quantity:20} {_number(table['p50']):>12} {_number(table['p90']):>11} "
            f"{_number(table['p99']):>11}" + (unit if quantity == "cost" else "")
        )
    return "\n".join(lines)


def _number(value: float) -> str:
    return plain_number(value)


def _records(frame: Any) -> list[dict[str, Any]]:
    """The trajectories as JSON-ready rows (NA becomes None)."""
    import pandas as pd

    rows = []
    for trial, row in zip(frame.index, frame.itertuples(index=False)):
        record: dict[str, Any] = {"trial": int(trial)}
        for name, value in zip(frame.columns, row):
            if name == "outcome":
                record[name] = str(value)
            elif name == "cost":
                record[name] = float(value)
            else:
                record[name] = None if pd.isna(value) else int(value)
        rows.append(record)
    return rows
