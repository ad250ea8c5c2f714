"""Grid files: a base scenario, the axes to vary, and the method that judges every point.

A grid is read from TOML (:meth:`Grid.from_toml`) or a mapping (:meth:`Grid.from_dict`)::

    base = "production_agent.toml"   # a scenario file, relative to the grid file; or a [base] table
    method = "exact"                 # exact | simulate | timeline
    trials = 200000                  # simulate / timeline: trials per point (independent trials)
    replications = 10                # timeline: replications per point of a workload (default: the rule)
    seed = 1                         # simulate / timeline: the grid's seed
    mode = "product"                 # product (default): every combination; zip: the axes side by side
    [axes]
    "verifier.miss" = [0.0, 0.02, 0.05, 0.1]
    "retries.per_step" = [0, 1, 2, 3]

Axis names are dotted scenario keys (docs/model.md section 4, and section 7's time tables:
``timing.deadline``, ``fleet.agents``, ...). Keys that must move together, such as a verifier's error rates and its
price, form one axis named by the keys joined with commas, each value a list of one value per
key::

    "verifier.miss,cost.verify" = [[0.1, 0.002], [0.02, 0.03]]

Every point is built with ``Scenario.from_dict`` and validated when the grid is loaded, before
anything runs.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import hashlib
import itertools
import json
import math
import os
import types
import typing
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

from relsim.errors import RelsimError, invalid, show
from relsim import checks
from relsim.scenario import Duration, Scenario, ScenarioError
from relsim.scenario.files import read_toml

__all__ = ["Grid", "MAX_POINTS", "point_seed", "scenario_keys"]

#: The most points one grid may have: far above any design review, low enough that a typo in
#: an axis (a product of ten long lists) is an error rather than a run that never ends.
MAX_POINTS = 1_000_000
#: The largest grid seed (seeds are numpy SeedSequence entropy; 2**63 keeps them in int64).
MAX_SEED = 2**63 - 1
#: The most trials per point (the Monte Carlo engine's own limits apply below this).
MAX_TRIALS = 10**10

#: A duration's keys in a file (docs/model.md section 7): ``{median, p95}`` or ``{mean}``.
_DURATION_KEYS = ("median", "p95", "mean")
_GRID_KEYS = ("base", "method", "trials", "replications", "seed", "mode", "axes")
#: The most replications per point.
MAX_REPLICATIONS = 100_000
_MODES = ("product", "zip")


def point_seed(grid_seed: int, index: int) -> int:
    """The seed of point ``index`` of a grid seeded with ``grid_seed``.

    The first 63 bits of ``SeedSequence(grid_seed, spawn_key=(index,))`` (the ``index``-th
    child of ``SeedSequence(grid_seed).spawn``): independent streams for the points, and a
    point's numbers do not depend on which other points run, on how many workers, or in which
    order. The point alone is ``relsim simulate POINT.toml --seed <point_seed> ...``.

    Examples
    --------
    >>> point_seed(1, 0) == point_seed(1, 0) != point_seed(1, 1)
    True
    """
    import numpy as np

    grid_seed = checks.integer(grid_seed, "grid_seed", 0, MAX_SEED)
    index = checks.integer(index, "index", 0, checks.MAX_COUNT)
    state = np.random.SeedSequence(grid_seed, spawn_key=(index,)).generate_state(1, np.uint64)
    return int(state[0] >> np.uint64(1))


def scenario_keys() -> tuple[str, ...]:
    """Every dotted key a scenario has: its top-level keys, its tables and their keys.

    Read from the ``Scenario`` dataclass itself, so a table added to the scenario (such as
    docs/model.md section 7's ``timing``) becomes a valid axis with no change here.

    Examples
    --------
    >>> "verifier.miss" in scenario_keys(), "correlation.confusion.enter" in scenario_keys()
    (True, True)
    """
    return tuple(_dataclass_keys(Scenario, ""))


def _dataclass_keys(cls: type, prefix: str) -> list[str]:
    keys: list[str] = []
    for f in dataclasses.fields(cls):
        name = f"{prefix}{f.name}"
        keys.append(name)
        for option in _field_types(cls, f):
            if option is Duration:  # a duration's file spelling, not its dataclass's fields
                keys.extend(f"{name}.{key}" for key in _DURATION_KEYS)
            elif isinstance(option, type) and dataclasses.is_dataclass(option):
                keys.extend(_dataclass_keys(option, f"{name}."))
    return keys


def _field_types(cls: type, f: dataclasses.Field) -> tuple[Any, ...]:
    """The types a field's annotation allows (``Verifier | None`` -> Verifier, NoneType)."""
    hint = typing.get_type_hints(cls)[f.name]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return typing.get_args(hint)
    return (hint,)


def _hint(key: str, known: Collection[str]) -> str:
    """What to say after an unknown axis key: the nearest key of the table it names (the
    nearest key as deep as it when that table is unknown too), else that table's keys.

    Examples
    --------
    >>> known = {"p", "steps", "retries", "retries.per_step", "retries.total"}
    >>> _hint("retries.per_stp", known)
    "; did you mean 'retries.per_step'?"
    >>> _hint("retires.per_step", known)
    "; did you mean 'retries.per_step'?"
    >>> _hint("q", known)
    '; allowed keys here: p, retries, steps'
    >>> _hint("retries.xyz", known)
    '; allowed keys here: retries.per_step, retries.total'
    """
    parent, _, last = key.rpartition(".")
    if parent and parent not in known:  # the table is unknown too: the whole key
        depth = key.count(".")
        close = difflib.get_close_matches(key, [k for k in known if k.count(".") == depth], n=1)
        return f"; did you mean '{close[0]}'?" if close else ""
    prefix = f"{parent}." if parent else ""
    here = sorted(k for k in known if k.startswith(prefix) and "." not in k[len(prefix):])
    # the last part alone: a shared table name would make every key of the table look close
    close = difflib.get_close_matches(last, [k[len(prefix):] for k in here], n=1)
    if close:
        return f"; did you mean '{prefix}{close[0]}'?"
    return f"; allowed keys here: {', '.join(here)}"


@dataclass(frozen=True)
class Grid:
    """A sweep's grid: the base scenario, the axes, the mode and the method.

    Attributes
    ----------
    base : mapping
        The base scenario in file form (docs/model.md section 4), before any axis is applied.
    axes : tuple of (str, tuple)
        Each axis, in file order: its dotted scenario key (or several joined by commas, which
        move together: each value is then a list of one value per key) and its values.
    method : str
        ``"exact"``, ``"simulate"`` or ``"timeline"``.
    mode : str
        ``"product"``: every combination, the last axis varying fastest; ``"zip"``: point ``i``
        takes the ``i``-th value of every axis.
    trials, seed : int or None
        Trials per point and the grid's seed, for the stochastic methods (the timeline's
        ``trials`` for points of independent trials).
    replications : int or None
        The timeline's replications per point that is a workload (Poisson arrivals or a
        shared resource; docs/model.md section 7); None: the default rule.
    source : str or None
        The grid file, named in error messages.

    Examples
    --------
    >>> grid = Grid.from_dict({"base": {"steps": 25, "p": 0.9}, "axes": {"p": [0.9, 0.95]}})
    >>> len(grid), grid.point(1)
    (2, {'p': 0.95})
    """

    base: Mapping[str, Any]
    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    method: str = "exact"
    mode: str = "product"
    trials: int | None = None
    seed: int | None = None
    source: str | None = None
    replications: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.base, Mapping):
            raise invalid("base", "a scenario table (a mapping)", self.base)
        pairs = isinstance(self.axes, (list, tuple)) and all(
            isinstance(axis, (list, tuple)) and len(axis) == 2 and isinstance(axis[0], str)
            for axis in self.axes
        )
        if not pairs:
            raise invalid("axes", "a sequence of (dotted key, values) pairs", self.axes)
        # numpy values (an axis built with np.arange) as Python's, for the digests and frames
        object.__setattr__(self, "base", _plain(dict(self.base)))
        object.__setattr__(
            self, "axes", tuple((name, _axis_values(name, values)) for name, values in self.axes)
        )
        self._check()
        self._check_points()  # build and validate every point now, before anything runs
        if self.method == "timeline":
            self._check_modes()

    def _check_modes(self) -> None:
        """A timeline grid gives ``trials`` for its points of independent trials and may give
        ``replications`` for its workloads (docs/model.md section 7); either count given for
        a grid with no point of its mode is an error naming the other."""
        from relsim.scenario import time_model

        workloads = [time_model(s).workload for s in self.scenarios]
        independent = [i for i, workload in enumerate(workloads) if not workload]
        if independent and self.trials is None:
            i = independent[0]
            raise RelsimError(
                f'trials: required with method = "timeline" for points of independent trials '
                f"(a batch sharing nothing), such as point {i} ({self.describe(i)})"
            )
        if not independent and self.trials is not None:
            raise RelsimError(
                "trials: every point is a workload (Poisson arrivals or a shared resource), "
                "which runs replications of its fleet.tasks: give replications (or leave it "
                "out for the default), not trials"
            )
        if all(not w for w in workloads) and self.replications is not None:
            raise RelsimError(
                "replications: every point is independent trials (a batch sharing nothing): "
                "give trials, not replications"
            )
    # ------------------------------------------------------------------------ loading
    @classmethod
    def from_toml(cls, path: str | Path) -> "Grid":
        """Read a grid file; ``base = "file.toml"`` is read relative to the grid file."""
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):  # Path("") is "."
            raise invalid("path", "a grid file name", path)
        path = Path(path)
        data = read_toml(path, "grid file")
        return cls.from_dict(data, source=str(path), base_dir=path.parent)

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        source: str | None = None,
        base_dir: str | Path | None = None,
    ) -> "Grid":
        """Build a grid from the file's structure (parsed TOML).

        ``base`` is a scenario table, or a path to a scenario file resolved against
        ``base_dir`` (the current directory when None). Errors name ``source`` when given.

        Raises
        ------
        relsim.errors.RelsimError
            For an unknown key (with the nearest valid name), a bad value, zip axes of
            different lengths, or a point that makes an invalid scenario (naming the point).
        """
        if base_dir is not None and not isinstance(base_dir, (str, os.PathLike)):
            raise invalid("base_dir", "a folder name or None", base_dir)
        if source is not None and not isinstance(source, str):
            raise invalid("source", "text or None", source)
        try:
            return _from_mapping(cls, data, source, Path(base_dir) if base_dir is not None else Path())
        except RelsimError as error:
            if source is None or str(error).startswith(f"{source}: "):
                raise
            raise type(error)(f"{source}: {error}") from None

    # ------------------------------------------------------------------------ points
    def __len__(self) -> int:
        return self._count

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The scenario keys the axes set, one column each (a linked axis gives several)."""
        return tuple(key for name, _ in self.axes for key in _keys(name))

    @property
    def stochastic(self) -> bool:
        """True for the methods that draw trials (they need ``trials`` and ``seed``)."""
        from relsim.sweeps.methods import method

        return method(self.method).stochastic

    @cached_property
    def _count(self) -> int:
        lengths = [len(values) for _, values in self.axes]
        return lengths[0] if self.mode == "zip" else math.prod(lengths)

    def _digits(self, index: int) -> list[int]:
        """The position of point ``index`` on each axis (product: the last axis fastest)."""
        if self.mode == "zip":
            return [index] * len(self.axes)
        digits = []
        for _, values in reversed(self.axes):
            index, digit = divmod(index, len(values))
            digits.append(digit)
        return digits[::-1]

    def _values(self, index: int) -> list[Any]:
        checks.integer(index, "index", 0, len(self) - 1)
        return [values[digit] for (_, values), digit in zip(self.axes, self._digits(index))]

    def point(self, index: int) -> dict[str, Any]:
        """The axis values of point ``index``: ``{dotted key: value}``."""
        point: dict[str, Any] = {}
        for (name, _), value in zip(self.axes, self._values(index)):
            keys = _keys(name)
            point.update(zip(keys, value) if len(keys) > 1 else [(name, value)])
        return point

    def scenario_dict(self, index: int) -> dict[str, Any]:
        """The scenario of point ``index`` in file form: the base with the point's values."""
        return copy.deepcopy(self._shallow_dict(index))

    def _shallow_dict(self, index: int) -> dict[str, Any]:
        # Copies only the tables on the axes' paths; the rest is shared with the base. Enough
        # for Scenario.from_dict, which reads its input and never changes it, at a fraction
        # of a deep copy's cost (which was a third of building a 1000-point grid).
        data = dict(self.base)
        for key, value in self.point(index).items():
            _assign(data, key, value)
        return data

    def scenario(self, index: int) -> Scenario:
        """The validated scenario of point ``index`` (built anew at each call)."""
        build = self._fast_build
        if build is not None:
            checks.integer(index, "index", 0, len(self) - 1)
            try:
                return build(self._digits(index))
            except RelsimError:
                pass  # the file form's own message, below
        return self._build(index)

    def _build(self, index: int) -> Scenario:
        """Point ``index``'s scenario from its file form, an error naming the point."""
        try:
            return Scenario.from_dict(self._shallow_dict(index))
        except ScenarioError as error:
            raise ScenarioError(f"point {index} ({self.describe(index)}): {error}") from None

    def seed_of(self, index: int) -> int | None:
        """Point ``index``'s seed (:func:`point_seed`), None for the exact method."""
        if not self.stochastic:
            return None
        assert self.seed is not None  # _check requires a seed for a stochastic method
        return point_seed(self.seed, index)

    @property
    def scenarios(self) -> tuple[Scenario, ...]:
        """Every point's scenario, built and validated (an invalid point is an error)."""
        return tuple(self.scenario(index) for index in range(len(self)))

    def _check_points(self) -> None:
        """Validate every point before anything runs, without keeping a million scenarios.

        When every axis sets a top-level value or a field of a table, a point's scenario is
        point 0's with those fields replaced (each table and the scenario validate
        themselves as they are built: the same checks as from the file form, at a fraction of
        the cost); otherwise each point is built from its file form. A point refused either
        way is built from its file form for the message.
        """
        build = self._fast_build
        if build is None:
            for index in range(len(self)):
                self._build(index)
            return
        ranges = [range(len(values)) for _, values in self.axes]
        every = zip(*ranges) if self.mode == "zip" else itertools.product(*ranges)
        for index, digits in enumerate(every):
            try:
                build(digits)
            except RelsimError:
                self._build(index)  # raises with the file form's message

    @cached_property
    def _fast_build(self) -> Any:
        """``build(digits) -> Scenario`` (a point given by its position on each axis) by
        replacing point 0's fields, or None when an axis sets something other than a
        top-level value or a field of a table (a whole table, a nested table's key, a
        duration's median)."""
        tables = _table_names()
        nested = _nested_keys()
        setters: list[tuple[int, int | None, str, str | None]] = []
        for position, (name, _) in enumerate(self.axes):
            keys = _keys(name)
            for part, key in enumerate(keys):
                link = part if len(keys) > 1 else None
                pieces = key.split(".")
                if len(pieces) == 1 and key not in tables:
                    setters.append((position, link, key, None))
                elif len(pieces) == 2 and pieces[0] in tables and key not in nested:
                    setters.append((position, link, pieces[0], pieces[1]))
                else:
                    return None
        first = self._build(0)
        if any(field is not None and getattr(first, top) is None for _, _, top, field in setters):
            return None  # pragma: no cover - point 0 sets the field, so it has the table
        fixed = {f.name: getattr(first, f.name) for f in dataclasses.fields(Scenario)}
        touched = {top for _, _, top, field in setters if field is not None}
        axes_of = {top: sorted({p for p, _, t, f in setters if t == top}) for top in touched}
        sizes = {top: math.prod(len(self.axes[p][1]) for p in axes_of[top]) for top in touched}
        memo: dict[tuple[str, tuple[int, ...]], Any] = {}
        columns = [values for _, values in self.axes]

        def build(digits: Sequence[int]) -> Scenario:
            changes: dict[str, Any] = dict(fixed)
            fields: dict[str, dict[str, Any]] = {}
            for position, link, top, field in setters:
                value = columns[position][digits[position]]
                if link is not None:
                    value = value[link]
                if field is None:
                    changes[top] = value
                else:
                    fields.setdefault(top, {})[field] = value
            for top, values in fields.items():
                key = (top, tuple(digits[p] for p in axes_of[top]))
                table = memo.get(key)
                if table is None:
                    table = dataclasses.replace(fixed[top], **values)
                    if sizes[top] <= _MEMO_TABLES:  # each table variant built once
                        memo[key] = table
                changes[top] = table
            return Scenario(**changes)

        return build

    def describe(self, index: int) -> str:
        """``verifier.miss = 0.1, p = 0.9``: the point's axis values, for messages."""
        return ", ".join(f"{key} = {show(value)}" for key, value in self.point(index).items())

    # ------------------------------------------------------------------------ identity
    def fingerprint(self) -> dict[str, str]:
        """SHA-256 of what decides the results: ``{"grid": .., "base": ..}``.

        ``grid`` covers the method, mode, axes, and for stochastic methods the trials and the
        seed; ``base`` covers the base scenario's content (not its comments or layout). A
        resumed sweep whose grid or base differs from the partial run's is refused.
        """
        grid: dict[str, Any] = {
            "method": self.method,
            "mode": self.mode,
            "axes": [[name, list(values)] for name, values in self.axes],
        }
        if self.stochastic:
            grid["trials"] = self.trials
            grid["seed"] = self.seed
        if self.replications is not None:
            grid["replications"] = self.replications
        return {"grid": _digest(grid), "base": _digest(dict(self.base))}

    # ------------------------------------------------------------------------ checks
    def _check(self) -> None:
        from relsim.sweeps.methods import method

        if self.mode not in _MODES:
            raise invalid("mode", 'one of "product", "zip"', self.mode)
        chosen = method(self.method)  # an unknown method is an error here
        if not self.axes:
            raise RelsimError("axes: must be a table of at least one axis, got none")
        if chosen.stochastic:
            if self.trials is None and self.method != "timeline":
                raise RelsimError(f'trials: required with method = "{self.method}"')
            if self.seed is None:
                raise RelsimError(
                    f'seed: required with method = "{self.method}" (the same seed gives the same numbers)'
                )
        if self.trials is not None:
            checks.integer(self.trials, "trials", 1, MAX_TRIALS)
        if self.replications is not None:
            if self.method != "timeline":
                raise RelsimError(f'replications: used only with method = "timeline", got method = "{self.method}"')
            checks.integer(self.replications, "replications", 2, MAX_REPLICATIONS)
        if self.seed is not None:
            checks.integer(self.seed, "seed", 0, MAX_SEED)
        known = scenario_keys()
        names = self.axis_names
        for name, values in self.axes:
            keys = _keys(name)
            for key in keys:
                if key not in known:
                    raise RelsimError(f"axes.{key}: unknown scenario key{_hint(key, known)}")
            if not isinstance(values, (list, tuple)) or not values:
                raise invalid(f"axes.{name}", "a non-empty list of values", list(values))
            if len(keys) > 1:
                for value in values:
                    if not isinstance(value, (list, tuple)) or len(value) != len(keys):
                        raise invalid(f"axes.{name}", f"a list of lists of {len(keys)} values (one per key)", value)
        for position, key in enumerate(names):
            for other in names[position + 1 :]:
                if other == key or other.startswith(f"{key}.") or key.startswith(f"{other}."):
                    raise RelsimError(f"axes.{other}: overlaps the axis '{key}' (give one of them)")
        if self.mode == "zip":
            lengths = {len(values) for _, values in self.axes}
            if len(lengths) > 1:
                sizes = ", ".join(f"{name}: {len(values)}" for name, values in self.axes)
                raise RelsimError(f"axes: zip mode needs axes of one length, got {sizes}")
        count = math.prod(len(values) for _, values in self.axes) if self.mode == "product" else len(self.axes[0][1])
        if count > MAX_POINTS:
            raise invalid("axes", f"a grid of at most {MAX_POINTS} points", count)


