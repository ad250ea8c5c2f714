r"""``audit``: how often a grader errs, measured on labelled verdicts, and the pass rate it
judged, corrected for those errors.

A grader (a test suite, an LLM judge, a reviewer) gives each answer a **verdict** (1: pass);
a labelled set also holds the **label**, the truth (1: the answer is right). Its two error
rates are those of the scenario's verifier (docs/model.md section 3):

- ``miss`` :math:`= P(\text{pass} \mid \text{wrong})`, estimated by the share of wrong answers
  that passed, and
- ``false_reject`` :math:`= P(\text{fail} \mid \text{right})`, the share of right answers that
  failed;

:math:`q_0 = 1 - \text{miss}` (specificity) and :math:`q_1 = 1 - \text{false\_reject}`
(sensitivity). Their 95% intervals:

- **Clopper-Pearson** (exact) when every task carries one label: the :math:`0.025` and
  :math:`0.975` quantiles of :math:`\mathrm{Beta}(k, n-k+1)` and :math:`\mathrm{Beta}(k+1,
  n-k)`, :math:`k` of :math:`n` (0 below at :math:`k = 0`, 1 above at :math:`k = n`);
- a **cluster bootstrap over tasks** when a task carries several labels (they are not
  independent draws): the tasks are resampled with replacement (``replicates`` times, from
  ``numpy.random.default_rng(seed)``) and each replicate's rate is its total count over its
  total labels of the class; the interval is the BCa (default) or percentile interval of the
  replicates, widened where needed to hold the exact interval of the **effective count**, so
  that a rate of 0 (no miss seen) never gets :math:`[0, 0]`. The effective count is
  :math:`n / \max(1, D)` with :math:`D` the design effect: the clustered variance of the
  ratio (Cochran's linearisation, :math:`\frac{T}{T-1}\sum_i (k_i - \hat r n_i)^2 / n^2` over
  the :math:`T` tasks) over the binomial one, :math:`\hat r(1-\hat r)/n`. Where fewer than
  two tasks hold labels of the class, no resampling can show how tasks vary: the effective
  count is 1. The exact interval of a real count :math:`x = \hat r n^*` in :math:`n^*` takes
  the same Beta quantiles.

``effective`` is the number of independent labels the rate is worth (:math:`n` without
clustering); a plan under uncertainty draws plausible rates from
:math:`\mathrm{Beta}(n^*\hat r + 1/2, n^*(1-\hat r) + 1/2)`.

With **judged** verdicts (verdicts on answers nobody labelled, drawn from the same tasks'
population):

- ``pass_rate``, the judged pass rate :math:`p`, with the interval above (clustered by task
  when tasks repeat);
- ``corrected``, the pass rate corrected for the grader's errors (Rogan and Gladen 1978; the
  LLM-as-a-judge form of Lee et al. 2025, "How to correctly report LLM-as-a-judge
  evaluations"):

  .. math::

      \hat\theta = \frac{p + q_0 - 1}{q_0 + q_1 - 1}

  cut to [0, 1], with a **delta-method** interval that carries the uncertainty of both
  samples: :math:`\hat\theta \pm z \sqrt V`,

  .. math::

      V = \frac{V_p + (1-\hat\theta)^2 V_{q_0} + \hat\theta^2 V_{q_1}
          - 2\hat\theta(1-\hat\theta)\,C_{q_0 q_1}}{(q_0 + q_1 - 1)^2}

  where each variance is binomial on the rate's effective count at the Agresti-Coull
  adjusted proportion :math:`\tilde r = (n^*\hat r + z^2/2) / (n^* + z^2)`, :math:`V =
  \tilde r(1-\tilde r)/(n^* + z^2)` (so a rate seen at 0 still carries its uncertainty), and
  :math:`C_{q_0 q_1}` is their covariance: 0 when each task carries one label, else the
  correlation of the two rates' linearised per-task contributions (a task that a grader
  judges harshly moves both). The interval is cut to [0, 1]. When the grader is **no better
  than chance** (:math:`q_0 + q_1 \le 1`, i.e. miss + false_reject >= 1) its verdicts carry
  no information on the pass rate: ``corrected`` is None and ``reason`` says why. Lee et al.'s
  example: :math:`p = 0.4`, :math:`q_0 = 0.7`, :math:`q_1 = 0.9` give :math:`0.1/0.6 =
  0.1667`.
- ``ppi``, the prediction-powered mean of the true pass rate (PPI++, Angelopoulos, Duchi and
  Zrnic 2023): the labelled pairs' label :math:`Y` and verdict :math:`\hat Y`, and the judged
  verdicts :math:`\hat Y^u`, give

  .. math::

      \hat\theta_\lambda = \lambda\,\overline{\hat Y^u} + \overline{Y - \lambda \hat Y},
      \qquad \hat\lambda = \frac{\widehat{\mathrm{Cov}}(Y, \hat Y)}
                                {(1 + n/N)\,\widehat{\mathrm{Var}}(\hat Y \cup \hat Y^u)}
      \text{ cut to } [0, 1],

  with the z interval of :math:`\lambda^2 \mathrm{Var}(\overline{\hat Y^u}) +
  \mathrm{Var}(\overline{Y - \lambda\hat Y})`: exactly ``ppi_py``'s ``ppi_mean_pointestimate``
  and ``ppi_mean_ci`` (``tests/test_audit.py`` holds them together), but that the interval
  and estimate are cut to [0, 1], :math:`\hat\lambda = 0` when no verdict differs from
  another (where ``ppi_py`` gives NaN), and each variance of a mean is clustered by task,
  :math:`\frac{1}{n^2}\sum_t \bigl(\sum_{i \in t}(x_i - \bar x)\bigr)^2`, which is
  ``ppi_py``'s :math:`\mathrm{sd}(x)^2/n` when every task carries one row. Unlike the
  correction, PPI assumes the labelled answers are a random sample of the judged ones'
  population (the same mix of right and wrong); the correction assumes only that the
  grader's error rates carry over.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from relsim import intervals
from relsim._running import check_seed
from relsim.errors import invalid
from relsim.evalstats._common import TrialDataError, is_count, task_sums
from relsim.evalstats._verdicts import Verdicts, is_inspect_log, read_verdicts
from relsim.evalstats.bootstrap import (
    DEFAULT_REPLICATES,
    MIN_REPLICATES,
    check_work,
    cluster_bootstrap,
)
from relsim.results import jsonable, one_row

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["AUDIT_INTERVALS", "GraderAudit", "audit"]

#: The cluster bootstrap's intervals of an audit: bias-corrected and accelerated, or percentile.
AUDIT_INTERVALS = ("bca", "percentile")
#: The confidence of every interval of an audit.
CONFIDENCE = 0.95
_Z = intervals.Z95


@dataclass(frozen=True)
class GraderAudit:
    """A grader's error rates measured on labelled verdicts, and what it judged, corrected.

    Attributes
    ----------
    labels : int
        Labelled verdicts read.
    tasks : int or None
        Distinct tasks among them; None when the input names no task (each row its own).
    clustered : bool
        Some task carries several labels: the intervals come from the cluster bootstrap.
    interval : str
        ``"clopper-pearson"`` or ``"cluster bootstrap"``.
    miss, false_reject : dict
        ``{"estimate", "ci", "count", "of", "effective"}``: the rate, its 95% interval, the
        wrong answers that passed (right answers that failed), of how many wrong (right)
        answers, and the effective number of labels behind the rate.
    better_than_chance : bool
        ``miss + false_reject < 1`` (:math:`q_0 + q_1 > 1`).
    judged : dict or None
        With judged verdicts: ``{"verdicts", "tasks", "pass_rate", "corrected", "reason",
        "interval", "ppi"}`` (see :func:`audit`).
    bootstrap : dict or None
        ``{"method", "replicates", "seed"}`` when a cluster bootstrap drew, else None.
    source, judged_source : str
        The inputs' names (a path, or ``labels`` / ``judged`` for a DataFrame).
    """

    labels: int
    tasks: int | None
    clustered: bool
    interval: str
    miss: dict[str, Any]
    false_reject: dict[str, Any]
    better_than_chance: bool
    judged: dict[str, Any] | None = None
    bootstrap: dict[str, Any] | None = None
    source: str = "labels"
    judged_source: str | None = None

    def _record(self) -> dict[str, Any]:
        return {
            "labels": self.labels,
            "tasks": self.tasks,
            "clustered": self.clustered,
            "interval": self.interval,
            "miss": dict(self.miss),
            "false_reject": dict(self.false_reject),
            "better_than_chance": self.better_than_chance,
            "judged": None if self.judged is None else dict(self.judged),
            "bootstrap": self.bootstrap,
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``relsim audit --json`` (intervals as ``[low, high]`` lists)::

            {"labels", "tasks", "clustered", "interval",
             "miss": {"estimate", "ci", "count", "of", "effective"},
             "false_reject": {...the same...}, "better_than_chance",
             "judged": null | {"verdicts", "tasks", "pass_rate": {"estimate", "ci"},
                               "corrected": {"estimate", "ci"} | null, "reason",
                               "interval": "delta method",
                               "ppi": {"estimate", "ci", "lambda"}},
             "bootstrap": null | {"method", "replicates", "seed"}}
        """
        return jsonable(self._record())

    def to_frame(self) -> pd.DataFrame:
        """One row of :meth:`to_dict`'s fields, flattened as every result is
        (:func:`relsim.results.flatten`: ``miss_estimate``, ``miss_ci_low``,
        ``judged_corrected_estimate``, ...)."""
        return one_row(self._record())


