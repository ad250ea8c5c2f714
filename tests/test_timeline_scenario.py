"""The time tables of a scenario (docs/model.md section 7): reading, errors, the round trip,
and the engines that ignore them."""

from __future__ import annotations

import dataclasses

import pytest

from relsim import Duration, Scenario, ScenarioError, evaluate
from relsim.scenario import Backoff, Fleet, Resources, Timing

BASE = {"steps": 3, "p": 0.9}
VERIFIED = {**BASE, "verifier": {"miss": 0.1}, "retries": {"per_step": 1}}

FULL = {
    **VERIFIED,
    "checkpoints": {"final": True, "human": True, "rollbacks": 1},
    "timing": {"attempt": [{"median": 8, "p95": 30}, 4, {"mean": 3}], "verify": 2,
               "backoff": {"base": 1, "factor": 2, "max": 60, "jitter": True}, "deadline": 1800},
    "fleet": {"arrivals": "poisson", "rate_per_hour": 120, "agents": 20},
    "resources": {"llm_concurrency": 50, "rpm": 500, "tpm": 1000000, "tokens": [3000, 2000, 1000],
                  "verifier_calls_llm": True, "reviewers": 3, "review": {"median": 600, "p95": 1800}},
    "infra": {"crash_per_hour": 0.5},
}


def _error(data: dict) -> str:
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(data)
    return str(info.value)


def test_full_time_tables_read_and_round_trip(tmp_path):
    s = Scenario.from_dict(FULL)
    assert s.timing.attempt[0] == Duration.lognormal(8, 30)
    assert s.timing.attempt[1] == Duration.constant(4) and s.timing.attempt[2] == Duration.exponential(3)
    assert s.timing.backoff == Backoff(base=1.0, factor=2.0, max=60.0, jitter=True)
    assert s.fleet == Fleet(arrivals="poisson", rate_per_hour=120.0, agents=20)
    assert s.resources.tokens == (3000.0, 2000.0, 1000.0) and s.checkpoints.human
    assert Scenario.from_dict(s.to_dict()) == s
    # the same through a TOML file
    path = tmp_path / "timed.toml"
    path.write_text(
        'steps = 2\np = 0.9\n[timing]\nattempt = { median = 8, p95 = 30 }\ndeadline = 60\n'
        '[fleet]\nagents = 2\n[infra]\ncrash_per_hour = 1\n',
        encoding="utf-8",
    )
    t = Scenario.from_toml(path)
    assert t.timing.deadline == 60.0 and t.fleet.agents == 2 and t.infra.crash_per_hour == 1.0


def test_lognormal_sigma_from_median_and_p95():
    # sigma = ln(Q/M) / 1.6448536 (docs/model.md section 7); Q = M is constant
    import math

    assert Duration.lognormal(8, 30).sigma == pytest.approx(math.log(30 / 8) / 1.6448536, rel=1e-7)
    assert Duration.lognormal(5, 5).sigma == 0.0


def test_python_api_accepts_numbers_for_durations():
    s = Scenario(steps=2, p=0.9, timing=Timing(attempt=5))
    assert s.timing.attempt == Duration.constant(5)
    changed = dataclasses.replace(s, timing=Timing(attempt={"mean": 2}))
    assert changed.timing.attempt == Duration.exponential(2)


