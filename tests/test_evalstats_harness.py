"""The eval-harness report: per-task table, metric columns, rates, cost per success, failure
categories, compare on every quantity, the report file, and bad input (issues 14 and 15).

Expected values are computed by hand in the tests (sums, ratio estimators, binomial
coefficients, Holm's rule from its definition, scipy's distributions), not by relsim.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from relsim import evalstats
from relsim.cli import main
from relsim.errors import RelsimError
from relsim.evalstats import TrialDataError, TrialDataWarning
from relsim.intervals import effective_count_interval, holm
from relsim.report.eval import write_report

import small_sample_by_hand as by_hand

T975 = {1: 12.706204736174698, 2: 4.302652729749464, 3: 3.182446305284263}  # from tables


def harness() -> pd.DataFrame:
    """Four tasks x 3 trials with steps, tool errors, cost, a failure category and notes."""
    rows = [
        # task, success, steps, tool_errors, cost, category, notes
        ("a", 1, 10, 0, 1.0, "", "ok"),
        ("a", 1, 12, 1, 1.0, "", "ok"),
        ("a", 0, 20, 3, 2.0, "wrong_tool", "x"),
        ("b", 0, 8, 2, 1.0, "wrong_tool", "y"),
        ("b", 0, 9, 1, 1.0, "timeout", "z"),
        ("b", 1, 10, 0, 1.0, "", ""),
        ("c", 1, 5, 0, 0.5, "", ""),
        ("c", 1, 5, 0, 0.5, "", ""),
        ("c", 1, 6, 0, 0.5, "", ""),
        ("d", 0, 30, 4, 3.0, "gave_up", ""),
        ("d", 0, 25, 2, 3.0, "wrong_tool", ""),
        ("d", 0, 30, 5, 3.0, "infra", ""),
    ]
    frame = pd.DataFrame(
        rows, columns=["task", "success", "steps", "tool_errors", "cost", "category", "notes"]
    )
    frame.insert(1, "trial", [1, 2, 3] * 4)
    return frame


def quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrialDataWarning)
        return function(*args, **kwargs)


def ratio_by_hand(y, x):
    """R = sum y / sum x, se^2 = sum u^2 / (T (T - 1)), u = (y - R x) / mean(x)."""
    y, x = np.asarray(y, float), np.asarray(x, float)
    r = y.sum() / x.sum()
    u = (y - r * x) / x.mean()
    return r, math.sqrt((u**2).sum() / (len(y) * (len(y) - 1)))


# ------------------------------------------------------------------------- per-task table


def test_per_task_table_in_python_and_json():
    result = quietly(evalstats.analyze, harness(), k=[2, 3])
    table = result.per_task
    assert table.loc["a", "rate"] == pytest.approx(2 / 3)
    # pass@2 of 2/3: 1 - C(1,2)/C(3,2) = 1; pass^2: C(2,2)/C(3,2) = 1/3
    assert table.loc["a", "pass_at_k_2"] == 1.0
    assert table.loc["a", "pass_hat_k_2"] == pytest.approx(1 / 3)
    assert table.loc["c", "pass_hat_k_3"] == 1.0 and table.loc["d", "pass_at_k_3"] == 0.0
    record = result.to_dict()["per_task"]
    assert [row["task"] for row in record] == ["a", "b", "c", "d"]
    assert record[1] == {
        "task": "b", "trials": 3, "successes": 1, "p": pytest.approx(1 / 3),
        "pass_at_k": {"2": pytest.approx(1 - special.comb(2, 2) / special.comb(3, 2)),
                      "3": 1.0},
        "pass_hat_k": {"2": 0.0, "3": 0.0},
    }


def test_k_is_one_argument_by_position_or_by_name():
    frame = harness()
    by_name = quietly(evalstats.analyze, frame, k=[3]).to_dict()
    by_position = quietly(evalstats.analyze, frame, [3]).to_dict()
    assert by_name == by_position and list(by_name["pass_at_k"]) == ["3"]
    assert list(quietly(evalstats.analyze, frame, k=2).to_dict()["pass_at_k"]) == ["2"]
    assert list(quietly(evalstats.compare, frame, frame, k=2).quantities)[:3] == [
        "success", "pass@2", "pass^2"]
    # one name for one thing: every function of evalstats that takes k calls it k
    for function in (evalstats.analyze, evalstats.compare, evalstats.pass_k):
        parameters = inspect.signature(function).parameters
        assert "k" in parameters and "ks" not in parameters, function.__name__
    with pytest.raises(TypeError):
        evalstats.analyze(frame, ks=[3])


def test_success_is_pass_at_1_one_interval():
    result = quietly(evalstats.analyze, harness(), k=[1, 3])
    out = result.to_dict()
    assert out["success"]["ci"] == out["pass_at_k"]["1"]["ci"] == out["pass_hat_k"]["1"]["ci"]
    assert out["success"]["mean"] == out["pass_hat_k"]["1"]["estimate"]
    bca = quietly(evalstats.analyze, harness(), k=[3], interval="bca", replicates=500,
                  seed=0).to_dict()
    assert "1" not in bca["pass_at_k"]  # not asked for, but success still used its method
    again = quietly(evalstats.analyze, harness(), k=[1], interval="bca", replicates=500, seed=0)
    assert bca["success"]["ci"] == again.to_dict()["pass_at_k"]["1"]["ci"]


def test_pass_k_interval_is_the_documented_composition():
    rng = np.random.default_rng(2)
    tasks = pd.DataFrame({"trials": np.full(12, 5), "successes": rng.integers(0, 6, 12)})
    table = evalstats.pass_k(tasks, [3])
    c = tasks["successes"].to_numpy()
    values = special.comb(c, 3) / special.comb(5, 3)  # pass^3 per task, by hand
    low, high = effective_count_interval(values.mean(), values.var(ddof=1) / 12, 12 * 5 / 3, 12)
    row = table.loc[("pass_hat_k", 3)]
    assert row["estimate"] == pytest.approx(values.mean())
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))


def test_intervals_stay_in_range_and_never_collapse():
    # ten tasks each 4/5: the old interval was [0.8, 0.8]
    same = pd.DataFrame({"task": np.repeat([f"t{i}" for i in range(10)], 5),
                         "trial": np.tile(np.arange(5), 10),
                         "success": np.tile([1, 1, 1, 1, 0], 10)})
    out = evalstats.analyze(same, k=[1, 3, 5]).to_dict()
    low, high = out["success"]["ci"]
    assert 0 < low < 0.8 < high < 1
    for metric in ("pass_at_k", "pass_hat_k"):
        for row in out[metric].values():
            assert 0 <= row["ci"][0] < row["ci"][1] <= 1
    # two tasks: the t interval was [-5.85, 6.85]
    two = pd.DataFrame({"task": list("aaabbb"), "trial": [1, 2, 3] * 2,
                        "success": [1, 1, 1, 0, 0, 0]})
    low, high = evalstats.analyze(two, k=[1]).to_dict()["success"]["ci"]
    assert 0 <= low < 0.5 < high <= 1


# ----------------------------------------------------------------------- metrics and rates


def test_metric_means_per_trial_and_per_success_with_clustered_intervals():
    frame = harness()
    result = quietly(evalstats.analyze, frame, k=[1], rates=["tool_errors/steps"])
    steps = result.metrics["steps"]
    totals = frame.groupby("task")["steps"].sum().to_numpy()
    mean, se = ratio_by_hand(totals, [3, 3, 3, 3])
    assert steps["mean"] == pytest.approx(170 / 12) and steps["se"] == pytest.approx(se)
    # the hull of the skewness-corrected t and the log-scale interval (the reference)
    assert steps["ci"] == pytest.approx(by_hand.ratio(list(totals), [3, 3, 3, 3])[2:])
    assert steps["ci"][0] < mean < steps["ci"][1]
    won = frame[frame["success"] == 1]
    mean_s, se_s = ratio_by_hand(won.groupby("task")["steps"].sum().to_numpy(),
                                 won.groupby("task").size().to_numpy())
    assert steps["mean_success"] == pytest.approx(mean_s)  # d has no success: 3 tasks
    assert steps["se_success"] == pytest.approx(se_s)
    assert steps["ci_success"] == pytest.approx(
        by_hand.ratio(list(won.groupby("task")["steps"].sum()), list(won.groupby("task").size()))[2:]
    )
    rate = result.rates["tool_errors/steps"]
    r, se_r = ratio_by_hand(frame.groupby("task")["tool_errors"].sum().to_numpy(), totals)
    assert rate["estimate"] == pytest.approx(18 / 170) and rate["se"] == pytest.approx(se_r)
    out = result.to_dict()
    assert set(out["metrics"]) == {"cost", "steps", "tool_errors"}
    assert set(out["metrics"]["steps"]) - {"coverage_note", "coverage_note_success"} == {
        "mean", "ci", "mean_success", "ci_success"
    }
    assert set(out["rates"]["tool_errors/steps"]) - {"coverage_note"} == {"estimate", "ci"}
    # 4 tasks x 3 trials: near the measured 10 x 3 cell of rates, which covered under 94%
    assert out["rates"]["tool_errors/steps"]["coverage_note"].startswith(
        "measured coverage 90.4% at 10 tasks x 3 trials"
    )
    assert out["ignored_columns"] == ["notes"]  # text, named, never silently


def test_cost_per_success_has_a_clustered_interval_and_survives_huge_costs():
    frame = harness()
    cost = quietly(evalstats.analyze, frame, k=[1]).cost_per_success
    r, se = ratio_by_hand(frame.groupby("task")["cost"].sum().to_numpy(),
                          frame.groupby("task")["success"].sum().to_numpy())
    assert cost["estimate"] == pytest.approx(17.5 / 6) and cost["se"] == pytest.approx(se)
    assert cost["ci"][0] < r < cost["ci"][1]
    huge = pd.DataFrame({"task": list("abc"), "trial": 1, "success": 1, "cost": 1e308})
    out = evalstats.analyze(huge, k=[1]).to_dict()["cost_per_success"]
    assert out["estimate"] == pytest.approx(1e308)  # was "infinite (no success)"


def test_bad_rate_names_the_column_with_a_hint():
    with pytest.raises(RelsimError, match=r"did you mean 'tool_errors'\?"):
        quietly(evalstats.analyze, harness(), k=[1], rates=["tool_erors/steps"])
    with pytest.raises(RelsimError, match="^rate: must be two numeric columns"):
        quietly(evalstats.analyze, harness(), k=[1], rates=["steps"])


# ----------------------------------------------------------------------- failure categories


def test_failure_categories_counts_shares_tasks_and_infrastructure():
    frame = harness()
    result = quietly(evalstats.analyze, frame, k=[1])
    found = result.categories
    assert list(found) == ["wrong_tool", "gave_up", "infra", "timeout"]  # by count, then name
    assert found["wrong_tool"]["count"] == 3
    assert found["wrong_tool"]["share"] == pytest.approx(3 / 6)
    assert found["wrong_tool"]["tasks"] == ["a", "b", "d"]
    for value in found.values():
        assert 0 <= value["ci"][0] < value["share"] < value["ci"][1] <= 1
    infra = result.infrastructure
    assert infra["categories"] == ["infra", "timeout"] and infra["trials"] == 2
    # without the two trials: a 2/3, b 1/2, c 3/3, d 0/2 -> mean over tasks
    assert infra["success"]["mean"] == pytest.approx((2 / 3 + 1 / 2 + 1 + 0) / 4)
    assert any("infrastructure" in message for message in result.warnings)
    # configurable: nothing is infrastructure when told so
    plain = quietly(evalstats.analyze, frame, k=[1], infra_categories=[])
    assert plain.infrastructure is None
    # "named like": a category containing the word, any case
    like = frame.assign(category=frame["category"].replace({"timeout": "Env_Timeout"}))
    found_like = quietly(evalstats.analyze, like, k=[1], infra_categories=["timeout"])
    assert found_like.infrastructure["categories"] == ["Env_Timeout"]
    # another column, by name
    renamed = frame.rename(columns={"category": "why"})
    assert quietly(evalstats.analyze, renamed, k=[1], category="why").categories == found
    with pytest.raises(RelsimError, match=r"did you mean 'why'\?"):
        quietly(evalstats.analyze, renamed, k=[1], category="wyh")


def test_category_share_interval_is_the_documented_composition():
    frame = harness()
    share = quietly(evalstats.analyze, frame, k=[1]).categories["wrong_tool"]
    failed = frame[frame["success"] == 0]
    hits = failed.assign(hit=failed["category"] == "wrong_tool").groupby("task")["hit"].sum()
    r, se = ratio_by_hand(hits.to_numpy(), failed.groupby("task").size().to_numpy())
    low, high = effective_count_interval(r, se**2, 6, 3)  # 6 failures over 3 tasks
    assert share["ci"] == pytest.approx((low, high))


# ------------------------------------------------------------------------ compare everything


def test_compare_every_quantity_with_holm():
    base = harness()
    cand = harness()
    cand.loc[cand["task"] == "d", "success"] = [1, 0, 1]
    cand["steps"] = cand["steps"] - 1
    result = quietly(evalstats.compare, base, cand, k=[1, 3])
    names = list(result.quantities)
    assert names == ["success", "pass@3", "pass^3", "cost_per_success", "cost", "steps",
                     "tool_errors"]
    assert result.tested == len(names)
    success = result.quantities["success"]
    assert success["difference"] == pytest.approx(2 / 3 / 4)
    steps = result.quantities["steps"]
    assert steps["difference"] == pytest.approx(-1.0) and steps["se"] == pytest.approx(0.0)
    raw = [value["p_value"] for value in result.quantities.values()]
    # Holm from its definition: sorted p times (m - i), running maximum, capped at 1
    order = np.argsort(raw)
    expected = np.empty(len(raw))
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (len(raw) - i) * raw[j]))
        expected[j] = running
    assert [value["p_holm"] for value in result.quantities.values()] == pytest.approx(expected)
    assert list(holm([0.01, 0.04, 0.03])) == pytest.approx([0.03, 0.06, 0.06])
    out = result.to_dict()
    assert out["tested"] == 7 and out["correction"] == "holm"
    assert json.loads(json.dumps(out)) == out


def test_compare_cost_per_success_difference_by_hand():
    base = harness()
    cand = harness()
    cand["cost"] = cand["cost"] * 2
    diff = quietly(evalstats.compare, base, cand, k=[1]).quantities["cost_per_success"]
    assert diff["baseline"] == pytest.approx(17.5 / 6) and diff["candidate"] == pytest.approx(35 / 6)
    # u_i doubles with the costs: the paired contributions differ by u_i itself
    y = base.groupby("task")["cost"].sum().to_numpy()
    x = base.groupby("task")["success"].sum().to_numpy()
    r, se = ratio_by_hand(y, x)
    assert diff["difference"] == pytest.approx(r) and diff["se"] == pytest.approx(se)


# ----------------------------------------------------------------------------------- report


@pytest.mark.slow
def test_html_report_is_self_contained_and_shows_the_analysis(tmp_path):
    result = quietly(evalstats.analyze, harness(), k=[1, 3], rates=["tool_errors/steps"])
    path = tmp_path / "out.html"
    assert write_report(result, path) == [path]
    text = path.read_text()
    assert text.count("<svg") == 1 and '<figure id="figure-pass-k" data-figure="pass-k">' in text
    for external in ("<script", "<link", "<img", "src=", "url(http", "url(data", 'href="http', "@import"):
        assert external not in text
    out = result.to_dict()
    row = '<td class="wrap">{}</td><td class="num">{:.4g}</td>'
    assert row.format("success (= pass@1)", out["success"]["mean"]) in text
    assert row.format("pass^3", out["pass_hat_k"]["3"]["estimate"]) in text
    # the per-task table, sorted by p: d (0), b, a, c (1)
    rows = re.findall(r'<tr><td class="wrap">([abcd])</td><td class="num">3</td>', text)
    assert rows == ["d", "b", "a", "c"]
    assert ('<td class="wrap">wrong_tool</td><td class="num">3</td><td class="num">0.5</td>'
            in text)
    assert "rate tool_errors/steps" in text and "Infrastructure noise (infra, timeout)" in text


@pytest.mark.slow
def test_markdown_report_and_compare_report(tmp_path):
    result = quietly(evalstats.analyze, harness(), k=[3])
    written = write_report(result, tmp_path / "out.md")
    assert [p.name for p in written] == ["out.md", "out.svg"]
    text = written[0].read_text()
    assert "![pass@k and pass^k against k](out.svg)" in text
    assert "| d | 3 | 0 | 0 | 0 | 0 |" in text
    assert written[1].read_text().startswith("<svg")
    cand = harness()
    cand.loc[cand["task"] == "d", "success"] = [1, 0, 1]
    comparison = quietly(evalstats.compare, harness(), cand, k=[3])
    html = tmp_path / "cmp.html"
    write_report(comparison, html)
    text = html.read_text()
    assert "Paired differences over 4 shared tasks" in text
    assert '<td class="wrap">pass^3</td>' in text
    with pytest.raises(RelsimError, match=r"^report: must be a file name ending in \.html"):
        write_report(result, tmp_path / "out.pdf")


@pytest.mark.slow
def test_cli_report_and_exercise_three(tmp_path, capsys):
    path = tmp_path / "harness.csv"
    harness().to_csv(path, index=False)
    report = tmp_path / "report.html"
    code = main(["analyze", str(path), "--k", "3", "--rate", "tool_errors/steps",
                 "--report", str(report)])
    out, err = capsys.readouterr()
    assert code == 0 and report.exists()
    assert "failure category" in out and "wrong_tool" in out
    assert "rate tool_errors/steps" in out and "ignored (not numeric): notes" in out
    assert "relsim: warning: 2 failed trials in infrastructure categories" in err
    code = main(["analyze", str(path), "--json", "--k", "3"])
    out = json.loads(capsys.readouterr().out)
    assert set(out["categories"]["wrong_tool"]) == {"count", "share", "ci", "tasks"}
    assert set(out["cost_per_success"]) == {"estimate", "ci"}


# ----------------------------------------------------------------- bad input (issue 15)


def test_deeply_nested_and_huge_json_values_name_file_and_line(tmp_path):
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"task": "a", "trial": 1, "success": 1}\n'
                    '{"task": ' + "[" * 3000 + "]" * 3000 + ', "trial": 2, "success": 1}\n')
    with pytest.raises(TrialDataError, match=rf"^{re.escape(str(deep))} line 2: record: "):
        evalstats.read_trials(deep)
    huge = tmp_path / "huge.jsonl"
    huge.write_text('{"task": "a", "trial": 1, "success": 1, "steps": ' + "9" * 5000 + "}\n")
    with pytest.raises(TrialDataError, match=rf"^{re.escape(str(huge))} line 1: record: "):
        evalstats.read_trials(huge)


def test_steps_out_of_range_names_file_and_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("task,trial,success,steps\na,1,1,10\nb,1,1,1e300\n")
    with pytest.raises(TrialDataError, match=rf"^{re.escape(str(path))} line 3: steps: "
                       r"must be a number in \(0, 100000\], got '1e300'$"):
        evalstats.analyze(path)


def test_non_regular_and_oversized_files_are_refused(tmp_path, monkeypatch):
    with pytest.raises(TrialDataError, match="^/dev/zero: file: must be a regular file"):
        evalstats.read_trials("/dev/zero")
    path = tmp_path / "big.csv"
    path.write_text("task,trial,success\na,1,1\n")
    monkeypatch.setattr("relsim.evalstats._frames.MAX_FILE_BYTES", 10)
    with pytest.raises(TrialDataError, match=r"file: must be at most 0 MiB"):
        evalstats.read_trials(path)


def test_huge_replicate_counts_are_refused_before_any_work():
    tasks = pd.DataFrame({"trials": [5] * 10, "successes": [1, 2, 3, 4, 5] * 2})
    with pytest.raises(RelsimError, match=r"^replicates: must be at most \d+ for 10 tasks and "
                       r"2 statistics \(this would take 29.8 GiB"):
        evalstats.pass_k(tasks, [1], replicates=1_000_000_000, interval="bca")


@pytest.mark.parametrize("argv", [
    ["--delta", "1e-300", "--baseline", "0.5"],
    ["--delta", "1e-160", "--baseline", "0.5"],
    ["--delta", "0.1", "--baseline", "0.5", "--difference-sd", "1e154"],
    ["--delta", "0.1", "--baseline", "0.5", "--difference-sd", "1e200"],
])
def test_power_refuses_astronomic_task_counts_in_one_line(capsys, argv):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning either
        code = main(["power", *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("relsim: error: --delta: must be a difference that at "
                                        "most 10^15 tasks can detect")
    assert err.count("\n") == 1


def test_power_extreme_alpha_and_power_give_answers_not_tracebacks(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["power", "--delta", "0.1", "--baseline", "0.5", "--alpha", "1e-16"]) == 0
        out = capsys.readouterr().out
        z = stats.norm.isf(0.5e-16) + stats.norm.isf(0.2)  # from scipy's upper tail
        normal = math.ceil(z**2 * 0.49 / 0.01)  # 4100: the t-test needs a few more
        tasks = evalstats.tasks_needed(0.1, 0.5, alpha=1e-16)
        assert normal <= tasks <= normal + 50 and out.startswith(f"{tasks} tasks")
        code = main(["power", "--tasks", "100000000", "--baseline", "0", "--alpha", "1e-300",
                     "--power", "0.9999999999999999"])
        assert code == 0
        code = main(["power", "--tasks", "100", "--baseline", "0.5", "--difference-sd", "1e200"])
        assert code == 3


@pytest.mark.slow
def test_tasks_needed_round_trips_with_the_mde_and_never_answers_one():
    rng = np.random.default_rng(5)
    for _ in range(150):
        tasks = int(rng.integers(2, 3000))
        baseline = float(rng.uniform(0, 0.9))
        trials = int(rng.integers(1, 6))
        spread = float(rng.uniform(0, 0.3))
        mde = evalstats.minimum_detectable_effect(tasks, baseline, trials_per_task=trials,
                                                  difference_sd=spread)
        if mde is None:
            continue
        assert evalstats.tasks_needed(mde, baseline, trials_per_task=trials,
                                      difference_sd=spread) == tasks
    assert evalstats.tasks_needed(0.9, 0.05) >= 2


def test_replicates_without_a_bootstrap_are_said_to_do_nothing(tmp_path, capsys):
    path = tmp_path / "t.csv"
    harness().to_csv(path, index=False)
    assert main(["analyze", str(path), "--k", "1", "--replicates", "1000000000"]) == 0
    err = capsys.readouterr().err
    assert "--replicates and --seed set the bootstrap intervals" in err
    code = main(["analyze", str(path), "--k", "1", "--replicates", "1000000000",
                 "--interval", "bca"])
    err = capsys.readouterr().err
    assert code == 2 and "replicates: must be at most" in err and err.count("\n") == 1


def test_inspect_score_values_become_success():
    from relsim.evalstats.inspect_logs import _success

    assert [_success(v, None, "log sample 1") for v in ("C", "I", "N", True, 0, 1.0)] == [
        "1", "0", "0", "1", "0", "1"
    ]
    assert [_success(v, 0.5, "s") for v in ("P", "I", 0.7, 0.2, "0.9")] == [
        "1", "0", "1", "0", "1"
    ]
    with pytest.raises(TrialDataError, match=r"^log sample 3: success: must be C/I, a boolean "
                       r"or 0/1 \(or a score with threshold=T\), got 0.7$"):
        _success(0.7, None, "log sample 3")
    with pytest.raises(TrialDataError, match="partial P with threshold=T"):
        _success("P", None, "s")
    with pytest.raises(TrialDataError, match="must be a score value"):
        _success({"a": 1}, None, "s")


# ------------------------------------------- the intervals measured in tests/test_coverage.py


def test_small_sample_intervals_follow_their_documented_formulas():
    # the vectorised functions against the plain reference written from their docstrings
    from relsim.evalstats import smallsample

    rng = np.random.default_rng(8)
    for _ in range(120):
        tasks = int(rng.integers(2, 12))
        n_a, n_b = rng.integers(1, 6, tasks), rng.integers(1, 6, tasks)
        a = rng.binomial(n_a, rng.random(tasks)) / n_a
        b = rng.binomial(n_b, rng.random(tasks)) / n_b
        assert smallsample.paired_proportion_interval(a, b, n_a, n_b) == pytest.approx(
            by_hand.paired_proportion(list(a), list(b), list(n_a), list(n_b)), abs=1e-12
        )
        trials = rng.integers(1, 6, tasks).astype(float)
        values = np.exp(rng.normal(0, 1.5, tasks)) * trials * (rng.random(tasks) < 0.9)
        assert smallsample.ratio_interval(values, trials) == pytest.approx(
            by_hand.ratio(list(values), list(trials)), rel=1e-9
        )
        successes = rng.binomial(trials.astype(int), rng.random(tasks)).astype(float)
        if successes.sum() > 0 and values.sum() > 0:
            estimate, _, low, high = smallsample.cost_per_success_interval(
                values, successes, trials
            )
            assert (estimate, low, high) == pytest.approx(
                by_hand.cost_per_success(list(values), list(successes), list(trials)), rel=1e-9
            )


def two_versions(seed=3, tasks=12, trials=3):
    """Two evals of the same tasks with success, cost and a heavy-tailed latency."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.3, 1.2, tasks)
    frames = []
    for shift in (0.0, 0.7):
        success = rng.random((tasks, trials)) < special.expit(skill + shift)[:, None]
        latency = np.exp(rng.normal(0, 1.2, (tasks, trials)) + 0.3 * skill[:, None])
        frames.append(pd.DataFrame({
            "task": np.repeat([f"t{i:02d}" for i in range(tasks)], trials),
            "trial": np.tile(np.arange(1, trials + 1), tasks),
            "success": success.ravel().astype(int),
            "cost": (0.02 * latency).ravel(),
            "latency": latency.ravel(),
        }))
    return frames


