"""Reading trials: CSV, JSONL or a DataFrame, and the one dispatcher over every source.

:func:`load_trials` is what the estimators call: a DataFrame, a CSV/JSONL file or an Inspect
eval log (read by :mod:`relsim.evalstats.inspect_logs`) becomes the one checked trials frame
of :mod:`relsim.evalstats._frames`. Every problem is one :class:`TrialDataError` naming the
file, the line and the column: ``<file> line N: <column>: must be <allowed>, got <value>``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from relsim import checks
from relsim.errors import invalid, show
from relsim.evalstats._common import TrialDataError, source_path
from relsim.evalstats._frames import (
    MAX_FILE_BYTES,
    MAX_STEPS,
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    check_file,
    check_trials,
)
from relsim.evalstats.inspect_logs import read_inspect_log

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_STEPS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "load_trials",
    "read_trials",
    "trials_frame",
]


def read_trials(
    source: str | Path | pd.DataFrame, *, threshold: float | None = None
) -> pd.DataFrame:
    """Read a table of trials and check it.

    Parameters
    ----------
    source : str, Path or pandas.DataFrame
        A CSV file, a JSONL file (one JSON object per line; chosen by the ``.jsonl`` /
        ``.ndjson`` suffix, or by a first character ``{``), or a DataFrame. Columns ``task``,
        ``trial`` and ``success`` are required. Every other column is kept: a column whose
        filled cells are all numbers is a **metric** (``cost``, ``steps``, ``tool_errors``,
        ``latency``, ``tokens``, ...; an empty cell is NaN), any other column is **text**
        (a ``category`` of failure, notes); a column named ``line`` is ignored (the reader
        adds its own). Inspect eval logs are read by :func:`relsim.evalstats.read_inspect_log`.
    threshold : float, optional
        When given, ``success`` holds a numeric score and a trial succeeds when
        ``score >= threshold``. Otherwise ``success`` must be 0/1 or true/false.

    Returns
    -------
    pandas.DataFrame
        One row per trial: ``task`` (str), ``trial`` (str), ``success`` (int 0/1), the metric
        columns (float) and text columns (str, '' when empty), and ``line``: where the row was
        in the input (the file's line number; for a DataFrame, the 1-based row number).
        ``attrs`` holds ``relsim_metrics`` and ``relsim_text`` (the column names of each kind)
        and ``relsim_ignored``. The other functions of ``relsim.evalstats`` take this frame as
        it is, without reading it again.

    Raises
    ------
    TrialDataError
        For a file that is missing, not a regular file, over :data:`MAX_FILE_BYTES` or not
        UTF-8 text, an empty input, a missing column, a missing or unreadable value, a
        non-binary ``success`` (or a non-numeric score with ``threshold``), a negative
        ``cost``, a ``steps`` that is not a number in (0, :data:`MAX_STEPS`], an infinite
        metric, or a duplicate (task, trial) pair. The message names the file, the line and
        the column (for text that is not UTF-8: the file, the first bad line and the byte).
    RelsimError
        For a ``threshold`` that is not a finite number.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"task": ["a", "a", "b"], "trial": [1, 2, 1],
    ...                       "success": ["true", "false", "1"]})
    >>> read_trials(frame)["success"].tolist()
    [1, 0, 1]
    """
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        columns = [str(column).strip() for column in source.columns]
        cells = [_column_text(source.iloc[:, i]) for i in range(source.shape[1])]
        lines = np.arange(1, len(source) + 1)
        return check_trials("trials", "row", columns, cells, lines, threshold)
    path = source_path(source, "source")
    columns, cells, lines = _read_file(path)
    return check_trials(str(path), "line", columns, cells, lines, threshold)



#: What a missing path that looks like an Inspect log is told: where such logs come from.
INSPECT_HINT = " (an Inspect log folder is written by Inspect when it runs an eval)"


def load_trials(
    source: Any, threshold: float | None, scorer: str | None = None, metric: Any = (),
    name: str = "trials",
) -> pd.DataFrame:
    """A checked trials frame from any source: a DataFrame (as is, or read), a CSV/JSONL
    file, or an Inspect eval log (a ``.eval`` or ``.json`` file, or a log directory).
    ``name`` is the caller's argument, named when ``source`` is none of these."""
    import pandas as pd

    if not isinstance(source, pd.DataFrame):
        path = source_path(source, name)
        if not path.exists() and path.suffix.lower() in ("", ".eval", ".json"):
            raise TrialDataError(f"{path}: file: must exist, got no such file or folder{INSPECT_HINT}")
        if path.is_dir() or path.suffix.lower() in (".eval", ".json"):
            return read_inspect_log(path, scorer=scorer, threshold=threshold, metric=metric)
    if scorer is not None:
        raise invalid("scorer", "given only with an Inspect eval log", scorer)
    if metric:
        raise invalid("metric", "given only with an Inspect eval log", metric)
    return trials_frame(path if not isinstance(source, pd.DataFrame) else source, threshold)


