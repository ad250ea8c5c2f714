"""The sections of the design-review report, one function each, in reading order.

A section is a function ``(Context) -> Section | None`` (None: it does not apply to this
scenario). To add one, write the function and put it in :data:`SECTIONS` (or pass your own
tuple to :func:`relsim.report.render`). Sections read what they need from the
:class:`Context`, which computes each shared result (the exact outcome, the levers, the Monte
Carlo run) once; they hold no modelling logic of their own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable

from relsim.scenario import trial_model
from relsim.report import explorer
from relsim.report._html import Section, esc, new_figure, number, svg, table

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from relsim.plan import Curve
    from relsim.results import Outcome, SimulatedOutcome
    from relsim.scenario import Scenario

#: A Monte Carlo estimate further than this many standard errors from the exact value is
#: flagged (the tolerance of the project's statistical tests).
Z_LIMIT = 5.0


@dataclass
class Context:
    """What the sections share: the scenario, the report's settings and the results."""

    scenario: "Scenario"
    source: str
    target: float | None
    trials: int
    seed: int

    @cached_property
    def exact(self) -> "Outcome":
        from relsim.exact import evaluate

        return evaluate(self.scenario)

    @cached_property
    def levers(self) -> "pd.DataFrame":
        from relsim.plan import levers

        return levers(self.scenario)

    @cached_property
    def monte_carlo(self) -> "SimulatedOutcome":
        """The check's run, every trial recorded: its convergence is drawn trial by trial."""
        from relsim.montecarlo import simulate

        return simulate(self.scenario, trials=self.trials, seed=self.seed, record=self.trials)

    @cached_property
    def plans(self) -> dict[str, Any]:
        """The planner's answers for the target, by quantity (a :class:`relsim.plan.Plan`, or
        the message of a quantity that cannot be planned for this scenario); empty without a
        target."""
        from relsim import plan as planner

        if self.target is None:
            return {}
        quantities = ["retries", "verifier", "p"]
        if self.scenario.checkpoints is not None:
            quantities.append("checkpoints")
        out: dict[str, Any] = {}
        for quantity in quantities:
            try:
                out[quantity] = planner.solve(self.scenario, quantity, self.target)
            except ValueError as error:  # this quantity cannot be planned for this scenario
                out[quantity] = str(error)
        return out

    @cached_property
    def curves(self) -> dict[str, "Curve"]:
        """The design over each lever's range (:func:`relsim.plan.curve`), by scenario key,
        holding the planner's answers and the single levers' values, so that every number of
        the target and levers tables for one key is a point of its curve."""
        from relsim.plan import curve

        s = self.scenario
        keys = ["p"]
        if s.verifier is not None:
            keys = ["retries.per_step", "verifier.miss", "verifier.false_reject", "p"]
        if s.checkpoints is not None:
            keys.append("checkpoints.every")
        return {key: curve(s, key, also=_also(self, key)) for key in keys}

    @property
    def unit(self) -> str:
        """The scenario's cost unit as a suffix for a heading (`` (USD)``), or ``""``."""
        unit = self.scenario.cost.unit
        return f" ({unit})" if unit else ""

    @property
    def meets_target(self) -> bool | None:
        if self.target is None:
            return None
        return self.exact.success >= self.target


# ------------------------------------------------------------------------------ sections
def design(ctx: Context) -> Section:
    """The design as a table of its scenario keys."""
    s = ctx.scenario
    rows = [(key, _show(value)) for key, value in _flatten(s.to_dict())]
    if s.target is not None and ctx.target != s.target:
        # the file's target is not the one this review judges against: say which is which
        rows = [(key, f"{value} (the file's; this review judges against {ctx.target:g})"
                 if key == "target" else value) for key, value in rows]
    if s.checkpoints is not None:
        rows.append(("checkpoint positions", _show(list(trial_model(s).checkpoint_positions))))
    body = [
        f"<p>Scenario file <code>{esc(ctx.source)}</code>: a chain of {s.steps} steps. Every "
        "key the file sets (defaults left out):</p>",
        table(("key", "value"), rows),
    ]
    return Section("design", "The design", "\n".join(body))


