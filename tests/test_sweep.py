"""relsim.sweep (the function) and relsim.sweeps: grid files, exact sweeps against evaluate, seeds, resume, bad grids, the CLI.

The dask paths (LocalCluster, an existing scheduler) are in test_sweep_dask.py; the frontier
and its figure in test_sweep_frontier.py.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from relsim.plan import frontier

import relsim
from relsim.cli import main
from relsim.errors import RelsimError
from relsim.scenario import Scenario, ScenarioError
from relsim.sweeps import Grid, point_seed, sweep
from relsim.sweeps.store import journal_path

ROOT = Path(__file__).resolve().parents[1]

# docs/model.md section 5 (reference values), R1 and R2: the same chain with a perfect verifier and 2 retries, and a
# verifier missing 10% with 3 retries.
R1_R2 = {
    "base": {"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"per_step": 2}},
    "mode": "zip",
    "axes": {"verifier.miss": [0.0, 0.1], "retries.per_step": [2, 3]},
}
R1 = dict(success=0.975298, silent_failure=0.0, detected_failure=0.024702, expected_attempts=27.419539)
R2 = dict(success=0.757383, silent_failure=0.240978, detected_failure=0.001639, expected_attempts=27.449108)

# A base with every feature but random effects, so each point is a real exact evaluation.
BASE = {
    "steps": 8,
    "p": 0.9,
    "verifier": {"miss": 0.1, "false_reject": 0.05},
    "retries": {"per_step": 1, "total": 4},
    "checkpoints": {"every": 4, "detect": 0.8, "rollbacks": 1},
    "correlation": {"confusion": {"enter": 0.3, "recover": 0.5, "factor": 0.7}},
    "cost": {"attempt": 1.0, "verify": 0.2, "checkpoint": 0.5},
}
PRODUCT = {
    "base": BASE,
    "axes": {
        "verifier.miss": [0.0, 0.05, 0.2],
        "retries.per_step": [0, 2],
        "correlation.confusion.enter": [0.0, 0.6],
    },
}
SIMULATE = {
    "base": {"steps": 10, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1}},
    "method": "simulate",
    "trials": 20_000,
    "seed": 11,
    "axes": {"verifier.miss": [0.0, 0.2], "p": [0.8, 0.95]},
}


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _by_hand(base: dict, **dotted) -> dict:
    """A scenario dict with dotted keys set, written out independently of relsim.sweep."""
    data = copy.deepcopy(base)
    for key, value in dotted.items():
        *tables, leaf = key.split(".")
        node = data
        for table in tables:
            node = node.setdefault(table, {})
        node[leaf] = value
    return data


# --------------------------------------------------------------------------- exact sweeps
def test_reference_values_r1_r2_through_a_zip_sweep():
    frame = sweep(R1_R2)
    assert frame["point"].tolist() == [0, 1]
    assert frame[["verifier.miss", "retries.per_step"]].values.tolist() == [[0.0, 2], [0.1, 3]]
    for row, reference in zip(frame.itertuples(), (R1, R2)):
        for key, value in reference.items():
            assert getattr(row, key) == pytest.approx(value, abs=5e-7)


def test_exact_sweep_equals_point_by_point_evaluate():
    frame = sweep(PRODUCT)
    assert len(frame) == 3 * 2 * 2
    expected_order = [
        (miss, per_step, enter)
        for miss in (0.0, 0.05, 0.2)
        for per_step in (0, 2)
        for enter in (0.0, 0.6)
    ]  # product mode: the last axis varies fastest
    for row, (miss, per_step, enter) in zip(frame.to_dict("records"), expected_order):
        assert (row["verifier.miss"], row["retries.per_step"], row["correlation.confusion.enter"]) == (
            miss, per_step, enter)
        scenario = Scenario.from_dict(_by_hand(
            BASE, **{"verifier.miss": miss, "retries.per_step": per_step,
                     "correlation.confusion.enter": enter}))
        outcome = relsim.evaluate(scenario)
        for key in ("success", "silent_failure", "detected_failure", "expected_attempts",
                    "expected_cost", "cost_per_success"):
            assert row[key] == getattr(outcome, key)
    assert "seed" not in frame and "success_se" not in frame


def test_columns_are_point_axes_then_outcome_keys():
    frame = sweep(PRODUCT)
    assert list(frame.columns) == [
        "point", "verifier.miss", "retries.per_step", "correlation.confusion.enter",
        "success", "silent_failure", "detected_failure", "infra_failure", "expected_attempts",
        "expected_cost", "cost_per_success",
    ]
    assert frame.attrs["sweep"] == {"points": 12, "computed": 12, "skipped": 0, "out": None}


def test_linked_axis_moves_its_keys_together():
    grid = {"base": BASE, "axes": {"verifier.miss,cost.verify": [[0.2, 0.0], [0.02, 0.5]],
                                   "retries.per_step": [0, 1]}}
    frame = sweep(grid)
    assert frame[["verifier.miss", "cost.verify", "retries.per_step"]].values.tolist() == [
        [0.2, 0.0, 0], [0.2, 0.0, 1], [0.02, 0.5, 0], [0.02, 0.5, 1]]
    expected = relsim.evaluate(_by_hand(BASE, **{"verifier.miss": 0.02, "cost.verify": 0.5,
                                                 "retries.per_step": 1}))
    assert frame["expected_cost"].iloc[3] == expected.expected_cost


def test_grid_file_with_a_base_file_relative_to_it(tmp_path):
    (tmp_path / "designs").mkdir()
    _write(tmp_path / "designs" / "base.toml", 'steps = 20\np = 0.95\n')
    grid_file = _write(tmp_path / "designs" / "grid.toml",
                       'base = "base.toml"\n[axes]\nsteps = [20, 5]\n')
    frame = sweep(grid_file)
    # docs/model.md section 5, R8: 20 steps at 0.95 succeed 0.358486; 5 steps: 0.95**5 (closed form)
    assert frame["success"].tolist() == pytest.approx([0.358486, 0.95**5], abs=5e-7)


def test_example_grid_in_scenarios_runs():
    frame = sweep(ROOT / "scenarios" / "grids" / "verifier_and_retries.toml")
    assert len(frame) == 32
    row = frame[(frame["verifier.miss"] == 0.1) & (frame["retries.per_step"] == 3) & (frame["p"] == 0.9)]
    assert row["success"].item() == pytest.approx(R2["success"], abs=5e-7)  # docs/model.md section 5, R2


# --------------------------------------------------------------------------- simulate sweeps
def test_simulate_point_equals_the_point_simulated_alone():
    frame = sweep(SIMULATE)
    grid = Grid.from_dict(SIMULATE)
    for index in (0, 3):
        row = frame.iloc[index]
        seed = int(frame.at[index, "seed"])  # not row["seed"]: a float row would round it
        assert seed == point_seed(11, index)
        alone = relsim.simulate(grid.scenario(index), 20_000, seed=seed, threads=1)
        assert row["success"] == alone.success
        assert row["expected_cost_se"] == alone.standard_errors["expected_cost"]


def test_point_seeds_are_the_spawned_children_of_the_grid_seed():
    children = np.random.SeedSequence(11).spawn(4)
    for index, child in enumerate(children):
        assert point_seed(11, index) == int(child.generate_state(1, np.uint64)[0] >> np.uint64(1))
    assert len({point_seed(11, i) for i in range(1000)}) == 1000


def test_simulate_sweep_agrees_with_exact_within_five_standard_errors():
    frame = sweep(SIMULATE)
    exact = sweep({**SIMULATE, "method": "exact"})
    for key in ("success", "silent_failure", "expected_attempts"):
        z = (frame[key] - exact[key]) / frame[f"{key}_se"].where(frame[f"{key}_se"] > 0)
        assert (z.abs().fillna(0) < 5).all(), (key, z.tolist())
    # negative control: the exact answer of a wrong agent (p lower by 0.02) is detected
    wrong = sweep({**SIMULATE, "method": "exact", "axes": {**SIMULATE["axes"], "p": [0.78, 0.93]}})
    z = (frame["success"] - wrong["success"]) / frame["success_se"]
    assert (z.abs() > 5).all()


# --------------------------------------------------------------------------- resume
class Stop(Exception):
    pass


def _stop_after(points: int):
    seen = [0]

    def progress(count: int) -> None:
        seen[0] += count
        if seen[0] >= points:
            raise Stop

    return progress


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_interrupted_sweep_resumed_equals_uninterrupted(tmp_path, suffix):
    whole = sweep(SIMULATE, tmp_path / f"whole{suffix}")
    out = tmp_path / f"resumed{suffix}"
    with pytest.raises(Stop):
        sweep(SIMULATE, out, progress=_stop_after(2))
    assert not out.exists()  # the output appears only when every point is in
    lines = journal_path(out).read_text().splitlines()
    assert len(lines) == 1 + 2  # the manifest and the two finished points
    resumed = sweep(SIMULATE, out)
    assert resumed.attrs["sweep"] == {"points": 4, "computed": 2, "skipped": 2, "out": str(out)}
    pd.testing.assert_frame_equal(resumed, whole)
    reader = pd.read_csv if suffix == ".csv" else pd.read_parquet
    pd.testing.assert_frame_equal(reader(out), reader(tmp_path / f"whole{suffix}"))
    pd.testing.assert_frame_equal(reader(out), whole)
    again = sweep(SIMULATE, out)
    assert again.attrs["sweep"]["computed"] == 0 and again.attrs["sweep"]["skipped"] == 4


def test_exact_sweep_interrupted_mid_batch_keeps_whole_batches(tmp_path):
    out = tmp_path / "r.csv"
    with pytest.raises(Stop):
        sweep(PRODUCT, out, batch=5, progress=_stop_after(6))  # stops after the second batch
    assert len(journal_path(out).read_text().splitlines()) == 1 + 10
    resumed = sweep(PRODUCT, out, batch=5)
    assert resumed.attrs["sweep"]["computed"] == 2
    pd.testing.assert_frame_equal(resumed, sweep(PRODUCT))


def test_a_line_cut_short_by_a_crash_is_recomputed(tmp_path):
    out = tmp_path / "r.csv"
    with pytest.raises(Stop):
        sweep(SIMULATE, out, progress=_stop_after(3))
    journal = journal_path(out)
    text = journal.read_text()
    journal.write_text(text[: len(text) - 40])  # the last record loses its end and newline
    resumed = sweep(SIMULATE, out)
    assert resumed.attrs["sweep"]["skipped"] == 2
    pd.testing.assert_frame_equal(resumed, sweep(SIMULATE))
    assert all(json.loads(line) for line in journal.read_text().splitlines())


def test_a_changed_grid_is_refused(tmp_path):
    out = tmp_path / "r.csv"
    with pytest.raises(Stop):
        sweep(SIMULATE, out, progress=_stop_after(1))
    for change in ({"seed": 12}, {"trials": 10_000},
                   {"axes": {"verifier.miss": [0.0, 0.3], "p": [0.8, 0.95]}}, {"mode": "zip"}):
        with pytest.raises(RelsimError, match="the grid has changed since this sweep began"):
            sweep({**SIMULATE, **change}, out)
    with pytest.raises(RelsimError, match="the base scenario has changed"):
        sweep({**SIMULATE, "base": {**SIMULATE["base"], "steps": 11}}, out)
    assert sweep(SIMULATE, out).attrs["sweep"]["skipped"] == 1  # the journal is untouched


def test_a_changed_base_file_is_refused_but_comments_do_not_count(tmp_path):
    base = tmp_path / "base.toml"
    _write(base, "steps = 5\np = 0.9\n")
    grid = _write(tmp_path / "grid.toml", 'base = "base.toml"\n[axes]\np = [0.8, 0.9, 0.95]\n')
    out = tmp_path / "r.parquet"
    with pytest.raises(Stop):
        sweep(grid, out, batch=1, progress=_stop_after(1))
    _write(base, "# the same design, commented\nsteps = 5\np = 0.9\n")
    assert sweep(grid, out, batch=1).attrs["sweep"]["skipped"] == 1
    _write(base, "steps = 6\np = 0.9\n")
    with pytest.raises(RelsimError, match="base scenario has changed"):
        sweep(grid, out)
    assert main(["sweep", grid, "-o", str(out)]) == 2


# --------------------------------------------------------------------------- bad grids
@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ({"base": BASE, "axes": {"verifier.mis": [0.1]}},
         "axes.verifier.mis: unknown scenario key; did you mean 'verifier.miss'?"),
        ({"base": BASE, "axes": {"retries.per_stop": [1]}},
         "did you mean 'retries.per_step'?"),
        # nothing near: the keys of the table named (the top level when none is)
        ({"base": BASE, "axes": {"q": [1]}},
         "axes.q: unknown scenario key; allowed keys here: checkpoints, classes, correlation,"),
        ({"base": BASE, "axes": {"verifier.x": [0.1]}},
         "axes.verifier.x: unknown scenario key; allowed keys here: verifier.false_reject, "
         "verifier.miss"),
        ({"base": BASE, "axis": {"p": [0.9]}}, "axis: unknown key; did you mean 'axes'?"),
        ({"base": BASE, "mode": "zip", "axes": {"p": [0.8, 0.9], "steps": [1, 2, 3]}},
         "axes: zip mode needs axes of one length, got p: 2, steps: 3"),
        ({"base": BASE, "axes": {"verifier.miss": [0.0, 2]}},
         "point 1 (verifier.miss = 2): verifier.miss: must be a probability in [0, 1], got 2"),
        ({"base": BASE, "axes": {"p": [0.9], "retries.per_step": [1, -1]}},
         "point 1 (p = 0.9, retries.per_step = -1): retries.per_step: must be an integer"),
        ({"base": {"steps": 3, "p": 0.9}, "axes": {"retries.per_step": [1]}},
         "point 0 (retries.per_step = 1): retries: needs a [verifier]"),
        ({"base": BASE, "method": "exakt", "axes": {"p": [0.9]}},
         'method: must be one of "exact", "simulate", "timeline", got \'exakt\''),
        ({"base": BASE, "method": "simulate", "seed": 1, "axes": {"p": [0.9]}},
         'trials: required with method = "simulate"'),
        ({"base": BASE, "method": "simulate", "trials": 100, "axes": {"p": [0.9]}},
         'seed: required with method = "simulate"'),
        ({"base": BASE, "method": "simulate", "trials": 0, "seed": 1, "axes": {"p": [0.9]}},
         "trials: must be an integer in 1..10000000000, got 0"),
        ({"base": BASE, "mode": "diagonal", "axes": {"p": [0.9]}},
         "mode: must be one of \"product\", \"zip\", got 'diagonal'"),
        ({"base": BASE, "axes": {}}, "axes: must be a table of at least one axis"),
        ({"base": BASE, "axes": {"p": 0.9}}, "axes.p: must be a non-empty list of values, got 0.9"),
        ({"base": BASE, "axes": {"verifier": [{"miss": 0.1}], "verifier.miss": [0.2]}},
         "axes.verifier.miss: overlaps the axis 'verifier'"),
        ({"axes": {"p": [0.9]}}, "base: required key is missing"),
        ({"base": BASE, "axes": {"p": [0.9] * 1001, "steps": list(range(1, 1001))}},
         "axes: must be a grid of at most 1000000 points, got 1001000"),
    ],
)
def test_bad_grids_are_one_error_naming_the_key(grid, message):
    with pytest.raises(RelsimError) as error:
        Grid.from_dict(grid)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_an_invalid_point_is_a_scenario_error():
    with pytest.raises(ScenarioError):
        Grid.from_dict({"base": BASE, "axes": {"steps": [0]}})


def test_a_timeline_grid_draws_trials():
    grid = {"base": BASE, "method": "timeline", "trials": 10, "seed": 1, "axes": {"p": [0.9]}}
    assert Grid.from_dict(grid).stochastic
    assert not Grid.from_dict({**grid, "method": "exact"}).stochastic


def test_time_tables_are_axes_with_their_file_keys():
    base = {**BASE, "timing": {"attempt": {"median": 8, "p95": 20}, "deadline": 600}}
    grid = Grid.from_dict({"base": base, "axes": {"timing.attempt.p95": [20, 40], "fleet.agents": [2],
                                                  "timing.verify.mean": [3]}})
    assert grid.scenario(1).timing.attempt.p95 == 40 and grid.scenario(0).fleet.agents == 2
    assert grid.scenario(0).timing.verify.mean == 3
    with pytest.raises(RelsimError, match="axes.fleet.agent: unknown scenario key; did you mean 'fleet.agents'"):
        Grid.from_dict({"base": base, "axes": {"fleet.agent": [2]}})
    with pytest.raises(RelsimError, match="axes.timing.attempt.kind: unknown scenario key"):
        Grid.from_dict({"base": base, "axes": {"timing.attempt.kind": ["constant"]}})


def test_relsim_sweep_is_the_function_and_relsim_sweeps_the_package():
    import relsim.sweeps

    assert relsim.sweep is relsim.sweeps.sweep and callable(relsim.sweep)
    assert relsim.sweeps.Grid is Grid and relsim.sweeps.point_seed is point_seed
    assert {"sweep", "sweeps"} <= set(relsim.__all__)
    assert relsim.plan.frontier.__module__ == "relsim.plan.dominance"
    assert relsim.plot.pareto.__module__ == "relsim.plot"


def test_bad_arguments_of_sweep(tmp_path):
    with pytest.raises(RelsimError, match="out: must be a file name ending in .parquet or .csv"):
        sweep(PRODUCT, tmp_path / "r.xlsx")
    with pytest.raises(RelsimError, match=r"workers: must be an integer in 1\.\.\d+ .*, got 0"):
        sweep(PRODUCT, workers=0)
    with pytest.raises(RelsimError, match="not both"):
        sweep(PRODUCT, workers=2, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(RelsimError, match="grid: must be"):
        sweep(42)


def test_a_journal_that_is_not_one_is_refused(tmp_path):
    out = tmp_path / "r.csv"
    journal_path(out).write_text("point,success\n")
    with pytest.raises(RelsimError, match="not a sweep journal"):
        sweep(PRODUCT, out)


# --------------------------------------------------------------------------- command line
def test_cli_sweep_json_summary_and_resume(tmp_path, capsys):
    grid = str(ROOT / "scenarios" / "grids" / "verifier_and_retries.toml")
    out = str(tmp_path / "sweep.parquet")
    assert main(["sweep", grid, "-o", out, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {k: summary[k] for k in ("points", "computed", "skipped", "out")} == {
        "points": 32, "computed": 32, "skipped": 0, "out": out}
    assert summary["objectives"] == ["success", "cost_per_success"]
    assert sorted(summary["frontier"]) == sorted(frontier(sweep(grid))["point"].tolist())  # exact: plain dominance
    assert main(["sweep", grid, "-o", out]) == 0
    text = capsys.readouterr().out
    assert "32 points (exact): computed 0, skipped 32" in text
    assert "frontier:" in text
    pd.testing.assert_frame_equal(pd.read_parquet(out), sweep(grid))


@pytest.mark.parametrize(
    ("grid_text", "message"),
    [
        ('base = "missing.toml"\n[axes]\np = [0.9]\n', "missing.toml: cannot read"),
        ('base = "../../x"\n[axes\n', "TOML syntax error"),
        ('base = {steps = 3, p = 0.9}\n[axes]\n"verifier.mis" = [0.1]\n', "did you mean 'verifier.miss'?"),
        ('base = {steps = 3, p = 0.9}\nmode = "zip"\n[axes]\np = [0.9, 0.8]\nsteps = [1]\n',
         "zip mode needs axes of one length"),
        ('base = {steps = 3, p = 0.9}\n[axes]\np = [0.9, 1.5]\n', "point 1 (p = 1.5): p: must be a probability in [0, 1]"),
    ],
)
def test_cli_bad_grid_is_one_line_exit_2(tmp_path, capsys, grid_text, message):
    grid = _write(tmp_path / "grid.toml", grid_text)
    assert main(["sweep", grid, "-o", str(tmp_path / "r.csv")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and message in captured.err
    assert captured.err.startswith(f"relsim: error: {grid}: ")


def test_cli_workers_and_scheduler_are_exclusive(tmp_path, capsys):
    grid = str(ROOT / "scenarios" / "grids" / "verifier_and_retries.toml")
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", grid, "-o", str(tmp_path / "r.csv"), "--workers", "2", "--scheduler", "x"])
    assert exit_.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_unreachable_scheduler_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("relsim.sweeps.execute.CONNECT_TIMEOUT", 1)  # not the default 10 s
    grid = str(ROOT / "scenarios" / "grids" / "verifier_and_retries.toml")
    import socket

    with socket.socket() as free:  # a port nobody listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    code = main(["sweep", grid, "-o", str(tmp_path / "r.csv"), "--scheduler", f"tcp://127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"scheduler: cannot connect to 'tcp://127.0.0.1:{port}' within 1 s" in err


def test_cost_per_success_of_a_design_that_never_succeeds_is_infinite_in_the_frame(tmp_path):
    frame = sweep({"base": {"steps": 2, "p": 0.5}, "axes": {"p": [0.0, 0.5]}}, tmp_path / "r.csv")
    assert math.isinf(frame["cost_per_success"].iloc[0])
    assert math.isinf(pd.read_csv(tmp_path / "r.csv")["cost_per_success"].iloc[0])


def test_table_and_per_step_list_axes_are_json_text_columns(tmp_path):
    grid = {"base": {"steps": 3, "p": 0.9, "verifier": {"miss": 0.5}, "retries": {"per_step": 1}},
            "axes": {"verifier": [{"miss": 0.0}, {"miss": 0.1, "false_reject": 0.2}],
                     "p": [[0.9, 0.5, 0.9], 0.8]}}
    frame = sweep(grid, tmp_path / "r.parquet")
    assert frame["verifier"].tolist() == ['{"miss": 0.0}'] * 2 + ['{"miss": 0.1, "false_reject": 0.2}'] * 2
    assert frame["p"].tolist() == ["[0.9, 0.5, 0.9]", "0.8"] * 2  # one type per column
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "r.parquet"), frame)
    # a per-step p with a perfect verifier and one retry: the product of 1 - (1-p)^2 (closed form)
    assert frame["success"].iloc[0] == pytest.approx((1 - 0.1**2) ** 2 * (1 - 0.5**2), rel=1e-12)
    assert frame["success"].iloc[1] == pytest.approx((1 - 0.2**2) ** 3, rel=1e-12)


def test_cli_ctrl_c_keeps_the_finished_points_and_the_rerun_resumes(tmp_path, capsys, monkeypatch):
    import relsim.sweeps as package

    real = package.sweep

    def interrupted_after_one_batch(*args, **kwargs):
        def progress(count):
            raise KeyboardInterrupt  # as Ctrl-C while the next batch runs

        return real(*args, **{**kwargs, "progress": progress})

    grid = str(ROOT / "scenarios" / "grids" / "verifier_and_retries.toml")
    out = str(tmp_path / "r.csv")
    monkeypatch.setattr(package, "sweep", interrupted_after_one_batch)
    assert main(["sweep", grid, "-o", out]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run the same command again" in err
    monkeypatch.setattr(package, "sweep", real)
    assert main(["sweep", grid, "-o", out, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["skipped"] == 8 and summary["computed"] == 24  # batches of 32 / 4 points
    pd.testing.assert_frame_equal(pd.read_csv(out), sweep(grid))
