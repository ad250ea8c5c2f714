"""The result shape shared by every engine.

The exact engine fills the five outcome fields; Monte Carlo fills them too and adds standard
errors, 95% intervals, percentiles, the number of trials and the seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The outcome keys of MODEL.md section 3, in the order they are reported.
OUTCOME_KEYS = (
    "success",
    "silent_failure",
    "detected_failure",
    "expected_attempts",
    "expected_cost",
    "cost_per_success",
)


@dataclass(frozen=True)
class Outcome:
    """What one scenario leads to: the split of trial outcomes, attempts and cost.

    Attributes
    ----------
    success, silent_failure, detected_failure : float
        Probabilities of the three trial outcomes (they sum to 1).
    expected_attempts : float
        Expected number of step attempts per trial.
    expected_cost : float
        Expected cost per trial, in the scenario's cost unit.
    method : str
        ``"exact"`` or ``"montecarlo"``.
    standard_errors : mapping of str to float
        Monte Carlo only: the standard error of each estimated key.
    intervals : mapping of str to (float, float)
        Monte Carlo only: a 95% interval for each estimated key.
    percentiles : mapping of str to mapping of str to float
        Monte Carlo only: ``{"cost": {"p50": .., "p90": .., "p99": ..}, "attempts": {..}}``.
    trials, seed : int or None
        Monte Carlo only: the number of trials run and the seed that drew them.
    partial : bool
        True when a simulation was interrupted and reports the chunks that finished.
    trajectories : pandas.DataFrame or None
        Monte Carlo with ``record=K``: one row per recorded trial.
    """

    success: float
    silent_failure: float
    detected_failure: float
    expected_attempts: float
    expected_cost: float
    method: str = "exact"
    standard_errors: Mapping[str, float] = field(default_factory=dict)
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    percentiles: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    trials: int | None = None
    seed: int | None = None
    partial: bool = False
    trajectories: "pd.DataFrame | None" = field(default=None, compare=False, repr=False)

    @property
    def cost_per_success(self) -> float:
        """``expected_cost / success``; infinite when success is 0."""
        return cost_per_success(self.expected_cost, self.success)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: MODEL.md's keys, ``<key>_se`` and ``<key>_ci`` when estimated.

        Infinite values become ``None`` (JSON has no infinity).
        """
        out: dict[str, Any] = {}
        for key in OUTCOME_KEYS:
            out[key] = _finite_or_none(getattr(self, key))
            if key in self.standard_errors:
                out[f"{key}_se"] = _finite_or_none(self.standard_errors[key])
            if key in self.intervals:
                low, high = self.intervals[key]
                out[f"{key}_ci"] = [_finite_or_none(low), _finite_or_none(high)]
        out["method"] = self.method
        if self.percentiles:
            out["percentiles"] = {k: dict(v) for k, v in self.percentiles.items()}
        if self.trials is not None:
            out["trials"] = self.trials
            out["seed"] = self.seed
            out["partial"] = self.partial
        return out

    def to_frame(self) -> "pd.DataFrame":
        """A one-row pandas DataFrame of :meth:`to_dict` (intervals split into low/high)."""
        import pandas as pd

        row: dict[str, Any] = {}
        for key, value in self.to_dict().items():
            if key == "percentiles":
                for quantity, table in value.items():
                    for name, number in table.items():
                        row[f"{quantity}_{name}"] = number
            elif isinstance(value, list):
                row[f"{key}_low"], row[f"{key}_high"] = value
            else:
                row[key] = value
        return pd.DataFrame([row])


def cost_per_success(expected_cost: float, success: float) -> float:
    """Expected cost of one trial over its success: what one success costs on average.

    Infinite when success is 0 (no number of trials buys one).
    """
    if success <= 0.0:
        return math.inf
    return expected_cost / success


def jsonable(value: Any) -> Any:
    """``value`` made JSON-ready: the one JSON helper of relsim.

    Non-finite floats become ``None`` (JSON has no infinity; NaN means "undefined"), numpy
    scalars and arrays become Python numbers and lists, mappings get string keys.

    Examples
    --------
    >>> jsonable({"a": float("inf"), 1: (0.5, float("nan"))})
    {'a': None, '1': [0.5, None]}
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # numpy scalar -> Python scalar, array -> (nested) list
        if isinstance(value, list):
            return jsonable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _finite_or_none(value: float | None) -> float | None:
    """One number for JSON: ``None`` when missing or not finite (see :func:`jsonable`)."""
    return jsonable(None if value is None else float(value))
