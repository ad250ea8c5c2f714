r"""``analyze``: everything a table of trials says, as one :class:`TrialAnalysis`."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, cast

import numpy as np

from relsim._running import check_seed
from relsim.errors import invalid
from relsim.evalstats._common import TrialDataWarning, is_count, is_real
from relsim.evalstats.bootstrap import DEFAULT_REPLICATES
from relsim.evalstats.estimators import (
    DEFAULT_K,
    check_k,
    counts,
    default_k,
    pass_k_table,
    per_task,
    task_values,
)
from relsim.evalstats.metrics import DEFAULT_INFRA_CATEGORIES
from relsim.evalstats.readers import load_trials
from relsim.evalstats.reducers import reducer_ks, reducer_summary
from relsim.results import jsonable, one_row

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from relsim.evalstats.difficulty import DifficultyFit

__all__ = ["DEFAULT_K", "TrialAnalysis", "analyze"]


@dataclass(frozen=True, eq=False)  # holds DataFrames: compare .to_dict() instead
class TrialAnalysis:
    """What a table of trials says: success, pass@k, pass^k, per task, metrics, categories.

    Attributes
    ----------
    tasks, trials : int
        Number of tasks and of trials (errored Inspect samples are not trials).
    success : pandas.Series
        ``mean``, ``se``, ``ci_low``, ``ci_high``: the pass@1 row of :attr:`pass_k` (the same
        estimator, so one interval), whatever ``k`` were asked for.
    pass_k : pandas.DataFrame
        From :func:`pass_k`, indexed by (metric, k).
    per_task : pandas.DataFrame
        From :func:`per_task`, plus ``pass_at_k_<k>`` and ``pass_hat_k_<k>`` for each k (the
        unbiased per-task estimates, NaN where the task has fewer than k trials).
    metrics : dict
        For each numeric column other than task, trial and success: ``mean`` (per trial),
        ``ci``, ``mean_success`` (per successful trial), ``ci_success`` (and ``se``,
        ``se_success``, ``trials``), from :func:`relsim.evalstats.metrics.metric_summary`.
    rates : dict
        For each requested ``"a/b"``: ``estimate``, ``se``, ``ci``.
    cost_per_success : dict or None
        ``estimate`` (total cost / total successes; infinite with no success), ``se``,
        ``ci``; None without a ``cost`` column.
    categories : dict or None
        With a category column: for each failure category, ``count``, ``share`` of failures,
        ``ci``, ``tasks`` (sorted by count, most first).
    infrastructure : dict or None
        When failures fall in infrastructure categories: ``categories``, ``trials`` (left
        out), ``tasks`` (left), and ``success`` (``mean``, ``se``, ``ci``) without them.
    ignored_columns : tuple of str
        Columns that are neither numeric nor the category column, ignored by name.
    errors : dict or None
        Inspect logs: samples that errored (``count`` and the first ``samples``), reported
        apart and not counted as failures.
    inspect : list of dict or None
        Inspect logs: for each log and epoch reducer of the scorer, Inspect's own
        ``headline`` metrics, the ``quantity`` the reducer stands for and relsim's
        ``estimate``, ``se`` and ``ci`` of it from the trials (see
        :mod:`relsim.evalstats.reducers`); relsim's ``success`` is always the mean over
        trials (Inspect's ``mean`` reducer).
    steps : dict or None
        With a ``steps`` column: ``mean`` (mean over tasks of each task's mean steps),
        ``per_step_success`` (``success.mean ** (1 / plan["steps"])``, with ``plan["steps"]``
        the integer ``n`` below) and ``plan``: what ``relsim solve --steps n --target T --p
        per_step_success`` plans with a perfect verifier, ``n`` being ``mean`` rounded to the
        nearest integer (halves up, at least 1) (``steps``, ``target``,
        ``required_step_success``, ``retries``, ``success``, ``feasible``, ``command``).
    replicates, seed, confidence, interval
        The interval's settings (``replicates`` and ``seed`` matter to the bootstrap ones).
        ``seed`` is the one the bootstrap drew from: the integer given, the entropy drawn for
        ``seed=None`` (so the run can be repeated), or the SeedSequence given.
    source : str
        What was read (a path, or ``"trials"`` for a DataFrame).
    warnings : tuple of str
        What was warned about (also issued as :class:`TrialDataWarning`).
    difficulty : DifficultyFit or None
        With ``extrapolate=K``: the task-difficulty fit
        (:func:`relsim.evalstats.fit_difficulty`) behind :attr:`extrapolated`.
    extrapolated : dict or None
        With ``extrapolate=K``: pass@k and pass^k for every k from 1 to K from the fit, with
        intervals from its bootstrap refits (:meth:`DifficultyFit.extrapolate`; each entry's
        ``extrapolated`` is True beyond the most trials of a task), ``check`` (the fit's
        pass^k against the observed one for each k that was run), ``fit`` (the fit's
        ``to_dict`` without ``draws``, ``check`` and ``seed``), ``draws`` (the number of
        refits) and ``seed`` (the analysis's: the refits draw from its child with spawn key
        ``(21,)``).
    coverage_notes : dict
        Where an interval's coverage was measured below 95% at about this many tasks and
        trials (:func:`relsim.evalstats.coverage.coverage_note`), the note, keyed
        ``success``, ``pass@k``/``pass^k``, ``<metric>``, ``<metric> per successful trial``,
        ``rate <a/b>``, ``cost_per_success``; each also appears as ``coverage_note`` beside
        its quantity in :meth:`to_dict`.
    """

    tasks: int
    trials: int
    success: pd.Series
    pass_k: pd.DataFrame
    per_task: pd.DataFrame = field(repr=False)
    metrics: dict[str, Any] = field(default_factory=dict)
    rates: dict[str, Any] = field(default_factory=dict)
    cost_per_success: dict[str, Any] | None = None
    categories: dict[str, Any] | None = None
    infrastructure: dict[str, Any] | None = None
    ignored_columns: tuple[str, ...] = ()
    errors: dict[str, Any] | None = None
    inspect: list[dict[str, Any]] | None = None
    steps: dict[str, Any] | None = None
    replicates: int = DEFAULT_REPLICATES
    seed: int | np.random.SeedSequence | None = None
    confidence: float = 0.95
    interval: str = "jeffreys"
    source: str = "trials"
    warnings: tuple[str, ...] = ()
    coverage_notes: dict[str, str] = field(default_factory=dict)
    difficulty: DifficultyFit | None = field(default=None, repr=False)
    extrapolated: dict[str, Any] | None = None

    def per_task_records(self) -> list[dict[str, Any]]:
        """The per-task table as ``[{task, trials, successes, p, pass_at_k: {k: v},
        pass_hat_k: {k: v}}]`` in the order of the table."""
        ks = [int(k) for k in self.pass_k.loc["pass_at_k"].index]
        table = self.per_task
        records = []
        for position, task in enumerate(table.index):
            row = table.iloc[position]
            records.append(
                {
                    "task": str(task),
                    "trials": int(row["trials"]),
                    "successes": int(row["successes"]),
                    "p": float(row["rate"]),
                    "pass_at_k": {str(k): float(row[f"pass_at_k_{k}"]) for k in ks},
                    "pass_hat_k": {str(k): float(row[f"pass_hat_k_{k}"]) for k in ks},
                }
            )
        return records

    def _record(self, *, per_task: bool = True) -> dict[str, Any]:
        """The fields of :meth:`to_dict`, with NaN and infinity as they are."""
        out: dict[str, Any] = {
            "source": self.source,
            "tasks": self.tasks,
            "trials": self.trials,
            "success": {
                "mean": self.success["mean"],
                "se": self.success["se"],
                "ci": [self.success["ci_low"], self.success["ci_high"]],
            },
        }
        notes = self.coverage_notes
        if "success" in notes:
            out["success"]["coverage_note"] = notes["success"]
        for metric in ("pass_at_k", "pass_hat_k"):
            rows = self.pass_k.loc[metric]
            out[metric] = {
                str(k): {
                    "estimate": row["estimate"],
                    "se": row["se"],
                    "ci": [row["ci_low"], row["ci_high"]],
                    "excluded_tasks": int(row["excluded_tasks"]),
                }
                for k, row in rows.iterrows()
            }
            label = "pass@" if metric == "pass_at_k" else "pass^"
            for k, entry in out[metric].items():
                if f"{label}{k}" in notes:
                    entry["coverage_note"] = notes[f"{label}{k}"]
        if per_task:
            out["per_task"] = self.per_task_records()
        out["metrics"] = {
            name: {
                "mean": value["mean"],
                "ci": list(value["ci"]),
                "mean_success": value["mean_success"],
                "ci_success": list(value["ci_success"]),
            }
            for name, value in self.metrics.items()
        }
        for name, entry in out["metrics"].items():
            for key, suffix in (("coverage_note", ""),
                                ("coverage_note_success", " per successful trial")):
                if f"{name}{suffix}" in notes:
                    entry[key] = notes[f"{name}{suffix}"]
        out["rates"] = {
            name: {"estimate": value["estimate"], "ci": list(value["ci"])}
            for name, value in self.rates.items()
        }
        for name, entry in out["rates"].items():
            if f"rate {name}" in notes:
                entry["coverage_note"] = notes[f"rate {name}"]
        if self.cost_per_success is not None:
            out["cost_per_success"] = {
                "estimate": self.cost_per_success["estimate"],
                "ci": list(self.cost_per_success["ci"]),
            }
            if "cost_per_success" in notes:
                out["cost_per_success"]["coverage_note"] = notes["cost_per_success"]
        if self.categories is not None:
            out["categories"] = {
                name: {**value, "ci": list(value["ci"])} for name, value in self.categories.items()
            }
        if self.infrastructure is not None:
            out["infrastructure"] = self.infrastructure
        out["ignored_columns"] = list(self.ignored_columns)
        if self.errors is not None:
            out["errors"] = self.errors
        if self.inspect is not None:
            out["inspect"] = self.inspect
        if self.steps is not None:
            out["steps"] = self.steps
        if self.extrapolated is not None:
            out["extrapolated"] = dict(self.extrapolated)
            if isinstance(self.extrapolated["seed"], np.random.SeedSequence):
                out["extrapolated"]["seed"] = str(self.extrapolated["seed"])
        seed: Any = self.seed
        if isinstance(seed, np.random.SeedSequence):
            seed = str(seed)  # shown, as JSON cannot hold it
        out["interval"] = {
            "method": self.interval,
            "confidence": self.confidence,
            "replicates": self.replicates if self.interval != "jeffreys" else None,
            "seed": seed if self.interval != "jeffreys" else None,
        }
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``relsim analyze --json`` (NaN and infinity become None).

        ``cost_per_success`` is present only with a ``cost`` column, its ``estimate`` None
        there only when no trial succeeded; ``categories`` only with a category column.
        """
        return jsonable(self._record())

    def to_frame(self) -> pd.DataFrame:
        """A one-row DataFrame of :meth:`to_dict`'s fields but the per-task list, so analyses
        of several evals concatenate, flattened as every result is
        (:func:`relsim.results.flatten`): nested keys joined by ``_`` (``success_mean``,
        ``pass_at_k_3_ci_low``, ``metrics_steps_mean``, ``steps_plan_retries``), intervals
        split into ``_low`` and ``_high``; undefined numbers are NaN and a cost per success
        without any success is infinite. The per-task and per-k tables are :attr:`per_task`
        and :attr:`pass_k`.
        """
        record = self._record(per_task=False)
        for key in ("ignored_columns",):
            record[key] = ", ".join(record[key])
        if "categories" in record:
            record["categories"] = {
                name: {**value, "tasks": ", ".join(value["tasks"])}
                for name, value in record["categories"].items()
            }
        if "infrastructure" in record:
            record["infrastructure"] = {
                **record["infrastructure"],
                "categories": ", ".join(record["infrastructure"]["categories"]),
            }
        if "errors" in record:
            record["errors"] = {"count": record["errors"]["count"]}
        if "extrapolated" in record:  # the check is a list: the per-k table holds it
            record["extrapolated"] = {key: value for key, value in record["extrapolated"].items()
                                      if key != "check"}
        if "inspect" in record:  # one column group per log and reducer
            several = len({entry["log"] for entry in record["inspect"]}) > 1
            record["inspect"] = {
                (f"{i}_" if several else "") + entry["reducer"]: {
                    key: entry[key] for key in ("headline", "quantity", "estimate", "ci")
                }
                for i, entry in enumerate(record["inspect"])
            }
        return one_row(record)


def analyze(
    trials: str | Path | pd.DataFrame,
    k: Iterable[int] | int | None = None,
    *,
    threshold: float | None = None,
    scorer: str | None = None,
    seed: int | np.random.SeedSequence | None = None,
    replicates: int = DEFAULT_REPLICATES,
    confidence: float = 0.95,
    interval: str = "jeffreys",
    target: float = 0.95,
    rates: Iterable[str] = (),
    category: str | None = None,
    infra_categories: Iterable[str] = DEFAULT_INFRA_CATEGORIES,
    metric: str | Iterable[str] = (),
    extrapolate: int | None = None,
) -> TrialAnalysis:
    r"""Analyze a table of trials: success, pass@k, pass^k per task and overall, metrics,
    rates, cost per success, failure categories, implied step success.

    Parameters
    ----------
    trials : str, Path or pandas.DataFrame
        A CSV/JSONL file or a DataFrame (see :func:`read_trials`), or an Inspect eval log
        (a ``.eval`` or ``.json`` file, or a log directory; see :func:`read_inspect_log`).
    k : int or iterable of int, optional
        The k for pass@k and pass^k, each in [1, max n_i]. Default: those of
        :data:`DEFAULT_K` not above the largest trial count.
    threshold : float, optional
        Numeric scores: success when ``score >= threshold``.
    scorer : str, optional
        Inspect logs: the scorer whose value is success (needed when there are several).
    seed, replicates, confidence, interval
        The interval level and method (see :func:`pass_k`; the seed and replicates matter to
        the bootstrap methods only). ``seed`` is an integer >= 0, a SeedSequence, or None
        for fresh entropy (recorded in the result's ``seed``).
    target : float
        In (0, 1]: the end-to-end target for the plan drawn from ``steps``.
    rates : iterable of str
        Rates between numeric columns, each ``"a/b"`` (such as ``"tool_errors/steps"``).
    category : str, optional
        The column naming each failed trial's category; default ``category`` when present.
    infra_categories : iterable of str
        Words naming infrastructure noise rather than the agent's failures: a category
        whose name contains one of them (case-insensitive; ``env_timeout`` for ``timeout``)
        is infrastructure, and success is also reported without those trials.
    metric : str or iterable of str
        Inspect logs: scorers whose values become metric columns (``"score"``: the success
        scorer's own value), reported like any numeric column (see
        :func:`read_inspect_log`).
    extrapolate : int, optional
        pass@k and pass^k for every k from 1 to ``extrapolate`` (at most
        :data:`relsim.evalstats.difficulty.MAX_K`) from a fitted task-difficulty distribution
        (:func:`relsim.evalstats.fit_difficulty`, 200 bootstrap refits drawn from ``seed``),
        in :attr:`TrialAnalysis.extrapolated`. Trials that cannot say how tasks differ (one
        trial per task, fewer than 5 tasks, no failure or no success) are refused.

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
    >>> result = analyze(trials, k=[1, 2])
    >>> round(result.to_dict()["pass_hat_k"]["2"]["estimate"], 6)  # (0 + 1) / 2
    0.5
    """
    import pandas as pd

    from relsim.evalstats import metrics as metric_tools

    seed_sequence, seed_value = check_seed(seed)
    rates = _texts(rates, "rates", "'NUMERATOR/DENOMINATOR' texts (column names)")
    infra_categories = _texts(infra_categories, "infra_categories", "texts (category words)")
    if category is not None and not isinstance(category, str):
        raise invalid("category", "a column name (text) or None", category)
    frame = load_trials(trials, threshold, scorer, metric)
    if not (is_real(target) and 0.0 < target <= 1.0):
        raise invalid("target", "in (0, 1]", target)
    difficulty = extrapolated = None
    if extrapolate is not None:
        difficulty, extrapolated = _extrapolation(frame, extrapolate, seed_sequence, confidence)
        extrapolated["seed"] = seed if isinstance(seed, np.random.SeedSequence) else seed_value
    tasks = per_task(frame)
    largest = int(tasks["trials"].max())
    if k is None:
        # the defaults, and the k an Inspect log's epoch reducer stands for (pass@4 for
        # Epochs(4, "at_least_1"))
        k = sorted(set(default_k(largest)) | {v for v in reducer_ks(frame) if v <= largest})
    ks = check_k(k, largest)
    with_one = sorted(set(ks) | {1})
    table, messages = pass_k_table(
        tasks, with_one, replicates=replicates, seed=seed_sequence, confidence=confidence,
        interval=interval,
    )
    first = _pass_at_1(table)
    success = pd.Series(
        {"mean": first["estimate"], "se": first["se"], "ci_low": first["ci_low"],
         "ci_high": first["ci_high"]},
        dtype=float,
    )
    if 1 not in ks:
        table = table.drop(index=[("pass_at_k", 1), ("pass_hat_k", 1)])
    n, c = counts(tasks)
    values = task_values(n, c, ks)
    for column, value in enumerate(ks):
        tasks[f"pass_at_k_{value}"] = values[:, column]
    for column, value in enumerate(ks):
        tasks[f"pass_hat_k_{value}"] = values[:, len(ks) + column]
    if len(tasks) < 2:
        messages.append("only one task: the standard error and intervals need at least two")

    codes, _ = pd.factorize(frame["task"], sort=False)
    count_tasks = len(tasks)
    metric_names = list(frame.attrs.get("relsim_metrics", []))
    metrics = {
        name: metric_tools.metric_summary(frame, codes, count_tasks, name, confidence)
        for name in metric_names
    }
    rate_values = {
        spec: metric_tools.rate(frame, codes, count_tasks, spec, confidence)
        for spec in dict.fromkeys(rates)
    }
    cost = None
    if "cost" in frame:
        cost = metric_tools.cost_per_success(frame, codes, count_tasks, confidence)

    text_columns = list(frame.attrs.get("relsim_text", []))
    chosen = _category_column(category, text_columns, metric_names)
    found = infrastructure = None
    if chosen is not None:
        found = metric_tools.categories(frame, codes, tasks.index, chosen, confidence)
        infrastructure, note = _without_infrastructure(
            frame, chosen, infra_categories, confidence
        )
        if note:
            messages.append(note)
    ignored = tuple(
        [name for name in text_columns if name != chosen]
        + list(frame.attrs.get("relsim_ignored", []))
    )

    errors = None
    errored = frame.attrs.get("relsim_errors")
    if errored:
        errors = {"count": len(errored), "samples": list(errored[:20])}
        messages.append(
            f"{len(errored)} sample{'s' if len(errored) > 1 else ''} errored (the eval "
            "itself failed, not the agent): left out of every number, not counted as failures"
        )

    inspect, notes = reducer_summary(frame, tasks, float(success["mean"]), confidence)
    messages.extend(notes)

    steps = None
    if "steps" in frame:
        mean_steps = float(tasks["steps"].mean())
        steps = {
            "mean": mean_steps,
            **_steps_plan(float(success["mean"]), max(1, math.floor(mean_steps + 0.5)), target),
        }

    coverage_notes = _coverage_notes(tasks, ks, metrics, rate_values, cost)
    for message in messages:
        warnings.warn(message, TrialDataWarning, stacklevel=2)
    return TrialAnalysis(
        tasks=int(len(tasks)),
        trials=int(len(frame)),
        success=success,
        pass_k=table,
        per_task=tasks,
        metrics=metrics,
        rates=rate_values,
        cost_per_success=cost,
        categories=found,
        infrastructure=infrastructure,
        ignored_columns=ignored,
        errors=errors,
        inspect=inspect,
        steps=steps,
        replicates=int(replicates),
        # what reproduces the draws: the SeedSequence as given (its spawn key too), else the
        # integer given or the entropy drawn for None
        seed=seed if isinstance(seed, np.random.SeedSequence) else seed_value,
        confidence=float(confidence),
        interval=interval,
        source=str(frame.attrs.get("relsim_source", "trials")),
        warnings=tuple(messages),
        coverage_notes=coverage_notes,
        difficulty=difficulty,
        extrapolated=extrapolated,
    )


#: The spawn key under the analysis seed of the task-difficulty fit's bootstrap.
_FIT_STREAM = 21


def _extrapolation(
    frame: pd.DataFrame, k_max: Any, seed: np.random.SeedSequence, confidence: float
) -> tuple[DifficultyFit, dict[str, Any]]:
    """The task-difficulty fit of the trials and its pass@k, pass^k up to ``k_max``."""
    from relsim.evalstats.difficulty import MAX_K, fit_difficulty

    if not (is_count(k_max) and 1 <= k_max <= MAX_K):
        raise invalid("extrapolate", f"an integer in [1, {MAX_K}]", k_max)
    # a stream of its own (the seed's child with key _FIT_STREAM, made without spawning, so
    # the seed given is left as it was): the fit's resamples are not the intervals' resamples
    child = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, _FIT_STREAM))
    fit = fit_difficulty(frame, seed=child)
    out = fit.extrapolate(int(k_max), confidence=confidence)
    record = fit.to_dict()
    out["check"] = record.pop("check")
    record.pop("draws")
    record.pop("seed")
    return fit, {**out, "fit": record, "draws": len(fit.draws)}


