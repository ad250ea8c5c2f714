"""Estimators and intervals for real trial data: pass@k, pass^k, paired comparisons, power.

An eval is a table of trials, one row per run of the agent on a task: ``task``, ``trial``,
``success`` and optionally ``cost`` and ``steps``. Trials of one task are correlated (a hard
task is hard every time), so every standard error and interval here treats the **task** as the
unit of sampling: the success rate is averaged over tasks, its standard error is the spread of
the per-task rates (the clustered standard error of Miller 2024, "Adding Error Bars to Evals",
in its per-task form), and the pass@k / pass^k intervals come from a bootstrap that resamples
whole tasks.

Conventions
-----------
- **Success mean**: the mean over tasks of each task's success rate ``c_i / n_i`` (each task
  weighs the same, whatever its number of trials).
- **pass@k and pass^k with unequal trial counts**: the mean, over the tasks with ``n_i >= k``,
  of the unbiased per-task estimators of MODEL.md section 2
  (:func:`relsim.formulas.pass_at_k_estimate`, :func:`relsim.formulas.pass_hat_k_estimate`);
  tasks with fewer than ``k`` trials are excluded and counted in ``excluded_tasks``, and a
  warning says so whenever the counts differ.
- **Bootstrap**: ``replicates`` (default 2000) resamples of the tasks with replacement, drawn
  from ``numpy.random.default_rng(seed)``; each replicate recomputes the whole estimate (mean
  over the resampled tasks that have ``n_i >= k``). The interval is the BCa interval of the
  replicates (bias-corrected and accelerated), or on request the plain percentile interval,
  which under-covers for the skewed per-task values of pass@k and pass^k (see
  :func:`pass_k`). At least :data:`MIN_REPLICATES` replicates are required, and a k with
  fewer than two eligible tasks gets no interval (NaN), as the success mean gets none with
  one task: resampling one task cannot show how tasks vary.
- **Power**: a normal approximation for a paired design (see :func:`tasks_needed`).

Everything here returns pandas objects or frozen result objects with ``to_dict()`` (the JSON
the command line prints). pandas and scipy are imported inside the functions that use them.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "DEFAULT_KS",
    "DEFAULT_REPLICATES",
    "INTERVALS",
    "MIN_REPLICATES",
    "Comparison",
    "TrialAnalysis",
    "TrialDataWarning",
    "analyze",
    "compare",
    "minimum_detectable_effect",
    "pass_k",
    "per_task",
    "read_trials",
    "success_rate",
    "tasks_needed",
]

#: Number of cluster-bootstrap replicates behind the pass@k / pass^k intervals.
DEFAULT_REPLICATES = 2000
#: The fewest replicates accepted: fewer cannot place the 2.5% and 97.5% quantiles (with one,
#: the "interval" is a single resample's mean and need not contain the estimate).
MIN_REPLICATES = 100
#: The k reported when none are asked for (those above the largest trial count are dropped).
DEFAULT_KS = (1, 3, 5)

#: Bootstrap intervals: bias-corrected and accelerated (the default), or plain percentile.
INTERVALS = ("bca", "percentile")

REQUIRED_COLUMNS = ("task", "trial", "success")
OPTIONAL_COLUMNS = ("cost", "steps")

# rows of one bootstrap chunk times tasks: bounds the count matrix to about 16 MB
_BOOTSTRAP_CHUNK_CELLS = 1 << 21


class TrialDataWarning(UserWarning):
    """Something about the trial data the reader should know (unequal counts, unshared tasks)."""


# --------------------------------------------------------------------------------------------
# reading


def read_trials(
    source: str | Path | pd.DataFrame, *, threshold: float | None = None
) -> pd.DataFrame:
    """Read a table of trials and check it.

    Parameters
    ----------
    source : str, Path or pandas.DataFrame
        A CSV file, a JSONL file (one JSON object per line; chosen by the ``.jsonl`` /
        ``.ndjson`` suffix, or by a first character ``{``), or a DataFrame. Columns ``task``,
        ``trial`` and ``success`` are required, ``cost`` and ``steps`` optional; others are
        ignored.
    threshold : float, optional
        When given, ``success`` holds a numeric score and a trial succeeds when
        ``score >= threshold``. Otherwise ``success`` must be 0/1 or true/false.

    Returns
    -------
    pandas.DataFrame
        One row per trial: ``task`` (str), ``trial`` (str), ``success`` (int 0/1), ``cost`` and
        ``steps`` (float) when present, and ``line``: where the row was in the input (the file's
        line number; for a DataFrame, the 1-based row number). The other functions of this
        module take this frame as it is, without reading it again.

    Raises
    ------
    ValueError
        For a file that is not UTF-8 text, an empty input, a missing column, a missing or
        unreadable value, a non-binary ``success`` (or a non-numeric score with
        ``threshold``), a negative ``cost``, a ``steps`` that is not a number > 0, or a
        duplicate (task, trial) pair. The message names the file, the line and the column
        (for text that is not UTF-8: the file, the first bad line and the byte).

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"task": ["a", "a", "b"], "trial": [1, 2, 1],
    ...                       "success": ["true", "false", "1"]})
    >>> read_trials(frame)["success"].tolist()
    [1, 0, 1]
    """
    import pandas as pd

    if threshold is not None and not (_is_real(threshold) and math.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    if isinstance(source, pd.DataFrame):
        name, where = "trials", "row"
        columns = [str(column).strip() for column in source.columns]
        cells = [_column_text(source.iloc[:, i]) for i in range(source.shape[1])]
        lines = np.arange(1, len(source) + 1)
    else:
        path = Path(source)
        name, where = str(path), "line"
        columns, cells, lines = _read_file(path)

    missing = [column for column in REQUIRED_COLUMNS if column not in columns]
    if missing:
        raise ValueError(
            f"{name}: missing column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)} (need task, trial, success; "
            f"optional cost, steps; found {', '.join(repr(c) for c in columns) or 'none'})"
        )
    repeated = sorted(
        {c for c in columns if columns.count(c) > 1 and c in REQUIRED_COLUMNS + OPTIONAL_COLUMNS}
    )
    if repeated:
        raise ValueError(f"{name}: column {repeated[0]!r} appears more than once")
    if len(lines) == 0:
        raise ValueError(f"{name} is empty: no trial rows")

    def fail(mask: np.ndarray, message: str) -> None:
        if mask.any():
            first = int(np.flatnonzero(mask)[0])
            count = int(mask.sum())
            more = f" ({count - 1} more row{'s' if count > 2 else ''} like it)" if count > 1 else ""
            raise ValueError(f"{name} {where} {lines[first]}: {message(first)}{more}")

    text = {
        column: values
        for column, values in zip(columns, cells)
        if column in REQUIRED_COLUMNS + OPTIONAL_COLUMNS
    }
    for column in REQUIRED_COLUMNS + tuple(c for c in OPTIONAL_COLUMNS if c in text):
        empty = np.asarray(text[column] == "", dtype=bool)
        fail(empty, lambda i, column=column: f"missing value in column {column!r}")

    result = pd.DataFrame({"task": text["task"].astype(str), "trial": text["trial"].astype(str)})
    success_text = text["success"]
    if threshold is None:
        lowered = np.char.lower(success_text.astype(str))
        numeric = _to_float(lowered)
        success = np.where(lowered == "true", 1.0, np.where(lowered == "false", 0.0, numeric))
        fail(
            ~np.isin(success, (0.0, 1.0)),
            lambda i: "success must be 0/1 or true/false (or a score with --threshold), "
            f"got {success_text[i]!r}",
        )
    else:
        score = _to_float(success_text.astype(str))
        fail(
            ~np.isfinite(score),
            lambda i: f"success must be a numeric score with a threshold, got {success_text[i]!r}",
        )
        success = (score >= threshold).astype(float)
    result["success"] = success.astype(np.int64)

    if "cost" in text:
        cost = _to_float(text["cost"].astype(str))
        fail(
            ~(cost >= 0) | ~np.isfinite(cost),
            lambda i: f"cost must be a number >= 0, got {text['cost'][i]!r}",
        )
        result["cost"] = cost
    if "steps" in text:
        steps = _to_float(text["steps"].astype(str))
        fail(
            ~(steps > 0) | ~np.isfinite(steps),
            lambda i: f"steps must be a number > 0, got {text['steps'][i]!r}",
        )
        result["steps"] = steps
    result["line"] = lines
    result.attrs["relsim_trials"] = True

    duplicated = result.duplicated(["task", "trial"], keep="first").to_numpy()
    if duplicated.any():
        first = int(np.flatnonzero(duplicated)[0])
        task, trial = result["task"].iat[first], result["trial"].iat[first]
        earlier = result["line"][(result["task"] == task) & (result["trial"] == trial)].iat[0]
        fail(
            duplicated,
            lambda i: f"duplicate (task, trial) pair ({task!r}, {trial!r}), "
            f"first seen at {where} {earlier}",
        )
    return result


def _read_file(path: Path) -> tuple[list[str], list[np.ndarray], np.ndarray]:
    """Column names, each column's cells as text ('' when missing), and each row's line."""
    import pandas as pd

    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        with path.open("r", encoding="utf-8-sig") as handle:
            first = handle.read(4096).lstrip()
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    if not first:
        raise ValueError(f"{path} is empty: no trial rows")
    if path.suffix.lower() in (".jsonl", ".ndjson") or first.startswith("{"):
        return _read_jsonl(path)
    try:
        # header=None: the header is row 0, so a row with too many fields is an error with its
        # line number rather than a silent shift into the index
        table = pd.read_csv(
            path,
            header=None,
            dtype=str,
            keep_default_na=False,
            skip_blank_lines=False,
            encoding="utf-8-sig",
        )
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    except pd.errors.ParserError as error:
        raise ValueError(f"{path}: not a readable CSV file ({error})".replace("\n", " ")) from None
    cells = [
        np.char.strip(table.iloc[:, i].to_numpy(dtype=str)).astype(object)
        for i in range(table.shape[1])
    ]
    columns = [str(column[0]) for column in cells]
    cells = [column[1:] for column in cells]
    lines = np.arange(2, len(table) + 1)  # line 1 is the header
    blank = np.logical_and.reduce([column == "" for column in cells])
    return columns, [column[~blank] for column in cells], lines[~blank]


def _read_jsonl(path: Path) -> tuple[list[str], list[np.ndarray], np.ndarray]:
    import json

    records, lines = [], []
    try:
        with path.open("r", encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as error:
                    raise ValueError(
                        f"{path} line {number}: not valid JSON ({error.msg})"
                    ) from None
                if not isinstance(record, dict):
                    raise ValueError(
                        f"{path} line {number}: each line must be a JSON object, "
                        f"got {type(record).__name__}"
                    )
                records.append(record)
                lines.append(number)
    except UnicodeDecodeError:
        raise _not_utf8(path) from None
    columns = [str(c) for c in dict.fromkeys(key for record in records for key in record)]
    cells = [np.array([_as_text(r.get(c)) for r in records], dtype=object) for c in columns]
    return columns, cells, np.asarray(lines, dtype=np.int64)


def _not_utf8(path: Path) -> ValueError:
    """The error for a file that does not decode as UTF-8, naming its first bad line.

    Only called once decoding has failed: the text reader decodes in blocks, so the line is
    found again here, one line at a time (a newline byte never occurs inside a UTF-8
    sequence, so each line decodes on its own).
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as error:
                return ValueError(
                    f"{path} line {number}: not UTF-8 text (byte 0x{raw[error.start]:02x} at "
                    f"byte {error.start + 1} of the line: {error.reason}); save it as UTF-8"
                )
    return ValueError(f"{path}: not UTF-8 text; save it as UTF-8")


