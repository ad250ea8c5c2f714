"""``relsim audit``: a grader's error rates from labelled verdicts, and the pass rate corrected.

Every number is held to something outside the code: the exact intervals to
``scipy.stats.binomtest``, the corrected pass rate to Lee et al.'s published example, the
prediction-powered mean to ``ppi_py`` itself (a test dependency, imported only here), and the
intervals that have no closed form (the cluster bootstrap, the delta method) to their coverage
on simulated audits whose truth is known, each with a negative control that must fail.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

import relsim
from relsim.cli import main
from relsim.errors import RelsimError
from relsim.evalstats import GraderAudit, TrialDataError, audit
from relsim.evalstats.audit import corrected_pass_rate, exact_interval

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "docs", "examples")


def _labels(wrong_passed, wrong, right_failed, right, tasks=None):
    """A labels frame: ``wrong_passed`` of ``wrong`` wrong answers passed, ``right_failed``
    of ``right`` right answers failed."""
    frame = pd.DataFrame({
        "verdict": [1] * wrong_passed + [0] * (wrong - wrong_passed)
        + [0] * right_failed + [1] * (right - right_failed),
        "label": [0] * wrong + [1] * right,
    })
    if tasks is not None:
        frame["task"] = tasks
    return frame


def _grade(rng, right, miss, false_reject):
    """A grader's verdicts (1: pass) on answers whose truth is ``right``."""
    draw = rng.random(np.shape(right))
    return np.where(right == 1, draw >= false_reject, draw < miss).astype(int)


# --------------------------------------------------------------------- exact intervals
@pytest.mark.parametrize("count, of", [(0, 10), (3, 10), (10, 10), (1, 1), (7, 44), (0, 1)])
def test_clopper_pearson_is_scipys_exact_interval(count, of):
    result = audit(_labels(count, of, 2, 30))
    expected = binomtest(count, of).proportion_ci(confidence_level=0.95, method="exact")
    assert result.miss["estimate"] == count / of
    assert result.miss["ci"] == pytest.approx((expected.low, expected.high), abs=1e-12)
    assert (result.miss["count"], result.miss["of"], result.miss["effective"]) == (count, of, of)
    reject = binomtest(2, 30).proportion_ci(method="exact")
    assert result.false_reject["ci"] == pytest.approx((reject.low, reject.high), abs=1e-12)
    assert result.interval == "clopper-pearson" and not result.clustered
    assert result.bootstrap is None
    # negative control: a Wilson interval is a different interval
    wilson = binomtest(count, of).proportion_ci(method="wilson")
    assert result.miss["ci"] != pytest.approx((wilson.low, wilson.high), abs=1e-6)


def test_one_label_per_named_task_is_not_clustered():
    labels = _labels(3, 10, 1, 10, tasks=[f"t{i}" for i in range(20)])
    result = audit(labels)
    assert result.tasks == 20 and not result.clustered and result.interval == "clopper-pearson"
    assert result.to_dict() == {**audit(labels.drop(columns="task")).to_dict(), "tasks": 20}


# ---------------------------------------------------------------- the corrected pass rate
def test_lee_et_al_published_example():
    # Lee et al. (2025): p = 0.4, q0 = 0.7, q1 = 0.9 give theta = 0.1 / 0.6 = 0.1667
    assert corrected_pass_rate(0.4, 1 - 0.7, 1 - 0.9) == pytest.approx(1 / 6, abs=1e-12)
    result = audit(_labels(3, 10, 1, 10), pd.DataFrame({"verdict": [1] * 4 + [0] * 6}))
    judged = result.judged
    assert judged["pass_rate"]["estimate"] == 0.4
    assert round(judged["corrected"]["estimate"], 4) == 0.1667
    assert judged["reason"] is None and judged["interval"] == "delta method"
    low, high = judged["corrected"]["ci"]
    assert 0.0 <= low <= 1 / 6 <= high <= 1.0
    # negative control: the judged rate itself is not the corrected one
    assert judged["corrected"]["estimate"] != pytest.approx(0.4, abs=0.1)


def test_corrected_pass_rate_inverts_the_grader():
    # p = theta q1 + (1 - theta) miss, the pass rate a grader gives a true rate theta
    for theta in (0.0, 0.3, 0.9, 1.0):
        for miss, false_reject in ((0.15, 0.05), (0.4, 0.3), (0.0, 0.0)):
            p = theta * (1 - false_reject) + (1 - theta) * miss
            assert corrected_pass_rate(p, miss, false_reject) == pytest.approx(theta, abs=1e-12)
    assert math.isnan(corrected_pass_rate(0.5, 0.5, 0.5))  # q0 + q1 = 1


