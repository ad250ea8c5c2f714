r"""Inspect's epoch reducers, read back: what Inspect's headline means in relsim's terms.

Inspect scores each epoch of a sample, then *reduces* the epochs to one score per sample
(``Epochs(4, "at_least_1")``: a sample counts when any of its 4 epochs does) and reports the
mean of those. relsim reads every epoch as a trial, so its ``success`` is the mean over
trials, Inspect's ``mean`` reducer; under another reducer Inspect's headline is another
quantity. This module names it, recomputes it from the trials (the mean over tasks of each
task's reduced value, with the interval of :func:`relsim.evalstats.estimators.effective_interval`)
and says how it differs from relsim's success, so an Inspect log's reducer is never silently
ignored:

========================  ===========================================  ====================
reducer                   per task (``c`` successes in ``n`` epochs)   relsim's quantity
========================  ===========================================  ====================
``mean``                  :math:`c/n`                                  success
``max``, ``at_least_1``   :math:`[c \ge 1]`                            pass@n
``at_least_k``            :math:`[c \ge k]`                            (pass^n at k = n)
``pass_at_k``             :math:`1 - \binom{n-c}{k}/\binom{n}{k}`      pass@k
``pass_k_k``              :math:`\binom{c}{k}/\binom{n}{k}`            pass^k
``median``                1, 0 or 1/2 as :math:`c` is above, below
                          or at :math:`n/2`
``majority``              1 or 0 for a strict majority, else unscored
========================  ===========================================  ====================

Other reducers (``mode``, custom ones) are named with Inspect's headline and no equivalent.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["reducer_summary", "reducer_ks"]


def _reduced(reducer: str, n: np.ndarray, c: np.ndarray) -> tuple[str, int, np.ndarray] | None:
    """``(quantity, k, per-task values)`` of a reducer on binary epochs; None if unknown."""
    from relsim import formulas

    epochs = int(n.max())
    if reducer == "mean":
        return "success (mean over trials)", 1, c / n
    if reducer == "max":
        return f"pass@{epochs} (any of the epochs)", epochs, (c >= 1).astype(float)
    if reducer == "median":
        return "median over epochs", 1, np.where(2 * c > n, 1.0, np.where(2 * c < n, 0.0, 0.5))
    if reducer == "majority":
        return "strict majority of epochs", 1, np.where(
            2 * c > n, 1.0, np.where(2 * (n - c) > n, 0.0, np.nan)
        )
    match = re.fullmatch(r"(at_least|pass_at|pass_k)_(\d+)", reducer)
    if match is None:
        return None
    kind, k = match.group(1), int(match.group(2))
    if kind == "at_least":
        if k == 1:
            return f"pass@{epochs} (any of the epochs)", epochs, (c >= 1).astype(float)
        if k == epochs:
            return f"pass^{epochs} (every epoch)", epochs, (c >= k).astype(float)
        return f"at least {k} of the epochs", epochs, (c >= k).astype(float)
    eligible = n >= k
    values = np.full(len(n), np.nan)
    if kind == "pass_at":
        values[eligible] = formulas.pass_at_k_estimate(n[eligible], c[eligible], k)
        return f"pass@{k}", k, values
    values[eligible] = formulas.pass_hat_k_estimate(n[eligible], c[eligible], k)
    return f"pass^{k}", k, values


def reducer_ks(frame: pd.DataFrame) -> list[int]:
    """The k of pass@k or pass^k that the log's reducers stand for (so ``analyze`` shows
    them by default)."""
    found = []
    for log in frame.attrs.get("relsim_inspect") or []:
        epochs = int(log.get("epochs") or 1)
        for entry in log.get("reducers", []):
            name = str(entry["reducer"])
            match = re.fullmatch(r"(at_least|pass_at|pass_k)_(\d+)", name)
            if name == "max" or (match and match.group(1) == "at_least"
                                 and int(match.group(2)) in (1, epochs)):
                found.append(epochs)
            elif match and match.group(1) != "at_least":
                found.append(int(match.group(2)))
    return sorted(set(found))


def reducer_summary(
    frame: pd.DataFrame, tasks: pd.DataFrame, success: float, confidence: float
) -> tuple[list[dict[str, Any]] | None, list[str]]:
    """For each log and reducer of the chosen scorer: Inspect's headline metrics, the
    quantity the reducer stands for and relsim's estimate and interval of it from the trials,
    and what to warn about (a reducer other than ``mean``, a headline relsim does not
    reproduce)."""
    from relsim.evalstats.estimators import counts, effective_interval

    logs = frame.attrs.get("relsim_inspect")
    if not logs:
        return None, []
    n, c = counts(tasks)
    out, messages = [], []
    for log in logs:
        thresholded = log.get("threshold") is not None
        for entry in log.get("reducers") or [{"reducer": "mean", "metrics": {}}]:
            reducer = str(entry["reducer"])
            metrics = dict(entry.get("metrics") or {})
            record: dict[str, Any] = {
                "log": log["log"], "task": log["task"], "scorer": log["scorer"],
                "epochs": log["epochs"], "reducer": reducer, "headline": metrics,
                "quantity": None, "estimate": None, "se": None, "ci": [None, None],
            }
            reduced = None if thresholded else _reduced(reducer, n, c)
            if reduced is not None:
                quantity, k, values = reduced
                estimate, se, low, high = effective_interval(values, n, k, confidence)
                record.update(quantity=quantity, estimate=estimate, se=se, ci=[low, high])
            out.append(record)
            if len(logs) > 1:
                continue  # a directory of logs: relsim pools them, Inspect reports each
            shown = ", ".join(f"{name} {value:.4g}" for name, value in metrics.items())
            headline = f"Inspect's headline for scorer {log['scorer']} ({shown or 'no metrics'})"
            if reduced is None:
                why = ("relsim thresholds the scores, Inspect reduced the raw values"
                       if thresholded else "relsim has no equivalent of this reducer")
                messages.append(
                    f"{headline} reduces each sample's {log['epochs']} epochs with "
                    f"{reducer}: {why}; relsim's success is the mean over trials "
                    f"({success:.4g})"
                )
                continue
            accuracy = metrics.get("accuracy", metrics.get("mean"))
            matches = accuracy is None or math.isclose(
                accuracy, record["estimate"], rel_tol=1e-9, abs_tol=1e-12
            )
            if reducer != "mean":
                messages.append(
                    f"{headline} reduces each sample's {log['epochs']} epochs with "
                    f"{reducer}: it is {record['quantity']}, which relsim estimates at "
                    f"{record['estimate']:.4g}; relsim's success ({success:.4g}) is the mean "
                    "over trials (Inspect's mean reducer)"
                )
            if not matches:
                messages.append(
                    f"{headline} differs from relsim's {record['quantity']} "
                    f"({record['estimate']:.4g}): relsim leaves out errored samples and "
                    "averages over the tasks it read"
                )
    return out, messages
