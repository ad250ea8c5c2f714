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
# # 10. Which failure mode ships?
#
# Wrong results are not alike. A tool error announces itself and the verifier never accepts
# one; a hallucination reads like a right answer and slips past the verifier and the
# checkpoints alike. One miss rate for all of them hides which kind reaches the user.
# `scenarios/failure_modes.toml` is a 15-step agent with three modes (tool errors, half of
# the wrong results, never accepted; hallucinations, 30%, accepted 30% of the time and caught
# by half the checkpoints; malformed output, 20%, accepted 5% of the time) and a sandbox
# that loses 3% of attempts (`[faults]`), so some trials end as infrastructure failures that
# an eval must keep apart from the agent's.

# %%
import copy
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

import relsim
import relsim.plot

HERE = Path.cwd()
ROOT = next(d for d in [HERE, *HERE.parents] if (d / "scenarios" / "notebooks").is_dir())
design = relsim.Scenario.from_toml(ROOT / "scenarios" / "failure_modes.toml")
exact = relsim.evaluate(design)
pd.Series({"success": exact.success, "silent_failure": exact.silent_failure,
           "detected_failure": exact.detected_failure, "infra_failure": exact.infra_failure,
           **{f"silent: {name}": v for name, v in exact.silent_by_mode.items()}})

# %% [markdown]
# ## What ships
#
# Nearly every silent failure is a hallucination. The tool errors, half of all wrong results,
# never ship; the malformed outputs are caught at the checkpoints.

# %%
fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
names = list(exact.silent_by_mode)
ax.barh(names, [100 * exact.silent_by_mode[n] for n in names], color="tab:red")
ax.set(xlabel="trials that ship a wrong answer of this kind (%)", title="Silent failures by mode")
plt.show()

# %% [markdown]
# ## Which lever
#
# `relsim levers` ranks every single change; with failure modes it has one lever per mode
# (its miss halved). Halving the hallucinations' miss is the best lever of all; the other
# modes' levers buy almost nothing. A checkpoint that sees hallucinations (a fact check, a
# reviewer) is another way to the same place.

# %%
table = relsim.plan.levers(design)
ax = relsim.plot.levers(table)
plt.show()
table[["lever", "success", "delta_success"]].head(6)


# %%
def with_mode(index: int, **changes) -> relsim.Scenario:
    data = copy.deepcopy(design.to_dict())
    data["failure_modes"][index].update(changes)
    return relsim.Scenario.from_dict(data)


alternatives = {
    "as designed": exact,
    "hallucination miss halved": relsim.evaluate(with_mode(1, miss=0.15)),
    "hallucination detect 0.9": relsim.evaluate(with_mode(1, detect=0.9)),
    "no faults": relsim.evaluate(relsim.Scenario.from_dict(
        {k: v for k, v in design.to_dict().items() if k != "faults"})),
}
ax = relsim.plot.outcome_split(alternatives)
plt.show()

# %% [markdown]
# ## Monte Carlo agrees
#
# The same design drawn trial by trial (the Monte Carlo engine draws each wrong result's mode
# and each fault), within 5 standard errors of the exact engine.

# %%
mc = relsim.simulate(design, 40_000, seed=10)
z = {key: (getattr(mc, key) - getattr(exact, key)) / mc.standard_errors[key]
     for key in ("success", "silent_failure", "detected_failure", "infra_failure")}
z |= {name: (mc.silent_by_mode[name] - exact.silent_by_mode[name]) / mc.standard_errors[f"silent_by_mode_{name}"]
      for name in ("hallucination", "wrong_format")}
z

# %% [markdown]
# ## Pinned numbers
#
# The shares per mode add up to the silent failures; modes that all share one miss and one
# detect are the plain verifier and checkpoints (docs/model.md section 8's limit); Monte
# Carlo is within 5 standard errors, and a wrong value (one mode's silent share doubled) is
# caught.

# %%
assert abs(sum(exact.silent_by_mode.values()) - exact.silent_failure) < 1e-12
assert exact.silent_by_mode["tool_error"] == 0.0
assert max(exact.silent_by_mode, key=exact.silent_by_mode.get) == "hallucination"
assert round(exact.success, 4) == 0.8860 and round(exact.infra_failure, 4) == 0.0083
assert table["lever"].iloc[0] == "failure mode hallucination: miss halved"
plain = {k: v for k, v in design.to_dict().items() if k not in ("failure_modes",)}
plain["verifier"] = {**plain["verifier"], "miss": 0.3}
same = copy.deepcopy(design.to_dict())
for mode in same["failure_modes"]:
    mode.update(miss=0.3, detect=0.8)
a, b = relsim.evaluate(relsim.Scenario.from_dict(plain)), relsim.evaluate(relsim.Scenario.from_dict(same))
assert abs(a.success - b.success) < 1e-12 and abs(a.silent_failure - b.silent_failure) < 1e-12
assert all(abs(v) < 5 for v in z.values()), z
wrong = (mc.silent_by_mode["hallucination"] - 2 * exact.silent_by_mode["hallucination"])
assert abs(wrong / mc.standard_errors["silent_by_mode_hallucination"]) > 5
print("all checks pass")
