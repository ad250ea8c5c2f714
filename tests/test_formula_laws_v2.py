"""The laws the closed forms of model v2 obey (votes, best-of-n, mixtures, ladders, utility),
stated as hypothesis properties: bounds, parts that sum to 1, monotonicity where it truly
holds, identities and limits. Brute-force enumeration is in tests/test_formulas_v2.py."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from relsim import formulas as F

probability = st.floats(0.0, 1.0)
voters = st.integers(1, 64)
wrong_answers = st.one_of(st.integers(1, 12), st.just("distinct"))
retries = st.integers(0, 30)
# 25 examples a law keeps the file near 3 s (each law passed 600 when it was written)
laws = settings(deadline=None, max_examples=25)


def _sums_to_one(values, tolerance=1e-12):
    assert abs(math.fsum(values) - 1.0) <= tolerance, values


# ------------------------------------------------------------------------------- votes


@laws
@given(probability, probability, voters)
def test_majority_vote_is_a_probability_that_rises_with_p(p_a, p_b, n):
    low, high = sorted([p_a, p_b])
    assert 0.0 <= F.majority_vote(low, n) <= F.majority_vote(high, n) + 1e-15 <= 1.0 + 1e-15


@laws
@given(probability, voters)
def test_majority_vote_is_symmetric_and_an_even_n_ties_the_odd_below(p, n):
    # one wrong answer and fair tie-breaks: the wrong answer wins what the right one loses
    assert math.isclose(F.majority_vote(1.0 - p, n), 1.0 - F.majority_vote(p, n), abs_tol=1e-14)
    if n % 2 == 0:
        assert math.isclose(F.majority_vote(p, n), F.majority_vote(p, n - 1), rel_tol=1e-13, abs_tol=1e-300)


@laws
@given(st.floats(0.5, 1.0), st.integers(0, 40))
def test_more_voters_help_when_each_is_more_often_right(p, half):
    # Condorcet's jury theorem over odd juries
    n = 2 * half + 1
    assert F.majority_vote(p, n + 2) >= F.majority_vote(p, n) - 1e-15


@laws
@given(probability, probability, voters, wrong_answers)
def test_plurality_vote_is_a_probability_that_rises_with_p(p_a, p_b, n, m):
    low, high = sorted([p_a, p_b])
    assert 0.0 <= F.plurality_vote(low, n, m) <= F.plurality_vote(high, n, m) + 1e-14 <= 1.0 + 1e-14


@laws
@given(probability, voters, st.integers(1, 12))
def test_more_wrong_answers_split_the_wrong_votes(p, n, m):
    # the more the wrong samples spread, the less any wrong answer gathers
    fewer = F.plurality_vote(p, n, m)
    assert fewer <= F.plurality_vote(p, n, m + 1) + 1e-14
    assert fewer <= F.plurality_vote(p, n, "distinct") + 1e-14


@laws
@given(probability, voters)
def test_one_wrong_answer_is_the_majority_vote(p, n):
    assert math.isclose(F.plurality_vote(p, n, 1), F.majority_vote(p, n), rel_tol=1e-13, abs_tol=1e-300)


@laws
@given(probability, voters, wrong_answers)
def test_a_sure_sample_always_wins_and_a_useless_one_never(p, n, m):
    assert F.plurality_vote(1.0, n, m) == 1.0
    assert F.plurality_vote(0.0, n, m) == 0.0
    # the vote is at least as right as unanimity, and at most as right as one right sample
    assert F.plurality_vote(p, n, m) >= F.pass_hat_k(p, n) - 1e-14
    assert F.plurality_vote(p, n, m) <= F.pass_at_k(p, n) + 1e-14


# --------------------------------------------------------------------------- best of n


@laws
@given(probability, st.integers(1, 200), probability, probability)
def test_best_of_n_parts_sum_to_one_and_more_samples_accept_more(p, n, miss, false_reject):
    out = F.best_of_n(p, n, miss, false_reject)
    for value in out:
        assert 0.0 <= value <= 1.0
    _sums_to_one(out)
    more = F.best_of_n(p, n + 1, miss, false_reject)
    assert more.accepted_correct >= out.accepted_correct
    assert more.accepted_wrong >= out.accepted_wrong
    assert more.rejected <= out.rejected
    # ... never beyond what the verifier lets through
    assert out.accepted_correct <= F.verified_ceiling(p, miss, false_reject)


# ---------------------------------------------------------------------------- mixtures


classes = st.lists(st.tuples(st.floats(0.01, 100.0), probability), min_size=1, max_size=5)


@laws
@given(classes, retries, probability, probability)
def test_mixture_parts_sum_to_one_and_lie_between_the_classes(mix, r, miss, false_reject):
    weights, ps = zip(*mix)
    out = F.mixture_verified_step(weights, ps, r, miss, false_reject)
    _sums_to_one(out[:3])
    each = [F.verified_step(p, r, miss, false_reject) for p in ps]
    for field in range(4):
        values = [c[field] for c in each]
        assert min(values) * (1 - 1e-13) - 1e-300 <= out[field] <= max(values) * (1 + 1e-13) + 1e-300


@laws
@given(classes, retries, probability, st.floats(0.01, 1e3))
def test_mixture_ignores_the_weights_scale_and_the_classes_order(mix, r, miss, scale):
    weights, ps = zip(*mix)
    out = F.mixture_verified_step(weights, ps, r, miss)
    scaled = F.mixture_verified_step(np.array(weights) * scale, ps, r, miss)
    reversed_ = F.mixture_verified_step(weights[::-1], ps[::-1], r, miss)
    for a, b, c in zip(out, scaled, reversed_):
        assert math.isclose(a, b, rel_tol=1e-13, abs_tol=1e-300)
        assert math.isclose(a, c, rel_tol=1e-13, abs_tol=1e-300)


@laws
@given(classes, retries, probability, probability)
def test_more_retries_never_lower_a_mixtures_success(mix, r, miss, false_reject):
    weights, ps = zip(*mix)
    low = F.mixture_verified_step(weights, ps, r, miss, false_reject).success
    assert F.mixture_verified_step(weights, ps, r + 1, miss, false_reject).success >= low * (1 - 1e-14)


# ----------------------------------------------------------------------------- ladders


@st.composite
def ladders(draw):
    rungs = draw(st.integers(1, 4))
    ps = draw(st.lists(probability, min_size=rungs, max_size=rungs))
    starts = sorted(draw(st.sets(st.integers(1, 40), min_size=rungs - 1, max_size=rungs - 1)))
    costs = draw(st.lists(st.floats(0.0, 50.0), min_size=rungs, max_size=rungs))
    return ps, starts, costs


@laws
@given(ladders(), retries, probability, probability)
def test_ladder_parts_sum_to_one_and_more_retries_never_hurt(ladder, r, miss, false_reject):
    ps, after, costs = ladder
    out = F.ladder_step(ps, after, r, miss, false_reject, attempt_cost=costs)
    for value in out[:3]:
        assert 0.0 <= value <= 1.0
    _sums_to_one(out[:3])
    assert 1.0 - 1e-12 <= out.expected_attempts <= r + 1 + 1e-12
    assert min(costs) * out.expected_attempts * (1 - 1e-12) <= out.expected_cost
    assert out.expected_cost <= max(costs) * out.expected_attempts * (1 + 1e-12)
    longer = F.ladder_step(ps, after, r + 1, miss, false_reject, attempt_cost=costs)
    assert longer.success >= out.success * (1 - 1e-14)
    assert longer.exhausted <= out.exhausted * (1 + 1e-14) + 1e-300


@laws
@given(ladders(), retries, probability, probability)
def test_a_ladder_costing_one_a_rung_counts_attempts(ladder, r, miss, false_reject):
    ps, after, _ = ladder
    out = F.ladder_step(ps, after, r, miss, false_reject)
    assert math.isclose(out.expected_cost, out.expected_attempts, rel_tol=1e-15)


@laws
@given(ladders(), retries, probability, probability)
def test_a_ladder_before_its_first_step_up_is_rung_zero(ladder, r, miss, false_reject):
    # a budget that never reaches rung 1 runs rung 0 alone
    ps, after, costs = ladder
    r = min(r, after[0] - 1) if after else r
    out = F.ladder_step(ps, after, r, miss, false_reject, attempt_cost=costs)
    step = F.verified_step(ps[0], r, miss, false_reject)
    for got, want in zip(out[:4], step):
        assert math.isclose(got, want, rel_tol=1e-13, abs_tol=1e-15)
    assert math.isclose(out.expected_cost, costs[0] * step.expected_attempts, rel_tol=1e-13, abs_tol=1e-300)


# ----------------------------------------------------------------------------- utility


@laws
@given(probability, probability, probability, st.floats(0.0, 100.0),
       st.floats(-10.0, 10.0), st.floats(-10.0, 10.0), st.floats(0.0, 1.0))
def test_expected_utility_is_linear_in_the_values(s, w, d, cost, v_silent, v_detected, weight):
    values = {"silent_failure": v_silent, "detected_failure": v_detected, "cost_weight": weight}
    got = F.expected_utility(s, w, d, expected_cost=cost, utility=values)
    assert math.isclose(got, s + v_silent * w + v_detected * d - weight * cost,
                        rel_tol=1e-12, abs_tol=1e-12)
    assert F.expected_utility(s, w, d, expected_cost=cost) == s
