r"""The design over one lever's range: the exact outcome at each value of one scenario key.

:func:`curve` varies one key of a scenario the way the planner of that quantity does (the
same transformation, so a plan's value lies on the curve with the plan's success), judges
every variant with the exact engine (:func:`relsim.evaluate`) and returns a :class:`Curve`.
The design review draws one per lever (:func:`relsim.plot.curve`), so every figure of the
review is of the design under review, not of a simplified chain.

=========================  ===============================================  ===============
key                        the variant at value ``x``                       as the planner
=========================  ===============================================  ===============
``retries.per_step``       ``per_step = x`` on every step (``total`` kept)  ``retries``
``verifier.miss``          ``miss = x`` on every step (``false_reject``     ``verifier``
                           kept)
``verifier.false_reject``  ``false_reject = x`` on every step (``miss``     ``verifier``
                           kept)
``p``                      ``p = x`` on every step                          ``p``
``checkpoints.every``      ``every = x`` (``at``, ``final``, ``detect``,    ``checkpoints``
                           ``false_alarm``, ``rollbacks`` kept)
``sampling.n``             ``n = x`` samples per attempt (``select``,       ``samples``
                           ``wrong_answers`` kept)
=========================  ===============================================  ===============

Only ``retries.per_step`` has a range without an end: its curve carries the **ceiling**, the
limit of success as the budget grows. With a task-wide ``total`` a per-step budget past it is
never spent, so the ceiling is the success at ``per_step = total``, exactly; without one, the
budget is doubled from the planner's convergence floor (the budget at which the slowest step's
chance of being rejected every time, :math:`q^{r+1}`, is below ``1e-12``) until success moves
by less than ``1e-12`` (or ``MAX_BUDGET`` is reached, and the curve says the ceiling is still
rising). The other ranges end where the lever is best (``miss = 0``, ``false_reject = 0``,
``p = 1``), so their best is on the curve itself; the samples' range is 1 to 64 (a vote need
not improve with more voters, so the whole range is drawn when it is asked for).

A design whose steps differ in the key (a per-step list) is not on the curve, which sets one
value on every step: :attr:`Curve.design_value` is then None, and the design's own outcome is
in :attr:`Curve.design` to be shown beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import numpy as np

from relsim.errors import RelsimError, invalid
from relsim.plan import _common
from relsim.plan._common import (
    CONVERGED,
    budget_floor,
    evaluate_design,
    ladder_floor,
    with_every,
    with_per_step,
    with_rate,
)
from relsim.results import Outcome, jsonable
from relsim.scenario import Scenario, as_scenario, trial_model
from relsim.scenario.design_tables import MAX_SAMPLES

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["KEYS", "Curve", "curve", "design_value"]

#: The keys a curve can vary, in the order the design review draws them.
KEYS = ("retries.per_step", "verifier.miss", "verifier.false_reject", "p", "checkpoints.every",
        "sampling.n")

#: Points of a probability range drawn when none are given.
POINTS = 21
#: A grid point this close (relative) to a value asked for gives way to it.
NEAR = 1e-6
#: Decimals a probability grid is rounded to (those of :mod:`relsim.plan.sensitivity`).
DIGITS = 12
#: An integer range is drawn value by value up to this; beyond, on a geometric grid.
MAX_INTEGER_POINTS = 64


@dataclass(frozen=True)
class Curve:
    """The exact outcome of a design at each value of one scenario key.

    Attributes
    ----------
    key : str
        The dotted scenario key varied, one of :data:`KEYS`.
    values : tuple
        The values, increasing (int for ``retries.per_step`` and ``checkpoints.every``).
    outcomes : tuple of Outcome
        The exact outcome of the design with ``key`` set to each value.
    design : Outcome
        The design's own exact outcome.
    design_value : int, float or None
        The design's value of ``key`` when the design lies on the curve (one value on every
        step, which is then among :attr:`values`); None when its steps differ in ``key``
        (or, for ``checkpoints.every``, when it places checkpoints by ``at`` / ``final`` only).
    ceiling : float or None
        ``retries.per_step`` only: the limit of success as the per-step budget grows.
    ceiling_at : int or None
        The per-step budget at which the ceiling is reached (or the last one tried).
    ceiling_note : str or None
        What bounds the ceiling, in words.
    """

    key: str
    values: tuple[Any, ...]
    outcomes: tuple[Outcome, ...] = field(repr=False)
    design: Outcome = field(repr=False)
    design_value: Any = None
    ceiling: float | None = None
    ceiling_at: int | None = None
    ceiling_note: str | None = None

    @property
    def success(self) -> np.ndarray:
        """End-to-end success at each value."""
        return np.array([o.success for o in self.outcomes], dtype=float)

    @property
    def expected_cost(self) -> np.ndarray:
        """Expected cost per trial at each value."""
        return np.array([o.expected_cost for o in self.outcomes], dtype=float)

    @property
    def cost_per_success(self) -> np.ndarray:
        """Cost per success at each value (infinite where success is 0)."""
        return np.array([o.cost_per_success for o in self.outcomes], dtype=float)

    def at(self, value: Any) -> Outcome:
        """The outcome at ``value`` (one of :attr:`values`)."""
        for x, outcome in zip(self.values, self.outcomes):
            if x == value:
                return outcome
        raise invalid("value", f"one of the curve's values of {self.key}", value)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``key``, ``values``, ``success``, ``expected_cost``,
        ``cost_per_success`` (lists), ``design`` (``value``, ``success``,
        ``cost_per_success``) and ``ceiling``, ``ceiling_at``, ``ceiling_note``."""
        return jsonable({
            "key": self.key,
            "values": list(self.values),
            "success": self.success.tolist(),
            "expected_cost": self.expected_cost.tolist(),
            "cost_per_success": self.cost_per_success.tolist(),
            "design": {
                "value": self.design_value,
                "success": self.design.success,
                "cost_per_success": self.design.cost_per_success,
            },
            "ceiling": self.ceiling,
            "ceiling_at": self.ceiling_at,
            "ceiling_note": self.ceiling_note,
        })

    def to_frame(self) -> "pd.DataFrame":
        """One row per value: ``value`` and the outcome's fields (``success``,
        ``silent_failure``, ``detected_failure``, ``expected_attempts``, ``expected_cost``,
        ``cost_per_success``); ``frame.attrs`` holds ``key`` and the ceiling."""
        import pandas as pd

        frame = pd.DataFrame(
            [{"value": x, **o.to_row()} for x, o in zip(self.values, self.outcomes)]
        ).drop(columns=["method"], errors="ignore")
        frame.attrs.update(key=self.key, ceiling=self.ceiling, ceiling_at=self.ceiling_at)
        return frame


