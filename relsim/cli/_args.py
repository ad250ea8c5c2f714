"""Argument types and the parser class shared by the commands."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from typing import Any, NoReturn, Sequence

from relsim.results import jsonable

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INFEASIBLE = 3
#: The reader of the output left (a broken pipe): 128 + SIGPIPE, as a Unix tool it ends.
EXIT_BROKEN_PIPE = 141


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``relsim: error: ...`` on stderr and exit 2) and no
    abbreviated flags: ``--mis`` is an error, not ``--miss`` (nor, once a flag ``--missing``
    is added, an ambiguity that breaks a user's script). Subparsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


#: How library messages name what the command line gives as a flag or a command (the library
#: speaks Python, the CLI speaks flags), and the words the CLI shows instead: a keyword argument
#: ``threshold=T``, a planner ``plan.total`` and an engine ``relsim.simulate``.
_SPOKEN = (
    (re.compile(r"(?<![\w.])(threshold|scorer|grader|truth)=(?=\w)"), r"--\1 "),
    (
        re.compile(
            r"(?<![\w.])plan\.(retries|total|allocation|verifier|p|checkpoints|samples|escalation)\b"
        ),
        r"--for \1",
    ),
    (re.compile(r"(?<![\w.])relsim\.(evaluate|simulate|sweep)\b(?!_)"), r"'relsim \1'"),
    (re.compile(r"(?<![\w.])relsim\.simulate_timeline\b"), "'relsim timeline'"),
    (re.compile(r"\bthe to_dict\(\) of relsim\.evalstats\.audit, or its JSON\b"),
     "the JSON of 'relsim audit --json'"),
    (re.compile(r"\bthe to_dict\(\) of relsim\.evalstats\.fit_difficulty, or its JSON\b"),
     "the JSON of 'relsim fit --json'"),
)


def as_flags(message: str) -> str:
    """A library message in the command line's words: ``threshold=T`` becomes
    ``--threshold T``, ``plan.total`` becomes ``--for total``, ``relsim.simulate`` becomes
    ``'relsim simulate'``. Applied to every library text the CLI shows (errors, reasons)."""
    for pattern, flag in _SPOKEN:
        message = pattern.sub(flag, message)
    return message


#: A message that opens with a Python argument's name: ``trials: must be ...``, ``rate a/b: must
#: be ...`` (not a file's name: ``seed: cannot read``, ``seed: steps: must be ...``).
_LEADING_NAME = re.compile(r"[a-z][a-z0-9_]*(?=(?: [^:]*)?: must be )")
#: Short spellings of flags whose Python argument has the long one's name.
_SHORT_FLAGS = {"out": "-o", "output": "-o"}


def as_typed_flag(message: str, argv: Sequence[str]) -> str:
    """``message`` with its leading Python argument named as the flag the user typed.

    The library checks what the parser cannot (``trials`` in 1..2**62, ``k`` at most the
    trials of a task, a ``report`` file's suffix) and names the argument (``trials: must be
    ...``); when the command line holds that argument's flag (``--trials``, ``-o`` for
    ``out``), the user reads the flag. A name the user did not type is left as it is.

    Examples
    --------
    >>> as_typed_flag("trials: must be an integer in 1..2**62, got 10**30", ["--trials", "1e30"])
    '--trials: must be an integer in 1..2**62, got 10**30'
    >>> as_typed_flag("difference_sd: must be a number >= 0, got inf", ["--difference-sd=inf"])
    '--difference-sd: must be a number >= 0, got inf'
    >>> as_typed_flag("trials: must be at least 1", ["--seed", "1"])
    'trials: must be at least 1'
    """
    match = _LEADING_NAME.match(message)
    if match is None:
        return message
    name = match.group()
    typed = {arg.split("=", 1)[0] for arg in argv if arg.startswith("-")}
    for flag in (f"--{name.replace('_', '-')}", _SHORT_FLAGS.get(name)):
        if flag in typed:
            return flag + message[match.end():]
    return message


def ranged(name: str, convert, check, allowed: str):
    """An argparse type: ``convert`` the text, then require ``check``; errors say ``allowed``."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}") from None
        if not check(value):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return value

    parse.__name__ = name
    return parse


def finite_float_value(text: str) -> float:
    """``float(text)``, refusing NaN."""
    value = float(text)
    if math.isnan(value):
        raise ValueError(text)
    return value


positive_int = ranged("positive_int", int, lambda v: v >= 1, "an integer >= 1")
#: The closed forms' integer range (int64 arithmetic stays exact): checked here, before numpy.
MAX_COUNT = 2**62
step_count = ranged(
    "step_count", int, lambda v: 1 <= v <= MAX_COUNT, "an integer in 1..2**62"
)
nonnegative_int = ranged("nonnegative_int", int, lambda v: v >= 0, "an integer >= 0")
probability = ranged("probability", finite_float_value, lambda v: 0.0 <= v <= 1.0, "a number in [0, 1]")
open_probability = ranged(
    "open_probability", finite_float_value, lambda v: 0.0 < v < 1.0, "a number in (0, 1)"
)
target = ranged("target", finite_float_value, lambda v: 0.0 < v <= 1.0, "a number in (0, 1]")
positive_float = ranged("positive_float", finite_float_value, lambda v: v > 0, "a number > 0")
nonnegative_float = ranged("nonnegative_float", finite_float_value, lambda v: v >= 0, "a number >= 0")
finite_float = ranged("finite_float", finite_float_value, math.isfinite, "a finite number")


