"""relsim.plan.levers and ``relsim levers``: every row re-evaluated from its own ``set``.

Each row's ``set`` is applied here by a helper of the test's own (scenario dict, nested keys,
``Scenario.from_dict``) and evaluated again; chain rows are also checked against the closed
form (a S_r)^n written out in plain arithmetic (docs/model.md section 2).
"""

import copy
import json
import math
from pathlib import Path

import pytest

from relsim.scenario import trial_model
import relsim
from relsim.cli import main
from relsim.plan import levers
from relsim.plan.sensitivity import COLUMNS, UTILITY_COLUMNS, apply

SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"
SCENARIOS = sorted(str(path) for path in SCENARIO_DIR.glob("*.toml"))

R2 = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 3}}


def _set(data, changes):
    """The scenario dict with each dotted key set (the test's own, not relsim.plan.sensitivity.apply)."""
    out = copy.deepcopy(data)
    for dotted, value in changes.items():
        *tables, key = dotted.split(".")
        node = out
        for table in tables:
            node = node.setdefault(table, {})
        node[key] = value
    return relsim.Scenario.from_dict(out)


def _chain(p, steps, retries, miss, false_reject=0.0):
    a = p * (1 - false_reject)
    q = p * false_reject + (1 - p) * (1 - miss)
    return (a * sum(q**j for j in range(retries + 1))) ** steps


@pytest.mark.slow
@pytest.mark.parametrize("path", SCENARIOS)
def test_every_row_is_its_set_re_evaluated(path):
    scenario = relsim.Scenario.from_toml(path)
    base = relsim.evaluate(scenario)
    frame = levers(scenario)
    valued = scenario.utility is not None
    assert list(frame.columns) == list(COLUMNS) + (list(UTILITY_COLUMNS) if valued else [])
    assert len(frame) >= 1
    ranked_by = "delta_expected_utility" if valued else "delta_success"
    assert list(frame[ranked_by]) == sorted(frame[ranked_by], reverse=True)
    assert frame.attrs["baseline"]["success"] == base.success
    for row in frame.itertuples(index=False):
        variant = _set(scenario.to_dict(), row.set)
        assert variant != scenario, row.lever
        again = relsim.evaluate(variant)
        assert row.success == pytest.approx(again.success, abs=1e-12), row.lever
        assert row.delta_success == pytest.approx(again.success - base.success, abs=1e-12)
        cps = again.expected_cost / again.success
        assert row.cost_per_success == pytest.approx(cps, rel=1e-12)
        assert row.delta_cost_per_success == pytest.approx(cps - base.cost_per_success, rel=1e-9, abs=1e-12)
        if valued:
            assert row.expected_utility == pytest.approx(again.expected_utility, abs=1e-12)
            assert row.delta_expected_utility == pytest.approx(
                again.expected_utility - base.expected_utility, abs=1e-12)
        json.dumps(row.set)  # plain values: anyone can write them into a file


def test_chain_levers_against_the_closed_form():
    frame = levers(R2).set_index("lever")
    assert set(frame.index) == {
        "p +1 point on every step",
        "verifier miss halved",
        "one more retry per step",
        "one fewer step (the last)",
    }
    # docs/model.md section 5, R2: the design itself succeeds with 0.757383.
    assert round(frame.attrs["baseline"]["success"], 6) == 0.757383
    expect = {
        "p +1 point on every step": ({"p": 0.91}, _chain(0.91, 25, 3, 0.1)),
        "verifier miss halved": ({"verifier.miss": 0.05}, _chain(0.9, 25, 3, 0.05)),
        "one more retry per step": ({"retries.per_step": 4}, _chain(0.9, 25, 4, 0.1)),
        "one fewer step (the last)": ({"steps": 24}, _chain(0.9, 24, 3, 0.1)),
    }
    for lever, (changes, success) in expect.items():
        assert frame.loc[lever, "set"] == changes
        assert frame.loc[lever, "success"] == pytest.approx(success, abs=1e-12)
    assert frame.index[0] == "verifier miss halved"  # the ceiling binds: the verifier matters


