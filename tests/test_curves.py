"""``relsim.plan.curve``: a design over one lever's range, held to closed forms, to the engine,
to the planners and to its own ceiling."""

from __future__ import annotations

import numpy as np
import pytest

import relsim
from relsim import formulas
from relsim.errors import RelsimError
from relsim.plan import curve

#: docs/model.md section 5, R2: 25 steps, p = 0.9, a verifier missing 10%, 3 retries per step.
R2 = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 3}}


def test_retries_curve_of_a_chain_is_the_closed_form_and_its_ceiling():
    c = curve(R2, "retries.per_step")
    assert c.values == tuple(range(0, 7)) and c.design_value == 3
    chain = [formulas.verified_chain([0.9] * 25, r, miss=0.1).success for r in c.values]
    np.testing.assert_allclose(c.success, chain, rtol=1e-12)
    assert round(c.at(3).success, 6) == 0.757383  # R2
    # the limit of unlimited retries: (a / (a + w)) ** n, the lesson's 0.758626
    assert c.ceiling == pytest.approx(formulas.verified_ceiling(0.9, 0.1) ** 25, rel=1e-10)
    assert round(c.ceiling, 6) == 0.758626 and "unlimited retries" in c.ceiling_note
    assert np.all(c.success <= c.ceiling) and np.all(np.diff(c.success) >= 0)
    assert c.design.success == relsim.evaluate(R2).success


def test_with_a_task_wide_budget_the_ceiling_is_the_success_at_that_budget():
    design = {**R2, "retries": {"per_step": 2, "total": 6}}
    assert curve({**R2, "retries": {"per_step": 2, "total": 3}}, "retries.per_step").values[-1] == 3
    c = curve(design, "retries.per_step")
    assert c.values == tuple(range(0, 6))  # the design's 2, 3 more, within the total
    at_total = relsim.evaluate({**design, "retries": {"per_step": 6, "total": 6}}).success
    beyond = relsim.evaluate({**design, "retries": {"per_step": 50, "total": 6}}).success
    assert c.ceiling == at_total == beyond and c.ceiling_at == 6
    assert "total = 6" in c.ceiling_note
    # negative control: without the total the ceiling is higher (the total binds)
    assert curve({**design, "retries": {"per_step": 2}}, "retries.per_step").ceiling > c.ceiling + 1e-3


def test_rate_and_agent_curves_of_a_chain_are_the_closed_forms():
    miss = curve(R2, "verifier.miss", [0.0, 0.05, 0.1, 0.3])
    expected = [formulas.verified_chain([0.9] * 25, 3, miss=m).success for m in miss.values]
    np.testing.assert_allclose(miss.success, expected, rtol=1e-12)
    assert miss.design_value == 0.1 and miss.ceiling is None
    assert np.all(np.diff(miss.success) <= 0)  # without checkpoints: a worse verifier never helps
    reject = curve({**R2, "verifier": {"miss": 0.1, "false_reject": 0.1}}, "verifier.false_reject")
    assert reject.values[0] == 0.0 and reject.values[-1] == 0.2 and 0.1 in reject.values
    agent = curve(R2, "p")
    assert agent.values[-1] == 1.0 and agent.design_value == 0.9
    expected = [formulas.verified_chain([p] * 25, 3, miss=0.1).success for p in agent.values]
    np.testing.assert_allclose(agent.success, expected, rtol=1e-12)
    # a grid point and a value asked for are one point (0.9, not 0.9 and 0.9000000000000001)
    assert len(agent.values) == len(set(round(v, 9) for v in agent.values))


def test_a_design_whose_steps_differ_is_off_the_curve():
    design = {"steps": 3, "p": [0.9, 0.8, 0.95], "verifier": {"miss": [0.1, 0.0, 0.2]},
              "retries": {"per_step": [1, 2, 1]}}
    for key in ("p", "verifier.miss", "retries.per_step"):
        c = curve(design, key)
        assert c.design_value is None
        assert c.design.success == relsim.evaluate(design).success
    assert curve(design, "verifier.false_reject").design_value == 0.0  # the same on every step


def test_checkpoint_spacing_curve():
    design = {"steps": 12, "p": 0.9, "checkpoints": {"every": 4, "detect": 0.8, "false_alarm": 0.05,
                                                     "rollbacks": 2},
              "cost": {"checkpoint": 0.1, "rollback": 0.5}}  # docs/model.md section 5, R4
    c = curve(design, "checkpoints.every")
    assert c.values == tuple(range(1, 13)) and c.design_value == 4
    assert round(c.at(4).success, 6) == 0.603598  # R4
    assert c.at(4).expected_cost == relsim.evaluate(design).expected_cost
    final_only = {**design, "checkpoints": {"final": True, "detect": 0.8, "rollbacks": 2},
                  "cost": {"checkpoint": 0.1, "rollback": 0.5}}
    assert curve(final_only, "checkpoints.every").design_value is None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["production_agent", "shared_budget", "correlated_retries"])
def test_the_planners_answers_lie_on_their_curves(name):
    from pathlib import Path

    design = relsim.Scenario.from_toml(Path(__file__).resolve().parents[1] / "scenarios" / f"{name}.toml")
    target = design.target or 0.9
    for quantity, key in (("retries", "retries.per_step"), ("verifier", "verifier.miss"), ("p", "p")):
        plan = relsim.plan.solve(design, quantity, target)
        c = curve(design, key, also=[plan.value])
        assert c.at(plan.value).success == plan.success, (quantity, plan.value)
        assert c.at(plan.value).expected_cost == plan.expected_cost
        if quantity == "retries" and not plan.feasible:
            assert c.ceiling == pytest.approx(plan.ceiling, abs=1e-9)


def test_to_dict_and_to_frame():
    c = curve(R2, "retries.per_step", [0, 3])
    d = c.to_dict()
    assert d["key"] == "retries.per_step" and d["values"] == [0, 3]
    assert d["design"] == {"value": 3, "success": c.design.success,
                           "cost_per_success": c.design.cost_per_success}
    assert d["ceiling"] == c.ceiling and d["ceiling_at"] == c.ceiling_at
    frame = c.to_frame()
    assert list(frame["value"]) == [0, 3] and list(frame["success"]) == list(c.success)
    assert {"silent_failure", "expected_cost", "cost_per_success"} <= set(frame.columns)


@pytest.mark.parametrize(
    "design, key, values, message",
    [
        (R2, "verifier.mis", None, "key: must be one of retries.per_step, verifier.miss"),
        ({"steps": 3, "p": 0.9}, "retries.per_step", None, "retries.per_step: needs a [verifier]"),
        ({"steps": 3, "p": 0.9}, "verifier.miss", None, "verifier.miss: needs a [verifier]"),
        (R2, "checkpoints.every", None, "checkpoints.every: needs a [checkpoints] table"),
        (R2, "verifier.miss", [1.5], "verifier.miss: must be"),
        (R2, "retries.per_step", [-1], "retries.per_step: must be"),
        (R2, "p", [], "values: must be a non-empty list"),
    ],
)
def test_bad_input(design, key, values, message):
    with pytest.raises(RelsimError) as caught:
        curve(design, key, values)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("name", ["values", "also"])
def test_a_string_is_not_a_list_of_values(name):
    # a string is iterable: it was read as its characters, and refused as a bad value of the key
    with pytest.raises(RelsimError) as caught:
        curve(R2, "retries.per_step", **{name: "12"})
    assert str(caught.value).startswith(f"{name}: must be a list of values of retries.per_step")
