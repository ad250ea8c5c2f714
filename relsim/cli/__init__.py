"""The ``relsim`` command line: a thin shell over the public API.

Each command lives in its own module of this package with ``add_parser(subparsers)``; the
module's ``run(args) -> int`` does the work, importing heavy modules only when it runs.
Exit status: 0 done; 2 bad input or usage (one line on stderr); 3 an infeasible plan.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Sequence

from relsim.cli._args import EXIT_USAGE, Parser

# command -> module that defines it (order is the order of --help)
COMMANDS = {
    "solve": "relsim.cli.solve",
    "table": "relsim.cli.table",
    "evaluate": "relsim.cli.evaluate",
    "simulate": "relsim.cli.simulate",
    "analyze": "relsim.cli.trials",
    "compare": "relsim.cli.trials",
    "power": "relsim.cli.trials",
    "sweep": "relsim.cli.sweep",
}


def build_parser() -> Parser:
    parser = Parser(
        prog="relsim",
        description="How reliable will this agent be, and what must change to reach the target?",
    )
    from relsim import __version__

    parser.add_argument("--version", action="version", version=f"relsim {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in dict.fromkeys(COMMANDS.values()):
        module = _load(module_name)
        if module is not None:
            module.add_parser(subparsers)
    return parser


def _load(module_name: str):
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:  # a command whose module has not landed yet
        if error.name == module_name:
            return None
        raise


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (the console script exits with it)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except BrokenPipeError:  # `relsim ... | head`: the reader left; stop quietly
        # Point stdout at devnull so Python's flush at exit does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, OSError) as error:  # bad input: one line, no traceback
        print(f"relsim: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("relsim: interrupted", file=sys.stderr)
        return 130
