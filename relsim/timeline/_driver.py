"""The timeline driver: arrivals, the agent queue, seeding, the event loop and the tally.

Two modes (docs/model.md section 7). Independent trials (a batch sharing nothing) run
``trials`` trials from the root seed: trial ``k`` draws from ``SeedSequence(seed,
spawn_key=(0, k))`` (two ``random.Random`` streams seeded from it: decisions and time), so a
trial's draws depend on its index only, never on the order in which the fleet runs it. A
workload (Poisson arrivals or anything shared) runs replication ``r`` of its ``tasks`` tasks
from ``SeedSequence(seed, spawn_key=(r,))``, the same way inside (trial ``k`` from
``(r, 0, k)``, the arrivals from ``(r, 1)``), and :mod:`relsim.timeline._replications`
combines the replications. Independent trials without section 8's tables or an event log
take the compiled path instead (:mod:`relsim.timeline._fast`: no simpy, other streams).

Memory stays bounded by what runs at once: with ``fleet.agents`` one dispatcher process holds
the FIFO queue as an index into the arrival sequence (a trial becomes a simpy process only
when it gets its slot); when trials share nothing they run in environments of
``CHUNK_TRIALS`` trials each; only a shared resource with unlimited agents and batch arrivals
makes every trial live at once, because then they really do run at once.
"""

from __future__ import annotations

import itertools
import math
import random
import warnings
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterator, Mapping

import numpy as np

from relsim import checks
from relsim._running import InterruptFlag, check_int, check_seed
from relsim.errors import RelsimError, invalid
from relsim.intervals import (Z95, binomial_se, normal_interval, quantile_interval_ranks,
                              wilson)
from relsim.limits import memory_limit, time_limit
from relsim.results import EVENT_COLUMNS, TIMELINE_PROPORTIONS, Estimate, Tally, TimelineOutcome, estimate
from relsim.scenario import Scenario, TimeModel, as_scenario, time_model, trial_model
from relsim.scenario.design_tables import UTILITY_OUTCOMES
from relsim.timeline import _fast, _replications
from relsim.timeline._estimate import compiled, work_estimate
from relsim.timeline._seeds import trial_seeds
from relsim.timeline._trial import (
    OUTCOME_NAMES,
    SILENT,
    TIMEOUT,
    Fleet,
    Model,
    Trial,
    arm_stops,
    build_model,
)

if TYPE_CHECKING:  # pragma: no cover
    from simpy.events import Event

#: Trials per environment when trials share nothing (bounds memory; changes no number).
CHUNK_TRIALS = 4096

#: simpy events between two looks at Ctrl-C and the progress callback.
_POLL_EVENTS = 4096

# Tests set this to "simpy" or "compiled" to run independent trials on that path whatever
# their size (the paths must agree in distribution); None: the rule of _estimate.compiled.
_PATH: str | None = None



