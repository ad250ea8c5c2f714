"""relsim.simulate with the tables of docs/model.md section 8 (``_kernel_v2.run_v2``).

The exact values come from outside the kernel: closed forms derived here for one step (a
vote is a binomial sum over the samples, with the wrong votes spread over the wrong answers by
enumeration; best-of-n through a verifier is a geometric sum; a ladder, faults and failure
modes compose per attempt; classes are a mixture over whole trials) and the exact engine
where it runs the model (classes with checkpoints, confusion and random effects). Every check
holds Monte Carlo within 5 standard errors computed from the run itself, with fixed seeds;
each family has a negative control that the same check must reject.
"""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest

import relsim
from relsim import Scenario, simulate
from relsim.montecarlo import _driver, _inputs
from relsim.scenario import trial_model

SHARES = ("success", "silent_failure", "detected_failure", "infra_failure")
MEANS = ("expected_attempts", "expected_cost")
TRIALS = 200_000


# ------------------------------------------------------------------ exact values, by hand
def vote_accuracy(p: float, n: int, wrong_answers: int) -> float:
    """P(the plurality of n samples is the right answer): k right samples out of n, the
    n - k wrong ones spread uniformly over the wrong answers (every assignment enumerated;
    0 wrong answers: each wrong sample its own), ties broken uniformly at random."""
    total = 0.0
    for k in range(n + 1):
        w = n - k
        if wrong_answers == 0:
            spreads = [[1] * w]
        else:
            spreads = [np.bincount(a, minlength=wrong_answers).tolist()
                       for a in itertools.product(range(wrong_answers), repeat=w)]
        win = 0.0
        for spread in spreads:
            top = max(spread, default=0)
            if k > top:
                win += 1.0
            elif k == top:
                win += 1.0 / (1 + spread.count(top))
        total += math.comb(n, k) * p**k * (1 - p) ** w * win / len(spreads)
    return total


def attempt(p, n=1, vote=True, wrong_answers=1, false_reject=0.0, modes=((1.0, 1.0),)):
    """One attempt that does not fault: P(accepted right), P(accepted wrong) by mode and
    P(rejected). ``modes``: (share, miss) pairs (one mode of share 1: the plain verifier)."""
    share = np.array([s for s, _ in modes])
    miss = np.array([m for _, m in modes])
    mixture = float(share @ miss)
    if vote and n > 1:  # the winner meets the verifier once
        right = vote_accuracy(p, n, wrong_answers)
        return right * (1 - false_reject), (1 - right) * share * miss, (
            right * false_reject + (1 - right) * (1 - mixture))
    one = p * false_reject + (1 - p) * (1 - mixture)  # a sample rejected
    tries = n if one == 1 else (1 - one**n) / (1 - one)  # samples until one is accepted
    return p * (1 - false_reject) * tries, (1 - p) * share * miss * tries, one**n


def execution(p_rungs, retries, after=(), fault=0.0, cost=(1.0,), verify=0.0, n=1, vote=True,
              **kw):
    """One execution of a step with a ladder (rung k from attempt after[k-1] on) and faults:
    success, wrong accepted by mode, detected, infra, expected attempts and cost."""
    reach = 1.0
    out = {"success": 0.0, "wrong": 0.0, "detected": 0.0, "infra": 0.0, "attempts": 0.0,
           "cost": 0.0}
    for j in range(retries + 1):
        rung = sum(1 for a in after if a <= j)
        right, wrong, rejected = attempt(p_rungs[rung], n=n, vote=vote, **kw)
        out["attempts"] += reach
        checks = 1 if (vote and n > 1) else n
        out["cost"] += reach * (cost[rung] * n + (1 - fault) * verify * checks)
        out["success"] += reach * (1 - fault) * right
        out["wrong"] = out["wrong"] + reach * (1 - fault) * wrong
        if j == retries:
            out["infra"] = reach * fault
            out["detected"] = reach * (1 - fault) * rejected
        reach *= fault + (1 - fault) * rejected
    return out


