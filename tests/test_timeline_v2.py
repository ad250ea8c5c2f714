"""The timeline engine with docs/model.md section 8's tables, against values from outside it.

Without time tables a trial's outcome is section 8's, so the timeline must agree (within 5
standard errors computed from the run, the SE floored at 1/N) with exact values: closed forms
derived here for one step (the step's attempts are independent given the class, so the step
is a short chain of per-attempt probabilities: a binomial or multinomial vote, the first of n
verified samples, a fault), checked against MODEL.md section 8's reference values (Stroebl et
al.'s utilities, the vote mixture's peak); on several steps, tests/section8_brute.py's
enumeration and the exact engine.
Each check has a negative control: the run against a wrong parameter's exact values must fail.
Then the time-specific rules of section 8 ("In time") with constant durations, exactly.
Fixed seeds, never a retry.
"""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest

from relsim import evaluate, simulate_timeline

SIGMAS = 5.0
SHARES = ("success", "silent_failure", "detected_failure", "infra_failure")
KEYS = (*SHARES, "expected_attempts", "expected_cost")


# ------------------------------------------------------------------ exact values, one step
def vote_win(n: int, p: float, wrong_answers: int) -> float:
    """P(the plurality of n samples is the right answer), ties broken uniformly at random.

    Binary (one wrong answer): P(Binomial(n, p) > n/2) + P(= n/2)/2. "distinct" (0): the right
    answer wins with two or more votes, and a lone right vote ties with n - 1 lone wrong ones.
    m wrong answers: :func:`plurality`."""
    q = 1.0 - p
    if wrong_answers == 1:
        return sum(math.comb(n, k) * p**k * q ** (n - k) * (1.0 if 2 * k > n else 0.5 if 2 * k == n else 0.0)
                   for k in range(n + 1))
    if wrong_answers == 0:
        one = n * p * q ** (n - 1)
        return 1.0 - q**n - one + one / n
    return plurality(n, p, wrong_answers)


def plurality(n: int, p: float, m: int) -> float:
    """The multinomial sum over every count of the right answer and each of m wrong ones: the
    right answer wins outright, or ties with k others and wins one time in k + 1."""
    q = 1.0 - p
    total = 0.0
    for counts in itertools.product(range(n + 1), repeat=m + 1):
        if sum(counts) != n:
            continue
        right, wrong = counts[0], counts[1:]
        top = max(wrong)
        if right < top or right == 0:
            continue
        ways = math.factorial(n) / math.prod(math.factorial(c) for c in counts)
        prob = ways * p**right * (q / m) ** (n - right)
        total += prob / (1 + wrong.count(right)) if right == top else prob
    return total


def _modes(data: dict) -> list[tuple[str | None, float, float, float]]:
    """(name, share, miss, detect) of each failure mode; one nameless mode without them."""
    verifier = data.get("verifier")
    detect = (data.get("checkpoints") or {}).get("detect", 1.0)
    if not data.get("failure_modes"):
        miss = 1.0 if verifier is None else verifier.get("miss", 0.0)
        return [(None, 1.0, miss, detect)]
    return [(m["name"], m["share"], 1.0 if verifier is None else m.get("miss", 0.0),
             m.get("detect", detect)) for m in data["failure_modes"]]


