"""The design review charts the design: every figure's numbers are those of the tables beside it.

For every ready scenario (``scenarios/*.toml``) the page is rendered and read back as a
reviewer reads it, from its tables alone: the outcome table's success, the design table's
keys, the levers table, the planner's rows of the target table and the numbers printed under
each figure of the ranges section (the curves the figures draw, :func:`relsim.plan.curve`).
The checks are that wherever two of them speak of the same design they give the same number:

- the design's point on each curve is the outcome table's success;
- each single lever of the levers table that sets one key is a point of that key's curve,
  with the levers table's success;
- each planner answer of the target table is a point of its curve with the target table's
  success; an answer of "none" names where success is best, and that is the curve's best;
- no point of the retries curve (nor any table's per-step-retries success) is above its
  ceiling, and an infeasible retries plan's ceiling is that ceiling;
- the compounding figure (uniform chains, context) passes through the outcome's success, and
  the explorer, started on a design that is a uniform chain, shows that success.

Scenarios without a target are reviewed against 0.9, so that every page has planner rows.
"""

from __future__ import annotations

import html as html_module
import re
from pathlib import Path

import pytest

import relsim
from relsim.report import render

SCENARIOS = sorted((Path(__file__).resolve().parents[1] / "scenarios").glob("*.toml"))
#: The target of a review of a scenario that sets none.
DEFAULT_TARGET = 0.9
#: The target table's planner rows: the words of the row -> the key of its curve.
PLANNER_ROWS = {
    "least retries per step": "retries.per_step",
    "largest verifier miss": "verifier.miss",
    "largest verifier false_reject": "verifier.false_reject",
    "least per-attempt success p": "p",
    "checkpoint spacing of least cost": "checkpoints.every",
}


# ---------------------------------------------------------------------- reading the page
def _text(cell: str) -> str:
    return html_module.unescape(re.sub(r"<[^>]+>", "", cell)).strip()


