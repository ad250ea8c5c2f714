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
# # 5. How many eval tasks and trials?
#
# An eval measures an agent on a sample of tasks, a few trials each. A design review needs to
# know what the numbers mean and how far to trust them:
#
# 1. **pass@k** (at least one of `k` trials succeeds: what a human picking the best of `k`
#    gets) against **pass^k** (all `k` succeed: what a user relying on the agent every time
#    gets), with honest intervals;
# 2. why neither follows from pass@1 when tasks differ in difficulty;
# 3. how many tasks a comparison of two agents needs (`relsim.evalstats.tasks_needed`, the
#    `relsim power` command).
#
# The agent is `scenarios/eval_agent.toml` (10 steps at 95% each). Real trial data is replaced
# by data generated here with a seeded generator: each task gets its own per-step success from
# a Beta distribution with mean 0.95, so the true pass@k and pass^k are known in closed form
# and the estimates can be checked against them. The statistics: docs/commands/trials.md
# ("relsim analyze, compare, power").

# %%
import math
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import integrate, stats

import relsim
import relsim.plot
from relsim import evalstats, formulas

HERE = Path.cwd()
ROOT = next(d for d in [HERE, *HERE.parents] if (d / "scenarios" / "notebooks").is_dir())
agent = relsim.Scenario.from_toml(ROOT / "scenarios" / "eval_agent.toml")
homogeneous = relsim.evaluate(agent).success   # every task as hard as every other
print(f"{agent.steps} steps at p = {agent.p}: success {homogeneous:.4f} if all tasks were alike")

# %% [markdown]
# ## The eval: 200 tasks, 5 trials each
#
# Task `i` has per-step success `p_i ~ Beta(kappa p, kappa (1 - p))` with `kappa = 10` (mean
# 0.95; most tasks easy, a few hard), so a trial of task `i` succeeds with `r_i = p_i ** 10`.
# The trials are written to a CSV, as an eval harness would, and read back by
# `evalstats.analyze`.

# %%
TASKS, TRIALS_PER_TASK, KAPPA, SEED = 200, 5, 10.0, 1
alpha, beta = KAPPA * agent.p, KAPPA * (1 - agent.p)
rng = np.random.default_rng(SEED)
task_rate = rng.beta(alpha, beta, size=TASKS) ** agent.steps
outcomes = rng.random((TASKS, TRIALS_PER_TASK)) < task_rate[:, None]
trials = pd.DataFrame({
    "task": np.repeat([f"task-{i:03d}" for i in range(TASKS)], TRIALS_PER_TASK),
    "trial": np.tile(np.arange(1, TRIALS_PER_TASK + 1), TASKS),
    "success": outcomes.ravel().astype(int),
    "steps": agent.steps,
})
KS = [1, 2, 3, 4, 5]
with tempfile.TemporaryDirectory() as folder:
    csv = Path(folder) / "trials.csv"
    trials.to_csv(csv, index=False)
    analysis = evalstats.analyze(csv, k=KS, seed=0)
analysis.pass_k

# %% [markdown]
# ## The truth, two ways
#
# For `p ~ Beta(alpha, beta)` and `n` steps, `E[p ** m] = prod_{j < m} (alpha + j) / (alpha +
# beta + j)` (`formulas.latent_difficulty_chain`), so pass^k `= E[r ** k] = E[p ** (n k)]` and
# pass@k `= 1 - E[(1 - r) ** k] = 1 - sum_j C(k, j) (-1) ** j E[p ** (n j)]`. The same numbers
# by numerical integration against the Beta density check the closed form.

# %%
def moment(m: int) -> float:
    return formulas.latent_difficulty_chain(alpha, beta, m)

def by_quadrature(f) -> float:
    return integrate.quad(lambda x: f(x) * stats.beta.pdf(x, alpha, beta), 0, 1, limit=200,
                          epsabs=1e-12)[0]

n = agent.steps
truth = {
    "pass_at_k": {k: 1 - sum(math.comb(k, j) * (-1) ** j * moment(n * j) for j in range(k + 1))
                  for k in KS},
    "pass_hat_k": {k: moment(n * k) for k in KS},
}
check = {
    "pass_at_k": {k: by_quadrature(lambda x, k=k: 1 - (1 - x**n) ** k) for k in KS},
    "pass_hat_k": {k: by_quadrature(lambda x, k=k: x ** (n * k)) for k in KS},
}
pd.DataFrame({"true pass@k": truth["pass_at_k"], "true pass^k": truth["pass_hat_k"],
              "if tasks were alike: pass^k": {k: truth["pass_hat_k"][1] ** k for k in KS}})

# %% [markdown]
# ## Estimates against the truth
#
# `analyze` averages the unbiased per-task estimators (`1 - C(n-c, k)/C(n, k)` and
# `C(c, k)/C(n, k)` for a task with `c` successes in `n` trials) over tasks, with a cluster
# bootstrap (BCa) interval over tasks. The interval's half-width over 1.96 serves as a standard
# error: each true value must lie within 5 of them. As a negative control, the prediction a
# homogeneous model makes from pass@1 (`pass@1 ** k`) must be rejected at the same tolerance.

