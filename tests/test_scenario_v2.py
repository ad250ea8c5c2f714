"""The scenario format of docs/model.md section 8: the six design tables, read, checked,
written back and compiled (the engines' part is in the engines' own test files)."""

from __future__ import annotations

import dataclasses
import textwrap

import numpy as np
import pytest

from relsim.scenario import Scenario, ScenarioError, trial_model
from relsim.scenario.design_tables import Escalation, FailureMode, Sampling, TaskClass, Utility

BASE = {"steps": 3, "p": 0.8, "verifier": {"false_reject": 0.05}, "retries": {"per_step": 3}}

# Every table of section 8 at once, as a file.
FULL = textwrap.dedent("""\
    steps = 3
    [verifier]
    false_reject = 0.05
    [retries]
    per_step = 3
    [checkpoints]
    every = 2
    detect = 0.8
    [[classes]]
    weight = 0.58
    p = 0.87
    escalation_p = [0.9, [0.95, 0.96, 0.97]]
    [[classes]]
    weight = 0.42
    p = [0.13, 0.2, 0.3]
    [escalation]
    after = [1, 3]
    p = [0.95, 0.99]
    attempt_cost = [0.2, [1.5, 2.0, 2.5]]
    [sampling]
    n = 5
    select = "vote"
    wrong_answers = "distinct"
    [[failure_modes]]
    name = "tool_error"
    share = 0.4
    miss = 0.0
    detect = 1.0
    [[failure_modes]]
    name = "hallucination"
    share = 0.6
    miss = 0.3
    [faults]
    attempt = 0.02
    [utility]
    silent_failure = -2.0
    cost_weight = 0.01
    """)


def test_every_table_reads_from_a_file_and_round_trips(tmp_path):
    path = tmp_path / "full.toml"
    path.write_text(FULL, encoding="utf-8")
    s = Scenario.from_toml(path)
    assert s.p is None and len(s.classes) == 2 and s.classes[1].p == (0.13, 0.2, 0.3)
    assert s.escalation.after == (1, 3) and s.escalation.attempt_cost[1] == (1.5, 2.0, 2.5)
    assert s.sampling.n == 5 and s.sampling.distinct and s.sampling.answers == 0
    assert [m.name for m in s.failure_modes] == ["tool_error", "hallucination"]
    assert s.faults.attempt == 0.02 and s.utility.silent_failure == -2.0
    assert Scenario.from_dict(s.to_dict()) == s
    assert s.has_design_tables


def test_the_compiled_model_holds_each_table():
    s = Scenario.from_dict({
        **BASE, "checkpoints": {"every": 2, "detect": 0.8},
        "classes": [{"weight": 3, "p": 0.9, "escalation_p": [0.97]}, {"weight": 1, "p": [0.1, 0.2, 0.3]}],
        "escalation": {"after": [2], "p": [0.95], "attempt_cost": [4.0]},
        "sampling": {"n": 3, "select": "verifier"},
        "failure_modes": [{"name": "a", "share": 0.25, "miss": 0.2},
                          {"name": "b", "share": 0.75, "miss": 0.4, "detect": 0.5}],
        "faults": {"attempt": 0.1},
        "utility": {"silent_failure": -3.0, "cost_weight": 0.5},
    })
    m = trial_model(s)
    assert m.class_weight.tolist() == [0.75, 0.25]
    assert m.rung_p[:, :, 2].tolist() == [[0.9, 0.97], [0.3, 0.95]]
    assert m.rung_after.tolist() == [2] and m.rung_cost[:, 0].tolist() == [1.0, 4.0]
    assert (m.samples, m.vote, m.wrong_answers) == (3, False, 1)
    assert m.mode_names == ("a", "b") and m.mode_detect.tolist() == [0.8, 0.5]
    # a wrong answer meets the mixture of the modes' misses: 0.25 x 0.2 + 0.75 x 0.4
    assert m.miss.tolist() == pytest.approx([0.35] * 3, abs=1e-15)
    assert m.fault == 0.1 and m.utility.tolist() == [1.0, -3.0, 0.0, 0.0, 0.0, 0.5]
    assert m.p.tolist() == [0.9] * 3 and m.for_class(1).p.tolist() == [0.1, 0.2, 0.3]
    # the utility of an outcome: 0.5 - 3 x 0.1 - 0.5 x 2
    assert m.utility_of({"success": 0.5, "silent_failure": 0.1}, 2.0) == pytest.approx(-0.8)


