"""``simulate``'s argument checks and its seeding: one stream per block of trials.

Private. Block ``b`` draws from its own stream, seeded by ``SeedSequence(seed,
spawn_key=(b,))`` (the ``b``-th child of ``SeedSequence(seed).spawn``), so the trials do not
depend on the number of threads or the chunk size.
"""

from __future__ import annotations

import numbers
import os
from typing import Any

import numpy as np

from relsim.errors import invalid


def check_int(value: Any, name: str, low: int) -> int:
    """``value`` as an int, or a ``RelsimError`` unless it is an integer ``>= low``."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low:
        return int(value)
    raise invalid(name, f"an integer >= {low}", value)


def check_seed(seed: Any) -> tuple[np.random.SeedSequence, int | None]:
    """The seed sequence to draw from and the seed to report (``None``: fresh entropy, which
    is reported so that the run can be repeated)."""
    if seed is None:
        entropy = np.random.SeedSequence().entropy
        return np.random.SeedSequence(entropy), int(entropy)
    if isinstance(seed, np.random.SeedSequence):
        entropy = seed.entropy
        return seed, (int(entropy) if isinstance(entropy, numbers.Integral) else None)
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0:
        return np.random.SeedSequence(int(seed)), int(seed)
    raise invalid("seed", "an integer >= 0, a numpy SeedSequence or None", seed)


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def block_state(seed_sequence: np.random.SeedSequence, block: int) -> np.ndarray:
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