@pytest.mark.parametrize(
    "data, message",
    [
        ({**BASE, "timing": {"atempt": 1}}, "timing.atempt: unknown key; did you mean 'attempt'?"),
        ({**BASE, "deadline": 60}, "deadline: unknown key; it belongs at 'timing.deadline'"),
        ({**BASE, "timming": {}}, "timming: unknown key; did you mean 'timing'?"),
        ({**BASE, "fleet": {"agent": 2}}, "fleet.agent: unknown key; did you mean 'agents'?"),
        ({**BASE, "timing": {"attempt": {"median": 8, "p95": 3}}},
         "timing.attempt.p95: must be a number >= median = 8, got 3"),
        ({**BASE, "timing": {"attempt": {"median": 8}}},
         "timing.attempt: a lognormal duration needs median and p95; missing p95"),
        ({**BASE, "timing": {"attempt": {"medain": 8, "p95": 9}}},
         "timing.attempt.medain: unknown key; did you mean 'median'?"),
        ({**BASE, "timing": {"attempt": -1}},
         "timing.attempt: must be a number of seconds in [0, 1e+12], {median, p95} or {mean}, got -1"),
        ({**BASE, "timing": {"attempt": [1, 2]}},
         "timing.attempt: must be one value or a list of one value per step (3), got a list of 2"),
        ({**BASE, "timing": {"verify": 2}}, "timing.verify: times a verification, but there is no [verifier]"),
        ({**BASE, "timing": {"checkpoint": 2}}, "timing.checkpoint: times a check, but there is no [checkpoints]"),
        ({**BASE, "timing": {"backoff": {"base": 1}}}, "timing.backoff: waits before retries, but there is no [retries]"),
        ({**VERIFIED, "timing": {"backoff": {"factor": 0.5}}},
         "timing.backoff.factor: must be a finite number >= 1, got 0.5"),
        ({**BASE, "timing": {"deadline": 0}}, "timing.deadline: must be a finite number > 0, got 0"),
        ({**BASE, "fleet": {"arrivals": "poisson"}}, 'fleet.rate_per_hour: needed with arrivals = "poisson"'),
        ({**BASE, "fleet": {"arrivals": "batch", "rate_per_hour": 5}},
         'fleet.rate_per_hour: used only with arrivals = "poisson" (batch trials all arrive at 0)'),
        ({**BASE, "fleet": {"arrivals": "steady"}}, "fleet.arrivals: must be \"batch\" or \"poisson\", got 'steady'"),
        ({**BASE, "fleet": {"agents": 0}}, "fleet.agents: must be an integer in 1..1000000, got 0"),
        ({**BASE, "resources": {"tpm": 1000}}, "resources.tokens: needed with resources.tpm (tokens per LLM call)"),
        ({**BASE, "resources": {"tpm": 1000, "tokens": 2000}},
         "resources.tokens: must be at most tpm = 1000 (a larger call could never be served), got 2000.0"),
        ({**BASE, "resources": {"rpm": 0.5}}, "resources.rpm: must be a finite number >= 1, got 0.5"),
        ({**BASE, "resources": {"review": 60}},
         "resources.review: times a human review, but resources.reviewers is not set"),
        ({**BASE, "resources": {"verifier_calls_llm": True}},
         "resources.verifier_calls_llm: true, but there is no [verifier]"),
        ({**BASE, "checkpoints": {"final": True, "human": True}},
         "checkpoints.human: true needs resources.reviewers (the reviewer pool)"),
        ({**BASE, "checkpoints": {"final": True, "human": True}, "resources": {"reviewers": 2}},
         "checkpoints.human: true needs resources.review (how long a review takes)"),
        ({**BASE, "checkpoints": {"final": True, "human": "yes"}},
         "checkpoints.human: must be true or false, got 'yes'"),
        ({**BASE, "checkpoints": {"final": True, "human": True}, "timing": {"checkpoint": 5},
          "resources": {"reviewers": 1, "review": 5}},
         "timing.checkpoint: unused with checkpoints.human = true (a human gate takes resources.review)"),
        ({**BASE, "infra": {"crash_per_hour": -1}}, "infra.crash_per_hour: must be a finite number >= 0, got -1"),
        ({**BASE, "infra": 3}, "infra: must be a table, got 3"),
        # read by nothing: silently ignored before
        ({**BASE, "resources": {"tokens": 3000}},
         "resources.tokens: is what an LLM call takes from the tpm bucket, but resources.tpm is "
         "not set (set it, or leave tokens out)"),
        ({**BASE, "resources": {"reviewers": 2, "review": 60}},
         "resources.reviewers: is the pool of a human gate, but no check is one (set "
         "checkpoints.human = true, or leave it out)"),
        ({**BASE, "checkpoints": {"final": True}, "resources": {"reviewers": 2, "review": 60}},
         "resources.reviewers: is the pool of a human gate, but no check is one (set "
         "checkpoints.human = true, or leave it out)"),
    ],
)
def test_bad_time_tables_get_one_clear_error(data, message):
    assert _error(data) == message


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('steps = 2\np = 0.9\n[resources]\ntpm = 100\n', encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        Scenario.from_toml(path)
    assert str(info.value) == f"{path}: resources.tokens: needed with resources.tpm (tokens per LLM call)"


def test_the_other_engines_ignore_time():
    # section 3 is unchanged: the exact engine gives the same outcome with or without time
    timed = Scenario.from_dict(FULL)
    plain = dataclasses.replace(timed, timing=None, fleet=None, resources=None, infra=None,
                                checkpoints=dataclasses.replace(timed.checkpoints, human=False))
    assert evaluate(timed) == evaluate(plain)
    assert Resources() == Resources(llm_concurrency=None)


def test_a_lognormal_spread_beyond_a_float_is_bad_input_not_an_overflow():
    base = {"steps": 2, "p": 0.9}
    ok = Scenario.from_dict({**base, "timing": {"attempt": {"median": 1, "p95": 1e6}}})
    assert ok.timing.attempt.p95 == 1e6
    with pytest.raises(ScenarioError, match=r"^timing\.attempt\.p95: must be at most 1e\+06 x median"):
        Scenario.from_dict({**base, "timing": {"attempt": {"median": 1, "p95": 1e200}}})
