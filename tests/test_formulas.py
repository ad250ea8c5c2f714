"""The closed forms against numbers from outside the code: the lesson, docs/model.md, exact
rational arithmetic, direct numerical integration; their numerics at the extremes; and every
kind of bad input."""

import math
from fractions import Fraction

import numpy as np
import pytest

from relsim import formulas as F
from relsim.errors import RelsimError

# --------------------------------------------------------------------------- worked values


@pytest.mark.parametrize(
    "p, expected",
    [  # the lesson's compounding table and docs/model.md section 2, n = 5, 10, 20, 50
        (0.90, [0.590, 0.349, 0.122, 0.005]),
        (0.95, [0.774, 0.599, 0.358, 0.077]),
        (0.99, [0.951, 0.904, 0.818, 0.605]),
    ],
)
def test_compound_table(p, expected):
    got = F.compound(p, [5, 10, 20, 50])
    assert isinstance(got, np.ndarray) and got.shape == (4,)
    assert np.round(got, 3).tolist() == expected


def test_pass_at_k_and_pass_hat_k_lesson():
    # the lesson's "math check": p = 0.7, k = 3 gives 97% against 34%
    assert round(F.pass_at_k(0.7, 3), 3) == 0.973
    assert round(F.pass_hat_k(0.7, 3), 3) == 0.343


def test_lesson_planning_exercise():
    # docs/model.md section 2: 25 steps, target 0.95
    assert round(F.required_step_success(0.95, 25), 6) == 0.997950
    assert F.min_retries(0.9, 25, 0.95) == 2
    assert round(F.retry_success(0.9, 2) ** 25, 6) == 0.975298  # 0.999**25
    assert round(F.compound(F.verified_step(0.9, 2).success, 25), 6) == 0.975298
    # with miss = 0.1 the step ceiling caps the task below the target at any budget
    assert round(F.verified_ceiling(0.9, miss=0.1), 6) == 0.989011
    assert round(F.compound(F.verified_ceiling(0.9, miss=0.1), 25), 6) == 0.758626
    assert F.min_retries(0.9, 25, 0.95, miss=0.1) is None
    # the lesson: "a 20-step task needs ~99.5% per-step accuracy for 90% success"
    assert round(F.required_step_success(0.9, 20), 3) == 0.995


def test_retry_success_lesson():
    # the lesson: p = 0.9 with r = 2 retries gives 1 - 0.1**3 = 0.999
    assert F.retry_success(0.9, 2) == pytest.approx(0.999, abs=1e-15)


# docs/model.md section 5: the reference rows that the closed-form chains cover exactly
@pytest.mark.parametrize(
    "p, retries, miss, expected",
    [
        (0.9, 2, 0.0, (0.975298, 0.0, 0.024702, 27.419539)),  # R1
        (0.9, 3, 0.1, (0.757383, 0.240978, 0.001639, 27.449108)),  # R2
    ],
)
def test_verified_chain_reference_rows(p, retries, miss, expected):
    out = F.verified_chain([p] * 25, retries, miss=miss)
    assert [round(x, 6) for x in out] == list(expected)


def test_verified_chain_without_verifier_is_r8():
    # docs/model.md R8: 20 steps at p = 0.95, no verifier (miss = 1, no retries)
    out = F.verified_chain(np.full(20, 0.95), 0, miss=1.0)
    assert [round(x, 6) for x in out] == [0.358486, 0.641514, 0.0, 20.0]


def test_confusion_chain_reference_r5():
    # docs/model.md R5
    out = F.confusion_chain(0.9, 8, enter=0.7, recover=0.3, factor=0.5, retries=2, miss=0.3)
    assert [round(x, 6) for x in out] == [0.616865, 0.282803, 0.100332, 8.750814]
    assert isinstance(out.success, float)


def test_shared_budget_small_case_by_hand():
    # 2 steps, one shared retry, perfect verifier: paths aa, raa, ara -> 0.81 (1 + 2 * 0.1)
    assert F.shared_budget_success(0.9, 2, 1) == pytest.approx(0.81 * 1.2, abs=1e-15)


def test_checkpoint_interval_minimises_young_cost():
    # the first-order cost per step of checking every k steps: C/k + (1-p) k/2
    for p, cost in [(0.98, 1.0), (0.9, 3.0), (0.999, 0.5)]:
        k = np.linspace(0.01, 1000, 2_000_001)
        best = k[np.argmin(cost / k + (1 - p) * k / 2)]
        assert F.checkpoint_interval(p, cost) == pytest.approx(best, abs=1e-3)
    assert F.checkpoint_interval(1.0, 2.0) == math.inf


