"""Figures of a timeline run: durations and a Gantt chart."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from relsim import checks
from relsim.errors import invalid
from relsim.plot._common import OUTCOME_COLORS, OUTCOME_LABELS, axes_or_new

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.axes import Axes

# -------------------------------------------------------------------------------- time
#: What an interval of a trial's timeline is, by the event that opens it (docs/model.md
#: section 7's event log): an action is work until the trial's next event; a checkpoint held
#: by a reviewer (``resource = "reviewers"``, a human gate) is a human review until the
#: release; a request waits for its resource until the matching acquire; a backoff waits.
#: Other events (arrive, acquire, release, rollback, end) open no interval of their own (the
#: next event follows at once).
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
#: Colour of a human review (a human gate's checkpoint): people's time, not the agent's work.
REVIEW_COLOR = "tab:pink"

#: The intervals that are not waits: their colours and legend labels.
_INTERVAL_COLORS = {"work": WORK_COLOR, "review": REVIEW_COLOR}
_INTERVAL_LABELS = {"work": "agent work", "review": "human review"}


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
    it is the timeout share. The engine keeps the events of the first ``record`` trials
    only; when those are fewer than the trials run, the curve is of those first trials (which
    in a fleet may not have met the queue yet), and the legend, the title and the y axis say
    so plainly, while the points and the mean are of all trials. Record every trial
    (``record=trials``) for the distribution of all.

    Parameters
    ----------
    result : TimelineOutcome or mapping
        The timeline engine's result (its ``duration`` mapping with ``mean``, ``p50``,
        ``p90``, ``p99``, and ``events`` when recorded), or its ``to_dict()``.
    deadline : float, optional
        The scenario's ``timing.deadline`` in seconds.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.
    """
    summary = result.get("duration") if isinstance(result, Mapping) else getattr(result, "duration", None)
    if not isinstance(summary, Mapping) or not {"mean", "p50", "p90", "p99"} <= set(summary):
        raise invalid("result", "a timeline result with duration {mean, p50, p90, p99}", result)
    events = None if isinstance(result, Mapping) else getattr(result, "events", None)
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, (int, float))
                                 or not 0 < deadline < math.inf):
        raise invalid("deadline", "a number of seconds > 0", deadline)
    ax = axes_or_new(ax)
    spans = _trial_spans(events) if events is not None and len(events) else None
    total = getattr(result, "trials", None) if not isinstance(result, Mapping) else result.get("trials")
    title, whose = "How long trials take", "trials"
    if spans is not None and len(spans):
        seconds = np.sort((spans["end"] - spans["arrive"]).to_numpy(dtype=float))
        share = np.arange(1, seconds.size + 1) / seconds.size
        tasks = getattr(result, "tasks", None)  # a workload records its first replication
        if tasks:
            label = (f"all {tasks} tasks of the first replication" if tasks == seconds.size
                     else f"the first {seconds.size} of {tasks} tasks of the first replication (recorded)")
        elif total == seconds.size:
            label = f"all {total} trials"
        elif total:  # the first trials of a fleet need not look like the rest (no queue yet)
            label = f"only the first {seconds.size} of {total} trials: not a random sample"
            title = f"How long trials take (the curve: the first {seconds.size} of {total} only)"
            whose = f"the first {seconds.size} trials"
        else:
            label = f"recorded trials ({seconds.size})"
        ax.step(seconds, share, where="post", color=WORK_COLOR, label=label)
    quantiles = [float(summary[key]) for key in ("p50", "p90", "p99")]
    replications = getattr(result, "replications", None)
    every = (f"mean of {replications} replications" if replications
             else f"all {total} trials" if total else "all trials")
    ax.plot(quantiles, [0.5, 0.9, 0.99], linestyle="none", marker="o", color="black",
            label=f"p50, p90, p99 ({every})")
    ax.axvline(float(summary["mean"]), linestyle="--", color="gray",
               label=f"mean {float(summary['mean']):.4g} s ({every})")
    if deadline is not None:
        ax.axvline(float(deadline), color="tab:red", label=f"deadline {float(deadline):g} s")
    ax.set_xlabel("trial duration, arrival to end (seconds)")
    ax.set_ylabel(f"share of {whose} ended (probability)")
    ax.set_ylim(0.0, 1.02)
    ax.set_title(title)
    ax.legend(loc="lower right")
    return ax


def timeline(events: Any, trials: int = 20, *, ax: "Axes | None" = None) -> "Axes":
    """A Gantt chart of recorded trials: one row per trial, work and review against waiting.

    Each interval between two consecutive events of a trial is classified by the event that
    opens it (:data:`WORK_EVENTS` are the agent's work, except a checkpoint held by a reviewer,
    which is a human review; a ``request`` waits for its ``resource`` until the next event; a
    ``backoff`` waits); work is drawn blue, a human review in :data:`REVIEW_COLOR`, each kind
    of wait in its colour of :data:`WAIT_COLORS`, and the trial's end is marked with its
    outcome's colour.

    Parameters
    ----------
    events : pandas.DataFrame or iterable of mappings
        The event log (``TimelineOutcome.events``, or the JSON lines of ``relsim timeline``
        read as dicts) with ``trial``, ``time``, ``kind``, ``resource`` and ``outcome``.
    trials : int
        Draw the first this many trials of the log.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax``, or a new figure's.
    """
    count = checks.integer(trials, "trials", 1)
    frame = _events_frame(events)
    ax = axes_or_new(ax)
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
            color = _INTERVAL_COLORS.get(what) or WAIT_COLORS[what]
            label = None if what in drawn else _INTERVAL_LABELS.get(what, f"waiting: {what}")
            drawn.add(what)
            ax.broken_barh(spans, (row - 0.4, 0.8), facecolors=color, label=label)
        end = log[log["kind"] == "end"]
        if len(end):
            outcome = str(end["outcome"].iloc[-1])
            label = None if f"end {outcome}" in drawn else f"end: {OUTCOME_LABELS.get(outcome, outcome)}"
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
def _events_frame(events: Any) -> "pd.DataFrame":
    """The event log as a DataFrame with the columns the time figures read."""
    import pandas as pd

    try:
        frame = events if isinstance(events, pd.DataFrame) else pd.DataFrame(list(events))
    except (TypeError, ValueError):
        raise invalid("events", "an event log with trial, time, kind, resource, outcome", events) from None
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
    if kind == "checkpoint" and resource == "reviewers":
        return "review"
    if kind in WORK_EVENTS:
        return "work"
    if kind == "request":
        return str(resource) if resource in WAIT_COLORS else None
    if kind == "backoff":
        return "backoff"
    return None
