"""Integer limits: integers at or beyond 2**63 never wrap.

Every integer argument of every public function of ``relsim.formulas``, and the integer flags
of ``relsim solve`` and ``relsim table``, get the boundary integers (2**31, 2**53, 2**62,
2**63, 2**64 - 1, numpy's unsigned types and int64's maximum). Each call gives either a
RelsimError or the answer of an independent reference (plain Python floats, or a law such as
"more steps never help"); a value wrapped to -1 would give ``0.9 ** -1 = 1.111`` and fail.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relsim import formulas as F
from relsim.cli import main
from relsim.errors import RelsimError

BOUNDARIES = [
    2**31,
    2**53,
    2**62,
    2**62 + 1,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    10**30,
    np.uint64(2**64 - 1),
    np.uint64(2**63),
    np.uint32(2**32 - 1),
    np.int64(2**63 - 1),
    np.uint64(2**62),
]


def _reference_pow(base: float, exponent) -> float:
    return math.pow(base, float(int(exponent)))


# (name, call with the integer v, reference(v) or None, law(result, v) or None)
CASES = [
    ("compound", lambda v: F.compound(0.9, v), lambda v: _reference_pow(0.9, v)),
    ("compound of 1", lambda v: F.compound(1.0, v), lambda v: 1.0),
    ("compound array", lambda v: F.compound(0.9, [v])[0], lambda v: _reference_pow(0.9, v)),
    ("required_step_success", lambda v: F.required_step_success(0.95, v),
     lambda v: math.exp(math.log(0.95) / float(int(v)))),
    ("retry_success", lambda v: F.retry_success(0.3, v), lambda v: 1.0),
    ("pass_at_k", lambda v: F.pass_at_k(0.7, v), lambda v: 1.0),
    ("pass_hat_k", lambda v: F.pass_hat_k(0.7, v), lambda v: _reference_pow(0.7, v)),
    ("verified_step", lambda v: F.verified_step(0.9, v, miss=0.1).success,
     lambda v: 0.9 / (0.9 + 0.1 * 0.1)),
    ("verified_chain", lambda v: F.verified_chain([0.9, 0.8], v).success, lambda v: 1.0),
    ("pass_at_k_estimate n", lambda v: F.pass_at_k_estimate(v, 1, 1),
     lambda v: 1.0 / float(int(v))),
    ("pass_hat_k_estimate n", lambda v: F.pass_hat_k_estimate(v, 0, 1), lambda v: 0.0),
    ("shared_budget_success budget", lambda v: F.shared_budget_success(0.9, 3, v),
     lambda v: 1.0),
    ("latent_difficulty_chain", lambda v: F.latent_difficulty_chain(9.0, 1.0, v), None),
    ("logit_normal_chain", lambda v: F.logit_normal_chain(0.9, v, 0.5), None),
    ("logit_normal_chain nodes", lambda v: F.logit_normal_chain(0.9, 5, 0.5, nodes=v), None),
    ("confusion_chain", lambda v: F.confusion_chain(0.9, v, 0.5, 0.5, 0.5).success, None),
    ("confusion_chain retries",
     lambda v: F.confusion_chain(0.9, 3, 0.5, 0.5, 0.5, retries=v).success, None),
    ("checkpoint_interval cost", lambda v: F.checkpoint_interval(0.98, v),
     lambda v: math.sqrt(2.0 * float(int(v)) / (1.0 - 0.98))),
]

# laws: (name, call, check(result, v)) where no closed reference is handy
LAWS = [
    ("min_retries steps", lambda v: F.min_retries(0.9, v, 0.95),
     # more steps never need fewer retries; 2**20 steps need 8
     lambda r, v: r is not None and r >= F.min_retries(0.9, 2**20, 0.95)),
    ("max_miss steps", lambda v: F.max_miss(0.9, v, 0.95),
     lambda m, v: m is None or 0.0 <= m <= F.max_miss(0.9, 2**20, 0.95)),
    ("min_p steps", lambda v: F.min_p(v, 0.95, miss=0.1),
     lambda m, v: m is None or F.min_p(2**20, 0.95, miss=0.1) <= m <= 1.0),
    ("pass_at_k_estimate k", lambda v: F.pass_at_k_estimate(10, 3, v), None),
    ("shared_budget_success steps", lambda v: F.shared_budget_success(0.9, v, 2),
     lambda s, v: 0.0 <= s <= F.shared_budget_success(0.9, 2**20, 2)),
]


def _check(call, reference, law, v):
    try:
        result = call(v)
    except RelsimError as error:
        assert "must be" in str(error)
        return
    if reference is not None:
        assert result == pytest.approx(reference(v), rel=1e-12, abs=1e-300), (v, result)
    if law is not None:
        assert law(result, v), (v, result)


@pytest.mark.parametrize("v", BOUNDARIES, ids=[f"{type(v).__name__}({int(v)})" for v in BOUNDARIES])
@pytest.mark.parametrize("name, call, reference", CASES, ids=[c[0] for c in CASES])
def test_boundary_integers_give_the_answer_or_an_error(name, call, reference, v):
    _check(call, reference, None, v)


@pytest.mark.parametrize("v", BOUNDARIES, ids=[f"{type(v).__name__}({int(v)})" for v in BOUNDARIES])
@pytest.mark.parametrize("name, call, law", LAWS, ids=[c[0] for c in LAWS])
def test_boundary_integers_keep_the_laws(name, call, law, v):
    _check(call, None, law, v)


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.integers(2**62 - 4, 2**62 + 4),
        st.integers(2**63 - 4, 2**64 + 4),
        st.integers(2**64 - 4, 2**64 - 1).map(np.uint64),
        st.integers(2**31, 2**32 - 1).map(np.uint32),
    )
)
def test_no_integer_wraps_into_a_value(v):
    """The issue's examples: compound(0.9, 2**64-1) gave 1.111 and pass_at_k(0.7, .) -2.333."""
    for call, reference in (
        (lambda x: F.compound(0.9, x), lambda x: _reference_pow(0.9, x)),
        (lambda x: F.pass_at_k(0.7, x), lambda x: 1.0),
        (lambda x: F.retry_success(0.9, x), lambda x: 1.0),
        (lambda x: F.pass_hat_k(0.5, x), lambda x: _reference_pow(0.5, x)),
    ):
        _check(call, reference, None, v)


