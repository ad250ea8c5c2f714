"""The Python API as a notebook or eval-harness author meets it: mappings where a scenario is
expected, numpy scalars where numbers are, and results that stay plain Python.

Each test here failed before the fix it holds (the audit of the API, angle: notebooks)."""

import json

import numpy as np
import pytest

import relsim
from relsim import formulas

LESSON = {"steps": 25, "p": 0.9, "target": 0.95, "verifier": {"miss": 0.0}, "retries": {"per_step": 2}}


# ------------------------------------------------------------- planners take a mapping, as engines do
def _planner_cases():
    """(planner, scenario mapping, keyword arguments): one for each planner of a scenario."""
    audit = {"miss": {"estimate": 0.05, "ci": [0.01, 0.14], "effective": 60},
             "false_reject": {"estimate": 0.03, "ci": [0.01, 0.07], "effective": 140}}
    one_step = {"steps": 1, "p": 0.7, "verifier": {"miss": 0.1}}
    return [
        ("retries", LESSON, {}),
        ("total", LESSON, {}),
        ("allocation", {"steps": 3, "p": [0.9, 0.5, 0.8], "verifier": {}}, {"target": 0.95}),
        ("verifier", {**LESSON, "retries": {"per_step": 3}}, {}),
        ("p", {"steps": 20, "p": 0.9}, {"target": 0.9}),
        ("checkpoints", {"steps": 20, "p": 0.98, "checkpoints": {"every": 1, "final": True,
                         "rollbacks": 4}, "cost": {"checkpoint": 2.0}}, {"target": 0.9}),
        ("samples", {"steps": 1, "p": 0.7, "sampling": {"n": 1}}, {"target": 0.9}),
        ("escalation", {"steps": 3, "p": 0.6, "verifier": {}, "retries": {"per_step": 3},
                        "cost": {"attempt": 0.2}, "escalation": {"after": [1], "p": [0.95],
                        "attempt_cost": [1.0]}}, {"target": 0.995}),
        ("retries_with_confidence", one_step, {"target": 0.95, "audit": audit, "worlds": 20}),
    ]


@pytest.mark.parametrize("name, mapping, kwargs", _planner_cases(), ids=lambda c: c if isinstance(c, str) else "")
def test_every_planner_takes_a_mapping_as_the_engines_do(name, mapping, kwargs):
    planner = getattr(relsim.plan, name)
    from_mapping = planner(mapping, **kwargs)
    from_scenario = planner(relsim.Scenario.from_dict(mapping), **kwargs)  # the control
    assert from_mapping.to_dict() == from_scenario.to_dict()
    assert from_mapping.scenario == from_scenario.scenario  # the design planned


def test_solve_and_the_evidence_helpers_take_a_mapping():
    assert relsim.plan.solve(LESSON, "retries").value == 2  # 0.9 S_2 = 0.999 per step
    audit = {"miss": {"estimate": 0.12, "ci": [0.06, 0.21], "effective": 60},
             "false_reject": {"estimate": 0.03, "ci": [0.01, 0.08], "effective": 140}}
    one_step = {"steps": 1, "p": 0.7, "verifier": {"miss": 0.0}}
    assert relsim.plan.with_audit(one_step, audit).verifier == relsim.Verifier(0.21, 0.08)
    fit = {"always": 0.5, "never": 0.5, "beta": None}
    assert [(c.weight, c.p) for c in relsim.plan.with_fit(one_step, fit).classes] == [(0.5, 1.0), (0.5, 0.0)]
    worlds = relsim.plan.plausible_worlds(one_step, audit=audit, worlds=3)
    assert len(worlds) == 3 and all(isinstance(w, relsim.Scenario) for w in worlds)


def test_a_planner_still_refuses_what_is_no_scenario():
    with pytest.raises(relsim.RelsimError, match="scenario: must be"):
        relsim.plan.retries([25, 0.9], target=0.95)


