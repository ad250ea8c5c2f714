r"""Metric columns, rates between them, cost per success, and failure categories.

Every number here is a **ratio of per-task totals**, so its standard error is clustered by
task like the success rate's: with per-task totals :math:`Y_i` (numerator) and :math:`X_i`
(denominator) over the :math:`T` tasks holding any data (:math:`X_i > 0` or :math:`Y_i \ne 0`),

.. math::

    R = \frac{\sum_i Y_i}{\sum_i X_i}, \qquad
    \mathrm{se}^2 = \frac{1}{T(T-1)} \sum_i u_i^2, \qquad
    u_i = \frac{Y_i - R X_i}{\bar X}

(the linearised ratio estimator of survey sampling, Cochran 1977 section 6.4). The mean per
trial of a column is the ratio of its total to the trial count (the mean over trials), the mean
per successful trial the ratio over successful trials, a rate ``a/b`` the ratio of the two
columns' totals, and the cost per success the total cost over the total successes. The
intervals are :func:`relsim.evalstats.smallsample.ratio_interval`'s (the hull of a
skewness-corrected t interval and, for positive values, a log-scale one: they hold for
heavy-tailed metrics; a column of zeros gets the rule of three; cut at 0 for a quantity that
cannot be negative) and, for the cost per success,
:func:`relsim.evalstats.smallsample.cost_per_success_interval`, which adds the uncertainty of
the success count; a share of failures gets :func:`relsim.intervals.effective_count_interval`
with the failures as its binomial floor. Sums are taken on values divided by the largest
magnitude, so totals of huge values do not overflow.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from relsim import intervals
from relsim.errors import invalid
from relsim.evalstats._common import task_sums

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "DEFAULT_INFRA_CATEGORIES",
    "categories",
    "cost_per_success",
    "metric_summary",
    "ratio",
    "rate",
]

#: Failure categories taken as infrastructure noise unless told otherwise (case-insensitive).
DEFAULT_INFRA_CATEGORIES = ("infra", "timeout")
#: The category of a failed trial whose category cell is empty.
UNCATEGORIZED = "uncategorized"


def ratio(
    numerator: np.ndarray, denominator: np.ndarray, confidence: float = 0.95
) -> dict[str, Any]:
    """``{estimate, se, ci, tasks}`` of :math:`\\sum Y_i / \\sum X_i` over per-task totals,
    from :func:`relsim.evalstats.smallsample.ratio_interval`.

    Estimate infinite (and ``se``, ``ci`` NaN) when the denominator total is 0 and the
    numerator total is not; NaN when both are 0. The tasks are those with
    :math:`X_i > 0` or :math:`Y_i \\ne 0` (a task without a success still spent its cost);
    ``se`` and ``ci`` are NaN with fewer than two.

    Examples
    --------
    >>> out = ratio(np.array([2.0, 4.0]), np.array([1.0, 1.0]))
    >>> out["estimate"], out["se"]  # u = (-1, 1): se^2 = 2 / (2 * 1)
    (3.0, 1.0)
    """
    from relsim.evalstats.smallsample import ratio_interval

    y = np.asarray(numerator, dtype=float)
    x = np.asarray(denominator, dtype=float)
    estimate, se, low, high = ratio_interval(y, x, confidence)
    return {
        "estimate": estimate,
        "se": se,
        "ci": (low, high),
        "tasks": int(np.count_nonzero((x > 0) | (y != 0))),
    }


def metric_summary(
    frame: pd.DataFrame, codes: np.ndarray, tasks: int, column: str, confidence: float = 0.95
) -> dict[str, Any]:
    """Mean per trial and per successful trial of ``column`` (NaN cells left out), with
    clustered intervals: ``{mean, se, ci, mean_success, se_success, ci_success, trials}``."""
    values = frame[column].to_numpy(dtype=float)
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    success = frame["success"].to_numpy() == 1
    everyone = ratio(
        task_sums(codes, tasks, filled),
        np.bincount(codes, weights=present.astype(float), minlength=tasks),
        confidence,
    )
    winners = ratio(
        task_sums(codes, tasks, np.where(success, filled, 0.0)),
        np.bincount(codes, weights=(present & success).astype(float), minlength=tasks),
        confidence,
    )
    return {
        "mean": everyone["estimate"],
        "se": everyone["se"],
        "ci": everyone["ci"],
        "mean_success": winners["estimate"],
        "se_success": winners["se"],
        "ci_success": winners["ci"],
        "trials": int(present.sum()),
    }


def rate(
    frame: pd.DataFrame, codes: np.ndarray, tasks: int, spec: str, confidence: float = 0.95
) -> dict[str, Any]:
    """The rate ``"a/b"``: total of column ``a`` over total of ``b`` (rows with both), with a
    clustered ratio interval: ``{estimate, se, ci}``."""
    top, bottom = parse_rate(spec, frame.attrs.get("relsim_metrics", []))
    a = frame[top].to_numpy(dtype=float)
    b = frame[bottom].to_numpy(dtype=float)
    both = ~np.isnan(a) & ~np.isnan(b)
    out = ratio(
        task_sums(codes, tasks, np.where(both, a, 0.0)),
        task_sums(codes, tasks, np.where(both, b, 0.0)),
        confidence,
    )
    return {"estimate": out["estimate"], "se": out["se"], "ci": out["ci"]}


def parse_rate(spec: str, metrics: Iterable[str]) -> tuple[str, str]:
    """``"a/b"`` as the two metric column names, checked (with a "did you mean")."""
    import difflib

    metrics = list(metrics)
    parts = str(spec).split("/")
    if len(parts) != 2 or not all(part.strip() for part in parts):
        raise invalid("rate", "two numeric columns as NUMERATOR/DENOMINATOR", spec)
    names = tuple(part.strip() for part in parts)
    for name in names:
        if name not in metrics:
            close = difflib.get_close_matches(name, metrics, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            shown = ", ".join(metrics) or "none"
            raise invalid(
                f"rate {spec}", f"made of numeric columns ({shown}){hint}", name
            )
    return names  # type: ignore[return-value]


def cost_per_success(
    frame: pd.DataFrame, codes: np.ndarray, tasks: int, confidence: float = 0.95
) -> dict[str, Any]:
    """Total cost over total successes, with the interval of
    :func:`relsim.evalstats.smallsample.cost_per_success_interval` (which carries the
    uncertainty of the success count): ``{estimate, se, ci}``; the estimate is infinite (None
    in JSON) when no trial succeeded, and the interval then ``[low, inf)``."""
    from relsim.evalstats.smallsample import cost_per_success_interval

    estimate, se, low, high = cost_per_success_interval(*cost_totals(frame, codes, tasks),
                                                        confidence)
    return {"estimate": estimate, "se": se, "ci": (low, high)}


def cost_totals(
    frame: pd.DataFrame, codes: np.ndarray, tasks: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-task totals of cost, successes and trials (``codes`` >= 0 are the tasks kept)."""
    keep = codes >= 0
    kept = codes[keep]
    cost = task_sums(kept, tasks, frame["cost"].to_numpy(dtype=float)[keep])
    successes = np.bincount(
        kept, weights=frame["success"].to_numpy(dtype=float)[keep], minlength=tasks
    )
    trials = np.bincount(kept, minlength=tasks).astype(float)
    return cost, successes, trials