def one_step(data: dict) -> dict:
    """Exact outcome of a one-step scenario (no confusion, no random effects; checkpoints at
    most a final one without rollbacks): per class, the chain of the step's attempts."""
    assert data["steps"] == 1 and "correlation" not in data
    ck = data.get("checkpoints")
    assert ck is None or (ck.get("final") and not ck.get("rollbacks"))
    verifier = data.get("verifier")
    fr = 0.0 if verifier is None else verifier.get("false_reject", 0.0)
    modes = _modes(data)
    sampling = data.get("sampling") or {}
    n = sampling.get("n", 1)
    vote = sampling.get("select", "vote") == "vote"
    wrong = sampling.get("wrong_answers", 1)
    wrong = 0 if wrong == "distinct" else wrong
    fault = (data.get("faults") or {}).get("attempt", 0.0)
    cost = data.get("cost") or {}
    esc = data.get("escalation") or {"after": [], "p": []}
    rung_cost = [cost.get("attempt", 1.0), *esc.get("attempt_cost", [cost.get("attempt", 1.0)] * len(esc["after"]))]
    verify_cost = cost.get("verify", 0.0) * (1 if vote else n)
    retries = (data.get("retries") or {}).get("per_step", 0)
    classes = data.get("classes") or [{"weight": 1.0, "p": data["p"]}]
    weights = np.array([c["weight"] for c in classes], dtype=float)
    weights /= weights.sum()

    out = dict.fromkeys((*KEYS, "accepted"), 0.0)
    silent = [0.0] * len(modes)
    for weight, cls in zip(weights, classes):
        rung_p = [cls["p"], *cls.get("escalation_p", esc["p"])]
        reach = 1.0  # P(the attempt is made)
        for j in range(retries + 1):
            rung = sum(1 for a in esc["after"] if a <= j)
            p = rung_p[rung]
            accept_right = p * (1.0 - fr)
            accept_wrong = [(1.0 - p) * share * miss for _, share, miss, _ in modes]
            if n == 1 or vote:
                win = p if n == 1 else vote_win(n, p, wrong)
                right, wrongs = win * (1.0 - fr), [(1.0 - win) * share * miss for _, share, miss, _ in modes]
            else:  # the first accepted of n verified samples
                rejected = 1.0 - accept_right - sum(accept_wrong)
                first = (1.0 - rejected**n) / (1.0 - rejected) if rejected < 1.0 else float(n)
                right, wrongs = accept_right * first, [b * first for b in accept_wrong]
            right, wrongs = (1.0 - fault) * right, [(1.0 - fault) * b for b in wrongs]
            rejected = 1.0 - fault - right - sum(wrongs)
            out["expected_attempts"] += weight * reach
            out["expected_cost"] += weight * reach * (rung_cost[rung] * n + (1.0 - fault) * verify_cost)
            out["accepted"] += weight * reach * right
            for k, b in enumerate(wrongs):
                silent[k] += weight * reach * b
            if j == retries:  # the budget is spent: the last attempt says how the trial ends
                out["infra_failure"] += weight * reach * fault
                out["detected_failure"] += weight * reach * rejected
            reach *= fault + rejected
    accepted = out.pop("accepted")
    stepped = accepted + sum(silent)
    if ck is not None:
        out["expected_cost"] += stepped * cost.get("checkpoint", 0.0)
        alarm = ck.get("false_alarm", 0.0)
        out["detected_failure"] += accepted * alarm + sum(s * m[3] for s, m in zip(silent, modes))
        accepted *= 1.0 - alarm
        silent = [s * (1.0 - m[3]) for s, m in zip(silent, modes)]
    out["success"] = accepted
    out["silent_failure"] = sum(silent)
    out["silent_by_mode"] = None if modes[0][0] is None else {m[0]: s for m, s in zip(modes, silent)}
    out["expected_utility"] = _utility(data, out)
    return out


def _utility(data: dict, shares: dict) -> float | None:
    u = data.get("utility")
    if u is None:
        return None
    values = {"success": 1.0, "silent_failure": 0.0, "detected_failure": 0.0, "infra_failure": 0.0,
              "timeout": 0.0, **{k: v for k, v in u.items() if k != "cost_weight"}}
    return (sum(shares.get(k, 0.0) * v for k, v in values.items())
            - u.get("cost_weight", 0.0) * shares["expected_cost"])


