"""The time tables of a scenario: ``[timing]``, ``[fleet]``, ``[resources]``, ``[infra]``, and
the ``[targets]`` a design must meet in time.

docs/model.md section 7 fixes them all, with the workload (``fleet.tasks``,
``fleet.warmup``) and ``[targets]``. They change *when* things happen in a trial and what a
fleet of trials shares, never the draws and decisions of section 3: the exact engine, Monte
Carlo and the planner ignore them; the timeline engine reads them (through
``relsim.scenario.compiled.TimeModel``). Each table validates its own values when it is built;
what depends on the rest of the scenario (per-step lists, a verifier to time) is checked by
the scenario (``relsim.scenario.tables``).

A duration is a number of seconds (constant), ``{median = M, p95 = Q}`` (lognormal with
:math:`\\sigma = \\ln(Q/M) / \\Phi^{-1}(0.95)`; ``Q = M`` is constant) or ``{mean = M}``
(exponential); it is held as a :class:`Duration`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from relsim.errors import ScenarioError, invalid
from relsim import checks

__all__ = ["Backoff", "Duration", "Fleet", "Infra", "Resources", "TARGET_KEYS", "Targets", "Timing"]

#: The widest lognormal spread accepted, ``p95 / median``: ``sigma`` up to 8.4, so a draw of
#: ``median * exp(sigma z)`` stays finite for any ``z`` a trial will meet.
MAX_SPREAD = 1e6

#: ``Phi^{-1}(0.95)``: a lognormal's p95 is ``median * exp(sigma * Z95_ONE_SIDED)``.
Z95_ONE_SIDED = 1.6448536269514722

#: Upper limit of the count keys, far above any fleet, so a typo cannot ask for unbounded memory.
MAX_SLOTS = 1_000_000

#: The longest duration a scenario may give, in seconds (about 31,700 years): far beyond any
#: real wait, and far enough inside the float range that a run's clock (sums of draws up to
#: ``MAX_SPREAD``-wide lognormal tails, over millions of trials) never overflows to infinity.
MAX_SECONDS = 1e12
#: The slowest Poisson arrival rate, per hour: a mean gap of ``MAX_SECONDS`` between arrivals.
MIN_RATE_PER_HOUR = 3600.0 / MAX_SECONDS
#: The lowest tpm: a billionth of a token a minute, far below any provider's limit and far
#: above the floats whose refill rate (tpm / 60) would round to 0.
MIN_TPM = 1e-9

#: Upper limit of ``fleet.tasks``: one replication of a million tasks is minutes of simpy.
MAX_TASKS = 1_000_000

#: Tasks in one replication of a workload when ``fleet.tasks`` is not given.
DEFAULT_TASKS = 1000

_KINDS = ("constant", "lognormal", "exponential")
_E = ScenarioError


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)  # normalising a frozen dataclass in __post_init__


@dataclass(frozen=True)
class Duration:
    """A duration in seconds: ``constant`` (``value``), ``lognormal`` (``median``, ``p95``) or
    ``exponential`` (mean ``value``). Build one with :meth:`constant`, :meth:`lognormal`,
    :meth:`exponential` or :meth:`parse` (a file's spelling); every way is validated.

    Examples
    --------
    >>> d = Duration.lognormal(8, 30)
    >>> round(d.sigma, 6), round(d.mean, 4)
    (0.80357, 11.0486)
    >>> Duration.parse(2).to_file(), d.to_file()
    (2.0, {'median': 8.0, 'p95': 30.0})
    """

    kind: str = "constant"
    value: float = 0.0
    median: float = 0.0
    p95: float = 0.0

    def __post_init__(self) -> None:
        self._check("duration")

    def _check(self, key: str) -> None:
        kind = checks.choice(self.kind, f"{key}.kind", _KINDS, _E)
        if kind == "lognormal":
            median = _seconds(self.median, f"{key}.median", positive=True)
            p95 = checks.positive(self.p95, f"{key}.p95", _E)  # the spread's message first
            if p95 < median:
                raise invalid(f"{key}.p95", f"a number >= median = {median:g}", self.p95, _E)
            if p95 > MAX_SPREAD * median:
                # A wider spread asks for draws beyond the range of a float (exp overflows).
                raise invalid(
                    f"{key}.p95", f"at most {MAX_SPREAD:g} x median = {MAX_SPREAD * median:g}",
                    self.p95, _E,
                )
            _seconds(p95, f"{key}.p95", positive=True)
            _set(self, "median", median)
            _set(self, "p95", p95)
        elif kind == "exponential":
            _set(self, "value", _seconds(self.value, f"{key}.mean", positive=True))
        else:
            _set(self, "value", checks.in_range(
                self.value, key, 0.0, MAX_SECONDS,
                allowed=f"a number of seconds in [0, {MAX_SECONDS:g}], {{median, p95}} or {{mean}}",
                error=_E,
            ))

    @classmethod
    def constant(cls, seconds: float) -> "Duration":
        """Always ``seconds``."""
        return cls("constant", value=seconds)

    @classmethod
    def lognormal(cls, median: float, p95: float) -> "Duration":
        """Lognormal with this ``median`` and 95th percentile ``p95``."""
        return cls("lognormal", median=median, p95=p95)

    @classmethod
    def exponential(cls, mean: float) -> "Duration":
        """Exponential with this ``mean``."""
        return cls("exponential", value=mean)

    @classmethod
    def parse(cls, data: Any, key: str = "duration") -> "Duration":
        """A duration from its file spelling (a number or a table), or a ``Duration`` as it is;
        the messages name ``key``."""
        if isinstance(data, Duration):
            return data
        if isinstance(data, Mapping):
            checks.check_keys(data, ("median", "p95", "mean"), key, error=_E)
            if "mean" in data:
                if len(data) > 1:
                    raise _E(
                        f"{key}: give either {{mean}} (exponential) or {{median, p95}} (lognormal), "
                        "not both"
                    )
                _seconds(data["mean"], f"{key}.mean", positive=True)
                return cls.exponential(data["mean"])
            missing = [k for k in ("median", "p95") if k not in data]
            if missing:
                raise _E(f"{key}: a lognormal duration needs median and p95; missing {', '.join(missing)}")
            duration = object.__new__(cls)  # checked under the file's key, not "duration"
            for name, value in (("kind", "lognormal"), ("value", 0.0), ("median", data["median"]),
                                ("p95", data["p95"])):
                _set(duration, name, value)
            duration._check(key)
            return duration
        duration = object.__new__(cls)
        for name, value in (("kind", "constant"), ("value", data), ("median", 0.0), ("p95", 0.0)):
            _set(duration, name, value)
        duration._check(key)
        return duration

    @property
    def sigma(self) -> float:
        """The lognormal's log-scale sd, ``ln(p95 / median) / Phi^{-1}(0.95)`` (0 otherwise)."""
        if self.kind != "lognormal":
            return 0.0
        return math.log(self.p95 / self.median) / Z95_ONE_SIDED

    @property
    def mean(self) -> float:
        """The mean: ``value``; for the lognormal ``median * exp(sigma^2 / 2)``."""
        if self.kind == "lognormal":
            return self.median * math.exp(self.sigma**2 / 2)
        return self.value

    @property
    def is_zero(self) -> bool:
        return self.kind == "constant" and self.value == 0.0

    def to_file(self) -> float | dict[str, float]:
        """The file spelling: a number, ``{median, p95}`` or ``{mean}``."""
        if self.kind == "lognormal":
            return {"median": self.median, "p95": self.p95}
        if self.kind == "exponential":
            return {"mean": self.value}
        return self.value


ZERO = Duration()


def _seconds(value: Any, key: str, positive: bool = False) -> float:
    """``value`` as a number of seconds in ``[0, MAX_SECONDS]`` (``(0, ...]`` if ``positive``)."""
    bound = "(0" if positive else "[0"
    return checks.in_range(
        value, key, 0.0, MAX_SECONDS, low_open=positive,
        allowed=f"a number of seconds in {bound}, {MAX_SECONDS:g}]", error=_E,
    )


def backoff_wait(backoff: "Backoff", retry: int) -> float:
    """The wait before retry ``retry`` (1, 2, ...) of a step execution, before any jitter:
    ``min(max, base * factor**(retry - 1))``.

    The cap is applied before the power: once ``base * factor**(retry - 1)`` would pass
    ``max`` the answer is ``max`` without computing the power, so a huge factor or thousands
    of retries never overflow (without a cap the wait is infinite past the float range).

    Examples
    --------
    >>> backoff_wait(Backoff(base=1, factor=2, max=60), 3), backoff_wait(Backoff(factor=1e300, max=60), 2000)
    (4.0, 60.0)
    """
    base, factor, cap = backoff.base, backoff.factor, backoff.max
    exponent = retry - 1
    if base == 0.0 or factor == 1.0 or exponent <= 0:
        wait = base
    elif cap is not None and (cap <= base or exponent * math.log(factor) > math.log(cap / base) + 1.0):
        return cap  # far past the cap (by a factor e and more): no power to compute
    else:
        try:
            wait = base * factor**exponent
        except OverflowError:  # past the float range, with no cap in sight
            wait = math.inf
    return wait if cap is None else min(cap, wait)


@dataclass(frozen=True)
class Backoff:
    """Wait before the j-th retry of a step execution: ``min(max, base * factor**(j-1))``,
    times a ``U(0, 1)`` draw when ``jitter`` (``max`` None: no cap)."""

    base: float = 1.0
    factor: float = 2.0
    max: float | None = None
    jitter: bool = False

    def __post_init__(self) -> None:
        _set(self, "base", _seconds(self.base, "timing.backoff.base"))
        _set(self, "factor", checks.in_range(
            self.factor, "timing.backoff.factor", 1.0, allowed="a finite number >= 1", error=_E
        ))
        if self.max is not None:
            _set(self, "max", checks.nonnegative(self.max, "timing.backoff.max", _E))
        checks.boolean(self.jitter, "timing.backoff.jitter", _E)


@dataclass(frozen=True)
class Timing:
    """How long things take: one attempt (a duration or one per step), one verification, one
    automatic checkpoint check, the backoff before retries, and the deadline from arrival."""

    attempt: Duration | tuple[Duration, ...] = ZERO
    verify: Duration = ZERO
    checkpoint: Duration = ZERO
    backoff: Backoff | None = None
    deadline: float | None = None

    def __post_init__(self) -> None:
        _set(self, "attempt", checks.per_step(self.attempt, "timing.attempt", Duration.parse, error=_E))
        _set(self, "verify", Duration.parse(self.verify, "timing.verify"))
        _set(self, "checkpoint", Duration.parse(self.checkpoint, "timing.checkpoint"))
        if self.backoff is not None and not isinstance(self.backoff, Backoff):
            raise invalid("timing.backoff", "a Backoff (a table {base, factor, max, jitter})", self.backoff, _E)
        if self.deadline is not None:
            _set(self, "deadline", checks.positive(self.deadline, "timing.deadline", _E))


@dataclass(frozen=True)
class Fleet:
    """How trials arrive (``"batch"``: all at 0; ``"poisson"``: at ``rate_per_hour``), how
    many run at once (``agents``; None: unlimited), and the workload one replication runs
    (docs/model.md section 7, "Workloads"): ``tasks`` tasks, the first ``warmup`` of them
    (Poisson only; None: 10% of ``tasks``) left out of the statistics."""

    arrivals: str = "batch"
    rate_per_hour: float | None = None
    agents: int | None = None
    tasks: int = DEFAULT_TASKS
    warmup: int | None = None

    def __post_init__(self) -> None:
        checks.choice(self.arrivals, "fleet.arrivals", ("batch", "poisson"), _E)
        if self.arrivals == "poisson":
            if self.rate_per_hour is None:
                raise _E('fleet.rate_per_hour: needed with arrivals = "poisson"')
            _set(self, "rate_per_hour", checks.in_range(
                self.rate_per_hour, "fleet.rate_per_hour", MIN_RATE_PER_HOUR,
                allowed=f"a finite number >= {MIN_RATE_PER_HOUR:g} (a mean gap between arrivals of "
                f"at most {MAX_SECONDS:g} s)", error=_E,
            ))
        elif self.rate_per_hour is not None:
            raise _E('fleet.rate_per_hour: used only with arrivals = "poisson" (batch trials all arrive at 0)')
        if self.agents is not None:
            _set(self, "agents", checks.integer(self.agents, "fleet.agents", 1, MAX_SLOTS, error=_E))
        _set(self, "tasks", checks.integer(self.tasks, "fleet.tasks", 1, MAX_TASKS, error=_E))
        if self.warmup is not None:
            if self.arrivals != "poisson":
                raise _E('fleet.warmup: used only with arrivals = "poisson" (a batch has no steady '
                         "state to warm up to)")
            _set(self, "warmup", checks.integer(self.warmup, "fleet.warmup", 0, self.tasks - 1, error=_E))

    @property
    def warmup_tasks(self) -> int:
        """The tasks left out at the start: ``warmup``, by default 10% of ``tasks`` with
        Poisson arrivals (rounded down) and none for a batch."""
        if self.warmup is not None:
            return self.warmup
        return self.tasks // 10 if self.arrivals == "poisson" else 0


@dataclass(frozen=True)
class Resources:
    """What the fleet shares: LLM slots, the provider's rpm and tpm limits (token buckets),
    the tokens per call, whether verifications are LLM calls, and a pool of human reviewers."""

    llm_concurrency: int | None = None
    rpm: float | None = None
    tpm: float | None = None
    tokens: float | tuple[float, ...] | None = None
    verifier_calls_llm: bool = False
    reviewers: int | None = None
    review: Duration | None = None

    def __post_init__(self) -> None:
        key = "resources"
        if self.llm_concurrency is not None:
            _set(self, "llm_concurrency", checks.integer(
                self.llm_concurrency, f"{key}.llm_concurrency", 1, MAX_SLOTS, error=_E))
        if self.rpm is not None:  # under 1 the bucket never holds one call
            _set(self, "rpm", checks.in_range(self.rpm, f"{key}.rpm", 1.0,
                                              allowed="a finite number >= 1", error=_E))
        if self.tpm is not None:  # a subnormal tpm refills at tpm / 60 = 0 tokens a second
            _set(self, "tpm", checks.in_range(self.tpm, f"{key}.tpm", MIN_TPM,
                                              allowed=f"a finite number >= {MIN_TPM:g}", error=_E))
        if self.tokens is not None:
            _set(self, "tokens", checks.per_step(
                self.tokens, f"{key}.tokens", lambda v, k: checks.nonnegative(v, k, _E), error=_E))
        if self.tpm is not None:
            if self.tokens is None:
                raise _E(f"{key}.tokens: needed with {key}.tpm (tokens per LLM call)")
            largest = max(self.tokens) if isinstance(self.tokens, tuple) else self.tokens
            if largest > self.tpm:
                raise invalid(f"{key}.tokens", f"at most tpm = {self.tpm:g} (a larger call could never be served)",
                              self.tokens, _E)
        checks.boolean(self.verifier_calls_llm, f"{key}.verifier_calls_llm", _E)
        if self.reviewers is not None:
            _set(self, "reviewers", checks.integer(self.reviewers, f"{key}.reviewers", 1, MAX_SLOTS, error=_E))
        if self.review is not None:
            _set(self, "review", Duration.parse(self.review, f"{key}.review"))
            if self.reviewers is None:
                raise _E(f"{key}.review: times a human review, but {key}.reviewers is not set")


@dataclass(frozen=True)
class Infra:
    """The environment dies at ``crash_per_hour`` while a trial runs (a Poisson clock)."""

    crash_per_hour: float = 0.0

    def __post_init__(self) -> None:
        _set(self, "crash_per_hour", checks.nonnegative(self.crash_per_hour, "infra.crash_per_hour", _E))


#: The keys of ``[targets]`` in the order they are reported (docs/model.md section 7).
TARGET_KEYS = (
    "success", "duration_mean", "duration_p50", "duration_p90", "duration_p99", "timeout",
    "throughput_per_hour", "cost_per_success",
)
#: The targets met from above (at least); the others are met from below (at most).
AT_LEAST = frozenset({"success", "throughput_per_hour"})


@dataclass(frozen=True)
class Targets:
    """What a design must meet in time (docs/model.md section 7); any subset.

    ``success`` (at least; the top-level ``target`` says the same), ``duration_mean`` and
    ``duration_p50``/``p90``/``p99`` (seconds, arrival to end, at most), ``timeout`` (a share,
    at most), ``throughput_per_hour`` (at least) and ``cost_per_success`` (at most).
    """

    success: float | None = None
    duration_mean: float | None = None
    duration_p50: float | None = None
    duration_p90: float | None = None
    duration_p99: float | None = None
    timeout: float | None = None
    throughput_per_hour: float | None = None
    cost_per_success: float | None = None

    def __post_init__(self) -> None:
        if self.success is not None:
            _set(self, "success", checks.in_range(self.success, "targets.success", 0.0, 1.0,
                                                  low_open=True, error=_E))
        for key in ("duration_mean", "duration_p50", "duration_p90", "duration_p99",
                    "throughput_per_hour"):
            if getattr(self, key) is not None:
                _set(self, key, checks.positive(getattr(self, key), f"targets.{key}", _E))
        if self.timeout is not None:
            _set(self, "timeout", checks.probability(self.timeout, "targets.timeout", _E))
        if self.cost_per_success is not None:
            _set(self, "cost_per_success",
                 checks.nonnegative(self.cost_per_success, "targets.cost_per_success", _E))

    def given(self) -> dict[str, float]:
        """The targets set, in :data:`TARGET_KEYS` order."""
        return {key: getattr(self, key) for key in TARGET_KEYS if getattr(self, key) is not None}


#: table name -> dataclass, in file order
TIME_TABLES: dict[str, type] = {
    "timing": Timing, "fleet": Fleet, "resources": Resources, "infra": Infra, "targets": Targets,
}
