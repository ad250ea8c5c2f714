"""One trial in time: docs/model.md section 3's draws and decisions, as one simpy process.

The decisions (task and step effects, correct, confused, accepted, caught) are drawn from the
trial's *decision* stream in exactly the order of section 3; every duration, backoff jitter
and the crash clock come from its *time* stream. So the time tables change when things happen,
never what is decided: a trial that ends by itself has the outcome it would have without them.

A model with section 8's tables (classes, a ladder, samples, failure modes, faults) is a
:class:`relsim.timeline._design.DesignModel` (see :func:`build_model`), whose trials run
:func:`relsim.timeline._design.steps` instead of :func:`_steps`, so a scenario without them
takes exactly the code path (and the draws) it took before they existed.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from relsim.scenario import Duration, TimeModel, TrialModel
from relsim.scenario.compiled import expit
from relsim.scenario.time_tables import backoff_wait

#: The ratio-of-uniforms constant of Kinderman and Monahan's normal sampler, written as
#: CPython's ``random.normalvariate`` writes it (so the lognormal draws below are its draws).
NV_MAGICCONST = 4 * math.exp(-0.5) / math.sqrt(2.0)

# Outcome codes, in the order of TimelineOutcome's proportions.
SUCCESS, SILENT, DETECTED, TIMEOUT, INFRA = 0, 1, 2, 3, 4
OUTCOME_NAMES = ("success", "silent_failure", "detected_failure", "timeout", "infra_failure")


def sampler(duration: Duration) -> Callable[[Any], float] | float:
    """A constant duration as a float (nothing to draw), else ``draw(rng) -> seconds``."""
    if duration.kind == "constant" or (duration.kind == "lognormal" and duration.sigma == 0.0):
        # a Python float: the trial loop tells a constant from a sampler by its class
        return float(duration.value if duration.kind == "constant" else duration.median)
    if duration.kind == "exponential":
        rate = 1.0 / duration.value
        return lambda rng: rng.expovariate(rate)
    mu, sigma = math.log(duration.median), duration.sigma
    return lambda rng: rng.lognormvariate(mu, sigma)


def _draw(spec: Any, rng: Any) -> float:
    return spec if spec.__class__ is float else spec(rng)


class Model:
    """The compiled trial and time models, as the trial process reads them: per-step lists of
    plain Python floats (fast to index) and duration samplers. Reads
    ``relsim.scenario.TrialModel`` and ``TimeModel`` only."""

    def __init__(self, trial: TrialModel, time: TimeModel) -> None:
        self.n = trial.steps
        self.p = trial.p.tolist()
        self.fixed = trial.p_fixed.tolist()
        self.logit = trial.logit_p.tolist()
        self.has_verifier = trial.has_verifier
        self.miss = trial.miss.tolist()
        self.false_reject = trial.false_reject.tolist()
        self.per_step = trial.per_step.tolist()
        self.total = trial.total  # NO_CAP when there is none: no trial reaches it
        self.task_sd, self.step_sd = trial.task_sd, trial.step_sd
        self.random_effects = trial.has_random_effects
        self.confusion = trial.has_confusion
        self.enter, self.recover, self.factor = trial.enter, trial.recover, trial.factor
        self.is_checkpoint = trial.is_checkpoint.tolist()
        self.detect, self.false_alarm = trial.detect, trial.false_alarm
        self.rollbacks = trial.rollbacks
        # costs in the model's cost unit (a power of two): sums near the float range stay finite
        unit = self.cost_unit = trial.cost_unit
        self.attempt_cost = (trial.cost_per_attempt / unit).tolist()
        self.checkpoint_cost = trial.checkpoint_cost / unit
        self.rollback_cost = trial.rollback_cost / unit

        self.attempt_time = [sampler(d) for d in time.attempt]
        # a lognormal attempt time's (mu, sigma): _steps draws it itself (see there)
        self.attempt_lognormal = [
            (math.log(d.median), d.sigma) if d.kind == "lognormal" and d.sigma != 0.0 else None
            for d in time.attempt]
        self.verify_time = sampler(time.verify)
        self.checkpoint_time = sampler(time.checkpoint)
        self.backoff = time.backoff
        self.deadline = time.deadline
        self.poisson = time.poisson
        self.rate_per_hour = time.rate_per_hour
        self.agents = time.agents
        self.llm_concurrency = time.llm_concurrency
        self.rpm, self.tpm = time.rpm, time.tpm
        self.tokens = list(time.tokens)
        self.verifier_calls_llm = time.verifier_calls_llm
        self.human = time.human
        self.reviewers = time.reviewers
        self.review_time = sampler(time.review)
        self.crash_rate = time.crash_per_hour / 3600.0
        # Trials share nothing: each can run in an environment of its own (memory stays bounded).
        self.independent = time.independent
        # what the tally reports beside the shares (docs/model.md section 8)
        self.mode_names = trial.mode_names
        self.utility: list[float] | None = None if trial.utility is None else trial.utility.tolist()
        # The trial's loop: section 3's here; section 8's in relsim.timeline._design.DesignModel
        self.run: Callable[..., Any] = _steps

    def process(self, fleet: "Fleet", trial: "Trial", decide: Any, clock: Any,
                finish: Callable[["Trial", int], None]) -> Any:
        """The simpy process (a generator) of one trial, which ends with ``finish(trial,
        outcome)``: section 3's loop is one itself; any other runs inside :func:`run_trial`."""
        if self.run is _steps:
            return _steps(fleet, self, fleet.env, trial, decide, clock, finish)
        return run_trial(fleet, trial, decide, clock, finish)