def test_a_grader_no_better_than_chance_gets_no_corrected_number(capsys):
    # miss 0.6 and false_reject 0.5: q0 + q1 = 0.9 <= 1
    labels = _labels(6, 10, 5, 10)
    result = audit(labels, pd.DataFrame({"verdict": [1, 0, 1, 1]}))
    assert not result.better_than_chance
    assert result.judged["corrected"] is None
    assert "no better than chance" in result.judged["reason"]
    assert result.judged["ppi"]["estimate"] is not None  # PPI needs no good grader
    # exactly at chance (q0 + q1 = 1) is refused too; control: just better is not
    assert not audit(_labels(5, 10, 5, 10)).better_than_chance
    assert audit(_labels(5, 10, 4, 10)).better_than_chance


def test_the_cli_says_a_grader_is_no_better_than_chance(tmp_path, capsys):
    labels, judged = tmp_path / "labels.csv", tmp_path / "judged.csv"
    _labels(6, 10, 5, 10).to_csv(labels, index=False)
    judged.write_text("verdict\n1\n0\n1\n", encoding="utf-8")
    assert main(["audit", str(labels), "--judged", str(judged)]) == 0
    out = capsys.readouterr().out
    assert "NO better than chance: q0 + q1 = 0.9000 <= 1" in out
    assert "corrected           n/a  [n/a]" in out and "no better than chance" in out
    assert main(["audit", str(labels), "--judged", str(judged), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["better_than_chance"] is False and shown["judged"]["corrected"] is None


@pytest.mark.slow
def test_the_corrected_interval_covers_the_true_pass_rate():
    # 100 labels and 200 judged verdicts from a known grader and true pass rate, 300 times:
    # the delta-method interval holds the truth at least 95% of the time (within 5 standard
    # errors of the measured coverage); negative control: the judged rate's own interval,
    # blind to the grader's errors, almost never does
    rng = np.random.default_rng(2026)
    theta, miss, false_reject, runs = 0.6, 0.15, 0.05, 300
    covered = naive = 0
    for _ in range(runs):
        right = (rng.random(100) < theta).astype(int)
        labels = pd.DataFrame({"verdict": _grade(rng, right, miss, false_reject), "label": right})
        truth = (rng.random(200) < theta).astype(int)
        judged = pd.DataFrame({"verdict": _grade(rng, truth, miss, false_reject)})
        result = audit(labels, judged).judged
        low, high = result["corrected"]["ci"]
        covered += low <= theta <= high
        low, high = result["pass_rate"]["ci"]
        naive += low <= theta <= high
    coverage = covered / runs
    se = math.sqrt(max(coverage * (1 - coverage), 0.95 * 0.05) / runs)
    assert coverage + 5 * se >= 0.95, coverage
    assert naive / runs + 5 * se < 0.95, naive / runs


# ---------------------------------------------------------------- PPI++ against ppi_py
def _ppi_datasets():
    rng = np.random.default_rng(7)
    out = []
    for labelled, unlabelled, theta, miss, false_reject in (
        (100, 300, 0.6, 0.15, 0.05),
        (40, 1000, 0.3, 0.3, 0.1),
        (200, 50, 0.5, 0.05, 0.2),
        (25, 25, 0.7, 0.45, 0.4),  # a poor grader: lambda near 0
    ):
        right = (rng.random(labelled) < theta).astype(int)
        right[:2] = [0, 1]  # both kinds of answer, as an audit needs
        truth = (rng.random(unlabelled) < theta).astype(int)
        out.append((right, _grade(rng, right, miss, false_reject),
                    _grade(rng, truth, miss, false_reject)))
    return out


@pytest.mark.parametrize("dataset", range(4))
def test_ppi_is_ppi_pys_power_tuned_mean(dataset):
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    right, verdict, judged = _ppi_datasets()[dataset]
    result = audit(pd.DataFrame({"verdict": verdict, "label": right}),
                   pd.DataFrame({"verdict": judged})).judged["ppi"]
    y, yhat, yhat_u = (np.asarray(a, dtype=float) for a in (right, verdict, judged))
    estimate = float(np.squeeze(ppi_mean_pointestimate(y, yhat, yhat_u)))
    low, high = (float(np.squeeze(x)) for x in ppi_mean_ci(y, yhat, yhat_u, alpha=0.05))
    assert 0 < low and high < 1  # the cut to [0, 1] does not bite here
    assert result["estimate"] == pytest.approx(estimate, abs=1e-10)
    assert result["ci"] == pytest.approx((low, high), abs=1e-8)
    assert 0.0 <= result["lambda"] <= 1.0
    # negative control: untuned PPI (lambda = 1) and the classical mean differ
    for lam in (0.0, 1.0):
        other = float(np.squeeze(ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam)))
        assert abs(other - estimate) > 1e-6


def test_ppi_interval_is_cut_to_the_unit_interval_and_one_label_per_task_is_ppi_py():
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    # a pass rate near 1: ppi_py's interval crosses 1, relsim's stops there
    right = np.array([0] + [1] * 29)
    verdict = np.array([1] + [1] * 29)
    judged = np.array([1] * 60 + [0])
    y, yhat, yhat_u = (a.astype(float) for a in (right, verdict, judged))
    low, high = (float(np.squeeze(x)) for x in ppi_mean_ci(y, yhat, yhat_u, alpha=0.05))
    assert high > 1
    tasks = [f"t{i}" for i in range(30)]  # one label per task: the clustered variance is ppi_py's
    result = audit(pd.DataFrame({"verdict": verdict, "label": right, "task": tasks}),
                   pd.DataFrame({"verdict": judged,
                                 "task": [f"u{i}" for i in range(61)]})).judged["ppi"]
    assert result["ci"] == pytest.approx((low, 1.0), abs=1e-8)
    assert result["estimate"] == pytest.approx(
        float(np.squeeze(ppi_mean_pointestimate(y, yhat, yhat_u))), abs=1e-10)


def test_ppi_clusters_repeated_tasks():
    # the same verdicts, each task judged three times in a row: the clustered interval is
    # wider than ppi_py's, which takes the rows as independent
    from ppi_py import ppi_mean_ci

    right, verdict, judged = _ppi_datasets()[0]
    tasks = np.repeat(np.arange(100), 3)[: judged.size].astype(str)
    plain = audit(pd.DataFrame({"verdict": verdict, "label": right}),
                  pd.DataFrame({"verdict": np.sort(judged)})).judged["ppi"]
    clustered = audit(pd.DataFrame({"verdict": verdict, "label": right}),
                      pd.DataFrame({"verdict": np.sort(judged), "task": tasks})).judged["ppi"]
    assert clustered["estimate"] == plain["estimate"]
    low, high = (float(np.squeeze(x)) for x in ppi_mean_ci(
        right.astype(float), verdict.astype(float), np.sort(judged).astype(float), alpha=0.05))
    assert plain["ci"] == pytest.approx((low, high), abs=1e-8)
    assert clustered["ci"][1] - clustered["ci"][0] > 1.2 * (high - low)


# ------------------------------------------------------------------ the cluster bootstrap
def _clustered_labels(rng, tasks, per_task, miss_beta, false_reject_beta):
    """Labels from a grader whose error rates vary by task (Beta-distributed)."""
    miss = rng.beta(*miss_beta, tasks)
    false_reject = rng.beta(*false_reject_beta, tasks)
    task = np.repeat(np.arange(tasks), per_task)
    right = (rng.random(task.size) < 0.6).astype(int)
    draw = rng.random(task.size)
    verdict = np.where(right == 1, draw >= false_reject[task], draw < miss[task]).astype(int)
    return pd.DataFrame({"task": task.astype(str), "verdict": verdict, "label": right})


def test_clustered_labels_get_the_cluster_bootstrap():
    labels = _clustered_labels(np.random.default_rng(3), 20, 5, (1.5, 8.5), (0.5, 9.5))
    result = audit(labels, seed=11, replicates=500)
    assert result.clustered and result.interval == "cluster bootstrap" and result.tasks == 20
    assert result.bootstrap == {"method": "bca", "replicates": 500, "seed": 11}
    for rate in (result.miss, result.false_reject):
        low, high = rate["ci"]
        assert low <= rate["estimate"] <= high
        assert 1.0 <= rate["effective"] <= rate["of"]
        # never narrower than the exact interval of the effective count
        exact = exact_interval(rate["estimate"] * rate["effective"], rate["effective"])
        assert low <= exact[0] + 1e-12 and high >= exact[1] - 1e-12
    # the same seed repeats the draws; the percentile interval is another interval
    assert audit(labels, seed=11, replicates=500).to_dict() == result.to_dict()
    other = audit(labels, seed=11, replicates=500, interval="percentile")
    assert other.bootstrap["method"] == "percentile"


def test_no_miss_seen_never_gives_a_zero_width_interval():
    # 12 tasks of 4 labels, no wrong answer ever passed: [0, 0] would promise a perfect grader
    tasks = np.repeat([f"t{i}" for i in range(12)], 4)
    label = np.tile([0, 0, 1, 1], 12)
    labels = pd.DataFrame({"task": tasks, "verdict": label, "label": label})
    result = audit(labels, seed=0, replicates=200)
    assert result.miss["estimate"] == 0.0 and result.miss["ci"][0] == 0.0
    assert result.miss["ci"][1] >= exact_interval(0, 24)[1] * 0.5 > 0.05
    # one task holds every wrong answer: it is one draw, whatever its label count
    one = pd.DataFrame({"task": ["a"] * 6 + ["b", "c", "d"], "verdict": [0] * 6 + [1] * 3,
                        "label": [0] * 6 + [1] * 3})
    rate = audit(one, seed=0, replicates=200).miss
    assert rate["effective"] == 1.0 and rate["ci"] == pytest.approx(exact_interval(0, 1))


def test_the_effective_count_falls_with_the_design_effect():
    rng = np.random.default_rng(5)
    # every task's grader alike: the design effect is near 1
    alike = audit(_clustered_labels(rng, 40, 5, (150, 850), (50, 950)), seed=0, replicates=200)
    # the grader differs a lot from task to task: far fewer independent labels
    unlike = audit(_clustered_labels(rng, 40, 5, (0.15, 0.85), (0.05, 0.95)), seed=0,
                   replicates=200)
    assert alike.miss["effective"] > 0.7 * alike.miss["of"]
    assert unlike.miss["effective"] < 0.6 * unlike.miss["of"]


@pytest.mark.slow
def test_the_cluster_bootstrap_covers_the_true_rates():
    # 200 audits of 20 tasks x 10 labels whose grader varies by task: miss ~ Beta(0.15,
    # 0.85) (mean 0.15, intraclass correlation 0.5) and false_reject ~ Beta(0.5, 9.5) (mean
    # 0.05, correlation 0.09). The intervals hold the true rates at least 95% of the time,
    # within 5 standard errors of the measured coverage; negative control: the exact
    # interval that ignores the clustering falls short on the miss rate
    rng = np.random.default_rng(21)
    runs, truth = 200, {"miss": 0.15, "false_reject": 0.05}
    covered = {name: 0 for name in truth}
    naive = 0
    for run in range(runs):
        labels = _clustered_labels(rng, 20, 10, (0.15, 0.85), (0.5, 9.5))
        result = audit(labels, seed=run, replicates=300)
        for name, value in truth.items():
            low, high = getattr(result, name)["ci"]
            covered[name] += low <= value <= high
        low, high = exact_interval(result.miss["count"], result.miss["of"])
        naive += low <= truth["miss"] <= high
    for name, count in covered.items():
        coverage = count / runs
        se = math.sqrt(max(coverage * (1 - coverage), 0.95 * 0.05) / runs)
        assert coverage + 5 * se >= 0.95, (name, coverage)
    se = math.sqrt(0.95 * 0.05 / runs)
    assert naive / runs + 5 * se < 0.95, naive / runs


# ------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "text, message",
    [
        ("verdict,lable\n1,0\n", r"labels\.csv: columns: must include verdict and label "
         r"\(optional task\), got 'verdict', 'lable' \(missing 'label'; did you mean 'lable'"),
        ("verdict,label\n1,0\n2,1\n0,1\n", r"labels\.csv line 3: verdict: must be 0/1 or "
         r"true/false, got '2'"),
        ("verdict,label\n1,0\n1,yes\n0,maybe\n", r"labels\.csv line 3: label: must be 0/1 or "
         r"true/false, got 'yes' \(1 more row like it\)"),
        ("verdict,label\n1,0\n,1\n", r"labels\.csv line 3: verdict: must be a value in every "
         r"row, got nothing"),
        ("task,verdict,label\na,1,0\n,0,1\n", r"labels\.csv line 3: task: must be a value"),
        ("verdict,label\n1,1\n0,1\n", r"labels\.csv: label: must hold both right \(1\) and "
         r"wrong \(0\) answers, got only right \(1\) ones \(2 of 2\)"),
        ("verdict,label\n", r"labels\.csv: rows: must be at least one labelled verdict, got none"),
        ("", r"labels\.csv: rows: must be at least one trial, got an empty file"),
        ("verdict,label,label\n1,0,0\n", r"labels\.csv: columns: must name 'label' once"),
    ],
)
def test_bad_labels_name_the_file_line_and_column(tmp_path, text, message):
    path = tmp_path / "labels.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TrialDataError, match=message):
        audit(path)


