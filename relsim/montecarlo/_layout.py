"""What the Monte Carlo kernels and their driver agree on: the draw's scale, the outcome
codes and the histogram's geometry, and the containers the kernels read and fill.

Private, and free of numba, so that ``import relsim.montecarlo`` stays light. The kernels take
their inputs and outputs as ``typing.NamedTuple`` objects of arrays and scalars (numba passes a
named tuple as one argument and reads its fields by name), defined here.

numba's cache is keyed on each kernel's own file: after changing a constant the kernels use
(``SCALE``, ``SCALE32``, ``FULL32``, the outcome codes, ``GENERATOR_LANES``), delete
``relsim/montecarlo/__pycache__`` or touch ``_kernels.py`` and ``_draws.py``. The histogram's
geometry reaches the kernels through their arguments, so it is free to change.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# A Bernoulli draw compares a 32-bit uniform (half of a 64-bit output) with a threshold on
# [0, 2**32]; the ziggurat's and the tail's uniforms are 52 or 53 bits.
SCALE32 = 4294967296.0  # 2**32
FULL32 = np.int64(4294967296)
SCALE = 9007199254740992.0  # 2**53

# Outcome codes (also the order of the trajectories' "outcome" categories). Only the kernel
# of section 8's tables (``_kernel_v2``) ends a trial as an infrastructure failure.
SUCCESS, SILENT_FAILURE, DETECTED_FAILURE, INFRA_FAILURE = 0, 1, 2, 3
OUTCOME_NAMES = ("success", "silent_failure", "detected_failure", "infra_failure")

# Log-linear histogram (HDR-style) for per-trial cost and attempts: bin 0 holds exact zeros,
# bin 1 everything below the window, then OCTAVES octaves of 2**SUB_BITS equal bins each,
# the top octave ending at the largest value a trial can reach. Integers below
# 2**(SUB_BITS + 1) get a bin of their own. A value's bin is read off its IEEE-754 bits:
# (bits >> (52 - SUB_BITS)) is its biased exponent followed by its top SUB_BITS mantissa bits.
SUB_BITS = 10
SUB_BINS = 1 << SUB_BITS
OCTAVES = 48
HIST_BINS = 2 + OCTAVES * SUB_BINS
MANTISSA_DROP = 52 - SUB_BITS


def histogram_offset(top_exponent: int) -> int:
    """The ``bits >> (52 - SUB_BITS)`` of the window's lowest bin, minus 2 (bins 0 and 1 are
    zero and underflow); the window's top octave is ``[2**(top-1), 2**top)``."""
    lowest_biased_exponent = top_exponent + 1022 - OCTAVES + 1
    return (lowest_biased_exponent << SUB_BITS) - 2


class Design(NamedTuple):
    """A scenario as the kernels read it (docs/model.md section 3); built by ``_inputs``.

    Arrays are C-contiguous and writable (so that one compiled kernel serves every scenario).
    The probabilities are given as they are; the kernels turn them into integer thresholds.
    """

    p: np.ndarray  # (steps,) float64
    logit_p: np.ndarray  # (steps,) float64; 0 where p is exactly 0 or 1
    p_is_fixed: np.ndarray  # (steps,) bool: p is exactly 0 or 1, which shift() leaves alone
    miss: np.ndarray  # (steps,) float64; 1 without a verifier
    false_reject: np.ndarray  # (steps,) float64
    per_step: np.ndarray  # (steps,) int64
    total_retries: int  # a huge number when there is no task-wide cap
    attempt_cost: np.ndarray  # (steps,) float64: attempt[i] + verify
    unit_cost: float  # attempt_cost[0] (the simple kernel: every attempt costs the same)
    is_checkpoint: np.ndarray  # (steps + 1,) bool, indexed by the number of steps done
    detect: float
    false_alarm: float
    rollbacks: int
    checkpoint_cost: float
    rollback_cost: float
    has_confusion: bool
    enter: float
    recover: float
    factor: float  # 1 without confusion
    task_sd: float
    step_sd: float
    attempts_shift: float  # subtracted before squaring (numerical stability)
    cost_shift: float
    attempts_offset: int  # histogram_offset of the attempts histogram
    cost_offset: int  # histogram_offset of the cost histogram
    mantissa_drop: int  # MANTISSA_DROP


class Tables(NamedTuple):
    """docs/model.md section 8's tables as ``_kernel_v2`` reads them (besides a ``Design``);
    built by ``_inputs`` from the compiled model. ``C`` classes, ``K`` rungs above rung 0,
    ``M`` failure modes; costs in the model's cost unit."""

    class_cumulative: np.ndarray  # (C,) float64: cumulative class weights, the last 1
    rung_after: np.ndarray  # (K,) int64: rung k + 1 from attempt rung_after[k] (0-based) on
    rung_p: np.ndarray  # (C, K + 1, steps) float64
    rung_logit_p: np.ndarray  # (C, K + 1, steps) float64; 0 where fixed
    rung_p_fixed: np.ndarray  # (C, K + 1, steps) bool
    rung_cost: np.ndarray  # (K + 1, steps) float64: one sample's attempt cost
    verify_cost: float  # one verification
    samples: int
    vote: bool  # a plurality vote over the samples (with samples > 1)
    wrong_answers: int  # 0: every wrong sample differs
    mode_cumulative: np.ndarray  # (M,) float64: cumulative P(mode | wrong and accepted)
    mode_detect: np.ndarray  # (M,) float64
    fault: float