def test_without_the_tables_the_model_is_the_identity():
    m = trial_model(Scenario.from_dict(BASE))
    assert not m.has_design_tables and m.utility is None
    assert (m.classes, m.rungs, m.samples, m.modes, m.fault) == (1, 0, 1, 0, 0.0)
    assert np.array_equal(m.rung_p[0, 0], m.p) and np.array_equal(m.rung_cost[0], m.attempt_cost)
    # no verifier: a mode's wrong answer is always accepted
    bare = trial_model(Scenario.from_dict({"steps": 2, "p": 0.5, "failure_modes": [
        {"name": "x", "share": 1.0}]}))
    assert bare.mode_miss.tolist() == [1.0] and bare.miss.tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"classes": [{"weight": 0, "p": 0.5}]}, "classes[0].weight: must be a finite number > 0, got 0"),
        ({"classes": [{"weight": 1, "p": 1.5}]}, "classes[0].p: must be a probability in [0, 1], got 1.5"),
        ({"classes": [{"weight": 1, "p": [0.5, 0.5]}]}, "classes[0].p: must be one value or a list of one value per step (3)"),
        ({"classes": {"weight": 1, "p": 0.5}}, "classes: must be a non-empty array of tables"),
        ({"classes": [{"weight": 1, "p": 0.5, "escalation_p": [0.9]}]}, "classes[0].escalation_p: is the p of a ladder's rungs, but there is no [escalation]"),
        ({"escalation": {"after": [2, 2], "p": [0.9, 0.9]}}, "escalation.after: must be strictly increasing"),
        ({"escalation": {"after": [0], "p": [0.9]}}, "escalation.after: must be an integer in 1..10000, got 0"),
        ({"escalation": {"after": [4], "p": [0.9]}}, "escalation.after: rung 1 serves from attempt 5"),
        ({"escalation": {"after": [1], "p": [0.9, 0.95]}}, "escalation.p: must have one entry per rung (1, as after), got 2"),
        ({"escalation": {"after": [1], "p": [0.9], "attempt_cost": [-1]}}, "escalation.attempt_cost[0]: must be"),
        ({"sampling": {"n": 65}}, "sampling.n: must be an integer in 1..64, got 65"),
        ({"sampling": {"n": 3, "select": "best"}}, "sampling.select: must be \"vote\" or \"verifier\", got 'best'"),
        ({"sampling": {"n": 3, "wrong_answers": 0}}, "sampling.wrong_answers: must be an integer"),
        ({"sampling": {"n": 3, "wrong_answers": "many"}}, "sampling.wrong_answers: must be an integer >= 1 or \"distinct\""),
        ({"sampling": {"n": 3, "select": "verifier", "wrong_answers": 2}}, "sampling.wrong_answers: is read only with select = \"vote\""),
        ({"failure_modes": [{"name": "a", "share": 0.5}]}, "failure_modes.share: must sum to 1 over the modes, got 0.5"),
        ({"failure_modes": [{"name": "a", "share": 0.5}, {"name": "a", "share": 0.5}]}, "failure_modes.name: must be unique, got 'a' twice"),
        ({"failure_modes": [{"name": "a", "share": 1.0, "detect": 0.5}]}, "failure_modes.detect: mode 'a' sets a detect, but there is no [checkpoints]"),
        ({"failure_modes": [{"name": "a", "share": 1.0, "miss": 2}]}, "failure_modes[0].miss: must be a probability in [0, 1], got 2"),
        ({"faults": {"attempt": -0.1}}, "faults.attempt: must be a probability in [0, 1], got -0.1"),
        ({"utility": {"silent_failure": float("inf")}}, "utility.silent_failure: must be a finite number"),
        ({"utility": {"cost_weight": -1}}, "utility.cost_weight: must be"),
    ],
)
def test_bad_design_tables_name_the_key_and_the_range(change, message):
    with pytest.raises(ScenarioError) as error:
        Scenario.from_dict({**BASE, **change})
    assert message in str(error.value)


@pytest.mark.parametrize(
    "data, message",
    [
        ({**BASE, "sampling": {"n": 3, "slect": "vote"}}, "did you mean 'select'?"),
        ({**BASE, "classes": [{"wieght": 1, "p": 0.5}]}, "did you mean 'weight'?"),
        ({**BASE, "failure_modes": [{"name": "a", "shares": 1.0}]}, "did you mean 'share'?"),
        ({**BASE, "fault": {"attempt": 0.1}}, "did you mean 'faults'?"),
        ({**BASE, "utilty": {}}, "did you mean 'utility'?"),
    ],
)
def test_unknown_keys_in_the_design_tables_get_a_suggestion(data, message):
    with pytest.raises(ScenarioError) as error:
        Scenario.from_dict(data)
    assert message in str(error.value)


