"""The closed forms of model v2 (task mixtures, samples and votes, best-of-n through a
verifier, escalation ladders, utility) against numbers from outside the code: the published
reference checks, exact rational sums, and brute-force enumeration of every outcome.

The reference checks are those the model contract pins (Stroebl, Kapoor and Narayanan 2024:
resampling with an imperfect verifier; Chen et al. 2024: majority votes over a mixture of easy
and hard tasks), computed here through the public formulas only.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pytest

from relsim import formulas as F
from relsim.errors import RelsimError

# ------------------------------------------------------------------- reference checks

STROEBL_WEIGHTS = [0.58, 0.42]
STROEBL_P = [0.87, 0.13]
BUDGETS = np.arange(11)


def _stroebl_utilities(value_of_silent, miss=0.25):
    """Expected utility of one step for retries 0..10: success 1, silent V, detected 0."""
    out = F.mixture_verified_step(STROEBL_WEIGHTS, STROEBL_P, BUDGETS[:, None], miss=miss)
    return F.expected_utility(
        out.success, out.silent_failure, out.exhausted,
        utility={"success": 1.0, "silent_failure": value_of_silent, "detected_failure": 0.0},
    )


def _least_best(values, tolerance=1e-12):
    """The first index whose value is within ``tolerance`` of the largest (least among equals)."""
    values = np.asarray(values)
    return int(np.flatnonzero(values >= values.max() - tolerance)[0])


@pytest.mark.parametrize(
    "value_of_silent, best, utility",
    [(-0.7, 2, 0.524567), (-1.0, 1, 0.472381), (-2.0, 0, 0.338800)],
)
def test_stroebl_best_retries_and_utility(value_of_silent, best, utility):
    # Stroebl, Kapoor and Narayanan (2024): the more a false positive costs, the fewer
    # resamples pay; the contract pins the best budget and its utility to 6 decimals.
    utilities = _stroebl_utilities(value_of_silent)
    assert _least_best(utilities) == best
    assert round(float(utilities[best]), 6) == utility


def test_stroebl_single_attempt_utility():
    # 0.58*0.87 + 0.42*0.13 = 0.5592 right, 0.25*(0.58*0.13 + 0.42*0.87) = 0.1102 wrong and
    # accepted: 0.5592 - 0.1102
    assert round(float(_stroebl_utilities(-1.0)[0]), 6) == 0.449000


def test_stroebl_trade_off_vanishes_with_a_perfect_verifier():
    # control: with miss = 0 nothing wrong is accepted, so every retry helps and the best
    # budget is the largest one, whatever a silent failure would cost
    for value_of_silent in (-0.7, -1.0, -2.0):
        assert _least_best(_stroebl_utilities(value_of_silent, miss=0.0)) == 10


def _chen_mixture(n):
    return 0.6 * F.majority_vote(0.8, n) + 0.4 * F.majority_vote(0.3, n)


def test_majority_vote_mixture_peaks_at_five_voters():
    # Chen et al. (2024): with 60% easy (p 0.8) and 40% hard (p 0.3) tasks the vote rises,
    # then falls back toward the easy share as the hard tasks are voted down
    n = np.arange(1, 65)
    success = _chen_mixture(n)
    best = _least_best(success)
    assert n[best] == 5
    assert round(float(success[best]), 6) == 0.630480
    # an even n ties n - 1 (random tie-breaks), so 6 equals 5 and the least is taken
    assert success[5] == pytest.approx(success[4], rel=1e-14)
    # ... and the odd ones fall from the peak on toward 0.6
    odd_after_peak = success[4::2]
    assert np.all(np.diff(odd_after_peak) <= 1e-15)
    assert 0.6 < success[-1] < 0.6003
    assert _chen_mixture(10_001) == pytest.approx(0.6, abs=1e-15)
    # the same through the plurality vote with one wrong answer
    plurality = 0.6 * F.plurality_vote(0.8, n, 1) + 0.4 * F.plurality_vote(0.3, n, 1)
    np.testing.assert_allclose(plurality, success, rtol=1e-13)


# ----------------------------------------------------------------------------- limits


@pytest.mark.parametrize("p", [0.0, 0.13, 0.5, 0.87, 1.0])
def test_one_sample_is_one_attempt(p):
    assert F.majority_vote(p, 1) == pytest.approx(p, rel=1e-15, abs=0)
    for wrong in (1, 2, 7, "distinct"):
        assert F.plurality_vote(p, 1, wrong) == pytest.approx(p, rel=1e-15, abs=0)
    for miss, false_reject in [(0.0, 0.0), (0.25, 0.0), (0.3, 0.2), (1.0, 1.0)]:
        one = F.best_of_n(p, 1, miss, false_reject)
        step = F.verified_step(p, 0, miss, false_reject)
        assert one.accepted_correct == pytest.approx(p * (1 - false_reject), rel=1e-15, abs=0)
        assert one.accepted_wrong == pytest.approx((1 - p) * miss, rel=1e-15, abs=0)
        assert tuple(one) == pytest.approx(tuple(step[:3]), rel=1e-15, abs=1e-300)


@pytest.mark.parametrize("retries", [0, 1, 3, 10, 1000])
@pytest.mark.parametrize("p, miss, false_reject", [(0.9, 0.1, 0.0), (0.3, 0.6, 0.2), (0.0, 0.5, 0.5)])
def test_a_ladder_of_equal_rungs_and_one_class_are_a_verified_step(p, miss, false_reject, retries):
    step = F.verified_step(p, retries, miss, false_reject)
    for after in ([], [1], [1, 2], [2, 5], [3, 10**6]):
        rungs = [p] * (len(after) + 1)
        ladder = F.ladder_step(rungs, after, retries, miss, false_reject)
        assert tuple(ladder[:4]) == pytest.approx(tuple(step), rel=1e-13, abs=1e-15)
        assert ladder.expected_cost == pytest.approx(step.expected_attempts, rel=1e-13)
    mixture = F.mixture_verified_step([3.0], [p], retries, miss, false_reject)
    assert tuple(mixture) == pytest.approx(tuple(step), rel=1e-14, abs=1e-300)
    # two classes of the same p are one class
    twin = F.mixture_verified_step([0.2, 5.0], [p, p], retries, miss, false_reject)
    assert tuple(twin) == pytest.approx(tuple(step), rel=1e-14, abs=1e-300)


def test_best_of_n_is_a_verified_step_over_the_samples():
    # the samples of an attempt are a sequence of verified tries: n samples end as n - 1 retries
    for n in (1, 2, 5, 64, 10**6):
        sampled = F.best_of_n(0.4, n, miss=0.3, false_reject=0.1)
        step = F.verified_step(0.4, n - 1, miss=0.3, false_reject=0.1)
        assert tuple(sampled) == pytest.approx(tuple(step[:3]), rel=1e-15, abs=1e-300)


def test_expected_utility_by_default_is_the_success():
    assert F.expected_utility(0.7, 0.2, 0.1) == 0.7
    got = F.expected_utility(
        [0.5, 0.6], 0.1, 0.2, 0.05, 0.05, expected_cost=[3.0, 4.0],
        utility={"silent_failure": -2.0, "infra_failure": 0.5, "timeout": -1.0,
                 "cost_weight": 0.01},
    )
    want = [0.5 - 0.2 + 0.025 - 0.05 - 0.03, 0.6 - 0.2 + 0.025 - 0.05 - 0.04]
    np.testing.assert_allclose(got, want, rtol=1e-14)


# ------------------------------------------------------- exact sums and brute force


def _exact_majority(p, n):
    """The definition in exact rationals (the float p's exact value)."""
    p = Fraction(p)
    total = Fraction(0)
    for c in range(n + 1):
        share = 1 if 2 * c > n else Fraction(1, 2) if 2 * c == n else 0
        total += share * math.comb(n, c) * p**c * (1 - p) ** (n - c)
    return total


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 8, 25, 64, 65, 160])
@pytest.mark.parametrize("p", [1e-9, 0.13, 0.5, 0.51, 0.8, 1 - 1e-9])
def test_majority_vote_is_the_exact_binomial_sum(p, n):
    # up to 64 the exact products, beyond them the log-space sum
    exact = _exact_majority(p, n)
    assert F.majority_vote(p, n) == pytest.approx(float(exact), rel=1e-12 if n > 64 else 1e-14)


