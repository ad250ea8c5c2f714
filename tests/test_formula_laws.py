"""The laws the closed forms obey (issue 2 item 3), stated as hypothesis properties, and the
closed-form chains against brute-force enumeration of every attempt path."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from relsim import formulas as F

probability = st.floats(0.0, 1.0)
retries = st.integers(0, 30)
steps = st.integers(1, 60)
laws = settings(deadline=None, max_examples=60)


# ------------------------------------------------------------------------------- bounds


@laws
@given(probability, retries, probability, probability)
def test_step_outcomes_are_probabilities_that_sum_to_one(p, r, miss, false_reject):
    out = F.verified_step(p, r, miss, false_reject)
    for value in out[:3]:
        assert 0.0 <= value <= 1.0
    assert math.fsum(out[:3]) == _approx_one(out[:3])
    assert 1.0 <= out.expected_attempts <= r + 1 + 1e-12
    assert out.success <= F.verified_ceiling(p, miss, false_reject)


def _approx_one(values):
    total = math.fsum(values)
    assert abs(total - 1.0) <= 1e-12, values
    return total


@pytest.mark.slow
@laws
@given(st.lists(probability, min_size=1, max_size=8), st.data())
def test_chain_outcomes_sum_to_one(ps, data):
    n = len(ps)
    rs = data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    ms = data.draw(st.lists(probability, min_size=n, max_size=n))
    fs = data.draw(st.lists(probability, min_size=n, max_size=n))
    out = F.verified_chain(ps, rs, ms, fs)
    for value in out[:3]:
        assert 0.0 <= value <= 1.0
    _approx_one(out[:3])
    assert n <= out.expected_attempts + 1e-9 or out.detected_failure > 0
    assert out.expected_attempts <= sum(r + 1 for r in rs) + 1e-9


@laws
@given(probability, steps, st.integers(0, 200), probability, probability)
def test_shared_budget_is_bounded_by_the_ceiling(p, n, budget, miss, false_reject):
    success = F.shared_budget_success(p, n, budget, miss, false_reject)
    assert 0.0 <= success <= F.compound(F.verified_ceiling(p, miss, false_reject), n)


@laws
@given(probability, st.integers(1, 40))
def test_pass_at_k_bounds(p, k):
    assert 0.0 <= F.pass_hat_k(p, k) <= min(p, F.pass_at_k(p, k)) + 1e-16
    assert p - 1e-16 <= F.pass_at_k(p, k) <= 1.0


# --------------------------------------------------------------------------- monotonicity


@laws
@given(probability, retries, probability, probability)
def test_more_retries_never_lower_success(p, r, miss, false_reject):
    assert (
        F.verified_step(p, r + 1, miss, false_reject).success
        >= F.verified_step(p, r, miss, false_reject).success
    )
    assert F.retry_success(p, r + 1) >= F.retry_success(p, r)


@laws
@given(probability, steps, st.integers(0, 60), probability, probability)
def test_more_shared_budget_never_lowers_success(p, n, budget, miss, false_reject):
    low = F.shared_budget_success(p, n, budget, miss, false_reject)
    high = F.shared_budget_success(p, n, budget + 1, miss, false_reject)
    assert high >= low * (1 - 1e-13)


@laws
@given(probability, steps, retries, probability, probability)
def test_more_steps_never_raise_success(p, n, r, miss, false_reject):
    assert F.compound(p, n + 1) <= F.compound(p, n)
    step = F.verified_step(p, r, miss, false_reject).success
    assert F.compound(step, n + 1) <= F.compound(step, n)
    low = F.shared_budget_success(p, n + 1, r, miss, false_reject)
    assert low <= F.shared_budget_success(p, n, r, miss, false_reject) * (1 + 1e-13)
    chain = F.verified_chain([p] * n, r, miss, false_reject).success
    longer = F.verified_chain([p] * (n + 1), r, miss, false_reject).success
    assert longer <= chain * (1 + 1e-13)


@laws
@given(probability, probability, probability, probability)
def test_ceiling_falls_as_miss_grows(p, miss_a, miss_b, false_reject):
    low, high = sorted([miss_a, miss_b])
    assert F.verified_ceiling(p, high, false_reject) <= F.verified_ceiling(p, low, false_reject)


# ---------------------------------------------------------------------------- limits


@laws
@given(st.floats(0.01, 1.0), st.floats(0.0, 0.99), st.floats(0.0, 0.99))
def test_verified_step_tends_to_the_ceiling(p, miss, false_reject):
    ceiling = F.verified_ceiling(p, miss, false_reject)
    q = p * false_reject + (1 - p) * (1 - miss)
    for r in (0, 3, 10, 50):
        # the gap is exactly ceiling * q**(r+1)
        gap = ceiling - F.verified_step(p, r, miss, false_reject).success
        assert math.isclose(gap, ceiling * q ** (r + 1), rel_tol=1e-9, abs_tol=1e-15)
    # enough retries that the gap, ceiling * q**(r+1), is below 1e-14 of the ceiling (a fixed
    # 100,000 is not: at p = 1/64, false_reject = 63/64, q = 0.99976 and the gap is 2.5e-11)
    enough = 0 if q == 0.0 else math.ceil(math.log(1e-14) / math.log(q))
    assert math.isclose(
        F.verified_step(p, enough, miss, false_reject).success, ceiling, rel_tol=1e-13
    )


def test_verified_step_reaches_the_ceiling_only_with_enough_retries():
    # the corner hypothesis found: 100,000 retries leave a gap of 2.5e-11, and the law's
    # budget closes it (the closed form, by hand: q = p f + (1 - p)(1 - m))
    p, miss, false_reject = 0.015625, 0.0, 0.984375
    ceiling = F.verified_ceiling(p, miss, false_reject)
    q = p * false_reject + (1 - p) * (1 - miss)
    short = F.verified_step(p, 100_000, miss, false_reject).success
    assert math.isclose(ceiling - short, ceiling * q**100_001, rel_tol=1e-6)
    assert not math.isclose(short, ceiling, rel_tol=1e-13)
    enough = math.ceil(math.log(1e-14) / math.log(q))
    assert math.isclose(F.verified_step(p, enough, miss, false_reject).success, ceiling,
                        rel_tol=1e-13)


# ------------------------------------------------------------------------- identities


@laws
@given(probability, probability, probability)
def test_zero_retries_is_one_attempt(p, miss, false_reject):
    out = F.verified_step(p, 0, miss, false_reject)
    assert math.isclose(out.success, p * (1 - false_reject), rel_tol=1e-14, abs_tol=1e-300)
    assert math.isclose(out.silent_failure, (1 - p) * miss, rel_tol=1e-14, abs_tol=1e-300)
    assert out.expected_attempts == 1.0
    assert F.retry_success(p, 0) == p or math.isclose(F.retry_success(p, 0), p, rel_tol=1e-15)


@laws
@given(probability, retries)
def test_perfect_verifier_is_the_retry_formula(p, r):
    exact = 1 - (1 - Fraction(p)) ** (r + 1)
    out = F.verified_step(p, r)
    assert math.isclose(out.success, float(exact), rel_tol=1e-14, abs_tol=1e-300)
    assert math.isclose(F.retry_success(p, r), float(exact), rel_tol=1e-14, abs_tol=1e-300)
    assert out.silent_failure == 0.0
    # one step with a shared budget B is one step with B retries
    assert math.isclose(F.shared_budget_success(p, 1, r), float(exact), rel_tol=1e-13)


@laws
@given(st.floats(0.0, 1.0), retries, probability, probability)
def test_one_step_chain_is_a_step(p, r, miss, false_reject):
    step = F.verified_step(p, r, miss, false_reject)
    chain = F.verified_chain([p], r, miss, false_reject)
    assert math.isclose(chain.success, step.success, rel_tol=1e-13, abs_tol=1e-300)
    assert math.isclose(chain.silent_failure, step.silent_failure, rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(chain.detected_failure, step.exhausted, rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(chain.expected_attempts, step.expected_attempts, rel_tol=1e-13)


@laws
@given(probability, st.integers(1, 12), st.integers(0, 3), probability, probability)
def test_confusion_without_effect_is_the_plain_chain(p, n, r, miss, false_reject):
    plain = F.verified_chain([p] * n, r, miss, false_reject)
    # never confused (enter = 0), or confusion that does not hurt (factor = 1)
    for enter, recover, factor in [(0.0, 0.4, 0.3), (0.8, 0.1, 1.0)]:
        confused = F.confusion_chain(p, n, enter, recover, factor, r, miss, false_reject)
        for got, want in zip(confused, plain):
            assert math.isclose(got, want, rel_tol=1e-11, abs_tol=1e-14)


@laws
@given(st.floats(0.01, 0.99), st.integers(0, 40))
def test_logit_normal_without_spread_is_compound(p, n):
    assert math.isclose(F.logit_normal_chain(p, n, 0.0), F.compound(p, n), rel_tol=1e-15)


# ----------------------------------------------------------------- unbiased estimators


@laws
@given(st.integers(1, 25), st.data(), probability)
def test_estimators_are_unbiased_exactly(n, data, p):
    k = data.draw(st.integers(1, n))
    c = np.arange(n + 1)
    weights = [math.comb(n, int(ci)) * p ** int(ci) * (1 - p) ** (n - int(ci)) for ci in c]
    at = F.pass_at_k_estimate(n, c, k)
    hat = F.pass_hat_k_estimate(n, c, k)
    assert abs(math.fsum(w * e for w, e in zip(weights, at)) - F.pass_at_k(p, k)) <= 1e-12
    assert abs(math.fsum(w * e for w, e in zip(weights, hat)) - F.pass_hat_k(p, k)) <= 1e-12


def test_biased_plug_in_estimator_is_caught():
    # negative control: the plug-in 1 - (1 - c/n)^k is biased, and the same check sees it
    n, k, p = 10, 3, 0.3
    expectation = math.fsum(
        math.comb(n, c) * p**c * (1 - p) ** (n - c) * (1 - (1 - c / n) ** k) for c in range(n + 1)
    )
    assert abs(expectation - F.pass_at_k(p, k)) > 1e-3


# -------------------------------------------------------------------------- min_retries


def _meets(p, r, n, target, miss, false_reject):
    return F.compound(F.verified_step(p, r, miss, false_reject).success, n) >= target


def _exact_log_success(p, r, n, miss, false_reject):
    """log((a/(a+w) (1 - q**(r+1)))**n) from exact rationals (the floats' exact values),
    rounded once at the end (through the failure probability where it is small)."""
    p, miss, false_reject = (Fraction(x) for x in (p, miss, false_reject))
    a, w = p * (1 - false_reject), (1 - p) * miss
    q = 1 - a - w
    if a == 0:
        return -math.inf
    success = (a / (a + w) * (1 - q ** (r + 1))) ** n
    failure = 1 - success
    return math.log1p(-float(failure)) if failure < Fraction(1, 2) else math.log(float(success))


def _exact_meets(p, r, n, target, miss, false_reject):
    """The rule of formulas.meets_target, decided on exact rationals; ``None`` when the
    exact answer lies within double rounding (1e-13 relative in log success) of the target,
    where no double computation can be asked to decide."""
    log_goal = math.log1p(-float(1 - Fraction(target))) if target > 0.5 else math.log(target)
    log_success = _exact_log_success(p, r, n, miss, false_reject)
    if abs(log_success - log_goal) <= 1e-13 * abs(log_goal):
        return None
    return log_success > log_goal


@st.composite
def planning_cases(draw):
    p = draw(st.floats(0.05, 1.0))
    n = draw(st.integers(1, 60))
    miss = draw(st.one_of(st.just(0.0), st.floats(0.0, 0.5)))
    false_reject = draw(st.one_of(st.just(0.0), st.floats(0.0, 0.5)))
    ceiling = F.compound(F.verified_ceiling(p, miss, false_reject), n)
    target = draw(
        st.one_of(st.floats(1e-3, 1.0), st.just(1.0), st.just(ceiling), st.just(1 - 2**-53))
    )
    assume(target > 0)
    return p, n, target, miss, false_reject


EXACT_WORK = 40_000


@pytest.mark.slow
@settings(deadline=None, max_examples=80)
@given(planning_cases())
def test_min_retries_is_the_least_budget_in_exact_arithmetic(case):
    """min_retries against exact rationals: the budget it gives meets the target and one
    fewer does not, unless exact arithmetic puts either within double rounding of it."""
    p, n, target, miss, false_reject = case
    got = F.min_retries(p, n, target, miss, false_reject)
    fp, fm, ff = (Fraction(x) for x in (p, miss, false_reject))
    a, w = fp * (1 - ff), (1 - fp) * fm
    q = 1 - a - w
    exact_ceiling = (a / (a + w)) ** n if a > 0 else Fraction(0)
    if got is None:
        # exact: the ceiling is below the target, or equal to it with q > 0 (only the limit
        # reaches it); or within rounding of the target
        gap = exact_ceiling - Fraction(target)
        assert gap < 0 or (gap == 0 and q > 0) or abs(gap) <= 1e-13 * Fraction(target)
        return
    if target == 1.0:
        assert q == 0 and w == 0  # target 1 only for a design that cannot fail
    assume(got * n <= EXACT_WORK)  # exact powers of that size take milliseconds
    assert _exact_meets(p, got, n, target, miss, false_reject) in (True, None)
    if got > 0:
        assert _exact_meets(p, got - 1, n, target, miss, false_reject) in (False, None)


def test_min_retries_near_one_needs_the_exact_budget():
    """1 - 2**-53 over 25 steps at p = 0.5: (1 - 2**-(r+1))**25 >= 1 - 2**-53 first holds at
    r = 57 (25 * 2**-58 < 2**-53 < 25 * 2**-57), though r = 53 already rounds to 1."""
    target = 0.9999999999999999
    assert Fraction(target) == 1 - Fraction(1, 2**53)
    truth = next(
        r for r in range(100)
        if (1 - Fraction(1, 2 ** (r + 1))) ** 25 >= Fraction(target)
    )
    assert truth == 57
    assert F.min_retries(0.5, 25, target) == truth
    assert F.min_retries(0.5, 25, 1.0) is None  # q > 0: only the limit reaches 1


# ------------------------------------------------------- brute-force path enumeration


def _verdicts(correct_p, miss, false_reject):
    """(correct, accepted, probability) of one attempt's two draws."""
    for correct, pc in ((True, correct_p), (False, 1 - correct_p)):
        accept = (1 - false_reject) if correct else miss
        for accepted, pa in ((True, accept), (False, 1 - accept)):
            if pc * pa > 0:
                yield correct, accepted, pc * pa


def _enumerate_chain(ps, rs, ms, fs):
    """Every attempt path of a verified chain with per-step budgets (docs/model.md section 3)."""
    total = {"success": 0.0, "silent": 0.0, "detected": 0.0, "attempts": 0.0}

    def attempt(i, j, tainted, prob, attempts):
        if i == len(ps):
            total["silent" if tainted else "success"] += prob
            total["attempts"] += prob * attempts
            return
        for correct, accepted, pr in _verdicts(ps[i], ms[i], fs[i]):
            if accepted:
                attempt(i + 1, 0, tainted or not correct, prob * pr, attempts + 1)
            elif j < rs[i]:
                attempt(i, j + 1, tainted, prob * pr, attempts + 1)
            else:
                total["detected"] += prob * pr
                total["attempts"] += prob * pr * (attempts + 1)

    attempt(0, 0, False, 1.0, 0)
    return total


@settings(deadline=None, max_examples=50)
@given(st.integers(1, 4), st.data())
def test_verified_chain_equals_path_enumeration(n, data):
    ps = data.draw(st.lists(probability, min_size=n, max_size=n))
    rs = data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    assume(sum(r + 1 for r in rs) <= 7)
    ms = data.draw(st.lists(probability, min_size=n, max_size=n))
    fs = data.draw(st.lists(probability, min_size=n, max_size=n))
    want = _enumerate_chain(ps, rs, ms, fs)
    got = F.verified_chain(ps, rs, ms, fs)
    assert math.isclose(got.success, want["success"], rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(got.silent_failure, want["silent"], rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(got.detected_failure, want["detected"], rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(got.expected_attempts, want["attempts"], rel_tol=1e-12, abs_tol=1e-15)


def _enumerate_shared_budget(p, n, budget, miss, false_reject):
    """P(success) over every attempt path with one task-wide budget and no per-step cap."""

    def attempt(i, left):
        if i == n:
            return 1.0
        total = 0.0
        for correct, accepted, pr in _verdicts(p, miss, false_reject):
            if accepted and correct:
                total += pr * attempt(i + 1, left)
            elif not accepted and left > 0:
                total += pr * attempt(i, left - 1)
            # accepted and wrong: not a success; rejected with no budget: detected
        return total

    return attempt(0, budget)


@settings(deadline=None, max_examples=60)
@given(probability, st.integers(1, 4), st.integers(0, 3), probability, probability)
def test_shared_budget_equals_path_enumeration(p, n, budget, miss, false_reject):
    want = _enumerate_shared_budget(p, n, budget, miss, false_reject)
    got = F.shared_budget_success(p, n, budget, miss, false_reject)
    assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15)


def _enumerate_confusion(p, n, enter, recover, factor, r, miss, false_reject):
    """Every path of docs/model.md section 3's pseudo-code with confusion, a verifier and a
    per-step budget (the state moves after the correctness draw, before the verdict)."""
    total = {"success": 0.0, "silent": 0.0, "detected": 0.0, "attempts": 0.0}

    def attempt(i, j, confused, tainted, prob, attempts):
        if i == n:
            total["silent" if tainted else "success"] += prob
            total["attempts"] += prob * attempts
            return
        pe = p * (factor if confused else 1.0)
        for correct, pc in ((True, pe), (False, 1 - pe)):
            if not correct and not confused:
                moves = ((True, enter), (False, 1 - enter))
            elif correct and confused:
                moves = ((False, recover), (True, 1 - recover))
            else:
                moves = ((confused, 1.0),)
            for state, pm in moves:
                accept = (1 - false_reject) if correct else miss
                for accepted, pa in ((True, accept), (False, 1 - accept)):
                    pr = prob * pc * pm * pa
                    if pr == 0:
                        continue
                    if accepted:
                        attempt(i + 1, 0, state, tainted or not correct, pr, attempts + 1)
                    elif j < r:
                        attempt(i, j + 1, state, tainted, pr, attempts + 1)
                    else:
                        total["detected"] += pr
                        total["attempts"] += pr * (attempts + 1)

    attempt(0, 0, False, False, 1.0, 0)
    return total


@settings(deadline=None, max_examples=40)
@given(
    probability,
    st.integers(1, 3),
    probability,
    probability,
    probability,
    st.integers(0, 2),
    probability,
    probability,
)
def test_confusion_chain_equals_path_enumeration(p, n, enter, recover, factor, r, miss, f):
    assume(n * (r + 1) <= 5)
    want = _enumerate_confusion(p, n, enter, recover, factor, r, miss, f)
    got = F.confusion_chain(p, n, enter, recover, factor, r, miss, f)
    assert math.isclose(got.success, want["success"], rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(got.silent_failure, want["silent"], rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(got.detected_failure, want["detected"], rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(got.expected_attempts, want["attempts"], rel_tol=1e-12, abs_tol=1e-15)


def test_enumeration_tells_a_wrong_model_apart():
    # negative control: the comparison has power; a slightly different factor, or no
    # confusion at all, misses the enumeration by far more than the tolerance
    want = _enumerate_confusion(0.9, 3, 0.7, 0.3, 0.5, 1, 0.3, 0.0)["success"]
    close = F.confusion_chain(0.9, 3, 0.7, 0.3, 0.55, 1, 0.3, 0.0).success
    assert abs(close - want) > 1e-4
    plain = F.verified_chain([0.9] * 3, 1, 0.3).success  # no confusion at all
    assert abs(plain - want) > 1e-3
