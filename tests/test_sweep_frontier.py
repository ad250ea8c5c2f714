"""The cost-reliability frontier (against brute-force dominance) and the figure that draws it."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")  # no display in tests

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relsim.errors import RelsimError
from relsim.plan import frontier
from relsim.plot import pareto
from relsim.sweeps import sweep


def brute_force_frontier(costs, values) -> set[int]:
    """Rows that no row dominates, straight from the definition (NaN rows are out)."""
    rows = [i for i in range(len(costs)) if not (math.isnan(costs[i]) or math.isnan(values[i]))]
    keep = set()
    for i in rows:
        dominated = any(
            costs[j] <= costs[i] and values[j] >= values[i] and (costs[j], values[j]) != (costs[i], values[i])
            for j in rows
        )
        if not dominated:
            keep.add(i)
    return keep


# few distinct values, so ties in cost, in value and in both are common
numbers = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, math.inf, math.nan])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(numbers, numbers.filter(lambda v: v != math.inf)), max_size=25))
@pytest.mark.slow
def test_frontier_is_the_set_of_non_dominated_rows(pairs):
    costs = [c for c, _ in pairs]
    values = [v for _, v in pairs]
    frame = pd.DataFrame({"cost_per_success": costs, "success": values}, dtype=float)
    frame.index = frame.index * 10 + 3  # the original index is kept, whatever it is
    best = frontier(frame)
    assert {(i - 3) // 10 for i in best.index} == brute_force_frontier(costs, values)
    assert best["cost_per_success"].is_monotonic_increasing
    assert best["success"].is_monotonic_increasing


def test_frontier_other_columns_and_all_columns_kept():
    frame = pd.DataFrame({"expected_cost": [3.0, 1.0, 2.0], "silent_failure": [0.1, 0.2, 0.3],
                          "name": ["a", "b", "c"]})
    best = frontier(frame, cost="expected_cost", value="silent_failure")
    assert best["name"].tolist() == ["b", "c"] and list(best.columns) == list(frame.columns)


def test_frontier_bad_columns():
    frame = pd.DataFrame({"cost_per_success": [1.0], "success": [0.5], "name": ["a"]})
    with pytest.raises(RelsimError, match="cost: must be a column of the frame"):
        frontier(frame, cost="price")
    with pytest.raises(RelsimError, match="must be numeric columns"):
        frontier(frame, value="name")
    assert frontier(frame.iloc[[]]).empty


GRID = {
    "base": {"steps": 10, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1},
             "cost": {"verify": 0.1}},
    "axes": {"verifier.miss,cost.verify": [[0.2, 0.01], [0.1, 0.05], [0.02, 0.3], [0.0, 1.0]],
             "retries.per_step": [0, 1, 2, 3], "p": [0.0, 0.9]},
}


def test_pareto_draws_every_design_and_the_frontier_through_its_rows():
    frame = sweep(GRID)
    ax = pareto(frame, frontier(frame), annotate=["verifier.miss", "retries.per_step"])
    try:
        designs = next(c for c in ax.collections if c.get_gid() == "designs")
        finite = frame[np.isfinite(frame["cost_per_success"])]  # p = 0: never succeeds, no place
        assert len(finite) == len(frame) // 2
        assert sorted(map(tuple, designs.get_offsets().tolist())) == sorted(
            zip(finite["cost_per_success"], finite["success"]))
        line = next(ln for ln in ax.lines if ln.get_gid() == "frontier")
        best = frontier(frame)
        assert np.isfinite(best["cost_per_success"]).all()
        assert line.get_xydata().tolist() == best[["cost_per_success", "success"]].values.tolist()
        assert len(best) >= 2
        assert ax.get_xlabel() == "cost per success (scenario cost units)"
        assert ax.get_ylabel() == "success (probability per trial)"
        assert len(ax.texts) == len(best)
        assert ax.texts[0].get_text().startswith("miss ")
    finally:
        plt.close(ax.figure)


def test_pareto_on_given_axes_and_other_columns():
    frame = sweep(GRID)
    figure, ax = plt.subplots()
    try:
        best = frontier(frame, cost="expected_attempts", value="silent_failure")
        assert pareto(frame, best, cost="expected_attempts", value="silent_failure", ax=ax) is ax
        assert len(ax.texts) == 0  # no labels unless asked for
        assert ax.get_xlabel() == "attempts per trial"
        assert ax.get_ylabel() == "silent failure (probability per trial)"
        line = next(ln for ln in ax.lines if ln.get_gid() == "frontier")
        best = frontier(frame, cost="expected_attempts", value="silent_failure")
        assert line.get_xydata().tolist() == best[["expected_attempts", "silent_failure"]].values.tolist()
    finally:
        plt.close(figure)


def test_pareto_draws_the_frontier_it_is_given_by_increasing_cost():
    # The figure draws the rows it is handed (it computes no frontier): here two rows that are
    # not the frontier at all, given in decreasing cost.
    frame = pd.DataFrame({"cost_per_success": [1.0, 2.0, 3.0, math.inf], "success": [0.5, 0.9, 0.4, 0.0],
                          "point": [0, 1, 2, 3]})
    given_rows = frame.iloc[[2, 0]]
    ax = pareto(frame, given_rows, annotate="point")
    try:
        line = next(ln for ln in ax.lines if ln.get_gid() == "frontier")
        assert line.get_xydata().tolist() == [[1.0, 0.5], [3.0, 0.4]]
        assert [text.get_text() for text in ax.texts] == ["0", "2"]
        designs = next(c for c in ax.collections if c.get_gid() == "designs")
        assert len(designs.get_offsets()) == 3  # the infinite cost has no place
    finally:
        plt.close(ax.figure)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"cost": "price"}, "^cost: must be a column of the frame and of the frontier"),
        ({"value": "name"}, "^value: must be a column of the frame and of the frontier"),
        ({"annotate": "nope"}, "^annotate: must be columns of the frontier"),
    ],
)
def test_pareto_bad_columns(kwargs, message):
    frame = pd.DataFrame({"cost_per_success": [1.0, 2.0], "success": [0.5, 0.9]})
    with pytest.raises(RelsimError, match=message):
        pareto(frame, frontier(frame), **kwargs)
    with pytest.raises(RelsimError, match="^cost: must be a column of the frame and of the frontier"):
        pareto(frame, frame[["success"]])


# ------------------------------------------------------------------ objectives and noise
def brute_force_noisy(values, errors, larger_better, z=1.96) -> set[int]:
    """Rows no row beats beyond noise, straight from the definition (loops, no numpy)."""
    rows = range(len(values))
    keep = set()
    for i in rows:
        beaten = False
        for j in rows:
            gains, margins = [], []
            for k, better_up in enumerate(larger_better):
                sign = 1.0 if better_up else -1.0
                gains.append(sign * (values[j][k] - values[i][k]))
                margins.append(z * math.sqrt(errors[i][k] ** 2 + errors[j][k] ** 2))
            if all(g >= -m for g, m in zip(gains, margins)) and any(g > m for g, m in zip(gains, margins)):
                beaten = True
        if not beaten:
            keep.add(i)
    return keep


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.5, 0.6, 0.7]), st.sampled_from([1.0, 2.0, 3.0]),
                          st.sampled_from([100.0, 200.0]), st.sampled_from([0.0, 0.02, 0.1]),
                          st.sampled_from([0.0, 0.5])), max_size=12))
def test_a_noisy_frontier_is_the_rows_not_beaten_beyond_noise(rows):
    frame = pd.DataFrame(rows, columns=["success", "cost_per_success", "duration_p90",
                                        "success_se", "cost_per_success_se"], dtype=float)
    best = frontier(frame, objectives=["success", "cost_per_success", "duration_p90"])
    values = frame[["success", "cost_per_success", "duration_p90"]].to_numpy().tolist()
    errors = frame[["success_se", "cost_per_success_se"]].assign(d=0.0).to_numpy().tolist()
    assert set(best.index) == brute_force_noisy(values, errors, (True, False, False))


def test_a_point_is_beaten_only_beyond_its_noise():
    # B looks better than A on both counts, but by less than the noise of the difference:
    # both stay; C is worse than B beyond noise on success and no better on cost: beaten
    frame = pd.DataFrame({"success": [0.90, 0.91, 0.80], "success_se": [0.01, 0.01, 0.01],
                          "cost_per_success": [2.0, 1.98, 2.0], "cost_per_success_se": [0.05] * 3})
    best = frontier(frame, objectives=["success", "cost_per_success"])
    assert sorted(best.index) == [0, 1]
    # negative control: without the noise (plain dominance) B beats A
    assert sorted(frontier(frame, objectives=["success", "cost_per_success"], z=0.0).index) == [1]
    assert sorted(frontier(frame).index) == [1]  # the two-column form compares exactly
    # a time objective decides: A is much faster, so it stays even against a sure winner
    frame["success_se"] = 0.0001
    frame["duration_p90"] = [100.0, 900.0, 950.0]
    assert sorted(frontier(frame, objectives=["success", "cost_per_success"]).index) == [1]
    assert sorted(frontier(frame, objectives=["success", "cost_per_success", "duration_p90"]).index) == [0, 1]


def test_objectives_must_be_numeric_columns():
    frame = pd.DataFrame({"success": [0.5], "name": ["a"]})
    with pytest.raises(RelsimError, match="objectives: must be columns of the frame"):
        frontier(frame, objectives=["duration_p90"])
    with pytest.raises(RelsimError, match="objectives: must be numeric columns"):
        frontier(frame, objectives=["name"])
    with pytest.raises(RelsimError, match="objectives: must be at least one column"):
        frontier(frame, objectives=[])


def test_sweep_objectives_on_the_command_line(tmp_path, capsys):
    import json

    from relsim.cli import main

    grid = tmp_path / "grid.toml"
    grid.write_text("""method = "timeline"