def build_model(trial: TrialModel, time: TimeModel) -> Model:
    """The :class:`Model` of a run: with any of section 8's tables, one that runs them
    (:class:`relsim.timeline._design.DesignModel`); without, section 3's, exactly as before."""
    if trial.has_design_tables:
        from relsim.timeline._design import DesignModel

        return DesignModel(trial, time)
    return Model(trial, time)


class Slots:
    """``capacity`` units of a shared resource (agent slots, LLM slots, reviewers), granted
    FIFO, on simpy's public events (the FIFO of ``simpy.Resource``, cheaper).

    ``take()`` takes a free unit at once and returns None (no event: the trial goes on in
    the same step, as it would on a granted ``Resource`` request), else it joins the queue
    and returns the event that succeeds when a unit is handed to it; ``give()`` hands a unit
    to the longest waiter, or back to the pool; ``cancel(event)`` withdraws a taker stopped
    in the queue (giving the unit back if it had been handed over in that same instant). A
    free unit with takers waiting never happens: ``give`` serves the queue first.
    """

    __slots__ = ("env", "free", "queue")

    def __init__(self, env: Any, capacity: int) -> None:
        from collections import deque

        self.env = env
        self.free = capacity
        self.queue: Any = deque()

    def take(self) -> Any:
        if self.free:
            self.free -= 1
            return None
        event = self.env.event()
        self.queue.append(event)
        return event

    def give(self) -> None:
        if self.queue:
            self.queue.popleft().succeed()
        else:
            self.free += 1

    def cancel(self, event: Any) -> None:
        if event.triggered:  # handed over, not yet seen by the taker: it goes on
            self.give()
        else:
            self.queue.remove(event)


