"""The timeline's compiled path: when it runs, its inputs, its seeding and its threads.

Private; numpy only at import (the numba kernels, :mod:`relsim.timeline._lanes` and
:mod:`relsim.timeline._kernel`, are imported when a run takes this path). Independent trials
(batch arrivals, nothing shared) whose model has none of docs/model.md section 8's tables,
run without an event log (``record=0``), need no simpy: :func:`run` runs them in a kernel
(:func:`block_runner`: the vectorised ``_lanes.run_lanes`` on the chains it takes, else
``_kernel.run_trials``, one trial after another), in blocks of :func:`block_trials`. Block
``b`` draws from its own generator, seeded by ``SeedSequence(seed, spawn_key=(2, b))`` (the
simpy path's trials use ``(0, k)``, a workload's arrivals ``(1,)``), and writes its own rows
of the tally, so the same seed gives the same trials whatever the number of threads; then
the tally's estimates come from numba passes over its columns (``_summary.Summary``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

import numpy as np

from relsim.scenario import Duration, TimeModel, TrialModel

if TYPE_CHECKING:  # pragma: no cover
    from relsim._running import InterruptFlag

#: Trials per block, at most: the unit of seeding (changing it changes the trials a seed
#: draws) and of the work between two looks at Ctrl-C and the progress callback.
BLOCK_TRIALS = 1 << 12
#: The same on the vectorised kernel (``relsim.timeline._lanes``), whose trials are a few
#: times faster: larger blocks, so that seeding a block (``SeedSequence``, about 70 us with
#: the GIL held) stays a small part of its work.
LANES_BLOCK_TRIALS = 1 << 14
#: Expected attempts per block, at most: a scenario of long trials gets smaller blocks (a
#: power of two, from its expected attempts: the same for every run of it), so that a stop
#: is seen within a fraction of a second.
BLOCK_ATTEMPTS = 1 << 20

#: The spawn key under the root seed that the blocks' seeds hang from.
_SPAWN = 2

# Duration kinds, as relsim.timeline._kernel reads them (its CONSTANT, LOGNORMAL, EXPONENTIAL).
_CONSTANT, _LOGNORMAL, _EXPONENTIAL = 0, 1, 2


class Timing(NamedTuple):
    """Section 7's tables as the kernel reads them: each duration as ``(kind, a, which)``
    (constant ``a``; lognormal ``a`` times ``exp(sigmas[which] z)``, ``a`` its median;
    exponential of mean ``a``), the distinct lognormal sigmas, the backoff, the deadline
    (inf: none) and the crash rate per second."""

    attempt_kind: np.ndarray  # (steps,) int64
    attempt_a: np.ndarray  # (steps,) float64
    attempt_which: np.ndarray  # (steps,) int64
    verify_kind: int  # a constant 0 without a verifier: no verification takes time
    verify_a: float
    verify_which: int
    checkpoint_kind: int
    checkpoint_a: float
    checkpoint_which: int
    sigmas: np.ndarray  # (distinct lognormal sigmas,) float64
    has_backoff: bool
    backoff_base: float
    backoff_factor: float
    backoff_cap: float  # inf: no cap
    jitter: bool
    deadline: float  # inf: none
    crash_rate: float  # crashes per second


def applies(trial: TrialModel, time: TimeModel, record: int) -> bool:
    """Whether a run takes the compiled path: independent trials (batch arrivals, nothing
    shared), none of section 8's tables (classes, a ladder, samples, failure modes, faults:
    those stay on simpy), and no event log asked for."""
    return not time.workload and not trial.has_design_tables and record == 0


def vectorised(trial: TrialModel, time: TimeModel) -> bool:
    """Whether a run on the compiled path takes the vectorised lane
    (``relsim.timeline._lanes.run_lanes``): a chain that Monte Carlo runs on its fast kernel
    (``KernelInput.exact``: no checkpoints, random effects or confusion, one attempt cost)
    with one attempt duration for every step and a verification, each constant or
    lognormal, and no backoff."""
    from relsim.montecarlo._inputs import kernel_input

    return lane_takes(kernel_input(trial).exact, timing(trial, time))


def lane_takes(exact: bool, times: Timing) -> bool:
    """:func:`vectorised` from Monte Carlo's choice of its fast kernel (``exact``) and the
    run's :class:`Timing`."""
    kinds = times.attempt_kind
    same = bool((kinds == kinds[0]).all() and (times.attempt_a == times.attempt_a[0]).all()
                and (times.attempt_which == times.attempt_which[0]).all())
    return (exact and same and int(kinds[0]) in (_CONSTANT, _LOGNORMAL)
            and times.verify_kind in (_CONSTANT, _LOGNORMAL) and not times.has_backoff)


def duration_code(duration: Duration) -> tuple[int, float, float]:
    """``(kind, a, sigma)`` of a duration (see :class:`Timing`; ``sigma`` 0 but for a
    lognormal); a lognormal whose p95 is its median is the constant it is, as the simpy
    path's sampler takes it."""
    if duration.kind == "constant":
        return _CONSTANT, float(duration.value), 0.0
    if duration.kind == "exponential":
        return _EXPONENTIAL, float(duration.value), 0.0
    if duration.sigma == 0.0:
        return _CONSTANT, float(duration.median), 0.0
    return _LOGNORMAL, float(duration.median), float(duration.sigma)


