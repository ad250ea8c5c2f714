"""``relsim sweep``: judge every design of a grid file, resumably, here or on a dask cluster.

::

    relsim sweep GRID.toml -o OUT.parquet|OUT.csv [--workers N | --scheduler ADDRESS]
                 [--objectives success,cost_per_success,duration_p90] [--json]

Writes one row per point to OUT (``relsim.sweep``) and prints the frontier: the designs no
other beats on the ``--objectives`` (default success and cost per success) beyond its noise
(:func:`relsim.plan.frontier`: a stochastic sweep's standard errors decide what "beyond its
noise" is; ``--json``: ``{"points", "computed", "skipped", "out", "objectives", "frontier"}``,
the frontier's point numbers). Finished points are kept in
``OUT.journal.jsonl`` as they finish; the same command run again after an interruption
computes only the missing ones. A progress bar goes to stderr when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any

from relsim.cli._args import EXIT_OK, positive_int, print_json, progress_bar
from relsim.errors import RelsimError

#: Exit status of a sweep stopped by Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="judge every design of a grid file; the cost-reliability frontier",
        description=(
            "Build every point of a grid file (a base scenario and axes of dotted scenario "
            "keys), judge each with the grid's method (exact, simulate or timeline), write one row per "
            "point to OUT (.parquet or .csv) and print the frontier of cost per success "
            "against success. Interrupted, the same command resumes where it stopped."
        ),
    )
    parser.add_argument("grid", metavar="GRID", help="a grid file (TOML)")
    parser.add_argument("-o", "--out", required=True, metavar="OUT",
                        help="where to write the rows: a .parquet or .csv file")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=positive_int, metavar="N",
                       help="run on a local dask cluster of N worker processes")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="run on an existing dask cluster (e.g. tcp://host:8786)")
    parser.add_argument(
        "--objectives", type=_objectives, default=("success", "cost_per_success"),
        metavar="LIST",
        help="columns the frontier compares, comma-separated (default success,cost_per_success; "
        "success and throughput are better larger, the rest smaller), e.g. "
        "success,cost_per_success,duration_p90",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON summary object")
    parser.set_defaults(run=run)


def _objectives(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of columns, got {text!r}")
    return names


def run(args: argparse.Namespace) -> int:
    from relsim.plan import frontier
    from relsim.sweeps import Grid, sweep
    from relsim.sweeps.store import journal_path

    from relsim.sweeps.methods import method

    grid = Grid.from_toml(args.grid)
    objectives = tuple(getattr(args, "objectives", ("success", "cost_per_success")))
    known = method(grid.method).keys
    unknown = [name for name in objectives if name not in known]
    if unknown:
        article = "an" if grid.method[:1] in ("a", "e", "i", "o", "u") else "a"  # an exact sweep
        raise RelsimError(f"--objectives: must be columns of {article} {grid.method} sweep "
                          f"({', '.join(known)}), got {', '.join(unknown)}")
    bar = _progress_bar(len(grid))
    try:
        frame = sweep(grid, args.out, workers=args.workers, scheduler=args.scheduler,
                      progress=None if bar is None else bar.update)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
        print(f"relsim: interrupted: finished points are kept in {journal_path(args.out)}; "
              "run the same command again to compute the rest", file=sys.stderr)
        return EXIT_INTERRUPTED
    if bar is not None:
        bar.close()
    summary = frame.attrs["sweep"]
    best = frontier(frame, objectives=objectives)
    if args.json:
        print_json({**summary, "objectives": list(objectives),
                    "frontier": [int(point) for point in best["point"]]})
        return EXIT_OK
    print(f"{summary['points']} points ({grid.method}): computed {summary['computed']}, "
          f"skipped {summary['skipped']} already in the journal; rows in {summary['out']}")
    errors = [f"{name}_se" for name in objectives if f"{name}_se" in frame.columns]
    columns = list(dict.fromkeys(["point", *grid.axis_names, *objectives, *errors]))
    words = ", ".join(name.replace("_", " ") for name in objectives)
    noise = " beyond their noise (1.96 standard errors of a difference)" if errors else ""
    print()
    print(f"frontier: {len(best)} of {len(frame)} designs are not beaten on {words}{noise}")
    print(best[columns].to_string(index=False))
    return EXIT_OK


_progress_bar = functools.partial(progress_bar, unit="point")