def trials_frame(source: Any, threshold: float | None, name: str = "trials") -> pd.DataFrame:
    """A checked trials frame: ``source`` as read, or already read by :func:`read_trials`
    (``name``: the caller's argument, named when ``source`` is no path nor DataFrame)."""
    import pandas as pd

    if not isinstance(source, pd.DataFrame):
        source = source_path(source, name)
    if (
        isinstance(source, pd.DataFrame)
        and source.attrs.get("relsim_trials")
        and set(REQUIRED_COLUMNS) <= set(source.columns)
    ):
        return source  # already read and checked: the threshold was applied then
    return read_trials(source, threshold=threshold)


def _read_file(path: Path) -> tuple[list[str], list[np.ndarray], np.ndarray]:
    """Column names, each column's cells as text ('' when missing), and each row's line."""
    import pandas as pd

    check_file(path)
    try:
        with path.open("r", encoding="utf-8-sig") as handle:
            first = handle.read(4096).lstrip()
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    except OSError as error:
        raise TrialDataError(
            f"{path}: file: must be readable, got {error.strerror or error}"
        ) from None
    if not first:
        raise TrialDataError(f"{path}: rows: must be at least one trial, got an empty file")
    if path.suffix.lower() in (".jsonl", ".ndjson") or first.startswith("{"):
        return _read_jsonl(path)
    try:
        # header=None: the header is row 0, so a row with too many fields is an error with its
        # line number rather than a silent shift into the index
        table = pd.read_csv(
            path,
            header=None,
            dtype=str,
            keep_default_na=False,
            skip_blank_lines=False,
            encoding="utf-8-sig",
        )
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    except pd.errors.ParserError as error:
        reason = str(error).replace("\n", " ")
        raise TrialDataError(f"{path}: CSV: must be a readable CSV file, got {reason}") from None
    cells = [
        np.char.strip(table.iloc[:, i].to_numpy(dtype=str)).astype(object)
        for i in range(table.shape[1])
    ]
    columns = [str(column[0]) for column in cells]
    cells = [column[1:] for column in cells]
    lines = np.arange(2, len(table) + 1)  # line 1 is the header
    blank = np.logical_and.reduce([column == "" for column in cells])
    return columns, [column[~blank] for column in cells], lines[~blank]



def _read_jsonl(path: Path) -> tuple[list[str], list[np.ndarray], np.ndarray]:
    import json

    records, lines = [], []
    try:
        with path.open("r", encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line, object_pairs_hook=checks.unique_keys)
                except checks.RepeatedKey as error:  # json keeps the last silently; a CSV refuses it
                    raise TrialDataError(
                        f"{path} line {number}: {error.args[0]}: must be given once in a record, "
                        "got it twice"
                    ) from None
                except json.JSONDecodeError as error:
                    raise TrialDataError(
                        f"{path} line {number}: record: must be a JSON object, "
                        f"got text that is not valid JSON ({error.msg})"
                    ) from None
                except RecursionError:
                    raise TrialDataError(
                        f"{path} line {number}: record: must be a flat JSON object, "
                        "got values nested too deep to read"
                    ) from None
                except ValueError as error:  # an integer of over 4300 digits, for one
                    raise TrialDataError(
                        f"{path} line {number}: record: must be a JSON object of readable "
                        f"values, got {' '.join(str(error).split()[:8])}..."
                    ) from None
                if not isinstance(record, dict):
                    raise TrialDataError(
                        f"{path} line {number}: record: must be a JSON object, "
                        f"got a JSON {type(record).__name__} {show(record)}"
                    )
                records.append(record)
                lines.append(number)
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    columns = [str(c) for c in dict.fromkeys(key for record in records for key in record)]
    cells = [np.array([_as_text(r.get(c)) for r in records], dtype=object) for c in columns]
    return columns, cells, np.asarray(lines, dtype=np.int64)


def _not_utf8(path: Path) -> TrialDataError:
    """The error for a file that does not decode as UTF-8, naming its first bad line.

    Only called once decoding has failed: the text reader decodes in blocks, so the line is
    found again here, one line at a time (a newline byte never occurs inside a UTF-8
    sequence, so each line decodes on its own).
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as error:
                return TrialDataError(
                    f"{path} line {number}: text: must be UTF-8, got byte "
                    f"0x{raw[error.start]:02x} at byte {error.start + 1} of the line "
                    f"({error.reason}); save it as UTF-8"
                )
    return TrialDataError(f"{path}: text: must be UTF-8, got other bytes; save it as UTF-8")


def _column_text(column: pd.Series) -> np.ndarray:
    """A DataFrame column as text cells (see :func:`_as_text`), vectorised for plain dtypes."""
    values = column.to_numpy()
    if values.dtype == bool:
        return np.where(values, "true", "false").astype(object)
    if np.issubdtype(values.dtype, np.integer):
        return values.astype(str).astype(object)
    if np.issubdtype(values.dtype, np.floating):
        text = np.array([repr(v) for v in values.astype(float).tolist()], dtype=object)
        text[np.isnan(values)] = ""
        return text
    return np.array([_as_text(value) for value in values], dtype=object)


def _as_text(value: Any) -> str:
    """One cell as text: '' for missing (None, NaN, pandas' NA and NaT), 'true'/'false' for
    booleans."""
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value).strip()