def simulate_timeline(
    scenario: Scenario | Mapping[str, Any],
    trials: int | None = None,
    *,
    replications: int | None = None,
    seed: int | np.random.SeedSequence | None = None,
    record: int = 0,
    progress: Callable[[int], None] | None = None,
    threads: int | None = None,
) -> TimelineOutcome:
    r"""Run a scenario in time, on simpy (docs/model.md section 7).

    Each trial is one simpy process that makes section 3's draws and decisions and spends
    time between them: it arrives (batch: at 0; Poisson: gaps ~ Exp(rate_per_hour / 3600)),
    waits FIFO for an agent slot, runs its attempts as LLM calls (rate budget from the rpm
    and tpm token buckets, then an LLM slot), verifications, backoffs and checkpoint checks
    (a human gate holds a reviewer), and ends as section 3 says unless its deadline passes
    (``timeout``) or its crash clock, started with its agent slot, rings (``infra_failure``)
    first; either interrupt releases all it holds at once.

    With section 8's tables (docs/model.md section 8) a trial draws its class, climbs its
    ladder, makes each attempt's ``n`` samples as parallel LLM calls (the attempt lasts as
    long as the slowest; with ``select = "verifier"`` their verifications run in parallel
    too), draws failure modes and faults (a faulted attempt takes its attempt time and no
    verification; a budget spent on a fault is an ``infra_failure``, as a crash is); the
    result adds ``silent_by_mode`` and, with ``[utility]``, ``expected_utility`` (a timeout
    valued too), each with its standard error and interval.

    Two modes (docs/model.md section 7, "Workloads"), fixed by the scenario:

    * **Independent trials** (batch arrivals and nothing shared): give ``trials``. The shares
      are outcome frequencies with binomial standard errors :math:`\sqrt{\hat p(1-\hat p)/N}`
      and Wilson intervals, the means :math:`s/\sqrt N`, cost per success the delta method
      (one rule with ``simulate``: :func:`relsim.results.estimate`), the duration percentiles
      order-statistic intervals; there is no throughput.
    * **A workload** (Poisson arrivals or any shared resource): give ``replications`` (or
      None for the default). Replication ``r`` runs the scenario's ``fleet.tasks`` tasks on
      ``SeedSequence(seed, spawn_key=(r,))``, the first ``fleet.warmup`` left out; every
      quantity is the mean over replications with the standard error of their spread and a
      95% t interval (trials that share queues are not independent, so the spread of whole
      runs is what measures the noise). The default is the least number of replications
      (from :data:`MIN_REPLICATIONS`) that brings the mean duration's standard error under
      :data:`PRECISION` of it, at most :data:`MAX_DEFAULT_REPLICATIONS`.

    Parameters
    ----------
    scenario : Scenario or mapping
        The design (a mapping is read with ``Scenario.from_dict``). Without time tables every
        duration is 0 and nothing is shared: the split is section 3's.
    trials : int or None
        Independent trials to run, ``>= 1``; must be None for a workload.
    replications : int or None
        A workload's replications, ``>= 2`` (None: the default rule); must be None for
        independent trials.
    seed : int, numpy.random.SeedSequence or None
        Seeds every draw; ``None`` draws fresh entropy, reported in ``seed``. The same seed
        gives the same numbers.
    record : int
        Keep every event of the first ``record`` trials (of the first replication) in
        ``TimelineOutcome.events`` (a DataFrame with columns ``trial, time, kind, step,
        attempt, resource, outcome``).
    progress : callable or None
        Called with the number of trials that ended since the last call; raising
        ``KeyboardInterrupt`` from it stops the run as Ctrl-C does.
    threads : int or None
        Worker threads of the compiled path (see Notes), ``>= 1``; ``None`` uses every core
        available to the process. The simpy path runs in the calling thread.

    Returns
    -------
    TimelineOutcome
        With the targets judged and the warnings of docs/model.md section 7. With ``partial=True`` (and a
        ``RuntimeWarning``) when Ctrl-C stopped the run: the estimates then cover the trials
        (the whole replications, at least two) that had ended. A second Ctrl-C aborts.

    Raises
    ------
    relsim.errors.RelsimError
        For bad input, and, before anything runs, for a run whose time or memory
        (:func:`relsim.timeline.work_estimate`) is over ``relsim.limits.time_limit()`` (60 s)
        or ``memory_limit()`` (4 GiB): the message names the estimate and the trials (or
        recorded trials) that fit.

    Notes
    -----
    Independent trials without section 8's tables and without ``record`` take the compiled
    path (:mod:`relsim.timeline._fast`) when simpy would take at least 2 s by
    :func:`work_estimate` (a rule on the scenario and ``trials``: a shorter run would spend
    more on numba's start than it saves): a numba kernel draws section 3's decisions and
    section 7's durations together, trial after trial, with no event loop (nothing is
    shared, so a trial's clock is the sum of its own actions), and fills the same per-trial
    tally, from which every figure is computed as on simpy. It draws the same distribution
    (the tests hold the two paths together), from other random streams: a seed gives other
    numbers than on simpy, the same ones for any ``threads``. ``simpy_events`` is then 0.

    Examples
    --------
    Ten steps of 8 s, a 2 s verifier and one retry per step; every trial lasts
    ``attempts x 10`` seconds:

    >>> from relsim import simulate_timeline
    >>> out = simulate_timeline({"steps": 10, "p": 0.9, "verifier": {},
    ...                          "retries": {"per_step": 1},
    ...                          "timing": {"attempt": 8, "verify": 2}}, trials=200, seed=1)
    >>> abs(out.duration["mean"] - 10 * out.expected_attempts) < 1e-9
    True
    >>> out.timeout, out.infra_failure, out.throughput_per_hour
    (0.0, 0.0, None)

    A workload (three agents shared by 50 tasks a replication), replicated:

    >>> fleet = simulate_timeline({"steps": 2, "p": 0.9, "timing": {"attempt": 8},
    ...                            "fleet": {"agents": 3, "tasks": 50}}, replications=4, seed=1)
    >>> fleet.replications, fleet.trials, fleet.utilisation["agents"] > 0.9
    (4, 200, True)
    """
    scenario = as_scenario(scenario)
    time = time_model(scenario)
    if time.workload:
        if trials is not None:
            raise invalid(
                "trials", "None for a workload (Poisson arrivals or a shared resource), which "
                f"runs replications=R of its fleet.tasks = {time.tasks}", trials)
        if replications is not None:
            replications = checks.integer(replications, "replications", 2, MAX_REPLICATIONS)
        count = time.tasks
    else:
        if replications is not None:
            raise invalid("replications", "None for independent trials (batch arrivals, nothing "
                          "shared): give trials=N", replications)
        if trials is None:
            raise RelsimError("trials: must be given for independent trials (batch arrivals, "
                              "nothing shared): an integer >= 1")
        count = check_int(trials, "trials", low=1)
    record = min(check_int(record, "record", low=0), count)
    if progress is not None and not callable(progress):
        raise invalid("progress", "callable or None", progress)
    if threads is not None:
        threads = check_int(threads, "threads", low=1)
    root, seed_value = check_seed(seed)
    # a workload runs at least MIN_REPLICATIONS replications of its fleet.tasks
    least = replications or MIN_REPLICATIONS  # the replications a workload runs at least
    _check_work(scenario, count * least if time.workload else count, record,
                (time.tasks, least) if time.workload else None)
    trial = trial_model(scenario)
    model = build_model(trial, time)
    events: list[tuple] = []
    with InterruptFlag() as flag:
        if _fast.applies(trial, time, record) and (
                _PATH == "compiled" or (_PATH is None and compiled(scenario, count, record))):
            tally = _Tally(count, model)
            if not _fast.run(trial, time, root, count, tally, progress, threads):
                flag.set()  # stopped by Ctrl-C or the progress callback
            simpy_events = 0
        elif time.workload:
            runs, simpy_events = _replicate(model, time, root, replications, record, events,
                                            progress, flag)
        else:
            tally = _Tally(count, model)
            run = _Run(model, root, count, record, tally, events, progress, flag)
            run.go()
            simpy_events = run.simpy_events
    frame = _event_frame(events) if record else None
    if time.workload:
        partial = not _finished(runs, replications)
        if len(runs) < 2:
            raise KeyboardInterrupt  # interrupted before two replications ended: no spread
        if partial:
            _warn(f"the estimate covers the {len(runs)} replications that ended")
        return _replications.combine(runs, time, seed_value, partial, frame, simpy_events)
    partial = tally.done < count
    if partial and not flag.is_set:
        # Only a stop leaves trials unfinished; the scenario's limits keep the clock finite
        # (relsim.scenario.time_tables.MAX_SECONDS), so this is a bug, not an interruption.
        raise RuntimeError(
            f"timeline: {count - tally.done} of {count} trials never ended, and no stop was asked"
        )
    if partial:
        _warn(f"the estimate covers the {tally.done} of {count} trials that ended")
    return tally.outcome(time, seed_value, partial, frame, simpy_events)