def _rows(fragment: str) -> list[list[str]]:
    """The body rows of the first table of ``fragment``, as cell texts."""
    body = fragment.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [[_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


def _section(page: str, name: str) -> str:
    return page.split(f'<section id="{name}">', 1)[1].split("</section>", 1)[0]


def _row_at(rows: list[list[str]], value: float) -> list[str]:
    """The curve's row whose value is ``value`` (as shown, to 6 significant digits)."""
    shown = f"{value:.6g}"
    found = [row for row in rows if re.fullmatch(r"[-+0-9.e]+", row[0])
             and f"{float(row[0]):.6g}" == shown]
    assert len(found) == 1, f"no single row at {value} in {[r[0] for r in rows]}"
    return found[0]


def _design_value(design: dict[str, str], key: str) -> float | None:
    """The design's value of ``key`` as the design table shows it (None: a per-step list)."""
    shown = design.get(key)
    if shown is not None:
        return None if shown.startswith("[") else float(shown)
    if key in ("verifier.miss", "verifier.false_reject"):
        return 0.0  # a verifier key left at its default
    if key == "retries.per_step":  # no per-step cap: the task-wide budget, or no retries
        total = design.get("retries.total")
        return float(total) if total is not None else 0.0
    return None


def _read(page: str) -> dict:
    design = {row[0]: row[1].split(" (the file's")[0] for row in _rows(_section(page, "design"))}
    outcome = {row[0]: row[1] for row in _rows(_section(page, "outcome"))}
    levers = _rows(_section(page, "levers")) if '<section id="levers">' in page else []
    target = _rows(_section(page, "target")) if "<tbody>" in _section(page, "target") else []
    curves = {}
    for key, fragment in re.findall(r'<details class="numbers" data-curve="([^"]+)">(.*?)</details>',
                                    _section(page, "ranges"), re.S):
        curves[html_module.unescape(key)] = _rows(fragment)
    return {"design": design, "success": outcome["success"], "levers": levers,
            "target": target, "curves": curves}


# ------------------------------------------------------------------------------ the test
@pytest.fixture(scope="module", params=SCENARIOS, ids=[p.stem for p in SCENARIOS])
def page(request):
    scenario = relsim.Scenario.from_toml(request.param)
    goal = scenario.target if scenario.target is not None else DEFAULT_TARGET
    report = render(scenario, source=str(request.param), target=goal, trials=0)
    return scenario, report.html, _read(report.html)


@pytest.mark.slow
def test_every_ready_scenario_is_reviewed():
    assert len(SCENARIOS) >= 13


@pytest.mark.slow
def test_the_design_on_each_curve_is_the_outcome_tables(page):
    scenario, _, seen = page
    if not scenario.classes:  # a mixture has no one p to vary
        assert "p" in seen["curves"]
    if scenario.verifier is not None:
        # with failure modes each mode has its own miss: no one verifier.miss to vary
        rates = {"verifier.false_reject"} | (set() if scenario.failure_modes else {"verifier.miss"})
        assert {"retries.per_step", *rates} <= set(seen["curves"])
    if scenario.sampling is not None:
        assert "sampling.n" in seen["curves"]
    if scenario.checkpoints is not None:
        assert "checkpoints.every" in seen["curves"]
    placed = 0
    for key, rows in seen["curves"].items():
        value = _design_value(seen["design"], key)
        marked = [row for row in rows if "the design" in row[3]]
        if value is None:  # a per-step list: the design is not on the curve, and none is marked
            assert marked == []
            continue
        row = _row_at(rows, value)
        assert marked == [row]
        assert row[1] == seen["success"], (key, row)
        placed += 1
    assert placed >= 1


@pytest.mark.slow
def test_each_single_lever_is_a_point_of_its_curve(page):
    _, _, seen = page
    checked = 0
    for row in seen["levers"]:
        lever, changes, success = row[0], row[1], row[2]
        match = re.fullmatch(r"([\w.]+) = ([-+0-9.e]+)", changes)
        if match is None or match.group(1) not in seen["curves"]:
            continue
        point = _row_at(seen["curves"][match.group(1)], float(match.group(2)))
        assert point[1] == success, (lever, point)
        checked += 1
    if seen["curves"].keys() & {"retries.per_step"}:
        assert checked >= 1  # one more retry per step, at least


@pytest.mark.slow
def test_each_planner_answer_is_a_point_of_its_curve(page):
    _, _, seen = page
    for row in seen["target"]:
        key = PLANNER_ROWS.get(row[0])
        if key is None or key not in seen["curves"] or row[4] == "not applicable":
            continue
        rows = seen["curves"][key]
        successes = [float(r[1]) for r in rows if r[1] != "-"]
        if row[1] != "none":
            point = _row_at(rows, float(row[1]))
            assert row[4] == "yes" and point[1] == row[2], (row, point)
            assert "planner (meets the target)" in point[3]
            continue
        # none meets the target: the row names where success is best, and it is the curve's
        # best (for retries, within 1e-6 of the ceiling, as the planner reports)
        where = re.search(rf"at {re.escape(key)} = ([-+0-9.e]+)", row[5])
        assert row[4] == "no" and where is not None, row
        point = _row_at(rows, float(where.group(1)))
        assert point[1] == row[2], (row, point)
        assert "none meets the target" in point[3]
        at_most = float(re.search(r"success is at most ([0-9.]+)", row[5]).group(1))
        assert float(point[1]) <= at_most + 5e-7
        assert at_most >= max(successes) - 5e-7, (row, max(successes))


@pytest.mark.slow
def test_no_retries_number_is_above_its_ceiling(page):
    _, _, seen = page
    rows = seen["curves"].get("retries.per_step")
    if rows is None:
        return
    ceiling = [row for row in rows if row[3].startswith("ceiling")]
    assert len(ceiling) == 1 and ceiling[0][0].endswith("and more")
    top = float(ceiling[0][1])
    assert all(float(row[1]) <= top for row in rows)
    # every table's number for a per-step budget: the levers' and the planner's
    for row in seen["levers"]:
        if row[1].startswith("retries.per_step = "):
            assert float(row[2]) <= top
    for row in seen["target"]:
        if row[0] == "least retries per step" and row[4] in ("yes", "no"):
            assert float(row[2]) <= top
            if row[4] == "no":  # an infeasible plan's ceiling is the curve's, as shown
                at_most = re.search(r"at most ([0-9.]+)", row[5]).group(1)
                assert float(at_most) == pytest.approx(top, abs=5e-7), (at_most, top)


@pytest.mark.slow
def test_the_context_curves_pass_through_the_design(page):
    scenario, html, seen = page
    success = float(seen["success"])
    compounding = html.split('data-figure="compounding"', 1)[1].split("</svg>", 1)[0]
    assert f"{scenario.steps} steps, {success:.6f} (exact engine)" in html_module.unescape(compounding)
    explorer = _section(html, "explorer")
    shown = re.search(r'<output id="explore-success">([0-9.]+)</output>', explorer).group(1)
    if "this design is such a chain" in explorer:
        assert shown == f"{success:.6f}"
    else:  # the explorer says what it ignores of this design
        assert "ignores what the closed form cannot see" in explorer


@pytest.mark.slow
def test_the_check_of_a_curve_catches_a_number_that_disagrees():
    # Negative control: a page whose retries curve is off by one unit in the 6th digit at
    # the design's value fails the design check.
    page = render({"steps": 10, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1}},
                  target=0.9, trials=0).html
    seen = _read(page)
    row = _row_at(seen["curves"]["retries.per_step"], 1.0)
    assert row[1] == seen["success"]
    wrong = f"{float(row[1]) + 1e-6:.6g}"
    tampered = page.replace(f'<td class="num">1</td><td class="num">{row[1]}</td>',
                            f'<td class="num">1</td><td class="num">{wrong}</td>', 1)
    assert tampered != page
    bad = _read(tampered)
    assert _row_at(bad["curves"]["retries.per_step"], 1.0)[1] != bad["success"]
