"""The ``relsim`` command line: a thin shell over the public API.

Each command lives in its own module of this package with ``add_parser(subparsers)``; the
module's ``run(args) -> int`` does the work, importing heavy modules only when it runs.
Exit status: 0 done; 1 an internal error (a bug: one line, the traceback with ``--debug`` or
``RELSIM_DEBUG=1``); 2 bad input or usage (one line on stderr); 3 an infeasible plan; 130
interrupted; 141 the reader of the output left (``relsim ... | head``: nothing on stderr, as
a Unix tool ended by SIGPIPE; 0 when all the output fitted in the pipe before it left). Only :class:`relsim.errors.RelsimError` is bad input (docs/model.md section 6).

The library's messages name Python arguments (``threshold=T``, ``plan.total``); the CLI shows
them with its flags (``--threshold T``, ``--for total``) through :func:`relsim.cli._args.as_flags`.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Sequence

from relsim.cli._args import EXIT_BROKEN_PIPE, EXIT_INTERNAL, EXIT_USAGE, Parser, as_flags
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
        status = int(args.run(args))
        sys.stdout.flush()  # a reader that left is found here, not in the flush at exit
        return status
    except BrokenPipeError:  # `relsim ... | head`: the reader left; stop quietly, as Unix
        # tools do when SIGPIPE ends them (128 + 13). Point stdout at devnull so Python's
        # flush at exit does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except RelsimError as error:  # bad input: one line, no traceback, in the CLI's words
        print(f"relsim: error: {as_flags(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("relsim: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # anything else is a bug in relsim: say so, and how to see it
        if args.debug or _debug_from_environment():
            import traceback

            traceback.print_exc(file=sys.stderr)
        print(
            f"relsim: internal error: {type(error).__name__}: {_one_line(error)} (please report; "
            "run with --debug or RELSIM_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _debug_from_environment() -> bool:
    return os.environ.get("RELSIM_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


def _one_line(error: BaseException, width: int = 200) -> str:
    """The exception's message on one line, cut to ``width`` characters."""
    text = " ".join(str(error).split())
    return text if len(text) <= width else text[: width - 3] + "..."