#: The most replications one call may ask for.
MAX_REPLICATIONS = 100_000
#: The default rule: replications from this many on are checked for precision.
MIN_REPLICATIONS = 5
#: The default rule's cap (the output says the precision reached).
MAX_DEFAULT_REPLICATIONS = 50
#: The default rule's precision: the mean duration's standard error under this share of it.
PRECISION = 0.02


def _warn(words: str) -> None:
    warnings.warn(f"timeline interrupted: {words}", RuntimeWarning, stacklevel=3)


def _replicate(model: Model, time: TimeModel, root: np.random.SeedSequence,
               replications: int | None, record: int, events: list, progress: Callable | None,
               flag: Any) -> tuple[list[dict[str, Any]], int]:
    """Run the replications of a workload (all asked for, or by the default rule); the
    figures of each one that ended, and the simpy events processed."""
    runs: list[dict[str, Any]] = []
    simpy_events = 0
    most = MAX_DEFAULT_REPLICATIONS if replications is None else replications
    for r in range(most):
        seq = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, r))
        tally = _Tally(time.tasks, model, time.warmup)
        run = _Run(model, seq, time.tasks, record if r == 0 else 0, tally, events, progress,
                   flag, time.warmup)
        run.go()
        simpy_events += run.simpy_events
        if tally.done == time.tasks:  # a replication Ctrl-C cut short is dropped
            runs.append(tally.figures(model, run.window))
        if flag.is_set:
            break
        if replications is None and len(runs) >= MIN_REPLICATIONS and _replications.precise(runs, PRECISION):
            break
    return runs, simpy_events


