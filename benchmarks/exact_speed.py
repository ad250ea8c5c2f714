"""How fast the exact engine is, and how its time grows (issue 3 item 7).

    python3 benchmarks/exact_speed.py [--repeat R]
    python3 benchmarks/exact_speed.py --issue22 [--rounds N]   # the numpy and compiled passes

Prints tables of wall-clock time per ``relsim.evaluate`` call (the median of R runs, after one
warm run) for:

1. the target scenario: 200 steps, 3 retries per step, a task budget of 40, checkpoints every
   10 steps with 3 rollbacks, confusion and both random effects (issue 3: under 3 s; issue 22:
   0.1 s);
2. 25-step scenarios, from the plain lesson to every feature at once (target: under 0.2 s);
3. growth with the number of steps, with the budgets (per step, total, rollbacks), and with the
   quadrature (random-effect sizes and tolerance; the task-effect node count is printed);
4. references measured in the same run: the closed forms of relsim.formulas on the cases they
   cover, as a ratio;
5. the tables of docs/model.md section 8 on 25 steps, one at a time and all together, as a
   ratio to the same scenario without them (issue 20: the scenario with two classes, two rungs,
   a vote of 3 over 2 wrong answers, two failure modes and faults under 0.5 s), without and
   with checkpoints and random effects.

``--issue22`` measures issue 22's goal (the target in 0.1 s): the numpy pass, the compiled
pass as numba's JIT (relsim.exact._compiled) and as built ahead of time at install
(relsim.exact._aot), on the target, alternating in the same process for N rounds (medians of R
calls each), then, each in a fresh process, the first ``evaluate`` of growing scenarios on the
numpy pass, the JIT and the automatic choice (the ahead-of-time pass where it is built). Every
other table runs the numpy pass (the engine the earlier figures measured).

Times depend on the machine and on what else runs on it; the figures in benchmarks/README.md
say where they were measured.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

import json
import subprocess
import sys

from relsim import Scenario, formulas
from relsim.exact import DEFAULT_TOL, _aot, _chain, _evaluate, work_estimate


_AOT = _aot.forward_pass  # the build made ahead of time, as installed


def _best(fn, repeat: int) -> float:
    """The median wall time of ``repeat`` calls, after one warm call (imports, allocations)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _target(steps=200, per_step=3, total=40, every=10, rollbacks=3, task_sd=0.5, step_sd=0.5,
            confusion=True) -> dict:
    data = {
        "steps": steps,
        "p": 0.95,
        "verifier": {"miss": 0.05, "false_reject": 0.02},
        "retries": {"per_step": per_step, "total": total},
        "checkpoints": {"every": every, "detect": 0.9, "false_alarm": 0.02,
                        "rollbacks": rollbacks},
        "correlation": {"task_sd": task_sd, "step_sd": step_sd},
        "cost": {"attempt": 1.0, "verify": 0.1, "checkpoint": 0.5, "rollback": 1.0},
    }
    if confusion:
        data["correlation"]["confusion"] = {"enter": 0.3, "recover": 0.5, "factor": 0.7}
    if not rollbacks:  # a rollback cost needs rollbacks (a scenario error otherwise)
        del data["cost"]["rollback"]
    return data


def _row(label: str, data: dict, repeat: int, tol: float = DEFAULT_TOL, base: float | None = None,
         limit: float | None = None) -> float:
    s = Scenario.from_dict(data)
    _, nodes = _evaluate(s, tol)
    seconds = _best(lambda: _evaluate(s, tol), repeat)
    ratio = "" if base is None else f"{seconds / base:8.2f}x"
    verdict = "" if limit is None else ("  ok" if seconds < limit else "  OVER")
    print(f"  {label:44} {1e3 * seconds:10.1f} ms {nodes:6d} {ratio:>9}{verdict}")
    return seconds


