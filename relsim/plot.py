r"""Figures for design reviews, drawn with matplotlib.

Every function takes ``ax=None``: it draws on ``ax`` when given, else on a new figure
(``matplotlib.pyplot.subplots``), labels its axes with their units and returns the
``Axes``. None calls ``plt.show()``: show, save or embed the figure as you like
(``ax.figure.savefig("fig.png")``). matplotlib is imported only when a figure is drawn, so
``import relsim.plot`` stays light.

================================  ==========================================================
function                          what it draws
================================  ==========================================================
:func:`compounding`               end-to-end success :math:`p^n` against the number of steps
:func:`retries`                   end-to-end success against the per-step retry budget, with
                                  the verifier's ceiling
:func:`required_accuracy`         the per-step success a target needs, :math:`T^{1/n}`
:func:`outcome_split`             stacked bars of success / silent / detected (/ timeout /
                                  infra) for several results
:func:`levers`                    a tornado chart of :func:`relsim.plan.levers`'s table
:func:`pareto`                    every design of a sweep and the cost-reliability frontier
                                  (:func:`relsim.plan.frontier`'s rows) through them
:func:`convergence`               the running Monte Carlo estimate of success against the
                                  exact value, with a band of 5 standard errors
:func:`pass_k`                    pass@k and pass^k against k with their intervals
:func:`paired_differences`        a comparison's paired differences with their intervals
:func:`durations`                 the distribution of trial durations (timeline engine), with
                                  the deadline
:func:`timeline`                  a Gantt chart of recorded trials: work against waiting
================================  ==========================================================

The numbers drawn come from the closed forms (:mod:`relsim.formulas`) or from the results
given (an engine's, a planner's, an analysis'): a figure runs no engine, planner or
estimator; the caller does and hands it the result.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from relsim import checks
from relsim.errors import RelsimError, invalid

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = [
    "OUTCOME_COLORS",
    "compounding",
    "convergence",
    "durations",
    "levers",
    "outcome_split",
    "pareto",
    "paired_differences",
    "pass_k",
    "required_accuracy",
    "retries",
    "timeline",
]

#: The outcomes a trial can end in, in the order they are stacked, with their colours:
#: success green, the dangerous silent failure red, the known detected failure orange.
OUTCOME_COLORS = {
    "success": "tab:green",
    "silent_failure": "tab:red",
    "detected_failure": "tab:orange",
    "timeout": "tab:purple",
    "infra_failure": "tab:gray",
}
_OUTCOME_LABELS = {
    "success": "success",
    "silent_failure": "silent failure",
    "detected_failure": "detected failure",
    "timeout": "timeout",
    "infra_failure": "infra failure",
}

#: Half-width of the band of :func:`convergence`, in standard errors (the tests' tolerance).
BAND_SE = 5.0
#: :func:`convergence` frames its y axis on the band from this many trials on.
ZOOM_TRIALS = 100


# ---------------------------------------------------------------------- the closed forms
def compounding(
    p: float | Iterable[float] = (0.9, 0.95, 0.99),
    steps: Iterable[int] = range(1, 51),
    target: float | None = None,
    *,
    ax: "Axes | None" = None,
) -> "Axes":
    r"""End-to-end success :math:`p^n` against the number of steps ``n``, one line per ``p``.

    The lesson's compounding table as curves: 25 steps at 99% each finish 78% of the time.

    Parameters
    ----------
    p : float or iterable of float
        Per-step success, each in [0, 1]; one line each.
    steps : iterable of int
        The step counts on the x axis, each >= 1.
    target : float, optional
        Drawn as a dotted horizontal line.
    ax : matplotlib Axes, optional

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = compounding(p=0.9, steps=[5, 10])
    >>> [round(float(y), 3) for y in ax.lines[0].get_ydata()]
    [0.59, 0.349]
    """
    from relsim import formulas

    ps = _floats(p, "p")
    n = _steps(steps, "steps")
    goal = _target(target)
    ax = _axes(ax)
    for value in ps:
        ax.plot(n, formulas.compound(value, n), label=f"p = {value:g}")
    _target_line(ax, goal)
    ax.set_xlabel("steps in the task (count)")
    ax.set_ylabel("end-to-end success (probability)")
    ax.set_ylim(0.0, 1.02)
    ax.set_title("Errors compound: success of an n-step chain")
    ax.legend()
    return ax


def retries(
    p: float,
    steps: int,
    miss: float = 0.0,
    false_reject: float = 0.0,
    max_retries: int = 10,
    target: float | None = None,
    *,
    ax: "Axes | None" = None,
) -> "Axes":
    r"""End-to-end success against the per-step retry budget, and the verifier's ceiling.

    With ``a = p(1-f)``, ``w = (1-p)m``, ``q = pf + (1-p)(1-m)`` and
    :math:`S_r = \sum_{j\le r} q^j`, a chain of ``steps`` steps with ``r`` retries per step
    succeeds with :math:`(a S_r)^n` (:func:`relsim.formulas.verified_step`); as ``r`` grows
    this rises to the ceiling :math:`(a/(a+w))^n` (:func:`relsim.formulas.verified_ceiling`),
    drawn dashed: past it, more retries buy nothing.

    Parameters
    ----------
    p, miss, false_reject : float
        Per-attempt success and the verifier's error rates, in [0, 1].
    steps : int
        Steps in the chain, >= 1.
    max_retries : int
        The x axis runs over budgets 0..max_retries.
    target : float, optional
        Drawn as a dotted horizontal line.
    ax : matplotlib Axes, optional

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = retries(0.9, 25, miss=0.1, max_retries=3)
    >>> round(float(ax.lines[1].get_ydata()[0]), 6)  # the ceiling
    0.758626
    """
    from relsim import formulas

    n = _int(steps, "steps", low=1)
    top = _int(max_retries, "max_retries", low=0)
    goal = _target(target)
    budgets = np.arange(top + 1)
    success = formulas.verified_step(p, budgets, miss, false_reject).success ** n
    ceiling = formulas.verified_ceiling(p, miss, false_reject) ** n
    ax = _axes(ax)
    ax.plot(budgets, success, marker="o", label=f"{n} steps, p = {p:g}")
    ax.axhline(
        ceiling,
        linestyle="--",
        color="black",
        label=f"ceiling {ceiling:.4f} (miss = {miss:g}, false_reject = {false_reject:g})",
    )
    _target_line(ax, goal)
    ax.set_xlabel("retries per step (count)")
    ax.set_ylabel("end-to-end success (probability)")
    ax.set_ylim(0.0, 1.02)
    ax.set_title("Retries help up to the verifier's ceiling")
    ax.legend()
    return ax


def required_accuracy(
    target: float | Iterable[float],
    steps: Iterable[int] = range(1, 51),
    *,
    ax: "Axes | None" = None,
) -> "Axes":
    r"""The per-step success a target needs, :math:`T^{1/n}`, against the number of steps.

    One line per target (:func:`relsim.formulas.required_step_success`).

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> ax = required_accuracy(0.95, steps=[25])
    >>> round(float(ax.lines[0].get_ydata()[0]), 6)
    0.99795
    """
    from relsim import formulas

    n = _steps(steps, "steps")
    targets = _floats(target, "target")
    ax = _axes(ax)
    for value in targets:
        ax.plot(n, formulas.required_step_success(value, n), label=f"target {value:g}")
    ax.set_xlabel("steps in the task (count)")
    ax.set_ylabel("required per-step success (probability)")
    ax.set_title("How good each step must be")
    ax.legend()
    return ax


# ----------------------------------------------------------------------- engine results
def outcome_split(results: Mapping[str, Any], *, ax: "Axes | None" = None) -> "Axes":
    """Stacked bars of the outcome split, one bar per named result.

    Each bar stacks ``success``, ``silent_failure`` and ``detected_failure`` (and
    ``timeout`` and ``infra_failure`` when some result has them), so the bar's height is 1.

    Parameters
    ----------
    results : mapping of str to Outcome or mapping
        Name -> an :class:`relsim.Outcome` (or any object with the outcome attributes) or a
        dict with the outcome keys (such as ``Outcome.to_dict()`` or a timeline result).
    ax : matplotlib Axes, optional

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
    table = {name: _outcome_values(name, value) for name, value in zip(names, results.values())}
    keys = [k for k in OUTCOME_COLORS if any(k in row for row in table.values())]
    ax = _axes(ax)
    positions = np.arange(len(names))
    bottom = np.zeros(len(names))
    for key in keys:
        heights = np.array([table[name].get(key, 0.0) for name in names])
        ax.bar(
            positions,
            heights,
            bottom=bottom,
            color=OUTCOME_COLORS[key],
            label=_OUTCOME_LABELS[key],
        )
        bottom += heights
    ax.set_xticks(positions, names)
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
    """
    for column in ("lever", "delta_success"):
        if column not in getattr(frame, "columns", ()):
            raise invalid("frame", "the levers table (columns lever, delta_success)", frame)
    ax = _axes(ax)
    ordered = frame.sort_values("delta_success", ascending=True, kind="stable")
    points = 100.0 * ordered["delta_success"].to_numpy(dtype=float)
    colors = ["tab:green" if x > 0 else "tab:red" if x < 0 else "tab:gray" for x in points]
    positions = np.arange(len(points))
    ax.barh(positions, points, color=colors)
    ax.set_yticks(positions, list(ordered["lever"]))
    ax.axvline(0.0, color="black", linewidth=0.8)
    baseline = frame.attrs.get("baseline", {}).get("success")
    where = f" (from {baseline:.4f})" if baseline is not None else ""
    ax.set_xlabel(f"change in end-to-end success (percentage points){where}")
    ax.set_title("Which single change moves success most")
    return ax


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
    ax = _axes(ax)
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
        ax.annotate(text, (row[cost], row[value]), textcoords="offset points",
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
    ax = _axes(ax)
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
    ax = _axes(ax)
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
    ax = _axes(ax)
    positions = np.arange(len(names))
    ax.errorbar(values, positions, xerr=errors, fmt="o", capsize=4, color="tab:blue")
    ax.axvline(0.0, color="0.5", linewidth=1)
    ax.set_yticks(positions, names)
    ax.set_ylim(len(names) - 0.5, -0.5)  # the first quantity on top
    ax.set_xlabel("candidate - baseline, with 95% interval (each quantity's own units)")
    ax.set_title("Paired differences over the shared tasks")
    return ax


# -------------------------------------------------------------------------------- time
#: What an interval of a trial's timeline is, by the event that opens it (docs/model.md
#: section 7's event log): an action is work until the trial's next event; a request waits
#: for its resource until the matching acquire; a backoff waits. Other events (arrive,
#: acquire, release, rollback, end) open no interval of their own (the next event follows at
#: once).
WORK_EVENTS = ("attempt", "verify", "checkpoint")
#: Colours of the waits, by what is waited for.
WAIT_COLORS = {
    "agents": "tab:orange",
    "rate_limit": "tab:red",
    "llm": "tab:purple",
    "reviewers": "tab:brown",
    "backoff": "tab:gray",
}
WORK_COLOR = "tab:blue"


def durations(
    result: Any,
    deadline: float | None = None,
    *,
    ax: "Axes | None" = None,
) -> "Axes":
    r"""The distribution of trial durations (arrival to end, seconds) of a timeline run.

    Draws the empirical distribution function :math:`F(t)` = share of recorded trials that
    ended within ``t`` seconds of arriving (from the event log, when the run recorded one),
    the run's ``p50``, ``p90`` and ``p99`` over all trials as points at heights 0.5, 0.9 and
    0.99, its mean as a dashed line and the deadline as a red line: the share of trials past
    it is the timeout share.

    Parameters
    ----------
    result : TimelineOutcome or mapping
        The timeline engine's result (its ``duration`` mapping with ``mean``, ``p50``,
        ``p90``, ``p99``, and ``events`` when recorded), or its ``to_dict()``.
    deadline : float, optional
        The scenario's ``timing.deadline`` in seconds.
    ax : matplotlib Axes, optional
    """
    summary = result.get("duration") if isinstance(result, Mapping) else getattr(result, "duration", None)
    if not isinstance(summary, Mapping) or not {"mean", "p50", "p90", "p99"} <= set(summary):
        raise invalid("result", "a timeline result with duration {mean, p50, p90, p99}", result)
    events = None if isinstance(result, Mapping) else getattr(result, "events", None)
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, (int, float))
                                 or not 0 < deadline < math.inf):
        raise invalid("deadline", "a number of seconds > 0", deadline)
    ax = _axes(ax)
    spans = _trial_spans(events) if events is not None and len(events) else None
    if spans is not None and len(spans):
        seconds = np.sort((spans["end"] - spans["arrive"]).to_numpy(dtype=float))
        share = np.arange(1, seconds.size + 1) / seconds.size
        total = getattr(result, "trials", None)
        tasks = getattr(result, "tasks", None)  # a workload records its first replication
        if tasks:
            label = (f"all {tasks} tasks of the first replication" if tasks == seconds.size
                     else f"the first {seconds.size} of {tasks} tasks of the first replication (recorded)")
        elif total == seconds.size:
            label = f"all {total} trials"
        elif total:  # the first trials of a fleet need not look like the rest (no queue yet)
            label = f"the first {seconds.size} of {total} trials (recorded)"
        else:
            label = f"recorded trials ({seconds.size})"
        ax.step(seconds, share, where="post", color=WORK_COLOR, label=label)
    quantiles = [float(summary[key]) for key in ("p50", "p90", "p99")]
    replications = getattr(result, "replications", None)
    ax.plot(quantiles, [0.5, 0.9, 0.99], linestyle="none", marker="o", color="black",
            label=f"p50, p90, p99 (mean of {replications} replications)" if replications
            else "p50, p90, p99 (all trials)")
    ax.axvline(float(summary["mean"]), linestyle="--", color="gray",
               label=f"mean {float(summary['mean']):.4g} s")
    if deadline is not None:
        ax.axvline(float(deadline), color="tab:red", label=f"deadline {float(deadline):g} s")
    ax.set_xlabel("trial duration, arrival to end (seconds)")
    ax.set_ylabel("share of trials ended (probability)")
    ax.set_ylim(0.0, 1.02)
    ax.set_title("How long trials take")
    ax.legend(loc="lower right")
    return ax


def timeline(events: Any, trials: int = 20, *, ax: "Axes | None" = None) -> "Axes":
    """A Gantt chart of recorded trials: one row per trial, work against waiting.

    Each interval between two consecutive events of a trial is classified by the event that
    opens it (:data:`WORK_EVENTS` are work; a ``request`` waits for its ``resource`` until
    the next event; a ``backoff`` waits); work is drawn blue, each kind of wait in its colour
    of :data:`WAIT_COLORS`, and the trial's end is marked with its outcome's colour.

    Parameters
    ----------
    events : pandas.DataFrame or iterable of mappings
        The event log (``TimelineOutcome.events``, or the JSON lines of ``relsim timeline``
        read as dicts) with ``trial``, ``time``, ``kind``, ``resource`` and ``outcome``.
    trials : int
        Draw the first this many trials of the log.
    ax : matplotlib Axes, optional
    """
    count = _int(trials, "trials", low=1)
    frame = _events_frame(events)
    ax = _axes(ax)
    order = list(dict.fromkeys(frame["trial"]))[:count]
    drawn: set[str] = set()
    for row, trial in enumerate(order):
        log = frame[frame["trial"] == trial].sort_values("time", kind="stable")
        pieces: dict[str, list[tuple[float, float]]] = {}
        times = log["time"].to_numpy(dtype=float)
        for index, event in enumerate(log.itertuples(index=False)):
            if index + 1 == len(times) or times[index + 1] <= times[index]:
                continue
            what = _interval_kind(event.kind, event.resource)
            if what is not None:
                pieces.setdefault(what, []).append((times[index], times[index + 1] - times[index]))
        for what, spans in pieces.items():
            color = WORK_COLOR if what == "work" else WAIT_COLORS[what]
            label = None if what in drawn else ("work" if what == "work" else f"waiting: {what}")
            drawn.add(what)
            ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=color, label=label)
        end = log[log["kind"] == "end"]
        if len(end):
            outcome = str(end["outcome"].iloc[-1])
            label = None if f"end {outcome}" in drawn else f"end: {_OUTCOME_LABELS.get(outcome, outcome)}"
            drawn.add(f"end {outcome}")
            ax.plot(float(end["time"].iloc[-1]), row, marker="o", markersize=8,
                    markeredgecolor="black", linestyle="none",
                    color=OUTCOME_COLORS.get(outcome, "black"), label=label)
    ax.set_yticks(range(len(order)), [str(t) for t in order])
    ax.set_ylim(len(order) - 0.5, -0.5)  # the first trial on top
    ax.set_xlabel("time in the run (seconds)")
    ax.set_ylabel("trial (index)")
    ax.set_title("What recorded trials spend their time on")
    if drawn:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return ax


# ------------------------------------------------------------------------------ helpers
def _axes(ax: "Axes | None") -> "Axes":
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(6.4, 4.0), layout="constrained")
    return ax


def _target(target: Any) -> float | None:
    """The target as a float (None stays None); checked before anything is drawn."""
    if target is None:
        return None
    try:
        value = float(target)
    except (TypeError, ValueError):
        raise invalid("target", "a number in (0, 1]", target) from None
    if not 0.0 < value <= 1.0:
        raise invalid("target", "a number in (0, 1]", target)
    return value


def _target_line(ax: "Axes", target: float | None) -> None:
    if target is not None:
        ax.axhline(target, linestyle=":", color="tab:red", label=f"target {target:g}")


def _floats(value: Any, key: str) -> list[float]:
    values = np.atleast_1d(np.asarray(value, dtype=float)).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise invalid(key, "a number or a non-empty list of finite numbers", value)
    return [float(v) for v in values]


def _steps(value: Iterable[int], key: str) -> np.ndarray:
    steps = np.atleast_1d(np.asarray(list(value) if not np.isscalar(value) else value))
    if steps.size == 0 or steps.dtype.kind not in "iu" or steps.min() < 1:
        raise invalid(key, "integers >= 1", value)
    return steps


def _int(value: Any, key: str, low: int) -> int:
    return checks.integer(value, key, low)


def _outcome_values(name: str, result: Any) -> dict[str, float]:
    """The outcome proportions of one result (Outcome-like object or mapping)."""
    values: dict[str, float] = {}
    for key in OUTCOME_COLORS:
        if isinstance(result, Mapping):
            found = result.get(key)
        else:
            found = getattr(result, key, None)
        if found is not None:
            values[key] = float(found)
    if "success" not in values or not all(math.isfinite(v) for v in values.values()):
        raise invalid(f"results[{name!r}]", "an Outcome or a mapping with the outcome keys", result)
    return values


def _trial_successes(run: Any) -> np.ndarray:
    """Per recorded trial, in order: whether it succeeded (:func:`convergence`'s ``run``)."""
    if hasattr(run, "success"):  # a result: its recorded trials
        recorded = getattr(run, "trajectories", None)
        run = () if recorded is None or "outcome" not in recorded.columns else recorded["outcome"]
    outcomes = np.asarray(list(run) if not isinstance(run, str) else [run])
    if outcomes.size == 0 or (outcomes.dtype.kind in "iuf" and not np.isin(outcomes, (0, 1)).all()):
        raise invalid("run", "a run that recorded its trials (record=trials), or their outcomes", run)
    return outcomes.astype(bool) if outcomes.dtype.kind in "biuf" else outcomes == "success"


def _log_points(count: int, points: int = 200) -> np.ndarray:
    """About ``points`` trial counts from 1 to ``count``, evenly spaced on a log scale."""
    k = np.unique(np.round(np.logspace(0.0, math.log10(count), points)).astype(np.int64))
    return k[(k >= 1) & (k <= count)]


def _events_frame(events: Any) -> "pd.DataFrame":
    """The event log as a DataFrame with the columns the time figures read."""
    import pandas as pd

    frame = events if isinstance(events, pd.DataFrame) else pd.DataFrame(list(events))
    needed = {"trial", "time", "kind", "resource", "outcome"}
    if len(frame) == 0 or not needed <= set(frame.columns):
        raise invalid("events", "an event log with trial, time, kind, resource, outcome", events)
    return frame


def _trial_spans(events: Any) -> "pd.DataFrame":
    """Per recorded trial: the times of its ``arrive`` and ``end`` events."""
    frame = _events_frame(events)
    marks = frame[frame["kind"].isin(("arrive", "end"))]
    spans = marks.pivot_table(index="trial", columns="kind", values="time", aggfunc="last")
    if not {"arrive", "end"} <= set(spans.columns):
        return spans.iloc[0:0].reindex(columns=["arrive", "end"])
    return spans.dropna(subset=["arrive", "end"])  # a trial cut off by Ctrl-C has no end


def _interval_kind(kind: str, resource: Any) -> str | None:
    """What the interval opened by one event is: "work", a wait's name, or None."""
    if kind in WORK_EVENTS:
        return "work"
    if kind == "request":
        return str(resource) if resource in WAIT_COLORS else None
    if kind == "backoff":
        return "backoff"
    return None