def _column_text(column: pd.Series) -> np.ndarray:
    """A DataFrame column as text cells (see :func:`_as_text`), vectorised for plain dtypes."""
    values = column.to_numpy()
    if values.dtype == bool:
        return np.where(values, "true", "false").astype(object)
    if np.issubdtype(values.dtype, np.integer):
        return values.astype(str).astype(object)
    if np.issubdtype(values.dtype, np.floating):
        text = np.array([repr(v) for v in values.astype(float).tolist()], dtype=object)
        text[np.isnan(values)] = ""
        return text
    return np.array([_as_text(value) for value in values], dtype=object)


def _as_text(value: Any) -> str:
    """One cell as text: '' for missing (None, NaN), 'true'/'false' for booleans."""
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value).strip()


def _to_float(text: np.ndarray) -> np.ndarray:
    """Parse text to float; NaN where it is not a number."""
    import pandas as pd

    return pd.to_numeric(pd.Series(text, dtype=object), errors="coerce").to_numpy(dtype=float)


def _trials_frame(source: Any, threshold: float | None) -> pd.DataFrame:
    """A checked trials frame: ``source`` as read, or already read by :func:`read_trials`."""
    import pandas as pd

    if (
        isinstance(source, pd.DataFrame)
        and source.attrs.get("relsim_trials")
        and set(REQUIRED_COLUMNS) <= set(source.columns)
    ):
        return source  # already read and checked: the threshold was applied then
    return read_trials(source, threshold=threshold)


