"""The ``relsim`` command line: a thin shell over the public API.

Each command lives in its own module of this package with ``add_parser(subparsers)``; the
module's ``run(args) -> int`` does the work, importing heavy modules only when it runs.
Exit status: 0 done; 1 an internal error (a bug: one line, the traceback with ``--debug`` or
``RELSIM_DEBUG=1``); 2 bad input or usage (one line on stderr), or an output the machine
cannot take (a full disk); 3 an infeasible plan; 130 interrupted; 141 the reader of the
output left (``relsim ... | head``: nothing on stderr, as a Unix tool ended by SIGPIPE; 0
when all the output fitted in the pipe before it left). Only
:class:`relsim.errors.RelsimError` is bad input (docs/model.md section 6). Warnings are held
until a command succeeds and then printed one line each (``relsim: warning: ...``), so that at
exit 2 the error is the only line.

The library's messages name Python arguments (``threshold=T``, ``plan.total``); the CLI shows
them with its flags (``--threshold T``, ``--for total``) through :func:`relsim.cli._args.as_flags`,
and an error that opens with an argument the user gave as a flag (``trials: ...`` after
``--trials``) opens with that flag (:func:`relsim.cli._args.as_typed_flag`).
"""

from __future__ import annotations

import errno
import importlib
import os
import re
import sys
import warnings
from typing import Sequence

from relsim.cli._args import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_USAGE,
    PENDING_WARNINGS,
    Parser,
    as_flags,
    as_typed_flag,
)
from relsim.errors import RelsimError

# command -> module that defines it (order is the order of --help)
COMMANDS = {
    "solve": "relsim.cli.solve",
    "table": "relsim.cli.table",
    "evaluate": "relsim.cli.evaluate",
    "simulate": "relsim.cli.simulate",
    "timeline": "relsim.cli.timeline",
    "analyze": "relsim.cli.trials",
    "compare": "relsim.cli.trials",
    "power": "relsim.cli.trials",
    "audit": "relsim.cli.audit",
    "fit": "relsim.cli.fit",
    "levers": "relsim.cli.levers",
    "report": "relsim.cli.report",
    "sweep": "relsim.cli.sweep",
}


def build_parser() -> Parser:
    parser = Parser(
        prog="relsim",
        description="How reliable will this agent be, and what must change to reach the target?",
    )
    from relsim import __version__

    parser.add_argument("--version", action="version", version=f"relsim {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="on an internal error, print the traceback too (or set RELSIM_DEBUG=1)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in dict.fromkeys(COMMANDS.values()):
        importlib.import_module(module_name).add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (the console script exits with it)."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # --debug is a top-level flag, but the hint of an internal error says "run with --debug":
    # accept it after the command too (before any "--"), where a user appends it.
    end = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:end]
    argv = [arg for i, arg in enumerate(argv) if not (i < end and arg == "--debug")]
    args = parser.parse_args(argv)
    args.debug = debug
    try:
        # Warnings wait until the command has succeeded: an error is then the only line.
        PENDING_WARNINGS.clear()
        with warnings.catch_warnings(record=True) as caught:
            status = int(args.run(args))
            sys.stdout.flush()  # a full disk or a reader that left shows here, not at exit
        _show_warnings(caught)
        return status
    except BrokenPipeError:  # `relsim ... | head`: the reader left; stop quietly, as Unix
        # tools do when SIGPIPE ends them (128 + 13). Point stdout at devnull so Python's
        # flush at exit does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except RelsimError as error:  # bad input: one line, no traceback, in the CLI's words
        print(f"relsim: error: {as_typed_flag(as_flags(str(error)), argv)}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        if error.errno not in _ENVIRONMENT_ERRORS:
            return _internal_error(error, args.debug)
        # A full disk (or a quota, a read-only file system) is the environment's, not a bug.
        _drop_unwritten_output()
        print(f"relsim: error: cannot write the output: {error.strerror}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("relsim: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # anything else is a bug in relsim: say so, and how to see it
        return _internal_error(error, args.debug)


#: Errors writing the output that come from the machine, not from relsim: no space left, a
#: quota, a file too large for the file system, a read-only file system.
_ENVIRONMENT_ERRORS = frozenset(
    code for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EFBIG, errno.EROFS)
    if code is not None
)

#: numpy's floating-point warnings ("overflow encountered in multiply"), said in our words.
_NUMPY_WARNING = re.compile(r"^(overflow|invalid value|divide by zero|underflow) encountered in ")


def _internal_error(error: BaseException, debug: bool) -> int:
    if debug or _debug_from_environment():
        import traceback

        traceback.print_exception(error, file=sys.stderr)
    print(
        f"relsim: internal error: {type(error).__name__}: {_one_line(error)} (please report; "
        "run with --debug or RELSIM_DEBUG=1 for the traceback)",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def _show_warnings(caught: list[warnings.WarningMessage]) -> None:
    """Each distinct warning once, on one line: ``relsim: warning: ...`` (no source lines):
    the command's own (``relsim.cli._args.warn``), then those raised while it ran, numpy's
    floating-point ones in our words."""
    shown = set()
    texts = [*PENDING_WARNINGS, *(_one_line(warning.message, width=300) for warning in caught)]
    PENDING_WARNINGS.clear()
    for text in texts:
        if _NUMPY_WARNING.match(text):
            text = (f"a computation went past the float range ({text}); figures shown as inf, "
                    "nan or n/a come from it")
        else:
            text = as_flags(text)
        if text not in shown:
            shown.add(text)
            print(f"relsim: warning: {text}", file=sys.stderr)


def _drop_unwritten_output() -> None:
    """After stdout failed, point it at devnull so Python's flush at exit does not fail again."""
    try:
        sys.stdout.flush()
    except OSError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # pragma: no cover - stdout is not a real file
            pass


def _debug_from_environment() -> bool:
    return os.environ.get("RELSIM_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


def _one_line(error: BaseException | Warning | str, width: int = 200) -> str:
    """The exception's message on one line, cut to ``width`` characters."""
    text = " ".join(str(error).split())
    return text if len(text) <= width else text[: width - 3] + "..."
