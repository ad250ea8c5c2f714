r"""Closed forms for the reliability of multi-step agents (docs/model.md section 2).

Every function is vectorised with numpy broadcasting: scalars in give a Python ``float`` out,
arrays in give a numpy array out. Bad input raises :class:`relsim.errors.RelsimError` (a
``ValueError``) naming the argument and its allowed range, as ``"p: must be a probability in
[0, 1], got 1.2"``. Only numpy is imported, so ``relsim solve`` starts fast.

Undefined answers follow one rule: a scalar answer that does not exist is ``None``; in arrays,
NaN. (:func:`min_retries` when the target is out of reach, :func:`max_miss` and :func:`min_p`
when no value works.) An answer that exists but is infinite stays ``inf``
(:func:`checkpoint_interval` at ``p = 1``: never checkpoint).

Notation (docs/model.md section 2): with ``m = miss`` and ``f = false_reject``, one verified
attempt is accepted and correct with :math:`a = p(1-f)`, accepted and wrong with
:math:`w = (1-p)m`, and rejected with :math:`q = pf + (1-p)(1-m)`; a step with ``r`` retries
makes on average

.. math:: S_r = \sum_{j=0}^{r} q^j = \frac{1 - q^{r+1}}{1 - q} \quad (= r + 1 \text{ when } q = 1)

attempts. Numerically ``1 - q`` is computed as ``a + w`` (no cancellation when ``q`` is near 1)
and ``1 - q^{r+1}`` with ``expm1``/``log1p`` when ``q > 1/2``.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np

from relsim.errors import RelsimError, invalid
from relsim import checks

__all__ = [
    "ChainOutcome",
    "StepOutcome",
    "chain_success",
    "checkpoint_interval",
    "compound",
    "confusion_chain",
    "latent_difficulty_chain",
    "logit_normal_chain",
    "max_miss",
    "meets_target",
    "min_p",
    "min_retries",
    "pass_at_k",
    "pass_at_k_estimate",
    "pass_hat_k",
    "pass_hat_k_estimate",
    "required_step_success",
    "retry_success",
    "shared_budget_success",
    "verified_ceiling",
    "verified_chain",
    "verified_step",
]


class StepOutcome(NamedTuple):
    """How one verified step with a retry budget ends (the first three sum to 1).

    Attributes
    ----------
    success : float or ndarray
        A correct attempt was accepted: :math:`a S_r`.
    silent_failure : float or ndarray
        A wrong attempt was accepted: :math:`w S_r`.
    exhausted : float or ndarray
        Every attempt was rejected and the budget ran out: :math:`q^{r+1}`.
    expected_attempts : float or ndarray
        The mean number of attempts made: :math:`S_r`.
    """

    success: Any
    silent_failure: Any
    exhausted: Any
    expected_attempts: Any


class ChainOutcome(NamedTuple):
    """How a chain of steps ends (the first three sum to 1), as in docs/model.md section 3.

    Attributes
    ----------
    success : float or ndarray
        Every step ended with an accepted correct result.
    silent_failure : float or ndarray
        The chain reached the end, but some accepted result is wrong.
    detected_failure : float or ndarray
        Some step ran out of retries (every attempt rejected): the failure is known.
    expected_attempts : float or ndarray
        The mean number of attempts over the whole chain.
    """

    success: Any
    silent_failure: Any
    detected_failure: Any
    expected_attempts: Any


# ------------------------------------------------------------------------- input checks
_MAX_COUNT = checks.MAX_COUNT
_ranged = checks.floats_in
_probability = checks.probabilities
_count = checks.integers
_positive = checks.positives
_nonnegative = checks.nonnegatives


def _target(value: Any, name: str = "target") -> np.ndarray:
    return checks.floats_in(value, name, "a number in (0, 1]", lambda x: (x > 0.0) & (x <= 1.0))


def _broadcast(**arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """``np.broadcast_arrays`` of the named arrays; shapes that do not broadcast raise a
    RelsimError naming the argument (numpy's own message names none)."""
    shape: tuple[int, ...] = ()
    names: list[str] = []
    for name, x in arrays.items():
        try:
            shape = np.broadcast_shapes(shape, np.shape(x))
        except ValueError:
            allowed = f"an array that broadcasts against {', '.join(names)} (shape {shape})"
            raise invalid(name, allowed, np.shape(x)) from None
        names.append(name)
    return np.broadcast_arrays(*arrays.values())


def _is_scalar(*values: Any) -> bool:
    return all(np.ndim(v) == 0 for v in values)


def _out(x: Any, scalar: bool) -> Any:
    return float(x) if scalar else np.asarray(x, dtype=float)


# ------------------------------------------------------------------------ the basic forms
def compound(p: Any, steps: Any) -> Any:
    r"""End-to-end success of ``steps`` independent steps that each succeed with ``p``.

    .. math:: P(\text{success}) = p^{n}

    Parameters
    ----------
    p : float or array_like
        Per-step success, in [0, 1].
    steps : int or array_like
        Number of steps ``n``, an integer >= 0 (``p**0 = 1``). Broadcasts against ``p``.

    Returns
    -------
    float or ndarray
        Accurate to a few ulps for ``p`` near 1 and ``n`` up to :math:`10^7` and beyond
        (one correctly rounded ``pow``, no repeated multiplication).

    Examples
    --------
    The lesson's compounding table, row ``p = 0.9``:

    >>> [round(x, 3) for x in compound(0.9, [5, 10, 20, 50]).tolist()]
    [0.59, 0.349, 0.122, 0.005]
    >>> round(compound(0.99, 50), 3)
    0.605
    """
    scalar = _is_scalar(p, steps)
    p = _probability(p, "p")
    steps = _count(steps, "steps", low=0)
    p, steps = _broadcast(p=p, steps=steps)
    return _out(np.power(p, steps), scalar)


def chain_success(ps: Any) -> Any:
    r"""End-to-end success of a heterogeneous chain: the product along the last axis.

    .. math:: P(\text{success}) = \prod_{i=1}^{n} p_i

    Parameters
    ----------
    ps : array_like
        Per-step successes in [0, 1]; the steps run along the last axis (a scalar is a chain of
        one step; an empty last axis gives 1).

    Returns
    -------
    float or ndarray
        A float for a single chain (``ps`` of dimension 0 or 1), else an array of the leading
        shape.

    Examples
    --------
    >>> round(chain_success([0.99, 0.9, 0.95]), 6)
    0.84645
    """
    ps = _probability(ps, "ps")
    if ps.ndim == 0:
        return float(ps)
    return _out(np.prod(ps, axis=-1), ps.ndim == 1)


def required_step_success(target: Any, steps: Any) -> Any:
    r"""The per-step success that ``steps`` independent steps need to reach ``target``.

    .. math:: p_{\text{step}} = T^{1/n}

    Parameters
    ----------
    target : float or array_like
        End-to-end success wanted, in (0, 1].
    steps : int or array_like
        Number of steps, an integer >= 1.

    Examples
    --------
    The lesson's 25-step task with a 95% target:

    >>> round(required_step_success(0.95, 25), 6)
    0.99795
    """
    scalar = _is_scalar(target, steps)
    target = _target(target)
    steps = _count(steps, "steps", low=1)
    target, steps = _broadcast(target=target, steps=steps)
    return _out(np.exp(np.log(target) / steps), scalar)


def _at_least_one(p: np.ndarray, tries: np.ndarray) -> np.ndarray:
    """``1 - (1-p)**tries`` without cancellation for small ``p`` (tries >= 1)."""
    with np.errstate(divide="ignore"):
        return -np.expm1(tries * np.log1p(-p))


def retry_success(p: Any, retries: Any) -> Any:
    r"""Per-step success with ``retries`` retries behind a perfect verifier.

    .. math:: P(\text{step succeeds}) = 1 - (1-p)^{r+1}

    Parameters
    ----------
    p : float or array_like
        Per-attempt success, in [0, 1].
    retries : int or array_like
        Retries ``r`` after the first attempt, an integer >= 0.

    Examples
    --------
    The lesson's ``p = 0.9`` with two retries:

    >>> round(retry_success(0.9, 2), 6)
    0.999
    """
    scalar = _is_scalar(p, retries)
    p = _probability(p, "p")
    retries = _count(retries, "retries", low=0)
    p, retries = _broadcast(p=p, retries=retries)
    return _out(_at_least_one(p, retries + 1.0), scalar)


def pass_at_k(p: Any, k: Any) -> Any:
    r"""pass@k: the probability that at least one of ``k`` independent trials succeeds.

    .. math:: \text{pass@}k = 1 - (1-p)^k

    Examples
    --------
    >>> round(pass_at_k(0.7, 3), 3)
    0.973
    """
    scalar = _is_scalar(p, k)
    p = _probability(p, "p")
    k = _count(k, "k", low=1)
    p, k = _broadcast(p=p, k=k)
    return _out(_at_least_one(p, k.astype(float)), scalar)


def pass_hat_k(p: Any, k: Any) -> Any:
    r"""pass^k: the probability that all of ``k`` independent trials succeed.

    .. math:: \text{pass}^k = p^k

    Examples
    --------
    >>> round(pass_hat_k(0.7, 3), 3)
    0.343
    """
    scalar = _is_scalar(p, k)
    p = _probability(p, "p")
    k = _count(k, "k", low=1)
    p, k = _broadcast(p=p, k=k)
    return _out(np.power(p, k), scalar)


# --------------------------------------------------------------------------- estimators
def _trials(n: Any, c: Any, k: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = _count(n, "n", low=1)
    c = _count(c, "c", low=0)
    k = _count(k, "k", low=1)
    n, c, k = _broadcast(n=n, c=c, k=k)
    if (c > n).any():
        bad = c > n
        raise RelsimError(
            f"c: must be an integer in [0, n] (successes among n trials), got c = "
            f"{c[bad].flat[0]} with n = {n[bad].flat[0]}"
        )
    if (k > n).any():
        bad = k > n
        raise RelsimError(
            f"k: must be an integer in [1, n] (an unbiased estimate needs n >= k trials), got "
            f"k = {k[bad].flat[0]} with n = {n[bad].flat[0]}"
        )
    return n, c, k


def _log_binomial_ratio(n: int, c: int, k: int) -> float:
    r"""``log(C(n-c, k) / C(n, k))`` from a product of ``min(c, k)`` factors.

    ``C(n-c,k)/C(n,k) = C(n-k,c)/C(n,c)``, so with ``m = min(c, k)``, ``M = max(c, k)`` the
    ratio is :math:`\prod_{i<m} (n-M-i)/(n-i)`. Each factor's log is taken without
    cancellation: ``log1p(-M/(n-i))`` when the factor is near 1, ``log((n-M-i)/(n-i))`` (exact
    integers over exact integers) when it is not; the pairwise sum adds ``O(log m)`` ulps, and
    nothing overflows. ``-inf`` when the ratio is 0 (``c + k > n``).
    """
    small, large = min(c, k), max(c, k)
    if small == 0:
        return 0.0
    if small + large > n:
        return -math.inf
    denominator = n - np.arange(small, dtype=float)
    share = large / denominator
    logs = np.where(
        share < 0.5,
        np.log1p(-np.minimum(share, 0.5)),
        np.log(np.maximum(denominator - large, 1.0) / denominator),
    )
    return float(np.sum(logs))


def pass_at_k_estimate(n: Any, c: Any, k: Any) -> Any:
    r"""The unbiased estimator of pass@k from ``c`` successes in ``n`` trials (Chen et al. 2021).

    .. math::
        \widehat{\text{pass@}k} = 1 - \frac{\binom{n-c}{k}}{\binom{n}{k}}
                                = 1 - \prod_{i=0}^{\min(c,k)-1}
                                  \left(1 - \frac{\max(c,k)}{n-i}\right)

    Its expectation over ``c ~ Binomial(n, p)`` is exactly ``1 - (1-p)**k``.

    Parameters
    ----------
    n : int or array_like
        Trials per task, an integer >= 1.
    c : int or array_like
        Successes among them, an integer in [0, n].
    k : int or array_like
        The ``k`` of pass@k, an integer in [1, n].

    Notes
    -----
    The product form has ``min(c, k)`` factors, each in [0, 1], multiplied in log space (each
    factor's log taken without cancellation), so it stays exact to about 1e-13 relative for
    ``n`` up to :math:`10^6` and beyond: no factorials, no overflow, and ``1 - ratio`` is taken
    as ``-expm1(log ratio)``.

    Examples
    --------
    >>> round(pass_at_k_estimate(5, 2, 3), 6)     # 1 - C(3,3)/C(5,3) = 1 - 1/10
    0.9
    """
    scalar = _is_scalar(n, c, k)
    n, c, k = _trials(n, c, k)
    out = np.empty(n.shape)
    for index in np.ndindex(n.shape):
        log_ratio = _log_binomial_ratio(int(n[index]), int(c[index]), int(k[index]))
        # 1 when c + k > n: every k-subset holds a success; + 0.0 turns -0.0 into 0.0
        out[index] = -math.expm1(log_ratio) + 0.0
    return _out(out, scalar)


def pass_hat_k_estimate(n: Any, c: Any, k: Any) -> Any:
    r"""The unbiased estimator of pass^k from ``c`` successes in ``n`` trials.

    .. math::
        \widehat{\text{pass}^k} = \frac{\binom{c}{k}}{\binom{n}{k}}
                                = \prod_{i=0}^{k-1} \frac{c-i}{n-i}

    Its expectation over ``c ~ Binomial(n, p)`` is exactly ``p**k``.

    Parameters
    ----------
    n, c, k : int or array_like
        As in :func:`pass_at_k_estimate`.

    Notes
    -----
    Computed as :func:`pass_at_k_estimate`'s ratio with ``c`` replaced by the failures
    ``n - c`` (``C(c,k)/C(n,k) = C(n-(n-c),k)/C(n,k)``): ``min(k, n-c)`` factors in log space,
    exact to about 1e-13 relative for ``n`` up to :math:`10^6`.

    Examples
    --------
    >>> round(pass_hat_k_estimate(5, 4, 3), 6)    # C(4,3)/C(5,3) = 4/10
    0.4
    """
    scalar = _is_scalar(n, c, k)
    n, c, k = _trials(n, c, k)
    out = np.empty(n.shape)
    for index in np.ndindex(n.shape):
        ni = int(n[index])
        out[index] = math.exp(_log_binomial_ratio(ni, ni - int(c[index]), int(k[index])))
    return _out(out, scalar)


# ---------------------------------------------------------------------- verified steps
class _Step(NamedTuple):
    """The pieces of one verified step, as float arrays (internal)."""

    accept_correct: np.ndarray  # a
    accept_wrong: np.ndarray  # w
    reject: np.ndarray  # q
    accept: np.ndarray  # a + w = 1 - q, without cancellation
    ceiling: np.ndarray  # a / (a + w), 0 when a + w = 0
    wrong_share: np.ndarray  # w / (a + w)
    reached: np.ndarray  # 1 - q**(r+1): some attempt was accepted
    exhausted: np.ndarray  # q**(r+1)
    attempts: np.ndarray  # S_r


def _verifier_rates(p, miss, false_reject):
    accept_correct = p * (1.0 - false_reject)
    accept_wrong = (1.0 - p) * miss
    reject = p * false_reject + (1.0 - p) * (1.0 - miss)
    accept = accept_correct + accept_wrong
    with np.errstate(divide="ignore", invalid="ignore"):
        ceiling = np.where(accept > 0, accept_correct / accept, 0.0)
        wrong_share = np.where(accept > 0, accept_wrong / accept, 0.0)
    return accept_correct, accept_wrong, reject, accept, ceiling, wrong_share


def _step(p, retries, miss, false_reject) -> _Step:
    """Every quantity of a verified step; inputs are validated float/int arrays."""
    a, w, q, accept, ceiling, wrong_share = _verifier_rates(p, miss, false_reject)
    tries = np.asarray(retries, dtype=float) + 1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        exhausted = np.power(q, tries)
        # 1 - q**(r+1): direct when q <= 1/2 (no cancellation), else via log1p(-(1-q)).
        reached = np.where(q <= 0.5, 1.0 - exhausted, -np.expm1(tries * np.log1p(-accept)))
        attempts = np.where(accept > 0, reached / accept, tries)
    attempts = np.clip(attempts, 1.0, tries)  # 1 <= S_r <= r + 1 also after rounding
    return _Step(a, w, q, accept, ceiling, wrong_share, reached, exhausted, attempts)


def _verifier_args(p, miss, false_reject):
    return (
        _probability(p, "p"),
        _probability(miss, "miss"),
        _probability(false_reject, "false_reject"),
    )


def verified_step(p: Any, retries: Any, miss: Any = 0.0, false_reject: Any = 0.0) -> StepOutcome:
    r"""How one step ends when a verifier checks each attempt and rejects trigger retries.

    With :math:`a = p(1-f)`, :math:`w = (1-p)m`, :math:`q = pf + (1-p)(1-m)` and
    :math:`S_r = \sum_{j=0}^{r} q^j`:

    .. math::
        \text{success} = a S_r, \quad \text{silent\_failure} = w S_r, \quad
        \text{exhausted} = q^{r+1}, \quad \text{expected\_attempts} = S_r


    Parameters
    ----------
    p : float or array_like
        Per-attempt success, in [0, 1].
    retries : int or array_like
        Retries ``r`` after the first attempt, an integer >= 0.
    miss : float or array_like, default 0
        P(accept | wrong attempt), in [0, 1]; 0 is a perfect verifier, 1 no verifier.
    false_reject : float or array_like, default 0
        P(reject | correct attempt), in [0, 1].

    Returns
    -------
    StepOutcome
        ``(success, silent_failure, exhausted, expected_attempts)``; the first three sum to 1.

    Notes
    -----
    Right at the edges: :math:`q = 0` gives :math:`S_r = 1`; :math:`q = 1` (nothing is ever
    accepted) gives :math:`S_r = r + 1` and ``exhausted = 1``. The success is computed as
    ``verified_ceiling * (1 - q**(r+1))``, so it never exceeds the ceiling in floating point.

    Examples
    --------
    >>> step = verified_step(0.9, 2)
    >>> round(step.success, 6), round(step.exhausted, 6), round(step.expected_attempts, 6)
    (0.999, 0.001, 1.11)
    >>> round(verified_step(0.9, 3, miss=0.1).success, 6)
    0.988946
    """
    scalar = _is_scalar(p, retries, miss, false_reject)
    p, miss, false_reject = _verifier_args(p, miss, false_reject)
    retries = _count(retries, "retries", low=0)
    p, retries, miss, false_reject = _broadcast(
        p=p, retries=retries, miss=miss, false_reject=false_reject
    )
    s = _step(p, retries, miss, false_reject)
    return StepOutcome(
        success=_out(s.ceiling * s.reached, scalar),
        silent_failure=_out(s.wrong_share * s.reached, scalar),
        exhausted=_out(np.broadcast_to(s.exhausted, np.shape(s.reached)), scalar),
        expected_attempts=_out(s.attempts, scalar),
    )


def verified_ceiling(p: Any, miss: Any = 0.0, false_reject: Any = 0.0) -> Any:
    r"""The most a verified step can succeed, however many retries it gets.

    .. math:: \lim_{r \to \infty} a S_r = \frac{a}{a + w} = \frac{p(1-f)}{p(1-f) + (1-p)m}

    When :math:`a + w = 0` no attempt is ever accepted and the ceiling is 0.

    Examples
    --------
    The lesson's verifier that misses 10% of failures, and the 25-step task it caps:

    >>> round(verified_ceiling(0.9, miss=0.1), 6)
    0.989011
    >>> round(compound(verified_ceiling(0.9, miss=0.1), 25), 6)
    0.758626
    """
    scalar = _is_scalar(p, miss, false_reject)
    p, miss, false_reject = _verifier_args(p, miss, false_reject)
    p, miss, false_reject = _broadcast(p=p, miss=miss, false_reject=false_reject)
    return _out(_verifier_rates(p, miss, false_reject)[4], scalar)


def _least_true(predicate: Callable[[int], bool], guess: int) -> int:
    """The least integer r >= 0 with ``predicate(r)``, for a monotone predicate that holds
    for all large r; starts at ``guess`` and gallops or bisects from there."""
    if predicate(guess):
        if guess == 0 or not predicate(guess - 1):
            return guess
        low, high = -1, guess - 1
    else:
        low, step = guess, 1
        while not predicate(guess + step):
            low, step = guess + step, step * 2
        high = guess + step
    while high - low > 1:  # predicate(low) is False (or low = -1), predicate(high) is True
        middle = (low + high) // 2
        if predicate(middle):
            high = middle
        else:
            low = middle
    return high


def _log_target(target: float) -> float:
    """``log(target)`` to full relative accuracy: ``log1p(-(1 - target))`` near 1, where
    ``1 - target`` is exact in double precision (Sterbenz) and ``log`` would lose it."""
    return math.log1p(-(1.0 - target)) if target > 0.5 else math.log(target)


def _log_step_success(s: _Step) -> float:
    """``log(ceiling * (1 - q**(r+1)))`` of one step, each factor's log from the form without
    cancellation (``log1p`` of the small complement)."""
    ceiling, wrong_share = float(s.ceiling), float(s.wrong_share)
    reached, exhausted = float(s.reached), float(s.exhausted)
    if ceiling == 0.0 or reached == 0.0:
        return -math.inf
    log_ceiling = math.log(ceiling) if ceiling < 0.5 else math.log1p(-wrong_share)
    log_reached = math.log(reached) if reached < 0.5 else math.log1p(-exhausted)
    return log_ceiling + log_reached


def meets_target(log_success: float, target: float) -> bool:
    r"""The one rule of every planner: a design meets ``target`` when its success is at least
    the target, compared through logarithms computed to full relative accuracy.

    .. math:: \log(\text{success}) \ge \log T

    with both sides from the failure probability where it is small (``log1p``), so a target
    within a few ulps of 1 (say ``1 - 2**-53``) is judged by the failure probability rather
    than by a success that rounds to 1. A target of 1 is met only by a design that cannot
    fail (log success exactly 0, which the planners also check structurally).

    Parameters
    ----------
    log_success : float
        The natural log of the design's success (``-inf`` for success 0).
    target : float
        The target, in (0, 1].

    Examples
    --------
    >>> meets_target(math.log(0.96), 0.95), meets_target(math.log1p(-2**-54), 1 - 2**-53)
    (True, True)
    >>> meets_target(math.log1p(-2**-52), 1 - 2**-53)
    False
    """
    return log_success >= _log_target(target)


def _min_retries_one(p: float, steps: int, target: float, miss: float, false_reject: float):
    log_goal = _log_target(target)

    def meets(r: int) -> bool:
        s = _step(np.float64(p), r, np.float64(miss), np.float64(false_reject))
        return steps * _log_step_success(s) >= log_goal

    rates = _verifier_rates(np.float64(p), np.float64(miss), np.float64(false_reject))
    _, _, q, accept, ceiling, wrong_share = (float(x) for x in rates)
    if ceiling == 0.0:
        return None
    log_ceiling = math.log(ceiling) if ceiling < 0.5 else math.log1p(-wrong_share)
    # success_r < ceiling for every finite r unless q == 0, so a target equal to the task
    # ceiling is reachable only in the limit: None (exactly as when the ceiling is below it).
    if steps * log_ceiling < log_goal or (steps * log_ceiling == log_goal and q > 0.0):
        return None
    if q == 0.0:
        return 0
    log_q = math.log1p(-accept) if q > 0.5 else math.log(q)
    # need q**(r+1) <= gap = 1 - T**(1/n) / ceiling, i.e. log(1 - gap) >= log_goal/n - log_ceiling
    log_gap_complement = log_goal / steps - log_ceiling  # <= 0
    gap = -math.expm1(log_gap_complement)
    if gap > 0.0:
        estimate = math.log(gap) / log_q
        if not math.isfinite(estimate):  # q within 1e-308 of 1: scale to stay finite
            return math.ceil(math.log(gap) / (log_q * 2.0**100)) * 2**100
        guess = max(0, math.ceil(estimate) - 1)
    else:  # float rounding at the ceiling: start where 1 - q**(r+1) rounds to 1
        guess = math.ceil(40.0 / -log_q)
    if guess > _MAX_COUNT:  # astronomically large: the closed form, to float precision
        return guess
    return _least_true(meets, guess)


def min_retries(
    p: Any, steps: Any, target: Any, miss: Any = 0.0, false_reject: Any = 0.0
) -> Any:
    r"""The least per-step retry budget that lets ``steps`` verified steps reach ``target``.

    The least integer :math:`r \ge 0` with

    .. math:: \bigl(a S_r\bigr)^n = \Bigl(\tfrac{a}{a+w}\bigl(1 - q^{r+1}\bigr)\Bigr)^n \ge T,
        \qquad\text{i.e.}\qquad
        r = \left\lceil \frac{\ln\bigl(1 - T^{1/n}(a+w)/a\bigr)}{\ln q} \right\rceil - 1 .


    Infeasible targets give ``None``: when the task ceiling :math:`(a/(a+w))^n` is below the
    target, and also when it *equals* the target while :math:`q > 0`, because then only the
    limit :math:`r \to \infty` reaches it. So a target of 1 is infeasible unless no attempt
    is ever rejected (:math:`q = 0`, e.g. ``p = 1`` with ``false_reject = 0``), where ``r = 0``
    reaches it.

    Parameters
    ----------
    p : float or array_like
        Per-attempt success, in [0, 1].
    steps : int or array_like
        Number of steps, an integer >= 1.
    target : float or array_like
        End-to-end success wanted, in (0, 1].
    miss, false_reject : float or array_like, default 0
        The verifier, as in :func:`verified_step`.

    Returns
    -------
    int or None, or ndarray of float
        Scalars in: an ``int``, or ``None`` when infeasible. Any array in: a float array with
        the budget where feasible and ``NaN`` where infeasible.

    Notes
    -----
    The closed form gives the starting point; the neighbours are then checked against the
    definition itself with the planners' one rule (:func:`meets_target`): ``steps *
    log(verified_step(p, r, miss, false_reject).success) >= log(target)``, each log taken
    from the failure probability where it is small, so a target a few ulps below 1 gets the
    budget exact arithmetic gives (``1 - 2**-53`` at ``p = 0.5`` over 25 steps needs 57
    retries, though 53 already make the success round to 1). The answer equals a
    brute-force scan over ``r`` with that rule. A budget above ``2**62`` (an agent that
    almost never succeeds, such as ``p = 1e-300``) is returned from the closed form, to float
    precision, without the scan.

    Examples
    --------
    The lesson's exercise: 25 steps, 95% end to end, ``p = 0.9``:

    >>> min_retries(0.9, 25, 0.95)
    2
    >>> min_retries(0.9, 25, 0.95, miss=0.1) is None   # ceiling 0.758626 < 0.95
    True
    """
    scalar = _is_scalar(p, steps, target, miss, false_reject)
    p, miss, false_reject = _verifier_args(p, miss, false_reject)
    steps = _count(steps, "steps", low=1)
    target = _target(target)
    p, steps, target, miss, false_reject = _broadcast(
        p=p, steps=steps, target=target, miss=miss, false_reject=false_reject
    )
    out = np.empty(p.shape)
    for index in np.ndindex(p.shape):
        r = _min_retries_one(
            float(p[index]),
            int(steps[index]),
            float(target[index]),
            float(miss[index]),
            float(false_reject[index]),
        )
        if scalar:
            return r
        out[index] = np.nan if r is None else r
    return out


def _none_or_float(out: np.ndarray, scalar: bool) -> Any:
    if scalar:
        value = float(out)
        return None if math.isnan(value) else value
    return out


def max_miss(p: Any, steps: Any, target: Any, false_reject: Any = 0.0) -> Any:
    r"""The largest verifier miss rate whose ceiling still allows ``target`` at this ``p``.

    The supremum of the ``miss`` values with :math:`(a/(a+w))^n \ge T`; solving
    :math:`a/(a+w) \ge T^{1/n}` for :math:`m`:

    .. math:: m^* = \min\Bigl(1, \frac{p(1-f)\,(1 - T^{1/n})}{T^{1/n}\,(1-p)}\Bigr)

    (1 when ``p = 1``). Any ``miss < m*`` reaches the target with enough retries (see
    :func:`min_retries`); at ``miss = m*`` only the limit of unlimited retries does.

    Returns
    -------
    float or None, or ndarray of float
        ``None`` (``NaN`` in arrays) when no miss rate works (``p = 0`` or ``false_reject = 1``).

    Examples
    --------
    The lesson's 25 steps at 95% with ``p = 0.9``: the verifier must miss under 1.85%.

    >>> round(max_miss(0.9, 25, 0.95), 6)
    0.018485
    """
    scalar = _is_scalar(p, steps, target, false_reject)
    p = _probability(p, "p")
    false_reject = _probability(false_reject, "false_reject")
    steps = _count(steps, "steps", low=1)
    target = _target(target)
    p, steps, target, false_reject = _broadcast(
        p=p, steps=steps, target=target, false_reject=false_reject
    )
    step_target = np.exp(np.log(target) / steps)
    accept_correct = p * (1.0 - false_reject)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = accept_correct * -np.expm1(np.log(target) / steps) / (step_target * (1.0 - p))
    out = np.where(p == 1.0, 1.0, np.minimum(bound, 1.0))
    out = np.where(accept_correct > 0, out, np.nan)
    return _none_or_float(out, scalar)


def min_p(steps: Any, target: Any, miss: Any = 0.0, false_reject: Any = 0.0) -> Any:
    r"""The least per-attempt success whose verifier ceiling still allows ``target``.

    The infimum of the ``p`` values with :math:`(a/(a+w))^n \ge T`; solving
    :math:`p(1-f)(1-t) \ge t(1-p)m` with :math:`t = T^{1/n}`:

    .. math:: p^* = \frac{t\,m}{(1-f)(1-t) + t\,m}

    Any ``p > p*`` reaches the target with enough retries; at ``p*`` only the limit does.

    Returns
    -------
    float or None, or ndarray of float
        ``None`` (``NaN`` in arrays) when no ``p`` works (``false_reject = 1`` rejects every
        correct attempt).

    Examples
    --------
    25 steps at 95% behind a verifier that misses 10%: the agent needs ``p`` above 0.98.

    >>> round(min_p(25, 0.95, miss=0.1), 6)
    0.979875
    """
    scalar = _is_scalar(steps, target, miss, false_reject)
    miss = _probability(miss, "miss")
    false_reject = _probability(false_reject, "false_reject")
    steps = _count(steps, "steps", low=1)
    target = _target(target)
    steps, target, miss, false_reject = _broadcast(
        steps=steps, target=target, miss=miss, false_reject=false_reject
    )
    step_target = np.exp(np.log(target) / steps)
    gap = -np.expm1(np.log(target) / steps)  # 1 - T**(1/n) without cancellation
    denominator = (1.0 - false_reject) * gap + step_target * miss
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(denominator > 0, step_target * miss / denominator, 0.0)
    out = np.where(false_reject < 1.0, out, np.nan)
    return _none_or_float(out, scalar)


_CHUNK = 1 << 16


def _shared_budget_one(a: float, q: float, ceiling: float, steps: int, budget: int) -> float:
    if a == 0.0:
        return 0.0
    if q == 0.0 or budget == 0:
        return a**steps
    # Sum t_j = C(n-1+j, j) q**j in log space, terms from the ratio recurrence
    # t_j / t_{j-1} = q (n-1+j) / j, chunk by chunk. The log terms reach the size of
    # n log(1/a), which cancels against n log a at the end, so they are summed in long
    # double (80-bit on x86-64: about 1e-16 relative; plain double elsewhere: about 1e-13).
    wide = np.longdouble
    log_q = np.log(wide(q))
    log_terms: list[np.ndarray] = [np.zeros(1, dtype=wide)]
    log_t = wide(0.0)
    peak = wide(0.0)
    start = 1
    while start <= budget:
        j = np.arange(start, min(budget, start + _CHUNK - 1) + 1, dtype=wide)
        chunk = log_t + np.cumsum(np.log1p(wide(steps - 1) / j) + log_q)
        log_terms.append(chunk)
        log_t = chunk[-1]
        peak = max(peak, chunk.max())
        last = float(j[-1])
        ratio = q * (steps + last) / (last + 1.0)  # t_{j+1} / t_j, falling towards q
        if ratio < 1.0 and float(log_t - peak) + math.log(ratio / (1.0 - ratio)) < -60.0:
            break  # the rest of the sum is below 1e-26 of its largest term
        start = int(last) + 1
    terms = np.concatenate(log_terms)
    log_sum = peak + np.log(np.sum(np.exp(terms - peak)))
    success = float(np.exp(wide(steps) * np.log(wide(a)) + log_sum))
    # a**n sum_j ... <= (a/(1-q))**n: keep the last-ulp rounding from crossing the ceiling
    return min(success, ceiling**steps)


def _shared_budget_terms(a: np.ndarray, q: np.ndarray, steps: np.ndarray, budget: np.ndarray) -> float:
    """About how many terms :func:`_shared_budget_one` sums, over every element: the
    rejections before ``n`` acceptances are negative binomial (mean ``nq/(1-q)``, sd
    ``sqrt(nq)/(1-q)``) and the sum stops about 15 sd past the mean, or at the budget."""
    with np.errstate(divide="ignore", invalid="ignore"):
        accept = 1.0 - q
        mean = steps * q / accept
        sd = np.sqrt(steps * q) / accept
        needed = np.where(accept > 0, mean + 15.0 * sd + _CHUNK, np.inf)
    needed = np.where((a == 0) | (q == 0) | (budget == 0), 0.0, needed)
    return float(np.sum(np.minimum(needed, budget.astype(float))))


def shared_budget_success(
    p: Any, steps: Any, budget: Any, miss: Any = 0.0, false_reject: Any = 0.0
) -> Any:
    r"""Success of ``steps`` verified steps sharing one task-wide retry budget (no per-step cap).

    The trial succeeds when ``n`` correct attempts are accepted, no wrong one is, and at most
    ``B`` attempts were rejected on the way; ``j`` rejections can fall in
    :math:`\binom{n-1+j}{j}` places (the last attempt is an accepted one):

    .. math:: P(\text{success}) = a^n \sum_{j=0}^{B} \binom{n-1+j}{j} q^j


    Parameters
    ----------
    p : float or array_like
        Per-attempt success, in [0, 1].
    steps : int or array_like
        Number of steps ``n``, an integer >= 1.
    budget : int or array_like
        Retries ``B`` for the whole task, an integer >= 0.
    miss, false_reject : float or array_like, default 0
        The verifier, as in :func:`verified_step`.

    Notes
    -----
    Summed in log space in long double (terms from the ratio recurrence, so no factorials),
    and stopped once the remaining terms are below 1e-26 of the largest, so a huge budget costs
    little. The work is estimated first (about :math:`nq/(1-q) + 15\sqrt{nq}/(1-q)` terms, or
    ``B`` if fewer); beyond 5e7 terms in all (``steps`` and ``budget`` near 1e9) it raises a
    ``RelsimError`` rather than run for minutes. Relative error about 1e-16 on x86-64 (about 1e-13 for ``n`` in the thousands where
    long double is plain double).

    Examples
    --------
    Two steps, ``p = 0.9``, a perfect verifier and one retry to share:
    :math:`0.81 (1 + 2 \cdot 0.1)`.

    >>> round(shared_budget_success(0.9, 2, 1), 6)
    0.972
    """
    scalar = _is_scalar(p, steps, budget, miss, false_reject)
    p, miss, false_reject = _verifier_args(p, miss, false_reject)
    steps = _count(steps, "steps", low=1)
    budget = _count(budget, "budget", low=0)
    _broadcast(p=p, steps=steps, budget=budget, miss=miss, false_reject=false_reject)
    a, _, q, _, ceiling, _ = _verifier_rates(p, miss, false_reject)
    a, q, ceiling, steps, budget = np.broadcast_arrays(a, q, ceiling, steps, budget)
    terms = _shared_budget_terms(a, q, steps, budget)
    if terms > _MAX_TERMS:
        raise invalid(
            "budget",
            f"small enough for a sum of at most {_MAX_TERMS:,} terms (these steps and "
            f"budgets need about {terms:.3g}; a minute's work or more)",
            int(budget.max()),
        )
    out = np.empty(a.shape)
    for index in np.ndindex(a.shape):
        out[index] = _shared_budget_one(
            float(a[index]),
            float(q[index]),
            float(ceiling[index]),
            int(steps[index]),
            int(budget[index]),
        )
    return _out(out, scalar)


# ------------------------------------------------------------------------------ chains
def verified_chain(
    p: Any, retries: Any, miss: Any = 0.0, false_reject: Any = 0.0
) -> ChainOutcome:
    r"""A heterogeneous chain of verified steps, each with its own per-step retry budget.

    Step ``i`` has its own :math:`p_i, r_i, m_i, f_i` (the last axis; scalars broadcast to
    every step). With :math:`D_i = 1 - q_i^{r_i+1}` (step ``i`` accepts something) and
    :math:`c_i = a_i/(a_i + w_i)` (what it accepts is correct):

    .. math::
        \text{success} = \prod_i a_i S_i = \prod_i c_i D_i, \qquad
        \text{reach\_end} = \prod_i D_i,

        \text{silent\_failure} = \text{reach\_end} - \text{success}, \qquad
        \text{detected\_failure} = 1 - \text{reach\_end},

        E[\text{attempts}] = \sum_i \Bigl(\prod_{j<i} D_j\Bigr) S_i .

    This is exactly the scenario with these per-step ``p``, a verifier, ``retries.per_step``
    and no total budget, checkpoints or correlation; without a verifier use ``miss = 1``,
    ``retries = 0``.

    Parameters
    ----------
    p : array_like
        Per-attempt success of each step, in [0, 1], steps along the last axis.
    retries : int or array_like
        Retries per execution of each step, integers >= 0.
    miss, false_reject : float or array_like, default 0
        The verifier of each step, as in :func:`verified_step`.

    Returns
    -------
    ChainOutcome
        ``(success, silent_failure, detected_failure, expected_attempts)``: floats for one
        chain, arrays of the leading shape for a batch of chains.

    Notes
    -----
    Differences are taken in log space (``expm1``), so a tiny silent or detected failure
    keeps its relative accuracy.

    Examples
    --------
    Reference value R2 (docs/model.md section 5): 25 steps, ``p = 0.9``, a verifier missing
    10%, 3 retries per step:

    >>> out = verified_chain([0.9] * 25, 3, miss=0.1)
    >>> [round(x, 6) for x in out]
    [0.757383, 0.240978, 0.001639, 27.449108]
    """
    p, miss, false_reject = _verifier_args(p, miss, false_reject)
    retries = _count(retries, "retries", low=0)
    p, retries, miss, false_reject = _broadcast(
        p=p, retries=retries, miss=miss, false_reject=false_reject
    )
    if p.ndim == 0:
        p, retries, miss, false_reject = (x.reshape(1) for x in (p, retries, miss, false_reject))
    s = _step(p, retries, miss, false_reject)
    with np.errstate(divide="ignore", invalid="ignore"):
        # log P(step accepts something) and log P(what it accepts is correct), each from the
        # form without cancellation.
        log_reach = np.where(s.reached < 0.5, np.log(s.reached), np.log1p(-s.exhausted))
        log_ceiling = np.where(s.ceiling < 0.5, np.log(s.ceiling), np.log1p(-s.wrong_share))
    log_reach_end = np.sum(log_reach, axis=-1)
    log_all_correct = np.sum(np.where(s.reached > 0, log_ceiling, 0.0), axis=-1)
    reach_end = np.exp(log_reach_end)
    # The success itself as a plain product: exp(log x) would cost |log x| ulps of relative
    # accuracy (6e-14 for x near 1e-249), and a product of factors <= 1 cannot underflow early.
    success = np.prod(np.where(s.reached > 0, s.reached * s.ceiling, 0.0), axis=-1)
    silent = reach_end * -np.expm1(log_all_correct) + 0.0  # + 0.0: no -0.0
    detected = -np.expm1(log_reach_end) + 0.0
    reach_before = np.concatenate(
        [np.ones(p.shape[:-1] + (1,)), np.cumprod(s.reached, axis=-1)[..., :-1]], axis=-1
    )
    attempts = np.sum(reach_before * s.attempts, axis=-1)
    scalar = p.ndim == 1
    return ChainOutcome(
        _out(success, scalar),
        _out(silent, scalar),
        _out(detected, scalar),
        _out(attempts, scalar),
    )


def latent_difficulty_chain(alpha: Any, beta: Any, steps: Any) -> Any:
    r"""Success of ``steps`` steps sharing one latent per-trial success :math:`p \sim
    \mathrm{Beta}(\alpha, \beta)` (the beta-binomial chain).

    .. math::
        E\bigl[p^n\bigr] = \prod_{j=0}^{n-1} \frac{\alpha + j}{\alpha + \beta + j}

    It shows how a hard-for-everyone task (one difficulty drawn per trial, shared by every
    step) beats :math:`\bar p^{\,n}`. It matches **no relsim scenario exactly**: relsim's task
    effect is logit-normal (``correlation.task_sd``), not Beta; for that scenario use
    :func:`logit_normal_chain`. A Beta with the same mean and variance as the logit-normal
    gives a close, not equal, value.

    Parameters
    ----------
    alpha, beta : float or array_like
        The Beta parameters, finite numbers > 0 (mean :math:`\alpha/(\alpha+\beta)`).
    steps : int or array_like
        Number of steps ``n``, an integer in 0..10**8 (one factor each: about a second).

    Examples
    --------
    Mean 0.9 with a little spread, against :math:`0.9^{10} = 0.3487`:

    >>> round(latent_difficulty_chain(9.0, 1.0, 10), 6)     # 9/19
    0.473684
    """
    scalar = _is_scalar(alpha, beta, steps)
    alpha = _positive(alpha, "alpha")
    beta = _positive(beta, "beta")
    steps = _count(steps, "steps", low=0, high=_MAX_PRODUCT_STEPS)
    alpha, beta, steps = _broadcast(alpha=alpha, beta=beta, steps=steps)
    if int(steps.sum(dtype=float)) > _MAX_PRODUCT_STEPS:
        raise invalid(
            "steps", f"at most {_MAX_PRODUCT_STEPS:,} summed over the array (the product's "
            "factors)", int(steps.sum(dtype=float)),
        )
    out = np.empty(alpha.shape)
    for index in np.ndindex(alpha.shape):
        total = alpha[index] + beta[index]
        log_sum = 0.0
        for start in range(0, int(steps[index]), _CHUNK * 16):  # bounded memory
            j = np.arange(start, min(int(steps[index]), start + _CHUNK * 16), dtype=float)
            log_sum += float(np.sum(np.log1p(-beta[index] / (total + j))))
        out[index] = math.exp(log_sum)
    return _out(out, scalar)


#: logit_normal_chain: the largest task_sd (the trapezoid rule then takes 96,001 nodes) ...
_MAX_TASK_SD = checks.MAX_SD
#: ... and the most Gauss-Hermite nodes (numpy's hermegauss takes about 0.3 s for 1000, and
#: overflows beyond a few thousand).
_MAX_NODES = 1000
#: latent_difficulty_chain: the most steps (a sum of that many logs, about a second).
_MAX_PRODUCT_STEPS = 10**8
#: shared_budget_success: the most terms of its sum (about ten seconds).
_MAX_TERMS = 5 * 10**7
#: confusion_chain: the most rounds of its recursion (steps + retries + 1: about a minute),
#: and of element-rounds (broadcast elements x rounds).
_MAX_ROUNDS = 10**6
_MAX_RECURSION = 10**8


def _quadrature(task_sd: float, nodes: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights (summing to 1) for E[g(z)], z ~ N(0, 1)."""
    if nodes is None:
        # The trapezoid rule converges geometrically for integrands analytic in a strip;
        # expit(l + sd z)**n has its poles at Im z = pi/sd, hence a step shrinking with sd.
        step = 0.25 / max(task_sd, 1.0)
        count = math.ceil(12.0 / step)
        z = np.arange(-count, count + 1) * step
        weights = np.exp(-0.5 * z * z)
    else:
        from numpy.polynomial.hermite_e import hermegauss

        z, weights = hermegauss(nodes)
    return z, weights / weights.sum()


def logit_normal_chain(p: Any, steps: Any, task_sd: Any, nodes: int | None = None) -> Any:
    r"""Success of ``steps`` unverified steps under a logit-normal task effect.

    Once per trial :math:`z \sim N(0, 1)` shifts every step's success to
    :math:`\operatorname{expit}(\operatorname{logit} p + \sigma z)`, so

    .. math::
        P(\text{success}) = E_z\Bigl[\operatorname{expit}\bigl(\operatorname{logit} p
                            + \sigma z\bigr)^n\Bigr]

    This matches exactly the scenario ``steps = n``, ``p``, ``correlation.task_sd = sigma`` and
    no verifier (no step effect, no confusion, no checkpoints). ``p`` of exactly 0 or 1 is not
    shifted (docs/model.md section 3).

    Parameters
    ----------
    p : float or array_like
        Per-step success before the shift, in [0, 1].
    steps : int or array_like
        Number of steps ``n``, an integer >= 0.
    task_sd : float or array_like
        The logit-scale standard deviation :math:`\sigma`, in [0, 1000] (beyond, every trial
        is all or nothing to within rounding, and the rule would need millions of nodes).
    nodes : int or None, default None
        ``None``: the trapezoid rule on :math:`z \in [-12, 12]` with step
        :math:`0.25/\max(\sigma, 1)`, accurate to about 1e-12 relative. An integer:
        Gauss-Hermite quadrature with that many nodes, at most 1000 (what a Gauss-Hermite
        engine computes);
        it converges slowly when :math:`\sigma` or ``n`` is large, because the integrand
        becomes a steep step in ``z``.

    Examples
    --------
    A spread in difficulty helps long chains (against :math:`0.9^{25} = 0.0718`):

    >>> round(logit_normal_chain(0.9, 25, 1.0), 4)
    0.1591
    >>> round(logit_normal_chain(0.9, 25, 0.0), 6) == round(0.9 ** 25, 6)
    True
    """
    scalar = _is_scalar(p, steps, task_sd)
    p = _probability(p, "p")
    steps = _count(steps, "steps", low=0)
    task_sd = _ranged(
        task_sd, "task_sd", f"a number in [0, {_MAX_TASK_SD:g}]",
        lambda x: (x >= 0.0) & (x <= _MAX_TASK_SD),
    )
    if nodes is not None and (
        isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer))
        or not 1 <= nodes <= _MAX_NODES
    ):
        raise invalid("nodes", f"None or an integer in 1..{_MAX_NODES}", nodes)
    p, steps, task_sd = _broadcast(p=p, steps=steps, task_sd=task_sd)
    out = np.empty(p.shape)
    for index in np.ndindex(p.shape):
        pi, n, sd = float(p[index]), int(steps[index]), float(task_sd[index])
        if sd == 0.0 or pi in (0.0, 1.0) or n == 0:
            out[index] = pi**n
            continue
        z, weights = _quadrature(sd, nodes)
        x = math.log(pi) - math.log1p(-pi) + sd * z
        log_expit = -np.logaddexp(0.0, -x)  # log(expit(x)), stable in both tails
        out[index] = float(np.sum(weights * np.exp(n * log_expit)))
    return _out(out, scalar)


def _vector_matrix(v: np.ndarray, m: np.ndarray) -> np.ndarray:
    return np.einsum("...i,...ij->...j", v, m)


def confusion_chain(
    p: Any,
    steps: Any,
    enter: Any,
    recover: Any,
    factor: Any,
    retries: Any = 0,
    miss: Any = 0.0,
    false_reject: Any = 0.0,
) -> ChainOutcome:
    r"""A chain whose agent gets confused: a forward recursion over two hidden states.

    The agent is focused (success ``p``) or confused (success ``p * factor``). After each
    attempt's correctness is drawn, a wrong attempt while focused confuses it with ``enter``,
    and a correct one while confused brings it back with ``recover``; then the verifier
    judges (docs/model.md section 3). Per attempt, three 2x2 matrices over (focused, confused),
    row = state before, column = state after, with :math:`\epsilon` = ``enter``,
    :math:`\rho` = ``recover``, :math:`\phi` = ``factor``, :math:`c = p\phi`:

    .. math::
        A = \begin{pmatrix} p(1-f) & 0 \\ c(1-f)\rho & c(1-f)(1-\rho) \end{pmatrix}
        \quad \text{(accepted, correct)}

        W = \begin{pmatrix} (1-p)(1-\epsilon)m & (1-p)\epsilon m \\ 0 & (1-c)m \end{pmatrix}
        \quad \text{(accepted, wrong)}

        Q = \begin{pmatrix} pf + (1-p)(1-\epsilon)(1-m) & (1-p)\epsilon(1-m) \\
                            cf\rho & cf(1-\rho) + (1-c)(1-m) \end{pmatrix}
        \quad \text{(rejected)}

    A step with ``r`` retries accepts correct with :math:`G A`, wrong with :math:`G W`, runs
    out with :math:`Q^{r+1}`, where :math:`G = \sum_{j \le r} Q^j`; its attempts are
    :math:`G \mathbf{1}`. Starting focused (:math:`u = (1, 0)`, :math:`v = 0`), the row
    vectors of clean runs :math:`u` and tainted runs :math:`v` are carried through the ``n``
    steps: :math:`u \leftarrow u\,GA`, :math:`v \leftarrow v\,G(A+W) + u\,GW`.

    This matches exactly the scenario with ``steps = n``, uniform ``p``,
    ``correlation.confusion = {enter, recover, factor}``, a verifier with these ``miss`` and
    ``false_reject``, uniform ``retries.per_step = r``, and no total budget, checkpoints or
    random effects. Without a verifier use ``miss = 1``, ``retries = 0`` (the defaults model
    a perfect verifier with no retries).

    Parameters
    ----------
    p : float or array_like
        Per-attempt success when focused, in [0, 1].
    steps : int or array_like
        Number of steps, an integer >= 0.
    enter, recover, factor : float or array_like
        The confusion parameters, each in [0, 1].
    retries : int or array_like, default 0
        Retries per execution of a step, an integer >= 0. The work grows with it linearly:
        ``steps + retries + 1`` may be at most 1e6 (about a minute), and times the
        broadcast size at most 1e8; beyond, a ``RelsimError`` says so rather than run for
        minutes.
    miss, false_reject : float or array_like, default 0
        The verifier, as in :func:`verified_step`.

    Returns
    -------
    ChainOutcome
        Floats for scalar input, arrays of the broadcast shape otherwise.

    Examples
    --------
    Reference value R5 (docs/model.md section 5):

    >>> out = confusion_chain(0.9, 8, enter=0.7, recover=0.3, factor=0.5, retries=2, miss=0.3)
    >>> [round(x, 6) for x in out]
    [0.616865, 0.282803, 0.100332, 8.750814]
    """
    scalar = _is_scalar(p, steps, enter, recover, factor, retries, miss, false_reject)
    p = _probability(p, "p")
    steps = _count(steps, "steps", low=0)
    enter = _probability(enter, "enter")
    recover = _probability(recover, "recover")
    factor = _probability(factor, "factor")
    retries = _count(retries, "retries", low=0)
    miss = _probability(miss, "miss")
    false_reject = _probability(false_reject, "false_reject")
    p, steps, enter, recover, factor, retries, miss, false_reject = _broadcast(
        p=p, steps=steps, enter=enter, recover=recover, factor=factor, retries=retries,
        miss=miss, false_reject=false_reject,
    )
    shape = p.shape
    rounds = int(steps.max(initial=0)) + int(retries.max(initial=0)) + 1
    if rounds > _MAX_ROUNDS or p.size * rounds > _MAX_RECURSION:
        raise invalid(
            "steps",
            f"such that steps + retries + 1 <= {_MAX_ROUNDS:,} and, times the array size, "
            f"<= {_MAX_RECURSION:,} (the recursion runs step by step, about 60 us a step: "
            "beyond, a minute's work or more)",
            int(steps.max(initial=0)),
        )

    def matrices(pi_focused, pi_confused):
        # after a correct attempt: focused stays; confused -> focused with recover
        correct_move = np.zeros(shape + (2, 2))
        correct_move[..., 0, 0] = pi_focused
        correct_move[..., 1, 0] = pi_confused * recover
        correct_move[..., 1, 1] = pi_confused * (1.0 - recover)
        # after a wrong attempt: focused -> confused with enter; confused stays
        wrong_move = np.zeros(shape + (2, 2))
        wrong_move[..., 0, 0] = (1.0 - pi_focused) * (1.0 - enter)
        wrong_move[..., 0, 1] = (1.0 - pi_focused) * enter
        wrong_move[..., 1, 1] = 1.0 - pi_confused
        return correct_move, wrong_move

    correct_move, wrong_move = matrices(p, p * factor)
    accept_correct = correct_move * (1.0 - false_reject)[..., None, None]
    accept_wrong = wrong_move * miss[..., None, None]
    reject = (
        correct_move * false_reject[..., None, None]
        + wrong_move * (1.0 - miss)[..., None, None]
    )

    # G = sum_{j<=r} Q^j and E = Q^{r+1}, per broadcast element (r may differ between them)
    power = np.broadcast_to(np.eye(2), shape + (2, 2)).copy()
    geometric = np.zeros(shape + (2, 2))
    exhausted = np.zeros(shape + (2, 2))
    for j in range(int(retries.max(initial=0)) + 1):
        geometric += np.where((j <= retries)[..., None, None], power, 0.0)
        power = power @ reject
        exhausted = np.where((j == retries)[..., None, None], power, exhausted)
    step_correct = geometric @ accept_correct
    step_wrong = geometric @ accept_wrong
    step_any = step_correct + step_wrong
    attempts_from = geometric.sum(axis=-1)  # expected attempts in a step, per entry state
    exhausted_from = exhausted.sum(axis=-1)

    clean = np.zeros(shape + (2,))
    clean[..., 0] = 1.0  # start focused
    tainted = np.zeros(shape + (2,))
    detected = np.zeros(shape)
    attempts = np.zeros(shape)
    for i in range(int(steps.max(initial=0))):
        active = (i < steps)[..., None]
        alive = clean + tainted
        attempts = attempts + np.where(active[..., 0], np.sum(alive * attempts_from, -1), 0.0)
        detected = detected + np.where(active[..., 0], np.sum(alive * exhausted_from, -1), 0.0)
        new_clean = _vector_matrix(clean, step_correct)
        new_tainted = _vector_matrix(tainted, step_any) + _vector_matrix(clean, step_wrong)
        clean = np.where(active, new_clean, clean)
        tainted = np.where(active, new_tainted, tainted)
    return ChainOutcome(
        _out(clean.sum(-1), scalar),
        _out(tainted.sum(-1), scalar),
        _out(detected, scalar),
        _out(attempts, scalar),
    )


def checkpoint_interval(p: Any, checkpoint_cost: Any) -> Any:
    r"""The discrete analogue of Young's optimal checkpoint interval, in steps.

    With failures at rate :math:`1-p` per step (mean time between failures :math:`1/(1-p)`
    steps) and a checkpoint costing :math:`C` attempts, Young's
    :math:`\tau^* = \sqrt{2 C M}` becomes

    .. math:: k^* \approx \sqrt{\frac{2C}{1-p}}

    A first-order approximation (it assumes :math:`k^*(1-p) \ll 1` and a checkpoint that
    catches every error); round it to an integer ``every >= 1`` for a scenario. ``p = 1``
    gives infinity (never checkpoint).


    Parameters
    ----------
    p : float or array_like
        Per-step success, in [0, 1].
    checkpoint_cost : float or array_like
        Cost of one checkpoint in units of one attempt's cost, a finite number >= 0.

    Notes
    -----
    Young's factor 2 assumes a failure is seen when it happens, so on average half a segment
    is lost. In relsim's model (docs/model.md section 3) a wrong step is seen only at the next
    checkpoint and the whole segment is redone: the cost per step is about
    :math:`(1 + C/k)\,p^{-k}`, whose minimum is near :math:`\sqrt{C/(1-p)}`, this value over
    :math:`\sqrt 2`. ``relsim.plan.checkpoints`` finds the exact spacing; the test suite checks
    that it lies nearer to ``checkpoint_interval / sqrt(2)`` than to this value.

    Examples
    --------
    >>> round(checkpoint_interval(0.98, 1.0), 6)     # sqrt(2 / 0.02)
    10.0
    """
    scalar = _is_scalar(p, checkpoint_cost)
    p = _probability(p, "p")
    cost = _nonnegative(checkpoint_cost, "checkpoint_cost")
    p, cost = _broadcast(p=p, checkpoint_cost=cost)
    with np.errstate(divide="ignore", invalid="ignore"):
        interval = np.sqrt(2.0 * cost / (1.0 - p))
    interval = np.where((p == 1.0), np.inf, interval)
    return _out(interval, scalar)
