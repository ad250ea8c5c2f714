r"""The time and memory a timeline run will take, estimated before it starts.

Private; ``simulate_timeline`` refuses a run over ``relsim.limits`` with it, and
``relsim.timeline.work_estimate`` exposes it. Numpy only (no simpy).

A trial costs its bookkeeping, its attempts (section 3's draws and decisions) and its simpy
events; the attempts and step executions per trial are Monte Carlo's expectation
(``relsim.montecarlo._estimate.expected_work``, pessimistic), and the events follow from the
time tables: one per timed action (an attempt, a verification, a backoff, a checkpoint
check), one per hold of a shared slot (a slot found free is taken without an event, a busy
one is handed over with one: counted as if every hold waited), one per rate-limit wait, and
per trial its start, its end, its deadline, its crash clock, its arrival and its agent slot;
with ``[sampling]`` an attempt is ``n`` LLM calls (each a process of its own when something
is shared):

.. math::

    \text{time} \approx N\,(t_0 + t_1 A + t_2 E),\qquad
    \text{memory} \approx M_0 + N b_0 + L b_1 + K R b_2,

with :math:`A` attempts and :math:`E` events per trial, :math:`L` trials alive at once (a
chunk of ``CHUNK_TRIALS`` when trials share nothing, the agent slots with a fleet, every trial
when shared resources have no agent pool in front of them) and :math:`R` event-log rows per
recorded trial (:math:`K` recorded). The rates were measured on the calibration machine
(``benchmarks/limits_calibration.py``: two busy cores); the estimate is meant to be within a
few times the truth there, to refuse hours and hundreds of GiB, not to time a run.
"""

from __future__ import annotations

from typing import Any, Mapping

from relsim.limits import WorkEstimate
from relsim.scenario import Scenario, as_scenario, time_model, trial_model

__all__ = ["work_estimate"]

# Seconds per trial (process, streams, tally), per attempt (draws and decisions) and per simpy
# event (a timeout, a hand-over of a slot), on the calibration machine (two cores at load 3
# to 7: benchmarks/README.md; high by about 2x at the lighter load, low by up to 1.6x at 7).
# Scaled by 0.75 when issue 22 made the simpy path 1.3-1.6x faster on the calibration's
# cases (the same script, before and after, at load 0.8: the ratios to the measured time
# back where they were).
_SECONDS_PER_TRIAL = 112e-6
_SECONDS_PER_ATTEMPT = 1.7e-6
_SECONDS_PER_EVENT = 11e-6
# Seconds per trial and per attempt on the compiled path (relsim.timeline._fast: independent
# trials), one thread of the calibration machine, drawing every duration (lognormal).
_KERNEL_SECONDS_PER_TRIAL = 0.2e-6
_KERNEL_SECONDS_PER_ATTEMPT = 0.1e-6
# The same on the vectorised lane (relsim.timeline._lanes: run_simple's chains), measured on
# one thread at load 1 (0.21 us a trial on R1 with lognormal attempts, 0.07 us with constant
# ones, 0.6 us on 100 steps of about 101 lognormal attempts) and set about 3x above, as the
# one-by-one kernel's are: a lognormal attempt draws its factor, a constant one only counts.
_LANE_SECONDS_PER_TRIAL = 0.1e-6
_LANE_SECONDS_PER_ATTEMPT = {True: 0.02e-6, False: 0.004e-6}  # {lognormal attempts: ...}
# Bytes per trial on the compiled path: the tally (33) and, at the end, the estimates' copies
# of its columns (the sorted durations, the successes as floats, centred costs).
_KERNEL_BYTES_PER_TRIAL = 80
#: Independent trials take the compiled path when simpy would take at least this long by
#: the estimate (a rule on the scenario and the trials, never on the machine): a shorter run
#: stays on simpy, since numba's start (its import and the kernel's load from its cache, a
#: second or two) would cost it more than the kernel saves.
COMPILED_FROM_SECONDS = 2.0
# Bytes: the per-trial tally (outcome, attempts, cost, duration), a trial alive in simpy (its
# process, generator and pending events), a row of the event log (the tuple, its DataFrame
# row, its JSON line), and what a run holds whatever its size (simpy, pandas).
_BYTES_PER_TRIAL = 32
_BYTES_PER_LIVE_TRIAL = 10 * 2**10
_BYTES_PER_EVENT_ROW = 400
_FIXED_BYTES = 200 * 2**20


def compiled(scenario: Scenario | Mapping[str, Any], trials: int, record: int = 0) -> bool:
    """Whether ``simulate_timeline(scenario, trials, record=record)`` takes the compiled
    path: independent trials without section 8's tables or an event log
    (``relsim.timeline._fast.applies``) that simpy would take at least
    :data:`COMPILED_FROM_SECONDS` to run, by the estimate."""
    return _plan(scenario, trials, record)[1]