def chain(executions, mode_names=()):
    """A chain of step executions without checkpoints: the outcome shares, silent failures
    under the mode of the first accepted wrong result, attempts and cost."""
    shares = dict.fromkeys(SHARES, 0.0)
    by_mode = np.zeros(max(1, len(mode_names)))
    attempts = cost = 0.0
    clean = reached = 1.0  # all right so far / still running
    for e in executions:
        wrong = np.atleast_1d(e["wrong"])
        attempts += reached * e["attempts"]
        cost += reached * e["cost"]
        shares["detected_failure"] += reached * e["detected"]
        shares["infra_failure"] += reached * e["infra"]
        after_step = e["success"] + wrong.sum()
        by_mode = by_mode * after_step + clean * wrong
        clean *= e["success"]
        reached *= after_step
    shares["success"] = clean
    shares["silent_failure"] = reached - clean
    out = {**shares, "expected_attempts": attempts, "expected_cost": cost}
    if mode_names:
        out["silent_by_mode"] = dict(zip(mode_names, by_mode))
    return out


def mixture(weights, parts):
    """Classes: each trial draws one, so every expectation is the weighted mean."""
    weights = np.asarray(weights) / np.sum(weights)
    out = {}
    for key, value in parts[0].items():
        if isinstance(value, dict):
            out[key] = {m: sum(w * part[key][m] for w, part in zip(weights, parts)) for m in value}
        else:
            out[key] = sum(w * part[key] for w, part in zip(weights, parts))
    return out


def with_utility(exact, success=1.0, silent_failure=0.0, detected_failure=0.0,
                 infra_failure=0.0, cost_weight=0.0):
    values = {"success": success, "silent_failure": silent_failure,
              "detected_failure": detected_failure, "infra_failure": infra_failure}
    utility = sum(exact[k] * v for k, v in values.items()) - cost_weight * exact["expected_cost"]
    return {**exact, "expected_utility": utility}


# ------------------------------------------------------------------ the comparison
def z_scores(out, exact) -> dict[str, float]:
    """(Monte Carlo - exact) / the run's standard error, for every key ``exact`` gives."""
    scores = {}
    for key, value in exact.items():
        if key == "silent_by_mode":
            for name, share in value.items():
                got = out.silent_by_mode[name]
                se = out.standard_errors[f"silent_by_mode_{name}"]
                scores[f"silent_by_mode_{name}"] = _z(got, share, se)
        else:
            scores[key] = _z(getattr(out, key), value, out.standard_errors[key])
    return scores


def _z(got, want, se):
    if se == 0:
        return 0.0 if abs(got - want) < 1e-12 else math.inf
    return (got - want) / se


def assert_agrees(out, exact):
    scores = z_scores(out, exact)
    assert max(abs(z) for z in scores.values()) < 5, scores


def assert_told_apart(out, wrong):
    scores = z_scores(out, wrong)
    assert max(abs(z) for z in scores.values()) > 5, scores


# ------------------------------------------------------------------ one table at a time
ONE_STEP = {"steps": 1, "p": 0.6}


@pytest.mark.parametrize("n, wrong_answers", [(5, 1), (4, 1), (3, 2), (4, "distinct")])
def test_a_vote(n, wrong_answers):
    data = {**ONE_STEP, "sampling": {"n": n, "wrong_answers": wrong_answers},
            "cost": {"attempt": 0.5}}
    m = 0 if wrong_answers == "distinct" else wrong_answers
    exact = chain([execution([0.6], 0, cost=(0.5,), n=n, wrong_answers=m)])
    if n == 5:  # section 8: a binary vote of odd n is P(Binomial(n, p) >= (n + 1) / 2)
        binomial = sum(math.comb(5, k) * 0.6**k * 0.4 ** (5 - k) for k in (3, 4, 5))
        assert exact["success"] == pytest.approx(binomial, abs=1e-15)
    if wrong_answers == "distinct":  # k >= 2 right wins; one right ties the n - 1 wrong
        assert exact["success"] == pytest.approx(1 - 0.4**4 - 3 * 0.6 * 0.4**3, abs=1e-15)
    out = simulate(data, TRIALS, seed=1)
    assert_agrees(out, exact)
    if n == 5:  # negative control: a vote of 3 is told apart
        assert_told_apart(out, {"success": chain([execution([0.6], 0, n=3)])["success"]})


def test_a_vote_checked_by_a_verifier_with_retries():
    data = {**ONE_STEP, "verifier": {"miss": 0.3, "false_reject": 0.1}, "retries": {"per_step": 2},
            "sampling": {"n": 3, "wrong_answers": 1}, "cost": {"attempt": 1.0, "verify": 0.25}}
    exact = chain([execution([0.6], 2, n=3, verify=0.25, false_reject=0.1, modes=((1.0, 0.3),))])
    assert_agrees(simulate(data, TRIALS, seed=2), exact)


