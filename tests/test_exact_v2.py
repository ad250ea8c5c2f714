"""The exact engine on docs/model.md section 8's tables, against references outside it.

- ``section8_brute.brute_force``: every random outcome of MODEL.md's pseudo-code enumerated
  (tiny scenarios, no random effects), to 1e-12;
- section 8's limits: each table at its identity is the model without it, on scenarios with
  random effects and confusion, to 1e-12 (and section 3's forward pass against section 8's on
  MODEL.md's reference scenarios);
- the reference checks MODEL.md section 8 pins (Stroebl et al.'s utilities, the vote
  mixture's peak), and binomial tails;
- random effects: one- and two-step designs against nested Gauss-Hermite quadrature of a
  per-step closed form written here, to 1e-7.
"""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relsim import Scenario, evaluate
from relsim.exact import _evaluate
from relsim.scenario.compiled import TrialModel
from section8_brute import OUTCOMES, brute_force

KEYS = (*OUTCOMES, "expected_attempts", "expected_cost")


def _close(data: dict, want: dict, tol: float = 1e-12) -> None:
    """The engine on ``data`` against ``want`` (brute_force's keys), key by key."""
    got = evaluate(data)
    for key in KEYS:
        scale = max(1.0, abs(want[key]))
        assert abs(getattr(got, key) - want[key]) <= tol * scale, (key, getattr(got, key), want[key])
    if want["silent_by_mode"] is None:
        assert got.silent_by_mode is None
    else:
        assert got.silent_by_mode.keys() == want["silent_by_mode"].keys()
        for name, share in want["silent_by_mode"].items():
            assert abs(got.silent_by_mode[name] - share) <= tol, (name, got.silent_by_mode[name], share)
        assert math.isclose(sum(got.silent_by_mode.values()), got.silent_failure, abs_tol=1e-12)
    if want["expected_utility"] is None:
        assert got.expected_utility is None
    else:
        assert abs(got.expected_utility - want["expected_utility"]) <= tol * max(
            1.0, abs(want["expected_utility"]))
    assert math.isclose(sum(getattr(got, k) for k in OUTCOMES), 1.0, abs_tol=1e-12)


# ------------------------------------------------------------------ against brute force
# Bases with section 3's features (no verifier; a verifier with both budgets and costs; a
# confused agent with checkpoints and rollbacks), each combined with one table or all.
BASES = {
    "bare": {"steps": 2, "p": [0.8, 0.6]},
    "verified": {
        "steps": 2, "p": [0.8, 0.6], "verifier": {"miss": 0.3, "false_reject": 0.1},
        "retries": {"per_step": 2, "total": 3}, "cost": {"attempt": [1.0, 2.0], "verify": 0.3},
    },
    "checkpoints": {
        "steps": 3, "p": [0.85, 0.6, 0.75], "verifier": {"miss": 0.4, "false_reject": 0.05},
        "retries": {"per_step": [1, 2, 1], "total": 3},
        "checkpoints": {"at": [1], "final": True, "detect": 0.7, "false_alarm": 0.1, "rollbacks": 1},
        "correlation": {"confusion": {"enter": 0.6, "recover": 0.3, "factor": 0.5}},
        "cost": {"attempt": 1.0, "verify": 0.2, "checkpoint": 0.4, "rollback": 0.7},
    },
}


