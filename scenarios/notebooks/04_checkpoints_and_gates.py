# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 4. Checkpoints and human gates
#
# A verifier checks each attempt; a **checkpoint** checks a whole segment of work after the
# fact (a test suite, a reviewer). A tainted segment is caught with probability `detect`, and a
# catch either **rolls back** and redoes the segment (while the `rollbacks` budget lasts) or, with
# no rollback left, stops the run as a *detected* failure. This notebook covers:
#
# 1. what checkpoints buy: silent failures turned into detected ones, and rollbacks turning
#    those into successes (`scenarios/checkpoints_catch_silent_failures.toml`);
# 2. how far apart to put them when a check costs something
#    (`scenarios/checkpoint_spacing.toml`);
# 3. a human gate at the end (`scenarios/human_gate.toml`), and how many reviewers it needs.
#
# The trial semantics are docs/model.md section 3; the time model for reviewers, section 7.

# %%
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import relsim
from relsim import formulas

HERE = Path.cwd()
ROOT = next(d for d in [HERE, *HERE.parents] if (d / "scenarios" / "notebooks").is_dir())
catch = relsim.Scenario.from_toml(ROOT / "scenarios" / "checkpoints_catch_silent_failures.toml")
spacing = relsim.Scenario.from_toml(ROOT / "scenarios" / "checkpoint_spacing.toml")
gate = relsim.Scenario.from_toml(ROOT / "scenarios" / "human_gate.toml")

def variant(design: relsim.Scenario, **tables) -> relsim.Scenario:
    """The design with some tables replaced (None drops a table), validated again."""
    data = {**design.to_dict(), **tables}
    return relsim.Scenario.from_dict({k: v for k, v in data.items() if v is not None})

def with_checkpoints(design: relsim.Scenario, **changes) -> relsim.Scenario:
    """The design with some keys of its [checkpoints] table changed."""
    return variant(design, checkpoints={**design.to_dict()["checkpoints"], **changes})

# %% [markdown]
# ## What checkpoints buy
#
# 20 steps at `p = 0.95` with a sloppy verifier (`miss = 0.3`) and one retry per step: a
# quarter of the trials end silently wrong. A check every 5 steps that catches 80% of the
# tainted segments changes that in two ways: without rollbacks it only *relabels* failures
# (success cannot change: nothing is redone), with rollbacks it redoes the work.

# %%
no_checks = relsim.evaluate(variant(catch, checkpoints=None))
by_rollbacks = {r: relsim.evaluate(with_checkpoints(catch, rollbacks=r)) for r in range(0, 5)}
print(f"no checkpoints : success {no_checks.success:.4f}  silent {no_checks.silent_failure:.4f}  "
      f"detected {no_checks.detected_failure:.4f}  attempts {no_checks.expected_attempts:.2f}")
for r, o in by_rollbacks.items():
    print(f"rollbacks = {r}  : success {o.success:.4f}  silent {o.silent_failure:.4f}  "
          f"detected {o.detected_failure:.4f}  attempts {o.expected_attempts:.2f}")

# %%
# Figure: the outcome split without checkpoints and with 0..4 rollbacks.
fig, ax = plt.subplots(figsize=(6, 3.5))
labels = ["none"] + [f"{r} rb" for r in by_rollbacks]
rows = [no_checks, *by_rollbacks.values()]
bottom = np.zeros(len(rows))
colors = {"success": "tab:green", "silent_failure": "tab:red", "detected_failure": "tab:gray"}
for key, color in colors.items():
    values = np.array([getattr(o, key) for o in rows])
    ax.bar(labels, values, bottom=bottom, color=color, label=key.replace("_", " "))
    bottom += values
ax.set(ylabel="share of trials", ylim=(0, 1), title="Checkpoints every 5 steps: by rollback budget")
ax.legend(loc="lower right")
plt.show()

# %% [markdown]
# ## How far apart
#
# A check costs; a missed error costs the whole segment since the last check. In
# `checkpoint_spacing.toml` (40 steps at `p = 0.98`, no verifier, a check worth 2 attempts that
# catches every wrong segment, plenty of rollbacks) a segment of `k` steps is redone until it is
# clean, so it costs `(k + C) / p**k` on average (a geometric number of tries). That gives the
# expected cost of every spacing by hand, independently of the exact engine; the optimum sits
# near `sqrt(C / (1 - p))` (Young's interval over sqrt(2), since here an error is seen only at
# the next check and the whole segment is lost, `formulas.checkpoint_interval`'s docstring).

# %%
C, p, n = spacing.cost.checkpoint, spacing.p, spacing.steps

