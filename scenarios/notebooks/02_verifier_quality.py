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
# # 2. How good must the verifier be?
#
# Retries only help when a wrong attempt is *rejected*. A verifier that accepts a wrong
# attempt with probability `miss` puts a ceiling on every step that no retry budget lifts,
# and the failures it lets through are **silent**: the run ends and looks fine. This notebook
# answers three design-review questions for `scenarios/verifier_ceiling.toml` (25 steps,
# `p = 0.9`, `miss = 0.1`, 10 retries per step, target 95%):
#
# 1. what is the ceiling, and how does it depend on `miss` and the number of steps?
# 2. where do the failures go as the budget grows (detected vs silent)?
# 3. what is the largest `miss` that still reaches the target (`max_miss`), and what does a
#    verifier that rejects good work (`false_reject`) cost?
#
# Closed forms: docs/model.md section 2. With `a = p (1 - false_reject)` (correct and
# accepted) and `w = (1 - p) miss` (wrong and accepted), a step that ends in an acceptance is
# correct with probability `a / (a + w)`; that is the step ceiling.

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import relsim
import relsim.plot
from relsim import formulas

HERE = Path.cwd()
ROOT = next(d for d in [HERE, *HERE.parents] if (d / "scenarios" / "notebooks").is_dir())
design = relsim.Scenario.from_toml(ROOT / "scenarios" / "verifier_ceiling.toml")
p, steps, target, miss = design.p, design.steps, design.target, design.verifier.miss
exact = relsim.evaluate(design)
exact.to_frame()[["success", "silent_failure", "detected_failure", "expected_attempts"]]

# %% [markdown]
# ## The ceiling
#
# At `miss = 0.1` each step tops out at `0.9 / 0.91`, the task at that to the 25th power. The
# figure shows the task ceiling for three chain lengths: the longer the chain, the better the
# verifier must be.

# %%
step_ceiling = formulas.verified_ceiling(p, miss)
task_ceiling = step_ceiling**steps
print(f"step ceiling {step_ceiling:.6f}, task ceiling {task_ceiling:.6f}, "
      f"design reaches {exact.success:.6f}")

# %%
# Figure: this design's success against its retry budget: flat at the ceiling after 3.
ax = relsim.plot.retries(p, steps, miss=miss, max_retries=10, target=target)
plt.show()

# %%
# Figure: task ceiling against the verifier's miss rate, for 10, 25 and 50 steps
# (relsim.plot has no figure for this one: matplotlib directly).
fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
misses = np.linspace(0, 0.3, 121)
for n in (10, 25, 50):
    ax.plot(misses, formulas.verified_ceiling(p, misses) ** n, label=f"{n} steps")
ax.axhline(target, color="grey", linestyle="--", label=f"target {target}")
ax.axvline(formulas.max_miss(p, steps, target), color="tab:orange", linestyle=":",
           label="max_miss, 25 steps")
ax.set(xlabel="verifier miss rate", ylabel="task ceiling (any retry budget)", ylim=(0, 1),
       title=f"The verifier caps success (p = {p})")
ax.legend()
plt.show()

# %% [markdown]
# ## Where the failures go
#
# With few retries, most failures are *detected*: a step runs out of budget and the run stops
# with a known failure. Each extra retry gives a wrong attempt one more chance to slip through,
# so past a few retries the budget only converts detected failures into silent ones. The limit
# of the silent share is `1 - ceiling`.

# %%
budgets = np.arange(0, 11)
by_budget = {
    int(r): relsim.evaluate(
        relsim.Scenario.from_dict({**design.to_dict(), "retries": {"per_step": int(r)}}))
    for r in budgets
}
split = {key: np.array([getattr(o, key) for o in by_budget.values()])
         for key in ("success", "silent_failure", "detected_failure")}

# %%
# Figure: the outcome split for each retry budget, with the task ceiling the success
# approaches and 1 - ceiling the silent share approaches.
fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
relsim.plot.outcome_split({str(r): o for r, o in by_budget.items()}, ax=ax)
ax.axhline(task_ceiling, color="black", linestyle=":", label=f"ceiling {task_ceiling:.3f}")
ax.set(xlabel="retries per step (count)",
       title="More retries: fewer detected, more silent failures")
ax.legend(loc="lower right")
plt.show()