def test_analyze_and_compare_report_exactly_the_measured_intervals():
    from relsim.evalstats import smallsample

    base, cand = two_versions()
    totals = [frame.groupby("task", sort=False) for frame in (base, cand)]
    result = quietly(evalstats.analyze, base, k=[1, 3])
    latency = base.groupby("task", sort=False)["latency"].sum().to_numpy()
    counts = base.groupby("task", sort=False).size().to_numpy().astype(float)
    _, _, low, high = smallsample.ratio_interval(latency, counts)
    assert result.metrics["latency"]["ci"] == pytest.approx((low, high))
    won = base[base["success"] == 1].groupby("task", sort=False)
    names = base["task"].unique()
    won_latency = won["latency"].sum().reindex(names, fill_value=0).to_numpy()
    won_count = won.size().reindex(names, fill_value=0).to_numpy().astype(float)
    _, _, low, high = smallsample.ratio_interval(won_latency, won_count)
    assert result.metrics["latency"]["ci_success"] == pytest.approx((low, high))
    cost = totals[0]["cost"].sum().to_numpy()
    successes = totals[0]["success"].sum().to_numpy().astype(float)
    _, _, low, high = smallsample.cost_per_success_interval(cost, successes, counts)
    assert result.cost_per_success["ci"] == pytest.approx((low, high))

    compared = quietly(evalstats.compare, base, cand, k=[1, 3])
    rates = [group["success"].mean().to_numpy() for group in totals]
    difference, se, low, high = smallsample.paired_proportion_interval(*rates, 3, 3)
    success = compared.quantities["success"]
    assert (success["difference"], success["se"], *success["ci"]) == pytest.approx(
        (difference, se, low, high)
    )
    hats = [group["success"].sum().to_numpy() for group in totals]
    hats = [(h == 3).astype(float) for h in hats]  # pass^3 of three trials: all succeeded
    _, _, low, high = smallsample.paired_proportion_interval(*hats, 3, 3, 3)
    assert compared.quantities["pass^3"]["ci"] == pytest.approx((low, high))
    sides = [(group["latency"].sum().to_numpy(), counts) for group in totals]
    _, _, low, high = smallsample.paired_ratio_interval(*sides)
    assert compared.quantities["latency"]["ci"] == pytest.approx((low, high))
    sides = [(group["cost"].sum().to_numpy(), group["success"].sum().to_numpy().astype(float),
              counts) for group in totals]
    _, _, low, high = smallsample.paired_ratio_interval(*sides)
    assert compared.quantities["cost_per_success"]["ci"] == pytest.approx((low, high))


