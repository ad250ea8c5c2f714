"""The trials frame and its checks, shared by every reader (CSV, JSONL, DataFrames, Inspect logs).

Private: :mod:`relsim.evalstats.readers` and :mod:`relsim.evalstats.inspect_logs` turn their
input into text cells, one array per column, and :func:`check_trials` checks them and builds
the one trials frame every estimator reads. Every problem is one :class:`TrialDataError`
naming the file, the line and the column: ``<file> line N: <column>: must be <allowed>, got
<value>``.
"""

from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from relsim.errors import invalid, show
from relsim.evalstats._common import TrialDataError, is_real

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_STEPS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "check_file",
    "check_trials",
    "to_float",
]

REQUIRED_COLUMNS = ("task", "trial", "success")
OPTIONAL_COLUMNS = ("cost", "steps")


#: The longest trial file read (bytes): larger ones are refused before reading, so a wrong path
#: (a disk image, ``/dev/zero``) cannot exhaust memory or run forever.
MAX_FILE_BYTES = 1 << 30
#: The largest ``steps`` value: the scenario's limit on steps (docs/model.md section 4).
MAX_STEPS = 100_000
# a column this reader adds (each row's line): a column of the input by that name is ignored
_RESERVED = ("line",)


def check_trials(
    name: str,
    where: str,
    columns: list[str],
    cells: list[np.ndarray],
    lines: np.ndarray,
    threshold: float | None,
) -> pd.DataFrame:
    """Check text cells (one array per column) and build the trials frame of
    :func:`read_trials`; errors read ``<name> <where> <line>: <column>: ...``."""
    import pandas as pd

    if threshold is not None and not (is_real(threshold) and math.isfinite(threshold)):
        raise invalid("threshold", "a finite number", threshold)
    missing = [column for column in REQUIRED_COLUMNS if column not in columns]
    if missing:
        found = ", ".join(repr(c) for c in columns) or "none"
        hints = [
            f"{close[0]!r} for {m!r}?"
            for m in missing
            if (close := difflib.get_close_matches(m, columns, n=1, cutoff=0.7))
        ]
        hint = f"; did you mean {' '.join(hints)}" if hints else ""
        raise TrialDataError(
            f"{name}: columns: must include task, trial and success (optional cost, steps), "
            f"got {found} (missing {', '.join(repr(m) for m in missing)}{hint})"
        )
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:
        raise TrialDataError(
            f"{name}: columns: must name {repeated[0]!r} once, "
            f"got it {columns.count(repeated[0])} times"
        )
    if len(lines) == 0:
        raise TrialDataError(f"{name}: rows: must be at least one trial, got none")

    def fail(mask: np.ndarray, column: str, allowed: str, got: Callable[[int], str]) -> None:
        """Raise for the first row in ``mask`` (``got(row)`` shows what it holds), saying how
        many more rows are like it."""
        if mask.any():
            first = int(np.flatnonzero(mask)[0])
            count = int(mask.sum())
            more = f" ({count - 1} more row{'s' if count > 2 else ''} like it)" if count > 1 else ""
            raise TrialDataError(
                f"{name} {where} {lines[first]}: {column}: must be {allowed}, "
                f"got {got(first)}{more}"
            )

    def cell(values: np.ndarray) -> Callable[[int], str]:
        return lambda i: show(values[i])

    text = dict(zip(columns, cells))
    for column in REQUIRED_COLUMNS + tuple(c for c in OPTIONAL_COLUMNS if c in text):
        empty = np.asarray(text[column] == "", dtype=bool)
        if empty.any():
            fail(empty, column, "a value in every row", lambda i: "nothing")

    result = pd.DataFrame({"task": text["task"].astype(str), "trial": text["trial"].astype(str)})
    success_text = text["success"]
    if threshold is None:
        lowered = np.char.lower(success_text.astype(str))
        numeric = to_float(lowered)
        success = np.where(lowered == "true", 1.0, np.where(lowered == "false", 0.0, numeric))
        fail(
            ~np.isin(success, (0.0, 1.0)),
            "success",
            "0/1 or true/false (or a score with threshold=T)",
            cell(success_text),
        )
    else:
        score = to_float(success_text.astype(str))
        fail(
            ~np.isfinite(score),
            "success",
            "a numeric score with threshold=T",
            cell(success_text),
        )
        success = (score >= threshold).astype(float)
    result["success"] = success.astype(np.int64)

    if "cost" in text:
        cost = to_float(text["cost"].astype(str))
        fail(~(cost >= 0) | ~np.isfinite(cost), "cost", "a number >= 0", cell(text["cost"]))
        result["cost"] = cost
    if "steps" in text:
        steps = to_float(text["steps"].astype(str))
        fail(
            ~((steps > 0) & (steps <= MAX_STEPS)),
            "steps",
            f"a number in (0, {MAX_STEPS}]",
            cell(text["steps"]),
        )
        result["steps"] = steps
    metrics: list[str] = [c for c in ("cost", "steps") if c in text]
    text_columns, ignored = [], []
    for column in columns:
        if column in REQUIRED_COLUMNS or column in OPTIONAL_COLUMNS:
            continue
        if column in _RESERVED or column == "":
            ignored.append(column)
            continue
        values = text[column].astype(str)
        filled = values != ""
        numbers = to_float(values)
        if filled.any() and np.all(~np.isnan(numbers[filled])):
            fail(np.isinf(numbers), column, "a finite number", cell(text[column]))
            result[column] = numbers
            metrics.append(column)
        else:
            result[column] = values
            text_columns.append(column)
    result["line"] = lines
    result.attrs["relsim_trials"] = True
    result.attrs["relsim_source"] = name
    result.attrs["relsim_metrics"] = metrics
    result.attrs["relsim_text"] = text_columns
    result.attrs["relsim_ignored"] = ignored

    duplicated = result.duplicated(["task", "trial"], keep="first").to_numpy()
    if duplicated.any():
        first = int(np.flatnonzero(duplicated)[0])
        task, trial = result["task"].iat[first], result["trial"].iat[first]
        earlier = result["line"][(result["task"] == task) & (result["trial"] == trial)].iat[0]
        fail(
            duplicated,
            "(task, trial)",
            "a pair not seen before",
            lambda i: f"{show(task)}, {show(trial)} again (first seen at {where} {earlier})",
        )
    return result


def check_file(path: Path) -> None:
    """Refuse what is not a regular, readable file of at most :data:`MAX_FILE_BYTES`."""
    import stat

    try:
        info = path.stat()
    except FileNotFoundError:
        raise TrialDataError(f"{path}: file: must exist, got no such file") from None
    except OSError as error:
        raise TrialDataError(
            f"{path}: file: must be readable, got {error.strerror or error}"
        ) from None
    if stat.S_ISDIR(info.st_mode):
        raise TrialDataError(f"{path}: file: must exist, got a directory")
    if not stat.S_ISREG(info.st_mode):
        raise TrialDataError(
            f"{path}: file: must be a regular file, got a device, pipe or socket"
        )
    if info.st_size > MAX_FILE_BYTES:
        raise TrialDataError(
            f"{path}: file: must be at most {MAX_FILE_BYTES >> 20} MiB, got "
            f"{info.st_size / (1 << 20):.0f} MiB (split the trials into several evals)"
        )



def to_float(text: np.ndarray) -> np.ndarray:
    """Parse text to float; NaN where it is not a number."""
    import pandas as pd

    return pd.to_numeric(pd.Series(text, dtype=object), errors="coerce").to_numpy(dtype=float)
