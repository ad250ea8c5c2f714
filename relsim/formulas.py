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

import functools
import math
import numbers
from collections.abc import Mapping
from typing import Any, Callable, NamedTuple

import numpy as np

from relsim.errors import RelsimError, invalid
from relsim import checks

__all__ = [
    "ChainOutcome",
    "LadderOutcome",
    "SampleOutcome",
    "StepOutcome",
    "best_of_n",
    "chain_success",
    "checkpoint_interval",
    "compound",
    "confusion_chain",
    "expected_utility",
    "ladder_step",
    "latent_difficulty_chain",
    "logit_normal_chain",
    "majority_vote",
    "max_miss",
    "meets_target",
    "min_p",
    "min_retries",
    "mixture_verified_step",
    "pass_at_k",
    "pass_at_k_estimate",
    "pass_hat_k",
    "pass_hat_k_estimate",
    "plurality_vote",
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

    Returns
    -------
    float or ndarray
        The per-step success needed, in (0, 1]: a float for scalar arguments, else an array of
        their broadcast shape.

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

    Returns
    -------
    float or ndarray
        The step's success, in [0, 1]: a float for scalar arguments, else an array of their
        broadcast shape.

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

    Parameters
    ----------
    p : float or array_like
        Per-trial success, in [0, 1].
    k : int or array_like
        Trials, an integer >= 1. Broadcasts against ``p``.

    Returns
    -------
    float or ndarray
        pass@k: a float for scalar arguments, else an array of their broadcast shape.

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

    Parameters
    ----------
    p : float or array_like
        Per-trial success, in [0, 1].
    k : int or array_like
        Trials, an integer >= 1. Broadcasts against ``p``.

    Returns
    -------
    float or ndarray
        pass^k: a float for scalar arguments, else an array of their broadcast shape.

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

    Returns
    -------
    float or ndarray
        The estimate, in [0, 1]: a float for scalar arguments, else an array of their broadcast
        shape.

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

    Returns
    -------
    float or ndarray
        The estimate, in [0, 1]: a float for scalar arguments, else an array of their broadcast
        shape.

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

    Parameters
    ----------
    p : float or array_like
        Per-attempt success, in [0, 1].
    miss, false_reject : float or array_like, default 0
        The verifier, as in :func:`verified_step`.

    Returns
    -------
    float or ndarray
        The step's ceiling, in [0, 1]: a float for scalar arguments, else an array of their
        broadcast shape.

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

    Returns
    -------
    bool
        Whether the target is met: a Python ``bool``, whatever numbers it is given. Scalars
        only (the planners' rule for one design); compare arrays of successes with ``>=``.

    Examples
    --------
    >>> meets_target(math.log(0.96), 0.95), meets_target(math.log1p(-2**-54), 1 - 2**-53)
    (True, True)
    >>> meets_target(math.log1p(-2**-52), 1 - 2**-53)
    False
    """
    # scalars only (the planners' one rule): an array or text was a TypeError from the
    # comparison, a target out of range a math domain error or a silent False
    target = checks.in_range(target, "target", 0.0, 1.0, low_open=True)
    if (isinstance(log_success, bool) or not isinstance(log_success, numbers.Real)
            or math.isnan(log_success)):
        raise invalid("log_success", "a number (the log of a success; -inf for 0)", log_success)
    return bool(log_success >= _log_target(target))  # numpy's bool_ stays inside


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

    Parameters
    ----------
    p : float or array_like
        Per-attempt success, in [0, 1].
    steps : int or array_like
        Number of steps ``n``, an integer >= 1.
    target : float or array_like
        End-to-end success wanted, in (0, 1].
    false_reject : float or array_like, default 0
        The verifier's false-reject rate, in [0, 1].

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
    # (+ 0.0: a target of 1 gives -expm1(0) = -0.0, shown as "-0.0")
    out = np.where(p == 1.0, 1.0, np.minimum(bound, 1.0) + 0.0)
    out = np.where(accept_correct > 0, out, np.nan)
    return _none_or_float(out, scalar)


def min_p(steps: Any, target: Any, miss: Any = 0.0, false_reject: Any = 0.0) -> Any:
    r"""The least per-attempt success whose verifier ceiling still allows ``target``.

    The infimum of the ``p`` values with :math:`(a/(a+w))^n \ge T`; solving
    :math:`p(1-f)(1-t) \ge t(1-p)m` with :math:`t = T^{1/n}`:

    .. math:: p^* = \frac{t\,m}{(1-f)(1-t) + t\,m}

    Any ``p > p*`` reaches the target with enough retries; at ``p*`` only the limit does.

    Parameters
    ----------
    steps : int or array_like
        Number of steps ``n``, an integer >= 1.
    target : float or array_like
        End-to-end success wanted, in (0, 1].
    miss, false_reject : float or array_like, default 0
        The verifier, as in :func:`verified_step`.

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

    Returns
    -------
    float or ndarray
        The task's success, in [0, 1]: a float for scalar arguments, else an array of their
        broadcast shape.

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

    Returns
    -------
    float or ndarray
        The task's success :math:`E[p^n]`, in [0, 1]: a float for scalar arguments, else an
        array of their broadcast shape.

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

    Returns
    -------
    float or ndarray
        The task's success, in [0, 1]: a float for scalar arguments, else an array of their
        broadcast shape.

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

    Returns
    -------
    float or ndarray
        The interval :math:`k^*` in steps (``inf`` when ``p = 1``): a float for scalar
        arguments, else an array of their broadcast shape.

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


# -------------------------------------------- model v2: mixtures, samples, votes, ladders
# The closed forms of the model's task mixtures, parallel samples (votes and best-of-n
# through a verifier), escalation ladders and utility, one step at a time: the oracles the
# engines are tested against.


class SampleOutcome(NamedTuple):
    """How one attempt of ``n`` samples, checked in order by a verifier, ends (the three sum
    to 1).

    Attributes
    ----------
    accepted_correct : float or ndarray
        The first accepted sample is correct: the attempt's result is right.
    accepted_wrong : float or ndarray
        The first accepted sample is wrong: a silent failure unless caught later.
    rejected : float or ndarray
        Every sample was rejected: the attempt is rejected (a retry, or a detected failure).
    """

    accepted_correct: Any
    accepted_wrong: Any
    rejected: Any


class LadderOutcome(NamedTuple):
    """How one step on a ladder of models ends (the first three sum to 1).

    Attributes
    ----------
    success : float or ndarray
        A correct attempt was accepted.
    silent_failure : float or ndarray
        A wrong attempt was accepted.
    exhausted : float or ndarray
        Every attempt was rejected and the budget ran out.
    expected_attempts : float or ndarray
        The mean number of attempts made.
    expected_cost : float or ndarray
        The mean cost of those attempts, each at its rung's cost.
    """

    success: Any
    silent_failure: Any
    exhausted: Any
    expected_attempts: Any
    expected_cost: Any


#: plurality_vote: the most samples (the scenario's ``sampling.n`` is 1..64).
_MAX_SAMPLES = 64
#: majority_vote: the most voters, and the most binomial terms summed over an array.
_MAX_VOTERS = 10**6
_MAX_VOTE_TERMS = 10**7
#: The binomial terms held in memory at once (rows of a chunk times n + 1).
_VOTE_CHUNK = 1 << 20


def _binomial_pmf(p: np.ndarray, n: int) -> np.ndarray:
    """P(Binomial(n, p) = c) for c = 0..n along a new last axis of the 1-D ``p``.

    Up to 64 trials as the product ``C(n, c) p**c (1-p)**(n-c)`` (a correctly rounded binomial
    coefficient, two powers); beyond, in log space with ``log C(n, c)`` a cumulative sum of
    ``log((n - i + 1)/i)``, relative to the largest term and normalised to sum to 1.
    """
    c = np.arange(n + 1)
    p = p[:, None]
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        if n <= _MAX_SAMPLES:
            comb = np.array([float(math.comb(n, k)) for k in range(n + 1)])
            return comb * np.power(p, c) * np.power(1.0 - p, n - c)
        i = np.arange(1, n + 1, dtype=float)
        log_comb = np.concatenate([[0.0], np.cumsum(np.log(n - i + 1.0) - np.log(i))])
        # 0 * log(0) is taken as 0: p = 0 puts all mass on c = 0, p = 1 on c = n
        log_hits = np.where(c == 0, 0.0, c * np.log(p))
        log_misses = np.where(c == n, 0.0, (n - c) * np.log1p(-p))
        log_pmf = log_comb + log_hits + log_misses
        # The rounding of the long sums drifts slowly with c, so it is nearly the same factor
        # on every term that carries weight: dividing by the total (exactly 1 in exact
        # arithmetic) cancels most of it.
        pmf = np.exp(log_pmf - np.max(log_pmf, axis=-1, keepdims=True))
        return pmf / np.sum(pmf, axis=-1, keepdims=True)


def _vote(
    p: np.ndarray, n: np.ndarray, groups: np.ndarray, wins: Callable[[int, int], np.ndarray]
) -> np.ndarray:
    """``sum_c P(Binomial(n, p) = c) * wins(n, g)[c]`` per element, elements grouped by
    ``(n, g)`` so that each group's win vector is made once."""
    out = np.empty(p.shape)
    flat_p, flat_n, flat_g = p.ravel(), n.ravel(), groups.ravel()
    flat_out = out.reshape(-1)
    for ni, gi in set(zip(flat_n.tolist(), flat_g.tolist())):
        where = np.flatnonzero((flat_n == ni) & (flat_g == gi))
        vector = wins(ni, gi)
        rows = max(1, _VOTE_CHUNK // (ni + 1))
        for start in range(0, where.size, rows):  # bounded memory for n in the millions
            chunk = where[start : start + rows]
            flat_out[chunk] = _binomial_pmf(flat_p[chunk], ni) @ vector
    return np.clip(out, 0.0, 1.0)


def _majority_wins(n: int, _: int = 0) -> np.ndarray:
    """P(the correct answer wins | c of n votes correct), one wrong answer, random ties."""
    c = np.arange(n + 1)
    return np.where(2 * c > n, 1.0, np.where(2 * c == n, 0.5, 0.0))


def majority_vote(p: Any, n: Any) -> Any:
    r"""The chance that a majority vote of ``n`` samples is right, with one wrong answer.

    Each sample is correct with ``p``, independently; every wrong sample gives the same wrong
    answer (binary voting), and a tie is broken uniformly at random. With
    :math:`B \sim \mathrm{Binomial}(n, p)`:

    .. math::
        P(\text{vote right}) = P\bigl(B > \tfrac n2\bigr) + \tfrac12 P\bigl(B = \tfrac n2\bigr)
        = \sum_{c > n/2} \binom nc p^c (1-p)^{n-c}
          + \tfrac12 \binom{n}{n/2} \bigl(p(1-p)\bigr)^{n/2}

    (the last term only for even ``n``). An even ``n`` ties ``n - 1``: the extra voter helps
    exactly as much as the coin of the ties hurts. This is :func:`plurality_vote` with one
    wrong answer.

    Parameters
    ----------
    p : float or array_like
        Per-sample success, in [0, 1].
    n : int or array_like
        Samples voting, an integer in 1..10**6 (the sum has ``n + 1`` terms; at most 1e7 summed
        over an array).

    Returns
    -------
    float or ndarray

    Notes
    -----
    Up to 64 samples the binomial terms are exact products (about 1e-15 relative). Beyond, they
    are taken in log space and divided by their total, which cancels the slow drift of the
    rounding: about 1e-15 relative where the answer is not a far tail, and in a far tail (a
    vote right with 1e-24, say) about 1e-12 relative at ``n = 10**4``, growing with ``n``.

    Examples
    --------
    Three voters at ``p = 0.8``: :math:`p^3 + 3p^2(1-p) = 0.896`; a fourth adds nothing.

    >>> round(majority_vote(0.8, 3), 6), round(majority_vote(0.8, 4), 6)
    (0.896, 0.896)

    Chen et al. (2024): with 60% easy tasks (``p = 0.8``) and 40% hard ones (``p = 0.3``) the
    vote peaks at five voters, then falls back toward 0.6:

    >>> [round(0.6 * majority_vote(0.8, n) + 0.4 * majority_vote(0.3, n), 6) for n in (1, 5, 63)]
    [0.6, 0.63048, 0.600175]
    """
    scalar = _is_scalar(p, n)
    p = _probability(p, "p")
    n = _count(n, "n", low=1, high=_MAX_VOTERS)
    p, n = _broadcast(p=p, n=n)
    terms = float(np.sum(n + 1.0))
    if terms > _MAX_VOTE_TERMS:
        raise invalid("n", f"at most {_MAX_VOTE_TERMS:,} summed over the array (n + 1 "
                      "binomial terms each)", int(terms))
    return _out(_vote(p, n, np.zeros(n.shape, dtype=np.int64), _majority_wins), scalar)


@functools.lru_cache(maxsize=512)
def _plurality_wins(n: int, wrong_answers: int) -> np.ndarray:
    r"""W[c] = P(the correct answer wins | c of n samples correct), each wrong sample uniform
    over ``wrong_answers`` answers (0: every wrong sample distinct), ties broken at random.

    With ``s = n - c`` wrong samples, a configuration is described by its profile: ``a_k``
    wrong answers got ``k`` votes (k = 1..c; none may get more for the correct answer to win
    or tie). A profile using ``j = sum a_k`` answers has probability

    .. math:: \frac{m!}{(m-j)!\,m^s} \cdot \frac{s!}{\prod_k a_k!\,(k!)^{a_k}}

    and the correct answer wins it with ``1/(1 + a_c)``. The sum over profiles runs as a
    dynamic programme over the levels ``k = 1, 2, ...`` on the state (answers used, votes
    used), every term positive (no cancellation).
    """
    c_all = np.arange(n + 1)
    if wrong_answers == 0:  # every wrong answer has one vote: a lone correct vote ties them all
        wins = np.where(c_all >= 2, 1.0, 0.0)
        wins[1] = 1.0 / n
        wins.setflags(write=False)
        return wins
    m = float(wrong_answers)
    size = n + 1
    # falling(m, j) / m**j = prod_{i<j} (1 - i/m): zero once j exceeds the answers there are
    falling = np.concatenate([[1.0], np.cumprod(np.maximum(1.0 - np.arange(n) / m, 0.0))])
    state = np.zeros((size, size))  # [answers used, votes used]: sum of prod 1/(a_k! k!^a_k)
    state[0, 0] = 1.0
    wins = np.zeros(size)
    for c in range(1, n + 1):
        s = n - c
        if c > s:  # no wrong answer can reach c votes
            wins[c] = 1.0
            continue
        # the last level, c: a answers tie with the correct one, which wins with 1/(1 + a)
        column = state[:, s].copy()
        weight = 1.0
        for a in range(1, s // c + 1):
            weight /= a * math.factorial(c)
            column[a:] += weight / (1.0 + a) * state[: size - a, s - c * a]
        j = np.arange(size)
        scale = np.where(j <= s, np.power(m, np.minimum(j - s, 0).astype(float)), 0.0)
        wins[c] = math.factorial(s) * float(np.sum(column * falling * scale))
        # then level c as an ordinary level (no tie) for the larger c to come
        grown = state.copy()
        weight = 1.0
        for a in range(1, n // c + 1):
            weight /= a * math.factorial(c)
            grown[a:, c * a :] += weight * state[: size - a, : size - c * a]
        state = grown
    wins = np.clip(wins, 0.0, 1.0)
    wins.setflags(write=False)
    return wins


def plurality_vote(p: Any, n: Any, wrong_answers: Any = 1) -> Any:
    r"""The chance that the correct answer wins a plurality vote of ``n`` samples.

    Each sample is correct with ``p``, independently; a wrong sample picks uniformly among
    ``m = wrong_answers`` wrong answers; the answer with the most votes wins, ties broken
    uniformly at random among the tied answers. With :math:`W_m(c)` the chance that the
    correct answer wins when ``c`` of the ``n`` samples are correct (exact, from the
    multinomial split of the ``n - c`` wrong votes):

    .. math::
        P(\text{vote right}) = \sum_{c=0}^{n} \binom nc p^c (1-p)^{n-c}\, W_m(c), \qquad
        W_m(c) = \sum_{\substack{k_1 + \dots + k_m = n-c \\ k_i \le c}}
            \frac{(n-c)!}{k_1! \cdots k_m!\, m^{n-c}} \cdot
            \frac{1}{1 + \#\{i : k_i = c\}}

    With one wrong answer this is :func:`majority_vote`. ``"distinct"`` (every wrong sample
    differs, the limit of many wrong answers) gives :math:`W(c) = 1` for :math:`c \ge 2`,
    :math:`W(1) = 1/n`, :math:`W(0) = 0`.

    Parameters
    ----------
    p : float or array_like
        Per-sample success, in [0, 1].
    n : int or array_like
        Samples voting, an integer in 1..64 (the scenario's ``sampling.n``).
    wrong_answers : int, array_like or "distinct", default 1
        The number of distinct wrong answers, an integer >= 1, or ``"distinct"``.

    Returns
    -------
    float or ndarray

    Notes
    -----
    :math:`W_m` is summed over the profiles of the wrong votes (how many wrong answers got
    1, 2, ... votes) by a dynamic programme over the vote levels, every term positive, so it is
    exact to about 1e-14 relative for any ``m`` (up to 2**62) and made once per ``(n, m)``.

    Examples
    --------
    Three samples at ``p = 0.5``. With one wrong answer it is the majority vote. With two, a
    lone correct vote (3/8) wins only when the two wrong votes split (1/2), and then a
    three-way tie a third of the time: :math:`1/2 + 3/8 \cdot 1/6`. With every wrong answer
    distinct, a lone correct vote always ties three ways: :math:`1/2 + 3/8 \cdot 1/3`.

    >>> [round(plurality_vote(0.5, 3, m), 6) for m in (1, 2, "distinct")]
    [0.5, 0.5625, 0.625]
    """
    scalar = _is_scalar(p, n) and (isinstance(wrong_answers, str) or _is_scalar(wrong_answers))
    p = _probability(p, "p")
    n = _count(n, "n", low=1, high=_MAX_SAMPLES)
    if isinstance(wrong_answers, str):
        if wrong_answers != "distinct":
            raise invalid("wrong_answers", 'an integer >= 1 or "distinct"', wrong_answers)
        groups = np.zeros((), dtype=np.int64)  # 0 stands for "distinct"
    else:
        groups = _count(wrong_answers, "wrong_answers", low=1,
                        allowed='an integer in 1..2**62 or "distinct"')
    p, n, groups = _broadcast(p=p, n=n, wrong_answers=groups)
    return _out(_vote(p, n, groups, _plurality_wins), scalar)


def best_of_n(p: Any, n: Any, miss: Any = 0.0, false_reject: Any = 0.0) -> SampleOutcome:
    r"""One attempt of ``n`` samples that a verifier checks in order: the first accepted sample
    is the attempt's result (the ``"verifier"`` select mode of sampling).

    Each sample is accepted and correct with :math:`a = p(1-f)`, accepted and wrong with
    :math:`w = (1-p)m`, rejected with :math:`q = pf + (1-p)(1-m)`; the first accepted one
    comes at sample :math:`j + 1` with :math:`q^j`, so

    .. math::
        \text{accepted\_correct} = a\,\frac{1 - q^n}{1 - q}, \quad
        \text{accepted\_wrong} = w\,\frac{1 - q^n}{1 - q}, \quad
        \text{rejected} = q^n

    (:math:`\tfrac{1-q^n}{1-q} = n` when :math:`q = 1`). The verifier checks all ``n``
    samples whatever it accepts (``n`` verifications per attempt).

    Parameters
    ----------
    p : float or array_like
        Per-sample success, in [0, 1].
    n : int or array_like
        Samples per attempt, an integer >= 1.
    miss, false_reject : float or array_like, default 0
        The verifier, as in :func:`verified_step`.

    Returns
    -------
    SampleOutcome
        ``(accepted_correct, accepted_wrong, rejected)``, summing to 1.

    Notes
    -----
    The same numbers as :func:`verified_step` with ``n - 1`` retries (a verified step is a
    sequence of samples too), computed the same way: ``1 - q**n`` through ``expm1``/``log1p``
    when ``q > 1/2``, ``accepted_correct = a/(a+w) * (1 - q**n)``. A step of ``r`` retries of
    such attempts ends like ``verified_step(p, n*(r+1) - 1, miss, false_reject)`` and makes
    :math:`(1 - q^{n(r+1)})/(1 - q^n)` attempts on average.

    Examples
    --------
    Three samples at ``p = 0.6`` behind a verifier that misses 20% of wrong answers
    (:math:`a = 0.6`, :math:`w = 0.08`, :math:`q = 0.32`, :math:`1 + q + q^2 = 1.4224`):

    >>> [round(x, 6) for x in best_of_n(0.6, 3, miss=0.2)]
    [0.85344, 0.113792, 0.032768]
    """
    scalar = _is_scalar(p, n, miss, false_reject)
    p, miss, false_reject = _verifier_args(p, miss, false_reject)
    n = _count(n, "n", low=1)
    p, n, miss, false_reject = _broadcast(p=p, n=n, miss=miss, false_reject=false_reject)
    s = _step(p, n - 1, miss, false_reject)
    return SampleOutcome(
        accepted_correct=_out(s.ceiling * s.reached, scalar),
        accepted_wrong=_out(s.wrong_share * s.reached, scalar),
        rejected=_out(np.broadcast_to(s.exhausted, np.shape(s.reached)), scalar),
    )


def mixture_verified_step(
    weights: Any, p: Any, retries: Any, miss: Any = 0.0, false_reject: Any = 0.0
) -> StepOutcome:
    r"""One verified step on a mixture of task classes: each trial draws class ``c`` with
    weight :math:`w_c` (normalised to sum to 1), and the step is :func:`verified_step` with
    that class's ``p``.

    .. math::
        \text{outcome} = \sum_c \frac{w_c}{\sum_k w_k}\,
            \text{verified\_step}(p_c, r, m, f)

    for each of the four fields (success, silent_failure, exhausted, expected_attempts). All
    five arguments broadcast together, the classes being the last axis (so a scalar applies to
    every class, and ``retries`` of shape ``(R, 1)`` gives ``R`` budgets).

    Parameters
    ----------
    weights : array_like
        The classes' weights, finite numbers > 0, classes along the last axis.
    p : array_like
        Each class's per-attempt success, in [0, 1], classes along the last axis.
    retries : int or array_like
        Retries after the first attempt, integers >= 0.
    miss, false_reject : float or array_like, default 0
        The verifier, as in :func:`verified_step`.

    Returns
    -------
    StepOutcome
        Floats for one mixture (a broadcast shape of at most one dimension), else arrays of the
        leading shape.

    Examples
    --------
    Stroebl, Kapoor and Narayanan (2024): 58% easy tasks (``p = 0.87``), 42% hard ones
    (``p = 0.13``), a verifier that misses a quarter of wrong answers, 0 to 3 retries:

    >>> out = mixture_verified_step([0.58, 0.42], [0.87, 0.13], [[0], [1], [2], [3]], miss=0.25)
    >>> [round(x, 6) for x in out.success.tolist()]
    [0.5592, 0.644025, 0.672068, 0.687704]
    >>> [round(x, 6) for x in out.silent_failure.tolist()]
    [0.1102, 0.171644, 0.210716, 0.236111]
    """
    weights = _positive(weights, "weights")
    p, miss, false_reject = _verifier_args(p, miss, false_reject)
    retries = _count(retries, "retries", low=0)
    weights, p, retries, miss, false_reject = _broadcast(
        weights=weights, p=p, retries=retries, miss=miss, false_reject=false_reject
    )
    if p.ndim == 0:  # one class
        weights, p, retries, miss, false_reject = (
            x.reshape(1) for x in (weights, p, retries, miss, false_reject)
        )
    share = weights / np.sum(weights, axis=-1, keepdims=True)
    s = _step(p, retries, miss, false_reject)
    fields = (s.ceiling * s.reached, s.wrong_share * s.reached, s.exhausted, s.attempts)
    scalar = p.ndim == 1
    return StepOutcome(*(_out(np.sum(share * x, axis=-1), scalar) for x in fields))


#: expected_utility: the value of each outcome and the cost weight (the scenario's [utility]).
_UTILITY_DEFAULTS = {
    "success": 1.0,
    "silent_failure": 0.0,
    "detected_failure": 0.0,
    "infra_failure": 0.0,
    "timeout": 0.0,
    "cost_weight": 0.0,
}


def expected_utility(
    success: Any,
    silent_failure: Any = 0.0,
    detected_failure: Any = 0.0,
    infra_failure: Any = 0.0,
    timeout: Any = 0.0,
    expected_cost: Any = 0.0,
    *,
    utility: Any = None,
) -> Any:
    r"""The expected utility of a design from its outcome shares, as the scenario's
    ``[utility]`` table values them.

    .. math::
        U = \sum_{o} v_o\, P(o) - \lambda\, E[\text{cost}]

    over the outcomes :math:`o` (success, silent_failure, detected_failure, infra_failure,
    timeout), with :math:`v_o` their values and :math:`\lambda` the ``cost_weight``.

    Parameters
    ----------
    success, silent_failure, detected_failure, infra_failure, timeout : float or array_like
        The outcome shares, each in [0, 1] (those left out are 0). A one-step
        :class:`StepOutcome`'s ``exhausted`` is its ``detected_failure``.
    expected_cost : float or array_like, default 0
        The mean cost of a trial, a finite number >= 0.
    utility : mapping or None, keyword only
        The values: keys ``success``, ``silent_failure``, ``detected_failure``,
        ``infra_failure``, ``timeout`` and ``cost_weight``, each a finite number; a key left
        out takes its default (success 1, everything else 0). ``None``: every default, so the
        utility is the success.

    Returns
    -------
    float or ndarray

    Examples
    --------
    Stroebl et al.'s mixture with no retry, a silent failure costing as much as a success
    earns: :math:`0.5592 - 0.1102`.

    >>> out = mixture_verified_step([0.58, 0.42], [0.87, 0.13], 0, miss=0.25)
    >>> round(expected_utility(out.success, out.silent_failure, out.exhausted,
    ...                        utility={"silent_failure": -1.0}), 6)
    0.449
    """
    values = dict(_UTILITY_DEFAULTS)
    if utility is not None:
        if not isinstance(utility, Mapping):
            raise invalid("utility", "None or a mapping of outcome values", utility)
        checks.check_keys(utility, _UTILITY_DEFAULTS, "utility")
        for key, value in utility.items():
            values[key] = checks.in_range(value, f"utility.{key}")
    shares = {
        "success": success,
        "silent_failure": silent_failure,
        "detected_failure": detected_failure,
        "infra_failure": infra_failure,
        "timeout": timeout,
    }
    scalar = _is_scalar(expected_cost, *shares.values())
    arrays = {name: _probability(x, name) for name, x in shares.items()}
    arrays["expected_cost"] = _nonnegative(expected_cost, "expected_cost")
    broadcast = dict(zip(arrays, _broadcast(**arrays)))
    total = sum(values[name] * broadcast[name] for name in shares)
    return _out(total - values["cost_weight"] * broadcast["expected_cost"], scalar)


def ladder_step(
    p: Any,
    after: Any,
    retries: Any,
    miss: Any = 0.0,
    false_reject: Any = 0.0,
    attempt_cost: Any = None,
) -> LadderOutcome:
    r"""One verified step on a ladder of models: later attempts move to stronger rungs.

    Attempt ``j`` (0-based) of the step uses rung :math:`k(j) = \#\{i : \text{after}_i \le
    j\}` (rung 0 until attempt ``after[0]``, rung 1 from there until ``after[1]``, ...), with
    that rung's :math:`p_k` and cost :math:`c_k`, and one verifier for every rung. Rung
    ``k`` serves the attempts :math:`t_k \le j < t_{k+1}` (:math:`t_0 = 0`,
    :math:`t_k = \text{after}_{k-1}`, the last rung to the budget's end); of the ``r + 1``
    attempts it serves :math:`L_k = \max(0, \min(t_{k+1}, r+1) - t_k)`. With
    :math:`a_k, w_k, q_k` each rung's per-attempt rates (as in :func:`verified_step`),
    :math:`S_k = (1 - q_k^{L_k})/(1 - q_k)` and :math:`Q_k = \prod_{i<k} q_i^{L_i}` (every
    attempt before rung ``k`` was rejected):

    .. math::
        \text{success} = \sum_k Q_k\, a_k S_k, \quad
        \text{silent\_failure} = \sum_k Q_k\, w_k S_k, \quad
        \text{exhausted} = \prod_k q_k^{L_k},

        E[\text{attempts}] = \sum_k Q_k S_k, \quad
        E[\text{cost}] = \sum_k Q_k S_k c_k .

    Parameters
    ----------
    p : array_like
        Per-attempt success of each rung, in [0, 1], rungs along the last axis (rung 0 first;
        a scalar is a ladder of one rung).
    after : int or array_like
        Where each rung above 0 starts: ``after[k-1]`` is the first attempt (0-based) on rung
        ``k``; strictly increasing integers >= 1, one per rung above 0 (the last axis; empty
        for one rung). A rung the budget never reaches (``after[k-1] > retries``) adds
        nothing (a scenario refuses it).
    retries : int or array_like
        Retries after the first attempt, integers >= 0.
    miss, false_reject : float or array_like, default 0
        The verifier, the same on every rung, as in :func:`verified_step`.
    attempt_cost : float, array_like or None, default None
        The cost of one attempt on each rung, finite numbers >= 0 (rungs along the last axis;
        verification not included). ``None``: 1 on every rung, so the cost counts attempts.

    Returns
    -------
    LadderOutcome
        ``(success, silent_failure, exhausted, expected_attempts, expected_cost)``: floats for
        one ladder, arrays of the leading shape otherwise.

    Notes
    -----
    ``retries``, ``miss``, ``false_reject`` and the leading axes of ``p``, ``after`` and
    ``attempt_cost`` broadcast together. Each rung's share is a geometric sum computed as in
    :func:`verified_step` (``1 - q**L``
    through ``expm1``/``log1p`` when ``q > 1/2``), so the work grows with the rungs, not with
    the budget. A ladder whose rungs all equal rung 0 is :func:`verified_step`.

    Examples
    --------
    A cheap model (``p = 0.6``, cost 1) for the first two attempts, then a strong one
    (``p = 0.95``, cost 10), three retries in all, a perfect verifier. Rung 0 succeeds with
    :math:`0.6 + 0.4 \cdot 0.6 = 0.84` in 1.4 attempts; the 0.16 left reach rung 1, which
    succeeds with 0.9975 in 1.05 attempts:

    >>> out = ladder_step([0.6, 0.95], [2], 3, attempt_cost=[1.0, 10.0])
    >>> [round(x, 6) for x in out]
    [0.9996, 0.0, 0.0004, 1.568, 3.08]
    """
    p = _probability(p, "p")
    if p.ndim == 0:
        p = p.reshape(1)
    rungs = p.shape[-1]
    if rungs == 0:
        raise invalid("p", "one success per rung (at least rung 0)", p.tolist())
    after = _count(after, "after", low=1)
    if after.ndim == 0:
        after = after.reshape(1)
    if after.shape[-1] != rungs - 1:
        raise invalid(
            "after",
            f"one integer per rung above rung 0 ({rungs - 1}: p has {rungs} "
            f"{'rung' if rungs == 1 else 'rungs'} on its last axis)",
            after.tolist(),
        )
    if (np.diff(after, axis=-1) <= 0).any():
        raise invalid("after", "strictly increasing integers >= 1", after.tolist())
    retries = _count(retries, "retries", low=0)
    miss = _probability(miss, "miss")
    false_reject = _probability(false_reject, "false_reject")
    cost = np.ones(1) if attempt_cost is None else _nonnegative(attempt_cost, "attempt_cost")
    if cost.ndim == 0:
        cost = cost.reshape(1)
    p, cost = _broadcast(p=p, attempt_cost=cost)
    if p.shape[-1] != rungs:
        raise invalid("attempt_cost", f"one cost per rung ({rungs}), on the last axis",
                      np.shape(attempt_cost))
    leading = _broadcast(
        p=p[..., 0],
        after=np.empty(after.shape[:-1]),
        retries=retries,
        miss=miss,
        false_reject=false_reject,
        attempt_cost=cost[..., 0],
    )
    shape = leading[0].shape
    retries, miss, false_reject = leading[2], leading[3], leading[4]
    end_all = retries + 1  # attempts 0..r
    survive = np.ones(shape)  # every attempt so far was rejected
    success = np.zeros(shape)
    silent = np.zeros(shape)
    attempts = np.zeros(shape)
    spent = np.zeros(shape)
    starts = np.broadcast_to(after, shape + (rungs - 1,))
    for k in range(rungs):
        # rung k serves attempts start..end-1 of the r + 1 (none when it starts past them)
        start = 0 if k == 0 else starts[..., k - 1]
        end = end_all if k == rungs - 1 else np.minimum(starts[..., k], end_all)
        length = np.maximum(end - start, 0)
        pk = np.broadcast_to(p[..., k], shape)
        s = _step(pk, np.maximum(length - 1, 0), miss, false_reject)
        served = length > 0
        reached = np.where(served, s.reached, 0.0)
        rung_attempts = np.where(served, s.attempts, 0.0)
        success = success + survive * s.ceiling * reached
        silent = silent + survive * s.wrong_share * reached
        attempts = attempts + survive * rung_attempts
        spent = spent + survive * rung_attempts * np.broadcast_to(cost[..., k], shape)
        survive = survive * np.where(served, s.exhausted, 1.0)
    scalar = len(shape) == 0
    return LadderOutcome(
        success=_out(success, scalar),
        silent_failure=_out(silent, scalar),
        exhausted=_out(survive, scalar),
        expected_attempts=_out(attempts, scalar),
        expected_cost=_out(spent, scalar),
    )