def _finished(runs: list[dict[str, Any]], replications: int | None) -> bool:
    """Every replication asked for ended (or, by the default rule, enough of them): a Ctrl-C
    after the last one leaves the result whole."""
    if replications is not None:
        return len(runs) == replications
    return len(runs) >= MAX_DEFAULT_REPLICATIONS or (
        len(runs) >= MIN_REPLICATIONS and _replications.precise(runs, PRECISION))


def _event_frame(events: list[tuple]) -> Any:
    import pandas as pd

    frame = pd.DataFrame(events, columns=list(EVENT_COLUMNS))
    frame = frame.sort_values(["trial", "time"], kind="stable", ignore_index=True)
    for column in ("step", "attempt"):
        frame[column] = frame[column].astype("Int64")
    return frame


def _check_work(scenario: Scenario, trials: int, record: int,
                workload: tuple[int, int] | None = None) -> None:
    """Refuse, before anything is allocated, a run estimated over ``relsim.limits``; a workload
    (``(tasks, replications)``) is told the replications that fit, or else the tasks that do."""
    estimate = work_estimate(scenario, trials, record)
    limit = memory_limit()
    if record and estimate.memory > limit:
        without = work_estimate(scenario, trials, 0).memory
        share = max(0.0, (limit - without) / (estimate.memory - without))
        estimate.check("record", f"record at most about {int(record * share * 0.9):,} trials")
    share = min(1.0, time_limit() / estimate.seconds if estimate.seconds > 0 else 1.0,
                limit / estimate.memory)
    fitting = max(1, int(trials * share * 0.9))
    tasks, runs = workload or (1, 0)
    if workload is None:
        estimate.check("trials", f"run at most about {fitting:,} trials")
    elif fitting // tasks >= min(runs, MIN_REPLICATIONS):
        estimate.check("replications", f"run at most about {fitting // tasks:,} replications "
                       f"of fleet.tasks = {tasks:,}")
    else:
        estimate.check("fleet.tasks", f"{runs} replications of at most about "
                       f"{max(1, fitting // runs):,} tasks fit")