class Fleet:
    """The shared simpy resources of one environment, and their busy capacity-seconds."""

    def __init__(self, env: Any, model: Model) -> None:
        from relsim.timeline._buckets import RateGate

        self.env = env
        self.model = model
        agents, llm = model.agents, model.llm_concurrency
        reviewers = model.reviewers if model.human else None
        self.agents = None if agents is None else Slots(env, agents)
        self.llm = None if llm is None else Slots(env, llm)
        self.reviewers = None if reviewers is None else Slots(env, reviewers)
        limited = model.rpm is not None or model.tpm is not None
        self.gate = RateGate(env, model.rpm, model.tpm) if limited else None
        self.busy = {"agents": 0.0, "llm": 0.0, "reviewers": 0.0}
        # Utilisation's window opens at ``window`` (the first arrival after the warm-up):
        # busy time before it is not counted. ``inner`` is the time agents were held by
        # trials waiting for a rate limit, an LLM slot or a reviewer (the bottleneck's rule).
        self.window = 0.0
        self.inner = 0.0

    def open_window(self, start: float) -> None:
        """Count busy time (and the buckets' takes) from ``start`` on."""
        self.window = start
        if self.gate is not None:
            self.gate.window = start

    def clipped(self, since: float, until: float) -> float:
        """Seconds of ``[since, until]`` inside the window."""
        start = since if since > self.window else self.window
        return until - start if until > start else 0.0


class Trial:
    """The state of one running trial that the deadline and crash callbacks need, and the
    per-trial tallies."""

    __slots__ = (
        "index", "arrival", "start", "process", "busy_until", "overdue", "stopping", "done",
        "log", "attempts", "cost", "wait_rate", "wait_llm", "wait_reviewers",
        "held_llm", "held_reviewers", "calls", "tokens", "mode",
    )

    def __init__(self, index: int, arrival: float, log: Callable[..., None] | None) -> None:
        self.index = index
        self.arrival = arrival
        self.start = arrival
        self.process = None
        self.busy_until = -math.inf  # end of the timed action in progress
        self.overdue = False  # the deadline fell exactly at the end of that action
        self.stopping = False
        self.done = False
        self.log = log
        self.attempts = 0
        self.cost = 0.0
        self.wait_rate = self.wait_llm = self.wait_reviewers = 0.0
        # what the trial asked of the shared resources: their offered load
        self.held_llm = self.held_reviewers = 0.0
        self.calls = 0
        self.tokens = 0.0
        self.mode = -1  # a silent failure's failure mode (docs/model.md section 8)


class _Stop(Exception):
    """Raised inside the trial when the deadline is due before its next wait."""


def run_trial(fleet: Fleet, trial: Trial, decide: Any, clock: Any, finish: Callable) -> Any:
    """The simpy process of one trial (it already holds its agent slot when there are agents).

    ``decide`` and ``clock`` are the trial's two ``random.Random`` streams; ``finish(trial,
    outcome)`` records it when the trial ends, however it ends. Section 8's loop runs in it
    (``model.run``, which returns the outcome); section 3's ends the trial itself (``_steps``).
    """
    import simpy

    env, model = fleet.env, fleet.model
    try:
        outcome = yield from model.run(fleet, model, env, trial, decide, clock)
    except simpy.Interrupt as stop:
        outcome = stop.cause
    except _Stop:
        outcome = TIMEOUT
    trial.done = True
    finish(trial, outcome)


def arm_stops(fleet: Fleet, trial: Trial, clock: Any) -> None:
    """Start the crash clock (from now, the agent slot's start) and the deadline (from
    arrival): each interrupts the trial if it has not ended by then."""
    env, model = fleet.env, fleet.model
    now = env.now
    due = None if model.deadline is None else max(0.0, trial.arrival + model.deadline - now)
    if model.crash_rate > 0.0:
        ring = clock.expovariate(model.crash_rate)
        # A ring after the deadline finds the trial ended (no trial's clock passes its
        # deadline: see _deadline), so it is not scheduled: one event and heap entry less
        # per trial. The times compared are the ones simpy would schedule; at a tie the
        # crash, scheduled first, would come first, so it stays.
        if due is None or now + ring <= now + due:
            env.timeout(ring).callbacks.append(lambda _e: _interrupt(trial, INFRA, env.now))
    if due is not None:
        env.timeout(due).callbacks.append(lambda _e: _deadline(trial, env.now))


def _interrupt(trial: Trial, cause: int, now: float) -> None:
    if trial.done or trial.stopping:
        return
    trial.stopping = True
    assert trial.process is not None  # a trial that runs has its process
    trial.process.interrupt(cause)