def test_every_lever_of_a_design_with_everything():
    frame = levers(relsim.Scenario.from_toml(str(SCENARIO_DIR / "production_agent.toml")))
    rows = dict(zip(frame["lever"], frame["set"]))
    assert len(rows) == 14
    assert rows["verifier miss halved"] == {"verifier.miss": 0.025}
    assert rows["verifier false_reject halved"] == {"verifier.false_reject": 0.015}
    assert rows["one more retry per step"] == {"retries.per_step": 3}
    assert rows["task retry budget doubled"] == {"retries.total": 30}
    assert rows["checkpoints twice as often"] == {"checkpoints.every": 5}
    assert rows["one more rollback"] == {"checkpoints.rollbacks": 3}
    assert rows["checkpoint misses halved"] == {"checkpoints.detect": 0.95}
    assert rows["checkpoint false alarms halved"] == {"checkpoints.false_alarm": 0.01}
    assert rows["confusion entered half as often"] == {"correlation.confusion.enter": 0.15}
    assert rows["task effect halved"] == {"correlation.task_sd": 0.25}
    assert rows["step effect halved"] == {"correlation.step_sd": 0.25}
    # The hardest step is step 24 (p = 0.75): only it moves, by one point.
    hardest = rows["p +1 point on the hardest step (step 24)"]["p"]
    original = relsim.Scenario.from_toml(str(SCENARIO_DIR / "production_agent.toml")).p
    assert [round(x - y, 12) for x, y in zip(hardest, original)] == [0.0] * 23 + [0.01] + [0.0] * 6
    assert all(x == round(y + 0.01, 12) for x, y in zip(rows["p +1 point on every step"]["p"], original))
    # One fewer step: the lists lose their last entry and the end stays checked (every = 10
    # checked step 30; 29 is no multiple of 10, so at = [29]).
    shorter = rows["one fewer step (the last)"]
    assert shorter["steps"] == 29 and len(shorter["p"]) == 29 and len(shorter["cost.attempt"]) == 29
    assert shorter["checkpoints.at"] == [29]


def test_levers_that_do_not_apply_are_left_out():
    perfect = {"steps": 1, "p": 1.0}
    assert len(levers(perfect)) == 0
    no_verifier = levers({"steps": 5, "p": 0.9})
    assert list(no_verifier["lever"]) == ["one fewer step (the last)", "p +1 point on every step"]


