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
# caught reply sent back once. The SLA: 90% of tickets answered within 15 minutes. The
# timeline engine (docs/model.md section 7) runs the fleet for each pool size; every run is
# recorded, so each ticket's duration comes from the event log.
#
# A share measured on one long queue is autocorrelated (a busy spell delays many tickets in a
# row), so its standard error comes from batch means: the run cut into 20 consecutive batches
# of tickets, the SE the spread of the batch means over sqrt(20).

# %%
# A queue near saturation relaxes slowly: the 2-reviewer run (85% busy) gets a longer run
# for the same precision.
SLA_S, TICKETS, QUEUE_SEED = 900, 4000, 1
RUN_LENGTH = {2: 2 * TICKETS, 3: TICKETS, 4: TICKETS // 2}

def with_reviewers(design: relsim.Scenario, reviewers: int, **resources) -> relsim.Scenario:
    """The design with `reviewers` reviewers (and other [resources] keys changed)."""
    return variant(design, resources={**design.to_dict()["resources"], "reviewers": reviewers,
                                      **resources})

def ticket_durations(run) -> np.ndarray:
    """Arrival-to-end seconds of every recorded ticket, in arrival order, from the event log."""
    events = run.events.set_index("trial")
    return (events.loc[events["kind"] == "end", "time"]
            - events.loc[events["kind"] == "arrive", "time"]).sort_index().to_numpy()

def batch_mean_se(values: np.ndarray, batches: int = 20) -> float:
    """Standard error of the mean of a serially correlated series, by batch means."""
    means = values[: len(values) // batches * batches].reshape(batches, -1).mean(axis=1)
    return float(means.std(ddof=1) / math.sqrt(batches))

pools = {}
for reviewers, tickets in RUN_LENGTH.items():
    run = relsim.simulate_timeline(with_reviewers(support, reviewers), tickets,
                                   seed=QUEUE_SEED, record=tickets)
    on_time = (ticket_durations(run) <= SLA_S).astype(float)
    pools[reviewers] = {"run": run, "on_time": on_time.mean(), "on_time_se": batch_mean_se(on_time)}
    print(f"{reviewers} reviewers: p50 {run.duration['p50']:6.0f} s  p90 {run.duration['p90']:6.0f} s  "
          f"wait {run.wait['reviewers']:5.0f} s  busy {run.utilisation['reviewers']:.0%}  "
          f"within {SLA_S} s: {on_time.mean():.3f} +/- {pools[reviewers]['on_time_se']:.3f}")
enough = min(c for c, row in pools.items() if row["on_time"] >= 0.9)

# %%
# Figure: p50 and p90 ticket time against the pool size, with the SLA (matplotlib directly:
# relsim.plot draws one run, this is a sweep over runs).
fig, ax = plt.subplots(figsize=(6, 3.5), layout="constrained")
sizes = list(pools)
for key, marker in (("p90", "o-"), ("p50", "s--")):
    ax.plot(sizes, [pools[c]["run"].duration[key] for c in sizes], marker, label=key)
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
    relsim.plot.durations(pools[reviewers]["run"], ax=axis)
    axis.axvline(SLA_S, color="tab:red", linestyle=":", label=f"SLA {SLA_S} s")
    axis.set_xlim(0, 4000)
    axis.set_title(f"{reviewers} reviewers")
    axis.legend(loc="lower right", fontsize=8)
plt.show()
busy_events = pools[2]["run"].events
ax = relsim.plot.timeline(busy_events[busy_events["trial"].between(2000, 2019)])
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
# match `reach x` that within 5 standard errors; the same prediction for reviews 20% longer
# must not (the negative control).

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
                    checkpoints={**support.to_dict()["checkpoints"], "rollbacks": 0})
    run = relsim.simulate_timeline(queue, TICKETS, seed=QUEUE_SEED, record=TICKETS)
    events = run.events.set_index("trial")
    reviewer_events = events[events["resource"] == "reviewers"]
    waited = (reviewer_events.loc[reviewer_events["kind"] == "acquire", "time"]
              - reviewer_events.loc[reviewer_events["kind"] == "request", "time"])
    waits = waited.groupby(level=0).sum().reindex(range(TICKETS), fill_value=0.0).to_numpy()
    se = batch_mean_se(waits)
    z = (run.wait["reviewers"] - erlang_wait(reviewers, review_s)) / se
    z_wrong = (run.wait["reviewers"] - erlang_wait(reviewers, 1.2 * review_s)) / se
    erlang[reviewers] = (run.wait["reviewers"], waits.mean(), z, z_wrong)
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
#   reviewers are busy 85% of the time and under two thirds of tickets are answered within 15
#   minutes (p90 about 36 minutes); three reviewers (busy 57%) answer over 95% in time. Past
#   about 80% utilisation the wait explodes: size the pool on the queue, not on the mean
#   workload. The engine's waits agree with Erlang C where the queue is M/M/c.
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
# the reviewer pool: two miss the SLA and three meet it, each by more than 5 standard errors
assert pools[2]["on_time"] < 0.9 - 5 * pools[2]["on_time_se"]
assert pools[3]["on_time"] > 0.9 + 5 * pools[3]["on_time_se"]
assert enough == 3 and pools[2]["run"].duration["p90"] > SLA_S > pools[3]["run"].duration["p90"]
assert all(pools[c]["run"].wait["reviewers"] > pools[c + 1]["run"].wait["reviewers"] for c in (2, 3))
# the engine's reviewer queue is Erlang's M/M/c, and a 20% error in the review time is caught
for reviewers, (engine_wait, logged_wait, z, z_wrong) in erlang.items():
    assert abs(engine_wait - logged_wait) < 1e-9 * max(1.0, engine_wait)   # log = engine's tally
    assert abs(z) < 5 and abs(z_wrong) > 5, (reviewers, z, z_wrong)
