"""How much the sweep machinery costs, and how a simulate sweep scales with workers (issue 13).

    python3 benchmarks/sweep_speed.py [--repeat R] [--points-trials T]

Prints two tables:

1. exact points per second for a 1000-point grid (the lesson's 25-step chain: 10 values of
   p x 10 verifiers x 10 retry budgets): ``evaluate`` called in a loop over the prebuilt
   scenarios (the reference), the same loop building each scenario from its dict, and
   ``relsim.sweep`` in this process without and with an output file (journal and parquet),
   and on a 2-worker ``LocalCluster`` (cluster already running). Goal: the in-process sweep
   within 1.3x the reference loop.
2. the wall time of an 8-point simulate sweep (each point single-threaded) on a running
   ``LocalCluster`` of 1 and of 2 workers, and the ratio. Goal: 2 workers >= 1.7x faster.
   The cluster's start-up (seconds, paid once per ``relsim sweep --workers N``) is printed
   apart, and so is how many cores the workers actually got (their CPU seconds over the
   wall time): on a busy machine that, not the sweep, caps the speed-up.

Best of R rounds after a warm one, the variants taken in turn each round (imports, the Monte Carlo kernels, the workers' first import).
On a shared machine the ratios move with the load; benchmarks/README.md says where the
figures were measured.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import tempfile
import time
from pathlib import Path

from relsim import Scenario, evaluate
from relsim.sweeps import Grid, sweep

EXACT_GRID = {
    "base": {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 2}},
    "axes": {
        "p": [0.8, 0.82, 0.84, 0.86, 0.88, 0.9, 0.92, 0.94, 0.96, 0.98],
        "verifier.miss": [0.0, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3],
        "retries.per_step": list(range(10)),
    },
}


def simulate_grid(trials: int) -> dict:
    return {
        "base": {"steps": 25, "p": 0.9, "verifier": {"miss": 0.05, "false_reject": 0.02},
                 "retries": {"per_step": 2}, "checkpoints": {"every": 5, "rollbacks": 1}},
        "method": "simulate",
        "trials": trials,
        "seed": 1,
        "axes": {"verifier.miss": [0.0, 0.05, 0.1, 0.2], "retries.per_step": [1, 3]},
    }


def interleaved(rows, repeat: int) -> list[tuple[str, float]]:
    """Best time of each row, the rows taken in turn each round, so that a change in the
    machine's load hits every row alike rather than the one that happened to run then."""
    for _, fn in rows:
        fn()  # warm
    best = [float("inf")] * len(rows)
    for _ in range(repeat):
        for position, (_, fn) in enumerate(rows):
            start = time.perf_counter()
            fn()
            best[position] = min(best[position], time.perf_counter() - start)
    return [(label, seconds) for (label, _), seconds in zip(rows, best)]


def cluster(workers: int):
    from distributed import Client, LocalCluster

    local = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                         scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"},
                         silence_logs=logging.ERROR)
    return local, Client(local)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--points-trials", type=int, default=400_000,
                        help="trials per point of the simulate sweep")
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.ERROR)  # two clusters: keep it quiet
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}, Python {platform.python_version()}")

    grid = Grid.from_dict(EXACT_GRID)
    points = len(grid)
    scenarios = [grid.scenario(i) for i in range(points)]
    dicts = [grid.scenario_dict(i) for i in range(points)]
    tmp = Path(tempfile.mkdtemp())
    counter = iter(range(10**6))

    def with_file():
        sweep(EXACT_GRID, tmp / f"run{next(counter)}.parquet")

    rows = [
        ("evaluate loop, prebuilt scenarios (reference)", lambda: [evaluate(s) for s in scenarios]),
        ("evaluate loop, Scenario.from_dict each point", lambda: [evaluate(Scenario.from_dict(d)) for d in dicts]),
        ("sweep, in process, no output", lambda: sweep(EXACT_GRID)),
        ("sweep, in process, journal + parquet", with_file),
    ]
    local, client = cluster(2)
    try:
        rows.append(("sweep, 2-worker LocalCluster (running)", lambda: sweep(EXACT_GRID, scheduler=client)))
        times = interleaved(rows, args.repeat)
    finally:
        client.close()
        local.close()
    reference = times[0][1]
    print(f"\n## exact: {points} points (25 steps each)\n")
    print("| how | seconds | points/s | x reference time |")
    print("| --- | ---: | ---: | ---: |")
    for label, seconds in times:
        print(f"| {label} | {seconds:.3f} | {points / seconds:,.0f} | {seconds / reference:.2f} |")

    sim = simulate_grid(args.points_trials)
    n = len(Grid.from_dict(sim))
    print(f"\n## simulate: {n} points x {args.points_trials:,} trials, one thread per point\n")
    clusters, started = [], []
    try:
        for workers in (1, 2):
            start = time.perf_counter()
            clusters.append(cluster(workers))
            started.append(time.perf_counter() - start)
        cpu = {1: [], 2: []}

        def timed(workers, client):
            before = sum(client.run(time.process_time).values())
            start = time.perf_counter()
            sweep(sim, scheduler=client)
            wall = time.perf_counter() - start
            cpu[workers].append((sum(client.run(time.process_time).values()) - before) / wall)

        rows = [(str(workers), lambda workers=workers, client=client: timed(workers, client))
                for workers, (_, client) in zip((1, 2), clusters)]
        times = interleaved(rows, args.repeat)
    finally:
        for local, client in clusters:
            client.close()
            local.close()
    print("| workers | cluster start s | sweep s | speed-up | cores the workers got |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for (workers, seconds), start in zip(times, started):
        got = sorted(cpu[int(workers)])[len(cpu[int(workers)]) // 2]
        print(f"| {workers} | {start:.2f} | {seconds:.2f} | {times[0][1] / seconds:.2f}x | {got:.2f} |")
    print("\n(cores the workers got: the workers' CPU seconds over the wall time, median of the"
          " rounds; below the worker count, the machine was busy with other work.)")


if __name__ == "__main__":
    main()