def _table(data: dict, name: str) -> dict | None:
    """``data`` with section 8's table ``name`` (None where the base cannot take it)."""
    d = copy.deepcopy(data)
    verified = "verifier" in d
    n = d["steps"]
    if name == "classes":
        d["classes"] = [{"weight": 0.6, "p": d.pop("p")}, {"weight": 0.4, "p": [0.3] * n}]
    elif name == "escalation":
        if not verified:
            return None
        d["escalation"] = {"after": [1, 2], "p": [0.9, [0.95] * n], "attempt_cost": [2.5, 4.0]}
    elif name == "vote":
        d["sampling"] = {"n": 3, "wrong_answers": 2}
    elif name == "vote_ties":
        d["sampling"] = {"n": 2, "wrong_answers": 1}
    elif name == "vote_distinct":
        d["sampling"] = {"n": 3, "wrong_answers": "distinct"}
    elif name == "select_verifier":
        if not verified:
            return None
        d["sampling"] = {"n": 3, "select": "verifier"}
    elif name == "modes":
        modes = [{"name": "tool_error", "share": 0.3}, {"name": "hallucination", "share": 0.7}]
        if verified:
            d["verifier"].pop("miss")
            modes[0]["miss"], modes[1]["miss"] = 0.05, 0.6
        if "checkpoints" in d:
            modes[0]["detect"], modes[1]["detect"] = 0.9, 0.3
        d["failure_modes"] = modes
    elif name == "faults":
        d["faults"] = {"attempt": 0.15}
    elif name == "utility":
        d["utility"] = {"silent_failure": -2.0, "detected_failure": -0.2, "infra_failure": -0.5,
                        "cost_weight": 0.05}
    elif name == "all":
        for part in ("classes", "escalation", "vote", "modes", "faults", "utility"):
            d = _table(d, part) or d
        if "escalation" in d:  # each class its own ladder
            d["classes"][1]["escalation_p"] = [[0.5] * n] * len(d["escalation"]["after"])
    return d


TABLES = ("classes", "escalation", "vote", "vote_ties", "vote_distinct", "select_verifier", "modes",
          "faults", "utility", "all")
GRID = [(b, t) for b, t in itertools.product(BASES, TABLES) if _table(BASES[b], t) is not None]


def test_the_oracle_agrees_with_closed_forms_on_section_3():
    # the oracle's own check, on what relsim.formulas covers: a verified chain with budgets
    from relsim import formulas

    data = {"steps": 3, "p": [0.9, 0.7, 0.8], "verifier": {"miss": 0.2, "false_reject": 0.1},
            "retries": {"per_step": 2}}
    want = formulas.verified_chain([0.9, 0.7, 0.8], 2, miss=0.2, false_reject=0.1)
    got = brute_force(data)
    assert got["success"] == pytest.approx(want.success, abs=1e-14)
    assert got["silent_failure"] == pytest.approx(want.silent_failure, abs=1e-14)
    assert got["expected_attempts"] == pytest.approx(want.expected_attempts, abs=1e-13)
    # a binary vote of three with no verifier: the binomial tail
    assert brute_force({"steps": 1, "p": 0.3, "sampling": {"n": 3}})["success"] == pytest.approx(
        0.3**3 + 3 * 0.3**2 * 0.7, abs=1e-15)


@pytest.mark.parametrize("base, table", GRID)
def test_each_table_and_all_together_equal_brute_force(base, table):
    data = _table(BASES[base], table)
    _close(data, brute_force(data))


def test_all_tables_with_select_verifier_equal_brute_force():
    data = _table(BASES["checkpoints"], "all")
    data["sampling"] = {"n": 2, "select": "verifier"}
    _close(data, brute_force(data))


