r"""Planning shared resources with the timeline: the least count that meets every target.

``relsim solve FILE --for reviewers | agents | llm_concurrency | rpm`` (:func:`resources`)
varies one capacity of a workload and judges each count with the timeline engine
(:func:`relsim.simulate_timeline`) against the scenario's targets in time (``[targets]`` and
the top-level ``target``; docs/model.md section 7, "Targets"): a count *meets* them when every
target's 95% interval lies on its right side. The answer is the least count that meets them.

Every count runs on the same seeds (replication ``r`` of every count on
``SeedSequence(seed, spawn_key=(r,))``): common random numbers, so two counts differ by what
the count changes, not by luck of the draw, and the search's comparisons are sharp.

The search: first the resource unlimited (reviewers and LLM slots as many as tasks, no agent
or rpm limit). When a target is not met even then, no count meets it: the plan is infeasible
and names the targets that bind at any count. Otherwise, from a lower bound (with Poisson
arrivals, more reviewers or agents than the offered load: fewer can never keep up), the count
doubles until the targets are met, then a bisection finds the least such count; counts are
taken to help monotonically (more of a resource never makes a task slower), which holds for
the FIFO queues of section 7 in expectation.

How sure the answer is: ``sure`` when every target is met at the answer and at one less some
target is *missed* (its interval on the wrong side), not merely undecided; ``confidence`` the
one-sided t confidence that every target is met at the answer (the least over targets) and
``below_confidence`` that a target is missed at one less (the greatest over targets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from relsim.errors import RelsimError, invalid
from relsim.results import jsonable, one_row
from relsim.scenario import Scenario, as_scenario, time_model
from relsim.scenario.time_tables import AT_LEAST, MAX_SLOTS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from relsim.results import TimelineOutcome

__all__ = ["RESOURCES", "ResourcePlan", "resources"]

#: What ``relsim solve --for`` plans with the timeline -> the scenario key it sets.
RESOURCES = {
    "reviewers": "resources.reviewers",
    "agents": "fleet.agents",
    "llm_concurrency": "resources.llm_concurrency",
    "rpm": "resources.rpm",
}
#: The largest count tried (the tables' own limit).
MAX_COUNT = MAX_SLOTS


@dataclass(frozen=True)
class ResourcePlan:
    """The least count of one shared resource that meets every target in time.

    Attributes
    ----------
    for_ : str
        The resource planned, a key of :data:`RESOURCES` (``"for"`` in JSON).
    value : int or None
        The least count whose targets are all met; None when infeasible.
    feasible : bool
        Some count meets every target (they are met with the resource unlimited).
    sure : bool
        Every target met at ``value`` and some target missed (not just undecided) at
        ``value - 1`` (or ``value`` is 1, or fewer cannot keep up with the arrivals).
    confidence : float or None
        The one-sided t confidence that every target is met at ``value``: the least over
        the targets.
    below_confidence : float or None
        The one-sided t confidence that some target is missed at ``value - 1``: the greatest
        over the targets (None when ``value - 1`` was not run).
    targets : mapping
        Each target's verdict at ``value`` (as ``TimelineOutcome.targets``); with the
        resource unlimited when infeasible.
    below : mapping or None
        The same at ``value - 1``.
    binding : tuple of str
        When infeasible: the targets not met with the resource unlimited.
    tried : mapping of int or None to str
        Every count run (None: unlimited) -> ``"met"`` or ``"not met"``, in the order run.
    replications : int
        Replications of the answer's run (every count runs on the same seeds).
    seed : int or None
    reason : str or None
        When infeasible, why in words.
    scenario : Scenario
        The planned scenario (the input with ``value`` set; unlimited when infeasible).
    outcome : TimelineOutcome
        The answer's run (not in ``to_dict``).
    """

    for_: str
    value: int | None
    feasible: bool
    sure: bool
    confidence: float | None
    below_confidence: float | None
    targets: Mapping[str, Mapping[str, Any]]
    below: Mapping[str, Mapping[str, Any]] | None
    binding: tuple[str, ...]
    tried: Mapping[int | None, str]
    replications: int
    seed: int | None
    reason: str | None
    scenario: Scenario = field(repr=False)
    outcome: "TimelineOutcome" = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``for``, ``value``, ``feasible``, ``sure``, ``confidence``,
        ``below_confidence``, ``targets``, ``below``, ``binding``, ``tried`` (a list of
        ``{count, status}``, ``count`` null for unlimited), ``replications``, ``seed``,
        ``reason``, ``method`` (``"timeline"``)."""
        return jsonable(self._record())

    def to_frame(self) -> "pd.DataFrame":
        """One row: :meth:`to_dict` flattened as every result is (:func:`relsim.results.flatten`)."""
        return one_row(self._record())

    def _record(self) -> dict[str, Any]:
        return {
            "for": self.for_,
            "value": self.value,
            "feasible": self.feasible,
            "sure": self.sure,
            "confidence": self.confidence,
            "below_confidence": self.below_confidence,
            "targets": _plain(self.targets),
            "below": None if self.below is None else _plain(self.below),
            "binding": list(self.binding),
            "tried": [{"count": count, "status": status} for count, status in self.tried.items()],
            "replications": self.replications,
            "seed": self.seed,
            "reason": self.reason,
            "method": "timeline",
        }

    def summary(self) -> str:
        """The answer in a sentence: the count, how sure, and what binds."""
        if not self.feasible or self.value is None:
            return f"infeasible: {self.reason}"
        words = f"{self.value} {self.for_}: every target met"
        if self.confidence is not None:
            words += f" (confidence {self.confidence:.1%})"
        if self.below is not None:
            missed = [k for k, v in self.below.items() if v["status"] == "missed"]
            undecided = [k for k, v in self.below.items() if v["status"] == "undecided"]
            if missed:
                words += f"; at {self.value - 1} {', '.join(missed)} missed"
            elif undecided:
                words += (f"; at {self.value - 1} {', '.join(undecided)} undecided, so "
                          f"{self.value - 1} may do too: run more replications")
            if self.below_confidence is not None:
                words += f" (confidence {self.below_confidence:.1%})"
        return words + ("; sure" if self.sure else "; not sure")