def test_best_of_n_through_a_verifier():
    # a = p(1 - f), r = p f + (1 - p)(1 - m): success a (1 - r^n) / (1 - r), detected r^n
    data = {**ONE_STEP, "verifier": {"miss": 0.2, "false_reject": 0.1},
            "sampling": {"n": 4, "select": "verifier"}, "cost": {"attempt": 1.0, "verify": 0.5}}
    a, r = 0.6 * 0.9, 0.6 * 0.1 + 0.4 * 0.8
    exact = chain([execution([0.6], 0, n=4, vote=False, verify=0.5, false_reject=0.1,
                             modes=((1.0, 0.2),))])
    assert exact["success"] == pytest.approx(a * (1 - r**4) / (1 - r), abs=1e-15)
    assert exact["detected_failure"] == pytest.approx(r**4, abs=1e-15)
    assert exact["expected_cost"] == pytest.approx(4 * 1.0 + 4 * 0.5)  # every sample checked
    out = simulate(data, TRIALS, seed=3)
    assert_agrees(out, exact)
    assert_told_apart(out, {**exact, "success": a * (1 - r**3) / (1 - r)})  # best of 3


def test_classes_are_drawn_once_per_trial():
    # two steps: per trial, not per step (the mixture of products, not the product of mixtures)
    data = {"steps": 2, "classes": [{"weight": 0.6, "p": 0.9}, {"weight": 0.4, "p": [0.2, 0.5]}],
            "verifier": {"miss": 0.25}, "retries": {"per_step": 1}}
    parts = [chain([execution([p], 1, modes=((1.0, 0.25),)) for p in ps])
             for ps in ((0.9, 0.9), (0.2, 0.5))]
    exact = mixture([0.6, 0.4], parts)
    out = simulate(data, TRIALS, seed=4)
    assert_agrees(out, exact)
    # negative control: a class drawn afresh at each step
    per_step = chain([mixture([0.6, 0.4], [execution([0.9], 1, modes=((1.0, 0.25),)),
                                           execution([p], 1, modes=((1.0, 0.25),))])
                      for p in (0.2, 0.5)])
    assert_told_apart(out, per_step)


def test_an_escalation_ladder():
    data = {**ONE_STEP, "verifier": {"miss": 0.1, "false_reject": 0.05},
            "retries": {"per_step": 3},
            "escalation": {"after": [1, 3], "p": [0.8, [0.95]], "attempt_cost": [2.0, 5.0]}}
    exact = chain([execution([0.6, 0.8, 0.95], 3, after=(1, 3), cost=(1.0, 2.0, 5.0),
                             false_reject=0.05, modes=((1.0, 0.1),))])
    out = simulate(data, TRIALS, seed=5)
    assert_agrees(out, exact)
    assert_told_apart(out, chain([execution([0.6, 0.8, 0.95], 3, after=(2, 3),
                                            cost=(1.0, 2.0, 5.0), false_reject=0.05,
                                            modes=((1.0, 0.1),))]))


def test_faults_end_a_trial_as_an_infra_failure():
    # budget b = 2 retries, fault f: infra f q'^b with q' = f + (1 - f) q
    data = {**ONE_STEP, "verifier": {"miss": 0.2}, "retries": {"per_step": 2},
            "faults": {"attempt": 0.3}, "cost": {"attempt": 1.0, "verify": 0.5}}
    exact = chain([execution([0.6], 2, fault=0.3, verify=0.5, modes=((1.0, 0.2),))])
    q = 0.3 + 0.7 * 0.4 * 0.8
    assert exact["infra_failure"] == pytest.approx(0.3 * q**2, abs=1e-15)
    out = simulate(data, TRIALS, seed=6)
    assert out.infra_failure > 0 and out.standard_errors["infra_failure"] > 0
    low, high = out.intervals["infra_failure"]
    assert low < out.infra_failure < high
    assert_agrees(out, exact)
    # negative control: faults counted as detected failures
    assert_told_apart(out, {**exact, "infra_failure": 0.0,
                            "detected_failure": exact["detected_failure"] + exact["infra_failure"]})


