"""The scenario: what an agent design is, as frozen, validated dataclasses.

A scenario is read from TOML (``Scenario.from_toml``) or a dict (``Scenario.from_dict``), and
validated wherever it is built, so ``dataclasses.replace`` on a valid scenario either gives a
valid scenario or raises. Engines read the per-step arrays (``p_array``, ``miss_array``, ...)
rather than the user's spelling of them. The format is docs/model.md section 4 (and, for the
time tables in ``relsim.scenario_time``, section 7).
"""

from __future__ import annotations

import difflib
import math
import numbers
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from relsim.errors import RelsimError
from relsim.errors import show as _show

__all__ = [
    "Checkpoints",
    "Confusion",
    "Correlation",
    "Cost",
    "Retries",
    "Scenario",
    "ScenarioError",
    "Verifier",
]


class ScenarioError(RelsimError):
    """A scenario that breaks the format: the message names the file, the key and the range."""


# Upper limits of the integer keys. Far above any agent design, they keep a typo such as
# ``steps = 100000000000`` from asking the engines for unbounded memory or time.
MAX_STEPS = 100_000
MAX_PER_STEP = 10_000
MAX_TOTAL = 1_000_000
MAX_ROLLBACKS = 10_000


#: The largest scenario file read (a 100,000-step file with four per-step lists is ~10 MiB).
MAX_FILE_BYTES = 32 * 2**20
#: The deepest nesting of arrays and inline tables in a scenario file (the format needs 2).
MAX_NESTING = 32


PerStepFloat = float | tuple[float, ...]
PerStepInt = int | tuple[int, ...]


@dataclass(frozen=True)
class Verifier:
    """Checks each attempt: accepts a wrong one with ``miss``, rejects a correct one with
    ``false_reject``. Either may be one number or a list of ``steps`` numbers."""

    miss: PerStepFloat = 0.0
    false_reject: PerStepFloat = 0.0


@dataclass(frozen=True)
class Retries:
    """Retry budgets: ``per_step`` retries per execution of a step (one number or a list of
    ``steps`` integers; defaults to ``total``) and ``total`` over the trial (None: no cap)."""

    per_step: PerStepInt | None = None
    total: int | None = None


@dataclass(frozen=True)
class Checkpoints:
    """Checks of the segment since the last checkpoint, with rollback on a catch."""

    every: int | None = None
    at: tuple[int, ...] = ()
    final: bool = False
    detect: float = 1.0
    false_alarm: float = 0.0
    rollbacks: int = 0
    human: bool = False  # every check a human gate (docs/model.md section 7)


@dataclass(frozen=True)
class Confusion:
    """A two-state agent: a wrong attempt confuses it with ``enter``, a correct one while
    confused brings it back with ``recover``; confused, its success is multiplied by ``factor``."""

    enter: float
    recover: float
    factor: float


@dataclass(frozen=True)
class Correlation:
    """Correlated errors: logit-scale random effects per trial (``task_sd``) and per step
    execution (``step_sd``), and the confusion chain."""

    task_sd: float = 0.0
    step_sd: float = 0.0
    confusion: Confusion | None = None


@dataclass(frozen=True)
class Cost:
    """Costs in any unit: per attempt (number or per-step list), per verified attempt, per
    checkpoint check and per rollback."""

    attempt: PerStepFloat = 1.0
    verify: float = 0.0
    checkpoint: float = 0.0
    rollback: float = 0.0