# %%
def homogeneous_prediction(metric: str, k: int) -> float:
    """What pass@1 alone predicts if every task had the same rate."""
    mean = analysis.success["mean"]
    return 1 - (1 - mean) ** k if metric == "pass_at_k" else mean**k

table = analysis.pass_k
rows = []
for metric in ("pass_at_k", "pass_hat_k"):
    for k in KS:
        estimate, low, high = table.loc[(metric, k), ["estimate", "ci_low", "ci_high"]]
        se = (high - low) / (2 * stats.norm.ppf(0.975))
        rows.append({"metric": metric, "k": k, "estimate": estimate, "ci_low": low, "ci_high": high,
                     "truth": truth[metric][k], "z_truth": (estimate - truth[metric][k]) / se,
                     "z_homogeneous": (estimate - homogeneous_prediction(metric, k)) / se})
report = pd.DataFrame(rows).set_index(["metric", "k"])
report.round(4)

# %%
# Figure: pass@k and pass^k with their intervals (relsim.plot.pass_k), the truth, and what
# pass@1 predicts if tasks were alike.
ax = relsim.plot.pass_k(analysis)
for metric, color in (("pass_at_k", "tab:blue"), ("pass_hat_k", "tab:red")):
    ax.plot(KS, [truth[metric][k] for k in KS], "-", color=color, alpha=0.4, linewidth=4,
            label="true" if metric == "pass_at_k" else None)
    ax.plot(KS, [homogeneous_prediction(metric, k) for k in KS], "k--", linewidth=1,
            label="from pass@1, tasks alike" if metric == "pass_at_k" else None)
ax.set(xticks=KS, title=f"{TASKS} tasks x {TRIALS_PER_TASK} trials")
ax.legend(fontsize=8)
plt.show()

# %%
# The same estimators by hand from the raw counts, outside relsim.
successes, m = outcomes.sum(axis=1), TRIALS_PER_TASK
by_hand = {
    "pass_at_k": {k: np.mean([1 - math.comb(m - c, k) / math.comb(m, k) for c in successes])
                  for k in KS},
    "pass_hat_k": {k: np.mean([math.comb(c, k) / math.comb(m, k) for c in successes])
                   for k in KS},
}
steps_plan = analysis.steps
print(f"pass@1 {analysis.success['mean']:.4f} +/- {analysis.success['se']:.4f} (clustered SE); "
      f"true mean {truth['pass_at_k'][1]:.4f}; homogeneous model {homogeneous:.4f}")
print(f"implied per-step success {steps_plan['per_step_success']:.4f} "
      f"(the tasks' mean p is {agent.p}); "
      f"plan: {steps_plan['plan']['command']} -> {steps_plan['plan']['retries']} retries")

# %% [markdown]
# ## How many tasks to tell two agents apart
#
# For a paired comparison (both agents on the same tasks, `K` trials each), the number of tasks
# to detect a gain `D` over a baseline `P` with a two-sided test at level `alpha` and the given
# power is the least `T` at which the paired t-test reaches that power: its statistic follows
# the noncentral t with `T - 1` degrees of freedom and noncentrality `D sqrt(T) / sigma`,
#
#     sigma ** 2 = W ** 2 + (P (1 - P) + Q (1 - Q)) / K
#
# with `Q = P + D` and `W` the spread of the true per-task differences (0 unless given); the
# normal approximation `(z_{1 - alpha/2} + z_power) ** 2 sigma ** 2 / D ** 2` asks for a few
# tasks fewer. It is checked below by hand (scipy's noncentral t) and by simulation: 4,000
# paired evals of that many tasks, each tested with scipy's paired t-test, must reject in 80%
# of them (within 5 standard errors); with half the tasks, clearly fewer must.

# %%
def tasks_by_hand(delta: float, baseline: float, trials_per_task: int) -> int:
    """The least T whose paired t-test has power 0.8 at alpha = 0.05, W = 0 (scipy's
    noncentral t), counted up from a little below the normal approximation."""
    other = baseline + delta
    sd = math.sqrt((baseline * (1 - baseline) + other * (1 - other)) / trials_per_task)

    def power(tasks: int) -> float:
        critical = stats.t.isf(0.025, tasks - 1)
        shift = abs(delta) * math.sqrt(tasks) / sd
        return stats.nct.sf(critical, tasks - 1, shift) + stats.nct.cdf(-critical, tasks - 1, shift)

    z = stats.norm.ppf(1 - 0.05 / 2) + stats.norm.ppf(0.8)
    tasks = max(2, math.ceil(z**2 * sd**2 / delta**2) - 3)
    assert tasks == 2 or power(tasks) < 0.8  # started below the answer
    while power(tasks) < 0.8:
        tasks += 1
    return tasks

