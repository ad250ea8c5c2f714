"""Speed of the Monte Carlo engine, next to references measured in the same run.

Prints step-attempts per second of ``relsim.simulate`` on R1 and R7 of docs/model.md section 5
with 1 and 2 threads, numpy's ``Generator.random`` fill rate (uniform doubles per second; one
thread, and one generator per thread run together), a plain-Python loop, the start time of a
second ``relsim simulate`` (kernels in numba's cache; next to the imports of numpy and numba)
and the peak memory of 10**8 trials of a 25-step scenario. Nothing here is
asserted: ratios are what to read, since the absolute figures move with the machine and its
load. On a shared machine, ``--rounds N`` measures the throughput table N times (numpy and
relsim in turn each round) and prints the median of each ratio with the load averages.
Goals (issue 22, 2 threads against numpy's one-thread rate times 2): R1 >= 2.0x, R7 >= 0.25x.

    python benchmarks/montecarlo_speed.py              # full run (about five minutes)
    python benchmarks/montecarlo_speed.py --rounds 5   # the throughput table 5 times, medians
    python benchmarks/montecarlo_speed.py --quick      # smaller sizes, a smoke test
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

# Measure this checkout's relsim (not another one installed in the environment), here and
# in the processes started below.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))

import relsim  # noqa: E402
from relsim import Scenario  # noqa: E402

R1 = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"per_step": 2}}
R7 = {
    "steps": 9, "p": [0.99, 0.9, 0.8, 0.95, 0.9, 0.7, 0.99, 0.9, 0.85],
    "verifier": {"miss": 0.15, "false_reject": 0.1}, "retries": {"per_step": 3, "total": 5},
    "checkpoints": {"every": 3, "final": True, "detect": 0.9, "rollbacks": 2},
    "correlation": {"task_sd": 0.5, "step_sd": 0.5,
                    "confusion": {"enter": 0.5, "recover": 0.5, "factor": 0.7}},
    "cost": {"attempt": 1, "verify": 0.2, "checkpoint": 0.5, "rollback": 1},
}
R1_TOML = "steps = 25\np = 0.9\n[verifier]\nmiss = 0.0\n[retries]\nper_step = 2\n"


def best_of(repeats: int, run) -> float:
    """The shortest wall time of ``repeats`` calls (the least disturbed by other load)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def numpy_fill_rate(threads: int, doubles: int, repeats: int) -> float:
    """Uniform doubles per second from ``Generator.random(out=...)``, one generator and one
    buffer per thread, the threads running together (numpy releases the GIL while filling)."""
    size = 1 << 20
    rounds = max(1, doubles // size)
    generators = [np.random.default_rng(k) for k in range(threads)]
    buffers = [np.empty(size) for _ in range(threads)]

    def fill(k: int) -> None:
        for _ in range(rounds):
            generators[k].random(out=buffers[k])

    def run() -> None:
        workers = [threading.Thread(target=fill, args=(k,)) for k in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    return threads * rounds * size / best_of(repeats, run)


def python_loop_rate(trials: int) -> float:
    """Step-attempts per second of the obvious Python loop on R1 (stdlib ``random``)."""

    def run() -> int:
        draw = random.random
        attempts = 0
        for _ in range(trials):
            for _step in range(25):
                for _try in range(3):  # one attempt and up to 2 retries
                    attempts += 1
                    if draw() < 0.9:
                        break
                else:
                    break  # retries exhausted: a detected failure
        return attempts

    random.seed(1)
    start = time.perf_counter()
    attempts = run()
    return attempts / (time.perf_counter() - start)


def slow_reference_rate(trials: int) -> float:
    """Step-attempts per second of the tests' plain-Python simulator on R7."""
    sys.path.insert(0, str(ROOT / "tests"))
    from slow_simulator import simulate_slowly

    start = time.perf_counter()
    done = simulate_slowly(Scenario.from_dict(R7), trials, seed=1)
    return sum(t.attempts for t in done) / (time.perf_counter() - start)


def simulate_rate(scenario: Scenario, trials: int, threads: int, repeats: int) -> float:
    """Step-attempts per second of ``relsim.simulate`` (attempts counted by the run itself)."""
    attempts = []

    def run() -> None:
        outcome = relsim.simulate(scenario, trials, seed=1, threads=threads)
        attempts.append(round(outcome.expected_attempts * outcome.trials))

    seconds = best_of(repeats, run)
    return attempts[-1] / seconds


# numba's import and the cached kernel's load, without the rest of relsim simulate (a call
# on no trials loads the compiled code for these argument types).
LOAD_KERNEL = (
    "import relsim\n"
    "from relsim.montecarlo import _driver, _inputs\n"
    "_driver._Kernel(_inputs.kernel_input(relsim.scenario.trial_model(relsim.Scenario.from_dict({'steps': 2, 'p': 0.5}))))\n"
)


def start_times(path: str, repeats: int) -> dict[str, float]:
    """Median wall time of fresh processes: ``relsim simulate PATH --trials 1000`` with its
    kernels in numba's cache, loading those kernels alone, and two floors."""
    arguments = ["simulate", path, "--trials", "1000", "--seed", "1"]
    commands = {
        "relsim simulate (kernels in numba's cache)": [sys.executable, "-m", "relsim",
                                                       *arguments],
        "import numba + load run_simple from the cache": [sys.executable, "-c", LOAD_KERNEL],
        'python -c "import numpy"': [sys.executable, "-c", "import numpy"],
        'python -c "import numba"': [sys.executable, "-c", "import numba"],
    }
    for command in commands.values():  # fill the caches if they are cold
        subprocess.run(command, check=True, capture_output=True)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):  # interleaved, so that a burst of load hits all alike
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


PEAK_MEMORY = """
import resource, sys, time
import relsim
scenario = relsim.Scenario.from_dict({scenario!r})
start = time.perf_counter()
outcome = relsim.simulate(scenario, {trials}, seed=1)
seconds = time.perf_counter() - start
try:  # this process's own high-water mark (ru_maxrss keeps the parent's from before exec)
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    megabytes = int(line.split()[1]) / 1024
except OSError:
    megabytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(megabytes, seconds, outcome.trials)
"""


def peak_memory(scenario: dict, trials: int) -> tuple[float, float]:
    """Peak RSS (MB) and seconds of a fresh process that simulates ``trials`` trials."""
    code = PEAK_MEMORY.format(scenario=scenario, trials=trials)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    megabytes, seconds, done = out.stdout.split()
    assert int(done) == trials
    return float(megabytes), float(seconds)


def load_average() -> float:
    """The one-minute load average (nan where the system has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    import numba

    return (f"{cpu}, {cores} cores available, load average {load_average():.2f} at start; "
            f"Python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}")


def throughput(scale: int, repeats: int) -> tuple[dict, float, float, dict]:
    """One round of the throughput table: numpy's fill rates, the Python references and
    relsim's step-attempts per second on R1 and R7 with 1 and 2 threads."""
    r1, r7 = Scenario.from_dict(R1), Scenario.from_dict(R7)
    fill = {t: numpy_fill_rate(t, 400_000_000 // scale, repeats) for t in (1, 2)}
    python_rate = python_loop_rate(200_000 // scale)
    reference_rate = slow_reference_rate(20_000 // scale)
    rates = {}
    for threads in (1, 2):
        rates["R1", threads] = simulate_rate(r1, 20_000_000 // scale, threads, repeats)
        rates["R7", threads] = simulate_rate(r7, 4_000_000 // scale, threads, repeats)
    return fill, python_rate, reference_rate, rates


def print_table(fill: dict, python_rate: float, reference_rate: float, rates: dict) -> None:
    print("step-attempts per second (M/s); numpy: uniform doubles per second (M/s)")
    header = (f"{'case':5} {'threads':>7} {'relsim':>9} {'numpy x T':>10} {'ratio':>6} "
              f"{'numpy T run':>12} {'ratio':>6} {'python':>8} {'ratio':>7}")
    print(header)
    print("-" * len(header))
    for case, python in (("R1", python_rate), ("R7", reference_rate)):
        for threads in (1, 2):
            rate = rates[case, threads]
            print(
                f"{case:5} {threads:>7} {rate / 1e6:>9.0f} {fill[1] * threads / 1e6:>10.0f} "
                f"{rate / (fill[1] * threads):>6.2f} {fill[threads] / 1e6:>12.0f} "
                f"{rate / fill[threads]:>6.2f} {python / 1e6:>8.2f} {rate / python:>7.0f}"
            )
    print("numpy x T: one thread's fill rate times T; numpy T run: T generators filling together;")
    print("python: R1, the obvious loop over stdlib random; R7, the tests' plain-Python simulator.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke test)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure the throughput table this many times; print medians")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    repeats = 2 if args.quick else 3

    print(f"machine: {machine()}")
    relsim.simulate(Scenario.from_dict(R1), 1000, seed=1)  # load (or compile) the kernels
    relsim.simulate(Scenario.from_dict(R7), 1000, seed=1)

    ratios: dict[tuple[str, int, str], list[float]] = {}
    for round_ in range(args.rounds):
        fill, python_rate, reference_rate, rates = throughput(scale, repeats)
        print()
        if args.rounds > 1:
            print(f"round {round_ + 1} of {args.rounds}, load average {load_average():.2f}")
        print_table(fill, python_rate, reference_rate, rates)
        for (case, threads), rate in rates.items():
            ratios.setdefault((case, threads, "numpy x T"), []).append(
                rate / (fill[1] * threads))
            ratios.setdefault((case, threads, "numpy T run"), []).append(rate / fill[threads])
    if args.rounds > 1:
        print()
        print(f"median ratios over {args.rounds} rounds, load average {load_average():.2f} at "
              "the end:")
        for (case, threads, reference), values in sorted(ratios.items()):
            print(f"  {case} {threads} thread{'s' if threads > 1 else ' '} / {reference:11}: "
                  f"{statistics.median(values):5.2f} (rounds: "
                  f"{', '.join(f'{v:.2f}' for v in values)})")

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "r1.toml")
        Path(path).write_text(R1_TOML)
        starts = start_times(path, 5 if args.quick else 21)
    print()
    print("start of a second `relsim simulate r1.toml --trials 1000` (median wall seconds)")
    for name, seconds in starts.items():
        print(f"  {name:45} {seconds:5.2f}")

    trials = 10**8 // scale**2
    small = 10**6 // scale**2
    for name, scenario in (("R1", R1),):
        base_mb, _ = peak_memory(scenario, small)
        big_mb, seconds = peak_memory(scenario, trials)
        print(f"memory: {trials:.0e} trials of {name} (25 steps): peak RSS {big_mb:.0f} MB in "
              f"{seconds:.1f} s ({small:.0e} trials: {base_mb:.0f} MB)")
    general = dict(R1, checkpoints={"every": 5, "detect": 0.9, "rollbacks": 2},
                   correlation={"step_sd": 0.3})
    trials = 10**7 // scale**2
    base_mb, _ = peak_memory(general, small)
    big_mb, seconds = peak_memory(general, trials)
    print(f"memory: {trials:.0e} trials of R1 + checkpoints + step_sd (general kernel): peak RSS "
          f"{big_mb:.0f} MB in {seconds:.1f} s ({small:.0e} trials: {base_mb:.0f} MB)")


if __name__ == "__main__":
    main()
