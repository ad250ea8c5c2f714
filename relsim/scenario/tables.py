"""The scenario: what an agent design is, as frozen dataclasses that validate themselves.

Each table of docs/model.md section 4 (and section 7's time tables, in ``time_tables``) is a
frozen dataclass that checks and normalises its own values when it is built, however it is
built (``Verifier(miss=7.0)`` raises). :class:`Scenario` holds them and checks what links them:
per-step lists against ``steps``, a ``[verifier]`` for retries, ``[checkpoints]`` for their
costs. So ``dataclasses.replace`` on a valid scenario gives a valid scenario or raises.

A scenario is read from TOML (:meth:`Scenario.from_toml`) or a mapping
(:meth:`Scenario.from_dict`); unknown keys are refused with a "did you mean". Engines never
read these tables: they read the compiled ``TrialModel`` and ``TimeModel``
(``relsim.scenario.compiled``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import types
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from relsim.errors import ScenarioError, show
from relsim import checks
from relsim.scenario.design_tables import (
    MAX_CLASSES,
    MAX_MODES,
    Escalation,
    FailureMode,
    Faults,
    Sampling,
    TaskClass,
    Utility,
)
from relsim.scenario.files import read_toml
from relsim.scenario.time_tables import (
    MAX_SECONDS,
    TIME_TABLES,
    Backoff,
    Duration,
    Fleet,
    Infra,
    Resources,
    Targets,
    Timing,
    backoff_wait,
)

__all__ = [
    "Checkpoints",
    "Confusion",
    "Correlation",
    "Cost",
    "Retries",
    "Scenario",
    "Verifier",
    "as_scenario",
    "checkpoint_positions",
]

# Upper limits of the integer keys. Far above any agent design, they keep a typo such as
# ``steps = 100000000000`` from asking the engines for unbounded memory or time.
MAX_STEPS = 100_000
MAX_PER_STEP = 10_000
MAX_TOTAL = 1_000_000
MAX_ROLLBACKS = 10_000
#: The longest cost unit: a label printed beside numbers ("USD", "GPU-hours").
MAX_UNIT = 16

PerStepFloat = float | tuple[float, ...]
PerStepInt = int | tuple[int, ...]

_E = ScenarioError


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)  # normalising a frozen dataclass in __post_init__


def _probabilities(value: Any, key: str, steps: int | None = None) -> Any:
    return checks.per_step(value, key, lambda v, k: checks.probability(v, k, _E), steps, _E)


def _nonnegatives(value: Any, key: str, steps: int | None = None) -> Any:
    return checks.per_step(value, key, lambda v, k: checks.nonnegative(v, k, _E), steps, _E)


# ----------------------------------------------------------------------------- the tables
@dataclass(frozen=True)
class Verifier:
    """Checks each attempt: accepts a wrong one with ``miss``, rejects a correct one with
    ``false_reject``. Either may be one number or a list of ``steps`` numbers."""

    miss: PerStepFloat = 0.0
    false_reject: PerStepFloat = 0.0

    def __post_init__(self) -> None:
        _set(self, "miss", _probabilities(self.miss, "verifier.miss"))
        _set(self, "false_reject", _probabilities(self.false_reject, "verifier.false_reject"))


@dataclass(frozen=True)
class Retries:
    """Retry budgets: ``per_step`` retries per execution of a step (one number or a list of
    ``steps`` integers; defaults to ``total``) and ``total`` over the trial (None: no cap)."""

    per_step: PerStepInt | None = None
    total: int | None = None

    def __post_init__(self) -> None:
        if self.per_step is None and self.total is None:
            raise _E("retries: give per_step, total or both")
        if self.per_step is not None:
            _set(self, "per_step", checks.per_step(
                self.per_step, "retries.per_step",
                lambda v, k: checks.integer(v, k, 0, MAX_PER_STEP, error=_E), error=_E,
            ))
        if self.total is not None:
            _set(self, "total", checks.integer(self.total, "retries.total", 0, MAX_TOTAL, error=_E))


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

    def __post_init__(self) -> None:
        key = "checkpoints"
        if self.every is not None:
            _set(self, "every", checks.integer(self.every, f"{key}.every", 1, MAX_STEPS, error=_E))
        if not isinstance(self.at, (list, tuple)):
            raise _E(f"{key}.at: must be a list of step numbers (1..steps), got {show(self.at)}")
        _set(self, "at", tuple(checks.integer(x, f"{key}.at", 1, MAX_STEPS, error=_E) for x in self.at))
        checks.boolean(self.final, f"{key}.final", _E)
        _set(self, "detect", checks.probability(self.detect, f"{key}.detect", _E))
        _set(self, "false_alarm", checks.probability(self.false_alarm, f"{key}.false_alarm", _E))
        _set(self, "rollbacks", checks.integer(self.rollbacks, f"{key}.rollbacks", 0, MAX_ROLLBACKS, error=_E))
        checks.boolean(self.human, f"{key}.human", _E)
        # whether the positions are empty depends on steps: the scenario checks it


@dataclass(frozen=True)
class Confusion:
    """A two-state agent: a wrong attempt confuses it with ``enter``, a correct one while
    confused brings it back with ``recover``; confused, its success is multiplied by ``factor``."""

    enter: float
    recover: float
    factor: float

    def __post_init__(self) -> None:
        for key in ("enter", "recover", "factor"):
            _set(self, key, checks.probability(getattr(self, key), f"correlation.confusion.{key}", _E))


@dataclass(frozen=True)
class Correlation:
    """Correlated errors: logit-scale random effects per trial (``task_sd``) and per step
    execution (``step_sd``), each at most ``checks.MAX_SD``, and the confusion chain."""

    task_sd: float = 0.0
    step_sd: float = 0.0
    confusion: Confusion | None = None

    def __post_init__(self) -> None:
        for key in ("task_sd", "step_sd"):
            _set(self, key, checks.in_range(
                getattr(self, key), f"correlation.{key}", 0.0, checks.MAX_SD,
                allowed=f"a finite number >= 0 and <= {checks.MAX_SD:g}", error=_E,
            ))
        if self.confusion is not None and not isinstance(self.confusion, Confusion):
            raise _E(
                f"correlation.confusion: must be a Confusion(enter, recover, factor), got {show(self.confusion)}"
            )


@dataclass(frozen=True)
class Cost:
    """Costs in any unit: per attempt (number or per-step list), per verified attempt, per
    checkpoint check and per rollback. ``unit`` names the unit (``"USD"``, ``"tokens"``) for
    display beside every cost printed; the engines never read it."""

    attempt: PerStepFloat = 1.0
    verify: float = 0.0
    checkpoint: float = 0.0
    rollback: float = 0.0
    unit: str = ""

    def __post_init__(self) -> None:
        _set(self, "attempt", _nonnegatives(self.attempt, "cost.attempt"))
        for key in ("verify", "checkpoint", "rollback"):
            _set(self, key, checks.nonnegative(getattr(self, key), f"cost.{key}", _E))
        checks.text(self.unit, "cost.unit", MAX_UNIT, _E)


#: table name -> dataclass, in file order (section 3's, then section 7's)
TABLES: dict[str, type] = {
    "verifier": Verifier,
    "retries": Retries,
    "checkpoints": Checkpoints,
    "correlation": Correlation,
    "cost": Cost,
    **TIME_TABLES,
}
#: the tables of docs/model.md section 8 given once: name -> dataclass
DESIGN_TABLES: dict[str, type] = {
    "escalation": Escalation,
    "sampling": Sampling,
    "faults": Faults,
    "utility": Utility,
}
TABLES.update(DESIGN_TABLES)
#: arrays of tables (``[[classes]]``): name -> the dataclass of one entry
ARRAY_TABLES: dict[str, type] = {"classes": TaskClass, "failure_modes": FailureMode}
#: tables held inside a table: (table, key) -> dataclass
_NESTED: dict[tuple[str, str], type] = {("correlation", "confusion"): Confusion, ("timing", "backoff"): Backoff}
_TOP_KEYS = ("name", "steps", "p", "target", *TABLES, *ARRAY_TABLES)


# ------------------------------------------------------------------------------ the scenario
@dataclass(frozen=True)
class Scenario:
    """One agent design: a chain of ``steps`` steps and the machinery around it.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
    ...                         "retries": {"per_step": 3}})
    >>> s.steps, s.verifier.miss, s.retries.per_step
    (25, 0.1, 3)
    """

    steps: int
    p: PerStepFloat | None  # None only with classes, whose p replaces it
    name: str = ""
    target: float | None = None
    verifier: Verifier | None = None
    retries: Retries | None = None
    checkpoints: Checkpoints | None = None
    correlation: Correlation = field(default_factory=Correlation)
    cost: Cost = field(default_factory=Cost)
    # The time tables of docs/model.md section 7: only the timeline engine reads them.
    timing: Timing | None = None
    fleet: Fleet | None = None
    resources: Resources | None = None
    infra: Infra | None = None
    # What the design must meet in time (docs/model.md section 7).
    targets: Targets | None = None
    # The designs of docs/model.md section 8 (each the identity when absent).
    classes: tuple[TaskClass, ...] = ()
    escalation: Escalation | None = None
    sampling: Sampling | None = None
    failure_modes: tuple[FailureMode, ...] = ()
    faults: Faults | None = None
    utility: Utility | None = None

    def __post_init__(self) -> None:
        _validate(self)

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
        """Read a scenario file (size, encoding, nesting and syntax checked by
        ``relsim.scenario.files.read_toml``)."""
        return cls.from_dict(read_toml(path, error=ScenarioError), source=str(path))

    def to_dict(self) -> dict[str, Any]:
        """The scenario in file form; ``Scenario.from_dict(s.to_dict()) == s``."""
        out: dict[str, Any] = {}
        if self.name:
            out["name"] = self.name
        out["steps"] = self.steps
        if self.p is not None:
            out["p"] = _plain(self.p)
        if self.target is not None:
            out["target"] = self.target
        for name in TABLES:
            value = getattr(self, name)
            if value is None:
                continue
            table = _table_dict(value)
            if table or name not in ("correlation", "cost"):
                out[name] = table
        for name in ARRAY_TABLES:
            if getattr(self, name):
                out[name] = [_table_dict(entry) for entry in getattr(self, name)]
        return out

    @property
    def has_design_tables(self) -> bool:
        """Whether any table of docs/model.md section 8 is set."""
        return bool(self.classes or self.failure_modes) or any(
            getattr(self, name) is not None for name in DESIGN_TABLES
        )


def as_scenario(value: Any) -> Scenario:
    """The scenario an engine was given: a ``Scenario`` as it is, a mapping through
    ``Scenario.from_dict``; anything else is a RelsimError naming ``scenario``."""
    if isinstance(value, Scenario):
        return value
    if isinstance(value, Mapping):
        return Scenario.from_dict(value)
    if isinstance(value, (str, os.PathLike)):  # a file name: say how to read it
        raise ScenarioError(
            f"scenario: must be a relsim.Scenario or a mapping, got the {type(value).__name__} "
            f"{show(os.fspath(value))} (read a scenario file with relsim.Scenario.from_toml)"
        )
    raise ScenarioError(f"scenario: must be a relsim.Scenario or a mapping, got {type(value).__name__}")


def checkpoint_positions(c: Checkpoints | None, steps: int) -> tuple[int, ...]:
    """Sorted step numbers (1..steps) after which a checkpoint checks the segment: every
    multiple of ``every``, each of ``at``, and ``steps`` when ``final``."""
    if c is None:
        return ()
    positions = set(c.at)
    if c.every is not None:
        positions.update(range(c.every, steps + 1, c.every))
    if c.final:
        positions.add(steps)
    return tuple(sorted(positions))


# ----------------------------------------------------------------------------- from a mapping
@functools.cache
def key_homes() -> Mapping[str, str]:
    """Every valid key name -> its dotted path, to point a misplaced key to its table
    (read-only; built once: every table of every scenario read consults it)."""
    homes = {key: key for key in _TOP_KEYS}
    for table, cls in TABLES.items():
        for f in fields(cls):
            homes.setdefault(f.name, f"{table}.{f.name}")
    for table, cls in ARRAY_TABLES.items():
        for f in fields(cls):
            homes.setdefault(f.name, f"{table}.{f.name}")
    for (table, key), cls in _NESTED.items():
        for f in fields(cls):
            homes.setdefault(f.name, f"{table}.{key}.{f.name}")
    return types.MappingProxyType(homes)


def _build(cls: type, value: Any, path: str) -> Any:
    """The dataclass ``cls`` from its file spelling at ``path`` (keys checked; each table
    checks its own values)."""
    names = tuple(f.name for f in fields(cls))
    if not isinstance(value, Mapping):
        allowed = f"a table of {_and(names)}" if "." in path else "a table"  # a nested one: say which
        raise ScenarioError(f"{path}: must be {allowed}, got {show(value)}")
    checks.check_keys(value, names, path, key_homes(), ScenarioError)
    required = [f.name for f in fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [k for k in required if k not in value]
    if missing:
        raise ScenarioError(f"{path}: needs all of {_and(required)}; missing {', '.join(missing)}")
    if cls is Checkpoints and not {"every", "at", "final"} & set(value):
        raise ScenarioError(f"{path}: no checkpoint position; give every, at or final")
    kwargs = dict(value)
    table = path.split(".")[0]
    for (outer, key), inner in _NESTED.items():
        if outer == table and key in kwargs:
            kwargs[key] = _build(inner, kwargs[key], f"{path}.{key}")
    return cls(**kwargs)


def _entry(cls: type, value: Any, name: str, index: int) -> Any:
    """Entry ``index`` of the array of tables ``name``; its errors say which entry
    (``classes[1].weight``: in a mixture of five, ``classes.weight`` does not)."""
    try:
        return _build(cls, value, name)
    except ScenarioError as error:
        text = str(error)
        if text.startswith((f"{name}.", f"{name}:")):
            text = f"{name}[{index}]{text[len(name):]}"
        raise ScenarioError(text) from None


def _and(names: Any) -> str:
    """``a, b and c``."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _from_mapping(data: Any) -> Scenario:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"a scenario must be a table of keys, got {show(data)}")
    if "axes" in data:  # a grid's key: say what the file is, not where "base" belongs
        raise ScenarioError("axes: unknown key; this is a sweep grid (base and [axes]), not a "
                            "scenario: run it with relsim.sweep")
    checks.check_keys(data, _TOP_KEYS, "", key_homes(), ScenarioError)
    if "steps" not in data:
        raise ScenarioError("steps: required key is missing")
    if "p" not in data and "classes" not in data:
        raise ScenarioError("p: required key is missing (or give [[classes]], each with its p)")
    kwargs: dict[str, Any] = {k: data[k] for k in ("name", "steps", "target") if k in data}
    kwargs["p"] = data.get("p")
    for name, cls in TABLES.items():
        if name in data:
            kwargs[name] = _build(cls, data[name], name)
    for name, cls in ARRAY_TABLES.items():
        if name in data:
            entries = data[name]
            if not isinstance(entries, (list, tuple)) or not entries:
                raise ScenarioError(f"{name}: must be a non-empty array of tables ([[{name}]]), got {show(entries)}")
            kwargs[name] = tuple(_entry(cls, entry, name, i) for i, entry in enumerate(entries))
    if "failure_modes" in data and isinstance(data.get("verifier"), Mapping) and "miss" in data["verifier"]:
        raise ScenarioError(
            "verifier.miss: must be left out with [[failure_modes]]: each mode has its own miss"
        )
    if "retries" in kwargs and "verifier" not in kwargs:
        raise ScenarioError(
            "retries: needs a [verifier]: without one no attempt is rejected, so retries never run"
        )
    return Scenario(**kwargs)


