"""How a sweep judges one point: one entry per method in :data:`METHODS`.

An entry names the engine's runner, whether it draws trials (then each point gets its own seed
and the row its standard errors), whether its points are cheap enough to batch many per task,
and the outcome columns it reports. A point's columns are those of its outcome's
``to_frame()`` (:meth:`relsim.results.Outcome.to_row`, the one flattening of every result):
a sweep picks them, it does not flatten. Adding an engine is one entry here.

The runners are module-level functions so that dask ships them to workers by name.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Protocol, TypeVar

from relsim.errors import RelsimError, invalid
from relsim.results import OUTCOME_KEYS, TIMELINE_PROPORTIONS, Outcome

__all__ = ["METHODS", "TIMELINE_ERRORS", "TIMELINE_KEYS", "Method", "method", "run_batch"]


@dataclass(frozen=True)
class Method:
    """One way to judge a point.

    Attributes
    ----------
    name : str
        The grid's ``method`` value.
    run : callable
        ``run(scenario, trials, seed, replications) -> Outcome``: the point's outcome (any
        result with ``to_row()``); ``replications`` is the timeline's, for a workload.
    keys : tuple of str
        The outcome columns, in order: columns of the outcome's ``to_frame()``.
    stochastic : bool
        Draws trials: needs ``trials`` and ``seed``; rows get standard errors and ``seed``.
    cheap : bool
        A point takes about a millisecond: batch many per dask task.
    errors : tuple of str or None
        The standard-error columns of a stochastic method; None: ``<key>_se`` for every key.
    """

    name: str
    run: Callable[[Any, int | None, int | None, int | None], Outcome]
    keys: tuple[str, ...]
    stochastic: bool
    cheap: bool
    errors: tuple[str, ...] | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column a point's row holds besides ``point`` and the axes."""
        if not self.stochastic:
            return self.keys
        errors = self.errors if self.errors is not None else tuple(f"{key}_se" for key in self.keys)
        return (*self.keys, *errors, "seed")

    def check_row(self, row: Mapping[str, Any], seed: int | None) -> None:
        """Raise a ``RelsimError`` unless ``row`` holds what :meth:`row` makes of an outcome
        (and ``seed`` when stochastic): exactly :attr:`columns`, each a number, the shares in
        [0, 1], everything else >= 0, infinite or NaN (undefined). A resumed sweep writes a
        journal's records into its rows: a damaged one must not get there."""
        missing = [key for key in self.columns if key not in row]
        extra = [str(key) for key in row if key not in self.columns]
        if missing or extra:
            names = missing or extra
            listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            what = f"missing {listed}" if missing else f"unknown {listed}"
            raise RelsimError(f"columns: must be those of a {self.name} point, got {what}")
        for key in self.columns:
            value = row[key]
            if key == "seed":
                if value != seed or isinstance(value, bool) or not isinstance(value, int):
                    raise invalid("seed", f"the point's seed {seed}", value)
                continue
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if key in _SHARES:
                if not (number and 0.0 <= value <= 1.0):
                    raise invalid(key, "a share in [0, 1]", value)
            elif not (number and (value >= 0.0 or math.isnan(value))):
                raise invalid(key, "a number >= 0, infinity or NaN", value)

    def row(self, outcome: Outcome) -> dict[str, float]:
        """The point's columns but ``seed``, picked from ``outcome.to_row()`` (its
        ``to_frame()`` columns, without pandas) as floats.

        Undefined figures (no throughput when no time passed, the utilisation of an unlimited
        resource) are NaN; an infinite cost per success (and its standard error) stays
        infinite, as the engines report it.
        """
        flat = outcome.to_row()
        return {key: float(flat[key]) for key in self.columns if key != "seed"}


#: The columns that are shares of the trials: in [0, 1] (every other column is >= 0).
_SHARES = frozenset(TIMELINE_PROPORTIONS)

