r"""The Monte Carlo kernels' draws: the generator, Bernoulli thresholds, the fast kernel's
per-execution tables and the ziggurat's normals.

Private; numba functions that ``_kernels.py`` inlines into its kernels. numba's cache is kept
per file: after editing this one, touch ``_kernels.py`` (or delete
``relsim/montecarlo/__pycache__``) so that the cached kernels are rebuilt with it.

How a draw works
----------------
A block's generator is ``GENERATOR_LANES`` (16) xoshiro256++ streams (Blackman and Vigna),
seeded by the driver from ``numpy.random.SeedSequence``. Every bit of xoshiro256++'s output
is good (the low bits of xoshiro256+, which it replaced, are weak), so each 64-bit output is
cut into two 32-bit uniforms. A Bernoulli(p) draw is ``u < T(p)`` on a 32-bit uniform ``u``
with the integer threshold :math:`T(p) = \lfloor p\,2^{32} + 1/2 \rfloor` (``threshold``):
:math:`P(u < T(p)) = T(p)/2^{32}` is ``p`` to within :math:`2^{-33}`, exactly 0 for
``p = 0`` and exactly 1 for ``p = 1``. So every probability a kernel draws with is resolved to
within :math:`2^{-32} \approx 2.3 \times 10^{-10}` (absolute), and structural zeros and
certainties (no verifier: never rejected; ``miss = 0``: never a wrong acceptance; ...) stay
exact. The thresholds are computed here and only here, from the probabilities the
``Design`` carries.

*The general kernel* draws from the first stream alone (``_next``), one output per attempt:
its top half draws the attempt's correctness and the verifier's verdict jointly from their
four-way distribution (correct and accepted, wrong and accepted, correct and rejected, wrong
and rejected: three cumulative thresholds, ``_four_way``), its bottom half the confusion
transition that may follow.

*The fast kernel* steps the 16 streams together (``_step_lanes``, which numba compiles into
vector instructions: about 0.5 ns an output against 1.3 ns for one stream alone on the
benchmark machine) and takes one 32-bit uniform per *step execution*: how many attempts an
execution takes and how it ends (accepted right, accepted wrong, out of retries) is drawn at
once by inverting a small table per step (``execution_table``).

Normals (the random effects) come from a 256-layer ziggurat (Marsaglia and Tsang), exact to
the resolution of its 52-bit uniforms: see ``_normal``. The general kernel shifts ``p`` by
them with ``_expit_select``, over an ``exp`` of its own (``_exp_nonpositive``, within 2 ulp
of libm's) that vectorizes where libm's is a call per value; ``run_v2`` and the other
engines' ``shift`` keep libm's ``_expit``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from relsim.montecarlo._layout import FULL32, GENERATOR_LANES, SCALE, SCALE32

_SHIFT_8 = np.uint64(8)
_SHIFT_9 = np.uint64(9)
_SHIFT_11 = np.uint64(11)
_SHIFT_17 = np.uint64(17)
_SHIFT_32 = np.uint64(32)
_ROT_45 = np.uint64(45)
_ROT_19 = np.uint64(19)
_ROT_23 = np.uint64(23)
_ROT_41 = np.uint64(41)
_ONE = np.uint64(1)
_LOW_8 = np.uint64(0xFF)
_LOW_32 = np.uint64(0xFFFFFFFF)
_LOW_52 = np.uint64((1 << 52) - 1)
_INV_SCALE = 1.0 / SCALE

#: Attempts one row of ``execution_table`` covers at most: an execution with a larger retry
#: budget draws a fresh uniform for each further chunk of attempts (the attempts are
#: independent, so the chunk after a rejected one has the same table).
EXECUTION_CHUNK = 32


@numba.njit(inline="always")
def _next(s0, s1, s2, s3):
    """One step of xoshiro256++: (output, new state)."""
    total = s0 + s3
    result = ((total << _ROT_23) | (total >> _ROT_41)) + s0
    t = s1 << _SHIFT_17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << _ROT_45) | (s3 >> _ROT_19)
    return result, s0, s1, s2, s3


@numba.njit(inline="always")
def _step_lanes(s0, s1, s2, s3, out, at):
    """One step of each of the ``GENERATOR_LANES`` streams (their four state words in the
    arrays ``s0..s3``, updated in place): the outputs go to ``out[at:at + GENERATOR_LANES]``.

    The streams are independent, so numba compiles the loop into vector instructions: a
    step of the 16 costs about what four scalar steps do.
    """
    for lane in range(GENERATOR_LANES):
        a = s0[lane]
        b = s1[lane]
        c = s2[lane]
        d = s3[lane]
        total = a + d
        out[at + lane] = ((total << _ROT_23) | (total >> _ROT_41)) + a
        t = b << _SHIFT_17
        c ^= a
        d ^= b
        b ^= c
        a ^= d
        c ^= t
        d = (d << _ROT_45) | (d >> _ROT_19)
        s0[lane] = a
        s1[lane] = b
        s2[lane] = c
        s3[lane] = d


@numba.njit(inline="always")
def _uniform32(s0, s1, s2, s3):
    """One 32-bit uniform from the first stream alone (the top half of one output)."""
    x, a, b, c, d = _next(s0[0], s1[0], s2[0], s3[0])
    s0[0] = a
    s1[0] = b
    s2[0] = c
    s3[0] = d
    return np.int64(x >> _SHIFT_32)


@numba.njit(inline="always")
def threshold(prob):
    """Integer threshold of a Bernoulli(prob) draw on a 32-bit uniform: ``u < threshold``
    has probability ``round(prob * 2**32) / 2**32`` (``prob`` in [0, 1]; truncation of a
    non-negative float is the floor)."""
    return np.int64(prob * SCALE32 + 0.5)


@numba.njit(inline="always")
def _four_way(pe, miss, false_reject):
    """Cumulative thresholds (t1, t2, t3) on [0, 2**32] of one attempt's joint outcome.

    ``u < t1``: correct and accepted; ``< t2``: wrong and accepted; ``< t3``: correct and
    rejected; else wrong and rejected. Probabilities that are exactly zero stay exactly zero.
    """
    correct_accepted = pe * (1.0 - false_reject)
    wrong_accepted = (1.0 - pe) * miss
    correct_rejected = pe * false_reject
    wrong_rejected = (1.0 - pe) * (1.0 - miss)
    full = np.int64(FULL32)
    t1 = threshold(correct_accepted)
    if wrong_accepted == 0.0:
        t2 = t1
    elif correct_rejected == 0.0 and wrong_rejected == 0.0:
        t2 = full
    else:
        t2 = min(max(threshold(correct_accepted + wrong_accepted), t1), full)
    if correct_rejected == 0.0:
        t3 = t2
    elif wrong_rejected == 0.0:
        t3 = full
    else:
        t3 = min(max(full - threshold(wrong_rejected), t2), full)
    return t1, t2, t3


@numba.njit(cache=True)
def four_way_table(pe, miss, false_reject):
    """``_four_way`` over arrays, shape ``(len(pe), 3)`` (for the tests)."""
    out = np.empty((pe.shape[0], 3), dtype=np.int64)
    for k in range(pe.shape[0]):
        t1, t2, t3 = _four_way(pe[k], miss[k], false_reject[k])
        out[k, 0] = t1
        out[k, 1] = t2
        out[k, 2] = t3
    return out


@intrinsic
def _bits_float(typingctx, bits):
    """The float64 whose IEEE-754 bits are the int64 ``bits`` (a bit cast)."""
    if bits != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """:math:`a b + c` rounded once (LLVM's ``fma``: an instruction on a CPU with FMA, and
    vectorized with the loop around it)."""
    if not (a == b == c == types.float64):
        return None

    def codegen(context, builder, signature, args):
        import llvmlite.ir  # type: ignore[import-untyped]  # (numba's code generator)

        double = args[0].type
        fma = builder.module.declare_intrinsic(
            "llvm.fma", [double], llvmlite.ir.FunctionType(double, [double] * 3)
        )
        return builder.call(fma, args)

    return types.float64(types.float64, types.float64, types.float64), codegen


_LOG2_E = 1.4426950408889634
_LN2_HIGH = 6.93147180369123816490e-01  # ln 2 to 32 bits: k * _LN2_HIGH is exact
_LN2_LOW = 1.90821492927058770002e-10  # the rest of ln 2
# 1/n! for n = 2 .. 13: the Taylor terms of e^r on |r| <= ln(2)/2 (the truncation error,
# r^14/14!, is below 5e-18 relative)
_C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12, _C13 = (
    1.0 / math.factorial(n) for n in range(2, 14)
)


@numba.njit(inline="always")
def _exp_nonpositive(y):
    r""":math:`e^y` for :math:`y \le 0` without a branch or a call, so that a loop of them
    runs in vector instructions (libm's ``exp`` is a call per value): :math:`y = k \ln 2 + r`
    with :math:`|r| \le \ln(2)/2` (Cody and Waite's two-part :math:`\ln 2`), :math:`e^r`
    by its Taylor polynomial to degree 13 (Horner's rule in fused multiply-adds), times
    :math:`2^k` built from its bits. Within 2 ulp of ``math.exp`` (the tests check it); below -708, where ``math.exp`` is subnormal or
    0, it is 0 (a threshold on :math:`2^{32}` does not tell them apart).
    """
    low = y < -708.0
    y = max(y, -708.0)
    k = np.floor(y * _LOG2_E + 0.5)
    r = (y - k * _LN2_HIGH) - k * _LN2_LOW
    term: float = _fma(_C13, r, _C12)  # type: ignore[call-arg]
    term = _fma(term, r, _C11)
    term = _fma(term, r, _C10)
    term = _fma(term, r, _C9)
    term = _fma(term, r, _C8)
    term = _fma(term, r, _C7)
    term = _fma(term, r, _C6)
    term = _fma(term, r, _C5)
    term = _fma(term, r, _C4)
    term = _fma(term, r, _C3)
    term = _fma(term, r, _C2)
    term = _fma(term, r, 1.0)
    poly = _fma(term, r, 1.0)
    value = poly * _bits_float((np.int64(k) + 1023) << 52)
    return 0.0 if low else value


@numba.njit(inline="always")
def _expit_select(x):
    """:math:`1 / (1 + e^{-x})` as ``_expit`` computes it, with ``_exp_nonpositive`` and a
    select instead of a branch: within a few ulp of ``_expit``, vectorizable."""
    e = _exp_nonpositive(-abs(x))
    numerator = 1.0 if x >= 0.0 else e
    return numerator / (1.0 + e)


@numba.njit(cache=True)
def expit_select_array(x):
    """``_expit_select`` over an array (for the tests)."""
    out = np.empty(x.shape[0])
    for k in range(x.shape[0]):
        out[k] = _expit_select(x[k])
    return out


@numba.njit(inline="always")
def _expit(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


_ZIG_R = 3.6541528853610088  # the base layer's edge
_ZIG_AREA = 0.004928673233974655  # each layer's area
_ZIG_INV_R = 1.0 / _ZIG_R


def _ziggurat_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The ziggurat of ``_normal``: 256 layers of equal area under :math:`f(x) = e^{-x^2/2}`.

    Layer ``i >= 1`` is the rectangle :math:`[0, x_i] \times [f(x_i), f(x_{i-1})]`, the edges
    going up from :math:`x_{255} = r` by :math:`f(x_{i-1}) = f(x_i) + v / x_i` to
    :math:`x_0 = 0`; layer 0 is the base, :math:`[0, r] \times [0, f(r)]` and the tail beyond
    ``r``, seen as a rectangle of width :math:`v / f(r)`. Each has area
    :math:`v = r f(r) + \int_r^\infty f`. ``r`` is numpy's; ``v`` was solved from it to 40
    digits (offline, with mpmath) so that the top layer's area, :math:`x_1 (1 - f(x_1))`, is
    ``v`` as well (to 1e-13 relative: the tests check it; numpy's 12-digit ``v`` misses by
    1e-9).

    Returns
    -------
    inner : (256,) int64
        :math:`\lfloor 2^{52} x_{i-1} / x_i \rfloor`: a 52-bit uniform below it lands under
        the curve for sure (layer 0: :math:`2^{52} r f(r) / v`).
    width : (256,) float64
        :math:`x_i / 2^{52}` (layer 0: :math:`v / (f(r)\, 2^{52})`).
    height : (256,) float64
        :math:`f(x_i)` (:math:`f(x_0) = 1`).
    """
    layers = 256
    r = _ZIG_R
    v = _ZIG_AREA
    scale = float(1 << 52)
    inner = np.zeros(layers, dtype=np.int64)
    width = np.zeros(layers)
    height = np.zeros(layers)
    base = v / math.exp(-0.5 * r * r)
    inner[0] = int(r / base * scale)
    width[0] = base / scale
    height[0] = 1.0
    x = r
    width[layers - 1] = x / scale
    height[layers - 1] = math.exp(-0.5 * x * x)
    for i in range(layers - 2, 0, -1):
        upper = math.sqrt(-2.0 * math.log(v / x + math.exp(-0.5 * x * x)))
        inner[i + 1] = int(upper / x * scale)
        x = upper
        width[i] = x / scale
        height[i] = math.exp(-0.5 * x * x)
    return inner, width, height


# numba freezes these global arrays into the compiled kernels as constants.
_ZIG_INNER, _ZIG_WIDTH, _ZIG_HEIGHT = _ziggurat_tables()


@numba.njit(inline="always")
def _normal(s0, s1, s2, s3):
    r"""One standard normal by the ziggurat (``_ziggurat_tables``): (value, new state).

    One 64-bit output gives the layer (its low 8 bits), the sign (bit 8) and a 52-bit
    uniform ``m`` (bits 9-60); the candidate :math:`x = \pm m\,x_i / 2^{52}` is returned at
    once when it lies under the curve for sure (``m`` below ``inner``: 98.5% of the draws;
    the sign is applied without a branch, which would be mispredicted half the time). The
    other 1.5% go to ``_normal_edge``: 1.02 outputs per normal in all, an ``exp`` one time in
    70 and a pair of ``log`` one time in 3,900.
    """
    x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
    layer = np.intp(x & _LOW_8)
    mantissa = np.int64((x >> _SHIFT_9) & _LOW_52)
    if mantissa < _ZIG_INNER[layer]:
        negative = np.int64((x >> _SHIFT_8) & _ONE)
        signed = (mantissa ^ -negative) + negative  # -mantissa when negative
        return signed * _ZIG_WIDTH[layer], s0, s1, s2, s3
    return _normal_edge(x, s0, s1, s2, s3)


@numba.njit(cache=True)
def _normal_edge(x, s0, s1, s2, s3):
    r"""The ziggurat's rare cases for the draw ``x`` (out of line: the fast path stays small).

    A point of a layer's wedge, :math:`x_{i-1} \le |x| < x_i`, is accepted when a uniform
    height in the layer, :math:`f(x_i) + U (f(x_{i-1}) - f(x_i))`, falls under
    :math:`e^{-x^2/2}`; the base layer's overflow is the tail beyond ``r``, drawn by
    Marsaglia's method (:math:`a = -\ln(U_1)/r`, accepted when :math:`-2\ln U_2 > a^2`:
    :math:`r + a`). A rejected point starts over with a fresh draw, so the result is exactly
    normal to the resolution of the uniforms (:math:`2^{-52}` of a layer's width): no table
    of normals is involved.
    """
    while True:
        layer = np.intp(x & _LOW_8)
        mantissa = np.int64((x >> _SHIFT_9) & _LOW_52)
        sign = -1.0 if (x >> _SHIFT_8) & _ONE else 1.0
        value = mantissa * _ZIG_WIDTH[layer]
        if mantissa < _ZIG_INNER[layer]:
            return sign * value, s0, s1, s2, s3
        if layer == 0:  # the tail beyond r
            while True:
                y, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                a = -math.log1p(-(np.int64(y >> _SHIFT_11) * _INV_SCALE)) * _ZIG_INV_R
                y, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
                b = -math.log1p(-(np.int64(y >> _SHIFT_11) * _INV_SCALE))
                if b + b > a * a:
                    return sign * (_ZIG_R + a), s0, s1, s2, s3
        else:  # the wedge
            y, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
            low = _ZIG_HEIGHT[layer]
            height = low + (_ZIG_HEIGHT[layer - 1] - low) * (np.int64(y >> _SHIFT_11) * _INV_SCALE)
            if height < math.exp(-0.5 * value * value):
                return sign * value, s0, s1, s2, s3
        x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)


@numba.njit(cache=True)
def execution_table(p, miss, false_reject, per_step, total_retries):
    r"""The fast kernel's inversion tables: how one execution of each step ends.

    At step ``i`` an attempt is accepted and correct with probability
    :math:`a_c = p(1 - f)`, accepted and wrong with :math:`a_w = (1 - p)\,m`, and rejected
    with :math:`q = p f + (1 - p)(1 - m)` (``m`` = miss, ``f`` = false_reject). The attempts
    of an execution are independent, so the first accepted one is attempt ``j`` with
    probability :math:`q^{j-1}(a_c + a_w)`, and in the order (attempt 1 correct) < (attempt 1
    wrong) < (attempt 2 correct) < ... the cumulative probabilities are

    .. math::

        P(\text{accepted at} \le j) = 1 - q^j, \qquad
        P(\text{accepted before } j \text{, or correct at } j) = 1 - q^j - q^{j-1} a_w.

    A 32-bit uniform ``u`` inverts them: with the thresholds
    :math:`A_j = 2^{32} - \operatorname{round}(2^{32} q^j)` (``accept_any``) and
    :math:`C_j = 2^{32} - \operatorname{round}(2^{32}(q^j + q^{j-1} a_w))`
    (``accept_correct``), the execution is accepted at the first ``j`` with :math:`u < A_j`,
    correct when :math:`u < C_j`; with ``r`` retries left and no such :math:`j \le r + 1` it
    is out of retries after :math:`r + 1` attempts, which has probability :math:`q^{r+1}`
    (the budget only cuts the scan short, so one row serves every budget). Each cumulative
    probability is within :math:`2^{-33}`, so each outcome's within :math:`2^{-32}`; exact
    zeros stay zeros (:math:`a_w = 0` gives :math:`C_j = A_j`; :math:`a_c = 0` gives
    :math:`C_j = A_{j-1}`; :math:`q = 0` gives :math:`A_1 = 2^{32}`; never accepted gives
    :math:`A_j = 0`).

    Step ``i``'s row has ``width[i] = min(cap + 1, EXECUTION_CHUNK)`` entries (``cap`` its
    retries, capped by the task-wide budget), fewer once :math:`A_j` reaches :math:`2^{32}`
    (every uniform is accepted by attempt ``j``); the rest of the row is :math:`2^{32}`.
    A longer execution takes a fresh uniform for each further chunk of attempts.

    Returns
    -------
    accept_correct, accept_any : (steps, columns) int64
        ``columns`` is the widest row.
    width : (steps,) int64
    """
    steps = p.shape[0]
    columns = 1
    for i in range(steps):
        columns = max(columns, min(min(per_step[i], total_retries) + 1, EXECUTION_CHUNK))
    top = np.int64(FULL32)
    accept_correct = np.empty((steps, columns), dtype=np.int64)
    accept_any = np.empty((steps, columns), dtype=np.int64)
    width = np.empty(steps, dtype=np.int64)
    for i in range(steps):
        for k in range(columns):  # (a loop: numba compiles np.full slowly)
            accept_correct[i, k] = top
            accept_any[i, k] = top
        correct_accepted = p[i] * (1.0 - false_reject[i])
        wrong_accepted = (1.0 - p[i]) * miss[i]
        rejected = min(p[i] * false_reject[i] + (1.0 - p[i]) * (1.0 - miss[i]), 1.0)
        if correct_accepted == 0.0 and wrong_accepted == 0.0:
            rejected = 1.0  # never accepted
        cap = min(min(per_step[i], total_retries) + 1, EXECUTION_CHUNK)
        before = 1.0  # q**(j-1): the chance that the first j - 1 attempts are all rejected
        previous_any = np.int64(0)
        k = 0
        while k < cap:
            after = before * rejected
            top_any = top - np.int64(after * SCALE32 + 0.5)
            if correct_accepted == 0.0:
                top_correct = previous_any
            elif wrong_accepted == 0.0:
                top_correct = top_any
            else:
                tail = min(after + before * wrong_accepted, 1.0)
                top_correct = min(max(top - np.int64(tail * SCALE32 + 0.5), previous_any),
                                  top_any)
            accept_correct[i, k] = top_correct
            accept_any[i, k] = top_any
            previous_any = top_any
            before = after
            k += 1
            if top_any == top:
                break  # every uniform is accepted by now
        width[i] = k
    return accept_correct, accept_any, width