# --------------------------------------------------------------------------------- links
def _validate(s: Scenario) -> None:
    """Check the scenario's own keys, the types of its tables, and what links them."""
    if not isinstance(s.name, str) or not s.name.isprintable():
        # the name titles every output: a line break or an escape code would be printed raw
        raise ScenarioError(f"name: must be text of printable characters (no line break or "
                            f"control character), got {show(s.name)}")
    n = checks.integer(s.steps, "steps", 1, MAX_STEPS, error=_E)
    _set(s, "steps", n)
    if s.p is None:
        if not s.classes:
            raise ScenarioError("p: required key is missing (or give [[classes]], each with its p)")
    else:
        _set(s, "p", _probabilities(s.p, "p", n))
    if s.target is not None:
        _set(s, "target", checks.in_range(s.target, "target", 0.0, 1.0, low_open=True, error=_E))
    for name, cls in TABLES.items():
        value = getattr(s, name)
        if value is not None and not isinstance(value, cls):
            raise ScenarioError(f"{name}: must be a {cls.__name__}, got {show(value)}")
    if s.cost is None:  # the one table that is always there (Cost(): 1 an attempt, else 0)
        raise ScenarioError("cost: must be a Cost (leave it out for Cost(), 1 an attempt), got None")
    for name, cls in ARRAY_TABLES.items():
        entries = getattr(s, name)
        if isinstance(entries, list):
            entries = tuple(entries)
            _set(s, name, entries)
        if not isinstance(entries, tuple) or not all(isinstance(e, cls) for e in entries):
            raise ScenarioError(f"{name}: must be a tuple of {cls.__name__}, got {show(entries)}")
    _check_lengths(s, n)
    _check_section3_links(s, n)
    _check_design_links(s, n)
    _check_time_links(s)


