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
# 3. a human gate at the end (`scenarios/human_gate.toml`), and how many reviewers it needs,
#    sized with the timeline engine on `scenarios/support_reviewers.toml` and cross-checked
#    against Erlang's formula for the M/M/c queue.
#
# The trial semantics are docs/model.md section 3; the time model for reviewers, section 7.

# %%
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import relsim
import relsim.plot
from relsim import formulas

HERE = Path.cwd()
ROOT = next(d for d in [HERE, *HERE.parents] if (d / "scenarios" / "notebooks").is_dir())
catch = relsim.Scenario.from_toml(ROOT / "scenarios" / "checkpoints_catch_silent_failures.toml")
spacing = relsim.Scenario.from_toml(ROOT / "scenarios" / "checkpoint_spacing.toml")
gate = relsim.Scenario.from_toml(ROOT / "scenarios" / "human_gate.toml")
support = relsim.Scenario.from_toml(ROOT / "scenarios" / "support_reviewers.toml")

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
ax = relsim.plot.outcome_split(
    {"none": no_checks, **{f"{r} rollbacks": o for r, o in by_rollbacks.items()}})
ax.set(xlabel="checkpoints every 5 steps, by rollback budget")
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
# Figure: expected cost per trial against the checkpoint spacing (no relsim.plot function for
# this one: matplotlib directly).
fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
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
# A gate is also a queue: every trial that reaches it waits for a free reviewer. `human_gate.toml`
# says nothing about time, so the question is asked of `support_reviewers.toml`: a 6-step
# support agent whose replies a human approves (`human = true` in `[checkpoints]`), tickets
# arriving at random at 30 an hour, reviews of a lognormal median 2 minutes (p95 10 minutes), a
# caught reply sent back once. The SLA, the file's `[targets]`: 90% of tickets answered within
# 15 minutes (`duration_p90 = 900`). The timeline engine (docs/model.md section 7) runs the
# file's workload (1,000 tickets, the first 100 left out as warm-up) for each pool size.
#
# Tickets in one queue are not independent (a busy spell delays many in a row), so the engine
# replicates the whole workload on fresh seeds and reports each figure as the mean over
# replications, with the standard error of their spread and a 95% t interval; it judges the
# target met only when the interval of the p90 lies under 900 s.

# %%
SLA_S, QUEUE_SEED, REPLICATIONS = 900, 1, 6
assert support.targets.duration_p90 == SLA_S

def with_reviewers(design: relsim.Scenario, reviewers: int, **resources) -> relsim.Scenario:
    """The design with `reviewers` reviewers (and other [resources] keys changed)."""
    return variant(design, resources={**design.to_dict()["resources"], "reviewers": reviewers,
                                      **resources})

pools = {}
for reviewers in (2, 3, 4):
    run = relsim.simulate_timeline(with_reviewers(support, reviewers), replications=REPLICATIONS,
                                   seed=QUEUE_SEED, record=1000)
    pools[reviewers] = run
    low, high = run.intervals["duration_p90"]
    print(f"{reviewers} reviewers: p50 {run.duration['p50']:6.0f} s  p90 {run.duration['p90']:6.0f} s "
          f"({low:.0f} to {high:.0f})  wait {run.wait['reviewers']:5.0f} s  "
          f"busy {run.utilisation['reviewers']:.0%}  SLA {run.targets['duration_p90']['status']}")
enough = min(c for c, run in pools.items() if run.meets_targets)

# %% [markdown]
# The planner asks the same question directly: the least pool whose targets are all met, every
# candidate run on the same seeds (common random numbers), with how sure the answer is.

# %%
sized = relsim.plan.resources(support, "reviewers", replications=REPLICATIONS, seed=QUEUE_SEED)
print(sized.summary())

# %%
# Figure: p50 and p90 ticket time against the pool size, with the SLA (matplotlib directly:
# relsim.plot draws one run, this is a sweep over runs).
fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
sizes = list(pools)
for key, marker in (("p90", "o-"), ("p50", "s--")):
    low, high = (np.array([pools[c].intervals[f"duration_{key}"][i] for c in sizes]) for i in (0, 1))
    ax.plot(sizes, [pools[c].duration[key] for c in sizes], marker, label=f"{key} (95% interval)")
    ax.fill_between(sizes, low, high, alpha=0.2)
ax.axhline(SLA_S, color="tab:red", linestyle=":", label=f"SLA: p90 within {SLA_S} s")
ax.set(xlabel="reviewers (count)", ylabel="ticket time, arrival to answer (seconds)",
       ylim=(0, None), xticks=sizes, title="How many reviewers meet the SLA")
ax.legend()
plt.show()

# %%
# Figure: the distribution of ticket times with 2 and 3 reviewers, and 20 tickets of the
# 2-reviewer run once its queue has formed (what they wait for).
fig, (two_ax, three_ax) = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True,
                                       layout="constrained")
for reviewers, axis in ((2, two_ax), (3, three_ax)):
    relsim.plot.durations(pools[reviewers], ax=axis)
    axis.axvline(SLA_S, color="tab:red", linestyle=":", label=f"SLA {SLA_S} s")
    axis.set_xlim(0, 4000)
    axis.set_title(f"{reviewers} reviewers")
    axis.legend(loc="lower right", fontsize=8)