def audit(
    labels: str | Path | pd.DataFrame,
    judged: str | Path | pd.DataFrame | None = None,
    *,
    grader: str | None = None,
    truth: str | None = None,
    seed: int | np.random.SeedSequence | None = None,
    replicates: int = DEFAULT_REPLICATES,
    interval: str = "bca",
) -> GraderAudit:
    r"""Audit a grader on labelled verdicts: its miss and false-reject rates with 95%
    intervals and, with judged verdicts, the pass rate corrected for its errors.

    Parameters
    ----------
    labels : str, Path or pandas.DataFrame
        A CSV or JSONL file (or a DataFrame) with columns ``verdict`` (1: the grader passed
        the answer) and ``label`` (the truth, 1: the answer is right), each 0/1 or
        true/false, and an optional ``task`` (rows of one task are clustered); other
        columns are ignored. Or an Inspect eval log (a ``.eval`` or ``.json`` file, or a log
        directory) whose samples carry two scorers, the grader's (``grader``) and the
        truth's (``truth``); the sample id is the task. At least one right and one wrong
        answer are needed.
    judged : str, Path or pandas.DataFrame, optional
        Verdicts on answers with no label: a ``verdict`` column and an optional ``task``
        (or an Inspect log, whose ``grader`` scorer is the verdict).
    grader, truth : str, optional
        Inspect logs: the scorers that give the verdict and the truth (``C``/``I``,
        booleans or 0/1; ``N``, no answer, is a fail).
    seed : int >= 0, numpy.random.SeedSequence or None
        Seeds the cluster bootstrap (only drawn from when tasks repeat); None draws fresh
        entropy, recorded in ``bootstrap["seed"]``.
    replicates : int
        Cluster-bootstrap replicates, at least 100.
    interval : {"bca", "percentile"}
        The cluster bootstrap's interval.

    Returns
    -------
    GraderAudit
        See the module docstring for every formula: ``miss``, ``false_reject`` (exact
        Clopper-Pearson intervals, or the cluster bootstrap's), ``better_than_chance`` and,
        with ``judged``, ``judged`` = ``{"verdicts", "tasks", "pass_rate", "corrected",
        "reason", "interval", "ppi"}``: ``corrected`` is None (and ``reason`` says why) when
        the grader is no better than chance.

    Raises
    ------
    TrialDataError
        For a file that cannot be read, a missing column, a verdict or label that is not
        0/1 or true/false, an empty input, or labels without a right or without a wrong
        answer; the message names the file, the line and the column.
    RelsimError
        For ``grader`` given without an Inspect log, ``truth`` without labels in one (or
        either missing where needed), and
        bad ``seed``, ``replicates`` or ``interval``.

    Examples
    --------
    Ten wrong answers of which 3 passed and ten right ones of which 1 failed (miss 0.3,
    false_reject 0.1, so :math:`q_0 = 0.7` and :math:`q_1 = 0.9`), and 4 passes in 10 judged
    verdicts: Lee et al.'s example.

    >>> import pandas as pd
    >>> labels = pd.DataFrame({"label": [0] * 10 + [1] * 10,
    ...                        "verdict": [1] * 3 + [0] * 7 + [1] * 9 + [0]})
    >>> result = audit(labels, pd.DataFrame({"verdict": [1] * 4 + [0] * 6}))
    >>> result.miss["estimate"], result.false_reject["estimate"]
    (0.3, 0.1)
    >>> round(result.judged["corrected"]["estimate"], 4)
    0.1667
    """
    if interval not in AUDIT_INTERVALS:
        raise invalid("interval", f"one of {', '.join(AUDIT_INTERVALS)}", interval)
    if not is_count(replicates) or replicates < MIN_REPLICATES:
        raise invalid("replicates", f"an integer >= {MIN_REPLICATES}", replicates)
    seed_sequence, seed_value = check_seed(seed)
    logs = [is_inspect_log(labels), judged is not None and is_inspect_log(judged)]
    if grader is not None and not any(logs):
        raise invalid("grader", "given only with an Inspect eval log", grader)
    if truth is not None and not logs[0]:
        raise invalid("truth", "given only with labels in an Inspect eval log", truth)
    labelled = read_verdicts(labels, labelled=True, grader=grader, truth=truth)
    assert labelled.label is not None
    wrong, right = labelled.label == 0, labelled.label == 1
    if not (wrong.any() and right.any()):
        kind = "right (1)" if right.any() else "wrong (0)"
        raise TrialDataError(
            f"{labelled.source}: label: must hold both right (1) and wrong (0) answers, got "
            f"only {kind} ones ({labelled.rows} of {labelled.rows}): the "
            f"{'miss' if right.any() else 'false_reject'} rate needs answers of the other kind"
        )
    judged_verdicts = None
    if judged is not None:
        judged_verdicts = read_verdicts(judged, labelled=False, grader=grader, name="judged")
    drawn = labelled.clustered or (judged_verdicts is not None and judged_verdicts.clustered)
    if drawn:
        check_work(replicates, max(labelled.rows, judged_verdicts.rows if judged_verdicts
                                   else 0), 2)
    rng = np.random.default_rng(seed_sequence)
    settings = (rng, replicates, interval)
    passed = labelled.verdict == 1
    miss = _rate(labelled, passed & wrong, wrong, settings)
    false_reject = _rate(labelled, ~passed & right, right, settings)
    better = miss.estimate + false_reject.estimate < 1.0
    judged_record = None
    if judged_verdicts is not None:
        judged_record = _judged(labelled, judged_verdicts, miss, false_reject, better, settings)
    return GraderAudit(
        labels=labelled.rows,
        tasks=labelled.tasks,
        clustered=labelled.clustered,
        interval="cluster bootstrap" if labelled.clustered else "clopper-pearson",
        miss=miss.record(),
        false_reject=false_reject.record(),
        better_than_chance=bool(better),
        judged=judged_record,
        bootstrap=(
            {
                "method": interval,
                "replicates": replicates,
                # what reproduces the draws: the SeedSequence given (shown), else the integer
                # given or the entropy drawn for None
                "seed": str(seed) if isinstance(seed, np.random.SeedSequence) else seed_value,
            }
            if drawn
            else None
        ),
        source=labelled.source,
        judged_source=None if judged_verdicts is None else judged_verdicts.source,
    )


