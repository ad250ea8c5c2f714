"""Regression tests from a correctness review of the trial statistics and the sweeps; each
expected value is counted by hand from the table in the test."""

import warnings

import numpy as np
import pandas as pd

from relsim.evalstats import analyze


def _quiet_analyze(trials, ks):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return analyze(trials, ks)


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
