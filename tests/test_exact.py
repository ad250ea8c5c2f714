"""relsim.evaluate against references that share none of its code.

- ``enumerate_paths``: a plain recursive interpreter of docs/model.md section 3's pseudo-code that
  follows every branch of every draw with its probability (tiny scenarios, no random effects);
- ``backward``: a memoised backward recursion over the same pseudo-code, one attempt at a
  time, with the random effects integrated by Gauss-Hermite rules of fixed size (the engine
  runs forward, over whole step executions, with adaptive Gauss-Kronrod and trapezoid rules);
- the closed forms of ``relsim.formulas`` on the cases they cover, and one-dimensional
  integrals done by ``scipy.integrate.quad``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from relsim.scenario import trial_model
from relsim import formulas
from relsim._quadrature import GK_NODES, GK_WEIGHTS, G_WEIGHTS
from relsim.exact import _evaluate, evaluate
from relsim.results import Outcome
from relsim.scenario import Scenario

KEYS = ("success", "silent_failure", "detected_failure", "expected_attempts", "expected_cost")


def _vector(outcome: Outcome) -> np.ndarray:
    return np.array([getattr(outcome, key) for key in KEYS])


def _close(got: Outcome, want: dict, tol: float) -> None:
    for key in KEYS:
        scale = max(1.0, abs(want[key]))
        assert abs(getattr(got, key) - want[key]) <= tol * scale, (key, getattr(got, key), want[key])


def _setup(s: Scenario):
    """The scenario as plain Python values, shared by the two references."""
    ck = s.checkpoints
    conf = s.correlation.confusion
    return dict(
        n=s.steps,
        p=trial_model(s).p.tolist(),
        miss=trial_model(s).miss.tolist(),
        false_reject=trial_model(s).false_reject.tolist(),
        per_step=trial_model(s).per_step.tolist(),
        total=math.inf if not trial_model(s).has_total else s.retries.total,
        unit=(trial_model(s).cost_per_attempt).tolist(),
        positions=set(trial_model(s).checkpoint_positions),
        detect=ck.detect if ck else 1.0,
        false_alarm=ck.false_alarm if ck else 0.0,
        rollbacks=ck.rollbacks if ck else 0,
        checkpoint_cost=s.cost.checkpoint,
        rollback_cost=s.cost.rollback,
        confusion=(conf.enter, conf.recover, conf.factor) if conf else None,
        verified=s.verifier is not None,
    )


def attempt_branches(c: dict, i: int, pe, confused: bool):
    """Section 3's one attempt at step ``i + 1``, as branches shared by both references.

    Yields ``(correct, accepted, confused after, probability)``: the correctness draw, then the
    confusion move it causes, then the verifier's verdict. ``pe`` may be an array (over random
    effect nodes); the probabilities then are arrays too.
    """
    for correct, p_correct in ((True, pe), (False, 1.0 - pe)):
        moves = [(confused, 1.0)]
        if c["confusion"] is not None:
            enter, recover, _ = c["confusion"]
            if not correct and not confused:
                moves = [(True, enter), (False, 1.0 - enter)]
            elif correct and confused:
                moves = [(False, recover), (True, 1.0 - recover)]
        if not c["verified"]:
            p_accept = 1.0
        else:
            p_accept = 1.0 - c["false_reject"][i] if correct else c["miss"][i]
        for state, p_move in moves:
            for accepted, p_verdict in ((True, p_accept), (False, 1.0 - p_accept)):
                yield correct, accepted, state, p_correct * p_move * p_verdict


# ----------------------------------------------------------------- reference 1: every path
def enumerate_paths(s: Scenario, misread: str | None = None) -> dict:
    """Follow every branch of section 3's pseudo-code (no random effects).

    ``misread`` plants a plausible wrong reading, for negative controls: ``"refund"`` (a
    rollback gives the retries back) or ``"stay_confused"`` (a rollback keeps the confusion).
    """
    assert not trial_model(s).has_random_effects
    c = _setup(s)
    totals = {"success": [0.0, 0.0, 0.0], "silent_failure": [0.0, 0.0, 0.0],
              "detected_failure": [0.0, 0.0, 0.0]}

    def end(kind, prob, attempts, cost):
        row = totals[kind]
        row[0] += prob
        row[1] += prob * attempts
        row[2] += prob * cost

    def loop(i, seg_start, tainted, doomed, retries_used, rollbacks_used, confused, prob,
             attempts, cost):
        if i == c["n"]:
            end("silent_failure" if (tainted or doomed) else "success", prob, attempts, cost)
            return
        attempt(i, 0, seg_start, tainted, doomed, retries_used, rollbacks_used, confused,
                prob, attempts, cost)

    def attempt(i, j, seg_start, tainted, doomed, retries_used, rollbacks_used, confused,
                prob, attempts, cost):
        pe = c["p"][i] * (c["confusion"][2] if confused else 1.0)
        cost += c["unit"][i]
        attempts += 1
        for correct, accepted, state, p_branch in attempt_branches(c, i, pe, confused):
            q = prob * p_branch
            if q == 0.0:
                continue
            if accepted:
                after(i + 1, seg_start, tainted or not correct, doomed, retries_used,
                      rollbacks_used, state, q, attempts, cost)
            elif j < c["per_step"][i] and retries_used < c["total"]:
                attempt(i, j + 1, seg_start, tainted, doomed, retries_used + 1,
                        rollbacks_used, state, q, attempts, cost)
            else:
                end("detected_failure", q, attempts, cost)

    def after(i, seg_start, tainted, doomed, retries_used, rollbacks_used, confused, prob,
              attempts, cost):
        if i not in c["positions"]:
            loop(i, seg_start, tainted, doomed, retries_used, rollbacks_used, confused, prob,
                 attempts, cost)
            return
        cost += c["checkpoint_cost"]
        caught = c["detect"] if tainted else c["false_alarm"]
        if caught > 0.0:
            if rollbacks_used == c["rollbacks"]:
                end("detected_failure", prob * caught, attempts, cost)
            else:
                loop(seg_start, seg_start, False, doomed,
                     0 if misread == "refund" else retries_used, rollbacks_used + 1,
                     confused if misread == "stay_confused" else False,
                     prob * caught, attempts, cost + c["rollback_cost"])
        if caught < 1.0:
            loop(i, i, False, doomed or tainted, retries_used, rollbacks_used, confused,
                 prob * (1.0 - caught), attempts, cost)

    loop(0, 0, False, False, 0, 0, False, 1.0, 0, 0.0)
    out = {key: row[0] for key, row in totals.items()}
    out["expected_attempts"] = sum(row[1] for row in totals.values())
    out["expected_cost"] = sum(row[2] for row in totals.values())
    return out


# ---------------------------------------------------------- reference 2: backward recursion
def backward(s: Scenario, nodes: int = 60) -> dict:
    """Memoised backward recursion, attempt by attempt; random effects by Gauss-Hermite.

    Values are numpy arrays over the task-effect nodes; inside a step execution the
    probabilities are arrays over (task node, step node), averaged over the step node when the
    execution ends.
    """
    c = _setup(s)
    corr = s.correlation
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    z, z_weight = (x, w) if corr.task_sd > 0 else (np.zeros(1), np.ones(1))
    u, u_weight = (x, w) if corr.step_sd > 0 else (np.zeros(1), np.ones(1))
    shift = corr.task_sd * z[:, None] + corr.step_sd * u[None, :]

    def p_shifted(i):
        p = c["p"][i]
        if p in (0.0, 1.0):
            return np.full(shift.shape, p)
        return 1.0 / (1.0 + np.exp(-(math.log(p / (1.0 - p)) + shift)))

    p_table = [p_shifted(i) for i in range(c["n"])]
    zero = np.zeros(5)[:, None] * np.zeros(z.size)
    unit = np.eye(5)

    @lru_cache(maxsize=None)
    def execution(i, confused, budget):
        """Outcomes of one execution: {(retries spent, result, exit state): probability
        array over (z, u)}; result is 'correct', 'wrong' or 'exhausted'."""
        outcomes = {}

        def step(j, state, prob):
            pe = p_table[i] * (c["confusion"][2] if state else 1.0)
            for correct, accepted, new_state, p_branch in attempt_branches(c, i, pe, state):
                q = prob * p_branch
                if accepted:
                    key = (j, "correct" if correct else "wrong", new_state)
                    outcomes[key] = outcomes.get(key, 0.0) + q
                elif j < budget:
                    step(j + 1, new_state, q)
                else:
                    key = (j, "exhausted", False)
                    outcomes[key] = outcomes.get(key, 0.0) + q

        step(0, confused, np.ones(shift.shape))
        return {key: prob @ u_weight for key, prob in outcomes.items()}

    @lru_cache(maxsize=None)
    def value(i, seg_start, tainted, doomed, retries_used, rollbacks_used, confused):
        """[success, silent, detected, attempts, cost] from this point, arrays over z."""
        if i == c["n"]:
            return unit[1 if (tainted or doomed) else 0][:, None] + zero
        budget = min(c["per_step"][i], c["total"] - retries_used)
        out = zero.copy()
        for (spent, result, state), prob in execution(i, confused, budget).items():
            attempts = spent + 1
            if result == "exhausted":
                rest = unit[2][:, None] + zero
            else:
                rest = after(i + 1, seg_start, tainted or result == "wrong", doomed,
                             retries_used + spent, rollbacks_used, state)
            here = np.array([0, 0, 0, attempts, attempts * c["unit"][i]])[:, None]
            out = out + prob * (rest + here)
        return out

    def after(i, seg_start, tainted, doomed, retries_used, rollbacks_used, confused):
        if i not in c["positions"]:
            return value(i, seg_start, tainted, doomed, retries_used, rollbacks_used, confused)
        caught = c["detect"] if tainted else c["false_alarm"]
        out = np.array([0, 0, 0, 0, c["checkpoint_cost"]])[:, None] + zero
        if caught > 0.0:
            if rollbacks_used == c["rollbacks"]:
                rest = unit[2][:, None] + zero
            else:
                rest = value(seg_start, seg_start, False, doomed, retries_used,
                             rollbacks_used + 1, False)
                rest = rest + np.array([0, 0, 0, 0, c["rollback_cost"]])[:, None]
            out = out + caught * rest
        if caught < 1.0:
            out = out + (1.0 - caught) * value(i, i, False, doomed or tainted, retries_used,
                                               rollbacks_used, confused)
        return out

    result = value(0, 0, False, False, 0, 0, False) @ z_weight
    return dict(zip(KEYS, result.tolist()))


# ------------------------------------------------------------------- scenario strategies
@st.composite
def scenarios(draw, max_steps=3, max_budget=2, max_rollbacks=2, random_effects=False,
              max_sd=1.0):
    """Scenarios that switch every feature on or off, within small sizes."""
    n = draw(st.integers(1, max_steps))
    probability = st.sampled_from([0.0, 0.3, 0.5, 0.8, 0.9, 1.0]) | st.floats(0.05, 0.95)

    def per_step(element):
        return draw(st.one_of(element, st.lists(element, min_size=n, max_size=n)))

    data: dict = {"steps": n, "p": per_step(probability)}
    if draw(st.booleans()):
        data["verifier"] = {"miss": per_step(probability), "false_reject": per_step(probability)}
        retries = {}
        if draw(st.booleans()):
            retries["per_step"] = per_step(st.integers(0, max_budget))
        if draw(st.booleans()) or not retries:
            retries["total"] = draw(st.integers(0, 2 * max_budget))
        data["retries"] = retries
    if draw(st.booleans()):
        data["checkpoints"] = {
            "every": draw(st.integers(1, n)),
            "at": draw(st.lists(st.integers(1, n), max_size=2)),
            "final": draw(st.booleans()),
            "detect": draw(probability),
            "false_alarm": draw(probability),
            "rollbacks": draw(st.integers(0, max_rollbacks)),
        }
    correlation = {}
    if draw(st.booleans()):
        correlation["confusion"] = {k: draw(probability) for k in ("enter", "recover", "factor")}
    if random_effects:
        correlation["task_sd"] = draw(st.sampled_from([0.0, 0.3, max_sd]))
        correlation["step_sd"] = draw(st.sampled_from([0.0, 0.5, max_sd]))
    data["correlation"] = correlation
    cost = {"attempt": per_step(st.sampled_from([0.0, 1.0, 2.5]))}
    if "verifier" in data:
        cost["verify"] = draw(st.sampled_from([0.0, 0.2]))
    if "checkpoints" in data:
        cost["checkpoint"] = draw(st.sampled_from([0.0, 0.5]))
        if data["checkpoints"]["rollbacks"] > 0:  # a rollback cost needs rollbacks
            cost["rollback"] = draw(st.sampled_from([0.0, 1.5]))
    data["cost"] = cost
    return Scenario.from_dict(data)


def _branches(s: Scenario) -> float:
    """A bound on the number of paths enumerate_paths follows."""
    per_attempt = 2 * (2 if s.correlation.confusion else 1) * (2 if s.verifier else 1)
    per_execution = sum(per_attempt ** (k + 1) for k in range(int(trial_model(s).per_step.max()) + 1))
    executions = s.steps * (1 + (s.checkpoints.rollbacks if s.checkpoints else 0))
    return float(per_execution) ** executions


# ---------------------------------------------------------------------- exact, no effects
@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(scenarios())
def test_every_path_enumerated_matches_to_1e12(s):
    assume(_branches(s) < 3e4)
    _close(evaluate(s), enumerate_paths(s), 1e-12)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(scenarios(max_steps=7, max_budget=3, max_rollbacks=3))
def test_backward_recursion_matches_to_1e12(s):
    _close(evaluate(s), backward(s), 1e-12)


@pytest.mark.slow
def test_references_agree_with_each_other_and_catch_a_wrong_reading():
    s = Scenario.from_dict({
        "steps": 3, "p": [0.9, 0.7, 0.8], "verifier": {"miss": 0.3, "false_reject": 0.1},
        "retries": {"per_step": 1, "total": 2},
        "checkpoints": {"every": 2, "final": True, "detect": 0.7, "false_alarm": 0.1,
                        "rollbacks": 1},
        "correlation": {"confusion": {"enter": 0.5, "recover": 0.4, "factor": 0.6}},
        "cost": {"attempt": [1, 2, 3], "verify": 0.2, "checkpoint": 0.5, "rollback": 1.5},
    })
    paths, recursion = enumerate_paths(s), backward(s)
    for key in KEYS:
        assert recursion[key] == pytest.approx(paths[key], abs=1e-13)
    engine = evaluate(s)
    _close(engine, paths, 1e-12)
    # negative controls: the comparison sees a wrong reading of the rollback rules
    for misread in ("refund", "stay_confused"):
        wrong = enumerate_paths(s, misread=misread)
        assert max(abs(getattr(engine, key) - wrong[key]) for key in KEYS) > 1e-4, misread


# --------------------------------------------------------------------- with random effects
@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(scenarios(max_steps=3, max_budget=2, max_rollbacks=1, random_effects=True))
def test_random_effects_match_a_gauss_hermite_backward_recursion(s):
    _close(evaluate(s), backward(s, nodes=60), 1e-8)


def test_gauss_hermite_reference_has_converged():
    s = Scenario.from_dict({
        "steps": 3, "p": 0.8, "verifier": {"miss": 0.2}, "retries": {"per_step": 2},
        "checkpoints": {"final": True, "detect": 0.9, "rollbacks": 1},
        "correlation": {"task_sd": 1.0, "step_sd": 1.0,
                        "confusion": {"enter": 0.5, "recover": 0.5, "factor": 0.5}},
    })
    coarse, fine = backward(s, nodes=40), backward(s, nodes=80)
    for key in KEYS:
        assert fine[key] == pytest.approx(coarse[key], abs=1e-11)
    _close(evaluate(s), fine, 1e-9)


def _by_quadrature(p, steps, retries, miss, task_sd, step_sd):
    """Uniform verified chain with both effects, by nested quadrature and the closed form.

    Given z and u a step ends as formulas.verified_step(p', r, miss) says. Given z, steps
    are independent: with C, E and A the step's success, exhaustion and attempts averaged
    over u (a composite Gauss-Legendre rule on [-12, 12]), success = C^n,
    reach_end = (1-E)^n and attempts = A sum_{i<n} (1-E)^i; the z integral is
    scipy.integrate.quad_vec.
    """
    from scipy import integrate

    x, w = np.polynomial.legendre.leggauss(10)
    middles = np.linspace(-12, 12, 481)[:-1] + 0.025
    u = (middles[:, None] + 0.025 * x).ravel()
    u_weight = (0.025 * w * np.exp(-0.5 * (middles[:, None] + 0.025 * x) ** 2)).ravel()
    u_weight /= math.sqrt(2 * math.pi)
    if step_sd == 0:
        u, u_weight = np.zeros(1), np.ones(1)
    logit = math.log(p / (1 - p))

    def given_z(z):
        shifted = 1.0 / (1.0 + np.exp(-(logit + task_sd * z + step_sd * u)))
        step = formulas.verified_step(shifted, retries, miss)
        correct, exhausted = step.success @ u_weight, step.exhausted @ u_weight
        attempts = step.expected_attempts @ u_weight
        reached = -math.expm1(steps * math.log1p(-exhausted)) / exhausted if exhausted else steps
        weight = math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        return weight * np.array([correct**steps, (1 - exhausted) ** steps, attempts * reached])

    total, _ = integrate.quad_vec(given_z, -12, 12, epsabs=1e-13, epsrel=1e-12)
    success, reach_end, attempts = total
    return {"success": success, "silent_failure": reach_end - success,
            "detected_failure": 1 - reach_end, "expected_attempts": attempts,
            "expected_cost": attempts}


def test_reference_r6_by_nested_quadrature():
    # docs/model.md R6, recomputed by an independent route
    want = _by_quadrature(0.9, 8, 2, 0.0, task_sd=1.0, step_sd=0.8)
    assert round(want["success"], 6) == 0.879831
    assert round(want["expected_attempts"], 6) == 8.894021
    out = evaluate(Scenario.from_dict({
        "steps": 8, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"per_step": 2},
        "correlation": {"task_sd": 1.0, "step_sd": 0.8},
    }))
    _close(out, want, 1e-9)


@pytest.mark.parametrize(
    "steps, retries, miss, task_sd, step_sd",
    [(30, 3, 0.0, 2.0, 0.0), (30, 3, 0.1, 0.0, 2.5), (60, 3, 0.05, 1.5, 1.5),
     (200, 3, 0.1, 3.0, 0.0), (25, 12, 0.0, 1.0, 3.0)],
)
def test_large_effects_on_long_chains_by_nested_quadrature(steps, retries, miss, task_sd,
                                                           step_sd):
    want = _by_quadrature(0.9, steps, retries, miss, task_sd, step_sd)
    out = evaluate(Scenario.from_dict({
        "steps": steps, "p": 0.9, "verifier": {"miss": miss}, "retries": {"per_step": retries},
        "correlation": {"task_sd": task_sd, "step_sd": step_sd},
    }))
    _close(out, want, 1e-8)


def test_gauss_hermite_would_not_have_been_enough():
    # Why the engine integrates the task effect adaptively: on a long chain with a large task
    # effect the conditional success is a steep step in z, and 128 Gauss-Hermite nodes
    # (formulas.logit_normal_chain(nodes=128)) miss by more than the 1e-7 the engine promises,
    # while the engine agrees with the fine trapezoid rule of logit_normal_chain.
    s = Scenario.from_dict({"steps": 200, "p": 0.9, "correlation": {"task_sd": 3.0}})
    engine = evaluate(s).success
    assert engine == pytest.approx(formulas.logit_normal_chain(0.9, 200, 3.0), abs=1e-10)
    assert abs(formulas.logit_normal_chain(0.9, 200, 3.0, nodes=128) - engine) > 1e-6


@pytest.mark.parametrize(
    "data",
    [
        {"steps": 200, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 3},
         "correlation": {"task_sd": 3.0}},
        {"steps": 60, "p": 0.95, "verifier": {"miss": 0.05, "false_reject": 0.05},
         "retries": {"per_step": 3, "total": 12},
         "checkpoints": {"every": 10, "detect": 0.9, "rollbacks": 2},
         "correlation": {"task_sd": 2.0, "step_sd": 2.0,
                         "confusion": {"enter": 0.3, "recover": 0.5, "factor": 0.7}}},
    ],
)
def test_quadrature_converged_at_the_default_tolerance(data):
    s = Scenario.from_dict(data)
    default, _ = _evaluate(s, 1e-8)
    tight, _ = _evaluate(s, 1e-12)
    scale = np.maximum(1.0, np.abs(tight))
    assert np.all(np.abs(default - tight) <= 1e-9 * scale), default - tight


# ----------------------------------------------------------------------- closed forms
uniform_p = st.floats(0.05, 1.0)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    p=st.lists(uniform_p, min_size=1, max_size=30),
    retries=st.integers(0, 5),
    miss=st.floats(0.0, 1.0),
    false_reject=st.floats(0.0, 0.9),
)
def test_heterogeneous_verified_chain_equals_closed_form(p, retries, miss, false_reject):
    _check_verified_chain(p, retries, miss, false_reject)


def _check_verified_chain(p, retries, miss, false_reject):
    """The exact engine on a verified chain against ``formulas.verified_chain``."""
    s = Scenario.from_dict({"steps": len(p), "p": p,
                            "verifier": {"miss": miss, "false_reject": false_reject},
                            "retries": {"per_step": retries}})
    want = formulas.verified_chain(p, retries, miss=miss, false_reject=false_reject)
    _close(evaluate(s), {**want._asdict(), "expected_cost": want.expected_attempts}, 1e-11)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(uniform_p, min_size=n, max_size=n),
    st.lists(st.integers(0, 4), min_size=n, max_size=n),
    st.lists(st.floats(0, 1), min_size=n, max_size=n),
    st.lists(st.floats(0, 0.9), min_size=n, max_size=n),
)))
def test_per_step_lists_equal_closed_form(lists):
    p, retries, miss, false_reject = lists
    _check_verified_chain(p, retries, miss, false_reject)


@settings(max_examples=40, deadline=None)
@given(p=st.floats(0.3, 1.0), steps=st.integers(1, 30), budget=st.integers(0, 25),
       false_reject=st.floats(0.0, 0.5))
def test_shared_budget_equals_closed_form(p, steps, budget, false_reject):
    s = Scenario.from_dict({"steps": steps, "p": p,
                            "verifier": {"miss": 0.0, "false_reject": false_reject},
                            "retries": {"total": budget}})
    want = formulas.shared_budget_success(p, steps, budget, false_reject=false_reject)
    assert evaluate(s).success == pytest.approx(want, abs=1e-11)


@settings(max_examples=40, deadline=None)
@given(p=uniform_p, steps=st.integers(1, 25), retries=st.integers(0, 4),
       enter=st.floats(0, 1), recover=st.floats(0, 1), factor=st.floats(0, 1),
       miss=st.floats(0, 1), false_reject=st.floats(0, 0.9))
def test_confusion_equals_the_forward_recursion(p, steps, retries, enter, recover, factor,
                                                miss, false_reject):
    s = Scenario.from_dict({"steps": steps, "p": p,
                            "verifier": {"miss": miss, "false_reject": false_reject},
                            "retries": {"per_step": retries},
                            "correlation": {"confusion": {"enter": enter, "recover": recover,
                                                          "factor": factor}}})
    want = formulas.confusion_chain(p, steps, enter, recover, factor, retries, miss,
                                    false_reject)
    _close(evaluate(s), {**want._asdict(), "expected_cost": want.expected_attempts}, 1e-11)


@settings(max_examples=30, deadline=None)
@given(p=st.floats(0.05, 0.999), steps=st.integers(1, 100), task_sd=st.floats(0.05, 3.0))
def test_task_effect_without_verifier_equals_logit_normal_chain(p, steps, task_sd):
    s = Scenario.from_dict({"steps": steps, "p": p, "correlation": {"task_sd": task_sd}})
    out = evaluate(s)
    want = formulas.logit_normal_chain(p, steps, task_sd)
    assert out.success == pytest.approx(want, abs=1e-7)
    assert out.silent_failure == pytest.approx(1.0 - want, abs=1e-7)
    assert out.expected_attempts == pytest.approx(steps, abs=1e-9 * steps)


def _beta_matching_the_logit_normal(p: float, task_sd: float) -> tuple[float, float]:
    """alpha, beta of the Beta with the logit-normal's mean and variance (by quad)."""
    from scipy import integrate, stats

    def moment(k):
        f = lambda z: (1 / (1 + math.exp(-(math.log(p / (1 - p)) + task_sd * z)))) ** k
        return integrate.quad(lambda z: f(z) * stats.norm.pdf(z), -12, 12, epsabs=1e-14)[0]

    mean, second = moment(1), moment(2)
    variance = second - mean**2
    common = mean * (1 - mean) / variance - 1
    return mean * common, (1 - mean) * common


@pytest.mark.parametrize("p, task_sd", [(0.9, 0.5), (0.8, 1.0), (0.95, 1.5), (0.9, 2.0)])
def test_latent_difficulty_chain_is_exact_for_two_steps_only(p, task_sd):
    # What is true: a Beta matched to the logit-normal's mean and variance has the same E[p]
    # and E[p^2], so the beta-binomial chain equals evaluate for 1 and 2 steps. From 3 steps
    # on the higher moments differ: here the Beta (more mass near p = 1) gives the higher
    # success, by under 2% up to 5 steps and by a gap that grows with the steps (up to 40%
    # at 50 steps). Both beat mean**n (Jensen).
    alpha, beta = _beta_matching_the_logit_normal(p, task_sd)
    mean = alpha / (alpha + beta)
    gaps = []
    for steps in (1, 2, 3, 5, 10, 25, 50):
        s = Scenario.from_dict({"steps": steps, "p": p, "correlation": {"task_sd": task_sd}})
        engine = evaluate(s).success
        closed = formulas.latent_difficulty_chain(alpha, beta, steps)
        if steps <= 2:
            assert engine == pytest.approx(closed, abs=1e-9)
        else:
            gaps.append(closed / engine - 1.0)
        if steps >= 2:
            assert min(engine, closed) > mean**steps
    assert gaps[0] > 1e-5 and all(later > earlier for earlier, later in zip(gaps, gaps[1:]))
    assert gaps[1] < 0.02  # 5 steps


# ------------------------------------------------------------------------------ laws
@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(scenarios(max_steps=4, max_budget=3, random_effects=True, max_sd=2.0))
def test_outcomes_sum_to_one_and_costs_are_consistent(s):
    out = evaluate(s)
    total = out.success + out.silent_failure + out.detected_failure
    assert total == pytest.approx(1.0, abs=1e-9)
    assert min(out.success, out.silent_failure, out.detected_failure) >= 0.0
    # at least one attempt (the first), at most every attempt of every execution
    executions = s.steps * (1 + (s.checkpoints.rollbacks if s.checkpoints else 0))
    most = executions * (1 + int(trial_model(s).per_step.max()))
    assert 1.0 - 1e-9 <= out.expected_attempts <= most + 1e-9
    if s.cost.checkpoint == 0 and s.cost.rollback == 0:
        per_attempt = trial_model(s).cost_per_attempt
        assert per_attempt.min() * out.expected_attempts - 1e-9 <= out.expected_cost
        assert out.expected_cost <= per_attempt.max() * out.expected_attempts + 1e-9


def _with(s: Scenario, table: str, **changes) -> Scenario:
    import dataclasses

    return dataclasses.replace(s, **{table: dataclasses.replace(getattr(s, table), **changes)})


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(scenarios(max_steps=4, max_budget=2, random_effects=True), st.integers(1, 2))
def test_more_budget_never_lowers_success(s, more):
    base = evaluate(s).success
    if s.retries is not None:
        per_step = s.retries.per_step
        if per_step is not None:
            larger = (tuple(r + more for r in per_step) if isinstance(per_step, tuple)
                      else per_step + more)
            assert evaluate(_with(s, "retries", per_step=larger)).success >= base - 1e-10
        if s.retries.total is not None:
            larger_total = _with(s, "retries", total=s.retries.total + more)
            assert evaluate(larger_total).success >= base - 1e-10
    if s.checkpoints is not None:
        more_rollbacks = _with(s, "checkpoints", rollbacks=s.checkpoints.rollbacks + more)
        assert evaluate(more_rollbacks).success >= base - 1e-10


def test_more_budget_helps_and_the_law_can_fail():
    s = Scenario.from_dict({"steps": 5, "p": 0.7, "verifier": {"miss": 0.1},
                            "retries": {"per_step": 1, "total": 2}})
    assert evaluate(_with(s, "retries", total=3)).success > evaluate(s).success + 1e-3
    # negative control: a lower per-step budget does lower success, so the law is not vacuous
    assert evaluate(_with(s, "retries", per_step=0)).success < evaluate(s).success - 1e-3


def test_a_final_gate_with_a_rollback_restarts_a_fresh_run():
    # A caught trial is redone from scratch, independently of the first run (budgets are
    # untouched by a catch with no total), so success = s0 (1 + c) and cost = k0 (1 + c):
    # the cost per success of the gated design equals the ungated one.
    base = {"steps": 6, "p": 0.85, "verifier": {"miss": 0.3}, "retries": {"per_step": 2},
            "correlation": {"confusion": {"enter": 0.4, "recover": 0.3, "factor": 0.6}}}
    plain = evaluate(Scenario.from_dict(base))
    gated = evaluate(Scenario.from_dict(
        {**base, "checkpoints": {"final": True, "detect": 0.9, "rollbacks": 1}}))
    caught = plain.silent_failure * 0.9
    assert gated.success == pytest.approx(plain.success * (1 + caught), abs=1e-12)
    assert gated.cost_per_success == pytest.approx(plain.cost_per_success, rel=1e-12)


def test_p_of_exactly_zero_or_one_is_not_shifted():
    sure = evaluate(Scenario.from_dict({"steps": 5, "p": 1.0,
                                        "correlation": {"task_sd": 2.0, "step_sd": 2.0}}))
    assert sure.success == 1.0 and sure.expected_attempts == pytest.approx(5.0, abs=1e-12)
    never = evaluate(Scenario.from_dict({"steps": 3, "p": [1.0, 0.0, 1.0],
                                         "correlation": {"task_sd": 2.0}}))
    assert never.success == 0.0 and never.silent_failure == pytest.approx(1.0, abs=1e-12)


def test_no_success_gives_infinite_cost_per_success():
    out = evaluate(Scenario.from_dict({"steps": 2, "p": 0.0, "verifier": {},
                                       "retries": {"per_step": 1}}))
    assert out.success == 0.0 and out.detected_failure == pytest.approx(1.0)
    assert out.cost_per_success == math.inf and out.to_dict()["cost_per_success"] is None
    assert out.method == "exact"


@pytest.mark.parametrize("tol", [0, -1e-8, 0.5, "1e-8", True, float("nan")])
def test_bad_tolerance_names_the_argument(tol):
    s = Scenario.from_dict({"steps": 2, "p": 0.9})
    with pytest.raises(ValueError, match=r"tol: must be a number in \(0, 1e-3\]"):
        evaluate(s, tol=tol)


# ---------------------------------------------------------------------- the quadrature
def test_gauss_kronrod_rules_integrate_polynomials_exactly():
    # K15 is exact to degree 22 and G7 to degree 13 on [-1, 1]; one degree more is not.
    for degree in range(24):
        exact = 0.0 if degree % 2 else 2.0 / (degree + 1)
        kronrod = float(np.sum(GK_WEIGHTS * GK_NODES**degree))
        gauss = float(np.sum(G_WEIGHTS * GK_NODES**degree))
        if degree <= 22:
            assert kronrod == pytest.approx(exact, abs=1e-15)
        if degree <= 13:
            assert gauss == pytest.approx(exact, abs=1e-15)
    assert abs(float(np.sum(G_WEIGHTS * GK_NODES**14)) - 2.0 / 15) > 1e-6
    assert np.count_nonzero(G_WEIGHTS) == 7


def test_a_mapping_is_read_as_a_scenario_and_anything_else_is_named():
    # the same door as simulate: a dict in docs/model.md section 4's structure is a scenario
    r8 = {"steps": 20, "p": 0.95}
    assert evaluate(r8) == evaluate(Scenario.from_dict(r8))
    with pytest.raises(ValueError, match="scenario: must be a relsim.Scenario or a mapping"):
        evaluate(3)


# ------------------------------------------------------------------ issue 15: no runaway
def test_a_tolerance_below_rounding_stops_at_rounding_instead_of_running_away():
    """tol = 1e-300 once refined the step-effect grid and the panels to their floors (minutes);
    QUADPACK's rounding floor stops both where rounding is reached, at the same answer."""
    s = Scenario.from_dict(
        {"steps": 9, "p": [0.99, 0.9, 0.8, 0.95, 0.9, 0.7, 0.99, 0.9, 0.85],
         "verifier": {"miss": 0.15, "false_reject": 0.1}, "retries": {"per_step": 3, "total": 5},
         "checkpoints": {"every": 3, "final": True, "detect": 0.9, "rollbacks": 2},
         "correlation": {"task_sd": 0.5, "step_sd": 0.5,
                         "confusion": {"enter": 0.5, "recover": 0.5, "factor": 0.7}},
         "cost": {"attempt": 1, "verify": 0.2, "checkpoint": 0.5, "rollback": 1}}
    )  # R7 of docs/model.md section 5
    default, _ = _evaluate(s, 1e-8)
    finest, nodes = _evaluate(s, 1e-300)
    assert nodes < 2000
    assert np.abs(finest - default).max() < 1e-9
    assert round(float(finest[0]), 6) == 0.793529  # R7's success
