"""Figures of results an engine, a planner or a sweep computed."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from relsim.errors import RelsimError, invalid
from relsim.plot._common import (
    OUTCOME_COLORS,
    literal_text,
    OUTCOME_LABELS,
    axes_or_new,
    outcome_values,
    checked_target,
    target_line,
)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes

#: Half-width of the band of :func:`convergence`, in standard errors (the tests' tolerance).
BAND_SE = 5.0
#: :func:`convergence` frames its y axis on the band from this many trials on.
ZOOM_TRIALS = 100


# ----------------------------------------------------------------------- engine results
def outcome_split(results: Mapping[str, Any], *, ax: "Axes | None" = None) -> "Axes":
    """Stacked bars of the outcome split, one bar per named result.

    Each bar stacks ``success``, ``silent_failure`` and ``detected_failure`` (and
    ``timeout`` and ``infra_failure`` when some result has a share of them), so the bar's
    height is 1.

    Parameters
    ----------
    results : mapping of str to Outcome or mapping
        Name -> an :class:`relsim.Outcome` (or any object with the outcome attributes) or a
        dict with the outcome keys (such as ``Outcome.to_dict()`` or a timeline result).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = outcome_split({"a": {"success": 0.7, "silent_failure": 0.2, "detected_failure": 0.1}})
    >>> [round(float(bar.get_height()), 2) for bar in ax.patches]
    [0.7, 0.2, 0.1]
    """
    if not isinstance(results, Mapping) or not results:
        raise invalid("results", "a non-empty mapping of names to results", results)
    names = [str(name) for name in results]
    table = {name: outcome_values(name, value) for name, value in zip(names, results.values())}
    always = ("success", "silent_failure", "detected_failure")
    keys = [k for k in OUTCOME_COLORS
            if any(k in row for row in table.values())
            and (k in always or any(row.get(k, 0.0) for row in table.values()))]
    ax = axes_or_new(ax)
    positions = np.arange(len(names))
    bottom = np.zeros(len(names))
    for key in keys:
        heights = np.array([table[name].get(key, 0.0) for name in names])
        ax.bar(
            positions,
            heights,
            bottom=bottom,
            color=OUTCOME_COLORS[key],
            label=OUTCOME_LABELS[key],
        )
        bottom += heights
    ax.set_xticks(positions, [literal_text(name) for name in names])
    ax.set_ylabel("share of trials (probability)")
    ax.set_xlabel("design")
    ax.set_ylim(0.0, 1.0)
    ax.set_title("How trials end")
    ax.legend(loc="lower right")
    return ax


def levers(frame: "pd.DataFrame", *, ax: "Axes | None" = None) -> "Axes":
    """A tornado chart of the levers table: one horizontal bar per lever.

    Each bar is the lever's ``delta_success`` in percentage points (100 x the change in
    end-to-end success), largest at the top; gains are green, losses red.

    Parameters
    ----------
    frame : pandas.DataFrame
        :func:`relsim.plan.levers`'s table (needs the columns ``lever`` and
        ``delta_success``).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.
    """
    for column in ("lever", "delta_success"):
        if column not in getattr(frame, "columns", ()):
            raise invalid("frame", "the levers table (columns lever, delta_success)", frame)
    ax = axes_or_new(ax)
    ordered = frame.sort_values("delta_success", ascending=True, kind="stable")
    points = 100.0 * ordered["delta_success"].to_numpy(dtype=float)
    colors = ["tab:green" if x > 0 else "tab:red" if x < 0 else "tab:gray" for x in points]
    positions = np.arange(len(points))
    ax.barh(positions, points, color=colors)
    ax.set_yticks(positions, list(ordered["lever"]))
    ax.axvline(0.0, color="black", linewidth=0.8)
    baseline = frame.attrs.get("baseline", {}).get("success")
    where = f" from {100 * baseline:.2f}%" if baseline is not None else ""
    ax.set_xlabel(f"change in end-to-end success{where} (percentage points)")
    ax.set_title("Which single change moves success most")
    return ax


#: Axis labels, with units, of the keys a :func:`curve` varies.
_CURVE_KEYS = {
    "retries.per_step": "retries per step, the same on every step (count)",
    "verifier.miss": "verifier miss: wrong attempts it accepts (probability)",
    "verifier.false_reject": "verifier false_reject: correct attempts it rejects (probability)",
    "p": "per-attempt success p, the same on every step (probability)",
    "checkpoints.every": "a checkpoint every k steps (k, steps)",
    "sampling.n": "samples per attempt, voted on or checked in turn (count)",
}
#: What a :func:`curve` can draw on its y axis, with units.
_CURVE_VALUES = {
    "success": "end-to-end success (probability)",
    "expected_cost": "cost per trial",
    "cost_per_success": "cost per success",
}


def curve(
    result: Any,
    y: str = "success",
    target: float | None = None,
    *,
    marks: Mapping[str, Any] | None = None,
    unit: str = "",
    ax: "Axes | None" = None,
) -> "Axes":
    """A design's outcome over one lever's range: what the lever buys, and where the design is.

    Draws ``y`` at each value of :func:`relsim.plan.curve`'s result, the design as a large
    point on the curve (or, when its steps differ in the key so that it is not on the curve,
    as a horizontal line at its own value), the ceiling of ``retries.per_step`` dashed (the
    limit of more retries; past it no budget helps), the target dotted and each of ``marks``
    as a labelled diamond. Everything drawn is in the result: this function runs no engine.

    Parameters
    ----------
    result : Curve or mapping
        :func:`relsim.plan.curve`'s result, or its ``to_dict()``.
    y : str
        ``"success"``, ``"expected_cost"`` or ``"cost_per_success"``. The ceiling and the
        target are drawn with ``"success"`` only.
    target : float, optional
        Drawn as a dotted horizontal line.
    marks : mapping of str to value, optional
        Label -> one of the curve's values (the planner's answer, ...).
    unit : str
        The scenario's cost unit, for a cost axis.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> data = {"key": "retries.per_step", "values": [0, 1, 2], "success": [0.1, 0.5, 0.7],
    ...         "expected_cost": [1.0, 1.5, 1.8], "cost_per_success": [10.0, 3.0, 2.6],
    ...         "design": {"value": 1, "success": 0.5, "cost_per_success": 3.0},
    ...         "ceiling": 0.8, "ceiling_note": "unlimited retries per step"}
    >>> ax = curve(data)
    >>> ax.lines[0].get_ydata().tolist(), ax.lines[1].get_ydata().tolist()
    ([0.1, 0.5, 0.7], [0.5])
    """
    data = result.to_dict() if hasattr(result, "to_dict") else result
    needed = {"key", "values", "success", "expected_cost", "cost_per_success", "design"}
    if not isinstance(data, Mapping) or not needed <= set(data):
        raise invalid("result", "a relsim.plan.curve result or its to_dict()", result)
    if y not in _CURVE_VALUES:
        raise invalid("y", f"one of {', '.join(_CURVE_VALUES)}", y)
    goal = checked_target(target)
    key = str(data["key"])
    xs = np.asarray(data["values"], dtype=float)
    ys = np.array([np.nan if v is None else v for v in data[y]], dtype=float)
    if xs.size == 0 or xs.size != ys.size:
        raise invalid("result", "a curve with one value of y per value of its key", result)
    shown = np.isfinite(ys)
    ax = axes_or_new(ax)
    ax.plot(xs[shown], ys[shown], marker=".", color="tab:blue", label="this design, exact engine")
    design = data["design"]
    mine = design.get(y) if y != "expected_cost" else None
    if y == "expected_cost":  # the design's cost per trial is on the curve at its value
        mine = _value_at(xs, ys, design.get("value"))
    name = key.rsplit(".", 1)[-1]
    if design.get("value") is not None and mine is not None and math.isfinite(mine):
        ax.plot([float(design["value"])], [mine], linestyle="none", marker="o", markersize=9,
                color="black", label=f"the design: {name} = {design['value']:g} ({mine:.4g})")
    elif mine is not None and math.isfinite(mine):
        ax.axhline(mine, color="black", linestyle="-.", linewidth=1,
                   label=f"the design ({mine:.4g}): its steps differ in {name}, so it is off this curve")
    for label, value in (marks or {}).items():
        at = _value_at(xs, ys, value)
        if at is None:
            raise invalid(f"marks[{label!r}]", f"one of the curve's values of {key}", value)
        ax.plot([float(value)], [at], linestyle="none", marker="D", markersize=7,
                label=f"{label}: {name} = {value:.4g} ({at:.4g})")
    if y == "success":
        ceiling = data.get("ceiling")
        if ceiling is not None:
            note = data.get("ceiling_note") or "the limit of more retries"
            ax.axhline(ceiling, linestyle="--", color="black", linewidth=1,
                       label=f"ceiling {ceiling:.4f}: {note}")
        target_line(ax, goal)
        ax.set_ylim(0.0, 1.02)
    if key in ("retries.per_step", "checkpoints.every", "sampling.n"):
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    suffix = f" ({unit})" if unit and y != "success" else ""
    ax.set_xlabel(_CURVE_KEYS.get(key, key))
    ax.set_ylabel(_CURVE_VALUES[y] + suffix)
    ax.set_title(f"The design over {key}")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return ax


def _value_at(xs: np.ndarray, ys: np.ndarray, value: Any) -> float | None:
    """``ys`` where ``xs`` is ``value`` (None when ``value`` is not on the curve)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        return None
    where = np.flatnonzero(xs == float(value))
    return float(ys[where[0]]) if where.size else None


