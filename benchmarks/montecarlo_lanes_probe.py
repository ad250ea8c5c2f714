"""Probe: would the general kernel gain from running its trials side by side?

Issue 22 asks for R7 (docs/model.md section 5: checkpoints, both random effects, confusion)
at 0.25x numpy's fill rate; ``run_general`` is at 0.13-0.14x, running its trials one by one
after a vectorised pass over their random effects (benchmarks/README.md). The last idea left
was the fast kernel's design applied to it: trials side by side. This script measures that
design's cost before anyone builds it into the engine.

``run_side_by_side`` below runs section 3 for ``LANES`` trials at once, one event per trial
and tick (an attempt, or a checkpoint's check), with every decision made without a branch
(0/-1 masks), so that no trial's path can mispredict another's: the lockstep form a vector
unit needs. Each tick draws one 64-bit output per lane (the outcome from its top half, the
confusion transition from its bottom half, or the check from its top half); the pass before
the ticks draws the task effects and the first execution of every step's effect as
``run_general``'s does; a re-execution after a rollback draws its effect in a scalar fix-up
after the tick. It keeps only the outcome counts and the sums of attempts and cost.

It prints, for R7, R7 without random effects and R7 without them or confusion: the events
(attempts and checks) a trial has, the ticks a group takes (its slowest trial sets them), ns a
trial side by side and ns per lane and tick, its success against the exact engine's (in
standard errors: it checks itself), ns a trial of ``relsim.simulate`` on one thread, and the
ratio. Nothing is asserted.

    python3 benchmarks/montecarlo_lanes_probe.py [--groups 20000]

Not part of the engine: a probe, like ``allocation_dual.py``.
"""

from __future__ import annotations

import argparse
import copy
import os
import time

import numba
import numpy as np

import relsim
from relsim import Scenario
from relsim.montecarlo._draws import (
    _LOW_32, _SHIFT_32, _expit_select, _four_way, _next, _normal_edge, _step_lanes, threshold,
)
from relsim.montecarlo._inputs import kernel_input
from relsim.montecarlo._kernels import _four_way_call, _normal_from, _shifted_p, _ziggurat_fast
from relsim.montecarlo._layout import GENERATOR_LANES
from relsim.scenario import trial_model
from montecarlo_speed import R7

LANES = 32
ATTEMPT, CHECK, DONE = 0, 1, 2
# rows of the lane state S
PHASE, STEP, CONF, TAINT, SEG, ONCE, DOOM, HERE, USED, RB, ATT = range(11)
F1, F2, F3, C1, C2, C3, FIX, CHECKS = range(11, 19)