@lru_cache(maxsize=None)
def _enumerated_win_tallies(n, wrong_answers):
    """Every outcome of n samples, each correct (0) or one of the wrong answers 1..m (or, for
    "distinct", a wrong answer no other sample gives), tallied by the number of correct
    samples c: the total tie-break weight with which the correct answer wins, over the
    outcomes with c correct. Exact rationals."""
    tallies = [Fraction(0)] * (n + 1)
    if wrong_answers == "distinct":
        answers = range(2)  # 1: wrong, each wrong sample a new answer
    else:
        answers = range(wrong_answers + 1)
    for outcome in itertools.product(answers, repeat=n):
        if wrong_answers == "distinct":
            labels = [0 if a == 0 else i + 1 for i, a in enumerate(outcome)]
        else:
            labels = list(outcome)
        counts = {}
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
        top = max(counts.values())
        tied = [label for label, count in counts.items() if count == top]
        if 0 in tied:
            tallies[labels.count(0)] += Fraction(1, len(tied))
    return tallies


def _enumerated_plurality(p, n, wrong_answers):
    p = Fraction(p)
    per_wrong = (1 - p) if wrong_answers == "distinct" else (1 - p) / wrong_answers
    return sum(t * p**c * per_wrong ** (n - c) for c, t in enumerate(_enumerated_win_tallies(n, wrong_answers)))


