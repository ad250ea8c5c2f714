"""The timeline driver: arrivals, the agent queue, seeding, the event loop and the tally.

Trial ``k`` draws from ``SeedSequence(seed, spawn_key=(0, k))`` (two ``random.Random``
streams seeded from it: decisions and time), the arrivals from ``spawn_key=(1,)``, so a
trial's draws depend on its index only, never on the order in which the fleet runs it.

Memory stays bounded by what runs at once: with ``fleet.agents`` one dispatcher process holds
the FIFO queue as an index into the arrival sequence (a trial becomes a simpy process only
when it gets its slot); when trials share nothing they run in environments of
``CHUNK_TRIALS`` trials each; only a shared resource with unlimited agents and batch arrivals
makes every trial live at once, because then they really do run at once.
"""

from __future__ import annotations

import math
import random
import warnings
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterator, Mapping

import numpy as np

from relsim._running import InterruptFlag, check_int, check_seed
from relsim.errors import invalid
from relsim.limits import memory_limit, time_limit
from relsim.results import EVENT_COLUMNS, TIMELINE_PROPORTIONS, Estimate, Tally, TimelineOutcome, estimate
from relsim.scenario import Scenario, as_scenario, time_model, trial_model
from relsim.timeline._estimate import work_estimate
from relsim.timeline._trial import (
    OUTCOME_NAMES,
    TIMEOUT,
    Fleet,
    Model,
    Trial,
    arm_stops,
    run_trial,
)

if TYPE_CHECKING:  # pragma: no cover
    from simpy.events import Event

#: Trials per environment when trials share nothing (bounds memory; changes no number).
CHUNK_TRIALS = 4096

#: simpy events between two looks at Ctrl-C and the progress callback.
_POLL_EVENTS = 4096

_PERCENTS = (50, 90, 99)


def simulate_timeline(
    scenario: Scenario | Mapping[str, Any],
    trials: int,
    *,
    seed: int | np.random.SeedSequence | None = None,
    record: int = 0,
    progress: Callable[[int], None] | None = None,
) -> TimelineOutcome:
    r"""Run ``trials`` trials of a scenario in time, on simpy (docs/model.md section 7).

    Each trial is one simpy process that makes section 3's draws and decisions and spends
    time between them: it arrives (batch: at 0; Poisson: gaps ~ Exp(rate_per_hour / 3600)),
    waits FIFO for an agent slot, runs its attempts as LLM calls (rate budget from the rpm
    and tpm token buckets, then an LLM slot), verifications, backoffs and checkpoint checks
    (a human gate holds a reviewer), and ends as section 3 says unless its deadline passes
    (``timeout``) or its crash clock, started with its agent slot, rings (``infra_failure``)
    first; either interrupt releases all it holds at once.

    The shares are outcome frequencies with binomial standard errors
    :math:`\sqrt{\hat p(1-\hat p)/N}` and Wilson intervals; the means (attempts, cost,
    duration) have :math:`s/\sqrt N`; cost per success the delta method, infinite when no
    trial succeeded (one rule with ``simulate``: :func:`relsim.results.estimate`).

    Parameters
    ----------
    scenario : Scenario or mapping
        The design (a mapping is read with ``Scenario.from_dict``). Without time tables every
        duration is 0 and nothing is shared: the split is section 3's.
    trials : int
        Trials to run, ``>= 1``.
    seed : int, numpy.random.SeedSequence or None
        Seeds every draw; ``None`` draws fresh entropy, reported in ``seed``. The same seed
        gives the same numbers.
    record : int
        Keep every event of the first ``record`` trials in ``TimelineOutcome.events`` (a
        DataFrame with columns ``trial, time, kind, step, attempt, resource, outcome``).
    progress : callable or None
        Called with the number of trials that ended since the last call; raising
        ``KeyboardInterrupt`` from it stops the run as Ctrl-C does.

    Returns
    -------
    TimelineOutcome
        With ``partial=True`` (and a ``RuntimeWarning``) when Ctrl-C stopped the run: the
        estimates then cover the trials that had ended. A second Ctrl-C aborts.

    Raises
    ------
    relsim.errors.RelsimError
        For bad input, and, before anything runs, for a run whose time or memory
        (:func:`relsim.timeline.work_estimate`) is over ``relsim.limits.time_limit()`` (60 s)
        or ``memory_limit()`` (4 GiB): the message names the estimate and the trials (or
        recorded trials) that fit.

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
    >>> out.timeout, out.infra_failure
    (0.0, 0.0)
    """
    scenario = as_scenario(scenario)
    trials = check_int(trials, "trials", low=1)
    record = min(check_int(record, "record", low=0), trials)
    if progress is not None and not callable(progress):
        raise invalid("progress", "callable or None", progress)
    root, seed_value = check_seed(seed)
    _check_work(scenario, trials, record)
    model = Model(trial_model(scenario), time_model(scenario))
    tally = _Tally(trials, model.cost_unit)
    events: list[tuple] = []
    run = _Run(model, root, trials, record, tally, events, progress)
    with InterruptFlag() as flag:
        run.flag = flag
        run.go()
    partial = tally.done < trials
    if partial and not run.flag.is_set:
        # Only a stop leaves trials unfinished; the scenario's limits keep the clock finite
        # (relsim.scenario.time_tables.MAX_SECONDS), so this is a bug, not an interruption.
        raise RuntimeError(
            f"timeline: {trials - tally.done} of {trials} trials never ended, and no stop was "
            f"asked (the simulated clock stood at {run.env.now if run.env else 0.0:g} s)"
        )
    if partial:
        warnings.warn(
            f"timeline interrupted: the estimate covers the {tally.done} of {trials} trials "
            "that ended",
            RuntimeWarning,
            stacklevel=2,
        )
    frame = None
    if record:
        import pandas as pd

        frame = pd.DataFrame(events, columns=list(EVENT_COLUMNS))
        frame = frame.sort_values(["trial", "time"], kind="stable", ignore_index=True)
        for column in ("step", "attempt"):
            frame[column] = frame[column].astype("Int64")
    return tally.outcome(model, seed_value, partial, frame, run.simpy_events)


