"""Issue 15: the engines' work estimates against measured times (relsim.limits).

Prints, for scenarios that stress each term of ``relsim.exact.work_estimate``, of the
Monte Carlo estimate and of the timeline's (issue 24), the estimated and the measured seconds
and their ratio. The rates in
the estimates were set from this table; a ratio within a few times 1 is what they promise.

    python3 benchmarks/limits_calibration.py
"""

from __future__ import annotations

import time

from relsim import Scenario, evaluate, simulate, simulate_timeline
from relsim.scenario import time_model
from relsim.exact import work_estimate
from relsim.montecarlo import work_estimate as mc_work_estimate
from relsim.timeline import work_estimate as timeline_work_estimate

HETERO = [0.9 + 0.09 * i / 5000 for i in range(5000)]
EVERY = {
    "verifier": {"miss": 0.15, "false_reject": 0.1},
    "checkpoints": {"every": 3, "final": True, "detect": 0.9, "rollbacks": 2},
    "correlation": {"task_sd": 0.5, "step_sd": 0.5,
                    "confusion": {"enter": 0.5, "recover": 0.5, "factor": 0.7}},
}
EXACT_CASES = {
    "chain, 20000 steps": {"steps": 20000, "p": 0.9},
    "5000 distinct steps, r 3": {"steps": 5000, "p": HETERO, "verifier": {"miss": 0.1},
                                 "retries": {"per_step": 3}},
    "1000 steps, checkpoint every step, 20 rollbacks": {
        "steps": 1000, "p": 0.9, "checkpoints": {"every": 1, "rollbacks": 20, "false_alarm": 0.5}},
    "100 steps, per-step 100, total 3000": {
        "steps": 100, "p": 0.9, "verifier": {"miss": 0.1},
        "retries": {"per_step": 100, "total": 3000}},
    "25 steps, per-step 10000": {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
                                 "retries": {"per_step": 10000}},
    "200 steps, every feature, total 40": {
        "steps": 200, "p": 0.9, **EVERY, "retries": {"per_step": 3, "total": 40}},
    "200 steps, every feature, total 200, 10 rollbacks": {
        "steps": 200, "p": 0.9, **{**EVERY, "checkpoints": {"every": 3, "final": True,
                                   "detect": 0.9, "rollbacks": 10}},
        "retries": {"per_step": 3, "total": 200}},
    # docs/model.md section 8 (issue 20): failure modes widen the state, rungs the kernels
    "200 steps, every feature and section 8 table, total 40": {
        "steps": 200, **{**EVERY, "verifier": {"false_reject": 0.1}},
        "retries": {"per_step": 3, "total": 40},
        "classes": [{"weight": 0.7, "p": 0.9}, {"weight": 0.3, "p": 0.6}],
        "escalation": {"after": [1, 2], "p": [0.95, 0.99], "attempt_cost": [3.0, 10.0]},
        "sampling": {"n": 3, "wrong_answers": 2}, "faults": {"attempt": 0.02},
        "failure_modes": [{"name": "tool_error", "share": 0.4, "miss": 0.0, "detect": 1.0},
                          {"name": "hallucination", "share": 0.6, "miss": 0.3, "detect": 0.5}]},
    "1000 steps, 4 failure modes, checkpoint every 2, 5 rollbacks": {
        "steps": 1000, "p": 0.95, "verifier": {}, "retries": {"per_step": 2},
        "checkpoints": {"every": 2, "rollbacks": 5, "false_alarm": 0.1},
        "failure_modes": [{"name": f"mode {i}", "share": 0.25, "miss": 0.1 * i, "detect": 0.2 * i}
                          for i in range(4)]},
    "300 distinct steps, 3 rungs, step_sd 1": {
        "steps": 300, "p": [0.5 + i / 1000 for i in range(300)], "verifier": {"miss": 0.1},
        "retries": {"per_step": 5}, "escalation": {"after": [1, 2, 4], "p": [0.9, 0.95, 0.99]},
        "correlation": {"step_sd": 1.0}},
}
MC_CASES = {
    "R1 (simple kernel)": ({"steps": 25, "p": 0.9, "verifier": {"miss": 0.0},
                            "retries": {"per_step": 2}}, 2_000_000),
    "R7-like, 200 steps (general kernel)": (
        {"steps": 200, "p": 0.9, **EVERY, "retries": {"per_step": 3, "total": 40}}, 20_000),
    "1000 steps, false alarms, 50 rollbacks": (
        {"steps": 1000, "p": 0.99, "checkpoints": {"final": True, "false_alarm": 1.0,
                                                    "rollbacks": 50}}, 200),
}


