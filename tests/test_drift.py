"""Drift test: the three engines against one another on random scenarios of docs/model.md
section 3.

hypothesis draws small scenarios over every feature of section 3 (per-step and single ``p``,
with steps of ``p`` exactly 0 or 1; a verifier with per-step ``miss`` / ``false_reject``;
``per_step`` and ``total`` retries; checkpoints by ``every`` / ``at`` / ``final`` with
``detect``, ``false_alarm`` and ``rollbacks``; task and step effects up to hundreds on the
logit scale; confusion; every cost). For each, ``relsim.evaluate`` (exact) is the reference
and ``relsim.simulate`` (Monte Carlo) and ``relsim.simulate_timeline`` (no time tables, so
section 3's split with ``timeout = infra_failure = 0``) must each land within 5 standard errors
of it on the five outcome keys. A negative control feeds the same check an exact value from a
wrongly read scenario and asserts the check rejects it.

Seeds are derived from the scenario and hypothesis runs derandomized, so the test is
deterministic. The fast suite draws a few scenarios; the ``slow`` one draws many more with
more trials.
"""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from relsim import evaluate, simulate, simulate_timeline

PROPORTIONS = ("success", "silent_failure", "detected_failure")
MEANS = ("expected_attempts", "expected_cost")

#: Standard errors the estimate may stray from the exact value (docs/STYLE.md habit 8).
Z = 5.0

#: An exact proportion this close to 0 or 1 is 0 or 1 up to rounding: the estimate must equal
#: it (with at most 1e5 trials a true probability under 1e-12 shows no trial at all but with
#: chance under 1e-7).
EDGE = 1e-12

#: Relative slack on a mean, for float rounding alone (a constant cost summed in another
#: order, a run's standard error of 1e-16 where every trial cost the same).
ROUNDING = 1e-9

#: A run is blind to what it never saw: an outcome of probability ``UNSEEN / N`` is missing
#: from ``N`` trials with chance ``exp(-UNSEEN)``, the two-sided tail of ``Z`` standard errors
#: (5.7e-7). A run with no spread reports se = 0, yet its mean may then miss up to
#: ``UNSEEN / N`` times the widest a trial's value can range.
UNSEEN = -math.log(math.erfc(Z / math.sqrt(2.0)))

#: Logit-scale effects in the hundreds push ``p'`` to within floating point of 0 or 1: expit
#: must neither overflow nor lose the few trials in the middle.
EXTREME = {
    "steps": 3,
    "p": [0.9, 0.5, 0.2],
    "verifier": {"miss": 0.2, "false_reject": 0.1},
    "retries": {"per_step": 1, "total": 2},
    "checkpoints": {"final": True, "detect": 0.7, "rollbacks": 1},
    "correlation": {"task_sd": 400.0, "step_sd": 300.0},
    "cost": {"attempt": [1.0, 2.0, 0.5], "verify": 0.25, "checkpoint": 0.5, "rollback": 1.0},
}

#: A mean the run cannot see vary: all three steps right (0.02**3, 8e-6) is the only way to
#: fewer than 9 attempts, so a run of thousands reports se = 0 while the exact mean is below 9.
RARE = {
    "steps": 3,
    "p": 0.02,
    "verifier": {"miss": 1.0},
    "retries": {"per_step": 2},
    "checkpoints": {"final": True, "detect": 1.0, "rollbacks": 2},
    "cost": {"attempt": 3.0, "verify": 0.25, "checkpoint": 0.2, "rollback": 4.0},
}


# --- the strategy -------------------------------------------------------------------------


def _rounded(low: float, high: float) -> st.SearchStrategy[float]:
    """A number in [low, high] with three decimals (scenarios stay readable in a report)."""
    return st.floats(low, high).map(lambda x: round(x, 3))


def probabilities() -> st.SearchStrategy[float]:
    """A per-attempt success: exactly 0 or 1 often (shift leaves them alone), else inside."""
    return st.one_of(st.sampled_from([0.0, 1.0]), st.sampled_from([0.5, 0.8, 0.9]), _rounded(0.02, 0.98))


def rates() -> st.SearchStrategy[float]:
    """A verifier or checkpoint rate, the ends 0 and 1 included."""
    return st.one_of(st.sampled_from([0.0, 0.1, 0.3, 1.0]), _rounded(0.0, 1.0))


def spreads() -> st.SearchStrategy[float]:
    """A logit-scale sd: none, ordinary, or an extreme in the hundreds."""
    return st.one_of(
        st.just(0.0), st.sampled_from([0.5, 1.0, 2.5]), _rounded(0.0, 3.0), st.sampled_from([150.0, 400.0])
    )


def per_step(values: st.SearchStrategy, steps: int) -> st.SearchStrategy:
    """One value for every step, or a list of one value per step."""
    return st.one_of(values, st.lists(values, min_size=steps, max_size=steps))