def outcome(ctx: Context) -> Section:
    """The exact outcome, and its split against the best single lever."""
    o = ctx.exact
    rows = [
        ("success", o.success),
        ("silent failure (wrong, and nobody caught it)", o.silent_failure),
        ("detected failure (stopped, the failure is known)", o.detected_failure),
        ("attempts per trial", o.expected_attempts),
        (f"cost per trial{ctx.unit}", o.expected_cost),
        (f"cost per success{ctx.unit}", o.cost_per_success),
    ]
    results: dict[str, Any] = {"this design": o}
    best = ctx.levers.iloc[0] if len(ctx.levers) and ctx.levers.iloc[0]["delta_success"] > 0 else None
    if best is not None:
        from relsim.exact import evaluate
        from relsim.plan.sensitivity import apply

        results[f"with: {best['lever']}"] = evaluate(apply(ctx.scenario, best["set"]))
    from relsim import plot

    figure = new_figure(7.0, 4.2)
    plot.outcome_split(results, ax=figure.add_subplot())
    share = 100 * o.silent_failure / (1 - o.success) if o.success < 1 else 0.0
    body = [
        "<p>Exact outcome of one trial (exact engine).</p>",
        table(("quantity", "value"), rows, numeric=(False, True)),
        f"<p>Of the trials that fail, {share:.1f}% fail <em>silently</em>: they return a "
        "wrong result that looks like a success.</p>",
        svg(figure, "outcome", "How trials end: this design"
            + (" and with its best single change" if best is not None else "")),
    ]
    return Section("outcome", "What the design achieves", "\n".join(body), ("outcome",))


#: The target table's rows: planner quantity -> (words, the scenario key it sets).
PLANNED = {
    "retries": ("least retries per step", "retries.per_step"),
    "verifier": ("largest verifier miss", "verifier.miss"),
    "false_reject": ("largest verifier false_reject", "verifier.false_reject"),
    "p": ("least per-attempt success p", "p"),
    "checkpoints": ("checkpoint spacing of least cost", "checkpoints.every"),
}


def target(ctx: Context) -> Section:
    """The target, whether the design meets it, and what meets it (the planner's answers)."""
    if ctx.target is None:
        note = (
            "<p>No target is set: give one, or set <code>target</code> in the scenario file, "
            "to see what meets one.</p>"
        )
        return Section("target", "The target", note)
    from relsim import formulas

    goal = ctx.target
    margin = ctx.exact.success - goal
    if margin >= 0:
        verdict = (f'<p class="verdict good">Target {goal:g} met: success {ctx.exact.success:.6f}, '
                   f"{100 * margin:.2f} percentage points above.</p>")
    else:
        verdict = (f'<p class="verdict bad">Target {goal:g} NOT met: success '
                   f"{ctx.exact.success:.6f}, {100 * -margin:.2f} percentage points short.</p>")
    required = formulas.required_step_success(goal, ctx.scenario.steps)
    rows = []
    for quantity, found in ctx.plans.items():
        if isinstance(found, str):
            rows.append((PLANNED[quantity][0], "-", None, None, "not applicable", found))
            continue
        rows.append(_plan_row(ctx, quantity, found))
        if quantity == "verifier" and "false_reject" in found.details:
            rows.append(_plan_row(ctx, "false_reject", found.details["false_reject"]))
    body = [
        verdict,
        f"<p>{ctx.scenario.steps} steps at target {goal:g} need each step to succeed with "
        f"probability {required:.6f} or more. What would meet the target, one quantity at a "
        "time (everything else as designed; exact engine). When none does, the value is "
        "<em>none</em> and the success is the best that quantity can buy:</p>",
        table(
            ("change", "value", "success", f"cost per success{ctx.unit}", "meets target", "why not"),
            rows,
            numeric=(False, True, True, True, False, False),
        ),
    ]
    return Section("target", "The target and what meets it", "\n".join(body))