# --------------------------------------------------------------------------------------------
# per-task summaries and the success mean


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

    frame = _trials_frame(trials, threshold)
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
    r"""The success rate averaged over tasks, with its clustered standard error and t interval.

    With per-task rates :math:`\hat p_i = c_i / n_i` over :math:`T` tasks,

    .. math::

        \bar p = \frac{1}{T}\sum_i \hat p_i, \qquad
        \mathrm{se} = \frac{s}{\sqrt{T}}, \quad s^2 = \frac{1}{T-1}\sum_i (\hat p_i - \bar p)^2,
        \qquad \bar p \pm t_{(1+\gamma)/2,\,T-1}\,\mathrm{se}

    (:math:`\gamma` the confidence). This treats tasks as independent draws and trials inside a
    task as correlated; with one task the standard error and interval are NaN.

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
    from scipy import stats

    _check_confidence(confidence)
    n, c = _counts(tasks)
    rates = c / n
    count = len(rates)
    mean = float(rates.mean()) if count else math.nan
    se = float(rates.std(ddof=1) / math.sqrt(count)) if count > 1 else math.nan
    half = float(stats.t.ppf(0.5 + confidence / 2, count - 1)) * se if count > 1 else math.nan
    return pd.Series(
        {"mean": mean, "se": se, "ci_low": mean - half, "ci_high": mean + half}, dtype=float
    )


# --------------------------------------------------------------------------------------------
# pass@k and pass^k


def pass_k(
    tasks: pd.DataFrame,
    ks: Iterable[int],
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int | np.random.SeedSequence | np.random.Generator | None = 0,
    confidence: float = 0.95,
    interval: str = "bca",
) -> pd.DataFrame:
    r"""pass@k and pass^k averaged over tasks, with cluster-bootstrap intervals.

    For each ``k``, over the tasks with :math:`n_i \ge k` (the set :math:`E_k`),

    .. math::

        \widehat{\mathrm{pass@}k} = \frac{1}{|E_k|}\sum_{i\in E_k}
            \Bigl(1 - \binom{n_i-c_i}{k}\Big/\binom{n_i}{k}\Bigr), \qquad
        \widehat{\mathrm{pass\hat{}}k} = \frac{1}{|E_k|}\sum_{i\in E_k}
            \binom{c_i}{k}\Big/\binom{n_i}{k},

    each term the unbiased per-task estimator (Chen et al. 2021; tau-bench). The interval
    resamples the :math:`T` tasks with replacement ``replicates`` times and recomputes each
    estimate on the resample (over its tasks with :math:`n_i \ge k`); replicates whose
    resample holds no such task are left out. A ``k`` with fewer than two eligible tasks
    (:math:`|E_k| < 2`) gets no interval (NaN), like the success mean with one task: with one
    task every resample is that task again and the "interval" would be the point.
    ``interval="percentile"`` takes the :math:`(1\mp\gamma)/2` quantiles of the replicates
    :math:`\theta^*`. The default, ``"bca"`` (bias-corrected and accelerated, Efron 1987),
    takes the quantiles at

    .. math::

        \alpha_{\pm} = \Phi\Bigl(z_0 + \frac{z_0 + z_\pm}{1 - a (z_0 + z_\pm)}\Bigr),
        \qquad z_0 = \Phi^{-1}\bigl(\Pr{}^*(\theta^* < \hat\theta)\bigr), \qquad
        a = \frac{\sum_i U_i^3}{6 (\sum_i U_i^2)^{3/2}}

    with :math:`z_\pm = \Phi^{-1}((1\pm\gamma)/2)` and :math:`U_i` the jackknife
    influence of task :math:`i` (leave task :math:`i` out, recompute). Per-task pass@k values
    pile up at 1 and pass^k values at 0, so the estimates are skewed and the percentile
    interval under-covers. Measured for pass@3 over 2000 simulated evals of 5 trials per task
    with p ~ Beta(1.5, 1), a nominal 95% covered 92.7% (percentile) and 94.9% (BCa) with 60
    tasks, 87% and 91% with 20 tasks: with few tasks, read the interval as optimistic.

    Parameters
    ----------
    tasks : pandas.DataFrame
        The output of :func:`per_task` (needs ``trials`` and ``successes``).
    ks : iterable of int
        Each an integer in [1, max n_i].
    replicates : int
        Bootstrap replicates, an integer >= :data:`MIN_REPLICATES` (default
        :data:`DEFAULT_REPLICATES`).
    seed : int, SeedSequence, Generator or None
        Seeds the bootstrap (``numpy.random.default_rng(seed)``).
    confidence : float
        In (0, 1).
    interval : {"bca", "percentile"}
        How the replicates become an interval.

    Returns
    -------
    pandas.DataFrame
        Indexed by (``metric``, ``k``) with metric ``pass_at_k`` or ``pass_hat_k``; columns
        ``estimate``, ``ci_low``, ``ci_high`` (NaN when ``tasks < 2``), ``tasks`` (|E_k|),
        ``excluded_tasks``.

    Examples
    --------
    Two tasks of five trials, with 1 and 5 successes: pass@2 is the mean of
    :math:`1 - \binom{4}{2}/\binom{5}{2} = 0.4` and 1.

    >>> import pandas as pd
    >>> tasks = pd.DataFrame({"trials": [5, 5], "successes": [1, 5]}, index=["a", "b"])
    >>> float(pass_k(tasks, [2], replicates=100).loc[("pass_at_k", 2), "estimate"])
    0.7
    """
    table, _ = _pass_k(
        tasks, ks, replicates=replicates, seed=seed, confidence=confidence, interval=interval
    )
    return table


def _pass_k(tasks, ks, *, replicates, seed, confidence, interval) -> tuple[pd.DataFrame, list[str]]:
    import pandas as pd

    from relsim import formulas

    _check_confidence(confidence)
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {', '.join(INTERVALS)}, got {interval!r}")
    if (
        isinstance(replicates, bool)
        or not isinstance(replicates, (int, np.integer))
        or replicates < MIN_REPLICATES
    ):
        raise ValueError(
            f"replicates must be an integer >= {MIN_REPLICATES}, got {replicates!r}"
        )
    n, c = _counts(tasks)
    ks = _check_ks(ks, int(n.max()))

    messages = []
    if n.min() != n.max():
        short = ", ".join(f"{int((n < k).sum())} at k={k}" for k in ks if (n < k).any())
        messages.append(
            f"trial counts differ across tasks ({n.min()} to {n.max()} per task): pass@k and "
            "pass^k average the unbiased per-task estimators over the tasks with at least k "
            f"trials ({'excluded: ' + short if short else 'none excluded'})"
        )

    # per-task estimates, NaN where n_i < k; columns: pass@k for each k, then pass^k for each k
    # (evaluated once per distinct (n, c) pair: an eval has few of them, however many tasks)
    pairs, inverse = np.unique(np.stack([n, c], axis=1), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    values = np.full((len(n), 2 * len(ks)), np.nan)
    for column, k in enumerate(ks):
        usable = pairs[:, 0] >= k
        at_k = np.full(len(pairs), np.nan)
        hat_k = np.full(len(pairs), np.nan)
        at_k[usable] = formulas.pass_at_k_estimate(pairs[usable, 0], pairs[usable, 1], k)
        hat_k[usable] = formulas.pass_hat_k_estimate(pairs[usable, 0], pairs[usable, 1], k)
        values[:, column] = at_k[inverse]
        values[:, len(ks) + column] = hat_k[inverse]
    estimates = np.nanmean(values, axis=0)
    replicate_means = _cluster_bootstrap(values, replicates, np.random.default_rng(seed))
    eligible_counts = np.array([(n >= k).sum() for k in ks] * 2)
    low, high = np.full(values.shape[1], np.nan), np.full(values.shape[1], np.nan)
    for column in np.flatnonzero(eligible_counts >= 2):
        low[column], high[column] = _bootstrap_interval(
            values[:, column], estimates[column], replicate_means[:, column], confidence, interval
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
            "ci_low": low,
            "ci_high": high,
            "tasks": eligible_counts,
            "excluded_tasks": len(n) - eligible_counts,
        },
        index=index,
    )
    return table, messages


def _bootstrap_interval(
    values: np.ndarray, estimate: float, replicates: np.ndarray, confidence: float, interval: str
) -> tuple[float, float]:
    """The percentile or BCa interval of one column (see :func:`pass_k`)."""
    from scipy.stats import norm

    replicates = replicates[~np.isnan(replicates)]
    tails = np.array([0.5 - confidence / 2, 0.5 + confidence / 2])
    if replicates.size == 0:
        return math.nan, math.nan
    if interval == "bca" and replicates.max() > replicates.min():
        count = replicates.size
        # replicate means of discrete data often tie with the estimate: count ties as half,
        # up to rounding (distinct means of values in [0, 1] differ by far more than 1e-9)
        tie = np.abs(replicates - estimate) <= 1e-9
        below = (
            np.count_nonzero(~tie & (replicates < estimate)) + 0.5 * np.count_nonzero(tie)
        ) / count
        bias = norm.ppf(min(max(below, 0.5 / count), 1 - 0.5 / count))
        # jackknife over tasks: leaving out task i changes the mean over the eligible tasks
        # (those with a value) unless task i is not eligible
        present = ~np.isnan(values)
        eligible, total = int(present.sum()), float(np.nansum(values))
        acceleration = 0.0
        if eligible >= 2:
            left_out = np.where(
                present, (total - np.where(present, values, 0.0)) / (eligible - 1), total / eligible
            )
            influence = left_out.mean() - left_out
            spread = float(np.sum(influence**2))
            if spread > 0:
                acceleration = float(np.sum(influence**3)) / (6.0 * spread**1.5)
        z = norm.ppf(tails)
        tails = norm.cdf(bias + (bias + z) / (1.0 - acceleration * (bias + z)))
        tails = np.clip(np.nan_to_num(tails, nan=0.5), 0.0, 1.0)
    low, high = np.quantile(replicates, tails)
    return float(low), float(high)


def _cluster_bootstrap(values: np.ndarray, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """Per-replicate means of each column over resampled rows (tasks), ignoring NaN cells.

    Each replicate draws ``T`` task indices with replacement; its mean for a column is
    sum(count_i * value_i) / sum(count_i) over the tasks whose value is not NaN. The counts
    come from one ``bincount`` per chunk, and the sums from one matrix product.
    """
    count_tasks = values.shape[0]
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    present = present.astype(float)
    out = np.empty((replicates, values.shape[1]))
    rows = max(1, _BOOTSTRAP_CHUNK_CELLS // count_tasks)
    for start in range(0, replicates, rows):
        size = min(rows, replicates - start)
        draws = rng.integers(0, count_tasks, size=(size, count_tasks))
        flat = (draws + (np.arange(size) * count_tasks)[:, None]).ravel()
        counts = np.bincount(flat, minlength=size * count_tasks).reshape(size, count_tasks)
        counts = counts.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + size] = (counts @ filled) / (counts @ present)
    return out


def _counts(tasks: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The per-task trial and success counts, checked."""
    missing = [
        name for name in ("trials", "successes") if name not in getattr(tasks, "columns", ())
    ]
    if missing:
        raise ValueError(
            f"tasks must be a per-task table (see per_task) with columns 'trials' and "
            f"'successes'; missing {', '.join(repr(m) for m in missing)}"
        )
    n = tasks["trials"].to_numpy()
    c = tasks["successes"].to_numpy()
    if len(n) == 0:
        raise ValueError("tasks is empty: need at least one task")
    if not (np.issubdtype(n.dtype, np.integer) and np.issubdtype(c.dtype, np.integer)):
        raise ValueError("tasks: 'trials' and 'successes' must be integer counts")
    if (n < 1).any() or (c < 0).any() or (c > n).any():
        raise ValueError("tasks: need trials >= 1 and 0 <= successes <= trials for every task")
    return n.astype(np.int64), c.astype(np.int64)


