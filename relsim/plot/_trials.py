"""Figures of trial data: pass@k and paired differences."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from relsim.errors import invalid
from relsim.plot._common import axes_or_new, literal_text

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

def pass_k(analysis: Any, *, ax: "Axes | None" = None) -> "Axes":
    r"""pass@k and pass^k against k, each with its interval: "report both" in one picture.

    pass@k (some of k trials succeeds) rises with k while pass^k (all k succeed) falls; an
    agent that must work every time is judged by pass^k.

    Parameters
    ----------
    analysis : TrialAnalysis or pandas.DataFrame
        :func:`relsim.evalstats.analyze`'s result, or its ``pass_k`` table (indexed by
        (metric, k), with ``estimate``, ``ci_low`` and ``ci_high``). A k without an interval
        (NaN) is drawn without a bar.
    ax : matplotlib Axes, optional
    """
    table = getattr(analysis, "pass_k", analysis)
    if not hasattr(table, "index") or getattr(table.index, "nlevels", 1) != 2:
        raise invalid("analysis", "a TrialAnalysis or its pass_k table", analysis)
    ax = axes_or_new(ax)
    labels = {"pass_at_k": "pass@k (any of k succeeds)", "pass_hat_k": "pass^k (all k succeed)"}
    colors = {"pass_at_k": "tab:blue", "pass_hat_k": "tab:red"}
    for metric in ("pass_at_k", "pass_hat_k"):
        if metric not in table.index.get_level_values(0):
            continue
        rows = table.loc[metric].sort_index()
        ks = rows.index.to_numpy(dtype=float)
        estimate = rows["estimate"].to_numpy(dtype=float)
        low = rows["ci_low"].to_numpy(dtype=float)
        high = rows["ci_high"].to_numpy(dtype=float)
        ax.errorbar(
            ks,
            estimate,
            yerr=np.vstack([estimate - low, high - estimate]),
            marker="o",
            capsize=4,
            color=colors[metric],
            label=labels[metric],
        )
    ax.set_xlabel("k (trials per task)")
    ax.set_ylabel("estimate with 95% interval (probability)")
    ax.set_ylim(0.0, 1.02)
    ax.set_title("pass@k and pass^k")
    ax.legend()
    return ax


def paired_differences(comparison: Any, *, ax: "Axes | None" = None) -> "Axes":
    """Each quantity's paired difference (candidate - baseline) with its interval, against 0.

    One row per quantity of :func:`relsim.evalstats.compare`, in its order, the first on top;
    a quantity without a difference is left out, one without an interval has no bar.

    Parameters
    ----------
    comparison : Comparison or mapping
        :func:`relsim.evalstats.compare`'s result, or its ``to_dict()`` (``quantities``: name
        -> ``difference`` and ``ci``).
    ax : matplotlib Axes, optional

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = paired_differences({"quantities": {"success": {"difference": 0.2, "ci": [0.1, 0.3]}}})
    >>> ax.lines[0].get_xydata().tolist()
    [[0.2, 0.0]]
    """
    out = comparison if isinstance(comparison, Mapping) else getattr(comparison, "to_dict", lambda: None)()
    quantities = out.get("quantities") if isinstance(out, Mapping) else None
    if not isinstance(quantities, Mapping):
        raise invalid("comparison", "a Comparison or its to_dict()", comparison)
    rows = [(str(name), row) for name, row in quantities.items()
            if row.get("difference") is not None and math.isfinite(row["difference"])]
    names, values = [name for name, _ in rows], np.array([row["difference"] for _, row in rows], dtype=float)
    bounds = np.array([[np.nan if b is None else b for b in row["ci"]] for _, row in rows], dtype=float)
    errors = np.vstack([values - bounds.reshape(-1, 2)[:, 0], bounds.reshape(-1, 2)[:, 1] - values])
    errors[~np.isfinite(errors)] = 0.0  # no interval: a bar of no length
    ax = axes_or_new(ax)
    positions = np.arange(len(names))
    ax.errorbar(values, positions, xerr=errors, fmt="o", capsize=4, color="tab:blue")
    ax.axvline(0.0, color="0.5", linewidth=1)
    ax.set_yticks(positions, [literal_text(name) for name in names])
    ax.set_ylim(len(names) - 0.5, -0.5)  # the first quantity on top
    ax.set_xlabel("candidate - baseline, with 95% interval (each quantity's own units)")
    ax.set_title("Paired differences over the shared tasks")
    return ax