def test_bad_jsonl_and_judged_files(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"verdict": true, "label": false}\n{"verdict": 1, "label": 1}\n[1]\n')
    with pytest.raises(TrialDataError, match=r"labels\.jsonl line 3: record: must be a JSON "
                       r"object, got a JSON list"):
        audit(path)
    path.write_text('{"verdict": true, "label": false}\n{"verdict": 1, "label": 1}\n')
    assert audit(path).miss["count"] == 1  # control: the good lines read
    judged = tmp_path / "judged.csv"
    judged.write_text("task,verdct\na,1\n", encoding="utf-8")
    with pytest.raises(TrialDataError, match=r"judged\.csv: columns: must include verdict "
                       r"\(optional task\), got 'task', 'verdct' \(missing 'verdict'; did you "
                       r"mean 'verdct'"):
        audit(path, judged)
    with pytest.raises(TrialDataError, match=r"missing\.csv: file: must exist"):
        audit(path, tmp_path / "missing.csv")


def test_bad_arguments_name_the_argument():
    labels = _labels(1, 5, 1, 5)
    with pytest.raises(RelsimError, match="^grader: must be given only with an Inspect eval "
                       "log, got 'judge'$"):
        audit(labels, grader="judge")
    with pytest.raises(RelsimError, match="^truth: must be given only with labels in an "
                       "Inspect eval log"):
        audit(labels, truth="human")
    with pytest.raises(RelsimError, match=r"^interval: must be one of bca, percentile, got 'x'"):
        audit(labels, interval="x")
    with pytest.raises(RelsimError, match=r"^replicates: must be an integer >= 100, got 10$"):
        audit(labels, replicates=10)
    with pytest.raises(RelsimError, match=r"^seed: must be an integer >= 0"):
        audit(labels, seed=-1)