def work_estimate(
    scenario: Scenario | Mapping[str, Any], trials: int, record: int = 0
) -> WorkEstimate:
    """Expected seconds and peak bytes of ``simulate_timeline(scenario, trials,
    record=record)`` (see the module docstring).

    Examples
    --------
    A thousand trials of a 25-step design take a moment; 10**12 do not fit anywhere:

    >>> from relsim.timeline import work_estimate
    >>> design = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
    ...           "retries": {"per_step": 2}, "timing": {"attempt": 8, "verify": 2}}
    >>> work_estimate(design, 1000).seconds < 5
    True
    >>> big = work_estimate(design, 10**12)
    >>> big.seconds > 86400, big.memory > 2**40
    (True, True)
    """
    return _plan(scenario, trials, record)[0]


def _plan(scenario: Scenario | Mapping[str, Any], trials: int,
          record: int) -> tuple[WorkEstimate, bool]:
    """:func:`work_estimate`'s answer, and whether the run takes the compiled path."""
    from relsim.montecarlo._estimate import expected_work
    from relsim.timeline._driver import CHUNK_TRIALS
    from relsim.timeline._fast import _LOGNORMAL, applies, duration_code, vectorised

    scenario = as_scenario(scenario)
    model, time = trial_model(scenario), time_model(scenario)
    attempts, executions = expected_work(model)
    retries = max(0.0, attempts - executions)

    # LLM calls per attempt: its samples and (a verifier that is an LLM) its verifications
    samples = model.samples
    verifications = int(model.has_verifier) * (1 if model.vote else samples)
    calls = samples + verifications * int(time.verifier_calls_llm)
    per_attempt = float(any(not d.is_zero for d in time.attempt))
    if model.has_verifier and not time.verify.is_zero:
        per_attempt += 1
    if time.llm_concurrency is not None:  # a hand-over (relsim.timeline._trial.Slots)
        per_attempt += calls
    if time.rpm is not None or time.tpm is not None:
        per_attempt += calls
    if samples > 1 and not time.independent:  # each parallel call is a process (start, end)
        per_attempt += 2 * calls + 2
    # start and end; the deadline, the crash clock, the arrival gap, the agent slot
    per_trial = 2.0 + (time.deadline is not None) + (time.crash_per_hour > 0) + time.poisson
    per_trial += time.agents is not None
    if time.backoff is not None:
        per_trial += retries
    if model.has_checkpoints:
        checks = len(model.checkpoint_positions) * executions / model.steps
        per_trial += checks * (2 if time.human else float(not time.checkpoint.is_zero))
    events = attempts * per_attempt + per_trial
    seconds = trials * (
        _SECONDS_PER_TRIAL + _SECONDS_PER_ATTEMPT * attempts * samples + _SECONDS_PER_EVENT * events
    )
    if applies(model, time, record) and seconds >= COMPILED_FROM_SECONDS:
        # the compiled path (relsim.timeline._fast): no simpy, no live trials
        if vectorised(model, time):  # every attempt takes the same duration there
            lognormal = duration_code(time.attempt[0])[0] == _LOGNORMAL
            kernel_seconds = trials * (_LANE_SECONDS_PER_TRIAL
                                       + _LANE_SECONDS_PER_ATTEMPT[lognormal] * attempts)
        else:
            kernel_seconds = trials * (_KERNEL_SECONDS_PER_TRIAL
                                       + _KERNEL_SECONDS_PER_ATTEMPT * attempts)
        kernel_memory = _FIXED_BYTES + trials * _KERNEL_BYTES_PER_TRIAL
        detail = f"about {attempts:,.0f} attempts per trial, {trials:,} trials, compiled"
        return WorkEstimate(seconds=float(kernel_seconds), memory=float(kernel_memory),
                            detail=detail), True

    if time.independent:
        live = min(trials, CHUNK_TRIALS)
    elif time.agents is not None:
        live = min(trials, time.agents)
    else:  # shared slots with no agent pool in front: every trial runs at once
        live = trials
    rows = 4 + attempts * (samples + verifications + (samples > 1)) + retries + events  # log rows per trial
    memory = (
        _FIXED_BYTES
        + trials * _BYTES_PER_TRIAL
        + live * _BYTES_PER_LIVE_TRIAL
        + record * rows * _BYTES_PER_EVENT_ROW
    )
    detail = f"about {attempts:,.0f} attempts and {events:,.0f} simpy events per trial, {trials:,} trials"
    if live == trials and trials > CHUNK_TRIALS:
        detail += " all alive at once (shared resources without fleet.agents)"
    if record:
        detail += f", {record:,} recorded"
    return WorkEstimate(seconds=float(seconds), memory=float(memory), detail=detail), False