def category_labels(column: pd.Series) -> pd.Series:
    """A category column as stripped text: an empty or missing cell ``""``, a numeric code
    as written (``404``, not ``404.0``), so that codes and empty cells sort together."""

    import pandas as pd

    def label(value: Any) -> str:
        if value is None or (not isinstance(value, str) and pd.isna(value)):
            return ""
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return str(int(value))
        return str(value).strip()

    return column.astype(object).map(label)


def categories(
    frame: pd.DataFrame,
    codes: np.ndarray,
    names: Any,
    column: str,
    confidence: float = 0.95,
) -> dict[str, dict[str, Any]]:
    r"""Failure categories: for each category of the failed trials, ``count``, ``share`` of
    the failures with an interval ``ci``, and ``tasks`` (those it hits, most hits first).

    The share's interval is :func:`relsim.intervals.effective_count_interval` of the clustered
    ratio (category count over failures, per task) with the failures as the binomial floor.
    Categories come sorted by count, most first (then by name); an empty cell is
    ``"uncategorized"``.

    Every category is counted in one pass over the failed trials (sorted once), and the
    ratios of all categories are computed together (:func:`_category_shares`: the one
    formula of :func:`ratio`, over the tasks each category hits), so that a million distinct
    categories take seconds, not the square of their number.
    """
    failed = frame["success"].to_numpy() == 0
    labels = category_labels(frame[column]).to_numpy()[failed]
    labels = np.where(labels == "", UNCATEGORIZED, labels)
    failed_codes = codes[failed].astype(np.int64)
    tasks = len(names)
    failures = np.bincount(failed_codes, minlength=tasks).astype(float)
    total = int(failures.sum())
    if total == 0:
        return {}
    unique, which = np.unique(labels.astype(str), return_inverse=True)  # sorted names
    which = which.reshape(-1).astype(np.int64)
    # (category, task) pairs and how many failures of the category the task holds
    pairs, hits = np.unique(which * tasks + failed_codes, return_counts=True)
    pair_label, pair_task = np.divmod(pairs, tasks)
    counts = np.bincount(which, minlength=len(unique))
    share, se = _category_shares(pair_label, pair_task, hits.astype(float), failures, len(unique))
    used = int((failures > 0).sum())
    low, high = intervals.effective_count_interval(share, se**2, total, used, confidence)
    low, high = np.broadcast_to(low, share.shape), np.broadcast_to(high, share.shape)
    # each category's tasks, most hits first, then by name
    task_names = [str(name) for name in names]
    name_rank = np.empty(tasks, dtype=np.int64)
    name_rank[sorted(range(tasks), key=task_names.__getitem__)] = np.arange(tasks)
    order = np.lexsort((name_rank[pair_task], -hits, pair_label))
    ordered_tasks = pair_task[order].tolist()
    bounds = np.concatenate(([0], np.cumsum(np.bincount(pair_label, minlength=len(unique))))).tolist()
    found: dict[str, dict[str, Any]] = {}
    for i in np.lexsort((np.arange(len(unique)), -counts)).tolist():  # most first, then by name
        found[str(unique[i])] = {
            "count": int(counts[i]),
            "share": float(share[i]),
            "ci": (float(low[i]), float(high[i])),
            "tasks": [task_names[t] for t in ordered_tasks[bounds[i] : bounds[i + 1]]],
        }
    return found


