r"""The explorer: sliders over a uniform verified chain, recomputing its closed forms at once.

A design review asks "what if": a better agent, a longer task, one more retry, a verifier that
misses less. The explorer answers for a **uniform verified chain** (docs/model.md section 2):
``steps`` identical steps, each attempt right with ``p``, a verifier that accepts a wrong
attempt with ``miss`` and rejects a right one with ``false_reject``, and ``retries`` retries
per step. With :math:`a = p(1-f)`, :math:`w = (1-p)m`, :math:`q = pf + (1-p)(1-m)`:

.. math::

    \text{step} = \frac{a}{a+w}\bigl(1 - q^{r+1}\bigr), \qquad
    \text{success} = \text{step}^{\,n}, \qquad
    \text{ceiling} = \Bigl(\frac{a}{a+w}\Bigr)^{n}, \qquad
    \text{required} = T^{1/n},

which are :func:`relsim.formulas.verified_step`, :func:`~relsim.formulas.verified_ceiling`,
:func:`~relsim.formulas.compound` and :func:`~relsim.formulas.required_step_success`
(:func:`numbers` calls them). It ignores what the closed forms ignore (steps that differ,
correlation, checkpoints, a task-wide budget), and says so on the page.

Two faces, one set of numbers:

* :func:`section`: the report's section, HTML sliders and one inline script (no server, no
  external resource) that computes the same expressions in the page;
* :func:`widget`: the same sliders as an ``ipywidgets`` box for a notebook (``pip install
  ipywidgets``; the ``notebooks`` extra has it), computing with :func:`numbers`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relsim import checks
from relsim.report._html import Section, esc

if TYPE_CHECKING:  # pragma: no cover
    from relsim.report._sections import Context

__all__ = ["SLIDERS", "Slider", "numbers", "section", "settings", "widget"]

#: Digits after the point of every number the explorer shows (page and widget alike).
DIGITS = 6


@dataclass(frozen=True)
class Slider:
    """One slider: its ``name`` (the argument of :func:`numbers`), ``label``, range and
    ``step`` (a whole number for the integer sliders)."""

    name: str
    label: str
    low: float
    high: float
    step: float

    @property
    def integer(self) -> bool:
        return self.step == 1 and self.low == int(self.low)


#: The sliders in the order shown, with their default ranges (widened to hold the start).
SLIDERS = (
    Slider("p", "p: per-attempt success", 0.5, 1.0, 0.001),
    Slider("steps", "steps in the task", 1, 100, 1),
    Slider("retries", "retries per step", 0, 10, 1),
    Slider("miss", "miss: the verifier accepts a wrong attempt", 0.0, 0.5, 0.001),
    Slider("false_reject", "false_reject: it rejects a right attempt", 0.0, 0.5, 0.001),
    Slider("target", "target: end-to-end success wanted", 0.5, 0.999, 0.001),
)

#: What the explorer shows, in order: key of :func:`numbers` -> words.
SHOWN = {
    "success": "end-to-end success",
    "ceiling": "the verifier's ceiling (unlimited retries)",
    "required": "per-step success the target needs",
    "step": "each step's success",
}


def numbers(
    p: float, steps: int, retries: int, miss: float = 0.0, false_reject: float = 0.0,
    target: float = 0.95,
) -> dict[str, float]:
    """What the explorer shows for a uniform verified chain, from :mod:`relsim.formulas`.

    Returns
    -------
    dict
        ``step`` (one step's success, :math:`a S_r`), ``success`` (``step ** steps``),
        ``ceiling`` (:math:`(a/(a+w))^n`, what unlimited retries reach) and ``required``
        (:math:`T^{1/n}`, the per-step success the target needs).

    Examples
    --------
    The lesson's exercise: 25 steps at ``p = 0.9`` with 2 retries behind a perfect verifier.

    >>> {k: round(v, 6) for k, v in numbers(0.9, 25, 2, target=0.95).items()}
    {'step': 0.999, 'success': 0.975298, 'ceiling': 1.0, 'required': 0.99795}
    """
    from relsim import formulas

    steps = checks.integer(steps, "steps", 1)
    step = float(formulas.verified_step(p, retries, miss, false_reject).success)
    return {
        "step": step,
        "success": float(formulas.compound(step, steps)),
        "ceiling": float(formulas.compound(formulas.verified_ceiling(p, miss, false_reject), steps)),
        "required": float(formulas.required_step_success(target, steps)),
    }


def settings(ctx: "Context") -> dict[str, Any]:
    """Where the report's explorer starts: the design's steps and its mean ``p``, verifier
    rates (without a verifier, ``miss = 1``: everything is accepted) and largest per-step
    budget, rounded to the sliders' steps, and the review's target (0.95 without one)."""
    from relsim.scenario import trial_model

    model = trial_model(ctx.scenario)
    start: dict[str, Any] = {
        "p": float(model.p.mean()),
        "steps": ctx.scenario.steps,
        "retries": int(model.per_step.max()),
        # no verifier accepts everything: miss 1, false_reject 0 (the compiled model's own)
        "miss": float(model.miss.mean()),
        "false_reject": float(model.false_reject.mean()),
        "target": ctx.target if ctx.target is not None else 0.95,
    }
    for slider in SLIDERS:
        start[slider.name] = _snap(start[slider.name], slider)
    return start


def section(ctx: "Context") -> Section:
    """The report's explorer: sliders and the closed forms recomputed in the page."""
    start = settings(ctx)
    ignored = _ignored(ctx)
    rows = []
    for slider in SLIDERS:
        low, high = _range(slider, start[slider.name])
        rows.append(
            f'<div class="slider"><label for="explore-{slider.name}">{esc(slider.label)}</label>'
            f'<input type="range" id="explore-{slider.name}" name="{slider.name}" '
            f'min="{_text(low, slider)}" max="{_text(high, slider)}" step="{_text(slider.step, slider)}" '
            f'value="{_text(start[slider.name], slider)}">'
            f'<output id="explore-{slider.name}-value" for="explore-{slider.name}">'
            f"{_text(start[slider.name], slider)}</output></div>"
        )
    shown = numbers(**start)
    outputs = "".join(
        f'<tr><td>{esc(words)}</td><td class="num"><output id="explore-{key}">'
        f"{shown[key]:.{DIGITS}f}</output></td></tr>"
        for key, words in SHOWN.items()
    )
    body = [
        "<p>A <strong>uniform verified chain</strong>, in closed form (docs/model.md section "
        "2): every step alike, each attempt checked by the verifier and retried when rejected. "
        "Move a slider and the numbers follow, computed in this page (no server). It starts "
        "at this design's steps and mean values"
        + (f", and ignores what the closed form cannot see: {esc(ignored)}; the design's own "
           "numbers are the exact engine's, above" if ignored else "; this design is such a chain")
        + ".</p>",
        f'<div class="explorer" id="explore-sliders">{"".join(rows)}</div>',
        '<div class="scroll"><table class="explorer-out"><thead><tr><th>uniform chain</th>'
        f"<th>value</th></tr></thead><tbody>{outputs}</tbody></table></div>",
        f"<script>\n{SCRIPT}\n</script>",
    ]
    return Section("explorer", "Explore: a uniform verified chain", "\n".join(body))


def widget(
    p: float = 0.9, steps: int = 25, retries: int = 2, miss: float = 0.0,
    false_reject: float = 0.0, target: float = 0.95,
) -> Any:
    """The explorer as a notebook widget: the report's sliders, computing with :func:`numbers`.

    Needs ``ipywidgets`` (the ``notebooks`` extra). Returns an ``ipywidgets.VBox`` whose
    ``sliders`` attribute maps each slider's name to its widget and whose ``shown`` attribute
    is the HTML widget of the numbers (``shown.value``); moving a slider, by hand or by
    setting its ``value``, recomputes them.
    """
    try:
        import ipywidgets
    except ImportError:  # pragma: no cover - the notebooks extra installs it
        from relsim.errors import RelsimError

        raise RelsimError(
            "widget: needs ipywidgets (pip install ipywidgets, or the 'notebooks' extra); "
            "the HTML report has the same explorer without it"
        ) from None
    start: dict[str, Any] = {"p": p, "steps": steps, "retries": retries, "miss": miss,
             "false_reject": false_reject, "target": target}
    numbers(**start)  # bad values are refused before any widget is made
    sliders: dict[str, Any] = {}
    for slider in SLIDERS:
        low, high = _range(slider, start[slider.name])
        kind = ipywidgets.IntSlider if slider.integer else ipywidgets.FloatSlider
        extra = {} if slider.integer else {"readout_format": ".3f"}
        sliders[slider.name] = kind(
            value=start[slider.name], min=low, max=high, step=slider.step,
            description=slider.name, continuous_update=True, **extra,
        )
    shown = ipywidgets.HTML()

    def update(_: Any = None) -> None:
        values = numbers(**{name: s.value for name, s in sliders.items()})
        shown.value = "<table>" + "".join(
            f"<tr><td>{esc(words)}</td><td><b>{values[key]:.{DIGITS}f}</b></td></tr>"
            for key, words in SHOWN.items()
        ) + "</table>"

    for s in sliders.values():
        s.observe(update, names="value")
    update()
    box = ipywidgets.VBox([*sliders.values(), shown])
    box.sliders = sliders
    box.shown = shown
    return box


# ------------------------------------------------------------------------------ helpers
def _snap(value: float, slider: Slider) -> float:
    """``value`` on the slider's grid (a browser moves a range input's value onto it)."""
    if slider.integer:
        return int(round(value))
    decimals = max(0, -int(math.floor(math.log10(slider.step))))
    return round(round(value / slider.step) * slider.step, decimals)


def _range(slider: Slider, value: float) -> tuple[float, float]:
    """The slider's range, widened to hold ``value``."""
    low, high = min(slider.low, value), max(slider.high, value)
    if slider.integer:
        return int(low), int(high)
    return _snap(low, slider), _snap(high, slider)


def _text(value: float, slider: Slider) -> str:
    return str(int(value)) if slider.integer else f"{value:.3f}"


def _ignored(ctx: "Context") -> str:
    """What this design has that a uniform chain does not, in words ("" for none)."""
    from relsim.scenario import trial_model

    s, model = ctx.scenario, trial_model(ctx.scenario)
    words = []
    for name, values in (("p", model.p), ("verifier", model.miss), ("verifier", model.false_reject),
                         ("retries", model.per_step)):
        if (values != values[0]).any() and f"steps that differ in {name}" not in words:
            words.append(f"steps that differ in {name}")
    if model.has_total:
        words.append("the task-wide retry budget")
    if s.checkpoints is not None:
        words.append("checkpoints and rollbacks")
    if model.has_random_effects or model.has_confusion:
        words.append("correlated errors")
    # docs/model.md section 8: the explorer starts from class 0's rung 0 (the compiled p)
    for present, name in ((model.classes > 1, "a mixture of task classes"),
                          (model.rungs > 0, "an escalation ladder"),
                          (model.samples > 1, "samples per attempt"),
                          (model.modes > 0, "failure modes"),
                          (model.fault > 0.0, "attempt faults")):
        if present:
            words.append(name)
    return ", ".join(words)


#: The page's script: the same expressions as :func:`numbers`, in the order numpy computes
#: them (relsim.formulas' _verifier_rates and _step), so a slider shows what the formulas give.
SCRIPT = """(function () {
  "use strict";
  var names = %s, digits = %d;
  function value(name) { return parseFloat(document.getElementById("explore-" + name).value); }
  function show(id, x) { document.getElementById("explore-" + id).textContent = x.toFixed(digits); }
  function update() {
    var p = value("p"), n = value("steps"), r = value("retries"), m = value("miss"),
        f = value("false_reject"), target = value("target");
    var a = p * (1 - f), w = (1 - p) * m, q = p * f + (1 - p) * (1 - m), accept = a + w;
    var ceiling = accept > 0 ? a / accept : 0, tries = r + 1;
    var reached = q <= 0.5 ? 1 - Math.pow(q, tries) : -Math.expm1(tries * Math.log1p(-accept));
    var step = ceiling * reached;
    show("step", step);
    show("success", Math.pow(step, n));
    show("ceiling", Math.pow(ceiling, n));
    show("required", Math.exp(Math.log(target) / n));
    names.forEach(function (name) {
      var input = document.getElementById("explore-" + name);
      document.getElementById("explore-" + name + "-value").textContent = input.value;
    });
  }
  names.forEach(function (name) {
    document.getElementById("explore-" + name).addEventListener("input", update);
  });
  update();
})();""" % (json.dumps([s.name for s in SLIDERS]), DIGITS)