def _coverage_notes(
    tasks: pd.DataFrame,
    ks: list[int],
    metrics: dict[str, Any],
    rates: dict[str, Any],
    cost: dict[str, Any] | None,
) -> dict[str, str]:
    """The coverage notes of this eval's intervals, by quantity (see
    :func:`relsim.evalstats.coverage.coverage_note`)."""
    from relsim.evalstats.coverage import coverage_note

    count, trials = len(tasks), float(tasks["trials"].median())
    wanted = {"success": "success"}
    for k in ks:
        if k > 1:
            wanted[f"pass@{k}"] = "pass@k"
            wanted[f"pass^{k}"] = "pass^k"
    for name in metrics:
        wanted[name] = "metric"
        wanted[f"{name} per successful trial"] = "metric per success"
    for name in rates:
        wanted[f"rate {name}"] = "rate"
    if cost is not None:
        wanted["cost_per_success"] = "cost per success"
    notes = {}
    if count >= 2:
        for label, quantity in wanted.items():
            note = coverage_note(quantity, count, trials)
            if note is not None:
                notes[label] = note
    return notes


def _pass_at_1(table: pd.DataFrame) -> pd.Series:
    """The pass@1 row of a ``pass_k_table``. A full key of its two-level index selects one
    row; pandas-stubs types every ``.loc[tuple]`` as a cell, hence the cast."""
    return cast("pd.Series", table.loc[("pass_at_k", 1)])


