r"""``compare``: a paired comparison of two evals on the tasks they share."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relsim import intervals
from relsim.errors import RelsimError
from relsim.evalstats._common import TrialDataWarning, check_confidence, one_row
from relsim.evalstats.estimators import per_task
from relsim.evalstats.readers import trials_frame
from relsim.results import jsonable

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

    def _record(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "difference": self.difference,
            "se": self.se,
            "ci": [self.ci[0], self.ci[1]],
            "p_value": self.p_value,
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``relsim compare --json`` (NaN and infinity become None)."""
        return jsonable(self._record())

    def to_frame(self) -> pd.DataFrame:
        """A one-row DataFrame of :meth:`to_dict`'s fields (``ci`` split into ``ci_low`` and
        ``ci_high``). The per-task differences are :attr:`per_task`."""
        return one_row(self._record())


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
    RelsimError
        When the tables share fewer than two tasks (and for bad tables, see
        :func:`read_trials`).

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

    check_confidence(confidence)
    base = per_task(trials_frame(baseline, threshold))["rate"]
    cand = per_task(trials_frame(candidate, threshold))["rate"]
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
    table = pd.DataFrame({"baseline": base[shared], "candidate": cand[shared]})
    table["difference"] = table["candidate"] - table["baseline"]
    d = table["difference"].to_numpy(dtype=float)
    count = len(d)
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(count)
    if sd > 1e-12 * max(1.0, abs(mean)):
        ci = intervals.t_interval(mean, se, count, confidence)
        p_value = float(stats.ttest_rel(table["candidate"], table["baseline"]).pvalue)
    else:  # every task moved by the same amount: no spread, no doubt
        se, ci = 0.0, (mean, mean)
        p_value = 1.0 if mean == 0 else 0.0
    for message in messages:
        warnings.warn(message, TrialDataWarning, stacklevel=2)
    return Comparison(
        tasks=count,
        baseline=float(table["baseline"].mean()),
        candidate=float(table["candidate"].mean()),
        difference=mean,
        se=se,
        ci=ci,
        p_value=p_value,
        per_task=table,
        only_baseline=only_baseline,
        only_candidate=only_candidate,
        confidence=float(confidence),
        warnings=tuple(messages),
    )
