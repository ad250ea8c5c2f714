r"""``compare``: a paired comparison of two evals on the tasks they share, on every quantity.

Each quantity is compared task by task. For the success rate, pass@k and pass^k the per-task
values are the unbiased estimates (docs/model.md section 2) and the difference is the mean of
the per-task differences :math:`d_i`; for cost per success and the mean of a metric column
(ratios of per-task totals, see :mod:`relsim.evalstats.metrics`) the difference of the two
ratios, with each task's linearised contribution :math:`u_i` as its value. Over the
:math:`T` shared tasks (eligible in both, for pass@k: at least k trials in each),

.. math::

    \mathrm{se}^2 = \max\Bigl(\frac{s_d^2}{T},\ \frac{1}{T^2}\sum_i \bigl(w^{A}_i + w^{B}_i\bigr)
    \Bigr), \qquad w_i = \frac{k\,\hat v_i(1-\hat v_i)}{n_i}, \qquad
    \bar d \pm t_{(1+\gamma)/2,\,T-1}\,\mathrm{se}, \qquad
    p = 2\,\Pr(t_{T-1} > |\bar d| / \mathrm{se})

:math:`s_d^2/T` is the paired t-test's variance; :math:`w_i` is a floor from the binomial noise
within each task (the trials of the two evals are independent given the task), so two evals
whose tasks all moved by the same amount do not get a zero-width interval (for ``k > 1``
it treats the :math:`n_i/k` disjoint groups of k trials as the draws, a conservative floor;
when every task is certain in both evals, all 0 or all 1, it is 0 and so is the interval's
width: nothing was seen to vary). For proportions
the interval is cut to [-1, 1]. With several quantities compared, each p-value is reported
with Holm's adjustment for the number tested (:func:`relsim.intervals.holm`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from relsim import intervals
from relsim.errors import RelsimError
from relsim.evalstats._common import TrialDataWarning, check_confidence, task_sums
from relsim.evalstats.estimators import check_k, counts, default_k, per_task, task_values
from relsim.evalstats.readers import load_trials
from relsim.results import jsonable, one_row

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["Comparison", "compare"]


@dataclass(frozen=True, eq=False)  # holds a DataFrame: compare .to_dict() instead
class Comparison:
    """A paired comparison of two evals on the tasks they share.

    Attributes
    ----------
    tasks : int
        Shared tasks.
    baseline, candidate : float
        Mean per-task success rate of each, over the shared tasks.
    difference : float
        ``candidate - baseline`` (success).
    se : float
        Its standard error (see :mod:`relsim.evalstats.comparison`).
    ci : (float, float)
        ``difference -/+ t((1+confidence)/2, tasks-1) * se``, within [-1, 1].
    p_value : float
        Two-sided paired t-test of the success difference (not adjusted).
    quantities : dict
        Every quantity compared (``success``, ``pass@k``, ``pass^k`` for each k,
        ``cost_per_success``, each metric column shared by both): ``tasks``, ``baseline``,
        ``candidate``, ``difference``, ``se``, ``ci``, ``p_value`` and ``p_holm`` (Holm's
        adjustment over the ``tested`` quantities).
    tested : int
        How many quantities were compared (the family Holm's adjustment is over).
    per_task : pandas.DataFrame
        ``baseline``, ``candidate``, ``difference`` of the success rate per shared task.
    only_baseline, only_candidate : tuple of str
        Tasks found in one file only (left out).
    confidence : float
    warnings : tuple of str
    """

    tasks: int
    baseline: float
    candidate: float
    difference: float
    se: float
    ci: tuple[float, float]
    p_value: float
    per_task: pd.DataFrame = field(repr=False)
    quantities: dict[str, dict[str, Any]] = field(default_factory=dict)
    tested: int = 1
    only_baseline: tuple[str, ...] = ()
    only_candidate: tuple[str, ...] = ()
    confidence: float = 0.95
    warnings: tuple[str, ...] = ()

    def _record(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "difference": self.difference,
            "se": self.se,
            "ci": [self.ci[0], self.ci[1]],
            "p_value": self.p_value,
            "tested": self.tested,
            "correction": "holm",
            "quantities": {
                name: {**value, "ci": list(value["ci"])} for name, value in self.quantities.items()
            },
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``relsim compare --json`` (NaN and infinity become None)."""
        return jsonable(self._record())

    def to_frame(self) -> pd.DataFrame:
        """A one-row DataFrame of :meth:`to_dict`'s fields, flattened as every result is
        (:func:`relsim.results.flatten`: ``ci`` split into ``ci_low`` and ``ci_high``;
        ``quantities_<name>_<field>``). The per-task differences are :attr:`per_task`."""
        return one_row(self._record())


def compare(
    baseline: str | Path | pd.DataFrame,
    candidate: str | Path | pd.DataFrame,
    *,
    k: Iterable[int] | int | None = None,
    threshold: float | None = None,
    scorer: str | None = None,
    confidence: float = 0.95,
) -> Comparison:
    r"""Paired comparison of two evals on the tasks both share, on every quantity.

    See :mod:`relsim.evalstats.comparison` for the formulas: the success difference is the
    mean over shared tasks of :math:`d_i = \hat q_i - \hat p_i` with a paired t interval whose
    variance never falls below the binomial noise within the tasks.

    Parameters
    ----------
    baseline, candidate : str, Path or pandas.DataFrame
        Trial tables or Inspect logs (see :func:`analyze`).
    k : int or iterable of int, optional
        The k for pass@k and pass^k (default: those of :data:`DEFAULT_K` within the smaller
        of the two evals' largest trial counts).
    threshold : float, optional
        Numeric scores: success when ``score >= threshold`` (both tables).
    scorer : str, optional
        Inspect logs: the scorer whose value is success.
    confidence : float
        In (0, 1).

    Returns
    -------
    Comparison

    Raises
    ------
    RelsimError
        When the tables share fewer than two tasks (and for bad tables, see
        :func:`read_trials`).

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"task": list("xyzw"), "trial": 1, "success": [0, 1, 0, 0]})
    >>> b = pd.DataFrame({"task": list("xyzw"), "trial": 1, "success": [1, 1, 0, 1]})
    >>> result = compare(a, b)
    >>> round(result.difference, 6), round(result.se, 6)
    (0.5, 0.288675)
    """
    import pandas as pd

    check_confidence(confidence)
    frames = [load_trials(source, threshold, scorer) for source in (baseline, candidate)]
    tables = [per_task(frame) for frame in frames]
    base, cand = tables
    shared = base.index.intersection(cand.index, sort=False)
    only_baseline = tuple(base.index.difference(cand.index, sort=False))
    only_candidate = tuple(cand.index.difference(base.index, sort=False))
    messages = []
    for label, names in (("baseline", only_baseline), ("candidate", only_candidate)):
        if names:
            shown = ", ".join(repr(n) for n in names[:5]) + (", ..." if len(names) > 5 else "")
            messages.append(
                f"{len(names)} task{'s' if len(names) > 1 else ''} only in the {label} "
                f"({shown}) left out of the paired comparison"
            )
    if len(shared) < 2:
        raise RelsimError(
            "shared tasks: must be at least 2 for a paired comparison of baseline and "
            f"candidate, got {len(shared)}"
        )
    base, cand = base.loc[shared], cand.loc[shared]
    n_a, c_a = counts(base)
    n_b, c_b = counts(cand)
    largest = int(min(n_a.max(), n_b.max()))
    ks = check_k(default_k(largest) if k is None else k, largest)
    with_one = sorted(set(ks) | {1})
    values_a = task_values(n_a, c_a, with_one)
    values_b = task_values(n_b, c_b, with_one)

    quantities: dict[str, dict[str, Any]] = {}
    for column, value in enumerate(with_one * 2):
        hat = column >= len(with_one)
        if value == 1 and hat:
            continue  # pass^1 is pass@1 is success
        name = "success" if value == 1 else f"pass{'^' if hat else '@'}{value}"
        if value == 1 or value in ks:
            quantities[name] = _paired_proportion(
                values_a[:, column], values_b[:, column], n_a, n_b, value, confidence
            )

    codes = [
        pd.Index(shared).get_indexer(frame["task"]) for frame in frames
    ]  # -1 for a task in one file only

    def totals(frame, code, column, mask=None):
        keep = code >= 0
        values = frame[column].to_numpy(dtype=float)
        present = ~np.isnan(values) & keep
        if mask is not None:
            present &= mask
        y = task_sums(code[present], len(shared), values[present])
        x = np.bincount(code[present], minlength=len(shared)).astype(float)
        return y, x

    if "cost" in frames[0] and "cost" in frames[1]:
        pairs = []
        for frame, code in zip(frames, codes):
            keep = code >= 0
            y = task_sums(code[keep], len(shared), frame["cost"].to_numpy(dtype=float)[keep])
            x = np.bincount(
                code[keep], weights=frame["success"].to_numpy(dtype=float)[keep],
                minlength=len(shared),
            )
            pairs.append((y, x))
        quantities["cost_per_success"] = _paired_ratio(pairs, confidence)
    shared_metrics = [
        name
        for name in frames[0].attrs.get("relsim_metrics", [])
        if name in frames[1].attrs.get("relsim_metrics", [])
    ]
    for name in shared_metrics:
        pairs = [totals(frame, code, name) for frame, code in zip(frames, codes)]
        quantities[name] = _paired_ratio(pairs, confidence)

    adjusted = intervals.holm([quantity["p_value"] for quantity in quantities.values()])
    for quantity, holm_value in zip(quantities.values(), adjusted):
        quantity["p_holm"] = float(holm_value)
    tested = int(np.count_nonzero(~np.isnan(adjusted)))

    table = pd.DataFrame({"baseline": base["rate"], "candidate": cand["rate"]})
    table["difference"] = table["candidate"] - table["baseline"]
    success = quantities["success"]
    for message in messages:
        warnings.warn(message, TrialDataWarning, stacklevel=2)
    return Comparison(
        tasks=len(shared),
        baseline=success["baseline"],
        candidate=success["candidate"],
        difference=success["difference"],
        se=success["se"],
        ci=success["ci"],
        p_value=success["p_value"],
        per_task=table,
        quantities=quantities,
        tested=tested,
        only_baseline=only_baseline,
        only_candidate=only_candidate,
        confidence=float(confidence),
        warnings=tuple(messages),
    )


def _t_test(
    difference: float, se: float, count: int, confidence: float, bounds: tuple[float, float]
) -> tuple[tuple[float, float], float]:
    """The t interval (cut to ``bounds``) and two-sided p-value of a paired difference."""
    from scipy import stats

    if not (math.isfinite(difference) and math.isfinite(se)):
        return (math.nan, math.nan), math.nan
    if se <= 0:  # no spread and no noise to floor it: the point, and no doubt
        return (difference, difference), (1.0 if difference == 0 else 0.0)
    half = float(stats.t.ppf(0.5 + confidence / 2, count - 1)) * se
    low, high = max(bounds[0], difference - half), min(bounds[1], difference + half)
    p_value = float(2 * stats.t.sf(abs(difference) / se, count - 1))
    return (low, high), p_value


def _paired_proportion(
    a: np.ndarray, b: np.ndarray, n_a: np.ndarray, n_b: np.ndarray, k: int, confidence: float
) -> dict[str, Any]:
    both = ~np.isnan(a) & ~np.isnan(b)
    count = int(both.sum())
    out: dict[str, Any] = {"tasks": count}
    if count < 2:
        return {**out, "baseline": math.nan, "candidate": math.nan, "difference": math.nan,
                "se": math.nan, "ci": (math.nan, math.nan), "p_value": math.nan}
    a, b, n_a, n_b = a[both], b[both], n_a[both], n_b[both]
    d = b - a
    mean = float(d.mean())
    within = float(np.sum(k * a * (1 - a) / n_a + k * b * (1 - b) / n_b)) / count**2
    spread = float(d.var(ddof=1)) / count
    # the paired t variance, unless rounding left a spread of zero's dust
    spread = 0.0 if spread <= 1e-24 * max(1.0, mean * mean) else spread
    se = math.sqrt(max(spread, within))
    ci, p_value = _t_test(mean, se, count, confidence, (-1.0, 1.0))
    return {**out, "baseline": float(a.mean()), "candidate": float(b.mean()),
            "difference": mean, "se": se, "ci": ci, "p_value": p_value}


def _paired_ratio(pairs: list[tuple[np.ndarray, np.ndarray]], confidence: float) -> dict[str, Any]:
    """Difference of two ratios of per-task totals, paired by task through their
    linearised contributions ``u_i = (Y_i - R X_i) / mean(X)``."""
    estimates, contributions = [], []
    # every shared task counts, those with X_i = 0 too: a task with no success still spent
    # its cost (u_i = Y_i / mean(X) there)
    used = np.ones(len(pairs[0][0]), dtype=bool)
    count = int(used.sum())
    for y, x in pairs:
        y, x = y[used], x[used]
        total = float(x.sum())
        if total == 0:
            estimates.append(math.inf if float(y.sum()) else math.nan)
            contributions.append(np.full(count, np.nan))
            continue
        scale = float(np.max(np.abs(y))) if np.any(y) else 1.0
        ratio = float((y / scale).sum()) / total
        estimates.append(ratio * scale)
        contributions.append((y / scale - ratio * x) / (total / count) * scale)
    out: dict[str, Any] = {"tasks": count, "baseline": estimates[0], "candidate": estimates[1]}
    difference = estimates[1] - estimates[0] if all(map(math.isfinite, estimates)) else math.nan
    se = math.nan
    if count >= 2 and math.isfinite(difference):
        u = contributions[1] - contributions[0]
        se = math.sqrt(float(np.sum(u * u)) / (count * (count - 1)))
    ci, p_value = (
        _t_test(difference, se, count, confidence, (-math.inf, math.inf))
        if count >= 2 else ((math.nan, math.nan), math.nan)
    )
    return {**out, "difference": difference, "se": se, "ci": ci, "p_value": p_value}