def test_max_miss_and_min_p_sit_on_the_ceiling():
    # at the thresholds the task ceiling is exactly the target
    m = F.max_miss(0.9, 25, 0.95)
    assert F.compound(F.verified_ceiling(0.9, m), 25) == pytest.approx(0.95, rel=1e-13)
    p = F.min_p(25, 0.95, miss=0.1, false_reject=0.05)
    assert F.compound(F.verified_ceiling(p, 0.1, 0.05), 25) == pytest.approx(0.95, rel=1e-12)
    # just inside the threshold the target is reachable with finite retries, just outside not
    assert F.min_retries(0.9, 25, 0.95, miss=m * 0.999) is not None
    assert F.min_retries(0.9, 25, 0.95, miss=m * 1.001) is None
    assert F.min_retries(p * 1.0001, 25, 0.95, 0.1, 0.05) is not None
    assert F.min_retries(p * 0.9999, 25, 0.95, 0.1, 0.05) is None
    # degenerate ends
    assert F.max_miss(1.0, 25, 0.95) == 1.0
    assert F.max_miss(0.0, 25, 0.95) is None
    assert F.min_p(25, 0.95, false_reject=1.0) is None
    assert F.min_p(25, 0.95, miss=0.0) == 0.0
    assert np.isnan(F.max_miss([0.0, 0.9], 25, 0.95)[0])
    # a target of 1 leaves no miss at all: 0.0, not -0.0
    assert math.copysign(1.0, F.max_miss(0.9, 25, 1.0)) == 1.0
    assert np.all(np.signbit(F.max_miss([0.5, 0.9], 25, 1.0)) == False)  # noqa: E712


def test_undefined_answers_are_none_for_scalars_and_nan_in_arrays():
    # the module's one rule, for every function whose answer can fail to exist
    undefined = [
        (F.min_retries, (0.9, 25, 0.95), {"miss": 0.1}, (0.9, 25, 0.95), {"miss": [0.0, 0.1]}),
        (F.max_miss, (0.0, 25, 0.95), {}, ([0.9, 0.0], 25, 0.95), {}),
        (F.min_p, (25, 0.95), {"false_reject": 1.0}, (25, 0.95), {"false_reject": [0.0, 1.0]}),
    ]
    for function, args, kwargs, array_args, array_kwargs in undefined:
        assert function(*args, **kwargs) is None, function.__name__
        out = function(*array_args, **array_kwargs)
        assert isinstance(out, np.ndarray) and np.isfinite(out[0]) and np.isnan(out[1])


def test_estimate_of_zero_is_plus_zero():
    # no -0.0 in results (it would print as -0.0 in JSON)
    assert math.copysign(1.0, F.pass_at_k_estimate(5, 0, 2)) == 1.0
    assert math.copysign(1.0, F.pass_hat_k_estimate(5, 0, 2)) == 1.0


# ------------------------------------------------------------------- scalars and arrays


def test_scalars_give_python_floats():
    assert type(F.compound(0.9, 3)) is float
    assert type(F.pass_at_k_estimate(10, 3, 2)) is float
    assert type(F.verified_step(0.9, 2, 0.1).success) is float
    assert type(F.verified_chain([0.9, 0.8], 1).expected_attempts) is float
    assert type(F.min_retries(0.9, 25, 0.95)) is int
    assert type(F.logit_normal_chain(0.9, 5, 0.5)) is float


def test_broadcasting_shapes():
    p = np.array([[0.8], [0.9]])
    assert F.retry_success(p, [0, 1, 2]).shape == (2, 3)
    assert F.verified_step(p, [0, 1, 2], miss=0.1).exhausted.shape == (2, 3)
    assert F.shared_budget_success(p, 5, [0, 3]).shape == (2, 2)
    assert F.pass_at_k_estimate([10, 20], [3, 4], 2).shape == (2,)
    assert F.chain_success(np.full((3, 4), 0.5)).shape == (3,)
    chains = F.verified_chain(np.full((3, 4), 0.9), [0, 1, 2, 3], miss=0.1)
    assert chains.success.shape == (3,)
    assert F.confusion_chain([0.8, 0.9], 4, 0.5, 0.5, 0.5).silent_failure.shape == (2,)