def test_the_one_step_values_meet_model_md_section_8s_references():
    # Stroebl, Kapoor and Narayanan (2024) through MODEL.md section 8: best retries and utility
    stroebl = {"steps": 1, "classes": [{"weight": 0.58, "p": 0.87}, {"weight": 0.42, "p": 0.13}],
               "verifier": {"miss": 0.25, "false_reject": 0.0}}
    for value, best, utility in ((-0.7, 2, 0.524567), (-1.0, 1, 0.472381), (-2.0, 0, 0.338800)):
        by_retries = [one_step({**stroebl, "retries": {"per_step": r},
                                "utility": {"silent_failure": value}})["expected_utility"]
                      for r in range(6)]
        assert int(np.argmax(by_retries)) == best
        assert by_retries[best] == pytest.approx(utility, abs=5e-7)
    assert one_step({**stroebl, "utility": {"silent_failure": -1.0}})["expected_utility"] == pytest.approx(0.449, abs=5e-7)
    # the binary vote mixture (Chen et al. 2024) peaks at n = 5
    mixture = [one_step({"steps": 1, "classes": [{"weight": 0.6, "p": 0.8}, {"weight": 0.4, "p": 0.3}],
                         "sampling": {"n": n}})["success"] for n in (1, 3, 5, 7, 9)]
    assert int(np.argmax(mixture)) == 2 and mixture[2] == pytest.approx(0.630480, abs=5e-7)
    # the vote's three forms agree where they meet: the multinomial sum with one wrong answer
    # is the binomial one, and with many wrong answers (that rarely coincide) nears "distinct"
    for n in (1, 2, 3, 4, 5):
        assert plurality(n, 0.55, 1) == pytest.approx(vote_win(n, 0.55, 1), abs=1e-12)
    # by hand, three samples and two wrong answers: a lone right vote wins only when the two
    # wrong ones differ (one time in two), and then one three-way tie in three
    p, q = 0.4, 0.6
    assert plurality(3, p, 2) == pytest.approx(p**3 + 3 * p**2 * q + 3 * p * q**2 / 6, abs=1e-12)
    assert vote_win(4, 0.3, 0) > vote_win(4, 0.3, 3) > vote_win(4, 0.3, 1)
    assert vote_win(2, 0.6, 0) == pytest.approx(0.36 + 0.48 / 2, abs=1e-12)
    # a plain verified step is relsim's closed form
    from relsim import formulas

    plain = one_step({"steps": 1, "p": 0.7, "verifier": {"miss": 0.2, "false_reject": 0.1},
                      "retries": {"per_step": 2}})
    chain = formulas.verified_chain([0.7], 2, miss=0.2, false_reject=0.1)
    assert plain["success"] == pytest.approx(chain.success, abs=1e-12)
    assert plain["expected_attempts"] == pytest.approx(chain.expected_attempts, abs=1e-12)


# ------------------------------------------------------------------ the timeline against them
def _misses(out, exact: dict, trials: int) -> list[str]:
    """The keys whose estimate is more than 5 SE (floored at 1/N) from the exact value."""
    se = out.standard_errors
    checks = [(key, getattr(out, key), se[key], exact[key]) for key in KEYS]
    if exact.get("silent_by_mode") is not None:
        checks += [(f"silent_by_mode_{name}", out.silent_by_mode[name], se[f"silent_by_mode_{name}"], value)
                   for name, value in exact["silent_by_mode"].items()]
    if exact.get("expected_utility") is not None:
        checks.append(("expected_utility", out.expected_utility, se["expected_utility"],
                       exact["expected_utility"]))
    return [key for key, estimate, error, value in checks
            if not abs(estimate - value) <= SIGMAS * max(error, 1.0 / trials)]


def _with(data: dict, path: str, value: object) -> dict:
    data = copy.deepcopy(data)
    *tables, key = path.split(".")
    where = data
    for table in tables:
        where = where[int(table)] if isinstance(where, list) else where[table]
    where[key] = value
    return data


MODES = [{"name": "tool_error", "share": 0.4, "miss": 0.05, "detect": 1.0},
         {"name": "hallucination", "share": 0.6, "miss": 0.5, "detect": 0.3}]