TIMELINE_CASES = {
    "25 steps, no time tables": ({"steps": 25, "p": 0.9, "verifier": {"miss": 0.0},
                                  "retries": {"per_step": 2}}, 3000),
    "25 steps, attempt and verify times": ({"steps": 25, "p": 0.9, "verifier": {"miss": 0.1},
                                            "retries": {"per_step": 2},
                                            "timing": {"attempt": 8, "verify": 2}}, 2000),
    # a workload's count is replications of its fleet.tasks
    "fleet_rate_limits.toml (2 replications)": ("scenarios/fleet_rate_limits.toml", 2),
    "support_reviewers.toml (2 replications)": ("scenarios/support_reviewers.toml", 2),
    "5 steps, LLM slots, no agent pool (all alive)": (
        {"steps": 5, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 2},
         "timing": {"attempt": 8}, "resources": {"llm_concurrency": 4}}, 2),
    "1000 steps, no time tables": ({"steps": 1000, "p": 0.99}, 100),
    # the compiled path (independent trials estimated over 2 s of simpy), both threads
    "R1, lognormal attempts, compiled lane": (
        {"steps": 25, "p": 0.9, "verifier": {"miss": 0.0}, "retries": {"per_step": 2},
         "timing": {"attempt": {"median": 8, "p95": 30}, "verify": 2, "deadline": 3600},
         "infra": {"crash_per_hour": 0.2}}, 4_000_000),
    "25 steps, checkpoints, task effect, compiled one by one": (
        {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 2},
         "checkpoints": {"final": True, "rollbacks": 1}, "correlation": {"task_sd": 0.3},
         "timing": {"attempt": {"median": 8, "p95": 30}, "verify": 2}}, 1_000_000),
}


def _time(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    print(f"{'exact engine':55} {'estimate s':>10} {'measured s':>10} {'ratio':>6}")
    for name, data in EXACT_CASES.items():
        s = Scenario.from_dict(data)
        estimate = work_estimate(s).seconds
        measured = _time(lambda: evaluate(s))
        print(f"{name:55} {estimate:10.3f} {measured:10.3f} {estimate / measured:6.2f}")
    print()
    print(f"{'Monte Carlo, 1 thread':55} {'estimate s':>10} {'measured s':>10} {'ratio':>6}")
    for name, (data, trials) in MC_CASES.items():
        s = Scenario.from_dict(data)
        simulate(s, 1000, seed=0, threads=1)  # load the kernel first
        estimate = mc_work_estimate(s, trials, threads=1).seconds
        measured = _time(lambda: simulate(s, trials, seed=0, threads=1))
        print(f"{name:55} {estimate:10.3f} {measured:10.3f} {estimate / measured:6.2f}")
    print()
    print(f"{'timeline':55} {'estimate s':>10} {'measured s':>10} {'ratio':>6}")
    simulate_timeline(EXACT_CASES["chain, 20000 steps"] | {"steps": 2}, 10, seed=0)  # load simpy
    for name, (data, count) in TIMELINE_CASES.items():
        s = Scenario.from_toml(data) if isinstance(data, str) else Scenario.from_dict(data)
        if time_model(s).workload:  # count replications of fleet.tasks, as the engine counts them
            estimate = timeline_work_estimate(s, time_model(s).tasks * count).seconds
            run = lambda: simulate_timeline(s, replications=count, seed=0)  # noqa: E731
        else:
            estimate = timeline_work_estimate(s, count).seconds
            run = lambda: simulate_timeline(s, count, seed=0)  # noqa: E731
        measured = min(_time(run) for _ in range(2))  # the first loads a compiled kernel
        print(f"{name:55} {estimate:10.3f} {measured:10.3f} {estimate / measured:6.2f}")


if __name__ == "__main__":
    main()