@st.composite
def _scenarios(draw):
    """Small scenarios with random values and a random set of section 8's tables."""
    prob = st.floats(0.05, 0.95)
    n = draw(st.integers(1, 2))
    per_step = draw(st.integers(0, 2))
    d: dict = {"steps": n, "p": draw(prob)}
    verified = draw(st.booleans())
    if verified:
        d["verifier"] = {"false_reject": draw(st.floats(0.0, 0.5))}
        if per_step:
            d["retries"] = {"per_step": per_step}
            if draw(st.booleans()):
                d["retries"]["total"] = draw(st.integers(0, 2 * per_step))
    if draw(st.booleans()):
        d["checkpoints"] = {"every": 1, "detect": draw(prob), "false_alarm": draw(st.floats(0, 0.3)),
                            "rollbacks": draw(st.integers(0, 1))}
    if draw(st.booleans()):
        d["correlation"] = {"confusion": {"enter": draw(prob), "recover": draw(prob),
                                          "factor": draw(prob)}}
    if draw(st.booleans()):
        d["classes"] = [{"weight": draw(st.floats(0.1, 1.0)), "p": d.pop("p")},
                        {"weight": draw(st.floats(0.1, 1.0)), "p": draw(prob)}]
    if verified and per_step and draw(st.booleans()):
        d["escalation"] = {"after": [1], "p": [draw(prob)], "attempt_cost": [draw(st.floats(0, 5))]}
    samples = draw(st.integers(1, 3))
    if verified and draw(st.booleans()):
        d["sampling"] = {"n": samples, "select": "verifier"}
    else:
        d["sampling"] = {"n": samples, "wrong_answers": draw(st.sampled_from([1, 2, "distinct"]))}
    if draw(st.booleans()):
        share = draw(st.floats(0.1, 0.9))
        modes = [{"name": "a", "share": share}, {"name": "b", "share": 1.0 - share}]
        for mode in modes:
            if verified:
                mode["miss"] = draw(prob)
            if "checkpoints" in d:
                mode["detect"] = draw(prob)
        d["failure_modes"] = modes
    elif verified:
        d["verifier"]["miss"] = draw(prob)
    if draw(st.booleans()):
        d["faults"] = {"attempt": draw(st.floats(0.0, 0.5))}
    return d


@settings(max_examples=30, deadline=None, derandomize=True)
@given(_scenarios())
def test_random_small_designs_equal_brute_force(data):
    _close(data, brute_force(data))


# ----------------------------------------------------------------------------- the limits
# Section 3's features with random effects and confusion, on which each table's identity is
# checked (design path against section 3's forward pass).
EFFECTS = {
    "steps": 4, "p": [0.9, 0.7, 0.95, 0.8], "verifier": {"miss": 0.2, "false_reject": 0.05},
    "retries": {"per_step": 2, "total": 5},
    "checkpoints": {"every": 2, "detect": 0.8, "false_alarm": 0.05, "rollbacks": 1},
    "correlation": {"task_sd": 0.6, "step_sd": 0.4,
                    "confusion": {"enter": 0.4, "recover": 0.3, "factor": 0.6}},
    "cost": {"attempt": [1.0, 2.0, 1.0, 3.0], "verify": 0.2, "checkpoint": 0.3, "rollback": 0.5},
}


def _same(a: dict, b: dict, tol: float = 1e-12) -> None:
    x, y = evaluate(a), evaluate(b)
    for key in KEYS:
        assert abs(getattr(x, key) - getattr(y, key)) <= tol * max(1.0, abs(getattr(y, key))), key


def _design_path(monkeypatch, data: dict, plain: dict) -> None:
    """``data`` through section 8's forward pass equals ``plain`` through section 3's."""
    want = evaluate(plain)
    with monkeypatch.context() as patch:
        patch.setattr(TrialModel, "has_design_tables", property(lambda self: True))
        got = evaluate(data)
    for key in KEYS:
        assert abs(getattr(got, key) - getattr(want, key)) <= 1e-12 * max(1.0, abs(getattr(want, key))), key
    assert got.infra_failure == 0.0