# name -> (one-step scenario, (path, wrong value) for the negative control)
ONE_STEP = {
    "classes": ({"steps": 1, "classes": [{"weight": 0.58, "p": 0.87}, {"weight": 0.42, "p": 0.13}],
                 "verifier": {"miss": 0.25}, "retries": {"per_step": 1},
                 "utility": {"silent_failure": -1.0}},
                ("classes.1.p", 0.25)),
    "escalation": ({"steps": 1, "p": 0.3, "verifier": {"miss": 0.2, "false_reject": 0.05},
                    "retries": {"per_step": 3},
                    "escalation": {"after": [1, 2], "p": [0.6, 0.9], "attempt_cost": [2.0, 5.0]}},
                   ("escalation.p", [0.45, 0.9])),
    "binary vote, ties": ({"steps": 1, "p": 0.55, "sampling": {"n": 4}}, ("p", 0.6)),
    "plurality of two wrong answers, verified": (
        {"steps": 1, "p": 0.4, "verifier": {"miss": 0.3}, "retries": {"per_step": 1},
         "sampling": {"n": 3, "wrong_answers": 2}, "cost": {"verify": 0.5}},
        ("sampling.wrong_answers", 1)),
    "distinct wrong answers": ({"steps": 1, "p": 0.35, "sampling": {"n": 3, "wrong_answers": "distinct"}},
                               ("sampling.wrong_answers", 2)),
    "best of n through the verifier": (
        {"steps": 1, "p": 0.4, "verifier": {"miss": 0.2, "false_reject": 0.1},
         "retries": {"per_step": 1}, "sampling": {"n": 3, "select": "verifier"},
         "cost": {"verify": 0.5}},
        ("verifier.miss", 0.3)),
    "failure modes": ({"steps": 1, "p": 0.5, "verifier": {"false_reject": 0.1},
                       "retries": {"per_step": 1}, "failure_modes": MODES,
                       "checkpoints": {"final": True, "false_alarm": 0.05}},
                      ("failure_modes.1.detect", 0.6)),
    "faults": ({"steps": 1, "p": 0.6, "verifier": {"miss": 0.2}, "retries": {"per_step": 2},
                "faults": {"attempt": 0.25}, "cost": {"verify": 1.0}},
               ("faults.attempt", 0.18)),
    "every table at once": (
        {"steps": 1, "classes": [{"weight": 0.7, "p": 0.6}, {"weight": 0.3, "p": 0.2, "escalation_p": [0.5]}],
         "verifier": {"false_reject": 0.1}, "retries": {"per_step": 2},
         "escalation": {"after": [2], "p": [0.85], "attempt_cost": [3.0]},
         "sampling": {"n": 3, "wrong_answers": 2}, "failure_modes": MODES,
         "faults": {"attempt": 0.1}, "checkpoints": {"final": True, "false_alarm": 0.05},
         "cost": {"verify": 0.5, "checkpoint": 0.2},
         "utility": {"silent_failure": -2.0, "detected_failure": -0.2, "infra_failure": -0.5,
                     "cost_weight": 0.05}},
        ("faults.attempt", 0.2)),
}


@pytest.mark.parametrize("case", sorted(ONE_STEP))
def test_one_step_is_section_8s(case):
    data, (path, wrong) = ONE_STEP[case]
    trials = 4000
    out = simulate_timeline(data, trials, seed=17)
    assert _misses(out, one_step(data), trials) == []
    assert out.timeout == 0.0
    assert _misses(out, one_step(_with(data, path, wrong)), trials) != []  # negative control


def test_classes_on_several_steps_are_the_exact_engines_mixture():
    # every section 3 feature, two classes of their own per-step p: the exact engine's mixture
    data = {"steps": 3, "classes": [{"weight": 0.6, "p": [0.9, 0.8, 0.9]}, {"weight": 0.4, "p": 0.5}],
            "verifier": {"miss": 0.3, "false_reject": 0.1}, "retries": {"per_step": 2, "total": 3},
            "checkpoints": {"every": 2, "final": True, "detect": 0.7, "false_alarm": 0.1, "rollbacks": 1},
            "correlation": {"task_sd": 0.5, "confusion": {"enter": 0.5, "recover": 0.4, "factor": 0.7}},
            "cost": {"attempt": [1.0, 2.0, 1.0], "verify": 0.5, "checkpoint": 0.3, "rollback": 0.7},
            "utility": {"silent_failure": -2.0, "cost_weight": 0.1}}
    trials = 4000
    out = simulate_timeline(data, trials, seed=5)

    def exact(d: dict) -> dict:
        e = evaluate(d)
        return {**{key: getattr(e, key) for key in KEYS}, "expected_utility": e.expected_utility}

    assert _misses(out, exact(data), trials) == []
    assert _misses(out, exact(_with(data, "classes.0.weight", 0.3)), trials) != []  # negative control


