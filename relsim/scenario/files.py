"""Reading a TOML file safely: the one reader of scenario files, sweep grids and their bases;
and :func:`toml_text`, the one writer (a scenario's ``to_dict`` as a file).

A file is read only when it is a regular file (a FIFO would block for ever, ``/dev/zero``
never ends), of at most ``MAX_FILE_BYTES``, in UTF-8, with arrays and inline tables nested at
most ``MAX_NESTING`` deep (deeper nesting would exhaust the parser's recursion); each refusal
is a one-line error naming the file.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

from relsim.errors import RelsimError, show

__all__ = ["MAX_FILE_BYTES", "MAX_NESTING", "read_toml", "toml_text"]

#: The largest file read (a 100,000-step scenario with four per-step lists is ~10 MiB).
MAX_FILE_BYTES = 32 * 2**20
#: The deepest nesting of arrays and inline tables (the formats need 2).
MAX_NESTING = 32

_KINDS = (
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def read_toml(
    path: str | Path, what: str = "scenario file", error: type[RelsimError] = RelsimError
) -> dict[str, Any]:
    """The parsed TOML of ``path``, or ``error`` naming the file and what is wrong with it.

    Syntax errors are reported with their line.
    """
    import tomllib

    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
        raise error(f"file: must be the name of a {what} (str or os.PathLike), got {show(path)}")
    if not os.fspath(path):  # Path("") is the current folder
        raise error(f"file: must be the name of a {what}, got ''")
    path = Path(path)
    limit = f"must be a {what} of at most {MAX_FILE_BYTES // 2**20} MiB"
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        raise error(f"{path}: cannot read: {err.strerror or err}") from None
    if stat.S_ISDIR(mode):
        raise error(f"{path}: cannot read: is a directory, not a {what}")
    for test, kind in _KINDS:
        if test(mode):
            raise error(f"{path}: {limit}, got a {kind}")
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise error(f"{path}: cannot read: {err.strerror or err}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise error(f"{path}: {limit}, got a larger file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise error(
            f"{path}: not UTF-8 text (byte {err.object[err.start]:#04x} at offset "
            f"{err.start}); TOML files must be UTF-8"
        ) from None
    _check_nesting(text, path, error)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise error(f"{path}: TOML syntax error: {err}") from None
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        reason = str(err).split(";")[0]  # not Python's advice on raising its limit
        raise error(f"{path}: cannot read a value: {reason}") from None
    except RecursionError:  # pragma: no cover - _check_nesting keeps it out
        raise error(f"{path}: values nested too deeply") from None


_TOKENS = re.compile(
    r""" '''[\s\S]*?''' | \"\"\"[\s\S]*?\"\"\" | "(?:\\.|[^"\\\n])*" | '[^'\n]*'
       | \#[^\n]* | [\[\]{}\n] """,
    re.VERBOSE,
)


def _check_nesting(text: str, path: Path, error: type[RelsimError]) -> None:
    """Refuse arrays or inline tables nested deeper than ``MAX_NESTING``.

    A bracket count that skips strings and comments: an upper bound on the nesting the
    parser would recurse into (table headers like ``[[a]]`` count 2, well below the limit).
    """
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return
    depth = 0
    line = 1
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_NESTING:
                raise error(
                    f"{path} line {line}: must nest arrays and inline tables at most "
                    f"{MAX_NESTING} deep, got deeper"
                )
        elif token in "]}":
            depth = max(0, depth - 1)
        elif token == "\n":
            line += 1
        else:
            line += token.count("\n")


def toml_text(data: dict[str, Any]) -> str:
    """``data`` (a scenario's ``to_dict``: text, numbers, booleans, lists, tables and lists of
    tables) as TOML that :func:`read_toml` reads back equal.

    Top-level values first, then each table as ``[name]`` and each list of tables as
    ``[[name]]`` entries; a table inside a table is an inline table. Floats are written
    with Python's shortest round-trip ``repr``.

    Examples
    --------
    >>> print(toml_text({"steps": 1, "verifier": {"miss": 0.1},
    ...                  "classes": [{"weight": 0.5, "p": 1.0}]}), end="")
    steps = 1
    <BLANKLINE>
    [verifier]
    miss = 0.1
    <BLANKLINE>
    [[classes]]
    weight = 0.5
    p = 1.0
    """
    lines = [f"{_key(key)} = {_value(value)}" for key, value in data.items()
             if not _is_table(value) and not _is_table_list(value)]
    for key, value in data.items():
        if _is_table(value):
            lines += ["", f"[{_key(key)}]"]
            lines += [f"{_key(k)} = {_value(v)}" for k, v in value.items()]
        elif _is_table_list(value):
            for entry in value:
                lines += ["", f"[[{_key(key)}]]"]
                lines += [f"{_key(k)} = {_value(v)}" for k, v in entry.items()]
    return "\n".join(lines).lstrip("\n") + "\n"


def _is_table(value: Any) -> bool:
    return isinstance(value, dict)


def _is_table_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(
        isinstance(entry, dict) for entry in value)


def _numpy_bool() -> type:
    """numpy's boolean type, without importing numpy when it is not loaded."""
    import sys

    numpy = sys.modules.get("numpy")
    return numpy.bool_ if numpy is not None else bool


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    import json

    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value: Any) -> str:
    """One TOML value (JSON's string escapes are TOML's basic-string escapes)."""
    import json
    import math
    import numbers

    if isinstance(value, (bool, _numpy_bool())):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise RelsimError(f"value: must be a finite number to write as TOML, got {value!r}")
        return repr(float(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise RelsimError(f"value: must be text, a number, a list or a table to write as TOML, "
                      f"got {type(value).__name__}")
