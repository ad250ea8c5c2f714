"""The timeline engine's result: section 3's outcome keys plus the time keys of section 7."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from relsim.results import OUTCOME_KEYS, cost_per_success, jsonable

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: The proportions the timeline engine reports (they sum to 1).
PROPORTIONS = ("success", "silent_failure", "detected_failure", "timeout", "infra_failure")

#: Columns of the event log (``TimelineOutcome.events``, ``relsim timeline --events``).
EVENT_COLUMNS = ("trial", "time", "kind", "step", "attempt", "resource", "outcome")


@dataclass(frozen=True)
class TimelineOutcome:
    """What a fleet of trials of one scenario does in time (docs/model.md section 7).

    Attributes
    ----------
    success, silent_failure, detected_failure, timeout, infra_failure : float
        Shares of the trials run that ended each way (they sum to 1).
    expected_attempts, expected_cost : float
        Mean attempts and cost per trial; a trial stopped by its deadline or a crash counts
        what it had spent by then.
    standard_errors : mapping of str to float
        ``<key>`` -> standard error: binomial for the shares, ``s / sqrt(N)`` for the means
        (``duration`` is the mean duration's), delta method for ``cost_per_success``.
    intervals : mapping of str to (float, float)
        95% intervals: Wilson for the shares, normal for the means.
    duration : mapping of str to float
        ``mean``, ``p50``, ``p90``, ``p99`` of arrival-to-end seconds over all trials.
    wait : mapping of str to float
        Mean seconds per trial spent waiting for ``agents``, ``rate_limit``, ``llm`` and
        ``reviewers``.
    utilisation : mapping of str to float or None
        ``agents``, ``llm``, ``reviewers``: busy capacity-seconds / (capacity x makespan);
        None when the resource is unlimited or unused.
    makespan : float
        Seconds from the first arrival to the last end.
    throughput_per_hour, successes_per_hour : float or None
        Trials ended (successes) x 3600 / makespan; None when the makespan is 0.
    trials, seed : int
        Trials run and the seed that drew them.
    partial : bool
        True when the run was interrupted and reports the trials that had ended.
    events : pandas.DataFrame or None
        With ``record=K``: every event of the first K trials, columns ``EVENT_COLUMNS``.
    simpy_events : int
        simpy events the run processed (the benchmarks' unit of work).
    """

    success: float
    silent_failure: float
    detected_failure: float
    timeout: float
    infra_failure: float
    expected_attempts: float
    expected_cost: float
    standard_errors: Mapping[str, float] = field(default_factory=dict)
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    duration: Mapping[str, float] = field(default_factory=dict)
    wait: Mapping[str, float] = field(default_factory=dict)
    utilisation: Mapping[str, float | None] = field(default_factory=dict)
    makespan: float = 0.0
    throughput_per_hour: float | None = None
    successes_per_hour: float | None = None
    trials: int = 0
    seed: int | None = None
    partial: bool = False
    method: str = "timeline"
    events: "pd.DataFrame | None" = field(default=None, compare=False, repr=False)
    simpy_events: int = field(default=0, compare=False)

    @property
    def cost_per_success(self) -> float:
        """``expected_cost / success``; infinite when success is 0."""
        return cost_per_success(self.expected_cost, self.success)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the keys of docs/model.md section 7 (infinities as None)."""
        out: dict[str, Any] = {}
        for key in (*PROPORTIONS, *OUTCOME_KEYS[3:]):
            out[key] = getattr(self, key)
            if key in self.standard_errors:
                out[f"{key}_se"] = self.standard_errors[key]
            if key in self.intervals:
                out[f"{key}_ci"] = list(self.intervals[key])
        out["duration"] = dict(self.duration)
        if "duration" in self.standard_errors:
            out["duration_se"] = self.standard_errors["duration"]
        out["wait"] = dict(self.wait)
        out["utilisation"] = dict(self.utilisation)
        for key in ("makespan", "throughput_per_hour", "successes_per_hour", "method",
                    "trials", "seed", "partial"):
            out[key] = getattr(self, key)
        return jsonable(out)

    def to_frame(self) -> "pd.DataFrame":
        """A one-row pandas DataFrame of :meth:`to_dict` (nested keys joined with ``_``,
        intervals split into ``_low`` and ``_high``)."""
        import pandas as pd

        row: dict[str, Any] = {}
        for key, value in self.to_dict().items():
            if isinstance(value, dict):
                for name, number in value.items():
                    row[f"{key}_{name}"] = number
            elif isinstance(value, list):
                row[f"{key}_low"], row[f"{key}_high"] = value
            else:
                row[key] = value
        return pd.DataFrame([row])


def per_hour(count: int, makespan: float) -> float | None:
    """``count * 3600 / makespan``; None when the makespan is 0 (no time passed)."""
    if not makespan > 0.0 or not math.isfinite(makespan):
        return None
    return count * 3600.0 / makespan
