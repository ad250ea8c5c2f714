r"""The levers that move success: every single change a designer could make, judged exactly.

:func:`levers` takes a scenario, builds one variant per applicable change (a point more
``p``, the verifier's errors halved, one more retry, ...), evaluates each with the exact
engine (:func:`relsim.evaluate`) and returns a table sorted by the gain in success. Each
row's ``set`` holds the dotted scenario keys the change sets and their new values, so anyone
can rebuild the variant (:func:`apply`) and check it.

The changes, where they apply to the scenario:

=========================================  ====================================================
lever                                      set
=========================================  ====================================================
p +1 point on every step                   ``p`` -> ``min(1, p_i + 0.01)``
p +1 point on the hardest step (step k)    ``p`` with the lowest ``p_i`` (the first such) raised
                                           a point (only when the steps differ)
verifier miss halved                       ``verifier.miss`` -> ``miss / 2``
verifier false_reject halved               ``verifier.false_reject`` -> ``false_reject / 2``
one more retry per step                    ``retries.per_step`` -> ``per_step + 1`` (1 without
                                           a ``[retries]`` table; needs a verifier)
task retry budget doubled                  ``retries.total`` -> ``max(2 total, total + 1)``
checkpoints twice as often                 ``checkpoints.every`` -> ``every // 2``
one more rollback                          ``checkpoints.rollbacks`` -> ``rollbacks + 1``
checkpoint misses halved                   ``checkpoints.detect`` -> ``1 - (1 - detect) / 2``
checkpoint false alarms halved             ``checkpoints.false_alarm`` -> ``false_alarm / 2``
confusion entered half as often            ``correlation.confusion.enter`` -> ``enter / 2``
task effect halved                         ``correlation.task_sd`` -> ``task_sd / 2``
step effect halved                         ``correlation.step_sd`` -> ``step_sd / 2``
one fewer step (the last)                  ``steps`` -> ``steps - 1``; every per-step list loses
                                           its last entry, and when the old last step was
                                           checked the new one is (``checkpoints.at``)
=========================================  ====================================================

A change that would leave the scenario as it is (``p`` already 1, ``miss`` already 0, ...)
is not listed.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from relsim.scenario import trial_model
from relsim.errors import invalid
from relsim.exact import evaluate
from relsim.scenario import Scenario

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["COLUMNS", "POINT", "apply", "levers"]

#: The columns of the table, in order.
COLUMNS = ("lever", "set", "success", "delta_success", "cost_per_success", "delta_cost_per_success")

#: One point of per-attempt success, the size of the ``p`` levers.
POINT = 0.01

# Values in ``set`` are rounded to this many decimals, so that 0.9 + 0.01 reads 0.91.
_DIGITS = 12

#: A change smaller than this, relative to the numbers compared, is float noise (the exact
#: engine sums in another order for another design; its own error is far below this) and is
#: reported as no change.
NOISE = 1e-12


def levers(scenario: Scenario | Mapping[str, Any]) -> "pd.DataFrame":
    r"""Every single design change that applies to ``scenario``, evaluated exactly.

    For each change ``c`` with variant scenario :math:`s_c`,

    .. math::

        \Delta\text{success}_c = \text{success}(s_c) - \text{success}(s), \qquad
        \Delta\text{cps}_c = \frac{E[\text{cost}](s_c)}{\text{success}(s_c)}
                             - \frac{E[\text{cost}](s)}{\text{success}(s)}

    (cost per success; infinite when success is 0, and the difference of two infinities is
    NaN). A difference within ``NOISE`` (relative) of the numbers compared is float noise and
    is reported as 0.

    Parameters
    ----------
    scenario : Scenario or mapping
        The design (a mapping goes through :meth:`Scenario.from_dict`).

    Returns
    -------
    pandas.DataFrame
        One row per lever with the columns of :data:`COLUMNS`: ``lever`` (words), ``set``
        (a dict of dotted scenario keys to new values; :func:`apply` rebuilds the variant),
        ``success``, ``delta_success``, ``cost_per_success``, ``delta_cost_per_success``,
        sorted by ``delta_success``, largest first. ``frame.attrs["baseline"]`` holds the
        design's own ``success`` and ``cost_per_success``.

    Examples
    --------
    >>> table = levers({"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
    ...                 "retries": {"per_step": 3}})
    >>> table.iloc[0]["lever"], table.iloc[0]["set"]
    ('verifier miss halved', {'verifier.miss': 0.05})
    """
    import pandas as pd

    base = scenario if isinstance(scenario, Scenario) else Scenario.from_dict(scenario)
    variants = [(lever, changes, apply(base, changes)) for lever, changes in _changes(base)]
    _check_work(base, [variant for _, _, variant in variants])
    origin = evaluate(base)
    origin_cps = origin.cost_per_success
    rows = []
    for lever, changes, variant in variants:
        outcome = evaluate(variant)
        cps = outcome.cost_per_success
        rows.append(
            {
                "lever": lever,
                "set": changes,
                "success": outcome.success,
                "delta_success": _difference(outcome.success, origin.success),
                "cost_per_success": cps,
                "delta_cost_per_success": _difference(cps, origin_cps),
            }
        )
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame = frame.sort_values("delta_success", ascending=False, kind="stable").reset_index(drop=True)
    frame.attrs["baseline"] = {"success": origin.success, "cost_per_success": origin_cps}
    return frame


def _check_work(base: Scenario, variants: list[Scenario]) -> None:
    """Refuse at once, with the estimate, a table whose exact evaluations (the design's and
    every lever's) would together take over ``relsim.limits``: each alone may fit and the
    whole not (nine evaluations of 20 s are three minutes)."""
    from relsim.exact import work_estimate
    from relsim.limits import WorkEstimate

    estimates = [work_estimate(s) for s in (base, *variants)]
    slowest = max(estimates, key=lambda e: e.seconds)
    WorkEstimate(
        seconds=sum(e.seconds for e in estimates),
        memory=max(e.memory for e in estimates),
        detail=f"{len(estimates)} exact evaluations, the design's and {len(variants)} levers'; "
        f"the slowest: {slowest.detail}",
    ).check(
        "scenario",
        "levers evaluates the design and every lever exactly: lower the budgets "
        "(retries.total, retries.per_step, checkpoints.rollbacks) or the steps, or compare "
        "a few variants with relsim.simulate",
    )


def apply(scenario: Scenario | Mapping[str, Any], changes: Mapping[str, Any]) -> Scenario:
    """``scenario`` with each dotted key of ``changes`` set to its value.

    ``{"verifier.miss": 0.05}`` sets ``miss`` in the ``[verifier]`` table (creating a table
    that is missing); the result is validated like any scenario.

    Examples
    --------
    >>> s = apply({"steps": 3, "p": 0.9}, {"steps": 2, "verifier.miss": 0.0})
    >>> s.steps, s.verifier.miss
    (2, 0.0)
    """
    base = scenario if isinstance(scenario, Scenario) else Scenario.from_dict(scenario)
    if not isinstance(changes, Mapping):
        raise invalid("changes", "a mapping of dotted scenario keys to values", changes)
    data = copy.deepcopy(base.to_dict())
    for dotted, value in changes.items():
        parts = str(dotted).split(".")
        table = data
        for part in parts[:-1]:
            inner = table.setdefault(part, {})
            if not isinstance(inner, dict):
                raise invalid(str(dotted), "a key inside a table", dotted)
            table = inner
        table[parts[-1]] = value
    return Scenario.from_dict(data)


# ------------------------------------------------------------------------- the changes
def _changes(s: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """(lever, set) for every change that applies to ``s`` and changes it."""
    out: list[tuple[str, dict[str, Any]]] = []
    model = trial_model(s)
    p = model.p
    if np.any(p < 1.0):
        out.append(("p +1 point on every step", {"p": _per_step(np.minimum(1.0, p + POINT))}))
        if s.steps > 1 and not np.all(p == p[0]):
            hardest = int(np.argmin(p))
            raised = p.copy()
            raised[hardest] = min(1.0, raised[hardest] + POINT)
            out.append(
                (f"p +1 point on the hardest step (step {hardest + 1})", {"p": _per_step(raised)})
            )
    if s.verifier is not None:
        miss = model.miss
        if np.any(miss > 0):
            out.append(("verifier miss halved", {"verifier.miss": _per_step(miss / 2)}))
        false_reject = model.false_reject
        if np.any(false_reject > 0):
            out.append(
                ("verifier false_reject halved",
                 {"verifier.false_reject": _per_step(false_reject / 2)})
            )
        out.append(
            ("one more retry per step", {"retries.per_step": _per_step(model.per_step + 1)})
        )
        total = None if s.retries is None else s.retries.total
        if total is not None:
            out.append(("task retry budget doubled", {"retries.total": max(2 * total, total + 1)}))
    c = s.checkpoints
    if c is not None:
        if c.every is not None and c.every > 1:
            out.append(("checkpoints twice as often", {"checkpoints.every": c.every // 2}))
        out.append(("one more rollback", {"checkpoints.rollbacks": c.rollbacks + 1}))
        if c.detect < 1.0:
            out.append(
                ("checkpoint misses halved",
                 {"checkpoints.detect": _round(1.0 - (1.0 - c.detect) / 2)})
            )
        if c.false_alarm > 0.0:
            out.append(
                ("checkpoint false alarms halved",
                 {"checkpoints.false_alarm": _round(c.false_alarm / 2)})
            )
    corr = s.correlation
    if corr.confusion is not None and corr.confusion.enter > 0.0:
        out.append(
            ("confusion entered half as often",
             {"correlation.confusion.enter": _round(corr.confusion.enter / 2)})
        )
    if corr.task_sd > 0.0:
        out.append(("task effect halved", {"correlation.task_sd": _round(corr.task_sd / 2)}))
    if corr.step_sd > 0.0:
        out.append(("step effect halved", {"correlation.step_sd": _round(corr.step_sd / 2)}))
    shorter = _one_fewer_step(s)
    if shorter is not None:
        out.append(("one fewer step (the last)", shorter))
    return out


def _one_fewer_step(s: Scenario) -> dict[str, Any] | None:
    """The keys that drop the last step: every per-step list loses its last entry, and when
    the old last step was checked the new last step is (``checkpoints.at`` gains it unless
    ``every`` or ``final`` already checks it). None with one step."""
    n = s.steps - 1
    if n < 1:
        return None
    changes: dict[str, Any] = {"steps": n}
    # Every per-step list of the file form (p, verifier rates, retries, costs, and any table
    # added later, such as per-step durations) is a list of `steps` entries: trim them all.
    for key, value in _dotted(s.to_dict()):
        if key != "checkpoints.at" and isinstance(value, list) and len(value) == s.steps:
            changes[key] = copy.deepcopy(value[:n])
    c = s.checkpoints
    if c is not None:
        at = {min(position, n) for position in c.at}
        old_end_checked = s.steps in trial_model(s).checkpoint_positions
        every_hits_end = c.every is not None and n % c.every == 0
        if old_end_checked and not (c.final or every_hits_end):
            at.add(n)  # the task's end was checked; keep it checked
        if list(c.at) != sorted(at):
            changes["checkpoints.at"] = sorted(at)
    return changes


def _dotted(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) for every leaf of a scenario's file form."""
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, Mapping):
            out += _dotted(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def _per_step(values: np.ndarray) -> Any:
    """One value when every step has the same, else a list; plain Python numbers."""
    values = np.asarray(values)
    plain: list[int] | list[float]
    if values.dtype.kind in "iu":
        plain = [int(v) for v in values]
    else:
        plain = [_round(float(v)) for v in values]
    return plain[0] if all(v == plain[0] for v in plain) else plain


def _round(value: float) -> float:
    return round(value, _DIGITS)


def _difference(new: float, old: float) -> float:
    """``new - old``, with float noise rounded away: two numbers within ``NOISE`` (relative)
    of each other are the same number reached by two orders of summation, and their
    difference is 0, not ``-8.88e-16``.

    Examples
    --------
    >>> _difference(7.006967742, 7.006967742 + 8.9e-16), _difference(0.5, 0.25)
    (0.0, 0.25)
    """
    if math.isinf(new) and math.isinf(old):
        return math.nan  # two infinite costs: no difference to report
    difference = new - old
    if math.isfinite(difference) and abs(difference) <= NOISE * max(abs(new), abs(old)):
        return 0.0
    return difference