# name -> (scenario of several steps, (path, wrong value) for the negative control); held to
# tests/section8_brute.py (enumeration, no random effects) or the exact engine (with them)
SEVERAL_STEPS = {
    "every table, confusion and rollbacks": (
        {"steps": 3, "classes": [{"weight": 0.7, "p": [0.8, 0.6, 0.9]}, {"weight": 0.3, "p": 0.4}],
         "verifier": {"false_reject": 0.1}, "retries": {"per_step": 2, "total": 3},
         "escalation": {"after": [1], "p": [0.85], "attempt_cost": [3.0]},
         "sampling": {"n": 3, "wrong_answers": 2}, "failure_modes": MODES, "faults": {"attempt": 0.1},
         "checkpoints": {"every": 2, "final": True, "false_alarm": 0.05, "rollbacks": 1},
         "correlation": {"confusion": {"enter": 0.5, "recover": 0.4, "factor": 0.7}},
         "cost": {"verify": 0.5, "checkpoint": 0.2, "rollback": 0.7},
         "utility": {"silent_failure": -2.0, "detected_failure": -0.2, "infra_failure": -0.5,
                     "cost_weight": 0.05}},
        ("escalation.p", [0.7])),
    "samples through the verifier": (
        {"steps": 2, "p": 0.5, "verifier": {"false_reject": 0.2}, "retries": {"per_step": 1},
         "sampling": {"n": 3, "select": "verifier"}, "failure_modes": MODES, "faults": {"attempt": 0.15},
         "checkpoints": {"final": True, "rollbacks": 1},
         "correlation": {"confusion": {"enter": 0.6, "recover": 0.3, "factor": 0.5}},
         "cost": {"verify": 0.3}},
        ("failure_modes.1.miss", 0.35)),
    "distinct answers, no verifier, doomed segments": (
        {"steps": 3, "p": [0.5, 0.4, 0.6], "sampling": {"n": 4, "wrong_answers": "distinct"},
         "failure_modes": [{"name": "a", "share": 0.3, "detect": 0.9}, {"name": "b", "share": 0.7, "detect": 0.2}],
         "checkpoints": {"at": [1], "final": True, "rollbacks": 2}},
        ("failure_modes.0.detect", 0.5)),
    "random effects (the exact engine)": (
        {"steps": 3, "classes": [{"weight": 0.6, "p": 0.85}, {"weight": 0.4, "p": 0.5}],
         "verifier": {"false_reject": 0.1}, "retries": {"per_step": 1},
         "escalation": {"after": [1], "p": [0.9]}, "sampling": {"n": 3},
         "failure_modes": MODES, "faults": {"attempt": 0.05}, "checkpoints": {"final": True},
         "correlation": {"task_sd": 0.8, "step_sd": 0.5}, "utility": {"silent_failure": -1.0}},
        ("correlation.task_sd", 2.0)),
}


@pytest.mark.parametrize("case", sorted(SEVERAL_STEPS))
def test_several_steps_are_section_8s(case):
    from section8_brute import brute_force

    data, (path, wrong) = SEVERAL_STEPS[case]

    def exact(d: dict) -> dict:
        if "task_sd" in d.get("correlation", {}):
            e = evaluate(d)
            return {**{key: getattr(e, key) for key in KEYS}, "silent_by_mode": e.silent_by_mode,
                    "expected_utility": e.expected_utility}
        return brute_force(d)

    trials = 4000
    out = simulate_timeline(data, trials, seed=23)
    assert _misses(out, exact(data), trials) == []
    assert _misses(out, exact(_with(data, path, wrong)), trials) != []  # negative control


