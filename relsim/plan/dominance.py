"""The frontier of a sweep: the designs no other design beats.

:func:`frontier` compares two columns exactly (least cost, greatest success: the
cost-reliability frontier), or any ``objectives`` with their noise: a design is beaten only
by one at least as good on every objective within noise and better beyond noise on one, the
noise of a difference being ``z`` times its standard error (the ``<column>_se`` columns of a
stochastic sweep; none for the exact engine, where it is plain dominance)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from relsim.errors import RelsimError, invalid
from relsim.intervals import Z95

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["MAXIMISED", "frontier"]

#: Objectives a larger value of is better; every other objective is better smaller.
MAXIMISED = frozenset({"success", "throughput_per_hour", "successes_per_hour", "expected_utility"})
#: Rows compared at once in the noise-aware search (bounds its memory: rows x rows x objectives).
_CHUNK = 512


def frontier(frame: "pd.DataFrame", cost: str = "cost_per_success", value: str = "success",
             *, objectives: "Sequence[str] | None" = None, z: float = Z95) -> "pd.DataFrame":
    r"""The non-dominated rows of ``frame``: least ``cost``, greatest ``value``.

    Row :math:`j` dominates row :math:`i` when

    .. math::

        c_j \le c_i,\quad v_j \ge v_i \quad\text{and}\quad (c_j, v_j) \ne (c_i, v_i);

    the frontier is every row that no row dominates (rows equal on both keep each other).
    Rows with NaN in either column are left out; an infinite cost (a design that never
    succeeds, for ``cost_per_success``) is a cost like any other, beaten by every finite one
    of no less value.

    With ``objectives`` (any columns; those in :data:`MAXIMISED` are better larger, the
    others smaller), row :math:`j` beats row :math:`i` when, with :math:`g_k` the amount by
    which :math:`j` is better on objective :math:`k` and :math:`m_k = z\sqrt{s_{ik}^2 +
    s_{jk}^2}` the noise of that difference (``s`` from the ``<objective>_se`` column, 0
    without one),

    .. math::

        g_k \ge -m_k \text{ for every } k \quad\text{and}\quad g_k > m_k \text{ for some } k:

    a design counts as beaten only when it is worse beyond its noise, and is never beaten on
    the strength of a difference the runs cannot tell from chance.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per design, such as :func:`relsim.sweep` returns.
    cost, value : str
        The column to minimise and the column to maximise (without ``objectives``).
    objectives : sequence of str or None
        The columns to compare, with their noise.
    z : float
        The noise in standard errors of a difference (1.96: 95%).

    Returns
    -------
    pandas.DataFrame
        The frontier's rows (all columns, the original index), by increasing cost (along it
        the value increases strictly); with ``objectives``, ordered by them, each best first.

    Examples
    --------
    >>> import pandas as pd
    >>> designs = pd.DataFrame({"cost_per_success": [1.0, 2.0, 1.5, 3.0],
    ...                         "success": [0.5, 0.9, 0.4, 0.9]})
    >>> frontier(designs).index.tolist()
    [0, 1]
    """
    import numpy as np
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise invalid("frame", "a pandas DataFrame of designs (such as relsim.sweep returns)", frame)
    if objectives is not None:
        return _noisy_frontier(frame, tuple(objectives), z)
    for role, column in (("cost", cost), ("value", value)):
        if column not in frame.columns:
            raise invalid(role, f"a column of the frame ({', '.join(map(str, frame.columns))})", column)
    try:
        costs = frame[cost].to_numpy(dtype=float)
        values = frame[value].to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise RelsimError(f"cost, value: must be numeric columns, got {cost!r} and {value!r}") from None
    usable = np.flatnonzero(~(np.isnan(costs) | np.isnan(values)))
    costs, values = costs[usable], values[usable]
    order = np.lexsort((-values, costs))  # by cost, then best value first; stable
    costs, values = costs[order], values[order]
    if len(order) == 0:
        return frame.iloc[[]]
    # A row survives when its value beats every cheaper-or-equal row before it; rows equal to
    # a survivor on both columns (adjacent after the sort) survive with it.
    best_before = np.concatenate(([-np.inf], np.maximum.accumulate(values)[:-1]))
    first = np.concatenate(([True], (costs[1:] != costs[:-1]) | (values[1:] != values[:-1])))
    group = np.cumsum(first) - 1
    keep = (values > best_before)[first][group]
    return frame.iloc[usable[order[keep]]]


def _noisy_frontier(frame: "pd.DataFrame", objectives: tuple[str, ...], z: float) -> "pd.DataFrame":
    """The rows no row beats beyond noise on ``objectives`` (see :func:`frontier`)."""
    import numpy as np

    if not objectives:
        raise invalid("objectives", "at least one column", list(objectives))
    for column in objectives:
        if column not in frame.columns:
            raise invalid("objectives", f"columns of the frame ({', '.join(map(str, frame.columns))})", column)
    try:
        values = np.column_stack([frame[c].to_numpy(dtype=float) for c in objectives])
        errors = np.column_stack([
            frame[f"{c}_se"].to_numpy(dtype=float) if f"{c}_se" in frame.columns
            else np.zeros(len(frame)) for c in objectives])
    except (TypeError, ValueError):
        raise RelsimError(f"objectives: must be numeric columns, got {list(objectives)}") from None
    sign = np.array([1.0 if c in MAXIMISED else -1.0 for c in objectives])
    usable = np.flatnonzero(~np.isnan(values).any(axis=1))
    good = values[usable] * sign  # larger is better on every column
    noise = np.where(np.isfinite(errors[usable]), errors[usable], 0.0)
    beaten = np.zeros(len(usable), dtype=bool)
    for start in range(0, len(usable), _CHUNK):
        rows = slice(start, start + _CHUNK)
        with np.errstate(invalid="ignore"):
            gain = good[None, :, :] - good[rows, None, :]  # [i, j, k]: how much j is better
        gain = np.where(np.isnan(gain), 0.0, gain)  # two infinities alike: no difference
        margin = z * np.hypot(noise[rows, None, :], noise[None, :, :])
        beats = np.all(gain >= -margin, axis=2) & np.any(gain > margin, axis=2)
        beaten[rows] = np.any(beats, axis=1)
    keep = usable[~beaten]
    order = np.lexsort([-(values[keep, k] * sign[k]) for k in reversed(range(len(objectives)))])
    return frame.iloc[keep[order]]
