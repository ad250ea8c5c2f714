"""What the commands share about time: the warning that a command ignores the time tables
that change outcomes (docs/model.md section 7), and the words of a target's verdict."""

from __future__ import annotations

import sys
from typing import Any

#: A target's words: its quantity, the side it is met from, the unit.
TARGET_WORDS = {
    "success": ("success", ">=", ""),
    "duration_mean": ("mean duration", "<=", " s"),
    "duration_p50": ("duration p50", "<=", " s"),
    "duration_p90": ("duration p90", "<=", " s"),
    "duration_p99": ("duration p99", "<=", " s"),
    "timeout": ("timeout share", "<=", ""),
    "throughput_per_hour": ("throughput per hour", ">=", ""),
    "cost_per_success": ("cost per success", "<=", ""),
}


def warn_time_ignored(scenario: Any, path: str, command: str) -> None:
    """One line on stderr when ``scenario`` has time tables that change how trials end (a
    deadline, crashes) and ``command`` judges it without time: its answer is the agent's
    alone. Printed once the command has its answer, so never with an error (exit 2)."""
    from relsim.scenario import time_model

    keys = time_model(scenario).changes_outcomes
    if not keys:
        return
    names = " and ".join(keys)
    print(
        f"relsim: warning: {path} sets {names}, which end trials early in time; '{command}' "
        "ignores them (the agent's outcome alone): 'relsim timeline' gives the outcome in time",
        file=sys.stderr,
    )


def target_lines(targets: Any) -> list[str]:
    """One line per target: the quantity, the target, the verdict, the estimate and interval."""
    lines = []
    for key, verdict in targets.items():
        words, side, unit = TARGET_WORDS[key]
        shown = {"met": "met", "missed": "MISSED", "undecided": "UNDECIDED"}[verdict["status"]]
        estimate, interval = verdict["estimate"], verdict["ci"]
        detail = "no estimate" if estimate is None else f"{number(estimate)}{unit}"
        if interval is not None:
            detail += f", 95% interval {number(interval[0])} to {number(interval[1])}"
        lines.append(f"{words} {side} {number(verdict['target'])}{unit}: {shown} ({detail})")
    return lines


def number(value: float | None) -> str:
    """A figure for the terminal: 6 significant digits in plain notation
    (:func:`relsim.cli._args.plain_number`), ``-`` for none, ``inf``."""
    from relsim.cli._args import plain_number

    if value is None:
        return "-"
    return plain_number(value)