def test_a_workload_reports_silent_by_mode_and_utility_over_replications():
    data, _ = ONE_STEP["failure modes"]
    modes = [{**MODES[0], "detect": 0.5}, MODES[1]]  # both modes ship some silent failures
    data = {**data, "failure_modes": modes, "utility": {"silent_failure": -1.0},
            "timing": {"attempt": 3, "verify": 1},
            "fleet": {"agents": 20, "tasks": 400}, "resources": {"llm_concurrency": 5}}
    out = simulate_timeline(data, replications=4, seed=2)
    exact = one_step({k: v for k, v in data.items() if k not in ("timing", "fleet", "resources")})
    d = out.to_dict()
    for name, value in exact["silent_by_mode"].items():
        key = f"silent_by_mode_{name}"
        assert len(out.replication_values[key]) == 4
        assert d["silent_by_mode_se"][name] == out.standard_errors[key] > 0
        low, high = out.intervals[key]
        assert low <= out.silent_by_mode[name] <= high
        # the t interval on 3 degrees of freedom: 5 SE is a loose but honest check
        assert abs(out.silent_by_mode[name] - value) <= SIGMAS * out.standard_errors[key]
    assert sum(out.silent_by_mode.values()) == pytest.approx(out.silent_failure, abs=1e-12)
    assert abs(out.expected_utility - exact["expected_utility"]) <= SIGMAS * out.standard_errors["expected_utility"]
    assert d["expected_utility_ci"] == list(out.intervals["expected_utility"])


def test_utility_values_timeouts():
    # one step of 10 s attempts, at most four, deadline 25 s: a trial that needs a third
    # attempt times out (having started it at 20 s, so it paid for three)
    p, miss, r, weight = 0.5, 0.2, 3, 0.1
    values = {"success": 1.0, "silent_failure": -2.0, "detected_failure": -0.5, "timeout": -1.0}
    data = {"steps": 1, "p": p, "verifier": {"miss": miss}, "retries": {"per_step": r},
            "timing": {"attempt": 10, "deadline": 25}, "utility": {**values, "cost_weight": weight}}
    reject = (1 - p) * (1 - miss)
    exact = p * (1 + reject) * values["success"] + (1 - p) * miss * (1 + reject) * values["silent_failure"]
    exact += reject**2 * values["timeout"]
    exact -= weight * (1 + reject + reject**2)  # the first attempt, a second, a third: paid
    trials = 4000
    out = simulate_timeline(data, trials, seed=9)
    assert out.timeout == pytest.approx(reject**2, abs=SIGMAS * out.standard_errors["timeout"])
    se = out.standard_errors["expected_utility"]
    assert abs(out.expected_utility - exact) <= SIGMAS * se
    ignored = exact - reject**2 * values["timeout"]  # negative control: a timeout worth 0
    assert not abs(out.expected_utility - ignored) <= SIGMAS * se
    low, high = out.intervals["expected_utility"]
    assert low < out.expected_utility < high


def test_the_same_seed_gives_the_same_numbers():
    data, _ = ONE_STEP["every table at once"]
    timed = {**data, "timing": {"attempt": {"median": 2, "p95": 6}, "verify": 1, "deadline": 30},
             "fleet": {"agents": 3, "tasks": 60}, "resources": {"llm_concurrency": 4, "rpm": 120}}
    for kwargs in ({"trials": 300}, {"replications": 2}):
        scenario = data if "trials" in kwargs else timed
        first = simulate_timeline(scenario, seed=4, **kwargs).to_dict()
        assert simulate_timeline(scenario, seed=4, **kwargs).to_dict() == first
        assert simulate_timeline(scenario, seed=5, **kwargs).to_dict() != first


def test_scenarios_without_section_8_keep_their_numbers(monkeypatch):
    # pinned from the engine before section 8 existed (commit 42971e6): same seed, same output
    # on simpy (independent trials without section 8 run compiled by default since issue 22)
    from relsim.timeline import _driver

    monkeypatch.setattr(_driver, "_PATH", "simpy")
    data = {"steps": 4, "p": [0.9, 0.8, 0.85, 0.9], "verifier": {"miss": 0.3, "false_reject": 0.1},
            "retries": {"per_step": 2, "total": 3},
            "checkpoints": {"every": 2, "detect": 0.7, "false_alarm": 0.1, "rollbacks": 1},
            "correlation": {"task_sd": 0.5, "step_sd": 0.5,
                            "confusion": {"enter": 0.5, "recover": 0.4, "factor": 0.7}},
            "cost": {"attempt": [1.0, 2.0, 1.0, 2.0], "verify": 0.5, "checkpoint": 0.3, "rollback": 0.7},
            "timing": {"attempt": {"median": 8, "p95": 30}, "verify": 2, "deadline": 120,
                       "backoff": {"base": 1, "factor": 2, "jitter": True}},
            "infra": {"crash_per_hour": 2}}
    out = simulate_timeline(data, 600, seed=7)
    assert (out.success, out.silent_failure, out.timeout, out.infra_failure) == (
        0.6933333333333334, 0.06166666666666667, 0.06166666666666667, 0.03)
    assert out.expected_cost == 11.438166666666666 and out.duration["mean"] == 68.37662844451567
    assert out.silent_by_mode is None and out.expected_utility is None


