"""What each table of docs/model.md section 8 costs in Monte Carlo, and the work estimate's error.

Prints trials per second of ``relsim.simulate`` (one thread; process time, which a shared
machine disturbs less than wall time) on the every-feature scenario of
``tests/test_trial_model.py`` (``BASE``: checkpoints, confusion, both random effects, a
task-wide budget), on it with each section 8 table added alone, with all of them (``V2``, the
same file's), and on ``BASE`` forced onto the kernel of section 8 (``_kernel_v2.run_v2``): the
kernel's own overhead. Next to each, the ratio to ``BASE`` on the general kernel and the
work estimate's seconds over the measured ones (``relsim.montecarlo.work_estimate``, which
refuses runs over a minute: it should be within a few times the truth, on the high side).
Then two of them with two threads (wall time). The cases are measured in turn, ``--rounds``
times (best of three runs each time), and each figure is the best round: on a shared machine
the least disturbed one.

    python benchmarks/montecarlo_tables_speed.py            # about three minutes
    python benchmarks/montecarlo_tables_speed.py --quick    # a smoke test
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import relsim  # noqa: E402
from relsim.montecarlo import _driver, work_estimate  # noqa: E402

BASE = {
    "steps": 4,
    "p": [0.9, 0.8, 0.85, 0.9],
    "verifier": {"miss": 0.3, "false_reject": 0.1},
    "retries": {"per_step": 2, "total": 3},
    "checkpoints": {"every": 2, "detect": 0.7, "false_alarm": 0.1, "rollbacks": 1},
    "correlation": {"task_sd": 0.5, "step_sd": 0.5,
                    "confusion": {"enter": 0.5, "recover": 0.4, "factor": 0.7}},
    "cost": {"attempt": [1.0, 2.0, 1.0, 2.0], "verify": 0.5, "checkpoint": 0.3, "rollback": 0.7},
}
TABLES = {
    "classes": [{"weight": 0.7, "p": [0.9, 0.8, 0.85, 0.9]}, {"weight": 0.3, "p": 0.5}],
    "escalation": {"after": [1], "p": [0.95], "attempt_cost": [3.0]},
    "sampling": {"n": 3, "wrong_answers": 2},
    "failure_modes": [{"name": "tool", "share": 0.4, "miss": 0.0, "detect": 1.0},
                      {"name": "hallucination", "share": 0.6, "miss": 0.5, "detect": 0.4}],
    "faults": {"attempt": 0.05},
    "utility": {"silent_failure": -2.0, "detected_failure": -0.5, "infra_failure": -0.1,
                "cost_weight": 0.01},
}


def with_tables(**tables) -> dict:
    data = copy.deepcopy(BASE)
    if "failure_modes" in tables:  # the modes' misses replace verifier.miss
        data["verifier"] = {"false_reject": 0.1}
    data.update(copy.deepcopy(tables))
    return data


V2 = with_tables(**TABLES)
CASES = {
    "BASE (section 3: general kernel)": BASE,
    "BASE forced onto run_v2": BASE,
    "+ [utility] (general kernel)": with_tables(utility=TABLES["utility"]),
    "+ [[classes]] (2)": with_tables(classes=TABLES["classes"]),
    "+ [escalation] (1 rung)": with_tables(escalation=TABLES["escalation"]),
    "+ [sampling] vote of 3, 2 wrong answers": with_tables(sampling=TABLES["sampling"]),
    "+ [sampling] vote of 9, 2 wrong answers": with_tables(sampling={"n": 9, "wrong_answers": 2}),
    "+ [sampling] 3 through the verifier": with_tables(sampling={"n": 3, "select": "verifier"}),
    "+ [[failure_modes]] (2)": with_tables(failure_modes=TABLES["failure_modes"]),
    "+ [faults] 0.05": with_tables(faults=TABLES["faults"]),
    "V2: every table": V2,
}


def rate(data: dict, trials: int, repeats: int, threads: int, forced: bool) -> float:
    """Trials per second: process time with one thread, wall time with more (best of
    ``repeats``)."""
    _driver._FORCE_V2 = forced
    try:
        relsim.simulate(data, 1000, seed=1, threads=threads)  # load (or compile) the kernel
        clock = time.process_time if threads == 1 else time.perf_counter
        best = float("inf")
        for _ in range(repeats):
            start = clock()
            relsim.simulate(data, trials, seed=1, threads=threads)
            best = min(best, clock() - start)
    finally:
        _driver._FORCE_V2 = False
    return trials / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test)")
    parser.add_argument("--rounds", type=int, default=3, help="measure every case this often")
    args = parser.parse_args()
    trials = 100_000 if args.quick else 1_000_000
    repeats = 2 if args.quick else 3
    import numba
    import numpy as np

    print(f"cores available {len(os.sched_getaffinity(0))}, load average "
          f"{os.getloadavg()[0]:.2f} at start; numpy {np.__version__}, numba {numba.__version__}")
    one = dict.fromkeys(CASES, 0.0)
    for _ in range(1 if args.quick else args.rounds):
        for name, data in CASES.items():
            one[name] = max(one[name], rate(data, trials, repeats, 1, "forced" in name))
    reference = one["BASE (section 3: general kernel)"]
    header = f"{'scenario':44} {'trials/s':>10} {'x BASE':>7} {'estimate/measured':>18}"
    print(header)
    print("-" * len(header))
    for name, per_second in one.items():
        estimated = work_estimate(CASES[name], trials).seconds
        print(f"{name:44} {per_second / 1e6:>9.2f}M {reference / per_second:>7.2f} "
              f"{estimated / (trials / per_second):>18.2f}")
    print()
    print("two threads, wall time:")
    for name in ("BASE (section 3: general kernel)", "V2: every table"):
        print(f"  {name:44} {rate(CASES[name], trials, repeats, 2, False) / 1e6:>6.2f}M trials/s")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