def _plan_row(ctx: Context, quantity: str, plan: Any) -> tuple[Any, ...]:
    """One row of the target table: a Plan, or the verifier plan's ``false_reject`` details."""
    words, key = PLANNED[quantity]
    if isinstance(plan, dict):  # the false_reject answer of the verifier plan
        value, success, feasible = plan["value"], plan["success"], plan["feasible"]
        cost, reason, ceiling = None, plan.get("reason"), plan.get("ceiling")
    else:
        value, success, feasible = plan.value, plan.success, plan.feasible
        cost, reason, ceiling = plan.cost_per_success, plan.reason, plan.ceiling
    if feasible:
        return (words, value, success, cost, "yes", "")
    # Infeasible: no value meets the target; say where the best success lies, beside the
    # design's own value, so that "the nearest design" cannot read as an allowance.
    mine = ctx.curves[key].design_value if key in ctx.curves else None
    own = f"; the design's: {number(mine)}" if mine is not None else ""
    best = success if ceiling is None else ceiling
    why = (f"no {key} meets {ctx.target:g}: success is at most {best:.6f}, reached (to "
           f"within 1e-6) at {key} = {number(value)}{own}. {reason or ''}").strip()
    return (words, "none", success, cost, "no", why)


def levers(ctx: Context) -> Section | None:
    """The levers table and its tornado chart."""
    frame = ctx.levers
    if len(frame) == 0:
        return None
    from relsim import plot

    figure = new_figure(7.5, 1.2 + 0.36 * len(frame))
    plot.levers(frame, ax=figure.add_subplot())
    rows = [
        (
            row["lever"],
            ", ".join(f"{key} = {_show(value)}" for key, value in row["set"].items()),
            row["success"],
            100 * row["delta_success"],
            row["cost_per_success"],
            row["delta_cost_per_success"],
        )
        for row in frame.to_dict("records")
    ]
    body = [
        "<p>Every single change that applies to this design, evaluated exactly, by the gain "
        "in end-to-end success. The keys set are what to change in the scenario file to "
        "check a row (<code>relsim levers</code> prints the same table).</p>",
        svg(figure, "levers", "Change in success from each single lever (percentage points)"),
        table(
            ("lever", "set", "success", "change (points)", f"cost per success{ctx.unit}",
             f"change{ctx.unit}"),
            rows,
            numeric=(False, False, True, True, True, True),
        ),
    ]
    return Section("levers", "The levers: which change buys the most", "\n".join(body), ("levers",))


#: The figures of the ranges section: figure name -> (caption, the curves' keys).
RANGES = {
    "retries": ("Success against the retry budget per step: this design, exact engine",
                ("retries.per_step",)),
    "verifier": ("Success against the verifier's error rates: this design, exact engine",
                 ("verifier.miss", "verifier.false_reject")),
    "agent": ("Success against the per-attempt success p: this design, exact engine", ("p",)),
    "checkpoints": ("Success and cost per success against the checkpoint spacing: this design, "
                    "exact engine", ("checkpoints.every",)),
}
#: The planner's answer on each curve: key -> the quantity of :data:`PLANNED`.
_PLANNED_BY_KEY = {key: quantity for quantity, (_, key) in PLANNED.items()}