#: The timeline's scalar outputs (docs/model.md section 7), one column each.
_TIMELINE_SCALARS = (
    "success", "silent_failure", "detected_failure", "timeout", "infra_failure",
    "expected_attempts", "expected_cost", "cost_per_success",
)
#: Its tables of figures, as ``TimelineOutcome.to_frame`` flattens them: ``duration_p90``.
_TIMELINE_TABLES = {
    "duration": ("mean", "p50", "p90", "p99"),
    "wait": ("agents", "rate_limit", "llm", "reviewers"),
    "utilisation": ("agents", "llm", "reviewers", "rpm", "tpm"),
}
_TIMELINE_RATES = ("makespan", "throughput_per_hour", "successes_per_hour")
_TIMELINE_FIGURES = (
    *(f"{table}_{name}" for table, names in _TIMELINE_TABLES.items() for name in names),
    *_TIMELINE_RATES,
)
#: The timeline's columns, named as in ``TimelineOutcome.to_frame``: the estimates, then a
#: workload's replications and the precision reached (NaN for independent trials).
TIMELINE_KEYS = (*_TIMELINE_SCALARS, *_TIMELINE_FIGURES, "replications", "precision")
#: Its standard errors: every estimate's (``duration_se`` is the mean duration's too, as
#: ``TimelineOutcome.to_frame`` names it); NaN for a figure that has none.
TIMELINE_ERRORS = (
    *(f"{key}_se" for key in _TIMELINE_SCALARS), "duration_se",
    *(f"{key}_se" for key in _TIMELINE_FIGURES),
)


def _exact(scenario: Any, trials: int | None, seed: int | None,
           replications: int | None = None) -> Outcome:
    from relsim.exact import evaluate

    return evaluate(scenario)


def _simulate(scenario: Any, trials: int | None, seed: int | None,
              replications: int | None = None) -> Outcome:
    from relsim.montecarlo import simulate

    assert trials is not None  # Grid._check requires trials for a stochastic method
    # One thread per point: a sweep's parallelism is across points (one per dask worker).
    with _no_partial_warning():
        return _whole(simulate(scenario, trials, seed=seed, threads=1))


def _timeline(scenario: Any, trials: int | None, seed: int | None,
              replications: int | None = None) -> Outcome:
    """Independent trials run ``trials``, a workload ``replications`` (None: the default
    rule); Grid._check makes sure each point has what its mode needs."""
    from relsim.scenario import time_model
    from relsim.timeline import simulate_timeline

    with _no_partial_warning():
        if time_model(scenario).workload:
            return _whole(simulate_timeline(scenario, replications=replications, seed=seed))
        return _whole(simulate_timeline(scenario, trials, seed=seed, threads=1))


@contextlib.contextmanager
def _no_partial_warning() -> Iterator[None]:
    """Silence the engines' "interrupted" warning: :func:`_whole` turns it into Ctrl-C."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"(simulation|timeline) interrupted",
                                category=RuntimeWarning)
        yield


class _Run(Protocol):
    @property
    def partial(self) -> bool: ...


_RunT = TypeVar("_RunT", bound=_Run)


def _whole(outcome: _RunT) -> _RunT:
    """The outcome of every trial asked for; a run Ctrl-C cut short is an interruption.

    The engines answer a first Ctrl-C with the estimate over the trials done
    (``partial=True``). A sweep must not record such a point as finished (a resumed sweep
    would keep its numbers), so it stops as at a second Ctrl-C; the journal keeps the points
    finished before.
    """
    if outcome.partial:
        raise KeyboardInterrupt
    return outcome


METHODS: Mapping[str, Method] = {
    "exact": Method("exact", _exact, OUTCOME_KEYS, stochastic=False, cheap=True),
    "simulate": Method("simulate", _simulate, OUTCOME_KEYS, stochastic=True, cheap=False),
    "timeline": Method("timeline", _timeline, TIMELINE_KEYS, stochastic=True, cheap=False,
                       errors=TIMELINE_ERRORS),
}


def method(name: Any) -> Method:
    """The entry of ``name``; an unknown name is an error."""
    entry = METHODS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise invalid("method", "one of " + ", ".join(f'"{m}"' for m in METHODS), name)
    return entry


def run_batch(
    method_name: str, trials: int | None, points: list[tuple[int, Any, int | None]],
    replications: int | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """Judge a batch of points: ``(index, scenario, seed)`` -> ``(index, columns)``.

    This is the unit of work a dask worker runs. To a worker the scenario travels as a plain
    dict, rebuilt (and so validated again) there; in-process it is the ``Scenario`` itself.
    """
    from relsim.scenario import as_scenario

    entry = METHODS[method_name]
    out = []
    for index, data, seed in points:
        row: dict[str, Any] = entry.row(entry.run(as_scenario(data), trials, seed, replications))
        if entry.stochastic:
            assert seed is not None  # Grid._check requires a seed for a stochastic method
            row["seed"] = seed
        out.append((index, row))
    return out
