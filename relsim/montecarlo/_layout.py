"""What the Monte Carlo kernels and their driver agree on: constants, array columns, and the
kernels' argument lists.

Private, and free of numba, so that the driver and the compiled-kernel cache (``_native.py``)
can use it without importing the compiler.
"""

from __future__ import annotations

import numpy as np

# One uniform is the top 53 bits of a 64-bit output; thresholds live on [0, 2**53].
SCALE = 9007199254740992.0  # 2**53
FULL = np.uint64(9007199254740992)

# Log-linear histogram (HDR-style) for per-trial cost and attempts: bin 0 holds exact zeros,
# bin 1 everything below the window, then OCTAVES octaves of 2**SUB_BITS equal bins each,
# the top octave ending at the largest value a trial can reach. Integers below
# 2**(SUB_BITS + 1) get a bin of their own. A value's bin is read off its IEEE-754 bits:
# (bits >> (52 - SUB_BITS)) is its biased exponent followed by its top SUB_BITS mantissa bits.
SUB_BITS = 10
SUB_BINS = 1 << SUB_BITS
OCTAVES = 48
HIST_BINS = 2 + OCTAVES * SUB_BINS

# Columns of the per-block integer sums and float sums.
I_TRIALS, I_SUCCESS, I_SILENT, I_DETECTED, I_ATTEMPTS = range(5)
N_INT_SUMS = 5
F_ATTEMPTS_SQ, F_COST, F_COST_SQ, F_COST_SUCCESS = range(4)
N_FLOAT_SUMS = 4

# Outcome codes (also the record's "outcome" column).
SUCCESS, SILENT_FAILURE, DETECTED_FAILURE = 0, 1, 2

# Columns of the integer record of a trial (the cost is recorded separately, as a float).
R_OUTCOME, R_ATTEMPTS, R_RETRIES, R_ROLLBACKS, R_FIRST_WRONG, R_CAUGHT_AT, R_STOPPED_AT = range(7)
N_RECORD = 7


def histogram_offset(top_exponent: int) -> int:
    """The ``bits >> (52 - SUB_BITS)`` of the window's lowest bin, minus 2 (bins 0 and 1 are
    zero and underflow); the window's top octave is ``[2**(top-1), 2**top)``."""
    lowest_biased_exponent = top_exponent + 1022 - OCTAVES + 1
    return (lowest_biased_exponent << SUB_BITS) - 2


# The kernels' parameters, in order: (name, numpy dtype, number of dimensions; 0 for a
# scalar). Arrays are C-contiguous. The compiled-kernel cache builds its C interface from
# these lists, and a test holds them to the kernels' signatures.
KERNEL_ARGS = {
    "run_simple": (
        ("seeds", "u8", 2),
        ("block_trials", "i8", 1),
        ("fixed_thresholds", "u8", 3),
        ("per_step", "i8", 1),
        ("total_retries", "i8", 0),
        ("unit_cost", "f8", 0),
        ("counts_by_attempts", "i8", 2),
        ("record", "i8", 2),
        ("record_cost", "f8", 1),
    ),
    "run_general": (
        ("seeds", "u8", 2),
        ("block_trials", "i8", 1),
        ("fixed_thresholds", "u8", 3),
        ("per_step", "i8", 1),
        ("total_retries", "i8", 0),
        ("logit_p", "f8", 1),
        ("p_is_fixed", "?", 1),
        ("p", "f8", 1),
        ("miss", "f8", 1),
        ("false_reject", "f8", 1),
        ("attempt_cost", "f8", 1),
        ("is_checkpoint", "?", 1),
        ("detect_threshold", "u8", 0),
        ("false_alarm_threshold", "u8", 0),
        ("rollbacks", "i8", 0),
        ("checkpoint_cost", "f8", 0),
        ("rollback_cost", "f8", 0),
        ("has_confusion", "?", 0),
        ("enter_threshold", "u8", 0),
        ("recover_threshold", "u8", 0),
        ("factor", "f8", 0),
        ("task_sd", "f8", 0),
        ("step_sd", "f8", 0),
        ("attempts_shift", "f8", 0),
        ("cost_shift", "f8", 0),
        ("int_sums", "i8", 2),
        ("float_sums", "f8", 2),
        ("cost_offset", "i8", 0),
        ("cost_counts", "i8", 1),
        ("cost_lows", "f8", 1),
        ("cost_highs", "f8", 1),
        ("attempts_offset", "i8", 0),
        ("attempts_counts", "i8", 1),
        ("attempts_lows", "f8", 1),
        ("attempts_highs", "f8", 1),
        ("record", "i8", 2),
        ("record_cost", "f8", 1),
    ),
}
