"""Reading a grader's verdicts: labelled ones (with the truth) and judged ones (without).

Private: :func:`relsim.evalstats.audit` reads its inputs here. A table of labelled verdicts is
a CSV or JSONL file (read by the trial readers' :func:`relsim.evalstats.readers._read_file`)
or a DataFrame, with columns ``verdict`` and ``label`` and an optional ``task``; judged
verdicts have ``verdict`` and an optional ``task``. Other columns are ignored. An Inspect eval
log (a ``.eval`` or ``.json`` file, or a log directory) gives both through
:func:`relsim.evalstats.read_inspect_log`: the sample id is the task, the grader's scorer the
verdict, and (for labels) the truth's scorer the label. Every problem is one
:class:`TrialDataError` in the readers' format: ``<file> line N: <column>: must be <allowed>,
got <value>``.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from relsim.errors import invalid, show
from relsim.evalstats._common import TrialDataError, source_path
from relsim.evalstats._frames import to_float
from relsim.evalstats.inspect_logs import read_inspect_log
from relsim.evalstats.readers import INSPECT_HINT, _column_text, _read_file

__all__ = ["Verdicts", "read_verdicts"]

#: What a verdict or a label may be (the truth: 1 the answer is right; a verdict: 1 it passed).
_BINARY_TEXT = "0/1 or true/false"


@dataclass(frozen=True)
class Verdicts:
    """A grader's verdicts, one per row, with the truth when labelled.

    ``verdict`` and ``label`` are int arrays of 0/1 (``label`` None for judged verdicts);
    ``task`` holds each row's task code (0..tasks-1), and ``tasks`` the number of distinct
    tasks, None when the input names no task (then each row is its own task).
    """

    source: str
    verdict: np.ndarray
    label: np.ndarray | None
    task: np.ndarray
    tasks: int | None

    @property
    def rows(self) -> int:
        return int(self.verdict.size)

    @property
    def clustered(self) -> bool:
        """Some task carries several rows: the rows are not independent draws."""
        return self.tasks is not None and self.tasks < self.rows


def is_inspect_log(source: Any) -> bool:
    """A path that names an Inspect log: a folder, or a ``.eval`` / ``.json`` file."""
    import pandas as pd

    if (isinstance(source, pd.DataFrame) or not isinstance(source, (str, os.PathLike))
            or not os.fspath(source)):
        return False  # not a path (Path("") is the current folder): read_verdicts says so
    path = Path(source)
    return path.is_dir() or path.suffix.lower() in (".eval", ".json")


def read_verdicts(
    source: Any,
    *,
    labelled: bool,
    grader: str | None = None,
    truth: str | None = None,
    name: str = "labels",
) -> Verdicts:
    """Read labelled (``labelled=True``) or judged verdicts from a file, a DataFrame or an
    Inspect log (``grader``: the grader's scorer; ``truth``: the truth's, for labels; both
    unused for other inputs). ``name`` is what a DataFrame is called in messages."""
    import pandas as pd

    if not isinstance(source, pd.DataFrame):
        path = source_path(source, name)
        if not path.exists() and path.suffix.lower() in ("", ".eval", ".json"):
            raise TrialDataError(
                f"{path}: file: must exist, got no such file or folder{INSPECT_HINT}"
            )
        if is_inspect_log(path):
            return _from_inspect(path, labelled, grader, truth)
    if isinstance(source, pd.DataFrame):
        columns = [str(column).strip() for column in source.columns]
        cells = [_column_text(source.iloc[:, i]) for i in range(source.shape[1])]
        lines = np.arange(1, len(source) + 1)
        return _check(name, "row", columns, cells, lines, labelled)
    path = Path(source)
    columns, cells, lines = _read_file(path)
    return _check(str(path), "line", columns, cells, lines, labelled)


def _check(
    name: str,
    where: str,
    columns: list[str],
    cells: list[np.ndarray],
    lines: np.ndarray,
    labelled: bool,
) -> Verdicts:
    """Check text cells (one array per column) and build the verdicts."""
    required = ("verdict", "label") if labelled else ("verdict",)
    missing = [column for column in required if column not in columns]
    if missing:
        found = ", ".join(repr(c) for c in columns) or "none"
        hints = [
            f"{close[0]!r} for {m!r}?"
            for m in missing
            if (close := difflib.get_close_matches(m, columns, n=1, cutoff=0.6))
        ]
        hint = f"; did you mean {' '.join(hints)}" if hints else ""
        wanted = "verdict and label" if labelled else "verdict"
        raise TrialDataError(
            f"{name}: columns: must include {wanted} (optional task), got {found} "
            f"(missing {', '.join(repr(m) for m in missing)}{hint})"
        )
    for column in (*required, "task"):
        if columns.count(column) > 1:
            raise TrialDataError(
                f"{name}: columns: must name {column!r} once, got it {columns.count(column)} times"
            )
    what = "labelled verdict" if labelled else "verdict"
    if len(lines) == 0:
        raise TrialDataError(f"{name}: rows: must be at least one {what}, got none")
    text = dict(zip(columns, cells))

    def fail(mask: np.ndarray, column: str, allowed: str, values: np.ndarray) -> None:
        """Raise for the first row in ``mask``, saying how many more rows are like it."""
        if mask.any():
            first = int(np.flatnonzero(mask)[0])
            count = int(mask.sum())
            more = f" ({count - 1} more row{'s' if count > 2 else ''} like it)" if count > 1 else ""
            got = "nothing" if values[first] == "" else show(values[first])
            raise TrialDataError(
                f"{name} {where} {lines[first]}: {column}: must be {allowed}, got {got}{more}"
            )

    def binary(column: str) -> np.ndarray:
        values = text[column]
        fail(np.asarray(values == "", dtype=bool), column, "a value in every row", values)
        lowered = np.char.lower(values.astype(str))
        numeric = np.where(lowered == "true", 1.0, np.where(lowered == "false", 0.0,
                                                           to_float(lowered)))
        fail(~np.isin(numeric, (0.0, 1.0)), column, _BINARY_TEXT, values)
        return numeric.astype(np.int64)

    verdict = binary("verdict")
    label = binary("label") if labelled else None
    if "task" in text:
        names = text["task"].astype(str)
        fail(np.asarray(names == "", dtype=bool), "task", "a value in every row", names)
        _, codes = np.unique(names, return_inverse=True)
        return Verdicts(name, verdict, label, codes.astype(np.int64), int(codes.max()) + 1)
    return Verdicts(name, verdict, label, np.arange(len(verdict), dtype=np.int64), None)


def _from_inspect(
    path: Path, labelled: bool, grader: str | None, truth: str | None
) -> Verdicts:
    """Verdicts from an Inspect log: the grader's scorer and, for labels, the truth's."""
    if not isinstance(grader, str) or not grader:
        raise invalid(
            "grader", "the grader's scorer (grader=NAME) with an Inspect eval log", grader
        )
    if not labelled:
        frame = read_inspect_log(path, scorer=grader)
        return _coded(str(path), frame["success"].to_numpy(np.int64), None, frame)
    if not isinstance(truth, str) or not truth:
        raise invalid(
            "truth", "the truth's scorer (truth=NAME) with an Inspect eval log", truth
        )
    if truth == grader:
        raise invalid("truth", f"a scorer other than the grader's ({grader!r})", truth)
    if truth in ("task", "trial", "success", "line", "score"):
        raise invalid("truth", "the name of a scorer of the log", truth)
    frame = read_inspect_log(path, scorer=grader, metric=[truth])
    values = frame[truth].to_numpy(dtype=float)
    wrong = ~np.isin(values, (0.0, 1.0))
    if wrong.any():
        first = int(np.flatnonzero(wrong)[0])
        raise TrialDataError(
            f"{path} sample {frame['line'].iat[first]}: {truth}: must be C/I, a boolean or "
            f"0/1 (the truth: right or wrong), got {show(values[first])}"
        )
    return _coded(str(path), frame["success"].to_numpy(np.int64), values.astype(np.int64), frame)


def _coded(name: str, verdict: np.ndarray, label: np.ndarray | None, frame: Any) -> Verdicts:
    """Verdicts whose task is the trials frame's (an Inspect sample id)."""
    _, codes = np.unique(frame["task"].to_numpy(dtype=str), return_inverse=True)
    return Verdicts(name, verdict, label, codes.astype(np.int64), int(codes.max()) + 1)