def int_list(text: str, high: int | None = None) -> list[int]:
    """A comma-separated list of integers >= 1 (and <= ``high``), like ``1,3,5``."""
    allowed = "integers >= 1" if high is None else f"integers in 1..{_power_text(high)}"
    message = f"must be a comma-separated list of {allowed}, got {text!r}"
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(message) from None
    if not values or min(values) < 1 or (high is not None and max(values) > high):
        raise argparse.ArgumentTypeError(message)
    return values


def step_list(text: str) -> list[int]:
    """A comma-separated list of step counts in 1..2**62."""
    return int_list(text, MAX_COUNT)


def _power_text(high: int) -> str:
    return "2**62" if high == MAX_COUNT else str(high)


#: Warnings a command gave (``warn``), printed by ``relsim.cli.main`` once it has succeeded.
PENDING_WARNINGS: list[str] = []


def safe_text(text: Any) -> str:
    r"""``text`` as a terminal shows it safely: characters that are not printable (a line
    break, an escape that recolours the terminal) as their backslash escapes. Task ids,
    categories and column names come from the user's files.

    Examples
    --------
    >>> print(safe_text("task-1"), safe_text("a\x1b[31mb"), safe_text("caf\u00e9\n"))
    task-1 a\x1b[31mb café\n
    """
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def warn(message: str) -> None:
    """A ``relsim: warning: ...`` line for stderr, printed when the command has succeeded: a
    command that then fails prints its error line alone."""
    PENDING_WARNINGS.append(message)


def unit_suffix(scenario: Any) -> str:
    """What follows a cost in readable output: ``" USD"`` when the scenario names its unit
    (``[cost] unit``), else nothing."""
    unit = getattr(getattr(scenario, "cost", None), "unit", "")
    return f" {unit}" if unit else ""


def print_json(obj: Any) -> None:
    print(json.dumps(jsonable(obj), indent=2, allow_nan=False))


def progress_bar(total: int | None, unit: str = "trial") -> Any:
    """A tqdm bar on stderr when stderr is a terminal (``total`` None: a count without an
    end); None when piped or redirected."""
    isatty = getattr(sys.stderr, "isatty", None)
    if isatty is None or not isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, unit_scale=True, file=sys.stderr, leave=False)


# ------------------------------------------------------------------- numbers for a terminal
#: Below this a number is shown in scientific notation after all: 1e-10 in plain digits is
#: a row of zeros nobody counts.
_PLAIN_BELOW = 1e-10


def plain_number(value: float, digits: int = 6) -> str:
    """``value`` to ``digits`` significant figures as ``%g`` shows it, but in plain digits
    where ``%g`` would switch to scientific notation: ``0.0000384131``, not ``3.84131e-05``
    (an interval's bound beside ``0.0236188``), ``1090730``, not ``1.09073e+06``; ``inf``,
    ``n/a`` (NaN) and ``0`` as they are."""
    if not math.isfinite(value):
        return "inf" if value == math.inf else ("-inf" if value == -math.inf else "n/a")
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    if "e" not in text or abs(value) < _PLAIN_BELOW:
        return text
    exponent = math.floor(math.log10(abs(value)))
    if exponent >= digits:  # past the significant figures: whole units
        return f"{value:.0f}"
    fixed = f"{value:.{digits - 1 - exponent}f}"
    return fixed.rstrip("0").rstrip(".") if "." in fixed else fixed


def error_number(value: float) -> str:
    """A standard error to 3 significant figures, in plain digits (``0.000489``, ``67.0``,
    ``577``): the digits past them are noise, and six of them would claim a precision the
    error itself does not have."""
    if not math.isfinite(value) or value == 0 or abs(value) < _PLAIN_BELOW:
        return plain_number(value, 3)
    exponent = math.floor(math.log10(abs(value)))
    return f"{value:.{max(0, 2 - exponent)}f}"


def status_line(words: str) -> Any:
    """Show ``words`` on stderr while a long run with no count to show goes on, when stderr
    is a terminal (piped or redirected, nothing), and return the function that clears them."""
    isatty = getattr(sys.stderr, "isatty", None)
    if isatty is None or not isatty():
        return lambda: None
    sys.stderr.write(words)
    sys.stderr.flush()
    return lambda: (sys.stderr.write("\r\x1b[K"), sys.stderr.flush())


# ------------------------------------------------------------------- outcome summaries
def steps_text(steps: int) -> str:
    return "1 step" if steps == 1 else f"{steps} steps"


def outcome_rows(scenario: Any, outcome: Any) -> list[tuple[str, str]]:
    """The shares a summary prints, as (key, label): section 3's three, the infrastructure
    failures when the scenario has faults, and each failure mode's silent share."""
    rows = [("success", "success"), ("silent_failure", "silent failure")]
    for name in outcome.silent_by_mode or {}:
        rows.append((f"silent_by_mode:{name}", f"  {name}"))
    rows.append(("detected_failure", "detected failure"))
    if scenario.faults is not None:
        rows.append(("infra_failure", "infra failure"))
    return rows


def outcome_value(outcome: Any, key: str) -> float:
    """The value of a row of :func:`outcome_rows`."""
    if key.startswith("silent_by_mode:"):
        return float(outcome.silent_by_mode[key.split(":", 1)[1]])
    return float(getattr(outcome, key))