def cost_by_hand(k: int) -> float:
    """Expected cost with a check every k steps (and after the last): sum over segments of
    (length + C) / p**length."""
    segments = [k] * (n // k) + ([n % k] if n % k else [])
    return sum((length + C) / p**length for length in segments)

spacings = np.arange(1, n + 1)
by_engine = np.array([relsim.evaluate(with_checkpoints(spacing, every=int(k))).expected_cost
                      for k in spacings])
by_hand = np.array([cost_by_hand(int(k)) for k in spacings])
planned = relsim.plan.checkpoints(spacing)
print(f"plan.checkpoints: every = {planned.value}, expected cost {planned.expected_cost:.4f} "
      f"(by hand {cost_by_hand(planned.value):.4f}); the file's every = 5 costs "
      f"{cost_by_hand(5):.4f}")
relsim_interval, young = math.sqrt(C / (1 - p)), formulas.checkpoint_interval(p, C)
print(f"sqrt(C/(1-p)) = {relsim_interval:.2f}; Young's sqrt(2C/(1-p)) = {young:.2f}")

# %%
# Figure: expected cost per trial against the checkpoint spacing.
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(spacings, by_engine, "o", markersize=3, label="relsim.evaluate")
ax.plot(spacings, by_hand, "-", linewidth=1, label="(k + C) / p**k by hand")
ax.axvline(planned.value, color="tab:orange", linestyle=":", label=f"plan: every = {planned.value}")
ax.set(xlabel="checkpoint every k steps", ylabel="expected cost per trial", ylim=(40, 120),
       title="Checkpoint spacing: checks against redone work")
ax.legend()
plt.show()

# %% [markdown]
# ## A human gate at the end
#
# `human_gate.toml`: 10 steps, a verifier that misses 20%, and one final review that catches
# 95% of wrong results. Two identities hold exactly, and the engine must reproduce them:
#
# - with `rollbacks = 0` the gate redoes nothing, so success is unchanged and a silent failure
#   stays silent only if the gate misses it: `silent = silent_0 (1 - detect)`;
# - with `rollbacks = 1` a caught trial is redone from the start as a fresh run (budgets per
#   step, a focused agent), so `success = s_0 (1 + detect silent_0)` and the cost per success is
#   unchanged (cost and success both scale by `1 + detect silent_0`).

# %%
ungated = relsim.evaluate(variant(gate, checkpoints=None))
gated = relsim.evaluate(gate)
detect = gate.checkpoints.detect
redo = relsim.evaluate(with_checkpoints(gate, rollbacks=1))
for label, o in [("no gate", ungated), ("gate, no redo", gated), ("gate, one redo", redo)]:
    print(f"{label:15}: success {o.success:.4f}  silent {o.silent_failure:.4f}  "
          f"detected {o.detected_failure:.4f}  cost/success {o.cost_per_success:.3f}")

# %% [markdown]
# ### How many reviewers?
#
# Every trial that reaches the end waits for a reviewer. With trials arriving at random
# (Poisson, `rate` per hour) and reviews of random length (exponential, mean `review` seconds),
# the reviewer pool is an M/M/c queue, and the chance a trial waits is Erlang's C formula. The
# timeline engine (docs/model.md section 7: `[fleet]`, `[resources] reviewers`, `human = true`)
# will simulate this with the real timings; until it is merged this back-of-envelope sizes the
# pool, and it is the known result the timeline engine is checked against.

# %%
def erlang_c(servers: int, load: float) -> float:
    """P(wait) in an M/M/c queue with offered load `load` = arrival rate x mean service time."""
    if load >= servers:
        return 1.0
    top = load**servers / math.factorial(servers) * servers / (servers - load)
    return top / (sum(load**k / math.factorial(k) for k in range(servers)) + top)

rate_per_hour, review_s = 120, 600
reach_gate = 1 - ungated.detected_failure   # every trial that is not stopped by its verifier
load = rate_per_hour * reach_gate * review_s / 3600
pool = {}
for reviewers in range(math.ceil(load), math.ceil(load) + 8):
    waits = erlang_c(reviewers, load)
    mean_wait_s = waits * review_s / (reviewers - load)
    pool[reviewers] = (waits, mean_wait_s)
    print(f"{reviewers} reviewers: P(wait) {waits:.3f}, mean wait {mean_wait_s / 60:.1f} min")
enough = min(c for c, (waits, _) in pool.items() if waits < 0.2)
print(f"offered load {load:.1f} reviewer-hours per hour; "
      f"fewer than 20% of trials wait with {enough} reviewers")

# %% [markdown]
# ## What the review should take away
#
# - A checkpoint without rollbacks does not raise success; it turns silent failures into
#   detected ones, which can be escalated. Rollbacks turn them into successes, for a few more
#   attempts (91% with two rollbacks, against 71%).
# - Space paid checks near `sqrt(C / (1 - p))` steps; here every 10 steps saves 5% over every
#   5, and both ends of the range are expensive.
# - A final human gate with no redo leaves 1% silently wrong instead of 20%; one redo lifts
#   success to 95% at the same cost per success. At 120 trials an hour and 10-minute
#   reviews the gate is a load of 20 reviewers; 26 keep the share of trials that wait under
#   one in five (Erlang C, until the timeline engine gives the same with real timings).
#
# ## Headline numbers (pinned)

# %%
assert abs(by_rollbacks[0].success - no_checks.success) < 1e-12        # no redo, no gain
assert by_rollbacks[0].silent_failure < no_checks.silent_failure
assert all(by_rollbacks[r + 1].success > by_rollbacks[r].success for r in range(4))
# the file's claims
assert round(no_checks.success, 3) == 0.713 and round(by_rollbacks[2].success, 3) == 0.910
assert round(by_rollbacks[2].silent_failure, 3) == 0.061
assert np.max(np.abs(by_engine - by_hand)) < 1e-8                     # exact engine against the sum
assert planned.feasible and planned.value == int(np.argmin(by_hand)) + 1 == 10
assert abs(planned.value - relsim_interval) < abs(planned.value - young)
assert abs(gated.success - ungated.success) < 1e-12
assert abs(gated.silent_failure - ungated.silent_failure * (1 - detect)) < 1e-12
assert abs(redo.success - ungated.success * (1 + detect * ungated.silent_failure)) < 1e-12
assert abs(redo.cost_per_success - ungated.cost_per_success) < 1e-9
assert round(gated.silent_failure, 3) == 0.010 and round(redo.success, 3) == 0.948
assert abs(erlang_c(3, 2.0) - 4 / 9) < 1e-12                          # textbook M/M/3 at load 2
assert load < enough and pool[enough][0] < 0.2 <= pool[enough - 1][0]