def _check_lengths(s: Scenario, n: int) -> None:
    """Per-step lists hold one value per step (each table checked the values themselves)."""
    def length(value: Any, key: str) -> None:
        checks.per_step(value, key, lambda v, k: v, n, _E)

    if s.verifier is not None:
        length(s.verifier.miss, "verifier.miss")
        length(s.verifier.false_reject, "verifier.false_reject")
    if s.retries is not None and s.retries.per_step is not None:
        length(s.retries.per_step, "retries.per_step")
    length(s.cost.attempt, "cost.attempt")
    if s.timing is not None:
        length(s.timing.attempt, "timing.attempt")
    if s.resources is not None and s.resources.tokens is not None:
        length(s.resources.tokens, "resources.tokens")


def _check_section3_links(s: Scenario, n: int) -> None:
    if s.retries is not None and s.verifier is None:
        raise ScenarioError(
            "retries: needs a [verifier]: without one no attempt is rejected, so retries never run"
        )
    c = s.checkpoints
    if c is not None:
        for position in c.at:
            checks.integer(position, "checkpoints.at", 1, n, error=_E)
        if not checkpoint_positions(c, n):
            given = [f"every = {c.every} exceeds steps = {n}"] if c.every is not None else []
            given += ["at is empty"] if not c.at else []
            given += ["final is false"]
            raise ScenarioError(
                f"checkpoints: no checkpoint position ({', '.join(given)}); "
                f"give every in 1..{n}, a position in at, or final = true"
            )
    cost = s.cost
    if cost.verify > 0 and s.verifier is None:
        raise ScenarioError("cost.verify: is charged per verified attempt, but there is no [verifier]")
    if (cost.checkpoint > 0 or cost.rollback > 0) and c is None:
        key = "cost.checkpoint" if cost.checkpoint > 0 else "cost.rollback"
        raise ScenarioError(f"{key}: is charged at checkpoints, but there is no [checkpoints]")
    if cost.rollback > 0 and c is not None and c.rollbacks == 0:
        raise ScenarioError(
            "cost.rollback: is charged per rollback, but checkpoints.rollbacks = 0 allows none; "
            "set checkpoints.rollbacks >= 1 or drop cost.rollback"
        )