# ------------------------------------------------------------------ in time (section 8)
def _per_trial(events, kind: str, outcome: str | None = None):
    rows = events[events.kind == kind]
    if outcome is not None:
        rows = rows[rows.outcome == outcome]
    return rows.groupby("trial").size()


def _durations(out):
    ev = out.events
    arrive = ev[ev.kind == "arrive"].set_index("trial").time
    end = ev[ev.kind == "end"].set_index("trial").time
    return (end - arrive).sort_index()


@pytest.mark.parametrize("select", ["vote", "verifier"])
def test_parallel_samples_take_one_attempts_time(select):
    # constant 7 s attempts and 3 s verifications: n = 3 samples in parallel (and, with
    # select = "verifier", their three verifications in parallel) take 7 + 3 s, not 3 x
    data = {"steps": 3, "p": 0.6, "verifier": {"miss": 0.2, "false_reject": 0.1},
            "retries": {"per_step": 2}, "sampling": {"n": 3, "select": select},
            "timing": {"attempt": 7, "verify": 3}}
    trials = 300
    out = simulate_timeline(data, trials, seed=3, record=trials)
    ev = out.events
    samples = _per_trial(ev, "sample").reindex(range(trials), fill_value=0)
    attempts = samples // 3
    assert (samples % 3 == 0).all() and attempts.sum() == round(out.expected_attempts * trials)
    verifications = _per_trial(ev, "verify").reindex(range(trials), fill_value=0)
    assert (verifications == attempts * (3 if select == "verifier" else 1)).all()
    if select == "vote":
        assert (_per_trial(ev, "vote").reindex(range(trials), fill_value=0) == attempts).all()
    durations = _durations(out).to_numpy()
    np.testing.assert_allclose(durations, 10.0 * attempts.to_numpy(), rtol=0, atol=1e-9)
    assert not np.allclose(durations, 24.0 * attempts.to_numpy())  # negative control: 3 x 7 + 3


def test_a_faulted_attempt_takes_its_attempt_time_and_no_verification():
    data = {"steps": 3, "p": 0.7, "verifier": {"miss": 0.2}, "retries": {"per_step": 3},
            "faults": {"attempt": 0.3}, "timing": {"attempt": 7, "verify": 3},
            "cost": {"attempt": 1.0, "verify": 0.5}}
    trials = 300
    out = simulate_timeline(data, trials, seed=8, record=trials)
    ev = out.events
    faulted = _per_trial(ev, "attempt", "fault").reindex(range(trials), fill_value=0).to_numpy()
    made = _per_trial(ev, "attempt").reindex(range(trials), fill_value=0).to_numpy()
    assert faulted.sum() > 0 and (_per_trial(ev, "verify").reindex(range(trials), fill_value=0).to_numpy()
                                  == made - faulted).all()
    np.testing.assert_allclose(_durations(out).to_numpy(), 7.0 * made + 3.0 * (made - faulted), atol=1e-9)
    assert out.expected_cost == pytest.approx((made.sum() + 0.5 * (made - faulted).sum()) / trials, abs=1e-12)
    infra = ev[(ev.kind == "end") & (ev.outcome == "infra_failure")].trial.to_numpy()
    last = ev[ev.kind == "attempt"].groupby("trial").outcome.last()
    assert len(infra) > 0 and (last[infra] == "fault").all()  # the budget ran out on a fault
    assert out.infra_failure == len(infra) / trials


