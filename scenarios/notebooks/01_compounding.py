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
# # 1. The lesson: errors compound, and a verifier with retries is what fixes it
#
# An agent run is a chain of steps, and the run succeeds only if every step does. This
# notebook walks through the lesson behind relsim for a design review:
#
# 1. how fast end-to-end success falls with the number of steps (`p ** n`);
# 2. the 25-step exercise: what each step needs for a 95% target, and how many retries a
#    **perfect** verifier needs to get there;
# 3. the same exercise with a verifier that **misses 10%** of wrong attempts: a ceiling no
#    retry budget can lift.
#
# The designs come from `scenarios/lesson_25_steps.toml` and
# `scenarios/verifier_ceiling.toml`; the model is docs/model.md (section 2 for the closed
# forms, section 5 for the reference values pinned at the end).

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import relsim
import relsim.plot
from relsim import formulas

# The scenario files live in scenarios/ at the repository root; find it from wherever the
# notebook runs (the root, or scenarios/notebooks/ when opened in Jupyter).
HERE = Path.cwd()
ROOT = next(d for d in [HERE, *HERE.parents] if (d / "scenarios" / "notebooks").is_dir())
lesson = relsim.Scenario.from_toml(ROOT / "scenarios" / "lesson_25_steps.toml")
ceiling_design = relsim.Scenario.from_toml(ROOT / "scenarios" / "verifier_ceiling.toml")
lesson.steps, lesson.p, lesson.target

# %% [markdown]
# ## Compounding
#
# With independent steps that each succeed with probability `p`, a chain of `n` steps
# succeeds with probability `p ** n` (`formulas.compound`). Even 99% per step leaves only 60%
# after 50 steps.

# %%
step_rates = np.array([0.9, 0.95, 0.99])
chain_lengths = np.array([5, 10, 20, 50])
table = formulas.compound(step_rates[:, None], chain_lengths[None, :])
for rate, row in zip(step_rates, table):
    cells = (f"n={n}: {value:.3f}" for n, value in zip(chain_lengths, row))
    print(f"p = {rate:<5}", "  ".join(cells))

# %%
# Figure: end-to-end success against the number of steps, p ** n for each p.
ax = relsim.plot.compounding(p=step_rates, steps=range(1, 51), target=lesson.target)
plt.show()

# %% [markdown]
# ## The 25-step exercise with a perfect verifier
#
# For 95% over 25 steps, each step must succeed with probability `0.95 ** (1/25)`. An agent
# at `p = 0.9` is far below that. A perfect verifier (it never accepts a wrong attempt) with
# `r` retries lifts a step to `1 - (1 - p) ** (r + 1)`: the least `r` that meets the
# per-step requirement is the plan.

# %%
required = formulas.required_step_success(lesson.target, lesson.steps)
retries_needed = formulas.min_retries(lesson.p, lesson.steps, lesson.target)
step_with_retries = formulas.retry_success(lesson.p, retries_needed)
print(f"each step must reach      {required:.6f}")
print(f"no verifier: 0.9 ** 25 =  {formulas.compound(lesson.p, lesson.steps):.6f}")
print(f"least retries per step    {retries_needed}")
print(f"step with those retries   {step_with_retries:.6f}")
print(f"end to end                {formulas.compound(step_with_retries, lesson.steps):.6f}")

# %%
# Figure: the per-step success a 95% target needs, target ** (1/n); the agent's p far below.
ax = relsim.plot.required_accuracy(lesson.target, steps=range(1, 51))
ax.axhline(lesson.p, color="grey", linestyle=":", label=f"the agent, p = {lesson.p}")
ax.legend()
plt.show()

# %% [markdown]
# The scenario file encodes exactly this plan (`per_step = 2`); the exact engine agrees with
# the closed form and adds what the closed form does not show: every failure left is a
# *detected* one (a step ran out of retries), none is silent.

