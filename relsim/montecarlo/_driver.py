"""The Monte Carlo driver: validation, seeding, chunking, threads and merging.

The trials are cut into blocks of ``BLOCK_TRIALS`` (a fixed internal size). Block ``b`` draws
from its own stream, seeded by ``SeedSequence(seed, spawn_key=(b,))`` (the ``b``-th child of
``SeedSequence(seed).spawn``), so the trials, and every count and float sum, do not depend on
the number of threads or the chunk size: a chunk is only how many consecutive blocks one task
runs, and per-block results are merged in block order.
"""

from __future__ import annotations

import math
import numbers
import os
import signal
import threading
import warnings
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from relsim.montecarlo import _layout, _native
from relsim.intervals import binomial_se, normal_interval, wilson
from relsim.results import Outcome
from relsim.scenario import Scenario, as_scenario

#: Trials per block: the unit of seeding. Changing it changes the trials a seed draws.
BLOCK_TRIALS = 1 << 16

#: Normal quantile of a two-sided 95% interval.

_NO_CAP = 1 << 62
_PERCENTS = (50, 90, 99)
_DEFAULT_MAX_BLOCKS_PER_TASK = 16

#: Largest number of attempts per trial for which the fast kernel's exact histogram is used.
EXACT_ATTEMPTS_LIMIT = 1 << 16

# Tests set this to run every scenario through the general kernel (which must then draw the
# very same trials as the simple one).
_FORCE_GENERAL = False