def test_one_llm_slot_serialises_the_samples():
    # one task at a time on one LLM slot: three 5 s samples take 15 s per attempt
    data = {"steps": 2, "p": 1.0, "sampling": {"n": 3}, "timing": {"attempt": 5},
            "fleet": {"tasks": 1}, "resources": {"llm_concurrency": 1}}
    out = simulate_timeline(data, replications=2, seed=1, record=1)
    assert out.duration["mean"] == pytest.approx(2 * 15.0, abs=1e-9)
    three = simulate_timeline({**data, "resources": {"llm_concurrency": 3}}, replications=2, seed=1)
    assert three.duration["mean"] == pytest.approx(2 * 5.0, abs=1e-9)  # control: in parallel
    ev = out.events
    assert len(ev[(ev.kind == "acquire") & (ev.resource == "llm")]) == 6
    assert out.wait["llm"] == pytest.approx(2 * (5.0 + 10.0), abs=1e-9)
    # a trial whose slowest sample ends exactly at the deadline is not late; a second earlier is
    for slots, deadline in ((1, 30.0), (3, 10.0)):
        timed = {**data, "timing": {"attempt": 5, "deadline": deadline},
                 "resources": {"llm_concurrency": slots}}
        assert simulate_timeline(timed, replications=2, seed=1).success == 1.0
        timed["timing"]["deadline"] = deadline - 1.0
        assert simulate_timeline(timed, replications=2, seed=1).timeout == 1.0


def test_rpm_counts_one_unit_per_sample():
    # 4 attempts of 3 samples = 12 calls of no duration; the bucket holds 6 and refills 0.1 a
    # second: the third attempt waits for its last call until 30 s, the fourth until 60 s
    data = {"steps": 4, "p": 1.0, "sampling": {"n": 3}, "fleet": {"tasks": 1},
            "resources": {"rpm": 6}}
    out = simulate_timeline(data, replications=2, seed=1, record=1)
    assert out.duration["mean"] == pytest.approx(60.0, abs=1e-6)
    ev = out.events
    assert len(ev[(ev.kind == "acquire") & (ev.resource == "rate_limit")]) == 12
    # negative control: one unit per attempt would fit 4 calls in the first minute's 6
    single = simulate_timeline({**data, "sampling": {"n": 1}}, replications=2, seed=1)
    assert single.duration["mean"] == 0.0


def test_a_stop_during_parallel_calls_gives_back_every_slot_at_once():
    # deadlines and crashes cut attempts of 4 parallel samples and 4 parallel LLM
    # verifications that queue for 3 LLM slots and an rpm bucket
    data = {"steps": 3, "p": 0.6, "verifier": {"false_reject": 0.1}, "retries": {"per_step": 2},
            "sampling": {"n": 4, "select": "verifier"}, "failure_modes": MODES,
            "checkpoints": {"final": True}, "faults": {"attempt": 0.2},
            "timing": {"attempt": {"mean": 2}, "verify": 1, "deadline": 40},
            "fleet": {"agents": 6, "tasks": 40},
            "resources": {"llm_concurrency": 3, "rpm": 60, "verifier_calls_llm": True},
            "infra": {"crash_per_hour": 60}}
    out = simulate_timeline(data, replications=2, seed=6, record=40)
    assert out.timeout > 0 and out.infra_failure > 0
    ev = out.events
    llm = ev[ev.resource == "llm"]
    acquired = llm[llm.kind == "acquire"].groupby("trial").size()
    released = llm[llm.kind == "release"].groupby("trial").size()
    assert acquired.equals(released.reindex(acquired.index))  # every slot taken is given back
    end = ev[ev.kind == "end"].set_index("trial")
    last = llm[llm.kind == "release"].groupby("trial").time.max()
    assert (last <= end.time.reindex(last.index) + 1e-9).all()  # by the trial's end
    stopped = end[end.outcome.isin(["timeout", "infra_failure"])].index
    holding = [t for t in stopped if t in last.index and last[t] == end.time[t]]
    assert holding  # some were stopped while holding a slot, and released it then
    arrive = ev[ev.kind == "arrive"].set_index("trial").time
    late = end[end.outcome == "timeout"]
    np.testing.assert_allclose(late.time - arrive[late.index], 40.0, atol=1e-9)
