"""The tables of docs/model.md section 8: the designs beyond one agent behind one verifier.

Task mixtures (``[[classes]]``), an escalation ladder (``[escalation]``), parallel samples and
votes (``[sampling]``), failure modes (``[[failure_modes]]``), attempt faults (``[faults]``)
and the value of each outcome (``[utility]``). Like section 3's tables (``tables.py``), each
is a frozen dataclass that checks its own values when it is built; what links them to the
rest of the scenario (a ladder's rungs against the retry budget, a mode's miss against the
verifier) is checked by ``Scenario``. Each is the identity when absent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from relsim import checks
from relsim.errors import ScenarioError, show

__all__ = ["Escalation", "FailureMode", "Faults", "Sampling", "TaskClass", "Utility"]

#: The most samples one attempt draws (a vote of 64 is far past where votes stop paying).
MAX_SAMPLES = 64
#: The most rungs of a ladder, classes of a mixture and failure modes.
MAX_RUNGS = 16
MAX_CLASSES = 64
MAX_MODES = 32
#: The longest failure-mode name.
MAX_NAME = 64
#: Values of ``sampling.select``.
SELECT_MODES = ("vote", "verifier")
#: Outcome values of ``[utility]``, in the order the engines report the outcomes.
UTILITY_OUTCOMES = ("success", "silent_failure", "detected_failure", "infra_failure", "timeout")

_E = ScenarioError
PerStepFloat = float | tuple[float, ...]


def _set(obj: Any, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)  # normalising a frozen dataclass in __post_init__


def _probabilities(value: Any, key: str) -> Any:
    return checks.per_step(value, key, lambda v, k: checks.probability(v, k, _E), None, _E)


def _nonnegatives(value: Any, key: str) -> Any:
    return checks.per_step(value, key, lambda v, k: checks.nonnegative(v, k, _E), None, _E)


def _rungs(value: Any, key: str, each: Any) -> tuple[Any, ...]:
    """A list with one entry per rung (1..K), each a number or a per-step list."""
    if not isinstance(value, (list, tuple)) or not value:
        raise _E(f"{key}: must be a list with one entry per rung (numbers or per-step lists), got {show(value)}")
    return tuple(each(v, f"{key}[{k}]") for k, v in enumerate(value))


def _finite(value: Any, key: str) -> float:
    value = checks.number(value, key, "a finite number", _E)
    if not math.isfinite(value):
        raise _E(f"{key}: must be a finite number, got {show(value)}")
    return value


# ----------------------------------------------------------------------------- the tables
@dataclass(frozen=True)
class TaskClass:
    """One kind of task in a mixture: drawn once per trial with probability ``weight``
    (normalised over the classes); its ``p`` replaces the scenario's on rung 0 and its
    ``escalation_p`` (optional, one entry per rung) replaces the ladder's."""

    weight: float
    p: PerStepFloat
    escalation_p: tuple[PerStepFloat, ...] | None = None

    def __post_init__(self) -> None:
        weight = checks.in_range(
            self.weight, "classes.weight", 0.0, math.inf, low_open=True,
            allowed="a finite number > 0", error=_E,
        )
        if not math.isfinite(weight):
            raise _E(f"classes.weight: must be a finite number > 0, got {show(self.weight)}")
        _set(self, "weight", weight)
        _set(self, "p", _probabilities(self.p, "classes.p"))
        if self.escalation_p is not None:
            _set(self, "escalation_p", _rungs(self.escalation_p, "classes.escalation_p", _probabilities))


@dataclass(frozen=True)
class Escalation:
    """A ladder of models inside one step execution: rung ``k`` (1-based) serves from the
    ``after[k-1] + 1``-th attempt of an execution on, with success ``p[k-1]`` and cost
    ``attempt_cost[k-1]`` per attempt (default: rung 0's ``cost.attempt``)."""

    after: tuple[int, ...]
    p: tuple[PerStepFloat, ...]
    attempt_cost: tuple[PerStepFloat, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.after, (list, tuple)) or not self.after:
            raise _E(f"escalation.after: must be a non-empty list of attempt counts >= 1, got {show(self.after)}")
        if len(self.after) > MAX_RUNGS:
            raise _E(f"escalation.after: must have at most {MAX_RUNGS} rungs, got {len(self.after)}")
        after = tuple(checks.integer(a, "escalation.after", 1, 10_000, error=_E) for a in self.after)
        if any(b <= a for a, b in zip(after, after[1:])):
            raise _E(f"escalation.after: must be strictly increasing, got {list(after)}")
        _set(self, "after", after)
        _set(self, "p", _rungs(self.p, "escalation.p", _probabilities))
        if len(self.p) != len(after):
            raise _E(f"escalation.p: must have one entry per rung ({len(after)}, as after), got {len(self.p)}")
        if self.attempt_cost is not None:
            _set(self, "attempt_cost", _rungs(self.attempt_cost, "escalation.attempt_cost", _nonnegatives))
            if len(self.attempt_cost) != len(after):
                raise _E(
                    f"escalation.attempt_cost: must have one entry per rung ({len(after)}, as after), "
                    f"got {len(self.attempt_cost)}"
                )

    @property
    def rungs(self) -> int:
        return len(self.after)