@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    """A valid section 3 scenario as a dict, small enough for the exact engine to be quick.

    It keeps the rules of ``Scenario`` validation: retries and ``cost.verify`` only with a
    verifier, ``cost.checkpoint`` / ``cost.rollback`` only with checkpoints, ``cost.rollback``
    only with ``rollbacks >= 1``, and at least one checkpoint position.
    """
    steps = draw(st.integers(1, 6))
    s: dict = {"steps": steps, "p": draw(per_step(probabilities(), steps))}
    cost: dict = {}
    if draw(st.booleans()):
        cost["attempt"] = draw(per_step(st.sampled_from([0.0, 0.5, 1.0, 3.0]), steps))
    if draw(st.booleans()):
        verifier: dict = {}
        if draw(st.booleans()):
            verifier["miss"] = draw(per_step(rates(), steps))
        if draw(st.booleans()):
            verifier["false_reject"] = draw(per_step(rates(), steps))
        s["verifier"] = verifier
        if draw(st.booleans()):
            kind = draw(st.sampled_from(["per_step", "total", "both"]))
            retries: dict = {}
            if kind != "total":
                retries["per_step"] = draw(per_step(st.integers(0, 3), steps))
            if kind != "per_step":
                retries["total"] = draw(st.integers(0, 4))
            s["retries"] = retries
        if draw(st.booleans()):
            cost["verify"] = draw(st.sampled_from([0.1, 0.25, 2.0]))
    if draw(st.booleans()):
        checkpoints: dict = {}
        if draw(st.booleans()):
            checkpoints["every"] = draw(st.integers(1, steps + 1))  # steps + 1: no position
        at = draw(st.lists(st.integers(1, steps), max_size=3, unique=True))
        if at:
            checkpoints["at"] = at
        final = draw(st.booleans())
        if not (at or final or checkpoints.get("every", steps + 1) <= steps):
            final = True  # a [checkpoints] table needs a position
        if final:
            checkpoints["final"] = True
        if draw(st.booleans()):
            checkpoints["detect"] = draw(rates())
        if draw(st.booleans()):
            checkpoints["false_alarm"] = draw(rates())
        checkpoints["rollbacks"] = rollbacks = draw(st.integers(0, 2))
        s["checkpoints"] = checkpoints
        if draw(st.booleans()):
            cost["checkpoint"] = draw(st.sampled_from([0.2, 1.0]))
        if rollbacks and draw(st.booleans()):
            cost["rollback"] = draw(st.sampled_from([0.5, 4.0]))
    correlation: dict = {}
    if draw(st.booleans()):
        correlation["task_sd"] = draw(spreads())
    if draw(st.booleans()):
        correlation["step_sd"] = draw(spreads())
    if draw(st.booleans()):
        correlation["confusion"] = {"enter": draw(rates()), "recover": draw(rates()), "factor": draw(rates())}
    if correlation:
        s["correlation"] = correlation
    if cost:
        s["cost"] = cost
    return s


# --- the check ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Drift:
    """One key on which an estimate strays from the exact value by more than allowed."""

    key: str
    exact: float
    estimate: float
    se: float
    allowed: float

    def __str__(self) -> str:
        return (
            f"{self.key}: exact {self.exact:.9g}, estimate {self.estimate:.9g} "
            f"(se {self.se:.3g}, allowed {self.allowed:.3g}, off by {abs(self.estimate - self.exact):.3g})"
        )


def most_spent(scenario: dict) -> tuple[float, float]:
    """The most attempts and the most cost one trial of ``scenario`` can spend.

    Section 3 never refunds a budget: a rollback redoes at most ``steps`` step executions, so
    a trial runs at most ``steps x (rollbacks + 1)`` executions, each with at most its
    ``per_step`` retries and all of them with at most ``total``; a check follows at most each
    execution.
    """
    n = scenario["steps"]
    rollbacks = scenario.get("checkpoints", {}).get("rollbacks", 0)
    executions = n * (rollbacks + 1)
    retries = scenario.get("retries", {})
    per_step = retries.get("per_step", retries.get("total", 0))  # only total: total caps a step
    retried = (rollbacks + 1) * sum(_each_step(per_step, n))
    if "total" in retries:
        retried = min(retried, retries["total"])
    attempts = executions + retried
    cost = scenario.get("cost", {})
    per_attempt = max(_each_step(cost.get("attempt", 1.0), n)) + cost.get("verify", 0.0)
    checks = executions * cost.get("checkpoint", 0.0) + rollbacks * cost.get("rollback", 0.0)
    return float(attempts), float(attempts * per_attempt + checks)


def _each_step(value, steps: int) -> list:
    return list(value) if isinstance(value, list) else [value] * steps