# ------------------------------------------------------------------------------ the run
class _Run:
    """One call of :func:`simulate_timeline`: environments, processes, the event loop."""

    def __init__(self, model: Model, root: np.random.SeedSequence, trials: int, record: int,
                 tally: "_Tally", events: list, progress: Callable | None, flag: Any,
                 warmup: int = 0) -> None:
        self.model = model
        self.root = root
        self.trials = trials
        self.record = record
        self.tally = tally
        self.events = events
        self.progress = progress
        self.reported = 0
        self.simpy_events = 0
        self.flag = flag
        self.env: Any = None  # the environment running now (the log's clock)
        # The statistics' window opens with the first arrival after the warm-up: those
        # arrivals are drawn ahead (the stream is the same), so busy time is clipped to it.
        arrivals = _arrivals(model, root)
        ahead = [next(arrivals) for _ in range(min(warmup, trials - 1) + 1)]
        self.window = ahead[-1]
        self.arrivals = itertools.chain(ahead, arrivals)
        # the trials' seeds, a block at a time (_trial_streams); None: trial by trial
        self.seeds: list[tuple[int, int]] | None = []
        self.seeds_first = 0

    def go(self) -> None:
        import simpy

        m = self.model
        if m.agents is not None:
            env = simpy.Environment()
            fleet = self._fleet(env)
            env.process(self._dispatch(fleet))
            self._loop(env, fleet)
        elif m.independent:
            for first in range(0, self.trials, CHUNK_TRIALS):
                if self.flag.is_set:
                    break
                batch = [(k, next(self.arrivals)) for k in range(first, min(first + CHUNK_TRIALS, self.trials))]
                env = simpy.Environment(initial_time=batch[0][1])
                fleet = self._fleet(env)
                env.process(self._source(fleet, iter(batch)))
                self._loop(env, fleet)
        else:
            env = simpy.Environment()
            fleet = self._fleet(env)
            env.process(self._source(fleet, ((k, next(self.arrivals)) for k in range(self.trials))))
            self._loop(env, fleet)
        if not self.flag.is_set:  # after a Ctrl-C the bar is not told any more
            self._report()

    def _fleet(self, env: Any) -> Fleet:
        self.env = env
        fleet = Fleet(env, self.model)
        fleet.open_window(self.window)
        self.tally.fleets.append(fleet)
        return fleet

    def _loop(self, env: Any, fleet: Fleet) -> None:
        from simpy.core import EmptySchedule

        # _POLL_EVENTS steps at a time, to the empty schedule (simpy's step raises it): no
        # peek and no count per event; ``done`` is the steps of the block that ended it
        step = env.step
        count = 0
        flag = self.flag
        block = range(_POLL_EVENTS)
        while True:
            done = 0
            try:
                for done in block:
                    step()
            except EmptySchedule:
                count += done
                break
            count += _POLL_EVENTS
            if flag.is_set:
                break
            self._report()
        self.simpy_events += count

    def _report(self) -> None:
        if self.progress is None:
            return
        done = self.tally.done
        if done > self.reported:
            try:
                self.progress(done - self.reported)
            except KeyboardInterrupt:
                if self.flag.is_set:
                    raise
                self.flag.set()
            self.reported = done

    # -------------------------------------------------------------- arrivals and trials
    def _source(
        self, fleet: Fleet, arrivals: Iterator[tuple[int, float]]
    ) -> Generator[Event, Any, None]:
        """Unlimited agents: each trial starts the moment it arrives."""
        env = fleet.env
        for k, arrival in arrivals:
            if self.flag.is_set:
                return
            if arrival > env.now:
                yield env.timeout(arrival - env.now)
            self._start(fleet, k, arrival, False)

    def _dispatch(self, fleet: Fleet) -> Generator[Event, Any, None]:
        """``fleet.agents`` slots: the FIFO queue in front of them, held as the index of its
        head. A head whose deadline passed in the queue leaves it as a timeout."""
        env, agents, deadline = fleet.env, fleet.agents, self.model.deadline
        assert agents is not None  # run only for a fleet of limited agents
        k = 0
        arrival = next(self.arrivals)
        while k < self.trials and not self.flag.is_set:
            if arrival > env.now:
                yield env.timeout(arrival - env.now)
            waiting = agents.take()
            if waiting is not None:
                yield waiting
            # at its deadline a queued trial leaves: any action it began would be cut at once
            while deadline is not None and env.now >= arrival + deadline:
                self._queue_timeout(k, arrival, deadline)
                k += 1
                if k == self.trials:
                    break
                arrival = next(self.arrivals)
            if k == self.trials or arrival > env.now:
                agents.give()  # nobody is waiting: the slot goes back
                continue
            self._start(fleet, k, arrival, True)
            k += 1
            if k < self.trials:
                arrival = next(self.arrivals)

    def _start(self, fleet: Fleet, k: int, arrival: float, agent: bool) -> None:
        env = fleet.env
        log = self._log if k < self.record else None
        trial = Trial(k, arrival, log)
        trial.start = env.now
        if log:
            log(trial, "arrive", None, None, None, None, arrival)
            if agent:
                log(trial, "request", None, None, "agents", None, arrival)
                log(trial, "acquire", None, None, "agents", None)
        decide, clock = self._trial_streams(k)
        arm_stops(fleet, trial, clock)

        def finish(trial: Trial, outcome: int) -> None:
            now = env.now
            if agent:
                assert fleet.agents is not None  # the slot came from there
                fleet.busy["agents"] += fleet.clipped(trial.start, now)
                fleet.agents.give()
                if log:
                    log(trial, "release", None, None, "agents", None)
            if log:
                log(trial, "end", None, None, None, OUTCOME_NAMES[outcome])
            self.tally.add(trial, outcome, now)

        trial.process = env.process(self.model.process(fleet, trial, decide, clock, finish))

    def _trial_streams(self, k: int) -> tuple[random.Random, random.Random]:
        """Trial ``k``'s streams, as :func:`_streams` makes them, from seeds computed for
        ``CHUNK_TRIALS`` trials at once (:func:`relsim.timeline._seeds.trial_seeds`: the
        same seeds, without a ``SeedSequence`` per trial)."""
        seeds = self.seeds
        if seeds is None:
            return _streams(self.root, k)
        offset = k - self.seeds_first
        if not 0 <= offset < len(seeds):
            first = k - k % CHUNK_TRIALS
            count = min(CHUNK_TRIALS, self.trials - first)
            self.seeds = seeds = trial_seeds(self.root, first, count)
            self.seeds_first, offset = first, k - first
            if seeds is None:  # a seed this does not cover: numpy's SeedSequence, trial by trial
                return _streams(self.root, k)
        decide, clock = seeds[offset]
        return random.Random(decide), random.Random(clock)

    def _queue_timeout(self, k: int, arrival: float, deadline: float) -> None:
        trial = Trial(k, arrival, self._log if k < self.record else None)
        end = arrival + deadline
        trial.start = end
        if trial.log:
            trial.log(trial, "arrive", None, None, None, None, arrival)
            trial.log(trial, "request", None, None, "agents", None, arrival)
            trial.log(trial, "end", None, None, None, "timeout", end)
        self.tally.add(trial, TIMEOUT, end)

    def _log(self, trial: Trial, kind: str, step: Any, attempt: Any, resource: Any,
             outcome: Any, time: float | None = None) -> None:
        if time is None:
            time = self.env.now
        self.events.append((trial.index, time, kind, step, attempt, resource, outcome))


