"""Plans from measured evidence: an audit's verifier at a bound, a fit's task classes, and the
least retry budget that meets the target in a share of the plausible worlds.

The planner under uncertainty is held to brute force over the sampled worlds: the worlds are
drawn again here from the recipe the module states (one Generator, the rates from
Beta(e x + 1/2, e (1 - x) + 1/2), then the bootstrap picks), every world is judged with the
exact engine at every budget in a range, and the least budget meeting the target in the share
asked is read off that table. The quadrature of a fit's Beta is held to scipy.stats.beta's
moments."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

import relsim
from relsim import plan as planner
from relsim.cli import main
from relsim.cli._args import EXIT_INFEASIBLE, EXIT_OK, EXIT_USAGE
from relsim.errors import RelsimError
from relsim.plan import evidence
from relsim.plan.evidence import Difficulty
from relsim.scenario.design_tables import TaskClass
from relsim.plan.uncertainty import plausible_worlds, retries_with_confidence

AUDIT = {
    "labels": 100, "tasks": None, "clustered": False, "interval": "clopper-pearson",
    "miss": {"estimate": 0.125, "ci": [0.041866, 0.268011], "count": 5, "of": 40,
             "effective": 40},
    "false_reject": {"estimate": 0.05, "ci": [0.010439, 0.139267], "count": 3, "of": 60,
                     "effective": 60},
    "better_than_chance": True, "judged": None,
}
#: A fit whose bootstrap draws are point masses only (no quadrature: the brute force below
#: builds their classes by hand) and one Beta draw.
FIT = {
    "tasks": 20, "trials_per_task": {"min": 5, "max": 5},
    "always": 0.3, "never": 0.05, "beta": {"weight": 0.65, "alpha": 2.0, "beta": 1.0},
    "identified": ["always", "never", "beta"], "loglik": -30.0, "check": [], "seed": 0,
    "draws": [
        {"always": 0.35, "never": 0.05, "beta_weight": 0.6, "alpha": 2.5, "beta": 1.2},
        {"always": 0.8, "never": 0.2, "beta_weight": 0.0, "alpha": None, "beta": None},
        {"always": 0.9, "never": 0.1, "beta_weight": 0.0, "alpha": None, "beta": None},
        {"always": 0.95, "never": 0.05, "beta_weight": 0.0, "alpha": None, "beta": None},
    ],
}
TASK = relsim.Scenario.from_dict({
    "name": "harness task", "steps": 1, "p": 0.7, "verifier": {"miss": 0.1},
    "retries": {"per_step": 1},
})


def with_budget(scenario, budget):
    return replace(scenario, retries=relsim.Retries(per_step=budget))


# ------------------------------------------------------------------------------ the readers
def test_an_audit_is_read_from_a_file_a_mapping_or_an_object(tmp_path):
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(AUDIT), encoding="utf-8")

    class Audit:  # what relsim audit's GraderAudit offers
        def to_dict(self):
            return AUDIT

    for source in (path, str(path), AUDIT, Audit()):
        rates = evidence.read_audit(source)
        assert rates.miss.estimate == 0.125 and rates.miss.ci == (0.041866, 0.268011)
        assert rates.false_reject.effective == 60
    assert evidence.read_audit(path).source == str(path)


@pytest.mark.parametrize("change, key", [
    (lambda a: a.pop("miss"), "miss"),
    (lambda a: a["miss"].pop("effective"), "miss.effective"),
    (lambda a: a["miss"].update(effective=0), "miss.effective"),
    (lambda a: a["false_reject"].update(estimate=1.5), "false_reject.estimate"),
    (lambda a: a["false_reject"].update(estimate=None), "false_reject.estimate"),
    (lambda a: a["miss"].update(ci=[0.3, 0.1]), "miss.ci"),
    (lambda a: a["miss"].update(ci=[0.1]), "miss.ci"),
    (lambda a: a["miss"].update(ci=[0.1, "x"]), "miss.ci"),
])
def test_a_bad_audit_names_the_file_and_the_key(tmp_path, change, key):
    data = json.loads(json.dumps(AUDIT))
    change(data)
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RelsimError) as caught:
        evidence.read_audit(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {key}: must be ") and "\n" not in message


def test_a_file_that_is_not_an_audit_is_one_line(tmp_path):
    path = tmp_path / "audit.json"
    for text, words in (("{not json", "not JSON"), ("[1, 2]", "must be a JSON object")):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(RelsimError, match=f"^{path}: {words}"):
            evidence.read_audit(path)
    with pytest.raises(RelsimError, match="cannot read"):
        evidence.read_audit(tmp_path / "missing.json")
    # a key given twice (json would keep the last value silently), at any depth
    text = json.dumps(AUDIT)
    path.write_text(text, encoding="utf-8")
    assert evidence.read_audit(path).miss == evidence.read_audit(AUDIT).miss  # control
    top = text.replace("{", '{"labels": 3, ', 1)
    inner = text.replace('"miss": {', '"miss": {"a": 1, "a": 2, ', 1)
    for twice in (top, inner):
        assert twice != text
        path.write_text(twice, encoding="utf-8")
        with pytest.raises(RelsimError, match=f"^{path}: (labels|a): must be given once"):
            evidence.read_audit(path)
    with pytest.raises(RelsimError, match="^audit: must be a path"):
        evidence.read_audit(3)


@pytest.mark.parametrize("change, key", [
    (lambda f: f.update(always=0.5), "always + never + beta.weight"),
    (lambda f: f.pop("never"), "never"),
    (lambda f: f["beta"].pop("alpha"), "beta.alpha"),
    (lambda f: f["beta"].update(beta=-1), "beta.beta"),
    (lambda f: f.update(beta=[1, 2]), "beta"),
    (lambda f: f["draws"][1].update(never=0.3), "draws[1].always + never + beta_weight"),
    (lambda f: f["draws"][0].update(alpha=None), "draws[0].alpha"),
    (lambda f: f.update(draws={"a": 1}), "draws"),
])
def test_a_bad_fit_names_the_file_and_the_key(tmp_path, change, key):
    data = json.loads(json.dumps(FIT))
    change(data)
    path = tmp_path / "fit.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RelsimError) as caught:
        evidence.read_fit(path)
    assert str(caught.value).startswith(f"{path}: {key}: must be "), str(caught.value)


def test_a_fit_is_read_with_its_draws():
    fit = evidence.read_fit(FIT)
    assert fit.point == Difficulty(0.3, 0.05, 0.65, 2.0, 1.0)
    assert len(fit.draws) == 4 and fit.draws[1] == Difficulty(0.8, 0.2, 0.0, None, None)
    assert evidence.read_fit({"always": 1.0, "never": 0.0, "beta": None}).draws == ()


# --------------------------------------------------------------------------- at the bounds
@pytest.mark.parametrize("at, expected", [
    ("upper", (0.268011, 0.139267)), ("estimate", (0.125, 0.05)), ("lower", (0.041866, 0.010439)),
])
def test_the_verifier_at_each_bound(at, expected):
    assert evidence.verifier_at(AUDIT, at) == expected
    planned = evidence.with_audit(TASK, AUDIT, at)
    assert (planned.verifier.miss, planned.verifier.false_reject) == expected
    assert planned.retries == TASK.retries and planned.p == TASK.p


def test_upper_is_the_default_and_other_bounds_are_refused():
    assert evidence.verifier_at(AUDIT) == evidence.verifier_at(AUDIT, "upper")
    with pytest.raises(RelsimError, match="^at: must be"):
        evidence.verifier_at(AUDIT, "middle")


def test_an_audit_replaces_per_step_rates_and_adds_a_missing_verifier():
    s = relsim.Scenario.from_dict({"steps": 2, "p": 0.9, "verifier": {"miss": [0.1, 0.2]}})
    assert evidence.with_audit(s, AUDIT).verifier.miss == 0.268011
    bare = relsim.Scenario.from_dict({"steps": 2, "p": 0.9})
    assert evidence.with_audit(bare, AUDIT, "lower").verifier == relsim.Verifier(0.041866, 0.010439)


def test_an_audit_refuses_failure_modes():
    s = relsim.Scenario.from_dict({
        "steps": 1, "p": 0.7, "verifier": {},
        "failure_modes": [{"name": "tool", "share": 0.5, "miss": 0.0},
                          {"name": "made up", "share": 0.5, "miss": 0.4}],
    })
    with pytest.raises(RelsimError, match=r"^failure_modes: must be left out .*tool, made up"):
        evidence.with_audit(s, AUDIT)
    with pytest.raises(RelsimError, match=r"^failure_modes: must be left out"):
        retries_with_confidence(s, 0.9, audit=AUDIT)


def test_the_plan_at_the_upper_bound_is_the_plan_of_that_verifier():
    planned = planner.retries(evidence.with_audit(TASK, AUDIT), 0.6)
    by_hand = relsim.Scenario.from_dict({
        "steps": 1, "p": 0.7, "verifier": {"miss": 0.268011, "false_reject": 0.139267},
        "retries": {"per_step": 1}})
    assert planned.value == planner.retries(by_hand, 0.6).value
    # a one-step chain: success at r = a (1 - q^(r+1)) / (1 - q), a = p (1 - f), q = p f + (1 - p) m
    a, q = 0.7 * (1 - 0.139267), 0.7 * 0.139267 + 0.3 * 0.268011
    assert planned.success == pytest.approx(a * (1 - q ** (planned.value + 1)) / (1 - q), abs=1e-12)


# ------------------------------------------------------------------------- a fit's classes
@pytest.mark.parametrize("alpha, beta", [(2.0, 3.0), (0.3, 0.6), (0.05, 0.05), (40.0, 15.0)])
def test_the_quadrature_integrates_polynomials_exactly(alpha, beta):
    classes = evidence.classes_from_fit(Difficulty(0.2, 0.1, 0.7, alpha, beta), nodes=8)
    weights = np.array([c.weight for c in classes])
    p = np.array([c.p for c in classes])
    assert weights.sum() == pytest.approx(1.0, abs=1e-14)
    for k in range(1, 16):  # degree up to 2 * 8 - 1
        expected = 0.2 + 0.7 * stats.beta(alpha, beta).moment(k)
        assert float(weights @ p**k) == pytest.approx(expected, rel=1e-9, abs=1e-13)


def test_a_narrow_beta_falls_back_to_its_mean_and_variance():
    alpha, beta = 1e6, 1e5  # the Jacobi scale overflows
    classes = evidence.classes_from_fit(Difficulty(0.0, 0.0, 1.0, alpha, beta))
    weights = np.array([c.weight for c in classes])
    p = np.array([c.p for c in classes])
    assert float(weights @ p) == pytest.approx(alpha / (alpha + beta), rel=1e-12)
    variance = float(weights @ p**2) - float(weights @ p) ** 2
    assert variance == pytest.approx(stats.beta(alpha, beta).var(), rel=1e-3)


def test_point_masses_and_weights_of_zero():
    classes = evidence.classes_from_fit({"always": 0.7, "never": 0.3, "beta": None})
    assert [(c.weight, c.p) for c in classes] == [(0.7, 1.0), (0.3, 0.0)]
    only_beta = evidence.classes_from_fit(Difficulty(0.0, 0.0, 1.0, 2.0, 2.0))
    assert len(only_beta) == evidence.QUADRATURE_NODES


def test_a_fit_sets_the_classes_of_a_one_step_scenario_only():
    s = evidence.with_fit(TASK, FIT)
    assert len(s.classes) == 2 + evidence.QUADRATURE_NODES
    # success at no retries is the mean pass rate: always + beta_weight * alpha / (alpha + beta)
    outcome = relsim.evaluate(replace(s, verifier=relsim.Verifier(miss=1.0), retries=None))
    assert outcome.success == pytest.approx(0.3 + 0.65 * 2 / 3, abs=1e-12)
    longer = relsim.Scenario.from_dict({"steps": 3, "p": 0.9})
    with pytest.raises(RelsimError, match=r"^steps: must be 1 to take the task difficulty"):
        evidence.with_fit(longer, FIT)
    with pytest.raises(RelsimError, match=r"^steps: must be 1"):
        retries_with_confidence(replace(longer, verifier=relsim.Verifier()), 0.9, fit=FIT)


# -------------------------------------------------------------------- the worlds, by hand
def worlds_by_hand(scenario, audit, fit, worlds, seed):
    """The module's recipe, written again: one Generator; misses, then false rejects, then
    the bootstrap picks."""
    rng = np.random.default_rng(seed)
    out = [scenario] * worlds
    if audit is not None:
        m, f = audit["miss"], audit["false_reject"]
        misses = rng.beta(m["effective"] * m["estimate"] + 0.5,
                          m["effective"] * (1 - m["estimate"]) + 0.5, size=worlds)
        rejects = rng.beta(f["effective"] * f["estimate"] + 0.5,
                           f["effective"] * (1 - f["estimate"]) + 0.5, size=worlds)
        out = [replace(w, verifier=relsim.Verifier(float(a), float(b)))
               for w, a, b in zip(out, misses, rejects)]
    if fit is not None:
        picks = rng.integers(len(fit["draws"]), size=worlds)
        out = [replace(w, classes=_classes_by_hand(fit["draws"][int(i)])) for w, i in zip(out, picks)]
    return out


def _classes_by_hand(draw):
    if draw["beta_weight"] > 0:  # the quadrature is held to scipy above
        return evidence.classes_from_fit(Difficulty(draw["always"], draw["never"],
                                                    draw["beta_weight"], draw["alpha"], draw["beta"]))
    return tuple(TaskClass(weight=w, p=p)
                 for w, p in ((draw["always"], 1.0), (draw["never"], 0.0)) if w > 0)


def success_table(worlds, budgets):
    """Exact success of every world at every budget, with the engine."""
    return np.array([[relsim.evaluate(with_budget(w, b)).success for b in budgets] for w in worlds])


def least_meeting(table, target, confidence):
    """The least budget (column) meeting ``target`` in at least ``confidence`` of the worlds
    (rows), the share at each budget, and the share reaching it at any budget in the table."""
    shares = (table >= target).mean(axis=0)
    met = np.nonzero(shares >= confidence)[0]
    return (int(met[0]) if met.size else None), shares


def test_the_worlds_are_the_stated_recipe():
    drawn = plausible_worlds(TASK, audit=AUDIT, fit=FIT, worlds=30, seed=4)
    assert drawn == worlds_by_hand(TASK, AUDIT, FIT, 30, 4)
    # negative control: the recipe without the half count draws other worlds
    rng = np.random.default_rng(4)
    other = rng.beta(40 * 0.125, 40 * 0.875, size=30)
    assert [w.verifier.miss for w in drawn] != list(other)


@pytest.mark.parametrize("target, confidence, audit, fit", [
    (0.8, 0.9, AUDIT, None),
    (0.8, 0.5, AUDIT, None),
    (0.75, 0.8, AUDIT, FIT),
    (0.85, 0.7, None, FIT),
])
def test_the_plan_is_brute_force_over_the_worlds(target, confidence, audit, fit):
    worlds, seed, budgets = 40, 7, range(0, 13)
    plan = retries_with_confidence(TASK, target, audit=audit, fit=fit, confidence=confidence,
                                   worlds=worlds, seed=seed)
    drawn = worlds_by_hand(TASK, audit, fit, worlds, seed)
    table = success_table(drawn, budgets)
    assert np.all(np.diff(table, axis=1) >= -1e-15)  # success never falls with the budget
    least, shares = least_meeting(table, target, confidence)
    assert least is not None and least < budgets[-1]  # the range holds the answer
    assert plan.feasible and plan.value == least
    assert plan.details["met"] == shares[least] >= confidence
    if least > 0:
        assert shares[least - 1] < confidence
    # the plan at the point estimates: its budget by brute force, and its share of worlds
    point = TASK
    if audit is not None:
        point = replace(point, verifier=relsim.Verifier(0.125, 0.05))
    if fit is not None:
        point = replace(point, classes=evidence.classes_from_fit(Difficulty(0.3, 0.05, 0.65, 2.0, 1.0)))
    point_success = [relsim.evaluate(with_budget(point, b)).success for b in budgets]
    plain = next(b for b, s in zip(budgets, point_success) if s >= target)
    assert plan.details["point_estimate"] == {"value": plain, "feasible": True, "met": shares[plain]}
    assert plan.success == pytest.approx(point_success[least], abs=1e-12)


def test_the_quantile_of_the_worlds_budgets_is_the_least_budget_meeting_the_share():
    # each world's least budget by the retries planner; their 90% quantile is the answer
    drawn = worlds_by_hand(TASK, AUDIT, FIT, 40, 3)
    own = [planner.retries(w, 0.75) for w in drawn]
    least = sorted(p.value if p.feasible else math.inf for p in own)
    plan = retries_with_confidence(TASK, 0.75, audit=AUDIT, fit=FIT, confidence=0.9,
                                   worlds=40, seed=3)
    assert plan.value == least[35]  # the 36th of 40: the least k with k / 40 >= 0.9
    share = [sum(b <= budget for b in least) / 40 for budget in range(plan.value + 1)]
    assert plan.details["met"] == share[-1] >= 0.9
    assert share[-2] < 0.9  # one retry less meets the target in too few worlds


def test_the_engine_judges_worlds_beyond_a_chain():
    s = relsim.Scenario.from_dict({
        "steps": 2, "p": [0.8, 0.9], "verifier": {}, "retries": {"per_step": 1},
        "checkpoints": {"every": 2, "detect": 0.8, "rollbacks": 1},
    })
    plan = retries_with_confidence(s, 0.85, audit=AUDIT, confidence=0.75, worlds=12, seed=1)
    assert plan.details["method"] == "exact engine per world"
    table = success_table(worlds_by_hand(s, AUDIT, None, 12, 1), range(0, 10))
    least, shares = least_meeting(table, 0.85, 0.75)
    assert plan.value == least and plan.details["met"] == shares[least]


def test_infeasible_when_too_few_worlds_reach_the_target():
    # tasks that never pass cap success at 1 - never: 0.9 or below in the draws that have them
    plan = retries_with_confidence(TASK, 0.92, audit=AUDIT, fit=FIT, confidence=0.9,
                                   worlds=40, seed=7)
    drawn = worlds_by_hand(TASK, AUDIT, FIT, 40, 7)
    reachable = np.mean([relsim.evaluate(with_budget(w, 200)).success >= 0.92 for w in drawn])
    assert not plan.feasible and plan.binding == "confidence"
    assert plan.details["reachable"] == reachable < 0.9
    assert f"only {100 * reachable:.3g}% of the 40 plausible worlds" in plan.reason
    assert plan.details["met"] == reachable  # the nearest budget meets it in every world that can


def test_the_same_seed_gives_the_same_plan_and_none_records_its_entropy():
    one = retries_with_confidence(TASK, 0.8, audit=AUDIT, worlds=50, seed=11)
    assert one.to_dict() == retries_with_confidence(TASK, 0.8, audit=AUDIT, worlds=50, seed=11).to_dict()
    fresh = retries_with_confidence(TASK, 0.8, audit=AUDIT, worlds=50, seed=None)
    again = retries_with_confidence(TASK, 0.8, audit=AUDIT, worlds=50,
                                    seed=np.random.SeedSequence(fresh.details["seed"]))
    assert fresh.details["met"] == again.details["met"]


@pytest.mark.parametrize("kwargs, message", [
    ({}, r"^audit, fit: must be given"),
    ({"audit": AUDIT, "confidence": 0.0}, r"^confidence: must be a number in \(0, 1\)"),
    ({"audit": AUDIT, "confidence": 1.0}, r"^confidence: must be"),
    ({"audit": AUDIT, "confidence": -0.2}, r"^confidence: must be"),
    ({"audit": AUDIT, "confidence": math.nan}, r"^confidence: must be"),
    ({"audit": AUDIT, "confidence": True}, r"^confidence: must be"),
    ({"audit": AUDIT, "worlds": 0}, r"^worlds: must be an integer in 1\.\.10000"),
    ({"audit": AUDIT, "seed": -1}, r"^seed: must be"),
    ({"fit": {**FIT, "draws": []}}, r"^draws: must be a list of at least 1"),
])
def test_refusals(kwargs, message):
    with pytest.raises(RelsimError, match=message):
        retries_with_confidence(TASK, 0.9, **kwargs)


def test_a_fit_alone_needs_the_scenarios_verifier():
    with pytest.raises(RelsimError, match=r"^verifier: must be a \[verifier\] table"):
        retries_with_confidence(replace(TASK, verifier=None, retries=None), 0.9, fit=FIT)


def test_too_much_engine_work_is_refused_before_it_starts():
    s = relsim.Scenario.from_dict({
        "steps": 3, "p": 0.9, "verifier": {},
        "checkpoints": {"every": 1, "rollbacks": 10},
    })
    with pytest.raises(RelsimError, match=r"^worlds: must be at most \d+ for this scenario"):
        retries_with_confidence(s, 0.9, audit=AUDIT, worlds=10_000)


# ------------------------------------------------------------------------- the command line
@pytest.fixture
def files(tmp_path):
    task = tmp_path / "task.toml"
    task.write_text('name = "harness task"\nsteps = 1\np = 0.7\ntarget = 0.8\n\n[verifier]\n'
                    'miss = 0.1\n\n[retries]\nper_step = 1\n', encoding="utf-8")
    audit = tmp_path / "audit.json"
    audit.write_text(json.dumps(AUDIT), encoding="utf-8")
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps(FIT), encoding="utf-8")
    modes = tmp_path / "modes.toml"
    modes.write_text('steps = 1\np = 0.7\n[verifier]\n[[failure_modes]]\nname = "a"\nshare = 1.0\n'
                     'miss = 0.1\n', encoding="utf-8")
    return {"task": str(task), "audit": str(audit), "fit": str(fit), "modes": str(modes),
            "folder": tmp_path}


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("at, words, miss, false_reject", [
    (None, "at the upper 95% bound", "0.268", "0.1393"),
    ("estimate", "at the estimate", "0.125", "0.05"),
    ("lower", "at the lower 95% bound", "0.04187", "0.01044"),
])
def test_solve_says_where_its_verifier_comes_from(capsys, files, at, words, miss, false_reject):
    argv = ["solve", files["task"], "--for", "retries", "--verifier-from", files["audit"]]
    argv += [] if at is None else ["--at", at]
    code, out, _ = run(capsys, argv)
    lines = out.splitlines()
    assert code == EXIT_OK
    assert lines[1] == f"verifier from {files['audit']} {words}: miss {miss}, false_reject {false_reject}"
    code, out, _ = run(capsys, [*argv, "--json"])
    result = json.loads(out)
    expected = evidence.verifier_at(AUDIT, at or "upper")
    assert result["verifier_from"] == {"file": files["audit"], "at": at or "upper",
                                       "miss": expected[0], "false_reject": expected[1]}
    planned = planner.retries(evidence.with_audit(TASK, AUDIT, at or "upper"), 0.8)
    assert result["value"] == planned.value and result["success"] == planned.success


def test_solve_takes_the_difficulty_of_a_fit(capsys, files):
    code, out, _ = run(capsys, ["solve", files["task"], "--for", "retries", "--difficulty-from",
                                files["fit"], "--json"])
    result = json.loads(out)
    assert code == EXIT_OK
    assert result["difficulty_from"]["classes"] == 18 and result["difficulty_from"]["never"] == 0.05
    assert result["value"] == planner.retries(evidence.with_fit(TASK, FIT), 0.8).value


def test_solve_with_confidence(capsys, files):
    argv = ["solve", files["task"], "--for", "retries", "--confidence", "0.6", "--verifier-from",
            files["audit"], "--difficulty-from", files["fit"], "--worlds", "60", "--seed", "2"]
    code, out, _ = run(capsys, argv)
    plan = retries_with_confidence(TASK, 0.8, audit=AUDIT, fit=FIT, confidence=0.6, worlds=60, seed=2)
    assert plan.feasible and code == EXIT_OK
    point = plan.details["point_estimate"]
    retries = "1 retry" if point["value"] == 1 else f"{point['value']} retries"
    assert out.splitlines()[-1] == (
        f"the plan at the point estimate, {retries}, meets 0.8 in "
        f"{100 * point['met']:.3g}% of plausible worlds")
    assert f"retries per step                   {plan.value}" in out
    code, out, _ = run(capsys, [*argv, "--json"])
    result = json.loads(out)
    assert result["value"] == plan.value and result["details"] == plan.to_dict()["details"]
    assert result["verifier_from"]["at"] == "sampled" and result["difficulty_from"]["draws"] == 4


def test_solve_with_confidence_out_of_reach_exits_3(capsys, files):
    code, out, _ = run(capsys, ["solve", files["task"], "--for", "retries", "--target", "0.92",
                                "--confidence", "0.9", "--verifier-from", files["audit"],
                                "--difficulty-from", files["fit"], "--worlds", "40"])
    assert code == EXIT_INFEASIBLE
    assert "INFEASIBLE: no budget meets the target in 90% of the worlds" in out


@pytest.mark.parametrize("extra, message", [
    (["--at", "upper"], "--at: is where on an audit's intervals"),
    (["--confidence", "0.9"], "--confidence: must come with --verifier-from"),
    (["--confidence", "0.9", "--verifier-from", "{audit}", "--at", "upper"], "--at: must be left out"),
    (["--worlds", "10"], "--worlds: is how many plausible worlds"),
    (["--seed", "1"], "--seed: not allowed with a SCENARIO file"),
    (["--verifier-from", "{folder}/missing.json"], "missing.json: cannot read"),
    (["--verifier-from", "{fit}"], "fit.json: audit: must be a grader audit (the JSON of 'relsim audit --json') with keys miss and false_reject"),
    (["--difficulty-from", "{audit}"], "audit.json: fit: must be a task-difficulty fit (the JSON of 'relsim fit --json') with keys always, never and beta"),
])
def test_solve_refusals_are_one_line(capsys, files, extra, message):
    argv = ["solve", files["task"], "--for", "retries", *[x.format(**files) for x in extra]]
    code, out, err = run(capsys, argv)
    assert code == EXIT_USAGE and out == ""
    assert err.count("\n") == 1 and err.startswith("relsim: error: ") and message in err, err


def test_solve_refusals_of_the_wrong_plan(capsys, files):
    for argv, message in (
        (["solve", files["task"], "--for", "total", "--confidence", "0.9", "--verifier-from",
          files["audit"]], "--confidence: plans --for retries only, got --for total"),
        (["solve", files["modes"], "--for", "retries", "--target", "0.9", "--verifier-from",
          files["audit"]], "failure_modes: must be left out"),
        (["solve", "--steps", "3", "--target", "0.9", "--verifier-from", files["audit"]],
         "--verifier-from: plans a scenario file"),
    ):
        code, out, err = run(capsys, argv)
        assert code == EXIT_USAGE and err.count("\n") == 1 and message in err, err
    for confidence in ("1", "0", "1.5", "nan"):  # the parser's own one line
        with pytest.raises(SystemExit) as caught:
            main(["solve", files["task"], "--for", "retries", "--confidence", confidence,
                  "--verifier-from", files["audit"]])
        err = capsys.readouterr().err
        assert caught.value.code == EXIT_USAGE and err.count("\n") == 1
        assert "argument --confidence: must be a number in (0, 1)" in err


def test_levers_and_report_take_the_audit(capsys, files):
    code, out, _ = run(capsys, ["levers", files["task"], "--verifier-from", files["audit"],
                                "--at", "estimate"])
    assert code == EXIT_OK
    assert out.splitlines()[1] == f"verifier from {files['audit']} at the estimate: miss 0.125, false_reject 0.05"
    code, out, _ = run(capsys, ["levers", files["task"], "--verifier-from", files["audit"], "--json"])
    result = json.loads(out)
    audited = evidence.with_audit(TASK, AUDIT)
    assert result["verifier_from"]["miss"] == 0.268011
    assert result["baseline"]["success"] == pytest.approx(relsim.evaluate(audited).success, abs=1e-12)
    page = files["folder"] / "report.html"
    code, out, _ = run(capsys, ["report", files["task"], "-o", str(page), "--trials", "0",
                                "--verifier-from", files["audit"]])
    assert code in (EXIT_OK, EXIT_INFEASIBLE)
    assert out.splitlines()[0] == f"verifier from {files['audit']} at the upper 95% bound: miss 0.268, false_reject 0.1393"
    html = page.read_text(encoding="utf-8")
    assert "--verifier-from" in html and "0.268011" in html
    code, _, err = run(capsys, ["report", files["modes"], "-o", str(page), "--verifier-from",
                                files["audit"]])
    assert code == EXIT_USAGE and "failure_modes: must be left out" in err
