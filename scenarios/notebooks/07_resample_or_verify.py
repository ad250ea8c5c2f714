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
# # 7. Resample, or improve the verifier?
#
# Retrying until the verifier accepts is the cheapest reliability lever there is, as long as
# the verifier is good. With an imperfect one, every extra sample is another chance for a
# wrong answer to slip through, and when tasks are a mix of easy and hard ones the hard tasks
# mostly produce wrong answers. Stroebl, Kapoor and Narayanan (2024) showed that resampling
# then helps the easy tasks and hurts overall as soon as shipping a wrong answer costs
# something. `scenarios/stroebl.toml` is their setting: 58% easy tasks (`p = 0.87`), 42% hard
# ones (`p = 0.13`), a verifier that accepts a quarter of wrong answers, and a utility of 1
# for a success and `V` for a silent failure.
#
# The question a design review asks: at our cost of a false positive, how many samples
# should we draw, and is the money better spent on the verifier?

# %%
import dataclasses
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import relsim
from relsim.scenario import Retries, Verifier
from relsim.scenario.design_tables import Utility

HERE = Path.cwd()
ROOT = next(d for d in [HERE, *HERE.parents] if (d / "scenarios" / "notebooks").is_dir())
design = relsim.Scenario.from_toml(ROOT / "scenarios" / "stroebl.toml")
exact = relsim.evaluate(design)
exact.to_frame()[["success", "silent_failure", "detected_failure", "expected_utility"]]


# %%
def utility(retries: int, silent_value: float, miss: float = 0.25) -> float:
    """Expected utility of the design with this budget, false-positive cost and verifier."""
    d = dataclasses.replace(
        design,
        verifier=Verifier(miss=miss),
        retries=Retries(per_step=retries),
        utility=Utility(silent_failure=silent_value),
    )
    return relsim.evaluate(d).expected_utility


budgets = np.arange(0, 9)
values = (-0.5, -0.7, -1.0, -2.0, -3.0)
curves = {v: np.array([utility(int(r), v) for r in budgets]) for v in values}
best = {v: (int(budgets[np.argmax(c)]), float(c.max())) for v, c in curves.items()}
best

# %% [markdown]
# ## Utility against samples
#
# Samples per task are `retries + 1`. For a cheap false positive (`V = -0.5`) a few samples
# still pay; from `V = -2` on the first answer is the best one can do. The best number of
# samples falls as a false positive costs more: the published trade-off.

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.8), layout="constrained")
for v, c in curves.items():
    ax.plot(budgets + 1, c, marker="o", label=f"V = {v:g}")
    r, u = best[v]
    ax.plot([r + 1], [u], marker="*", markersize=14, color="black")
ax.set(xlabel="samples per task (retries + 1)", ylabel="expected utility",
       title="Resampling behind a verifier that misses 25% (stars: the best)")
ax.legend(ncols=2)
plt.show()

# %% [markdown]
# ## Or improve the verifier
#
# The same budgets behind verifiers that miss 10% and 5% of wrong answers. A better verifier
# raises every curve and moves the best budget up: resampling pays again once the verifier
# stops letting the hard tasks' wrong answers through. At `V = -1` the best a 25% verifier
# reaches with any budget is well below what a 10% verifier reaches.

# %%
rows = []
for miss in (0.25, 0.10, 0.05):
    for v in (-0.7, -1.0, -2.0):
        us = [utility(int(r), v, miss) for r in budgets]
        rows.append({"miss": miss, "V": v, "best retries": int(np.argmax(us)),
                     "best utility": round(max(us), 6)})
table = pd.DataFrame(rows)
table

# %% [markdown]
# The planner answers the same question for any scenario with a `[utility]` table:
# `relsim solve scenarios/stroebl.toml --for retries --objective utility`.

# %% [markdown]
# ## Pinned numbers
#
# Stroebl et al.'s optimum and utilities (docs/model.md section 8), to 6 decimals.

# %%
assert best[-0.7][0] == 2 and round(best[-0.7][1], 6) == 0.524567
assert best[-1.0][0] == 1 and round(best[-1.0][1], 6) == 0.472381
assert best[-2.0][0] == 0 and round(best[-2.0][1], 6) == 0.338800
assert round(utility(0, -1.0), 6) == 0.449000


# the mixture by hand: each class's verified step (a = p, w = (1 - p) miss, q = 1 - a - w)
def by_hand(r, v, miss=0.25):
    total = 0.0
    for weight, p in ((0.58, 0.87), (0.42, 0.13)):
        a, w = p, (1 - p) * miss
        reach = 1 - (1 - a - w) ** (r + 1)
        total += weight * (a + v * w) / (a + w) * reach
    return total


assert all(abs(utility(r, v) - by_hand(r, v)) < 1e-12 for r in range(6) for v in values)
# the best budget never rises as a false positive costs more; a better verifier never hurts
assert [best[v][0] for v in values] == sorted((best[v][0] for v in values), reverse=True)
assert (table.groupby("V")["best utility"].apply(lambda s: s.is_monotonic_increasing)).all()
print("all checks pass")
