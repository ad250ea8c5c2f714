"""The planner on docs/model.md section 8: ``objective="utility"``, ``--for samples``,
``--for escalation``, the refusals, and the levers of the new tables.

Numbers come from outside the planner: MODEL.md section 8's reference checks (Stroebl et al.
2024; the vote mixture of Chen et al. 2024), binomial sums and verified-step closed forms
written out here, and brute force over every design.
"""

from __future__ import annotations

import itertools
import json
import re
import math
from pathlib import Path

import pytest

import relsim
from relsim import plan as planner
from relsim.cli import main
from relsim.cli._args import EXIT_OK, EXIT_USAGE
from relsim.plan.sensitivity import COLUMNS, apply, levers

ROOT = Path(__file__).resolve().parents[1]
STROEBL_FILE = ROOT / "scenarios" / "stroebl.toml"


def stroebl(silent_value: float, **extra) -> relsim.Scenario:
    """MODEL.md section 8: two classes, one step, miss 0.25, false_reject 0, a silent failure
    worth ``silent_value``."""
    data = {
        "steps": 1,
        "classes": [{"weight": 0.58, "p": 0.87}, {"weight": 0.42, "p": 0.13}],
        "verifier": {"miss": 0.25, "false_reject": 0.0},
        "utility": {"success": 1.0, "silent_failure": silent_value, "detected_failure": 0.0},
        **extra,
    }
    return relsim.Scenario.from_dict(data)


def stroebl_utility(silent_value: float, retries: int) -> float:
    """The mixture of verified steps, by hand: a class with ``p`` accepts a right answer with
    ``a = p``, a wrong one with ``w = (1-p)/4``, and retries ``r`` times: each is multiplied
    by ``S_r = sum_j q^j``, ``q = 3(1-p)/4``."""
    total = 0.0
    for weight, p in ((0.58, 0.87), (0.42, 0.13)):
        q = 0.75 * (1 - p)
        s_r = sum(q**j for j in range(retries + 1))
        total += weight * (p * s_r + silent_value * 0.25 * (1 - p) * s_r)
    return total


# ------------------------------------------------------------------ Stroebl et al. (2024)
@pytest.mark.parametrize("silent_value, best, value", [
    (-0.7, 2, 0.524567), (-1.0, 1, 0.472381), (-2.0, 0, 0.338800)])
def test_stroebl_best_retries_and_utilities(silent_value, best, value):
    plan = planner.retries(stroebl(silent_value), objective="utility")
    assert plan.value == best and round(plan.expected_utility, 6) == value
    # the hand-written mixture agrees, and no budget up to 60 beats the plan's
    by_hand = [stroebl_utility(silent_value, r) for r in range(61)]
    assert round(by_hand[best], 6) == value and max(by_hand) == pytest.approx(by_hand[best], abs=1e-12)
    assert plan.feasible and plan.details["objective"] == "utility"
    assert plan.details["meets_target"] is None and plan.target is None
    assert "not the criterion" in plan.details["criterion"]
    # MODEL.md: at per_step = 0 and V = -1 the utility is 0.449000
    assert round(stroebl_utility(-1.0, 0), 6) == 0.449


