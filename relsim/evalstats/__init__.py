"""Estimators and intervals for real trial data: pass@k, pass^k, paired comparisons, power.

An eval is a table of trials, one row per run of the agent on a task: ``task``, ``trial``,
``success`` and optionally ``cost``, ``steps``, a failure ``category`` and any numeric column
(or an Inspect eval log, read by :func:`read_inspect_log`). Trials of one task are correlated
(a hard task is hard every time), so every standard error and interval here treats the
**task** as the unit of sampling: the success rate is averaged over tasks, its standard error
is the spread of the per-task values (the clustered standard error of Miller 2024, "Adding
Error Bars to Evals", in its per-task form), never taken below the binomial noise of the
trials, and the intervals of success, pass@k and pass^k are Jeffreys intervals on effective
counts (:func:`relsim.intervals.effective_count_interval`): inside [0, 1], never of zero
width, with coverage measured in ``tests/test_coverage.py``.

Conventions
-----------
- **Success mean**: the mean over tasks of each task's success rate ``c_i / n_i`` (each task
  weighs the same, whatever its number of trials).
- **pass@k and pass^k with unequal trial counts**: the mean, over the tasks with ``n_i >= k``,
  of the unbiased per-task estimators of docs/model.md section 2
  (:func:`relsim.formulas.pass_at_k_estimate`, :func:`relsim.formulas.pass_hat_k_estimate`);
  tasks with fewer than ``k`` trials are excluded and counted in ``excluded_tasks``, and a
  warning says so whenever the counts differ.
- **Bootstrap** (``interval="bca"`` or ``"percentile"``, on request): ``replicates``
  (default 2000) resamples of the tasks with replacement, drawn
  from ``numpy.random.default_rng(seed)``; each replicate recomputes the whole estimate (mean
  over the resampled tasks that have ``n_i >= k``). The interval is the BCa interval of the
  replicates (bias-corrected and accelerated), or on request the plain percentile interval,
  which under-covers for the skewed per-task values of pass@k and pass^k (see
  :func:`pass_k`). At least :data:`MIN_REPLICATES` replicates are required, and a k with
  fewer than two eligible tasks gets no interval (NaN), as the success mean gets none with
  one task: resampling one task cannot show how tasks vary.
- **Power**: the exact power of the two-sided paired t-test, from the noncentral t (see
  :func:`paired_power` and :func:`tasks_needed`).
- **Bad input** raises :class:`TrialDataError` for the data (naming the file, line and
  column) and :class:`relsim.errors.RelsimError` for an argument, both in the one format
  ``<where>: <key>: must be <allowed>, got <value>``.

The parts, by concern, bottom up: ``_common`` (the error, the warning, shared checks),
``_frames`` (the checked trials frame every reader builds), ``inspect_logs`` (Inspect eval
logs), ``readers`` (CSV, JSONL, DataFrames, and the one dispatcher over every source),
``reducers`` (what an Inspect log's epoch reducer makes of its headline),
``estimators`` (per-task table, success mean, pass@k and pass^k), ``metrics`` (metric
columns, rates, cost per success, failure categories), ``smallsample`` (the intervals of
paired differences and of ratios that hold on small harnesses), ``coverage`` (their measured
coverage, and the note given where it fell short of 95%), ``bootstrap`` (the cluster bootstrap;
its intervals live in :mod:`relsim.intervals`), ``analysis`` (:func:`analyze`),
``comparison`` (:func:`compare`), ``power``, ``audit`` (:func:`audit`: a grader's miss and
false-reject rates from labelled verdicts, read by ``_verdicts``, and the pass rate it judged,
corrected) and ``difficulty`` (:func:`fit_difficulty`: the task-difficulty distribution of a
harness, pass@k and pass^k beyond the trials run, and the scenario that runs on it; its
likelihood and batched fit in ``_zoib``). The harness report that shows an analysis or
a comparison is a view, in :mod:`relsim.report.eval`. Results are pandas objects or frozen
result objects with ``to_dict()`` (the JSON the command line prints) and ``to_frame()`` (one
row). pandas and scipy are imported inside the functions that use them.

Seeds are as in the engines: ``seed`` is an integer >= 0, a ``numpy.random.SeedSequence`` or
None (fresh entropy, recorded in the result so the run can be repeated); only the bootstrap
intervals draw.
"""

from __future__ import annotations

from relsim.evalstats._common import TrialDataError, TrialDataWarning
from relsim.evalstats.analysis import TrialAnalysis, analyze
from relsim.evalstats.audit import GraderAudit, audit
from relsim.evalstats.bootstrap import DEFAULT_REPLICATES, INTERVALS, MIN_REPLICATES
from relsim.evalstats.comparison import Comparison, compare
from relsim.evalstats.difficulty import DifficultyFit, fit_difficulty, verifier_from_audit
from relsim.evalstats.estimators import DEFAULT_K, pass_k, per_task, success_rate
from relsim.evalstats.inspect_logs import read_inspect_log
from relsim.evalstats.metrics import DEFAULT_INFRA_CATEGORIES
from relsim.evalstats.power import (
    MIN_TASKS,
    minimum_detectable_effect,
    paired_power,
    tasks_needed,
)
from relsim.evalstats.readers import (
    MAX_FILE_BYTES,
    MAX_STEPS,
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    read_trials,
)

__all__ = [
    "DEFAULT_INFRA_CATEGORIES",
    "DEFAULT_K",
    "DEFAULT_REPLICATES",
    "INTERVALS",
    "MAX_FILE_BYTES",
    "MAX_STEPS",
    "MIN_REPLICATES",
    "MIN_TASKS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMNS",
    "Comparison",
    "GraderAudit",
    "DifficultyFit",
    "TrialAnalysis",
    "TrialDataError",
    "TrialDataWarning",
    "analyze",
    "audit",
    "compare",
    "fit_difficulty",
    "minimum_detectable_effect",
    "paired_power",
    "pass_k",
    "per_task",
    "read_inspect_log",
    "read_trials",
    "success_rate",
    "tasks_needed",
    "verifier_from_audit",
]
