"""The result of a scenario planner: :class:`Plan`, with ``to_dict()`` and ``to_frame()``."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from relsim.results import cost_per_success, jsonable, one_row

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from relsim.scenario import Scenario

#: The quantities a plan can be made for, in the order of ``relsim solve --for``.
QUANTITIES = (
    "retries", "total", "allocation", "verifier", "p", "checkpoints", "samples", "escalation",
)

@dataclass(frozen=True)
class Plan:
    """A planned design and what it leads to.

    Attributes
    ----------
    for_ : str
        The quantity planned, one of :data:`QUANTITIES` (``"for"`` in JSON).
    value : int, float, tuple of int or None
        The chosen value: a budget or a count (int), a probability (float) or, for
        ``allocation``, one budget per step and for ``escalation`` the ladder's ``after``
        (a tuple; a list in JSON). When infeasible, the nearest design.
    success, expected_cost : float
        The exact outcome of :attr:`scenario`.
    feasible : bool
        Whether the design meets the target by the one rule of every planner
        (:func:`relsim.formulas.meets_target`: log success from the failure probability
        against log target, no tolerance; target 1 only for a design that cannot fail).
        Under ``objective="utility"`` the target is not the criterion and a best design
        always exists: True, and ``details["meets_target"]`` says whether it meets the
        target (None when none is given).
    target : float or None
        The target planned for (None only under ``objective="utility"`` without one).
    scenario : Scenario
        The planned scenario: the input with :attr:`value` applied.
    ceiling : float or None
        When infeasible: the best success the planned quantity can reach.
    binding : str or None
        When infeasible: the scenario key whose value caps success (``"verifier.miss"``,
        ``"retries.total"``, ``"correlation"``, ``"checkpoints.rollbacks"``, ...).
    reason : str or None
        When infeasible: why, in words, with the ceiling and where possible the nearest design
        that does reach the target.
    details : mapping
        Method notes: for ``allocation`` the method and the gap to the optimum where a bound is
        known; for ``verifier`` the separate ``false_reject`` answer; under an objective,
        ``objective`` (and for ``utility`` ``meets_target`` and ``criterion``).
    expected_utility : float or None
        The exact expected utility of :attr:`scenario` (None without a ``[utility]`` table).
    """

    for_: str
    value: int | float | tuple[int, ...] | None
    success: float
    expected_cost: float
    feasible: bool
    target: float | None
    scenario: Scenario = field(repr=False)
    ceiling: float | None = None
    binding: str | None = None
    reason: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    expected_utility: float | None = None

    @property
    def cost_per_success(self) -> float:
        """``expected_cost / success``; infinite when success is 0."""
        return cost_per_success(self.expected_cost, self.success)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``for``, ``value``, ``success``, ``expected_cost``, ``cost_per_success``,
        ``feasible``, ``target``; ``expected_utility`` when the scenario has a ``[utility]``
        table; ``ceiling``, ``binding`` and ``reason`` when infeasible;
        ``details`` when there are any (a copy: the planners fill them with plain Python
        values). Infinities become None (:func:`relsim.results.jsonable`)."""
        return jsonable(self._record())

    def to_frame(self) -> "pd.DataFrame":
        """A one-row pandas DataFrame of :meth:`to_dict`'s fields, flattened as every result
        is (:func:`relsim.results.flatten`): a budget list for ``allocation`` stays one cell
        (a list), ``details`` become ``details_<key>`` columns (nested mappings
        ``details_<key>_<name>``), an infinite cost per success stays infinite and None is
        NaN."""
        return one_row(self._record())

    def _record(self) -> dict[str, Any]:
        """The fields of :meth:`to_dict`, infinities as they are."""
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        out: dict[str, Any] = {
            "for": self.for_,
            "value": value,
            "success": self.success,
            "expected_cost": self.expected_cost,
            "cost_per_success": self.cost_per_success,
            "feasible": self.feasible,
            "target": self.target,
        }
        if self.expected_utility is not None:
            out["expected_utility"] = self.expected_utility
        if not self.feasible:
            out["ceiling"] = self.ceiling
            out["binding"] = self.binding
            out["reason"] = self.reason
        if self.details:
            out["details"] = copy.deepcopy(dict(self.details))
        return out