def test_failure_modes_split_the_silent_failures():
    data = {"steps": 2, "p": [0.7, 0.5], "verifier": {"false_reject": 0.1},
            "retries": {"per_step": 1},
            "failure_modes": [{"name": "tool", "share": 0.3, "miss": 0.05},
                              {"name": "made_up", "share": 0.7, "miss": 0.6}]}
    modes = ((0.3, 0.05), (0.7, 0.6))
    exact = chain([execution([p], 1, false_reject=0.1, modes=modes) for p in (0.7, 0.5)],
                  ("tool", "made_up"))
    out = simulate(data, TRIALS, seed=7)
    assert sum(out.silent_by_mode.values()) == pytest.approx(out.silent_failure, abs=1e-12)
    assert_agrees(out, exact)
    swapped = {**exact, "silent_by_mode": dict(zip(("tool", "made_up"),
                                                   list(exact["silent_by_mode"].values())[::-1]))}
    assert_told_apart(out, swapped)


def test_a_checkpoint_detects_with_the_detect_of_the_first_wrong_results_mode():
    # one step, a final checkpoint and one rollback: caught with d_m, redone once
    modes = ((0.5, 0.4), (0.5, 0.8))
    detect = np.array([0.9, 0.2])
    data = {**ONE_STEP, "verifier": {}, "retries": {"per_step": 1},
            "checkpoints": {"final": True, "rollbacks": 1},
            "failure_modes": [{"name": "loud", "share": 0.5, "miss": 0.4, "detect": 0.9},
                              {"name": "quiet", "share": 0.5, "miss": 0.8, "detect": 0.2}]}
    e = execution([0.6], 1, modes=modes)
    a, w, q = e["success"], e["wrong"], e["detected"]
    caught = float(w @ detect)
    exact = {
        "success": a + caught * a,
        "silent_failure": float(w @ (1 - detect)) * (1 + caught),
        "detected_failure": q + caught * (q + caught),
        "silent_by_mode": dict(zip(("loud", "quiet"), w * (1 - detect) * (1 + caught))),
        "expected_attempts": e["attempts"] * (1 + caught),
    }
    out = simulate(data, TRIALS, seed=8)
    assert_agrees(out, exact)
    # negative control: the checkpoint's default detect (1) for every mode
    assert_told_apart(out, {**exact, "success": a + float(w.sum()) * a})


def test_a_silent_failure_counts_under_the_first_wrong_result_baked_in():
    # two steps, a checkpoint after the first, no rollback: step 1's wrong result, once past
    # its checkpoint, is the one that ships even when step 2 adds a wrong one of another mode
    modes = ((0.5, 0.5), (0.5, 0.5))
    detect = np.array([0.1, 0.6])
    data = {"steps": 2, "p": 0.5, "verifier": {}, "checkpoints": {"at": [1], "rollbacks": 0},
            "failure_modes": [{"name": "a", "share": 0.5, "miss": 0.5, "detect": 0.1},
                              {"name": "b", "share": 0.5, "miss": 0.5, "detect": 0.6}]}
    e = execution([0.5], 0, modes=modes)
    a, w = e["success"], e["wrong"]
    passed = w * (1 - detect)  # a wrong result of each mode that the checkpoint lets by
    by_mode = passed * (a + w.sum()) + a * w  # step 2 is not checked: every wrong one ships
    exact = {"success": a * a, "silent_by_mode": dict(zip("ab", by_mode))}
    out = simulate(data, TRIALS, seed=9)
    assert_agrees(out, exact)
    # negative control: counted under the last wrong result instead
    last = passed * a + passed.sum() * w + a * w
    assert_told_apart(out, {**exact, "silent_by_mode": dict(zip("ab", last))})


def test_utility_alone_on_the_fast_and_the_general_kernel():
    # [utility] changes no trial: the fast and general kernels run it, with the same trials
    # as without it, and tally what its standard error needs
    base = {"steps": 3, "p": 0.8, "verifier": {"miss": 0.3}, "retries": {"per_step": 1},
            "cost": {"attempt": 2.0}}
    utility = {"success": 1.0, "silent_failure": -3.0, "detected_failure": -0.5,
               "cost_weight": 0.05}
    exact = with_utility(chain([execution([0.8], 1, cost=(2.0,), modes=((1.0, 0.3),))] * 3),
                         **utility)
    for general in (False, True):
        data = {**base, "utility": utility}
        if general:  # a step effect puts it on the general kernel
            data["correlation"] = {"step_sd": 0.4}
            base_general = {**base, "correlation": {"step_sd": 0.4}}
            exact = with_utility(_from_outcome(relsim.evaluate(data)), **utility)
        assert not trial_model(Scenario.from_dict(data)).has_design_tables
        out = simulate(data, TRIALS, seed=10)
        plain = simulate(base_general if general else base, TRIALS, seed=10)
        assert out.success == plain.success and out.expected_cost == plain.expected_cost
        assert plain.expected_utility is None and out.expected_utility is not None
        assert_agrees(out, exact)
        assert_told_apart(out, {**exact, "expected_utility": exact["expected_utility"] + 0.03})


