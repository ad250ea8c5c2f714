"""The time tables of a scenario: ``[timing]``, ``[fleet]``, ``[resources]``, ``[infra]``.

docs/model.md section 7 fixes them. They change *when* things happen in a trial and what a
fleet of trials shares, never the draws and decisions of section 3, so the exact engine, the
Monte Carlo engine and the planner ignore them; only the timeline engine (``relsim.timeline``)
reads them. They are validated with the rest of the scenario (``Scenario.__post_init__``), with
the same message format, ``<key>: must be <allowed>, got <value>``.

A duration is a number of seconds (constant), ``{median = M, p95 = Q}`` (lognormal with
:math:`\\sigma = \\ln(Q/M) / \\Phi^{-1}(0.95)`; ``Q = M`` is constant) or ``{mean = M}``
(exponential); it is held as a :class:`Duration`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields
from typing import Any, Mapping

from relsim.errors import invalid
from relsim.scenario import ScenarioError, _check_keys, _listed, _show

__all__ = ["Backoff", "Duration", "Fleet", "Infra", "Resources", "Timing"]

#: The widest lognormal spread accepted, ``p95 / median``: ``sigma`` up to 8.4, so a draw of
#: ``median * exp(sigma z)`` stays finite for any ``z`` a trial will meet.
MAX_SPREAD = 1e6

#: ``Phi^{-1}(0.95)``: a lognormal's p95 is ``median * exp(sigma * Z95_ONE_SIDED)``.
Z95_ONE_SIDED = 1.6448536269514722

# Upper limits of the integer keys, far above any fleet, so a typo cannot ask for unbounded memory.
MAX_SLOTS = 1_000_000

_KINDS = ("constant", "lognormal", "exponential")


@dataclass(frozen=True)
class Duration:
    """A duration in seconds: ``constant`` (``value``), ``lognormal`` (``median``, ``p95``) or
    ``exponential`` (``mean``). Build one with :meth:`constant`, :meth:`lognormal`,
    :meth:`exponential` or :meth:`parse` (a file's spelling).

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

    @classmethod
    def constant(cls, seconds: float) -> "Duration":
        return cls("constant", value=float(seconds))

    @classmethod
    def lognormal(cls, median: float, p95: float) -> "Duration":
        return cls("lognormal", median=float(median), p95=float(p95))

    @classmethod
    def exponential(cls, mean: float) -> "Duration":
        return cls("exponential", value=float(mean))

    @classmethod
    def parse(cls, data: Any, key: str = "duration") -> "Duration":
        """A duration from its file spelling (a number or a table), validated."""
        if isinstance(data, Duration):  # built in Python: checked like its file spelling
            if data.kind not in _KINDS:
                raise invalid(f"{key}.kind", ", ".join(f'"{k}"' for k in _KINDS), data.kind, ScenarioError)
            return cls.parse(data.to_file(), key)
        if isinstance(data, Mapping):
            _check_keys(data, ("median", "p95", "mean"), key)
            if "mean" in data:
                if len(data) > 1:
                    raise ScenarioError(
                        f"{key}: give either {{mean}} (exponential) or {{median, p95}} (lognormal), "
                        f"not both"
                    )
                return cls.exponential(_positive(data["mean"], f"{key}.mean"))
            missing = [k for k in ("median", "p95") if k not in data]
            if missing:
                raise ScenarioError(
                    f"{key}: a lognormal duration needs median and p95; missing {', '.join(missing)}"
                )
            median = _positive(data["median"], f"{key}.median")
            p95 = _positive(data["p95"], f"{key}.p95")
            if p95 < median:
                raise invalid(f"{key}.p95", f"a number >= median = {median:g}", data["p95"], ScenarioError)
            if p95 > MAX_SPREAD * median:
                # A wider spread asks for draws beyond the range of a float (exp overflows).
                raise invalid(
                    f"{key}.p95", f"at most {MAX_SPREAD:g} x median = {MAX_SPREAD * median:g}",
                    data["p95"], ScenarioError,
                )
            return cls.lognormal(median, p95)
        return cls.constant(_nonnegative(data, key, "a number of seconds >= 0, {median, p95} or {mean}"))

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


_ZERO = Duration()


@dataclass(frozen=True)
class Backoff:
    """Wait before the j-th retry of a step execution: ``min(max, base * factor**(j-1))``,
    times a ``U(0, 1)`` draw when ``jitter`` (``max`` None: no cap)."""

    base: float = 1.0
    factor: float = 2.0
    max: float | None = None
    jitter: bool = False


@dataclass(frozen=True)
class Timing:
    """How long things take: one attempt (a duration or one per step), one verification, one
    automatic checkpoint check, the backoff before retries, and the deadline from arrival."""

    attempt: Duration | tuple[Duration, ...] = _ZERO
    verify: Duration = _ZERO
    checkpoint: Duration = _ZERO
    backoff: Backoff | None = None
    deadline: float | None = None


@dataclass(frozen=True)
class Fleet:
    """How trials arrive (``"batch"``: all at 0; ``"poisson"``: at ``rate_per_hour``) and how
    many run at once (``agents``; None: unlimited)."""

    arrivals: str = "batch"
    rate_per_hour: float | None = None
    agents: int | None = None


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


@dataclass(frozen=True)
class Infra:
    """The environment dies at ``crash_per_hour`` while a trial runs (a Poisson clock)."""

    crash_per_hour: float = 0.0


#: table name -> dataclass, in file order
TABLES: dict[str, type] = {"timing": Timing, "fleet": Fleet, "resources": Resources, "infra": Infra}


def key_paths() -> dict[str, str]:
    """Every key of the time tables -> its dotted path (to point a misplaced key home)."""
    return {f.name: f"{table}.{f.name}" for table, cls in TABLES.items() for f in fields(cls)}


# ------------------------------------------------------------------------------ reading
def parse(name: str, value: Any) -> Any:
    """The dataclass of time table ``name`` from its file spelling (keys checked; the values
    are checked with the whole scenario)."""
    cls = TABLES[name]
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{name}: must be a table, got {_show(value)}")
    _check_keys(value, tuple(f.name for f in fields(cls)), name)
    kwargs = dict(value)
    if cls is Timing and "backoff" in kwargs:
        backoff = kwargs["backoff"]
        if not isinstance(backoff, Mapping):
            raise ScenarioError(
                f"timing.backoff: must be a table {{base, factor, max, jitter}}, got {_show(backoff)}"
            )
        _check_keys(backoff, tuple(f.name for f in fields(Backoff)), "timing.backoff")
        kwargs["backoff"] = Backoff(**backoff)
    return cls(**kwargs)


def to_dict(s: Any) -> dict[str, Any]:
    """The time tables of scenario ``s`` in file form (only fields that differ from defaults)."""
    out: dict[str, Any] = {}
    for name in TABLES:
        table = getattr(s, name)
        if table is None:
            continue
        entry: dict[str, Any] = {}
        for f in fields(table):
            value = getattr(table, f.name)
            if value is None or value == f.default:
                continue
            if isinstance(value, Duration):
                value = value.to_file()
            elif isinstance(value, Backoff):
                value = {k.name: getattr(value, k.name) for k in fields(value)
                         if getattr(value, k.name) is not None}
            elif isinstance(value, tuple):
                value = [v.to_file() if isinstance(v, Duration) else v for v in value]
            entry[f.name] = value
        out[name] = entry
    return out


# ------------------------------------------------------------------------------ validation
def validate(s: Any) -> None:
    """Check and normalise the time tables of scenario ``s`` and their links to the rest."""
    n = s.steps
    human = s.checkpoints is not None and s.checkpoints.human
    for name, cls in TABLES.items():
        value = getattr(s, name)
        if value is not None and not isinstance(value, cls):
            raise ScenarioError(f"{name}: must be a {cls.__name__}, got {_show(value)}")

    t = s.timing
    if t is not None:
        _set(t, "attempt", _listed(t.attempt, "timing.attempt", n, lambda v, k: Duration.parse(v, k)))
        _set(t, "verify", Duration.parse(t.verify, "timing.verify"))
        _set(t, "checkpoint", Duration.parse(t.checkpoint, "timing.checkpoint"))
        if not t.verify.is_zero and s.verifier is None:
            raise ScenarioError("timing.verify: times a verification, but there is no [verifier]")
        if not t.checkpoint.is_zero:
            if s.checkpoints is None:
                raise ScenarioError("timing.checkpoint: times a check, but there is no [checkpoints]")
            if human:
                raise ScenarioError(
                    "timing.checkpoint: unused with checkpoints.human = true "
                    "(a human gate takes resources.review)"
                )
        if t.backoff is not None:
            b = t.backoff
            if not isinstance(b, Backoff):
                raise ScenarioError(f"timing.backoff: must be a Backoff, got {_show(b)}")
            if s.retries is None:
                raise ScenarioError("timing.backoff: waits before retries, but there is no [retries]")
            _set(b, "base", _nonnegative(b.base, "timing.backoff.base"))
            factor = _number(b.factor, "timing.backoff.factor", "a finite number >= 1")
            if not 1.0 <= factor < math.inf:
                raise invalid("timing.backoff.factor", "a finite number >= 1", b.factor, ScenarioError)
            _set(b, "factor", factor)
            if b.max is not None:
                _set(b, "max", _nonnegative(b.max, "timing.backoff.max"))
            _bool(b.jitter, "timing.backoff.jitter")
        if t.deadline is not None:
            _set(t, "deadline", _positive(t.deadline, "timing.deadline"))

    f = s.fleet
    if f is not None:
        if f.arrivals not in ("batch", "poisson"):
            raise invalid("fleet.arrivals", '"batch" or "poisson"', f.arrivals, ScenarioError)
        if f.arrivals == "poisson":
            if f.rate_per_hour is None:
                raise ScenarioError('fleet.rate_per_hour: needed with arrivals = "poisson"')
            _set(f, "rate_per_hour", _positive(f.rate_per_hour, "fleet.rate_per_hour"))
        elif f.rate_per_hour is not None:
            raise ScenarioError(
                'fleet.rate_per_hour: used only with arrivals = "poisson" (batch trials all arrive at 0)'
            )
        if f.agents is not None:
            _set(f, "agents", _count(f.agents, "fleet.agents"))

    r = s.resources
    if r is not None:
        if r.llm_concurrency is not None:
            _set(r, "llm_concurrency", _count(r.llm_concurrency, "resources.llm_concurrency"))
        if r.rpm is not None:
            rpm = _number(r.rpm, "resources.rpm", "a finite number >= 1")
            if not 1.0 <= rpm < math.inf:  # under 1 the bucket never holds one call
                raise invalid("resources.rpm", "a finite number >= 1", r.rpm, ScenarioError)
            _set(r, "rpm", rpm)
        if r.tpm is not None:
            _set(r, "tpm", _positive(r.tpm, "resources.tpm"))
        if r.tokens is not None:
            _set(r, "tokens", _listed(r.tokens, "resources.tokens", n,
                                      lambda v, k: _nonnegative(v, k)))
        if r.tpm is not None:
            if r.tokens is None:
                raise ScenarioError("resources.tokens: needed with resources.tpm (tokens per LLM call)")
            largest = max(r.tokens) if isinstance(r.tokens, tuple) else r.tokens
            if largest > r.tpm:
                raise invalid(
                    "resources.tokens",
                    f"at most tpm = {r.tpm:g} (a larger call could never be served)",
                    r.tokens,
                    ScenarioError,
                )
        _bool(r.verifier_calls_llm, "resources.verifier_calls_llm")
        if r.verifier_calls_llm and s.verifier is None:
            raise ScenarioError("resources.verifier_calls_llm: true, but there is no [verifier]")
        if r.reviewers is not None:
            _set(r, "reviewers", _count(r.reviewers, "resources.reviewers"))
        if r.review is not None:
            _set(r, "review", Duration.parse(r.review, "resources.review"))
            if r.reviewers is None:
                raise ScenarioError("resources.review: times a human review, but resources.reviewers is not set")

    if human:
        if r is None or r.reviewers is None:
            raise ScenarioError("checkpoints.human: true needs resources.reviewers (the reviewer pool)")
        if r.review is None:
            raise ScenarioError("checkpoints.human: true needs resources.review (how long a review takes)")

    i = s.infra
    if i is not None:
        _set(i, "crash_per_hour", _nonnegative(i.crash_per_hour, "infra.crash_per_hour"))


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


def _number(value: Any, key: str, allowed: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
        raise invalid(key, allowed, value, ScenarioError)
    return float(value)


def _nonnegative(value: Any, key: str, allowed: str = "a finite number >= 0") -> float:
    number = _number(value, key, allowed)
    if not 0.0 <= number < math.inf:
        raise invalid(key, allowed, value, ScenarioError)
    return number


def _positive(value: Any, key: str) -> float:
    number = _number(value, key, "a finite number > 0")
    if not 0.0 < number < math.inf:
        raise invalid(key, "a finite number > 0", value, ScenarioError)
    return number


def _count(value: Any, key: str) -> int:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and 1 <= value <= MAX_SLOTS:
        return int(value)
    raise invalid(key, f"an integer in 1..{MAX_SLOTS}", value, ScenarioError)


def _bool(value: Any, key: str) -> None:
    if not isinstance(value, bool):
        raise invalid(key, "true or false", value, ScenarioError)
