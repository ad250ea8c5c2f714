"""What every part of ``relsim.evalstats`` shares: its error and warning, argument checks and
per-task sums (a result's one-row frame is :func:`relsim.results.one_row`, shared with every
result)."""

from __future__ import annotations

import numbers
import os
from pathlib import Path
from typing import Any

import numpy as np

from relsim.errors import RelsimError, invalid


class TrialDataError(RelsimError):
    """A table of trials that cannot be used: the message names the file, line and column.

    ``<file> line N: <column>: must be <allowed>, got <value>`` (``trials row N`` for a
    DataFrame), or ``<file>: <what>: must be ..., got ...`` for the file as a whole.
    """


class TrialDataWarning(UserWarning):
    """Something about the trial data the reader should know (unequal counts, unshared tasks)."""


def is_real(value: Any) -> bool:
    """A real number (Python or numpy), not a boolean."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def is_count(value: Any) -> bool:
    """An integer (Python or numpy), not a boolean."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_confidence(confidence: float) -> None:
    if not (is_real(confidence) and 0.0 < confidence < 1.0):
        raise invalid("confidence", "in (0, 1)", confidence)


#: What a source of trials or verdicts may be, as the messages say.
SOURCE = "a file path (str or os.PathLike) or a pandas DataFrame"


def source_path(source: Any, name: str, allowed: str = SOURCE) -> Path:
    """``source`` as a :class:`~pathlib.Path`, or the error naming the argument ``name``
    (``Path(None)`` would be a ``TypeError`` from deep in the reader)."""
    if isinstance(source, (str, os.PathLike)) and not isinstance(source, bytes):
        if not os.fspath(source):  # Path("") is the current folder, read as a folder of logs
            raise invalid(name, "a file or folder name, not empty", source)
        return Path(source)
    raise invalid(name, allowed, source)


def task_sums(codes: np.ndarray, tasks: int, values: np.ndarray) -> np.ndarray:
    """Per-task sums of ``values`` (scaled so the sum cannot overflow, then scaled back)."""
    scale = float(np.max(np.abs(values))) if values.size and np.any(values) else 1.0
    return np.bincount(codes, weights=values / scale, minlength=tasks) * scale