def _header(title: str) -> None:
    print()
    print(title)
    print(f"  {'case':44} {'time':>13} {'z nodes':>6} {'ratio':>9}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (median kept)")
    parser.add_argument("--section8", action="store_true", help="only section 5 (model v2)")
    parser.add_argument("--issue22", action="store_true", help="only issue 22's passes")
    parser.add_argument("--rounds", type=int, default=5, help="--issue22: alternating rounds")
    args = parser.parse_args()
    repeat = args.repeat
    if args.issue22:
        _issue22(repeat, args.rounds)
        return
    _use("numpy")  # the tables below measure the numpy pass
    if args.section8:
        _section8(repeat)
        return

    print(f"relsim exact engine, {platform.python_implementation()} {platform.python_version()}, "
          f"numpy {np.__version__}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}")

    _header("1. the target scenario (limit 3 s)")
    _row("200 steps, r=3, total 40, ck/10, 3 rollbacks, all", _target(), repeat, limit=3.0)

    _header("2. 25-step scenarios (limit 0.2 s)")
    rng = np.random.default_rng(3)
    hetero = [round(float(x), 3) for x in rng.uniform(0.7, 0.99, 25)]
    cases = {
        "lesson: p 0.9, miss 0.1, r=3": {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
                                         "retries": {"per_step": 3}},
        "confusion, r=3": {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
                           "retries": {"per_step": 3}, "correlation": {
                               "confusion": {"enter": 0.5, "recover": 0.3, "factor": 0.6}}},
        "task_sd 1, no verifier": {"steps": 25, "p": 0.9, "correlation": {"task_sd": 1.0}},
        "all features, uniform p": _target(steps=25, every=5),
        "all features, 25 different p": {**_target(steps=25, every=5), "p": hetero},
        "all features, 25 p, sds 2": {**_target(steps=25, every=5, task_sd=2.0, step_sd=2.0),
                                      "p": hetero},
        "all, 25 p, r=5, total 60, ck every step, 10 rb": {
            **_target(steps=25, per_step=5, total=60, every=1, rollbacks=10), "p": hetero},
    }
    for label, data in cases.items():
        _row(label, data, repeat, limit=0.2)

    _header("3a. growth with steps (all features, ratio to 25 steps)")
    base = None
    for steps in (25, 50, 100, 200, 400):
        seconds = _row(f"{steps} steps", _target(steps=steps), repeat, base=base)
        base = base or seconds

    _header("3b. growth with budgets (200 steps, all features, ratio to the target)")
    base = _row("per_step 3, total 40, rollbacks 3 (the target)", _target(), repeat)
    for label, changes in [
        ("total 10", {"total": 10}),
        ("total 20", {"total": 20}),
        ("total 80", {"total": 80}),
        ("per_step 1", {"per_step": 1}),
        ("per_step 6", {"per_step": 6}),
        ("rollbacks 0", {"rollbacks": 0}),
        ("rollbacks 6", {"rollbacks": 6}),
        ("no task budget (total 10000)", {"total": 10_000}),
    ]:
        _row(label, _target(**changes), repeat, base=base)

    _header("3c. growth with the quadrature (200 steps, all features, ratio to no effects)")
    base = _row("no random effects", _target(task_sd=0.0, step_sd=0.0), repeat)
    for label, changes, tol in [
        ("step_sd 0.5 only", {"task_sd": 0.0}, DEFAULT_TOL),
        ("task_sd 0.5 only", {"step_sd": 0.0}, DEFAULT_TOL),
        ("both 0.5 (the target)", {}, DEFAULT_TOL),
        ("both 1.0", {"task_sd": 1.0, "step_sd": 1.0}, DEFAULT_TOL),
        ("both 2.0", {"task_sd": 2.0, "step_sd": 2.0}, DEFAULT_TOL),
        ("both 3.0", {"task_sd": 3.0, "step_sd": 3.0}, DEFAULT_TOL),
        ("both 0.5, tol 1e-6", {}, 1e-6),
        ("both 0.5, tol 1e-10", {}, 1e-10),
        ("both 0.5, tol 1e-12", {}, 1e-12),
    ]:
        _row(label, _target(**changes), repeat, tol=tol, base=base)

    print()
    print("4. against the closed forms, measured in the same run (cases they cover)")
    print(f"  {'case':44} {'engine':>10} {'closed':>10} {'ratio':>9}")
    p = [0.9] * 200
    for label, data, closed in [
        ("verified chain, 200 steps, r=3",
         {"steps": 200, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 3}},
         lambda: formulas.verified_chain(p, 3, miss=0.1)),
        ("confusion chain, 200 steps, r=3",
         {"steps": 200, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 3},
          "correlation": {"confusion": {"enter": 0.5, "recover": 0.3, "factor": 0.6}}},
         lambda: formulas.confusion_chain(0.9, 200, 0.5, 0.3, 0.6, retries=3, miss=0.1)),
        ("shared budget, 200 steps, total 40",
         {"steps": 200, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"total": 40}},
         lambda: formulas.shared_budget_success(0.9, 200, 40)),
        ("logit-normal chain, 200 steps, task_sd 1",
         {"steps": 200, "p": 0.9, "correlation": {"task_sd": 1.0}},
         lambda: formulas.logit_normal_chain(0.9, 200, 1.0)),
    ]:
        s = Scenario.from_dict(data)
        engine = _best(lambda: _evaluate(s, DEFAULT_TOL), repeat)
        reference = _best(closed, repeat)
        print(f"  {label:44} {1e3 * engine:7.1f} ms {1e3 * reference:7.2f} ms "
              f"{engine / reference:8.1f}x")

    _section8(repeat)