def _check_work(scenario: Scenario, trials: int, record: int) -> None:
    """Refuse, before anything is allocated, a run estimated over ``relsim.limits``."""
    estimate = work_estimate(scenario, trials, record)
    limit = memory_limit()
    if record and estimate.memory > limit:
        without = work_estimate(scenario, trials, 0).memory
        share = max(0.0, (limit - without) / (estimate.memory - without))
        estimate.check("record", f"record at most about {int(record * share * 0.9):,} trials")
    share = min(1.0, time_limit() / estimate.seconds if estimate.seconds > 0 else 1.0,
                limit / estimate.memory)
    estimate.check("trials", f"run at most about {max(1, int(trials * share * 0.9)):,} trials")


# ------------------------------------------------------------------------------ the run
class _Run:
    """One call of :func:`simulate_timeline`: environments, processes, the event loop."""

    def __init__(self, model: Model, root: np.random.SeedSequence, trials: int, record: int,
                 tally: "_Tally", events: list, progress: Callable | None) -> None:
        self.model = model
        self.root = root
        self.trials = trials
        self.record = record
        self.tally = tally
        self.events = events
        self.progress = progress
        self.reported = 0
        self.simpy_events = 0
        self.flag: Any = None
        self.env: Any = None  # the environment running now (the log's clock)
        self.arrivals = _arrivals(model, root)

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
        self.tally.fleets.append(fleet.busy)
        return fleet

    def _loop(self, env: Any, fleet: Fleet) -> None:
        step, peek = env.step, env.peek
        count = 0
        flag = self.flag
        while peek() != math.inf:
            step()
            count += 1
            if count % _POLL_EVENTS == 0:
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
            self._start(fleet, k, arrival, None)

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
            request = agents.request()
            if not request.triggered:
                yield request
            # at its deadline a queued trial leaves: any action it began would be cut at once
            while deadline is not None and env.now >= arrival + deadline:
                self._queue_timeout(k, arrival, deadline)
                k += 1
                if k == self.trials:
                    break
                arrival = next(self.arrivals)
            if k == self.trials or arrival > env.now:
                agents.release(request)  # nobody is waiting: the slot goes back
                continue
            self._start(fleet, k, arrival, request)
            k += 1
            if k < self.trials:
                arrival = next(self.arrivals)

    def _start(self, fleet: Fleet, k: int, arrival: float, agent_request: Any) -> None:
        env = fleet.env
        log = self._log if k < self.record else None
        trial = Trial(k, arrival, log)
        trial.start = env.now
        if log:
            log(trial, "arrive", None, None, None, None, arrival)
            if agent_request is not None:
                log(trial, "request", None, None, "agents", None, arrival)
                log(trial, "acquire", None, None, "agents", None)
        decide, clock = _streams(self.root, k)
        arm_stops(fleet, trial, clock)

        def finish(trial: Trial, outcome: int) -> None:
            now = env.now
            if agent_request is not None:
                assert fleet.agents is not None  # the request came from there
                fleet.busy["agents"] += now - trial.start
                fleet.agents.release(agent_request)
                if log:
                    log(trial, "release", None, None, "agents", None)
            if log:
                log(trial, "end", None, None, None, OUTCOME_NAMES[outcome])
            self.tally.add(trial, outcome, now)

        trial.process = env.process(run_trial(fleet, trial, decide, clock, finish))

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
    """Per-trial outcome, attempts, cost and duration (compact arrays), and summed waits."""

    def __init__(self, trials: int, cost_unit: float) -> None:
        self.cost_unit = cost_unit  # trials' costs are summed in the model's cost unit
        self.outcome_code = np.full(trials, -1, dtype=np.int8)
        self.attempts = np.zeros(trials, dtype=np.int64)
        self.cost = np.zeros(trials)
        self.duration = np.zeros(trials)
        self.waits = {"agents": 0.0, "rate_limit": 0.0, "llm": 0.0, "reviewers": 0.0}
        self.first_arrival = math.inf
        self.last_end = -math.inf
        self.done = 0
        self.fleets: list[dict[str, float]] = []

    def add(self, trial: Trial, outcome: int, end: float) -> None:
        k = trial.index
        self.outcome_code[k] = outcome
        self.attempts[k] = trial.attempts
        self.cost[k] = trial.cost
        self.duration[k] = end - trial.arrival
        waits = self.waits
        waits["agents"] += trial.start - trial.arrival
        waits["rate_limit"] += trial.wait_rate
        waits["llm"] += trial.wait_llm
        waits["reviewers"] += trial.wait_reviewers
        if trial.arrival < self.first_arrival:
            self.first_arrival = trial.arrival
        if end > self.last_end:
            self.last_end = end
        self.done += 1

    def estimate(self) -> Estimate:
        """The shares, means and cost per success of the trials that ended, with standard
        errors and intervals: Monte Carlo's rule (:func:`relsim.results.estimate`)."""
        ended = self.outcome_code >= 0
        n = int(ended.sum())
        codes = self.outcome_code[ended]
        counts = np.bincount(codes, minlength=len(TIMELINE_PROPORTIONS))
        cost = self.cost[ended]
        succeeded = (codes == 0).astype(float)
        return estimate(Tally(
            trials=n,
            counts={key: int(counts[i]) for i, key in enumerate(TIMELINE_PROPORTIONS)},
            means={"expected_attempts": _moments(self.attempts[ended]),
                   "expected_cost": _moments(cost),
                   "duration": _moments(self.duration[ended])},
            cov_cost_success=float(np.mean((cost - cost.mean()) * (succeeded - succeeded.mean()))),
            cost_unit=self.cost_unit,
        ))

    def outcome(self, model: Model, seed: int | None, partial: bool, events: Any,
                simpy_events: int) -> TimelineOutcome:
        ended = self.outcome_code >= 0
        n = int(ended.sum())
        if n == 0:
            raise KeyboardInterrupt  # interrupted before any trial ended: nothing to report
        result = self.estimate()
        values = result.values
        duration = self.duration[ended]
        makespan = max(0.0, self.last_end - self.first_arrival)
        busy = {key: sum(f[key] for f in self.fleets) for key in ("agents", "llm", "reviewers")}
        capacity = {"agents": model.agents, "llm": model.llm_concurrency,
                    "reviewers": model.reviewers if model.human else None}
        utilisation = {
            key: (busy[key] / (limit * makespan) if limit and makespan > 0 else None)
            for key, limit in capacity.items()
        }
        quantiles = np.quantile(duration, [q / 100 for q in _PERCENTS], method="inverted_cdf")
        return TimelineOutcome(
            success=values["success"],
            silent_failure=values["silent_failure"],
            detected_failure=values["detected_failure"],
            timeout=values["timeout"],
            infra_failure=values["infra_failure"],
            expected_attempts=values["expected_attempts"],
            expected_cost=values["expected_cost"],
            standard_errors=result.standard_errors,
            intervals=result.intervals,
            duration={"mean": values["duration"],
                      **{f"p{q}": float(v) for q, v in zip(_PERCENTS, quantiles)}},
            wait={key: value / n for key, value in self.waits.items()},
            utilisation=utilisation,
            makespan=makespan,
            throughput_per_hour=_per_hour(n, makespan),
            successes_per_hour=_per_hour(int(np.count_nonzero(self.outcome_code == 0)), makespan),
            trials=n,
            seed=seed,
            partial=partial,
            events=events,
            simpy_events=simpy_events,
        )


def _moments(values: np.ndarray) -> tuple[float, float]:
    """The mean and the population variance of per-trial values."""
    return float(values.mean()), float(values.var())


def _per_hour(count: int, makespan: float) -> float | None:
    """``count * 3600 / makespan``; None when the makespan is 0 (no time passed)."""
    if not makespan > 0.0 or not math.isfinite(makespan):
        return None
    return count * 3600.0 / makespan