def _arrivals(model: Model, root: np.random.SeedSequence) -> Iterator[float]:
    """Arrival times in trial order: all 0 (batch), or a Poisson process from 0."""
    if not model.poisson:
        while True:
            yield 0.0
    stream = _stream(np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, 1)))
    assert model.rate_per_hour is not None  # a Poisson fleet has a rate
    rate = model.rate_per_hour / 3600.0
    time = 0.0
    while True:
        time += stream.expovariate(rate)
        yield time


def _streams(root: np.random.SeedSequence, k: int) -> tuple[random.Random, random.Random]:
    """Trial ``k``'s decision and time streams, both from ``spawn_key=(0, k)``."""
    words = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, 0, k)).generate_state(8)
    return random.Random(int.from_bytes(words[:4].tobytes(), "little")), random.Random(
        int.from_bytes(words[4:].tobytes(), "little")
    )


def _stream(seq: np.random.SeedSequence) -> random.Random:
    return random.Random(int.from_bytes(seq.generate_state(4).tobytes(), "little"))


# ------------------------------------------------------------------------------ the tally
class _Tally:
    """Per-trial outcome, attempts, cost, duration and time waited (compact arrays), and the
    sums over the trials after the warm-up: waits per resource and what they held. With
    failure modes, each silent failure's mode; with ``[utility]``, the expected utility
    (docs/model.md section 8)."""

    def __init__(self, trials: int, model: Model, warmup: int = 0) -> None:
        self.cost_unit = model.cost_unit  # trials' costs are summed in the model's cost unit
        self.warmup = warmup
        self.mode_names = model.mode_names
        self.utility = model.utility
        self.outcome_code = np.full(trials, -1, dtype=np.int8)
        self.mode = np.full(trials, -1, dtype=np.int8) if model.mode_names else None
        self.attempts = np.zeros(trials, dtype=np.int64)
        self.cost = np.zeros(trials)
        self.duration = np.zeros(trials)
        self.waited = np.zeros(trials)
        self.waits = {"agents": 0.0, "rate_limit": 0.0, "llm": 0.0, "reviewers": 0.0}
        self.held = {"agents": 0.0, "llm": 0.0, "reviewers": 0.0, "rpm": 0.0, "tpm": 0.0}
        self.first_arrival = math.inf
        self.last_end = -math.inf
        self.done = 0
        self.fleets: list[Fleet] = []
        # the compiled path's moments and order statistics (relsim.timeline._summary.Summary),
        # set by relsim.timeline._fast when every trial ended
        self.compiled: Any = None

    def add(self, trial: Trial, outcome: int, end: float) -> None:
        k = trial.index
        self.outcome_code[k] = outcome
        self.attempts[k] = trial.attempts
        self.cost[k] = trial.cost
        if self.mode is not None:
            self.mode[k] = trial.mode
        self.duration[k] = end - trial.arrival
        queued = trial.start - trial.arrival
        self.waited[k] = queued + trial.wait_rate + trial.wait_llm + trial.wait_reviewers
        if k >= self.warmup:
            waits = self.waits
            waits["agents"] += queued
            waits["rate_limit"] += trial.wait_rate
            waits["llm"] += trial.wait_llm
            waits["reviewers"] += trial.wait_reviewers
            held = self.held
            held["agents"] += end - trial.start
            held["llm"] += trial.held_llm
            held["reviewers"] += trial.held_reviewers
            held["rpm"] += trial.calls
            held["tpm"] += trial.tokens
        if trial.arrival < self.first_arrival:
            self.first_arrival = trial.arrival
        if end > self.last_end:
            self.last_end = end
        self.done += 1

    def _ended(self) -> np.ndarray | slice:
        """Where the trials that ended are: every row (a view, no copy) unless a stop cut
        the run short."""
        ended = self.outcome_code >= 0
        return slice(None) if ended.all() else ended

    def estimate(self) -> Estimate:
        """The shares, means and cost per success of the trials that ended, with standard
        errors and intervals: Monte Carlo's rule (:func:`relsim.results.estimate`)."""
        ended = self._ended()
        codes = self.outcome_code[ended]
        n = codes.size
        if self.compiled is not None:
            counts = self.compiled.counts
            mean_a, var_a, mean_c, var_c, mean_d, var_d, cov = self.compiled.moments
            means = {"expected_attempts": (mean_a, var_a), "expected_cost": (mean_c, var_c),
                     "duration": (mean_d, var_d)}
        else:
            counts = np.bincount(codes, minlength=len(TIMELINE_PROPORTIONS))
            cost = self.cost[ended]
            succeeded = (codes == 0).astype(float)
            means = {"expected_attempts": _moments(self.attempts[ended]),
                     "expected_cost": _moments(cost),
                     "duration": _moments(self.duration[ended])}
            cov = float(np.mean((cost - cost.mean()) * (succeeded - succeeded.mean())))
        return estimate(Tally(
            trials=n,
            counts={key: int(counts[i]) for i, key in enumerate(TIMELINE_PROPORTIONS)},
            means=means, cov_cost_success=float(cov), cost_unit=self.cost_unit,
        ))

    def outcome(self, time: TimeModel, seed: int | None, partial: bool, events: Any,
                simpy_events: int) -> TimelineOutcome:
        """Independent trials: :meth:`estimate`'s numbers, order-statistic intervals of the
        duration percentiles, no throughput (docs/model.md section 7, "Workloads")."""
        ended = self._ended()
        n = self.outcome_code[ended].size
        if n == 0:
            raise KeyboardInterrupt  # interrupted before any trial ended: nothing to report
        result = self.estimate()
        values = result.values
        se, intervals = dict(result.standard_errors), dict(result.intervals)
        se["duration_mean"], intervals["duration_mean"] = se["duration"], intervals["duration"]
        quantiles, bounds = self._duration_percentiles(ended)
        for q, (low, high) in zip(PERCENTS, bounds):
            intervals[f"duration_p{q}"] = (low, high)
            se[f"duration_p{q}"] = (high - low) / (2 * Z95)
        for key in ("agents", "rate_limit", "llm", "reviewers"):  # nothing is shared
            se[f"wait_{key}"], intervals[f"wait_{key}"] = 0.0, (0.0, 0.0)
        self._design_estimates(ended, values, se, intervals)
        figures = {
            "duration": {"mean": values["duration"],
                         **{f"p{q}": float(v) for q, v in zip(PERCENTS, quantiles)}},
            "wait": {key: value / n for key, value in self.waits.items()},
        }
        return _replications.finish(
            time, values, se, intervals, figures, trials=n, seed=seed, partial=partial,
            events=events, simpy_events=simpy_events)

    def _duration_percentiles(self, ended: np.ndarray | slice
                              ) -> tuple[list[float], list[tuple[float, float]]]:
        """The :data:`PERCENTS` percentiles of the durations as ``np.quantile(duration, q,
        method="inverted_cdf")`` gives them, and the intervals ``quantile_interval`` gives
        them: order statistics, from a sort of the durations or, on the compiled path,
        picked by ``_summary.Summary.order_statistics`` without one."""
        duration = self.duration[ended]
        n = duration.size
        # numpy's inverted_cdf index (its _inverted_cdf): n q - 1, rounded up unless whole
        index = n * np.array([q / 100 for q in PERCENTS], dtype=np.float64) - 1
        previous = np.floor(index)
        ranks = [int(k) for k in np.clip(np.where(index - previous == 0, previous,
                                                  previous + 1), 0, n - 1)]
        bounds = [quantile_interval_ranks(n, q / 100) for q in PERCENTS]
        wanted = sorted({*ranks, *(k for pair in bounds for k in pair)})
        if self.compiled is not None:
            value = self.compiled.order_statistics(wanted)
        else:
            ordered = np.sort(duration)
            value = {k: float(ordered[k]) for k in wanted}
        return [value[k] for k in ranks], [(value[low], value[high]) for low, high in bounds]

    def _utilities(self, codes: np.ndarray, cost: np.ndarray) -> np.ndarray:
        """Each trial's utility: its outcome's value less ``cost_weight`` times its cost."""
        assert self.utility is not None  # called with [utility] only
        values = dict(zip(UTILITY_OUTCOMES, self.utility))
        by_code = np.array([values[name] for name in OUTCOME_NAMES])
        weight = self.utility[-1]
        utilities = by_code[codes]
        return utilities - weight * (cost * self.cost_unit) if weight else utilities

    def _design_estimates(self, ended: np.ndarray | slice, values: dict[str, Any], se: dict[str, float],
                          intervals: dict[str, tuple[float, float]]) -> None:
        """Independent trials: each mode's silent share (binomial standard error, Wilson
        interval, as every share) and the expected utility (a mean: s/sqrt(N), normal)."""
        codes = self.outcome_code[ended]
        n = codes.size
        if self.mode is not None:
            silent = self.mode[ended][codes == SILENT]
            counts = np.bincount(silent, minlength=len(self.mode_names))
            for name, count in zip(self.mode_names, counts.tolist()):
                key = f"silent_by_mode_{name}"
                values[key], se[key], intervals[key] = count / n, binomial_se(count, n), wilson(count, n)
        if self.utility is not None:
            utilities = self._utilities(codes, self.cost[ended])
            mean = float(utilities.mean())
            error = float(utilities.std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
            values["expected_utility"], se["expected_utility"] = mean, error
            intervals["expected_utility"] = normal_interval(mean, error)

    def figures(self, model: Model, window: float) -> dict[str, Any]:
        """One replication's quantities, by flattened name (None: undefined): shares and
        means over the trials after the warm-up; utilisation, throughput and makespan over
        the window from the first of them to arrive to the last end; offered loads (Poisson
        arrivals) and the growth of waits from the first half of those trials to the second."""
        counted = slice(self.warmup, None)
        codes = self.outcome_code[counted]
        n = codes.size
        counts = np.bincount(codes, minlength=len(TIMELINE_PROPORTIONS))
        out: dict[str, Any] = {key: counts[i] / n for i, key in enumerate(TIMELINE_PROPORTIONS)}
        out["expected_attempts"] = float(self.attempts[counted].mean())
        out["expected_cost"] = float(self.cost[counted].mean()) * self.cost_unit
        if self.mode is not None:
            silent = self.mode[counted][codes == SILENT]
            for m, share in enumerate(np.bincount(silent, minlength=len(self.mode_names)) / n):
                out[f"silent_by_mode_{self.mode_names[m]}"] = float(share)
        if self.utility is not None:
            out["expected_utility"] = float(self._utilities(codes, self.cost[counted]).mean())
        duration = self.duration[counted]
        out["duration_mean"] = float(duration.mean())
        for q, v in zip(PERCENTS, np.quantile(duration, [q / 100 for q in PERCENTS],
                                              method="inverted_cdf")):
            out[f"duration_p{q}"] = float(v)
        for key, value in self.waits.items():
            out[f"wait_{key}"] = value / n
        span = max(0.0, self.last_end - window)
        busy = {key: sum(f.busy[key] for f in self.fleets) for key in ("agents", "llm", "reviewers")}
        gates = [f.gate for f in self.fleets if f.gate is not None]
        busy["rpm"] = float(sum(g.spent_calls for g in gates))
        busy["tpm"] = float(sum(g.spent_tokens for g in gates))
        capacity = _capacities(model)
        for key, limit in capacity.items():
            # a bucket can give its full first minute on top of its refill: the most it gives
            window = span + 60.0 if key in ("rpm", "tpm") else span
            out[f"utilisation_{key}"] = busy[key] / (limit * window) if limit and span > 0 else None
        if capacity["agents"] and span > 0:  # agents' own work, for the bottleneck
            inner = sum(f.inner for f in self.fleets)
            out["own_agents"] = (busy["agents"] - inner) / (capacity["agents"] * span)
        out["makespan"] = span
        successes = int(counts[0])
        out["throughput_per_hour"] = _per_hour(n, span)
        out["successes_per_hour"] = _per_hour(successes, span)
        if model.poisson:
            rate = model.rate_per_hour / 3600.0 if model.rate_per_hour else 0.0
            for key, limit in capacity.items():
                out[f"offered_load_{key}"] = rate * self.held[key] / n / limit if limit else None
        if n >= 2:
            waited = self.waited[counted]
            half = n // 2
            out["wait_growth"] = float(waited[n - half:].mean() - waited[:half].mean())
        return out


PERCENTS = (50, 90, 99)


def _capacities(model: Model) -> dict[str, float | None]:
    """Each limited resource's capacity per second (slots, or the buckets' refill); None
    when unlimited or unused."""
    return {
        "agents": model.agents,
        "llm": model.llm_concurrency,
        "reviewers": model.reviewers if model.human else None,
        "rpm": None if model.rpm is None else model.rpm / 60.0,
        "tpm": None if model.tpm is None else model.tpm / 60.0,
    }


def _moments(values: np.ndarray) -> tuple[float, float]:
    """The mean and the population variance of per-trial values."""
    return float(values.mean()), float(values.var())


def _per_hour(count: int, makespan: float) -> float | None:
    """``count * 3600 / makespan``; None when the makespan is 0 (no time passed)."""
    if not makespan > 0.0 or not math.isfinite(makespan):
        return None
    return count * 3600.0 / makespan