baseline = round(float(analysis.success["mean"]), 2)
for k_trials in (1, 3, 5):
    alike = evalstats.tasks_needed(0.05, baseline, trials_per_task=k_trials)
    varied = evalstats.tasks_needed(0.05, baseline, trials_per_task=k_trials, difference_sd=0.3)
    print(f"{k_trials} trial(s) per task: {alike} tasks to see a 5-point gain over "
          f"{baseline:.2f}; {varied} if the gain varies across tasks with sd 0.3")
mde = evalstats.minimum_detectable_effect(TASKS, baseline, trials_per_task=TRIALS_PER_TASK)
print(f"with this eval ({TASKS} tasks x {TRIALS_PER_TASK}): "
      f"the smallest detectable gain is {mde:.3f}")

# %%
# Power by simulation: P = 0.6, D = 0.1, one trial per task, every task at the same rate.
P, D, EVALS = 0.6, 0.1, 4000
needed = evalstats.tasks_needed(D, P)
power_rng = np.random.default_rng(SEED + 1)

def rejection_rate(tasks: int) -> tuple[float, float]:
    base = (power_rng.random((EVALS, tasks)) < P).astype(float)
    cand = (power_rng.random((EVALS, tasks)) < P + D).astype(float)
    p_values = stats.ttest_rel(cand, base, axis=1).pvalue
    rate = float(np.mean(p_values < 0.05))
    return rate, math.sqrt(rate * (1 - rate) / EVALS)

power_full, se_full = rejection_rate(needed)
power_half, se_half = rejection_rate(needed // 2)
print(f"tasks_needed({D}, {P}) = {needed}: simulated power {power_full:.3f} +/- {se_full:.3f}; "
      f"with {needed // 2} tasks {power_half:.3f}")

# %%
# Figure: tasks needed against the gain to detect, for 1, 3 and 5 trials per task (no
# relsim.plot function for this one: matplotlib directly).
fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
gains = np.linspace(0.02, 0.2, 37)
for k_trials in (1, 3, 5):
    ax.plot(gains, [evalstats.tasks_needed(g, baseline, trials_per_task=k_trials) for g in gains],
            label=f"{k_trials} trial(s) per task")
ax.axhline(TASKS, color="grey", linestyle="--", label=f"this eval: {TASKS} tasks")
ax.set(xscale="linear", yscale="log", xlabel="gain to detect", ylabel="tasks needed (power 0.8)",
       title=f"Paired comparison over a baseline of {baseline:.2f}")
ax.legend()
plt.show()

# %% [markdown]
# ## What the review should take away
#
# - Report pass^k next to pass@1 when users rely on every run: here pass^5 is about 0.39, far
#   above the 0.15 that `pass@1 ** 5` predicts, because failures concentrate on the hard tasks;
#   and pass@5 (0.92) is well below the 0.997 of `1 - (1 - pass@1) ** 5`. Neither follows
#   from pass@1; measure them.
# - With 200 tasks the intervals are 7 to 14 points wide; a 5-point difference between two
#   agents needs over a thousand tasks at one trial each. More trials per task cut that only
#   while trial noise dominates: once the gain itself varies across tasks (`difference_sd`),
#   only more tasks help.
# - The implied per-step success of a heterogeneous eval (`pass@1 ** (1/n)`) is above the
#   typical task's: plan retries with care.
#
# ## Headline numbers (pinned)

# %%
assert round(homogeneous, 6) == round(0.95**10, 6)
for metric in truth:
    for k in KS:
        # closed form = quadrature; analyze = the estimators by hand
        assert abs(truth[metric][k] - check[metric][k]) < 1e-9, (metric, k)
        assert abs(table.loc[(metric, k), "estimate"] - by_hand[metric][k]) < 1e-12, (metric, k)
assert (report["z_truth"].abs() < 5).all(), report["z_truth"]           # the truth within 5 SE
assert abs(report.loc[("pass_hat_k", 5), "z_homogeneous"]) > 5         # tasks-alike rejected
assert abs(analysis.success["mean"] - truth["pass_at_k"][1]) < 5 * analysis.success["se"]
assert truth["pass_hat_k"][5] > 2 * truth["pass_hat_k"][1] ** 5        # the headline gap
assert evalstats.tasks_needed(0.03, 0.7) == tasks_by_hand(0.03, 0.7, 1) == 3553   # the lesson
for k_trials in (1, 3, 5):
    assert evalstats.tasks_needed(0.05, baseline, trials_per_task=k_trials) == tasks_by_hand(
        0.05, baseline, k_trials)
assert needed == tasks_by_hand(D, P, 1)
assert abs(power_full - 0.8) < 5 * se_full                             # the power it promises
assert power_half < 0.8 - 5 * se_half                                  # too few tasks: caught
assert mde is not None and TASKS >= tasks_by_hand(mde + 1e-9, baseline, TRIALS_PER_TASK)
