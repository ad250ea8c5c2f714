"""Throughput of relsim.evalstats.

1. The vectorised cluster bootstrap against the obvious per-replicate loop (the reference),
   measured in the same run.
2. ``analyze`` end to end on a CSV (reading, checking, estimators and their intervals).

Run: ``python3 benchmarks/evalstats_speed.py``. Prints a table; no number here is asserted.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np
import pandas as pd

from relsim import evalstats
from relsim.evalstats.bootstrap import cluster_bootstrap

REPLICATES = 2000


def best_of(function, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def loop_bootstrap(values: np.ndarray, replicates: int, rng: np.random.Generator) -> np.ndarray:
    """The reference: one resample of tasks per replicate, in a Python loop."""
    tasks = values.shape[0]
    out = np.empty((replicates, values.shape[1]))
    for b in range(replicates):
        out[b] = values[rng.integers(0, tasks, size=tasks)].mean(axis=0)
    return out


def main() -> None:
    print(f"cluster bootstrap, {REPLICATES} replicates, 6 statistics (3 k x pass@k, pass^k)")
    print(f"{'tasks':>6} {'vectorised reps/s':>18} {'loop reps/s':>12} {'ratio':>7}")
    for tasks in (100, 1000, 10000):
        values = np.random.default_rng(0).random((tasks, 6))
        fast = best_of(
            lambda: cluster_bootstrap(values, REPLICATES, np.random.default_rng(1))
        )
        slow = best_of(
            lambda: loop_bootstrap(values, REPLICATES, np.random.default_rng(1)), repeat=1
        )
        print(
            f"{tasks:>6} {REPLICATES / fast:>18,.0f} {REPLICATES / slow:>12,.0f} "
            f"{slow / fast:>6.1f}x"
        )

    print("\nanalyze end to end, k = 1,3,5")
    print(f"{'tasks x trials':>15} {'rows':>8} {'total s':>8} {'read s':>7} {'rows/s':>10}")
    with tempfile.TemporaryDirectory() as folder:
        for tasks, trials in ((1000, 5), (20000, 10)):
            rng = np.random.default_rng(2)
            rate = rng.beta(2, 2, tasks)
            frame = pd.DataFrame(
                {
                    "task": np.repeat(np.arange(tasks), trials),
                    "trial": np.tile(np.arange(trials), tasks),
                    "success": (rng.random((tasks, trials)) < rate[:, None]).astype(int).ravel(),
                }
            )
            path = os.path.join(folder, "trials.csv")
            frame.to_csv(path, index=False)
            read = best_of(lambda: evalstats.read_trials(path), repeat=2)
            whole = best_of(lambda: evalstats.analyze(path, k=[1, 3, 5]), repeat=2)
            rows = tasks * trials
            size = f"{tasks} x {trials}"
            print(f"{size:>15} {rows:>8} {whole:>8.2f} {read:>7.2f} {rows / whole:>10,.0f}")


if __name__ == "__main__":
    main()
