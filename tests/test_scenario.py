"""relsim.Scenario: loading, validation and the round trip (docs/model.md section 4)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relsim.scenario import trial_model
from relsim.scenario import Checkpoints, Correlation, Retries, Scenario, ScenarioError, Verifier

BASE = {"steps": 3, "p": 0.9}


def _error(data: dict) -> str:
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(data)
    return str(info.value)


# ------------------------------------------------------------------------------ loading
def test_full_example_of_model_md_section_4(tmp_path):
    path = tmp_path / "full.toml"
    path.write_text(
        """
name = "coding agent, 25 steps"
steps = 25
p = 0.9
target = 0.95
[verifier]
miss = 0.1
false_reject = 0.02
[retries]
per_step = 2
total = 10
[checkpoints]
every = 5
at = [12]
final = true
detect = 0.8
false_alarm = 0.0
rollbacks = 2
[correlation]
task_sd = 0.5
step_sd = 0.3
confusion = { enter = 0.5, recover = 0.2, factor = 0.6 }
[cost]
attempt = 1.0
verify = 0.0
checkpoint = 0.0
rollback = 0.0
""",
        encoding="utf-8",
    )
    s = Scenario.from_toml(path)
    assert s.name == "coding agent, 25 steps" and s.steps == 25 and s.target == 0.95
    assert s.verifier == Verifier(miss=0.1, false_reject=0.02)
    assert trial_model(s).per_step.tolist() == [2] * 25 and s.retries.total == 10
    assert trial_model(s).checkpoint_positions == (5, 10, 12, 15, 20, 25)
    assert s.correlation.confusion.recover == 0.2
    assert trial_model(s).has_random_effects


def test_defaults_and_per_step_arrays():
    s = Scenario.from_dict({"steps": 4, "p": [0.9, 0.8, 0.7, 1]})
    assert trial_model(s).p.tolist() == [0.9, 0.8, 0.7, 1.0]
    assert trial_model(s).miss.tolist() == [1.0] * 4  # no verifier: every attempt is accepted
    assert trial_model(s).false_reject.tolist() == [0.0] * 4
    assert trial_model(s).per_step.tolist() == [0] * 4
    assert not trial_model(s).has_total
    assert trial_model(s).attempt_cost.tolist() == [1.0] * 4
    assert trial_model(s).checkpoint_positions == ()
    assert not trial_model(s).has_random_effects
    with pytest.raises(ValueError):
        trial_model(s).p[0] = 0.5  # engines get read-only arrays


def test_only_a_total_is_also_the_per_step_cap():
    s = Scenario.from_dict({**BASE, "verifier": {}, "retries": {"total": 4}})
    assert trial_model(s).per_step.tolist() == [4, 4, 4] and s.retries.total == 4


def test_verifier_lists_per_step():
    s = Scenario.from_dict({**BASE, "verifier": {"miss": [0.1, 0.2, 0.3], "false_reject": 0.05}})
    assert trial_model(s).miss.tolist() == [0.1, 0.2, 0.3]
    assert trial_model(s).false_reject.tolist() == [0.05] * 3


def test_checkpoint_positions_merge_every_at_and_final():
    s = Scenario.from_dict({"steps": 10, "p": 0.9, "checkpoints": {"every": 4, "at": [3, 8]}})
    assert trial_model(s).checkpoint_positions == (3, 4, 8)
    s = Scenario.from_dict({"steps": 10, "p": 0.9, "checkpoints": {"final": True}})
    assert trial_model(s).checkpoint_positions == (10,)


def test_dataclasses_replace_revalidates():
    s = Scenario.from_dict(BASE)
    assert dataclasses.replace(s, steps=5).steps == 5
    with pytest.raises(ScenarioError, match="p: must be one value or a list of one value per step"):
        dataclasses.replace(s, p=(0.9, 0.9))


# ------------------------------------------------------------------------ round trip
probability = st.floats(0.0, 1.0)


@st.composite
def scenario_dicts(draw):
    n = draw(st.integers(1, 6))

    def per_step(element):
        return draw(st.one_of(element, st.lists(element, min_size=n, max_size=n)))

    data = {"steps": n, "p": per_step(probability)}
    if draw(st.booleans()):
        data["name"] = draw(st.text(max_size=10).filter(str.isprintable))  # a title: no control character
    if draw(st.booleans()):
        data["target"] = draw(st.floats(0.01, 1.0))
    has_verifier = draw(st.booleans())
    if has_verifier:
        data["verifier"] = {"miss": per_step(probability), "false_reject": draw(probability)}
        retries = {}
        if draw(st.booleans()):
            retries["per_step"] = per_step(st.integers(0, 5))
        if draw(st.booleans()) or not retries:
            retries["total"] = draw(st.integers(0, 20))
        data["retries"] = retries
    if draw(st.booleans()):
        checkpoints = {"final": draw(st.booleans()), "detect": draw(probability),
                       "false_alarm": draw(probability), "rollbacks": draw(st.integers(0, 3))}
        checkpoints["every"] = draw(st.integers(1, n))
        checkpoints["at"] = draw(st.lists(st.integers(1, n), max_size=3))
        data["checkpoints"] = checkpoints
    correlation = {"task_sd": draw(st.floats(0, 3)), "step_sd": draw(st.floats(0, 3))}
    if draw(st.booleans()):
        correlation["confusion"] = {k: draw(probability) for k in ("enter", "recover", "factor")}
    data["correlation"] = correlation
    cost = {"attempt": per_step(st.floats(0, 10))}
    if has_verifier:
        cost["verify"] = draw(st.floats(0, 1))
    if "checkpoints" in data:
        cost["checkpoint"] = draw(st.floats(0, 1))
        if data["checkpoints"]["rollbacks"] > 0:  # a rollback cost needs rollbacks
            cost["rollback"] = draw(st.floats(0, 1))
    data["cost"] = cost
    return data


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(scenario_dicts())
def test_round_trip(data):
    s = Scenario.from_dict(data)
    again = Scenario.from_dict(s.to_dict())
    assert again == s
    assert again.to_dict() == s.to_dict()


def test_to_dict_leaves_out_defaults():
    s = Scenario.from_dict({**BASE, "verifier": {"miss": 0.1}, "retries": {"per_step": 2}})
    assert s.to_dict() == {"steps": 3, "p": 0.9, "verifier": {"miss": 0.1},
                           "retries": {"per_step": 2}}


# ------------------------------------------------------------------------ bad input
# Each bad scenario, the key its error must name, and the allowed range or hint it must give.
BAD = [
    ({"steps": 0, "p": 0.9}, "steps", "integer in 1..100000"),
    ({"steps": 2.5, "p": 0.9}, "steps", "integer in 1..100000"),
    ({"steps": True, "p": 0.9}, "steps", "integer in 1..100000"),
    ({"steps": 3}, "p", "required"),
    ({"p": 0.9}, "steps", "required"),
    ({**BASE, "p": 1.2}, "p", "[0, 1]"),
    ({**BASE, "p": -0.1}, "p", "[0, 1]"),
    ({**BASE, "p": float("nan")}, "p", "[0, 1]"),
    ({**BASE, "p": "0.9"}, "p", "[0, 1]"),
    ({**BASE, "p": [0.9, 0.8]}, "p", "one value per step (3), got a list of 2"),
    ({**BASE, "p": [0.9, 0.8, 1.5]}, "p[2]", "[0, 1]"),
    ({**BASE, "target": 0}, "target", "(0, 1]"),
    ({**BASE, "target": 1.5}, "target", "(0, 1]"),
    ({**BASE, "target": "high"}, "target", "(0, 1]"),
    ({**BASE, "name": 5}, "name", "text"),
    ({**BASE, "verifier": 0.1}, "verifier", "table"),
    ({**BASE, "verifier": {"miss": 1.1}}, "verifier.miss", "[0, 1]"),
    ({**BASE, "verifier": {"false_reject": -0.5}}, "verifier.false_reject", "[0, 1]"),
    ({**BASE, "verifier": {"miss": [0.1]}}, "verifier.miss", "one value per step (3), got a list of 1"),
    ({**BASE, "retries": {"per_step": 1}}, "retries", "needs a [verifier]"),
    ({**BASE, "verifier": {}, "retries": {}}, "retries", "per_step, total or both"),
    ({**BASE, "verifier": {}, "retries": {"per_step": -1}}, "retries.per_step", "integer in 0..10000"),
    ({**BASE, "verifier": {}, "retries": {"per_step": [1, 2]}}, "retries.per_step",
     "one value per step (3), got a list of 2"),
    ({**BASE, "verifier": {}, "retries": {"total": 1.5}}, "retries.total", "integer in 0..1000000"),
    ({**BASE, "checkpoints": {"detect": 0.5}}, "checkpoints", "give every, at or final"),
    ({**BASE, "checkpoints": {"every": 5}}, "checkpoints", "every = 5 exceeds steps = 3"),
    ({**BASE, "checkpoints": {"every": 0}}, "checkpoints.every", "integer in 1..100000"),
    ({**BASE, "checkpoints": {"at": [4]}}, "checkpoints.at", "integer in 1..3"),
    ({**BASE, "checkpoints": {"at": 2}}, "checkpoints.at", "list of step numbers (1..steps)"),
    ({**BASE, "checkpoints": {"final": "yes"}}, "checkpoints.final", "true or false"),
    ({**BASE, "checkpoints": {"final": True, "detect": 2}}, "checkpoints.detect", "[0, 1]"),
    ({**BASE, "checkpoints": {"final": True, "false_alarm": -1}}, "checkpoints.false_alarm",
     "[0, 1]"),
    ({**BASE, "checkpoints": {"final": True, "rollbacks": -1}}, "checkpoints.rollbacks",
     "integer in 0..10000"),
    # Upper limits: a typo must not ask the engines for unbounded memory or time.
    ({"steps": 10**11, "p": 0.9}, "steps", "integer in 1..100000"),
    ({**BASE, "verifier": {}, "retries": {"per_step": 10**14}}, "retries.per_step",
     "integer in 0..10000"),
    ({**BASE, "verifier": {}, "retries": {"total": 10**14}}, "retries.total",
     "integer in 0..1000000"),
    ({**BASE, "checkpoints": {"final": True, "rollbacks": 10**9}}, "checkpoints.rollbacks",
     "integer in 0..10000"),
    ({**BASE, "checkpoints": {"at": []}}, "checkpoints", "at is empty, final is false"),
    ({**BASE, "checkpoints": {"final": False}}, "checkpoints", "give every in 1..3"),
    ({**BASE, "correlation": {"task_sd": -1}}, "correlation.task_sd", ">= 0"),
    ({**BASE, "correlation": {"step_sd": float("inf")}}, "correlation.step_sd", "finite"),
    ({**BASE, "correlation": {"confusion": {"enter": 0.5}}}, "correlation.confusion",
     "missing recover, factor"),
    ({**BASE, "correlation": {"confusion": 0.5}}, "correlation.confusion",
     "enter, recover and factor"),
    ({**BASE, "correlation": {"confusion": {"enter": 0.5, "recover": 2, "factor": 0.5}}},
     "correlation.confusion.recover", "[0, 1]"),
    ({**BASE, "cost": {"attempt": -1}}, "cost.attempt", ">= 0"),
    ({**BASE, "cost": {"attempt": [1, 2]}}, "cost.attempt", "one value per step (3), got a list of 2"),
    ({**BASE, "cost": {"verify": 1}}, "cost.verify", "no [verifier]"),
    ({**BASE, "cost": {"checkpoint": 1}}, "cost.checkpoint", "no [checkpoints]"),
    ({**BASE, "cost": {"rollback": 1}}, "cost.rollback", "no [checkpoints]"),
    ({**BASE, "checkpoints": {"every": 1}, "cost": {"rollback": 1}}, "cost.rollback",
     "checkpoints.rollbacks = 0 allows none"),
]


@pytest.mark.parametrize("data, key, allowed", BAD, ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_names_the_key_and_the_range(data, key, allowed):
    message = _error(data)
    assert message.startswith(f"{key}:"), message
    assert allowed in message, message


@pytest.mark.parametrize(
    "data, key, hint",
    [
        ({"stpes": 3, "p": 0.9}, "stpes", "did you mean 'steps'?"),
        ({**BASE, "verifier": {"mis": 0.1}}, "verifier.mis", "did you mean 'miss'?"),
        ({**BASE, "checkpoints": {"evry": 2}}, "checkpoints.evry", "did you mean 'every'?"),
        ({**BASE, "correlation": {"task_sd": 1, "tasksd": 1}}, "correlation.tasksd",
         "did you mean 'task_sd'?"),
        ({**BASE, "miss": 0.1}, "miss", "it belongs at 'verifier.miss'"),
        ({**BASE, "verifier": {}, "retries": {"rollbacks": 1}}, "retries.rollbacks",
         "it belongs at 'checkpoints.rollbacks'"),
        ({**BASE, "zzz": 1}, "zzz", "allowed keys here: name, steps, p, target"),
        # a real key of another table beats a near spelling of a key of this one
        ({**BASE, "per_step": 2}, "per_step", "it belongs at 'retries.per_step'"),
        ({**BASE, "verifier": {"per_step": 2}}, "verifier.per_step",
         "it belongs at 'retries.per_step'"),
    ],
)
def test_unknown_keys_are_errors_with_a_suggestion(data, key, hint):
    message = _error(data)
    assert message.startswith(f"{key}: unknown key"), message
    assert hint in message, message


def test_direct_construction_is_validated_too():
    with pytest.raises(ScenarioError, match="retries: needs a"):
        Scenario(steps=3, p=0.9, retries=Retries(per_step=1))
    with pytest.raises(ScenarioError, match=r"checkpoints\.detect"):
        Scenario(steps=3, p=0.9, checkpoints=Checkpoints(final=True, detect=1.5))
    with pytest.raises(ScenarioError, match="verifier: must be a Verifier"):
        Scenario(steps=3, p=0.9, verifier={"miss": 0.1})
    assert Scenario(steps=3, p=np.float64(0.5)).p == 0.5


def test_errors_from_a_file_name_the_file(tmp_path):
    path = tmp_path / "typo.toml"
    path.write_text("steps = 3\np = 0.9\n[verifier]\nmis = 0.1\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        Scenario.from_toml(path)
    assert str(info.value) == f"{path}: verifier.mis: unknown key; did you mean 'miss'?"


def test_toml_syntax_error_gives_the_line(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("steps = 3\n\np = 0.9.1\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        Scenario.from_toml(path)
    message = str(info.value)
    assert message.startswith(f"{path}: TOML syntax error")
    assert re.search(r"line 3\b", message), message


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        Scenario.from_toml(tmp_path / "nope.toml")


def test_scenario_error_is_a_value_error():
    assert issubclass(ScenarioError, ValueError)


def test_a_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'steps = 3\np = 0.9\nname = "caf\xe9"\n')
    with pytest.raises(ScenarioError, match=r"latin1\.toml: not UTF-8 text \(byte 0xe9"):
        Scenario.from_toml(path)


def test_a_confusion_that_is_not_a_confusion_is_an_error():
    with pytest.raises(ScenarioError, match="correlation.confusion: must be a Confusion"):
        Scenario(steps=2, p=0.9, correlation=Correlation(confusion={"enter": 1}))


@pytest.mark.parametrize("name", ["two\nlines", "red \x1b[31malert", "tab\there", 5])
def test_a_name_is_printable_text(name, tmp_path, capsys):
    # the name titles every output: a line break or a terminal escape was printed raw
    message = _error({**BASE, "name": name})
    assert message == ("name: must be text of printable characters (no line break or control "
                       f"character), got {name!r}")
    assert Scenario.from_dict({**BASE, "name": "café, 25 steps"}).name == "café, 25 steps"
