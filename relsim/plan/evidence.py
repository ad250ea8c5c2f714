"""What measurement gives a plan: a grader audit and a task-difficulty fit, read from their JSON.

Two files carry what a team measured into a scenario:

* an **audit** (``relsim audit LABELS --json``, Python ``GraderAudit.to_dict()``): the
  grader's ``miss`` (P(pass | wrong)) and ``false_reject`` (P(fail | right)), each with its
  ``estimate``, its 95% interval ``ci`` and its ``effective`` number of labels (the labels
  over the design effect when they cluster by task);
* a **fit** (``relsim fit TRIALS --json``, Python ``DifficultyFit.to_dict()``): the
  distribution of per-task success over the harness's tasks, tasks that ``always`` pass,
  tasks that ``never`` do and a Beta (``beta``: ``weight``, ``alpha``, ``beta``) for the rest,
  with bootstrap refits over tasks (``draws``).

:func:`read_audit` and :func:`read_fit` read them (a path, a mapping, or an object with
``to_dict()``), each refusal one line naming the file and the key. :func:`with_audit` sets a
scenario's verifier from an audit at one end of its intervals (:func:`verifier_at`: by default
the upper end of both error rates, the grader we may really have); :func:`with_fit` sets its
task classes from a fit (:func:`classes_from_fit`). :mod:`relsim.plan.uncertainty` draws
plausible worlds from both.

A fit's classes read **one harness task as one step and one trial as one attempt** (a retry
reruns the task), so :func:`with_fit` needs a one-step scenario: the harness measured the
success of a whole task, and no split of it over several steps follows from the data.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from relsim import checks
from relsim.errors import RelsimError, invalid, show
from relsim.scenario import Scenario, Verifier, as_scenario
from relsim.scenario.design_tables import TaskClass

__all__ = [
    "BOUNDS",
    "QUADRATURE_NODES",
    "AuditRates",
    "Difficulty",
    "DifficultyFit",
    "Rate",
    "at_words",
    "classes_from_fit",
    "read_audit",
    "read_fit",
    "verifier_at",
    "with_audit",
    "with_fit",
]

#: Where on an audit's intervals a plan sets the verifier (``at``).
BOUNDS = ("upper", "estimate", "lower")
#: Gauss-Jacobi nodes of a fit's Beta: the mixture's success is the Beta integral exactly for
#: one-step budgets up to ``2 * QUADRATURE_NODES - 2`` retries (a polynomial of degree r + 1
#: in p), to quadrature accuracy beyond.
QUADRATURE_NODES = 16
#: The largest evidence file read (a fit with thousands of bootstrap draws is well under it).
MAX_FILE_BYTES = 16 * 2**20
#: A fit's weights (always + never + beta) must sum to 1 within this (a file may round them).
WEIGHT_TOLERANCE = 1e-4


# ------------------------------------------------------------------------------ what is read
@dataclass(frozen=True)
class Rate:
    """One error rate of an audit: the point ``estimate``, its 95% interval ``ci`` (low,
    high) and the ``effective`` number of labels behind it."""

    estimate: float
    ci: tuple[float, float]
    effective: float

    def at(self, bound: str) -> float:
        """The rate at ``bound`` (one of :data:`BOUNDS`)."""
        return {"upper": self.ci[1], "estimate": self.estimate, "lower": self.ci[0]}[bound]


@dataclass(frozen=True)
class AuditRates:
    """What a plan reads of a grader audit: its ``miss`` and ``false_reject``, and the file
    they came from (``source``, for messages; empty when built in Python)."""

    miss: Rate
    false_reject: Rate
    source: str = ""


@dataclass(frozen=True)
class Difficulty:
    """One task-difficulty distribution: shares of tasks that ``always`` pass and ``never``
    do, and a Beta(``alpha``, ``beta``) of per-attempt success for the rest (``beta_weight``;
    ``alpha`` and ``beta`` are None when it is 0). The weights sum to 1."""

    always: float
    never: float
    beta_weight: float
    alpha: float | None = None
    beta: float | None = None

    def describe(self) -> str:
        """``always 0.2, never 0.1, Beta(1.8, 1.2) on 0.7`` (what a plan's output says)."""
        text = f"always {self.always:.4g}, never {self.never:.4g}"
        if self.beta_weight > 0:
            text += f", Beta({self.alpha:.4g}, {self.beta:.4g}) on {self.beta_weight:.4g}"
        return text


@dataclass(frozen=True)
class DifficultyFit:
    """What a plan reads of a task-difficulty fit: the fitted distribution (``point``), its
    bootstrap refits over tasks (``draws``, possibly empty) and the file (``source``)."""

    point: Difficulty
    draws: tuple[Difficulty, ...] = ()
    source: str = ""


# ----------------------------------------------------------------------------------- reading
def read_audit(audit: Any) -> AuditRates:
    """The error rates of a grader audit: a path to its JSON (``relsim audit --json``), the
    parsed mapping, an object with ``to_dict()`` or an :class:`AuditRates` (as it is).

    Reads ``miss`` and ``false_reject``, each ``{"estimate", "ci": [low, high],
    "effective"}`` (other keys are left alone). Raises :class:`~relsim.errors.RelsimError`
    naming the file and the key: ``audit.json: miss.ci: must be ...``.
    """
    if isinstance(audit, AuditRates):
        return audit
    data, source = _mapping(audit, "audit")
    where = _Where(source)
    _kind(data, "audit", "a grader audit (the to_dict() of relsim.evalstats.audit, or its JSON)",
          ("miss", "false_reject"), where)
    rates = [_rate(data, name, where) for name in ("miss", "false_reject")]
    return AuditRates(miss=rates[0], false_reject=rates[1], source=source)


def read_fit(fit: Any) -> DifficultyFit:
    """The task-difficulty distribution of a fit: a path to its JSON (``relsim fit --json``),
    the parsed mapping, an object with ``to_dict()`` or a :class:`DifficultyFit`.

    Reads ``always``, ``never``, ``beta`` (``{"weight", "alpha", "beta"}`` or null) and
    ``draws`` (a list of ``{"always", "never", "beta_weight", "alpha", "beta"}``; may be
    missing, when only the point fit is used). The weights must sum to 1 (within 1e-4).
    Raises :class:`~relsim.errors.RelsimError` naming the file and the key.
    """
    if isinstance(fit, DifficultyFit):
        return fit
    data, source = _mapping(fit, "fit")
    where = _Where(source)
    _kind(data, "fit", "a task-difficulty fit (the to_dict() of relsim.evalstats.fit_difficulty, "
          "or its JSON)", ("always", "never", "beta"), where)
    beta = data.get("beta")
    if beta is None:
        beta_weight, alpha, beta_b = 0.0, None, None
    else:
        if not isinstance(beta, Mapping):
            where.fail("beta", "an object with weight, alpha and beta, or null", beta)
        beta_weight = where.number(beta, "weight", "beta.weight", "a number in [0, 1]", 0.0, 1.0)
        alpha, beta_b = beta.get("alpha"), beta.get("beta")
    point = _difficulty(
        where, "", data.get("always", _MISSING), data.get("never", _MISSING), beta_weight,
        alpha, beta_b, ("always", "never", "beta.weight", "beta.alpha", "beta.beta"),
    )
    draws_data = data.get("draws", [])
    if not isinstance(draws_data, list):
        where.fail("draws", "a list of bootstrap draws", draws_data)
    draws = []
    for i, draw in enumerate(draws_data):
        prefix = f"draws[{i}]."
        if not isinstance(draw, Mapping):
            where.fail(f"draws[{i}]", "an object with always, never, beta_weight, alpha, beta", draw)
        draws.append(_difficulty(
            where, prefix, draw.get("always", _MISSING), draw.get("never", _MISSING),
            draw.get("beta_weight", _MISSING), draw.get("alpha"), draw.get("beta"),
            ("always", "never", "beta_weight", "alpha", "beta"),
        ))
    return DifficultyFit(point=point, draws=tuple(draws), source=source)


# ---------------------------------------------------------------------------- into a scenario
def verifier_at(audit: Any, at: str = "upper") -> tuple[float, float]:
    """``(miss, false_reject)`` of an audit at ``at``: ``"upper"`` (the default: the upper
    end of each 95% interval, the worst grader the audit leaves plausible, so the plan holds
    for the grader we may really have), ``"estimate"`` or ``"lower"``.

    Examples
    --------
    >>> audit = {"miss": {"estimate": 0.12, "ci": [0.06, 0.21], "effective": 60},
    ...          "false_reject": {"estimate": 0.03, "ci": [0.01, 0.08], "effective": 140}}
    >>> verifier_at(audit)
    (0.21, 0.08)
    >>> verifier_at(audit, "estimate")
    (0.12, 0.03)
    """
    rates = read_audit(audit)
    checks.choice(at, "at", BOUNDS)
    return rates.miss.at(at), rates.false_reject.at(at)


def at_words(at: str) -> str:
    """``"at the upper 95% bound"``, ``"at the estimate"``: how the output names ``at``."""
    return "at the estimate" if at == "estimate" else f"at the {at} 95% bound"


def with_audit(scenario: Scenario | Mapping[str, Any], audit: Any, at: str = "upper") -> Scenario:
    """``scenario`` with its ``[verifier]`` set from ``audit`` at ``at`` (:func:`verifier_at`):
    one ``miss`` and one ``false_reject`` for every step (the audit measured one grader); a
    scenario without a verifier gets one. A scenario with ``[[failure_modes]]`` is refused:
    each mode has its own ``miss``, which one audited rate cannot set.

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 1, "p": 0.7, "verifier": {"miss": 0.0}})
    >>> audit = {"miss": {"estimate": 0.12, "ci": [0.06, 0.21], "effective": 60},
    ...          "false_reject": {"estimate": 0.03, "ci": [0.01, 0.08], "effective": 140}}
    >>> with_audit(s, audit).verifier
    Verifier(miss=0.21, false_reject=0.08)
    """
    scenario = as_scenario(scenario)
    rates = read_audit(audit)
    refuse_failure_modes(scenario, rates)
    miss, false_reject = verifier_at(rates, at)
    return replace(scenario, verifier=Verifier(miss=miss, false_reject=false_reject))


def refuse_failure_modes(scenario: Scenario, audit: AuditRates) -> None:
    """An audit sets one ``miss``; a scenario whose failure modes each have their own is
    refused, naming the audit."""
    if scenario.failure_modes:
        names = ", ".join(mode.name for mode in scenario.failure_modes)
        measured = audit.source or "an audit"
        raise RelsimError(
            f"failure_modes: must be left out to set the verifier from an audit ({measured} "
            f"measures one miss; the modes {names} each have their own), got "
            f"{len(scenario.failure_modes)} modes"
        )


def with_fit(scenario: Scenario | Mapping[str, Any], fit: Any) -> Scenario:
    """``scenario`` with its ``[[classes]]`` replaced by the fit's point estimate
    (:func:`classes_from_fit`). The scenario must have one step: one harness task is one step
    and one trial one attempt (a retry reruns the task).

    Examples
    --------
    >>> s = Scenario.from_dict({"steps": 1, "p": 0.7, "verifier": {"miss": 0.1}})
    >>> fit = {"always": 0.5, "never": 0.5, "beta": None}
    >>> [(c.weight, c.p) for c in with_fit(s, fit).classes]
    [(0.5, 1.0), (0.5, 0.0)]
    """
    scenario = as_scenario(scenario)
    fitted = read_fit(fit)
    check_one_step(scenario, fitted)
    return replace(scenario, classes=classes_from_fit(fitted.point))


def check_one_step(scenario: Scenario, fit: DifficultyFit) -> None:
    """A fit's classes are per task: refuse a scenario of several steps."""
    if scenario.steps != 1:
        raise invalid(
            "steps", f"1 to take the task difficulty from a fit{_from(fit.source)} (one "
            "harness task is one step and one trial one attempt; the fit says nothing of how "
            "a task's success splits over steps)", scenario.steps,
        )


def classes_from_fit(fit: Any, nodes: int = QUADRATURE_NODES) -> tuple[TaskClass, ...]:
    r"""The ``[[classes]]`` of a task-difficulty distribution: ``p = 1`` with weight
    ``always``, ``p = 0`` with weight ``never`` (each left out at weight 0) and the Beta as
    ``nodes`` Gauss-Jacobi nodes, each a class of its node's ``p`` and weight ``beta_weight``
    times its quadrature weight.

    With :math:`p = (1 + x)/2`, the Beta density :math:`\propto p^{\alpha-1}(1-p)^{\beta-1}` is
    the Jacobi weight :math:`(1-x)^{\beta-1}(1+x)^{\alpha-1}`, so ``n`` nodes integrate every
    polynomial in ``p`` of degree up to ``2n - 1`` exactly: a one-step scenario's success at
    ``r`` retries is such a polynomial of degree ``r + 1``. A Beta so narrow that the
    quadrature's scale overflows (``alpha + beta`` in the many thousands, far from 1/2) is
    taken as a normal of its mean and variance (Gauss-Hermite nodes, clipped to [0, 1]).

    ``fit`` is a :class:`Difficulty`, a fit (its point estimate) or what :func:`read_fit`
    reads. Nodes whose weight underflows to 0 are left out.

    Examples
    --------
    >>> classes = classes_from_fit(Difficulty(0.2, 0.1, 0.7, 2.0, 3.0), nodes=4)
    >>> len(classes), round(sum(c.weight * c.p for c in classes), 12)  # 0.2 + 0.7 * 2/5
    (6, 0.48)
    """
    difficulty = fit if isinstance(fit, Difficulty) else read_fit(fit).point
    nodes = checks.integer(nodes, "nodes", 1, 64 - 2)
    classes = []
    if difficulty.always > 0:
        classes.append(TaskClass(weight=difficulty.always, p=1.0))
    if difficulty.never > 0:
        classes.append(TaskClass(weight=difficulty.never, p=0.0))
    if difficulty.beta_weight > 0:
        assert difficulty.alpha is not None and difficulty.beta is not None  # read_fit checks
        for p, weight in zip(*_beta_nodes(difficulty.alpha, difficulty.beta, nodes)):
            if difficulty.beta_weight * weight > 0:
                classes.append(TaskClass(weight=difficulty.beta_weight * weight, p=p))
    return tuple(classes)


def _beta_nodes(alpha: float, beta: float, nodes: int) -> tuple[list[float], list[float]]:
    """Nodes ``p`` in [0, 1] and weights (summing to 1) of the Beta(alpha, beta)."""
    import numpy as np
    from scipy.special import roots_hermitenorm, roots_jacobi

    with np.errstate(all="ignore"):  # the scale mu0 may overflow: then the fallback below
        x, w = roots_jacobi(nodes, beta - 1.0, alpha - 1.0)
        total = float(np.sum(w))
    if math.isfinite(total) and total > 0 and np.all(np.isfinite(w)):
        p = np.clip((1.0 + x) / 2.0, 0.0, 1.0)
        return [float(v) for v in p], [float(v) for v in w / total]
    mean = alpha / (alpha + beta)
    sd = math.sqrt(alpha * beta / ((alpha + beta) ** 2 * (alpha + beta + 1.0)))
    z, w = roots_hermitenorm(nodes)
    p = np.clip(mean + sd * z, 0.0, 1.0)
    return [float(v) for v in p], [float(v) for v in w / np.sum(w)]


# ------------------------------------------------------------------------------ the plumbing
_MISSING = object()


class _Where:
    """Raises the one error, prefixed by the file it read."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, allowed: str, value: Any) -> None:
        got = "no such key" if value is _MISSING else show(value)
        prefix = f"{self.source}: " if self.source else ""
        raise RelsimError(f"{prefix}{key}: must be {allowed}, got {got}")

    def number(
        self, data: Mapping[str, Any], name: str, key: str, allowed: str,
        low: float = -math.inf, high: float = math.inf, low_open: bool = False,
    ) -> float:
        return self.check(data.get(name, _MISSING), key, allowed, low, high, low_open)

    def check(
        self, value: Any, key: str, allowed: str, low: float = -math.inf, high: float = math.inf,
        low_open: bool = False,
    ) -> float:
        if value is _MISSING:
            self.fail(key, allowed, value)
        try:
            return checks.in_range(value, key, low, high, low_open=low_open, allowed=allowed)
        except RelsimError:
            self.fail(key, allowed, value)
            raise  # pragma: no cover - fail raises


def _rate(data: Mapping[str, Any], name: str, where: _Where) -> Rate:
    entry = data.get(name, _MISSING)
    if not isinstance(entry, Mapping):
        where.fail(name, "an object with estimate, ci and effective", entry)
    unit = "a number in [0, 1]"
    estimate = where.number(entry, "estimate", f"{name}.estimate", unit, 0.0, 1.0)
    ci = entry.get("ci", _MISSING)
    pair = "a list [low, high] of numbers in [0, 1], low <= high"
    if not isinstance(ci, (list, tuple)) or len(ci) != 2:
        where.fail(f"{name}.ci", pair, ci)
    low = where.check(ci[0], f"{name}.ci", pair, 0.0, 1.0)
    high = where.check(ci[1], f"{name}.ci", pair, 0.0, 1.0)
    if low > high:
        where.fail(f"{name}.ci", pair, ci)
    effective = where.number(
        entry, "effective", f"{name}.effective", "a finite number > 0", 0.0, math.inf, low_open=True
    )
    return Rate(estimate=estimate, ci=(low, high), effective=effective)


def _difficulty(
    where: _Where, prefix: str, always: Any, never: Any, beta_weight: Any, alpha: Any, beta: Any,
    keys: tuple[str, str, str, str, str],
) -> Difficulty:
    unit = "a number in [0, 1]"
    always = where.check(always, prefix + keys[0], unit, 0.0, 1.0)
    never = where.check(never, prefix + keys[1], unit, 0.0, 1.0)
    beta_weight = where.check(beta_weight, prefix + keys[2], unit, 0.0, 1.0)
    total = always + never + beta_weight
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        where.fail(f"{prefix}{keys[0]} + {keys[1]} + {keys[2]}", "1 (the weights of every task)",
                   round(total, 9))
    if beta_weight > 0:
        positive = "a finite number > 0"
        alpha = where.check(_given(alpha), prefix + keys[3], positive, 0.0, math.inf, True)
        beta = where.check(_given(beta), prefix + keys[4], positive, 0.0, math.inf, True)
    else:
        alpha = beta = None
    return Difficulty(always=always / total, never=never / total, beta_weight=beta_weight / total,
                      alpha=alpha, beta=beta)


def _given(value: Any) -> Any:
    return _MISSING if value is None else value


def _from(source: str) -> str:
    return f" ({source})" if source else ""


def _article(what: str) -> str:
    """``an audit``, ``a fit``."""
    return f"{'an' if what[:1] in 'aeiou' else 'a'} {what}"


def _kind(data: Mapping[str, Any], what: str, kind: str, keys: tuple[str, ...], where: "_Where") -> None:
    """Refuse a mapping that holds none of ``keys``: another kind of JSON (a fit given as an
    audit, an audit as a fit), which is better said so than as its first missing key."""
    if not any(key in data for key in keys):
        found = ", ".join(map(str, list(data)[:8])) or "none"
        prefix = f"{where.source}: " if where.source else ""
        named = f"{', '.join(keys[:-1])} and {keys[-1]}"
        raise RelsimError(f"{prefix}{what}: must be {kind} with keys {named}, got keys {found}")


def _mapping(value: Any, what: str) -> tuple[Mapping[str, Any], str]:
    """The mapping behind ``value`` and the file it came from ('' when none)."""
    if isinstance(value, (str, os.PathLike)):
        if not os.fspath(value):  # Path("") is the current folder
            raise invalid(what, f"the name of {_article(what)} JSON file, a mapping or an object "
                          "with to_dict()", value)
        return _read_json(Path(value), what), str(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, Mapping):
        value = to_dict()
    if not isinstance(value, Mapping):
        raise invalid(what, f"a path to {what} JSON, a mapping or an object with to_dict()",
                      type(value).__name__)
    return value, ""


def _read_json(path: Path, what: str) -> Mapping[str, Any]:
    """The JSON object in ``path``; every refusal one line naming the file."""
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        raise RelsimError(f"{path}: cannot read: {err.strerror or err}") from None
    if not stat.S_ISREG(mode):
        raise RelsimError(f"{path}: cannot read: not a regular file ({_article(what)} JSON file)")
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise RelsimError(f"{path}: cannot read: {err.strerror or err}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise RelsimError(f"{path}: must be {_article(what)} JSON file of at most "
                          f"{MAX_FILE_BYTES // 2**20} MiB, got a larger file")
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=checks.unique_keys)
    except checks.RepeatedKey as err:  # json keeps the last value silently
        raise RelsimError(f"{path}: {err.args[0]}: must be given once in an object, "
                          "got it twice") from None
    except UnicodeDecodeError as err:
        raise RelsimError(f"{path}: not UTF-8 text (byte at offset {err.start})") from None
    except (ValueError, RecursionError) as err:
        raise RelsimError(f"{path}: not JSON: {err}") from None
    if not isinstance(data, Mapping):
        raise RelsimError(f"{path}: must be a JSON object (what 'relsim {what}' prints as "
                          f"JSON), got {type(data).__name__}")
    return data