def test_stroebl_through_solve_and_the_cli(capsys):
    plan = planner.solve(stroebl(-1.0), "retries", objective="utility")
    assert plan.value == 1
    assert main(["solve", str(STROEBL_FILE), "--for", "retries", "--objective", "utility",
                 "--json"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert out["value"] == 1 and round(out["expected_utility"], 6) == 0.472381
    assert out["target"] is None and out["details"]["meets_target"] is None
    # the file's own design is the best one: one retry
    assert round(relsim.evaluate(relsim.Scenario.from_toml(STROEBL_FILE)).expected_utility, 6) == 0.472381
    assert main(["solve", str(STROEBL_FILE), "--for", "retries", "--objective", "utility"]) == EXIT_OK
    text = capsys.readouterr().out
    assert "expected utility (the target is not the criterion)" in text
    assert "expected utility               0.472381" in text


def test_a_utility_plan_says_whether_it_meets_a_given_target(capsys):
    met = planner.retries(stroebl(-1.0), 0.6, objective="utility")
    missed = planner.retries(stroebl(-1.0), 0.7, objective="utility")
    # the target is not the criterion: the same design either way, judged against each
    assert met.value == missed.value == 1 and round(met.success, 6) == 0.644025
    assert met.details["meets_target"] is True and missed.details["meets_target"] is False
    assert met.feasible and missed.feasible
    code = main(["solve", str(STROEBL_FILE), "--for", "retries", "--objective", "utility",
                 "--target", "0.7"])
    assert code == EXIT_OK and "meets the target               no (target 0.7)" in capsys.readouterr().out


def test_equal_utilities_take_the_least_budget():
    # u(r) = 1 - 0.5^(r+1) rises to 1; budgets within 1e-12 of the best are equal, and the
    # least of them is r = 39 (0.5^40 = 9.1e-13 <= 1e-12 < 0.5^39)
    s = relsim.Scenario.from_dict({"steps": 1, "p": 0.5, "verifier": {}, "utility": {}})
    plan = planner.retries(s, objective="utility")
    assert plan.value == 39
    assert 0.5**40 <= 1e-12 < 0.5**39


def _chain_utility(p, miss, budgets, silent_value, cost_weight):
    """A chain of verified steps by hand (docs/model.md section 2), attempt cost 1."""
    success, reach, cost = 1.0, 1.0, 0.0
    for prob, m, r in zip(p, miss, budgets):
        a, q = prob, (1 - prob) * (1 - m)
        s_r = sum(q**j for j in range(r + 1))
        cost += reach * s_r
        success *= a * s_r
        reach *= 1 - q ** (r + 1)
    silent = reach - success
    return success + silent_value * silent - cost_weight * cost


# Two classes over two steps: with one class every retry pays or none does (the same bet each
# time), so the best budgets are 0 or unlimited; a mixture makes the optimum interior.
CLASSES = [(0.5, [0.6, 0.9]), (0.5, [0.4, 0.3])]
MISS = [0.4, 0.5]
MIXTURE = {"steps": 2, "classes": [{"weight": w, "p": p} for w, p in CLASSES],
           "verifier": {"miss": MISS}, "utility": {"silent_failure": -0.5, "cost_weight": 0.05}}


def _brute_force_allocation():
    values = {b: sum(w * _chain_utility(p, MISS, b, -0.5, 0.05) for w, p in CLASSES)
              for b in itertools.product(range(40), repeat=2)}
    top = max(values.values())
    best = min((b for b, v in values.items() if v >= top - 1e-12), key=lambda b: (sum(b), b))
    return best, top, values


def test_allocation_for_utility_is_the_brute_force_optimum():
    s = relsim.Scenario.from_dict(MIXTURE)
    plan = planner.allocation(s, objective="utility")
    best, top, values = _brute_force_allocation()
    assert best == (2, 0)
    assert plan.details["optimal"] is True and "every allocation" in plan.details["method"]
    assert plan.value == best and plan.expected_utility == pytest.approx(top, abs=1e-12)
    # a negative control: the best uniform budget (1) is worse by more than 0.004
    uniform = planner.retries(s, objective="utility")
    assert uniform.value == 1 and uniform.expected_utility == pytest.approx(values[(1, 1)], abs=1e-12)
    assert uniform.expected_utility < plan.expected_utility - 0.004


def test_allocation_for_utility_by_coordinate_ascent(monkeypatch):
    from relsim.plan import allocate

    monkeypatch.setattr(allocate, "MAX_ALLOCATIONS", 0)  # too many to judge every one
    plan = planner.allocation(relsim.Scenario.from_dict(MIXTURE), objective="utility")
    best, top, _ = _brute_force_allocation()
    assert plan.details["optimal"] is False and "coordinate ascent" in plan.details["method"]
    assert plan.value == best and plan.expected_utility == pytest.approx(top, abs=1e-12)


def test_checkpoints_for_utility_is_the_best_spacing():
    s = relsim.Scenario.from_dict({
        "steps": 6, "p": 0.9, "checkpoints": {"every": 1, "final": True, "rollbacks": 2,
                                              "detect": 0.9},
        "cost": {"checkpoint": 0.3}, "utility": {"silent_failure": -3.0, "cost_weight": 0.05}})
    plan = planner.checkpoints(s, objective="utility")
    utilities = {k: relsim.evaluate(apply(s, {"checkpoints.every": k})).expected_utility
                 for k in range(1, 7)}
    top = max(utilities.values())
    assert plan.value == max(k for k, u in utilities.items() if u >= top - 1e-12)


# ------------------------------------------------------------------------------ samples
# MODEL.md section 8 (Chen et al. 2024): a binary vote over a mixture (a = 0.6 at p 0.8, 0.4 at
# p 0.3), no verifier, one step, utility success 1: the vote peaks at n = 5 (0.630480).
VOTE = {"steps": 1, "classes": [{"weight": 0.6, "p": 0.8}, {"weight": 0.4, "p": 0.3}],
        "sampling": {"n": 1, "select": "vote", "wrong_answers": 1}, "utility": {"success": 1.0}}


def _vote(n):
    """The mixture of majority votes, by hand: P(Binomial(n, p) > n/2) plus half the tie."""
    def one(p):
        above = sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n // 2 + 1, n + 1))
        tie = math.comb(n, n // 2) * (p * (1 - p)) ** (n // 2) if n % 2 == 0 else 0.0
        return above + tie / 2
    return 0.6 * one(0.8) + 0.4 * one(0.3)


def test_the_vote_mixture_peaks_at_five_samples():
    s = relsim.Scenario.from_dict(VOTE)
    plan = planner.samples(s, objective="utility")
    assert plan.value == 5 and round(plan.expected_utility, 6) == 0.630480
    by_hand = {n: _vote(n) for n in range(1, 65)}
    assert round(by_hand[5], 6) == 0.630480 and max(by_hand.values()) == pytest.approx(by_hand[5], abs=1e-15)
    assert relsim.formulas.majority_vote(0.8, 5) == pytest.approx((by_hand[5] - 0.4 * relsim.formulas.majority_vote(0.3, 5)) / 0.6)
    # an even n ties n - 1 (random tie-breaks): 6 is as good as 5, and the least is taken
    six = relsim.evaluate(apply(s, {"sampling.n": 6}))
    assert six.expected_utility == pytest.approx(plan.expected_utility, abs=1e-12)
    assert by_hand[6] == pytest.approx(by_hand[5], abs=1e-15)


def test_samples_for_a_target_is_the_least_n_that_meets_it(capsys, tmp_path):
    s = relsim.Scenario.from_dict(VOTE)
    least = min(n for n in range(1, 65) if _vote(n) >= 0.62)
    assert least == 3 and planner.samples(s, 0.62).value == 3
    # out of reach: infeasible, the ceiling is the peak and the nearest design its least n
    plan = planner.samples(s, 0.7)
    assert not plan.feasible and plan.value == 5 and round(plan.ceiling, 6) == 0.630480
    path = _write(tmp_path, "steps = 1\n[sampling]\nn = 1\n[utility]\n[[classes]]\nweight = 0.6\n"
                  "p = 0.8\n[[classes]]\nweight = 0.4\np = 0.3\n")
    assert main(["solve", path, "--for", "samples", "--objective", "utility", "--json"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert out["value"] == 5 and round(out["expected_utility"], 6) == 0.630480
    assert main(["solve", path, "--for", "samples", "--target", "0.7"]) == 3
    assert "INFEASIBLE" in capsys.readouterr().out


# ------------------------------------------------------------------------------ escalation
# Two identical steps, each a ladder of three rungs over five retries (a cheap model, a
# middling one, a strong dear one), a verifier that misses a tenth of wrong answers.
RUNG_P, RUNG_COST, BUDGET, LADDER_MISS = [0.5, 0.8, 0.97], [0.2, 1.0, 4.0], 5, 0.1
LADDER = {"steps": 2, "p": RUNG_P[0], "verifier": {"miss": LADDER_MISS},
          "retries": {"per_step": BUDGET}, "cost": {"attempt": RUNG_COST[0]},
          "escalation": {"after": [1, 2], "p": RUNG_P[1:], "attempt_cost": RUNG_COST[1:]},
          "utility": {"silent_failure": -2.0, "cost_weight": 0.1}}


def _ladders_by_hand():
    """Every after, judged with relsim.formulas.ladder_step (one step) chained twice by hand."""
    out = {}
    for after in itertools.combinations(range(1, BUDGET + 1), 2):
        step = relsim.formulas.ladder_step(RUNG_P, list(after), BUDGET, miss=LADDER_MISS,
                                           attempt_cost=RUNG_COST)
        passed = 1 - float(step.exhausted)
        success = float(step.success) ** 2
        silent = passed**2 - success
        cost = float(step.expected_cost) * (1 + passed)
        out[after] = (success, cost / success, success - 2.0 * silent - 0.1 * cost)
    return out


def test_escalation_is_the_brute_force_ladder():
    s = relsim.Scenario.from_dict(LADDER)
    every = _ladders_by_hand()
    assert len(every) == 10
    feasible = {a: v for a, v in every.items() if v[0] >= 0.85}
    cheapest = min(feasible, key=lambda a: feasible[a][1])
    plan = planner.escalation(s, 0.85)
    assert cheapest == (2, 5) and plan.value == cheapest and plan.feasible
    assert plan.cost_per_success == pytest.approx(every[cheapest][1], rel=1e-9)
    best = max(every, key=lambda a: every[a][2])
    useful = planner.escalation(s, objective="utility")
    assert best == (1, 5) and useful.value == best
    assert useful.expected_utility == pytest.approx(every[best][2], abs=1e-9)
    # out of reach: the best success is the ceiling
    out = planner.escalation(s, 0.9)
    assert not out.feasible and out.ceiling == pytest.approx(max(v[0] for v in every.values()), abs=1e-12)


def test_too_many_ladders_are_refused(capsys, tmp_path):
    path = _write(tmp_path, "steps = 1\np = 0.5\ntarget = 0.9\n[verifier]\n[retries]\nper_step = 40\n"
                  "[escalation]\nafter = [1, 2, 3]\np = [0.6, 0.7, 0.8]\n")
    _refused(capsys, ["solve", path, "--for", "escalation"], "9880 ladders", "2000")


# ------------------------------------------------------------------------------ refusals
def _write(tmp_path, text, name="design.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _refused(capsys, argv, *words):
    assert main(argv) == EXIT_USAGE
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and "\n" not in err and err.startswith("relsim: error: ")
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize("for_", ["verifier", "p"])
def test_requirements_refuse_an_objective(for_, capsys):
    _refused(capsys, ["solve", str(STROEBL_FILE), "--for", for_, "--objective", "utility",
                      "--target", "0.6"], "--objective", f"--for {for_}", "requirement")
    with pytest.raises(ValueError, match=f"objective: must be left out for plan.{for_}"):
        planner.solve(stroebl(-1.0), for_, 0.6, objective="utility")


def test_utility_needs_a_utility_table(tmp_path, capsys):
    path = _write(tmp_path, "steps = 2\np = 0.9\n[verifier]\nmiss = 0.1\n")
    _refused(capsys, ["solve", path, "--for", "retries", "--objective", "utility"],
             "utility:", "[utility]")
    with pytest.raises(ValueError, match=r"utility: must be a \[utility\] table"):
        planner.retries(relsim.Scenario.from_toml(path), objective="utility")


@pytest.mark.parametrize("for_, table", [("samples", "[sampling]"), ("escalation", "[escalation]")])
def test_samples_and_escalation_need_their_table(for_, table, tmp_path, capsys):
    path = _write(tmp_path, "steps = 2\np = 0.9\ntarget = 0.5\n[verifier]\nmiss = 0.1\n"
                  "[retries]\nper_step = 2\n")
    _refused(capsys, ["solve", path, "--for", for_], table)
    with pytest.raises(ValueError, match=re.escape(table)):
        planner.solve(relsim.Scenario.from_toml(path), for_, 0.5)


def test_an_objective_a_plan_does_not_take_is_refused(capsys):
    _refused(capsys, ["solve", str(STROEBL_FILE), "--for", "retries", "--objective",
                      "expected_cost"], "--objective: must be utility with --for retries")
    with pytest.raises(ValueError, match="objective: must be one of utility"):
        planner.retries(stroebl(-1.0), objective="expected_cost")


# ------------------------------------------------------------------------------ levers
def test_the_p_lever_of_a_mixture_raises_every_class():
    table = levers(stroebl(-1.0)).set_index("lever")
    row = table.loc["p +1 point on every step"]
    assert [c["p"] for c in row["set"]["classes"]] == [0.88, 0.14]
    by_hand = 0.58 * 0.88 + 0.42 * 0.14  # no retries: success is the mixture of p
    assert row["success"] == pytest.approx(by_hand, abs=1e-12) and row["delta_success"] > 0


def _mixture_utility(silent_value: float, retries: int, miss: float) -> float:
    """Stroebl's mixture at verifier ``miss``, by hand: a class with ``p`` ships a right answer
    with chance ``p S_r`` and a wrong one with ``miss (1-p) S_r``, ``S_r = sum_j q^j`` over
    ``j <= r``, ``q = (1-miss)(1-p)``; no cost weight."""
    total = 0.0
    for weight, p in ((0.58, 0.87), (0.42, 0.13)):
        s_r = sum(((1 - miss) * (1 - p)) ** j for j in range(retries + 1))
        total += weight * (p + silent_value * miss * (1 - p)) * s_r
    return total


def test_levers_of_a_valued_design_are_ranked_by_expected_utility(capsys):
    # the file's design: one retry, where utility peaks; one more retry raises success but
    # ships more wrong answers, so it is a loss in what the [utility] table values
    table = levers(relsim.Scenario.from_toml(str(STROEBL_FILE)))
    assert table.attrs["ranked_by"] == "delta_expected_utility"
    base = _mixture_utility(-1.0, 1, 0.25)
    assert table.attrs["baseline"]["expected_utility"] == pytest.approx(base, abs=1e-12)
    by_hand = {"verifier miss halved": _mixture_utility(-1.0, 1, 0.125),
               "one more retry per step": _mixture_utility(-1.0, 2, 0.25)}
    rows = table.set_index("lever")
    for lever, utility in by_hand.items():
        assert rows.loc[lever, "expected_utility"] == pytest.approx(utility, abs=1e-12)
        assert rows.loc[lever, "delta_expected_utility"] == pytest.approx(utility - base, abs=1e-12)
    retry = rows.loc["one more retry per step"]
    assert retry["delta_success"] > 0 > retry["delta_expected_utility"]
    assert list(table["delta_expected_utility"]) == sorted(table["delta_expected_utility"], reverse=True)
    # negative control: by success alone the retry would come first
    assert table.sort_values("delta_success", ascending=False).iloc[0]["lever"] == "one more retry per step"
    assert table.iloc[-1]["lever"] == "one more retry per step"
    # the command prints the ranking and the utility columns; without [utility] neither
    assert main(["levers", str(STROEBL_FILE)]) == 0
    out = capsys.readouterr().out
    assert "1 step, exact success" in out and "expected utility 0.472381" in out
    assert "ranked by the change in expected utility" in out
    assert out.index("verifier miss halved") < out.index("one more retry per step")
    plain = levers(relsim.Scenario.from_dict(
        {"steps": 1, "p": 0.5, "verifier": {"miss": 0.25}, "retries": {"per_step": 1}}))
    assert list(plain.columns) == list(COLUMNS) and plain.attrs["ranked_by"] == "delta_success"





def test_the_levers_of_samples_ladders_and_failure_modes():
    s = relsim.Scenario.from_dict({
        "steps": 2, "p": 0.7, "verifier": {}, "retries": {"per_step": 2},
        "cost": {"attempt": 1.0},
        "escalation": {"after": [2], "p": [0.95]},
        "sampling": {"n": 2, "select": "vote", "wrong_answers": 1},
        "failure_modes": [{"name": "tool_error", "share": 0.4, "miss": 0.0},
                          {"name": "hallucination", "share": 0.6, "miss": 0.3}]})
    table = levers(s).set_index("lever")
    base = relsim.evaluate(s)
    sample = table.loc["one more sample per attempt"]
    assert sample["set"] == {"sampling.n": 3} and sample["delta_success"] > 0
    earlier = table.loc["escalate one attempt earlier"]
    assert earlier["set"] == {"escalation.after": [1]} and earlier["delta_success"] > 0
    cheaper = table.loc["rung 0 attempt cost halved"]
    # the rung kept its cost (it defaulted to rung 0's): success the same, cost per success down
    assert cheaper["set"] == {"cost.attempt": 0.5, "escalation.attempt_cost": [1.0]}
    assert cheaper["delta_success"] == 0 and cheaper["delta_cost_per_success"] < 0
    mode = table.loc["failure mode hallucination: miss halved"]
    assert mode["set"]["failure_modes"][1]["miss"] == 0.15 and mode["delta_success"] > 0
    assert "failure mode tool_error: miss halved" not in table.index  # it misses nothing
    assert "verifier miss halved" not in table.index  # each mode has its own
    for row in table.itertuples():
        again = relsim.evaluate(apply(s, row.set))
        assert row.success == again.success
        assert row.delta_success == pytest.approx(again.success - base.success, abs=1e-12)


# ------------------------------------------------------------------------------ the report
def _outcome_section(scenario, exact):
    """The report's outcome section for ``scenario`` given its exact outcome (set here, so
    that the display is checked on numbers chosen to tell its rows apart)."""
    import pandas as pd

    from relsim.report._sections import Context, outcome

    ctx = Context(scenario=scenario, source="test", target=None, trials=0, seed=0)
    ctx.__dict__["exact"] = exact
    ctx.__dict__["levers"] = pd.DataFrame(columns=list(COLUMNS))
    return outcome(ctx).body


def test_the_report_shows_utility_infra_failures_and_silent_failures_by_mode():
    s = relsim.Scenario.from_dict({
        "steps": 2, "p": 0.9, "verifier": {}, "retries": {"per_step": 1},
        "failure_modes": [{"name": "tool_error", "share": 0.4, "miss": 0.0},
                          {"name": "hallucination", "share": 0.6, "miss": 0.3}],
        "faults": {"attempt": 0.02}, "utility": {"silent_failure": -2.0}})
    exact = relsim.Outcome(success=0.8, silent_failure=0.125, detected_failure=0.05,
                           infra_failure=0.025, expected_attempts=2.5, expected_cost=2.5,
                           silent_by_mode={"tool_error": 0.0, "hallucination": 0.125},
                           expected_utility=0.55)
    html = _outcome_section(s, exact)
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    text = [re.sub(r"<[^>]+>", "|", row) for row in rows]
    assert any("infrastructure failure" in t and "|0.025|" in t for t in text)
    assert any("expected utility" in t and "|0.55|" in t for t in text)
    assert any("|hallucination|" in t and "|0.3|" in t and "|0.125|" in t and "|100|" in t for t in text)
    assert any("|tool_error|" in t and "|0|" in t for t in text)
    # without the tables, none of these rows
    plain = relsim.Scenario.from_dict({"steps": 2, "p": 0.9})
    html = _outcome_section(plain, relsim.evaluate(plain))
    assert "infrastructure failure" not in html and "expected utility" not in html
    assert "failure mode" not in html


def test_the_report_lists_a_valued_designs_levers_by_utility():
    from relsim.report._sections import Context, levers as levers_section

    design = relsim.Scenario.from_toml(str(STROEBL_FILE))
    ctx = Context(scenario=design, source="test", target=None, trials=0, seed=0)
    body = levers_section(ctx).body
    rows = [re.sub(r"<[^>]+>", "|", row) for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]
    assert "expected utility" in rows[0] and "by the gain in expected utility" in body
    order = [next(lever for lever in ("verifier miss halved", "p +1 point on every step",
                                      "one more retry per step") if f"|{lever}|" in row)
             for row in rows[1:]]
    assert order == ["verifier miss halved", "p +1 point on every step", "one more retry per step"]
    retry = rows[-1].split("|")
    assert f"{_mixture_utility(-1.0, 2, 0.25):.6g}" in retry  # its utility, by hand
    # the outcome section's "best single change" is the table's first row (not the retry,
    # which gains the most success)
    from relsim.report._sections import outcome

    shown = outcome(ctx).body
    assert "with: verifier miss halved" in shown and "with: one more retry" not in shown


def test_a_lever_that_only_saves_cost_leads_a_valued_design():
    # One step, rung 0 (p 0.7) for two attempts, then a rung of p 0.95; utility charges the
    # cost. Halving rung 0's cost keeps success and saves 0.5 x its expected attempts,
    # 1 + 0.3 (a second one after a rejected first): utility +0.65, the largest gain.
    from relsim.report._sections import Context, outcome

    design = relsim.Scenario.from_dict({
        "steps": 1, "p": 0.7, "verifier": {}, "retries": {"per_step": 2},
        "cost": {"attempt": 1.0}, "escalation": {"after": [2], "p": [0.95]},
        "utility": {"cost_weight": 1.0}})
    table = levers(design)
    first = table.iloc[0]
    assert first["lever"] == "rung 0 attempt cost halved" and first["delta_success"] == 0
    assert first["delta_expected_utility"] == pytest.approx(0.5 * (1 + 0.3), abs=1e-12)
    # the report's outcome section shows it as the best single change (by success alone it
    # gains nothing, and no change would be shown)
    shown = outcome(Context(scenario=design, source="test", target=None, trials=0, seed=0)).body
    assert "with: rung 0 attempt cost halved" in shown


def test_the_why_of_a_mixture_capped_by_its_verifier_averages_the_classes():
    # Two classes behind a verifier with miss 0.3: a class of per-attempt success p is capped,
    # however many retries, at a/(a+w) = p(1-fr) / (p(1-fr) + (1-p) miss) (docs/model.md),
    # and the one-step chain at the weighted average of the classes' caps.
    design = relsim.Scenario.from_dict({
        "steps": 1, "target": 0.9, "verifier": {"miss": 0.3}, "retries": {"per_step": 2},
        "classes": [{"weight": 0.25, "p": 0.2}, {"weight": 0.75, "p": 0.9}],
    })
    caps = [p / (p + (1 - p) * 0.3) for p in (0.2, 0.9)]
    ceiling = 0.25 * caps[0] + 0.75 * caps[1]
    result = planner.retries(design)
    assert not result.feasible and result.ceiling == pytest.approx(ceiling, abs=1e-6)
    assert (f"from {min(caps):.6f} to {max(caps):.6f} over the 2 task classes, and the chain, "
            f"averaged over them, at {ceiling:.6f}") in result.reason
