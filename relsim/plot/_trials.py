"""Figures of trial data: pass@k, pass^k beyond the trials run, and paired differences."""

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

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.
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


def pass_k_extrapolated(analysis: Any, *, ax: "Axes | None" = None) -> "Axes":
    r"""pass@k and pass^k of the fitted task difficulty against k, with their bands, beyond
    the trials run.

    Each curve is the fit's value at every k from 1 to K (:meth:`relsim.evalstats.
    DifficultyFit.extrapolate`), its band the 95% interval of the bootstrap refits over tasks;
    the points are pass^k as observed for each k that was run (the fit's check). A dotted line
    marks the most trials of a task: right of it the curves are extrapolated, from the shape of
    the difficulty distribution rather than from trials.

    Parameters
    ----------
    analysis : TrialAnalysis or mapping
        :func:`relsim.evalstats.analyze`'s result made with ``extrapolate=K``, or its
        ``extrapolated`` mapping (``pass_at_k`` and ``pass_hat_k``: k -> ``estimate``, ``ci``,
        ``extrapolated``; ``check``: the observed pass^k).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> entry = lambda e, lo, hi, x: {"estimate": e, "ci": [lo, hi], "extrapolated": x}
    >>> drawn = pass_k_extrapolated({
    ...     "pass_at_k": {"1": entry(0.6, 0.5, 0.7, False), "2": entry(0.8, 0.7, 0.9, True)},
    ...     "pass_hat_k": {"1": entry(0.6, 0.5, 0.7, False), "2": entry(0.4, 0.3, 0.5, True)},
    ...     "check": [{"k": 1, "observed": 0.62, "fitted": 0.6}]})
    >>> [line.get_ydata().tolist() for line in drawn.lines[:2]]
    [[0.6, 0.8], [0.6, 0.4]]
    """
    table = getattr(analysis, "extrapolated", analysis)
    if not (isinstance(table, Mapping) and isinstance(table.get("pass_hat_k"), Mapping)
            and isinstance(table.get("pass_at_k"), Mapping)):
        raise invalid("analysis", "a TrialAnalysis made with extrapolate=K, or its extrapolated "
                      "mapping", type(analysis).__name__)
    ax = axes_or_new(ax)
    labels = {"pass_at_k": "pass@k (any of k succeeds)", "pass_hat_k": "pass^k (all k succeed)"}
    colors = {"pass_at_k": "tab:blue", "pass_hat_k": "tab:red"}
    run = 0
    for metric in ("pass_at_k", "pass_hat_k"):
        rows = sorted(table[metric].items(), key=lambda item: int(item[0]))
        ks = np.array([int(k) for k, _ in rows], dtype=float)
        estimate = np.array([row["estimate"] for _, row in rows], dtype=float)
        bounds = np.array([row["ci"] for _, row in rows], dtype=float).reshape(-1, 2)
        ax.plot(ks, estimate, color=colors[metric], marker=".", label=labels[metric])
        ax.fill_between(ks, bounds[:, 0], bounds[:, 1], color=colors[metric], alpha=0.18,
                        linewidth=0, label=f"{metric.replace('_at_', '@').replace('_hat_', '^')}"
                        " 95% interval")
        run = max(run, max((int(k) for k, row in rows if not row["extrapolated"]), default=0))
    check = table.get("check") or []
    if check:
        ax.plot([c["k"] for c in check], [c["observed"] for c in check], linestyle="none",
                marker="o", markerfacecolor="none", color="black", label="pass^k observed")
    if run and run < len(table["pass_hat_k"]):
        ax.axvline(run + 0.5, color="0.5", linestyle=":", linewidth=1)
        ax.text(run + 0.5, 0.65, "trials run | extrapolated", rotation=90, ha="right",
                va="center", fontsize="small", color="0.35")
    ax.set_xlabel("k (trials per task)")
    ax.set_ylabel("estimate with 95% interval (probability)")
    ax.set_ylim(0.0, 1.02)
    ax.set_title("pass@k and pass^k of the fitted task difficulty")
    # below the axes: the curves span the whole height between them
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
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

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.

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