def _check_design_links(s: Scenario, n: int) -> None:
    """Section 8's tables against the rest: per-step lengths, ladders the budget reaches,
    modes that sum to 1 and meet the verifier they need."""
    def length(value: Any, key: str) -> None:
        checks.per_step(value, key, lambda v, k: v, n, _E)

    e = s.escalation
    if len(s.classes) > MAX_CLASSES:
        raise ScenarioError(f"classes: must have at most {MAX_CLASSES} classes, got {len(s.classes)}")
    for i, c in enumerate(s.classes):
        length(c.p, f"classes[{i}].p")
        if c.escalation_p is not None:
            if e is None:
                raise ScenarioError(f"classes[{i}].escalation_p: is the p of a ladder's rungs, but there "
                                    "is no [escalation]")
            if len(c.escalation_p) != e.rungs:
                raise ScenarioError(
                    f"classes[{i}].escalation_p: must have one entry per rung ({e.rungs}, as "
                    f"escalation.after), got {len(c.escalation_p)}"
                )
            for k, value in enumerate(c.escalation_p):
                length(value, f"classes[{i}].escalation_p[{k}]")
    if e is not None:
        if s.retries is None:
            raise ScenarioError("escalation: a ladder serves retries, but there is no [retries]")
        for k, value in enumerate(e.p):
            length(value, f"escalation.p[{k}]")
        for k, value in enumerate(e.attempt_cost or ()):
            length(value, f"escalation.attempt_cost[{k}]")
        per_step = s.retries.per_step if s.retries.per_step is not None else s.retries.total
        most: int = max(per_step) if isinstance(per_step, tuple) else int(per_step or 0)
        if s.retries.total is not None:
            most = min(most, s.retries.total)
        if e.after[-1] > most:
            raise ScenarioError(
                f"escalation.after: rung {e.rungs} serves from attempt {e.after[-1] + 1} of an "
                f"execution, which no budget reaches (retries.per_step allows {most + 1} attempts); "
                f"must be <= {most}, got {e.after[-1]}"
            )
    g = s.sampling
    if g is not None and g.select == "verifier" and s.verifier is None:
        raise ScenarioError("sampling.select: \"verifier\" needs a [verifier] to check the samples")
    modes = s.failure_modes
    if modes:
        if len(modes) > MAX_MODES:
            raise ScenarioError(f"failure_modes: must have at most {MAX_MODES} modes, got {len(modes)}")
        names = [m.name for m in modes]
        repeated = sorted({x for x in names if names.count(x) > 1})
        if repeated:
            raise ScenarioError(f"failure_modes.name: must be unique, got {repeated[0]!r} twice")
        total = math.fsum(m.share for m in modes)
        if abs(total - 1.0) > 1e-9:
            raise ScenarioError(f"failure_modes.share: must sum to 1 over the modes, got {total:.12g}")
        if s.verifier is not None and s.verifier.miss != 0.0:
            raise ScenarioError(
                "verifier.miss: must be left out with [[failure_modes]]: each mode has its own miss"
            )
        for m in modes:
            if m.miss is not None and s.verifier is None:
                raise ScenarioError(
                    f"failure_modes.miss: mode {m.name!r} sets a miss, but there is no [verifier] "
                    "(without one every answer is accepted)"
                )
            if m.detect is not None and s.checkpoints is None:
                raise ScenarioError(
                    f"failure_modes.detect: mode {m.name!r} sets a detect, but there is no [checkpoints]"
                )


