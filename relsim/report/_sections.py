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
from relsim.report._html import Section, decimals_for, esc, interval, new_figure, number, svg, table
from relsim.report._html import scenario_value as _show

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
    #: The targets in time, by key, each "met", "missed" or "undecided" (:func:`in_time` fills
    #: it from its run); None when no run in time judged any.
    time_targets: dict[str, str] | None = None

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
        # no one key to vary: each class has its own p, each failure mode its own miss
        if s.classes:
            keys.remove("p")
        if s.failure_modes and "verifier.miss" in keys:
            keys.remove("verifier.miss")
        if s.sampling is not None:
            keys.append("sampling.n")
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
    ]
    if o.infra_failure or ctx.scenario.faults is not None:
        rows.append(("infrastructure failure (the budget ran out on a lost attempt)",
                     o.infra_failure))
    rows += [
        ("attempts per trial", o.expected_attempts),
        (f"cost per trial{ctx.unit}", o.expected_cost),
        (f"cost per success{ctx.unit}", o.cost_per_success),
    ]
    if o.expected_utility is not None:
        rows.append(("expected utility (the [utility] table's value of the outcomes)",
                     o.expected_utility))
    results: dict[str, Any] = {"this design": o}
    # the levers table's first row, by what it ranks (success, or utility with [utility])
    ranked_by = ctx.levers.attrs.get("ranked_by", "delta_success")
    best = ctx.levers.iloc[0] if len(ctx.levers) and ctx.levers.iloc[0][ranked_by] > 0 else None
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
    ]
    if o.silent_by_mode is not None:
        body.append(_silent_by_mode(ctx, o))
    body.append(svg(figure, "outcome", "How trials end: this design"
                    + (" and with its best single change" if best is not None else "")))
    return Section("outcome", "What the design achieves", "\n".join(body), ("outcome",))