@dataclass(frozen=True)
class Scenario:
    """One agent design: a chain of ``steps`` steps and the machinery around it.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
    ...                         "retries": {"per_step": 3}})
    >>> s.steps, s.verifier.miss, s.per_step_array[:3].tolist()
    (25, 0.1, [3, 3, 3])
    """

    steps: int
    p: PerStepFloat
    name: str = ""
    target: float | None = None
    verifier: Verifier | None = None
    retries: Retries | None = None
    checkpoints: Checkpoints | None = None
    correlation: Correlation = field(default_factory=Correlation)
    cost: Cost = field(default_factory=Cost)
    # The time tables of docs/model.md section 7 (relsim.scenario_time); only the timeline
    # engine reads them.
    timing: "Timing | None" = None
    fleet: "Fleet | None" = None
    resources: "Resources | None" = None
    infra: "Infra | None" = None

    def __post_init__(self) -> None:
        _validate(self)

    # ----------------------------------------------------------------- loading and saving
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None) -> "Scenario":
        """Build a scenario from docs/model.md section 4's structure (parsed TOML or JSON).

        Raises
        ------
        ScenarioError
            Naming ``source`` (a file name, when given), the key and the allowed range.
        """
        try:
            return _from_mapping(data)
        except ScenarioError as error:
            if source is None:
                raise
            raise ScenarioError(f"{source}: {error}") from None

    @classmethod
    def from_toml(cls, path: str | Path) -> "Scenario":
        """Read a scenario file. Syntax errors are reported with their line.

        At most ``MAX_FILE_BYTES`` are read (``/dev/zero`` or a wrong file is refused at
        once), and arrays or inline tables nested deeper than ``MAX_NESTING`` are refused
        before they reach the parser (whose recursion they would exhaust).
        """
        import tomllib

        path = Path(path)
        try:
            with path.open("rb") as file:
                raw = file.read(MAX_FILE_BYTES + 1)
        except OSError as error:
            raise ScenarioError(f"{path}: cannot read: {error.strerror or error}") from None
        if len(raw) > MAX_FILE_BYTES:
            raise ScenarioError(
                f"{path}: must be a scenario file of at most {MAX_FILE_BYTES // 2**20} MiB, "
                "got a larger file"
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ScenarioError(
                f"{path}: not UTF-8 text (byte {error.object[error.start]:#04x} at offset "
                f"{error.start}); TOML files must be UTF-8"
            ) from None
        _check_nesting(text, path)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ScenarioError(f"{path}: TOML syntax error: {error}") from None
        except ValueError as error:  # e.g. an integer of more than 4300 digits
            reason = str(error).split(";")[0]  # not Python's advice on raising its limit
            raise ScenarioError(f"{path}: cannot read a value: {reason}") from None
        except RecursionError:  # pragma: no cover - _check_nesting keeps it out
            raise ScenarioError(f"{path}: values nested too deeply") from None
        return cls.from_dict(data, source=str(path))

    def to_dict(self) -> dict[str, Any]:
        """The scenario in file form; ``Scenario.from_dict(s.to_dict()) == s``."""
        out: dict[str, Any] = {}
        if self.name:
            out["name"] = self.name
        out["steps"] = self.steps
        out["p"] = _plain(self.p)
        if self.target is not None:
            out["target"] = self.target
        for table in ("verifier", "retries", "checkpoints"):
            value = getattr(self, table)
            if value is not None:
                out[table] = _table_dict(value)
        correlation = _table_dict(self.correlation)
        if correlation:
            out["correlation"] = correlation
        cost = _table_dict(self.cost)
        if cost:
            out["cost"] = cost
        from relsim import scenario_time

        out.update(scenario_time.to_dict(self))
        return out

    # ------------------------------------------------------------- per-step arrays for engines
    @cached_property
    def p_array(self) -> np.ndarray:
        """Per-attempt success of each step, shape ``(steps,)``."""
        return _per_step(self.p, self.steps, float)

    @property
    def has_verifier(self) -> bool:
        return self.verifier is not None

    @cached_property
    def miss_array(self) -> np.ndarray:
        """P(accept | wrong) per step; 1 without a verifier (every attempt is accepted)."""
        if self.verifier is None:
            return np.ones(self.steps)
        return _per_step(self.verifier.miss, self.steps, float)

    @cached_property
    def false_reject_array(self) -> np.ndarray:
        """P(reject | correct) per step; 0 without a verifier."""
        if self.verifier is None:
            return np.zeros(self.steps)
        return _per_step(self.verifier.false_reject, self.steps, float)

    @cached_property
    def per_step_array(self) -> np.ndarray:
        """Retries allowed per execution of each step (integers), shape ``(steps,)``."""
        if self.retries is None:
            return np.zeros(self.steps, dtype=np.int64)
        per_step = self.retries.per_step
        if per_step is None:  # only a total: the task-wide budget is the only cap
            per_step = self.retries.total
        return _per_step(per_step, self.steps, np.int64)

    @property
    def total_retries(self) -> int | None:
        """The task-wide retry budget, or None when there is no cap."""
        return None if self.retries is None else self.retries.total

    @cached_property
    def attempt_cost_array(self) -> np.ndarray:
        """Cost of one attempt at each step, shape ``(steps,)``."""
        return _per_step(self.cost.attempt, self.steps, float)

    @cached_property
    def checkpoint_positions(self) -> tuple[int, ...]:
        """Sorted step numbers (1..steps) after which a checkpoint checks the segment."""
        return _checkpoint_positions(self.checkpoints, self.steps)

    @property
    def has_random_effects(self) -> bool:
        return self.correlation.task_sd > 0 or self.correlation.step_sd > 0


def as_scenario(value: Any) -> Scenario:
    """The scenario an engine was given: a ``Scenario`` as it is, a mapping through
    ``Scenario.from_dict``; anything else is a RelsimError naming ``scenario``."""
    if isinstance(value, Scenario):
        return value
    if isinstance(value, Mapping):
        return Scenario.from_dict(value)
    raise RelsimError(
        f"scenario: must be a relsim.Scenario or a mapping, got {type(value).__name__}"
    )


# --------------------------------------------------------------------------- validation
_TABLES: dict[str, type] = {
    "verifier": Verifier,
    "retries": Retries,
    "checkpoints": Checkpoints,
    "correlation": Correlation,
    "cost": Cost,
}
_TIME_TABLES = ("timing", "fleet", "resources", "infra")  # relsim.scenario_time
_TOP_KEYS = ("name", "steps", "p", "target", *_TABLES, *_TIME_TABLES)


def _all_keys() -> dict[str, str]:
    """Every valid key name -> its dotted path, to point a misplaced key to its table."""
    where = {key: key for key in _TOP_KEYS}
    for table, cls in _TABLES.items():
        for f in fields(cls):
            where.setdefault(f.name, f"{table}.{f.name}")
    for f in fields(Confusion):
        where.setdefault(f.name, f"correlation.confusion.{f.name}")
    from relsim import scenario_time

    for key, path in scenario_time.key_paths().items():
        where.setdefault(key, path)
    return where


def _check_keys(data: Mapping[str, Any], allowed: tuple[str, ...], path: str) -> None:
    for key in data:
        if key in allowed:
            continue
        name = f"{path}.{key}" if path else str(key)
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        home = _all_keys().get(key)
        if home is not None and home != name:  # a real key in the wrong table beats a typo
            hint = f"; it belongs at '{home}'"
        elif close:
            hint = f"; did you mean '{close[0]}'?"
        else:
            hint = f"; allowed keys here: {', '.join(allowed)}"
        raise ScenarioError(f"{name}: unknown key{hint}")


def _table(data: Mapping[str, Any], name: str, cls: type, path: str) -> Any:
    value = data[name]
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{path}: must be a table, got {_show(value)}")
    allowed = tuple(f.name for f in fields(cls))
    _check_keys(value, allowed, path)
    kwargs = dict(value)
    if cls is Correlation and "confusion" in kwargs:
        confusion = kwargs["confusion"]
        cpath = f"{path}.confusion"
        if not isinstance(confusion, Mapping):
            raise ScenarioError(f"{cpath}: must be a table with enter, recover and factor")
        _check_keys(confusion, ("enter", "recover", "factor"), cpath)
        missing = [k for k in ("enter", "recover", "factor") if k not in confusion]
        if missing:
            raise ScenarioError(
                f"{cpath}: needs all of enter, recover and factor; missing {', '.join(missing)}"
            )
        kwargs["confusion"] = Confusion(**confusion)
    if cls is Retries and not kwargs:
        raise ScenarioError(f"{path}: give per_step, total or both")
    if cls is Checkpoints and not ({"every", "at", "final"} & kwargs.keys()):
        raise ScenarioError(f"{path}: no checkpoint position; give every, at or final")
    return cls(**kwargs)


def _from_mapping(data: Mapping[str, Any]) -> Scenario:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"a scenario must be a table of keys, got {_show(data)}")
    _check_keys(data, _TOP_KEYS, "")
    for required in ("steps", "p"):
        if required not in data:
            raise ScenarioError(f"{required}: required key is missing")
    kwargs: dict[str, Any] = {k: data[k] for k in ("name", "steps", "p", "target") if k in data}
    for name, cls in _TABLES.items():
        if name in data:
            kwargs[name] = _table(data, name, cls, name)
    if set(_TIME_TABLES) & set(data):
        from relsim import scenario_time

        for name in _TIME_TABLES:
            if name in data:
                kwargs[name] = scenario_time.parse(name, data[name])
    if "retries" in kwargs and "verifier" not in kwargs:
        raise ScenarioError(
            "retries: needs a [verifier]: without one no attempt is rejected, so retries never run"
        )
    return Scenario(**kwargs)


