r"""Estimators over tasks: the per-task table, the success mean, pass@k and pass^k.

Each task weighs the same, whatever its number of trials; standard errors and intervals treat
the task as the unit of sampling (see ``relsim.evalstats``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable

import numpy as np

from relsim import intervals
from relsim._running import check_seed
from relsim.errors import invalid, show
from relsim.evalstats import bootstrap
from relsim.evalstats._common import TrialDataError, check_confidence
from relsim.evalstats.bootstrap import DEFAULT_REPLICATES
from relsim.evalstats.readers import trials_frame

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["DEFAULT_K", "pass_k", "per_task", "success_rate"]

#: The k reported when none are asked for (those above the largest trial count are dropped).
DEFAULT_K = (1, 3, 5)


def per_task(trials: pd.DataFrame | str | Path, *, threshold: float | None = None) -> pd.DataFrame:
    """Collapse trials to one row per task (in order of first appearance).

    Parameters
    ----------
    trials : pandas.DataFrame, str or Path
        A trials table or file (read and checked by :func:`read_trials`), or what
        :func:`read_trials` returned.
    threshold : float, optional
        Numeric scores: success when ``score >= threshold``.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``task``: ``trials`` (n_i), ``successes`` (c_i), ``rate`` (c_i / n_i), and
        ``cost`` (the task's total cost) and ``steps`` (its mean steps) when present.

    Examples
    --------
    >>> import pandas as pd
    >>> trials = pd.DataFrame({"task": ["a", "a", "b"], "trial": [1, 2, 1], "success": [1, 0, 1]})
    >>> per_task(trials)["rate"].tolist()
    [0.5, 1.0]
    """
    import pandas as pd

    frame = trials_frame(trials, threshold)
    codes, names = pd.factorize(frame["task"], sort=False)
    n = np.bincount(codes)
    out = pd.DataFrame(
        {
            "trials": n,
            "successes": np.bincount(codes, weights=frame["success"].to_numpy()).astype(np.int64),
        },
        index=pd.Index(names, name="task"),
    )
    out["rate"] = out["successes"] / out["trials"]
    if "cost" in frame:
        out["cost"] = np.bincount(codes, weights=frame["cost"].to_numpy())
    if "steps" in frame:
        out["steps"] = np.bincount(codes, weights=frame["steps"].to_numpy()) / n
    return out


def success_rate(tasks: pd.DataFrame, *, confidence: float = 0.95) -> pd.Series:
    r"""The success rate averaged over tasks, with its clustered standard error and interval.

    With per-task rates :math:`\hat p_i = c_i / n_i` over :math:`T` tasks,

    .. math::

        \bar p = \frac{1}{T}\sum_i \hat p_i, \qquad
        \mathrm{se}^2 = \max\Bigl(\frac{s^2}{T},\ \frac{\bar p(1-\bar p)}{N}\Bigr), \quad
        s^2 = \frac{1}{T-1}\sum_i (\hat p_i - \bar p)^2, \quad
        N = \frac{T}{\overline{1/n_i}}

    :math:`s^2/T` is the clustered variance (Miller 2024, "Adding Error Bars to Evals", in
    its per-task form): tasks are independent draws, trials inside a task correlated. It is
    never taken below the binomial variance of :math:`N` pooled trials (:math:`N = \sum n_i`
    with equal counts), which the estimate has even when every task shows the same rate. The
    interval is :func:`relsim.intervals.effective_count_interval` (Jeffreys on effective
    counts, with :math:`T-1` degrees of freedom): it stays inside [0, 1] and never has zero
    width. When every trial passed (or none did) the formula's se is 0; the se reported is
    then the standard deviation of the Jeffreys Beta behind the interval
    (:func:`relsim.intervals.jeffreys_sd` over :math:`N`), never 0 beside a real interval.
    With one task the standard error and interval are NaN.

    Parameters
    ----------
    tasks : pandas.DataFrame
        The output of :func:`per_task` (needs ``trials`` and ``successes``).
    confidence : float
        In (0, 1).

    Returns
    -------
    pandas.Series
        ``mean``, ``se``, ``ci_low``, ``ci_high``.

    Examples
    --------
    >>> import pandas as pd
    >>> trials = pd.DataFrame({"task": list("aabb"), "trial": [1, 2, 1, 2],
    ...                        "success": [1, 1, 1, 0]})
    >>> s = success_rate(per_task(trials))
    >>> float(s["mean"]), float(s["se"])
    (0.75, 0.25)
    """
    import pandas as pd

    check_confidence(confidence)
    n, c = counts(tasks)
    mean, se, low, high = effective_interval(c / n, n, 1, confidence)
    return pd.Series({"mean": mean, "se": se, "ci_low": low, "ci_high": high}, dtype=float)


def effective_interval(
    values: np.ndarray, n: np.ndarray, k: int, confidence: float
) -> tuple[float, float, float, float]:
    """Mean, floored standard error and effective-count Jeffreys interval of per-task values
    of pass@k (or pass^k, or success with ``k = 1``), over the tasks where they are not NaN."""
    present = ~np.isnan(values)
    kept = values[present]
    count = kept.size
    if count == 0:
        return (np.nan,) * 4
    mean = float(kept.mean())
    variance = float(kept.var(ddof=1)) / count if count > 1 else np.nan
    max_count = count / (k * float(np.mean(1.0 / n[present])))
    if count < 2:
        return mean, np.nan, np.nan, np.nan
    se = float(np.sqrt(max(variance, mean * (1.0 - mean) / max_count)))
    if se == 0:  # every trial passed, or none did: the Jeffreys interval's own spread, not 0
        se = float(intervals.jeffreys_sd(mean, max_count))
    low, high = intervals.effective_count_interval(mean, variance, max_count, count, confidence)
    return mean, se, low, high


def pass_k(
    tasks: pd.DataFrame,
    k: Iterable[int] | int,
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int | np.random.SeedSequence | None = None,
    confidence: float = 0.95,
    interval: str = "jeffreys",
) -> pd.DataFrame:
    r"""pass@k and pass^k averaged over tasks, with cluster-bootstrap intervals.

    For each ``k``, over the tasks with :math:`n_i \ge k` (the set :math:`E_k`),

    .. math::

        \widehat{\mathrm{pass@}k} = \frac{1}{|E_k|}\sum_{i\in E_k}
            \Bigl(1 - \binom{n_i-c_i}{k}\Big/\binom{n_i}{k}\Bigr), \qquad
        \widehat{\mathrm{pass\hat{}}k} = \frac{1}{|E_k|}\sum_{i\in E_k}
            \binom{c_i}{k}\Big/\binom{n_i}{k},

    each term the unbiased per-task estimator (Chen et al. 2021; tau-bench; docs/model.md
    section 2). A ``k`` with fewer than two eligible tasks (:math:`|E_k| < 2`) gets no
    interval (NaN), like the success mean with one task.

    The default interval, ``"jeffreys"``, is :func:`relsim.intervals.effective_count_interval`
    with :math:`N_{\max} = |E_k| / (k\,\overline{1/n_i})`: the clustered variance of the
    mean, never below the binomial floor :math:`\hat\theta(1-\hat\theta)/N_{\max}`, turned
    into an effective count of Bernoulli trials and a Jeffreys interval with :math:`|E_k|-1`
    degrees of freedom. It accounts for the trials within a task as well as the spread
    between tasks, stays inside [0, 1] and never has zero width. Its coverage of the
    population value, measured in ``tests/test_coverage.py`` (task rates logit-normal, typical
    and low success; 2,000 simulated evals a cell, Monte Carlo error 0.5 points): 94-99.4% at
    10, 20 and 50 tasks x 1, 3 and 5 trials but for 93.2% on success at 20 x 1 near 0.15
    (docs/commands/trials.md's table); 95% within the Monte Carlo error on 500 tasks x 5 trials; and
    conservative with 10 tasks or rates piled at 0 or 1 (10 tasks x 5 trials that all succeed
    give success the interval [0.94, 1] and pass@5, which each task's five trials show only
    once, [0.72, 1]).

    ``"bca"`` and ``"percentile"`` resample the :math:`T` tasks with replacement
    ``replicates`` times and recompute each estimate on the resample (over its tasks with
    :math:`n_i \ge k`; replicates whose resample holds no such task are left out).
    ``"percentile"`` takes the :math:`(1\mp\gamma)/2` quantiles of the replicates
    :math:`\theta^*`; ``"bca"`` (bias-corrected and accelerated, Efron 1987,
    :func:`relsim.intervals.bca_interval`) takes the quantiles at

    .. math::

        \alpha_{\pm} = \Phi\Bigl(z_0 + \frac{z_0 + z_\pm}{1 - a (z_0 + z_\pm)}\Bigr),
        \qquad z_0 = \Phi^{-1}\bigl(\Pr{}^*(\theta^* < \hat\theta)\bigr), \qquad
        a = \frac{\sum_i U_i^3}{6 (\sum_i U_i^2)^{3/2}}

    with :math:`z_\pm = \Phi^{-1}((1\pm\gamma)/2)` and :math:`U_i` the jackknife
    influence of task :math:`i`. Both see only the spread between tasks: when every task
    shows the same value they collapse to a point, and they under-cover on small
    harnesses (for pass@3 over 20 tasks x 5 trials with p ~ Beta(1.5, 1), BCa covered
    88.8 +- 0.7%, percentile less; far less with rates near 0 or 1).

    Parameters
    ----------
    tasks : pandas.DataFrame
        The output of :func:`per_task` (needs ``trials`` and ``successes``).
    k : int or iterable of int
        The k, each an integer in [1, max n_i].
    replicates : int
        Bootstrap replicates, an integer >= :data:`MIN_REPLICATES` (default
        :data:`DEFAULT_REPLICATES`).
    seed : int >= 0, numpy.random.SeedSequence or None
        Seeds the bootstrap (``numpy.random.default_rng(SeedSequence(seed))``, the stream of
        ``default_rng(seed)``); None draws fresh entropy, as the engines do. The Jeffreys
        interval draws nothing.
    confidence : float
        In (0, 1).
    interval : {"jeffreys", "bca", "percentile"}
        The interval: analytic (default) or from the cluster bootstrap.

    Returns
    -------
    pandas.DataFrame
        Indexed by (``metric``, ``k``) with metric ``pass_at_k`` or ``pass_hat_k``; columns
        ``estimate``, ``se`` (clustered, with the binomial floor), ``ci_low``, ``ci_high``
        (NaN when ``tasks < 2``), ``tasks`` (|E_k|), ``excluded_tasks``.

    Examples
    --------
    Two tasks of five trials, with 1 and 5 successes: pass@2 is the mean of
    :math:`1 - \binom{4}{2}/\binom{5}{2} = 0.4` and 1.

    >>> import pandas as pd
    >>> tasks = pd.DataFrame({"trials": [5, 5], "successes": [1, 5]}, index=["a", "b"])
    >>> float(pass_k(tasks, [2], replicates=100).loc[("pass_at_k", 2), "estimate"])
    0.7
    """
    seed_sequence, _ = check_seed(seed)
    table, _ = pass_k_table(
        tasks, k, replicates=replicates, seed=seed_sequence, confidence=confidence,
        interval=interval,
    )
    table.attrs["seed"] = seed
    return table


def pass_k_table(
    tasks: pd.DataFrame,
    k: Iterable[int] | int,
    *,
    replicates: int,
    seed: np.random.SeedSequence,
    confidence: float,
    interval: str,
) -> tuple[pd.DataFrame, list[str]]:
    """:func:`pass_k`'s table and what to warn about (unequal counts, lonely k); ``seed`` is
    the checked seed sequence of the bootstrap."""
    import pandas as pd

    check_confidence(confidence)
    bootstrap.check_settings(replicates, interval)
    n, c = counts(tasks)
    ks = check_k(k, int(n.max()))

    messages = []
    if n.min() != n.max():
        short = ", ".join(f"{int((n < k).sum())} at k={k}" for k in ks if (n < k).any())
        messages.append(
            f"trial counts differ across tasks ({n.min()} to {n.max()} per task): pass@k and "
            "pass^k average the unbiased per-task estimators over the tasks with at least k "
            f"trials ({'excluded: ' + short if short else 'none excluded'})"
        )

    values = task_values(n, c, ks)
    column_ks = list(ks) * 2
    eligible_counts = np.array([(n >= k).sum() for k in ks] * 2)
    estimates, se = np.full(values.shape[1], np.nan), np.full(values.shape[1], np.nan)
    low, high = np.full(values.shape[1], np.nan), np.full(values.shape[1], np.nan)
    for column, k in enumerate(column_ks):
        estimates[column], se[column], low[column], high[column] = effective_interval(
            values[:, column], n, k, confidence
        )
    if interval != "jeffreys":
        bootstrap.check_work(replicates, len(n), values.shape[1])
        rng = np.random.default_rng(seed)
        replicate_means = bootstrap.cluster_bootstrap(values, replicates, rng)
        for column in map(int, np.flatnonzero(eligible_counts >= 2)):
            low[column], high[column] = bootstrap.interval(
                values[:, column],
                estimates[column],
                replicate_means[:, column],
                confidence,
                interval,
            )
    lonely = [k for k in ks if (n >= k).sum() == 1]
    if lonely and len(n) > 1:  # with one task in all, analyze says so once for everything
        shown = ", ".join(str(k) for k in lonely)
        messages.append(
            f"only one task has at least k trials at k={shown}: pass@k and pass^k there have "
            "no interval (it needs at least two tasks)"
        )

    index = pd.MultiIndex.from_product([("pass_at_k", "pass_hat_k"), ks], names=["metric", "k"])
    table = pd.DataFrame(
        {
            "estimate": estimates,
            "se": se,
            "ci_low": low,
            "ci_high": high,
            "tasks": eligible_counts,
            "excluded_tasks": len(n) - eligible_counts,
        },
        index=index,
    )
    return table, messages


def task_values(n: np.ndarray, c: np.ndarray, ks: list[int]) -> np.ndarray:
    """Per-task unbiased estimates, ``(tasks, 2 len(ks))``: pass@k for each k, then pass^k
    for each k; NaN where ``n_i < k``. Evaluated once per distinct (n, c) pair: an eval has
    few of them, however many tasks."""
    from relsim import formulas

    pairs, inverse = np.unique(np.stack([n, c], axis=1), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    values = np.full((len(n), 2 * len(ks)), np.nan)
    for column, k in enumerate(ks):
        usable = pairs[:, 0] >= k
        at_k = np.full(len(pairs), np.nan)
        hat_k = np.full(len(pairs), np.nan)
        at_k[usable] = formulas.pass_at_k_estimate(pairs[usable, 0], pairs[usable, 1], k)
        hat_k[usable] = formulas.pass_hat_k_estimate(pairs[usable, 0], pairs[usable, 1], k)
        if k == 1:  # pass@1 = pass^1 = c / n: one number, to the last bit
            at_k[usable] = hat_k[usable] = pairs[usable, 1] / pairs[usable, 0]
        values[:, column] = at_k[inverse]
        values[:, len(ks) + column] = hat_k[inverse]
    return values


def counts(tasks: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The per-task trial and success counts, checked."""
    missing = [
        name for name in ("trials", "successes") if name not in getattr(tasks, "columns", ())
    ]
    if missing:
        raise TrialDataError(
            "tasks: must be a per-task table (see per_task) with columns 'trials' and "
            f"'successes', got one missing {', '.join(repr(m) for m in missing)}"
        )
    n = tasks["trials"].to_numpy()
    c = tasks["successes"].to_numpy()
    if len(n) == 0:
        raise TrialDataError("tasks: must hold at least one task, got none")
    if not (np.issubdtype(n.dtype, np.integer) and np.issubdtype(c.dtype, np.integer)):
        raise TrialDataError(
            "tasks: must hold integer counts in 'trials' and 'successes', "
            f"got dtypes {n.dtype} and {c.dtype}"
        )
    bad = (n < 1) | (c < 0) | (c > n)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise TrialDataError(
            "tasks: must have trials >= 1 and 0 <= successes <= trials for every task, got "
            f"trials {n[first]} and successes {c[first]} for task {show(tasks.index[first])}"
        )
    return n.astype(np.int64), c.astype(np.int64)


def default_k(largest: int) -> list[int]:
    """The k of :data:`DEFAULT_K` not above ``largest`` (the most trials of a task), else 1."""
    return [value for value in DEFAULT_K if value <= largest] or [1]


def check_k(k: Iterable[int] | int, largest: int) -> list[int]:
    """``k`` (one integer or several) as a sorted list of distinct integers in [1, largest]."""
    try:
        given = [k] if isinstance(k, (int, np.integer)) else list(k)
        values = [int(value) for value in given]
        if any(isinstance(value, bool) or int(value) != value for value in given):
            raise TypeError
    except (TypeError, ValueError):
        raise invalid("k", "integers >= 1", k) from None
    if not values:
        raise invalid("k", "at least one value", given)
    for value in values:
        if value < 1 or value > largest:
            raise invalid(
                "k", f"in [1, {largest}] (the largest number of trials of a task)", value
            )
    return sorted(set(values))