def ranges(ctx: Context) -> Section:
    """This design over each lever's range (:func:`relsim.plan.curve`): what more retries, a
    better verifier, a better agent and other checkpoint spacings buy, with the ceiling of
    retries and the planner's answers on the curves; each figure's numbers in a table."""
    from relsim import plot

    curves = ctx.curves
    body = [
        "<p>Each figure is <strong>this design</strong>, judged by the exact engine at every "
        "value of one quantity (set the same on every step; everything else as designed). "
        "The large dot is the design (a dash-dot line when its steps differ, so that it is "
        "not on the curve), diamonds are the planner's answers of the target table, and the "
        "dashed line is the ceiling of more retries: the success unlimited retries per step "
        "reach. The numbers behind each figure are under it.</p>"
    ]
    figures = []
    for name, (caption, keys) in RANGES.items():
        shown = [key for key in keys if key in curves]
        if not shown:
            continue
        panels = len(shown) + (1 if name == "checkpoints" else 0)
        figure = new_figure(7.0, 4.4 * panels)  # panels one above the other: wide legends fit
        axes = figure.subplots(panels, 1, squeeze=False)[:, 0]
        for ax, key in zip(axes, shown):
            plot.curve(curves[key], target=ctx.target, marks=_marks(ctx, key),
                       unit=ctx.scenario.cost.unit, ax=ax)
        if name == "checkpoints":
            plot.curve(curves[shown[0]], y="cost_per_success", marks=_marks(ctx, shown[0]),
                       unit=ctx.scenario.cost.unit, ax=axes[-1])
        body.append(svg(figure, name, caption))
        body += [_numbers(ctx, key) for key in shown]
        figures.append(name)
    return Section("ranges", "What each lever buys: the design over its range", "\n".join(body),
                   tuple(figures))


def _marks(ctx: Context, key: str) -> dict[str, Any]:
    """The planner's answer on the curve of ``key``, as :func:`relsim.plot.curve` marks."""
    quantity = _PLANNED_BY_KEY.get(key)
    plan = ctx.plans.get("verifier" if quantity == "false_reject" else quantity or "")
    if plan is None or isinstance(plan, str):
        return {}
    if quantity == "false_reject":
        answer = plan.details.get("false_reject")
        if answer is None:
            return {}
        value, feasible = answer["value"], answer["feasible"]
    else:
        value, feasible = plan.value, plan.feasible
    if value is None:
        return {}
    words = "meets the target" if feasible else "the best; none meets the target"
    return {f"planner ({words})": value}


def _numbers(ctx: Context, key: str) -> str:
    """The numbers behind the curve of ``key``: a table in a ``<details>`` under its figure."""
    c = ctx.curves[key]
    marks = {value: label for label, value in _marks(ctx, key).items()}
    rows = []
    for value, o in zip(c.values, c.outcomes):
        notes = []
        if value == c.design_value:
            notes.append("the design")
        if value in marks:
            notes.append(marks[value])
        rows.append((value, o.success, o.cost_per_success, "; ".join(notes)))
    if c.ceiling is not None:
        rows.append((f"{c.ceiling_at} and more", c.ceiling, None,
                     f"ceiling: {c.ceiling_note}"))
    return (
        f'<details class="numbers" data-curve="{esc(key)}"><summary>The numbers: {esc(key)}'
        "</summary>\n"
        + table((key, "success", f"cost per success{ctx.unit}", "note"), rows,
                numeric=(True, True, True, False))
        + "</details>"
    )


def _also(ctx: Context, key: str) -> list[Any]:
    """The values the curve of ``key`` must hold besides its range: the planner's answer and
    the single lever that sets ``key`` (one more retry, a rate halved, a point more p,
    checkpoints twice as often), so the tables' numbers are points of the figure."""
    out = list(_marks(ctx, key).values())
    for changes in ctx.levers["set"]:
        if list(changes) == [key] and not isinstance(changes[key], list):
            out.append(changes[key])
    return out