REFERENCES = {  # docs/model.md section 5, R4 to R7: checkpoints, confusion, random effects
    "R3": {"steps": 10, "p": 0.85, "verifier": {"miss": 0.2, "false_reject": 0.05},
           "retries": {"per_step": 2, "total": 4}, "cost": {"attempt": 0.02, "verify": 0.01}},
    "R4": {"steps": 12, "p": 0.9, "checkpoints": {"every": 4, "detect": 0.8, "false_alarm": 0.05,
                                                  "rollbacks": 2},
           "cost": {"checkpoint": 0.1, "rollback": 0.5}},
    "R5": {"steps": 8, "p": 0.9, "verifier": {"miss": 0.3}, "retries": {"per_step": 2},
           "correlation": {"confusion": {"enter": 0.7, "recover": 0.3, "factor": 0.5}}},
    "R6": {"steps": 8, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"per_step": 2},
           "correlation": {"task_sd": 1.0, "step_sd": 0.8}},
    "R7": {"steps": 9, "p": [0.99, 0.9, 0.8, 0.95, 0.9, 0.7, 0.99, 0.9, 0.85],
           "verifier": {"miss": 0.15, "false_reject": 0.1}, "retries": {"per_step": 3, "total": 5},
           "checkpoints": {"every": 3, "final": True, "detect": 0.9, "rollbacks": 2},
           "correlation": {"task_sd": 0.5, "step_sd": 0.5,
                           "confusion": {"enter": 0.5, "recover": 0.5, "factor": 0.7}},
           "cost": {"attempt": 1, "verify": 0.2, "checkpoint": 0.5, "rollback": 1}},
    "effects": EFFECTS,
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_design_path_without_tables_is_section_3(name, monkeypatch):
    _design_path(monkeypatch, REFERENCES[name], REFERENCES[name])


def _with(data: dict, **tables) -> dict:
    return {**copy.deepcopy(data), **copy.deepcopy(tables)}


def test_a_rung_equal_to_rung_0_is_no_ladder():
    ladder = _with(EFFECTS, escalation={"after": [1, 2], "p": [EFFECTS["p"]] * 2,
                                        "attempt_cost": [EFFECTS["cost"]["attempt"]] * 2})
    _same(ladder, EFFECTS)


def test_one_class_is_no_mixture():
    data = _with(EFFECTS, escalation={"after": [1], "p": [0.97], "attempt_cost": [4.0]},
                 faults={"attempt": 0.1})
    one = {k: v for k, v in data.items() if k != "p"}
    one["classes"] = [{"weight": 3.0, "p": EFFECTS["p"]}]
    _same(one, data)


@pytest.mark.parametrize("sampling", [{"n": 1}, {"n": 1, "wrong_answers": 3},
                                      {"n": 1, "wrong_answers": "distinct"},
                                      {"n": 1, "select": "verifier"}])
def test_one_sample_is_no_sampling(sampling, monkeypatch):
    _design_path(monkeypatch, _with(EFFECTS, sampling=sampling), EFFECTS)


def test_modes_alike_are_the_plain_verifier_and_checkpoints():
    data = _with(EFFECTS, failure_modes=[
        {"name": "a", "share": 0.25, "miss": 0.2, "detect": 0.8},
        {"name": "b", "share": 0.75, "miss": 0.2, "detect": 0.8}])
    data["verifier"] = {"false_reject": 0.05}
    _same(data, EFFECTS)
    # and the mode of a wrong result is drawn apart from everything else: silent failures
    # split by the shares
    out = evaluate(data)
    assert out.silent_by_mode["a"] == pytest.approx(0.25 * out.silent_failure, abs=1e-12)
    assert out.silent_by_mode["b"] == pytest.approx(0.75 * out.silent_failure, abs=1e-12)


def test_faults_that_never_happen_are_no_faults(monkeypatch):
    _design_path(monkeypatch, _with(EFFECTS, faults={"attempt": 0.0}), EFFECTS)


def test_faults_approach_no_faults_continuously():
    # the design path (faults > 0) against section 3's forward pass (none), as faults vanish
    gaps = [abs(evaluate(_with(EFFECTS, faults={"attempt": f})).success - evaluate(EFFECTS).success)
            for f in (1e-3, 1e-6, 1e-9)]
    assert gaps[0] > 1e-5 and gaps[1] < 1e-5 and gaps[2] < 1e-8


def test_a_sure_fault_ends_every_trial_as_infra_failure():
    out = evaluate(_with(EFFECTS, faults={"attempt": 1.0}))
    assert out.infra_failure == pytest.approx(1.0, abs=1e-14) and out.success == 0.0
    # every attempt of the first step is made and costs its attempt, no verification
    assert out.expected_attempts == pytest.approx(3.0, abs=1e-12)
    assert out.expected_cost == pytest.approx(3.0, abs=1e-12)