def _from_outcome(outcome) -> dict[str, float]:
    return {key: getattr(outcome, key) for key in (*SHARES, *MEANS)}


def test_the_utilitys_standard_error_is_that_of_the_trials():
    # the standard error from counts and cost moments is the spread of per-trial utilities
    data = {"steps": 2, "p": 0.7, "verifier": {"miss": 0.4}, "retries": {"per_step": 2},
            "faults": {"attempt": 0.2}, "cost": {"attempt": 1.0, "verify": 0.3},
            "utility": {"silent_failure": -2.0, "detected_failure": -0.2, "infra_failure": -1.0,
                        "cost_weight": 0.1}}
    trials = 5000
    out = simulate(data, trials, seed=11, record=trials)
    frame = out.trajectories
    value = frame["outcome"].map({"success": 1.0, "silent_failure": -2.0,
                                  "detected_failure": -0.2, "infra_failure": -1.0}).astype(float)
    per_trial = value - 0.1 * frame["cost"]
    assert out.expected_utility == pytest.approx(per_trial.mean(), rel=1e-12)
    assert out.standard_errors["expected_utility"] == pytest.approx(
        per_trial.std(ddof=1) / math.sqrt(trials), rel=1e-9)
    low, high = out.intervals["expected_utility"]
    assert low < out.expected_utility < high
    assert out.to_dict()["expected_utility_se"] == out.standard_errors["expected_utility"]


# ------------------------------------------------------------------ every table at once
ALL_TABLES = {
    "steps": 1,
    "verifier": {"false_reject": 0.1},
    "retries": {"per_step": 2},
    "classes": [{"weight": 0.7, "p": 0.8}, {"weight": 0.3, "p": 0.3, "escalation_p": [0.6]}],
    "escalation": {"after": [1], "p": [0.9], "attempt_cost": [3.0]},
    "failure_modes": [{"name": "tool", "share": 0.4, "miss": 0.05},
                      {"name": "hallucination", "share": 0.6, "miss": 0.5}],
    "faults": {"attempt": 0.1},
    "cost": {"attempt": 1.0, "verify": 0.2},
    "utility": {"silent_failure": -2.0, "detected_failure": -0.5, "infra_failure": -0.1,
                "cost_weight": 0.02},
}
MODES = ((0.4, 0.05), (0.6, 0.5))
NAMES = ("tool", "hallucination")


def all_tables_exact(sampling: dict, **changes) -> dict:
    n = sampling["n"]
    vote = sampling.get("select", "vote") == "vote"
    m = sampling.get("wrong_answers", 1)
    kw = {"after": (1,), "fault": 0.1, "cost": (1.0, 3.0), "verify": 0.2, "n": n, "vote": vote,
          "false_reject": 0.1, "modes": MODES, **changes}
    if vote:
        kw["wrong_answers"] = 0 if m == "distinct" else m
    parts = [chain([execution(rungs, 2, **kw)], NAMES) for rungs in ([0.8, 0.9], [0.3, 0.6])]
    return with_utility(mixture([0.7, 0.3], parts), **{
        k: v for k, v in ALL_TABLES["utility"].items()})


@pytest.mark.parametrize("sampling", [{"n": 3, "wrong_answers": 2},
                                      {"n": 2, "select": "verifier"}])
def test_every_table_at_once(sampling):
    data = {**ALL_TABLES, "sampling": sampling}
    exact = all_tables_exact(sampling)
    out = simulate(data, TRIALS, seed=12)
    assert_agrees(out, exact)
    # negative control: the two modes' misses swapped
    assert_told_apart(out, all_tables_exact(sampling, modes=((0.4, 0.5), (0.6, 0.05))))


