"""The simpy path's per-trial seeds, for a block of trials at once.

Trial ``k`` of a run on the seed sequence ``root`` draws from two ``random.Random`` streams
seeded with the two 128-bit halves of ``SeedSequence(root.entropy, spawn_key=(*root.spawn_key,
0, k)).generate_state(8)`` (:func:`relsim.timeline._driver._streams`). Building that
``SeedSequence`` and its state costs about 30 us a trial, a tenth of what a short trial costs.
numpy's ``SeedSequence`` is a fixed, documented hash (numpy keeps its streams stable across
versions): the trial index is the last word it mixes in, so everything before it is the same
for every trial of the run. :func:`trial_seeds` takes that common part from numpy (the pool of
``SeedSequence(entropy, spawn_key=(*spawn_key, 0))``) and mixes in each ``k`` with numpy array
arithmetic: the same words to the bit, about 0.1 us a trial. Each block is checked against
numpy's own ``SeedSequence`` on its first trial, and anything this does not cover (entropy
that is not integers, ``k >= 2**32``) returns None, for the caller to seed trial by trial.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

# numpy's SeedSequence constants (numpy/random/bit_generator.pyx, after Melissa O'Neill's
# seed_seq_fe): the entropy hash, the state hash, the mix and the shift.
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_MASK = 0xFFFFFFFF
_POOL = 4  # SeedSequence's default pool size, which every trial's sequence has


def _words(value: Any) -> int | None:
    """How many 32-bit words numpy turns ``value`` (an int or a sequence of ints) into."""
    if isinstance(value, numbers.Integral):
        return max(1, (int(value).bit_length() + 31) // 32)
    if isinstance(value, (list, tuple, np.ndarray)) and all(
            isinstance(v, numbers.Integral) for v in value):
        return sum(max(1, (int(v).bit_length() + 31) // 32) for v in value)
    return None


def trial_seeds(root: np.random.SeedSequence, first: int,
                count: int) -> list[tuple[int, int]] | None:
    """The two ``random.Random`` seeds of trials ``first .. first + count - 1`` (see the
    module's docstring), or None where this cannot compute them."""
    entropy, prefix = root.entropy, (*root.spawn_key, 0)
    run, spawn = _words(entropy), _words(prefix)
    if run is None or spawn is None or first + count > 1 << 32 or count <= 0:
        return None
    base = np.random.SeedSequence(entropy, spawn_key=prefix)
    # hashmix calls before k's: one per pool word, one per ordered pair of pool words, then
    # one per pool word for each word past the pool (the entropy is padded to the pool size)
    calls = _POOL + _POOL * (_POOL - 1) + _POOL * (max(run, _POOL) + spawn - _POOL)
    const = (_INIT_A * pow(_MULT_A, calls, 1 << 32)) & _MASK
    k = np.arange(first, first + count, dtype=np.uint64)
    mask, shift = np.uint64(_MASK), np.uint64(16)
    pool = []
    for word in base.pool.tolist():  # mix(pool word, hashmix(k)) into each pool word in turn
        value = k ^ np.uint64(const)
        const = (const * _MULT_A) & _MASK
        value = (value * np.uint64(const)) & mask
        value ^= value >> shift
        mixed = (np.uint64(_MIX_L * word) - np.uint64(_MIX_R) * value) & mask
        mixed ^= mixed >> shift
        pool.append(mixed)
    const = _INIT_B
    state = []
    for i in range(8):  # generate_state(8): the pool cycled through the state hash
        value = pool[i % _POOL] ^ np.uint64(const)
        const = (const * _MULT_B) & _MASK
        value = (value * np.uint64(const)) & mask
        value ^= value >> shift
        state.append(value)
    # each seed is four little-endian words, as int.from_bytes(words.tobytes(), "little")
    half = [(state[w] | (state[w + 1] << np.uint64(32))).tolist() for w in (0, 2, 4, 6)]
    seeds = [(a | (b << 64), c | (d << 64)) for a, b, c, d in zip(*half)]
    check = np.random.SeedSequence(entropy, spawn_key=(*prefix, first)).generate_state(8)
    expected = (int.from_bytes(check[:4].tobytes(), "little"),
                int.from_bytes(check[4:].tobytes(), "little"))
    return seeds if seeds[0] == expected else None
