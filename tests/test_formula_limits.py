"""The closed forms' limits: their errors name the argument, and no closed form overflows,
exhausts memory or runs for minutes on an argument it accepts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relsim import formulas as F
from relsim.errors import RelsimError


@pytest.mark.parametrize(
    "call, names",
    [
        (lambda: F.compound([0.9, 0.8, 0.7], [1, 2]), ["steps", "p", "(3,)", "(2,)"]),
        (lambda: F.verified_step([0.9, 0.8], [1, 2, 3]), ["retries", "(2,)"]),
        (lambda: F.min_retries(0.9, [10, 20], [0.9, 0.8, 0.7]), ["target"]),
        (lambda: F.pass_at_k_estimate([5, 6], [1, 2, 3], 1), ["c"]),
        (lambda: F.verified_chain([[0.9, 0.8]], [1, 2, 3]), ["retries"]),
        (lambda: F.shared_budget_success([0.9, 0.8], 3, [1, 2, 3]), ["budget"]),
        (lambda: F.checkpoint_interval([0.9, 0.8], [1, 2, 3]), ["checkpoint_cost"]),
        (lambda: F.pass_hat_k([0.9, 0.8], [1, 2, 3]), ["k"]),
        (lambda: F.max_miss([0.9, 0.8], [1, 2, 3], 0.9), ["steps"]),
    ],
)
def test_arrays_that_do_not_broadcast_name_the_argument(call, names):
    with pytest.raises(RelsimError) as caught:
        call()
    message = str(caught.value)
    assert "must be an array that broadcasts against" in message
    for name in names:
        assert name in message


def test_logit_normal_chain_with_a_huge_spread_is_an_error_not_an_overflow():
    with pytest.raises(RelsimError, match=r"task_sd: must be a number in \[0, 1000\], got 1e\+308"):
        F.logit_normal_chain(0.9, 25, 1e308)
    with pytest.raises(RelsimError, match=r"nodes: must be None or an integer in 1\.\.1000"):
        F.logit_normal_chain(0.9, 25, 1.0, nodes=10**9)
    # at the bound: half the trials are all right, half all wrong (sd 1000 swamps logit 0.9)
    assert F.logit_normal_chain(0.9, 25, 1000.0) == pytest.approx(0.5, abs=0.01)


def test_latent_difficulty_chain_with_10_to_12_steps_is_an_error_not_7_tib():
    with pytest.raises(RelsimError, match="steps: must be an integer in 0..100000000"):
        F.latent_difficulty_chain(9, 1, 10**12)
    # 10**7 steps in bounded memory: prod (9+j)/(10+j) over j < n telescopes to 9/(9+n)
    assert F.latent_difficulty_chain(9.0, 1.0, 10**7) == pytest.approx(9 / (9 + 10**7), rel=1e-9)


def test_shared_budget_success_refuses_a_sum_of_minutes():
    with pytest.raises(RelsimError, match="budget: must be small enough for a sum of at most"):
        F.shared_budget_success(0.9, 1e9, 1e9)
    # a huge budget over few steps stops early (the terms vanish): the ceiling, quickly
    assert F.shared_budget_success(0.9, 25, 10**18) == pytest.approx(1.0, abs=1e-15)


def test_confusion_chain_refuses_a_billion_steps():
    with pytest.raises(RelsimError, match=r"steps: must be such that steps \+ retries \+ 1"):
        F.confusion_chain(0.9, 1e9, 0.5, 0.5, 0.5)
    with pytest.raises(RelsimError, match="steps:"):
        F.confusion_chain(np.full(1000, 0.9), 10**6 - 1, 0.5, 0.5, 0.5)


def test_pass_at_k_estimate_never_returns_negative_zero():
    for n, c, k in [(5, 0, 3), (10, 0, 1), (1, 0, 1)]:
        value = F.pass_at_k_estimate(n, c, k)
        assert value == 0.0 and math.copysign(1.0, value) == 1.0
    values = F.pass_at_k_estimate([5, 6], [0, 0], 3)
    assert np.all(np.signbit(values) == False)  # noqa: E712
