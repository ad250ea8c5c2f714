r"""The compiled trial model: what every engine reads, built once from a scenario.

A :class:`Scenario` says what the user wrote; a :class:`TrialModel` says what one trial of
docs/model.md section 3 needs, as plain arrays and numbers with one convention for each thing:

- per-step arrays of length ``steps`` (p with its logit, miss, false_reject, budgets, costs);
- "no cap" on the task-wide retry budget is :data:`NO_CAP` (an integer no trial reaches);
- without a verifier, ``miss`` is 1 and ``false_reject`` 0 (every attempt is accepted);
- without checkpoints, ``detect`` is 1, ``false_alarm`` 0, no position is a checkpoint;
- without confusion, ``enter = recover = 0`` and ``factor = 1``;
- attempt and verification costs are held apart (section 8 charges them differently);
  :attr:`TrialModel.cost_per_attempt` is their sum, what section 3 charges per attempt;
- :func:`shift` is the one logit shift, :math:`\operatorname{expit}(\operatorname{logit} p + x)`,
  numerically stable at any ``x`` and bit for bit the Monte Carlo kernels' own.

A :class:`TimeModel` does the same for section 7's time tables. The exact engine, Monte Carlo,
the timeline and the planner read these, never the scenario's tables: a new scenario key is
added to a table (``tables.py`` or ``time_tables.py``) and compiled here, and
``tests/test_trial_model.py`` fails for any compiled field an engine ignores.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from relsim.scenario.design_tables import UTILITY_OUTCOMES
from relsim.scenario.tables import Scenario, as_scenario, checkpoint_positions
from relsim.scenario.time_tables import DEFAULT_TASKS, TARGET_KEYS, ZERO, Backoff, Duration

__all__ = ["NO_CAP", "TimeModel", "TrialModel", "expit", "expit_array", "shift", "shift_array", "time_model", "trial_model"]

#: The task-wide retry budget of a trial without one: a count no trial reaches, so an engine
#: compares against it with no branch.
NO_CAP = 1 << 62


def expit(x: float) -> float:
    r""":math:`1 / (1 + e^{-x})` without overflow at any ``x`` (the kernels' formula).

    Examples
    --------
    >>> expit(0.0), expit(-800.0), expit(800.0)
    (0.5, 0.0, 1.0)
    """
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def shift(p: float, logit_p: float, x: float) -> float:
    r""":math:`\operatorname{expit}(\operatorname{logit} p + x)`; ``p`` of exactly 0 or 1 stays.

    ``logit_p`` is ``TrialModel.logit_p`` of the step (passed in so that it is computed once).
    """
    if p == 0.0 or p == 1.0:
        return p
    return expit(logit_p + x)


def expit_array(y: np.ndarray) -> np.ndarray:
    """:func:`expit` over an array, without overflow at any ``y``."""
    y = np.asarray(y, dtype=float)
    e = np.exp(-np.abs(y))  # never overflows: the exponent is <= 0
    return np.where(y >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))


def shift_array(p: float, logit_p: float, x: np.ndarray) -> np.ndarray:
    """:func:`shift` over an array of ``x`` (the exact engine's quadrature nodes)."""
    if p == 0.0 or p == 1.0:
        return np.full(np.shape(x), p)
    return expit_array(logit_p + np.asarray(x, dtype=float))


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _per_step(value: object, steps: int, dtype: type) -> np.ndarray:
    array: np.ndarray = np.empty(steps, dtype=dtype)
    array[:] = value
    return _frozen(array)


@dataclass(frozen=True, eq=False)
class TrialModel:
    r"""One trial of docs/model.md section 3, compiled: what every engine reads.

    Build it with :func:`trial_model` (cached per scenario). Arrays are read-only; an engine
    that needs writable copies (numba) copies them.

    Attributes
    ----------
    steps : int
    p, logit_p : ndarray, shape (steps,)
        Per-attempt success before the random effects, and its logit (0 where ``p_fixed``).
    p_fixed : ndarray of bool
        ``p`` is exactly 0 or 1, which :func:`shift` leaves alone.
    has_verifier : bool
    miss, false_reject : ndarray
        P(accept | wrong) and P(reject | correct); 1 and 0 without a verifier.
    per_step : ndarray of int64
        Retries allowed per execution of each step (``total`` when only a total is given).
    total : int
        The task-wide retry budget; :data:`NO_CAP` when there is none.
    attempt_cost : ndarray
        Cost of one attempt at each step (without the verification).
    verify_cost : float
        Cost of one verification.
    checkpoint_positions : tuple of int
        Steps (1..steps) after which a checkpoint checks the segment.
    is_checkpoint : ndarray of bool, shape (steps + 1,)
        Indexed by the number of steps done.
    detect, false_alarm : float
    rollbacks : int
    checkpoint_cost, rollback_cost : float
    has_confusion : bool
    enter, recover, factor : float
    task_sd, step_sd : float
    cost_unit : float
        The power of two the engines divide costs by while they sum them (1 for costs of
        ordinary size): costs near the float range neither overflow nor underflow.

    The tables of docs/model.md section 8, each the identity when absent (``C`` classes,
    ``K`` rungs above rung 0, ``M`` failure modes):

    class_weight : ndarray, shape (C,)
        Each class's probability (normalised); ``[1.0]`` without classes.
    rung_after : ndarray of int64, shape (K,)
        Rung ``k + 1`` serves attempts ``j >= rung_after[k]`` (0-based) of an execution.
    rung_p, rung_logit_p, rung_p_fixed : ndarray, shape (C, K + 1, steps)
        Class ``c``'s success on each rung (rung 0: the class's ``p``, or the scenario's), its
        logit (0 where fixed) and whether it is exactly 0 or 1. ``p``, ``logit_p`` and
        ``p_fixed`` are class 0's rung 0.
    rung_cost : ndarray, shape (K + 1, steps)
        Cost of one sample on each rung (rung 0: ``attempt_cost``).
    samples : int
        Samples per attempt (1 without ``[sampling]``).
    vote : bool
        The samples are voted on (``select = "vote"``); else the verifier checks them in order.
    wrong_answers : int
        Distinct wrong answers a wrong sample picks among; 0 when every wrong sample differs.
    mode_names : tuple of str
        The failure modes (empty without them).
    mode_share, mode_miss, mode_detect : ndarray, shape (M,)
        Each mode's share of wrong results, P(accept | wrong of this mode) (1 without a
        verifier) and its checkpoint ``detect``. With modes, ``miss`` is the mixture
        :math:`\sum_m \text{share}_m \text{miss}_m` (what a wrong answer meets).
    fault : float
        P(an attempt is lost to the environment).
    utility : ndarray of shape (6,) or None
        The values of success, silent, detected and infra failure and timeout, then
        ``cost_weight``; None without ``[utility]``.
    """

    steps: int
    p: np.ndarray
    logit_p: np.ndarray
    p_fixed: np.ndarray
    has_verifier: bool
    miss: np.ndarray
    false_reject: np.ndarray
    per_step: np.ndarray
    total: int
    attempt_cost: np.ndarray
    verify_cost: float
    checkpoint_positions: tuple[int, ...]
    is_checkpoint: np.ndarray
    detect: float
    false_alarm: float
    rollbacks: int
    checkpoint_cost: float
    rollback_cost: float
    has_confusion: bool
    enter: float
    recover: float
    factor: float
    task_sd: float
    step_sd: float
    cost_unit: float
    class_weight: np.ndarray
    rung_after: np.ndarray
    rung_p: np.ndarray
    rung_logit_p: np.ndarray
    rung_p_fixed: np.ndarray
    rung_cost: np.ndarray
    samples: int
    vote: bool
    wrong_answers: int
    mode_names: tuple[str, ...]
    mode_share: np.ndarray
    mode_miss: np.ndarray
    mode_detect: np.ndarray
    fault: float
    utility: np.ndarray | None

    @classmethod
    def from_scenario(cls, s: Scenario) -> "TrialModel":
        """Compile ``s`` (uncached; :func:`trial_model` caches it)."""
        n = s.steps
        v, r, c, conf = s.verifier, s.retries, s.checkpoints, s.correlation.confusion
        design = _design(s)
        rung_p = design["rung_p"]
        p = _frozen(rung_p[0, 0].copy())
        fixed = design["rung_p_fixed"][0, 0]
        modes = design["mode_share"].size
        miss: object = 1.0 if v is None else v.miss
        if modes and v is not None:  # a wrong answer meets the mixture of the modes' misses
            miss = float(design["mode_share"] @ design["mode_miss"])
        per_step = 0 if r is None else (r.total if r.per_step is None else r.per_step)
        positions = checkpoint_positions(c, n)
        is_checkpoint = np.zeros(n + 1, dtype=np.bool_)
        is_checkpoint[list(positions)] = True
        attempt_cost = _per_step(s.cost.attempt, n, np.float64)
        cost = s.cost
        return cls(
            steps=n,
            p=p,
            logit_p=_frozen(design["rung_logit_p"][0, 0].copy()),
            p_fixed=_frozen(fixed.copy()),
            has_verifier=v is not None,
            miss=_per_step(miss, n, np.float64),
            false_reject=_per_step(0.0 if v is None else v.false_reject, n, np.float64),
            per_step=_per_step(per_step, n, np.int64),
            total=NO_CAP if r is None or r.total is None else int(r.total),
            attempt_cost=attempt_cost,
            verify_cost=cost.verify,
            checkpoint_positions=positions,
            is_checkpoint=_frozen(is_checkpoint),
            detect=1.0 if c is None else c.detect,
            false_alarm=0.0 if c is None else c.false_alarm,
            rollbacks=0 if c is None else c.rollbacks,
            checkpoint_cost=cost.checkpoint,
            rollback_cost=cost.rollback,
            has_confusion=conf is not None,
            enter=0.0 if conf is None else conf.enter,
            recover=0.0 if conf is None else conf.recover,
            factor=1.0 if conf is None else conf.factor,
            task_sd=s.correlation.task_sd,
            step_sd=s.correlation.step_sd,
            cost_unit=_cost_unit(
                float(design["rung_cost"].max()) * design["samples"],
                cost.verify * design["samples"], cost.checkpoint, cost.rollback,
            ),
            **design,
        )

    # ------------------------------------------------------------------ derived, one place each
    @property
    def classes(self) -> int:
        return int(self.class_weight.size)

    @property
    def rungs(self) -> int:
        """Rungs above rung 0 (0 without a ladder)."""
        return int(self.rung_after.size)

    @property
    def modes(self) -> int:
        return len(self.mode_names)

    @property
    def has_design_tables(self) -> bool:
        """Anything of docs/model.md section 8 that changes how a trial runs (``utility``
        only values the outcomes, so it does not count)."""
        return (
            self.classes > 1 or self.rungs > 0 or self.samples > 1 or self.modes > 0 or self.fault > 0.0
        )

    def for_class(self, c: int) -> "TrialModel":
        """The model of a trial that drew class ``c``: one class, its p on every rung."""
        keep = slice(c, c + 1)
        return dataclasses.replace(
            self,
            p=_frozen(self.rung_p[c, 0].copy()),
            logit_p=_frozen(self.rung_logit_p[c, 0].copy()),
            p_fixed=_frozen(self.rung_p_fixed[c, 0].copy()),
            class_weight=_frozen(np.ones(1)),
            rung_p=_frozen(self.rung_p[keep].copy()),
            rung_logit_p=_frozen(self.rung_logit_p[keep].copy()),
            rung_p_fixed=_frozen(self.rung_p_fixed[keep].copy()),
        )

    def utility_of(self, shares: "Mapping[str, float]", expected_cost: float) -> float | None:
        r"""The expected utility of outcome ``shares`` (keys of ``UTILITY_OUTCOMES``; a missing
        one is 0) at ``expected_cost``:
        :math:`\sum_o \text{share}_o v_o - \text{cost\_weight} \cdot \text{expected\_cost}`;
        None without ``[utility]``."""
        if self.utility is None:
            return None
        values = self.utility
        total = math.fsum(float(shares.get(key, 0.0)) * float(values[k]) for k, key in enumerate(UTILITY_OUTCOMES))
        weight = float(values[-1])
        return total - weight * expected_cost if weight else total

    @property
    def has_random_effects(self) -> bool:
        return self.task_sd > 0.0 or self.step_sd > 0.0

    @property
    def has_checkpoints(self) -> bool:
        return bool(self.checkpoint_positions)

    @property
    def has_total(self) -> bool:
        """A task-wide retry budget is set."""
        return self.total != NO_CAP

    @property
    def cost_per_attempt(self) -> np.ndarray:
        """What section 3 charges per attempt at each step: ``attempt_cost + verify_cost``."""
        return self.attempt_cost + self.verify_cost

    @property
    def step_caps(self) -> np.ndarray:
        """Retries one execution of each step can spend: ``per_step`` capped by ``total``."""
        return np.minimum(self.per_step, self.total)

    @property
    def binding_total(self) -> int | None:
        """The task-wide budget when it can bind, else None: each step runs at most
        ``rollbacks + 1`` times, so a total that covers every possible retry never binds."""
        if not self.has_total or self.total >= int(self.step_caps.sum()) * (self.rollbacks + 1):
            return None
        return self.total

    @property
    def max_executions(self) -> int:
        """The most step executions one trial can make: each rollback redoes at most the
        longest segment."""
        edges = (0, *self.checkpoint_positions)
        longest = max((b - a for a, b in zip(edges, edges[1:])), default=0)
        return self.steps + self.rollbacks * longest

    @property
    def max_attempts(self) -> int:
        """The most attempts one trial can make."""
        executions = self.max_executions
        most = executions * (int(self.per_step.max()) + 1)
        return min(most, executions + self.total) if self.has_total else most

    def shifted_p(self, x: float | np.ndarray) -> np.ndarray:
        """Every step's ``p`` shifted by ``x`` (broadcast against a trailing axis: shape
        ``(steps,) + x.shape``); ``p`` of exactly 0 or 1 stays."""
        x = np.asarray(x, dtype=float)
        index = (slice(None),) + (None,) * x.ndim
        y = expit_array(self.logit_p[index] + x[None])
        return np.where(self.p_fixed[index], self.p[index], y)


@dataclass(frozen=True, eq=False)
class TimeModel:
    """Section 7's time tables, compiled: what the timeline engine reads.

    Attributes
    ----------
    attempt : tuple of Duration
        One attempt's duration at each step (0 without ``[timing]``).
    verify, checkpoint : Duration
    backoff : Backoff or None
    deadline : float or None
        Seconds from arrival; None: no deadline.
    poisson : bool
        Poisson arrivals at ``rate_per_hour``; else every trial arrives at 0.
    rate_per_hour : float or None
    agents, llm_concurrency, reviewers : int or None
        Capacities; None: unlimited (reviewers: no human gate).
    rpm, tpm : float or None
        The provider's limits; None: unlimited.
    tokens : tuple of float
        Tokens per LLM call at each step.
    verifier_calls_llm : bool
    human : bool
        Every checkpoint check is a human review (``review`` long, holding a reviewer).
    review : Duration
    crash_per_hour : float
    tasks : int
        Tasks one replication of a workload runs (1000 without ``[fleet]``).
    warmup : int
        Tasks at the start of a replication left out of its statistics: ``fleet.warmup``, by
        default 10% of ``tasks`` with Poisson arrivals, 0 for a batch.
    targets : tuple of (str, float)
        The targets in time (``[targets]``, with the top-level ``target`` as ``success``), in
        ``TARGET_KEYS`` order.
    """

    attempt: tuple[Duration, ...]
    verify: Duration
    checkpoint: Duration
    backoff: Backoff | None
    deadline: float | None
    poisson: bool
    rate_per_hour: float | None
    agents: int | None
    llm_concurrency: int | None
    rpm: float | None
    tpm: float | None
    tokens: tuple[float, ...]
    verifier_calls_llm: bool
    reviewers: int | None
    human: bool
    review: Duration
    crash_per_hour: float
    tasks: int = DEFAULT_TASKS
    warmup: int = 0
    targets: tuple[tuple[str, float], ...] = ()

    @classmethod
    def from_scenario(cls, s: Scenario) -> "TimeModel":
        """Compile ``s``'s time tables (uncached; :func:`time_model` caches it)."""
        n = s.steps
        timing, fleet, res, infra = s.timing, s.fleet, s.resources, s.infra
        attempt = ZERO if timing is None else timing.attempt
        tokens = 0.0 if res is None or res.tokens is None else res.tokens
        return cls(
            attempt=attempt if isinstance(attempt, tuple) else (attempt,) * n,
            verify=ZERO if timing is None else timing.verify,
            checkpoint=ZERO if timing is None else timing.checkpoint,
            backoff=None if timing is None else timing.backoff,
            deadline=None if timing is None else timing.deadline,
            poisson=fleet is not None and fleet.arrivals == "poisson",
            rate_per_hour=None if fleet is None else fleet.rate_per_hour,
            agents=None if fleet is None else fleet.agents,
            llm_concurrency=None if res is None else res.llm_concurrency,
            rpm=None if res is None else res.rpm,
            tpm=None if res is None else res.tpm,
            tokens=tuple(float(t) for t in tokens) if isinstance(tokens, tuple) else (float(tokens),) * n,
            verifier_calls_llm=res is not None and res.verifier_calls_llm,
            reviewers=None if res is None else res.reviewers,
            human=s.checkpoints is not None and s.checkpoints.human,
            review=ZERO if res is None or res.review is None else res.review,
            crash_per_hour=0.0 if infra is None else infra.crash_per_hour,
            tasks=DEFAULT_TASKS if fleet is None else fleet.tasks,
            warmup=0 if fleet is None else fleet.warmup_tasks,
            targets=_targets(s),
        )

    @property
    def independent(self) -> bool:
        """Trials share nothing (no agent pool, LLM slots, rate limits or reviewers)."""
        return (
            self.agents is None
            and self.llm_concurrency is None
            and self.rpm is None
            and self.tpm is None
            and not self.human
        )

    @property
    def workload(self) -> bool:
        """Section 9's second mode: Poisson arrivals or anything shared, run as replications
        of ``tasks`` tasks; otherwise the trials are independent (a batch sharing nothing)."""
        return self.poisson or not self.independent

    @property
    def changes_outcomes(self) -> tuple[str, ...]:
        """The keys that make a trial end otherwise than section 3 says (a deadline, crashes)."""
        keys = ("timing.deadline",) if self.deadline is not None else ()
        return keys + (("infra.crash_per_hour",) if self.crash_per_hour > 0 else ())


def _logits(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The logit of ``p`` (0 where ``p`` is exactly 0 or 1) and where it is fixed."""
    fixed = (p == 0.0) | (p == 1.0)
    inner = np.where(fixed, 0.5, p)
    return _frozen(np.log(inner) - np.log1p(-inner)), _frozen(fixed)


def _design(s: Scenario) -> dict[str, Any]:
    """Section 8's fields of :class:`TrialModel`, each the identity when its table is absent."""
    n = s.steps
    e, g, v = s.escalation, s.sampling, s.verifier
    classes = s.classes or ()
    k = 0 if e is None else e.rungs
    if classes:
        weights = np.array([c.weight for c in classes], dtype=np.float64)
        weights /= weights.sum()
    else:
        weights = np.ones(1)
    base = [c.p for c in classes] if classes else [s.p]
    rung_p = np.empty((len(base), k + 1, n))
    for ci, p0 in enumerate(base):
        rung_p[ci, 0] = p0
        for rung in range(k):
            own = classes[ci].escalation_p if classes else None
            rung_p[ci, rung + 1] = (own if own is not None else e.p)[rung]  # type: ignore[union-attr]
    logit, fixed = _logits(rung_p)
    attempt = _per_step(s.cost.attempt, n, np.float64)
    rung_cost = np.empty((k + 1, n))
    rung_cost[0] = attempt
    for rung in range(k):
        rung_cost[rung + 1] = attempt if e.attempt_cost is None else e.attempt_cost[rung]  # type: ignore[union-attr]
    modes = s.failure_modes or ()
    detect = 1.0 if s.checkpoints is None else s.checkpoints.detect
    return {
        "class_weight": _frozen(weights),
        "rung_after": _frozen(np.array(() if e is None else e.after, dtype=np.int64)),
        "rung_p": _frozen(rung_p),
        "rung_logit_p": logit,
        "rung_p_fixed": fixed,
        "rung_cost": _frozen(rung_cost),
        "samples": 1 if g is None else g.n,
        "vote": g is None or g.select == "vote",
        "wrong_answers": 1 if g is None else g.answers,
        "mode_names": tuple(m.name for m in modes),
        "mode_share": _frozen(np.array([m.share for m in modes], dtype=np.float64)),
        "mode_miss": _frozen(np.array(
            [1.0 if v is None else (m.miss or 0.0) for m in modes], dtype=np.float64)),
        "mode_detect": _frozen(np.array(
            [detect if m.detect is None else m.detect for m in modes], dtype=np.float64)),
        "fault": 0.0 if s.faults is None else s.faults.attempt,
        "utility": None if s.utility is None else _frozen(
            np.array([*s.utility.values, s.utility.cost_weight], dtype=np.float64)),
    }


def _targets(s: Scenario) -> tuple[tuple[str, float], ...]:
    given = {} if s.targets is None else s.targets.given()
    if s.target is not None:
        given["success"] = s.target  # the same target (tables.py refuses two values)
    return tuple((key, float(given[key])) for key in TARGET_KEYS if key in given)


def trial_model(scenario: Scenario | Mapping[str, Any]) -> TrialModel:
    """The compiled :class:`TrialModel` of ``scenario`` (a ``Scenario``, or a mapping read as
    the engines read it; cached: scenarios are frozen).

    Examples
    --------
    >>> m = trial_model(Scenario.from_dict({"steps": 3, "p": 0.9}))
    >>> m.miss.tolist(), m.has_total, m.cost_per_attempt.tolist()
    ([1.0, 1.0, 1.0], False, [1.0, 1.0, 1.0])
    """
    return _trial_model(as_scenario(scenario))


def time_model(scenario: Scenario | Mapping[str, Any]) -> TimeModel:
    """The compiled :class:`TimeModel` of ``scenario`` (a ``Scenario`` or a mapping; cached)."""
    return _time_model(as_scenario(scenario))


# a mapping is not hashable: the caches hold scenarios, read from mappings above
@lru_cache(maxsize=128)
def _trial_model(scenario: Scenario) -> TrialModel:
    return TrialModel.from_scenario(scenario)


@lru_cache(maxsize=128)
def _time_model(scenario: Scenario) -> TimeModel:
    return TimeModel.from_scenario(scenario)


def _cost_unit(*costs: float) -> float:
    """The power of two that the engines divide costs by while they sum them.

    1 for costs of ordinary size (so results are exactly what they were). Costs near the
    float range (1e160 per attempt, squared in a variance or summed over many attempts) would
    overflow, and tiny ones underflow: those are held in units of the power of two above the
    largest cost, which rescales exactly, and the expected cost is multiplied back at the end
    (infinite, as stated, when it is beyond the range).

    Examples
    --------
    >>> _cost_unit(1.0, 0.0), _cost_unit(1e160, 0.0) == 2.0**531
    (1.0, True)
    """
    largest = max(costs)
    if largest == 0.0 or 2.0**-256 <= largest <= 2.0**256:
        return 1.0
    return math.ldexp(1.0, math.frexp(largest)[1] - 1)  # each cost / unit is below 2