# ------------------------------------------------------------------------------ helpers
def _from_mapping(cls: type, data: Mapping[str, Any], source: str | None, base_dir: Path) -> Grid:
    if not isinstance(data, Mapping):
        raise RelsimError(f"a grid must be a table of keys, got {show(data)}")
    if "axes" not in data and "steps" in data:  # a scenario: say so, not that 'name' is unknown
        raise RelsimError("axes: required key is missing: this is a scenario, not a sweep grid; "
                          "a grid names one (base = \"scenario.toml\", or a [base] table) and "
                          "gives the values to sweep in [axes]")
    for key in data:
        if key not in _GRID_KEYS:
            close = difflib.get_close_matches(str(key), _GRID_KEYS, n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else f"; allowed keys: {', '.join(_GRID_KEYS)}"
            raise RelsimError(f"{key}: unknown key{hint}")
    if "base" not in data:
        raise RelsimError("base: required key is missing (a scenario file or a [base] table)")
    base = data["base"]
    if isinstance(base, str):
        base = read_toml(base_dir / base, "scenario file")
    elif not isinstance(base, Mapping):
        raise invalid("base", "a scenario file name or a table", base)
    axes = data.get("axes", {})
    if not isinstance(axes, Mapping):
        raise invalid("axes", "a table of dotted scenario keys", axes)
    method = data.get("method", "exact")
    mode = data.get("mode", "product")
    return cls(
        base=copy.deepcopy(dict(base)),
        axes=tuple((str(name), _axis_values(name, values)) for name, values in axes.items()),
        method=method,
        mode=mode,
        trials=data.get("trials"),
        replications=data.get("replications"),
        seed=data.get("seed"),
        source=source,
    )


#: Table variants kept per table while a grid is validated (a variant built once serves
#: every point that has it).
_MEMO_TABLES = 100_000


@functools.cache
def _table_names() -> frozenset[str]:
    """The scenario's top-level keys that are tables (``verifier``, ``timing``, ...)."""
    return frozenset(
        f.name for f in dataclasses.fields(Scenario)
        if any(isinstance(t, type) and dataclasses.is_dataclass(t) for t in _field_types(Scenario, f))
    )


@functools.cache
def _nested_keys() -> frozenset[str]:
    """Table fields that are tables themselves (``timing.backoff``, ``correlation.confusion``):
    their file form (a mapping) is not what the dataclass holds."""
    nested = set()
    for name in _table_names():
        for cls in _field_types(Scenario, next(f for f in dataclasses.fields(Scenario) if f.name == name)):
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
                continue
            for f in dataclasses.fields(cls):
                if any(isinstance(t, type) and dataclasses.is_dataclass(t) and t is not Duration
                       for t in _field_types(cls, f)):
                    nested.add(f"{name}.{f.name}")
    return frozenset(nested)


def _plain(value: Any) -> Any:
    """``value`` with numpy scalars and arrays made Python's (``np.int64(3)`` -> 3), in lists,
    tuples and mappings too: what the JSON digest, the journal and the frame can hold."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if type(value) is list or type(value) is tuple:
        return type(value)(_plain(item) for item in value)
    return value


def _keys(name: str) -> list[str]:
    """The scenario keys of an axis: one, or several joined by commas (a linked axis)."""
    return [key.strip() for key in name.split(",")]


def _axis_values(name: str, values: Any) -> Any:
    """An axis's values as a tuple of Python values (a numpy array's, a pandas Series' and a
    range's too: what a notebook builds an axis from)."""
    if isinstance(values, range):
        values = list(values)
    elif getattr(values, "ndim", None) == 1 and callable(getattr(values, "tolist", None)):
        values = values.tolist()
    if isinstance(values, (list, tuple)):
        return tuple(_plain(value) for value in values)
    raise invalid(f"axes.{name}", "a non-empty list of values", values)


def _assign(data: dict[str, Any], key: str, value: Any) -> None:
    """Set the dotted ``key`` of a scenario dict, creating the tables on its way."""
    *tables, leaf = key.split(".")
    node = data
    for depth, table in enumerate(tables):
        child = node.get(table)
        if child is None:
            child = node[table] = {}
        elif not isinstance(child, Mapping):
            raise ScenarioError(
                f"{'.'.join(tables[: depth + 1])}: must be a table to set {key}, got {show(child)}"
            )
        else:
            child = node[table] = dict(child)
        node = child
    node[leaf] = value


def _digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
