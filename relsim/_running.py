"""What every stochastic engine needs to run: checks of counts and seeds, and the Ctrl-C flag.

Private, shared by the Monte Carlo engine (``relsim.montecarlo``) and the timeline engine
(``relsim.timeline``); the standard library and numpy only.
"""

from __future__ import annotations

import numbers
import signal
import threading
from typing import Any, cast

import numpy as np

from relsim.errors import invalid
from relsim import checks


def check_int(value: Any, name: str, low: int) -> int:
    """``value`` as an int, or a ``RelsimError`` unless it is an integer in
    ``low..checks.MAX_COUNT`` (a count past 2**62 is a typo, and would overflow the floats of
    the work estimates)."""
    value = checks.scalar(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) > checks.MAX_COUNT:
        return checks.integer(value, name, low, checks.MAX_COUNT)  # refused, naming the range
    return checks.integer(value, name, low)


def check_seed(seed: Any) -> tuple[np.random.SeedSequence, int | None]:
    """The seed sequence to draw from and the seed to report (``None``: fresh entropy, which
    is reported so that the run can be repeated)."""
    if seed is None:
        # fresh entropy is always one int (numpy draws 128 random bits)
        entropy = cast(int, np.random.SeedSequence().entropy)
        return np.random.SeedSequence(entropy), entropy
    seed = checks.scalar(seed)
    if isinstance(seed, np.random.SeedSequence):
        given = seed.entropy
        return seed, (int(given) if isinstance(given, numbers.Integral) else None)
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and int(seed) >= 0:
        return np.random.SeedSequence(int(seed)), int(seed)
    raise invalid("seed", "an integer >= 0, a numpy SeedSequence or None", seed)


class InterruptFlag:
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

    def __enter__(self) -> "InterruptFlag":
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