def test_min_retries_array_gives_nan_where_infeasible():
    got = F.min_retries([0.9, 0.9, 0.5], 25, 0.95, miss=[0.0, 0.1, 0.0])
    assert got[0] == 2 and np.isnan(got[1]) and got[2] == F.min_retries(0.5, 25, 0.95)


# ------------------------------------------------------------------------------ numerics


def _exact_ratio(n, c, k):
    """C(n-c, k) / C(n, k) exactly; by C(n-c,k) C(n,c) = C(n-k,c) C(n,k) (both count the
    ways to pick disjoint sets of sizes c and k) take whichever pair of binomials is smaller."""
    if c + k > n:
        return Fraction(0)  # C(n-c, k) = 0
    if c <= k:
        return Fraction(math.comb(n - k, c), math.comb(n, c))
    return Fraction(math.comb(n - c, k), math.comb(n, k))


@pytest.mark.parametrize(
    "n, c, k",
    [
        (1_000_000, 500_000, 1000),
        (1_000_000, 999_000, 1000),
        (1_000_000, 10, 5),
        (1_000_000, 999_995, 3),
        (1_000_000, 1, 999_999),
        (999_999, 3, 500_000),
        (1_000_000, 200_000, 20),
        (10, 3, 4),
    ],
)
def test_estimators_exact_for_large_n(n, c, k):
    # exact rational values from integer binomial coefficients
    at_exact = 1 - _exact_ratio(n, c, k)
    hat_exact = _exact_ratio(n, n - c, k)  # C(c,k)/C(n,k)
    at, hat = F.pass_at_k_estimate(n, c, k), F.pass_hat_k_estimate(n, c, k)
    assert at == pytest.approx(float(at_exact), rel=1e-12, abs=0)
    assert hat == pytest.approx(float(hat_exact), rel=1e-12, abs=0)


def test_estimators_small_cases_match_exact_fractions():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                at = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
                hat = Fraction(math.comb(c, k), math.comb(n, k))
                assert F.pass_at_k_estimate(n, c, k) == pytest.approx(float(at), rel=1e-14)
                assert F.pass_hat_k_estimate(n, c, k) == pytest.approx(float(hat), rel=1e-14)


def test_estimator_tiny_value_keeps_relative_accuracy():
    # pass@1 with one success in 10^6 trials is exactly 1e-6; no cancellation in 1 - ratio
    assert F.pass_at_k_estimate(1_000_000, 1, 1) == pytest.approx(1e-6, rel=1e-14)
    assert F.pass_hat_k_estimate(1_000_000, 1, 1) == pytest.approx(1e-6, rel=1e-14)


@pytest.mark.parametrize("p", [1 - 1e-9, 1 - 1e-7, 0.999999, 0.99999999999])
@pytest.mark.parametrize("n", [1_000, 1_000_000, 10_000_000])
def test_compound_near_one(p, n):
    reference = math.exp(n * math.log1p(p - 1))  # p - 1 is exact for p in [0.5, 1]
    assert F.compound(p, n) == pytest.approx(reference, rel=1e-12)


def test_retry_success_small_p_keeps_relative_accuracy():
    # 1 - (1-p)^(r+1) = (r+1) p - C(r+1, 2) p^2 + ...; naive 1 - (1-p)**3 loses it all
    p = 1e-12
    assert F.retry_success(p, 2) == pytest.approx(3 * p - 3 * p * p, rel=1e-12)
    assert F.pass_at_k(p, 5) == pytest.approx(5 * p, rel=1e-10)


def test_verified_step_when_q_is_zero_or_one():
    # q = 1: nothing is ever accepted (p = 0 behind a perfect verifier; or false_reject = 1)
    for p, miss, f in [(0.0, 0.0, 0.0), (1.0, 0.3, 1.0), (0.4, 0.0, 1.0)]:
        out = F.verified_step(p, 4, miss, f)
        assert out == (0.0, 0.0, 1.0, 5.0)  # S_r = r + 1
    # q = 0: the first attempt is always accepted
    for p, miss, f in [(1.0, 0.5, 0.0), (0.3, 1.0, 0.0), (0.0, 1.0, 0.7)]:
        out = F.verified_step(p, 4, miss, f)
        assert out.exhausted == 0.0 and out.expected_attempts == 1.0
        assert out.success == pytest.approx(p * (1 - f), abs=1e-16)
        assert out.silent_failure == pytest.approx((1 - p) * miss, abs=1e-16)