def _silent_by_mode(ctx: Context, o: "Outcome") -> str:
    """The silent failures by failure mode: each mode's share of all trials, of the silent
    failures, and a bar of the latter (in text, so it prints and reads without the figure)."""
    assert o.silent_by_mode is not None
    modes = {m.name: m for m in ctx.scenario.failure_modes}
    rows = []
    for name, value in o.silent_by_mode.items():
        part = value / o.silent_failure if o.silent_failure > 0 else 0.0
        mode = modes.get(name)
        miss = None if mode is None else mode.miss
        rows.append((name, miss, value, 100 * part,
                     "\u2588" * int(round(20 * part)) or "\u00b7"))
    return (
        "<p>The silent failures by failure mode (each counted under the mode of its first "
        "accepted wrong result): the share of all trials, and of the silent failures. The "
        "mode that ships most is the one to catch first (<code>relsim levers</code> halves "
        "each mode's miss in turn).</p>\n"
        + table(("failure mode", "miss", "silent failure (share of trials)",
                 "of the silent failures (%)", ""), rows,
                numeric=(False, True, True, True, False))
    )


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
        if ctx.scenario.targets is not None:  # the file's targets in time are judged in time
            note = (
                "<p>No success target is set: give one, or set <code>target</code> in the "
                "scenario file, to see what meets one. The file's <code>[targets]</code> in "
                'time are judged in the section <a href="#time">In time</a>.</p>'
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
        cost, reason, ceiling = _cost_at(ctx, key, value), plan.get("reason"), plan.get("ceiling")
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


def _fixed(value: float, decimals: int | None, signed: bool = False) -> Any:
    """``value`` to ``decimals`` (signed: with its sign, and 0 for no change), or the number
    itself for :func:`number` to show when there is no baseline to scale by or it is not
    finite."""
    if decimals is None or not math.isfinite(value):
        return value
    if signed and value == 0:
        return "0"
    return f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"


def _cost_at(ctx: Context, key: str, value: Any) -> float | None:
    """The cost per success at ``key = value`` from the curve of ``key`` (which holds the
    planner's answers), for an answer that does not carry its own; None off the curve."""
    curve = ctx.curves.get(key)
    if curve is None or value is None:
        return None
    for point, outcome in zip(curve.values, curve.outcomes):
        if point == value:
            return outcome.cost_per_success
    return None


def levers(ctx: Context) -> Section | None:
    """The levers table and its tornado chart."""
    frame = ctx.levers
    if len(frame) == 0:
        return None
    from relsim import plot

    figure = new_figure(7.5, 1.2 + 0.36 * len(frame))
    plot.levers(frame, ax=figure.add_subplot())
    valued = "expected_utility" in frame.columns
    # the changes as `relsim levers` prints them: signed, the success in points to 3 decimals,
    # a cost or utility to the decimals of the baseline's 6 figures
    baseline = frame.attrs.get("baseline", {})
    cost = decimals_for(baseline.get("cost_per_success", math.nan))
    worth = decimals_for(baseline.get("expected_utility", math.nan))
    rows = [
        (
            row["lever"],
            ", ".join(f"{key} = {_show(value)}" for key, value in row["set"].items()),
            row["success"],  # 6 figures, as every success on the page (the curves' tables)
            f"{100 * row['delta_success']:+.3f}",
            _fixed(row["cost_per_success"], cost),
            _fixed(row["delta_cost_per_success"], cost, signed=True),
            *((_fixed(row["expected_utility"], worth),
               _fixed(row["delta_expected_utility"], worth, signed=True)) if valued else ()),
        )
        for row in frame.to_dict("records")
    ]
    ranked = ("listed by the gain in expected utility (the scenario's [utility] table: a "
              "change can raise success and lower utility, when it also ships more silent "
              "failures or costs more than the table values it; the chart shows the change in "
              "success)" if valued else "by the gain in end-to-end success")
    body = [
        f"<p>Every single change that applies to this design, evaluated exactly, {ranked}. "
        "The keys set are what to change in the scenario file to "
        "check a row (<code>relsim levers</code> prints the same table).</p>",
        svg(figure, "levers", "Change in success from each single lever (percentage points)"),
        table(
            ("lever", "set", "success", "change (points)", f"cost per success{ctx.unit}",
             f"change{ctx.unit}", *(("expected utility", "change") if valued else ())),
            rows,
            numeric=(False, False, True, True, True, True, *((True, True) if valued else ())),
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
    "samples": ("Success against the samples per attempt: this design, exact engine",
                ("sampling.n",)),
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
TIME_TABLES = ("timing", "fleet", "resources", "infra", "targets")
#: Independent trials of the timeline run (simpy plays each trial event by event: about a
#: thousand a second). All are recorded, so the distribution of durations is that of every
#: trial. A workload runs the timeline's replications (its default rule) instead, and records
#: its first replication up to this many tasks.
TIMELINE_TRIALS = 2_000
#: Trials drawn in the Gantt chart.
GANTT_TRIALS = 20
_FIGURE_ROWS = (("duration", "duration {} (seconds)"), ("wait", "mean wait for {} (seconds)"),
                ("utilisation", "utilisation of {}"), ("offered_load", "offered load of {}"))


def in_time(ctx: Context) -> Section | None:
    """In time (the timeline engine): how the run was made and how precise it is, the targets
    in time met, missed or undecided, the warnings, every figure with its interval, the
    bottleneck, the time levers, the split with timeouts and crashes, the distribution of
    durations and a Gantt chart of the first trials.

    Shown when the scenario has a time table, and left out with ``trials = 0`` like the Monte
    Carlo check. Independent trials (a batch sharing nothing) run ``min(trials, 2000)``
    trials; a workload runs the timeline's default number of replications (docs/model.md
    section 7, "Workloads"), and the levers the same number on the same seeds.
    """
    s = ctx.scenario
    if ctx.trials <= 0 or not any(getattr(s, table, None) is not None for table in TIME_TABLES):
        return None
    from relsim import plot
    from relsim.plan.sensitivity import time_levers
    from relsim.scenario import time_model
    from relsim.timeline import simulate_timeline

    time = time_model(s)
    if time.workload:  # replications of the workload (docs/model.md section 7, "Workloads")
        run = simulate_timeline(s, replications=None, seed=ctx.seed,
                                record=min(time.tasks, TIMELINE_TRIALS))
    else:
        trials = min(ctx.trials, TIMELINE_TRIALS)
        run = simulate_timeline(s, trials=trials, seed=ctx.seed, record=trials)
    levers_table = time_levers(s, seed=ctx.seed, baseline=run)
    timing = getattr(s, "timing", None)
    deadline = getattr(timing, "deadline", None)
    body = [f"<p>{esc(_how_run(run))}</p>"]
    body += [f'<p class="verdict bad">Warning: {esc(line)}</p>' for line in run.warnings]
    if run.targets:
        ctx.time_targets = {key: verdict["status"] for key, verdict in run.targets.items()}
        body.append(_targets_html(run))
    body.append(table(("quantity", "value", "standard error", "95% interval"), _figure_rows(run),
                      numeric=(False, True, True, True)))
    if run.bottleneck is not None:
        body.append(f"<p>Bottleneck: <strong>{esc(run.bottleneck)}</strong>, the limited "
                    "resource nearest its capacity (agents counted without the time their "
                    "trials wait for the others).</p>")
    if len(levers_table):
        body.append(_time_levers_html(levers_table))
    split = new_figure(7.0, 4.2)
    plot.outcome_split({"exact (no time)": ctx.exact, "in time": run}, ax=split.add_subplot())
    spread = new_figure(7.0, 4.2)
    plot.durations(run, deadline=deadline, ax=spread.add_subplot())
    figures = ["time-split", "durations"]
    body += [
        svg(split, "time-split", "How trials end, exactly without time and in time"),
        svg(spread, "durations", "Trial durations from arrival to end"),
    ]
    if run.events is not None and len(run.events):
        recorded = int(run.events["trial"].nunique())
        gantt = new_figure(7.5, 1.5 + 0.25 * min(GANTT_TRIALS, recorded))
        plot.timeline(run.events, trials=GANTT_TRIALS, ax=gantt.add_subplot())
        figures.append("gantt")
        body.append(svg(gantt, "gantt", f"The first {min(GANTT_TRIALS, recorded)} trials: work against waiting"))
    return Section("time", "In time: targets, durations, waits and utilisation", "\n".join(body),
                   tuple(figures))


def _how_run(run: Any) -> str:
    """What the timeline ran and how precise it is, in words."""
    if run.replications is None:
        words = (f"The timeline engine plays {run.trials} independent trials (seed {run.seed}) "
                 "in time: a trial past its deadline ends as a timeout and a crash as an infra "
                 "failure. They share nothing, so each is counted on its own: the standard "
                 "errors are the trials' and a batch has no throughput.")
    else:
        warm = f", the first {run.warmup:,} left out as warm-up" if run.warmup else ""
        words = (f"The timeline engine runs the workload ({run.tasks:,} tasks{warm}) "
                 f"{run.replications} times on seeds spawned from {run.seed}: agent slots, rate "
                 "limits, LLM slots and reviewers are shared, so trials are not independent, "
                 "and every figure is the mean over the replications with the standard error "
                 "of their spread and a 95% t interval.")
    if run.precision is not None:
        words += f" The mean duration's standard error is {run.precision:.1%} of it."
    return words


def _figure_rows(run: Any) -> list[tuple[str, Any, Any, str]]:
    """Every reported figure that is defined, with its standard error and interval."""
    se, intervals = run.standard_errors, run.intervals
    rows: list[tuple[str, Any, Any, str]] = []

    def add(label: str, key: str, value: Any) -> None:
        rows.append((label, value, se.get(key), interval(intervals.get(key, (None, None)))))

    for key in ("success", "silent_failure", "detected_failure", "timeout", "infra_failure",
                "expected_attempts", "expected_cost", "cost_per_success"):
        add(key.replace("_", " "), key, getattr(run, key))
    for name, label in _FIGURE_ROWS:
        for key, value in getattr(run, name).items():
            if value is not None and not (name == "wait" and run.replications is None):
                add(label.format(key), f"{name}_{key}", value)
    for key, label in (("makespan", "makespan (seconds)"), ("throughput_per_hour", "trials ended per hour"),
                       ("successes_per_hour", "successes per hour")):
        if getattr(run, key) is not None:
            add(label, key, getattr(run, key))
    return rows


_SIDES = {"success": ">=", "throughput_per_hour": ">="}


def _targets_html(run: Any) -> str:
    """The targets in time, each met, missed or undecided with its quantity's interval."""
    rows = [(key, f"{_SIDES.get(key, '<=')} {number(v['target'])}", v["estimate"],
             interval(v["ci"] or (None, None)), v["status"]) for key, v in run.targets.items()]
    met = run.meets_targets
    words = ("every target is met: each interval lies on its right side" if met else
             "not every target is met: a missed target's interval lies on the wrong side, an "
             "undecided one's straddles it (more replications may decide it)")
    return (table(("target", "wanted", "estimate", "95% interval", "verdict"), rows,
                  numeric=(False, False, True, True, False))
            + f'<p class="verdict {"good" if met else "bad"}">In time, {esc(words)}.</p>')


def _time_levers_html(levers: Any) -> str:
    """The time levers: each change, what it sets, and each quantity's change with its interval."""
    quantities = levers.attrs["quantities"]
    header = ["lever", "sets", *(f"{q}: change (95% interval)" for q in quantities)]
    rows = []
    for row in levers.to_dict("records"):
        cells: list[Any] = [row["lever"], ", ".join(f"{k} = {_show(v)}" for k, v in row["set"].items())]
        for q in quantities:
            change = f"{number(row[f'delta_{q}'], 4)} {interval((row[f'delta_{q}_low'], row[f'delta_{q}_high']), 4)}"
            status = row.get(f"status_{q}")
            cells.append(change + (f" {status}" if status else ""))
        rows.append(cells)
    runs = (f"{levers.attrs['replications']} replications" if levers.attrs["replications"]
            else f"{levers.attrs['trials']} trials")
    return (f"<p>Time levers: each single change in time (a shared resource, the review, the "
            f"deadline), run on the baseline's seeds ({esc(runs)} each), so a change's effect is measured against the "
            "same tasks; a verdict is the target's at the changed design.</p>"
            + table(header, rows, numeric=(False, False, *(False,) * len(quantities))))


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


def _percent(share: float | None) -> str:
    """A share of time as ``relsim timeline`` prints it (``85.0%``; ``-`` when there is none)."""
    return "-" if share is None else f"{share:.1%}"


def _z(estimate: float, exact: float, se: float) -> float | None:
    """(estimate - exact) / se; None when the run has no spread to judge by (se = 0)."""
    if not math.isfinite(se) or se <= 0:
        return 0.0 if estimate == exact else None
    return (estimate - exact) / se