def _validate(s: Scenario) -> None:
    """Check every field, normalising lists to tuples (object.__setattr__: still frozen)."""
    if not isinstance(s.name, str):
        raise ScenarioError(f"name: must be text, got {_show(s.name)}")
    _set(s, "steps", _integer(s.steps, "steps", low=1, high=MAX_STEPS))
    n = s.steps
    _set(s, "p", _probabilities(s.p, "p", n))
    if s.target is not None:
        target = _number(s.target, "target", "a number in (0, 1]")
        if not 0.0 < target <= 1.0:
            raise ScenarioError(f"target: must be in (0, 1], got {_show(s.target)}")
        _set(s, "target", target)
    for name, cls in _TABLES.items():
        value = getattr(s, name)
        if value is not None and not isinstance(value, cls):
            raise ScenarioError(f"{name}: must be a {cls.__name__}, got {_show(value)}")
    if s.verifier is not None:
        v = s.verifier
        _set(v, "miss", _probabilities(v.miss, "verifier.miss", n))
        _set(v, "false_reject", _probabilities(v.false_reject, "verifier.false_reject", n))
    if s.retries is not None:
        if s.verifier is None:
            raise ScenarioError(
                "retries: needs a [verifier]: without one no attempt is rejected, "
                "so retries never run"
            )
        r = s.retries
        if r.per_step is None and r.total is None:
            raise ScenarioError("retries: give per_step, total or both")
        if r.per_step is not None:
            _set(r, "per_step", _integers(r.per_step, "retries.per_step", n, low=0, high=MAX_PER_STEP))
        if r.total is not None:
            _set(r, "total", _integer(r.total, "retries.total", low=0, high=MAX_TOTAL))
    if s.checkpoints is not None:
        c = s.checkpoints
        if c.every is not None:
            _set(c, "every", _integer(c.every, "checkpoints.every", low=1, high=MAX_STEPS))
        at = c.at
        if isinstance(at, (list, tuple)):
            at = tuple(_integer(x, "checkpoints.at", low=1, high=n) for x in at)
        else:
            raise ScenarioError(f"checkpoints.at: must be a list of steps in 1..{n}, got {_show(at)}")
        _set(c, "at", at)
        if not isinstance(c.final, bool):
            raise ScenarioError(f"checkpoints.final: must be true or false, got {_show(c.final)}")
        _set(c, "detect", _probability(c.detect, "checkpoints.detect"))
        _set(c, "false_alarm", _probability(c.false_alarm, "checkpoints.false_alarm"))
        _set(c, "rollbacks", _integer(c.rollbacks, "checkpoints.rollbacks", low=0, high=MAX_ROLLBACKS))
        if not isinstance(c.human, bool):
            raise ScenarioError(f"checkpoints.human: must be true or false, got {_show(c.human)}")
        if not _checkpoint_positions(c, n):
            given = [f"every = {c.every} exceeds steps = {n}"] if c.every is not None else []
            given += ["at is empty"] if not c.at else []
            given += ["final is false"]
            raise ScenarioError(
                f"checkpoints: no checkpoint position ({', '.join(given)}); "
                f"give every in 1..{n}, a position in at, or final = true"
            )
    corr = s.correlation
    if not isinstance(corr, Correlation):
        raise ScenarioError(f"correlation: must be a Correlation, got {_show(corr)}")
    _set(corr, "task_sd", _nonnegative(corr.task_sd, "correlation.task_sd"))
    _set(corr, "step_sd", _nonnegative(corr.step_sd, "correlation.step_sd"))
    if corr.confusion is not None:
        conf = corr.confusion
        if not isinstance(conf, Confusion):
            raise ScenarioError(
                f"correlation.confusion: must be a Confusion(enter, recover, factor), got {_show(conf)}"
            )
        for key in ("enter", "recover", "factor"):
            _set(conf, key, _probability(getattr(conf, key), f"correlation.confusion.{key}"))
    cost = s.cost
    if not isinstance(cost, Cost):
        raise ScenarioError(f"cost: must be a Cost, got {_show(cost)}")
    _set(cost, "attempt", _per_step_nonnegative(cost.attempt, "cost.attempt", n))
    for key in ("verify", "checkpoint", "rollback"):
        _set(cost, key, _nonnegative(getattr(cost, key), f"cost.{key}"))
    if cost.verify > 0 and s.verifier is None:
        raise ScenarioError("cost.verify: is charged per verified attempt, but there is no [verifier]")
    if (cost.checkpoint > 0 or cost.rollback > 0) and s.checkpoints is None:
        key = "cost.checkpoint" if cost.checkpoint > 0 else "cost.rollback"
        raise ScenarioError(f"{key}: is charged at checkpoints, but there is no [checkpoints]")
    if cost.rollback > 0 and s.checkpoints is not None and s.checkpoints.rollbacks == 0:
        raise ScenarioError(
            "cost.rollback: is charged per rollback, but checkpoints.rollbacks = 0 allows none; "
            "set checkpoints.rollbacks >= 1 or drop cost.rollback"
        )
    if any(getattr(s, name) is not None for name in _TIME_TABLES) or (
        s.checkpoints is not None and s.checkpoints.human
    ):
        from relsim import scenario_time

        scenario_time.validate(s)