def test_verified_step_with_q_just_below_one():
    # 1 - q = 1e-20 rounds q to 1.0 in floating point, but S_r must still be about r + 1
    p = 1e-20
    out = F.verified_step(p, 9)
    assert out.expected_attempts == pytest.approx(10.0, rel=1e-12)
    assert out.success == pytest.approx(10 * p, rel=1e-12)


def test_verified_step_matches_exact_fractions():
    for p, r, m, f in [(0.9, 3, 0.1, 0.05), (0.3, 7, 0.5, 0.2), (0.99, 0, 0.2, 0.0)]:
        P, M, FR = Fraction(p), Fraction(m), Fraction(f)
        a, w, q = P * (1 - FR), (1 - P) * M, P * FR + (1 - P) * (1 - M)
        s = sum(q**j for j in range(r + 1))
        out = F.verified_step(p, r, m, f)
        assert out.success == pytest.approx(float(a * s), rel=1e-14)
        assert out.silent_failure == pytest.approx(float(w * s), rel=1e-14)
        assert out.exhausted == pytest.approx(float(q ** (r + 1)), rel=1e-14)
        assert out.expected_attempts == pytest.approx(float(s), rel=1e-14)


def test_shared_budget_matches_exact_fractions_for_long_chains():
    for p, m, n, budget in [(0.5, 0.0, 200, 300), (0.75, 0.1, 500, 100), (0.9, 0.05, 25, 40)]:
        P, M = Fraction(p), Fraction(m)
        a, q = P, (1 - P) * (1 - M)
        exact = a**n * sum(math.comb(n - 1 + j, j) * q**j for j in range(budget + 1))
        assert F.shared_budget_success(p, n, budget, miss=m) == pytest.approx(
            float(exact), rel=1e-12
        )


def test_shared_budget_huge_budget_tends_to_the_ceiling():
    for p, m in [(0.9, 0.0), (0.5, 0.2)]:
        ceiling = F.compound(F.verified_ceiling(p, m), 25)
        assert F.shared_budget_success(p, 25, 10**12, miss=m) == pytest.approx(ceiling, rel=1e-12)


def test_min_retries_at_the_ceiling():
    # a target equal to the task ceiling is reachable only in the limit of unlimited retries
    ceiling = F.compound(F.verified_ceiling(0.9, 0.1), 25)
    assert F.min_retries(0.9, 25, ceiling, miss=0.1) is None
    assert F.min_retries(0.9, 25, 1.0) is None  # perfect verifier, p < 1: ceiling 1 = target
    # ... unless some finite budget gets there: q = 0 means the first attempt always counts
    assert F.min_retries(1.0, 25, 1.0) == 0
    assert F.min_retries(1.0, 25, 1.0, miss=0.4) == 0
    assert F.min_retries(1.0, 25, 1.0, false_reject=0.1) is None  # q = f > 0
    # just under the ceiling a finite (large) budget works, and it is the least one
    target = ceiling * (1 - 1e-12)
    r = F.min_retries(0.9, 25, target, miss=0.1)
    assert r is not None
    assert F.compound(F.verified_step(0.9, r, 0.1).success, 25) >= target
    assert F.compound(F.verified_step(0.9, r - 1, 0.1).success, 25) < target


def test_min_retries_with_q_near_one_gives_a_huge_exact_budget():
    # p = 1e-6: about 3 million attempts per step for 95% of one step
    r = F.min_retries(1e-6, 1, 0.95)
    assert F.retry_success(1e-6, r) >= 0.95 > F.retry_success(1e-6, r - 1)
    assert r == math.ceil(math.log(0.05) / math.log1p(-1e-6)) - 1


# ---------------------------------------------------------------- correlated closed forms


@pytest.mark.parametrize("alpha, beta, n", [(9.0, 1.0, 10), (2.5, 0.7, 25), (0.5, 0.5, 3)])
def test_latent_difficulty_chain_against_beta_integral(alpha, beta, n):
    from scipy import integrate, stats

    direct, _ = integrate.quad(
        lambda x: x**n * stats.beta.pdf(x, alpha, beta), 0, 1, epsabs=1e-14, epsrel=1e-12
    )
    assert F.latent_difficulty_chain(alpha, beta, n) == pytest.approx(direct, rel=1e-8)
    # the beta-binomial probability of n successes out of n
    assert F.latent_difficulty_chain(alpha, beta, n) == pytest.approx(
        stats.betabinom.pmf(n, n, alpha, beta), rel=1e-10
    )