def resources(
    scenario: Scenario | Mapping[str, Any],
    for_: str,
    *,
    replications: int | None = None,
    seed: int = 0,
) -> ResourcePlan:
    """The least count of ``for_`` that meets every target of ``scenario`` in time.

    Parameters
    ----------
    scenario : Scenario or mapping
        A design with targets in time (``[targets]`` or ``target``).
    for_ : str
        ``"reviewers"`` (needs a human gate), ``"agents"``, ``"llm_concurrency"`` or ``"rpm"``.
    replications : int or None
        Replications of each count's run (>= 2); None: each count by the timeline's default
        rule (the mean duration within 2%). Every count runs on the same seeds.
    seed : int
        The seed of every count's run.

    Returns
    -------
    ResourcePlan

    Examples
    --------
    Tasks of a minute arriving at 120 an hour, 90% of them done within 90 s:

    >>> design = {"steps": 1, "p": 1.0, "timing": {"attempt": 60},
    ...           "fleet": {"arrivals": "poisson", "rate_per_hour": 120, "agents": 1,
    ...                     "tasks": 1000},
    ...           "targets": {"duration_p90": 90}}
    >>> plan = resources(design, "agents", replications=4, seed=1)
    >>> plan.value, plan.sure, plan.below["duration_p90"]["status"]
    (4, True, 'missed')
    """
    s = as_scenario(scenario)
    if not isinstance(for_, str) or for_ not in RESOURCES:  # a list is not hashable
        raise invalid("for_", f"one of {', '.join(RESOURCES)}", for_)
    time = time_model(s)
    if not time.targets:
        raise RelsimError("targets: the scenario sets none ([targets] or a top-level target): "
                          "there is nothing to plan the count for")
    if for_ == "reviewers" and not time.human:
        raise RelsimError("checkpoints.human: must be true to plan reviewers (the pool of a human "
                          "gate), but the scenario has no human gate")
    if all(getattr(s, table) is None for table in ("timing", "fleet", "resources", "infra")):
        # every count gives the same trials: the least count, 1, was answered as a plan
        raise RelsimError(f"{for_}: is planned in time, but the scenario has no time table "
                          "([timing], [fleet], [resources] or [infra]): its trials take no time "
                          "and share nothing, so no count changes them")
    search = _Search(s, for_, replications, seed)
    unlimited = search.run(None)
    if not unlimited.meets_targets:
        return search.infeasible(unlimited)
    low = max(1, search.lower_bound(unlimited))
    count, failed = low, low - 1
    while not search.meets(count):
        failed = count
        if count >= search.cap:
            return search.infeasible(unlimited)  # pragma: no cover - unlimited met them
        count = min(2 * count, search.cap)
    while count - failed > 1:  # least met in (failed, count]
        middle = (failed + count) // 2
        if search.meets(middle):
            count = middle
        else:
            failed = middle
    return search.plan(count, low)