def _checkpoint_positions(c: Checkpoints | None, n: int) -> tuple[int, ...]:
    if c is None:
        return ()
    positions = set(c.at)
    if c.every is not None:
        positions.update(range(c.every, n + 1, c.every))
    if c.final:
        positions.add(n)
    return tuple(sorted(positions))


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


def _number(value: Any, key: str, allowed: str = "a number") -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ScenarioError(f"{key}: must be {allowed}, got {_show(value)}")
    value = float(value)
    if math.isnan(value):
        raise ScenarioError(f"{key}: must be {allowed}, got nan")
    return value


def _probability(value: Any, key: str) -> float:
    number = _number(value, key, "a number in [0, 1]")
    if not 0.0 <= number <= 1.0:
        raise ScenarioError(f"{key}: must be in [0, 1], got {_show(value)}")
    return number


def _nonnegative(value: Any, key: str) -> float:
    number = _number(value, key, "a finite number >= 0")
    if not 0.0 <= number < math.inf:
        raise ScenarioError(f"{key}: must be a finite number >= 0, got {_show(value)}")
    return number


def _integer(value: Any, key: str, low: int, high: int | None = None) -> int:
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok and value >= low and (high is None or value <= high):
        return int(value)
    allowed = f"an integer >= {low}" if high is None else f"an integer in {low}..{high}"
    raise ScenarioError(f"{key}: must be {allowed}, got {_show(value)}")