def test_latent_difficulty_chain_moments():
    # steps = 1, 2 give the Beta's first two moments; steps = 0 gives 1
    alpha, beta = 3.0, 0.4
    mean = alpha / (alpha + beta)
    variance = alpha * beta / ((alpha + beta) ** 2 * (alpha + beta + 1))
    assert F.latent_difficulty_chain(alpha, beta, 1) == pytest.approx(mean, rel=1e-14)
    second_moment = variance + mean**2
    assert F.latent_difficulty_chain(alpha, beta, 2) == pytest.approx(second_moment, rel=1e-14)
    assert F.latent_difficulty_chain(alpha, beta, 0) == 1.0
    # a spread in difficulty never hurts a chain (Jensen): E[p^n] >= E[p]^n
    assert F.latent_difficulty_chain(alpha, beta, 25) > mean**25


def _fine_grid_logit_normal(p, n, sd):
    z = np.linspace(-14, 14, 400_001)
    x = math.log(p) - math.log1p(-p) + sd * z
    integrand = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * (1 / (1 + np.exp(-x))) ** n
    return float(np.sum((integrand[1:] + integrand[:-1]) / 2) * (z[1] - z[0]))


@pytest.mark.parametrize(
    "p, n, sd", [(0.9, 8, 1.0), (0.9, 25, 0.5), (0.99, 200, 2.0), (0.7, 25, 3.0), (0.5, 1, 1.0)]
)
def test_logit_normal_chain_against_fine_grid(p, n, sd):
    reference = _fine_grid_logit_normal(p, n, sd)
    assert F.logit_normal_chain(p, n, sd) == pytest.approx(reference, rel=1e-9)
    # Gauss-Hermite with enough nodes agrees too on the gentle cases
    if sd <= 1.0:
        assert F.logit_normal_chain(p, n, sd, nodes=64) == pytest.approx(reference, rel=1e-9)


def test_logit_normal_chain_edges():
    assert F.logit_normal_chain(0.9, 10, 0.0) == pytest.approx(0.9**10, rel=1e-15)
    assert F.logit_normal_chain(1.0, 10, 2.0) == 1.0  # p = 1 is not shifted
    assert F.logit_normal_chain(0.0, 10, 2.0) == 0.0
    assert F.logit_normal_chain(0.3, 0, 2.0) == 1.0
    # one step: E[expit(logit p + sd z)] is symmetric around 1/2 for p = 1/2
    assert F.logit_normal_chain(0.5, 1, 1.7) == pytest.approx(0.5, abs=1e-14)


# ------------------------------------------------------------------------------ bad input