@dataclass(frozen=True)
class _Rate:
    """A rate ``count / of`` over the rows of one class, with its interval and what the
    corrected pass rate needs: the effective count and the per-task linearised
    contributions :math:`k_t - \\hat r n_t` (for the correlation of two rates)."""

    estimate: float
    ci: tuple[float, float]
    count: int
    of: int
    effective: float
    contributions: np.ndarray

    def record(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "ci": self.ci,
            "count": self.count,
            "of": self.of,
            "effective": self.effective,
        }


def _rate(
    verdicts: Verdicts, event: np.ndarray, member: np.ndarray, settings: tuple[Any, int, str]
) -> _Rate:
    """The share of ``member`` rows where ``event`` holds, with the interval of the module
    docstring (exact, or the cluster bootstrap's widened to the exact one of the effective
    count)."""
    count, of = int(np.count_nonzero(event)), int(np.count_nonzero(member))
    estimate = count / of
    tasks = int(verdicts.task.max()) + 1
    per_task = np.column_stack([
        task_sums(verdicts.task, tasks, event.astype(float)),
        task_sums(verdicts.task, tasks, member.astype(float)),
    ])
    contributions = per_task[:, 0] - estimate * per_task[:, 1]
    if not verdicts.clustered:
        return _Rate(estimate, exact_interval(count, of), count, of, float(of), contributions)
    holding = int(np.count_nonzero(per_task[:, 1]))
    if holding < 2:  # one task holds every row of the class: one independent draw
        effective = 1.0
        return _Rate(estimate, exact_interval(estimate, 1.0), count, of, effective,
                     contributions)
    variance = tasks / (tasks - 1) * float(np.sum(contributions**2)) / of**2
    binomial = estimate * (1.0 - estimate) / of
    design_effect = variance / binomial if binomial > 0 else 1.0
    effective = of / max(1.0, design_effect)
    rng, replicates, method = settings
    means = cluster_bootstrap(per_task, replicates, rng)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicate_rates = means[:, 0] / means[:, 1]  # NaN: a resample without the class
    if method == "percentile":
        low, high = intervals.percentile_interval(replicate_rates, CONFIDENCE)
    else:
        # the rate with each task left out (every such rate is defined: two tasks hold rows)
        left_out = (count - per_task[:, 0]) / (of - per_task[:, 1])
        low, high = intervals.bca_interval(replicate_rates, estimate, left_out, CONFIDENCE)
    # Korn and Graubard's degrees of freedom: the effective count shrinks by (z / t)^2, t on
    # one less than the tasks holding the class (as relsim.intervals.effective_count_interval)
    alpha = 1.0 - CONFIDENCE
    shrunk = effective * (_Z / float(intervals.t_quantile(alpha, holding - 1))) ** 2
    floor_low, floor_high = exact_interval(estimate * shrunk, shrunk)
    return _Rate(estimate, (min(low, floor_low), max(high, floor_high)), count, of,
                 float(effective), contributions)