def test_a_column_of_zeros_gets_the_rule_of_three_not_a_point():
    # the issue: an all-zero metric got [0, 0]. 10 tasks x 3 trials, no tool error at all:
    # [0, -log(0.025) / (30 (z / t_9)^2)], the exact Poisson bound for no event, widened
    frame = pd.DataFrame({"task": np.repeat([f"t{i}" for i in range(10)], 3),
                          "trial": np.tile([1, 2, 3], 10), "success": 1, "tool_errors": 0})
    result = quietly(evalstats.analyze, frame, k=[1])
    errors = result.metrics["tool_errors"]
    z, t = stats.norm.ppf(0.975), stats.t.ppf(0.975, 9)
    assert errors["mean"] == 0 and errors["ci"][0] == 0
    assert errors["ci"][1] == pytest.approx(-math.log(0.025) / (30 * (z / t) ** 2))
    assert errors["se"] > 0
    # compared with itself: no difference, but not a zero-width interval either
    same = quietly(evalstats.compare, frame, frame, k=[1]).quantities["tool_errors"]
    assert same["difference"] == 0 and same["ci"][0] < 0 < same["ci"][1]
    assert same["ci"] == pytest.approx((-errors["ci"][1], errors["ci"][1]))
    assert same["p_value"] == 1.0