def timing(trial: TrialModel, time: TimeModel) -> Timing:
    """The kernel's :class:`Timing` of a run."""
    attempts = [duration_code(d) for d in time.attempt]
    verify = duration_code(time.verify) if trial.has_verifier else (_CONSTANT, 0.0, 0.0)
    checkpoint = duration_code(time.checkpoint)
    sigmas = sorted({code[2] for code in (*attempts, verify, checkpoint) if code[0] == _LOGNORMAL})
    index = {sigma: k for k, sigma in enumerate(sigmas)}

    def which(code: tuple[int, float, float]) -> int:
        return index.get(code[2], 0) if code[0] == _LOGNORMAL else 0

    backoff = time.backoff
    return Timing(
        attempt_kind=np.array([a[0] for a in attempts], dtype=np.int64),
        attempt_a=np.array([a[1] for a in attempts], dtype=np.float64),
        attempt_which=np.array([which(a) for a in attempts], dtype=np.int64),
        verify_kind=verify[0], verify_a=verify[1], verify_which=which(verify),
        checkpoint_kind=checkpoint[0], checkpoint_a=checkpoint[1],
        checkpoint_which=which(checkpoint),
        sigmas=np.array(sigmas, dtype=np.float64),
        has_backoff=backoff is not None,
        backoff_base=1.0 if backoff is None else float(backoff.base),
        backoff_factor=1.0 if backoff is None else float(backoff.factor),
        backoff_cap=math.inf if backoff is None or backoff.max is None else float(backoff.max),
        jitter=backoff is not None and bool(backoff.jitter),
        deadline=math.inf if time.deadline is None else float(time.deadline),
        crash_rate=float(time.crash_per_hour) / 3600.0,
    )


def block_trials(trial: TrialModel, most: int = BLOCK_TRIALS) -> int:
    """Trials per block of a scenario: ``most`` (:data:`BLOCK_TRIALS`, or
    :data:`LANES_BLOCK_TRIALS` on the vectorised kernel), halved until the block's expected
    attempts (Monte Carlo's pessimistic expectation) are within :data:`BLOCK_ATTEMPTS`; at
    least 1."""
    from relsim.montecarlo._estimate import expected_work

    attempts = max(1.0, expected_work(trial)[0])
    size = most
    while size > 1 and size * attempts > BLOCK_ATTEMPTS:
        size //= 2
    return size


class _Count:
    """What ``run_in_order`` merges: the trials that ended (the rows are in the tally)."""

    def __init__(self, trials: int = 0) -> None:
        self.trials = trials

    def add(self, result: int) -> "_Count":
        return _Count(self.trials + result)


def run(trial: TrialModel, time: TimeModel, root: np.random.SeedSequence, trials: int,
        tally: Any, progress: Callable[[int], None] | None, threads: int | None) -> bool:
    """Run ``trials`` independent trials in the kernel, filling ``tally`` (a
    ``relsim.timeline._driver._Tally``) row by row; False when Ctrl-C (or
    ``KeyboardInterrupt`` from ``progress``) stopped it before every block ran."""
    from relsim.montecarlo._checks import available_cores, block_state
    from relsim.montecarlo._threads import run_in_order

    run_block_kernel, size = block_runner(trial, time)
    seeds = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, _SPAWN),
                                   pool_size=root.pool_size)
    outcome, attempts, cost, duration = tally.outcome_code, tally.attempts, tally.cost, tally.duration
    # compile (or load from numba's cache) here, on no trials, before any worker runs it
    run_block_kernel(block_state(seeds, 0), outcome[:0], attempts[:0], cost[:0], duration[:0])

    def run_block(block: int, stop: "InterruptFlag") -> int:
        rows = slice(block * size, min((block + 1) * size, trials))
        run_block_kernel(block_state(seeds, block), outcome[rows], attempts[rows], cost[rows],
                         duration[rows])
        return rows.stop - rows.start

    blocks = -(-trials // size)
    workers = available_cores() if threads is None else threads
    done = run_in_order(iter(range(blocks)), run_block, _Count(), min(workers, blocks), progress)
    tally.done = done.trials
    if done.trials == trials:
        from relsim.results import TIMELINE_PROPORTIONS
        from relsim.timeline._summary import Summary

        # the tally's estimates from numba passes rather than numpy's (every trial ended)
        tally.compiled = Summary(outcome, attempts, cost, duration, len(TIMELINE_PROPORTIONS))
    if done.trials:
        # every row when every block ran (a view), else the rows of the blocks that ran
        ended = duration if done.trials == trials else duration[outcome >= 0]
        tally.first_arrival = 0.0
        tally.last_end = float(ended.max())
        tally.held["agents"] = float(ended.sum())  # each trial holds its own agent
    return done.trials == trials


def block_runner(trial: TrialModel, time: TimeModel) -> tuple[Callable[..., None], int]:
    """``(f, size)``: ``f(state, outcome, attempts, cost, duration)`` runs one block's trials
    from its generator's ``state``, on the vectorised kernel
    (``relsim.timeline._lanes.run_lanes``) when it runs the scenario (:func:`lane_takes`),
    else on ``_kernel.run_trials``; ``size`` the trials per block (:func:`block_trials`)."""
    from relsim.montecarlo._inputs import kernel_input

    given = kernel_input(trial)
    times = timing(trial, time)
    design = given.design
    if lane_takes(given.exact, times):
        from relsim.timeline._lanes import run_lanes

        def lanes(state: np.ndarray, outcome: np.ndarray, attempts: np.ndarray,
                  cost: np.ndarray, duration: np.ndarray) -> None:
            run_lanes(state, design, times, outcome, attempts, cost, duration, False)

        return lanes, block_trials(trial, LANES_BLOCK_TRIALS)
    from relsim.timeline._kernel import run_trials

    def one_by_one(state: np.ndarray, outcome: np.ndarray, attempts: np.ndarray,
                   cost: np.ndarray, duration: np.ndarray) -> None:
        run_trials(state, design, times, outcome, attempts, cost, duration)

    return one_by_one, block_trials(trial)
