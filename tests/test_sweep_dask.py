"""relsim.sweep on dask: identical rows in-process, on 1 and 2 local workers and on a
LocalCluster started here (localhost only); a sweep resumed after its client was killed."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from relsim.cli import main
from relsim.sweeps import sweep
from relsim.sweeps.store import journal_path

ROOT = Path(__file__).resolve().parents[1]

SIMULATE = {
    "base": {"steps": 10, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1}},
    "method": "simulate",
    "trials": 10_000,
    "seed": 5,
    "axes": {"verifier.miss": [0.0, 0.2], "p": [0.8, 0.95], "retries.per_step": [0, 2]},
}
EXACT = {
    "base": {"steps": 12, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1},
             "checkpoints": {"every": 4, "detect": 0.8, "rollbacks": 1}},
    "axes": {"verifier.miss": [0.0, 0.05, 0.1, 0.2, 0.3], "retries.per_step": [0, 1, 2, 3],
             "checkpoints.rollbacks": [0, 1, 2]},
}


@pytest.fixture(scope="module")
def cluster():
    """A real two-process dask cluster on localhost, one thread per worker."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"},
                      silence_logs=logging.ERROR) as local:
        yield local


@pytest.mark.slow
def test_simulate_rows_identical_in_process_on_one_and_two_workers_and_a_cluster(cluster, tmp_path):
    here = sweep(SIMULATE)
    on_cluster = sweep(SIMULATE, scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(on_cluster, here)
    for workers in (1, 2):
        out = tmp_path / f"w{workers}.parquet"
        assert main(["sweep", _grid_file(tmp_path, SIMULATE), "-o", str(out),
                     "--workers", str(workers), "--json"]) == 0
        pd.testing.assert_frame_equal(pd.read_parquet(out), here)


@pytest.mark.slow
def test_exact_points_are_batched_and_equal_the_local_sweep(cluster):
    from distributed import Client

    with Client(cluster.scheduler_address) as client:
        before = _tasks_run(client)
        frame = sweep(EXACT, scheduler=client)
        tasks = _tasks_run(client) - before
    pd.testing.assert_frame_equal(frame, sweep(EXACT))
    assert len(frame) == 60 and 2 <= tasks <= 60 // 2  # several points per task


@pytest.mark.slow
def test_timeline_points_on_the_cluster_equal_the_local_sweep(cluster):
    # time tables travel to the workers in the point's dict and are validated again there
    grid = {"base": {"steps": 6, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1},
                     "timing": {"attempt": {"median": 8, "p95": 20}, "verify": 2, "deadline": 120},
                     "fleet": {"agents": 3, "arrivals": "poisson", "rate_per_hour": 120,
                               "tasks": 100}},
            "method": "timeline", "replications": 2, "seed": 9, "axes": {"fleet.agents": [1, 4]}}
    frame = sweep(grid, scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(frame, sweep(grid))
    assert frame["timeout"].iloc[0] > frame["timeout"].iloc[1]  # one agent: more miss the deadline


@pytest.mark.slow
def test_interrupted_locally_resumed_on_the_cluster(cluster, tmp_path):
    out = tmp_path / "r.csv"

    def stop_after_three(count, seen=[0]):
        seen[0] += count
        if seen[0] >= 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep(SIMULATE, out, progress=stop_after_three)
    resumed = sweep(SIMULATE, out, scheduler=cluster.scheduler_address)
    assert resumed.attrs["sweep"]["skipped"] == 3 and resumed.attrs["sweep"]["computed"] == 5
    pd.testing.assert_frame_equal(resumed, sweep(SIMULATE))


@pytest.mark.slow
def test_a_killed_client_resumes_where_it_stopped(tmp_path):
    grid = {**SIMULATE, "trials": 400_000}
    grid_file = _grid_file(tmp_path, grid)
    out = tmp_path / "r.csv"
    journal = journal_path(out)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-m", "relsim", "sweep", grid_file, "-o", str(out)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if journal.exists() and len(journal.read_text().splitlines()) >= 1 + 2:
                break
            time.sleep(0.05)
        assert child.poll() is None, "the sweep finished before it could be killed"
        child.send_signal(signal.SIGKILL)  # no clean-up: as a crash or a lost machine
    finally:
        child.wait()
    done = len(journal.read_text().splitlines()) - 1
    assert 2 <= done < 8 and not out.exists()
    resumed = sweep(grid_file, out)
    assert resumed.attrs["sweep"]["skipped"] == done
    pd.testing.assert_frame_equal(resumed, sweep(grid))


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_changes_nothing(tmp_path):
    from distributed import Client, LocalCluster

    grid = {**SIMULATE, "trials": 200_000}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"},
                      silence_logs=logging.CRITICAL) as local, Client(local) as client:
        pids = list(client.run(os.getpid).values())
        killed = []

        def kill_one_worker(count):
            if not killed:  # after the first point: the other worker is busy with one
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        frame = sweep(grid, tmp_path / "r.csv", scheduler=client, progress=kill_one_worker)
        assert killed and pids[0] not in client.run(os.getpid).values()
    assert frame.attrs["sweep"]["computed"] == 8
    pd.testing.assert_frame_equal(frame, sweep(grid))


def _tasks_run(client) -> int:
    def count(dask_scheduler):
        return sum(1 for event in dask_scheduler.transition_log if event[2] == "memory")

    return client.run_on_scheduler(count)


def _grid_file(tmp_path: Path, grid: dict) -> str:
    lines = []
    base = grid["base"]
    lines.append("[base]")
    lines += [f"{k} = {_toml(v)}" for k, v in base.items() if not isinstance(v, dict)]
    for table, values in base.items():
        if isinstance(values, dict):
            lines.append(f"[base.{table}]")
            lines += [f"{k} = {_toml(v)}" for k, v in values.items()]
    head = [f"{k} = {_toml(grid[k])}" for k in ("method", "trials", "seed", "mode") if k in grid]
    lines = head + lines + ["[axes]"] + [f'"{k}" = {_toml(v)}' for k, v in grid["axes"].items()]
    path = tmp_path / "grid.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _toml(value) -> str:
    import json

    return json.dumps(value)