def _deadline(trial: Trial, now: float) -> None:
    if trial.done or trial.stopping:
        return
    if trial.busy_until == now:  # its timed action ends at this very instant: it may still end
        trial.overdue = True
        return
    _interrupt(trial, TIMEOUT, now)


def _wait(env: Any, trial: Trial, seconds: float) -> Any:
    """A timed action of ``seconds`` (nothing to wait for when it is 0)."""
    if trial.overdue:
        raise _Stop
    trial.busy_until = env.now + seconds
    return env.timeout(seconds)


def _rate_wait(fleet: Fleet, env: Any, trial: Trial, waiting: Any, step: int,
               attempt: int) -> Any:
    """Wait in the rate gate's queue for ``waiting`` (what ``RateGate.take`` returned); a
    trial stopped there leaves the queue."""
    gate = fleet.gate
    assert gate is not None  # only a rate-limited call waits here
    if trial.overdue:
        gate.cancel(waiting)
        raise _Stop
    since = env.now
    if trial.log:
        trial.log(trial, "request", step, attempt, "rate_limit", None)
    try:
        yield waiting
    except BaseException:
        gate.cancel(waiting)
        raise
    finally:
        trial.wait_rate += env.now - since
        fleet.inner += fleet.clipped(since, env.now)


def _llm_call(fleet: Fleet, env: Any, trial: Trial, step: int, attempt: int, kind: str,
              outcome: str, seconds: float, charge: float | None, count: int = 1,
              wait: Callable[[Any, Trial, float], Any] = _wait) -> Any:
    """One LLM call: rate budget (FIFO), then an LLM slot (FIFO) held for ``seconds``.

    ``charge`` (an attempt's cost) is booked with the attempt when the call starts, after
    the waits: a trial stopped while it queues has not made that attempt. ``count`` is the
    attempts the call books with it (0 for the second and later of parallel samples), and
    ``wait`` the timed action (one of parallel calls reports to its group).

    This runs at every LLM call, so it is :func:`_hold` written out for the ``"llm"`` pool
    (the same waits, tallies and log, in the same order: the same events): no closure per
    call, no tally looked up by name, no generator in between."""
    log = trial.log
    gate = fleet.gate
    if gate is not None:
        tokens = fleet.model.tokens[step - 1]
        trial.calls += 1
        trial.tokens += tokens
        waiting = gate.take(tokens)
        if waiting is not None:
            yield from _rate_wait(fleet, env, trial, waiting, step, attempt)
        if log:
            log(trial, "acquire", step, attempt, "rate_limit", None)

    pool = fleet.llm
    if pool is None:  # no LLM slots: the call is just its time
        if charge is not None:
            trial.attempts += count
            trial.cost += charge
        if log:
            log(trial, kind, step, attempt, "llm", outcome)
        if seconds > 0.0:
            yield wait(env, trial, seconds)
        return
    request = pool.take()
    since = env.now
    granted = None
    try:
        if request is not None:
            if trial.overdue:
                raise _Stop
            if log:
                log(trial, "request", step, attempt, "llm", None)
            yield request
            granted = env.now
        else:
            granted = since
        # summed left to right as _hold sums: the same bits as ever
        trial.wait_llm = trial.wait_llm + granted - since
        if log:
            log(trial, "acquire", step, attempt, "llm", None)
        if charge is not None:  # the call begins: book the attempt, log it, hold for its time
            trial.attempts += count
            trial.cost += charge
        if log:
            log(trial, kind, step, attempt, "llm", outcome)
        if seconds > 0.0:
            if wait is _wait:  # _wait, written out
                if trial.overdue:
                    raise _Stop
                trial.busy_until = granted + seconds
                yield env.timeout(seconds)
            else:
                yield wait(env, trial, seconds)
    finally:
        now = env.now
        if granted is None:
            trial.wait_llm = trial.wait_llm + now - since
            fleet.inner += fleet.clipped(since, now)
            pool.cancel(request)
        else:
            if granted != since:  # time queued (clipped to the window: 0 when none)
                fleet.inner += fleet.clipped(since, granted)
            fleet.busy["llm"] += fleet.clipped(granted, now)
            trial.held_llm = trial.held_llm + now - granted
            if log:
                log(trial, "release", step, attempt, "llm", None)
            pool.give()