def exact_interval(successes: float, trials: float) -> tuple[float, float]:
    r"""The exact (Clopper-Pearson) 95% interval of ``successes`` in ``trials``: the quantiles
    of :math:`\mathrm{Beta}(x, n-x+1)` at 0.025 and :math:`\mathrm{Beta}(x+1, n-x)` at
    0.975 (0 below at :math:`x = 0`, 1 above at :math:`x = n`); the same Beta quantiles for
    a real (effective) count.

    Examples
    --------
    >>> [round(x, 4) for x in exact_interval(0, 10)]  # no event in 10: the rule of 3.7
    [0.0, 0.3085]
    """
    from scipy.stats import beta

    alpha = 1.0 - CONFIDENCE
    low = 0.0 if successes <= 0 else float(beta.ppf(alpha / 2, successes, trials - successes + 1))
    high = (
        1.0
        if successes >= trials
        else float(beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    )
    return (low, high)


def _judged(
    labelled: Verdicts,
    judged: Verdicts,
    miss: _Rate,
    false_reject: _Rate,
    better: bool,
    settings: tuple[Any, int, str],
) -> dict[str, Any]:
    """The judged verdicts' record: pass rate, the corrected pass rate and PPI++."""
    every = np.ones(judged.rows, dtype=bool)
    pass_rate = _rate(judged, judged.verdict == 1, every, settings)
    corrected, reason = None, None
    if better:
        estimate, ci = _corrected(pass_rate, miss, false_reject)
        corrected = {"estimate": estimate, "ci": ci}
    else:
        total = miss.estimate + false_reject.estimate
        reason = (
            f"the grader is no better than chance: miss + false_reject = {total:.4g} >= 1 "
            "(q0 + q1 <= 1), so its verdicts carry no information on the pass rate and the "
            "correction (p + q0 - 1) / (q0 + q1 - 1) is undefined"
        )
    assert labelled.label is not None
    estimate, ci, tuning = _ppi(
        labelled.label.astype(float), labelled.verdict.astype(float), labelled.task,
        judged.verdict.astype(float), judged.task,
    )
    return {
        "verdicts": judged.rows,
        "tasks": judged.tasks,
        "pass_rate": {"estimate": pass_rate.estimate, "ci": pass_rate.ci},
        "corrected": corrected,
        "reason": reason,
        "interval": "delta method",
        "ppi": {"estimate": estimate, "ci": ci, "lambda": tuning},
    }


def corrected_pass_rate(pass_rate: float, miss: float, false_reject: float) -> float:
    r"""The pass rate corrected for a grader's errors (Rogan and Gladen; Lee et al.),
    :math:`(p + q_0 - 1) / (q_0 + q_1 - 1)` with :math:`q_0 = 1 - \text{miss}` and
    :math:`q_1 = 1 - \text{false\_reject}`, not cut to [0, 1]; NaN when the grader is no
    better than chance (:math:`q_0 + q_1 \le 1`).

    Examples
    --------
    Lee et al.'s example, :math:`p = 0.4`, :math:`q_0 = 0.7`, :math:`q_1 = 0.9`:

    >>> round(corrected_pass_rate(0.4, 0.3, 0.1), 4)
    0.1667
    """
    informative = 1.0 - miss - false_reject  # q0 + q1 - 1
    if informative <= 0:
        return math.nan
    return (pass_rate - miss) / informative  # p + q0 - 1 = p - miss


def _corrected(
    pass_rate: _Rate, miss: _Rate, false_reject: _Rate
) -> tuple[float, tuple[float, float]]:
    """The corrected pass rate, cut to [0, 1], and its delta-method interval."""
    theta = corrected_pass_rate(pass_rate.estimate, miss.estimate, false_reject.estimate)
    informative = 1.0 - miss.estimate - false_reject.estimate
    var_p, var_q0, var_q1 = (_adjusted_variance(r) for r in (pass_rate, miss, false_reject))
    u, v = miss.contributions, false_reject.contributions
    spread = math.sqrt(float(np.sum(u**2)) * float(np.sum(v**2)))
    # cov(q0, q1) = cov(miss, false_reject): 0 when each task carries one label (then no
    # task holds both a right and a wrong answer)
    correlation = float(np.sum(u * v)) / spread if spread > 0 else 0.0
    covariance = correlation * math.sqrt(var_q0 * var_q1)
    variance = (
        var_p + (1 - theta) ** 2 * var_q0 + theta**2 * var_q1
        - 2 * theta * (1 - theta) * covariance
    ) / informative**2
    half = _Z * math.sqrt(max(variance, 0.0))
    return _clip(theta), (_clip(theta - half), _clip(theta + half))


def _adjusted_variance(rate: _Rate) -> float:
    """Binomial variance on the effective count at the Agresti-Coull adjusted proportion."""
    count = rate.effective + _Z**2
    adjusted = (rate.estimate * rate.effective + _Z**2 / 2) / count
    return adjusted * (1.0 - adjusted) / count


def _ppi(
    truth: np.ndarray,
    predicted: np.ndarray,
    truth_task: np.ndarray,
    unlabelled: np.ndarray,
    unlabelled_task: np.ndarray,
) -> tuple[float, tuple[float, float], float]:
    """PPI++'s power-tuned mean: (estimate, interval, lambda); see the module docstring."""
    n, big_n = truth.size, unlabelled.size
    every = np.concatenate([predicted, unlabelled])
    spread = float(np.var(every, ddof=1)) if every.size > 1 else 0.0
    covariance = float(np.mean((truth - truth.mean()) * (predicted - predicted.mean())))
    tuning = 0.0
    if spread > 0:
        tuning = float(np.clip(covariance / ((1.0 + n / big_n) * spread), 0.0, 1.0))
    rectifier = truth - tuning * predicted
    estimate = tuning * float(unlabelled.mean()) + float(rectifier.mean())
    variance = tuning**2 * _clustered_variance(unlabelled, unlabelled_task) + (
        _clustered_variance(rectifier, truth_task)
    )
    half = _Z * math.sqrt(variance)
    return _clip(estimate), (_clip(estimate - half), _clip(estimate + half)), tuning


def _clustered_variance(values: np.ndarray, task: np.ndarray) -> float:
    r"""The variance of the mean of ``values``, clustered by ``task``:
    :math:`\frac{1}{n^2}\sum_t (\sum_{i \in t} (x_i - \bar x))^2` (the plain
    :math:`\mathrm{sd}(x)^2 / n` when each task holds one value)."""
    centred = values - values.mean()
    sums = np.bincount(task, weights=centred)
    return float(np.sum(sums**2)) / values.size**2


def _clip(value: float) -> float:
    return min(1.0, max(0.0, float(value)))
