"""The compiled trial model is what every engine reads, and every engine reads all of it.

Each field of ``relsim.scenario.TrialModel`` has a row below: a change to the scenario that
changes that field (and as little else as the format allows), and the engines whose results
must change with it. A field added to the model without a row fails
``test_every_compiled_field_has_a_row``; an engine that ignores a field fails
``test_each_engine_reads_each_field``. A last test holds the engines to reading the compiled
models rather than the scenario's tables.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

import relsim
from relsim.scenario import Scenario, TimeModel, TrialModel, trial_model
from relsim.scenario.compiled import NO_CAP, expit, shift

ALL = ("exact", "montecarlo", "timeline")

# Every section 3 feature on, at values where a change shows in a few thousand trials.
BASE = {
    "steps": 4,
    "p": [0.9, 0.8, 0.85, 0.9],
    "verifier": {"miss": 0.3, "false_reject": 0.1},
    "retries": {"per_step": 2, "total": 3},
    "checkpoints": {"every": 2, "detect": 0.7, "false_alarm": 0.1, "rollbacks": 1},
    "correlation": {"task_sd": 0.5, "step_sd": 0.5,
                    "confusion": {"enter": 0.5, "recover": 0.4, "factor": 0.7}},
    "cost": {"attempt": [1.0, 2.0, 1.0, 2.0], "verify": 0.5, "checkpoint": 0.3, "rollback": 0.7},
}


def _with(path: str, value: object, base: dict = BASE) -> dict:
    data = copy.deepcopy(base)
    *tables, key = path.split(".")
    where = data
    for table in tables:
        where = where.setdefault(table, {})
    if value is None:
        del where[key]
    else:
        where[key] = value
    return data


# field -> (scenario before, scenario after, engines whose result must change)
ROWS: dict[str, tuple[dict, dict, tuple[str, ...]]] = {
    "steps": (BASE, {**_with("steps", 5), "p": 0.85, "cost": {**BASE["cost"], "attempt": 1.5}}, ALL),
    "p": (BASE, _with("p", [0.9, 0.6, 0.85, 0.9]), ALL),
    "logit_p": (BASE, _with("p", [0.9, 0.8, 0.95, 0.9]), ALL),
    "p_fixed": (BASE, _with("p", [0.9, 0.8, 1.0, 0.9]), ALL),
    # No verifier means every attempt is accepted, as a verifier with miss 1 and false_reject 0:
    # the outcome is the same, only the timeline draws (and times) the verification.
    "has_verifier": ({"steps": 3, "p": 0.7}, {"steps": 3, "p": 0.7, "verifier": {"miss": 1.0}},
                     ("timeline",)),
    "miss": (BASE, _with("verifier.miss", 0.1), ALL),
    "false_reject": (BASE, _with("verifier.false_reject", 0.3), ALL),
    "per_step": (BASE, _with("retries.per_step", 1), ALL),
    "total": (BASE, _with("retries.total", 1), ALL),
    "attempt_cost": (BASE, _with("cost.attempt", [3.0, 2.0, 1.0, 2.0]), ALL),
    "verify_cost": (BASE, _with("cost.verify", 2.0), ALL),
    "checkpoint_positions": (BASE, _with("checkpoints.every", 3), ALL),
    "is_checkpoint": (BASE, {**_with("checkpoints.every", None), "checkpoints": {
        **{k: v for k, v in BASE["checkpoints"].items() if k != "every"}, "at": [1, 3]}}, ALL),
    "detect": (BASE, _with("checkpoints.detect", 0.2), ALL),
    "false_alarm": (BASE, _with("checkpoints.false_alarm", 0.5), ALL),
    "rollbacks": (BASE, _with("checkpoints.rollbacks", 3), ALL),
    "checkpoint_cost": (BASE, _with("cost.checkpoint", 2.0), ALL),
    "rollback_cost": (BASE, _with("cost.rollback", 3.0), ALL),
    "has_confusion": (BASE, _with("correlation.confusion", None), ALL),
    "enter": (BASE, _with("correlation.confusion.enter", 0.9), ALL),
    "recover": (BASE, _with("correlation.confusion.recover", 0.05), ALL),
    "factor": (BASE, _with("correlation.confusion.factor", 0.2), ALL),
    "task_sd": (BASE, _with("correlation.task_sd", 2.0), ALL),
    "step_sd": (BASE, _with("correlation.step_sd", 2.0), ALL),
    # every cost times 2**600: beyond it, a variance of costs overflows unless the engine
    # sums in the model's cost unit (checked apart, below)
    "cost_unit": (BASE, _with("cost", {k: (np.array(v) * 2.0**600).tolist()
                                       for k, v in BASE["cost"].items()}), ALL),
}

# Every section 8 table on (docs/model.md section 8): a mixture, a ladder, votes, failure
# modes (whose misses replace verifier.miss), faults and a utility.
V2 = {
    **{k: v for k, v in BASE.items() if k != "verifier"},
    "verifier": {"false_reject": 0.1},
    "classes": [{"weight": 0.7, "p": [0.9, 0.8, 0.85, 0.9]}, {"weight": 0.3, "p": 0.5}],
    "escalation": {"after": [1], "p": [0.95], "attempt_cost": [3.0]},
    "sampling": {"n": 3, "wrong_answers": 2},
    "failure_modes": [{"name": "tool", "share": 0.4, "miss": 0.0, "detect": 1.0},
                      {"name": "hallucination", "share": 0.6, "miss": 0.5, "detect": 0.4}],
    "faults": {"attempt": 0.05},
    "utility": {"silent_failure": -2.0, "detected_failure": -0.5, "infra_failure": -0.1,
                "cost_weight": 0.01},
}



def _v2(path: str, value: object) -> dict:
    return _with(path, value, V2)


def _modes(**second: object) -> list:
    return [V2["failure_modes"][0], {**V2["failure_modes"][1], **second}]


ROWS.update({
    "class_weight": (V2, _v2("classes", [{**V2["classes"][0], "weight": 0.2}, V2["classes"][1]]), ALL),
    "rung_p": (V2, _v2("classes", [V2["classes"][0], {"weight": 0.3, "p": 0.3}]), ALL),
    "rung_logit_p": (V2, _v2("escalation.p", [0.6]), ALL),
    "rung_p_fixed": (V2, _v2("escalation.p", [1.0]), ALL),
    "rung_after": (V2, _v2("escalation.after", [2]), ALL),
    "rung_cost": (V2, _v2("escalation.attempt_cost", [9.0]), ALL),
    "samples": (V2, _v2("sampling.n", 5), ALL),
    "vote": (V2, _v2("sampling", {"n": 3, "select": "verifier"}), ALL),
    "wrong_answers": (V2, _v2("sampling.wrong_answers", 1), ALL),
    "mode_names": (V2, _v2("failure_modes", _modes(name="hallucinated")), ALL),
    "mode_share": (V2, _v2("failure_modes", [{**V2["failure_modes"][0], "share": 0.8},
                                             {**V2["failure_modes"][1], "share": 0.2}]), ALL),
    "mode_miss": (V2, _v2("failure_modes", _modes(miss=0.2)), ALL),
    "mode_detect": (V2, _v2("failure_modes", _modes(detect=0.9)), ALL),
    "fault": (V2, _v2("faults.attempt", 0.3), ALL),
    "utility": ({**BASE, "utility": {"silent_failure": -1.0}}, {**BASE, "utility": {"silent_failure": -3.0}},
                ALL),
})


def _run(engine: str, data: dict) -> dict:
    s = Scenario.from_dict(data)
    if engine == "exact":
        out = relsim.evaluate(s)
    elif engine == "montecarlo":
        out = relsim.simulate(s, 4000, seed=11)
    else:
        out = relsim.simulate_timeline(s, 400, seed=11)
    keys = ("success", "silent_failure", "detected_failure", "infra_failure", "expected_attempts",
            "expected_cost", "silent_by_mode", "expected_utility")
    return {key: getattr(out, key) for key in keys}


def test_every_compiled_field_has_a_row():
    names = [f.name for f in dataclasses.fields(TrialModel)]
    assert sorted(ROWS) == sorted(names)


@pytest.mark.parametrize("field", sorted(ROWS))
def test_each_row_changes_its_field(field):
    before, after, _ = ROWS[field]
    old = getattr(trial_model(Scenario.from_dict(before)), field)
    new = getattr(trial_model(Scenario.from_dict(after)), field)
    same = np.array_equal(old, new) if isinstance(old, np.ndarray) and np.shape(old) == np.shape(new) else old == new
    assert not same


@pytest.mark.slow
@pytest.mark.parametrize("field", sorted(ROWS))
def test_each_engine_reads_each_field(field):
    before, after, engines = ROWS[field]
    for engine in engines:
        old, new = _run(engine, before), _run(engine, after)
        if field == "cost_unit":
            # the same trials at 2**600 times the cost: exactly scaled, and finite
            assert math.isfinite(new["expected_cost"]), engine
            assert new["expected_cost"] == pytest.approx(old["expected_cost"] * 2.0**600, rel=1e-12), engine
        else:
            assert old != new, f"{engine} ignores TrialModel.{field}"


def test_the_fields_of_a_reference_scenario():
    # R3 of docs/model.md section 5: a task-wide budget, attempt plus verify cost
    s = Scenario.from_dict({"steps": 10, "p": 0.85, "verifier": {"miss": 0.2, "false_reject": 0.05},
                            "retries": {"per_step": 2, "total": 4},
                            "cost": {"attempt": 0.02, "verify": 0.01}})
    m = trial_model(s)
    assert m.total == 4 and m.has_total and m.step_caps.tolist() == [2] * 10
    assert m.cost_per_attempt.tolist() == [0.03] * 10 and m.binding_total == 4
    assert m.max_attempts == 10 + 4 and not m.has_checkpoints and m.cost_unit == 1.0
    bare = trial_model(Scenario.from_dict({"steps": 2, "p": 0.5}))
    assert bare.total == NO_CAP and bare.binding_total is None and bare.miss.tolist() == [1.0, 1.0]
    assert (bare.detect, bare.false_alarm, bare.factor, bare.enter) == (1.0, 0.0, 1.0, 0.0)


def test_shift_is_stable_and_the_kernels_own():
    # numba's compiled copy (run_v2's; run_general's vectorized one, _expit_select, is held
    # to it within 2**-51 in test_montecarlo_draws.py)
    from relsim.montecarlo._draws import _expit

    xs = np.concatenate([np.linspace(-800, 800, 801), [-1e300, 1e300, 0.0, -0.0]])
    for x in xs:
        assert expit(float(x)) == _expit(float(x))  # bit for bit
    assert shift(0.0, 0.0, 5.0) == 0.0 and shift(1.0, 0.0, -5.0) == 1.0
    # a shift of 400 logits is no overflow: the timeline once failed here
    assert 0.0 <= shift(0.9, math.log(9), -400.0) < 1e-170


def test_time_model_compiles_section_7():
    s = Scenario.from_dict({
        "steps": 2, "p": 0.9, "verifier": {}, "checkpoints": {"final": True, "human": True},
        "timing": {"attempt": [1, {"median": 2, "p95": 4}], "deadline": 60},
        "fleet": {"arrivals": "poisson", "rate_per_hour": 10, "agents": 2},
        "resources": {"reviewers": 1, "review": {"mean": 30}, "tokens": 100, "tpm": 1000},
        "infra": {"crash_per_hour": 0.5},
    })
    t = relsim.scenario.time_model(s)
    assert isinstance(t, TimeModel) and t.attempt[0].value == 1.0 and t.attempt[1].kind == "lognormal"
    assert t.tokens == (100.0, 100.0) and t.human and t.reviewers == 1 and not t.independent
    assert t.changes_outcomes == ("timing.deadline", "infra.crash_per_hour")


# ------------------------------------------------------------------ engines read the models
SCENARIO_FIELDS = {f.name for f in dataclasses.fields(Scenario)}


def _scenario_reads(folder: str) -> list[str]:
    """Every ``scenario.<field>`` (or ``s.<field>``) read in the modules of ``folder``."""
    root = Path(relsim.__file__).parent
    reads = []
    for path in sorted((root / folder).glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in SCENARIO_FIELDS
                    and isinstance(node.value, ast.Name) and node.value.id in ("scenario", "s")):
                reads.append(f"{path.relative_to(root)}:{node.lineno} {ast.unparse(node)}")
    return reads


@pytest.mark.parametrize("engine", ["exact", "montecarlo", "timeline"])
def test_engines_read_the_compiled_models_not_the_scenario(engine):
    assert _scenario_reads(engine) == []


def test_the_probe_sees_a_scenario_read():
    # negative control: the planner builds scenarios from scenarios, and the probe sees it
    assert _scenario_reads("plan")