def compounding(ctx: Context) -> Section:
    """Context: where the design sits on the compounding curves of uniform chains."""
    import numpy as np

    from relsim import plot

    s = ctx.scenario
    success = ctx.exact.success
    per_step = success ** (1.0 / s.steps)
    last = max(50, 2 * s.steps)
    steps = np.unique(np.round(np.linspace(1, last, min(last, 200))).astype(int))
    figure = new_figure(7.0, 4.2)
    ax = figure.add_subplot()
    plot.compounding(p=(0.9, 0.95, 0.99, per_step), steps=steps, target=ctx.target, ax=ax)
    ax.axvline(s.steps, color="gray", linewidth=0.8)
    ax.plot([s.steps], [success], linestyle="none", marker="o", markersize=8, color="black",
            label=f"this design: {s.steps} steps, {success:.6f} (exact engine)")
    ax.set_title("Errors compound: uniform chains, and where this design sits")
    ax.legend()
    body = [
        f"<p>Context, not this design's engine: chains of identical independent steps, whose "
        f"success is p<sup>n</sup>. This design's {s.steps} steps succeed end to end with "
        f"{success:.6f} (the dot), as a uniform chain would whose steps each succeeded with "
        f"{per_step:.6f} (the geometric mean; its curve passes through the dot). The grey "
        "line marks the design's length.</p>",
        svg(figure, "compounding", "End-to-end success against the number of steps: uniform chains"),
    ]
    return Section("compounding", "Context: errors compound", "\n".join(body), ("compounding",))


def monte_carlo(ctx: Context) -> Section | None:
    """A Monte Carlo run checked against the exact value (z-score) and its convergence."""
    if ctx.trials <= 0:
        return None
    from relsim import plot

    mc = ctx.monte_carlo
    exact = ctx.exact.success
    se = mc.standard_errors.get("success", math.nan)
    z = _z(mc.success, exact, se)
    ok = z is not None and abs(z) < Z_LIMIT
    figure = new_figure(7.0, 4.2)
    plot.convergence(mc, ctx.exact, ax=figure.add_subplot())
    rows = [
        ("trials", mc.trials),
        ("seed", mc.seed),
        ("Monte Carlo success", mc.success),
        ("its standard error", se),
        ("exact success", exact),
        ("z-score", z),
    ]
    verdict_class = "good" if ok else "bad"
    words = (f"agree: |z| < {Z_LIMIT:g}" if ok else
             f"DISAGREE: |z| >= {Z_LIMIT:g} (or no spread to judge by); one engine has a bug "
             "or the run is too short")
    body = [
        "<p>The Monte Carlo engine plays trial by trial what the exact engine computes; the two "
        "must agree within Monte Carlo error.</p>",
        table(("quantity", "value"), rows, numeric=(False, True)),
        f'<p class="verdict {verdict_class}">Exact and Monte Carlo {esc(words)}.</p>',
        svg(figure, "convergence", "Running Monte Carlo estimate of success against the exact value"),
    ]
    return Section("montecarlo", "Check: Monte Carlo against exact", "\n".join(body), ("convergence",))


#: The time tables of docs/model.md section 7; a scenario with any of them gets a time section.
TIME_TABLES = ("timing", "fleet", "resources", "infra")
#: Trials of the timeline run (simpy plays each trial event by event: about a thousand a
#: second). All are recorded, so the distribution of durations is that of every trial: the
#: first trials of a fleet alone would miss the queue that later ones wait in.
TIMELINE_TRIALS = 2_000
#: Trials drawn in the Gantt chart.
GANTT_TRIALS = 20