class _Search:
    """The runs of one plan, each count once, all on the same seeds."""

    def __init__(self, s: Scenario, for_: str, replications: int | None, seed: int) -> None:
        self.s, self.for_, self.replications, self.seed = s, for_, replications, seed
        self.time = time_model(s)
        self.runs: dict[int | None, Any] = {}
        # counts past the tasks of a replication are as good as unlimited (a task holds at
        # most one reviewer, agent or LLM slot at a time); the rpm limit has no such count
        self.cap = MAX_COUNT if for_ == "rpm" else min(MAX_COUNT, self.time.tasks)

    def scenario(self, count: int | None) -> Scenario:
        from relsim.plan.sensitivity import apply

        if count is None and self.for_ == "reviewers":
            count = self.cap  # a gate needs a pool: as many reviewers as tasks never queue
        return apply(self.s, {RESOURCES[self.for_]: count})

    def run(self, count: int | None) -> Any:
        if count not in self.runs:
            from relsim.timeline import simulate_timeline

            design = self.scenario(count)
            time = time_model(design)
            if time.workload:
                out = simulate_timeline(design, replications=self.replications, seed=self.seed)
            else:  # nothing left shared: independent trials, as many as the workload's
                trials = time.tasks * (self.replications or 5)
                out = simulate_timeline(design, trials, seed=self.seed)
            self.runs[count] = out
        return self.runs[count]

    def meets(self, count: int) -> bool:
        return bool(self.run(count).meets_targets)

    def lower_bound(self, unlimited: Any) -> int:
        """With Poisson arrivals, a pool of reviewers or agents must exceed the work that
        arrives (rate x time held): fewer can never keep up."""
        if not self.time.poisson or self.time.rate_per_hour is None:
            return 1
        rate = self.time.rate_per_hour / 3600.0
        if self.for_ == "reviewers":
            load = unlimited.offered_load.get("reviewers")
            work = None if load is None else load * self.cap
        elif self.for_ == "agents":
            # without an agent limit a task holds no slot; with one it holds it arrival to end
            work = rate * unlimited.duration["mean"]
        else:
            work = None
        return 1 if work is None or not math.isfinite(work) else int(math.floor(work)) + 1

    def plan(self, count: int, low: int) -> ResourcePlan:
        out = self.run(count)
        below = None
        if count > low:
            below = self.run(count - 1)
        sure = below is None or any(v["status"] == "missed" for v in below.targets.values())
        return ResourcePlan(
            for_=self.for_, value=count, feasible=True, sure=sure,
            confidence=min(_confidence(key, v, out) for key, v in out.targets.items()),
            below_confidence=None if below is None else max(
                1.0 - _confidence(key, v, below) for key, v in below.targets.items()),
            targets=out.targets, below=None if below is None else below.targets, binding=(),
            tried={c: "met" if r.meets_targets else "not met" for c, r in self.runs.items()},
            replications=out.replications or 0, seed=self.seed, reason=None,
            scenario=self.scenario(count), outcome=out,
        )

    def infeasible(self, unlimited: Any) -> ResourcePlan:
        binding = tuple(k for k, v in unlimited.targets.items() if v["status"] != "met")
        parts = []
        for key in binding:
            v = unlimited.targets[key]
            side = ">=" if key in AT_LEAST else "<="
            shown = "no estimate" if v["estimate"] is None else f"{v['estimate']:.4g}"
            if v["ci"] is not None:
                shown += f", 95% interval {v['ci'][0]:.4g} to {v['ci'][1]:.4g}"
            parts.append(f"{key} {side} {v['target']:g} is {v['status']} ({shown})")
        reason = (f"with {self.for_} unlimited, " + "; ".join(parts)
                  + f": no count of {self.for_} meets {'it' if len(binding) == 1 else 'them'}; "
                  "what binds is elsewhere in the design")
        if any(unlimited.targets[k]["status"] == "undecided" for k in binding):
            reason += " (an undecided target may be met: run more replications)"
        return ResourcePlan(
            for_=self.for_, value=None, feasible=False, sure=False, confidence=None,
            below_confidence=None, targets=unlimited.targets, below=None, binding=binding,
            tried={c: "met" if r.meets_targets else "not met" for c, r in self.runs.items()},
            replications=unlimited.replications or 0, seed=self.seed, reason=reason,
            scenario=self.scenario(None), outcome=unlimited,
        )


def _confidence(key: str, verdict: Mapping[str, Any], out: Any) -> float:
    """The one-sided t confidence that ``key``'s true value is on the right side of its
    target (1 or 0 when the run shows no spread)."""
    from scipy import stats

    estimate, target = verdict["estimate"], verdict["target"]
    if estimate is None:
        return 0.5
    se = out.standard_errors.get(key, math.nan)
    margin = estimate - target if key in AT_LEAST else target - estimate
    if not se > 0 or not math.isfinite(se):
        return 1.0 if margin > 0 or (margin == 0 and se == 0) else 0.0
    df = (out.replications or out.trials) - 1
    return float(stats.t.cdf(margin / se, max(df, 1)))


def _plain(targets: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {key: {**value, "ci": None if value["ci"] is None else list(value["ci"])}
            for key, value in targets.items()}