def _category_column(
    category: str | None, text_columns: list[str], metric_names: list[str]
) -> str | None:
    """The column of failure categories: the one named, else ``category`` when present."""
    import difflib

    if category is None:
        return "category" if "category" in text_columns + metric_names else None
    if category in text_columns or category in metric_names:
        return category
    choices = text_columns + metric_names
    close = difflib.get_close_matches(category, choices, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise invalid("category", f"a column of the trials ({', '.join(choices) or 'none'}){hint}",
                  category)


def _texts(value: Any, key: str, what: str) -> tuple[str, ...]:
    """``value``, one text or an iterable of texts, as a tuple; else the error naming ``key``
    (a number is not iterable, and a text's characters are not its words)."""
    if isinstance(value, str):
        return (value,)
    try:
        items = tuple(value)
    except TypeError:
        raise invalid(key, f"one text or an iterable of {what}", value) from None
    if not all(isinstance(item, str) for item in items):
        raise invalid(key, f"one text or an iterable of {what}", value)
    return items


def _without_infrastructure(
    frame: pd.DataFrame, column: str, infra_categories: Iterable[str], confidence: float
) -> tuple[dict[str, Any] | None, str | None]:
    """Success recomputed without the failed trials of infrastructure categories."""
    from relsim.evalstats import metrics as metric_tools

    if isinstance(infra_categories, str):
        infra_categories = [infra_categories]
    wanted = [str(name).strip().lower() for name in infra_categories if str(name).strip()]
    labels = metric_tools.category_labels(frame[column])
    lowered = labels.str.lower()
    # "named like": a category whose name contains one of the words (env_timeout, infra_crash)
    like = np.zeros(len(frame), dtype=bool)
    for word in wanted:
        like |= lowered.str.contains(word, regex=False).to_numpy()
    noise = (frame["success"] == 0).to_numpy() & like
    if not noise.any():
        return None, None
    kept = frame.loc[~noise]
    names = sorted(set(labels[noise].tolist()))
    if kept.empty:
        return {"categories": names, "trials": int(noise.sum()), "tasks": 0,
                "success": {"mean": None, "se": None, "ci": [None, None]}}, (
            "every trial failed for infrastructure: there is no success to report without them"
        )
    kept.attrs.update(frame.attrs)
    rest = per_task(kept)
    # the Jeffreys interval draws nothing: any seed will do
    table, _ = pass_k_table(rest, [1], replicates=DEFAULT_REPLICATES,
                            seed=np.random.SeedSequence(0), confidence=confidence,
                            interval="jeffreys")
    row = _pass_at_1(table)
    out = {
        "categories": names,
        "trials": int(noise.sum()),
        "tasks": int(len(rest)),
        "success": {"mean": row["estimate"], "se": row["se"],
                    "ci": [row["ci_low"], row["ci_high"]]},
    }
    note = (
        f"{int(noise.sum())} failed trial{'s' if noise.sum() > 1 else ''} in infrastructure "
        f"categor{'ies' if len(names) > 1 else 'y'} {', '.join(names)}: success without them "
        f"is {row['estimate']:.4f} (the headline success counts them as failures)"
    )
    return out, note


def _steps_plan(success_mean: float, steps: int, target: float) -> dict[str, Any]:
    """The per-step success implied over ``steps`` steps and the flag-form plan of
    ``relsim solve`` (perfect verifier) from it: the planner's own chain plan."""
    from relsim import formulas
    from relsim.plan.chain import plan_chain

    per_step = formulas.required_step_success(success_mean, steps) if success_mean > 0 else 0.0
    chain = plan_chain(steps, target, per_step)
    keys = ("steps", "target", "required_step_success", "retries", "success", "feasible")
    plan: dict[str, Any] = {key: getattr(chain, key) for key in keys}
    plan["command"] = chain.command()
    return {"per_step_success": per_step, "plan": plan}