def test_classes_with_checkpoints_confusion_and_random_effects_agree_with_the_exact_engine():
    data = {"steps": 4, "classes": [{"weight": 0.6, "p": [0.9, 0.8, 0.85, 0.9]},
                                    {"weight": 0.4, "p": 0.5}],
            "verifier": {"miss": 0.3, "false_reject": 0.1}, "retries": {"per_step": 2, "total": 3},
            "checkpoints": {"every": 2, "detect": 0.7, "false_alarm": 0.1, "rollbacks": 1},
            "correlation": {"task_sd": 0.5, "step_sd": 0.5,
                            "confusion": {"enter": 0.5, "recover": 0.4, "factor": 0.7}},
            "cost": {"attempt": [1.0, 2.0, 1.0, 2.0], "verify": 0.5, "checkpoint": 0.3,
                     "rollback": 0.7},
            "utility": {"silent_failure": -1.0, "cost_weight": 0.01}}
    exact = relsim.evaluate(data)
    want = {**_from_outcome(exact), "expected_utility": exact.expected_utility}
    out = simulate(data, TRIALS, seed=13)
    assert_agrees(out, want)
    other = relsim.evaluate({**data, "checkpoints": {**data["checkpoints"], "detect": 0.6}})
    assert_told_apart(out, _from_outcome(other))


# ------------------------------------------------------------------ several steps: brute force
# Three steps with every table and section 3's checkpoints, rollbacks, task-wide budget and
# confusion: tests/section8_brute.py enumerates every draw of the pseudo-code (no relsim code).
MULTI_STEP = {
    "steps": 3,
    "verifier": {"false_reject": 0.1},
    "retries": {"per_step": 2, "total": 3},
    "checkpoints": {"every": 2, "final": True, "false_alarm": 0.1, "rollbacks": 1},
    "correlation": {"confusion": {"enter": 0.5, "recover": 0.4, "factor": 0.7}},
    "classes": [{"weight": 0.7, "p": [0.9, 0.8, 0.85]}, {"weight": 0.3, "p": 0.5}],
    "escalation": {"after": [1], "p": [0.95], "attempt_cost": [3.0]},
    "failure_modes": [{"name": "tool", "share": 0.4, "miss": 0.2, "detect": 0.8},
                      {"name": "hallucination", "share": 0.6, "miss": 0.5, "detect": 0.4}],
    "faults": {"attempt": 0.05},
    "cost": {"attempt": [1.0, 2.0, 1.0], "verify": 0.5, "checkpoint": 0.3, "rollback": 0.7},
    "utility": {"silent_failure": -2.0, "detected_failure": -0.5, "infra_failure": -0.1,
                "cost_weight": 0.01},
}


def brute(data: dict) -> dict:
    from section8_brute import brute_force

    return brute_force(copy.deepcopy(data))


@pytest.mark.parametrize("sampling", [{"n": 3, "wrong_answers": 2},
                                      {"n": 2, "select": "verifier"},
                                      {"n": 4, "wrong_answers": "distinct"}])
def test_several_steps_with_every_table_agree_with_the_brute_force(sampling):
    data = {**MULTI_STEP, "sampling": sampling}
    out = simulate(data, TRIALS, seed=18)
    assert_agrees(out, brute(data))
    # negative control: the two modes' detect swapped
    swapped = copy.deepcopy(data)
    for mode, detect in zip(swapped["failure_modes"], (0.4, 0.8)):
        mode["detect"] = detect
    assert_told_apart(out, brute(swapped))


def test_every_table_with_random_effects_agrees_with_the_exact_engine():
    from test_trial_model import V2  # section 3's every feature with section 8's every table

    exact = relsim.evaluate(V2)
    want = {**_from_outcome(exact), "silent_by_mode": dict(exact.silent_by_mode),
            "expected_utility": exact.expected_utility}
    out = simulate(V2, TRIALS, seed=19)
    assert_agrees(out, want)
    other = relsim.evaluate({**V2, "faults": {"attempt": 0.07}})
    assert_told_apart(out, _from_outcome(other))


# ------------------------------------------------------------------ the kernel's own laws
@pytest.mark.parametrize("case", ["R2", "R7"])
def test_on_a_section_3_scenario_it_agrees_with_the_general_kernel(case, monkeypatch):
    import test_reference_values
    import json

    text, *values = test_reference_values.REFERENCE[case]
    data = json.loads(text)
    exact = dict(zip(("success", "silent_failure", "detected_failure", *MEANS), values))
    monkeypatch.setattr(_driver, "_FORCE_V2", True)
    assert _inputs.kernel_input(trial_model(Scenario.from_dict(data)), force_v2=True).tables
    out = simulate(data, TRIALS, seed=14)
    assert_agrees(out, exact)
    assert out.infra_failure == 0.0 and out.silent_by_mode is None


