"""The worked example of examples/evals_to_plan: from an Inspect log and 100 labelled verdicts
to a plan whose risk is stated.

The example's inputs are drawn from a known truth (``make_example.py``: the tasks' chances of
a right answer and a grader with miss 0.10 and false_reject 0.05), so its conclusions are
checked against that truth, from outside relsim: the audit's intervals cover the grader's
rates, and the budget planned under uncertainty meets the target in the true world (computed
here by integrating the closed form of a verified step over the true task population), where
the plan at the point estimates falls short. The derived files the README and the notebook
use are checked to be what the commands write now.
"""

from __future__ import annotations

import importlib.util
import json
import warnings
from pathlib import Path

import pandas as pd

import relsim
from relsim import formulas
from relsim.cli import main

# Not importorskip: the test extra installs inspect-ai, and CI must read the example's log.
import inspect_ai  # noqa: E402, F401

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "examples" / "evals_to_plan"
TARGET = 0.8


def _script():
    spec = importlib.util.spec_from_file_location("make_example", HERE / "make_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _true_success(retries: int) -> float:
    """Success of one verified task with ``retries`` retries in the world the example was
    drawn from: 8/30 tasks always right, 2/30 never, 20/30 with a Beta(2, 1.5) chance, behind
    the true grader (miss 0.10, false_reject 0.05)."""
    from scipy import integrate, stats

    script = _script()
    step = lambda p: formulas.verified_step(p, retries, script.MISS, script.FALSE_REJECT).success  # noqa: E731
    beta = integrate.quad(lambda p: stats.beta.pdf(p, 2.0, 1.5) * step(p), 0.0, 1.0)[0]
    return (8 * step(1.0) + 20 * beta) / 30


def _json_of(argv, capsys) -> dict:
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_inputs_are_what_the_script_draws():
    script = _script()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = relsim.evalstats.read_inspect_log(HERE / "harness.eval")
    drawn = pd.DataFrame(script.harness())
    drawn["trial"] = drawn["epoch"].astype(str)  # Inspect's epochs, read as trial labels
    merged = log.merge(drawn, on=["task", "trial"])
    assert len(log) == len(drawn) == len(merged) == 150
    assert (merged["success"] == merged["verdict"]).all()
    labels = pd.read_csv(HERE / "labels.csv")
    assert labels.to_dict("records") == script.labels()


def test_the_derived_files_are_what_the_commands_write(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)  # the files name their inputs relative to the repository
    path = "examples/evals_to_plan"
    assert _json_of(["audit", f"{path}/labels.csv"], capsys) == json.loads((HERE / "audit.json").read_text())
    assert _json_of(["fit", f"{path}/harness.eval"], capsys) == json.loads((HERE / "fit.json").read_text())
    written = tmp_path / "harness.toml"
    assert main(["fit", f"{path}/harness.eval", "--verifier-from", f"{path}/audit.json",
                 "--target", str(TARGET), "-o", str(written)]) == 0
    assert written.read_text() == (HERE / "harness.toml").read_text()


def test_the_audit_covers_the_grader_behind_it():
    script = _script()
    audit = json.loads((HERE / "audit.json").read_text())
    assert audit["clustered"] and audit["labels"] == 100
    for key, truth in (("miss", script.MISS), ("false_reject", script.FALSE_REJECT)):
        low, high = audit[key]["ci"]
        assert low <= truth <= high, key


def test_the_plan_under_uncertainty_holds_in_the_true_world():
    design = relsim.Scenario.from_toml(HERE / "harness.toml")
    audit, fit = HERE / "audit.json", HERE / "fit.json"
    confident = relsim.plan.retries_with_confidence(design, audit=audit, fit=fit, confidence=0.9)
    assert confident.feasible
    budget = confident.scenario.retries.per_step
    assert _true_success(budget) >= TARGET
    # the plan at the point estimates buys fewer retries, and the truth falls short of it
    point = relsim.plan.with_fit(relsim.plan.with_audit(design, audit, at="estimate"), fit)
    cheaper = relsim.plan.retries(point, TARGET).scenario.retries.per_step
    assert cheaper < budget and _true_success(cheaper) < TARGET
    # and at the audit's upper bounds the target is out of reach: the bounds of both rates at
    # once are more pessimistic than any plausible world needs
    assert not relsim.plan.retries(design, TARGET).feasible
