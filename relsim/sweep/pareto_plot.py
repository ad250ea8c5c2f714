"""The figure of a sweep: every design, and the cost-reliability frontier through them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from relsim.sweep.frontier import frontier

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = ["pareto"]

#: Axis labels, with units, of the columns a sweep reports.
LABELS = {
    "success": "success (probability per trial)",
    "silent_failure": "silent failure (probability per trial)",
    "detected_failure": "detected failure (probability per trial)",
    "expected_attempts": "attempts per trial",
    "expected_cost": "cost per trial (scenario cost units)",
    "cost_per_success": "cost per success (scenario cost units)",
}


def pareto(
    frame: "pd.DataFrame",
    cost: str = "cost_per_success",
    value: str = "success",
    ax: "Axes | None" = None,
    annotate: str | Sequence[str] | None = None,
) -> "Axes":
    """Draw every design as a point and the frontier (:func:`frontier`) as a line.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per design, such as :func:`relsim.sweep` returns.
    cost, value : str
        The columns on the x axis (minimised) and the y axis (maximised).
    ax : matplotlib Axes or None
        Where to draw; None: a new figure's axes.
    annotate : str, list of str or None
        Columns whose values label each frontier point: one column gives its value alone
        (``annotate="point"`` numbers the points), several give ``key value, ...`` with the
        last part of each dotted key.

    Returns
    -------
    matplotlib.axes.Axes
        The axes: a scatter of the designs (``gid="designs"``) and the frontier line
        (``gid="frontier"``), through the frontier's rows by increasing cost. Designs with a
        non-finite cost or value (cost per success of a design that never succeeds) cannot
        be placed and are left out of both.
    """
    import numpy as np

    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(7.5, 4.8))
    best = frontier(frame, cost=cost, value=value)  # checks the columns
    costs = frame[cost].to_numpy(dtype=float)
    values = frame[value].to_numpy(dtype=float)
    shown = np.isfinite(costs) & np.isfinite(values)
    ax.scatter(costs[shown], values[shown], s=18, color="0.6", alpha=0.8, gid="designs",
               label=f"every design ({int(shown.sum())})", zorder=2)
    line = best[np.isfinite(best[cost].to_numpy(dtype=float)) & np.isfinite(best[value].to_numpy(dtype=float))]
    ax.plot(line[cost].to_numpy(dtype=float), line[value].to_numpy(dtype=float), "o-",
            color="tab:red", markersize=5, linewidth=1.5, gid="frontier",
            label=f"frontier ({len(line)})", zorder=3)
    if annotate is not None:
        names = [annotate] if isinstance(annotate, str) else list(annotate)
        for rank, (_, row) in enumerate(line.iterrows()):
            # the last part of a dotted key is enough to read ("miss 0.02, per_step 3")
            if len(names) == 1:
                text = _format(row[names[0]])
            else:
                text = ", ".join(f"{name.rsplit('.', 1)[-1]} {_format(row[name])}" for name in names)
            # labels below-right of their point, staggered so that neighbours do not overlap
            ax.annotate(text, (row[cost], row[value]), textcoords="offset points",
                        xytext=(8 + 12 * (rank % 2), -12 - 11 * (rank % 4)), fontsize=7, color="tab:red",
                        arrowprops={"arrowstyle": "-", "color": "tab:red", "alpha": 0.4, "lw": 0.6})
    ax.set_xlabel(LABELS.get(cost, cost))
    ax.set_ylabel(LABELS.get(value, value))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")
    return ax


def _format(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
