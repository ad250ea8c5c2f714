"""``relsim solve`` (flag form, scenario dispatch, --validate) and ``relsim table``."""

import json
import math
import types

import pytest

from relsim.cli import main


def run(argv, capsys):
    """Run the command line; returns (exit status, stdout, stderr)."""
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse usage errors
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(argv, capsys):
    code, out, err = run([*argv, "--json"], capsys)
    return code, json.loads(out), err


# ---------------------------------------------------------------------------- flag form


def test_lesson_plan_with_p(capsys):
    # docs/model.md section 2: 25 steps, target 0.95, p = 0.9, perfect verifier -> 2 retries
    argv = ["solve", "--steps", "25", "--target", "0.95", "--p", "0.9"]
    code, result, _ = run_json(argv, capsys)
    assert code == 0
    assert round(result["required_step_success"], 6) == 0.997950
    assert result["retries"] == 2
    assert round(result["success"], 6) == 0.975298  # 0.999**25
    assert result["step_ceiling"] == 1.0 and result["ceiling"] == 1.0
    assert result["feasible"] is True and result["reason"] is None


def test_one_step_is_one_step_not_one_steps(capsys):
    code, out, _ = run(["solve", "--steps", "1", "--target", "0.9", "--p", "0.9"], capsys)
    assert code == 0
    assert out.splitlines()[0] == "1 step, target 0.9: each step must succeed with probability >= 0.900000"


def test_lesson_plan_readable(capsys):
    code, out, _ = run(["solve", "--steps", "25", "--target", "0.95", "--p", "0.9"], capsys)
    assert code == 0
    assert "0.997950" in out and "0.975298" in out
    assert "retries per step  2" in out


def test_imperfect_verifier_is_infeasible_and_says_why(capsys):
    # docs/model.md section 2: miss = 0.1 caps a step at 0.989011 and the task at 0.758626 < 0.95
    argv = ["solve", "--steps", "25", "--target", "0.95", "--p", "0.9", "--miss", "0.1"]
    code, result, _ = run_json(argv, capsys)
    assert code == 3
    assert result["feasible"] is False and result["retries"] is None
    assert result["success"] is None
    assert round(result["step_ceiling"], 6) == 0.989011
    assert round(result["ceiling"], 6) == 0.758626
    assert "0.758626" in result["reason"] and "0.989011" in result["reason"]
    # what would make it reachable: the ceiling a/(a+w) reaches 0.95**(1/25) exactly there
    t = 0.95 ** (1 / 25)
    assert result["max_miss"] == pytest.approx(0.9 * (1 - t) / (t * 0.1), rel=1e-12)
    assert result["min_p"] == pytest.approx(t * 0.1 / ((1 - t) + t * 0.1), rel=1e-12)
    code, out, _ = run(argv, capsys)
    assert code == 3
    assert "infeasible" in out and "0.758626" in out
    assert "misses under 1.85%" in out and "p above 0.979875" in out


def test_target_of_one_is_reachable_only_in_the_limit(capsys):
    code, result, _ = run_json(["solve", "--steps", "5", "--target", "1", "--p", "0.9"], capsys)
    assert code == 3 and result["ceiling"] == 1.0
    assert "limit" in result["reason"]
    code, result, _ = run_json(["solve", "--steps", "5", "--target", "1", "--p", "1"], capsys)
    assert code == 0 and result["retries"] == 0


def test_grid_without_p(capsys):
    code, result, _ = run_json(["solve", "--steps", "25", "--target", "0.95"], capsys)
    assert code == 0
    grid = [row["p"] for row in result["rows"]]
    for p in (0.8, 0.85, 0.9, 0.95, 0.99):
        assert p in grid
    row = result["rows"][grid.index(0.9)]
    assert row["retries"] == 2 and round(row["success"], 6) == 0.975298
    assert set(row) >= {"p", "retries", "success", "step_ceiling", "ceiling", "feasible"}
    for row in result["rows"]:  # each planned budget is the least that works (from scratch)
        p, r = row["p"], row["retries"]
        assert (1 - (1 - p) ** (r + 1)) ** 25 >= 0.95
        assert r == 0 or (1 - (1 - p) ** r) ** 25 < 0.95