#: Axis labels, with units, of the columns a sweep reports (:func:`pareto`).
_SWEEP_LABELS = {
    "success": "success (probability per trial)",
    "silent_failure": "silent failure (probability per trial)",
    "detected_failure": "detected failure (probability per trial)",
    "timeout": "timeout (probability per trial)",
    "infra_failure": "infra failure (probability per trial)",
    "expected_attempts": "attempts per trial",
    "expected_cost": "cost per trial (scenario cost units)",
    "cost_per_success": "cost per success (scenario cost units)",
    "duration_mean": "mean trial duration (s)",
    "duration_p50": "median trial duration (s)",
    "duration_p90": "p90 trial duration (s)",
    "duration_p99": "p99 trial duration (s)",
    "makespan": "makespan (s)",
    "throughput_per_hour": "trials ended per hour",
    "successes_per_hour": "successes per hour",
}


def pareto(
    frame: "pd.DataFrame",
    frontier: "pd.DataFrame",
    cost: str = "cost_per_success",
    value: str = "success",
    *,
    ax: "Axes | None" = None,
    annotate: str | Iterable[str] | None = None,
) -> "Axes":
    """Every design of a sweep as a point, and the frontier through them as a line.

    The frontier is given, as :func:`relsim.plan.frontier` finds it: the rows that no row
    beats on both counts (no greater ``cost`` and no less ``value``, one of them strictly).
    This function only draws it.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per design, such as :func:`relsim.sweep` returns.
    frontier : pandas.DataFrame
        The frontier's rows, ``relsim.plan.frontier(frame, cost, value)``; drawn through by
        increasing ``cost``.
    cost, value : str
        The columns on the x axis (minimised) and the y axis (maximised).
    ax : matplotlib Axes, optional
    annotate : str, list of str or None
        Columns whose values label each frontier point: one column gives its value alone
        (``annotate="point"`` numbers the points), several give ``key value, ...`` with the
        last part of each dotted key.

    Returns
    -------
    matplotlib.axes.Axes
        A scatter of the designs (``gid="designs"``) and the frontier line
        (``gid="frontier"``) through the frontier's rows by increasing cost. Designs with a
        non-finite cost or value (the cost per success of a design that never succeeds)
        cannot be placed and are left out of both.
    """
    for role, column in (("cost", cost), ("value", value)):
        for table in (frame, frontier):
            if column not in getattr(table, "columns", ()):
                shown = ", ".join(map(str, getattr(table, "columns", ())))
                raise invalid(role, f"a column of the frame and of the frontier ({shown})", column)
    try:
        costs = frame[cost].to_numpy(dtype=float)
        values = frame[value].to_numpy(dtype=float)
        best = frontier.sort_values(cost, kind="stable")
        best_costs = best[cost].to_numpy(dtype=float)
        best_values = best[value].to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise RelsimError(f"cost, value: must be numeric columns, got {cost!r} and {value!r}") from None
    names = [] if annotate is None else [annotate] if isinstance(annotate, str) else list(annotate)
    for name in names:
        if name not in frontier.columns:
            raise invalid("annotate", f"columns of the frontier ({', '.join(map(str, frontier.columns))})", name)
    ax = axes_or_new(ax)
    shown = np.isfinite(costs) & np.isfinite(values)
    ax.scatter(costs[shown], values[shown], s=18, color="0.6", alpha=0.8, gid="designs",
               label=f"every design ({int(shown.sum())})", zorder=2)
    placed = np.isfinite(best_costs) & np.isfinite(best_values)
    line = best[placed]
    ax.plot(best_costs[placed], best_values[placed], "o-",
            color="tab:red", markersize=5, linewidth=1.5, gid="frontier",
            label=f"frontier ({len(line)})", zorder=3)
    for rank, (_, row) in enumerate(line.iterrows() if names else ()):
        # the last part of a dotted key is enough to read ("miss 0.02, per_step 3")
        if len(names) == 1:
            text = _label_value(row[names[0]])
        else:
            text = ", ".join(f"{name.rsplit('.', 1)[-1]} {_label_value(row[name])}" for name in names)
        # labels below-right of their point, staggered so that neighbours do not overlap
        ax.annotate(literal_text(text), (row[cost], row[value]), textcoords="offset points",
                    xytext=(8 + 12 * (rank % 2), -12 - 11 * (rank % 4)), fontsize=7, color="tab:red",
                    arrowprops={"arrowstyle": "-", "color": "tab:red", "alpha": 0.4, "lw": 0.6})
    ax.set_xlabel(_SWEEP_LABELS.get(cost, cost))
    ax.set_ylabel(_SWEEP_LABELS.get(value, value))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")
    return ax