#: xoshiro256++ streams in a block's generator (``_kernels``): the fast kernel steps them
#: together (numba vectorizes the step); the general kernel draws from the first alone.
GENERATOR_LANES = 16
#: Words of a block's generator state: four per stream.
STATE_WORDS = 4 * GENERATOR_LANES


class Streams(NamedTuple):
    """Where each block of a kernel call stands: its generator state and trials done, so
    that a block cut by a slice's end resumes its own stream in the next call."""

    state: np.ndarray  # (blocks, STATE_WORDS) uint64: word w of stream l at [w * 16 + l]
    done: np.ndarray  # (blocks,) int64: trials done

    @classmethod
    def start(cls, states: np.ndarray) -> "Streams":
        return cls(
            np.ascontiguousarray(states, dtype=np.uint64),
            np.zeros(states.shape[0], np.int64),
        )


class Histogram(NamedTuple):
    """A log-linear histogram: counts and the least/greatest value seen in each bin."""

    counts: np.ndarray  # (HIST_BINS,) int64
    lows: np.ndarray  # (HIST_BINS,) float64
    highs: np.ndarray  # (HIST_BINS,) float64

    @classmethod
    def empty(cls) -> "Histogram":
        bins = HIST_BINS
        return cls(np.zeros(bins, np.int64), np.full(bins, np.inf), np.full(bins, -np.inf))

    def merged(self, other: "Histogram") -> "Histogram":
        return Histogram(
            self.counts + other.counts,
            np.minimum(self.lows, other.lows),
            np.maximum(self.highs, other.highs),
        )

    def percentile(self, percent: int) -> float:
        """The inverted-CDF percentile: the ``ceil(percent/100 N)``-th smallest value, exact
        when its bin holds one distinct value or it is its bin's first or last."""
        total = int(self.counts.sum())
        rank = max(1, -(-percent * total // 100))
        cumulative = np.cumsum(self.counts)
        b = int(np.searchsorted(cumulative, rank))
        if rank == int(cumulative[b]):
            return float(self.highs[b])
        return float(self.lows[b])


class BlockSums(NamedTuple):
    """Per-block sums the general kernels fill, one entry per block of the call.

    The float sums are of values shifted by ``Design.attempts_shift`` / ``cost_shift``. The
    sums by outcome give the covariance of cost with each outcome, which the utility's
    standard error needs (the detected failures' is the rest); ``run_general`` leaves the
    infrastructure failures and the modes at zero (its scenarios have neither).
    """

    trials: np.ndarray  # int64
    success: np.ndarray  # int64
    silent_failure: np.ndarray  # int64
    detected_failure: np.ndarray  # int64
    attempts: np.ndarray  # int64
    attempts_sq: np.ndarray  # float64: sum of (attempts - shift)**2
    cost: np.ndarray  # float64: sum of (cost - shift)
    cost_sq: np.ndarray  # float64: sum of (cost - shift)**2
    cost_success: np.ndarray  # float64: sum of (cost - shift) over successes
    cost_silent: np.ndarray  # float64: ... over silent failures
    infra_failure: np.ndarray  # int64
    cost_infra: np.ndarray  # float64: ... over infrastructure failures
    silent_by_mode: np.ndarray  # (blocks, modes) int64: silent failures under each mode

    @classmethod
    def zeros(cls, blocks: int, modes: int = 0) -> "BlockSums":
        counts = ("trials", "success", "silent_failure", "detected_failure", "attempts",
                  "infra_failure")
        columns = {name: np.zeros(blocks, np.int64 if name in counts else np.float64)
                   for name in cls._fields[:-1]}
        return cls(**columns, silent_by_mode=np.zeros((blocks, modes), np.int64))


class Record(NamedTuple):
    """The recorded trials, one entry per trial (-1: none, in the optional columns)."""

    outcome: np.ndarray  # int64 outcome code
    attempts: np.ndarray  # int64
    cost: np.ndarray  # float64
    retries_used: np.ndarray  # int64
    rollbacks: np.ndarray  # int64
    first_wrong_step: np.ndarray  # int64
    caught_at: np.ndarray  # int64
    stopped_at: np.ndarray  # int64
    task_class: np.ndarray  # int64: the class drawn (``_kernel_v2`` only)
    failure_mode: np.ndarray  # int64: a silent failure's mode (``_kernel_v2`` only)

    @classmethod
    def empty(cls, rows: int) -> "Record":
        def column() -> np.ndarray:
            return np.full(rows, -1, dtype=np.int64)

        return cls(column(), column(), np.zeros(rows), column(), column(), column(), column(),
                   column(), column(), column())

    def rows(self, part: slice) -> "Record":
        """Views of the rows ``part`` (what a kernel call fills)."""
        return Record(*(column[part] for column in self))
