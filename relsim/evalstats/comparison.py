r"""``compare``: a paired comparison of two evals on the tasks they share, on every quantity.

Each quantity is compared task by task, over the :math:`T` shared tasks (eligible in both; for
pass@k, at least k trials in each), with an interval built to hold down to a few tasks
(:mod:`relsim.evalstats.smallsample`; coverage measured in ``tests/test_coverage.py`` and
tabled in docs/commands/trials.md):

- **success, pass@k, pass^k**: the per-task values are the unbiased estimates (docs/model.md
  section 2) and the difference is the mean of the per-task differences
  :math:`d_i = b_i - a_i`. Its interval treats the movement up, :math:`\overline{b(1-a)}`,
  and down, :math:`\overline{a(1-b)}`, as proportions seen in an effective number of paired
  draws (the paired variance :math:`s_d^2/T`, never below the binomial noise within the
  tasks, capped by the pairs of trials there are, with :math:`T-1` degrees of freedom) and
  combines their Jeffreys intervals
  (:func:`relsim.evalstats.smallsample.paired_proportion_interval`): it never has zero
  width, even when every per-task value is 0 or 1. The p-value is the exact sign test
  (McNemar's) when every per-task value is 0 or 1 (four tasks that all went 0 -> 1: 0.125),
  else the level at which the interval first excludes 0, so ``p < 0.05`` exactly when the
  95% interval excludes 0.
- **cost per success and the mean of each metric column** (ratios of per-task totals, see
  :mod:`relsim.evalstats.metrics`): each eval's ratio keeps its own interval (skewness and
  heavy tails, the rule of three for a column of zeros, the success count's uncertainty for
  the cost per success) and the two are combined with the correlation of their linearised
  contributions (:func:`relsim.evalstats.smallsample.paired_ratio_interval`); the p-value
  inverts that interval.

With several quantities compared, each p-value is reported with Holm's adjustment for the
number tested (:func:`relsim.intervals.holm`).
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
        Its standard error (see :mod:`relsim.evalstats.comparison`; never 0 beside an
        interval of positive width).
    ci : (float, float)
        Its interval at ``confidence``, within [-1, 1].
    p_value : float
        Two-sided p-value of the success difference (not adjusted): the exact sign test when
        every per-task value is 0 or 1, else the test the interval inverts.
    quantities : dict
        Every quantity compared (``success``, ``pass@k``, ``pass^k`` for each k,
        ``cost_per_success``, each metric column shared by both): ``tasks``, ``baseline``,
        ``candidate``, ``difference``, ``se``, ``ci``, ``p_value`` and ``p_holm`` (Holm's
        adjustment over the ``tested`` quantities), and ``coverage_note`` where the
        interval's coverage was measured below 95% at about this size
        (:func:`relsim.evalstats.coverage.coverage_note`).
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
    metric: str | Iterable[str] = (),
) -> Comparison:
    r"""Paired comparison of two evals on the tasks both share, on every quantity.

    See :mod:`relsim.evalstats.comparison` for the formulas: the success difference is the
    mean over shared tasks of :math:`d_i = \hat q_i - \hat p_i`, with an interval that holds
    down to a few tasks and never has zero width, and the exact sign test's p-value when
    every per-task value is 0 or 1.

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
    metric : str or iterable of str
        Inspect logs: scorers whose values become metric columns (``"score"``: the success
        scorer's own value), compared like any numeric column.

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
    frames = [load_trials(source, threshold, scorer, metric, name)
              for source, name in ((baseline, "baseline"), (candidate, "candidate"))]
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
        from relsim.evalstats.metrics import cost_totals

        quantities["cost_per_success"] = _paired_ratio(
            [cost_totals(frame, code, len(shared)) for frame, code in zip(frames, codes)],
            confidence,
        )
    shared_metrics = [
        name
        for name in frames[0].attrs.get("relsim_metrics", [])
        if name in frames[1].attrs.get("relsim_metrics", [])
    ]
    for name in shared_metrics:
        pairs = [totals(frame, code, name) for frame, code in zip(frames, codes)]
        quantities[name] = _paired_ratio(pairs, confidence)

    from relsim.evalstats.coverage import coverage_note

    trials = float(np.median(np.minimum(n_a, n_b)))
    for name, quantity in quantities.items():
        kind = "metric" if name not in ("success", "cost_per_success") and not name.startswith(
            "pass") else name.replace("_", " ")
        if name.startswith("pass"):
            kind = name[:5] + "k"
        note = coverage_note(f"{kind} difference", quantity["tasks"], trials)
        if note is not None:
            quantity["coverage_note"] = note
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


def _paired_proportion(
    a: np.ndarray, b: np.ndarray, n_a: np.ndarray, n_b: np.ndarray, k: int, confidence: float
) -> dict[str, Any]:
    from relsim.evalstats.smallsample import (
        paired_proportion_interval,
        paired_proportion_p_value,
    )

    both = ~np.isnan(a) & ~np.isnan(b)
    count = int(both.sum())
    out: dict[str, Any] = {"tasks": count}
    if count < 2:
        return {**out, "baseline": math.nan, "candidate": math.nan, "difference": math.nan,
                "se": math.nan, "ci": (math.nan, math.nan), "p_value": math.nan}
    a, b, n_a, n_b = a[both], b[both], n_a[both], n_b[both]
    difference, se, low, high = paired_proportion_interval(a, b, n_a, n_b, k, confidence)
    p_value = paired_proportion_p_value(a, b, n_a, n_b, k)
    return {**out, "baseline": float(a.mean()), "candidate": float(b.mean()),
            "difference": difference, "se": se, "ci": (low, high), "p_value": p_value}


def _paired_ratio(
    sides: list[tuple[np.ndarray, ...]], confidence: float
) -> dict[str, Any]:
    """Difference of two ratios of per-task totals over every shared task (a task with no
    success still spent its cost), from :func:`relsim.evalstats.smallsample.paired_ratio_interval`."""
    from relsim.evalstats.smallsample import paired_ratio_interval, ratio_interval

    estimates = [
        ratio_interval(side[0], side[1])[0] for side in sides
    ]
    count = len(sides[0][0])
    out: dict[str, Any] = {"tasks": count, "baseline": estimates[0], "candidate": estimates[1]}
    difference, se, low, high, p_value = paired_ratio_interval(
        sides[0], sides[1], confidence, p_value=True
    )
    return {**out, "difference": difference, "se": se, "ci": (low, high), "p_value": p_value}
