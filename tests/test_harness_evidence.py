"""``relsim analyze --labels``: the grader audit beside the harness's own numbers (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relsim.cli import main

ROOT = Path(__file__).resolve().parent.parent
TRIALS = ROOT / "examples" / "harness" / "exercise1.csv"
LABELS = ROOT / "docs" / "examples" / "grader_labels.csv"


def _analyze(capsys, *extra: str) -> tuple[int, str]:
    status = main(["analyze", str(TRIALS), "--labels", str(LABELS), *extra])
    return status, capsys.readouterr().out


def test_the_harness_pass_rate_is_corrected_for_the_audited_grader(capsys):
    status, out = _analyze(capsys, "--json")
    data = json.loads(out)
    assert status == 0
    audit, judged = data["audit"], data["audit"]["judged"]
    # the judged verdicts are the harness's trials: its pass rate over every trial
    trials = TRIALS.read_text(encoding="utf-8").splitlines()[1:]
    passed = sum(line.split(",")[2].strip() in ("1", "true") for line in trials)
    assert judged["verdicts"] == len(trials) and judged["pass_rate"]["estimate"] == pytest.approx(passed / len(trials))
    # Rogan and Gladen's correction, by hand: (p - miss) / (1 - miss - false_reject)
    miss, false_reject = audit["miss"]["estimate"], audit["false_reject"]["estimate"]
    by_hand = (passed / len(trials) - miss) / (1.0 - miss - false_reject)
    assert judged["corrected"]["estimate"] == pytest.approx(min(1.0, max(0.0, by_hand)), abs=1e-12)
    low, high = judged["corrected"]["ci"]
    assert low < judged["corrected"]["estimate"] < high
    # the audit's counts are the labels file's
    labels = LABELS.read_text(encoding="utf-8").splitlines()
    assert audit["labels"] == len(labels) - 1


def test_the_audit_is_in_the_text_and_the_report(capsys, tmp_path):
    status, out = _analyze(capsys)
    assert status == 0 and "grader audit" in out and "pass rate corrected" in out
    page = tmp_path / "report.html"
    status, _ = _analyze(capsys, "--report", str(page))
    html = page.read_text(encoding="utf-8")
    assert status == 0 and 'id="audit"' in html and "pass rate corrected for the grader" in html
    markdown = tmp_path / "report.md"
    _analyze(capsys, "--report", str(markdown))
    assert "Grader audit" in markdown.read_text(encoding="utf-8")


def test_labels_that_are_not_a_labels_file_are_one_line(capsys, tmp_path):
    bad = tmp_path / "labels.csv"
    bad.write_text("verdict,label\n1,2\n", encoding="utf-8")
    status = main(["analyze", str(TRIALS), "--labels", str(bad)])
    err = capsys.readouterr().err
    assert status == 2 and "line 2: label: must be 0/1 or true/false" in err
    assert len(err.strip().splitlines()) == 1
