r"""How hard a harness's tasks are: a fitted task-difficulty distribution, pass@k and pass^k at
any k, and a scenario that runs on it.

Each task :math:`i` of a harness has :math:`n_i` trials and :math:`c_i` successes. The model
(a zero-one-inflated beta-binomial) says a task always passes (weight :math:`w_1`), never
passes (:math:`w_0`), or passes each trial with its own :math:`p \sim \mathrm{Beta}(\alpha,
\beta)` (weight :math:`w_b = 1 - w_1 - w_0`); the trials of a task are independent given its
:math:`p`. :func:`fit_difficulty` finds the parameters by maximum likelihood (see
:mod:`relsim.evalstats._zoib`), keeping only those the data identify, and refits bootstrap
resamples of the tasks; from the fit,

.. math::

    \text{pass}^k = w_1 + w_b \frac{B(\alpha + k, \beta)}{B(\alpha, \beta)}, \qquad
    \text{pass@}k = 1 - w_0 - w_b \frac{B(\alpha, \beta + k)}{B(\alpha, \beta)}

at any :math:`k`, with intervals from the bootstrap refits.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from relsim._running import check_seed
from relsim.errors import invalid
from relsim.evalstats._common import TrialDataError, check_confidence, is_count
from relsim.results import jsonable, one_row

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from relsim.scenario import Scenario, Verifier

__all__ = [
    "DRAW_KEYS",
    "MAX_DRAWS",
    "MAX_K",
    "MIN_DRAWS",
    "MIN_TASKS",
    "QUADRATURE_NODES",
    "DifficultyFit",
    "fit_difficulty",
    "verifier_from_audit",
]

#: The keys of one bootstrap refit in :meth:`DifficultyFit.to_dict`'s ``draws``.
DRAW_KEYS = ("always", "never", "beta_weight", "alpha", "beta")
#: The fewest bootstrap refits: fewer cannot place the 2.5% and 97.5% quantiles of pass^k.
MIN_DRAWS = 200
#: The most bootstrap refits (each is a fit; 10,000 take about ten seconds).
MAX_DRAWS = 10_000
#: The fewest tasks fitted: a bootstrap over fewer tasks has too few distinct resamples to
#: show how the fit varies (four tasks have 35).
MIN_TASKS = 5
#: The largest k extrapolated to: beyond it pass^k is the weight of the tasks that always pass
#: to within the fit's error, and the tail of the Beta is all assumption.
MAX_K = 100
#: Gauss-Jacobi nodes of the Beta in a written scenario: exact for pass^k up to k = 31.
QUADRATURE_NODES = 16


@dataclass(frozen=True, eq=False)  # holds an array: compare .to_dict() instead
class DifficultyFit:
    r"""A harness's fitted task-difficulty distribution (a zero-one-inflated beta-binomial).

    Attributes
    ----------
    tasks : int
        Number of tasks fitted.
    trials_per_task : tuple of int
        The fewest and the most trials of a task.
    always, never : float
        The weights of the tasks that always pass and never pass (:math:`w_1`, :math:`w_0`).
    beta_weight : float
        The weight of the tasks whose per-trial success varies, :math:`w_b = 1 - w_1 - w_0`.
    alpha, beta : float or None
        The Beta of their per-trial success; None when the Beta is not in the fit.
    identified : tuple of str
        The parameters the data identify, among :data:`DRAW_KEYS`: ``always`` with a task
        that passed every trial, ``never`` with one that failed every trial, ``alpha`` and
        ``beta`` with one that did both (without one every task is all-or-nothing and the Beta
        is not identified), ``beta_weight`` when the Beta shares the tasks with a point mass.
        A model has at most as many free parameters as the most trials of a task (``n``
        trials show ``n`` moments of the per-trial success): at 3 trials, one point mass is
        dropped, the less likely, or the one at 0 when both fit the data equally. Parameters
        not identified are 0 (weights) or None.
    loglik : float
        The maximised log-likelihood.
    check : tuple of dict
        For each k from 1 to the most trials of a task: ``k``, ``observed`` (the mean of the
        unbiased per-task pass^k over the tasks with at least k trials, as
        :func:`relsim.evalstats.pass_k`), ``fitted`` (the fit's pass^k).
    seed : int or numpy.random.SeedSequence
        What the bootstrap drew from.
    draws : numpy.ndarray
        ``(D, 5)``: the bootstrap refits (tasks resampled with replacement, each refitted as
        the data), columns :data:`DRAW_KEYS` (alpha and beta NaN without the Beta).
    source : str
        What was read.
    left_out : dict
        Why each component the fit leaves out is out: ``{"always" | "never" | "beta":
        reason}`` (not in :meth:`to_dict`).
    """

    tasks: int
    trials_per_task: tuple[int, int]
    always: float
    never: float
    beta_weight: float
    alpha: float | None
    beta: float | None
    identified: tuple[str, ...]
    loglik: float
    check: tuple[dict[str, float], ...]
    seed: int | np.random.SeedSequence | None
    draws: np.ndarray = field(repr=False)
    source: str = "trials"
    left_out: dict[str, str] = field(default_factory=dict)

    # ------------------------------------------------------------------ pass@k and pass^k
    def pass_hat_k(self, k: Any) -> Any:
        r"""The fit's pass^k, :math:`w_1 + w_b B(\alpha + k, \beta) / B(\alpha, \beta)`
        (vectorised over ``k``, integers >= 1)."""
        ks = _check_ks(k)
        out = _pass_hat(np.array([self.always]), np.array([self.beta_weight]),
                        np.array([_nan(self.alpha)]), np.array([_nan(self.beta)]), ks)[0]
        return float(out[0]) if np.ndim(k) == 0 else out

    def pass_at_k(self, k: Any) -> Any:
        r"""The fit's pass@k, :math:`1 - w_0 - w_b B(\alpha, \beta + k) / B(\alpha, \beta)`
        (vectorised over ``k``, integers >= 1)."""
        ks = _check_ks(k)
        out = _pass_at(np.array([self.never]), np.array([self.beta_weight]),
                       np.array([_nan(self.alpha)]), np.array([_nan(self.beta)]), ks)[0]
        return float(out[0]) if np.ndim(k) == 0 else out

    def extrapolate(self, k_max: int, *, confidence: float = 0.95) -> dict[str, Any]:
        """pass@k and pass^k for every k from 1 to ``k_max``, with their intervals.

        Returns ``{"pass_at_k": {k: entry}, "pass_hat_k": {k: entry}}`` (k as a string),
        each entry ``{"estimate", "ci", "extrapolated"}``: ``extrapolated`` is True for a k
        beyond the most trials of a task. The interval is the percentile interval of the
        bootstrap refits' values, widened for the number of tasks (see :meth:`interval`).
        """
        if not (is_count(k_max) and 1 <= k_max <= MAX_K):
            raise invalid("k", f"an integer in [1, {MAX_K}]", k_max)
        check_confidence(confidence)
        ks = np.arange(1, int(k_max) + 1)
        most = self.trials_per_task[1]
        out: dict[str, Any] = {}
        for metric, estimates in (("pass_at_k", self.pass_at_k(ks)),
                                  ("pass_hat_k", self.pass_hat_k(ks))):
            drawn = self._drawn(metric, ks)
            out[metric] = {
                str(k): {
                    "estimate": float(estimates[i]),
                    "ci": list(_interval(drawn[:, i], self.tasks, confidence)),
                    "extrapolated": bool(k > most),
                }
                for i, k in enumerate(ks)
            }
        return out

    def interval(self, metric: str, k: int, confidence: float = 0.95) -> tuple[float, float]:
        r"""The interval of pass@k (``metric="pass_at_k"``) or pass^k (``"pass_hat_k"``):
        the expanded percentile interval of the bootstrap refits' values.

        The quantiles are taken at :math:`\Phi(\mp z')` with :math:`z' = \sqrt{T / (T - 1)}\,
        t_{(1+\gamma)/2,\,T-1}` for :math:`T` tasks (Hesterberg 2015's expanded percentile
        interval), which corrects the plain percentile interval's narrowness on few tasks.
        """
        if metric not in ("pass_at_k", "pass_hat_k"):
            raise invalid("metric", "pass_at_k or pass_hat_k", metric)
        check_confidence(confidence)
        return _interval(self._drawn(metric, _check_ks(k)[:1])[:, 0], self.tasks, confidence)

    def _drawn(self, metric: str, ks: np.ndarray) -> np.ndarray:
        """pass@k or pass^k of every bootstrap refit: ``(draws, len(ks))``."""
        always, never, weight, alpha, beta = self.draws.T
        if metric == "pass_at_k":
            return _pass_at(never, weight, alpha, beta, ks)
        return _pass_hat(always, weight, alpha, beta, ks)

    # ------------------------------------------------------------------ the scenario
    def classes(self, nodes: int = QUADRATURE_NODES) -> list[tuple[float, float]]:
        """The fit as task classes ``[(weight, p), ...]``: the point masses (p = 1 and p = 0,
        where their weight is > 0) and ``nodes`` Gauss-Jacobi nodes of the Beta, each with
        weight :math:`w_b` times the node's weight. The classes' :math:`\\sum w p^k` is the
        fit's pass^k exactly (to rounding) for k up to ``2 nodes - 1``."""
        if not (is_count(nodes) and 1 <= nodes <= 32):
            raise invalid("nodes", "an integer in [1, 32]", nodes)
        out = []
        if self.always > 0:
            out.append((self.always, 1.0))
        if self.never > 0:
            out.append((self.never, 0.0))
        if self.beta_weight > 0 and self.alpha is not None and self.beta is not None:
            points, weights = beta_nodes(self.alpha, self.beta, int(nodes))
            out += [(self.beta_weight * float(w), float(p))
                    for p, w in zip(points, weights) if self.beta_weight * w > 0]
        return out

    def to_scenario(
        self,
        *,
        verifier: Any = None,
        at: str = "upper",
        retries: int = 0,
        target: float | None = 0.95,
        name: str | None = None,
        nodes: int = QUADRATURE_NODES,
    ) -> Scenario:
        """The fit as a scenario: one harness task is one step, one trial one attempt.

        ``steps = 1``, ``[[classes]]`` from :meth:`classes` (a trial draws a task, then its
        attempts succeed with that task's p), ``[retries] per_step = retries`` (a retry runs
        the task again) and a ``[verifier]``: the one given, or one from an audit (its file,
        the mapping of ``relsim audit --json`` or a ``GraderAudit``, read by
        :func:`verifier_from_audit` at ``at``), or by default a perfect one: the harness's own success check, taken as the
        truth (so that with ``retries = r`` the scenario's success is the fit's pass@(r+1)).

        The classes' p is the per-trial success the harness recorded. When that success came
        from the grader an audit measured, it already holds the grader's errors, and a
        verifier from the same audit counts them a second time.
        """
        from relsim.scenario import Retries, Scenario, Verifier
        from relsim.scenario.design_tables import TaskClass

        if verifier is None:
            checker = Verifier(miss=0.0, false_reject=0.0)
        elif isinstance(verifier, Verifier):
            checker = verifier
        else:
            checker = verifier_from_audit(verifier, at=at)
        label = name if name is not None else f"task difficulty fitted to {self.source}"
        return Scenario(
            steps=1,
            p=None,
            name=label,
            target=target,
            verifier=checker,
            retries=Retries(per_step=retries),
            classes=tuple(TaskClass(weight=w, p=p) for w, p in self.classes(nodes)),
        )

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``relsim fit --json``: ``tasks``, ``trials_per_task`` (``min``,
        ``max``), ``always``, ``never``, ``beta`` (``weight``, ``alpha``, ``beta``, or None
        without the Beta), ``identified``, ``loglik``, ``check``, ``seed`` and ``draws`` (a
        list of mappings with the keys of :data:`DRAW_KEYS`, alpha and beta None without the
        Beta)."""
        seed: Any = self.seed
        if isinstance(seed, np.random.SeedSequence):
            seed = str(seed)  # shown, as JSON cannot hold it
        beta = None
        if self.alpha is not None and self.beta is not None:
            beta = {"weight": self.beta_weight, "alpha": self.alpha, "beta": self.beta}
        return jsonable({
            "tasks": self.tasks,
            "trials_per_task": {"min": self.trials_per_task[0], "max": self.trials_per_task[1]},
            "always": self.always,
            "never": self.never,
            "beta": beta,
            "identified": list(self.identified),
            "loglik": self.loglik,
            "check": [dict(entry) for entry in self.check],
            "seed": seed,
            "draws": [
                {key: (None if math.isnan(value) else float(value))
                 for key, value in zip(DRAW_KEYS, row)}
                for row in self.draws
            ],
        })

    def to_frame(self) -> pd.DataFrame:
        """A one-row DataFrame of :meth:`to_dict`'s fields but ``check`` and ``draws``
        (flattened as every result: ``trials_per_task_min``, ``beta_alpha``, ...)."""
        record = self.to_dict()
        record.pop("check")
        record.pop("draws")
        record["identified"] = ", ".join(record["identified"])
        return one_row(record)


def fit_difficulty(
    trials: str | Path | pd.DataFrame,
    *,
    seed: int | np.random.SeedSequence | None = 0,
    draws: int = MIN_DRAWS,
    threshold: float | None = None,
    scorer: str | None = None,
) -> DifficultyFit:
    r"""Fit the task-difficulty distribution of a harness by maximum likelihood.

    Parameters
    ----------
    trials : str, Path or pandas.DataFrame
        A table of trials as :func:`relsim.evalstats.analyze` reads it (CSV, JSONL,
        DataFrame or Inspect eval log).
    seed : int, numpy.random.SeedSequence or None
        The bootstrap's seed (None: fresh entropy, recorded in the result).
    draws : int
        Bootstrap refits, in [:data:`MIN_DRAWS`, :data:`MAX_DRAWS`]: each resamples the
        tasks with replacement and fits the resample as the data.
    threshold, scorer
        As in :func:`relsim.evalstats.analyze`.

    Returns
    -------
    DifficultyFit

    Raises
    ------
    TrialDataError
        For trials that cannot say how tasks differ: fewer than :data:`MIN_TASKS` tasks, one
        trial per task (nothing tells a task that always passes from one that passes half the
        time), or every trial passed (or every one failed).

    Notes
    -----
    The likelihood of task :math:`i` is

    .. math::

        w_1 [c_i = n_i] + w_0 [c_i = 0] + w_b \binom{n_i}{c_i}
        \frac{B(\alpha + c_i, \beta + n_i - c_i)}{B(\alpha, \beta)},

    maximised over the models the data identify (see :attr:`DifficultyFit.identified`):
    for each Beta the best weights are exact (closed form with equal trial counts, Newton's
    method otherwise), and the Beta's mean (logit) and precision (log) are searched by a grid
    and a pattern search; ``tests/test_difficulty.py`` holds the result at or above the best
    point of a brute-force grid and of scipy's Nelder-Mead from many starts.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = [(f"t{i}", j, int(j < c)) for i, c in enumerate([0, 1, 2, 3, 3, 2, 1, 3])
    ...         for j in range(3)]
    >>> fit = fit_difficulty(pd.DataFrame(rows, columns=["task", "trial", "success"]))
    >>> fit.identified
    ('always', 'beta_weight', 'alpha', 'beta')
    """
    from relsim.evalstats import _zoib
    from relsim.evalstats.estimators import counts, per_task, task_values
    from relsim.evalstats.readers import load_trials

    if not (is_count(draws) and MIN_DRAWS <= draws <= MAX_DRAWS):
        raise invalid("draws", f"an integer in [{MIN_DRAWS}, {MAX_DRAWS}]", draws)
    seed_sequence, seed_value = check_seed(seed)
    frame = load_trials(trials, threshold, scorer)
    source = str(frame.attrs.get("relsim_source", "trials"))
    n, c = counts(per_task(frame))
    _check_fittable(source, n, c)

    cells = _zoib.Cells.of(n, c)
    point = _zoib.fit(cells, cells.counts())
    rng = np.random.default_rng(seed_sequence)
    resampled = _zoib.fit(cells, cells.counts(rng.integers(0, len(n), size=(draws, len(n)))))
    table = np.column_stack([resampled.always, resampled.never, resampled.beta_weight,
                             resampled.alpha, resampled.beta])

    always, never, has_beta = _zoib.MODELS[int(point.model[0])]
    left_out = _left_out(n, c, always, never, has_beta)
    identified = [name for name, kept in (("always", always), ("never", never),
                                          ("beta_weight", has_beta and (always or never)),
                                          ("alpha", has_beta), ("beta", has_beta)) if kept]
    fit = DifficultyFit(
        tasks=len(n),
        trials_per_task=(int(n.min()), int(n.max())),
        always=float(point.always[0]),
        never=float(point.never[0]),
        beta_weight=float(point.beta_weight[0]),
        alpha=float(point.alpha[0]) if has_beta else None,
        beta=float(point.beta[0]) if has_beta else None,
        identified=tuple(identified),
        loglik=float(point.loglik[0]),
        check=(),
        seed=seed if isinstance(seed, np.random.SeedSequence) else seed_value,
        draws=table,
        source=source,
        left_out=left_out,
    )
    ks = list(range(1, int(n.max()) + 1))
    observed = np.nanmean(task_values(n, c, ks)[:, len(ks):], axis=0)
    fitted = fit.pass_hat_k(np.array(ks))
    check = tuple({"k": k, "observed": float(o), "fitted": float(f)}
                  for k, o, f in zip(ks, observed, fitted))
    return dataclasses.replace(fit, check=check)


def verifier_from_audit(audit: Any, *, at: str = "upper") -> Verifier:
    """The verifier a grader audit supports: its ``miss`` and ``false_reject`` at ``at``.

    The audit is read by :func:`relsim.plan.read_audit`, the one reader of audit files (the
    planners' ``--verifier-from`` reads it too), and the rates taken by
    :func:`relsim.plan.verifier_at`.

    Parameters
    ----------
    audit : path, mapping or object with ``to_dict()``
        The JSON of ``relsim audit --json`` (a file or the parsed mapping), or a
        :class:`~relsim.evalstats.GraderAudit`: ``miss`` and ``false_reject``, each with an
        ``estimate``, a 95% ``ci`` ``[low, high]`` and its ``effective`` labels.
    at : {"upper", "estimate", "lower"}
        Which value of each rate: the upper bound (default: the grader we may really have),
        the estimate, or the lower bound.

    Returns
    -------
    Verifier
        The scenario table ``[verifier]`` with those ``miss`` and ``false_reject``.

    Examples
    --------
    >>> audit = {"miss": {"estimate": 0.1, "ci": [0.05, 0.18], "effective": 40},
    ...          "false_reject": {"estimate": 0.02, "ci": [0.0, 0.07], "effective": 60}}
    >>> verifier_from_audit(audit)
    Verifier(miss=0.18, false_reject=0.07)
    """
    from relsim.plan.evidence import verifier_at
    from relsim.scenario import Verifier

    miss, false_reject = verifier_at(audit, at)
    return Verifier(miss=miss, false_reject=false_reject)


def beta_nodes(alpha: float, beta: float, count: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The Gauss-Jacobi nodes and weights of :math:`\mathrm{Beta}(\alpha, \beta)` on [0, 1]
    (weights summing to 1): exact for polynomials of degree up to ``2 count - 1``.

    The Golub-Welsch algorithm on the Jacobi polynomials' three-term recurrence (parameters
    :math:`a = \beta - 1`, :math:`b = \alpha - 1` on [-1, 1]); unlike
    ``scipy.special.roots_jacobi`` its weights stay finite for a Beta of any precision.

    Examples
    --------
    >>> nodes, weights = beta_nodes(2.0, 3.0, 4)  # E[p] = 2/5, E[p^7] = B(9, 3)/B(2, 3) = 4/165
    >>> round(float((weights * nodes).sum()), 12), round(float((weights * nodes**7).sum()), 12)
    (0.4, 0.024242424242)
    """
    from scipy.linalg import eigh_tridiagonal

    a, b = beta - 1.0, alpha - 1.0
    k = np.arange(count, dtype=float)
    total = 2.0 * k + a + b
    diagonal = np.empty(count)
    diagonal[0] = (b - a) / (a + b + 2.0)
    diagonal[1:] = (b * b - a * a) / (total[1:] * (total[1:] + 2.0))
    j = np.arange(1, count, dtype=float)
    total = 2.0 * j + a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        squared = 4.0 * j * (j + a) * (j + b) * (j + a + b) / (total**2 * (total + 1) * (total - 1))
    if count > 1:  # the first term with (1 + a + b) cancelled: finite at a + b = -1
        squared[0] = 4.0 * (1 + a) * (1 + b) / ((2 + a + b) ** 2 * (3 + a + b))
    nodes, vectors = eigh_tridiagonal(diagonal, np.sqrt(squared))
    weights = vectors[0] ** 2
    return np.clip((1.0 + nodes) / 2.0, 0.0, 1.0), weights / weights.sum()


# ------------------------------------------------------------------ helpers
def _check_fittable(source: str, n: np.ndarray, c: np.ndarray) -> None:
    """Refuse trials that cannot say how tasks differ (see :func:`fit_difficulty`)."""
    if len(n) < MIN_TASKS:
        raise TrialDataError(
            f"{source}: tasks: must be at least {MIN_TASKS} to fit how hard tasks are, got "
            f"{len(n)}"
        )
    if n.max() < 2:
        raise TrialDataError(
            f"{source}: trials per task: must be at least 2 for some task to fit how hard "
            "tasks are, got 1 for every task (one trial cannot tell a task that always "
            "passes from one that passes half the time)"
        )
    if c.sum() == n.sum() or c.sum() == 0:
        outcome = "passed" if c.sum() else "failed"
        raise TrialDataError(
            f"{source}: success: must include a passed and a failed trial to fit how hard "
            f"tasks are, got every trial {outcome}"
        )


def _left_out(n, c, always: bool, never: bool, has_beta: bool) -> dict[str, str]:
    """Why each component is out of the fit (see :attr:`DifficultyFit.left_out`)."""
    from relsim.evalstats._zoib import parameters

    most = int(n.max())
    out = {}
    if not has_beta:
        out["beta"] = "every task passed all its trials or failed all of them"
    for name, kept, seen, what in (("always", always, np.any(c == n), "passed every trial"),
                                   ("never", never, np.any(c == 0), "failed every trial")):
        if kept:
            continue
        if not seen:
            out[name] = f"no task {what}"
        elif has_beta and parameters((True, never, True) if name == "always"
                                     else (always, True, True)) > most:
            out[name] = (f"{most} trials a task identify at most {most} parameters"
                         + ("; the other point mass fits as well or better"
                            if always or never else ""))
        else:
            out[name] = "the data are as likely without it"
    return out


def _check_ks(k: Any) -> np.ndarray:
    ks = np.atleast_1d(np.asarray(k))
    if ks.size == 0 or not np.issubdtype(ks.dtype, np.integer) or ks.min() < 1:
        raise invalid("k", "integers >= 1", k)
    return ks.astype(np.int64)


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _moment_ratio(weight, first, second, ks):
    """``weight * B(first + k, second) / B(first, second)`` for every row and k (0 where
    the weight is 0): ``(rows, len(ks))``."""
    from scipy.special import betaln

    first, second = first[:, None], second[:, None]
    with np.errstate(invalid="ignore"):
        ratio = np.exp(betaln(first + ks, second) - betaln(first, second))
    return np.where(weight[:, None] > 0, weight[:, None] * ratio, 0.0)


def _pass_hat(always, beta_weight, alpha, beta, ks):
    return np.clip(always[:, None] + _moment_ratio(beta_weight, alpha, beta, ks), 0.0, 1.0)


def _pass_at(never, beta_weight, alpha, beta, ks):
    return np.clip(1.0 - never[:, None] - _moment_ratio(beta_weight, beta, alpha, ks), 0.0, 1.0)


def _interval(values: np.ndarray, tasks: int, confidence: float) -> tuple[float, float]:
    """The expanded percentile interval (see :meth:`DifficultyFit.interval`)."""
    from scipy.stats import norm, t

    widened = math.sqrt(tasks / (tasks - 1)) * t.ppf((1 + confidence) / 2, tasks - 1)
    tail = float(norm.sf(widened))
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return (float(low), float(high))