def test_grid_with_miss_marks_infeasible_rows(capsys):
    code, result, _ = run_json(
        ["solve", "--steps", "25", "--target", "0.95", "--miss", "0.1"], capsys
    )
    assert code == 0
    for row in result["rows"]:
        assert row["feasible"] == (row["ceiling"] > 0.95)
        assert (row["retries"] is None) == (not row["feasible"])
    code, out, _ = run(["solve", "--steps", "25", "--target", "0.95", "--miss", "0.1"], capsys)
    assert "needs p above 0.979875" in out


@pytest.mark.parametrize(
    "argv, names",
    [
        (["solve", "--steps", "0", "--target", "0.9"], ["--steps", "integer in 1..2**62"]),
        (["solve", "--steps", "2.5", "--target", "0.9"], ["--steps", "integer in 1..2**62"]),
        (["solve", "--steps", "10", "--target", "1.5"], ["--target", "(0, 1]"]),
        (["solve", "--steps", "10", "--target", "nan"], ["--target", "(0, 1]"]),
        (["solve", "--steps", "10", "--target", "0"], ["--target", "(0, 1]"]),
        (
            ["solve", "--steps", "10", "--target", "0.9", "--p", "0.9", "--miss", "2"],
            ["--miss", "[0, 1]"],
        ),
        (["solve", "--steps", "10", "--target", "0.9", "--p", "-1"], ["--p", "[0, 1]"]),
        (
            ["solve", "--steps", "10", "--target", "0.9", "--false-reject", "7"],
            ["--false-reject", "[0, 1]"],
        ),
        (["solve", "--target", "0.9"], ["--steps"]),
        (["solve", "--steps", "10"], ["--target"]),
        (["solve", "--steps", "10", "--target", "0.9", "--validate", "100"],
         ["--validate", "--p"]),
        (["solve", "--steps", "10", "--target", "0.9", "--for", "retries"], ["--for", "scenario"]),
        (["solve", "--steps", "10", "--target", "0.9", "--p", "0.9", "--seed", "3"],
         ["--seed", "--validate"]),
        (["solve", "design.toml", "--for", "retries", "--seed", "3"], ["--seed", "SCENARIO"]),
        (["frobnicate"], ["frobnicate"]),
        (["solve", "design.toml"], ["--for"]),
        (["solve", "design.toml", "--for", "retries", "--steps", "5"], ["--steps", "SCENARIO"]),
        (["solve", "design.toml", "--for", "p", "--p", "0.9", "--miss", "0.1"], ["--p", "--miss"]),
        (["solve", "design.toml", "--for", "nonsense"], ["--for", "retries"]),
        (["table", "--p", "0.9,1.2"], ["--p", "[0, 1]"]),
        (["table", "--steps", "5,0"], ["--steps", "integers in 1..2**62"]),
    ],
)
def test_bad_input_is_one_line_exit_2(argv, names, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("relsim")
    assert "Traceback" not in err
    for name in names:
        assert name in lines[0]


# ------------------------------------------------------------------------ scenario form


def test_scenario_form_dispatches_to_the_planner(monkeypatch, capsys):
    seen = {}

    def run_scenario(args):
        seen.update(vars(args))
        return 3

    fake = types.ModuleType("relsim.cli.plan_command")
    fake.run_scenario = run_scenario
    monkeypatch.setitem(__import__("sys").modules, "relsim.cli.plan_command", fake)
    code, _, _ = run(["solve", "design.toml", "--for", "verifier", "--json"], capsys)
    assert code == 3
    assert seen["scenario"] == "design.toml" and seen["for_"] == "verifier"
    assert seen["target"] is None and seen["json"] is True
    run(["solve", "design.toml", "--for", "total", "--target", "0.9"], capsys)
    assert seen["target"] == 0.9 and seen["for_"] == "total" and seen["json"] is False


# ----------------------------------------------------------------------------- validate


def test_validate_simulates_the_plan(capsys):
    argv = [
        "solve",
        "--steps",
        "10",
        "--target",
        "0.9",
        "--p",
        "0.9",
        "--validate",
        "20000",
        "--seed",
        "7",
    ]
    code, result, _ = run_json(argv, capsys)
    assert code == 0 and result["retries"] == 1
    validation = result["validation"]
    assert validation["trials"] == 20000 and validation["seed"] == 7
    success, se = validation["success"], validation["se"]
    # the SE is the binomial one of the run, and z is measured against the exact success
    assert se == pytest.approx(math.sqrt(success * (1 - success) / 20000), rel=1e-3)
    assert validation["z"] == pytest.approx((success - result["success"]) / se, rel=1e-9)
    assert abs(validation["z"]) < 5
    # negative control: against the success of one retry fewer, the same run is far off
    wrong = 0.9**10
    assert abs(success - wrong) / se > 5
    code, out, _ = run(argv, capsys)
    assert code == 0 and "simulated 20000 trials (seed 7)" in out


def test_validate_on_an_infeasible_plan_says_nothing_was_simulated(capsys):
    argv = ["solve", "--steps", "25", "--target", "0.95", "--p", "0.9", "--miss", "0.1",
            "--validate", "1000"]
    code, result, _ = run_json(argv, capsys)
    assert code == 3 and result["validation"] is None
    code, out, _ = run(argv, capsys)
    assert code == 3 and "--validate: nothing simulated" in out


def test_an_agent_that_never_succeeds_is_the_reason_not_the_verifier(capsys):
    code, result, _ = run_json(["solve", "--steps", "5", "--target", "0.5", "--p", "0"], capsys)
    assert code == 3 and "p = 0" in result["reason"] and "verifier caps" not in result["reason"]


# -------------------------------------------------------------------------------- table


def test_table_default_has_the_lesson_grid(capsys):
    code, out, _ = run(["table"], capsys)
    assert code == 0
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
    header = lines.pop("p")[2:]  # "p \ n" then the step counts
    for p, row in [
        ("0.9", ["0.590", "0.349", "0.122", "0.005"]),  # the lesson's table
        ("0.95", ["0.774", "0.599", "0.358", "0.077"]),
        ("0.99", ["0.951", "0.904", "0.818", "0.605"]),
    ]:
        cells = dict(zip(header, lines[p]))
        assert [cells[n] for n in ("5", "10", "20", "50")] == row


def test_table_json_is_p_to_the_n(capsys):
    code, result, _ = run_json(["table", "--p", "0.5,0.9", "--steps", "1,3,40"], capsys)
    assert code == 0
    assert result["p"] == [0.5, 0.9] and result["steps"] == [1, 3, 40]
    for p, row in zip(result["p"], result["success"]):
        assert row == pytest.approx([p**n for n in result["steps"]], rel=1e-14)


def test_flag_form_prints_the_one_chain_planner(capsys):
    # one chain planner: the flag form prints relsim.plan.chain's plan, keeping no copy
    import relsim.cli.solve as solve_command
    from relsim.plan.chain import plan_chain

    argv = ["solve", "--steps", "12", "--target", "0.9", "--p", "0.8", "--miss", "0.01"]
    code, result, _ = run_json(argv, capsys)
    assert code == 0 and result == plan_chain(12, 0.9, 0.8, miss=0.01).to_dict()
    assert not hasattr(solve_command, "_reason") and not hasattr(solve_command, "_remedies")


def test_the_docs_list_the_keys_solve_json_prints(capsys):
    # the command's page once listed row keys that rows do not have
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "commands" / "solve.md"
    section = page.read_text(encoding="utf-8").split("\n## ", 1)[0]
    one = section.split("With `--p`, the JSON keys are", 1)[1].split(". Without", 1)[0]
    grid = section.split("Without `--p`:", 1)[1].split("each with the keys", 1)
    code, with_p, _ = run_json(["solve", "--steps", "25", "--target", "0.95", "--p", "0.9"],
                               capsys)
    assert set(re.findall(r"`(\w+)`", one)) - {"null"} == set(with_p)
    code, table, _ = run_json(["solve", "--steps", "25", "--target", "0.95"], capsys)
    assert set(re.findall(r"`(\w+)`", grid[0])) == set(table)
    row_text = grid[1].split(".\n", 1)[0]
    assert set(re.findall(r"`(\w+)`", row_text)) == set(table["rows"][0])


def test_validate_past_the_limits_is_named_by_its_flag(capsys, monkeypatch):
    # the simulation's refusal named its Python argument, trials, which solve has no flag for
    monkeypatch.delenv("RELSIM_TIME_LIMIT", raising=False)
    monkeypatch.delenv("RELSIM_MEMORY_LIMIT", raising=False)
    code, out, err = run(["solve", "--steps", "5", "--target", "0.9", "--p", "0.9",
                          "--validate", str(10**15)], capsys)
    assert code == 2 and out == ""
    assert err.startswith("relsim: error: --validate: must be within about 60 s and 4 GiB, got ")
    assert err.count("\n") == 1
