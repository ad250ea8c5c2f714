"""The result types shared by the engines.

:class:`Outcome` is what every engine reports: the six outcome keys of docs/model.md section 3
(the exact engine returns it as it is). :class:`SimulatedOutcome` is an ``Outcome`` estimated
by Monte Carlo: it adds standard errors, 95% intervals, percentiles, the number of trials and
the seed. The ``method`` key of ``to_dict()`` comes from the type (``"exact"`` or
``"montecarlo"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The outcome keys of docs/model.md section 3, in the order they are reported.
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
    cost_per_success : float
        ``expected_cost / success`` (a property); infinite when success is 0.
    method : str
        ``"exact"`` for this type, ``"montecarlo"`` for :class:`SimulatedOutcome` (a class
        attribute, not a field).

    Examples
    --------
    >>> out = Outcome(0.5, 0.25, 0.25, 2.0, 4.0)
    >>> out.cost_per_success, out.to_dict()["method"]
    (8.0, 'exact')
    """

    success: float
    silent_failure: float
    detected_failure: float
    expected_attempts: float
    expected_cost: float

    method: ClassVar[str] = "exact"

    @property
    def cost_per_success(self) -> float:
        """``expected_cost / success``; infinite when success is 0."""
        return cost_per_success(self.expected_cost, self.success)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the six outcome keys and ``method``.

        Infinite values become ``None`` (JSON has no infinity).
        """
        out: dict[str, Any] = {}
        for key in OUTCOME_KEYS:
            out[key] = _finite_or_none(getattr(self, key))
            out.update(self._estimate_items(key))
        out["method"] = self.method
        return out

    def _estimate_items(self, key: str) -> dict[str, Any]:
        """What a subclass reports next to ``key`` in :meth:`to_dict` (nothing here)."""
        return {}

    def to_frame(self) -> "pd.DataFrame":
        """A one-row pandas DataFrame of :meth:`to_dict` (intervals split into low/high,
        percentiles into ``<quantity>_<pNN>`` columns)."""
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


@dataclass(frozen=True, kw_only=True)
class SimulatedOutcome(Outcome):
    """An :class:`Outcome` estimated from simulated trials, with its uncertainty.

    Attributes
    ----------
    standard_errors : mapping of str to float
        The standard error of each of the six outcome keys.
    intervals : mapping of str to (float, float)
        A 95% interval for each of the six outcome keys.
    percentiles : mapping of str to mapping of str to float
        ``{"cost": {"p50": .., "p90": .., "p99": ..}, "attempts": {..}}`` over the trials.
    trials : int
        The number of trials the estimate covers.
    seed : int or None
        The seed that drew them (``None`` when a ``SeedSequence`` without an integer entropy
        was given).
    partial : bool
        True when the run was interrupted and reports the trials that finished.
    trajectories : pandas.DataFrame or None
        With ``record=K``: one row per recorded trial (not compared, not in ``to_dict``).

    Examples
    --------
    >>> out = SimulatedOutcome(1.0, 0.0, 0.0, 1.0, 1.0, standard_errors={"success": 0.0},
    ...                        intervals={}, percentiles={}, trials=10, seed=1)
    >>> d = out.to_dict()
    >>> d["success_se"], d["method"], d["trials"], isinstance(out, Outcome)
    (0.0, 'montecarlo', 10, True)
    """

    standard_errors: Mapping[str, float]
    intervals: Mapping[str, tuple[float, float]]
    percentiles: Mapping[str, Mapping[str, float]]
    trials: int
    seed: int | None
    partial: bool = False
    trajectories: "pd.DataFrame | None" = field(default=None, compare=False, repr=False)

    method: ClassVar[str] = "montecarlo"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: each outcome key followed by ``<key>_se`` and ``<key>_ci``, then
        ``method``, ``percentiles``, ``trials``, ``seed`` and ``partial``.

        Infinite values become ``None`` (JSON has no infinity).
        """
        out = super().to_dict()
        if self.percentiles:
            out["percentiles"] = {k: dict(v) for k, v in self.percentiles.items()}
        out["trials"] = self.trials
        out["seed"] = self.seed
        out["partial"] = self.partial
        return out

    def _estimate_items(self, key: str) -> dict[str, Any]:
        items: dict[str, Any] = {}
        if key in self.standard_errors:
            items[f"{key}_se"] = _finite_or_none(self.standard_errors[key])
        if key in self.intervals:
            low, high = self.intervals[key]
            items[f"{key}_ci"] = [_finite_or_none(low), _finite_or_none(high)]
        return items


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
