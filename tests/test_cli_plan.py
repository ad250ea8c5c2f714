"""``relsim solve SCENARIO.toml --for ...``: exit codes, JSON keys and readable output."""

from __future__ import annotations

import argparse
import json

import pytest

from relsim.cli import main
from relsim.cli._args import EXIT_INFEASIBLE, EXIT_OK, EXIT_USAGE
from relsim.cli.plan_command import run_scenario

LESSON = """\
name = "coding agent, 25 steps"
steps = 25
p = 0.9
target = 0.95

[verifier]
miss = {miss}
"""

SMALL = """\
steps = 4
p = [0.9, 0.7, 0.95, 0.8]
target = 0.6

[verifier]
miss = 0.05
false_reject = 0.1

[retries]
per_step = 1

[checkpoints]
every = 2
detect = 0.9
rollbacks = 1

[cost]
attempt = 1.0
verify = 0.1
checkpoint = 0.2
"""


@pytest.fixture
def lesson(tmp_path):
    def write(miss: float) -> str:
        path = tmp_path / f"lesson_{miss}.toml"
        path.write_text(LESSON.format(miss=miss), encoding="utf-8")
        return str(path)

    return write


def run_json(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_retries_json_for_the_lesson(lesson, capsys):
    # the lesson's exercise: 2 retries with a perfect verifier (docs/model.md section 2: 0.999**25 = 0.975298)
    code, out, err = run_json(capsys, ["solve", lesson(0.0), "--for", "retries", "--json"])
    assert code == EXIT_OK and err == ""
    assert out["for"] == "retries" and out["value"] == 2 and out["feasible"] is True
    assert out["success"] == pytest.approx(0.975298, abs=1e-6)
    assert out["expected_cost"] == pytest.approx(27.419539, abs=1e-6)
    assert out["cost_per_success"] == pytest.approx(27.419539 / 0.975298, rel=1e-5)
    assert "ceiling" not in out and "reason" not in out


def test_infeasible_exits_3_with_ceiling_and_reason(lesson, capsys):
    code, out, _ = run_json(capsys, ["solve", lesson(0.1), "--for", "retries", "--json"])
    assert code == EXIT_INFEASIBLE
    assert out["feasible"] is False
    assert out["ceiling"] == pytest.approx(0.758626, abs=1e-6)
    assert "miss" in out["reason"] and "0.989011" in out["reason"]


def test_infeasible_readable_output_says_why(lesson, capsys):
    code = main(["solve", lesson(0.1), "--for", "retries"])
    out = capsys.readouterr().out
    assert code == EXIT_INFEASIBLE
    assert "INFEASIBLE" in out
    assert "0.758626" in out
    assert "why:" in out and "a/(a+w) = 0.989011" in out


def test_target_flag_overrides_the_file(lesson, capsys):
    code, out, _ = run_json(
        capsys, ["solve", lesson(0.0), "--for", "retries", "--target", "0.99", "--json"]
    )
    assert code == EXIT_OK and out["value"] == 3 and out["target"] == 0.99


def test_missing_target_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "no_target.toml"
    path.write_text("steps = 3\np = 0.9\n[verifier]\nmiss = 0.0\n", encoding="utf-8")
    code = main(["solve", str(path), "--for", "retries"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "--target" in err and err.count("\n") == 1 and "Traceback" not in err


def test_checkpoints_without_table_is_a_usage_error(lesson, capsys):
    code = main(["solve", lesson(0.0), "--for", "checkpoints"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert "[checkpoints]" in err and err.count("\n") == 1


def test_bad_scenario_file_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text("steps = 3\np = 1.5\n", encoding="utf-8")
    code = main(["solve", str(path), "--for", "p", "--target", "0.9"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and "p: must be a probability in [0, 1]" in err


@pytest.mark.parametrize(
    "quantity", ["retries", "total", "allocation", "verifier", "p", "checkpoints"]
)
@pytest.mark.slow
def test_every_quantity_prints_json_and_text(tmp_path, capsys, quantity):
    path = tmp_path / "small.toml"
    path.write_text(SMALL, encoding="utf-8")
    code, out, _ = run_json(capsys, ["solve", str(path), "--for", quantity, "--json"])
    assert code in (EXIT_OK, EXIT_INFEASIBLE)
    assert out["for"] == quantity and out["feasible"] is (code == EXIT_OK)
    for key in ("value", "success", "expected_cost", "cost_per_success"):
        assert key in out
    if quantity == "allocation":
        assert isinstance(out["value"], list) and len(out["value"]) == 4
    code_text = main(["solve", str(path), "--for", quantity])
    text = capsys.readouterr().out
    assert code_text == code
    assert f"plan for {quantity}" in text and "success" in text


def test_run_scenario_with_a_namespace(lesson, capsys):
    args = argparse.Namespace(scenario=lesson(0.0), for_="p", target=None, json=True)
    assert run_scenario(args) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    # no retries: p**25 >= 0.95, so p = 0.95**(1/25) = 0.997950 (docs/model.md section 2)
    assert out["value"] == pytest.approx(0.997950, abs=1e-6)


def test_run_scenario_rejects_unknown_quantity(lesson):
    args = argparse.Namespace(scenario=lesson(0.0), for_="budget", target=None, json=False)
    with pytest.raises(ValueError, match="--for: must be one of"):
        run_scenario(args)


def test_no_verifier_remedy_and_p_zero_in_json(tmp_path, capsys):
    path = tmp_path / "no_verifier.toml"
    path.write_text("steps = 10\np = 0.95\ntarget = 0.9\n", encoding="utf-8")
    code, out, _ = run_json(capsys, ["solve", str(path), "--for", "retries", "--json"])
    assert code == EXIT_INFEASIBLE and out["binding"] == "verifier"
    # a perfect verifier with enough retries: (1 - 0.05**(r+1))**10 -> 1, not 0.975279 (r = 1)
    assert "success reaches 1.000000" in out["reason"] and "0.975279" not in out["reason"]
    path.write_text("steps = 10\np = 0.0\ntarget = 0.9\n", encoding="utf-8")
    code, out, _ = run_json(capsys, ["solve", str(path), "--for", "retries", "--json"])
    assert code == EXIT_INFEASIBLE and out["binding"] == "p"
    assert "agent never succeeds" in out["reason"] and "add a verifier" not in out["reason"]


# ------------------------------------------------------------------ allocation's objective
THREE = """\
steps = 3
p = [0.9, 0.7, 0.95]
target = 0.8

[verifier]
miss = 0.05

[cost]
attempt = [1.0, 30.0, 1.0]
"""


def test_allocation_minimises_cost_per_success_and_says_why(tmp_path, capsys):
    path = tmp_path / "three.toml"
    path.write_text(THREE, encoding="utf-8")
    code, out, _ = run_json(capsys, ["solve", str(path), "--for", "allocation", "--json"])
    assert code == EXIT_OK
    assert out["details"]["objective"] == "cost_per_success" and out["details"]["optimal"]
    code, old, _ = run_json(capsys, ["solve", str(path), "--for", "allocation", "--objective",
                                     "expected_cost", "--json"])
    assert code == EXIT_OK and old["details"]["objective"] == "expected_cost"
    assert out["cost_per_success"] <= old["cost_per_success"]
    assert old["expected_cost"] <= out["expected_cost"]
    assert main(["solve", str(path), "--for", "allocation"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "minimises                      cost per success" in text
    assert "answer                         optimal" in text
    assert "why: " in text and "wastes the work of every step before it" in text


TWELVE = """\
steps = 12
p = [0.7, 0.9, 0.8, 0.95, 0.75, 0.85, 0.9, 0.7, 0.8, 0.9, 0.75, 0.85]
target = 0.5

[verifier]
miss = 0.01
false_reject = 0.1

[correlation]
{effect} = 0.8
"""


@pytest.mark.parametrize("effect, said", [("task_sd", True), ("step_sd", False)])
def test_a_bound_with_a_task_effect_says_what_its_gap_holds(tmp_path, capsys, effect, said):
    # past 8 steps with random effects the answer comes with the relaxation's bound; with a
    # task effect that relaxation lets each budget know the task's difficulty, which the
    # output says (with a step effect alone the bound is tight, and nothing is added)
    path = tmp_path / "twelve.toml"
    path.write_text(TWELVE.format(effect=effect), encoding="utf-8")
    assert main(["solve", str(path), "--for", "allocation"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "answer                         a heuristic: its cost per success is at most " in text
    assert ("know the task's difficulty, which no allocation can" in text) is said


def test_objective_belongs_to_allocation(tmp_path, capsys):
    path = tmp_path / "three.toml"
    path.write_text(THREE, encoding="utf-8")
    assert main(["solve", str(path), "--for", "retries", "--objective", "expected_cost"]) == 2
    assert "--objective: must be utility with --for retries" in capsys.readouterr().err