# %%
exact = relsim.evaluate(lesson)
exact.to_frame()[["success", "silent_failure", "detected_failure", "expected_attempts"]]

# %% [markdown]
# ## The same exercise with a verifier that misses 10%
#
# Now the verifier accepts a wrong attempt with probability `miss = 0.1`. A step ends when an
# attempt is accepted; it is correct with probability `a / (a + w)` however many retries are
# allowed (`a = p`, accepted and correct; `w = (1 - p) miss`, accepted and wrong). That is
# `0.9 / 0.91 = 0.989011` per step, and `0.758626` for 25 steps: the 95% target is out of
# reach, and `min_retries` says so with `None`.

# %%
miss = ceiling_design.verifier.miss
step_ceiling = formulas.verified_ceiling(ceiling_design.p, miss)
task_ceiling = formulas.compound(step_ceiling, ceiling_design.steps)
print(f"step ceiling   {step_ceiling:.6f}")
print(f"task ceiling   {task_ceiling:.6f}")
no_budget = formulas.min_retries(ceiling_design.p, ceiling_design.steps, ceiling_design.target,
                                 miss)
print(f"min_retries    {no_budget}")
with_ten_retries = relsim.evaluate(ceiling_design)
with_ten_retries.to_frame()[["success", "silent_failure", "detected_failure", "expected_attempts"]]

# %%
# Figure: end-to-end success against the per-step retry budget, with a perfect verifier
# (left) and the 10%-miss one (right); the dashed line is each verifier's ceiling.
fig, (perfect_ax, missing_ax) = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True,
                                             layout="constrained")
relsim.plot.retries(lesson.p, lesson.steps, max_retries=8, target=lesson.target, ax=perfect_ax)
relsim.plot.retries(ceiling_design.p, ceiling_design.steps, miss=miss, max_retries=8,
                    target=ceiling_design.target, ax=missing_ax)
perfect_ax.set_title("perfect verifier: retries reach the target")
missing_ax.set_title(f"miss = {miss}: a ceiling no budget lifts")
plt.show()

# %% [markdown]
# ## What the review should take away
#
# - Long chains need per-step reliability far above what agents have; retries with a
#   verifier are the lever, and two retries per step suffice here **if** the verifier is
#   perfect (97.5% end to end, for about 27.4 attempts per trial instead of 25).
# - A verifier that misses 10% caps the task at 75.9%. Past three retries, extra budget only
#   turns detected failures into silent ones; the lever is the verifier or the number of
#   steps (notebook 2).
#
# ## Headline numbers (pinned)
#
# These come from the lesson and from docs/model.md section 5 (R1, R2); a change in an engine
# that alters a conclusion fails here.

# %%
assert round(required, 6) == 0.997950
assert retries_needed == 2
assert abs(formulas.compound(step_with_retries, 25) - 0.975298) < 5e-7   # 0.999 ** 25
assert abs(exact.success - 0.975298) < 5e-7                               # R1
assert exact.silent_failure == 0.0
assert abs(exact.expected_attempts - 27.419539) < 5e-7                    # R1
assert np.allclose(table[0], [0.590, 0.349, 0.122, 0.005], atol=5e-4)     # the lesson's table
assert np.allclose(table[2], [0.951, 0.904, 0.818, 0.605], atol=5e-4)
assert abs(step_ceiling - 0.9 / 0.91) < 1e-12 and round(step_ceiling, 6) == 0.989011
assert round(task_ceiling, 6) == 0.758626
assert no_budget is None and formulas.min_retries(0.9, 25, 0.95, miss=0.1) is None  # infeasible
three = relsim.evaluate(
    relsim.Scenario.from_dict({**ceiling_design.to_dict(), "retries": {"per_step": 3}}))
assert abs(three.success - 0.757383) < 5e-7 and abs(three.silent_failure - 0.240978) < 5e-7  # R2
assert three.success < with_ten_retries.success < task_ceiling < lesson.target
