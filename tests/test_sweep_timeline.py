"""Sweeps with ``method = "timeline"``: each point is ``relsim.simulate_timeline`` with the point's
seed (``trials`` for independent trials, ``replications`` for a workload), its figures
flattened into columns; checked against the points run alone and against docs/model.md
section 7's limits (the split of section 3 without time tables, every trial lasting
``attempts x (attempt + verify)`` with constant durations and nothing shared)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import relsim
from relsim.sweeps import Grid, point_seed, sweep
from relsim.sweeps.methods import TIMELINE_ERRORS, TIMELINE_KEYS
from relsim.sweeps.store import journal_path

TRIALS = 2000

# Two points that share four agents under a deadline: timeouts, agent waits and a defined
# agent utilisation, while the LLM and reviewers are unlimited (their utilisation undefined).
SHARED = {
    "base": {"steps": 10, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1},
             "timing": {"attempt": {"median": 8, "p95": 20}, "verify": 2, "deadline": 400},
             "fleet": {"agents": 4, "arrivals": "poisson", "rate_per_hour": 60, "tasks": 150}},
    "method": "timeline",
    "replications": 2,
    "seed": 3,
    "axes": {"fleet.agents": [2, 8]},
}

# Constant durations, batch arrivals, nothing shared: section 7's "every trial lasts
# attempts x (attempt + verify)", and the outcome split of section 3.
CONSTANT = {
    "base": {"steps": 10, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1},
             "timing": {"attempt": 8, "verify": 2}},
    "method": "timeline",
    "trials": TRIALS,
    "seed": 7,
    "axes": {"p": [0.8, 0.95]},
}


def _numbers(values) -> np.ndarray:
    return pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)


def test_a_two_point_timeline_sweep_equals_the_points_run_alone(tmp_path):
    frame = sweep(SHARED, tmp_path / "t.parquet")
    grid = Grid.from_dict(SHARED)
    assert list(frame.columns) == ["point", "fleet.agents", *TIMELINE_KEYS, *TIMELINE_ERRORS, "seed"]
    for index in range(2):
        seed = int(frame.at[index, "seed"])
        assert seed == point_seed(3, index)
        alone = relsim.simulate_timeline(grid.scenario(index), replications=2, seed=seed)
        expected = alone.to_frame()  # the engine's own flattening: duration_p90, wait_agents, ...
        for column in (*TIMELINE_KEYS, *TIMELINE_ERRORS):
            got, want = frame.at[index, column], _numbers(expected[column])[0]
            assert got == want or (math.isnan(got) and math.isnan(want)), column
        assert frame.at[index, "timeout"] == alone.timeout
        assert frame.at[index, "duration_p90"] == alone.duration["p90"]
        assert frame.at[index, "throughput_per_hour"] == alone.throughput_per_hour
    # the grid's numbers are the points' and the points differ (2 agents wait more than 8)
    assert frame["timeout"].iloc[0] > 0 and frame["wait_agents"].iloc[0] > frame["wait_agents"].iloc[1]
    assert frame["utilisation_agents"].between(0, 1).all() and frame["utilisation_llm"].isna().all()
    assert (frame["replications"] == 2).all() and frame["duration_mean_se"].gt(0).all()
    assert frame["utilisation_llm_se"].isna().all()
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.parquet"), frame)


def test_a_timeline_grid_names_the_count_each_mode_needs():
    workload = {k: v for k, v in SHARED.items() if k != "replications"}
    with pytest.raises(relsim.RelsimError, match="every point is a workload .* give replications"):
        Grid.from_dict({**workload, "trials": 100})
    with pytest.raises(relsim.RelsimError, match="trials: required .* independent trials"):
        Grid.from_dict({k: v for k, v in CONSTANT.items() if k != "trials"})
    with pytest.raises(relsim.RelsimError, match="every point is independent trials"):
        Grid.from_dict({**CONSTANT, "replications": 3})
    with pytest.raises(relsim.RelsimError, match="replications: must be an integer in 2"):
        Grid.from_dict({**workload, "replications": 1})
    # a grid of both modes gives both counts, and each point runs with its own
    mixed = {**CONSTANT, "trials": 40, "replications": 2,
             "base": {**CONSTANT["base"], "fleet": {"tasks": 30}},
             "axes": {"fleet.arrivals,fleet.rate_per_hour": [["batch", None], ["poisson", 60]]}}
    frame = sweep(mixed)
    assert math.isnan(frame.at[0, "replications"]) and frame.at[1, "replications"] == 2
    assert math.isnan(frame.at[0, "throughput_per_hour"]) and frame.at[1, "throughput_per_hour"] > 0


@pytest.mark.slow
def test_timeline_sweep_meets_the_limits_of_docs_model_section_7():
    frame = sweep(CONSTANT)
    exact = sweep({**CONSTANT, "method": "exact"})
    assert (frame["timeout"] == 0).all() and (frame["infra_failure"] == 0).all()
    # every trial lasts attempts x (8 + 2) seconds, so the means are in that ratio
    np.testing.assert_allclose(frame["duration_mean"], 10 * frame["expected_attempts"], rtol=1e-12)
    for key in ("success", "silent_failure", "detected_failure", "expected_attempts"):
        z = (frame[key] - exact[key]) / frame[f"{key}_se"]
        assert (z.abs() < 5).all(), (key, z.tolist())
    # negative control: the exact answer of a wrong agent (p lower by 0.03) is detected
    wrong = sweep({**CONSTANT, "method": "exact", "axes": {"p": [0.77, 0.92]}})
    z = (frame["success"] - wrong["success"]) / frame["success_se"]
    assert (z.abs() > 5).all(), z.tolist()


@pytest.mark.slow
def test_a_point_cut_short_by_ctrl_c_is_not_recorded_and_the_rerun_computes_it(tmp_path, monkeypatch):
    import relsim.timeline

    real = relsim.timeline.simulate_timeline
    cut = []

    def ctrl_c_in_the_second_point(scenario, trials, seed=None, **kwargs):
        if scenario.p != 0.95:
            return real(scenario, trials, seed=seed, **kwargs)

        def progress(ended: int) -> None:  # as a first Ctrl-C once some trials have ended
            raise KeyboardInterrupt

        outcome = real(scenario, trials, seed=seed, progress=progress)
        cut.append(outcome.partial)
        return outcome

    grid = CONSTANT  # 2000 trials: some 10^5 simpy events, so the engine reports progress
    out = tmp_path / "t.csv"
    monkeypatch.setattr(relsim.timeline, "simulate_timeline", ctrl_c_in_the_second_point)
    with pytest.raises(KeyboardInterrupt):
        sweep(grid, out)
    assert cut == [True]  # the engine did answer with a partial estimate
    lines = journal_path(out).read_text().splitlines()
    assert [json.loads(line)["point"] for line in lines[1:]] == [0]
    monkeypatch.setattr(relsim.timeline, "simulate_timeline", real)
    resumed = sweep(grid, out)
    assert resumed.attrs["sweep"]["skipped"] == 1 and resumed.attrs["sweep"]["computed"] == 1
    pd.testing.assert_frame_equal(resumed, sweep(grid))