# ------------------------------------------------------------- numpy numbers where numbers are
def test_the_report_takes_numpy_numbers_as_the_engines_do():
    design = {"steps": 5, "p": 0.9}
    plain = relsim.report.render(design, target=0.5, trials=200, seed=3)
    from_numpy = relsim.report.render(design, target=np.float64(0.5), trials=np.int64(200), seed=np.int64(3))
    assert from_numpy.to_dict() == plain.to_dict()
    assert relsim.report.render(design, target=np.float32(0.5), trials=np.uint8(0)).meets_target
    for bad in ({"trials": 2.0}, {"trials": -1}, {"seed": True}, {"target": 1.5}, {"target": np.bool_(True)}):
        with pytest.raises(relsim.RelsimError, match=f"{next(iter(bad))}: must be"):
            relsim.report.render(design, **bad)


def test_plan_chain_holds_python_numbers_and_refuses_arrays_naming_the_argument():
    plain = relsim.plan.plan_chain(25, 0.95, 0.9, miss=0.01)
    from_numpy = relsim.plan.plan_chain(np.int64(25), np.float64(0.95), np.float32(0.9), miss=np.array(0.01))
    assert repr(from_numpy).count("np.") == 0 and "array" not in repr(from_numpy)
    assert [type(getattr(from_numpy, k)) for k in ("steps", "target", "p", "miss")] == [int, float, float, float]
    assert plain.retries == from_numpy.retries == 3  # a S_2 = 0.9 (1 + q + q^2), q = 0.099: 0.997921 < 0.95**(1/25) = 0.997950
    for name, args in (("p", (25, 0.95, [0.9, 0.8])), ("steps", ([25, 10], 0.95, 0.9)),
                       ("target", (25, np.array([0.95]), 0.9))):
        with pytest.raises(relsim.RelsimError, match=f"^{name}: must be one number, got"):
            relsim.plan.plan_chain(*args)


# ------------------------------------------------------------- formulas: plain Python out, documented
def test_meets_target_gives_a_python_bool_for_numpy_numbers():
    for log_success, target, met in ((np.log(0.96), 0.95, True), (np.float32(np.log(0.9)), np.float64(0.95), False)):
        answer = formulas.meets_target(log_success, target)
        assert type(answer) is bool and answer is met  # 0.96 >= 0.95; 0.9 < 0.95


@pytest.mark.parametrize("name", [n for n in formulas.__all__ if n[0].islower()])
def test_every_formula_documents_its_parameters_returns_formula_and_an_example(name):
    doc = getattr(formulas, name).__doc__
    for section in ("Parameters\n    ----------", "Returns\n    -------", "Examples\n    --------", ".. math::"):
        assert section in doc, f"{name}: no {section.splitlines()[0]}"


# ------------------------------------------------------------- every public name is on an API page
def _api_directives() -> list[tuple[str, list[str] | None]]:
    """Each ``::: target`` of docs/api/*.md and the members it renders (None: all of them)."""
    import re
    from pathlib import Path

    out = []
    for page in sorted((Path(__file__).resolve().parents[1] / "docs" / "api").glob("*.md")):
        for block in re.split(r"^::: ", page.read_text(encoding="utf-8"), flags=re.M)[1:]:
            target, *lines = block.splitlines()
            options = "\n".join(line for line in lines if line.startswith("    "))
            found = re.search(r"members:\s*(.*)", options)
            if found is None:
                members = None
            elif found.group(1).strip() == "false":
                members = []
            elif found.group(1).strip().startswith("["):
                members = [m.strip() for m in found.group(1).strip()[1:-1].split(",")]
            else:
                members = re.findall(r"^\s+- (\w+)$", options, re.M)
            out.append((target.strip(), members))
    return out


def _rendered() -> set[int]:
    """The ids of every object the API pages render."""
    import importlib

    shown = set()
    for target, members in _api_directives():
        try:
            module = importlib.import_module(target)
        except ImportError:  # a function or class: module.name
            parent, _, name = target.rpartition(".")
            shown.add(id(getattr(importlib.import_module(parent), name)))
            continue
        names = getattr(module, "__all__", []) if members is None else members
        shown.update(id(getattr(module, name)) for name in names)
    return shown


