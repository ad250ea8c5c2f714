"""What every part of ``relsim.evalstats`` shares: its error and warning, argument checks,
per-task sums and the one-row frame of a result."""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from relsim.errors import RelsimError, invalid

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


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


def task_sums(codes: np.ndarray, tasks: int, values: np.ndarray) -> np.ndarray:
    """Per-task sums of ``values`` (scaled so the sum cannot overflow, then scaled back)."""
    scale = float(np.max(np.abs(values))) if values.size and np.any(values) else 1.0
    return np.bincount(codes, weights=values / scale, minlength=tasks) * scale


def one_row(record: Mapping[str, Any]) -> "pd.DataFrame":
    """A one-row DataFrame of a result's fields: nested keys joined by ``_``, ``[low, high]``
    pairs split into ``<key>_low`` and ``<key>_high``, undefined numbers (None) as NaN."""
    import pandas as pd

    row: dict[str, Any] = {}

    def add(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                add(f"{prefix}_{key}" if prefix else str(key), inner)
        elif isinstance(value, (list, tuple)) and len(value) == 2:
            add(f"{prefix}_low", value[0])
            add(f"{prefix}_high", value[1])
        elif value is None:
            row[prefix] = math.nan
        else:
            row[prefix] = value.item() if isinstance(value, np.generic) else value

    add("", record)
    return pd.DataFrame([row])