replications = 2
seed = 1
[base]
steps = 1
p = 0.9
[base.checkpoints]
final = true
human = true
[base.fleet]
arrivals = "poisson"
rate_per_hour = 40
tasks = 100
[base.resources]
reviewers = 1
review = { mean = 60 }
[axes]
"resources.reviewers" = [1, 2, 3]
""", encoding="utf-8")
    out = str(tmp_path / "r.csv")
    assert main(["sweep", str(grid), "-o", out, "--objectives", "success,duration_p90", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["objectives"] == ["success", "duration_p90"]
    frame = pd.read_csv(out)
    expected = frontier(frame, objectives=["success", "duration_p90"])["point"].tolist()
    assert summary["frontier"] == expected and 2 in expected  # three reviewers are fastest
    assert main(["sweep", str(grid), "-o", out, "--objectives", "success,duration_p90"]) == 0
    text = capsys.readouterr().out
    assert "not beaten on success, duration p90 beyond their noise" in text and "duration_p90_se" in text
    assert main(["sweep", str(grid), "-o", out, "--objectives", "success,speed"]) == 2
    assert "--objectives: must be columns of a timeline sweep" in capsys.readouterr().err


def test_an_unknown_objective_of_an_exact_sweep_reads_an_exact_sweep(tmp_path, capsys):
    from pathlib import Path

    from relsim.cli import main

    grid = Path(__file__).resolve().parents[1] / "scenarios" / "grids" / "verifier_and_retries.toml"
    out = str(tmp_path / "r.csv")
    assert main(["sweep", str(grid), "-o", out, "--objectives", "success,speed"]) == 2
    assert "--objectives: must be columns of an exact sweep (" in capsys.readouterr().err