# %% [markdown]
# ## How good is good enough: `max_miss` and `min_p`
#
# The target is reachable (with enough retries) exactly when `ceiling ** steps >= target`,
# i.e. `a / (a + w) >= c` with `c = target ** (1/steps)`. Solving for `miss`:
#
#     miss <= p (1 - false_reject) (1/c - 1) / (1 - p)
#
# and, at this verifier, solving for the agent instead: `p >= c miss / (1 - c + c miss)`.
# The planner (`relsim.plan.verifier`) answers the same question with the design's own
# budget of 10 retries, so its answer is a hair below the ceiling's.

# %%
c = formulas.required_step_success(target, steps)
miss_by_hand = p * (1 / c - 1) / (1 - p)
p_by_hand = c * miss / (1 - c + c * miss)
planned = relsim.plan.verifier(design, target)
print(f"max_miss  {formulas.max_miss(p, steps, target):.7f}   (by hand {miss_by_hand:.7f})")
print(f"plan.verifier with 10 retries: miss <= {planned.value:.7f}, success {planned.success:.6f}")
print(f"min_p     {formulas.min_p(steps, target, miss):.6f}    (by hand {p_by_hand:.6f})")

# %% [markdown]
# ## Explore
#
# The same closed forms as sliders (`relsim.report.explorer.widget`; the HTML report of
# `relsim report` has the same explorer in the page). Drag `miss` below `max_miss` and watch
# the ceiling rise past the target; drag `retries` and watch success climb to the ceiling.
# Here the cell sets `miss` as a reviewer would drag it.

# %%
from relsim.report import explorer

box = explorer.widget(p=p, steps=steps, retries=3, miss=miss, target=target)
box.sliders["miss"].value = 0.018
explored = formulas.verified_step(p, 3, 0.018).success ** steps
box

# %% [markdown]
# A verifier that rejects good attempts (`false_reject`) barely moves the ceiling when `miss`
# is small, but it costs attempts and needs more retries. With a verifier at `miss = 0.01`
# (below `max_miss`):

# %%
rows = []
for false_reject in (0.0, 0.05, 0.1, 0.2):
    candidate = relsim.Scenario.from_dict(
        {**design.to_dict(), "verifier": {"miss": 0.01, "false_reject": false_reject}})
    plan = relsim.plan.retries(candidate, target)
    rows.append((false_reject, plan.value, plan.success, plan.expected_cost,
                 formulas.verified_ceiling(p, 0.01, false_reject) ** steps))
    print(f"false_reject {false_reject:<4}: {plan.value} retries, success {plan.success:.4f}, "
          f"{plan.expected_cost:.2f} attempts, ceiling {rows[-1][4]:.4f}")

# %% [markdown]
# ## What the review should take away
#
# - At 25 steps and `p = 0.9`, a verifier must miss fewer than 1.85% of wrong attempts for
#   95%; at `miss = 0.1` the agent itself would need `p > 0.98`.
# - Judge a verifier by its miss rate first; a false-reject rate of 10-20% costs attempts and
#   a retry or two, not the target.
# - Past the ceiling, more budget buys silent failures. Watch the silent share, not only
#   success.
#
# ## Headline numbers (pinned)

# %%
assert round(step_ceiling, 6) == 0.989011 and round(task_ceiling, 6) == 0.758626  # the lesson
assert exact.success <= task_ceiling and task_ceiling - exact.success < 1e-4
assert abs(formulas.max_miss(p, steps, target) - miss_by_hand) < 1e-9
assert round(miss_by_hand, 7) == 0.0184845
assert abs(formulas.min_p(steps, target, miss) - p_by_hand) < 1e-9
assert round(p_by_hand, 6) == 0.979875
assert planned.feasible and planned.value <= miss_by_hand and miss_by_hand - planned.value < 1e-6
# more retries: success and silent failures never fall, detected failures never rise
assert np.all(np.diff(split["success"]) >= -1e-12)
assert np.all(np.diff(split["silent_failure"]) >= -1e-12)
assert np.all(np.diff(split["detected_failure"]) <= 1e-12)
assert split["silent_failure"][-1] > 10 * split["detected_failure"][-1]
# nearly every trial now reaches the end
assert abs(split["silent_failure"][-1] + split["success"][-1] - 1) < 1e-3
assert abs((1 - task_ceiling) - 0.241374) < 5e-7   # the silent share's limit
# false_reject: every row still meets the target, and rejecting good work costs attempts
assert all(row[1] is not None and row[2] >= target for row in rows)
assert all(later[3] > earlier[3] for earlier, later in zip(rows, rows[1:]))
# the explorer shows the closed form for the values its sliders hold
assert f"{explored:.6f}" in box.shown.value and box.sliders["miss"].value == 0.018
