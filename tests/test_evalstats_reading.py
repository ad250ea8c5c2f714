"""relsim.evalstats: reading trial files and the errors for bad input.

Every message is checked whole against the one format of relsim.errors,
``<where>: <key>: must be <allowed>, got <value>``, written out by hand here.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from test_evalstats import trials_frame

from relsim import evalstats
from relsim.errors import RelsimError
from relsim.evalstats import TrialDataError


# ---------------------------------------------------------------------------------- reading


def write(path, text):
    path.write_text(text)
    return path


def test_read_csv_with_booleans_blank_lines_and_extra_columns(tmp_path):
    path = write(
        tmp_path / "t.csv",
        "task,trial,success,notes\n a ,1, True ,x\n\na,2,FALSE,y\nb,1,0,\nb,2,1.0,z\n",
    )
    frame = evalstats.read_trials(path)
    assert frame["task"].tolist() == ["a", "a", "b", "b"]
    assert frame["success"].tolist() == [1, 0, 0, 1]
    assert frame["line"].tolist() == [2, 4, 5, 6]  # the blank line 3 is skipped
    assert frame["notes"].tolist() == ["x", "y", "", "z"]  # kept as text, reported as such
    assert frame.attrs["relsim_text"] == ["notes"] and frame.attrs["relsim_metrics"] == []


def test_read_jsonl_and_threshold(tmp_path):
    path = write(
        tmp_path / "t.jsonl",
        '{"task": "a", "trial": 1, "success": 0.9, "cost": 2}\n\n'
        '{"task": "a", "trial": 2, "success": 0.2, "cost": 1.5}\n'
        '{"task": 7, "trial": 1, "success": 0.5, "cost": 0, "extra": [1, 2]}\n',
    )
    frame = evalstats.read_trials(path, threshold=0.5)
    assert frame["success"].tolist() == [1, 0, 1]  # score >= threshold
    assert frame["task"].tolist() == ["a", "a", "7"]
    assert frame["cost"].tolist() == [2.0, 1.5, 0.0]
    assert frame["line"].tolist() == [1, 3, 4]
    booleans = write(
        tmp_path / "b.jsonl",
        '{"task": "a", "trial": 1, "success": true}\n{"task": "a", "trial": 2, "success": false}\n',
    )
    assert evalstats.read_trials(booleans)["success"].tolist() == [1, 0]


def test_file_and_dataframe_give_the_same_analysis(tmp_path):
    frame = trials_frame({"a": [1, 0, 1], "b": [0, 0, 1], "c": [1, 1, 1]}, cost=np.arange(9) / 4)
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    from_file = evalstats.analyze(path, k=[2], replicates=100, seed=3).to_dict()
    from_frame = evalstats.analyze(frame, k=[2], replicates=100, seed=3).to_dict()
    assert from_file.pop("source") == str(path) and from_frame.pop("source") == "trials"
    assert from_file == from_frame


BAD_FILES = [
    # (file name, its text, the error's message after "<path>" as a regular expression)
    ("empty.csv", "", r": rows: must be at least one trial, got an empty file$"),
    ("spaces.csv", "  \n\n", r": rows: must be at least one trial, got an empty file$"),
    ("header.csv", "task,trial,success\n", r": rows: must be at least one trial, got none$"),
    ("empty.jsonl", "\n", r": rows: must be at least one trial, got an empty file$"),
    (
        "nosuccess.csv",
        "task,trial,score\na,1,1\n",
        r": columns: must include task, trial and success \(optional cost, steps\), "
        r"got 'task', 'trial', 'score' \(missing 'success'\)$",
    ),
    (
        "typo.csv",
        "task,trial,succes\na,1,1\n",
        r": columns: must include .*\(missing 'success'; did you mean 'succes' for 'success'\?\)$",
    ),
    (
        "notask.jsonl",
        '{"trial": 1, "success": 1}\n',
        r": columns: must include .*got 'trial', 'success' \(missing 'task'\)$",
    ),
    (
        "twomissing.csv",
        "task,result\na,1\n",
        r": columns: must include .*\(missing 'trial', 'success'\)$",
    ),
    (
        "blankcell.csv",
        "task,trial,success\na,1,1\na,2,\n",
        r" line 3: success: must be a value in every row, got nothing$",
    ),
    (
        "jsonlgap.jsonl",
        '{"task":"a","trial":1,"success":1}\n{"task":"a","trial":2}\n',
        r" line 2: success: must be a value in every row, got nothing$",
    ),
    (
        "nonbinary.csv",
        "task,trial,success\na,1,1\na,2,2\na,3,0.5\n",
        r" line 3: success: must be 0/1 or true/false \(or a score with threshold=T\), "
        r"got '2' \(1 more row like it\)$",
    ),
    (
        "word.csv",
        "task,trial,success\na,1,maybe\n",
        r" line 2: success: must be 0/1 or true/false.*, got 'maybe'$",
    ),
    (
        "dup.csv",
        "task,trial,success\na,1,1\nb,1,0\na,1,0\n",
        r" line 4: \(task, trial\): must be a pair not seen before, got 'a', '1' again "
        r"\(first seen at line 2\)$",
    ),
    (
        # json keeps the last of a repeated key: the record's first task was silently dropped
        "twice.jsonl",
        '{"task":"a","trial":1,"success":1}\n{"task":"a","trial":2,"success":0,"task":"b"}\n',
        r" line 2: task: must be given once in a record, got it twice$",
    ),
    (
        "badjson.jsonl",
        '{"task":"a","trial":1,"success":1}\n{"task": "a",\n',
        r" line 2: record: must be a JSON object, got text that is not valid JSON \(",
    ),
    (
        "list.jsonl",
        "[1, 2, 3]\n",
        r" line 1: record: must be a JSON object, got a JSON list \[1, 2, 3\]$",
    ),
    (
        "negcost.csv",
        "task,trial,success,cost\na,1,1,-1\n",
        r" line 2: cost: must be a number >= 0, got '-1'$",
    ),
    (
        "infcost.csv",
        "task,trial,success,cost\na,1,1,inf\n",
        r" line 2: cost: must be a number >= 0, got 'inf'$",
    ),
    (
        "zerosteps.csv",
        "task,trial,success,steps\na,1,1,0\n",
        r" line 2: steps: must be a number in \(0, 100000\], got '0'$",
    ),
    (
        "ragged.csv",
        "task,trial,success\na,1,1\na,2,1,9\n",
        r": CSV: must be a readable CSV file, got .*line 3",
    ),
    (
        "short.csv",
        "task,trial,success\na,1,1\na,2\n",
        r" line 3: success: must be a value in every row, got nothing$",
    ),
    (
        "twice.csv",
        "task,trial,success,success\na,1,1,0\n",
        r": columns: must name 'success' once, got it 2 times$",
    ),
]


@pytest.mark.parametrize("name,text,message", BAD_FILES, ids=[case[0] for case in BAD_FILES])
def test_bad_files_name_the_file_and_line(tmp_path, name, text, message):
    path = write(tmp_path / name, text)
    with pytest.raises(TrialDataError, match="^" + re.escape(str(path)) + message):
        evalstats.analyze(path)


NOT_UTF8 = [
    # (name, bytes, the line the error names): a Latin-1 byte in the first block read, one past
    # it (read by pandas), and in a JSONL file
    ("latin1.csv", b"task,trial,success\na,1,1\ncaf\xe9,1,0\n", 3),
    ("late.csv", b"task,trial,success\n" + b"a,1,1\n" * 1000 + b"b,\xff,1\n", 1002),
    (
        "latin1.jsonl",
        b'{"task": "a", "trial": 1, "success": 1}\n\n{"task": "\xe9", "trial": 1, "success": 0}\n',
        3,
    ),
    ("binary.csv", b"\xff\xfe\x00\x01garbage", 1),
]


@pytest.mark.parametrize("name,data,line", NOT_UTF8, ids=[case[0] for case in NOT_UTF8])
def test_text_that_is_not_utf8_names_the_file_and_line(tmp_path, name, data, line):
    path = tmp_path / name
    path.write_bytes(data)
    where = re.escape(str(path))
    pattern = rf"^{where} line {line}: text: must be UTF-8, got byte 0x[0-9a-f]{{2}} at byte "
    with pytest.raises(TrialDataError, match=pattern) as info:
        evalstats.read_trials(path)
    assert not isinstance(info.value, UnicodeDecodeError)  # our message, not the codec's


def test_a_utf8_byte_order_mark_is_fine(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbftask,trial,success\nb\xc3\xa9,1,1\n")
    assert evalstats.read_trials(path)["task"].tolist() == ["b\u00e9"]


def test_bad_threshold_scores_and_missing_file(tmp_path):
    path = write(tmp_path / "s.csv", "task,trial,success\na,1,0.3\na,2,true\n")
    with pytest.raises(
        TrialDataError,
        match=r" line 3: success: must be a numeric score with threshold=T, got 'true'$",
    ):
        evalstats.read_trials(path, threshold=0.5)
    with pytest.raises(RelsimError, match=r"^threshold: must be a finite number, got nan$"):
        evalstats.read_trials(path, threshold=math.nan)
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    message = rf"^{re.escape(str(folder))}: file: must exist, got a directory$"
    with pytest.raises(TrialDataError, match=message):
        evalstats.read_trials(folder)
    absent = tmp_path / "absent.csv"
    message = rf"^{re.escape(str(absent))}: file: must exist, got no such file$"
    with pytest.raises(TrialDataError, match=message):
        evalstats.read_trials(absent)


def test_dataframe_rows_are_numbered_from_one():
    frame = pd.DataFrame({"task": ["a", "a"], "trial": [1, 2], "success": [1, 3]})
    with pytest.raises(TrialDataError, match=r"^trials row 2: success: must be 0/1 .*, got '3'$"):
        evalstats.read_trials(frame)


def test_bad_arguments_name_the_argument_and_range():
    # each message is "<key>: must be <allowed>, got <value>", whole (anchored at both ends)
    frame = trials_frame({"a": [1, 0, 1], "b": [1, 1, 0]})
    tasks = evalstats.per_task(frame)
    cases = [
        (
            lambda: evalstats.analyze(frame, k=[4]),
            r"k: must be in \[1, 3\] \(the largest number of trials of a task\), got 4",
        ),
        (lambda: evalstats.analyze(frame, k=[0]), r"k: must be in \[1, 3\] .*, got 0"),
        (lambda: evalstats.analyze(frame, k=[1.5]), r"k: must be integers >= 1, got \[1\.5\]"),
        (lambda: evalstats.analyze(frame, k=[]), r"k: must be at least one value, got \[\]"),
        (
            lambda: evalstats.analyze(frame, k=[1], replicates=0),
            r"replicates: must be an integer >= 100, got 0",
        ),
        (
            lambda: evalstats.analyze(frame, k=[1], confidence=1.0),
            r"confidence: must be in \(0, 1\), got 1\.0",
        ),
        (
            lambda: evalstats.analyze(frame, [1], seed=-1),
            r"seed: must be an integer >= 0, a numpy SeedSequence or None, got -1",
        ),
        (
            lambda: evalstats.analyze(frame, k=[1], interval="normal"),
            r"interval: must be one of jeffreys, bca, percentile, got 'normal'",
        ),
        (lambda: evalstats.analyze(frame, k=[1], target=0), r"target: must be in \(0, 1\], got 0"),
        (
            lambda: evalstats.pass_k(tasks.drop(columns="successes"), [1]),
            r"tasks: must be a per-task table \(see per_task\) with columns 'trials' and "
            r"'successes', got one missing 'successes'",
        ),
        (
            lambda: evalstats.success_rate(tasks.iloc[:0]),
            r"tasks: must hold at least one task, got none",
        ),
        (
            lambda: evalstats.success_rate(tasks.assign(successes=[4, 2])),
            r"tasks: must have trials >= 1 and 0 <= successes <= trials for every task, "
            r"got trials 3 and successes 4 for task 'a'",
        ),
        (
            lambda: evalstats.success_rate(tasks.assign(trials=[3.0, 3.0])),
            r"tasks: must hold integer counts in 'trials' and 'successes', "
            r"got dtypes float64 and int64",
        ),
        (
            lambda: evalstats.compare(frame, trials_frame({"a": [1], "z": [0]})),
            r"shared tasks: must be at least 2 for a paired comparison of baseline and "
            r"candidate, got 1",
        ),
        (lambda: evalstats.tasks_needed(0, 0.5), r"delta: must be a nonzero number, got 0"),
        (
            lambda: evalstats.tasks_needed(0.3, 0.8),
            r"delta: must be a number keeping baseline \+ delta in \[0, 1\], i\.e\. in "
            r"\[-0\.8, 0\.2\], got 0\.3",
        ),
        (lambda: evalstats.tasks_needed(0.1, 1.2), r"baseline: must be in \[0, 1\], got 1\.2"),
        (
            lambda: evalstats.tasks_needed(0.1, 0.5, trials_per_task=0),
            r"trials_per_task: must be an integer >= 1, got 0",
        ),
        (
            lambda: evalstats.tasks_needed(0.1, 0.5, alpha=0),
            r"alpha: must be in \(0, 1\), got 0",
        ),
        (
            lambda: evalstats.tasks_needed(0.1, 0.5, power=1),
            r"power: must be in \(0, 1\), got 1",
        ),
        (
            lambda: evalstats.tasks_needed(0.1, 0.5, difference_sd=-0.1),
            r"difference_sd: must be a number >= 0, got -0\.1",
        ),
        (
            lambda: evalstats.minimum_detectable_effect(0, 0.5),
            r"tasks: must be an integer in 2\.\.10\^15 \(a paired comparison needs two\), got 0",
        ),
    ]
    for call, message in cases:
        with pytest.raises(RelsimError, match=f"^{message}$"):
            call()


def test_data_errors_are_trial_data_errors_and_argument_errors_are_not():
    # both are RelsimError (the CLI's exit 2); TrialDataError says the data is at fault
    assert issubclass(TrialDataError, RelsimError) and issubclass(RelsimError, ValueError)
    frame = trials_frame({"a": [1, 0, 1], "b": [1, 1, 0]})
    with pytest.raises(TrialDataError):
        evalstats.read_trials(frame.assign(success=[1, 0, 2, 1, 1, 0]))
    with pytest.raises(RelsimError) as info:
        evalstats.analyze(frame, k=[1], target=2)
    assert not isinstance(info.value, TrialDataError)
