"""The planner's limits: no runaway memory or time on inputs the README allows.

``--for allocation`` on 100,000 steps asked numpy for 12 GiB (its bucketed programme keeps an
int16 table of steps x 65,537 buckets: 100,000 x 65,537 x 2 bytes = 12.2 GiB), and the planner
on 100,000 steps with checkpoints ran for many minutes (each exact evaluation takes seconds, and
a search makes tens of them). Both are now refused before any work, with the estimate and what
to do instead. The estimates are checked against arithmetic, never against a clock.
"""

from __future__ import annotations

import re

import pytest

from relsim import plan as planner
from relsim.cli import main
from relsim.errors import RelsimError
from relsim.plan import _common
# Imported before any test patches _common.evaluate_design: a planner module that binds the
# name at its first import would otherwise keep the patched function for the whole worker.
from relsim.plan import allocate  # noqa: F401
from relsim.scenario import Scenario

BIG_CHAIN = {"steps": 100_000, "p": 0.99999, "target": 0.5, "verifier": {"miss": 0.01},
             "retries": {"per_step": 2}}
BIG_CHECKPOINTS = {**BIG_CHAIN, "checkpoints": {"every": 100, "detect": 0.9, "rollbacks": 2}}


@pytest.mark.slow
def test_allocation_on_100000_steps_is_refused_with_the_memory_estimate():
    s = Scenario.from_dict(BIG_CHAIN)
    with pytest.raises(RelsimError) as caught:
        planner.allocation(s)
    message = str(caught.value)
    gib = float(re.search(r"about ([\d.]+) GiB", message).group(1))
    # at least the 12 GiB: the int16 choice table alone, 100,000 x 65,537 x 2 bytes
    assert gib >= 100_000 * 65_537 * 2 / 2**30 - 0.05
    assert "plan.retries" in message  # what to do instead
    # ... which does serve it: closed forms, a moment's work
    assert planner.retries(s).feasible


@pytest.mark.parametrize("quantity", ["retries", "total", "allocation", "verifier", "p",
                                      "checkpoints"])
def test_every_planner_refuses_100000_steps_with_checkpoints_before_it_starts(quantity, monkeypatch):
    # before any engine call: an evaluation would fail the test
    def no_engine(_scenario):
        raise AssertionError("the engine ran before the estimate refused")

    monkeypatch.setattr(_common, "evaluate_design", no_engine)
    s = Scenario.from_dict(BIG_CHECKPOINTS)
    with pytest.raises(RelsimError, match=r"needs about \d+ exact evaluations") as caught:
        planner.solve(s, quantity)
    message = str(caught.value)
    assert message.startswith(f"{quantity}: planning this 100000-step scenario")
    assert "relsim.simulate" in message and "minute" in message


def test_the_work_estimate_scales_with_steps_and_rollbacks():
    # SECONDS_PER_UNIT x steps x (rollbacks + 1): 100,000 steps with 2 rollbacks is
    # 3e5 units, 20 times the 15,000 of 5,000 steps with none
    small = Scenario.from_dict({**BIG_CHECKPOINTS, "steps": 5_000,
                                "checkpoints": {"every": 100, "rollbacks": 0}})
    _common._check_work(small, "retries")  # about 25 x 0.11 s: allowed
    big = Scenario.from_dict(BIG_CHECKPOINTS)
    with pytest.raises(RelsimError, match=r"of about 6\.6 s each"):
        _common._check_work(big, "retries")


def test_the_cli_refusal_is_one_line_exit_2(tmp_path, capsys):
    path = tmp_path / "big.toml"
    path.write_text(
        "steps = 100000\np = 0.99999\ntarget = 0.5\n[verifier]\nmiss = 0.01\n[retries]\n"
        "per_step = 2\n[checkpoints]\nevery = 100\ndetect = 0.9\nrollbacks = 2\n",
        encoding="utf-8",
    )
    assert main(["solve", str(path), "--for", "checkpoints"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "exact evaluations" in err
    # the library's words in the CLI's: commands, not Python names
    assert "with 'relsim evaluate'" in err and "relsim.evaluate" not in err


TWELVE_WITH_EFFECTS = {
    "steps": 12,
    "p": [0.9, 0.8, 0.95, 0.7, 0.85, 0.9, 0.75, 0.99, 0.8, 0.9, 0.7, 0.95],
    "verifier": {"miss": 0.01, "false_reject": 0.02},
    "correlation": {"task_sd": 0.3, "step_sd": 0.3},
    "cost": {"attempt": 1.0, "verify": 0.1},
}


def test_allocation_is_not_refused_for_its_gap_bound_alone(monkeypatch):
    # Beyond 8 steps the old heuristic bounded its gap with every budget at MAX_BUDGET (1000
    # per step), a design whose engine tables are far larger than any the plan evaluates; on
    # 500 such steps it was over the 4 GiB limit, so the whole plan was refused. The bound now
    # comes from the planner's own tables, and no design past them is evaluated: with the
    # memory limit between the two sizes the plan comes back, feasible by the exact engine
    # (run without the limit), with a valid bound.
    from relsim.exact import evaluate, work_estimate
    from relsim.plan._common import with_per_step

    s = Scenario.from_dict(TWELVE_WITH_EFFECTS)
    widest = work_estimate(with_per_step(s, [_common.MAX_BUDGET] * 12)).memory
    ordinary = work_estimate(with_per_step(s, [100] * 12)).memory
    assert widest > 5 * ordinary
    monkeypatch.setenv("RELSIM_MEMORY_LIMIT", str(int(2 * ordinary)))
    plan = planner.allocation(s, 0.6)
    monkeypatch.delenv("RELSIM_MEMORY_LIMIT")
    assert plan.feasible and max(plan.value) <= 100
    outcome = evaluate(with_per_step(s, plan.value))
    assert outcome.success >= 0.6
    # the bound holds for the answer and for the uniform designs around it, and it is far
    # above the old bound by monotonicity (cost with every budget at 0, over success 1)
    assert plan.details["lower_bound"] <= outcome.cost_per_success
    for budget in (2, 5, 10, 20):
        other = evaluate(with_per_step(s, [budget] * 12))
        if other.success >= 0.6:
            assert plan.details["lower_bound"] <= other.cost_per_success
    cheapest = evaluate(with_per_step(s, [0] * 12)).expected_cost
    assert plan.details["lower_bound"] > 2 * cheapest