@numba.njit(nogil=True, error_model="numpy")
def run_side_by_side(seed_state, n_groups, design, out):
    """Section 3 for ``n_groups * LANES`` trials, LANES at a time in lockstep; ``out`` gets
    (success, silent, detected, attempts, cost, ticks, checks) summed."""
    logit_p, p, miss, false_reject = design.logit_p, design.p, design.miss, design.false_reject
    factor, task_sd, step_sd = design.factor, design.task_sd, design.step_sd
    has_confusion, rollbacks = design.has_confusion, design.rollbacks
    total_retries = design.total_retries
    checkpoint_cost, rollback_cost = design.checkpoint_cost, design.rollback_cost
    lvl0 = threshold(design.false_alarm)  # a clean segment raises an alarm
    lvl1 = threshold(design.detect)  # a tainted one is caught
    trans0 = threshold(design.enter) if has_confusion else 0
    trans1 = threshold(design.recover) if has_confusion else 0
    steps = logit_p.shape[0]
    g = LANES
    ng = (steps + 1) * g
    # step tables, padded past the last step: per-step retries, checkpoint after i steps done,
    # shifted by an effect
    ck_at, sh_at = steps + 2, 2 * steps + 4
    table = np.zeros(3 * steps + 6, dtype=np.int64)
    shifted = np.zeros(steps, dtype=np.bool_)
    for i in range(steps):
        shifted[i] = not design.p_is_fixed[i] and (task_sd > 0.0 or step_sd > 0.0)
        table[i] = design.per_step[i]
        table[sh_at + i] = 1 if shifted[i] else 0
    for i in range(steps + 1):
        table[ck_at + i] = 1 if design.is_checkpoint[i] else 0
    step_cost = np.zeros(steps + 2)
    for i in range(steps):
        step_cost[i] = design.attempt_cost[i]
    # every step's first-execution thresholds [6 * ng]: focused t1..t3, confused t1..t3,
    # at [row * ng + i * g + lane]; fixed steps the same for every lane
    pre = np.zeros(6 * ng, dtype=np.int64)
    for i in range(steps):
        if not shifted[i]:
            a = _four_way(p[i], miss[i], false_reject[i])
            b = _four_way(p[i] * factor, miss[i], false_reject[i])
            for lane in range(g):
                for r in range(3):
                    pre[r * ng + i * g + lane] = a[r]
                    pre[(3 + r) * ng + i * g + lane] = b[r]
    task_rows = 1 if task_sd > 0.0 else 0
    normal_rows = task_rows + (steps if step_sd > 0.0 else 0)
    raw = np.empty(max(normal_rows, 1) * g, dtype=np.uint64)
    normals = np.zeros(max(normal_rows, 1) * g)
    needs_edge = np.empty(max(normal_rows, 1) * g, dtype=np.bool_)
    task_effect = np.zeros(g)
    state = np.zeros((19, g), dtype=np.int64)
    cost = np.zeros(g)
    tick_raw = np.empty(g, dtype=np.uint64)
    s0, s1 = seed_state[0].copy(), seed_state[1].copy()
    s2, s3 = seed_state[2].copy(), seed_state[3].copy()
    m_no_step_sd = -np.int64(step_sd == 0.0)
    n_success = n_silent = n_detected = sum_attempts = sum_checks = ticks = 0
    sum_cost = 0.0
    for _ in range(n_groups):
        # ---- the pass, as run_general's: effects, shifted p, thresholds (confused too)
        if normal_rows > 0:
            count = normal_rows * g
            for at in range(0, count, GENERATOR_LANES):
                _step_lanes(s0, s1, s2, s3, raw, at)
            for k in range(count):
                normals[k], needs_edge[k] = _ziggurat_fast(raw[k])
            o0, o1, o2, o3 = s0[0], s1[0], s2[0], s3[0]
            for k in range(count):
                if needs_edge[k]:
                    normals[k], o0, o1, o2, o3 = _normal_edge(raw[k], o0, o1, o2, o3)
            s0[0], s1[0], s2[0], s3[0] = o0, o1, o2, o3
            if task_sd > 0.0:
                for lane in range(g):
                    task_effect[lane] = task_sd * normals[lane]
            for i in range(steps):
                if not shifted[i]:
                    continue
                row = (task_rows + i) * g if step_sd > 0.0 else 0
                for lane in range(g):
                    pe = _expit_select(
                        logit_p[i] + (task_effect[lane] + step_sd * normals[row + lane]))
                    t1, t2, t3 = _four_way(pe, miss[i], false_reject[i])
                    if has_confusion:
                        u1, u2, u3 = _four_way(pe * factor, miss[i], false_reject[i])
                    else:
                        u1, u2, u3 = t1, t2, t3
                    at = i * g + lane
                    pre[at], pre[ng + at], pre[2 * ng + at] = t1, t2, t3
                    pre[3 * ng + at], pre[4 * ng + at], pre[5 * ng + at] = u1, u2, u3
        for lane in range(g):
            for f in range(19):
                state[f, lane] = 0
            state[ONCE, lane] = 1
            cost[lane] = 0.0
            for r in range(6):
                state[F1 + r, lane] = pre[r * ng + lane]
        # ---- the ticks: one event per lane, no branch
        while True:
            ticks += 1
            for at in range(0, g, GENERATOR_LANES):
                _step_lanes(s0, s1, s2, s3, tick_raw, at)
            active = 0
            fixes = 0
            for lane in range(g):
                x = tick_raw[lane]
                u = np.int64(x >> _SHIFT_32)
                low = np.int64(x & _LOW_32)
                ph, i, conf, taint = state[PHASE, lane], state[STEP, lane], state[CONF, lane], state[TAINT, lane]
                seg, once, doom = state[SEG, lane], state[ONCE, lane], state[DOOM, lane]
                rh, ru, rb, att = state[HERE, lane], state[USED, lane], state[RB, lane], state[ATT, lane]
                g1, g2, g3 = state[F1, lane], state[F2, lane], state[F3, lane]
                h1, h2, h3 = state[C1, lane], state[C2, lane], state[C3, lane]
                m_att = -np.int64(ph == ATTEMPT)
                m_chk = -np.int64(ph == CHECK)
                m_conf = -conf
                a1 = (h1 & m_conf) | (g1 & ~m_conf)
                a2 = (h2 & m_conf) | (g2 & ~m_conf)
                a3 = (h3 & m_conf) | (g3 & ~m_conf)
                m_accepted = (u - a2) >> 63
                m_correct = ((u - a1) >> 63) | (~m_accepted & ((u - a3) >> 63))
                lvl = (trans1 & m_conf) | (trans0 & ~m_conf)
                flip = ~(m_conf ^ m_correct) & ((low - lvl) >> 63) & 1
                m_can = ((rh - table[i]) >> 63) & ((ru - total_retries) >> 63)
                m_retry = m_att & ~m_accepted & m_can
                m_out = m_att & ~m_accepted & ~m_can
                m_acc = m_att & m_accepted
                next_i = i + 1
                m_taint = -taint
                m_caught = m_chk & ((u - ((lvl1 & m_taint) | (lvl0 & ~m_taint))) >> 63)
                m_left = -np.int64(rb != rollbacks)
                m_stop = m_caught & ~m_left
                m_rollback = m_caught & m_left
                m_passed = m_chk & ~m_caught
                new_i = (next_i & m_acc) | (seg & m_rollback) | (i & ~(m_acc | m_rollback))
                m_ck = -table[ck_at + next_i]
                m_to_check = m_acc & m_ck
                m_acc_on = m_acc & ~m_ck
                m_next_end = -np.int64(next_i == steps)
                m_i_end = -np.int64(i == steps)
                m_begin = (m_acc_on & ~m_next_end) | m_rollback | (m_passed & ~m_i_end)
                m_done = m_out | m_stop | (m_acc_on & m_next_end) | (m_passed & m_i_end)
                m_go = m_begin | m_retry
                new_phase = (DONE & m_done) | (~m_done & (
                    (CHECK & m_to_check) | (~m_to_check & ((ATTEMPT & m_go) | (ph & ~m_go)))))
                cost[lane] += (step_cost[i] * (m_att & 1) + checkpoint_cost * (m_chk & 1)
                               ) + rollback_cost * (m_rollback & 1)
                state[ATT, lane] = att - m_att
                state[CHECKS, lane] -= m_chk
                state[CONF, lane] = (conf ^ (flip & m_att)) & ~m_rollback
                state[TAINT, lane] = (taint | (m_acc & ~m_correct & 1)) & ~(m_rollback | m_passed)
                state[SEG, lane] = (i & m_passed) | (seg & ~m_passed)
                state[HERE, lane] = ((rh + 1) & m_retry) | (rh & ~m_go)
                state[USED, lane] = ru - m_retry
                state[RB, lane] = rb - m_rollback
                state[STEP, lane] = new_i
                state[PHASE, lane] = new_phase
                # a new execution: the pass's thresholds, unless it is a re-execution with
                # a step effect (a fresh effect: the fix-up below)
                m_first = ~((new_i - once) >> 63) | m_no_step_sd
                k = min(new_i, steps) * g + lane
                m_fix = m_begin & -table[sh_at + new_i] & ~m_first
                state[F1, lane] = (pre[k] & m_begin) | (g1 & ~m_begin)
                state[F2, lane] = (pre[ng + k] & m_begin) | (g2 & ~m_begin)
                state[F3, lane] = (pre[2 * ng + k] & m_begin) | (g3 & ~m_begin)
                state[C1, lane] = (pre[3 * ng + k] & m_begin) | (h1 & ~m_begin)
                state[C2, lane] = (pre[4 * ng + k] & m_begin) | (h2 & ~m_begin)
                state[C3, lane] = (pre[5 * ng + k] & m_begin) | (h3 & ~m_begin)
                state[ONCE, lane] = (max(once, new_i + 1) & m_begin) | (once & ~m_begin)
                state[FIX, lane] = m_fix & 1
                fixes += m_fix & 1
                active += ~m_done & -np.int64(new_phase != DONE) & 1
                state[DOOM, lane] = doom | (taint & m_passed) | ((m_out | m_stop) & 2)
            if fixes > 0:  # re-executions: a fresh step effect each, drawn in lane order
                o0, o1, o2, o3 = s0[0], s1[0], s2[0], s3[0]
                for lane in range(g):
                    if state[FIX, lane] == 1:
                        i = state[STEP, lane]
                        x, o0, o1, o2, o3 = _next(o0, o1, o2, o3)
                        z, o0, o1, o2, o3 = _normal_from(x, o0, o1, o2, o3)
                        pe = _shifted_p(logit_p[i], task_effect[lane] + step_sd * z)
                        t = _four_way_call(pe, miss[i], false_reject[i])
                        c = _four_way_call(pe * factor, miss[i], false_reject[i]) if has_confusion else t
                        for r in range(3):
                            state[F1 + r, lane] = t[r]
                            state[C1 + r, lane] = c[r]
                        state[FIX, lane] = 0
                s0[0], s1[0], s2[0], s3[0] = o0, o1, o2, o3
            if active == 0:
                break
        for lane in range(g):
            doom = state[DOOM, lane]
            if doom >= 2:
                n_detected += 1
            elif (doom & 1) == 1 or state[TAINT, lane] == 1:
                n_silent += 1
            else:
                n_success += 1
            sum_attempts += state[ATT, lane]
            sum_checks += state[CHECKS, lane]
            sum_cost += cost[lane]
    out[0], out[1], out[2] = n_success, n_silent, n_detected
    out[3], out[4], out[5], out[6] = sum_attempts, sum_cost, ticks, sum_checks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=20_000, help="groups of 32 trials")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many timings")
    args = parser.parse_args()
    n = args.groups * LANES
    no_effects = copy.deepcopy(R7)
    no_effects["correlation"] = {"confusion": R7["correlation"]["confusion"]}
    plain = copy.deepcopy(R7)
    del plain["correlation"]
    cases = {"R7": R7, "R7, no random effects": no_effects, "R7, no effects or confusion": plain}
    print(f"{n:,} trials a timing, best of {args.repeats}, one thread, load average "
          f"{os.getloadavg()[0]:.2f}")
    print("| case | events/trial | ticks/group | side by side, ns/trial | ns per lane and tick "
          "| success vs exact (SE) | relsim.simulate, ns/trial | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    seed_state = np.random.default_rng(5).integers(0, 2**63, size=(4, 16), dtype=np.uint64)
    for name, case in cases.items():
        scenario = Scenario.from_dict(case)
        design = kernel_input(trial_model(scenario), force_general=True).design
        exact = relsim.evaluate(scenario).success
        out = np.zeros(7)
        run_side_by_side(seed_state, 10, design, out)  # compile
        relsim.simulate(scenario, 1000, seed=1, threads=1)  # load the kernel
        lanes = engine = float("inf")
        for repeat in range(args.repeats):
            start = time.perf_counter()
            run_side_by_side(seed_state, args.groups, design, out)
            lanes = min(lanes, time.perf_counter() - start)
            start = time.perf_counter()
            relsim.simulate(scenario, n, seed=repeat, threads=1)
            engine = min(engine, time.perf_counter() - start)
        success = out[0] / n
        z = (success - exact) / np.sqrt(success * (1 - success) / n)
        ticks = out[5] / args.groups
        events = (out[3] + out[6]) / n
        print(f"| {name} | {events:.1f} | {ticks:.1f} | {lanes / n * 1e9:.0f} | "
              f"{lanes / (args.groups * ticks * LANES) * 1e9:.1f} | {z:+.1f} | "
              f"{engine / n * 1e9:.0f} | {lanes / engine:.2f} |")


if __name__ == "__main__":
    main()