plt.show()
busy_events = pools[2].events
ax = relsim.plot.timeline(busy_events[busy_events["trial"].between(900, 919)])
ax.figure.set_size_inches(9, 4.5)
plt.show()

# %% [markdown]
# #### Cross-check: Erlang C
#
# With exponential reviews and no second review (`rollbacks = 0`), the gate is an M/M/c queue:
# tickets arrive Poisson at 30 an hour, each reaches the gate unless a step exhausts its retry
# (the survivors of a Poisson stream, each after an independent drafting time, are again
# Poisson), so reviews arrive at `lambda = 30/h x (1 - exhausted)^6` (`formulas.verified_step`).
# Erlang's C formula gives the chance a review waits, and the mean wait of one that arrives is
# `C(c, a) x review / (c - a)` with the offered load `a = lambda x review`. With the file's mean
# review (the lognormal's `median x exp(sigma^2 / 2)`), the engine's mean wait per ticket must
# match `reach x` that within 5 standard errors (the replications' own); the same prediction
# for reviews 20% longer must not (the negative control).

# %%
def erlang_c(servers: int, load: float) -> float:
    """P(wait) in an M/M/c queue with offered load `load` = arrival rate x mean service time."""
    if load >= servers:
        return 1.0
    top = load**servers / math.factorial(servers) * servers / (servers - load)
    return top / (sum(load**k / math.factorial(k) for k in range(servers)) + top)

review = support.resources.review   # lognormal: p95 = median x exp(1.6448536 sigma)
review_s = review.median * math.exp((math.log(review.p95 / review.median) / 1.6448536) ** 2 / 2)
step = formulas.verified_step(support.p, support.retries.per_step, support.verifier.miss)
reach = (1 - step.exhausted) ** support.steps
gate_rate = support.fleet.rate_per_hour / 3600 * reach   # reviews per second

def erlang_wait(reviewers: int, review_seconds: float) -> float:
    """Mean seconds per ticket waiting for a reviewer (tickets that never reach the gate: 0)."""
    load = gate_rate * review_seconds
    return reach * erlang_c(reviewers, load) * review_seconds / (reviewers - load)

erlang = {}
for reviewers in (2, 3):
    queue = variant(with_reviewers(support, reviewers, review={"mean": review_s}),
                    checkpoints={**support.to_dict()["checkpoints"], "rollbacks": 0},
                    fleet={**support.to_dict()["fleet"], "tasks": 1500, "warmup": 150})
    run = relsim.simulate_timeline(queue, replications=REPLICATIONS, seed=QUEUE_SEED)
    se = run.standard_errors["wait_reviewers"]
    z = (run.wait["reviewers"] - erlang_wait(reviewers, review_s)) / se
    z_wrong = (run.wait["reviewers"] - erlang_wait(reviewers, 1.2 * review_s)) / se
    erlang[reviewers] = (z, z_wrong)
    print(f"{reviewers} reviewers, load {gate_rate * review_s:.2f}: wait per ticket "
          f"{run.wait['reviewers']:.1f} s +/- {se:.1f}, Erlang C {erlang_wait(reviewers, review_s):.1f} s "
          f"(z = {z:.2f}); with reviews 20% longer {erlang_wait(reviewers, 1.2 * review_s):.1f} s "
          f"(z = {z_wrong:.1f})")

# %% [markdown]
# ## What the review should take away
#
# - A checkpoint without rollbacks does not raise success; it turns silent failures into
#   detected ones, which can be escalated. Rollbacks turn them into successes, for a few more
#   attempts (91% with two rollbacks, against 71%).
# - Space paid checks near `sqrt(C / (1 - p))` steps; here every 10 steps saves 5% over every
#   5, and both ends of the range are expensive.
# - A final human gate with no redo leaves 1% silently wrong instead of 20%; one redo lifts
#   success to 95% at the same cost per success.
# - A gate is a queue. At 30 tickets an hour and reviews of 3.2 minutes on average, two
#   reviewers are busy 85% of the time and the p90 is over half an hour, surely over the
#   15-minute SLA; three reviewers (busy 57%) surely meet it, and the planner finds 3. Past
#   about 80% utilisation the wait explodes: size the pool on the queue, not on the mean
#   workload. The engine's waits agree with Erlang C where the queue is M/M/c. Judge such a
#   queue by replications of its workload, never by one long run's trials as if they were
#   independent.
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
# the reviewer pool: two miss the SLA and three meet it, each surely (the p90's 95% interval
# lies on one side of 900 s), and the planner says the same
assert pools[2].targets["duration_p90"]["status"] == "missed"
assert pools[3].targets["duration_p90"]["status"] == "met" and pools[4].meets_targets
assert enough == 3 == sized.value and sized.sure
assert pools[2].duration["p90"] > SLA_S > pools[3].duration["p90"]
assert all(pools[c].wait["reviewers"] > pools[c + 1].wait["reviewers"] for c in (2, 3))
# the engine's reviewer queue is Erlang's M/M/c, and a 20% error in the review time is caught
for reviewers, (z, z_wrong) in erlang.items():
    assert abs(z) < 5 and abs(z_wrong) > 5, (reviewers, z, z_wrong)