@pytest.mark.parametrize("package", ["relsim.formulas", "relsim.plan", "relsim.evalstats", "relsim.plot",
                                     "relsim.report", "relsim.report.eval", "relsim.sweeps", "relsim.scenario",
                                     "relsim.errors", "relsim.results", "relsim.exact", "relsim.montecarlo",
                                     "relsim.timeline"])
def test_every_public_function_and_class_is_on_an_api_page(package):
    import importlib
    import inspect

    module = importlib.import_module(package)
    assert hasattr(module, "__all__"), f"{package} has no __all__"
    shown = _rendered()
    public = [n for n in module.__all__ if inspect.isclass(getattr(module, n)) or inspect.isfunction(getattr(module, n))]
    assert [n for n in public if id(getattr(module, n)) not in shown] == []


def test_the_compiled_models_take_a_mapping_as_the_engines_do():
    mapping = {"steps": 3, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1}}
    design = relsim.Scenario.from_dict(mapping)
    from_mapping, from_scenario = relsim.scenario.trial_model(mapping), relsim.scenario.trial_model(design)
    assert from_mapping.miss.tolist() == from_scenario.miss.tolist() == [0.1, 0.1, 0.1]
    assert relsim.scenario.trial_model(design) is from_scenario  # still cached
    timed = {**mapping, "timing": {"attempt": 8}}
    assert relsim.scenario.time_model(timed) is relsim.scenario.time_model(relsim.Scenario.from_dict(timed))
    with pytest.raises(relsim.RelsimError, match="scenario: must be"):
        relsim.scenario.trial_model("scenario.toml")


def test_a_sweep_axis_may_be_a_range_or_a_pandas_series_as_it_may_be_an_array():
    import pandas as pd

    base = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.05}, "retries": {"per_step": 1}}
    listed = relsim.sweep({"base": base, "axes": {"retries.per_step": [0, 1, 2], "p": [0.9, 0.95]}})
    for budgets, ps in ((range(3), pd.Series([0.9, 0.95])), (np.arange(3), pd.Index([0.9, 0.95]))):
        frame = relsim.sweep({"base": base, "axes": {"retries.per_step": budgets, "p": ps}})
        pd.testing.assert_frame_equal(frame, listed)
    with pytest.raises(relsim.RelsimError, match="axes.p: must be a non-empty list of values"):
        relsim.sweep({"base": base, "axes": {"p": 0.9}})


def test_a_workloads_replication_values_are_python_floats():
    workload = {"steps": 2, "p": 0.9, "timing": {"attempt": 5.0},
                "fleet": {"arrivals": "poisson", "rate_per_hour": 60.0, "tasks": 50}}
    outcome = relsim.simulate_timeline(workload, replications=2, seed=1)
    kinds = {type(v) for column in outcome.replication_values.values() for v in column}
    assert kinds <= {float, type(None)} and float in kinds
    assert "np." not in repr(outcome.replication_values)
    success = outcome.replication_values["success"]
    assert outcome.success == pytest.approx(sum(success) / len(success), rel=1e-12)  # the mean of the runs


@pytest.mark.parametrize("name", ["retries", "total", "allocation", "verifier", "p", "checkpoints",
                                  "samples", "escalation", "solve", "plan_chain"])
def test_every_planner_documents_its_parameters_and_what_it_returns(name):
    doc = getattr(relsim.plan, name).__doc__
    for section in ("Parameters\n    ----------\n    scenario : Scenario or mapping" if name != "plan_chain"
                    else "Parameters\n    ----------", "Returns\n    -------", "Examples\n    --------"):
        assert section in doc, f"{name}: no {section.splitlines()[0]}"


@pytest.mark.parametrize("name", [n for n in relsim.plot.__all__ if callable(getattr(relsim.plot, n))])
def test_every_plot_documents_its_parameters_and_the_axes_it_returns(name):
    doc = getattr(relsim.plot, name).__doc__
    assert "Parameters\n    ----------" in doc and "ax : matplotlib Axes, optional" in doc
    assert "Returns\n    -------\n    matplotlib.axes.Axes" in doc


@pytest.mark.parametrize("path", ["evalstats.tasks_needed", "evalstats.paired_power",
                                  "evalstats.minimum_detectable_effect", "evalstats.verifier_from_audit",
                                  "report.render", "report.write", "report.eval.render",
                                  "report.eval.markdown", "report.eval.write_report"])
