"""The cost-reliability frontier: the designs no other design beats on both counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from relsim.errors import RelsimError, invalid

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["frontier"]


def frontier(frame: "pd.DataFrame", cost: str = "cost_per_success", value: str = "success") -> "pd.DataFrame":
    r"""The non-dominated rows of ``frame``: least ``cost``, greatest ``value``.

    Row :math:`j` dominates row :math:`i` when

    .. math::

        c_j \le c_i,\quad v_j \ge v_i \quad\text{and}\quad (c_j, v_j) \ne (c_i, v_i);

    the frontier is every row that no row dominates (rows equal on both keep each other).
    Rows with NaN in either column are left out; an infinite cost (a design that never
    succeeds, for ``cost_per_success``) is a cost like any other, beaten by every finite one
    of no less value.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per design, such as :func:`relsim.sweep` returns.
    cost, value : str
        The column to minimise and the column to maximise.

    Returns
    -------
    pandas.DataFrame
        The frontier's rows (all columns, the original index), by increasing cost; along it
        the value increases strictly.

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
