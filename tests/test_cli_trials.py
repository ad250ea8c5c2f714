"""``relsim analyze``, ``compare`` and ``power``: exit codes, JSON shapes, stderr warnings."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from relsim import evalstats
from relsim.cli import main
from relsim.errors import RelsimError


def write(path, text):
    path.write_text(text)
    return str(path)


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def csv_of(outcomes, cost=None, steps=None):
    header = (
        "task,trial,success"
        + (",cost" if cost is not None else "")
        + (",steps" if steps is not None else "")
    )
    rows = [header]
    for task, results in outcomes.items():
        for j, success in enumerate(results):
            row = f"{task},{j + 1},{success}"
            if cost is not None:
                row += f",{cost}"
            if steps is not None:
                row += f",{steps}"
            rows.append(row)
    return "\n".join(rows) + "\n"


EQUAL = {"a": [1, 0, 1, 1], "b": [0, 0, 1, 0], "c": [1, 1, 1, 1], "d": [0, 0, 0, 0]}


def test_analyze_json_shape_and_values(tmp_path, capsys):
    path = write(tmp_path / "t.csv", csv_of(EQUAL))
    code, out, err = run(capsys, "analyze", path, "--k", "1,2,4", "--json")
    assert code == 0 and err == ""
    result = json.loads(out)
    assert set(result) == {
        "source",
        "tasks",
        "trials",
        "success",
        "pass_at_k",
        "pass_hat_k",
        "per_task",
        "metrics",
        "rates",
        "ignored_columns",
        "interval",
    }  # no cost column: no cost_per_success key; no category column: no categories
    assert result["metrics"] == {} and result["ignored_columns"] == []
    assert result["tasks"] == 4 and result["trials"] == 16
    assert set(result["success"]) == {"mean", "se", "ci"}
    assert result["success"]["mean"] == pytest.approx((0.75 + 0.25 + 1 + 0) / 4)
    for metric in ("pass_at_k", "pass_hat_k"):
        assert list(result[metric]) == ["1", "2", "4"]
        for row in result[metric].values():
            assert set(row) == {"estimate", "se", "ci", "excluded_tasks"}
            assert row["ci"][0] <= row["estimate"] <= row["ci"][1]
            assert row["excluded_tasks"] == 0
    # pass^4: only task c succeeds every time; pass@4: every task but d has a success
    assert result["pass_hat_k"]["4"]["estimate"] == pytest.approx(0.25)
    assert result["pass_at_k"]["4"]["estimate"] == pytest.approx(0.75)
    assert result["interval"] == {
        "method": "jeffreys",
        "confidence": 0.95,
        "replicates": None,
        "seed": None,
    }
    # the per-task table: p, pass@k and pass^k of each task, by hand
    assert result["per_task"][0] == {
        "task": "a", "trials": 4, "successes": 3, "p": 0.75,
        "pass_at_k": {"1": 0.75, "2": 1.0, "4": 1.0},
        "pass_hat_k": {"1": 0.75, "2": 0.5, "4": 0.0},  # C(3,2)/C(4,2) = 3/6
    }
    # the bootstrap on request, with its seed
    code, out, _ = run(
        capsys, "analyze", path, "--k", "1,2,4", "--seed", "3", "--interval", "bca", "--json"
    )
    assert json.loads(out)["interval"] == {
        "method": "bca", "confidence": 0.95, "replicates": 2000, "seed": 3
    }
    # the same seed gives the same output
    again = run(capsys, "analyze", path, "--k", "1,2,4", "--seed", "3", "--interval", "bca",
                "--json")[1]
    assert again == out
    # without --seed the command line passes its own default, 0, so its output stays the same
    # from run to run (the library's default, None, draws fresh entropy)
    default = json.loads(run(capsys, "analyze", path, "--k", "1,2,4", "--interval", "bca",
                             "--json")[1])
    assert default["interval"]["seed"] == 0
    library = evalstats.analyze(path, [1, 2, 4], interval="bca", seed=0).to_dict()
    assert default == library


def test_analyze_text_output(tmp_path, capsys):
    path = write(tmp_path / "t.csv", csv_of(EQUAL, cost=0.5, steps=10))
    code, out, err = run(capsys, "analyze", path, "--k", "2", "--per-task")
    assert code == 0 and err == ""
    assert "4 tasks, 16 trials" in out
    assert "pass@2" in out and "pass^2" in out
    assert "cost per success  1  95% CI [" in out  # 16 * 0.5 / 8 successes
    assert "relsim solve --steps 10 --target 0.95 --p " in out
    assert "Jeffreys on effective counts" in out
    # the per-task table, sorted by p: d (0), b (0.25), a (0.75), c (1)
    rows = [line.split()[0] for line in out.split("per task (sorted by p)")[1].splitlines()[2:6]]
    assert rows == ["d", "b", "a", "c"]
    code, out, err = run(capsys, "analyze", path, "--k", "2", "--interval", "bca",
                         "--replicates", "200")
    assert code == 0 and "(bca), 200 replicates" in out
    code, out, _ = run(capsys, "analyze", path, "--k", "2", "--interval", "percentile")
    assert code == 0 and "(percentile), 2000 replicates" in out


def test_analyze_cost_per_success_is_null_only_with_no_success(tmp_path, capsys):
    failing = write(tmp_path / "f.csv", csv_of({"a": [0, 0], "b": [0, 0]}, cost=1))
    code, out, _ = run(capsys, "analyze", failing, "--k", "1", "--json")
    assert code == 0 and json.loads(out)["cost_per_success"]["estimate"] is None
    code, out, _ = run(capsys, "analyze", failing, "--k", "1")
    # no success: infinite, and the interval's lower end (the cost per trial's over the
    # success's upper end) still says something
    assert "cost per success  infinite (no success; 95% CI from " in out
    plain = write(tmp_path / "p.csv", csv_of({"a": [0, 1], "b": [0, 0]}))
    code, out, _ = run(capsys, "analyze", plain, "--k", "1", "--json")
    assert code == 0 and "cost_per_success" not in json.loads(out)
    code, out, _ = run(capsys, "analyze", plain, "--k", "1")
    assert "cost per success" not in out


def test_analyze_steps_text_uses_the_planned_integer_steps(tmp_path, capsys):
    # mean steps 10.25 is planned as 10 steps: the implied p is success^(1/10), and the printed
    # command reproduces the observed success
    text = "task,trial,success,steps\na,1,1,10\na,2,0,11\nb,1,1,10\nb,2,1,10\n"
    path = write(tmp_path / "t.csv", text)
    code, out, _ = run(capsys, "analyze", path, "--k", "1")
    p = 0.75 ** (1 / 10)
    assert code == 0
    assert f"mean 10.25, planned as 10; implied per-step success {p:.6f} = success^(1/10)" in out
    assert f"relsim solve --steps 10 --target 0.95 --p {p:.6g}" in out
    code, out, _ = run(capsys, "analyze", path, "--k", "1", "--json")
    steps = json.loads(out)["steps"]
    assert steps["plan"]["steps"] == 10 and steps["per_step_success"] == pytest.approx(p)


def test_analyze_one_task_prints_no_pass_k_interval(tmp_path, capsys):
    path = write(tmp_path / "one.csv", csv_of({"x": [1, 1, 1, 0, 0]}))
    code, out, err = run(capsys, "analyze", path, "--k", "3", "--json")
    assert code == 0 and "only one task" in err
    result = json.loads(out)
    assert result["pass_at_k"]["3"]["ci"] == [None, None]
    assert result["pass_hat_k"]["3"]["ci"] == [None, None]
    code, out, _ = run(capsys, "analyze", path, "--k", "3")
    assert "pass@3" in out and "[1.0000, 1.0000]" not in out and "[n/a]" in out


def test_analyze_file_that_is_not_utf8_names_it(tmp_path, capsys):
    path = tmp_path / "bin.csv"
    path.write_bytes(b"task,trial,success\na,1,1\n\xff\xfe,1,0\n")
    code, out, err = run(capsys, "analyze", str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"relsim: error: {path} line 3: text: must be UTF-8, got byte 0xff")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_replicates_bound_matches_the_api():
    from relsim import evalstats
    from relsim.cli import trials

    assert trials.MIN_REPLICATES == evalstats.MIN_REPLICATES


def test_analyze_cost_and_steps_in_json(tmp_path, capsys):
    path = write(tmp_path / "t.csv", csv_of(EQUAL, cost=0.25, steps=20))
    code, out, _ = run(capsys, "analyze", path, "--k", "1", "--target", "0.9", "--json")
    result = json.loads(out)
    assert result["cost_per_success"]["estimate"] == pytest.approx(16 * 0.25 / 8)
    steps = result["steps"]
    assert steps["mean"] == 20
    assert steps["per_step_success"] == pytest.approx(0.5 ** (1 / 20))
    plan = steps["plan"]
    assert set(plan) == {
        "steps",
        "target",
        "required_step_success",
        "retries",
        "success",
        "feasible",
        "command",
    }
    assert plan["target"] == 0.9 and plan["required_step_success"] == pytest.approx(0.9 ** (1 / 20))
    p = 0.5 ** (1 / 20)
    r = next(r for r in range(50) if (1 - (1 - p) ** (r + 1)) ** 20 >= 0.9)
    assert plan["retries"] == r and plan["feasible"] is True


def test_analyze_warns_on_stderr_when_counts_differ(tmp_path, capsys):
    path = write(tmp_path / "t.csv", csv_of({"a": [1, 0, 1], "b": [1], "c": [0, 1]}))
    code, out, err = run(capsys, "analyze", path, "--k", "1,3", "--json")
    assert code == 0
    assert err.startswith("relsim: warning: trial counts differ across tasks (1 to 3 per task)")
    assert "excluded: 2 at k=3" in err
    assert json.loads(out)["pass_at_k"]["3"]["excluded_tasks"] == 2


def test_analyze_jsonl_with_threshold(tmp_path, capsys):
    lines = [
        '{"task": "a", "trial": 1, "success": 0.9}',
        '{"task": "a", "trial": 2, "success": 0.4}',
        '{"task": "b", "trial": 1, "success": 0.7}',
        '{"task": "b", "trial": 2, "success": 0.6}',
    ]
    path = write(tmp_path / "t.jsonl", "\n".join(lines) + "\n")
    code, out, _ = run(capsys, "analyze", path, "--threshold", "0.65", "--json")
    assert code == 0
    assert json.loads(out)["success"]["mean"] == pytest.approx(0.5)  # a: 1/2, b: 1/2
    code, _, err = run(capsys, "analyze", path)  # scores without --threshold
    assert code == 2 and "line 1: success: must be 0/1 or true/false" in err


@pytest.mark.parametrize(
    "text,message",
    [
        ("", ": rows: must be at least one trial, got an empty file"),
        ("task,trial\na,1\n", ": columns: must include task, trial and success"),
        (
            "task,trial,success\na,1,1\na,1,0\n",
            " line 3: (task, trial): must be a pair not seen before, got 'a', '1' again",
        ),
        ("task,trial,success\na,1,yes\n", " line 2: success: must be 0/1 or true/false"),
    ],
)
def test_analyze_bad_files_exit_2_with_one_line(tmp_path, capsys, text, message):
    path = write(tmp_path / "bad.csv", text)
    code, out, err = run(capsys, "analyze", path)
    assert code == 2 and out == ""
    assert err.startswith(f"relsim: error: {path}{message}")
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--k", "5"], "relsim: error: --k: must be in [1, 4]"),
        (["--k", "0"], "argument --k: must be a comma-separated list of integers >= 1"),
        (["--replicates", "0"], "argument --replicates: must be an integer >= 100, got '0'"),
        (["--replicates", "1"], "argument --replicates: must be an integer >= 100, got '1'"),
        (["--replicates", "99"], "argument --replicates: must be an integer >= 100, got '99'"),
        (["--seed", "-1"], "argument --seed: must be an integer >= 0"),
        (["--threshold", "nan"], "argument --threshold: must be a finite number"),
        (["--target", "1.5"], "argument --target: must be a number in (0, 1]"),
        (["--interval", "normal"], "argument --interval: invalid choice: 'normal'"),
    ],
)
def test_analyze_bad_options_exit_2(tmp_path, capsys, argv, message):
    path = write(tmp_path / "t.csv", csv_of(EQUAL))
    with pytest.raises(SystemExit) as exit_info:
        code = main(["analyze", path, *argv])
        raise SystemExit(code)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert message in err and err.count("\n") == 1


def test_analyze_missing_file_exit_2(tmp_path, capsys):
    code, _, err = run(capsys, "analyze", str(tmp_path / "absent.csv"))
    absent = tmp_path / "absent.csv"
    assert code == 2 and err == f"relsim: error: {absent}: file: must exist, got no such file\n"


def test_compare_json_shape_values_and_warning(tmp_path, capsys):
    base = write(
        tmp_path / "base.csv",
        csv_of({"a": [1, 0], "b": [0, 0], "c": [1, 1], "d": [0, 1], "old": [1, 1]}),
    )
    cand = write(
        tmp_path / "cand.csv",
        csv_of({"a": [1, 1], "b": [1, 0], "c": [1, 1], "d": [1, 0], "new": [0, 0]}),
    )
    code, out, err = run(capsys, "compare", base, cand, "--json")
    assert code == 0
    result = json.loads(out)
    assert set(result) == {
        "tasks", "baseline", "candidate", "difference", "se", "ci", "p_value", "tested",
        "correction", "quantities",
    }
    assert result["tasks"] == 4
    # differences a +0.5, b +0.5, c 0, d 0: paired se sqrt(1/12)/2 = 0.144, below the
    # binomial noise within tasks (.125 + .125 + .125 + .125) / 16 -> se 0.177
    assert result["difference"] == pytest.approx(0.25)
    assert result["se"] == pytest.approx(math.sqrt(0.5 / 16))
    assert list(result["quantities"]) == ["success"] and result["tested"] == 1
    assert result["ci"][0] < 0.25 < result["ci"][1]
    assert 0 < result["p_value"] < 1
    assert (
        "1 task only in the baseline ('old')" in err
        and "1 task only in the candidate ('new')" in err
    )
    assert all(line.startswith("relsim: warning: ") for line in err.splitlines())


def test_compare_text_and_errors(tmp_path, capsys):
    base = write(tmp_path / "base.csv", csv_of({"a": [1, 0], "b": [0, 0]}))
    code, out, err = run(capsys, "compare", base, base)
    assert code == 0 and err == ""
    assert out.splitlines()[2].split()[:4] == ["success", "0.25", "0.25", "0"]
    lonely = write(tmp_path / "lonely.csv", csv_of({"a": [1, 0], "z": [1, 1]}))
    code, out, err = run(capsys, "compare", base, lonely)
    assert code == 2 and err == (
        "relsim: error: shared tasks: must be at least 2 for a paired comparison of baseline "
        "and candidate, got 1\n"
    )


def test_power_tasks_json(capsys):
    code, out, err = run(capsys, "power", "--delta", "0.03", "--baseline", "0.7", "--json")
    assert code == 0 and err == ""
    result = json.loads(out)
    assert result["tasks"] == 3553  # see tests/test_evalstats.py for the hand computation
    assert result["candidate"] == pytest.approx(0.73)
    assert 0.8 <= result["achieved_power"] < 0.801
    assert {"delta", "baseline", "trials_per_task", "alpha", "power", "difference_sd"} <= set(
        result
    )
    code, out, _ = run(
        capsys,
        "power",
        "--delta",
        "0.1",
        "--baseline",
        "0.5",
        "--trials-per-task",
        "10",
        "--difference-sd",
        "0.05",
        "--alpha",
        "0.05",
        "--power",
        "0.8",
    )
    assert code == 0 and out.startswith("43 tasks")


def test_power_mde_json_and_infeasible(capsys):
    code, out, _ = run(capsys, "power", "--tasks", "100", "--baseline", "0.7", "--json")
    result = json.loads(out)
    assert code == 0 and result["tasks"] == 100
    # the mde is the gain at which the paired t-test over 100 tasks has power 0.8: scipy's
    # noncentral t, 99 degrees of freedom, noncentrality 10 D / sqrt(0.21 + Q(1-Q))
    from scipy import stats

    d = result["mde"]
    critical = stats.t.isf(0.025, 99)
    shift = 10 * d / math.sqrt(0.21 + (0.7 + d) * (0.3 - d))
    power = stats.nct.sf(critical, 99, shift) + stats.nct.cdf(-critical, 99, shift)
    assert power == pytest.approx(0.8, rel=1e-9) and result["achieved_power"] >= 0.8
    code, out, _ = run(capsys, "power", "--tasks", "2", "--baseline", "0.99", "--json")
    assert code == 3 and json.loads(out)["mde"] is None
    code, out, _ = run(capsys, "power", "--tasks", "2", "--baseline", "0.99")
    assert code == 3 and "no gain" in out


def test_power_not_above_alpha_warns_that_any_gain_counts(capsys):
    # the two-sided test rejects with chance alpha at D = 0, so at power <= alpha the least
    # gain is the least positive float and the fewest tasks (2) suffice: said, not hidden
    code, out, err = run(capsys, "power", "--tasks", "3", "--baseline", "0.5", "--alpha", "0.999")
    assert code == 0 and "4.941e-324" in out
    assert "--power 0.8 is not above --alpha 0.999" in err and "any gain counts" in err
    code, out, err = run(capsys, "power", "--delta", "0.1", "--baseline", "0.5", "--alpha", "0.9",
                         "--power", "0.5")
    assert code == 0 and out.startswith("2 tasks") and "not above --alpha 0.9" in err
    # negative control: the usual settings warn of nothing
    code, out, err = run(capsys, "power", "--tasks", "3", "--baseline", "0.5")
    assert code in (0, 3) and "warning" not in err


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--baseline", "0.5"], "one of the arguments --delta --tasks is required"),
        (["--delta", "0.1", "--tasks", "10", "--baseline", "0.5"], "not allowed with argument"),
        (["--delta", "0.1"], "the following arguments are required: --baseline"),
        (["--delta", "0", "--baseline", "0.5"], "argument --delta: must be a nonzero number"),
        (
            ["--delta", "0.1", "--baseline", "1.5"],
            "argument --baseline: must be a number in [0, 1]",
        ),
        (
            ["--delta", "0.1", "--baseline", "0.5", "--alpha", "1"],
            "argument --alpha: must be a number in (0, 1)",
        ),
        (
            ["--delta", "0.1", "--baseline", "0.5", "--power", "0"],
            "argument --power: must be a number in (0, 1)",
        ),
        (
            ["--delta", "0.1", "--baseline", "0.5", "--trials-per-task", "0"],
            "argument --trials-per-task: must be an integer >= 1",
        ),
        (
            ["--delta", "0.1", "--baseline", "0.5", "--difference-sd", "-1"],
            "argument --difference-sd: must be a number >= 0",
        ),
        (["--tasks", "0", "--baseline", "0.5"], "argument --tasks: must be an integer >= 1"),
    ],
)
def test_power_bad_options_exit_2(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["power", *argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert message in err and err.count("\n") == 1


def test_power_delta_out_of_range_is_a_value_error_exit_2(capsys):
    code, out, err = run(capsys, "power", "--delta", "0.4", "--baseline", "0.8")
    assert code == 2 and out == ""
    assert err == (
        "relsim: error: --delta: must be a number keeping baseline + delta in [0, 1], "
        "i.e. in [-0.8, 0.2], got 0.4\n"
    )


@pytest.mark.parametrize("tasks", ["1" + "0" * 15 + "1", "1" + "0" * 30])
def test_power_with_more_tasks_than_it_can_count_exits_2(capsys, tasks):
    # past int64 the t quantile of scipy failed: an internal error (exit 1), not bad input
    code, out, err = run(capsys, "power", "--baseline", "0.5", "--tasks", tasks)
    assert code == 2 and out == ""
    assert err == f"relsim: error: --tasks: must be an integer in 2..10^15 (a paired comparison needs two), got {tasks}\n"
    with pytest.raises(RelsimError,
                       match=r"^tasks: must be an integer in 2\.\.10\^15"):
        evalstats.paired_power(int(tasks), 0.1, 0.5)
    # the largest count still answers
    assert 0 < evalstats.minimum_detectable_effect(10**15, 0.5) < 1e-6


def test_commands_are_listed_in_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    for command in ("analyze", "compare", "power"):
        assert command in out


def test_the_cli_module_imports_nothing_heavy():
    # relsim/cli/trials.py is imported to build the parser of every command: it must stay light
    code = (
        "import sys, relsim.cli.trials; "
        "print([m for m in ('numpy', 'pandas', 'scipy', 'numba') if m in sys.modules])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_analyze_says_when_target_has_no_plan_to_set(capsys):
    # --target sets the plan drawn from a steps column or --labels: without either it was
    # silently ignored
    root = Path(__file__).resolve().parents[1] / "examples" / "harness"
    code, out, err = run(capsys, "analyze", str(root / "exercise1.csv"), "--target", "0.5")
    assert code == 0 and out
    assert err == ("relsim: warning: --target sets the plan drawn from a steps column or from "
                   "--labels; these trials have neither, so no plan uses it\n")
    code, out, err = run(capsys, "analyze", str(root / "exercise3_v1.csv"), "--target", "0.5")
    assert code == 0 and "--target" not in err and "0.5" in out  # a steps column: the plan's
    code, _, err = run(capsys, "analyze", str(root / "exercise1.csv"))
    assert code == 0 and err == ""


def test_task_ids_and_categories_with_control_characters_print_escaped(capsys, tmp_path):
    # a task id or category that would recolour the terminal (or break a table's line) is
    # shown as its escapes; the JSON keeps the text as read
    path = tmp_path / "trials.csv"
    path.write_text('task,trial,success,category\n"a\x1b[31mX",1,1,\nb,1,0,"line\nbreak"\n'
                    '"a\x1b[31mX",2,0,"c\x1b[0m"\nb,2,1,\n', encoding="utf-8")
    code, out, _ = run(capsys, "analyze", str(path), "--per-task")
    assert code == 0 and "\x1b" not in out
    assert "a\\x1b[31mX" in out and "c\\x1b[0m" in out and "line\\nbreak" in out
    assert "\nb " in out  # control: a plain id is printed as it is
    code, out, _ = run(capsys, "analyze", str(path), "--json")
    assert "a\x1b[31mX" in json.loads(out)["categories"]["c\x1b[0m"]["tasks"]
