"""The target rule: one rule for targets that floating point cannot reach exactly.

The rule (``relsim.formulas.meets_target``, shared by every planner and by ``relsim evaluate
--require-target``): a design meets a target when log(success) >= log(target), both logs from
the failure probability where it is small; target 1 is met only by a design that cannot
fail. The truths here come from exact rational arithmetic (``fractions.Fraction``).
"""

from __future__ import annotations

import json
from fractions import Fraction
from math import comb

import pytest

from relsim import formulas as F
from relsim import plan as planner
from relsim.cli import main
from relsim.scenario import Scenario

NEAR_ONE = 0.9999999999999999  # = 1 - 2**-53 exactly


def _run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _chain_success(p: Fraction, budgets, miss=Fraction(0)) -> Fraction:
    """docs/model.md section 2: prod_i a/(a+w) (1 - q**(r_i+1)), exactly."""
    a, w = p, (1 - p) * miss
    q = 1 - a - w
    out = Fraction(1)
    for r in budgets:
        out *= a / (a + w) * (1 - q ** (r + 1))
    return out


def _shared_success(n: int, budget: int, p: Fraction) -> Fraction:
    """a**n sum_{j<=B} C(n-1+j, j) q**j with a perfect verifier, exactly."""
    q = 1 - p
    return p**n * sum(comb(n - 1 + j, j) * q**j for j in range(budget + 1))


def test_the_near_one_target_gets_the_exact_budget(capsys):
    target = Fraction(NEAR_ONE)
    assert target == 1 - Fraction(1, 2**53)
    half = Fraction(1, 2)
    truth = next(r for r in range(100) if _chain_success(half, [r] * 25) >= target)
    assert truth == 57  # 53 make the double success round to 1: the old answer
    code, out, _ = _run(["solve", "--steps", "25", "--target", repr(NEAR_ONE), "--p", "0.5",
                         "--json"], capsys)
    assert code == 0 and json.loads(out)["retries"] == truth
    s = Scenario.from_dict({"steps": 25, "p": 0.5, "verifier": {"miss": 0.0}})
    assert planner.retries(s, NEAR_ONE).value == truth
    # total (judged by the exact engine): what it answers meets the target exactly
    total = planner.total(s, NEAR_ONE)
    assert total.feasible and _shared_success(25, total.value, half) >= target
    # allocation: whatever it answers meets the target exactly
    allocation = planner.allocation(s, NEAR_ONE)
    assert allocation.feasible and _chain_success(half, allocation.value) >= target


def test_the_near_one_total_budget_is_the_least():
    # The engine reports silent_failure = 0 exactly behind a verifier with miss = 0, so a plan
    # it judges resolves a failure of 2**-53.
    half = Fraction(1, 2)
    s = Scenario.from_dict({"steps": 25, "p": 0.5, "verifier": {"miss": 0.0}})
    total = planner.total(s, NEAR_ONE)
    assert _shared_success(25, total.value - 1, half) < Fraction(NEAR_ONE)


def test_target_one_is_infeasible_for_every_planner_and_the_flag_form(tmp_path, capsys):
    # the design: success reaches 1 only in the limit of unlimited retries
    path = tmp_path / "one.toml"
    path.write_text(
        "steps = 25\np = 0.9\ntarget = 1.0\n[verifier]\nmiss = 0\n[retries]\nper_step = 1\n",
        encoding="utf-8",
    )
    assert F.min_retries(0.9, 25, 1.0) is None
    code, out, _ = _run(["solve", "--steps", "25", "--target", "1", "--p", "0.9", "--json"],
                        capsys)
    assert code == 3 and json.loads(out)["feasible"] is False
    for quantity in ("retries", "allocation", "total"):
        code, out, err = _run(["solve", str(path), "--for", quantity, "--json"], capsys)
        assert code == 3, (quantity, err)
        result = json.loads(out)
        assert result["feasible"] is False and err == ""
        assert _chain_success(Fraction(9, 10), [1] * 25) < 1  # the exact truth: below 1


def test_target_one_is_met_by_a_design_that_cannot_fail():
    s = Scenario.from_dict({"steps": 5, "p": 1.0, "verifier": {"miss": 0.0}})
    for quantity in ("retries", "allocation", "total"):
        plan = planner.solve(s, quantity, 1.0)
        assert plan.feasible and plan.success == 1.0


def test_an_astronomical_budget_is_said_plainly(capsys):
    # p = 1e-300: q = 1 - 1e-300 and 1000 steps at 0.999 need q**(r+1) <= 1 - 0.999**(1/1000),
    # r + 1 = log(gap) / log(q), about 13.8 / 1e-300 = 1.38e301 retries
    code, out, err = _run(["solve", "--steps", "1000", "--target", "0.999", "--p", "1e-300"],
                          capsys)
    assert code == 3 and err == ""
    assert "astronomically large" in out and "1.38e+301" in out
    code, out, _ = _run(["solve", "--steps", "1000", "--target", "0.999", "--p", "1e-300",
                         "--json"], capsys)
    result = json.loads(out)
    assert result["retries"] is None and not result["feasible"]
    assert "1.38e+301 retries per step" in result["reason"]


def test_meets_target_decides_on_the_failure_probability():
    import math

    assert F.meets_target(math.log1p(-(2**-54)), NEAR_ONE)
    assert not F.meets_target(math.log1p(-(2**-52)), NEAR_ONE)
    assert not F.meets_target(math.log1p(-1e-300), 1.0)
    assert F.meets_target(0.0, 1.0)


@pytest.mark.parametrize("p, steps, target", [(0.5, 25, NEAR_ONE), (0.9, 40, 1 - 2**-50),
                                              (0.99, 3, 1 - 2**-52)])
def test_min_retries_agrees_with_exact_rationals_near_one(p, steps, target):
    fp, ft = Fraction(p), Fraction(target)
    truth = next(r for r in range(200) if _chain_success(fp, [r] * steps) >= ft)
    assert F.min_retries(p, steps, target) == truth