# ---------------------------------------------------------------------- reference checks
def _stroebl(per_step: int, silent_value: float) -> float:
    data = {"steps": 1, "verifier": {"miss": 0.25, "false_reject": 0.0},
            "classes": [{"weight": 0.58, "p": 0.87}, {"weight": 0.42, "p": 0.13}],
            "utility": {"success": 1.0, "silent_failure": silent_value, "detected_failure": 0.0}}
    if per_step:
        data["retries"] = {"per_step": per_step}
    return evaluate(data).expected_utility


@pytest.mark.parametrize("silent_value, best, utility", [
    (-0.7, 2, 0.524567), (-1.0, 1, 0.472381), (-2.0, 0, 0.338800)])
def test_stroebl_best_retries_and_utilities(silent_value, best, utility):
    # Stroebl, Kapoor and Narayanan (2024), as MODEL.md section 8 pins it
    values = [_stroebl(r, silent_value) for r in range(8)]
    assert int(np.argmax(values)) == best
    assert round(values[best], 6) == utility


def test_stroebl_without_retries():
    assert round(_stroebl(0, -1.0), 6) == 0.449000


def _vote_mixture(n: int) -> float:
    return evaluate({"steps": 1, "classes": [{"weight": 0.6, "p": 0.8}, {"weight": 0.4, "p": 0.3}],
                     "sampling": {"n": n, "wrong_answers": 1}}).success


def test_vote_mixture_peaks_at_five():
    # Chen et al. (2024) as MODEL.md section 8 pins it: a = 0.6, p1 = 0.8, p2 = 0.3
    values = {n: _vote_mixture(n) for n in range(1, 16)}
    best = max(values.values())
    assert min(n for n, v in values.items() if v == pytest.approx(best, abs=1e-12)) == 5
    assert round(values[5], 6) == 0.630480
    for n in range(2, 16, 2):  # an even vote ties the odd one below it
        assert values[n] == pytest.approx(values[n - 1], abs=1e-12)
    assert values[15] < values[9] < values[5]
    assert abs(_vote_mixture(61) - 0.6) < 0.01  # toward 0.6 as n grows


