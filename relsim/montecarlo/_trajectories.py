"""The recorded trials as a pandas DataFrame (``simulate(..., record=K).trajectories``).

Private; pandas is imported only when a run records trials.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from relsim.montecarlo._layout import OUTCOME_NAMES, Record

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from relsim.scenario import TrialModel

# Columns where -1 means "none" and becomes NA.
_OPTIONAL = ("first_wrong_step", "caught_at", "stopped_at")
# The record's columns that every run reports (the others only with section 8's tables).
_SECTION_3_COLUMNS = Record._fields.index("task_class")


def trajectories(
    record: Record, cost_unit: float = 1.0, model: TrialModel | None = None
) -> pd.DataFrame:
    """One row per recorded trial, indexed by ``trial``: ``outcome`` (categorical),
    ``attempts``, ``cost``, ``retries_used``, ``rollbacks`` and, nullable,
    ``first_wrong_step``, ``caught_at``, ``stopped_at``; with ``model``'s classes
    ``task_class`` (the class drawn, 0-based) and with its failure modes ``failure_mode``
    (a silent failure's mode, the index of its name in ``TrialModel.mode_names``; NA
    otherwise). ``cost_unit``: the unit the
    kernel recorded costs in (``TrialModel.cost_unit``); a cost past the float range is inf."""
    import numpy as np
    import pandas as pd

    if cost_unit != 1.0:
        with np.errstate(over="ignore"):
            record = record._replace(cost=record.cost * cost_unit)

    columns: dict[str, Any] = {
        "outcome": pd.Categorical.from_codes(record.outcome, categories=pd.Index(OUTCOME_NAMES))
    }
    for name in Record._fields[1:_SECTION_3_COLUMNS]:
        values = getattr(record, name).copy()
        columns[name] = pd.arrays.IntegerArray(values, values < 0) if name in _OPTIONAL else values
    if model is not None and model.classes > 1:
        columns["task_class"] = record.task_class.copy()
    if model is not None and model.modes:
        values = record.failure_mode.copy()
        columns["failure_mode"] = pd.arrays.IntegerArray(values, values < 0)
    frame = pd.DataFrame(columns)
    frame.index.name = "trial"
    return frame
