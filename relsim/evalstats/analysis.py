r"""``analyze``: everything a table of trials says, as one :class:`TrialAnalysis`."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from relsim.errors import invalid
from relsim.evalstats._common import TrialDataWarning, is_real, one_row
from relsim.evalstats.bootstrap import DEFAULT_REPLICATES
from relsim.evalstats.estimators import pass_k_table, per_task, success_rate
from relsim.evalstats.readers import trials_frame
from relsim.results import jsonable

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["DEFAULT_KS", "TrialAnalysis", "analyze"]

#: The k reported when none are asked for (those above the largest trial count are dropped).
DEFAULT_KS = (1, 3, 5)


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

    def _record(self) -> dict[str, Any]:
        """The fields of :meth:`to_dict`, with NaN and infinity as they are."""
        out: dict[str, Any] = {
            "tasks": self.tasks,
            "trials": self.trials,
            "success": {
                "mean": self.success["mean"],
                "se": self.success["se"],
                "ci": [self.success["ci_low"], self.success["ci_high"]],
            },
        }
        for metric in ("pass_at_k", "pass_hat_k"):
            rows = self.pass_k.loc[metric]
            out[metric] = {
                str(k): {
                    "estimate": row["estimate"],
                    "ci": [row["ci_low"], row["ci_high"]],
                    "excluded_tasks": int(row["excluded_tasks"]),
                }
                for k, row in rows.iterrows()
            }
        if self.cost_per_success is not None:
            out["cost_per_success"] = self.cost_per_success
        if self.steps is not None:
            out["steps"] = self.steps
        seed = self.seed
        if not (seed is None or isinstance(seed, (int, np.integer))):
            seed = str(seed)  # a SeedSequence or Generator: shown, as JSON cannot hold it
        out["bootstrap"] = {
            "replicates": self.replicates,
            "seed": seed,
            "confidence": self.confidence,
            "interval": self.interval,
        }
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``relsim analyze --json`` (NaN and infinity become None).

        ``cost_per_success`` is present only with a ``cost`` column, and None there only
        when no trial succeeded.
        """
        return jsonable(self._record())

    def to_frame(self) -> pd.DataFrame:
        """A one-row DataFrame of :meth:`to_dict`'s fields, so analyses of several evals
        concatenate: nested keys joined by ``_`` (``success_mean``, ``pass_at_k_3_ci_low``,
        ``steps_plan_retries``, ``bootstrap_seed``), intervals split into ``_low`` and
        ``_high``; undefined numbers are NaN and a cost per success without any success is
        infinite. The per-task and per-k tables are :attr:`per_task` and :attr:`pass_k`.
        """
        return one_row(self._record())


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
    frame = trials_frame(trials, threshold)
    if not (is_real(target) and 0.0 < target <= 1.0):
        raise invalid("target", "in (0, 1]", target)
    tasks = per_task(frame)
    largest = int(tasks["trials"].max())
    if ks is None:
        ks = [k for k in DEFAULT_KS if k <= largest] or [1]
    table, messages = pass_k_table(
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
    ``relsim solve`` (perfect verifier) from it: the planner's own chain plan."""
    from relsim import formulas
    from relsim.plan.chain import plan_chain

    per_step = formulas.required_step_success(success_mean, steps) if success_mean > 0 else 0.0
    chain = plan_chain(steps, target, per_step)
    keys = ("steps", "target", "required_step_success", "retries", "success", "feasible")
    plan: dict[str, Any] = {key: getattr(chain, key) for key in keys}
    plan["command"] = chain.command()
    return {"per_step_success": per_step, "plan": plan}