def _check_ks(ks: Iterable[int], largest: int) -> list[int]:
    try:
        given = list(ks)
        values = [int(k) for k in given]
        if any(isinstance(k, bool) or int(k) != k for k in given):
            raise TypeError
    except (TypeError, ValueError):
        raise ValueError(f"k must be integers >= 1, got {ks!r}") from None
    if not values:
        raise ValueError("k must name at least one value")
    for k in values:
        if k < 1 or k > largest:
            raise ValueError(
                f"k must be in [1, {largest}] (the largest number of trials of a task), got {k}"
            )
    return sorted(set(values))


def _check_confidence(confidence: float) -> None:
    if not (_is_real(confidence) and 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


# --------------------------------------------------------------------------------------------
# analyze


@dataclass(frozen=True, eq=False)  # holds DataFrames: compare .to_dict() instead
class TrialAnalysis:
    """What a table of trials says: success with its clustered error, pass@k, pass^k, cost.

    Attributes
    ----------
    tasks, trials : int
        Number of tasks and of trials.
    success : pandas.Series
        From :func:`success_rate`: ``mean``, ``se``, ``ci_low``, ``ci_high``.
    pass_k : pandas.DataFrame
        From :func:`pass_k`, indexed by (metric, k).
    per_task : pandas.DataFrame
        From :func:`per_task`.
    cost_per_success : float or None
        Total cost / total successes (infinite with no success); None without a ``cost``
        column. In :meth:`to_dict` the key is left out without a ``cost`` column and is
        None (JSON null) only when there is no success.
    steps : dict or None
        With a ``steps`` column: ``mean`` (mean over tasks of each task's mean steps),
        ``per_step_success`` (``success.mean ** (1 / plan["steps"])``, with ``plan["steps"]``
        the integer ``n`` below) and ``plan``: what ``relsim solve --steps n --target T --p
        per_step_success`` plans with a perfect verifier, ``n`` being ``mean`` rounded to the
        nearest integer (halves up, at least 1) (``steps``, ``target``,
        ``required_step_success``, ``retries``, ``success``, ``feasible``, ``command``).
    replicates, seed, confidence, interval
        The bootstrap's settings.
    warnings : tuple of str
        What was warned about (also issued as :class:`TrialDataWarning`).
    """

    tasks: int
    trials: int
    success: pd.Series
    pass_k: pd.DataFrame
    per_task: pd.DataFrame = field(repr=False)
    cost_per_success: float | None = None
    steps: dict[str, Any] | None = None
    replicates: int = DEFAULT_REPLICATES
    seed: Any = 0
    confidence: float = 0.95
    interval: str = "bca"
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``relsim analyze --json`` (NaN and infinity become None).

        ``cost_per_success`` is present only with a ``cost`` column, and None there only
        when no trial succeeded.
        """
        out: dict[str, Any] = {
            "tasks": self.tasks,
            "trials": self.trials,
            "success": {
                "mean": _num(self.success["mean"]),
                "se": _num(self.success["se"]),
                "ci": [_num(self.success["ci_low"]), _num(self.success["ci_high"])],
            },
        }
        for metric in ("pass_at_k", "pass_hat_k"):
            rows = self.pass_k.loc[metric]
            out[metric] = {
                str(k): {
                    "estimate": _num(row["estimate"]),
                    "ci": [_num(row["ci_low"]), _num(row["ci_high"])],
                    "excluded_tasks": int(row["excluded_tasks"]),
                }
                for k, row in rows.iterrows()
            }
        if self.cost_per_success is not None:
            out["cost_per_success"] = _num(self.cost_per_success)
        if self.steps is not None:
            out["steps"] = {
                key: (
                    {k: _num(v) for k, v in value.items()}
                    if isinstance(value, dict)
                    else _num(value)
                )
                for key, value in self.steps.items()
            }
        seed = (
            self.seed
            if isinstance(self.seed, (int, np.integer)) or self.seed is None
            else str(self.seed)
        )
        out["bootstrap"] = {
            "replicates": self.replicates,
            "seed": _num(seed),
            "confidence": self.confidence,
            "interval": self.interval,
        }
        return out


def analyze(
    trials: str | Path | pd.DataFrame,
    ks: Iterable[int] | None = None,
    *,
    threshold: float | None = None,
    seed: int | np.random.SeedSequence | None = 0,
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = 0.95,
    interval: str = "bca",
    target: float = 0.95,
) -> TrialAnalysis:
    r"""Analyze a table of trials: success, pass@k, pass^k, cost per success, implied step success.

    Parameters
    ----------
    trials : str, Path or pandas.DataFrame
        A CSV/JSONL file or a DataFrame (see :func:`read_trials`).
    ks : iterable of int, optional
        The k for pass@k and pass^k, each in [1, max n_i]. Default: those of
        :data:`DEFAULT_KS` not above the largest trial count.
    threshold : float, optional
        Numeric scores: success when ``score >= threshold``.
    seed, replicates, confidence, interval
        The cluster bootstrap (:func:`pass_k`) and the interval level.
    target : float
        In (0, 1]: the end-to-end target for the plan drawn from ``steps``.

    Returns
    -------
    TrialAnalysis

    Notes
    -----
    With a ``steps`` column the implied per-step success is

    .. math:: p_{\mathrm{step}} = \bar p^{\,1/n}, \qquad n = \max(1, \lfloor \bar s + 1/2
        \rfloor)

    with :math:`\bar p` the success mean over tasks and :math:`\bar s` the mean over tasks of
    each task's mean steps, rounded to the integer :math:`n` a plan needs: the per-step
    success that, compounded over :math:`n` independent steps, gives the observed success
    (:func:`relsim.formulas.required_step_success` with the observed success as target). The
    plan uses the same :math:`n`: :func:`relsim.formulas.min_retries` (perfect verifier) and
    the success it reaches, exactly what ``relsim solve --steps n --target T --p P`` reports.

    Examples
    --------
    >>> import pandas as pd
    >>> trials = pd.DataFrame({"task": list("aaabbb"), "trial": [1, 2, 3] * 2,
    ...                        "success": [1, 0, 0, 1, 1, 1]})
    >>> result = analyze(trials, [1, 2], replicates=200)
    >>> round(result.to_dict()["pass_hat_k"]["2"]["estimate"], 6)  # (0 + 1) / 2
    0.5
    """
    frame = _trials_frame(trials, threshold)
    if not (_is_real(target) and 0.0 < target <= 1.0):
        raise ValueError(f"target must be in (0, 1], got {target!r}")
    tasks = per_task(frame)
    largest = int(tasks["trials"].max())
    if ks is None:
        ks = [k for k in DEFAULT_KS if k <= largest] or [1]
    table, messages = _pass_k(
        tasks, ks, replicates=replicates, seed=seed, confidence=confidence, interval=interval
    )
    success = success_rate(tasks, confidence=confidence)
    if len(tasks) < 2:
        messages.append("only one task: the standard error and intervals need at least two")

    cost_per_success = None
    if "cost" in frame:
        successes = int(frame["success"].sum())
        total = float(frame["cost"].sum())
        cost_per_success = total / successes if successes else math.inf

    steps = None
    if "steps" in frame:
        mean_steps = float(tasks["steps"].mean())
        steps = {
            "mean": mean_steps,
            **_steps_plan(float(success["mean"]), max(1, math.floor(mean_steps + 0.5)), target),
        }

    for message in messages:
        warnings.warn(message, TrialDataWarning, stacklevel=2)
    return TrialAnalysis(
        tasks=int(len(tasks)),
        trials=int(len(frame)),
        success=success,
        pass_k=table,
        per_task=tasks,
        cost_per_success=cost_per_success,
        steps=steps,
        replicates=int(replicates),
        seed=seed,
        confidence=float(confidence),
        interval=interval,
        warnings=tuple(messages),
    )


def _steps_plan(success_mean: float, steps: int, target: float) -> dict[str, Any]:
    """The per-step success implied over ``steps`` steps and the flag-form plan of
    ``relsim solve`` (perfect verifier) from it, by the same formulas."""
    from relsim import formulas

    per_step = formulas.required_step_success(success_mean, steps) if success_mean > 0 else 0.0
    retries = formulas.min_retries(per_step, steps, target)
    plan: dict[str, Any] = {
        "steps": steps,
        "target": target,
        "required_step_success": formulas.required_step_success(target, steps),
        "retries": retries,
        "success": (
            None
            if retries is None
            else formulas.compound(formulas.verified_step(per_step, retries).success, steps)
        ),
        "feasible": retries is not None,
        "command": f"relsim solve --steps {steps} --target {target:g} --p {per_step:.6g}",
    }
    return {"per_step_success": per_step, "plan": plan}


# --------------------------------------------------------------------------------------------
# compare


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
        ``candidate - baseline``.
    se : float
        Standard deviation (ddof=1) of the per-task differences / sqrt(tasks).
    ci : (float, float)
        ``difference -/+ t((1+confidence)/2, tasks-1) * se``.
    p_value : float
        Two-sided paired t-test.
    per_task : pandas.DataFrame
        ``baseline``, ``candidate``, ``difference`` per shared task.
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
    only_baseline: tuple[str, ...] = ()
    only_candidate: tuple[str, ...] = ()
    confidence: float = 0.95
    warnings: tuple[str, ...] = ()

    @property
    def summary(self) -> pd.Series:
        """The headline numbers as a pandas Series."""
        import pandas as pd

        keys = ("tasks", "baseline", "candidate", "difference", "se", "p_value")
        values = {key: getattr(self, key) for key in keys}
        values["ci_low"], values["ci_high"] = self.ci
        return pd.Series(values, dtype=float)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``relsim compare --json``."""
        return {
            "tasks": self.tasks,
            "baseline": _num(self.baseline),
            "candidate": _num(self.candidate),
            "difference": _num(self.difference),
            "se": _num(self.se),
            "ci": [_num(self.ci[0]), _num(self.ci[1])],
            "p_value": _num(self.p_value),
        }


def compare(
    baseline: str | Path | pd.DataFrame,
    candidate: str | Path | pd.DataFrame,
    *,
    threshold: float | None = None,
    confidence: float = 0.95,
) -> Comparison:
    r"""Paired comparison of per-task success rates on the tasks both evals share.

    With :math:`d_i = \hat q_i - \hat p_i` (candidate minus baseline rate of task :math:`i`)
    over the :math:`T` shared tasks,

    .. math::

        \bar d \pm t_{(1+\gamma)/2,\,T-1}\,\frac{s_d}{\sqrt T}, \qquad
        t = \frac{\bar d}{s_d/\sqrt T}\ \text{(paired t-test, two-sided, } T-1
        \text{ degrees of freedom)}.

    When every difference is equal (:math:`s_d = 0`) the interval is the point and the
    p-value is 1 if the difference is 0, else 0.

    Parameters
    ----------
    baseline, candidate : str, Path or pandas.DataFrame
        Trial tables (see :func:`read_trials`).
    threshold : float, optional
        Numeric scores: success when ``score >= threshold`` (both tables).
    confidence : float
        In (0, 1).

    Returns
    -------
    Comparison

    Raises
    ------
    ValueError
        When the tables share fewer than two tasks.

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"task": list("xyz"), "trial": 1, "success": [0, 1, 0]})
    >>> b = pd.DataFrame({"task": list("xyz"), "trial": 1, "success": [1, 1, 0]})
    >>> result = compare(a, b)
    >>> round(result.difference, 6), round(result.se, 6)
    (0.333333, 0.333333)
    """
    import pandas as pd
    from scipy import stats

    _check_confidence(confidence)
    base = per_task(_trials_frame(baseline, threshold))["rate"]
    cand = per_task(_trials_frame(candidate, threshold))["rate"]
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
        raise ValueError(
            f"baseline and candidate share {len(shared)} task{'s' if len(shared) != 1 else ''}; "
            "a paired comparison needs at least 2"
        )
    table = pd.DataFrame({"baseline": base[shared], "candidate": cand[shared]})
    table["difference"] = table["candidate"] - table["baseline"]
    d = table["difference"].to_numpy(dtype=float)
    count = len(d)
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(count)
    if sd > 1e-12 * max(1.0, abs(mean)):
        half = float(stats.t.ppf(0.5 + confidence / 2, count - 1)) * se
        p_value = float(stats.ttest_rel(table["candidate"], table["baseline"]).pvalue)
    else:
        se, half = 0.0, 0.0
        p_value = 1.0 if mean == 0 else 0.0
    for message in messages:
        warnings.warn(message, TrialDataWarning, stacklevel=2)
    return Comparison(
        tasks=count,
        baseline=float(table["baseline"].mean()),
        candidate=float(table["candidate"].mean()),
        difference=mean,
        se=se,
        ci=(mean - half, mean + half),
        p_value=p_value,
        per_task=table,
        only_baseline=only_baseline,
        only_candidate=only_candidate,
        confidence=float(confidence),
        warnings=tuple(messages),
    )


# --------------------------------------------------------------------------------------------
# power


def tasks_needed(
    delta: float,
    baseline: float,
    *,
    trials_per_task: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    difference_sd: float = 0.0,
) -> int:
    r"""Number of tasks a paired comparison needs to detect a difference ``delta``.

    .. math::

        T = \left\lceil \frac{(z_{1-\alpha/2} + z_{\mathrm{power}})^2
            \bigl(W^2 + (P(1-P) + Q(1-Q))/K\bigr)}{D^2} \right\rceil,
        \qquad Q = P + D

    with :math:`P` the baseline success, :math:`D` the difference, :math:`K` trials per task
    and :math:`W` the standard deviation of the true per-task differences (at least 1 task).

    Assumptions: both systems run :math:`K` trials on each of the same :math:`T` tasks,
    drawn independently; the per-task difference of observed rates has variance
    :math:`W^2 + (P(1-P)+Q(1-Q))/K` (binomial trials at every task's rate P or Q: when tasks
    differ in difficulty, the true binomial variance is smaller, so :math:`T` errs on the
    large side); the test is the two-sided paired test at level :math:`\alpha`, and the
    normal approximation holds (for small :math:`T` the t-test needs a few more tasks).

    Parameters
    ----------
    delta : float
        :math:`D \ne 0`, with :math:`P + D` in [0, 1].
    baseline : float
        :math:`P` in [0, 1].
    trials_per_task : int
        :math:`K \ge 1`.
    alpha, power : float
        In (0, 1).
    difference_sd : float
        :math:`W \ge 0`.

    Examples
    --------
    A 3-point gain over a 70% baseline, one trial per task (the lesson: "with 100 tasks, a
    3-point difference is usually within the confidence interval"):

    >>> tasks_needed(0.03, 0.7)
    3551
    """
    _check_power_inputs(baseline, trials_per_task, alpha, power, difference_sd)
    if not (_is_real(delta) and math.isfinite(delta)) or delta == 0:
        raise ValueError(f"delta must be a nonzero number, got {delta!r}")
    if not 0.0 <= baseline + delta <= 1.0:
        raise ValueError(
            f"delta must keep baseline + delta in [0, 1], i.e. delta in "
            f"[{-baseline:g}, {1 - baseline:g}], got {delta!r}"
        )
    z = _z_sum(alpha, power)
    value = z**2 * _difference_variance(baseline, delta, trials_per_task, difference_sd) / delta**2
    return max(1, math.ceil(round(value, 9)))


def minimum_detectable_effect(
    tasks: int,
    baseline: float,
    *,
    trials_per_task: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    difference_sd: float = 0.0,
) -> float | None:
    r"""The smallest gain :math:`D > 0` that ``tasks`` tasks detect with the given power.

    Solves the equation of :func:`tasks_needed` (without the ceiling) for :math:`D`:

    .. math::

        T D^2 = (z_{1-\alpha/2} + z_{\mathrm{power}})^2
                \bigl(W^2 + (P(1-P) + Q(1-Q))/K\bigr), \qquad Q = P + D,

    by Brent's method on :math:`(0, 1-P]` (its left side minus its right side increases with
    :math:`D` there, so the root is unique). Same assumptions as :func:`tasks_needed`.

    Returns
    -------
    float or None
        None when no gain up to :math:`Q = 1` is detectable with ``tasks`` tasks.

    Examples
    --------
    >>> round(minimum_detectable_effect(100, 0.7), 4)
    0.1609
    """
    from scipy.optimize import brentq

    _check_power_inputs(baseline, trials_per_task, alpha, power, difference_sd)
    if isinstance(tasks, bool) or not isinstance(tasks, (int, np.integer)) or tasks < 1:
        raise ValueError(f"tasks must be an integer >= 1, got {tasks!r}")
    z2 = _z_sum(alpha, power) ** 2

    def excess(delta: float) -> float:
        return tasks * delta**2 - z2 * _difference_variance(
            baseline, delta, trials_per_task, difference_sd
        )

    largest = 1.0 - baseline
    if largest <= 0 or excess(largest) < 0:
        return None
    return float(brentq(excess, 1e-15, largest, xtol=1e-14, rtol=1e-12))


def _difference_variance(baseline: float, delta: float, trials: int, difference_sd: float) -> float:
    other = baseline + delta
    return difference_sd**2 + (baseline * (1 - baseline) + other * (1 - other)) / trials


def _z_sum(alpha: float, power: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2) + norm.ppf(power))


def _check_power_inputs(baseline, trials_per_task, alpha, power, difference_sd) -> None:
    if not (_is_real(baseline) and 0.0 <= baseline <= 1.0):
        raise ValueError(f"baseline must be in [0, 1], got {baseline!r}")
    if (
        isinstance(trials_per_task, bool)
        or not isinstance(trials_per_task, (int, np.integer))
        or trials_per_task < 1
    ):
        raise ValueError(f"trials_per_task must be an integer >= 1, got {trials_per_task!r}")
    for name, value in (("alpha", alpha), ("power", power)):
        if not (_is_real(value) and 0.0 < value < 1.0):
            raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    if not (_is_real(difference_sd) and math.isfinite(difference_sd) and difference_sd >= 0):
        raise ValueError(f"difference_sd must be a number >= 0, got {difference_sd!r}")


def _is_real(value: Any) -> bool:
    """A real number (Python or numpy), not a boolean."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _num(value: Any) -> Any:
    """A JSON-ready scalar: Python numbers, None for NaN and infinity."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
