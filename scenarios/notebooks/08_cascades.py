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
# # 8. Is a cascade cheaper at the same reliability?
#
# A cascade (FrugalGPT, AutoMix) sends each step to a cheap model first and calls a strong,
# dear one only after the verifier rejects the cheap answer. It is the standard cost lever,
# and the question a design review asks is whether it keeps the reliability.
# `scenarios/cascade.toml` is a 20-step agent: a cheap model (`p = 0.8` at 0.1 a call), a
# strong one (`p = 0.95` at 1.0), 3 retries per step, a verifier that misses 0.5% of wrong
# answers and a 97% target.
#
# In the scenario file the ladder is `[escalation]`: rung `k` serves from attempt
# `after[k-1] + 1` of a step execution on (docs/model.md section 8).

# %%
import dataclasses
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import relsim
import relsim.plot
from relsim import formulas
from relsim.scenario import Verifier

HERE = Path.cwd()
ROOT = next(d for d in [HERE, *HERE.parents] if (d / "scenarios" / "notebooks").is_dir())
cascade = relsim.Scenario.from_toml(ROOT / "scenarios" / "cascade.toml")
strong = dataclasses.replace(cascade, escalation=None, p=0.95,
                             cost=dataclasses.replace(cascade.cost, attempt=1.0))
cheap = dataclasses.replace(cascade, escalation=None)
designs = {"strong only": strong, "cascade": cascade, "cheap only": cheap}
outcomes = {name: relsim.evaluate(d) for name, d in designs.items()}
pd.DataFrame({name: o.to_dict() for name, o in outcomes.items()}).loc[
    ["success", "silent_failure", "detected_failure", "expected_cost", "cost_per_success"]]

# %% [markdown]
# ## How trials end
#
# The cascade meets the target for about a third of the strong model's price per success;
# the cheap model alone is cheaper still but falls short. What the cascade gives up is in
# the silent failures: every first answer is the cheap model's, so more of the wrong answers
# the verifier misses are shipped.

# %%
ax = relsim.plot.outcome_split(outcomes)
plt.show()

# %% [markdown]
# ## The cascade is only as good as its verifier
#
# The cheap model's answers are wrong four times as often, so a verifier's misses cost the
# cascade four times as much. As the verifier's miss rate grows, the cascade falls below the
# target long before the strong model does.

# %%
misses = np.array([0.0, 0.002, 0.005, 0.01, 0.02, 0.04])
rows = []
for miss in misses:
    verifier = Verifier(miss=float(miss), false_reject=cascade.verifier.false_reject)
    for name, d in designs.items():
        o = relsim.evaluate(dataclasses.replace(d, verifier=verifier))
        rows.append({"miss": miss, "design": name, "success": o.success,
                     "cost_per_success": o.cost_per_success})
by_miss = pd.DataFrame(rows)

fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
for name, group in by_miss.groupby("design", sort=False):
    ax.plot(group["miss"], group["success"], marker="o", label=name)
ax.axhline(cascade.target, color="grey", linestyle="--", label=f"target {cascade.target}")
ax.set(xlabel="verifier miss rate", ylabel="success", title="Who keeps the target as the verifier slips")
ax.legend()
plt.show()

# %% [markdown]
# ## When should the strong model take over?
#
# `relsim solve scenarios/cascade.toml --for escalation` tries every ladder the budget allows
# and keeps the one of least cost per success that meets the target.

# %%
plan = relsim.plan.escalation(cascade)
plan.value, round(plan.success, 6), round(plan.cost_per_success, 4)

# %% [markdown]
# ## Pinned numbers
#
# Without checkpoints, random effects or a task-wide budget the steps are independent, so the
# chain succeeds with the one-step ladder's success to the 20th power (`formulas.ladder_step`,
# an independent closed form), and the file's comments quote these numbers.

# %%
def ladder(design):
    """The chain's success from the closed form of one step's ladder."""
    e = design.escalation
    rungs = [design.p] + ([] if e is None else list(e.p))
    after = [] if e is None else list(e.after)
    step = formulas.ladder_step(rungs, after, design.retries.per_step,
                                miss=design.verifier.miss, false_reject=design.verifier.false_reject)
    return step.success ** design.steps


for name, design in designs.items():
    assert abs(outcomes[name].success - ladder(design)) < 1e-12, name
assert round(outcomes["cascade"].success, 4) == 0.9777 and outcomes["cascade"].success >= cascade.target
assert round(outcomes["strong only"].cost_per_success, 2) == 22.68
assert outcomes["cascade"].cost_per_success < outcomes["strong only"].cost_per_success / 2.5
assert outcomes["cheap only"].success < cascade.target
assert plan.success >= cascade.target and plan.cost_per_success <= outcomes["cascade"].cost_per_success
print("all checks pass")
