"""``relsim table``: the compounding table ``p**n`` (end-to-end success of ``n`` steps)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from relsim.cli._args import EXIT_OK, print_json, step_list

#: The lesson's grids (p 0.9, 0.95, 0.99; n 5, 10, 20, 50) plus a few more.
DEFAULT_P = (0.8, 0.9, 0.95, 0.99, 0.999)
DEFAULT_STEPS = (5, 10, 20, 25, 50, 100)


def probability_list(text: str) -> list[float]:
    """A comma-separated list of probabilities in [0, 1], like ``0.9,0.95``."""
    message = f"must be a comma-separated list of numbers in [0, 1], got {text!r}"
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(message) from None
    if not values or not all(0.0 <= v <= 1.0 for v in values):  # NaN fails too
        raise argparse.ArgumentTypeError(message)
    return values


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "table",
        help="the compounding table p**n",
        description="End-to-end success p**n of n independent steps that each succeed with p.",
    )
    parser.add_argument(
        "--p",
        type=probability_list,
        default=list(DEFAULT_P),
        metavar="LIST",
        help=f"per-step successes (default {','.join(map(str, DEFAULT_P))})",
    )
    parser.add_argument(
        "--steps",
        type=step_list,
        default=list(DEFAULT_STEPS),
        metavar="LIST",
        help=f"step counts (default {','.join(map(str, DEFAULT_STEPS))})",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relsim.formulas import compound

    success = [compound(p, args.steps).tolist() for p in args.p]
    if args.json:
        print_json({"p": args.p, "steps": args.steps, "success": success})
        return EXIT_OK
    header = ["p \\ n", *(str(n) for n in args.steps)]
    rows = [[f"{p:g}", *(_cell(x) for x in row)] for p, row in zip(args.p, success)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("end-to-end success p**n of n steps that each succeed with p")
    for r in [header, *rows]:
        print("  ".join(cell.rjust(w) for cell, w in zip(r, widths)))
    return EXIT_OK


def _cell(x: float) -> str:
    if x == 0.0 or x >= 0.0005 or not math.isfinite(x):
        return f"{x:.3f}"
    return f"{x:.1e}"