PLURALITY_CASES = [
    (n, m) for n in range(1, 7) for m in (1, 2, 3, "distinct")
] + [(n, 4) for n in range(1, 6)] + [(7, 2), (8, 2)]


@pytest.mark.parametrize("n, wrong_answers", PLURALITY_CASES)
def test_plurality_vote_against_every_sample_outcome(n, wrong_answers):
    ps = [0.0, 0.05, 0.3, 0.5, 0.77, 1.0]
    got = F.plurality_vote(ps, n, wrong_answers)
    want = [float(_enumerated_plurality(p, n, wrong_answers)) for p in ps]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300)


def test_plurality_enumeration_catches_a_wrong_tie_break():
    # negative control: a tie counted as a win (not 1/(1 + tied)) is caught by the same check
    n, m, p = 4, 2, 0.5
    right = _enumerated_plurality(p, n, m)
    tie_as_win = Fraction(0)
    for outcome in itertools.product(range(m + 1), repeat=n):
        counts = [outcome.count(a) for a in range(m + 1)]
        if counts[0] == max(counts):
            tie_as_win += Fraction(1, (m + 1) ** n)  # p = 1/2 and each wrong answer 1/4
    assert abs(float(tie_as_win) - F.plurality_vote(p, n, m)) > 0.05
    assert F.plurality_vote(p, n, m) == pytest.approx(float(right), rel=1e-14)


def test_many_wrong_answers_tend_to_distinct_ones():
    ps = np.linspace(0.0, 1.0, 11)
    for n in (2, 5, 17, 64):
        near = F.plurality_vote(ps, n, 10**12)
        np.testing.assert_allclose(near, F.plurality_vote(ps, n, "distinct"), atol=1e-9)
        # ... from below: fewer wrong answers collide more often
        assert np.all(F.plurality_vote(ps, n, 10) <= near + 1e-15)


def _verdicts(correct_p, miss, false_reject):
    """(correct, accepted, probability) of one sample's or attempt's two draws."""
    for correct, pc in ((True, correct_p), (False, 1 - correct_p)):
        accept = (1 - false_reject) if correct else miss
        for accepted, pa in ((True, accept), (False, 1 - accept)):
            yield correct, accepted, pc * pa


def _enumerated_best_of_n(p, n, miss, false_reject):
    """Every verdict of all n samples; the first accepted sample is the result."""
    right = wrong = rejected = 0.0
    for draws in itertools.product(list(_verdicts(p, miss, false_reject)), repeat=n):
        probability = math.prod(d[2] for d in draws)
        first = next((d for d in draws if d[1]), None)
        if first is None:
            rejected += probability
        elif first[0]:
            right += probability
        else:
            wrong += probability
    return right, wrong, rejected


@pytest.mark.parametrize("n", [1, 2, 3, 5])
@pytest.mark.parametrize("p, miss, false_reject", [(0.6, 0.2, 0.0), (0.3, 0.5, 0.25), (0.9, 1.0, 0.7), (0.05, 0.9, 0.9)])
def test_best_of_n_against_every_sample_verdict(p, miss, false_reject, n):
    got = F.best_of_n(p, n, miss, false_reject)
    want = _enumerated_best_of_n(p, n, miss, false_reject)
    assert tuple(got) == pytest.approx(want, rel=1e-12, abs=1e-15)


