r"""The result types shared by the engines, how trials become estimates, and how results
become tables.

Outcomes
--------
:class:`Outcome` is what every engine reports: the six outcome keys of docs/model.md section 3
(the exact engine returns it as it is). :class:`SimulatedOutcome` is an ``Outcome`` estimated
from simulated trials (Monte Carlo): it adds standard errors, 95% intervals, percentiles, the
number of trials and the seed. :class:`TimelineOutcome` is the ``SimulatedOutcome`` of the
timeline engine, with the time quantities of section 7 (``timeout``, ``infra_failure``,
``duration``, ``wait``, ``utilisation``, ``makespan``, the rates per hour). The ``method`` key
of ``to_dict()`` comes from the type (``"exact"``, ``"montecarlo"``, ``"timeline"``).

From trials to estimates
------------------------
Both stochastic engines add their trials up into a :class:`Tally` (the count of each outcome,
the mean and variance of each per-trial quantity, the covariance of cost and success), and
:func:`estimate` turns it into point estimates, standard errors and 95% intervals, so that a
tally gives the same numbers whichever engine drew it:

* a share :math:`\hat p = k/N`: the binomial standard error :math:`\sqrt{\hat p(1-\hat p)/N}`
  and the Wilson interval (:func:`relsim.intervals.wilson`);
* a mean: the standard error :math:`s/\sqrt N` (``s`` the sample standard deviation) and the
  normal interval;
* cost per success :math:`\hat R = \bar C / \hat p_S`: the delta-method standard error
  :math:`\sqrt{\widehat{\mathrm{Var}}(C - \hat R S)/N} / \hat p_S` (``C`` a trial's cost,
  ``S`` its success indicator) and the normal interval. When no trial succeeded,
  :math:`\hat R`, its standard error and both ends of its interval are infinite.

It lives here rather than in :mod:`relsim.intervals` because it speaks the outcome keys:
``intervals`` keeps the formulas of one quantity each (used by ``evalstats`` too), and this
module says which formula each reported key gets.

Tables: one flattening convention
---------------------------------
Every result of relsim (outcomes, plans, trial analyses and comparisons) has ``to_dict()``,
JSON-ready (infinities and NaN become ``None``: JSON has neither), and ``to_frame()``, one
pandas row (:func:`one_row`) whose columns are :func:`flatten` of the same record before it
was made JSON-ready; a sweep's row is such a row too (:meth:`Outcome.to_row`). :func:`flatten`

* joins the keys of nested mappings with ``_``: ``{"duration": {"p90": x}}`` gives the column
  ``duration_p90``, ``{"details": {"false_reject": {"feasible": b}}}`` gives
  ``details_false_reject_feasible``;
* splits an interval, a ``(low, high)`` pair under a key ``ci``, ``<name>_ci`` or
  ``ci_<name>``, into ``<key>_low`` and ``<key>_high`` (``success_ci_low``);
* turns ``None`` (nothing to report, such as the utilisation of an unlimited resource) into
  NaN, so that a column of numbers stays numeric; infinities and NaN stay as they are;
* makes numpy scalars Python scalars and keeps any other value (text, a flag, a list such as
  an allocation's budgets) as one cell.

Rows of several results of one kind then stack with ``pandas.concat``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from relsim.errors import invalid
from relsim.intervals import binomial_se, normal_interval, wilson

__all__ = [
    "Estimate",
    "Outcome",
    "SimulatedOutcome",
    "Tally",
    "TimelineOutcome",
    "estimate",
    "flatten",
    "one_row",
]

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The outcome keys of docs/model.md section 3, in the order they are reported.
OUTCOME_KEYS = (
    "success",
    "silent_failure",
    "detected_failure",
    "infra_failure",
    "expected_attempts",
    "expected_cost",
    "cost_per_success",
)

#: The shares the timeline engine reports (they sum to 1): section 3's three, then the two
#: that only time brings.
TIMELINE_PROPORTIONS = ("success", "silent_failure", "detected_failure", "timeout", "infra_failure")

#: Columns of the timeline's event log (``TimelineOutcome.events``, ``relsim timeline --events``).
EVENT_COLUMNS = ("trial", "time", "kind", "step", "attempt", "resource", "outcome")


# ------------------------------------------------------------------------------ outcomes
@dataclass(frozen=True)
class Outcome:
    """What one scenario leads to: the split of trial outcomes, attempts and cost.

    Attributes
    ----------
    success, silent_failure, detected_failure, infra_failure : float
        Probabilities of the trial outcomes (they sum to 1; ``infra_failure``, a trial whose
        budget ran out on an attempt lost to the environment, is 0 without ``[faults]``).
    expected_attempts : float
        Expected number of step attempts per trial.
    expected_cost : float
        Expected cost per trial, in the scenario's cost unit.
    cost_per_success : float
        ``expected_cost / success`` (a property); infinite when success is 0.
    silent_by_mode : mapping of str to float or None
        With failure modes: each mode's share of all trials that ended as silent failures
        under it (the mode of the first accepted wrong result that stayed); they sum to
        ``silent_failure``. None without modes.
    expected_utility : float or None
        With ``[utility]``: the sum of outcome shares times their values, less
        ``cost_weight`` times the expected cost. None without it.
    method : str
        ``"exact"`` for this type, ``"montecarlo"`` for :class:`SimulatedOutcome`,
        ``"timeline"`` for :class:`TimelineOutcome` (a class attribute, not a field).

    Examples
    --------
    >>> out = Outcome(0.5, 0.25, 0.25, 2.0, 4.0)
    >>> out.cost_per_success, out.to_dict()["method"]
    (8.0, 'exact')
    """

    success: float
    silent_failure: float
    detected_failure: float
    expected_attempts: float
    expected_cost: float
    infra_failure: float = 0.0
    silent_by_mode: Mapping[str, float] | None = None
    expected_utility: float | None = None

    method: ClassVar[str] = "exact"
    #: The estimated keys, in the order ``to_dict`` reports them.
    _KEYS: ClassVar[tuple[str, ...]] = OUTCOME_KEYS

    @property
    def cost_per_success(self) -> float:
        """``expected_cost / success``; infinite when success is 0."""
        return cost_per_success(self.expected_cost, self.success)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the six outcome keys and ``method``.

        Infinite values become ``None`` (JSON has no infinity).
        """
        return jsonable(self._record())

    def to_row(self) -> dict[str, Any]:
        """The columns of :meth:`to_frame` as a dict (see the module docstring), without
        pandas: what a sweep keeps of a point. Infinities stay infinite, None becomes NaN."""
        return flatten(self._record())

    def to_frame(self) -> "pd.DataFrame":
        """A one-row pandas DataFrame of :meth:`to_dict`'s fields, flattened as the module
        docstring says (``success_ci_low``, ``percentiles_cost_p90``, ``duration_p90``)."""
        return one_row(self._record())

    def _record(self) -> dict[str, Any]:
        """The fields of :meth:`to_dict`, in its order, infinities as they are."""
        out: dict[str, Any] = {}
        for key in self._KEYS:
            out[key] = _number(getattr(self, key))
            out.update(self._estimate_items(key))
        if self.silent_by_mode is not None:
            out["silent_by_mode"] = {name: _number(v) for name, v in self.silent_by_mode.items()}
            for name in self.silent_by_mode:
                for extra, item in self._estimate_items(f"silent_by_mode_{name}").items():
                    out.setdefault(f"silent_by_mode{extra[len('silent_by_mode_' + name):]}", {})[name] = item
        if self.expected_utility is not None:
            out["expected_utility"] = _number(self.expected_utility)
            out.update(self._estimate_items("expected_utility"))
        out.update(self._figure_items())
        out["method"] = self.method
        out.update(self._run_items())
        return out

    def _estimate_items(self, key: str) -> dict[str, Any]:
        """What a subclass reports next to ``key`` (nothing here)."""
        return {}

    def _figure_items(self) -> dict[str, Any]:
        """What a subclass reports after the estimated keys, before ``method`` (nothing here)."""
        return {}

    def _run_items(self) -> dict[str, Any]:
        """What a subclass reports after ``method`` (nothing here)."""
        return {}