def test_power_and_report_functions_document_parameters_and_returns(path):
    import importlib

    module, _, name = f"relsim.{path}".rpartition(".")
    doc = getattr(importlib.import_module(module), name).__doc__
    assert "Parameters\n    ----------" in doc and "Returns\n    -------" in doc


# ------------------------------------------------------------- results read well in a notebook
def test_a_report_prints_its_summary_and_shows_its_page_in_a_notebook():
    import html
    import re

    report = relsim.report.render({"steps": 5, "p": 0.9, "target": 0.5}, trials=0)
    shown = repr(report)
    assert len(report.html) > 50_000 and len(shown) < 2_000  # the page was printed whole (150 KB)
    assert "<svg" not in shown and "Section(id='design', title='The design'" in shown
    assert "meets_target=True" in shown  # 0.9**5 = 0.59 >= 0.5
    frame = report._repr_html_()
    page = re.fullmatch(r'<iframe srcdoc="([^"]*)"[^>]*></iframe>', frame)
    assert page is not None and html.unescape(page.group(1)) == report.html


def test_a_file_name_given_as_the_scenario_is_refused_saying_how_to_read_it():
    from pathlib import Path

    for given in ("scenarios/lesson_25_steps.toml", Path("scenarios/lesson_25_steps.toml")):
        for engine in (relsim.evaluate, relsim.plan.retries, relsim.plan.levers):
            with pytest.raises(relsim.RelsimError, match=r"^scenario: must be a relsim.Scenario or a mapping, "
                               r"got the \w+ 'scenarios/lesson_25_steps.toml' \(read a scenario file with "
                               r"relsim.Scenario.from_toml\)$"):
                engine(given)
    assert relsim.evaluate(relsim.Scenario.from_toml(Path("scenarios/lesson_25_steps.toml"))).success == pytest.approx(
        0.975298, abs=1e-6)  # the lesson: (0.9 S_2)**25 = 0.999**25


# ------------------------------------------------------------- 0-d arrays are the numbers they hold
def test_a_zero_dimensional_array_is_the_number_it_holds():
    plain = {"steps": 25, "p": 0.9, "target": 0.95, "verifier": {"miss": 0.0}, "retries": {"per_step": 2}}
    held = {"steps": np.array(25), "p": np.array(0.9), "target": np.asarray(0.95),
            "verifier": {"miss": np.array(0.0)}, "retries": {"per_step": np.array(2)}}
    assert relsim.Scenario.from_dict(held) == relsim.Scenario.from_dict(plain)  # was a TypeError
    assert relsim.Verifier(miss=np.array(0.1)) == relsim.Verifier(miss=0.1)
    assert json.dumps(relsim.Scenario.from_dict(held).to_dict()) == json.dumps(relsim.Scenario.from_dict(plain).to_dict())
    assert relsim.plan.retries(plain, np.array(0.99)).value == relsim.plan.retries(plain, 0.99).value == 3
    same = relsim.simulate(plain, np.array(2000), seed=np.array(7))
    assert same.to_dict() == relsim.simulate(plain, 2000, seed=7).to_dict()
    with pytest.raises(relsim.RelsimError, match=r"^trials: must be an integer in 1\.\.2\*\*62"):
        relsim.simulate(plain, np.array(2**63 - 1))
    with pytest.raises(relsim.RelsimError, match=r"^p: must be one value or a list of one value per step"):
        relsim.Scenario.from_dict({**plain, "steps": 2, "p": np.array([[0.9, 0.8]])})  # not a 0-d array


@pytest.mark.parametrize("name", ["retries", "total", "allocation", "verifier", "p", "checkpoints", "samples",
                                  "escalation", "solve", "retries_with_confidence", "plausible_worlds",
                                  "with_audit", "with_fit", "levers", "curve", "resources"])
def test_every_planner_is_annotated_as_taking_a_mapping(name):
    import inspect

    annotation = inspect.signature(getattr(relsim.plan, name)).parameters["scenario"].annotation
    assert "Mapping" in str(annotation), f"{name}: scenario: {annotation}"