def _check_time_links(s: Scenario) -> None:
    given = None if s.targets is None else s.targets.success
    if given is not None and s.target is not None and given != s.target:
        raise ScenarioError(
            f"targets.success: must equal the top-level target = {s.target:g} when both are "
            f"given (they are one target), got {given:g}"
        )
    human = s.checkpoints is not None and s.checkpoints.human
    t, r = s.timing, s.resources
    if t is not None:
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
        if t.backoff is not None and s.retries is None:
            raise ScenarioError("timing.backoff: waits before retries, but there is no [retries]")
        if t.backoff is not None:
            _check_backoff(t.backoff, s.retries)
    if r is not None and r.verifier_calls_llm and s.verifier is None:
        raise ScenarioError("resources.verifier_calls_llm: true, but there is no [verifier]")
    # a resource nothing uses would be silently ignored (as timing.checkpoint with a human gate)
    if r is not None and r.reviewers is not None and not human:
        raise ScenarioError("resources.reviewers: is the pool of a human gate, but no check is one "
                            "(set checkpoints.human = true, or leave it out)")
    if r is not None and r.tokens is not None and r.tpm is None:
        raise ScenarioError("resources.tokens: is what an LLM call takes from the tpm bucket, but "
                            "resources.tpm is not set (set it, or leave tokens out)")
    if human:
        if r is None or r.reviewers is None:
            raise ScenarioError("checkpoints.human: true needs resources.reviewers (the reviewer pool)")
        if r.review is None:
            raise ScenarioError("checkpoints.human: true needs resources.review (how long a review takes)")


