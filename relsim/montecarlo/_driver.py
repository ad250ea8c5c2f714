"""The Monte Carlo driver: ``simulate``, from a scenario to a ``SimulatedOutcome``.

Data flows one way: the arguments are checked and the seed fixed (``_checks``), the scenario
becomes the kernels' input (``_inputs``), tasks of consecutive blocks run on threads
(``_threads``) through the numba kernels (``_kernels``), their results are tallied in block
order and turned into estimates (``_tally``), and recorded trials into a DataFrame
(``_trajectories``).

The trials are cut into blocks of ``BLOCK_TRIALS`` (a fixed internal size). Block ``b`` draws
from its own stream, seeded by ``SeedSequence(seed, spawn_key=(b,))`` (the ``b``-th child of
``SeedSequence(seed).spawn``), so the trials, and every count and float sum, do not depend on
the number of threads or the chunk size: a chunk is only how many consecutive blocks one task
runs, and per-block results are merged in block order.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping

import numpy as np

from relsim.errors import RelsimError, invalid
from relsim.limits import WorkEstimate, format_seconds, memory_limit, time_limit
from relsim._running import InterruptFlag, check_int, check_seed
from relsim.montecarlo._checks import available_cores, block_state
from relsim.montecarlo._estimate import draws_per_attempt, expected_work, work_estimate
from relsim.montecarlo._inputs import KernelInput, kernel_input
from relsim.montecarlo._layout import STATE_WORDS, BlockSums, Histogram, Record, Streams
from relsim.montecarlo._tally import ExactTally, GeneralResult, StreamTally, simulated_outcome
from relsim.montecarlo._threads import run_in_order
from relsim.results import SimulatedOutcome
from relsim.scenario import Scenario, as_scenario, trial_model

#: Trials per block: the unit of seeding. Changing it changes the trials a seed draws.
BLOCK_TRIALS = 1 << 16

#: Attempts per kernel call, turned into trials with the expected attempts per trial (a
#: slice of work, after which a stop is seen: 10-50 ms on the calibration machine). Only the
#: scheduling: the trials do not depend on it.
SIMPLE_SLICE = 1 << 22
GENERAL_SLICE = 1 << 20

#: Estimated seconds one trial may take: Ctrl-C is seen between trials, so a longer trial
#: could not be stopped within about a second.
TRIAL_LIMIT = 1.0

_DEFAULT_MAX_BLOCKS_PER_TASK = 16

# Tests set these to run every scenario through the general kernel, or the kernel of section
# 8's tables (which must then agree with the others in distribution).
_FORCE_GENERAL = False
_FORCE_V2 = False


def simulate(
    scenario: Scenario | Mapping[str, Any],
    trials: int,
    *,
    seed: int | np.random.SeedSequence | None = None,
    threads: int | None = None,
    record: int = 0,
    chunk_size: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> SimulatedOutcome:
    r"""Estimate a scenario's outcome by simulating ``trials`` independent trials.

    Each trial follows docs/model.md section 3 exactly (and section 8 with its tables). The
    proportions are the outcome frequencies, with binomial standard errors and Wilson 95%
    intervals,

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
        Seeds the trials. ``None`` draws fresh entropy, which is reported in the result's
        ``seed`` so the run can be repeated. The same seed gives the same trials, whatever
        ``threads`` and ``chunk_size``.
    threads : int or None
        Worker threads, ``>= 1``; ``None`` uses every core available to the process.
    record : int
        Keep the first ``record`` trials (at most ``trials``) in the result's ``trajectories``,
        a pandas DataFrame with one row per trial: ``outcome``, ``attempts``, ``cost``,
        ``retries_used``, ``rollbacks``, ``first_wrong_step`` (the first step whose accepted
        result was wrong, NA if none), ``caught_at`` (the checkpoint position that first caught
        a wrong segment, NA if none) and ``stopped_at`` (for a detected failure, the step whose
        retries ran out or the checkpoint position whose catch found no rollback left; NA
        otherwise); with classes also ``task_class`` (the class drawn, 0-based) and with
        failure modes ``failure_mode`` (a silent failure's mode, its index in the scenario's
        list; NA otherwise). The rows are the first trials of the same stream that is
        counted.
    chunk_size : int or None
        Trials per task given to a thread, ``>= 1``, rounded up to whole blocks of
        ``BLOCK_TRIALS``; ``None`` picks a size that keeps every thread busy. It changes only
        the scheduling, never the result.
    progress : callable or None
        Called in the calling thread with the number of trials each finished task added.
        Raising ``KeyboardInterrupt`` from it stops the run as Ctrl-C does.

    Returns
    -------
    relsim.SimulatedOutcome
        An ``Outcome`` (``method`` ``"montecarlo"``) with ``standard_errors`` and
        ``intervals`` for every key, ``percentiles`` of per-trial ``cost`` and ``attempts``
        (p50, p90, p99), ``trials``, ``seed``, ``partial`` and ``trajectories``. With failure
        modes, ``silent_by_mode`` (each mode's share of all trials, a share like the others,
        under ``silent_by_mode_<name>`` in ``standard_errors`` and ``intervals``); with
        ``[utility]``, ``expected_utility`` with its standard error and normal interval.

    Raises
    ------
    relsim.errors.RelsimError
        For an argument out of range (``"<name>: must be <allowed>, got <value>"``), a bad
        scenario (``ScenarioError``, a subclass), or a run estimated over the limits.

    Notes
    -----
    Three kernels draw the trials. Scenarios without checkpoints, confusion or random effects
    whose attempts all cost the same run on a fast one that keeps the exact joint histogram
    of outcome and attempts per trial (a trial's cost is then ``attempts * cost``) and draws
    each step execution at once, its attempts and how it ends, from one 32-bit uniform; the
    others run on the general one, one draw per attempt. Scenarios with docs/model.md
    section 8's tables (classes, an escalation ladder, samples, failure modes, faults) run on
    a third that follows section 8's pseudo-code, one draw per sample; ``[utility]`` alone
    changes no trial and keeps the kernel it had. Every probability is drawn to within
    2**-32 (2.3e-10), structural zeros and certainties exactly, and the random effects'
    normals by an exact ziggurat. (Since issue 22: a seed gives other numbers than before
    it, with the same distribution.)

    The utility's standard error is that of the mean per-trial utility :math:`U = v_O - wC`
    (the value of the trial's outcome less ``cost_weight`` times its cost), computed from
    the outcome counts and the covariance of cost with each outcome, which every kernel
    tallies: :math:`\mathrm{Var}(U) = \mathrm{Var}(v_O) + w^2\mathrm{Var}(C) - 2w\sum_o
    v_o \mathrm{Cov}(C, 1[O = o])`.

    Percentiles are the inverted-CDF quantiles (the value of the ``ceil(q N)``-th smallest
    trial, numpy's ``method="inverted_cdf"``). On the fast kernel they are exact. On the
    general one they come from a bounded log-linear histogram with 1024 bins per octave that
    remembers the least and greatest value in each bin: a percentile is exact when its bin
    holds a single distinct value (so always for attempts below 2048, and for integer costs
    below 2048), otherwise within a relative 2**-10 (0.1%) below the exact one.

    Ctrl-C (or ``KeyboardInterrupt`` from ``progress``) stops the run: no new task starts, and
    the kernels in flight stop at the end of their current slice of work (some 10-50 ms), so
    the call returns within about a second with the estimate over the trials done,
    ``partial=True`` and a ``RuntimeWarning`` (those trials need not be
    the first ones; ``trajectories`` then keeps the recorded rows up to the first trial that
    did not run). Stopped before any trial finished, it raises ``KeyboardInterrupt``; a
    second Ctrl-C aborts with ``KeyboardInterrupt`` at once.

    Before it starts, the run's time and memory are estimated (``work_estimate``) and a run
    over ``relsim.limits.time_limit()`` (60 s) or ``memory_limit()`` (4 GiB) is refused
    with a ``RelsimError`` naming the estimate and the trials (or recorded trials) that fit,
    and so is a scenario whose single trial is estimated over ``TRIAL_LIMIT`` (1 s: a stop
    is seen between trials).

    Examples
    --------
    R1 of docs/model.md section 5 (25 steps, p = 0.9, perfect verifier, 2 retries per step)
    succeeds with probability 0.975298:

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
    trials = check_int(trials, "trials", low=1)
    threads = available_cores() if threads is None else check_int(threads, "threads", low=1)
    record = min(check_int(record, "record", low=0), trials)
    if chunk_size is None:
        blocks_per_task = None
    else:
        blocks_per_task = -(-check_int(chunk_size, "chunk_size", low=1) // BLOCK_TRIALS)
    if progress is not None and not callable(progress):
        raise invalid("progress", "callable or None", progress)
    seed_sequence, seed_value = check_seed(seed)

    one_trial = work_estimate(scenario, 1)
    if one_trial.seconds > TRIAL_LIMIT:
        raise RelsimError(
            f"scenario: must take at most about {format_seconds(TRIAL_LIMIT)} a trial (a "
            "stop is seen between trials), got an estimated "
            f"{format_seconds(one_trial.seconds)} ({one_trial.detail.split(',')[0]}); lower "
            "checkpoints.rollbacks, the retries or the steps"
        )
    estimate = work_estimate(
        scenario, trials, threads=min(threads, available_cores()), record=record
    )
    if estimate.memory > memory_limit():
        fitting = _fitting(record, estimate.memory, memory_limit())
        estimate.check("record", f"record at most about {fitting:,} trials")
    estimate.check("trials", _advice(trials, estimate))

    model = trial_model(scenario)
    prepared = kernel_input(model, force_general=_FORCE_GENERAL, force_v2=_FORCE_V2)
    kernel = _Kernel(prepared, expected_work(model)[0] * draws_per_attempt(model))
    n_blocks = -(-trials // BLOCK_TRIALS)
    if blocks_per_task is None:
        blocks_per_task = min(_DEFAULT_MAX_BLOCKS_PER_TASK, max(1, -(-n_blocks // (4 * threads))))
    recorded = Record.empty(record)

    def tasks():  # a generator: memory does not grow with the number of trials
        for first_block in range(0, n_blocks, blocks_per_task):
            blocks = range(first_block, min(first_block + blocks_per_task, n_blocks))
            first_trial = first_block * BLOCK_TRIALS
            last_trial = min(blocks.stop * BLOCK_TRIALS, trials)
            yield blocks, slice(min(first_trial, record), min(last_trial, record))

    def run_task(task, stop):
        blocks, rows = task
        return kernel.run(seed_sequence, blocks, trials, recorded.rows(rows), stop)

    merged = run_in_order(tasks(), run_task, kernel.tally(), threads, progress)

    partial = merged.trials < trials
    if partial:
        if merged.trials == 0:  # stopped before any trial finished: nothing to estimate
            raise KeyboardInterrupt
        warnings.warn(
            f"simulation interrupted: the estimate covers the {merged.trials} of {trials} "
            "trials that finished",
            RuntimeWarning,
            stacklevel=2,
        )
    frame = None
    if record:
        from relsim.montecarlo._trajectories import trajectories

        # After an interrupt the trials done need not be the first ones: keep the rows up
        # to the first trial that did not run (its outcome is still -1).
        unfilled = np.flatnonzero(recorded.outcome < 0)
        rows = int(unfilled[0]) if unfilled.size else record
        frame = trajectories(recorded.rows(slice(0, rows)), prepared.cost_unit, model)
    return simulated_outcome(
        merged.estimates(), seed_value, partial, frame, prepared.cost_unit, model
    )


def _advice(trials: int, estimate: WorkEstimate) -> str:
    """What to do instead of a run estimated over the time limit."""
    return f"run at most about {max(1, _fitting(trials, estimate.seconds, time_limit())):,} trials"


def _fitting(count: int, estimate: float, limit: float) -> int:
    """The count that would bring ``estimate`` (proportional to ``count``) within ``limit``."""
    if estimate <= 0:
        return count
    return int(count * min(1.0, limit / estimate) * 0.9)


class _Kernel:
    """The kernel that runs a scenario, called on consecutive blocks of trials."""

    def __init__(self, prepared: KernelInput, attempts_per_trial: float = 1.0) -> None:
        from relsim.montecarlo import _kernels  # numba: only when something is simulated

        self.prepared = prepared
        # The kernels take different arrays; each returns True once its trials are done.
        self._function: Callable[..., bool]
        if prepared.tables is not None:
            from relsim.montecarlo import _kernel_v2

            self._function = _kernel_v2.run_v2
        else:
            self._function = _kernels.run_simple if prepared.exact else _kernels.run_general
        # Trials per kernel call: a slice of some 10-50 ms, after which a stop is seen.
        attempts = SIMPLE_SLICE if prepared.exact else GENERAL_SLICE
        self._budget = max(1, int(attempts / max(1.0, attempts_per_trial)))
        # Compile it (or load it from numba's cache) here, in the calling thread, on no
        # trials, before any worker runs it.
        self.run(np.random.SeedSequence(0), range(0), 0, Record.empty(0), InterruptFlag())

    def tally(self) -> ExactTally | StreamTally:
        """An empty accumulator for this kernel's task results."""
        design = self.prepared.design
        if self.prepared.exact:
            return ExactTally(design.unit_cost)
        return StreamTally(design.attempts_shift, design.cost_shift)

    def run(
        self,
        seed_sequence: np.random.SeedSequence,
        blocks: range,
        trials: int,
        record: Record,
        stop: InterruptFlag,
    ) -> np.ndarray | GeneralResult:
        """Run the trials of ``blocks`` (consecutive block indices), in kernel calls of a
        bounded slice of work each, until they are done or ``stop.is_set``: then the result
        holds the trials done so far."""
        seeds = np.empty((len(blocks), STATE_WORDS), dtype=np.uint64)
        block_trials = np.empty(len(blocks), dtype=np.int64)
        for row, block in enumerate(blocks):
            seeds[row] = block_state(seed_sequence, block)
            block_trials[row] = min(BLOCK_TRIALS, trials - block * BLOCK_TRIALS)
        streams = Streams.start(seeds)
        design = self.prepared.design
        if self.prepared.exact:
            counts = np.zeros((3, self.prepared.max_attempts + 1), dtype=np.int64)
            while not self._function(
                streams, block_trials, design, counts, record, self._budget
            ) and not stop.is_set:
                pass
            return counts
        tables = self.prepared.tables
        modes = 0 if tables is None else tables.mode_detect.shape[0]
        result = GeneralResult(
            BlockSums.zeros(len(blocks), modes), Histogram.empty(), Histogram.empty()
        )
        if tables is not None:
            while not self._function(
                streams, block_trials, design, tables, result.sums, result.cost_hist,
                result.attempts_hist, record, self._budget,
            ) and not stop.is_set:
                pass
            return result
        while not self._function(
            streams, block_trials, design, result.sums, result.cost_hist, result.attempts_hist,
            record, self._budget,
        ) and not stop.is_set:
            pass
        return result
