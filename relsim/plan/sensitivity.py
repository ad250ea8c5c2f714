r"""The levers that move success (or expected utility): every single change a designer could make, judged exactly.

:func:`levers` takes a scenario, builds one variant per applicable change (a point more
``p``, the verifier's errors halved, one more retry, ...), evaluates each with the exact
engine (:func:`relsim.evaluate`) and returns a table sorted by the gain in success (in
expected utility when the design has a ``[utility]`` table). Each
row's ``set`` holds the dotted scenario keys the change sets and their new values, so anyone
can rebuild the variant (:func:`apply`) and check it.

The changes, where they apply to the scenario:

=========================================  ====================================================
lever                                      set
=========================================  ====================================================
p +1 point on every step                   ``p`` -> ``min(1, p_i + 0.01)``
p +1 point on the hardest step (step k)    ``p`` with the lowest ``p_i`` (the first such) raised
                                           a point (only when the steps differ)
verifier miss halved                       ``verifier.miss`` -> ``miss / 2``
verifier false_reject halved               ``verifier.false_reject`` -> ``false_reject / 2``
one more retry per step                    ``retries.per_step`` -> ``per_step + 1`` (1 without
                                           a ``[retries]`` table; needs a verifier)
task retry budget doubled                  ``retries.total`` -> ``max(2 total, total + 1)``
checkpoints twice as often                 ``checkpoints.every`` -> ``every // 2``
one more rollback                          ``checkpoints.rollbacks`` -> ``rollbacks + 1``
checkpoint misses halved                   ``checkpoints.detect`` -> ``1 - (1 - detect) / 2``
checkpoint false alarms halved             ``checkpoints.false_alarm`` -> ``false_alarm / 2``
confusion entered half as often            ``correlation.confusion.enter`` -> ``enter / 2``
task effect halved                         ``correlation.task_sd`` -> ``task_sd / 2``
step effect halved                         ``correlation.step_sd`` -> ``step_sd / 2``
one fewer step (the last)                  ``steps`` -> ``steps - 1``; every per-step list loses
                                           its last entry, and when the old last step was
                                           checked the new one is (``checkpoints.at``)
one more sample per attempt                ``sampling.n`` -> ``n + 1`` (up to 64)
escalate one attempt earlier               ``escalation.after`` -> its first rung's ``after``
                                           less one (when it is above 1)
rung 0 attempt cost halved                 ``cost.attempt`` -> ``attempt / 2`` with a ladder
                                           (its rungs' costs kept: ``escalation.attempt_cost``
                                           is written out when the file leaves it to default)
failure mode NAME: miss halved             ``failure_modes`` -> the list with that mode's
                                           ``miss`` halved (one lever per mode that misses)
=========================================  ====================================================

A change that would leave the scenario as it is (``p`` already 1, ``miss`` already 0, ...)
is not listed. With ``[[classes]]`` the ``p`` levers raise every class's ``p`` (``set``
holds the whole ``classes`` list; the hardest-step lever is left out: the classes' hardest
steps differ), and with ``[[failure_modes]]`` the verifier's ``miss`` lever gives way to one
lever per mode. The ladder's lever moves the first rung earlier rather than adding a rung: a
new rung would need a model (its ``p`` and cost) the file does not name.

:func:`time_levers` does the same for time (docs/model.md section 7), with the timeline engine
and the scenario's targets in time: one more reviewer, agent or LLM slot, the rpm or tpm limit
doubled, a review 25% faster, a deadline 50% longer; each change's effect on every target (or,
without targets, on success, the duration's mean and p90, throughput and cost per success) with
a 95% interval. Every change runs on the baseline's seeds (common random numbers), so a
workload's effect is the mean of its per-replication differences, with the t interval of their
spread: far sharper than comparing two independent runs.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from relsim.scenario import trial_model
from relsim.errors import invalid
from relsim.exact import evaluate
from relsim.scenario import Scenario, as_scenario

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["COLUMNS", "POINT", "UTILITY_COLUMNS", "TIME_QUANTITIES", "apply", "levers", "time_levers"]

#: The columns of the table, in order.
COLUMNS = ("lever", "set", "success", "delta_success", "cost_per_success", "delta_cost_per_success")
#: The columns added, after :data:`COLUMNS`, for a design with a ``[utility]`` table.
UTILITY_COLUMNS = ("expected_utility", "delta_expected_utility")

#: One point of per-attempt success, the size of the ``p`` levers.
POINT = 0.01

# Values in ``set`` are rounded to this many decimals, so that 0.9 + 0.01 reads 0.91.
_DIGITS = 12

#: A change smaller than this, relative to the numbers compared, is float noise (the exact
#: engine sums in another order for another design; its own error is far below this) and is
#: reported as no change.
NOISE = 1e-12


def levers(scenario: Scenario | Mapping[str, Any]) -> "pd.DataFrame":
    r"""Every single design change that applies to ``scenario``, evaluated exactly.

    For each change ``c`` with variant scenario :math:`s_c`,

    .. math::

        \Delta\text{success}_c = \text{success}(s_c) - \text{success}(s), \qquad
        \Delta\text{cps}_c = \frac{E[\text{cost}](s_c)}{\text{success}(s_c)}
                             - \frac{E[\text{cost}](s)}{\text{success}(s)}

    (cost per success; infinite when success is 0, and the difference of two infinities is
    NaN). A difference within ``NOISE`` (relative) of the numbers compared is float noise and
    is reported as 0. A design with a ``[utility]`` table is ranked by what it values,

    .. math::

        \Delta U_c = U(s_c) - U(s), \qquad
        U = \sum_o \text{share}_o\, v_o - \text{cost\_weight}\cdot E[\text{cost}],

    since a change can raise success and lower utility (when it also ships more silent
    failures, or costs more than the table values the success it buys).

    Parameters
    ----------
    scenario : Scenario or mapping
        The design (a mapping goes through :meth:`Scenario.from_dict`).

    Returns
    -------
    pandas.DataFrame
        One row per lever with the columns of :data:`COLUMNS`: ``lever`` (words), ``set``
        (a dict of dotted scenario keys to new values; :func:`apply` rebuilds the variant),
        ``success``, ``delta_success``, ``cost_per_success``, ``delta_cost_per_success``,
        sorted by ``delta_success``, largest first. With ``[utility]`` the columns of
        :data:`UTILITY_COLUMNS` follow and the rows are sorted by ``delta_expected_utility``.
        ``frame.attrs["baseline"]`` holds the design's own ``success`` and
        ``cost_per_success`` (and ``expected_utility``), ``frame.attrs["ranked_by"]`` the
        column the rows are sorted by (``"delta_success"`` or ``"delta_expected_utility"``).

    Examples
    --------
    >>> table = levers({"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
    ...                 "retries": {"per_step": 3}})
    >>> table.iloc[0]["lever"], table.iloc[0]["set"]
    ('verifier miss halved', {'verifier.miss': 0.05})
    """
    import pandas as pd

    base = as_scenario(scenario)
    variants = [(lever, changes, apply(base, changes)) for lever, changes in _changes(base)]
    _check_work(base, [variant for _, _, variant in variants])
    origin = evaluate(base)
    origin_cps = origin.cost_per_success
    origin_utility = origin.expected_utility
    valued = origin_utility is not None
    rows = []
    for lever, changes, variant in variants:
        outcome = evaluate(variant)
        cps = outcome.cost_per_success
        row = {
            "lever": lever,
            "set": changes,
            "success": outcome.success,
            "delta_success": _difference(outcome.success, origin.success),
            "cost_per_success": cps,
            "delta_cost_per_success": _difference(cps, origin_cps),
        }
        if origin_utility is not None:
            # every variant keeps the design's [utility] table, so each has a utility
            utility = float(outcome.expected_utility)  # type: ignore[arg-type]
            row["expected_utility"] = utility
            row["delta_expected_utility"] = _difference(utility, origin_utility)
        rows.append(row)
    columns = list(COLUMNS) + (list(UTILITY_COLUMNS) if valued else [])
    ranked_by = "delta_expected_utility" if valued else "delta_success"
    frame = pd.DataFrame(rows, columns=columns)
    frame = frame.sort_values(ranked_by, ascending=False, kind="stable").reset_index(drop=True)
    frame.attrs["baseline"] = {"success": origin.success, "cost_per_success": origin_cps}
    if valued:
        frame.attrs["baseline"]["expected_utility"] = origin_utility
    frame.attrs["ranked_by"] = ranked_by
    return frame


def _check_work(base: Scenario, variants: list[Scenario]) -> None:
    """Refuse at once, with the estimate, a table whose exact evaluations (the design's and
    every lever's) would together take over ``relsim.limits``: each alone may fit and the
    whole not (nine evaluations of 20 s are three minutes)."""
    from relsim.exact import work_estimate
    from relsim.limits import WorkEstimate

    estimates = [work_estimate(s) for s in (base, *variants)]
    slowest = max(estimates, key=lambda e: e.seconds)
    WorkEstimate(
        seconds=sum(e.seconds for e in estimates),
        memory=max(e.memory for e in estimates),
        detail=f"{len(estimates)} exact evaluations, the design's and {len(variants)} levers'; "
        f"the slowest: {slowest.detail}",
    ).check(
        "scenario",
        "levers evaluates the design and every lever exactly: lower the budgets "
        "(retries.total, retries.per_step, checkpoints.rollbacks) or the steps, or compare "
        "a few variants with relsim.simulate",
    )


def apply(scenario: Scenario | Mapping[str, Any], changes: Mapping[str, Any]) -> Scenario:
    """``scenario`` with each dotted key of ``changes`` set to its value.

    ``{"verifier.miss": 0.05}`` sets ``miss`` in the ``[verifier]`` table (creating a table
    that is missing); the result is validated like any scenario.

    Examples
    --------
    >>> s = apply({"steps": 3, "p": 0.9}, {"steps": 2, "verifier.miss": 0.0})
    >>> s.steps, s.verifier.miss
    (2, 0.0)
    """
    base = as_scenario(scenario)
    if not isinstance(changes, Mapping):
        raise invalid("changes", "a mapping of dotted scenario keys to values", changes)
    data = copy.deepcopy(base.to_dict())
    for dotted, value in changes.items():
        parts = str(dotted).split(".")
        table = data
        for part in parts[:-1]:
            inner = table.setdefault(part, {})
            if not isinstance(inner, dict):
                raise invalid(str(dotted), "a key inside a table", dotted)
            table = inner
        table[parts[-1]] = value
    return Scenario.from_dict(data)


# ------------------------------------------------------------------------- the changes
def _changes(s: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """(lever, set) for every change that applies to ``s`` and changes it."""
    out: list[tuple[str, dict[str, Any]]] = []
    model = trial_model(s)
    p = model.p
    if s.classes:
        out += _class_levers(s)
    elif np.any(p < 1.0):
        out.append(("p +1 point on every step", {"p": _per_step(np.minimum(1.0, p + POINT))}))
        if s.steps > 1 and not np.all(p == p[0]):
            hardest = int(np.argmin(p))
            raised = p.copy()
            raised[hardest] = min(1.0, raised[hardest] + POINT)
            out.append(
                (f"p +1 point on the hardest step (step {hardest + 1})", {"p": _per_step(raised)})
            )
    if s.verifier is not None:
        miss = model.miss
        if np.any(miss > 0) and not s.failure_modes:  # with modes: one lever per mode
            out.append(("verifier miss halved", {"verifier.miss": _per_step(miss / 2)}))
        false_reject = model.false_reject
        if np.any(false_reject > 0):
            out.append(
                ("verifier false_reject halved",
                 {"verifier.false_reject": _per_step(false_reject / 2)})
            )
        out.append(
            ("one more retry per step", {"retries.per_step": _per_step(model.per_step + 1)})
        )
        total = None if s.retries is None else s.retries.total
        if total is not None:
            out.append(("task retry budget doubled", {"retries.total": max(2 * total, total + 1)}))
    c = s.checkpoints
    if c is not None:
        if c.every is not None and c.every > 1:
            out.append(("checkpoints twice as often", {"checkpoints.every": c.every // 2}))
        out.append(("one more rollback", {"checkpoints.rollbacks": c.rollbacks + 1}))
        own_detect = bool(s.failure_modes) and all(m.detect is not None for m in s.failure_modes)
        if c.detect < 1.0 and not own_detect:  # every mode its own detect: this one is unread
            out.append(
                ("checkpoint misses halved",
                 {"checkpoints.detect": _round(1.0 - (1.0 - c.detect) / 2)})
            )
        if c.false_alarm > 0.0:
            out.append(
                ("checkpoint false alarms halved",
                 {"checkpoints.false_alarm": _round(c.false_alarm / 2)})
            )
    corr = s.correlation
    if corr.confusion is not None and corr.confusion.enter > 0.0:
        out.append(
            ("confusion entered half as often",
             {"correlation.confusion.enter": _round(corr.confusion.enter / 2)})
        )
    if corr.task_sd > 0.0:
        out.append(("task effect halved", {"correlation.task_sd": _round(corr.task_sd / 2)}))
    if corr.step_sd > 0.0:
        out.append(("step effect halved", {"correlation.step_sd": _round(corr.step_sd / 2)}))
    shorter = _one_fewer_step(s)
    if shorter is not None:
        out.append(("one fewer step (the last)", shorter))
    return out + _design_levers(s)


def _class_levers(s: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """The ``p`` lever of a mixture: a point more on every step of every class (rung 0)."""
    classes = copy.deepcopy(s.to_dict()["classes"])
    raised = False
    for entry in classes:
        p = np.asarray(entry["p"], dtype=float)
        raised |= bool(np.any(p < 1.0))
        new = np.minimum(1.0, p + POINT)
        entry["p"] = [_round(float(v)) for v in new] if p.ndim else _round(float(new))
    return [("p +1 point on every step", {"classes": classes})] if raised else []


def _design_levers(s: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """The levers of docs/model.md section 8's tables: one more sample, the first rung one
    attempt earlier, a cheaper rung 0, and each failure mode's miss halved."""
    from relsim.scenario.design_tables import MAX_SAMPLES

    out: list[tuple[str, dict[str, Any]]] = []
    g, e = s.sampling, s.escalation
    if g is not None and g.n < MAX_SAMPLES:
        out.append(("one more sample per attempt", {"sampling.n": g.n + 1}))
    if e is not None:
        if e.after[0] > 1:
            out.append(("escalate one attempt earlier",
                        {"escalation.after": [e.after[0] - 1, *e.after[1:]]}))
        model = trial_model(s)
        if np.any(model.rung_cost[0] > 0):
            changes: dict[str, Any] = {"cost.attempt": _per_step(model.rung_cost[0] / 2)}
            if e.attempt_cost is None:  # the rungs cost what rung 0 did: keep them so
                changes["escalation.attempt_cost"] = [_per_step(c) for c in model.rung_cost[1:]]
            out.append(("rung 0 attempt cost halved", changes))
    if s.verifier is not None:
        modes = s.to_dict().get("failure_modes", [])
        for k, mode in enumerate(modes):
            if mode.get("miss", 0.0) > 0.0:
                halved = copy.deepcopy(modes)
                halved[k]["miss"] = _round(mode["miss"] / 2)
                out.append((f"failure mode {mode['name']}: miss halved", {"failure_modes": halved}))
    return out


def _one_fewer_step(s: Scenario) -> dict[str, Any] | None:
    """The keys that drop the last step: every per-step list loses its last entry, and when
    the old last step was checked the new last step is (``checkpoints.at`` gains it unless
    ``every`` or ``final`` already checks it). None with one step."""
    n = s.steps - 1
    if n < 1:
        return None
    changes: dict[str, Any] = {"steps": n}
    # Every per-step list of the file form (p, verifier rates, retries, costs, and any table
    # added later, such as per-step durations) is a list of `steps` entries: trim them all.
    # Lists indexed by something else hold per-step lists of their own: a ladder's rungs
    # (escalation.p, attempt_cost; after is attempt counts) and the arrays of tables
    # (classes, failure_modes), whatever their length.
    for key, value in _dotted(s.to_dict()):
        if key in _RUNG_LISTS:
            trimmed = _trim_entries(value, s.steps)
            if trimmed != value:
                changes[key] = trimmed
        elif key in _TABLE_ARRAYS:
            entries = copy.deepcopy(value)
            for entry in entries:
                for name, item in entry.items():
                    if name == "escalation_p":
                        entry[name] = _trim_entries(item, s.steps)
                    elif isinstance(item, list) and len(item) == s.steps:
                        entry[name] = item[:n]
            if entries != value:
                changes[key] = entries
        elif key != "checkpoints.at" and isinstance(value, list) and len(value) == s.steps:
            changes[key] = copy.deepcopy(value[:n])
    c = s.checkpoints
    if c is not None:
        at = {min(position, n) for position in c.at}
        old_end_checked = s.steps in trial_model(s).checkpoint_positions
        every_hits_end = c.every is not None and n % c.every == 0
        if old_end_checked and not (c.final or every_hits_end):
            at.add(n)  # the task's end was checked; keep it checked
        if list(c.at) != sorted(at):
            changes["checkpoints.at"] = sorted(at)
    return changes


#: Lists with one entry per rung of a ladder (or attempt counts), not per step.
_RUNG_LISTS = ("escalation.after", "escalation.p", "escalation.attempt_cost")
#: Arrays of tables, one entry per class or mode.
_TABLE_ARRAYS = ("classes", "failure_modes")


def _trim_entries(value: Any, steps: int) -> Any:
    """A rung list with each per-step entry (a list of ``steps``) losing its last value."""
    return [v[: steps - 1] if isinstance(v, list) and len(v) == steps else v for v in value]


def _dotted(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) for every leaf of a scenario's file form."""
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        if isinstance(value, Mapping):
            out += _dotted(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def _per_step(values: np.ndarray) -> Any:
    """One value when every step has the same, else a list; plain Python numbers."""
    values = np.asarray(values)
    plain: list[int] | list[float]
    if values.dtype.kind in "iu":
        plain = [int(v) for v in values]
    else:
        plain = [_round(float(v)) for v in values]
    return plain[0] if all(v == plain[0] for v in plain) else plain


def _round(value: float) -> float:
    return round(value, _DIGITS)


def _difference(new: float, old: float) -> float:
    """``new - old``, with float noise rounded away: two numbers within ``NOISE`` (relative)
    of each other are the same number reached by two orders of summation, and their
    difference is 0, not ``-8.88e-16``.

    Examples
    --------
    >>> _difference(7.006967742, 7.006967742 + 8.9e-16), _difference(0.5, 0.25)
    (0.0, 0.25)
    """
    if math.isinf(new) and math.isinf(old):
        return math.nan  # two infinite costs: no difference to report
    difference = new - old
    if math.isfinite(difference) and abs(difference) <= NOISE * max(abs(new), abs(old)):
        return 0.0
    return difference


# ------------------------------------------------------------------------- time levers
#: What a time lever is judged on when the scenario sets no targets in time.
TIME_QUANTITIES = ("success", "duration_mean", "duration_p90", "throughput_per_hour",
                   "cost_per_success")
#: A review this much faster, a deadline this much longer.
FASTER_REVIEW, LONGER_DEADLINE = 0.75, 1.5
#: Independent trials of each run when none are given.
TIME_TRIALS = 2000


def time_levers(
    scenario: Scenario | Mapping[str, Any],
    *,
    replications: int | None = None,
    trials: int | None = None,
    seed: int = 0,
    baseline: Any = None,
) -> "pd.DataFrame":
    r"""Every single change to a scenario's time tables, judged with the timeline engine.

    Parameters
    ----------
    scenario : Scenario or mapping
    replications : int or None
        A workload's replications of every run (None: the baseline's default rule, then the
        same number for every change).
    trials : int or None
        Independent trials of every run (a batch sharing nothing; None: 2000).
    seed : int
        The seed of every run: the changes share the baseline's random numbers.
    baseline : TimelineOutcome or None
        The scenario's own run with ``seed`` when it is at hand (the changes then run with its
        replications or trials); None: run here.

    Returns
    -------
    pandas.DataFrame
        One row per change that applies: ``lever``, ``set`` (dotted keys to new values, as
        :func:`levers`), ``met`` (how many targets the change meets), then for each quantity
        ``q`` (the targets in time, else :data:`TIME_QUANTITIES`): ``q`` (its estimate),
        ``delta_q`` with ``delta_q_low`` and ``delta_q_high`` (the change against the
        baseline and its 95% interval) and, for a target, ``status_q``. Sorted by ``met``,
        then by the first quantity's improvement. ``frame.attrs`` holds ``baseline`` (each
        quantity and status), ``quantities``, ``targets``, ``replications``, ``trials`` and
        ``seed``.

    Examples
    --------
    >>> table = time_levers({"steps": 1, "p": 1.0, "timing": {"attempt": 60},
    ...                      "fleet": {"arrivals": "poisson", "rate_per_hour": 100,
    ...                                "agents": 2, "tasks": 300},
    ...                      "targets": {"duration_p90": 120}}, replications=3, seed=1)
    >>> row = table.iloc[0]
    >>> row["lever"], row["status_duration_p90"], bool(row["delta_duration_p90_high"] < 0)
    ('one more agent', 'met', True)
    """
    import pandas as pd

    from relsim.scenario import time_model
    from relsim.timeline import simulate_timeline

    base = as_scenario(scenario)
    time = time_model(base)
    targets = dict(time.targets)
    quantities = tuple(targets) or tuple(
        q for q in TIME_QUANTITIES if time.workload or q != "throughput_per_hour")
    if time.workload:
        origin = baseline or simulate_timeline(base, replications=replications, seed=seed)
        replications = origin.replications

        def run(design: Scenario) -> Any:
            return simulate_timeline(design, replications=replications, seed=seed)
    else:
        trials = TIME_TRIALS if trials is None else trials
        origin = baseline or simulate_timeline(base, trials, seed=seed)
        trials = origin.trials

        def run(design: Scenario) -> Any:
            if time_model(design).workload:  # pragma: no cover - no time lever shares anything new
                raise invalid("lever", "a change that keeps the trials independent", design)
            return simulate_timeline(design, trials, seed=seed)

    rows = []
    for lever, changes in _time_changes(base):
        outcome = run(apply(base, changes))
        row: dict[str, Any] = {"lever": lever, "set": changes}
        row["met"] = sum(outcome.targets[k]["status"] == "met" for k in targets)
        for key in quantities:
            value, _ = outcome.quantity(key)
            delta, low, high = _paired(key, origin, outcome)
            row[key] = value
            row[f"delta_{key}"], row[f"delta_{key}_low"], row[f"delta_{key}_high"] = delta, low, high
            if key in targets:
                row[f"status_{key}"] = outcome.targets[key]["status"]
        rows.append(row)
    frame = pd.DataFrame(rows)
    if rows:
        first = quantities[0]
        better = frame[f"delta_{first}"] * (1.0 if first in _AT_LEAST else -1.0)
        frame = frame.assign(_order=better.fillna(-math.inf)).sort_values(
            ["met", "_order"], ascending=False, kind="stable").drop(columns="_order").reset_index(drop=True)
    summary: dict[str, Any] = {}
    for key in quantities:
        summary[key] = origin.quantity(key)[0]
        if key in targets:
            summary[f"status_{key}"] = origin.targets[key]["status"]
    frame.attrs.update(baseline=summary, quantities=quantities, targets=targets,
                       replications=origin.replications, trials=origin.trials, seed=seed)
    return frame


_AT_LEAST = ("success", "throughput_per_hour", "successes_per_hour")


def _time_changes(s: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """(lever, set) for every time change that applies to ``s``."""
    from relsim.scenario import time_model

    time = time_model(s)
    out: list[tuple[str, dict[str, Any]]] = []
    if time.human and time.reviewers is not None:
        out.append(("one more reviewer", {"resources.reviewers": time.reviewers + 1}))
    if time.agents is not None:
        out.append(("one more agent", {"fleet.agents": time.agents + 1}))
    if time.llm_concurrency is not None:
        out.append(("one more LLM slot", {"resources.llm_concurrency": time.llm_concurrency + 1}))
    if time.rpm is not None:
        out.append(("rpm doubled", {"resources.rpm": _round(2 * time.rpm)}))
    if time.tpm is not None:
        out.append(("tpm doubled", {"resources.tpm": _round(2 * time.tpm)}))
    if time.human and not time.review.is_zero:
        out.append(("review 25% faster", {"resources.review": _faster(time.review.to_file())}))
    if time.deadline is not None:
        out.append(("deadline 50% longer", {"timing.deadline": _round(LONGER_DEADLINE * time.deadline)}))
    return out


def _faster(review: Any) -> Any:
    if isinstance(review, Mapping):
        return {key: _round(FASTER_REVIEW * value) for key, value in review.items()}
    return _round(FASTER_REVIEW * review)


def _paired(key: str, base: Any, other: Any) -> tuple[float, float, float]:
    """The change in ``key`` and its 95% interval: a workload's paired per-replication
    differences (cost per success through its linearisation), else the two runs' errors
    combined (independent runs of independent trials)."""
    from relsim.intervals import normal_interval, t_interval

    new, _ = other.quantity(key)
    old, _ = base.quantity(key)
    if new is None or old is None:
        return (math.nan, math.nan, math.nan)
    delta = _difference(new, old)
    if not math.isfinite(delta):
        return (delta, math.nan, math.nan)
    if base.replications:
        count = base.replications
        differences = _influence(key, other) - _influence(key, base)
        se = float(differences.std(ddof=1)) / math.sqrt(count)
        low, high = (delta, delta) if se == 0 else t_interval(delta, se, count)
        return (delta, low, high)
    se = math.hypot(base.standard_errors.get(key, math.nan), other.standard_errors.get(key, math.nan))
    low, high = normal_interval(delta, se)
    return (delta, low, high)


def _influence(key: str, out: Any) -> np.ndarray:
    """Per replication, what ``key``'s estimate is the mean of: its values, or for cost per
    success (a ratio of means) ``(C_r - R S_r) / S`` plus ``R``."""
    values = out.replication_values
    if key != "cost_per_success":
        return np.asarray(values[key], dtype=float)
    cost = np.asarray(values["expected_cost"], dtype=float)
    success = np.asarray(values["success"], dtype=float)
    ratio = out.cost_per_success
    return ratio + (cost - ratio * success) / success.mean()
