r"""From runs to a :class:`~relsim.results.TimelineOutcome`: replications combined, targets
judged, warnings raised (docs/model.md section 7).

A workload's trials share queues, so they are not independent: a busy spell delays many in a
row, and :math:`s/\sqrt N` over trials understates the noise many times over. Whole
replications are independent (each on its own seed), so every quantity ``q`` is reported as
the mean of its per-replication values :math:`q_1..q_R`, with the standard error
:math:`s_q/\sqrt R` and the 95% t interval on ``R - 1`` degrees of freedom. Cost per success is
the ratio of the means :math:`\bar C / \bar S`, its standard error by the delta method over
replications, :math:`\mathrm{sd}(C_r - \hat R S_r) / (\sqrt R\,\bar S)`.

Warnings, with Poisson arrivals only (a batch has no steady state):

* a resource whose offered load (arrival rate x what a task asks of it, over its capacity)
  reaches its capacity: its 95% interval reaches 1;
* waits that grow within a replication: the mean wait of the second half of its tasks minus
  the first half's, averaged over replications, above ``t(1 - GROWTH_LEVEL / 2, R - 1)``
  standard errors (a 1% two-sided test: a settled queue warns about once in two hundred runs).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Sequence

import numpy as np

from relsim.intervals import t_interval
from relsim.results import TIMELINE_PROPORTIONS, TimelineOutcome, judge
from relsim.scenario import TimeModel
from relsim.scenario.time_tables import AT_LEAST

#: The resources, in the order they are reported.
RESOURCES = ("agents", "llm", "reviewers", "rpm", "tpm")
WAITS = ("agents", "rate_limit", "llm", "reviewers")
PERCENTS = ("mean", "p50", "p90", "p99")
#: The key of a failure mode's silent share: ``silent_by_mode_<name>``.
MODE_PREFIX = "silent_by_mode_"
#: Where a quantity's label reads better than its key.
_LABELS = {"rpm": "the rpm limit", "tpm": "the tpm limit", "llm": "LLM slots"}


def precise(runs: Sequence[Mapping[str, Any]], precision: float) -> bool:
    """The mean duration's standard error over the runs is at most ``precision`` of it."""
    values = np.array([run["duration_mean"] for run in runs], dtype=float)
    se = float(values.std(ddof=1)) / math.sqrt(values.size)
    return se <= precision * float(values.mean())


def combine(runs: Sequence[Mapping[str, Any]], time: TimeModel, seed: int | None, partial: bool,
            events: Any, simpy_events: int) -> TimelineOutcome:
    """The outcome of a workload's replications (each a mapping of flattened quantities)."""
    count = len(runs)
    keys = list(runs[0])
    per_run = {key: tuple(run.get(key) for run in runs) for key in keys}
    values: dict[str, Any] = {}
    se: dict[str, float] = {}
    intervals: dict[str, tuple[float, float]] = {}
    for key, column in per_run.items():
        if any(v is None for v in column):
            values[key] = None
            continue
        array = np.asarray(column, dtype=float)
        mean = float(array.mean())
        error = float(array.std(ddof=1)) / math.sqrt(count)
        values[key], se[key] = mean, error
        intervals[key] = _t(mean, error, count)
    _ratio(per_run, values, se, intervals, count)
    se["duration"], intervals["duration"] = se["duration_mean"], intervals["duration_mean"]
    figures = {
        "duration": {name: values[f"duration_{name}"] for name in PERCENTS},
        "wait": {name: values[f"wait_{name}"] for name in WAITS},
        "utilisation": {name: values[f"utilisation_{name}"] for name in RESOURCES},
    }
    offered = {name: values[f"offered_load_{name}"] for name in RESOURCES} if time.poisson else {}
    warnings = _stability(values, se, intervals, count) if time.poisson else []
    own = {name: values.get("own_agents" if name == "agents" else f"utilisation_{name}")
           for name in RESOURCES}
    loaded = {name: value for name, value in own.items() if value is not None}
    mean = values["duration_mean"]
    return finish(
        time, values, se, intervals, figures, trials=count * (time.tasks - time.warmup),
        seed=seed, partial=partial, events=events, simpy_events=simpy_events,
        offered_load=offered, bottleneck=max(loaded, key=loaded.__getitem__) if loaded else None,
        makespan=values["makespan"], throughput_per_hour=values["throughput_per_hour"],
        successes_per_hour=values["successes_per_hour"], warnings=warnings,
        replications=count, tasks=time.tasks, warmup=time.warmup,
        precision=se["duration_mean"] / mean if mean > 0 else None,
        # Python floats, as documented (a run's shares came as numpy scalars)
        replication_values={key: tuple(None if v is None else float(v) for v in column)
                            for key, column in per_run.items()},
    )


