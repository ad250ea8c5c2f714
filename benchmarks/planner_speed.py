"""How fast the planner answers: every ``--for`` on 25-step scenarios, and ``allocation`` on
200 heterogeneous steps with and without correlation, and how close its answer is.

Run ``python benchmarks/planner_speed.py`` (add ``--quick`` to skip the 200-step runs with
correlation, ``--allocation`` to run the allocation rows alone). Each row reports the wall
time of one plan (the median of ``--repeat`` runs), the number of exact-engine evaluations it
made, and the ratio of its time to one engine evaluation of the same scenario measured in
this run (so the table reads on any machine). Allocation rows add the relative gap between
the answer and the planner's proven lower bound on the optimum (0: proven optimal). The
targets (issue 22): allocation minimising cost per success on 200 steps with task and step
effects under 5 s; a stated bound within 1% on large scenarios; the optimum on small ones;
every other ``--for`` on a 25-step scenario under 1 s. The rebuilt 4-step example of issue 22
is a row of its own, with the cost per success of the old heuristic's answer beside it.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

import relsim.exact
from relsim import plan as planner
from relsim.scenario import Scenario


class CountingEngine:
    """Wraps the exact engine to count evaluations (the planner imports it at call time)."""

    def __init__(self) -> None:
        self.inner = relsim.exact.evaluate
        self.calls = 0

    def __call__(self, scenario, **kwargs):
        self.calls += 1
        return self.inner(scenario, **kwargs)


def scenarios_25() -> dict[str, Scenario]:
    lesson = {"steps": 25, "p": 0.9, "target": 0.95}
    return {
        "25-step chain (miss 0.01, f 0.02, r 3)": Scenario.from_dict(
            {**lesson, "verifier": {"miss": 0.01, "false_reject": 0.02}, "retries": {"per_step": 3},
             "cost": {"attempt": 1.0, "verify": 0.1}}
        ),
        "25-step + total 30 + checkpoints": Scenario.from_dict(
            {**lesson, "target": 0.9, "verifier": {"miss": 0.01, "false_reject": 0.02},
             "retries": {"per_step": 2, "total": 30},
             "checkpoints": {"every": 5, "detect": 0.9, "rollbacks": 2},
             "cost": {"attempt": 1.0, "verify": 0.1, "checkpoint": 0.5, "rollback": 1.0}}
        ),
        "25-step + confusion + task/step sd": Scenario.from_dict(
            {**lesson, "target": 0.9, "verifier": {"miss": 0.01, "false_reject": 0.02},
             "retries": {"per_step": 2},
             "correlation": {"task_sd": 0.3, "step_sd": 0.3,
                             "confusion": {"enter": 0.3, "recover": 0.5, "factor": 0.7}},
             "cost": {"attempt": 1.0, "verify": 0.1}}
        ),
    }


def scenarios_200(seed: int = 20260101) -> dict[str, Scenario]:
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0.7, 0.99, 200), 4).tolist()
    attempt = np.round(rng.uniform(0.5, 2.0, 200), 3).tolist()
    base = {
        "steps": 200,
        "p": p,
        "target": 0.6,
        "verifier": {"miss": 0.01, "false_reject": 0.02},
        "cost": {"attempt": attempt, "verify": 0.1},
    }
    return {
        "200 heterogeneous steps": Scenario.from_dict(base),
        "200 steps + task/step sd 0.3": Scenario.from_dict(
            {**base, "target": 0.5, "correlation": {"task_sd": 0.3, "step_sd": 0.3}}
        ),
        "200 steps + confusion": Scenario.from_dict(
            {**base, "target": 0.5,
             "correlation": {"confusion": {"enter": 0.3, "recover": 0.5, "factor": 0.7}}}
        ),
    }


def issue_example() -> Scenario:
    """Issue 22's 4-step correlated example, rebuilt (its scenario was not recorded): the old
    heuristic answered [3, 12, 15, 24] here (cost per success 15.716, "within 8.3")."""
    return Scenario.from_dict(
        {"steps": 4, "p": [0.75, 0.71, 0.91, 0.65], "target": 0.9,
         "verifier": {"miss": 0.03, "false_reject": 0.05}, "correlation": {"task_sd": 1.0},
         "cost": {"attempt": [3.8, 1.3, 2.3, 1.5], "verify": 0.2}}
    )


#: The rebuilt example's old answer (the heuristic before issue 22).
OLD_ANSWER = (3, 12, 15, 24)


def measure(scenario: Scenario, quantity: str, repeat: int) -> tuple[float, int, planner.Plan]:
    counter = CountingEngine()
    relsim.exact.evaluate = counter
    try:
        times = []
        result = None
        calls = 0
        for _ in range(repeat):
            counter.calls = 0
            start = time.perf_counter()
            result = planner.solve(scenario, quantity)
            times.append(time.perf_counter() - start)
            calls = counter.calls
    finally:
        relsim.exact.evaluate = counter.inner
    assert result is not None
    return statistics.median(times), calls, result


def engine_time(scenario: Scenario, repeat: int) -> float:
    relsim.exact.evaluate(scenario)  # warm
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        relsim.exact.evaluate(scenario)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def show_value(value) -> str:
    if isinstance(value, tuple):
        return f"[{len(value)} budgets, sum {sum(value)}]"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (median kept)")
    parser.add_argument("--quick", action="store_true", help="skip 200 steps with correlation")
    parser.add_argument("--allocation", action="store_true", help="the allocation rows alone")
    args = parser.parse_args()
    print(
        f"relsim planner, {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )

    rows = []
    if not args.allocation:
        for name, scenario in scenarios_25().items():
            reference = engine_time(scenario, args.repeat)
            for quantity in planner.QUANTITIES:
                if quantity == "checkpoints" and scenario.checkpoints is None:
                    continue
                seconds, calls, result = measure(scenario, quantity, args.repeat)
                rows.append((name, quantity, seconds, calls, seconds / reference, result))
    example = issue_example()
    reference = engine_time(example, args.repeat)
    seconds, calls, result = measure(example, "allocation", args.repeat)
    rows.append(("issue 22 example (4 steps, task_sd 1)", "allocation", seconds, calls,
                 seconds / reference, result))
    for name, scenario in scenarios_200().items():
        if args.quick and scenario.correlation != Scenario(steps=1, p=0.5).correlation:
            continue
        reference = engine_time(scenario, args.repeat)
        seconds, calls, result = measure(scenario, "allocation", args.repeat)
        rows.append((name, "allocation", seconds, calls, seconds / reference, result))

    header = (
        f"{'scenario':<38} {'--for':<11} {'seconds':>8} {'engine calls':>12} "
        f"{'x one eval':>10} {'rel. gap':>9}  {'feasible':<8} value / method"
    )
    print(header)
    print("-" * len(header))
    for name, quantity, seconds, calls, ratio, result in rows:
        note = show_value(result.value)
        relative = ""
        if quantity == "allocation":
            gap = result.details.get("gap")
            note += f"; cost/success {result.cost_per_success:.6g}"
            note += "; " + result.details.get("method", "").split(" (")[0]
            if gap is None:
                relative = "unknown"
            else:
                value = result.cost_per_success
                relative = f"{result.details.get('relative_gap', gap / value if value else 0.0):.2%}"
        print(
            f"{name:<38} {quantity:<11} {seconds:>8.3f} {calls:>12d} {ratio:>10.1f} "
            f"{relative:>9}  {str(result.feasible):<8} {note}"
        )
    from relsim.plan._common import _with_per_step

    old = relsim.exact.evaluate(_with_per_step(example, OLD_ANSWER))
    print(
        f"\nissue 22 example: the old heuristic's {list(OLD_ANSWER)} costs "
        f"{old.cost_per_success:.6g} per success"
    )


if __name__ == "__main__":
    main()
