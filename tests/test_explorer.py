"""The explorer of a uniform verified chain: in the report page (a real headless Chromium moves
its sliders) and as a notebook widget, each showing what ``relsim.formulas`` gives.

The browser test drives the operating system's Chromium (``chromium-headless-shell`` or
``chromium``, found as tests/test_report.py finds it) through playwright's Python API with
``executable_path``: playwright downloads no browser. It moves sliders as a person does (the
keyboard on a focused slider, the mouse on its track) and reads the numbers the page shows.
The expected numbers are computed here from :mod:`relsim.formulas` directly, not from the
explorer's own Python. A negative control feeds the same check a page whose script is wrong
by one power of the step success, and the check must reject it.
"""

from __future__ import annotations

import re
import pytest

from relsim import formulas
from relsim.report import explorer, render

DIGITS = explorer.DIGITS


def expected(p: float, steps: int, retries: int, miss: float, false_reject: float,
             target: float) -> dict[str, str]:
    """The numbers the explorer must show, from relsim.formulas, as the page prints them."""
    step = formulas.verified_step(p, retries, miss, false_reject).success
    return {
        "success": f"{formulas.compound(step, steps):.{DIGITS}f}",
        "ceiling": f"{formulas.compound(formulas.verified_ceiling(p, miss, false_reject), steps):.{DIGITS}f}",
        "required": f"{formulas.required_step_success(target, steps):.{DIGITS}f}",
        "step": f"{step:.{DIGITS}f}",
    }


# ------------------------------------------------------------------------- the page itself
@pytest.mark.slow
def test_the_section_starts_where_the_design_is():
    report = render({"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 3},
                     "target": 0.95}, trials=0)
    section = report.html.split('<section id="explorer">', 1)[1].split("</section>", 1)[0]
    values = dict(re.findall(r'name="(\w+)" min="[^"]*" max="[^"]*" step="[^"]*" value="([^"]*)"', section))
    assert values == {"p": "0.900", "steps": "25", "retries": "3", "miss": "0.100",
                      "false_reject": "0.000", "target": "0.950"}
    shown = dict(re.findall(r'<output id="explore-(success|ceiling|required|step)">([^<]*)</output>', section))
    assert shown == expected(0.9, 25, 3, 0.1, 0.0, 0.95)
    assert shown["success"] == "0.757383"  # docs/model.md section 5, R2
    assert "this design is such a chain" in section
    # a design the closed form cannot see in full says what it ignores
    other = render({"steps": 4, "p": [0.9, 0.8, 0.9, 0.9], "checkpoints": {"final": True}},
                   trials=0).html
    assert "ignores what the closed form cannot see: steps that differ in p, checkpoints" in other


def test_numbers_are_the_formulas():
    for args in [(0.9, 25, 2, 0.0, 0.0, 0.95), (0.85, 10, 3, 0.2, 0.05, 0.9), (1.0, 1, 0, 1.0, 0.0, 1.0),
                 (0.0, 5, 4, 0.5, 0.5, 0.5), (0.6, 100, 10, 0.0, 1.0, 0.99)]:
        shown = {k: f"{v:.{DIGITS}f}" for k, v in explorer.numbers(*args).items()}
        assert shown == expected(*args)


# ------------------------------------------------------------------------ a real browser
def _launch(playwright):
    from test_report import _browser  # the OS Chromium, as the report's browser test finds it

    return playwright.chromium.launch(executable_path=_browser(), args=["--no-sandbox"])


def _state(page) -> tuple[dict[str, float], dict[str, str]]:
    """The sliders' values and the numbers shown, as a person reads them off the page."""
    values = {}
    for slider in explorer.SLIDERS:
        text = page.input_value(f"#explore-{slider.name}")
        assert page.text_content(f"#explore-{slider.name}-value") == text  # the readout follows
        values[slider.name] = int(text) if slider.integer else float(text)
    shown = {key: page.text_content(f"#explore-{key}") for key in explorer.SHOWN}
    return values, shown