def simulate(
    scenario: Scenario | Mapping[str, Any],
    trials: int,
    seed: int | np.random.SeedSequence | None = None,
    threads: int | None = None,
    record: int = 0,
    chunk_size: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> Outcome:
    r"""Estimate a scenario's outcome by simulating ``trials`` independent trials.

    Each trial follows MODEL.md section 3 exactly. The proportions are the outcome frequencies,
    with binomial standard errors and Wilson 95% intervals,

    .. math::

        \hat p = \frac{k}{N}, \qquad \mathrm{SE} = \sqrt{\frac{\hat p(1-\hat p)}{N}},

    ``expected_attempts`` and ``expected_cost`` are sample means with standard error
    :math:`s/\sqrt N` and normal 95% intervals, and ``cost_per_success`` is the ratio
    :math:`\hat R = \bar C / \hat p_S` with the delta-method standard error

    .. math::

        \mathrm{SE}(\hat R) = \frac{1}{\hat p_S}
        \sqrt{\frac{\widehat{\mathrm{Var}}(C - \hat R\, S)}{N}},

    where ``C`` is a trial's cost and ``S`` its success indicator.

    Parameters
    ----------
    scenario : Scenario or mapping
        The design to simulate (a mapping is read with ``Scenario.from_dict``).
    trials : int
        Number of trials, ``>= 1``.
    seed : int, numpy.random.SeedSequence or None
        Seeds the trials. ``None`` draws fresh entropy, which is reported in ``Outcome.seed``
        so the run can be repeated. The same seed gives the same trials, whatever
        ``threads`` and ``chunk_size``.
    threads : int or None
        Worker threads, ``>= 1``; ``None`` uses every core available to the process.
    record : int
        Keep the first ``record`` trials (at most ``trials``) in ``Outcome.trajectories``, a
        pandas DataFrame with one row per trial: ``outcome``, ``attempts``, ``cost``,
        ``retries_used``, ``rollbacks``, ``first_wrong_step`` (the first step whose accepted
        result was wrong, NA if none), ``caught_at`` (the checkpoint position that first caught
        a wrong segment, NA if none) and ``stopped_at`` (for a detected failure, the step whose
        retries ran out or the checkpoint position whose catch found no rollback left; NA
        otherwise). The rows are the first trials of the same stream that is counted.
    chunk_size : int or None
        Trials per task given to a thread, ``>= 1``, rounded up to whole blocks of
        ``BLOCK_TRIALS``; ``None`` picks a size that keeps every thread busy. It changes only
        the scheduling, never the result.
    progress : callable or None
        Called in the calling thread with the number of trials each finished task added.
        Raising ``KeyboardInterrupt`` from it stops the run as Ctrl-C does.

    Returns
    -------
    Outcome
        ``method="montecarlo"`` with ``standard_errors`` and ``intervals`` for every key,
        ``percentiles`` of per-trial ``cost`` and ``attempts`` (p50, p90, p99), ``trials``,
        ``seed`` and ``partial``.

    Notes
    -----
    Two kernels draw the trials. Scenarios without checkpoints, confusion or random effects
    whose attempts all cost the same run on a fast one that keeps the exact joint histogram
    of outcome and attempts per trial (a trial's cost is then ``attempts * cost``); the others
    run on the general one. For the scenarios both can run, both draw the same trials.

    Percentiles are the inverted-CDF quantiles (the value of the ``ceil(q N)``-th smallest
    trial, numpy's ``method="inverted_cdf"``). On the fast kernel they are exact. On the
    general one they come from a bounded log-linear histogram with 1024 bins per octave that
    remembers the least and greatest value in each bin: a percentile is exact when its bin
    holds a single distinct value (so always for attempts below 2048, and for integer costs
    below 2048), otherwise within a relative 2**-10 (0.1%) below the exact one.

    Ctrl-C (or ``KeyboardInterrupt`` from ``progress``) stops the run after the tasks in flight
    finish and returns the estimate over the trials done, with ``partial=True`` and a
    ``RuntimeWarning``; a second Ctrl-C aborts with ``KeyboardInterrupt``.

    Examples
    --------
    R1 of MODEL.md (25 steps, p = 0.9, perfect verifier, 2 retries per step) succeeds with
    probability 0.975298:

    >>> from relsim import Scenario, simulate
    >>> r1 = Scenario.from_dict({"steps": 25, "p": 0.9, "verifier": {"miss": 0.0},
    ...                          "retries": {"per_step": 2}})
    >>> out = simulate(r1, trials=200_000, seed=1)
    >>> abs(out.success - 0.975298) < 5 * out.standard_errors["success"]
    True
    >>> out.silent_failure, out.trials, out.seed
    (0.0, 200000, 1)
    """
    scenario = as_scenario(scenario)
    trials = _check_int(trials, "trials", low=1)
    threads = _available_cores() if threads is None else _check_int(threads, "threads", low=1)
    record = _check_int(record, "record", low=0)
    if chunk_size is None:
        blocks_per_task = None
    else:
        blocks_per_task = -(-_check_int(chunk_size, "chunk_size", low=1) // BLOCK_TRIALS)
    if progress is not None and not callable(progress):
        raise ValueError(f"progress: must be callable or None, got {progress!r}")
    seed_sequence, seed_value = _check_seed(seed)

    plan = _Plan(scenario)
    n_blocks = -(-trials // BLOCK_TRIALS)
    if blocks_per_task is None:
        blocks_per_task = min(_DEFAULT_MAX_BLOCKS_PER_TASK, max(1, -(-n_blocks // (4 * threads))))
    record = min(record, trials)
    record_ints = np.full((record, _layout.N_RECORD), -1, dtype=np.int64)
    record_cost = np.zeros(record)

    def tasks():  # a generator: memory does not grow with the number of trials
        for first_block in range(0, n_blocks, blocks_per_task):
            blocks = range(first_block, min(first_block + blocks_per_task, n_blocks))
            first_trial = first_block * BLOCK_TRIALS
            last_trial = min(blocks.stop * BLOCK_TRIALS, trials)
            yield blocks, slice(min(first_trial, record), min(last_trial, record))

    def run_task(task):
        blocks, rows = task
        return plan.run(seed_sequence, blocks, trials, record_ints[rows], record_cost[rows])

    merged = plan.tally()
    interrupted = _interrupt_flag()
    with interrupted, _executor(threads) as pool:
        pending: deque = deque()
        queue = tasks()

        def fill() -> None:
            while len(pending) < 2 * threads and not interrupted.is_set:
                task = next(queue, None)
                if task is None:
                    return
                pending.append(pool.submit(run_task, task))

        fill()
        while pending:
            done = merged.trials
            result = pending.popleft().result()
            merged = merged.add(result)  # one assignment: a Ctrl-C sees before or after
            if progress is not None:
                try:
                    progress(merged.trials - done)
                except KeyboardInterrupt:
                    if interrupted.is_set:  # a second interrupt: abort
                        raise
                    interrupted.set()
            if interrupted.is_set:
                for future in pending:
                    future.cancel()
                for future in pending:
                    if not future.cancelled():
                        merged = merged.add(future.result())
                pending.clear()
                break
            fill()

    partial = merged.trials < trials
    if partial:
        warnings.warn(
            f"simulation interrupted: the estimate covers the {merged.trials} of {trials} "
            "trials that finished",
            RuntimeWarning,
            stacklevel=2,
        )
    trajectories = None
    if record:
        rows = min(record, merged.trials)
        trajectories = _trajectories(record_ints[:rows], record_cost[:rows])
    return _outcome(merged.estimates(), seed_value, partial, trajectories)


# ------------------------------------------------------------------------------ checking
def _check_int(value: Any, name: str, low: int) -> int:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low:
        return int(value)
    raise ValueError(f"{name}: must be an integer >= {low}, got {value!r}")


def _check_seed(seed: Any) -> tuple[np.random.SeedSequence, int | None]:
    if seed is None:
        entropy = np.random.SeedSequence().entropy
        return np.random.SeedSequence(entropy), int(entropy)
    if isinstance(seed, np.random.SeedSequence):
        entropy = seed.entropy
        return seed, (int(entropy) if isinstance(entropy, numbers.Integral) else None)
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0:
        return np.random.SeedSequence(int(seed)), int(seed)
    raise ValueError(f"seed: must be an integer >= 0, a numpy SeedSequence or None, got {seed!r}")


def _available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


# ------------------------------------------------------------------------ the kernel's input
class _Plan:
    """A scenario turned into the kernel's arrays, plus the bounds of a trial's values.

    Scenarios without checkpoints, confusion or random effects, whose attempts all cost the
    same, run on the fast ``run_simple`` kernel, which keeps the exact joint histogram of
    outcome and attempts; every other scenario runs on ``run_general``.
    """

    def __init__(self, scenario: Scenario) -> None:
        n = scenario.steps
        # copies: writable arrays, so that the kernels compile once for every scenario
        p = np.array(scenario.p_array, dtype=np.float64)
        miss = np.array(scenario.miss_array, dtype=np.float64)
        false_reject = np.array(scenario.false_reject_array, dtype=np.float64)
        confusion = scenario.correlation.confusion
        factor = 1.0 if confusion is None else float(confusion.factor)
        thresholds = np.empty((n, 2, 3), dtype=np.uint64)
        thresholds[:, 0, :] = four_way_thresholds(p, miss, false_reject)
        thresholds[:, 1, :] = four_way_thresholds(p * factor, miss, false_reject)
        fixed = (p == 0.0) | (p == 1.0)  # shift() leaves p of exactly 0 or 1 as it is
        inner = np.where(fixed, 0.5, p)
        logit_p = np.log(inner) - np.log1p(-inner)
        per_step = np.array(scenario.per_step_array, dtype=np.int64)
        total = scenario.total_retries
        total_retries = int(_NO_CAP if total is None else total)
        cost = scenario.cost
        attempt_cost = np.array(scenario.attempt_cost_array + cost.verify, dtype=np.float64)
        positions = scenario.checkpoint_positions
        is_checkpoint = np.zeros(n + 1, dtype=np.bool_)
        is_checkpoint[list(positions)] = True
        checks = scenario.checkpoints
        rollbacks = 0 if checks is None else checks.rollbacks

        # Bounds of a trial: executions of steps, attempts, cost.
        edges = (0, *positions)
        longest_segment = max((b - a for a, b in zip(edges, edges[1:])), default=0)
        executions = n + rollbacks * longest_segment
        max_attempts = executions * (int(per_step.max()) + 1)
        if total is not None:
            max_attempts = min(max_attempts, executions + total)
        max_cost = (
            max_attempts * float(attempt_cost.max())
            + (len(positions) + rollbacks) * cost.checkpoint
            + rollbacks * cost.rollback
        )
        self.max_attempts = max_attempts

        self.exact = (
            checks is None
            and confusion is None
            and not scenario.has_random_effects
            and bool(np.all(attempt_cost == attempt_cost[0]))
            and max_attempts < EXACT_ATTEMPTS_LIMIT
            and not _FORCE_GENERAL
        )
        self.unit_cost = float(attempt_cost[0])
        self._simple_args = (thresholds, per_step, total_retries, self.unit_cost)

        self.attempts_shift = float(n)  # a trial without retries or rollbacks
        self.cost_shift = float(attempt_cost.sum() + len(positions) * cost.checkpoint)
        self.attempts_offset = _layout.histogram_offset(_top_exponent(max_attempts))
        self.cost_offset = _layout.histogram_offset(_top_exponent(max_cost * (1.0 + 1e-9)))
        conf = confusion
        self._general_args = (
            thresholds,
            per_step,
            total_retries,
            logit_p,
            fixed,
            p,
            miss,
            false_reject,
            attempt_cost,
            is_checkpoint,
            np.uint64(_threshold(1.0 if checks is None else checks.detect)),
            np.uint64(_threshold(0.0 if checks is None else checks.false_alarm)),
            int(rollbacks),
            float(cost.checkpoint),
            float(cost.rollback),
            conf is not None,
            np.uint64(_threshold(0.0 if conf is None else conf.enter)),
            np.uint64(_threshold(0.0 if conf is None else conf.recover)),
            factor,
            float(scenario.correlation.task_sd),
            float(scenario.correlation.step_sd),
            self.attempts_shift,
            self.cost_shift,
        )
        # loaded here, in the calling thread, before any worker runs it
        self._kernel = _native.kernel("run_simple" if self.exact else "run_general")

    def tally(self) -> "_ExactTally | _StreamTally":
        """An empty accumulator for this plan's task results."""
        return _ExactTally(self) if self.exact else _StreamTally(self)

    def run(
        self,
        seed_sequence: np.random.SeedSequence,
        blocks: range,
        trials: int,
        record_ints: np.ndarray,
        record_cost: np.ndarray,
    ) -> Any:
        """Run the trials of ``blocks`` (consecutive block indices) in one kernel call."""
        seeds = np.empty((len(blocks), 4), dtype=np.uint64)
        block_trials = np.empty(len(blocks), dtype=np.int64)
        for row, block in enumerate(blocks):
            seeds[row] = _block_state(seed_sequence, block)
            block_trials[row] = min(BLOCK_TRIALS, trials - block * BLOCK_TRIALS)
        if self.exact:
            counts = np.zeros((3, self.max_attempts + 1), dtype=np.int64)
            self._kernel(seeds, block_trials, *self._simple_args, counts, record_ints, record_cost)
            return counts
        int_sums = np.zeros((len(blocks), _layout.N_INT_SUMS), dtype=np.int64)
        float_sums = np.zeros((len(blocks), _layout.N_FLOAT_SUMS), dtype=np.float64)
        cost_hist = _Histogram.empty()
        attempts_hist = _Histogram.empty()
        self._kernel(
            seeds,
            block_trials,
            *self._general_args,
            int_sums,
            float_sums,
            self.cost_offset,
            *cost_hist.arrays,
            self.attempts_offset,
            *attempts_hist.arrays,
            record_ints,
            record_cost,
        )
        return _BlockSums(int_sums, float_sums, cost_hist, attempts_hist)


def _threshold(prob: Any) -> Any:
    """Integer threshold of a Bernoulli(prob) draw, as the kernels' ``threshold``."""
    return np.floor(np.asarray(prob, dtype=np.float64) * _layout.SCALE + 0.5).astype(np.uint64)


def four_way_thresholds(pe: np.ndarray, miss: np.ndarray, false_reject: np.ndarray) -> np.ndarray:
    """The kernels' ``_four_way`` over arrays (the same float operations, so the same
    integers), shape ``(len(pe), 3)``; computed with numpy so that no extra compiled
    function has to be loaded at start."""
    full = _layout.FULL
    correct_accepted = pe * (1.0 - false_reject)
    wrong_accepted = (1.0 - pe) * miss
    correct_rejected = pe * false_reject
    wrong_rejected = (1.0 - pe) * (1.0 - miss)
    t1 = _threshold(correct_accepted)
    t2 = np.where(
        wrong_accepted == 0.0,
        t1,
        np.where(
            (correct_rejected == 0.0) & (wrong_rejected == 0.0),
            full,
            np.minimum(np.maximum(_threshold(correct_accepted + wrong_accepted), t1), full),
        ),
    )
    t3 = np.where(
        correct_rejected == 0.0,
        t2,
        np.where(
            wrong_rejected == 0.0,
            full,
            np.minimum(np.maximum(full - _threshold(wrong_rejected), t2), full),
        ),
    )
    return np.stack([t1, t2, t3], axis=-1).astype(np.uint64)


def _top_exponent(bound: float) -> int:
    """The least ``e >= 1`` with ``bound < 2**e``."""
    return max(1, math.frexp(float(bound))[1]) if bound > 0 else 1


def _block_state(seed_sequence: np.random.SeedSequence, block: int) -> np.ndarray:
    """xoshiro256+ state of a block, from the block-th child of ``seed_sequence.spawn``."""
    child = np.random.SeedSequence(
        seed_sequence.entropy,
        spawn_key=(*seed_sequence.spawn_key, block),
        pool_size=seed_sequence.pool_size,
    )
    state = child.generate_state(4, np.uint64)
    if not state.any():  # the one state xoshiro cannot leave (probability 2**-256)
        state[0] = 1
    return state


# ------------------------------------------------------------------------------- merging
@dataclass(frozen=True)
class _Estimates:
    """What the trials say, before it becomes an Outcome (population moments)."""

    trials: int
    by_outcome: tuple[int, int, int]
    mean_attempts: float
    var_attempts: float
    mean_cost: float
    var_cost: float
    cov_cost_success: float
    percentiles: dict[str, dict[str, float]]


@dataclass(frozen=True)
class _ExactTally:
    """Sum of ``run_simple``'s joint histograms of (outcome, attempts): integers, so the
    merge order does not matter and every moment is computed exactly."""

    plan: _Plan
    counts: np.ndarray | None = None

    @property
    def trials(self) -> int:
        return 0 if self.counts is None else int(self.counts.sum())

    def add(self, counts: np.ndarray) -> "_ExactTally":
        return _ExactTally(self.plan, counts if self.counts is None else self.counts + counts)

    def estimates(self) -> _Estimates:
        counts = self.counts
        n = int(counts.sum())
        by_outcome = tuple(int(c) for c in counts.sum(axis=1))
        per_value = [int(c) for c in counts.sum(axis=0)]
        success_values = [int(c) for c in counts[0]]
        s1 = sum(a * c for a, c in enumerate(per_value))
        s2 = sum(a * a * c for a, c in enumerate(per_value))
        s1_success = sum(a * c for a, c in enumerate(success_values))
        var_attempts = (n * s2 - s1 * s1) / (n * n)  # exact integers, one rounding
        cov_attempts_success = (n * s1_success - s1 * by_outcome[0]) / (n * n)
        unit = self.plan.unit_cost
        attempts_percentiles = {f"p{q}": float(_inverted_cdf(counts.sum(axis=0), q)) for q in _PERCENTS}
        return _Estimates(
            trials=n,
            by_outcome=by_outcome,  # type: ignore[arg-type]
            mean_attempts=s1 / n,
            var_attempts=var_attempts,
            mean_cost=unit * (s1 / n),
            var_cost=unit * unit * var_attempts,
            cov_cost_success=unit * cov_attempts_success,
            percentiles={
                "cost": {key: unit * value for key, value in attempts_percentiles.items()},
                "attempts": attempts_percentiles,
            },
        )


def _inverted_cdf(counts: np.ndarray, percent: int) -> int:
    """Index of the ``ceil(percent/100 N)``-th smallest value of a histogram of integers."""
    total = int(counts.sum())
    rank = max(1, -(-percent * total // 100))  # integer ceil: no rounding surprises
    return int(np.searchsorted(np.cumsum(counts), rank))


@dataclass(frozen=True)
class _Histogram:
    """A log-linear histogram: counts and the least/greatest value seen in each bin."""

    counts: np.ndarray
    lows: np.ndarray
    highs: np.ndarray

    @classmethod
    def empty(cls) -> "_Histogram":
        bins = _layout.HIST_BINS
        return cls(np.zeros(bins, np.int64), np.full(bins, np.inf), np.full(bins, -np.inf))

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.counts, self.lows, self.highs

    def __add__(self, other: "_Histogram") -> "_Histogram":
        return _Histogram(
            self.counts + other.counts,
            np.minimum(self.lows, other.lows),
            np.maximum(self.highs, other.highs),
        )

    def percentile(self, percent: int) -> float:
        """The inverted-CDF percentile: the ``ceil(percent/100 N)``-th smallest value, exact
        when its bin holds one distinct value or it is its bin's first or last."""
        total = int(self.counts.sum())
        rank = max(1, -(-percent * total // 100))
        cumulative = np.cumsum(self.counts)
        b = int(np.searchsorted(cumulative, rank))
        if rank == int(cumulative[b]):
            return float(self.highs[b])
        return float(self.lows[b])


@dataclass(frozen=True)
class _BlockSums:
    """What one ``run_general`` call returns: per-block sums and two histograms."""

    int_sums: np.ndarray
    float_sums: np.ndarray
    cost_hist: _Histogram
    attempts_hist: _Histogram


@dataclass(frozen=True)
class _StreamTally:
    """Running sums over ``run_general``'s blocks, added in block order so that the float
    sums are the same whatever the threads and chunks."""

    plan: _Plan
    counts: tuple[int, ...] = (0, 0, 0, 0, 0)
    sums: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
    cost_hist: _Histogram | None = None
    attempts_hist: _Histogram | None = None

    @property
    def trials(self) -> int:
        return self.counts[0]

    def add(self, result: _BlockSums) -> "_StreamTally":
        counts = list(self.counts)
        sums = list(self.sums)
        for row in range(result.int_sums.shape[0]):
            for column in range(len(counts)):
                counts[column] += int(result.int_sums[row, column])
            for column in range(len(sums)):
                sums[column] += float(result.float_sums[row, column])
        if self.cost_hist is None:
            cost_hist, attempts_hist = result.cost_hist, result.attempts_hist
        else:
            cost_hist = self.cost_hist + result.cost_hist
            attempts_hist = self.attempts_hist + result.attempts_hist
        return _StreamTally(self.plan, tuple(counts), tuple(sums), cost_hist, attempts_hist)

    def estimates(self) -> _Estimates:
        n, n_success, n_silent, n_detected, sum_attempts = self.counts
        sum_attempts_sq, sum_cost, sum_cost_sq, sum_cost_success = self.sums
        # Sums of values shifted by a typical trial's value: the variances do not cancel.
        attempts_d = sum_attempts / n - self.plan.attempts_shift
        cost_d = sum_cost / n
        return _Estimates(
            trials=n,
            by_outcome=(n_success, n_silent, n_detected),
            mean_attempts=sum_attempts / n,
            var_attempts=max(0.0, sum_attempts_sq / n - attempts_d**2),
            mean_cost=self.plan.cost_shift + cost_d,
            var_cost=max(0.0, sum_cost_sq / n - cost_d**2),
            cov_cost_success=sum_cost_success / n - cost_d * (n_success / n),
            percentiles={
                "cost": {f"p{q}": self.cost_hist.percentile(q) for q in _PERCENTS},
                "attempts": {f"p{q}": self.attempts_hist.percentile(q) for q in _PERCENTS},
            },
        )


def _outcome(estimates: _Estimates, seed: int | None, partial: bool, trajectories: Any) -> Outcome:
    """Point estimates, standard errors and 95% intervals (see ``simulate``)."""
    e = estimates
    n = e.trials
    n_success, n_silent, n_detected = e.by_outcome
    success = n_success / n
    sample = n / (n - 1) if n > 1 else math.nan  # population -> sample variance
    se = {
        "success": binomial_se(n_success, n),
        "silent_failure": binomial_se(n_silent, n),
        "detected_failure": binomial_se(n_detected, n),
        "expected_attempts": math.sqrt(e.var_attempts * sample / n),
        "expected_cost": math.sqrt(e.var_cost * sample / n),
    }
    intervals = {
        "success": wilson(n_success, n),
        "silent_failure": wilson(n_silent, n),
        "detected_failure": wilson(n_detected, n),
        "expected_attempts": normal_interval(e.mean_attempts, se["expected_attempts"]),
        "expected_cost": normal_interval(e.mean_cost, se["expected_cost"]),
    }
    if n_success > 0:
        ratio = e.mean_cost / success
        # Var(C - R S) = Var(C) - 2 R Cov(C, S) + R^2 Var(S)
        spread = e.var_cost - 2.0 * ratio * e.cov_cost_success + ratio**2 * success * (1.0 - success)
        se["cost_per_success"] = math.sqrt(max(0.0, spread) * sample / n) / success
        intervals["cost_per_success"] = normal_interval(ratio, se["cost_per_success"])
    else:
        se["cost_per_success"] = math.inf
        intervals["cost_per_success"] = (math.inf, math.inf)
    return Outcome(
        success=success,
        silent_failure=n_silent / n,
        detected_failure=n_detected / n,
        expected_attempts=e.mean_attempts,
        expected_cost=e.mean_cost,
        method="montecarlo",
        standard_errors=se,
        intervals=intervals,
        percentiles=e.percentiles,
        trials=n,
        seed=seed,
        partial=partial,
        trajectories=trajectories,
    )


_OUTCOME_NAMES = ("success", "silent_failure", "detected_failure")


def _trajectories(record_ints: np.ndarray, record_cost: np.ndarray) -> Any:
    """The recorded trials as a DataFrame (-1 in the optional columns becomes NA)."""
    import pandas as pd

    def nullable(column: int) -> Any:
        values = record_ints[:, column].copy()
        return pd.arrays.IntegerArray(values, values < 0)

    frame = pd.DataFrame(
        {
            "outcome": pd.Categorical.from_codes(
                record_ints[:, _layout.R_OUTCOME], categories=list(_OUTCOME_NAMES)
            ),
            "attempts": record_ints[:, _layout.R_ATTEMPTS].copy(),
            "cost": record_cost.copy(),
            "retries_used": record_ints[:, _layout.R_RETRIES].copy(),
            "rollbacks": record_ints[:, _layout.R_ROLLBACKS].copy(),
            "first_wrong_step": nullable(_layout.R_FIRST_WRONG),
            "caught_at": nullable(_layout.R_CAUGHT_AT),
            "stopped_at": nullable(_layout.R_STOPPED_AT),
        }
    )
    frame.index.name = "trial"
    return frame


# ------------------------------------------------------------------------ threads and Ctrl-C
class _interrupt_flag:
    """While active, the first SIGINT sets a flag (the run stops after the tasks in flight)
    and a second one raises KeyboardInterrupt. Off the main thread it only holds the flag."""

    def __init__(self) -> None:
        self.is_set = False
        self._previous: Any = None
        self._installed = False

    def set(self) -> None:
        self.is_set = True

    def _handler(self, signum: int, frame: Any) -> None:
        if self.is_set:
            raise KeyboardInterrupt
        self.is_set = True

    def __enter__(self) -> "_interrupt_flag":
        if threading.current_thread() is threading.main_thread():
            try:
                self._previous = signal.signal(signal.SIGINT, self._handler)
                self._installed = True
            except ValueError:  # pragma: no cover - e.g. an embedded interpreter
                self._installed = False
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)


class _executor:
    """A thread pool that, on the way out, drops queued work instead of waiting for it."""

    def __init__(self, threads: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="relsim-mc")

    def __enter__(self):
        return self._pool

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self._pool.shutdown(wait=exc_type is None, cancel_futures=True)