@dataclass(frozen=True, kw_only=True)
class SimulatedOutcome(Outcome):
    """An :class:`Outcome` estimated from simulated trials, with its uncertainty.

    Attributes
    ----------
    standard_errors : mapping of str to float
        The standard error of each of the six outcome keys (see :func:`estimate`).
    intervals : mapping of str to (float, float)
        A 95% interval for each of the six outcome keys.
    percentiles : mapping of str to mapping of str to float
        ``{"cost": {"p50": .., "p90": .., "p99": ..}, "attempts": {..}}`` over the trials.
    trials : int
        The number of trials the estimate covers.
    seed : int or None
        The seed that drew them (``None`` when a ``SeedSequence`` without an integer entropy
        was given).
    partial : bool
        True when the run was interrupted and reports the trials that finished.
    trajectories : pandas.DataFrame or None
        With ``record=K``: one row per recorded trial (not compared, not in ``to_dict``).

    Examples
    --------
    >>> out = SimulatedOutcome(1.0, 0.0, 0.0, 1.0, 1.0, standard_errors={"success": 0.0},
    ...                        intervals={}, percentiles={}, trials=10, seed=1)
    >>> d = out.to_dict()
    >>> d["success_se"], d["method"], d["trials"], isinstance(out, Outcome)
    (0.0, 'montecarlo', 10, True)
    """

    standard_errors: Mapping[str, float]
    intervals: Mapping[str, tuple[float, float]]
    percentiles: Mapping[str, Mapping[str, float]]
    trials: int
    seed: int | None
    partial: bool = False
    trajectories: "pd.DataFrame | None" = field(default=None, compare=False, repr=False)

    method: ClassVar[str] = "montecarlo"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: each outcome key followed by ``<key>_se`` and ``<key>_ci``, then
        ``method``, ``percentiles``, ``trials``, ``seed`` and ``partial``.

        Infinite values become ``None`` (JSON has no infinity).
        """
        return super().to_dict()

    def _estimate_items(self, key: str) -> dict[str, Any]:
        items: dict[str, Any] = {}
        if key in self.standard_errors:
            items[f"{key}_se"] = _number(self.standard_errors[key])
        if key in self.intervals:
            low, high = self.intervals[key]
            items[f"{key}_ci"] = [_number(low), _number(high)]
        return items

    def _run_items(self) -> dict[str, Any]:
        items: dict[str, Any] = {}
        if self.percentiles:
            items["percentiles"] = {k: dict(v) for k, v in self.percentiles.items()}
        items["trials"] = self.trials
        items["seed"] = self.seed
        items["partial"] = self.partial
        return items


@dataclass(frozen=True, kw_only=True)
class TimelineOutcome(SimulatedOutcome):
    """What a fleet of trials of one scenario does in time (docs/model.md section 7).

    A :class:`SimulatedOutcome` with two more shares and the time quantities, in one of two
    modes (docs/model.md section 7, "Workloads"):

    * **independent trials** (batch arrivals, nothing shared): ``trials`` trials; the shares
      and means have :func:`estimate`'s standard errors, the duration percentiles
      distribution-free intervals (order statistics; their standard error is the interval's
      half-width over 1.96), and there is no throughput (``makespan`` and the rates per hour
      are None);
    * **a workload** (Poisson arrivals or anything shared): ``replications`` runs of the
      scenario's ``tasks`` tasks (the first ``warmup`` left out); every quantity is the mean
      over replications, its standard error their spread over the square root of their
      number, its interval the 95% t interval; cost per success is the ratio of the means.

    Attributes
    ----------
    success, silent_failure, detected_failure, timeout, infra_failure : float
        Shares of the trials that ended each way (they sum to 1).
    expected_attempts, expected_cost : float
        Mean attempts and cost per trial; a trial stopped by its deadline or a crash counts
        what it had spent by then.
    standard_errors, intervals : mapping
        By key: the shares and means as above; the time figures by their flattened names
        (``duration_p90``, ``wait_reviewers``, ``utilisation_tpm``, ``throughput_per_hour``,
        ...); ``duration`` is the mean duration's too.
    percentiles : mapping
        Empty: the timeline's percentiles are those of :attr:`duration`.
    duration : mapping of str to float
        ``mean``, ``p50``, ``p90``, ``p99`` of arrival-to-end seconds.
    wait : mapping of str to float
        Mean seconds per trial spent waiting for ``agents``, ``rate_limit``, ``llm`` and
        ``reviewers``.
    utilisation : mapping of str to float or None
        ``agents``, ``llm``, ``reviewers``: busy capacity-seconds / (capacity x makespan);
        ``rpm``, ``tpm``: calls (tokens) taken / the most the bucket can give in the window
        (a full minute's allowance plus its refill over the makespan); None when the resource
        is unlimited or unused. In a workload the window runs from the arrival
        of the first task after the warm-up to the last end (the drain included).
    offered_load : mapping of str to float or None
        With Poisson arrivals: the work arriving per second (rate x the mean a task holds
        the resource, or its calls or tokens) over the capacity; 1 or more: a queue that
        grows with the length of the run. Empty otherwise.
    bottleneck : str or None
        The limited resource nearest its capacity (agents counted without the time their
        trials wait for the others); None when nothing is limited.
    makespan : float or None
        Seconds of the window above; None for independent trials.
    throughput_per_hour, successes_per_hour : float or None
        Trials ended (successes) x 3600 / makespan; None for independent trials or when no
        time passed.
    targets : mapping of str to mapping
        The scenario's targets in time (docs/model.md section 7), each
        ``{"target", "estimate", "ci", "status"}`` with ``status`` ``"met"`` (the 95%
        interval on the right side), ``"missed"`` (on the wrong side) or ``"undecided"``.
    warnings : tuple of str
        What makes the figures fragile: a resource whose offered load reaches its capacity,
        waits that grow within a replication, a target that cannot be judged.
    trials : int
        Trials the estimate covers (a workload: replications x (tasks - warmup)).
    seed : int or None
        The seed that drew them.
    replications, tasks, warmup : int or None
        A workload's replications and its tasks and warm-up per replication (None for
        independent trials).
    precision : float or None
        The mean duration's standard error over the mean duration (None when it is 0).
    partial : bool
        True when the run was interrupted and reports the trials (replications) that ended.
    replication_values : mapping of str to tuple
        A workload's per-replication values of every quantity, by flattened name (not
        compared, not in ``to_dict``): what paired comparisons between designs read.
    events : pandas.DataFrame or None
        With ``record=K``: every event of the first K trials (of the first replication),
        columns :data:`EVENT_COLUMNS` (not compared, not in ``to_dict``).
    simpy_events : int
        simpy events the run processed (the benchmarks' unit of work; not compared).
    method : str
        ``"timeline"`` (a class attribute).

    Examples
    --------
    >>> out = TimelineOutcome(0.5, 0.5, 0.0, 2.0, 2.0, timeout=0.0, infra_failure=0.0,
    ...                       standard_errors={}, intervals={}, trials=2, seed=1,
    ...                       duration={"mean": 20.0})
    >>> d = out.to_dict()
    >>> d["method"], d["timeout"], d["duration"], isinstance(out, SimulatedOutcome)
    ('timeline', 0.0, {'mean': 20.0, 'mean_se': None, 'mean_ci': [None, None]}, True)
    >>> out.to_row()["duration_mean"]
    20.0
    """

    timeout: float
    percentiles: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    duration: Mapping[str, float] = field(default_factory=dict)
    wait: Mapping[str, float] = field(default_factory=dict)
    utilisation: Mapping[str, float | None] = field(default_factory=dict)
    offered_load: Mapping[str, float | None] = field(default_factory=dict)
    bottleneck: str | None = None
    makespan: float | None = None
    throughput_per_hour: float | None = None
    successes_per_hour: float | None = None
    targets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    replications: int | None = None
    tasks: int | None = None
    warmup: int | None = None
    precision: float | None = None
    replication_values: Mapping[str, tuple[float | None, ...]] = field(
        default_factory=dict, compare=False, repr=False)
    events: "pd.DataFrame | None" = field(default=None, compare=False, repr=False)
    simpy_events: int = field(default=0, compare=False)

    method: ClassVar[str] = "timeline"
    _KEYS: ClassVar[tuple[str, ...]] = (*TIMELINE_PROPORTIONS, *OUTCOME_KEYS[4:])
    _QUANTITIES: ClassVar[tuple[str, ...]] = (
        *_KEYS, "makespan", "throughput_per_hour", "successes_per_hour")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the keys of docs/model.md section 7: each share and
        mean followed by ``<key>_se`` and ``<key>_ci``; the tables ``duration``, ``wait``,
        ``utilisation`` (and ``offered_load``), each figure followed by ``<name>_se`` and
        ``<name>_ci`` inside its table; ``duration_se`` (the mean's); ``bottleneck``;
        ``makespan``, ``throughput_per_hour``, ``successes_per_hour`` with theirs;
        ``targets``; ``warnings``; ``method``, ``trials``, ``seed``, ``partial``,
        ``replications``, ``tasks``, ``warmup`` and ``precision``.

        Infinite values become ``None`` (JSON has no infinity).
        """
        return super().to_dict()

    @property
    def meets_targets(self) -> bool | None:
        """Every target met (None when the scenario sets none)."""
        if not self.targets:
            return None
        return all(verdict["status"] == "met" for verdict in self.targets.values())

    def quantity(self, key: str) -> tuple[float | None, tuple[float, float] | None]:
        """The estimate of a reported quantity by its flattened name (``success``,
        ``duration_p90``, ``wait_reviewers``, ``throughput_per_hour``, ...) and its 95%
        interval (None when it has none)."""
        for table, figures in (("duration", self.duration), ("wait", self.wait),
                               ("utilisation", self.utilisation),
                               ("offered_load", self.offered_load)):
            name = key[len(table) + 1:]
            if key.startswith(f"{table}_") and name in figures:
                value = figures[name]
                break
        else:
            if key not in self._QUANTITIES:
                raise invalid("key", "a reported quantity such as success or duration_p90", key)
            value = getattr(self, key)
        interval = self.intervals.get(key)
        return value, (None if interval is None else (float(interval[0]), float(interval[1])))

    def _figure_items(self) -> dict[str, Any]:
        items: dict[str, Any] = {"duration": self._table("duration", self.duration)}
        if "duration" in self.standard_errors:
            items["duration_se"] = _number(self.standard_errors["duration"])
        items["wait"] = self._table("wait", self.wait)
        items["utilisation"] = self._table("utilisation", self.utilisation)
        if self.offered_load:
            items["offered_load"] = self._table("offered_load", self.offered_load)
        items["bottleneck"] = self.bottleneck
        for key in ("makespan", "throughput_per_hour", "successes_per_hour"):
            items[key] = _number(getattr(self, key))
            items.update(self._errors(key))
        if self.targets:
            items["targets"] = {
                key: {"target": v["target"], "estimate": _number(v["estimate"]),
                      "ci": None if v["ci"] is None else [_number(x) for x in v["ci"]],
                      "status": v["status"]}
                for key, v in self.targets.items()
            }
        items["warnings"] = list(self.warnings)
        return items

    def _table(self, name: str, figures: Mapping[str, float | None]) -> dict[str, Any]:
        """A table of figures, each followed by its ``_se`` and ``_ci``."""
        out: dict[str, Any] = {}
        for key, value in figures.items():
            out[key] = _number(value)
            for extra, item in self._errors(f"{name}_{key}").items():
                out[extra[len(name) + 1:]] = item
        return out

    def _errors(self, key: str) -> dict[str, Any]:
        """``<key>_se`` and ``<key>_ci``, null for a figure that has none (an unlimited
        resource's utilisation, the throughput of independent trials): every run has the
        same keys, so rows of both modes stack into one table."""
        return {f"{key}_se": None, f"{key}_ci": [None, None], **self._estimate_items(key)}

    def _run_items(self) -> dict[str, Any]:
        items = super()._run_items()
        items["replications"] = self.replications
        items["tasks"] = self.tasks
        items["warmup"] = self.warmup
        items["precision"] = self.precision
        return items


def judge(target: float, interval: tuple[float, float] | None, at_least: bool) -> str:
    """A target's verdict from its quantity's 95% interval (docs/model.md section 7):
    ``"met"`` when the interval lies on the right side of the target, ``"missed"`` when it
    lies on the wrong side, ``"undecided"`` otherwise (or without an interval).

    Examples
    --------
    >>> judge(0.9, (0.92, 0.95), at_least=True), judge(900.0, (850.0, 950.0), at_least=False)
    ('met', 'undecided')
    """
    if interval is None:
        return "undecided"
    low, high = interval
    if at_least:
        met, missed = low >= target, high < target
    else:
        met, missed = high <= target, low > target
    return "met" if met else "missed" if missed else "undecided"


def cost_per_success(expected_cost: float, success: float) -> float:
    """Expected cost of one trial over its success: what one success costs on average.

    Infinite when success is 0 (no number of trials buys one).
    """
    if success <= 0.0:
        return math.inf
    return expected_cost / success


# ------------------------------------------------------------------------------ estimates
@dataclass(frozen=True)
class Tally:
    """What an engine's trials add up to: the input of :func:`estimate`.

    Attributes
    ----------
    trials : int
        The trials counted, ``>= 1``.
    counts : mapping of str to int
        Trials that ended each way, keyed by share (``success`` among them), in the order
        they are reported.
    means : mapping of str to (float, float)
        Per-trial quantity (``expected_attempts``, ``expected_cost``, ...) -> its mean and
        its population variance (divided by ``trials``). ``expected_cost`` is needed.
    cov_cost_success : float
        The population covariance of a trial's cost and its success indicator.
    cost_unit : float
        The power of two the costs above are given in (costs near the float range overflow
        when squared): :func:`estimate` multiplies the cost estimates back by it last, so
        that they come out infinite past the float range instead of overflowing half-way.
    """

    trials: int
    counts: Mapping[str, int]
    means: Mapping[str, tuple[float, float]]
    cov_cost_success: float
    cost_unit: float = 1.0


@dataclass(frozen=True)
class Estimate:
    """What :func:`estimate` makes of a :class:`Tally`: for every share, every mean and
    ``cost_per_success``, its value, standard error and 95% interval."""

    values: dict[str, float]
    standard_errors: dict[str, float]
    intervals: dict[str, tuple[float, float]]


def estimate(tally: Tally) -> Estimate:
    r"""Point estimates, standard errors and 95% intervals of a tally of trials.

    The one tally-to-estimate rule of both stochastic engines (see the module docstring): the
    shares get binomial standard errors and Wilson intervals, the means :math:`s/\sqrt N`
    (NaN with one trial) and normal intervals, cost per success
    :math:`\hat R = \bar C/\hat p_S` the delta-method standard error, with

    .. math::

        \widehat{\mathrm{Var}}(C - \hat R S) = \frac{N}{N-1}\Bigl(\mathrm{Var}(C)
        - 2\hat R\,\mathrm{Cov}(C, S) + \hat R^2\,\hat p_S(1-\hat p_S)\Bigr),

    and a normal interval; infinite estimate, standard error and interval when no trial
    succeeded. The cost estimates are multiplied by ``tally.cost_unit`` last.

    Examples
    --------
    Four trials, two successes, each costing 2 (a failure costs 2 as well):

    >>> tally = Tally(4, {"success": 2, "silent_failure": 2},
    ...               {"expected_attempts": (2.0, 0.0), "expected_cost": (2.0, 0.0)}, 0.0)
    >>> e = estimate(tally)
    >>> e.values["cost_per_success"], e.standard_errors["success"]
    (4.0, 0.25)
    >>> estimate(Tally(4, {"success": 0}, {"expected_cost": (2.0, 0.0)}, 0.0)).intervals[
    ...     "cost_per_success"]
    (inf, inf)
    """
    n = tally.trials
    sample = n / (n - 1) if n > 1 else math.nan  # population -> sample variance
    values: dict[str, float] = {}
    se: dict[str, float] = {}
    intervals: dict[str, tuple[float, float]] = {}
    for key, count in tally.counts.items():
        values[key] = count / n
        se[key] = binomial_se(count, n)
        intervals[key] = wilson(count, n)
    for key, (mean, variance) in tally.means.items():
        values[key] = mean
        se[key] = math.sqrt(variance * sample / n)
        intervals[key] = normal_interval(mean, se[key])
    n_success = tally.counts["success"]
    mean_cost, var_cost = tally.means["expected_cost"]
    if n_success > 0:
        success = n_success / n
        ratio = mean_cost / success
        # Var(C - R S) = Var(C) - 2 R Cov(C, S) + R^2 Var(S)
        spread = (
            var_cost
            - 2.0 * ratio * tally.cov_cost_success
            + ratio * ratio * success * (1.0 - success)
        )
        if not math.isnan(spread):  # NaN: a cost beyond the float range, left undefined
            spread = max(0.0, spread)  # rounding can take a spread of 0 below it
        values["cost_per_success"] = ratio
        se["cost_per_success"] = math.sqrt(spread * sample / n) / success
        intervals["cost_per_success"] = normal_interval(ratio, se["cost_per_success"])
    else:
        values["cost_per_success"] = math.inf
        se["cost_per_success"] = math.inf
        intervals["cost_per_success"] = (math.inf, math.inf)
    unit = tally.cost_unit
    for key in ("expected_cost", "cost_per_success"):  # x * 1.0 is x: exact when unit is 1
        values[key] = float(values[key]) * unit
        se[key] = float(se[key]) * unit
        low, high = intervals[key]
        intervals[key] = (float(low) * unit, float(high) * unit)
    return Estimate(values, se, intervals)


# ------------------------------------------------------------------------------ tables
def flatten(record: Mapping[str, Any]) -> dict[str, Any]:
    """A result's record as one table row: the one flattening convention of relsim.

    Nested keys joined with ``_``, intervals (a pair under ``ci``, ``<name>_ci`` or
    ``ci_<name>``) split into ``<key>_low`` and ``<key>_high``, None as NaN, numpy scalars
    as Python ones, anything else one cell (see the module docstring).

    Examples
    --------
    >>> flatten({"success_ci": (0.25, 0.75), "duration": {"p90": 3.0},
    ...          "value": [1, 2], "reason": None})
    {'success_ci_low': 0.25, 'success_ci_high': 0.75, 'duration_p90': 3.0, 'value': [1, 2], 'reason': nan}
    """
    row: dict[str, Any] = {}
    _flatten_into(row, "", record)
    return row


def one_row(record: Mapping[str, Any]) -> "pd.DataFrame":
    """A one-row pandas DataFrame of :func:`flatten` ``(record)``: every ``to_frame``."""
    import pandas as pd

    return pd.DataFrame([flatten(record)])


def _flatten_into(row: dict[str, Any], prefix: str, mapping: Mapping[Any, Any]) -> None:
    for key, value in mapping.items():
        name = f"{prefix}_{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            _flatten_into(row, name, value)
        elif _is_interval(str(key), value):
            _flatten_into(row, name, {"low": value[0], "high": value[1]})
        elif value is None:
            row[name] = math.nan
        elif type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
            row[name] = value.item()
        else:
            row[name] = value


def _is_interval(key: str, value: Any) -> bool:
    named = key == "ci" or key.endswith("_ci") or key.startswith("ci_")
    return named and isinstance(value, (list, tuple)) and len(value) == 2


# ------------------------------------------------------------------------------ JSON
def jsonable(value: Any) -> Any:
    """``value`` made JSON-ready: the one JSON helper of relsim.

    Non-finite floats become ``None`` (JSON has no infinity; NaN means "undefined"), numpy
    scalars and arrays become Python numbers and lists, mappings get string keys.

    Examples
    --------
    >>> jsonable({"a": float("inf"), 1: (0.5, float("nan"))})
    {'a': None, '1': [0.5, None]}
    """
    kind = type(value)  # the common types first: a report of a million rows stays quick
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict or isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # numpy scalar -> Python scalar, array -> (nested) list
        if isinstance(value, list):
            return jsonable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _number(value: float | None) -> float | None:
    """One reported number as a Python float (None stays None: nothing to report)."""
    return None if value is None else float(value)
