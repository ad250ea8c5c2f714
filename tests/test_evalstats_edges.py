"""relsim.evalstats at the edges of its input: numeric category codes with empty cells,
pandas' nullable columns, a rate with a negative denominator, power already met by two tasks.
Each expected value is counted by hand from the table in the test."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from relsim.evalstats import analyze


def _quiet_analyze(trials, ks):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analyze(trials, k=ks)


def test_numeric_category_codes_with_empty_cells(tmp_path):
    # failed trials: a1 (404), a2 (empty), b2 (500), c1 (404); the empty cell is
    # "uncategorized" and the codes read as written, not as floats
    path = tmp_path / "trials.csv"
    path.write_text(
        "task,trial,success,category\n"
        "a,1,0,404\na,2,0,\nb,1,1,\nb,2,0,500\nc,1,0,404\nc,2,1,\n",
        encoding="utf-8",
    )
    found = _quiet_analyze(path, [1]).categories
    assert {name: value["count"] for name, value in found.items()} == {
        "404": 2, "500": 1, "uncategorized": 1,
    }
    assert found["404"]["tasks"] == ["a", "c"]
    frame = pd.DataFrame({"task": list("aabbcc"), "trial": [1, 2] * 3,
                          "success": [0, 0, 1, 0, 0, 1],
                          "category": [404, np.nan, np.nan, 500, 404, np.nan]})
    found = _quiet_analyze(frame, [1]).categories
    assert {name: value["count"] for name, value in found.items()} == {
        "404": 2, "500": 1, "uncategorized": 1,
    }


def _smallest_tasks(delta, baseline, alpha, power):
    """Brute force over T of the two-sided paired t-test's power (scipy's noncentral t, one
    trial a task): P(|t'| > t_{1-alpha/2, T-1}), noncentrality sqrt(T) |D| / sd,
    sd^2 = P(1-P) + Q(1-Q)."""
    from scipy.stats import nct
    from scipy.stats import t as student

    other = baseline + delta
    sd = math.sqrt(baseline * (1 - baseline) + other * (1 - other))

    def achieved(tasks):
        critical = student.isf(alpha / 2, tasks - 1)
        shift = math.sqrt(tasks) * abs(delta) / sd
        return nct.sf(critical, tasks - 1, shift) + nct.cdf(-critical, tasks - 1, shift)

    tasks = 2
    while achieved(tasks) < power:
        tasks += 1
    return tasks


def test_tasks_needed_when_power_is_below_the_level():
    from relsim.evalstats import minimum_detectable_effect, tasks_needed

    # the usual design, as a control of the brute force itself
    assert tasks_needed(0.1, 0.5) == _smallest_tasks(0.1, 0.5, 0.05, 0.8)
    # a power below the level: any two tasks already have the power asked for
    assert _smallest_tasks(0.1, 0.5, 0.6, 0.2) == 2
    assert tasks_needed(0.1, 0.5, alpha=0.6, power=0.2) == 2
    assert minimum_detectable_effect(2, 0.5, alpha=0.6, power=0.2) < 1e-6


def test_rate_with_a_negative_denominator_keeps_its_estimate_inside():
    # per task a: 1 / -1, b: 1 / -2, c: 1 / -3; R = 3 / -6 = -0.5; u = (Y - R X) / mean(X) =
    # (-0.25, 0, 0.25), se^2 = 0.125 / (3 * 2); t(0.975, 2) = 4.302653 (tables)
    frame = pd.DataFrame({"task": list("abc"), "trial": 1, "success": [1, 0, 1],
                          "gain": [1.0, 1.0, 1.0], "spent": [-1.0, -2.0, -3.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = analyze(frame, k=[1], rates=["gain/spent"]).rates["gain/spent"]
    se = math.sqrt(0.125 / 6)
    assert found["estimate"] == pytest.approx(-0.5)
    assert found["se"] == pytest.approx(se)
    assert found["ci"][0] == pytest.approx(-0.5 - 4.302653 * se, abs=1e-6)
    assert found["ci"][1] == pytest.approx(-0.5 + 4.302653 * se, abs=1e-6)


def test_missing_cells_of_pandas_nullable_columns_are_empty():
    # trial b failed with no category (pd.NA in a "string" column): "uncategorized", as an
    # empty CSV cell is; trial d failed as "x"
    frame = pd.DataFrame({
        "task": list("abcd"), "trial": 1, "success": [1, 0, 1, 0],
        "category": pd.array(["x", pd.NA, "y", "x"], dtype="string"),
    })
    found = _quiet_analyze(frame, [1]).categories
    assert {name: value["count"] for name, value in found.items()} == {
        "x": 1, "uncategorized": 1,
    }