def _label_value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def convergence(run: Any, exact: Any, *, ax: "Axes | None" = None) -> "Axes":
    r"""The running Monte Carlo estimate of success against the exact value.

    Draws the share of successes among the first ``k`` recorded trials of ``run`` for ``k``
    on a log scale, the exact success ``s`` and the band :math:`s \pm 5\sqrt{s(1-s)/k}`
    (``BAND_SE`` standard errors around the exact value, clipped to [0, 1]), which the
    estimate should never leave. The y axis frames the band from ``ZOOM_TRIALS`` trials on.
    Both results are given: this function runs no engine.

    Parameters
    ----------
    run : SimulatedOutcome or sequence
        A Monte Carlo run that recorded its trials, ``relsim.simulate(scenario, trials=n,
        seed=s, record=n)`` (its ``trajectories``' ``outcome`` column, in trial order; the
        legend names its ``seed``), or the per-trial outcomes themselves (``"success"`` or
        another outcome name, or booleans).
    exact : Outcome or float
        The exact result, ``relsim.evaluate(scenario)``, or its success in [0, 1].
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = convergence(["success", "silent_failure", "success", "success"], 0.75)
    >>> ax.lines[-1].get_ydata().tolist()  # after 1, 2, 3 and 4 trials
    [1.0, 0.5, 0.6666666666666666, 0.75]
    """
    from relsim.intervals import binomial_se

    successes = np.cumsum(_trial_successes(run))
    count = successes.size
    success = getattr(exact, "success", exact)
    if isinstance(success, bool) or not isinstance(success, (int, float, np.floating)) or not 0 <= success <= 1:
        raise invalid("exact", "an Outcome or a success in [0, 1]", exact)
    success = float(success)
    k = _log_points(count)
    estimate = successes[k - 1] / k
    # The band is around the exact value, with its own (true) standard error.
    half = np.array([BAND_SE * binomial_se(success * n, n) for n in k])
    low, high = np.clip(success - half, 0.0, 1.0), np.clip(success + half, 0.0, 1.0)
    ax = axes_or_new(ax)
    ax.fill_between(k, low, high, color="tab:blue", alpha=0.15,
                    label=f"exact \u00b1 {BAND_SE:g} standard errors")
    ax.axhline(success, color="black", linestyle="--", label=f"exact {success:.6f}")
    seed = getattr(run, "seed", None)
    total = getattr(run, "trials", count)
    label = "Monte Carlo" if total == count else f"Monte Carlo, first {count} of {total} trials"
    label += f" (seed {seed})" if seed is not None else ""
    ax.plot(k, estimate, color="tab:blue", label=label)
    ax.set_xscale("log")
    # Frame the band from ZOOM_TRIALS trials on: over the first few trials it spans all of
    # [0, 1] and would flatten the rest of the picture (earlier points are clipped, not lost).
    first = int(np.searchsorted(k, min(ZOOM_TRIALS, count)))
    margin = 0.1 * (high[first] - low[first]) or 0.01
    ax.set_ylim(max(0.0, low[first] - margin), min(1.0, high[first] + margin))
    ax.set_xlabel("trials simulated (count, log scale)")
    ax.set_ylabel("estimated success (probability)")
    ax.set_title("Monte Carlo converges to the exact value")
    ax.legend(loc="lower right")
    return ax



def _trial_successes(run: Any) -> np.ndarray:
    """Per recorded trial, in order: whether it succeeded (:func:`convergence`'s ``run``)."""
    if hasattr(run, "success"):  # a result: its recorded trials
        recorded = getattr(run, "trajectories", None)
        run = () if recorded is None or "outcome" not in recorded.columns else recorded["outcome"]
    try:
        outcomes = np.asarray(list(run) if not isinstance(run, str) else [run])
    except TypeError:  # not a sequence of outcomes
        raise invalid("run", "a run that recorded its trials (record=trials), or their outcomes", run) from None
    if outcomes.size == 0 or (outcomes.dtype.kind in "iuf" and not np.isin(outcomes, (0, 1)).all()):
        raise invalid("run", "a run that recorded its trials (record=trials), or their outcomes", run)
    return outcomes.astype(bool) if outcomes.dtype.kind in "biuf" else outcomes == "success"


def _log_points(count: int, points: int = 200) -> np.ndarray:
    """About ``points`` trial counts from 1 to ``count``, evenly spaced on a log scale."""
    k = np.unique(np.round(np.logspace(0.0, math.log10(count), points)).astype(np.int64))
    return k[(k >= 1) & (k <= count)]