def curve(
    scenario: Scenario | Mapping[str, Any],
    key: str,
    values: Iterable[Any] | None = None,
    *,
    also: Iterable[Any] = (),
) -> Curve:
    """The exact outcome of ``scenario`` at each value of ``key`` (see the module docstring).

    Parameters
    ----------
    scenario : Scenario or mapping
    key : str
        One of :data:`KEYS`.
    values : iterable, optional
        The values to evaluate. Default: the lever's range around the design (per-step
        retries 0 to a few past the design's; a verifier rate from 0 to twice the design's,
        at least 0.2; ``p`` from as far below the design's mean as it is below 1, at least
        0.9, up to 1; every checkpoint spacing up to 64 steps, a geometric grid beyond; 1 to
        ``max(9, 2 n)`` samples).
    also : iterable
        Values added to the range (the planner's answer, a lever's value), so that they are
        on the curve exactly. The design's own value is always added when it is on the curve.

    Returns
    -------
    Curve

    Examples
    --------
    >>> c = curve({"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
    ...            "retries": {"per_step": 3}}, "retries.per_step", [0, 3])
    >>> c.success.round(6).tolist(), round(c.ceiling, 6), c.design_value
    ([0.07179, 0.757383], 0.758626, 3)
    """
    s = as_scenario(scenario)
    if key not in KEYS:
        raise invalid("key", f"one of {', '.join(KEYS)}", key)
    transform, kind = _lever(s, key)
    design = evaluate_design(s)
    mine = design_value(s, key)
    grid = _grid(s, key, kind, values, also, mine)
    outcomes = tuple(design if x == mine else evaluate_design(transform(x)) for x in grid)
    ceiling = ceiling_at = note = None
    if key == "retries.per_step":
        ceiling_at, ceiling, note = _retries_ceiling(s, dict(zip(grid, outcomes)))
    return Curve(key, tuple(grid), outcomes, design, mine, ceiling, ceiling_at, note)