def test_same_seed_same_result_whatever_threads_chunks_and_slices(monkeypatch):
    data = {**ALL_TABLES, "steps": 3, "sampling": {"n": 3, "wrong_answers": "distinct"},
            "checkpoints": {"every": 1, "rollbacks": 1},
            "correlation": {"step_sd": 0.3,
                            "confusion": {"enter": 0.3, "recover": 0.5, "factor": 0.6}}}
    trials = 3 * _driver.BLOCK_TRIALS + 123
    one = simulate(data, trials, seed=15, threads=1, record=300)
    two = simulate(data, trials, seed=15, threads=2, chunk_size=1, record=300)
    assert one == two  # every field, floats bit for bit
    assert one.to_dict() == two.to_dict() and one.trajectories.equals(two.trajectories)
    # a block cut by the end of a kernel call's slice of work resumes its own stream
    monkeypatch.setattr(_driver, "GENERAL_SLICE", 61)
    sliced = simulate(data, trials, seed=15, threads=2, record=300)
    assert sliced == one and sliced.trajectories.equals(one.trajectories)


def test_limits_reduce_to_the_model_without_the_tables():
    # n = 1, one class, faults 0 and modes alike: the same distribution as section 3
    plain = {"steps": 3, "p": 0.8, "verifier": {"miss": 0.2, "false_reject": 0.1},
             "retries": {"per_step": 1}, "checkpoints": {"final": True, "detect": 0.5}}
    limits = {**{k: v for k, v in plain.items() if k != "p"},
              "classes": [{"weight": 1.0, "p": 0.8}], "sampling": {"n": 1},
              "faults": {"attempt": 0.0},
              "verifier": {"false_reject": 0.1},
              "failure_modes": [{"name": "x", "share": 0.5, "miss": 0.2},
                                {"name": "y", "share": 0.5, "miss": 0.2}],
              "escalation": {"after": [1], "p": [0.8]}}
    assert trial_model(Scenario.from_dict(limits)).has_design_tables
    exact = _from_outcome(relsim.evaluate(plain))
    out = simulate(limits, TRIALS, seed=16)
    assert_agrees(out, exact)
    assert_told_apart(out, _from_outcome(relsim.evaluate({**plain, "p": 0.79})))


def test_recorded_trials_carry_the_class_the_mode_and_infra_failures():
    data = {**ALL_TABLES, "sampling": {"n": 2, "select": "verifier"}, "faults": {"attempt": 0.4}}
    out = simulate(data, 50_000, seed=17, record=2000)
    frame = out.trajectories
    assert list(frame.columns[-2:]) == ["task_class", "failure_mode"]
    assert set(frame["task_class"]) == {0, 1}
    assert (frame["outcome"] == "infra_failure").any()
    silent = frame["outcome"] == "silent_failure"
    assert frame["failure_mode"][silent].notna().all() and frame["failure_mode"][~silent].isna().all()
    assert set(frame["failure_mode"][silent]) <= {0, 1}
    # the rows are the first trials of the counted stream
    again = simulate(data, 2000, seed=17, record=2000)
    assert (again.trajectories["outcome"] == frame["outcome"]).all()
    assert again.infra_failure == (frame["outcome"] == "infra_failure").mean()
    # without section 8's tables the columns are those of section 3
    plain = simulate({"steps": 2, "p": 0.9}, 10, seed=1, record=10).trajectories
    assert "task_class" not in plain.columns and "failure_mode" not in plain.columns


def test_the_work_estimate_counts_the_samples():
    from relsim.montecarlo import work_estimate

    one = work_estimate({**ONE_STEP, "sampling": {"n": 1}, "faults": {"attempt": 0.01}}, 10**6)
    many = work_estimate({**ONE_STEP, "sampling": {"n": 64}, "faults": {"attempt": 0.01}}, 10**6)
    assert many.seconds > 10 * one.seconds
    # a ladder whose top rung never succeeds runs every attempt of the budget
    hard = {"steps": 1, "p": 0.0, "verifier": {}, "retries": {"per_step": 50},
            "escalation": {"after": [1], "p": [0.0]}}
    assert "about 51 attempts" in work_estimate(hard, 1).detail