def _check_backoff(backoff: Backoff, retries: Retries | None) -> None:
    """The longest backoff a trial can meet stays within ``MAX_SECONDS``: an exponential
    backoff without a cap over many retries (2**999 s before retry 1000) would run the clock
    past the float range."""
    if retries is None:
        return
    per_step = retries.per_step if retries.per_step is not None else retries.total
    most = (max(per_step) if isinstance(per_step, tuple) else per_step) or 0
    if retries.total is not None:
        most = min(most, retries.total)
    if most == 0:
        return
    longest = backoff_wait(backoff, most)
    if longest > MAX_SECONDS:
        cap = "" if backoff.max is None else f" (max = {backoff.max:g})"
        raise ScenarioError(
            f"timing.backoff: must be a wait of at most {MAX_SECONDS:g} s before retry {most} "
            f"(retries.per_step), got base * factor**{most - 1}{cap} = {longest:.3g} s; set "
            f"timing.backoff.max (at most {MAX_SECONDS:g})"
        )


# --------------------------------------------------------------------------------- to a file
def _plain(value: Any) -> Any:
    if isinstance(value, Duration):
        return value.to_file()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _table_dict(obj: Any) -> dict[str, Any]:
    """The fields that differ from their defaults, file-ready (a nested table in full)."""
    out: dict[str, Any] = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, (Confusion, Backoff)):
            out[f.name] = {k.name: getattr(value, k.name) for k in fields(value)
                           if getattr(value, k.name) is not None}
        elif value is not None and value != f.default:
            out[f.name] = _plain(value)
    return out