def in_time(ctx: Context) -> Section | None:
    """In time (the timeline engine): the split with timeouts and crashes, durations, waits
    and utilisation, the distribution of durations and a Gantt chart of the first trials.

    Shown when the scenario has a time table, and left out with ``trials = 0`` like the Monte
    Carlo check.
    """
    s = ctx.scenario
    if ctx.trials <= 0 or not any(getattr(s, table, None) is not None for table in TIME_TABLES):
        return None
    from relsim import plot
    from relsim.timeline import simulate_timeline

    trials = min(ctx.trials, TIMELINE_TRIALS)
    run = simulate_timeline(s, trials=trials, seed=ctx.seed, record=trials)
    timing = getattr(s, "timing", None)
    deadline = getattr(timing, "deadline", None)
    se = run.standard_errors
    rows: list[tuple[str, Any, Any]] = [
        (key.replace("_", " "), getattr(run, key), se.get(key))
        for key in ("success", "silent_failure", "detected_failure", "timeout", "infra_failure")
    ]
    rows += [(f"duration {key} (seconds)", value, se.get("duration") if key == "mean" else None)
             for key, value in run.duration.items()]
    rows += [(f"mean wait for {key} (seconds)", value, None) for key, value in run.wait.items()]
    rows += [(f"utilisation of {key}", _percent(value), None) for key, value in run.utilisation.items()]
    rows += [
        ("makespan (seconds)", run.makespan, None),
        ("trials ended per hour", run.throughput_per_hour, None),
        ("successes per hour", run.successes_per_hour, None),
    ]
    split = new_figure(7.0, 4.2)
    plot.outcome_split({"exact (no time)": ctx.exact, "in time": run}, ax=split.add_subplot())
    spread = new_figure(7.0, 4.2)
    plot.durations(run, deadline=deadline, ax=spread.add_subplot())
    figures = ["time-split", "durations"]
    body = [
        f"<p>The timeline engine plays {run.trials} trials (seed {run.seed}) in time: agent "
        "slots, rate limits, LLM slots and reviewers are shared, a trial past its deadline "
        "ends as a timeout and a crash as an infra failure. Standard errors are the run's.</p>",
        table(("quantity", "value", "standard error"), rows, numeric=(False, True, True)),
        svg(split, "time-split", "How trials end, exactly without time and in time"),
        svg(spread, "durations", "Trial durations from arrival to end"),
    ]
    if run.events is not None and len(run.events):
        gantt = new_figure(7.5, 1.5 + 0.25 * min(GANTT_TRIALS, run.trials))
        plot.timeline(run.events, trials=GANTT_TRIALS, ax=gantt.add_subplot())
        figures.append("gantt")
        body.append(svg(gantt, "gantt", f"The first {min(GANTT_TRIALS, run.trials)} trials: work against waiting"))
    return Section("time", "In time: durations, waits and utilisation", "\n".join(body), tuple(figures))


#: The report's sections in reading order; a new section is one more function here.
SECTIONS: tuple[Callable[[Context], Section | None], ...] = (
    design,
    outcome,
    target,
    levers,
    ranges,
    compounding,
    explorer.section,
    monte_carlo,
    in_time,
)


# ------------------------------------------------------------------------------ helpers
def _flatten(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, f"{name}.")
        else:
            rows.append((name, value))
    return rows


def _show(value: Any) -> str:
    """A scenario value for a table; a list with repeats is run-length coded, so 30 steps
    of ``p`` read ``[0.97 x11, 0.8, 0.97 x11, 0.75, 0.97 x6]``."""
    if isinstance(value, (list, tuple)):
        runs: list[list[Any]] = []
        for item in value:
            if runs and runs[-1][0] == item:
                runs[-1][1] += 1
            else:
                runs.append([item, 1])
        parts = [_show(item) + (f" \u00d7{count}" if count > 1 else "") for item, count in runs]
        return "[" + ", ".join(parts) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.12g}"
    if value is None:
        return "none"
    return str(value)


def _percent(share: float | None) -> str:
    """A share of time as ``relsim timeline`` prints it (``85.0%``; ``-`` when there is none)."""
    return "-" if share is None else f"{share:.1%}"


def _z(estimate: float, exact: float, se: float) -> float | None:
    """(estimate - exact) / se; None when the run has no spread to judge by (se = 0)."""
    if not math.isfinite(se) or se <= 0:
        return 0.0 if estimate == exact else None
    return (estimate - exact) / se