# ------------------------------------------------------------------------------ the levers
def _lever(s: Scenario, key: str) -> tuple[Callable[[Any], Scenario], str]:
    """The transformation of ``key`` (the planner's) and the kind of its values."""
    if key == "retries.per_step":
        if s.verifier is None:
            raise RelsimError(
                "retries.per_step: needs a [verifier] in the scenario: without one no attempt "
                "is rejected, so retries never run"
            )
        return (lambda x: with_per_step(s, int(x))), "count"
    if key in ("verifier.miss", "verifier.false_reject"):
        if s.verifier is None:
            raise RelsimError(f"{key}: needs a [verifier] in the scenario, got none")
        rate = key.split(".")[1]
        if rate == "miss" and s.failure_modes:
            raise RelsimError("verifier.miss: must be left out with [[failure_modes]] (each "
                              "mode has its own miss), so it has no curve; got failure modes")
        return (lambda x: with_rate(s, rate, float(x))), "probability"
    if key == "p":
        if s.classes:
            raise RelsimError("p: is replaced by each class's p with [[classes]], so it has no "
                              "curve; got classes")
        return (lambda x: replace(s, p=float(x))), "probability"
    if key == "sampling.n":
        g = s.sampling
        if g is None:
            raise RelsimError("sampling.n: needs a [sampling] table in the scenario (its select "
                              "and wrong_answers say what a sample buys), got none")
        return (lambda x: replace(s, sampling=replace(g, n=int(x)))), "samples"
    if s.checkpoints is None:
        raise RelsimError("checkpoints.every: needs a [checkpoints] table in the scenario, got none")
    return (lambda x: with_every(s, int(x))), "spacing"


def design_value(s: Scenario, key: str) -> Any:
    """The design's value of ``key`` (one of :data:`KEYS`) when one value holds on every step,
    else None: where the design lies on its curve."""
    if key == "checkpoints.every":
        assert s.checkpoints is not None
        return s.checkpoints.every
    if key == "sampling.n":
        assert s.sampling is not None
        return s.sampling.n
    model = trial_model(s)
    per_step = {
        "retries.per_step": model.per_step,
        "verifier.miss": model.miss,
        "verifier.false_reject": model.false_reject,
        "p": model.p,
    }[key]
    if not np.all(per_step == per_step[0]):
        return None
    if key == "retries.per_step":
        total = s.retries.total if s.retries is not None else None
        if s.retries is None or s.retries.per_step is None:
            # no per-step cap (only a total, or no [retries]): per_step = total (0) is the
            # same design, and the curve's transformation writes it out
            return int(total or 0)
        return int(per_step[0])
    return float(per_step[0])


def _listed(values: Any, name: str, key: str) -> list[Any]:
    """``values`` as a list, or the error naming ``name`` (a lone number or a string is not a
    list: a string would be read as its characters)."""
    if isinstance(values, (str, bytes)):
        raise invalid(name, f"a list of values of {key}", values)
    try:
        return list(values)
    except TypeError:
        raise invalid(name, f"a list of values of {key}", values) from None


