"""One trial in time with section 8's tables: classes, a ladder, samples, failure modes, faults.

The loop of :func:`relsim.timeline._trial._steps` with docs/model.md section 8's changes, run
only when a scenario sets one of those tables (so a scenario without them keeps its old draws
and speed). Per trial the decision stream draws, in this order: the class (with classes),
the task effect; per step execution the step effect; per attempt the fault, then the samples
(each right or wrong, a wrong vote sample's answer among ``wrong_answers``; a tie's winner),
the verdicts (a wrong result's failure mode, then its acceptance; with ``select =
"verifier"`` every sample's, in order), then confusion; per checkpoint check its catch. The
time stream draws every sample's duration, then every verification's, as the attempt needs
them.

In time (docs/model.md section 8, "In time"): the ``n`` samples of an attempt are ``n``
parallel LLM calls (each takes an rpm unit, its tokens and an LLM slot) and the attempt lasts
as long as the slowest; with ``select = "verifier"`` the ``n`` verifications run in parallel
too; a faulted attempt takes its attempt time and no verification time; higher rungs use
rung 0's timing and tokens. With nothing shared the parallel calls are one wait of the
slowest call's time; with shared slots or rate limits each call is a simpy process of its own
(its waits are its own), and the attempt waits for all of them.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import simpy

from relsim.scenario import TimeModel, TrialModel
from relsim.scenario.compiled import expit
from relsim.scenario.time_tables import backoff_wait
from relsim.timeline._trial import (
    DETECTED,
    INFRA,
    SILENT,
    SUCCESS,
    TIMEOUT,
    Fleet,
    Model,
    Trial,
    _draw,
    _interrupt,
    _llm_call,
    _review,
    _Stop,
    _wait,
)


class DesignModel(Model):
    """:class:`~relsim.timeline._trial.Model` with what :func:`steps` reads of section 8's
    fields, as plain Python values (fast to index)."""

    def __init__(self, trial: TrialModel, time: TimeModel) -> None:
        super().__init__(trial, time)
        unit = trial.cost_unit
        self.class_cum = _cumulative(trial.class_weight)
        self.rung_after: list[int] = trial.rung_after.tolist()
        self.rung_p: list[list[list[float]]] = trial.rung_p.tolist()  # [class][rung][step]
        self.rung_logit: list[list[list[float]]] = trial.rung_logit_p.tolist()
        self.rung_fixed: list[list[list[bool]]] = trial.rung_p_fixed.tolist()
        self.rung_cost: list[list[float]] = (trial.rung_cost / unit).tolist()  # per sample
        self.verify_cost = trial.verify_cost / unit
        self.samples = trial.samples
        self.vote = trial.vote
        self.wrong_answers = trial.wrong_answers
        self.modes = trial.modes
        self.mode_cum = _cumulative(trial.mode_share) if trial.modes else []
        self.mode_miss: list[float] = trial.mode_miss.tolist()
        self.mode_detect: list[float] = trial.mode_detect.tolist()
        self.fault = trial.fault
        self.run = steps


def _cumulative(weights: Any) -> list[float]:
    """Cumulative weights, the last exactly 1 (a draw in [0, 1) always finds its class)."""
    total = 0.0
    out = []
    for w in weights.tolist():
        total += w
        out.append(total)
    out[-1] = 1.0
    return out


def _pick(cumulative: Sequence[float], u: float) -> int:
    """The index a uniform ``u`` falls in (linear: there are a handful of classes or modes)."""
    k = 0
    while u >= cumulative[k]:
        k += 1
    return k


# ------------------------------------------------------------------------------ decisions
def _meet(m: DesignModel, i: int, correct: bool, random: Any) -> tuple[bool, int]:
    """A result meets the verifier (or, without one, is accepted): whether it is accepted, and
    the failure mode a wrong one draws (-1 when right, or without modes)."""
    if correct:
        return (random() < 1.0 - m.false_reject[i]) if m.has_verifier else True, -1
    mode = _pick(m.mode_cum, random()) if m.modes else -1
    if not m.has_verifier:
        return True, mode
    return random() < (m.mode_miss[mode] if m.modes else m.miss[i]), mode


def _vote(m: DesignModel, pe: float, random: Any, labels: list[str]) -> bool:
    """A plurality vote over ``m.samples`` samples: whether the winner is the right answer.

    A wrong sample picks one of ``wrong_answers`` wrong answers (0: a wrong answer of its
    own); a tie is broken uniformly at random among the tied answers (a tie between wrong
    answers only needs no draw: the winner is wrong either way)."""
    answers = m.wrong_answers
    right = 0
    counts = [0] * answers
    for _ in range(m.samples):
        if random() < pe:
            right += 1
            labels.append("correct")
            continue
        labels.append("wrong")
        if answers > 1:
            counts[int(random() * answers)] += 1
        elif answers == 1:
            counts[0] += 1
        else:
            counts.append(1)
    top = max(counts) if counts else 0
    if right != top:
        return right > top
    return random() * (1 + counts.count(top)) < 1.0


def _decide(m: DesignModel, i: int, pe: float, random: Any, labels: list[str],
            verdicts: list[str]) -> tuple[bool, bool, int]:
    """One attempt that did not fault: whether its result is right, whether it is accepted,
    and the failure mode of an accepted wrong result (-1 otherwise). ``labels`` gets each
    sample's ``correct``/``wrong``, ``verdicts`` each verification's ``accept``/``reject``."""
    if m.samples == 1 or m.vote:
        if m.samples == 1:
            correct = random() < pe
            labels.append("correct" if correct else "wrong")
        else:
            correct = _vote(m, pe, random, labels)
        accepted, mode = _meet(m, i, correct, random)
        if m.has_verifier:
            verdicts.append("accept" if accepted else "reject")
        return correct, accepted, (mode if accepted else -1)
    # "verifier": every sample is checked; the first accepted one is the result
    result = first = None
    result_mode = -1
    for s in range(m.samples):
        right = random() < pe
        accepted, mode = _meet(m, i, right, random)
        labels.append("correct" if right else "wrong")
        verdicts.append("accept" if accepted else "reject")
        if s == 0:
            first = right
        if accepted and result is None:
            result, result_mode = right, mode
    if result is None:  # none accepted: confusion moves on the first sample
        return bool(first), False, -1
    return result, True, result_mode


def _rung_p(m: DesignModel, c: int, rung: int, i: int, x: float) -> float:
    """The p of class ``c`` on ``rung`` at step ``i``, shifted by the effects ``x``."""
    if m.random_effects and not m.rung_fixed[c][rung][i]:
        return expit(m.rung_logit[c][rung][i] + x)
    return m.rung_p[c][rung][i]


# ------------------------------------------------------------------------------ the loop
def steps(fleet: Fleet, m: DesignModel, env: Any, trial: Trial, decide: Any, clock: Any) -> Any:
    """Section 3's loop with section 8's changes, with the waits of section 7 between its draws."""
    log = trial.log
    random, gauss = decide.random, decide.gauss
    n, after = m.n, m.rung_after
    rungs = len(after)
    c = _pick(m.class_cum, random()) if len(m.class_cum) > 1 else 0  # before z
    z = gauss(0.0, 1.0) if m.task_sd > 0 else 0.0
    confused = False
    i = seg_start = 0
    seg_tainted = doomed = False
    seg_mode = doomed_mode = -1  # the mode of the segment's (the doomed) first accepted wrong result
    retries_used = rollbacks_used = 0
    direct = fleet.gate is None and fleet.llm is None
    while True:
        if i == n:
            if seg_tainted or doomed:
                trial.mode = doomed_mode if doomed else seg_mode
                return SILENT
            return SUCCESS
        x = 0.0
        if m.random_effects:  # u is drawn at every execution, as in section 3
            x = m.task_sd * z + (m.step_sd * gauss(0.0, 1.0) if m.step_sd > 0 else 0.0)
        step = i + 1
        j = rung = 0
        p = _rung_p(m, c, 0, i, x)
        while True:
            if rung < rungs and after[rung] <= j:
                while rung < rungs and after[rung] <= j:
                    rung += 1
                p = _rung_p(m, c, rung, i, x)
            pe = p * m.factor if confused else p
            labels: list[str] = []
            verdicts: list[str] = []
            faulted = m.fault > 0.0 and random() < m.fault
            if faulted:  # no answer, no verification: confusion stays
                correct = accepted = False
                mode = -1
            else:
                correct, accepted, mode = _decide(m, i, pe, random, labels, verdicts)
                if m.confusion:
                    if not correct and not confused:
                        confused = random() < m.enter
                    elif correct and confused:
                        confused = not (random() < m.recover)
            yield from _attempt(fleet, m, env, trial, clock, i, j, rung, faulted, labels, direct)
            if log and m.vote and m.samples > 1 and not faulted:
                log(trial, "vote", step, j + 1, None, "correct" if correct else "wrong")
            if verdicts:
                yield from _verify(fleet, m, env, trial, clock, step, j + 1, verdicts, direct)
            if accepted:
                if not correct and not seg_tainted:
                    seg_tainted = True
                    seg_mode = mode
                i += 1
                break
            if j < m.per_step[i] and retries_used < m.total:
                j += 1
                retries_used += 1
                backoff = m.backoff
                if backoff is not None:
                    seconds = backoff_wait(backoff, j)
                    if backoff.jitter:
                        seconds *= clock.random()
                    if log:
                        log(trial, "backoff", step, j + 1, None, None)
                    if seconds > 0.0:
                        yield _wait(env, trial, seconds)
                continue
            return INFRA if faulted else DETECTED  # a fault that spent the budget: the harness's
        if m.is_checkpoint[i]:
            trial.cost += m.checkpoint_cost
            if seg_tainted:
                chance = m.mode_detect[seg_mode] if m.modes else m.detect
            else:
                chance = m.false_alarm
            caught = random() < chance
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
                    return DETECTED
                rollbacks_used += 1
                trial.cost += m.rollback_cost
                if log:
                    log(trial, "rollback", i, None, None, None)
                i = seg_start
                seg_tainted = False
                seg_mode = -1
                confused = False
                continue
            if seg_tainted and not doomed:
                doomed = True
                doomed_mode = seg_mode
            seg_tainted = False
            seg_mode = -1
            seg_start = i


# ------------------------------------------------------------------------------ in time
def _attempt(fleet: Fleet, m: DesignModel, env: Any, trial: Trial, clock: Any, i: int, j: int,
             rung: int, faulted: bool, labels: list[str], direct: bool) -> Any:
    """The attempt's LLM calls: one, or ``samples`` in parallel; booked as each starts (its
    rung's cost, and the verification's unless it faulted)."""
    step, log = i + 1, trial.log
    cost = m.rung_cost[rung][i]
    verify = 0.0 if faulted else m.verify_cost
    spec = m.attempt_time[i]
    if m.samples == 1:
        outcome = "fault" if faulted else labels[0]
        seconds = _draw(spec, clock)
        if direct:
            trial.attempts += 1
            trial.cost += cost + verify
            if log:
                log(trial, "attempt", step, j + 1, "llm", outcome)
            if seconds > 0.0:
                yield _wait(env, trial, seconds)
        else:
            yield from _llm_call(fleet, env, trial, step, j + 1, "attempt", outcome, seconds,
                                 cost + verify)
        return
    count = m.samples
    outcomes = ["fault"] * count if faulted else labels
    durations = [_draw(spec, clock) for _ in range(count)]
    # a vote's one verification is charged with the first sample; "verifier" checks each
    charges = [cost + (verify if (s == 0 or not m.vote) else 0.0) for s in range(count)]
    if direct:
        trial.attempts += 1
        trial.cost += sum(charges)
        if log:
            for outcome in outcomes:
                log(trial, "sample", step, j + 1, "llm", outcome)
        longest = max(durations)
        if longest > 0.0:
            yield _wait(env, trial, longest)
    else:
        yield from _parallel(fleet, env, trial, step, j + 1, "sample", outcomes, durations, charges)


def _verify(fleet: Fleet, m: DesignModel, env: Any, trial: Trial, clock: Any, step: int,
            attempt: int, verdicts: list[str], direct: bool) -> Any:
    """The attempt's verifications (one, or one per sample in parallel): each takes
    ``timing.verify``, as an LLM call when the verifier is one and calls are shared."""
    log = trial.log
    llm = m.verifier_calls_llm and not direct
    durations = [_draw(m.verify_time, clock) for _ in verdicts]
    if llm and len(verdicts) == 1:
        yield from _llm_call(fleet, env, trial, step, attempt, "verify", verdicts[0], durations[0], None)
    elif llm:
        yield from _parallel(fleet, env, trial, step, attempt, "verify", verdicts, durations,
                             [None] * len(verdicts))
    else:
        if log:
            for verdict in verdicts:
                log(trial, "verify", step, attempt, "llm" if m.verifier_calls_llm else None, verdict)
        longest = max(durations)
        if longest > 0.0:
            yield _wait(env, trial, longest)


class _Group:
    """The parallel LLM calls of one attempt, as the deadline sees them: the trial's timed
    action ends at ``end`` only once every call still running holds its slot (before that it
    has no end, and a deadline interrupts it)."""

    __slots__ = ("trial", "alive", "holding", "end", "started", "cancelled")

    def __init__(self, trial: Trial, count: int) -> None:
        self.trial = trial
        self.alive = count
        self.holding = 0
        self.end = -math.inf
        self.started = [False] * count
        self.cancelled = False
        trial.busy_until = math.inf

    def hold(self, env: Any, trial: Trial, seconds: float) -> Any:
        """One call's timed hold (the ``wait`` of :func:`_llm_call`)."""
        if trial.overdue:
            raise _Stop
        self.holding += 1
        end = env.now + seconds
        if end > self.end:
            self.end = end
        self._sync()
        return env.timeout(seconds)

    def leave(self, held: bool) -> None:
        self.alive -= 1
        if held:
            self.holding -= 1
        self._sync()

    def _sync(self) -> None:
        self.trial.busy_until = self.end if self.holding == self.alive else math.inf