def enumerated_ladder(ps, after, retries, miss, false_reject, costs):
    """Every verdict of all retries + 1 attempts, attempt j on rung #{a in after: a <= j}; the
    step ends at the first accepted attempt (later draws are never made)."""
    rung = [sum(a <= j for a in after) for j in range(retries + 1)]
    per_attempt = [list(_verdicts(ps[rung[j]], miss, false_reject)) for j in range(retries + 1)]
    out = dict(success=0.0, silent=0.0, exhausted=0.0, attempts=0.0, cost=0.0)
    for draws in itertools.product(*per_attempt):
        probability = math.prod(d[2] for d in draws)
        made = next((j + 1 for j, d in enumerate(draws) if d[1]), retries + 1)
        last = draws[made - 1]
        key = ("success" if last[0] else "silent") if last[1] else "exhausted"
        out[key] += probability
        out["attempts"] += probability * made
        out["cost"] += probability * sum(costs[rung[j]] for j in range(made))
    return tuple(out.values())


LADDER_CASES = [
    ([0.6, 0.95], [2], 3, 0.0, 0.0, [1.0, 10.0]),
    ([0.3, 0.7, 0.9], [1, 3], 4, 0.2, 0.1, [0.5, 2.0, 7.0]),
    ([0.3, 0.7, 0.9], [1, 2], 1, 0.4, 0.3, [1.0, 1.0, 1.0]),  # the top rung is never reached
    ([0.9, 0.2], [1], 4, 0.5, 0.5, [3.0, 0.1]),  # a worse, cheaper rung
    ([0.5, 0.5, 1.0, 0.0], [1, 2, 3], 5, 0.1, 0.0, [1.0, 2.0, 3.0, 4.0]),
    ([0.8], [], 3, 0.3, 0.2, [2.5]),
]


@pytest.mark.parametrize("ps, after, retries, miss, false_reject, costs", LADDER_CASES)
def test_ladder_step_against_every_attempt_verdict(ps, after, retries, miss, false_reject, costs):
    got = F.ladder_step(ps, after, retries, miss, false_reject, attempt_cost=costs)
    want = enumerated_ladder(ps, after, retries, miss, false_reject, costs)
    assert tuple(got) == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_ladder_enumeration_catches_an_off_by_one_rung():
    # negative control: rung k serving from attempt after[k-1] + 1 instead of after[k-1]
    ps, after, retries = [0.3, 0.95], [1], 3
    wrong = enumerated_ladder(ps, [a + 1 for a in after], retries, 0.0, 0.0, [1.0, 1.0])
    got = F.ladder_step(ps, after, retries)
    assert abs(got.success - wrong[0]) > 1e-3
    assert tuple(got) == pytest.approx(enumerated_ladder(ps, after, retries, 0.0, 0.0, [1.0, 1.0]))


def test_mixture_is_the_weighted_average_of_its_classes():
    weights, ps = [2.0, 1.0, 1.0], [0.9, 0.5, 0.1]
    got = F.mixture_verified_step(weights, ps, 3, miss=0.2, false_reject=0.1)
    classes = [F.verified_step(p, 3, 0.2, 0.1) for p in ps]
    for field in range(4):
        want = math.fsum(w / 4.0 * c[field] for w, c in zip(weights, classes))
        assert got[field] == pytest.approx(want, rel=1e-14)


# --------------------------------------------------------------------- arrays and errors