def test_cli_errors_are_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "labels.csv"
    path.write_text("verdict,label\n1,0\n2,1\n", encoding="utf-8")
    assert main(["audit", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"relsim: error: {path} line 3: verdict: must be 0/1 or true/false, got '2'"]
    log = tmp_path / "run.eval"
    assert main(["audit", str(log)]) == 2
    assert "run.eval: file: must exist" in capsys.readouterr().err
    path.write_text("verdict,label\n1,0\n1,1\n", encoding="utf-8")
    assert main(["audit", str(path), "--truth", "human"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == ("relsim: error: --truth: must be given only with labels in an Inspect eval "
                    "log, got 'human'")
    for argv in (["--replicates", "5"], ["--jso"], ["--interval", "jeffreys"]):
        with pytest.raises(SystemExit) as stop:  # argparse's usage errors, no abbreviations
            main(["audit", str(path), *argv])
        assert stop.value.code == 2


# ------------------------------------------------------------------- the command line
def test_the_example_audit_and_its_json(capsys):
    labels = os.path.join(EXAMPLES, "grader_labels.csv")
    judged = os.path.join(EXAMPLES, "judged.csv")
    assert main(["audit", labels, "--judged", judged, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == json.loads(json.dumps(audit(labels, judged, seed=0).to_dict()))
    assert set(shown) == {"labels", "tasks", "clustered", "interval", "miss", "false_reject",
                          "better_than_chance", "judged", "bootstrap"}
    assert set(shown["miss"]) == {"estimate", "ci", "count", "of", "effective"}
    assert set(shown["judged"]) == {"verdicts", "tasks", "pass_rate", "corrected", "reason",
                                    "interval", "ppi"}
    assert shown["labels"] == 100 and shown["judged"]["verdicts"] == 150
    # the example was drawn from a grader with miss 0.15 and false_reject 0.05
    assert shown["miss"]["ci"][0] <= 0.15 <= shown["miss"]["ci"][1]
    assert shown["false_reject"]["ci"][0] <= 0.05 <= shown["false_reject"]["ci"][1]
    assert main(["audit", labels, "--judged", judged]) == 0
    text = capsys.readouterr().out
    assert "miss             0.11" in text and "corrected" in text and "ppi" in text


def test_bootstrap_flags_without_repeated_tasks_warn(tmp_path, capsys):
    path = tmp_path / "labels.csv"
    _labels(2, 10, 1, 10).to_csv(path, index=False)
    assert main(["audit", str(path), "--seed", "3"]) == 0
    assert "drawn only when a task carries several verdicts" in capsys.readouterr().err


def test_the_result_is_exported_and_flattens():
    assert relsim.evalstats.audit is audit and relsim.evalstats.GraderAudit is GraderAudit
    row = audit(_labels(3, 10, 1, 10), pd.DataFrame({"verdict": [1, 0]})).to_frame()
    assert row.shape[0] == 1
    assert row["miss_ci_low"].iat[0] == pytest.approx(exact_interval(3, 10)[0])
    assert row["judged_corrected_estimate"].iat[0] == pytest.approx((0.5 - 0.3) / 0.6)


# ------------------------------------------------------------------ an Inspect eval log
GRADED = {  # sample -> (the judge's verdict, the truth) at epochs 1 and 2
    "s1": [("C", "C"), ("C", "I")],
    "s2": [("I", "C"), ("C", "C")],
    "s3": [("I", "I"), ("I", "I")],
    "s4": [("C", "C"), ("C", "C")],
    "s5": [("C", "I"), ("I", "I")],
    "s6": [("I", "C"), ("C", "C")],
}


@pytest.mark.slow  # Inspect's import and eval take seconds
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Inspect's own, from its retries
def test_an_inspect_log_with_a_grader_and_a_truth_scorer(tmp_path):
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, accuracy, scorer

    @scorer(metrics=[accuracy()])
    def judge():
        async def score(state, target):
            return Score(value=GRADED[state.sample_id][state.epoch - 1][0])

        return score

    @scorer(metrics=[accuracy()])
    def human():
        async def score(state, target):
            return Score(value=GRADED[state.sample_id][state.epoch - 1][1] == "C")

        return score

    outputs = []
    for _ in range(12):
        output = ModelOutput.from_content("mockllm/model", "answer")
        # usage given, so Inspect counts no tokens (which would download a tokenizer)
        output.usage = ModelUsage(input_tokens=20, output_tokens=5, total_tokens=25)
        outputs.append(output)
    saved = {key: os.environ.get(key) for key in ("INSPECT_LOG_DIR", "INSPECT_CACHE_DIR")}
    os.environ["INSPECT_LOG_DIR"] = str(tmp_path / "default")
    os.environ["INSPECT_CACHE_DIR"] = str(tmp_path / "cache")
    try:
        logs = eval(
            Task(name="graded", dataset=[Sample(id=key, input="2 + 2?", target="4")
                                         for key in GRADED], scorer=[judge(), human()]),
            model=get_model("mockllm/model", custom_outputs=outputs), epochs=2,
            log_dir=str(tmp_path / "logs"), display="none", max_samples=1,
        )
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    log = logs[0].location

    # the same verdicts as a CSV, written from the table above
    csv = tmp_path / "same.csv"
    csv.write_text("task,verdict,label\n" + "".join(
        f"{task},{int(v == 'C')},{int(t == 'C')}\n"
        for task, rows in GRADED.items() for v, t in rows), encoding="utf-8")
    from_log = audit(log, grader="judge", truth="human", seed=4, replicates=200)
    assert from_log.to_dict() == audit(csv, seed=4, replicates=200).to_dict()
    assert from_log.clustered and from_log.tasks == 6 and from_log.labels == 12
    # wrong answers: s1/2, s3/1, s3/2, s5/1, s5/2; passed: s1/2 and s5/1
    assert (from_log.miss["count"], from_log.miss["of"]) == (2, 5)
    # judged by the same scorer from the log
    judged = audit(csv, log, grader="judge", seed=4, replicates=200).judged
    assert judged["verdicts"] == 12 and judged["pass_rate"]["estimate"] == 7 / 12

    with pytest.raises(RelsimError, match=r"^grader: must be the grader's scorer \(grader=NAME\)"):
        audit(log, truth="human")
    with pytest.raises(RelsimError, match=r"^truth: must be the truth's scorer"):
        audit(log, grader="judge")
    with pytest.raises(RelsimError, match=r"^truth: must be a scorer other than the grader's"):
        audit(log, grader="judge", truth="judge")
    with pytest.raises(RelsimError, match=r"scorer: must be one of judge, human .*'jduge'"):
        audit(log, grader="jduge", truth="human")
    assert main(["audit", log, "--grader", "judge"]) == 2  # the CLI says it with its flags