@pytest.mark.parametrize("n", [1, 3, 5, 9, 15])
def test_binary_vote_is_the_binomial_tail(n):
    got = evaluate({"steps": 1, "p": 0.62, "sampling": {"n": n}}).success
    tail = math.fsum(math.comb(n, k) * 0.62**k * 0.38 ** (n - k) for k in range((n + 1) // 2, n + 1))
    assert got == pytest.approx(tail, abs=1e-13)


def test_many_wrong_answers_approach_distinct_ones():
    from relsim.exact._design import vote_weights

    for n in (2, 5, 12):
        assert np.abs(vote_weights(n, 10**6) - vote_weights(n, 0)).max() < 1e-4
        # wrong answers all alike are the binary vote
        binary = [0.0 if 2 * k < n else 0.5 if 2 * k == n else 1.0 for k in range(n + 1)]
        assert vote_weights(n, 1).tolist() == pytest.approx(binary, abs=1e-15)


# --------------------------------------------------------------------------- random effects
def _enumerated_vote_weights(samples: int, wrong_answers: int) -> np.ndarray:
    """P(right wins | K right) by enumerating the wrong samples' picks and the ties."""
    weights = np.zeros(samples + 1)
    for right in range(1, samples + 1):
        picks = list(itertools.product(range(wrong_answers), repeat=samples - right))
        wins = 0.0
        for pick in picks:
            counts = [pick.count(a) for a in range(wrong_answers)]
            top = max(counts + [right])
            if right == top:
                wins += 1.0 / (1 + counts.count(top))
        weights[right] = wins / len(picks)
    return weights


@pytest.mark.parametrize("samples, wrong_answers", [
    (n, w) for n in range(1, 8) for w in range(1, 5)])
def test_vote_weights_equal_enumeration(samples, wrong_answers):
    from relsim.exact._design import vote_weights

    assert vote_weights(samples, wrong_answers) == pytest.approx(
        _enumerated_vote_weights(samples, wrong_answers), abs=1e-14)


def _step_closed_form(p_rungs, after, budget, x, *, samples, wrong_answers, select, miss,
                      false_reject, fault):
    """One step execution at logit shift ``x`` (an array), no confusion: the probability of
    ending right, wrong, detected and infra, by the sum over attempts (written here)."""
    weights = _enumerated_vote_weights(samples, wrong_answers)
    reach = np.ones_like(x)
    out = {key: np.zeros_like(x) for key in ("right", "wrong", "detected", "infra")}
    for j in range(budget + 1):
        base = p_rungs[sum(1 for a in after if a <= j)]
        p = base if base in (0.0, 1.0) else 1.0 / (1.0 + np.exp(-(math.log(base / (1 - base)) + x)))
        p = np.broadcast_to(p, x.shape)
        if select == "vote":
            win = sum(math.comb(samples, k) * p**k * (1 - p) ** (samples - k) * weights[k]
                      for k in range(samples + 1))
            right, wrong = win * (1 - false_reject), (1 - win) * miss
        else:  # the first sample the verifier accepts, in turn
            right, wrong = np.zeros_like(x), np.zeros_like(x)
            none_yet = np.ones_like(x)
            for _ in range(samples):
                right = right + none_yet * p * (1 - false_reject)
                wrong = wrong + none_yet * (1 - p) * miss
                none_yet = none_yet * (p * false_reject + (1 - p) * (1 - miss))
        right, wrong = (1 - fault) * right, (1 - fault) * wrong
        rejected = 1 - fault - right - wrong
        out["right"] += reach * right
        out["wrong"] += reach * wrong
        if j == budget:
            out["detected"] += reach * rejected
            out["infra"] += reach * fault
        reach = reach * (rejected + fault)
    return out


@pytest.mark.parametrize("select", ["vote", "verifier"])
def test_random_effects_against_nested_quadrature(select):
    p0, p1 = [0.7, 0.85], [0.9, 1.0]  # a rung that is sure (left unshifted) on step 2
    task_sd, step_sd = 0.8, 0.6
    sampling = {"n": 3, "wrong_answers": 2} if select == "vote" else {"n": 2, "select": "verifier"}
    design = dict(after=[1], budget=2, samples=sampling["n"], wrong_answers=2, select=select,
                  miss=0.3, false_reject=0.1, fault=0.05)
    data = {"steps": 2, "p": p0, "verifier": {"miss": 0.3, "false_reject": 0.1},
            "retries": {"per_step": 2}, "escalation": {"after": [1], "p": [p1]},
            "sampling": sampling, "faults": {"attempt": 0.05},
            "correlation": {"task_sd": task_sd, "step_sd": step_sd}}
    z, wz = np.polynomial.hermite_e.hermegauss(80)
    wz = wz / wz.sum()
    shift = task_sd * z[:, None] + step_sd * z[None, :]  # (task node, step node)
    first, second = ({k: (v * wz[None, :]).sum(axis=1) for k, v in _step_closed_form(
        [p0[i], p1[i]], x=shift, **design).items()} for i in range(2))
    accepted = first["right"] + first["wrong"]
    want = {
        "success": first["right"] * second["right"],
        "detected_failure": first["detected"] + accepted * second["detected"],
        "infra_failure": first["infra"] + accepted * second["infra"],
    }
    got = evaluate(data)
    for key, values in want.items():
        assert getattr(got, key) == pytest.approx(float(values @ wz), abs=1e-7), key
    # a negative control: without the step effect the answer moves well past the tolerance
    still = {**data, "correlation": {"task_sd": task_sd}}
    assert abs(evaluate(still).success - got.success) > 1e-4


def test_the_design_path_with_effects_keeps_its_outputs_consistent():
    data = _with(_table(BASES["checkpoints"], "all"), correlation={
        "task_sd": 0.7, "step_sd": 0.5, "confusion": {"enter": 0.6, "recover": 0.3, "factor": 0.5}})
    out = evaluate(data)
    assert math.isclose(sum(getattr(out, k) for k in OUTCOMES), 1.0, abs_tol=1e-9)
    assert math.isclose(sum(out.silent_by_mode.values()), out.silent_failure, abs_tol=1e-9)
    tight, _ = _evaluate(Scenario.from_dict(data), 1e-11)
    assert out.success == pytest.approx(tight[0], abs=1e-8)


# --------------------------------------------------- the closed forms of relsim.formulas
# Independent oracles for one step (and chains of independent steps): each closed form of
# docs/model.md section 2 that section 8 added, against the engine.
@pytest.mark.parametrize("wrong", [1, 2, 5, "distinct"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 12])
def test_a_vote_is_the_plurality_closed_form(n, wrong):
    from relsim import formulas

    for p in (0.05, 0.3, 0.5, 0.8):
        got = evaluate({"steps": 1, "p": p, "sampling": {"n": n, "wrong_answers": wrong}}).success
        assert got == pytest.approx(formulas.plurality_vote(p, n, wrong), abs=1e-12)


def test_samples_through_a_verifier_are_best_of_n_retried():
    from relsim import formulas

    # r retries of n samples each: the step ends like r + 1 rounds of best_of_n
    for p, n, r, miss, fr in [(0.4, 3, 2, 0.2, 0.1), (0.9, 5, 0, 0.05, 0.3), (0.2, 2, 4, 0.0, 0.0)]:
        data = {"steps": 3, "p": p, "verifier": {"miss": miss, "false_reject": fr},
                "retries": {"per_step": r}, "sampling": {"n": n, "select": "verifier"}}
        one = formulas.best_of_n(p, n, miss, fr)
        rounds = 1.0 - one.rejected ** (r + 1)
        step = one.accepted_correct / (1.0 - one.rejected) * rounds
        assert evaluate(data).success == pytest.approx(step**3, abs=1e-12)


def test_a_ladder_is_the_ladder_closed_form():
    from relsim import formulas

    data = {"steps": 4, "p": 0.6, "verifier": {"miss": 0.1, "false_reject": 0.05},
            "retries": {"per_step": 4}, "cost": {"attempt": 0.5},
            "escalation": {"after": [1, 3], "p": [0.8, 0.97], "attempt_cost": [2.0, 5.0]}}
    step = formulas.ladder_step([0.6, 0.8, 0.97], [1, 3], 4, miss=0.1, false_reject=0.05,
                                attempt_cost=[0.5, 2.0, 5.0])
    out = evaluate(data)
    assert out.success == pytest.approx(step.success**4, abs=1e-12)
    # the expected cost of a chain that stops at the first exhausted step
    reach = sum((step.success + step.silent_failure) ** k for k in range(4))
    assert out.expected_cost == pytest.approx(step.expected_cost * reach, rel=1e-12)


def test_a_mixture_is_the_mixture_closed_form_and_its_utility():
    from relsim import formulas

    for r in range(5):
        data = {"steps": 1, "classes": [{"weight": 0.58, "p": 0.87}, {"weight": 0.42, "p": 0.13}],
                "verifier": {"miss": 0.25}, "retries": {"per_step": r},
                "utility": {"silent_failure": -1.0}}
        step = formulas.mixture_verified_step([0.58, 0.42], [0.87, 0.13], r, miss=0.25)
        out = evaluate(data)
        assert out.success == pytest.approx(step.success, abs=1e-12)
        assert out.expected_utility == pytest.approx(formulas.expected_utility(
            step.success, step.silent_failure, step.exhausted, utility={"silent_failure": -1.0}), abs=1e-12)
