"""Reading real Inspect eval logs, made here by running small Inspect tasks offline.

The logs come from ``inspect_ai.eval`` on Inspect's built-in mock model (``mockllm/model``),
whose scripted outputs carry their token usage (so no tokenizer is downloaded). The scorer
grades each (sample, epoch) from a table written in the test, so the expected successes are
known from outside relsim. One task also errors on a sample, as an eval whose environment
failed. Inspect is an optional extra: a test simulates it missing.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import math
import os
import warnings

import pandas as pd
import pytest

# Not importorskip: the test extra installs inspect-ai, and CI must run these tests.
import inspect_ai  # noqa: E402, F401

from relsim import evalstats  # noqa: E402
from relsim.cli import main  # noqa: E402
from relsim.errors import RelsimError  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::ResourceWarning")]

# sample id -> success at epochs 1, 2, 3
TABLE = {
    "q1": [1, 1, 1],
    "q2": [1, 0, 1],
    "q3": [0, 0, 1],
    "q4": [0, 0, 0],
    "q5": [1, 1, 0],
}


def _run(log_dir, *, name, error_on=None, scorers=1):
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, accuracy, scorer
    from inspect_ai.solver import solver

    outputs = []
    for _ in range(len(TABLE) * 3):
        output = ModelOutput.from_content("mockllm/model", "answer")
        output.usage = ModelUsage(input_tokens=20, output_tokens=5, total_tokens=25)
        outputs.append(output)
    model = get_model("mockllm/model", custom_outputs=outputs)

    @scorer(metrics=[accuracy()])
    def table():
        async def score(state, target):
            ok = TABLE[state.sample_id][state.epoch - 1]
            # what a grader notes about the trial: its failure category and tool errors
            return Score(
                value="C" if ok else "I",
                metadata={"category": "" if ok else "wrong_tool", "tool_errors": state.epoch,
                          "trace": [1, 2]},
            )

        return score

    @scorer(metrics=[accuracy()])
    def always():
        async def score(state, target):
            return Score(value=1.0)

        return score

    @solver
    def fragile():
        async def solve(state, generate_next):
            if state.sample_id == error_on and state.epoch == 2:
                raise RuntimeError("sandbox died")
            return await generate_next(state)

        return solve

    task = Task(
        name=name,
        dataset=[Sample(id=key, input="2 + 2?", target="4") for key in TABLE],
        solver=fragile(),
        scorer=[table(), always()] if scorers == 2 else table(),
    )
    logs = eval(
        task, model=model, epochs=3, log_dir=str(log_dir), display="none",
        fail_on_error=False, max_samples=1,
    )
    return logs[0].location


# sample -> successes in its 4 epochs: 10 of 11 succeed at least once (Inspect's at_least_1
# headline 10/11 = 0.909) and 26 of 44 epochs succeed (the mean, 0.591): the log
REDUCED = {f"s{i + 1:02d}": count for i, count in enumerate([4, 4, 4, 3, 3, 2, 2, 2, 1, 1, 0])}


def _quality(sample_id, epoch):
    """A numeric score (a model-graded quality, say): known here, not by relsim."""
    return round(0.1 * epoch + 0.03 * int(sample_id[1:]), 6)


def _run_reduced(log_dir, *, name, reducer):
    """11 samples x 4 epochs scored by a C/I table and a numeric quality, reduced by
    ``reducer`` (Inspect's ``Epochs(4, reducer)``)."""
    from inspect_ai import Epochs, Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, accuracy, mean, scorer

    outputs = []
    for _ in range(len(REDUCED) * 4):
        output = ModelOutput.from_content("mockllm/model", "answer")
        output.usage = ModelUsage(input_tokens=20, output_tokens=5, total_tokens=25)
        outputs.append(output)
    model = get_model("mockllm/model", custom_outputs=outputs)

    @scorer(metrics=[accuracy()])
    def table():
        async def score(state, target):
            return Score(value="C" if state.epoch <= REDUCED[state.sample_id] else "I")

        return score

    @scorer(metrics=[mean()])
    def quality():
        async def score(state, target):
            return Score(value=_quality(state.sample_id, state.epoch))

        return score

    task = Task(
        name=name,
        dataset=[Sample(id=key, input="2 + 2?", target="4") for key in REDUCED],
        scorer=[table(), quality()],
        epochs=Epochs(4, reducer),
    )
    logs = eval(task, model=model, log_dir=str(log_dir), display="none", max_samples=1)
    return logs[0].location


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("inspect")
    saved = {key: os.environ.get(key) for key in ("INSPECT_LOG_DIR", "INSPECT_CACHE_DIR")}
    os.environ["INSPECT_LOG_DIR"] = str(root / "default")
    os.environ["INSPECT_CACHE_DIR"] = str(root / "cache")
    try:
        made = {
            "plain": _run(root / "plain", name="plain"),
            "errored": _run(root / "errored", name="errored", error_on="q3"),
            "two": _run(root / "two", name="two", scorers=2),
            "reduced": _run_reduced(root / "reduced", name="reduced", reducer="at_least_1"),
            "several": _run_reduced(root / "several", name="several",
                                    reducer=["mean", "at_least_1", "pass_at_2", "mode"]),
        }
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    made["dir"] = str(root / "plain")
    # the same log in Inspect's JSON format, written by Inspect's own writer
    from inspect_ai.log import read_eval_log, write_eval_log

    made["json"] = str(root / "plain.json")
    write_eval_log(read_eval_log(made["plain"]), made["json"], format="json")
    return made


def test_samples_epochs_and_scores_become_trials(logs):
    frame = evalstats.read_inspect_log(logs["plain"])
    assert len(frame) == 15
    for task, outcomes in TABLE.items():
        mine = frame[frame["task"] == task].sort_values("trial")
        assert mine["trial"].tolist() == ["1", "2", "3"]
        assert mine["success"].tolist() == outcomes
    # usage and working time as metric columns
    assert {"input_tokens", "output_tokens", "total_tokens", "working_time"} <= set(
        frame.attrs["relsim_metrics"]
    )
    assert (frame["total_tokens"] == 25).all()
    # the score's scalar metadata: a category (text) and a count (metric); a list is dropped
    assert "tool_errors" in frame.attrs["relsim_metrics"] and "trace" not in frame
    assert frame["tool_errors"].tolist() == frame["trial"].astype(float).tolist()
    failed = frame["success"] == 0
    assert (frame.loc[failed, "category"] == "wrong_tool").all()
    as_json = evalstats.read_inspect_log(logs["json"])
    assert as_json[["task", "trial", "success"]].equals(frame[["task", "trial", "success"]])


def test_analyze_an_inspect_log_like_a_csv(logs, tmp_path):
    result = evalstats.analyze(logs["plain"], k=[3])
    csv = tmp_path / "same.csv"
    csv.write_text(
        "task,trial,success\n"
        + "".join(f"{t},{j + 1},{s}\n" for t, row in TABLE.items() for j, s in enumerate(row))
    )
    by_hand = evalstats.analyze(csv, k=[3])
    for key in ("success", "pass_at_k", "pass_hat_k"):
        assert result.to_dict()[key] == by_hand.to_dict()[key]
    assert result.to_dict()["metrics"]["total_tokens"]["mean"] == 25
    failures = sum(1 - s for row in TABLE.values() for s in row)
    assert result.categories["wrong_tool"]["count"] == failures
    # a directory of logs reads the same
    from_dir = evalstats.analyze(logs["dir"], k=[3]).to_dict()
    assert from_dir["success"] == by_hand.to_dict()["success"]


def test_errored_samples_are_reported_not_failures(logs):
    with pytest.warns(evalstats.TrialDataWarning, match="1 sample errored"):
        result = evalstats.analyze(logs["errored"], k=[1])
    assert result.trials == 14
    assert result.errors["count"] == 1
    assert result.errors["samples"][0]["task"] == "q3"
    assert "sandbox died" in result.errors["samples"][0]["error"]
    # q3 keeps epochs 1 and 3 (0 and 1): its rate is 1/2, not 1/3 as a failure would make it
    assert result.per_task.loc["q3", "rate"] == 0.5


def test_several_scorers_need_one_named(logs, capsys):
    with pytest.raises(RelsimError, match="^scorer: must be named .* table, always"):
        evalstats.read_inspect_log(logs["two"])
    frame = evalstats.read_inspect_log(logs["two"], scorer="always")
    assert frame["success"].eq(1).all()
    code = main(["analyze", logs["two"], "--scorer", "tabel"])
    err = capsys.readouterr().err
    assert code == 2 and "did you mean 'table'?" in err and err.count("\n") == 1


def test_compare_two_logs_and_exercise_one_from_the_cli(logs, capsys):
    code = main(["analyze", logs["plain"], "--k", "3", "--per-task", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and [row["task"] for row in out["per_task"]] == list(TABLE)
    code = main(["compare", logs["plain"], logs["errored"], "--k", "3"])
    out = capsys.readouterr().out
    assert code == 0 and "5 shared tasks" in out and "pass^3" in out


def test_a_clear_error_when_inspect_is_not_installed(logs, monkeypatch):
    real_import = builtins.__import__

    def no_inspect(name, *args, **kwargs):
        if name == "inspect_ai" or name.startswith("inspect_ai."):
            raise ModuleNotFoundError("No module named 'inspect_ai'", name="inspect_ai")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_inspect)
    with pytest.raises(RelsimError, match=r"^inspect: must be installed to read Inspect eval "
                       r"logs \(pip install 'agent-relsim\[inspect\]'\)"):
        evalstats.analyze(logs["plain"])


def test_a_file_that_is_not_a_log(tmp_path):
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"hello": 1}')
    with pytest.raises(evalstats.TrialDataError, match=rf"^{bogus}: log: must be an Inspect"):
        evalstats.analyze(bogus)


def test_the_epoch_reducer_is_respected_and_named(logs, capsys):
    # the issue: Epochs(4, "at_least_1") has Inspect's headline 0.909, and relsim said 0.591
    # with no word; now it names the reducer, recomputes Inspect's number and says how the two
    # differ
    with pytest.warns(evalstats.TrialDataWarning, match="at_least_1") as record:
        result = evalstats.analyze(logs["reduced"], scorer="table")
    message = next(str(w.message) for w in record if "at_least_1" in str(w.message))
    assert "pass@4" in message and "mean over trials" in message
    assert result.success["mean"] == pytest.approx(26 / 44)
    (entry,) = result.inspect
    assert entry["reducer"] == "at_least_1" and entry["epochs"] == 4
    assert entry["headline"]["accuracy"] == pytest.approx(10 / 11)  # Inspect's own number
    assert entry["quantity"].startswith("pass@4")
    assert entry["estimate"] == pytest.approx(entry["headline"]["accuracy"], abs=1e-12)
    assert entry["ci"][0] < 10 / 11 <= entry["ci"][1]
    # the k the reducer stands for is reported by default, the same number
    out = result.to_dict()
    assert out["pass_at_k"]["4"]["estimate"] == pytest.approx(10 / 11)
    assert out["inspect"][0]["reducer"] == "at_least_1"
    assert result.to_frame()["inspect_at_least_1_estimate"].iat[0] == pytest.approx(10 / 11)
    code = main(["analyze", logs["reduced"], "--scorer", "table"])
    captured = capsys.readouterr()
    assert code == 0 and "at_least_1" in captured.err
    assert "4 epochs reduced by at_least_1: Inspect's accuracy 0.9091 = pass@4" in captured.out


def test_every_reducer_of_a_log_is_read_back(logs):
    with warnings_quiet():
        result = evalstats.analyze(logs["several"], scorer="table")
    found = {entry["reducer"]: entry for entry in result.inspect}
    assert set(found) == {"mean", "at_least_1", "pass_at_2", "mode"}
    for name in ("mean", "at_least_1", "pass_at_2"):  # Inspect's number, recomputed
        assert found[name]["estimate"] == pytest.approx(found[name]["headline"]["accuracy"],
                                                        abs=1e-12)
    assert found["mean"]["estimate"] == pytest.approx(26 / 44)
    # pass@2 per sample, 1 - C(4 - c, 2) / C(4, 2), by hand
    by_hand = [1 - math.comb(4 - c, 2) / math.comb(4, 2) for c in REDUCED.values()]
    assert found["pass_at_2"]["estimate"] == pytest.approx(sum(by_hand) / len(by_hand))
    assert found["mode"]["quantity"] is None  # named, with Inspect's headline, no equivalent


def test_numeric_scores_are_metrics(logs, capsys):
    values = [_quality(key, epoch) for key in REDUCED for epoch in range(1, 5)]
    with warnings_quiet():
        result = evalstats.analyze(logs["reduced"], scorer="table", metric="quality")
    quality = result.metrics["quality"]
    assert quality["mean"] == pytest.approx(sum(values) / len(values))
    assert quality["ci"][0] < quality["mean"] < quality["ci"][1]
    # the success scorer's own numeric value: "score", beside its thresholded success
    with warnings_quiet():
        scored = evalstats.analyze(logs["reduced"], scorer="quality", threshold=0.3,
                                   metric=["score"])
    assert scored.metrics["score"]["mean"] == pytest.approx(sum(values) / len(values))
    assert scored.success["mean"] == pytest.approx(sum(v >= 0.3 for v in values) / len(values))
    code = main(["compare", logs["reduced"], logs["reduced"], "--scorer", "table",
                 "--metric", "quality", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["quantities"]["quality"]["difference"] == 0
    with pytest.raises(evalstats.TrialDataError, match="metric: must be one of score, table"):
        evalstats.analyze(logs["reduced"], scorer="table", metric="qualty")
    with pytest.raises(RelsimError, match="^metric: must be given only with an Inspect eval log"):
        evalstats.analyze(pd.DataFrame({"task": ["a", "b"], "trial": 1, "success": [1, 0]}),
                          metric="score")


@contextlib.contextmanager
def warnings_quiet():
    """TrialDataWarning silenced (what they say is tested where it is said)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", evalstats.TrialDataWarning)
        yield


@pytest.mark.parametrize(
    "name, text, said",
    [
        # pydantic's multi-part validation report, cut at 160 characters, said none of this
        ("audit.json", '{"labels": 100, "miss": {}}',
         "a JSON object without Inspect's 'eval' key (keys labels, miss)"),
        ("list.json", "[1, 2]", "a JSON list, not an object"),
        ("broken.json", "{not json", "a file that is not JSON (Expecting property name enclosed "
                                     "in double quotes: line 1 column 2 (char 1))"),
        ("text.eval", "not a zip", "a file that is not a zip archive (an .eval log is one)"),
    ],
)
def test_a_file_that_is_not_a_log_says_what_it_is(tmp_path, name, text, said):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(evalstats.TrialDataError) as error:
        evalstats.analyze(path)
    assert str(error.value) == f"{path}: log: must be an Inspect eval log, got {said}"