def _parallel(fleet: Fleet, env: Any, trial: Trial, step: int, attempt: int, kind: str,
              outcomes: list[str], durations: list[float], charges: Sequence[float | None]) -> Any:
    """``len(durations)`` LLM calls at once, each a process with its own waits; returns when
    the last ends. A stop (deadline, crash) interrupts the calls, which give back what they
    hold at once."""
    group = _Group(trial, len(durations))
    calls = [
        env.process(_call(fleet, env, trial, group, s, step, attempt, kind, outcomes[s],
                          durations[s], charges[s]))
        for s in range(len(durations))
    ]
    try:
        yield env.all_of(calls)
    except BaseException:
        group.cancelled = True  # a call not started yet returns at once
        for s, call in enumerate(calls):
            if group.started[s] and call.is_alive:
                call.interrupt()
        raise


def _call(fleet: Fleet, env: Any, trial: Trial, group: _Group, s: int, step: int, attempt: int,
          kind: str, outcome: str, seconds: float, charge: float | None) -> Any:
    """One of parallel calls: never fails (a stop is the trial's, told to it)."""
    if group.cancelled:
        return
    group.started[s] = True
    held = False

    def wait(env: Any, trial: Trial, seconds: float) -> Any:
        nonlocal held
        event = group.hold(env, trial, seconds)
        held = True
        return event

    try:
        yield from _llm_call(fleet, env, trial, step, attempt, kind, outcome, seconds, charge,
                             count=int(s == 0), wait=wait)
    except simpy.Interrupt:
        pass  # the trial stopped: _llm_call gave back what it held
    except _Stop:
        _interrupt(trial, TIMEOUT, env.now)  # the deadline passed as this call began
    finally:
        group.leave(held)