BAD = [
    # (function, args, kwargs, fragment of the message)
    (F.compound, (1.2, 3), {}, "p: must be a probability in [0, 1], got 1.2"),
    (F.compound, (float("nan"), 3), {}, "p: must be a probability in [0, 1]"),
    (F.compound, (-0.1, 3), {}, "p: must be a probability"),
    (F.compound, (0.9, -1), {}, "steps: must be an integer in 0..2**62, got -1"),
    (F.compound, (0.9, 2.5), {}, "steps: must be an integer in 0..2**62, got 2.5"),
    (F.compound, (0.9, "x"), {}, "steps: must be an integer in 0..2**62"),
    (F.compound, ("x", 3), {}, "p: must be a probability"),
    (F.chain_success, ([0.9, 1.5],), {}, "ps: must be a probability"),
    (F.required_step_success, (1.5, 25), {}, "target: must be a number in (0, 1], got 1.5"),
    (F.required_step_success, (0.0, 25), {}, "target: must be a number in (0, 1]"),
    (F.required_step_success, (float("nan"), 25), {}, "target: must be a number in (0, 1]"),
    (F.required_step_success, (0.9, 0), {}, "steps: must be an integer in 1..2**62, got 0"),
    (F.retry_success, (0.9, -1), {}, "retries: must be an integer in 0..2**62, got -1"),
    (F.retry_success, (0.9, 1.5), {}, "retries: must be an integer in 0..2**62"),
    (F.verified_step, (0.9, 2), {"miss": 2.0}, "miss: must be a probability in [0, 1], got 2.0"),
    (F.verified_step, (0.9, 2), {"false_reject": -0.5}, "false_reject: must be a probability"),
    (F.verified_step, (0.9, float("nan")), {}, "retries: must be an integer in 0..2**62"),
    (F.verified_ceiling, (0.9,), {"miss": float("nan")}, "miss: must be a probability"),
    (F.pass_at_k, (0.7, 0), {}, "k: must be an integer in 1..2**62, got 0"),
    (F.pass_hat_k, (1.7, 3), {}, "p: must be a probability"),
    (F.pass_at_k_estimate, (5, 2, 6), {}, "k: must be an integer in [1, n]"),
    (F.pass_at_k_estimate, (5, 6, 2), {}, "c: must be an integer in [0, n]"),
    (F.pass_at_k_estimate, (5, 2, 0), {}, "k: must be an integer in 1..2**62"),
    (F.pass_at_k_estimate, (5, -1, 2), {}, "c: must be an integer in 0..2**62"),
    (F.pass_at_k_estimate, (5.5, 2, 2), {}, "n: must be an integer in 1..2**62"),
    (F.pass_hat_k_estimate, (3, 2, 4), {}, "k: must be an integer in [1, n]"),
    (F.pass_hat_k_estimate, (3, 4, 2), {}, "c: must be an integer in [0, n]"),
    (F.pass_hat_k_estimate, (0, 0, 1), {}, "n: must be an integer in 1..2**62"),
    (F.min_retries, (0.9, 25, 1.5), {}, "target: must be a number in (0, 1]"),
    (F.min_retries, (0.9, 25, 0.0), {}, "target: must be a number in (0, 1]"),
    (F.min_retries, (0.9, 0, 0.9), {}, "steps: must be an integer in 1..2**62"),
    (F.min_retries, (0.9, 25, 0.9), {"miss": 1.1}, "miss: must be a probability"),
    (F.shared_budget_success, (0.9, 25, -1), {}, "budget: must be an integer in 0..2**62, got -1"),
    (F.shared_budget_success, (0.9, 25, 2.5), {}, "budget: must be an integer in 0..2**62"),
    (F.verified_chain, ([0.9, 0.8], [1, -1]), {}, "retries: must be an integer in 0..2**62"),
    (F.verified_chain, ([0.9, 1.8], 1), {}, "p: must be a probability"),
    (F.latent_difficulty_chain, (0.0, 1.0, 3), {}, "alpha: must be a finite number > 0"),
    (F.latent_difficulty_chain, (1.0, -1.0, 3), {}, "beta: must be a finite number > 0"),
    (F.logit_normal_chain, (0.9, 3, -1.0), {}, "task_sd: must be a number in [0, 1000]"),
    (F.logit_normal_chain, (0.9, 3, 1.0), {"nodes": 0}, "nodes: must be None or an integer in 1..1000"),
    (F.confusion_chain, (0.9, 3, 1.5, 0.5, 0.5), {}, "enter: must be a probability"),
    (F.confusion_chain, (0.9, 3, 0.5, 0.5, 0.5), {"retries": -2}, "retries: must be an integer"),
    (F.checkpoint_interval, (0.9, -1.0), {}, "checkpoint_cost: must be a finite number >= 0"),
    (F.max_miss, (0.9, 25, 1.5), {}, "target: must be a number in (0, 1]"),
    (F.min_p, (25, 0.95), {"miss": 3.0}, "miss: must be a probability"),
]


@pytest.mark.parametrize("function, args, kwargs, message", BAD)
def test_bad_input_names_the_argument_and_range(function, args, kwargs, message):
    with pytest.raises(RelsimError) as error:
        function(*args, **kwargs)
    assert message in str(error.value)


def test_integral_floats_are_accepted_as_counts():
    assert F.compound(0.9, 3.0) == F.compound(0.9, 3)
    assert F.pass_at_k_estimate(10.0, 3.0, 2.0) == F.pass_at_k_estimate(10, 3, 2)


@pytest.mark.parametrize(
    "log_success, target, named",
    [(None, 0.9, "log_success"), ("x", 0.9, "log_success"), (math.nan, 0.9, "log_success"),
     (np.array([-0.1]), 0.9, "log_success"), (0.0, -1.0, "target"), (0.0, 1.5, "target"),
     (0.0, 0.0, "target"), (0.0, math.nan, "target"), (0.0, None, "target"),
     (0.0, np.array([0.5]), "target")],
)
def test_meets_target_names_its_bad_argument(log_success, target, named):
    # a TypeError from the comparison, a math domain error, or a silent answer before
    with pytest.raises(RelsimError, match=rf"^{named}: must be"):
        F.meets_target(log_success, target)


def test_meets_target_takes_the_edges():
    assert F.meets_target(-math.inf, 1e-300) is False  # success 0 never meets a target
    assert F.meets_target(0.0, 1.0) and not F.meets_target(-1e-300, 1.0)
    assert F.meets_target(np.float64(math.log(0.95)), np.float64(0.95))