def _moves(page) -> list[tuple[dict[str, float], dict[str, str]]]:
    """Move the sliders as a person would, and read the page after each move."""
    states = [_state(page)]
    page.focus("#explore-retries")
    page.keyboard.press("ArrowLeft")  # 3 -> 2 retries
    states.append(_state(page))
    page.focus("#explore-miss")
    for _ in range(20):
        page.keyboard.press("ArrowRight")  # 0.1 -> 0.12
    states.append(_state(page))
    box = page.locator("#explore-p").bounding_box()
    page.mouse.click(box["x"] + 0.93 * box["width"], box["y"] + box["height"] / 2)  # p near 0.97
    states.append(_state(page))
    page.focus("#explore-steps")
    page.keyboard.press("End")  # the longest chain
    states.append(_state(page))
    page.focus("#explore-false_reject")
    page.keyboard.press("PageUp")
    states.append(_state(page))
    page.focus("#explore-target")
    page.keyboard.press("Home")
    states.append(_state(page))
    return states


@pytest.mark.slow
def test_moving_a_slider_shows_what_the_formulas_give(tmp_path):
    from playwright.sync_api import sync_playwright

    report = render({"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 3},
                     "target": 0.95}, trials=0)
    path = tmp_path / "report.html"
    path.write_text(report.html, encoding="utf-8")
    tampered = tmp_path / "tampered.html"  # negative control: one power too many
    tampered.write_text(report.html.replace("Math.pow(step, n)", "Math.pow(step, n + 1)"), encoding="utf-8")
    assert tampered.read_text(encoding="utf-8") != report.html
    with sync_playwright() as playwright:
        browser = _launch(playwright)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 1400})
            messages: list[str] = []
            page.on("console", lambda message: messages.append(message.text))
            page.on("pageerror", lambda error: messages.append(str(error)))
            page.goto(path.resolve().as_uri())
            states = _moves(page)
            page.goto(tampered.resolve().as_uri())
            wrong = _moves(page)
        finally:
            browser.close()
    assert messages == []
    # every move changed something, and the page shows the formulas' numbers for the values
    # its sliders hold
    assert all(a[0] != b[0] for a, b in zip(states, states[1:]))
    for values, shown in states:
        assert shown == expected(**values), values
    assert states[1][0]["retries"] == 2 and states[2][0]["miss"] == pytest.approx(0.12)
    assert states[3][0]["p"] > 0.95 and states[4][0]["steps"] == 100 and states[6][0]["target"] == 0.5
    assert len({shown["success"] for _, shown in states}) >= 5  # the success moved
    # the negative control: the same check rejects the wrong page
    assert any(shown != expected(**values) for values, shown in wrong)


# ------------------------------------------------------------------------- the notebook face
def test_the_widget_recomputes_when_a_slider_moves():
    box = explorer.widget(p=0.9, steps=25, retries=3, miss=0.1, target=0.95)
    assert set(box.sliders) == {s.name for s in explorer.SLIDERS}

    def shown() -> dict[str, str]:
        cells = re.findall(r"<td><b>([0-9.]+)</b></td>", box.shown.value)
        return dict(zip(explorer.SHOWN, cells))

    assert shown() == expected(0.9, 25, 3, 0.1, 0.0, 0.95)
    box.sliders["retries"].value = 1
    box.sliders["miss"].value = 0.02
    box.sliders["steps"].value = 40
    assert shown() == expected(0.9, 40, 1, 0.02, 0.0, 0.95)
    assert shown()["success"] != expected(0.9, 25, 3, 0.1, 0.0, 0.95)["success"]


def test_the_widget_refuses_bad_values():
    from relsim.errors import RelsimError

    with pytest.raises(RelsimError, match="^p: must be"):
        explorer.widget(p=1.5)
    with pytest.raises(RelsimError, match="^steps: must be"):
        explorer.widget(steps=0)
