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
# # 9. How many voters?
#
# Drawing several answers and keeping the most frequent one ("more agents", self-consistency)
# lifts a task whose answer is right more often than any single wrong one, and sinks a task
# where it is not. With a mix of easy and hard tasks the two pull against each other, and
# Chen et al. (2024) found that a vote then rises and falls as voters are added.
# `scenarios/voters.toml` is their example: 60% easy tasks (`p = 0.8` per sample), 40% hard
# ones (`p = 0.3`), one wrong answer to fall into, and a price of 0.01 of a success per
# sample in its `[utility]` table.
#
# The shape of the answer space matters as much as the difficulty: `wrong_answers` says how
# many distinct wrong answers a wrong sample picks among (docs/model.md section 8).

# %%
import dataclasses
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import relsim
import relsim.plot
from relsim import formulas
from relsim.scenario.design_tables import Sampling

HERE = Path.cwd()
ROOT = next(d for d in [HERE, *HERE.parents] if (d / "scenarios" / "notebooks").is_dir())
design = relsim.Scenario.from_toml(ROOT / "scenarios" / "voters.toml")
relsim.evaluate(design).to_frame()[["success", "silent_failure", "expected_cost", "expected_utility"]]


# %%
def outcome(n: int, wrong_answers: int | str = 1) -> relsim.Outcome:
    return relsim.evaluate(dataclasses.replace(
        design, sampling=Sampling(n=n, select="vote", wrong_answers=wrong_answers)))


voters = np.arange(1, 26)
curves = {label: np.array([outcome(int(n), w).success for n in voters])
          for label, w in (("1 wrong answer", 1), ("3 wrong answers", 3), ("every wrong answer differs", "distinct"))}

# %% [markdown]
# ## Success against voters
#
# With one wrong answer the vote peaks at 5 voters and falls back toward the 60% of easy
# tasks; an even number of voters ties the odd number below it (ties are broken at random).
# When wrong answers scatter, the right answer is the plurality even on hard tasks, and more
# voters keep paying.

# %%
fig, ax = plt.subplots(figsize=(6.5, 3.8), layout="constrained")
for label, c in curves.items():
    ax.plot(voters, c, marker=".", label=label)
ax.set(xlabel="voters (samples per attempt)", ylabel="success", ylim=(0.55, 1.0),
       title="A vote over 60% easy and 40% hard tasks")
ax.legend()
plt.show()

# %% [markdown]
# ## Where the trials go
#
# With one wrong answer, 25 voters make the hard tasks wrong with near certainty: a vote that
# is confidently wrong is a silent failure.

# %%
ax = relsim.plot.outcome_split({f"{n} voters": outcome(n) for n in (1, 5, 25)})
plt.show()

# %% [markdown]
# ## With the price of a voter
#
# Each sample costs 0.01 of a success here. `relsim solve scenarios/voters.toml --for samples
# --objective utility` weighs what a voter buys against what it costs.

# %%
plan = relsim.plan.samples(design, objective="utility")
plan.value, round(plan.expected_utility, 6)

# %% [markdown]
# ## Pinned numbers
#
# The binary vote is a binomial tail, `formulas.majority_vote`, and the mixture its weighted
# sum (Chen et al.'s closed form); the plurality over several wrong answers is
# `formulas.plurality_vote`. The peak at 5 voters (0.630480) is the reference value of
# docs/model.md section 8.

# %%
binary = 0.6 * formulas.majority_vote(0.8, voters) + 0.4 * formulas.majority_vote(0.3, voters)
three = 0.6 * formulas.plurality_vote(0.8, voters, 3) + 0.4 * formulas.plurality_vote(0.3, voters, 3)
assert np.max(np.abs(curves["1 wrong answer"] - binary)) < 1e-12
assert np.max(np.abs(curves["3 wrong answers"] - three)) < 1e-12
assert int(voters[np.argmax(np.round(binary, 12))]) == 5 and round(binary.max(), 6) == 0.630480
assert np.all(np.diff(curves["every wrong answer differs"][::2]) > 0)
assert plan.value == 3 and round(plan.expected_utility, 6) == round(0.624 - 0.03, 6)
print("all checks pass")