#: The passes `_issue22` compares: numpy; numba's JIT (the ahead-of-time build hidden); the
#: build made ahead of time at install (relsim.exact._aot).
PASSES = ("numpy", "jit", "ahead of time")


def _use(pass_: str) -> None:
    """Make ``evaluate`` run ``pass_`` (one of PASSES) in this process."""
    _chain.COMPILED = pass_ != "numpy"
    _aot.forward_pass = _AOT if pass_ == "ahead of time" else (lambda: None)


def _issue22(repeat: int, rounds: int) -> None:
    """The target on the three passes, alternating; then first calls in fresh processes."""
    print(f"issue 22: the exact engine's passes, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}")
    if _AOT() is None:
        print("  the ahead-of-time pass is not built here (see docs/development.md)")
        return
    s = Scenario.from_dict(_target())
    values = {}
    for pass_ in PASSES:  # the first jit call loads (or compiles) the kernel
        _use(pass_)
        values[pass_] = _evaluate(s, DEFAULT_TOL)[0]
    for pass_ in PASSES[1:]:
        difference = np.abs(values[pass_] - values["numpy"]).max()
        print(f"  target: largest difference, {pass_} against numpy: {difference:.1e}")
    times: dict[str, list[float]] = {pass_: [] for pass_ in PASSES}
    cpu: dict[str, list[float]] = {pass_: [] for pass_ in PASSES}
    for round_ in range(rounds):
        for pass_ in PASSES if round_ % 2 == 0 else PASSES[::-1]:
            _use(pass_)
            walls, cpus = [], []
            for _ in range(repeat):
                start, start_cpu = time.perf_counter(), time.process_time()
                _evaluate(s, DEFAULT_TOL)
                walls.append(time.perf_counter() - start)
                cpus.append(time.process_time() - start_cpu)
            times[pass_].append(statistics.median(walls))
            cpu[pass_].append(statistics.median(cpus))
    for pass_ in PASSES:
        print(f"  {pass_:14} rounds (ms): "
              + " ".join(f"{1e3 * t:6.1f}" for t in times[pass_])
              + f"   median {1e3 * statistics.median(times[pass_]):6.1f} ms wall, "
              f"{1e3 * statistics.median(cpu[pass_]):6.1f} ms CPU")
    for pass_ in PASSES[1:]:
        ratio = statistics.median(times[pass_]) / statistics.median(times["numpy"])
        print(f"  {pass_} / numpy: {ratio:.2f}")
    print(f"  load average now {os.getloadavg()[0]:.2f}")

    print()
    print("  first evaluate in a fresh process (wall, ms; import relsim before the clock; the")
    print("  median of 3 processes each); 'auto' is what evaluate chooses, with numba loaded or not")
    print(f"  {'steps':>6} {'estimate s':>10} {'numpy':>8} {'jit':>8} {'auto':>8}  numba loaded by auto")
    for steps in (25, 200, 1000, 2800):
        data = _target(steps=steps, every=5 if steps == 25 else 10)
        estimate = work_estimate(data).seconds
        row = {}
        for mode in ("numpy", "jit", "auto"):
            runs = [_fresh(data, mode) for _ in range(3)]
            row[mode] = statistics.median(seconds for seconds, _ in runs)
            loaded = runs[0][1]
        print(f"  {steps:6d} {estimate:10.2f} {1e3 * row['numpy']:8.0f} {1e3 * row['jit']:8.0f} "
              f"{1e3 * row['auto']:8.0f}  {loaded}")