def _listed(value: Any, key: str, n: int, check: Any) -> Any:
    """One value, or a list of exactly ``n`` values, each passed through ``check``."""
    if isinstance(value, (list, tuple, np.ndarray)):
        if len(value) != n:
            raise ScenarioError(
                f"{key}: must be one value or a list of one value per step ({n}), "
                f"got a list of {len(value)}"
            )
        return tuple(check(x, f"{key}[{i}]") for i, x in enumerate(value))
    return check(value, key)


def _probabilities(value: Any, key: str, n: int) -> PerStepFloat:
    return _listed(value, key, n, _probability)


def _per_step_nonnegative(value: Any, key: str, n: int) -> PerStepFloat:
    return _listed(value, key, n, _nonnegative)


def _integers(value: Any, key: str, n: int, low: int, high: int) -> PerStepInt:
    return _listed(value, key, n, lambda x, k: _integer(x, k, low=low, high=high))


def _per_step(value: Any, n: int, dtype: type) -> np.ndarray:
    array = np.empty(n, dtype=dtype)
    array[:] = value
    array.setflags(write=False)
    return array


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _table_dict(obj: Any) -> dict[str, Any]:
    """The fields that differ from their defaults, file-ready (a Confusion as a sub-table)."""
    out: dict[str, Any] = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, Confusion):
            out[f.name] = {k.name: getattr(value, k.name) for k in fields(value)}
        elif value is not None and value != f.default:
            out[f.name] = _plain(value)
    return out


def _check_nesting(text: str, path: Path) -> None:
    """Refuse arrays or inline tables nested deeper than ``MAX_NESTING``.

    A bracket count that skips strings and comments: an upper bound on the nesting the
    parser would recurse into (table headers like ``[[a]]`` count 2, well below the limit).
    """
    import re

    if text.count("[") + text.count("{") <= MAX_NESTING:
        return
    # strings (multi-line, basic, literal) and comments hold brackets that are not nesting
    tokens = re.compile(
        r""" '''[\s\S]*?''' | \"\"\"[\s\S]*?\"\"\" | "(?:\\.|[^"\\\n])*" | '[^'\n]*'
           | \#[^\n]* | [\[\]{}\n] """,
        re.VERBOSE,
    )
    depth = 0
    line = 1
    for match in tokens.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_NESTING:
                raise ScenarioError(
                    f"{path} line {line}: must nest arrays and inline tables at most "
                    f"{MAX_NESTING} deep, got deeper"
                )
        elif token in "]}":
            depth = max(0, depth - 1)
        elif token == "\n":
            line += 1
        else:
            line += token.count("\n")
