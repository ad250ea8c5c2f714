"""The provider's rate limits: an rpm bucket and a tpm bucket behind one FIFO gate.

docs/model.md section 7: each LLM call takes 1 call from the rpm bucket and its tokens from
the tpm bucket, FIFO, waiting until both hold enough. A bucket holds at most one minute's
allowance, starts full and refills continuously at ``limit / 60`` per second, so its level at
time ``t`` after the last take at ``s`` is

.. math::

    L(t) = \\min\\bigl(C,\\; L(s) + (t - s)\\,C/60\\bigr), \\qquad C = \\text{rpm or tpm}.

The gate never wakes a waiting call more than once: one simpy timeout is armed, for the moment
the head of the queue will have enough in both buckets.
"""

from __future__ import annotations

from collections import deque
from typing import Any

# A take succeeds when the level is within this fraction of the capacity of what it needs:
# refilling for exactly (need - level) / rate seconds can land a rounding error short.
_SLACK = 1e-9


class _Bucket:
    __slots__ = ("capacity", "rate", "level", "slack", "one")

    def __init__(self, per_minute: float) -> None:
        self.capacity = float(per_minute)
        self.rate = self.capacity / 60.0
        self.level = self.capacity  # starts full: one minute's allowance
        self.slack = _SLACK * self.capacity
        self.one = 1.0 - self.slack  # the level one call needs


class RateGate:
    """A FIFO gate in front of an rpm bucket and/or a tpm bucket (either may be None).

    ``take(tokens, now=None)`` returns None when the call may start now (and takes its budget),
    else an event that succeeds when the call has taken its budget (``now``: ``env.now``, if
    the caller has it); ``cancel(event)`` withdraws a
    waiting call (a trial interrupted by its deadline or a crash).
    """

    def __init__(self, env: Any, rpm: float | None, tpm: float | None) -> None:
        self.env = env
        self.calls = None if rpm is None else _Bucket(rpm)
        self.tokens = None if tpm is None else _Bucket(tpm)
        self._buckets = tuple(b for b in (self.calls, self.tokens) if b is not None)
        self._last = env.now
        self._queue: deque = deque()  # entries [event, tokens, waiting]
        self._armed = 0  # id of the armed timer; a timer that is not the armed one is stale
        self._timers = 0
        # calls and tokens taken from ``window`` on: the buckets' utilisation
        self.window = 0.0
        self.spent_calls = 0
        self.spent_tokens = 0.0

    # ------------------------------------------------------------------ public
    def take(self, tokens: float, now: float | None = None) -> Any:
        # runs at every LLM call: _refill, _enough and _consume written out for the call that
        # finds no queue (the same arithmetic, so the same levels to the last bit); ``now``:
        # the clock, when the caller has just read it
        if now is None:
            now = self.env.now
        calls, tok = self.calls, self.tokens
        elapsed = now - self._last
        if elapsed > 0.0:
            self._last = now
            if calls is not None:
                level = calls.level + elapsed * calls.rate
                calls.level = level if level < calls.capacity else calls.capacity
            if tok is not None:
                level = tok.level + elapsed * tok.rate
                tok.level = level if level < tok.capacity else tok.capacity
        if not self._queue:
            if (calls is None or calls.level >= calls.one) and (
                    tok is None or tok.level >= tokens - tok.slack):
                if now >= self.window:
                    self.spent_calls += 1
                    self.spent_tokens += tokens
                if calls is not None:
                    level = calls.level - 1.0
                    calls.level = level if level > 0.0 else 0.0
                if tok is not None:
                    level = tok.level - tokens
                    tok.level = level if level > 0.0 else 0.0
                return None
        event = self.env.event()
        self._queue.append([event, tokens, True])
        if len(self._queue) == 1:
            self._arm()
        return event

    def cancel(self, event: Any) -> None:
        for entry in self._queue:
            if entry[0] is event:
                entry[2] = False
                break
        if self._queue and not self._queue[0][2]:  # the head left: the next may go now
            self._serve()

    # ------------------------------------------------------------------ internals
    def _refill(self) -> None:
        now = self.env.now
        elapsed = now - self._last
        if elapsed > 0.0:
            for b in self._buckets:
                b.level = min(b.capacity, b.level + elapsed * b.rate)
            self._last = now

    def _enough(self, tokens: float) -> bool:
        calls, tok = self.calls, self.tokens
        if calls is not None and calls.level < 1.0 - calls.slack:
            return False
        return tok is None or tok.level >= tokens - tok.slack

    def _consume(self, tokens: float) -> None:
        if self.env.now >= self.window:
            self.spent_calls += 1
            self.spent_tokens += tokens
        if self.calls is not None:
            self.calls.level = max(0.0, self.calls.level - 1.0)
        if self.tokens is not None:
            self.tokens.level = max(0.0, self.tokens.level - tokens)

    def _wait_for(self, tokens: float) -> float:
        wait = 0.0
        if self.calls is not None:
            wait = max(wait, (1.0 - self.calls.level) / self.calls.rate)
        if self.tokens is not None:
            wait = max(wait, (tokens - self.tokens.level) / self.tokens.rate)
        return wait

    def _serve(self, due: bool = False) -> None:
        """Serve the queue's head while it has enough. ``due``: the head's own timer fired, so
        it has enough by construction: at a late clock the timer can land a rounding error
        short, and a re-armed timer shorter than the clock's resolution would not move it."""
        self._refill()
        queue = self._queue
        while queue:
            event, tokens, waiting = queue[0]
            if not waiting:
                queue.popleft()
                due = False  # the timer was not armed for the call behind it
            elif due or self._enough(tokens):
                due = False
                queue.popleft()
                self._consume(tokens)
                event.succeed()
            else:
                break
        if queue:
            self._arm()

    def _arm(self) -> None:
        self._timers += 1
        timer_id = self._armed = self._timers
        timer = self.env.timeout(self._wait_for(self._queue[0][1]))
        timer.callbacks.append(lambda _event: self._on_timer(timer_id))

    def _on_timer(self, timer_id: int) -> None:
        if timer_id == self._armed:
            self._serve(due=True)