def disagreements(scenario: dict, exact, estimate) -> list[Drift]:
    """The keys on which ``estimate`` (a run of ``estimate.trials`` trials of ``scenario``) is
    more than ``Z`` standard errors from ``exact``.

    A proportion's standard error is binomial at the exact value, ``sqrt(p(1-p)/N)``, so a run
    that happens to show no spread cannot narrow its own tolerance; one count, ``1/N``, is
    added because the estimate moves in steps of ``1/N`` (at ``N p`` near 1 the count is
    Poisson, and a band narrower than a count would reject one rare trial). At ``p`` of 0 or 1
    (to ``EDGE``) the estimate must equal it. A mean uses the run's own standard error, but
    never less than what an unseen rare trial could move it (``UNSEEN``), plus float rounding.
    """
    n = estimate.trials
    drifts = []
    for key in PROPORTIONS:
        p, got = getattr(exact, key), getattr(estimate, key)
        se = math.sqrt(max(p * (1.0 - p), 0.0) / n)
        if p <= EDGE or p >= 1.0 - EDGE:
            allowed = EDGE
            off = abs(got - round(p))
        else:
            allowed = Z * se + 1.0 / n
            off = abs(got - p)
        if not off <= allowed:
            drifts.append(Drift(key, p, got, se, allowed))
    for key, widest in zip(MEANS, most_spent(scenario)):
        mean, got, se = getattr(exact, key), getattr(estimate, key), estimate.standard_errors[key]
        allowed = max(Z * se, UNSEEN * widest / n) + ROUNDING * max(1.0, abs(mean))
        if not abs(got - mean) <= allowed:
            drifts.append(Drift(key, mean, got, se, allowed))
    return drifts


def seed_of(scenario: dict) -> int:
    """A seed fixed by the scenario itself, so every example has its own stream."""
    return zlib.crc32(json.dumps(scenario, sort_keys=True).encode())


def check_engines(scenario: dict, trials: int, timeline_trials: int) -> None:
    """Hold Monte Carlo and the timeline (no time tables) to the exact engine."""
    seed = seed_of(scenario)
    exact = evaluate(scenario)
    report = []
    mc = simulate(scenario, trials, seed=seed, threads=1)
    report += [f"simulate (N={trials}, seed={seed}): {d}" for d in disagreements(scenario, exact, mc)]
    tl = simulate_timeline(scenario, timeline_trials, seed=seed)
    tag = f"simulate_timeline (N={timeline_trials}, seed={seed})"
    report += [f"{tag}: {d}" for d in disagreements(scenario, exact, tl)]
    if tl.timeout != 0.0 or tl.infra_failure != 0.0:
        report.append(f"{tag}: timeout {tl.timeout}, infra_failure {tl.infra_failure}, not 0")
    assert not report, f"engines drift on {json.dumps(scenario)}:\n" + "\n".join(report)


# --- the tests ----------------------------------------------------------------------------

FAST = settings(
    max_examples=10,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
HEAVY = settings(FAST, max_examples=60)


@FAST
@given(scenarios())
@example(EXTREME)
@example(RARE)
def test_engines_agree_on_drawn_scenarios(scenario: dict) -> None:
    check_engines(scenario, trials=4_000, timeline_trials=1_000)


@pytest.mark.slow
@HEAVY
@given(scenarios())
@example(EXTREME)
@example(RARE)
def test_engines_agree_on_many_drawn_scenarios(scenario: dict) -> None:
    check_engines(scenario, trials=40_000, timeline_trials=4_000)


# --- the negative control -----------------------------------------------------------------

#: A scenario with something of every kind, and wrong readings of it: each changes one
#: parameter a little. The exact value of the wrong reading must be rejected by the same check
#: against runs of the true scenario, which must pass against the true exact value.
CONTROL = {
    "steps": 5,
    "p": [0.9, 0.8, 0.85, 0.95, 0.7],
    "verifier": {"miss": 0.2, "false_reject": 0.05},
    "retries": {"per_step": 1, "total": 3},
    "checkpoints": {"every": 2, "final": True, "detect": 0.8, "false_alarm": 0.05, "rollbacks": 1},
    "correlation": {
        "task_sd": 0.5,
        "step_sd": 0.3,
        "confusion": {"enter": 0.3, "recover": 0.5, "factor": 0.8},
    },
    "cost": {"attempt": 1.0, "verify": 0.2, "checkpoint": 0.5, "rollback": 1.0},
}

WRONG_READINGS = {
    # p shifted by 0.05 on every step: the proportions must see it
    "p + 0.05": ({**CONTROL, "p": [min(1.0, x + 0.05) for x in CONTROL["p"]]}, "success"),
    # verification priced 0.25 instead of 0.2: only the cost moves, and the mean must see it
    "cost.verify + 0.05": ({**CONTROL, "cost": {**CONTROL["cost"], "verify": 0.25}}, "expected_cost"),
}


@pytest.mark.parametrize("reading", sorted(WRONG_READINGS))
def test_a_wrongly_read_scenario_is_rejected(reading: str) -> None:
    wrong, key = WRONG_READINGS[reading]
    seed = seed_of(CONTROL)
    runs = {
        "simulate": simulate(CONTROL, 20_000, seed=seed, threads=1),
        "simulate_timeline": simulate_timeline(CONTROL, 4_000, seed=seed),
    }
    truth, misread = evaluate(CONTROL), evaluate(wrong)
    for engine, run in runs.items():
        assert disagreements(CONTROL, truth, run) == [], engine
        assert key in {d.key for d in disagreements(CONTROL, misread, run)}, engine