@dataclass(frozen=True)
class Sampling:
    """Every attempt draws ``n`` samples at once. ``select = "vote"``: a plurality vote, the
    verifier (if any) checks the winner once; wrong samples pick among ``wrong_answers``
    distinct wrong answers (``"distinct"``: every wrong sample differs). ``select =
    "verifier"``: the verifier checks the samples in order, the first accepted one is the
    attempt's result."""

    n: int = 1
    select: str = "vote"
    wrong_answers: int | str | None = None  # None: 1 (read only with select = "vote")

    def __post_init__(self) -> None:
        _set(self, "n", checks.integer(self.n, "sampling.n", 1, MAX_SAMPLES, error=_E))
        checks.choice(self.select, "sampling.select", SELECT_MODES, _E)
        w = self.wrong_answers
        if w is None:
            return
        if self.select != "vote":
            raise _E("sampling.wrong_answers: is read only with select = \"vote\"; leave it out")
        if w != "distinct":
            if isinstance(w, str):
                raise _E(f"sampling.wrong_answers: must be an integer >= 1 or \"distinct\", got {show(w)}")
            _set(self, "wrong_answers", checks.integer(w, "sampling.wrong_answers", 1, 10**6, error=_E))

    @property
    def distinct(self) -> bool:
        """Every wrong sample gives its own answer."""
        return self.wrong_answers == "distinct"

    @property
    def answers(self) -> int:
        """Distinct wrong answers (0 for ``"distinct"``; 1 when not given)."""
        w = self.wrong_answers
        return 0 if w == "distinct" else 1 if w is None else int(w)


@dataclass(frozen=True)
class FailureMode:
    """A kind of wrong result: ``share`` of wrong results, accepted by the verifier with
    ``miss``, caught by a checkpoint with ``detect`` (default ``checkpoints.detect``)."""

    name: str
    share: float
    miss: float | None = None
    detect: float | None = None

    def __post_init__(self) -> None:
        checks.text(self.name, "failure_modes.name", MAX_NAME, _E)
        if not self.name.strip():
            raise _E("failure_modes.name: must be a non-empty name")
        _set(self, "share", checks.in_range(
            self.share, "failure_modes.share", 0.0, 1.0, low_open=True,
            allowed="a number in (0, 1]", error=_E,
        ))
        if self.miss is not None:
            _set(self, "miss", checks.probability(self.miss, "failure_modes.miss", _E))
        if self.detect is not None:
            _set(self, "detect", checks.probability(self.detect, "failure_modes.detect", _E))


@dataclass(frozen=True)
class Faults:
    """Attempts lost to the environment (a sandbox that dies, an API error): no answer, no
    verification; a trial whose budget runs out on a fault ends as ``infra_failure``."""

    attempt: float = 0.0

    def __post_init__(self) -> None:
        _set(self, "attempt", checks.probability(self.attempt, "faults.attempt", _E))


@dataclass(frozen=True)
class Utility:
    """The value of each outcome and the price of cost:
    ``utility = sum(share x value) - cost_weight x expected_cost``."""

    success: float = 1.0
    silent_failure: float = 0.0
    detected_failure: float = 0.0
    infra_failure: float = 0.0
    timeout: float = 0.0
    cost_weight: float = 0.0

    def __post_init__(self) -> None:
        for key in UTILITY_OUTCOMES:
            _set(self, key, _finite(getattr(self, key), f"utility.{key}"))
        _set(self, "cost_weight", checks.nonnegative(self.cost_weight, "utility.cost_weight", _E))

    @property
    def values(self) -> tuple[float, ...]:
        """The outcome values in :data:`UTILITY_OUTCOMES` order."""
        return tuple(getattr(self, key) for key in UTILITY_OUTCOMES)
