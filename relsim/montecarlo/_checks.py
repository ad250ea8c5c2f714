"""``simulate``'s seeding, one stream per block of trials, and the cores it may use.

Private. Block ``b`` draws from its own stream, seeded by ``SeedSequence(seed,
spawn_key=(b,))`` (the ``b``-th child of ``SeedSequence(seed).spawn``), so the trials do not
depend on the number of threads or the chunk size.
"""

from __future__ import annotations

import os

import numpy as np

from relsim.montecarlo._layout import GENERATOR_LANES, STATE_WORDS


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def block_state(seed_sequence: np.random.SeedSequence, block: int) -> np.ndarray:
    """The state of a block's generator (``GENERATOR_LANES`` xoshiro256++ streams, word
    ``w`` of stream ``l`` at ``[w * GENERATOR_LANES + l]``), from the block-th child of
    ``seed_sequence.spawn``."""
    child = np.random.SeedSequence(
        seed_sequence.entropy,
        spawn_key=(*seed_sequence.spawn_key, block),
        pool_size=seed_sequence.pool_size,
    )
    state = child.generate_state(STATE_WORDS, np.uint64)
    by_stream = state.reshape(4, GENERATOR_LANES)
    stuck = ~by_stream.any(axis=0)  # the one state xoshiro cannot leave (chance 2**-256)
    by_stream[0, stuck] = 1
    return state