@pytest.mark.parametrize(
    "entries, message",
    [
        ({"classes": [{"weight": 1, "p": 0.5}, {"weight": 1, "p": 0.5}, {"weight": -1, "p": 0.5}]},
         "classes[2].weight: must be a finite number > 0, got -1"),
        ({"classes": [{"weight": 1, "p": 0.5}, {"weight": 1, "p": 0.5, "wieght": 2}]},
         "classes[1].wieght: unknown key; did you mean 'weight'?"),
        ({"classes": [{"weight": 1, "p": 0.5}, {"weight": 1}]},
         "classes[1]: needs all of weight and p; missing p"),
        ({"classes": [{"weight": 1, "p": 0.5}, {"weight": 1, "p": [0.5, 0.5]}]},
         "classes[1].p: must be one value or a list of one value per step (3), got a list of 2"),
        ({"failure_modes": [{"name": "a", "share": 0.5}, {"name": "b", "share": 0.5, "miss": 2}]},
         "failure_modes[1].miss: must be a probability in [0, 1], got 2"),
    ],
)
def test_an_entry_of_an_array_of_tables_is_named_by_its_index(entries, message):
    # "classes.weight" does not say which of five classes is wrong
    with pytest.raises(ScenarioError) as error:
        Scenario.from_dict({**BASE, **entries})
    assert str(error.value) == message


def test_links_between_the_tables_are_checked():
    modes = [{"name": "a", "share": 1.0, "miss": 0.1}]
    with pytest.raises(ScenarioError, match=r"verifier.miss: must be left out with \[\[failure_modes\]\]"):
        Scenario.from_dict({**BASE, "verifier": {"miss": 0.0}, "failure_modes": modes})
    with pytest.raises(ScenarioError, match=r"failure_modes.miss: mode 'a' sets a miss, but there is no \[verifier\]"):
        Scenario.from_dict({"steps": 1, "p": 0.5, "failure_modes": modes})
    with pytest.raises(ScenarioError, match=r"sampling.select: \"verifier\" needs a \[verifier\]"):
        Scenario.from_dict({"steps": 1, "p": 0.5, "sampling": {"n": 2, "select": "verifier"}})
    with pytest.raises(ScenarioError, match=r"escalation: a ladder serves retries, but there is no \[retries\]"):
        Scenario.from_dict({"steps": 1, "p": 0.5, "verifier": {}, "escalation": {"after": [1], "p": [0.9]}})
    with pytest.raises(ScenarioError, match=r"p: required key is missing \(or give \[\[classes\]\]"):
        Scenario.from_dict({"steps": 1})
    # a ladder reached through the task-wide budget alone
    s = Scenario.from_dict({**BASE, "retries": {"total": 2}, "escalation": {"after": [2], "p": [0.9]}})
    assert trial_model(s).rung_after.tolist() == [2]


def test_the_tables_validate_themselves_when_built_directly():
    with pytest.raises(ScenarioError, match="sampling.n"):
        Sampling(n=0)
    with pytest.raises(ScenarioError, match="classes.weight"):
        TaskClass(weight=-1.0, p=0.5)
    with pytest.raises(ScenarioError, match="escalation.after"):
        Escalation(after=(3, 1), p=(0.9, 0.9))
    with pytest.raises(ScenarioError, match="failure_modes.name"):
        FailureMode(name="", share=1.0)
    with pytest.raises(ScenarioError, match="utility.success"):
        Utility(success=float("nan"))
    s = Scenario.from_dict(BASE)
    with pytest.raises(ScenarioError, match="failure_modes.share: must sum to 1"):
        dataclasses.replace(s, failure_modes=(FailureMode("a", 0.3),))
    assert dataclasses.replace(s, classes=[TaskClass(1.0, 0.5)]).classes == (TaskClass(1.0, 0.5),)


def test_errors_from_a_file_name_the_file(tmp_path):
    path = tmp_path / "votes.toml"
    path.write_text("steps = 1\np = 0.5\n[sampling]\nn = 100\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"votes.toml: sampling.n: must be an integer in 1..64, got 100"):
        Scenario.from_toml(path)
