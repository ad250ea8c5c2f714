"""Refuse, at once, a local cluster started from a script's unguarded top level.

A dask ``LocalCluster`` starts its workers as new Python processes (``multiprocessing``'s
*spawn*), and each one imports the main script again before it can work. A script that calls
``relsim.sweep(..., workers=N)`` at its top level, outside ``if __name__ == "__main__":``,
would start the sweep again in every worker: Python stops that with a long bootstrap
traceback about "the main module" and "freeze_support", from each worker. This module finds
that case before any process starts and says so in one line.

The rule is Python's own, from the multiprocessing programming guidelines ("safe importing
of main module"): a worker runs the main module's top-level code again when the main module
is a script file (or a module run with ``-m``, except a package's ``__main__``), not in an
interactive session, ``python -c`` or a notebook. The call is unguarded when the frame of the
main module's top-level code that leads to it is not inside an ``if __name__ ==
"__main__":`` block of the script's source.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
from types import FrameType

from relsim.errors import RelsimError

__all__ = ["check_main_guard"]

MESSAGE = (
    "workers: a local cluster's worker processes import the main script again, so a script "
    "must call relsim.sweep(..., workers=N) under 'if __name__ == \"__main__\":' "
    "({where}); add that guard, or leave workers out to run the points in this process"
)


def check_main_guard() -> None:
    """Raise :class:`relsim.errors.RelsimError` when this call comes from the top level of a
    main script that worker processes would run again, outside its ``__main__`` guard."""
    main = sys.modules.get("__main__")
    if main is None or not _runs_again(main):
        return
    path = getattr(main, "__file__", None)
    frame = _top_level_frame(main.__dict__)
    if frame is None or path is None:
        return  # not called from the script's own top level (a function the guard called...)
    line = frame.f_lineno
    source_path = frame.f_code.co_filename
    if os.path.abspath(source_path) != os.path.abspath(path):
        return
    guarded = _guarded_lines(source_path)
    if guarded is None or any(first <= line <= last for first, last in guarded):
        return  # a source that cannot be read is given the benefit of the doubt
    raise RelsimError(MESSAGE.format(where=f"{os.path.basename(path)}, line {line}"))


def _runs_again(main: object) -> bool:
    """Whether a spawned worker would run the main module's top-level code again."""
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", None)
    if name is not None:
        return not (name == "__main__" or name.endswith(".__main__"))
    path = getattr(main, "__file__", None)
    return path is not None and os.path.splitext(os.path.basename(path))[0] != "ipython"


def _top_level_frame(main_globals: dict) -> FrameType | None:
    """The frame running the main module's top-level code, when it is on the stack."""
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_globals is main_globals and frame.f_code.co_name == "<module>":
            return frame
        frame = frame.f_back
    return None


def _guarded_lines(path: str) -> list[tuple[int, int]] | None:
    """The line ranges of the ``if __name__ == "__main__":`` blocks of the source at ``path``
    (None when it cannot be read or parsed)."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None
    blocks = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_test(node.test) and node.body:
            blocks.append((node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno))
    return blocks


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    texts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(texts) == 1
