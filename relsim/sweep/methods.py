"""How a sweep judges one point: one entry per method in :data:`METHODS`.

An entry names the engine's runner, whether it draws trials (then each point gets its own seed
and the row its standard errors), whether its points are cheap enough to batch many per task,
and the outcome columns it reports. Adding an engine is one entry here.

The runners are module-level functions so that dask ships them to workers by name.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from relsim.errors import RelsimError, invalid
from relsim.results import OUTCOME_KEYS

__all__ = ["METHODS", "Method", "method", "run_batch"]


@dataclass(frozen=True)
class Method:
    """One way to judge a point.

    Attributes
    ----------
    name : str
        The grid's ``method`` value.
    run : callable
        ``run(scenario, trials, seed) -> dict``: the point's outcome columns.
    keys : tuple of str
        The outcome columns, in order (stochastic methods add ``<key>_se`` for each).
    stochastic : bool
        Draws trials: needs ``trials`` and ``seed``; rows get ``<key>_se`` and ``seed``.
    cheap : bool
        A point takes about a millisecond: batch many per dask task.
    module : str or None
        A module the method needs; when it is not installed the method is "not available".
    """

    name: str
    run: Callable[[Any, int | None, int | None], dict[str, float]]
    keys: tuple[str, ...]
    stochastic: bool
    cheap: bool
    module: str | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column a point's row holds besides ``point`` and the axes."""
        if not self.stochastic:
            return self.keys
        return (*self.keys, *(f"{key}_se" for key in self.keys), "seed")


def _exact(scenario: Any, trials: int | None, seed: int | None) -> dict[str, float]:
    from relsim.exact import evaluate

    outcome = evaluate(scenario)
    return {key: float(getattr(outcome, key)) for key in OUTCOME_KEYS}


def _simulate(scenario: Any, trials: int | None, seed: int | None) -> dict[str, float]:
    from relsim.montecarlo import simulate

    # One thread per point: a sweep's parallelism is across points (one per dask worker).
    outcome = simulate(scenario, trials, seed=seed, threads=1)
    row = {key: float(getattr(outcome, key)) for key in OUTCOME_KEYS}
    row.update({f"{key}_se": float(outcome.standard_errors[key]) for key in OUTCOME_KEYS})
    return row


#: docs/model.md section 7's scalar outputs of the timeline engine.
TIMELINE_KEYS = (
    "success",
    "silent_failure",
    "detected_failure",
    "timeout",
    "infra_failure",
    "expected_attempts",
    "expected_cost",
    "cost_per_success",
    "makespan",
    "throughput_per_hour",
    "successes_per_hour",
)


def _timeline(scenario: Any, trials: int | None, seed: int | None) -> dict[str, float]:
    import relsim.timeline as timeline

    result = timeline.simulate(scenario, trials, seed=seed).to_dict()
    row = {}
    for key in TIMELINE_KEYS:
        row[key] = _number(result.get(key))
        row[f"{key}_se"] = _number(result.get(f"{key}_se"))
    return row


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)


METHODS: Mapping[str, Method] = {
    "exact": Method("exact", _exact, OUTCOME_KEYS, stochastic=False, cheap=True),
    "simulate": Method("simulate", _simulate, OUTCOME_KEYS, stochastic=True, cheap=False),
    "timeline": Method(
        "timeline", _timeline, TIMELINE_KEYS, stochastic=True, cheap=False, module="relsim.timeline"
    ),
}


def method(name: Any) -> Method:
    """The entry of ``name``; an unknown name, or an engine not installed, is an error."""
    entry = METHODS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise invalid("method", "one of " + ", ".join(f'"{m}"' for m in METHODS), name)
    if entry.module is not None and importlib.util.find_spec(entry.module) is None:
        raise RelsimError(
            f'method: "{name}" is not available in this relsim (it needs {entry.module}); '
            'use "exact" or "simulate"'
        )
    return entry


def run_batch(
    method_name: str, trials: int | None, points: list[tuple[int, Any, int | None]]
) -> list[tuple[int, dict[str, float]]]:
    """Judge a batch of points: ``(index, scenario, seed)`` -> ``(index, columns)``.

    This is the unit of work a dask worker runs. To a worker the scenario travels as a plain
    dict, rebuilt (and so validated again) there; in-process it is the ``Scenario`` itself.
    """
    from relsim.scenario import as_scenario

    entry = METHODS[method_name]
    out = []
    for index, data, seed in points:
        row = entry.run(as_scenario(data), trials, seed)
        if entry.stochastic:
            row["seed"] = seed
        out.append((index, row))
    return out