def finish(time: TimeModel, values: Mapping[str, Any], se: Mapping[str, float],
           intervals: Mapping[str, tuple[float, float]], figures: Mapping[str, Mapping[str, Any]],
           *, warnings: Sequence[str] = (), **fields: Any) -> TimelineOutcome:
    """The :class:`TimelineOutcome` of either mode, with the targets judged."""
    utilisation = figures.get("utilisation", {name: None for name in RESOURCES})
    # section 8's outputs, when the run has them (docs/model.md section 8)
    modes = {key[len(MODE_PREFIX):]: values[key] for key in values if key.startswith(MODE_PREFIX)}
    fields["silent_by_mode"] = modes or None
    fields["expected_utility"] = values.get("expected_utility")
    if "precision" not in fields:
        mean = figures["duration"]["mean"]
        fields["precision"] = se["duration_mean"] / mean if mean > 0 else None
    out = TimelineOutcome(
        **{key: values[key] for key in (*TIMELINE_PROPORTIONS, "expected_attempts", "expected_cost")},
        standard_errors=dict(se),
        intervals=dict(intervals),
        duration=dict(figures["duration"]),
        wait=dict(figures["wait"]),
        utilisation=dict(utilisation),
        **fields,
    )
    targets, notes = _targets(out, time)
    return dataclasses.replace(out, targets=targets, warnings=(*warnings, *notes))


def _t(mean: float, se: float, count: int) -> tuple[float, float]:
    if se == 0.0:
        return (mean, mean)
    return t_interval(mean, se, count)


def _ratio(per_run: Mapping[str, tuple], values: dict[str, Any], se: dict[str, float],
           intervals: dict[str, tuple[float, float]], count: int) -> None:
    """Cost per success: the ratio of the means, with the delta method over replications."""
    cost = np.asarray(per_run["expected_cost"], dtype=float)
    success = np.asarray(per_run["success"], dtype=float)
    if success.mean() <= 0.0:
        values["cost_per_success"] = math.inf
        se["cost_per_success"] = math.inf
        intervals["cost_per_success"] = (math.inf, math.inf)
        return
    ratio = float(cost.mean() / success.mean())
    residual = cost - ratio * success
    error = float(residual.std(ddof=1)) / math.sqrt(count) / float(success.mean())
    values["cost_per_success"] = ratio
    se["cost_per_success"] = error
    intervals["cost_per_success"] = _t(ratio, error, count)


def _stability(values: Mapping[str, Any], se: Mapping[str, float],
               intervals: Mapping[str, tuple[float, float]], count: int) -> list[str]:
    """Section 9's warnings of a Poisson workload."""
    from scipy.special import stdtrit  # the t quantile (not scipy.stats: see t_interval)

    out = []
    for name in RESOURCES:
        key = f"offered_load_{name}"
        load = values.get(key)
        if load is None:
            continue
        low, high = intervals[key]
        if high >= 1.0:
            out.append(
                f"{name}: offered load {load:.3g} of capacity (95% interval {low:.3g} to "
                f"{high:.3g}) reaches it: tasks bring {_LABELS.get(name, name)} more work than "
                "they can serve, so the queue grows with the length of a replication and the "
                "time figures depend on fleet.tasks"
            )
    growth = values.get("wait_growth")
    if growth is not None and growth > 0.0:
        error = se["wait_growth"]
        limit = float(stdtrit(count - 1, 1 - GROWTH_LEVEL / 2)) * error
        if growth > limit:
            low, high = intervals["wait_growth"]
            out.append(
                f"waits grow within a replication: the second half of its tasks waits {growth:.4g} s "
                f"longer per task than the first (95% interval {low:.4g} to {high:.4g} s); the "
                "queue has not settled (overloaded, or fleet.warmup too short for it)"
            )
    return out


#: The two-sided level of the test that waits grow (1%: a settled queue warns once in 100).
GROWTH_LEVEL = 0.01


def _targets(out: TimelineOutcome, time: TimeModel) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Each target's verdict, and a note for a target the mode cannot judge."""
    verdicts: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for key, target in time.targets:
        estimate, interval = out.quantity(key)
        if estimate is None:
            notes.append(
                f"targets.{key}: independent trials (a batch sharing nothing) have no "
                "throughput, so the target is undecided; give the fleet a workload "
                "(Poisson arrivals or a shared resource) to judge it"
            )
            interval = None
        verdicts[key] = {
            "target": target,
            "estimate": estimate,
            "ci": interval,
            "status": judge(target, interval, key in AT_LEAST),
        }
    return verdicts, notes