def test_infinite_costs_are_null_in_json(capsys, tmp_path):
    path = tmp_path / "hopeless.toml"
    path.write_text('steps = 2\np = [0.5, 0.0]\n', encoding="utf-8")
    assert main(["levers", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["baseline"] == {"success": 0.0, "cost_per_success": None}
    rows = {row["lever"]: row for row in data["levers"]}
    every = rows["p +1 point on every step"]
    assert every["set"] == {"p": [0.51, 0.01]}
    assert every["success"] == pytest.approx(0.51 * 0.01)
    assert every["delta_cost_per_success"] is None  # finite minus infinite: -inf, null in JSON
    fewer = rows["one fewer step (the last)"]
    assert fewer["success"] == 0.5 and fewer["cost_per_success"] == pytest.approx(2.0)


def test_cli_json_matches_the_function(capsys):
    assert main(["levers", str(SCENARIO_DIR / "verifier_ceiling.toml"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    frame = levers(relsim.Scenario.from_toml(str(SCENARIO_DIR / "verifier_ceiling.toml")))
    assert [row["lever"] for row in data["levers"]] == list(frame["lever"])
    for row, expected in zip(data["levers"], frame.to_dict("records")):
        assert set(row) == set(COLUMNS)
        assert row["set"] == expected["set"]
        assert row["success"] == pytest.approx(expected["success"], abs=1e-15)


def test_cli_text(capsys):
    assert main(["levers", str(SCENARIO_DIR / "lesson_25_steps.toml")]) == 0
    out = capsys.readouterr().out
    assert "exact success 0.975298" in out
    for lever in levers(relsim.Scenario.from_toml(str(SCENARIO_DIR / "lesson_25_steps.toml")))["lever"]:
        assert lever in out


def test_why_a_stricter_verifier_lowers_the_production_agents_success():
    # README, docs/design-reviews.md and docs/commands/levers.md explain the "verifier miss
    # halved" row: a rejected wrong attempt is retried by a confused agent and runs out of the
    # step's 2 retries, where an accepted one was caught at a checkpoint and redone focused;
    # the task-wide pool plays no part. Each variant is evaluated exactly.
    base = relsim.Scenario.from_toml(str(SCENARIO_DIR / "production_agent.toml")).to_dict()

    def dip(change):
        data = copy.deepcopy(base)
        change(data)
        before = relsim.evaluate(data).success
        data["verifier"]["miss"] /= 2
        return before - relsim.evaluate(data).success

    assert dip(lambda d: None) > 0  # the row of the table
    assert dip(lambda d: d["retries"].pop("total")) > 0  # no pool: the same dip
    assert dip(lambda d: d["correlation"].pop("confusion")) < 0  # no confusion: a gain
    assert dip(lambda d: d["checkpoints"].update(rollbacks=0)) < 0  # no redo: a gain
    assert dip(lambda d: d["retries"].update(per_step=3)) < 0  # a retry to spare: a gain


def test_the_help_says_what_the_levers_are_ranked_by(capsys):
    # With a [utility] table the rows are ranked by the change in expected utility, and the
    # largest gain in success can rank last (stroebl: one more retry; docs/model.md section
    # 8), so a help line that promises "moves success most" would mislead.
    frame = levers(relsim.Scenario.from_toml(str(SCENARIO_DIR / "stroebl.toml")))
    assert frame.attrs["ranked_by"] == "delta_expected_utility"
    assert frame["delta_success"].idxmax() != frame.index[0]  # success alone would rank otherwise
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = " ".join(capsys.readouterr().out.split())  # argparse wraps the help lines
    line = listed.split(" levers ", 1)[1].split(" report ", 1)[0]
    assert "expected utility" in line and "success" in line


@pytest.mark.parametrize(
    "argv, message",
    [
        (["levers", "no/such.toml"], "no/such.toml: cannot read"),
        (["levers"], "the following arguments are required: SCENARIO"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_apply_sets_dotted_keys_and_validates():
    s = apply(R2, {"verifier.false_reject": 0.1, "checkpoints.final": True})
    assert s.verifier.false_reject == 0.1 and trial_model(s).checkpoint_positions == (25,)
    with pytest.raises(relsim.ScenarioError, match="verifier.miss: must be a probability in"):
        apply(R2, {"verifier.miss": 2})
    with pytest.raises(relsim.ScenarioError, match="did you mean 'miss'"):
        apply(R2, {"verifier.mis": 0.1})
    with pytest.raises(ValueError, match="^changes: must be a mapping"):
        apply(R2, [("steps", 3)])
    assert math.isclose(relsim.evaluate(apply(R2, {})).success, relsim.evaluate(R2).success)


def test_one_fewer_step_trims_every_per_step_list():
    design = {
        "steps": 3,
        "p": [0.9, 0.8, 0.7],
        "verifier": {"miss": [0.1, 0.2, 0.3], "false_reject": [0.0, 0.01, 0.02]},
        "retries": {"per_step": [1, 2, 3]},
        "checkpoints": {"at": [1, 2, 3], "detect": 0.5, "rollbacks": 1},
        "cost": {"attempt": [1.0, 2.0, 3.0]},
    }
    rows = dict(zip(*(lambda f: (f["lever"], f["set"]))(levers(design))))
    assert rows["one fewer step (the last)"] == {
        "steps": 2,
        "p": [0.9, 0.8],
        "verifier.miss": [0.1, 0.2],
        "verifier.false_reject": [0.0, 0.01],
        "retries.per_step": [1, 2],
        "cost.attempt": [1.0, 2.0],
        "checkpoints.at": [1, 2],  # not a per-step list, though it has three entries
    }
    # The hardest step is the third (p = 0.7); "one more retry" raises each step's budget.
    assert rows["p +1 point on the hardest step (step 3)"] == {"p": [0.9, 0.8, 0.71]}
    assert rows["one more retry per step"] == {"retries.per_step": [2, 3, 4]}


# ------------------------------------------------------------------------------ time levers
def _paired_interval(base, other, key):
    """The change's 95% t interval from the per-replication differences (the test's own)."""
    import numpy as np
    from scipy import stats

    d = np.asarray(other.replication_values[key]) - np.asarray(base.replication_values[key])
    half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    return d.mean() - half, d.mean() + half


QUEUED = {"steps": 2, "p": 0.9, "verifier": {"miss": 0.2}, "retries": {"per_step": 1},
          "checkpoints": {"final": True, "human": True},
          "timing": {"attempt": {"mean": 5}, "deadline": 900},
          "fleet": {"arrivals": "poisson", "rate_per_hour": 40, "agents": 3, "tasks": 200},
          "resources": {"reviewers": 2, "review": {"mean": 150}, "llm_concurrency": 2,
                        "rpm": 30, "tpm": 30000, "tokens": 500},
          "targets": {"duration_p90": 600, "success": 0.5}}


@pytest.mark.slow
def test_time_levers_are_their_sets_run_on_the_baselines_seeds():
    from relsim.plan import time_levers

    table = time_levers(QUEUED, replications=3, seed=2)
    assert sorted(table["lever"]) == sorted([
        "one more reviewer", "one more agent", "one more LLM slot", "rpm doubled", "tpm doubled",
        "review 25% faster", "deadline 50% longer"])
    assert table.attrs["quantities"] == ("success", "duration_p90")
    assert list(table["met"]) == sorted(table["met"], reverse=True)
    base = relsim.simulate_timeline(QUEUED, replications=3, seed=2)
    assert table.attrs["baseline"]["duration_p90"] == base.duration["p90"]
    for row in table.to_dict("records"):
        variant = _set(relsim.Scenario.from_dict(QUEUED).to_dict(), row["set"])
        again = relsim.simulate_timeline(variant, replications=3, seed=2)
        assert row["duration_p90"] == again.duration["p90"], row["lever"]
        assert row["status_duration_p90"] == again.targets["duration_p90"]["status"]
        assert row["delta_duration_p90"] == pytest.approx(again.duration["p90"] - base.duration["p90"])
        low, high = _paired_interval(base, again, "duration_p90")
        assert (row["delta_duration_p90_low"], row["delta_duration_p90_high"]) == pytest.approx((low, high))
    faster = table.set_index("lever").loc["review 25% faster", "set"]
    assert faster == {"resources.review": {"mean": 112.5}}


@pytest.mark.slow
def test_a_deadline_lever_of_independent_trials_combines_the_two_runs_errors():
    from relsim.plan import time_levers

    harness = {"steps": 3, "p": 0.8, "verifier": {}, "retries": {"per_step": 2},
               "timing": {"attempt": {"median": 10, "p95": 40}, "deadline": 40}}
    table = time_levers(harness, trials=1500, seed=1)
    assert list(table["lever"]) == ["deadline 50% longer"] and table.at[0, "set"] == {"timing.deadline": 60.0}
    assert "throughput_per_hour" not in table.attrs["quantities"]  # a batch has no rate
    base = relsim.simulate_timeline(harness, 1500, seed=1)
    longer = relsim.simulate_timeline({**harness, "timing": {**harness["timing"], "deadline": 60}},
                                      1500, seed=1)
    se = math.hypot(base.standard_errors["success"], longer.standard_errors["success"])
    delta = longer.success - base.success
    assert table.at[0, "delta_success"] == pytest.approx(delta) and delta > 0
    assert table.at[0, "delta_success_low"] == pytest.approx(delta - 1.959963984540054 * se)


def test_cost_per_success_change_is_paired_through_its_linearisation():
    from relsim.plan.sensitivity import _paired

    base = relsim.simulate_timeline(QUEUED, replications=4, seed=3)
    other = relsim.simulate_timeline(_set(base_dict := relsim.Scenario.from_dict(QUEUED).to_dict(),
                                          {"resources.reviewers": 3}), replications=4, seed=3)
    assert base_dict["resources"]["reviewers"] == 2
    delta, low, high = _paired("cost_per_success", base, other)
    assert delta == pytest.approx(other.cost_per_success - base.cost_per_success)
    assert low <= delta <= high


def test_levers_cli_adds_the_time_levers(capsys, tmp_path):
    path = tmp_path / "queued.toml"
    path.write_text("""steps = 1
p = 1.0
[checkpoints]
final = true
human = true
[fleet]
arrivals = "poisson"
rate_per_hour = 50
tasks = 150
[resources]
reviewers = 2
review = { mean = 120 }
[targets]
duration_mean = 200
""", encoding="utf-8")
    assert main(["levers", str(path), "--replications", "2", "--seed", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["time"]["replications"] == 2 and data["time"]["seed"] == 4
    assert sorted(row["lever"] for row in data["time"]["levers"]) == ["one more reviewer", "review 25% faster"]
    assert main(["levers", str(path), "--replications", "2", "--seed", "4"]) == 0
    out = capsys.readouterr().out
    assert "time levers (timeline, 2 replications a run, seed 4" in out
    assert "one more reviewer (resources.reviewers = 3)" in out and "95% interval" in out
    status = main(["levers", str(path), "--trials", "10"])
    assert status == 2 and "--trials: not for a workload" in capsys.readouterr().err


@pytest.mark.parametrize("flag, value", [("--trials", "5"), ("--replications", "5"), ("--seed", "5")])
def test_levers_refuses_a_time_flag_for_a_scenario_without_time(capsys, flag, value):
    # no time table, no time levers: the flag was silently ignored (--replications was
    # refused asking for --trials, ignored too)
    lesson = str(Path(__file__).resolve().parents[1] / "scenarios" / "lesson_25_steps.toml")
    assert main(["levers", lesson, flag, value]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"relsim: error: {flag}: sets the time levers' timeline runs, but the "
                            "scenario has no time table ([timing], [fleet], [resources], [infra], "
                            "[targets]): leave it out\n")
    assert main(["levers", lesson]) == 0  # and without it, the levers