def test_values_beyond_the_range_name_it():
    with pytest.raises(RelsimError, match=r"steps: must be an integer in 0\.\.2\*\*62, got 18446744073709551615"):
        F.compound(0.9, np.uint64(2**64 - 1))
    with pytest.raises(RelsimError, match="k: must be an integer in 1..2"):
        F.pass_at_k(0.7, 2**63)


# ------------------------------------------------------------------------------ the CLI flags
def _main(argv):
    try:
        return main(argv)
    except SystemExit as exit_:  # argparse usage errors
        return exit_.code


CLI_VALUES = ["2147483648", "9007199254740992", "4611686018427387904", "9223372036854775808",
              "18446744073709551615", "100000000000000000000000000000"]


@pytest.mark.parametrize("text", CLI_VALUES)
def test_table_steps_flag(text, capsys):
    code = _main(["table", "--p", "0.9", "--steps", text, "--json"])
    out, err = capsys.readouterr()
    if code == 2:
        assert "--steps" in err and len(err.strip().splitlines()) == 1
        return
    assert code == 0
    success = json.loads(out)["success"][0][0]
    assert success == pytest.approx(_reference_pow(0.9, int(text)), abs=1e-300)


@pytest.mark.parametrize("text", CLI_VALUES)
def test_solve_steps_flag(text, capsys):
    code = _main(["solve", "--steps", text, "--target", "0.95", "--p", "0.9", "--json"])
    out, err = capsys.readouterr()
    if code == 2:
        assert "--steps" in err and len(err.strip().splitlines()) == 1
        return
    result = json.loads(out)
    n = int(text)
    # reference: least r with n * log1p(-0.1**(r+1)) >= log(0.95), in plain floats
    # (0.1**(r+1) < 1e-16 here, where log1p(-x) = -x to double precision)
    truth = next(r for r in range(200) if -n * 0.1 ** (r + 1) >= math.log(0.95))
    assert code == 0 and result["feasible"] and result["retries"] in (truth, truth + 1)
    assert result["required_step_success"] <= 1.0
    assert result["success"] == pytest.approx(math.exp(-n * 0.1 ** (result["retries"] + 1)), rel=1e-9)
    assert 0.95 <= result["success"] <= 1.0
