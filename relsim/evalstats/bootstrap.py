r"""The cluster bootstrap over tasks, and its percentile and BCa intervals.

Trials of one task are correlated, so the bootstrap resamples whole **tasks**: each replicate
draws :math:`T` task indices with replacement from ``numpy.random.default_rng(seed)`` and
recomputes the mean over the drawn tasks of a per-task value (skipping tasks where it is NaN,
i.e. not eligible). The intervals themselves are :func:`relsim.intervals.bca_interval` and
:func:`relsim.intervals.percentile_interval`.
"""

from __future__ import annotations

import math

import numpy as np

from relsim import intervals
from relsim.errors import invalid
from relsim.evalstats._common import is_count

__all__ = [
    "DEFAULT_REPLICATES",
    "INTERVALS",
    "MIN_REPLICATES",
    "cluster_bootstrap",
    "interval",
    "leave_one_out_means",
]

#: Number of cluster-bootstrap replicates behind the pass@k / pass^k intervals.
DEFAULT_REPLICATES = 2000
#: The fewest replicates accepted: fewer cannot place the 2.5% and 97.5% quantiles (with one,
#: the "interval" is a single resample's mean and need not contain the estimate).
MIN_REPLICATES = 100
#: Intervals of pass@k and pass^k: Jeffreys on effective counts (the default, analytic; see
#: :func:`relsim.intervals.effective_count_interval`), or from the cluster bootstrap:
#: bias-corrected and accelerated, or plain percentile.
INTERVALS = ("jeffreys", "bca", "percentile")
#: The most memory the bootstrap's replicate means may take, and the most random draws.
MAX_BOOTSTRAP_BYTES = 1 << 30
MAX_BOOTSTRAP_DRAWS = 10**10

# rows of one bootstrap chunk times tasks: bounds the count matrix to about 16 MB
CHUNK_CELLS = 1 << 21


def check_settings(replicates: int, interval: str) -> None:
    """Refuse a replicate count below :data:`MIN_REPLICATES` or an unknown interval."""
    if interval not in INTERVALS:
        raise invalid("interval", f"one of {', '.join(INTERVALS)}", interval)
    if not is_count(replicates) or replicates < MIN_REPLICATES:
        raise invalid("replicates", f"an integer >= {MIN_REPLICATES}", replicates)


def check_work(replicates: int, tasks: int, statistics: int) -> None:
    """Refuse, before any work, a bootstrap whose replicate means would take over
    :data:`MAX_BOOTSTRAP_BYTES` or which would draw over :data:`MAX_BOOTSTRAP_DRAWS` task
    indices, saying what it would take and what to do."""
    memory = replicates * statistics * 8 * 2  # the means and their sorted copy
    draws = replicates * tasks
    if memory <= MAX_BOOTSTRAP_BYTES and draws <= MAX_BOOTSTRAP_DRAWS:
        return
    largest = min(
        MAX_BOOTSTRAP_BYTES // (16 * statistics), MAX_BOOTSTRAP_DRAWS // max(1, tasks)
    )
    raise invalid(
        "replicates",
        f"at most {largest} for {tasks} tasks and {statistics} statistics (this would take "
        f"{memory / (1 << 30):.3g} GiB and {draws:.3g} random draws; the default "
        f"{DEFAULT_REPLICATES} is plenty, and the jeffreys interval needs none)",
        replicates,
    )


def cluster_bootstrap(
    values: np.ndarray,
    replicates: int,
    rng: np.random.Generator,
    *,
    chunk_cells: int = CHUNK_CELLS,
) -> np.ndarray:
    r"""Per-replicate means of each column over resampled rows (tasks), ignoring NaN cells.

    Each replicate draws ``T`` task indices with replacement; its mean for a column is
    :math:`\sum_i m_i v_i / \sum_i m_i` over the tasks whose value :math:`v_i` is not NaN,
    :math:`m_i` the times task :math:`i` was drawn (NaN when no drawn task has a value). The
    counts come from one ``bincount`` per chunk of replicates and the sums from one matrix
    product; ``chunk_cells`` (replicates per chunk times tasks) bounds the memory, and the
    draws do not depend on it.

    Parameters
    ----------
    values : numpy.ndarray
        ``(tasks, statistics)``: each task's value of each statistic, NaN where not eligible.
    replicates : int
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray
        ``(replicates, statistics)``.
    """
    count_tasks = values.shape[0]
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    present = present.astype(float)
    out = np.empty((replicates, values.shape[1]))
    rows = max(1, chunk_cells // count_tasks)
    for start in range(0, replicates, rows):
        size = min(rows, replicates - start)
        draws = rng.integers(0, count_tasks, size=(size, count_tasks))
        flat = (draws + (np.arange(size) * count_tasks)[:, None]).ravel()
        counts = np.bincount(flat, minlength=size * count_tasks).reshape(size, count_tasks)
        counts = counts.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + size] = (counts @ filled) / (counts @ present)
    return out


def leave_one_out_means(values: np.ndarray) -> np.ndarray:
    """The jackknife of the mean over eligible tasks: for each task, the mean over the
    others. Leaving out a task that is not eligible (NaN) leaves the mean as it is."""
    present = ~np.isnan(values)
    eligible, total = int(present.sum()), float(np.nansum(values))
    return np.where(
        present, (total - np.where(present, values, 0.0)) / (eligible - 1), total / eligible
    )


def interval(
    values: np.ndarray,
    estimate: float,
    replicate_means: np.ndarray,
    confidence: float,
    method: str,
) -> tuple[float, float]:
    """The ``method`` ("bca" or "percentile") interval of one statistic.

    ``values`` are the per-task values (NaN where not eligible; at least two eligible),
    ``estimate`` their mean over the eligible tasks, ``replicate_means`` the statistic's
    column of :func:`cluster_bootstrap`.
    """
    if method == "percentile":
        return intervals.percentile_interval(replicate_means, confidence)
    if np.count_nonzero(~np.isnan(values)) < 2:  # no jackknife: not called so, but say why
        return (math.nan, math.nan)
    return intervals.bca_interval(
        replicate_means, estimate, leave_one_out_means(values), confidence
    )
