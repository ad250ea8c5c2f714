"""The timeline's compiled path against Monte Carlo and the simpy path (issue 22), in one run.

Trials per second of ``simulate_timeline`` on independent trials (a batch sharing nothing:
durations, backoff, a deadline, crashes), on its compiled path (the default) and on simpy
(``relsim.timeline._driver._PATH = "simpy"``), next to ``relsim.simulate`` (Monte Carlo) on the
same trial model (the scenario without its time tables, which Monte Carlo does not read).
Each figure is a whole call (checks, seeding, the kernel, the estimates), the kernels loaded
from numba's cache by a warm-up call first. The machine is shared and noisy: ``--rounds N``
measures the table N times, the paths in turn each round, and prints the median of each
ratio with the load averages. Goal: the compiled path at >= 0.1x Monte Carlo's trials/s.
A scenario that the compiled path runs on its vectorised lane (``relsim.timeline._lanes``: R1
here) is also run with that lane turned off ("compiled, one by one": ``_kernel.run_trials``,
what ran it before the lane), in the same rounds.

    python3 benchmarks/timeline_kernel_speed.py [--rounds 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: benchmarks/timeline_speed.py's 25-step scenario without what trials share (the fleet, the
#: LLM slots, the rate limits, the reviewers: the human gate is an automatic check of 60 s).
EVERY_TABLE = {
    "name": "25 steps, every independent table",
    "steps": 25,
    "p": 0.9,
    "verifier": {"miss": 0.1, "false_reject": 0.02},
    "retries": {"per_step": 2, "total": 12},
    "checkpoints": {"final": True, "detect": 0.9, "rollbacks": 1},
    "correlation": {"task_sd": 0.3},
    "timing": {"attempt": {"median": 8, "p95": 30}, "verify": 2, "checkpoint": 60,
               "backoff": {"base": 1, "factor": 2, "max": 30, "jitter": True}, "deadline": 3600},
    "infra": {"crash_per_hour": 0.2},
}

#: R1 of docs/model.md section 5 in time: Monte Carlo runs it on its fastest kernel.
R1_TIMED = {
    "name": "R1 (25 steps, perfect verifier), lognormal attempts",
    "steps": 25,
    "p": 0.9,
    "verifier": {"miss": 0.0},
    "retries": {"per_step": 2},
    "timing": {"attempt": {"median": 8, "p95": 30}, "verify": 2, "deadline": 3600},
    "infra": {"crash_per_hour": 0.2},
}

TIME_TABLES = ("timing", "fleet", "resources", "infra")


def trial_model_only(scenario: dict) -> dict:
    return {k: v for k, v in scenario.items() if k not in TIME_TABLES}


def kernel(scenario: dict, trials: int, threads: int, lanes: bool = True) -> float:
    from relsim import simulate_timeline
    from relsim.timeline import _driver, _lanes

    eligible = _lanes.eligible
    _driver._PATH = "compiled"  # the warm-up's few trials too (by default they run on simpy)
    if not lanes:
        _lanes.eligible = lambda *args: False  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        out = simulate_timeline(scenario, trials=trials, seed=1, threads=threads)
    finally:
        _driver._PATH = None
        _lanes.eligible = eligible
    assert out.simpy_events == 0
    return trials / (time.perf_counter() - start)


def takes_lanes(scenario: dict) -> bool:
    from relsim.scenario import as_scenario, time_model, trial_model
    from relsim.timeline._fast import block_runner

    model = as_scenario(scenario)
    return block_runner(trial_model(model), time_model(model))[0].__name__ == "lanes"


def simpy_path(scenario: dict, trials: int) -> float:
    from relsim import simulate_timeline
    from relsim.timeline import _driver

    _driver._PATH = "simpy"
    try:
        start = time.perf_counter()
        out = simulate_timeline(scenario, trials=trials, seed=1)
    finally:
        _driver._PATH = None
    assert out.simpy_events > 0
    return trials / (time.perf_counter() - start)


def montecarlo(scenario: dict, trials: int, threads: int) -> float:
    from relsim import simulate

    model = trial_model_only(scenario)
    start = time.perf_counter()
    simulate(model, trials, seed=1, threads=threads)
    return trials / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--kernel-trials", type=int, default=2_000_000)
    parser.add_argument("--mc-trials", type=int, default=8_000_000)
    parser.add_argument("--simpy-trials", type=int, default=2_000)
    args = parser.parse_args(argv)
    os.environ.setdefault("RELSIM_TIME_LIMIT", "3600")

    import numba
    import numpy
    import simpy

    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"python {platform.python_version()}, numpy {numpy.__version__}, "
          f"numba {numba.__version__}, simpy {simpy.__version__}")
    print(f"# load average before: {os.getloadavg()}")
    scenarios = (EVERY_TABLE, R1_TIMED)
    for scenario in scenarios:  # load every kernel from numba's cache (or compile it)
        kernel(scenario, 1000, args.threads)
        kernel(scenario, 1000, args.threads, lanes=False)
        montecarlo(scenario, 1000, args.threads)
    rows: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        for scenario in scenarios:
            name = scenario["name"]
            figures = {
                "montecarlo": montecarlo(scenario, args.mc_trials, args.threads),
                "compiled": kernel(scenario, args.kernel_trials, args.threads),
                "simpy": simpy_path(scenario, args.simpy_trials),
            }
            if takes_lanes(scenario):
                figures["compiled, one by one"] = kernel(scenario, args.kernel_trials,
                                                         args.threads, lanes=False)
            for path, value in figures.items():
                rows.setdefault((name, path), []).append(value)
            rows.setdefault((name, "compiled / montecarlo"), []).append(
                figures["compiled"] / figures["montecarlo"])
            if "compiled, one by one" in figures:
                rows.setdefault((name, "one by one / montecarlo"), []).append(
                    figures["compiled, one by one"] / figures["montecarlo"])
            rows.setdefault((name, "simpy / montecarlo"), []).append(
                figures["simpy"] / figures["montecarlo"])
            rows.setdefault((name, "compiled / simpy"), []).append(
                figures["compiled"] / figures["simpy"])
        print(f"# round {r + 1} done, load average {os.getloadavg()}", flush=True)
    print(f"\n{args.threads} threads (Monte Carlo and the compiled path); simpy runs in one; "
          f"medians of {args.rounds} rounds\n")
    print("| scenario | path | trials/s (median) | rounds |")
    print("| --- | --- | ---: | --- |")
    for (name, path), values in rows.items():
        median = statistics.median(values)
        shown = f"**{median:.3g}x**" if "/" in path else f"{median:,.0f}"
        each = ", ".join(f"{v:.3g}" for v in values)
        print(f"| {name} | {path} | {shown} | {each} |")
    print(f"\n# load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
