"""Numbers from outside the code: docs/model.md's reference table and the lesson's worked values.

Each value is copied from docs/model.md (section 5's table, section 2's worked
values, which come from the lesson in ../shared/seeds/); nothing here is computed by relsim to
be compared with itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from relsim import Scenario, evaluate, formulas

# docs/model.md section 5: case, scenario (JSON), success, silent, detected, E[attempts], E[cost]
REFERENCE = {
    # docs/model.md R1: the lesson's plan, a perfect verifier with 2 retries per step
    "R1": ('{"steps":25,"p":0.9,"verifier":{"miss":0.0},"retries":{"per_step":2}}',
           0.975298, 0.0, 0.024702, 27.419539, 27.419539),
    # docs/model.md R2: an imperfect verifier (miss 0.1), 3 retries per step
    "R2": ('{"steps":25,"p":0.9,"verifier":{"miss":0.1},"retries":{"per_step":3}}',
           0.757383, 0.240978, 0.001639, 27.449108, 27.449108),
    # docs/model.md R3: false rejects, a task-wide budget and costs
    "R3": ('{"steps":10,"p":0.85,"verifier":{"miss":0.2,"false_reject":0.05},'
           '"retries":{"per_step":2,"total":4},"cost":{"attempt":0.02,"verify":0.01}}',
           0.637390, 0.280579, 0.082031, 11.534475, 0.346034),
    # docs/model.md R4: checkpoints with detection, false alarms, rollbacks and their costs
    "R4": ('{"steps":12,"p":0.9,"checkpoints":{"every":4,"detect":0.8,"false_alarm":0.05,'
           '"rollbacks":2},"cost":{"checkpoint":0.1,"rollback":0.5}}',
           0.603598, 0.222680, 0.173722, 15.647239, 16.553831),
    # docs/model.md R5: confusion
    "R5": ('{"steps":8,"p":0.9,"verifier":{"miss":0.3},"retries":{"per_step":2},'
           '"correlation":{"confusion":{"enter":0.7,"recover":0.3,"factor":0.5}}}',
           0.616865, 0.282803, 0.100332, 8.750814, 8.750814),
    # docs/model.md R6: task and step random effects
    "R6": ('{"steps":8,"p":0.9,"verifier":{"miss":0.0},"retries":{"per_step":2},'
           '"correlation":{"task_sd":1.0,"step_sd":0.8}}',
           0.879831, 0.0, 0.120169, 8.894021, 8.894021),
    # docs/model.md R7: every feature at once
    "R7": ('{"steps":9,"p":[0.99,0.9,0.8,0.95,0.9,0.7,0.99,0.9,0.85],'
           '"verifier":{"miss":0.15,"false_reject":0.1},"retries":{"per_step":3,"total":5},'
           '"checkpoints":{"every":3,"final":true,"detect":0.9,"rollbacks":2},'
           '"correlation":{"task_sd":0.5,"step_sd":0.5,'
           '"confusion":{"enter":0.5,"recover":0.5,"factor":0.7}},'
           '"cost":{"attempt":1,"verify":0.2,"checkpoint":0.5,"rollback":1}}',
           0.793529, 0.022931, 0.183539, 11.715293, 15.763261),
    # docs/model.md R8: no verifier: every failure is silent
    "R8": ('{"steps":20,"p":0.95}', 0.358486, 0.641514, 0.0, 20.0, 20.0),
}


DOCS = Path(__file__).resolve().parents[1] / "docs" / "model.md"


def _documented_reference_rows() -> dict[str, tuple]:
    """docs/model.md section 5's table, as (scenario dict, five numbers) per case."""
    section = DOCS.read_text(encoding="utf-8").split("\n## 5.", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = re.fullmatch(r"\| (R\d) \| `(.+)` \| (.+) \|", line)
        if match:
            numbers = tuple(float(cell) for cell in match.group(3).split(" | "))
            rows[match.group(1)] = (json.loads(match.group(2)), numbers)
    return rows


def test_the_users_documentation_holds_the_same_reference_table():
    # docs/model.md is what users read; it must show exactly the values pinned here
    documented = _documented_reference_rows()
    assert sorted(documented) == sorted(REFERENCE)
    for case, (text, *numbers) in REFERENCE.items():
        assert documented[case] == (json.loads(text), tuple(numbers)), case


@pytest.mark.parametrize("case", sorted(REFERENCE))
def test_model_md_reference_table(case):
    text, success, silent, detected, attempts, cost = REFERENCE[case]
    out = evaluate(Scenario.from_dict(json.loads(text)))
    # the table has 6 decimals: it pins the value to half a unit in the last place
    assert out.success == pytest.approx(success, abs=5e-7 + 1e-12)
    assert out.silent_failure == pytest.approx(silent, abs=5e-7 + 1e-12)
    assert out.detected_failure == pytest.approx(detected, abs=5e-7 + 1e-12)
    assert out.expected_attempts == pytest.approx(attempts, abs=5e-7 + 1e-12)
    assert out.expected_cost == pytest.approx(cost, abs=5e-7 + 1e-12)
    assert out.cost_per_success == pytest.approx(cost / success, rel=2e-6)


def test_reference_table_catches_a_wrong_value():
    # negative control: R2 with one more retry per step is not R2
    text, success, *_ = REFERENCE["R2"]
    data = json.loads(text)
    data["retries"]["per_step"] = 4
    assert abs(evaluate(Scenario.from_dict(data)).success - success) > 5e-7


# docs/model.md section 2, from the lesson: the compounding table p**n
@pytest.mark.parametrize(
    "p, values",
    [
        (0.9, [0.590, 0.349, 0.122, 0.005]),
        (0.95, [0.774, 0.599, 0.358, 0.077]),
        (0.99, [0.951, 0.904, 0.818, 0.605]),
    ],
)
def test_compounding_table(p, values):
    got = formulas.compound(p, [5, 10, 20, 50])
    assert [round(float(x), 3) for x in got] == values
    # the same numbers from the exact engine: an unverified chain succeeds with p**n
    for steps, value in zip([5, 10, 20, 50], values):
        assert round(evaluate(Scenario.from_dict({"steps": steps, "p": p})).success, 3) == value


def test_pass_at_k_and_pass_hat_k():
    # docs/model.md section 2 (the lesson's math check): 97% versus 34%
    assert round(formulas.pass_at_k(0.7, 3), 3) == 0.973
    assert round(formulas.pass_hat_k(0.7, 3), 3) == 0.343


def test_twenty_five_steps_at_ninety_five_percent():
    # docs/model.md section 2: 25 steps, target 0.95
    assert round(formulas.required_step_success(0.95, 25), 6) == 0.997950
    assert formulas.min_retries(0.9, 25, 0.95) == 2
    step = formulas.verified_step(0.9, 2)
    assert round(step.success**25, 6) == 0.975298  # 0.999**25, the lesson's end-to-end value
    ceiling = formulas.verified_ceiling(0.9, miss=0.1)
    assert round(ceiling, 6) == 0.989011
    assert round(ceiling**25, 6) == 0.758626
    assert formulas.min_retries(0.9, 25, 0.95, miss=0.1) is None
    # the exact engine reaches the same numbers: 2 retries with a perfect verifier (R1), and
    # the ceiling, approached as the budget grows, with miss = 0.1
    lesson = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"per_step": 2}}
    assert round(evaluate(Scenario.from_dict(lesson)).success, 6) == 0.975298
    capped = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 30}}
    assert round(evaluate(Scenario.from_dict(capped)).success, 6) == 0.758626