def test_the_new_forms_broadcast_and_keep_scalars_scalar():
    assert isinstance(F.majority_vote(0.7, 5), float)
    assert isinstance(F.plurality_vote(0.7, 5, "distinct"), float)
    assert isinstance(F.best_of_n(0.7, 5, 0.1).rejected, float)
    assert isinstance(F.mixture_verified_step([1, 2], [0.7, 0.2], 2).success, float)
    assert isinstance(F.ladder_step([0.5, 0.9], [1], 2).expected_cost, float)
    assert isinstance(F.expected_utility(0.5, 0.2), float)
    grid = F.plurality_vote([[0.2], [0.6]], [1, 2, 3], [[1, 2, 3]])
    assert grid.shape == (2, 3)
    for i, p in enumerate([0.2, 0.6]):
        for j, (n, m) in enumerate(zip([1, 2, 3], [1, 2, 3])):
            assert grid[i, j] == F.plurality_vote(p, n, m)
    ladders = F.ladder_step([[0.5, 0.9], [0.6, 0.8]], [[1], [2]], [[0], [1], [2]])
    assert ladders.success.shape == (3, 2)
    assert ladders.success[2, 1] == F.ladder_step([0.6, 0.8], [2], 2).success


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: F.majority_vote(1.2, 3), r"p: must be a probability in \[0, 1\], got 1.2"),
        (lambda: F.majority_vote(0.5, 0), r"n: must be an integer in 1..1000000, got 0"),
        (lambda: F.majority_vote(0.5, 2**64 - 1), r"n: must be an integer in 1..1000000"),
        (lambda: F.majority_vote(np.full(200, 0.5), 10**6), r"n: must be at most 10,000,000"),
        (lambda: F.plurality_vote(0.5, 65), r"n: must be an integer in 1..64, got 65"),
        (lambda: F.plurality_vote(0.5, 3, 0), r'wrong_answers: must be an integer in 1..2\*\*62 or "distinct", got 0'),
        (lambda: F.plurality_vote(0.5, 3, "many"), r'wrong_answers: must be an integer >= 1 or "distinct", got \'many\''),
        (lambda: F.plurality_vote(0.5, 3, 1.5), r"wrong_answers: must be an integer"),
        (lambda: F.plurality_vote([0.5, 0.6], 3, [1, 2, 3]), r"wrong_answers: must be an array that broadcasts"),
        (lambda: F.best_of_n(0.5, 0), r"n: must be an integer in 1..2\*\*62, got 0"),
        (lambda: F.best_of_n(0.5, 2, miss=-0.1), r"miss: must be a probability"),
        (lambda: F.mixture_verified_step([1, 0], [0.5, 0.6], 1), r"weights: must be a finite number > 0, got 0"),
        (lambda: F.mixture_verified_step([1, 2], [0.5, 0.6, 0.7], 1), r"p: must be an array that broadcasts"),
        (lambda: F.mixture_verified_step([1, 2], [0.5, 0.6], -1), r"retries: must be an integer in 0..2\*\*62"),
        (lambda: F.expected_utility(1.5), r"success: must be a probability"),
        (lambda: F.expected_utility(0.5, expected_cost=-1), r"expected_cost: must be a finite number >= 0"),
        (lambda: F.expected_utility(0.5, utility={"silent": -1}), r"utility.silent: unknown key; did you mean 'silent_failure'\?"),
        (lambda: F.expected_utility(0.5, utility={"success": float("nan")}), r"utility.success: must be a finite number, got nan"),
        (lambda: F.expected_utility(0.5, utility=[1.0]), r"utility: must be None or a mapping"),
        (lambda: F.ladder_step([0.5, 0.9], [2, 3], 3), r"after: must be one integer per rung above rung 0 \(1:"),
        (lambda: F.ladder_step([0.5, 0.9, 0.99], [3, 3], 3), r"after: must be strictly increasing integers >= 1, got \[3, 3\]"),
        (lambda: F.ladder_step([0.5, 0.9], [0], 3), r"after: must be an integer in 1..2\*\*62, got 0"),
        (lambda: F.ladder_step([0.5, 1.9], [1], 3), r"p: must be a probability"),
        (lambda: F.ladder_step([0.5, 0.9], [1], 3, attempt_cost=[1, -2]), r"attempt_cost: must be a finite number >= 0, got -2"),
        (lambda: F.ladder_step([0.5, 0.9], [1], 3, attempt_cost=[1, 2, 3]), r"attempt_cost: must be an array that broadcasts"),
        (lambda: F.ladder_step([0.5, 0.9], [1], [1, 2, 3], miss=[0.1, 0.2]), r"miss: must be an array that broadcasts"),
        (lambda: F.ladder_step([], [], 3), r"p: must be one success per rung"),
    ],
)
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(RelsimError, match=message):
        call()


def test_huge_integers_give_the_limit_not_a_wrapped_value():
    ceiling = F.verified_ceiling(0.4, 0.3, 0.1)
    assert F.best_of_n(0.4, 2**62, 0.3, 0.1).accepted_correct == pytest.approx(ceiling, rel=1e-15)
    # rung 0 runs 2**61 attempts: its own ceiling, to rounding
    low = F.verified_ceiling(0.2, 0.3, 0.1)
    assert F.ladder_step([0.2, 0.4], [2**61], 2**62, 0.3, 0.1).success == pytest.approx(low, rel=1e-15)
    assert F.plurality_vote(0.3, 5, 2**62) == pytest.approx(F.plurality_vote(0.3, 5, "distinct"), rel=1e-15)
    with pytest.raises(RelsimError, match="wrong_answers"):
        F.plurality_vote(0.3, 5, np.uint64(2**64 - 1))
    with pytest.raises(RelsimError, match="n: must be an integer in 1..2"):
        F.best_of_n(0.4, 2**63)