def _review(fleet: Fleet, env: Any, trial: Trial, position: int, outcome: str, clock: Any) -> Any:
    """A human gate: wait for a free reviewer (FIFO), hold them for one review."""

    def start() -> float:
        if trial.log:
            trial.log(trial, "checkpoint", position, None, "reviewers", outcome)
        return _draw(fleet.model.review_time, clock)

    yield from _hold(fleet, env, trial, "reviewers", position, None, start)


# A pool's tallies on the trial (names built once, not per hold: this runs at every LLM call).
_TALLIES = {name: (f"wait_{name}", f"held_{name}") for name in ("llm", "reviewers")}


def _hold(fleet: Fleet, env: Any, trial: Trial, name: str, step: int, attempt: int | None,
          start: Any, wait: Callable[[Any, Trial, float], Any] = _wait) -> Any:
    """Wait FIFO for one unit of the pool ``name`` (``"llm"`` or ``"reviewers"``), then hold it
    for the seconds ``start()`` returns once granted; give it back whatever ends the hold.

    The time queued goes to ``trial.wait_<name>``, the time held to ``fleet.busy[name]``; a
    trial past its deadline leaves the queue without being served."""
    log = trial.log
    pool = getattr(fleet, name)
    waited, held = _TALLIES[name]
    request = pool.take()
    since = env.now
    granted = None
    try:
        if request is not None:
            if trial.overdue:
                raise _Stop
            if log:
                log(trial, "request", step, attempt, name, None)
            yield request
            granted = env.now
        else:
            granted = since
        setattr(trial, waited, getattr(trial, waited) + granted - since)
        if log:
            log(trial, "acquire", step, attempt, name, None)
        seconds = start()
        if seconds > 0.0:
            yield wait(env, trial, seconds)
    finally:
        if granted is None:
            setattr(trial, waited, getattr(trial, waited) + env.now - since)
            fleet.inner += fleet.clipped(since, env.now)
            pool.cancel(request)
        else:
            fleet.inner += fleet.clipped(since, granted)
            fleet.busy[name] += fleet.clipped(granted, env.now)
            setattr(trial, held, getattr(trial, held) + env.now - granted)
            if log:
                log(trial, "release", step, attempt, name, None)
            pool.give()