_FRESH = """
import json, sys, time
import relsim
from relsim.exact import _aot, _chain, evaluate
mode = {mode!r}
if mode != "auto":
    _chain.COMPILED = mode == "jit"
    _aot.forward_pass = lambda: None
data = json.loads(sys.argv[1])
start = time.perf_counter()
evaluate(data)
print(time.perf_counter() - start, "numba" in sys.modules)
"""


def _fresh(data: dict, mode: str) -> tuple[float, bool]:
    """Seconds of the first ``evaluate`` in a new process (``mode``: numpy, jit or auto), and
    whether it imported numba."""
    out = subprocess.run([sys.executable, "-c", _FRESH.format(mode=mode), json.dumps(data)],
                         check=True, capture_output=True, text=True)
    seconds, loaded = out.stdout.strip().splitlines()[-1].split()
    return float(seconds), loaded == "True"


#: Section 8's tables, each as it is added to a 25-step scenario (`_section8`).
SECTION8 = {
    "classes (2)": {"classes": [{"weight": 0.7, "p": 0.9}, {"weight": 0.3, "p": 0.6}]},
    "escalation (2 rungs)": {"escalation": {"after": [1, 2], "p": [0.95, 0.99],
                                            "attempt_cost": [3.0, 10.0]}},
    "vote of 3 over 2 wrong answers": {"sampling": {"n": 3, "wrong_answers": 2}},
    "3 samples through the verifier": {"sampling": {"n": 3, "select": "verifier"}},
    "failure modes (2)": {"failure_modes": [
        {"name": "tool_error", "share": 0.4, "miss": 0.0},
        {"name": "hallucination", "share": 0.6, "miss": 0.3}]},
    "faults": {"faults": {"attempt": 0.02}},
}


def _section8_case(tables: tuple[str, ...], checkpoints: bool, effects: bool) -> dict:
    """25 steps, a verifier and 3 retries per step, with these section 8 tables."""
    data: dict = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1, "false_reject": 0.02},
                  "retries": {"per_step": 3}, "cost": {"attempt": 1.0, "verify": 0.1}}
    for name in tables:
        data.update(SECTION8[name])
    if "classes (2)" in tables:
        del data["p"]
    modes = "failure modes (2)" in tables
    if modes:
        del data["verifier"]["miss"]
    if checkpoints:
        data["checkpoints"] = {"every": 5, "detect": 0.9, "false_alarm": 0.02, "rollbacks": 3}
        data["cost"].update(checkpoint=0.5, rollback=1.0)
        if modes:
            data["failure_modes"] = [{**data["failure_modes"][0], "detect": 1.0},
                                     {**data["failure_modes"][1], "detect": 0.5}]
    if effects:
        data["correlation"] = {"task_sd": 0.5, "step_sd": 0.5}
    return data


def _section8(repeat: int) -> None:
    issue = ("classes (2)", "escalation (2 rungs)", "vote of 3 over 2 wrong answers",
             "failure modes (2)", "faults")
    for checkpoints, effects, label in [
        (False, False, "no checkpoints, no random effects"),
        (True, False, "checkpoints every 5, 3 rollbacks"),
        (False, True, "task_sd 0.5, step_sd 0.5"),
        (True, True, "checkpoints and random effects"),
    ]:
        _header(f"5. section 8's tables, 25 steps, {label} (ratio to none; limit 0.5 s)")
        base = _row("none (section 3's engine)", _section8_case((), checkpoints, effects), repeat)
        for name in SECTION8:
            _row(name, _section8_case((name,), checkpoints, effects), repeat, base=base)
        _row("issue 20: classes, rungs, vote, modes, faults",
             _section8_case(issue, checkpoints, effects), repeat, base=base, limit=0.5)


if __name__ == "__main__":
    main()
