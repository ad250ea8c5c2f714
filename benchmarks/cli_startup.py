"""Start-up time of ``relsim solve`` against ``python -c "import numpy"`` (issue 2 item 5),
and of a second ``relsim simulate`` (its kernels in numba's cache) for comparison.

Runs each command ``--repeats`` times in a fresh process (after one warm-up run, so the file
cache and numba's cache are warm for all of them alike), and prints the median wall time and
its ratio to the numpy import measured in the same run. Goal: ``relsim solve`` within 2x of
importing numpy. ``relsim simulate`` has no such goal: it imports numba and loads its compiled
kernels from numba's cache (see benchmarks/README.md).

    python benchmarks/cli_startup.py [--repeats 21]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOLVE = ["solve", "--steps", "25", "--target", "0.95"]
R1_TOML = "steps = 25\np = 0.9\n[verifier]\nmiss = 0.0\n[retries]\nper_step = 2\n"


def commands(r1_path: str) -> list[tuple[str, list[str]]]:
    python = sys.executable
    out = [
        ("python -c pass", [python, "-c", "pass"]),
        ('python -c "import numpy"  (reference)', [python, "-c", "import numpy"]),
        ("python -m relsim solve --steps 25 --target 0.95", [python, "-m", "relsim", *SOLVE]),
    ]
    script = shutil.which("relsim", path=os.path.dirname(python)) or shutil.which("relsim")
    if script:
        out.append(("relsim solve --steps 25 --target 0.95", [script, *SOLVE]))
    else:
        print("(the relsim console script is not on PATH: pip install -e . to time it)")
    out.append(
        ("python -m relsim solve ... --p 0.9 --miss 0.1", [python, "-m", "relsim", *SOLVE,
                                                          "--p", "0.9", "--miss", "0.1"])
    )
    out.append(
        ("python -m relsim simulate r1.toml --trials 1000", [python, "-m", "relsim", "simulate",
                                                            r1_path, "--trials", "1000",
                                                            "--seed", "1"])
    )
    return out


def wall_times(argv: list[str], repeats: int) -> list[float]:
    subprocess.run(argv, capture_output=True)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 3):
            raise SystemExit(f"{argv} failed: {done.stderr.decode()}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        r1_path = str(Path(folder) / "r1.toml")
        Path(r1_path).write_text(R1_TOML)
        rows = [(name, wall_times(argv, args.repeats)) for name, argv in commands(r1_path)]
    reference = statistics.median(rows[1][1])
    width = max(len(name) for name, _ in rows)
    print(f"{'command':<{width}}  median ms  min ms  x numpy")
    for name, times in rows:
        median = statistics.median(times)
        print(
            f"{name:<{width}}  {1000 * median:9.1f}  {1000 * min(times):6.1f}  "
            f"{median / reference:7.2f}"
        )
    print(f"({args.repeats} runs each, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