def _steps(fleet: Fleet, m: Model, env: Any, trial: Trial, decide: Any, clock: Any,
           finish: Callable[[Trial, int], None]) -> Any:
    """Section 3's loop, with the waits of section 7 between its draws: the simpy process of one
    trial, which ends it as :func:`run_trial` ends a trial of section 8's loop (written here,
    not wrapped: a wrapper's frame costs about 0.1 us at each of the trial's resumes).

    It runs at every attempt: the model's lists and flags are read into locals once per trial
    and :func:`_wait` is written out (the same draws in the same order, the same events)."""
    import simpy

    log = trial.log
    random, gauss = decide.random, decide.gauss
    timeout = env.timeout
    n = m.n
    p_of, fixed, logit = m.p, m.fixed, m.logit
    random_effects, task_sd, step_sd = m.random_effects, m.task_sd, m.step_sd
    confusion, factor, enter, recover = m.confusion, m.factor, m.enter, m.recover
    has_verifier, false_reject, miss = m.has_verifier, m.false_reject, m.miss
    attempt_time, attempt_cost, verify_time = m.attempt_time, m.attempt_cost, m.verify_time
    attempt_lognormal, uniform, log_, exp_ = m.attempt_lognormal, clock.random, math.log, math.exp
    per_step, total, backoff = m.per_step, m.total, m.backoff
    is_checkpoint = m.is_checkpoint
    z = gauss(0.0, 1.0) if task_sd > 0 else 0.0
    # with no step effect the shift is the trial's: a step's p depends on its logit only, so
    # the last one computed serves the steps that share its logit (the same expit, once)
    task_shift = task_sd * z + 0.0
    shifted_logit = shifted_p = math.nan
    confused = False
    i = seg_start = 0
    seg_tainted = doomed = False
    retries_used = rollbacks_used = 0
    llm_verify = m.verifier_calls_llm
    gate, pool, tokens_of = fleet.gate, fleet.llm, m.tokens
    busy, window = fleet.busy, fleet.window  # the window is open before any trial runs
    direct = gate is None and pool is None
    outcome = -1
    try:
        while True:
            if i == n:
                outcome = SILENT if (seg_tainted or doomed) else SUCCESS
                break
            p = p_of[i]
            if random_effects and not fixed[i]:
                if step_sd > 0:
                    shift = task_sd * z + step_sd * gauss(0.0, 1.0)
                    p = expit(logit[i] + shift)  # stable at any shift (task_sd in the hundreds)
                else:
                    if logit[i] != shifted_logit:  # (never equal to the first: nan)
                        shifted_logit = logit[i]
                        shifted_p = expit(shifted_logit + task_shift)
                    p = shifted_p
            elif random_effects and step_sd > 0:
                gauss(0.0, 1.0)  # section 3 draws u at every execution, even where p is fixed
            step = i + 1
            spec = attempt_time[i]
            lognormal = attempt_lognormal[i]
            if lognormal is not None:
                mu, sigma = lognormal
            cost = attempt_cost[i]
            if has_verifier:
                pass_right, pass_wrong = 1.0 - false_reject[i], miss[i]
            j = 0
            while True:
                pe = p * factor if confused else p
                correct = random() < pe
                if confusion:
                    if not correct and not confused:
                        confused = random() < enter
                    elif correct and confused:
                        confused = not (random() < recover)
                if has_verifier:
                    accepted = random() < (pass_right if correct else pass_wrong)
                else:
                    accepted = True
                # the attempt: always an LLM call (its cost, attempt + verify, booked as it starts)
                if lognormal is not None:
                    # clock.lognormvariate(mu, sigma) written out (CPython 3.11's Kinderman and
                    # Monahan loop, the same draws to the bit): three calls fewer an attempt
                    while True:
                        u1 = uniform()
                        u2 = 1.0 - uniform()
                        zk = NV_MAGICCONST * (u1 - 0.5) / u2
                        if zk * zk / 4.0 <= -log_(u2):
                            break
                    seconds = exp_(mu + zk * sigma)
                else:
                    seconds = spec if isinstance(spec, float) else spec(clock)
                # _llm_call written out (the same waits, tallies, log and events); with no rate
                # limit and no LLM slots the call is just its time. ``now``: the clock, read
                # once here and again only after a wait in a queue
                now = env.now
                if gate is not None:
                    tokens = tokens_of[i]
                    trial.calls += 1
                    trial.tokens += tokens
                    waiting = gate.take(tokens, now)
                    if waiting is not None:
                        yield from _rate_wait(fleet, env, trial, waiting, step, j + 1)
                        now = env.now
                    if log:
                        log(trial, "acquire", step, j + 1, "rate_limit", None)
                if pool is None:
                    trial.attempts += 1
                    trial.cost += cost
                    if log:
                        log(trial, "attempt", step, j + 1, "llm", "correct" if correct else "wrong")
                    if seconds > 0.0:
                        if trial.overdue:
                            raise _Stop
                        # resumed at this very float (simpy's clock is now + delay): the
                        # verification after it reads ``now`` instead of the clock
                        now = trial.busy_until = now + seconds
                        yield timeout(seconds)
                else:
                    if pool.free:  # pool.take(), written out for a free slot
                        pool.free -= 1
                        request = None
                    else:
                        request = pool.take()
                    since = now
                    granted = None
                    try:
                        if request is not None:
                            if trial.overdue:
                                raise _Stop
                            if log:
                                log(trial, "request", step, j + 1, "llm", None)
                            yield request
                            granted = env.now
                        else:
                            granted = since
                        # summed left to right as _hold sums: the same bits as ever
                        trial.wait_llm = trial.wait_llm + granted - since
                        trial.attempts += 1
                        trial.cost += cost
                        if log:
                            log(trial, "acquire", step, j + 1, "llm", None)
                            log(trial, "attempt", step, j + 1, "llm",
                                "correct" if correct else "wrong")
                        if seconds > 0.0:
                            if trial.overdue:
                                raise _Stop
                            trial.busy_until = granted + seconds
                            yield timeout(seconds)
                    finally:
                        now = env.now
                        if granted is None:
                            trial.wait_llm = trial.wait_llm + now - since
                            fleet.inner += fleet.clipped(since, now)
                            pool.cancel(request)
                        else:
                            if granted != since:
                                fleet.inner += fleet.clipped(since, granted)
                            if now > window:  # fleet.clipped(granted, now), written out
                                busy["llm"] += now - (granted if granted > window else window)
                            trial.held_llm = trial.held_llm + now - granted
                            if log:
                                log(trial, "release", step, j + 1, "llm", None)
                            if pool.queue:  # pool.give(), written out
                                pool.queue.popleft().succeed()
                            else:
                                pool.free += 1
                if has_verifier:
                    seconds = verify_time if isinstance(verify_time, float) else verify_time(clock)
                    if llm_verify and not direct:
                        verdict = "accept" if accepted else "reject"
                        yield from _llm_call(fleet, env, trial, step, j + 1, "verify", verdict,
                                             seconds, None)
                    else:
                        if log:
                            log(trial, "verify", step, j + 1, "llm" if llm_verify else None,
                                "accept" if accepted else "reject")
                        if seconds > 0.0:
                            if trial.overdue:
                                raise _Stop
                            trial.busy_until = now + seconds  # now: the call's end, just above
                            yield timeout(seconds)
                if accepted:
                    seg_tainted |= not correct
                    i += 1
                    break
                if j < per_step[i] and retries_used < total:
                    j += 1
                    retries_used += 1
                    if backoff is not None:
                        seconds = backoff_wait(backoff, j)  # the cap before the power
                        if backoff.jitter:
                            seconds *= clock.random()
                        if log:
                            log(trial, "backoff", step, j + 1, None, None)
                        if seconds > 0.0:
                            yield _wait(env, trial, seconds)
                    continue
                outcome = DETECTED  # the budget is spent
                break
            if outcome >= 0:
                break
            if is_checkpoint[i]:
                trial.cost += m.checkpoint_cost
                caught = random() < (m.detect if seg_tainted else m.false_alarm)
                verdict = "catch" if caught else "pass"
                if m.human:
                    yield from _review(fleet, env, trial, i, verdict, clock)
                else:
                    if log:
                        log(trial, "checkpoint", i, None, None, verdict)
                    seconds = _draw(m.checkpoint_time, clock)
                    if seconds > 0.0:
                        yield _wait(env, trial, seconds)
                if caught:
                    if rollbacks_used == m.rollbacks:
                        outcome = DETECTED
                        break
                    rollbacks_used += 1
                    trial.cost += m.rollback_cost
                    if log:
                        log(trial, "rollback", i, None, None, None)
                    i = seg_start
                    seg_tainted = False
                    confused = False
                    continue
                doomed |= seg_tainted
                seg_tainted = False
                seg_start = i
    except simpy.Interrupt as stop:  # the deadline or the crash clock (see _interrupt)
        assert isinstance(stop.cause, int)  # _interrupt's cause: an outcome code
        outcome = stop.cause
    except _Stop:
        outcome = TIMEOUT
    trial.done = True
    finish(trial, outcome)