def _category_shares(
    label: np.ndarray, task: np.ndarray, hits: np.ndarray, failures: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray]:
    r""":func:`ratio`'s estimate and ``se`` of every category's share of the failures at once.

    For category :math:`c`, :math:`Y_i` is its failures in task :math:`i` (nonzero only on the
    ``(label, task, hits)`` pairs) and :math:`X_i` all failures there; every task with a
    failure counts (:math:`T`). The sum of squares splits into the tasks the category hits
    and the rest, :math:`\sum_i (Y_i - R X_i)^2 = \sum_{hit} [(Y_i - R X_i)^2 - R^2 X_i^2] +
    R^2 \sum_i X_i^2`, each part a sum over the pairs; counts are integers, so no part loses
    precision to cancellation.
    """
    x = failures
    x_total = float(x.sum())
    used = int((x > 0).sum())
    y_total = np.bincount(label, weights=hits, minlength=count)
    share = y_total / x_total
    if used < 2:
        return share, np.full(count, math.nan)
    x_hit = x[task]
    r = share[label]
    hit_part = np.bincount(label, weights=(hits - r * x_hit) ** 2 - (r * x_hit) ** 2, minlength=count)
    squares = np.maximum(0.0, hit_part + share**2 * float(np.sum(x * x)))
    mean_x = x_total / used
    return share, np.sqrt(squares / (used * (used - 1))) / mean_x