def _grid(s: Scenario, key: str, kind: str, values: Iterable[Any] | None, also: Iterable[Any],
          design_value: Any) -> list[Any]:
    given = None if values is None else _listed(values, "values", key)
    extra: list[Any] = _listed(also, "also", key)
    grid: list[Any]
    check: Callable[[Any, str, int, int | None], Any]
    check = _probability_value if kind == "probability" else _count_value
    # a ladder's top rung must stay reachable: per-step budgets start at its after
    low = 1 if kind in ("spacing", "samples") else ladder_floor(s) if key == "retries.per_step" else 0
    high = s.steps if kind == "spacing" else MAX_SAMPLES if kind == "samples" else None
    extra = [check(x, key, low, high) for x in extra]
    if given is not None:
        grid = [check(x, key, low, high) for x in given]
        if not grid:
            raise invalid("values", f"a non-empty list of values of {key}", given)
    elif kind == "count":
        top = max([_default_top(s), *extra])
        grid = _integers(low, top)
    elif kind == "spacing":
        grid = _integers(1, s.steps)
    elif kind == "samples":
        current = design_value if design_value is not None else 1
        grid = list(range(1, min(MAX_SAMPLES, max([9, 2 * current, *extra])) + 1))
    elif key == "p":
        mean = float(np.mean(trial_model(s).p))
        lowest = min([mean, *extra])
        # as far below the lowest value as it is below 1, on a round number
        start = min(0.9, max(0.0, math.floor(20.0 * (2.0 * lowest - 1.0)) / 20.0))
        grid = _rounded(np.linspace(start, 1.0, POINTS))
    else:
        current = getattr(trial_model(s), key.split(".")[1])
        top = min(1.0, max([0.2, 2.0 * float(np.max(current)), *extra]))
        grid = _rounded(np.linspace(0.0, top, POINTS))
    if design_value is not None:
        extra.append(design_value)
    # a grid point within a hair of a value asked for is that value (one point, not two
    # that print alike)
    grid = [x for x in grid if not any(abs(x - y) <= NEAR * max(1.0, abs(y)) for y in extra)]
    return sorted(set(grid) | set(extra))


def _rounded(values: np.ndarray) -> list[float]:
    """A probability grid rounded to 12 decimals, as the levers round the values they set:
    0.9 rather than linspace's 0.9000000000000001, so that a lever's value and the grid's
    are one point."""
    return [round(float(x), DIGITS) for x in values]


def _default_top(s: Scenario) -> int:
    """The per-step budgets drawn by default: 0 to a few past the design's (and no further
    than a task-wide budget, past which nothing changes)."""
    current = int(np.max(trial_model(s).per_step))
    top = max(4, current + 3, 2 * current)
    total = s.retries.total if s.retries is not None else None
    return min(top, total) if total is not None and total > 0 else top


def _integers(low: int, high: int) -> list[int]:
    """Every integer of ``low..high`` when few, else a geometric grid with both ends."""
    if high - low < MAX_INTEGER_POINTS:
        return list(range(low, high + 1))
    grid = np.unique(np.round(np.geomspace(max(low, 1), high, 16)).astype(int))
    return sorted({low, *range(low, low + 10), *(int(x) for x in grid), high})


def _count_value(value: Any, key: str, low: int, high: int | None) -> int:
    from relsim import checks

    if high is None:
        high = _common.MAX_BUDGET
    return checks.integer(value, key, low, high)


def _probability_value(value: Any, key: str, low: int, high: int | None) -> float:
    from relsim import checks

    return checks.probability(value, key)


# ------------------------------------------------------------------------------ the ceiling
def _retries_ceiling(s: Scenario, known: dict[Any, Outcome]) -> tuple[int, float, str]:
    """(budget, success, words): the limit of success as the per-step budget grows."""

    def at(budget: int) -> float:
        if budget not in known:
            known[budget] = evaluate_design(with_per_step(s, budget))
        return known[budget].success

    total = s.retries.total if s.retries is not None else None
    if total is not None:
        return total, at(total), (
            f"the task-wide budget total = {total}: a per-step budget past it is never spent"
        )
    limit = _common.MAX_BUDGET
    budget = min(limit, max(1, budget_floor(s), *(b for b in known if b <= limit)))
    value = at(budget)
    while budget < limit:
        nxt = min(2 * budget, limit)
        rising = at(nxt) - value > CONVERGED
        budget, value = nxt, at(nxt)
        if not rising:
            return budget, value, (
                f"unlimited retries per step: success moves by less than {CONVERGED:g} past "
                f"{budget // 2}"
            )
    if math.isfinite(value) and value - at(budget // 2) > CONVERGED:
        return budget, value, f"still rising at {budget} retries per step (the planner's limit)"
    return budget, value, f"unlimited retries per step (reached by {budget})"
