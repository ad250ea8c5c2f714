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
# # 11. From eval runs to a plan whose risk is stated
#
# What an agent team really has: a small harness run a few times (an Inspect log of 30
# tasks x 5 epochs, scored by an LLM judge) and a person's check of 100 of the judge's
# verdicts. What it must decide: how many times to let the agent retry a task, behind that
# judge, so that 80% of tasks end right. This notebook takes `examples/evals_to_plan/` through
# the four steps of the README (audit, fit, plan, report) in Python. The example was drawn
# from a known truth (`make_example.py`: a judge that passes 10% of wrong answers and fails 5%
# of right ones), so at the end the plans are checked against the world they must hold in.

# %%
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import relsim
import relsim.plot
from relsim import formulas
from relsim.report import eval as eval_report

HERE = Path.cwd()
ROOT = next(d for d in [HERE, *HERE.parents] if (d / "scenarios" / "notebooks").is_dir())
EXAMPLE = ROOT / "examples" / "evals_to_plan"
TARGET = 0.8

# %% [markdown]
# ## 1. Audit the grader
#
# Of 100 labelled verdicts (25 tasks, 4 answers each, so clustered by task), the judge passed
# 4 of 31 wrong answers and failed 5 of 69 right ones. The intervals are wide: 31 wrong
# answers cannot pin a miss rate between 3% and 32%.

# %%
audit = relsim.evalstats.audit(EXAMPLE / "labels.csv", judged=EXAMPLE / "harness.eval",
                               grader="grader", seed=0)
record = audit.to_dict()
rows = {"miss": record["miss"], "false_reject": record["false_reject"],
        "pass rate as graded": record["judged"]["pass_rate"],
        "pass rate corrected for the grader": record["judged"]["corrected"],
        "pass rate, prediction-powered (PPI++)": record["judged"]["ppi"]}
pd.DataFrame({"estimate": [r["estimate"] for r in rows.values()],
              "95% CI": [tuple(round(x, 4) for x in r["ci"]) for r in rows.values()]},
             index=list(rows))

# %% [markdown]
# ## 2. Fit how hard the tasks are
#
# Five trials a task show how the tasks differ: some always pass, the rest pass with their own
# chance. The fit (a zero-one-inflated beta-binomial) reproduces the observed pass^k for every
# k that was run, and extrapolates it beyond, with bands from refits over tasks.

# %%
analysis = relsim.evalstats.analyze(EXAMPLE / "harness.eval", k=[1, 5], extrapolate=10, seed=0)
fit = relsim.evalstats.fit_difficulty(EXAMPLE / "harness.eval", seed=0)
ax = relsim.plot.pass_k_extrapolated(analysis)
plt.show()
pd.DataFrame(fit.check)

# %% [markdown]
# ## 3. Plan, three ways
#
# `harness.toml` is the fit written as a scenario (`relsim fit -o`): one task is one step and
# one trial one attempt, so a retry reruns the task, and the judge is the verifier, at the
# audit's upper bounds. Planned there, the target is out of reach: both error rates at their
# bounds at once is a world no sample points to. Planned at the point estimates, two retries
# look enough. Planned over 200 plausible worlds (the judge's rates drawn from the audit, the
# tasks from the fit's refits), the least budget that meets 80% in 90% of them is three, and
# the point-estimate plan is seen to fail in about three worlds of ten.

# %%
design = relsim.Scenario.from_toml(EXAMPLE / "harness.toml")
audit_file, fit_file = EXAMPLE / "audit.json", EXAMPLE / "fit.json"
at_bound = relsim.plan.retries(design, TARGET)
at_estimate = relsim.plan.retries(
    relsim.plan.with_fit(relsim.plan.with_audit(design, audit_file, at="estimate"), fit_file), TARGET)
confident = relsim.plan.retries_with_confidence(design, TARGET, audit=audit_file, fit=fit_file,
                                                confidence=0.9)
budget = confident.scenario.retries.per_step
cheaper = at_estimate.scenario.retries.per_step
pd.DataFrame({
    "plan": ["at the upper bounds", "at the estimates", "in 90% of plausible worlds"],
    "retries": [None if not at_bound.feasible else at_bound.scenario.retries.per_step,
                cheaper, budget],
    "success (as planned)": [at_bound.success, at_estimate.success, confident.success],
})

# %% [markdown]
# The share of plausible worlds that meet the target at each budget: every world is a
# mixture of task classes behind one judge, so a budget's success in it is the weighted
# closed form of a verified step.

# %%
worlds = relsim.plan.plausible_worlds(design, audit=audit_file, fit=fit_file)


def world_success(world, retries):
    p = np.array([c.p for c in world.classes])
    w = np.array([c.weight for c in world.classes])
    v = world.verifier
    return float(w @ formulas.verified_step(p, retries, v.miss, v.false_reject).success)


budgets = range(0, 7)
share = [np.mean([world_success(world, r) >= TARGET for world in worlds]) for r in budgets]
fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
ax.bar(list(budgets), share, color="tab:blue")
ax.axhline(0.9, color="0.4", linestyle="--", label="confidence asked (90%)")
ax.set(xlabel="retries per task", ylabel="share of plausible worlds meeting 80%",
       title="How sure each budget is", ylim=(0, 1))
ax.legend(loc="lower right")
plt.show()

# %% [markdown]
# ## 4. The report
#
# `relsim analyze ... --labels ... --extrapolate 10 --report report.html` puts it on one page:
# the harness's pass@k and pass^k, the audit with the corrected pass rate, the plan at the
# audit's bound, and pass^k beyond the trials run with its band. In Python the same page:

# %%
evidence = eval_report.Evidence(audit=audit.to_dict(), plan=at_bound)
page = eval_report.render(analysis, evidence=evidence)
with tempfile.TemporaryDirectory() as folder:  # or keep it: write_report(analysis, "report.html", ...)
    written = eval_report.write_report(analysis, Path(folder) / "report.html", evidence=evidence)
[section.title for section in page.sections]

# %% [markdown]
# ## Checked against the truth
#
# The example was drawn from a known world: 8 of 30 tasks always answered right, 2 never, 20
# with a Beta(2, 1.5) chance, behind a judge with miss 0.10 and false_reject 0.05. In that
# world the budget planned under uncertainty meets the target and the point-estimate plan
# falls just short of it; the audit's intervals hold the judge's true rates.

# %%
from scipy import integrate, stats  # noqa: E402


def true_success(retries):
    step = lambda p: formulas.verified_step(p, retries, 0.10, 0.05).success  # noqa: E731
    beta = integrate.quad(lambda p: stats.beta.pdf(p, 2.0, 1.5) * step(p), 0.0, 1.0)[0]
    return (8 * step(1.0) + 20 * beta) / 30


pd.Series({f"true success, {r} retries": true_success(r) for r in (cheaper, budget)})

# %%
assert not at_bound.feasible and confident.feasible and cheaper < budget
assert share[budget] >= 0.9 > share[cheaper]
assert true_success(budget) >= TARGET > true_success(cheaper)
assert audit.miss["ci"][0] <= 0.10 <= audit.miss["ci"][1]
assert audit.false_reject["ci"][0] <= 0.05 <= audit.false_reject["ci"][1]
assert [s.id for s in page.sections][:5] == ["figure", "headline", "audit", "plan", "extrapolated"]
