"""The design-review report: one self-contained HTML file a reviewer reads top to bottom.

::

    relsim report SCENARIO.toml -o report.html [--target T] [--trials N] [--seed S]

The page holds the design as a table, its exact outcome and split, the target and what meets
it (the planner's ``retries``, ``verifier``, ``p`` and ``checkpoints`` answers, or where the
best lies when none does), the levers chart, the design over each lever's range (retries,
verifier, agent, checkpoint spacing: :func:`relsim.plan.curve`, the exact engine at every
value, with the ceiling of retries and the numbers under each figure), the compounding
context of uniform chains, an explorer of a uniform verified chain (sliders recomputing the
closed forms in the page: :mod:`relsim.report.explorer`), a Monte Carlo check against the
exact value and, when the scenario has time tables, a run in time (the split with timeouts and
crashes, durations, waits, utilisation, a Gantt chart). Figures are inline SVG drawn by
:mod:`relsim.plot`; the stylesheet and the explorer's script are inline; there is no external
script, font or image file, so it reads the same offline and prints cleanly.

Every figure of the design itself is computed for the scenario under review, so the numbers
of a figure are those of the tables beside it; the two figures of uniform chains (the
compounding curves and the explorer) say so, and the compounding curve of the design's
geometric-mean step success passes through the design's own success.

Sections are functions (:mod:`relsim.report._sections`); :data:`SECTIONS` lists them in
reading order and :func:`render` takes another tuple, so a section is added by one function.

The harness report of real trials (``relsim analyze ... --report``, ``relsim compare ...
--report``) is built on the same page, stylesheet and figures by :mod:`relsim.report.eval`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from relsim import checks
from relsim.report._html import Report, Section, page
from relsim.report._sections import SECTIONS, Context

__all__ = ["DEFAULT_TRIALS", "Report", "SECTIONS", "Context", "Section", "render", "write"]

#: Monte Carlo trials of the check when none are given (a few tenths of a second).
DEFAULT_TRIALS = 100_000

#: The design review's footnote, after "Made by relsim ... with <command>."
FOOTER = (
    "Exact numbers come from the exact engine; the Monte Carlo check uses the seed shown, so "
    "the run can be repeated. The model is described in docs/model.md."
)


def render(
    scenario: Any,
    *,
    source: str | None = None,
    target: float | None = None,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    command: str | None = None,
    sections: Sequence[Callable[[Context], Section | None]] = SECTIONS,
) -> Report:
    """Build the report of ``scenario``.

    Parameters
    ----------
    scenario : Scenario or mapping
    source : str, optional
        Where the scenario came from (a file name), shown on the page.
    target : float, optional
        In (0, 1]; default the scenario's ``target`` (none: the target section says so).
    trials : int
        Monte Carlo trials of the check, >= 0 (0 leaves the check out).
    seed : int
        Seed of the check, >= 0, shown on the page so the run can be repeated.
    command : str, optional
        The command line that made the report, shown in the footer.
    sections : sequence of callables
        The sections, in order (default :data:`SECTIONS`).

    Returns
    -------
    Report
        The page (``html``), its ``sections`` and ``figures`` and whether the design meets the
        target (``meets_target``; None without one); :func:`write` saves it.
    """
    from relsim.scenario import as_scenario

    design = as_scenario(scenario)
    if target is None:
        target = design.target
    else:  # numpy's numbers too (a target from an array), as the engines take them
        target = checks.in_range(target, "target", 0.0, 1.0, low_open=True, allowed="a number in (0, 1]")
    trials = checks.integer(trials, "trials", 0)
    seed = checks.integer(seed, "seed", 0)
    ctx = Context(
        scenario=design,
        source=source or "(built in Python)",
        target=None if target is None else float(target),
        trials=trials,
        seed=seed,
    )
    shown = tuple(s for s in (section(ctx) for section in sections) if s is not None)
    figures = tuple(name for s in shown for name in s.figures)
    title = design.name or (Path(source).stem if source else "scenario")
    html = page(
        title=f"relsim design review: {title}",
        heading=f"Design review: {title}",
        lead=_lead(ctx),
        sections=shown,
        command=command or "relsim.report.render",
        footer=FOOTER,
    )
    return Report(html=html, sections=shown, figures=figures, meets_target=ctx.meets_target,
                  time_targets=ctx.time_targets)


def write(report: Report, path: str | Path) -> Path:
    """Write ``report``'s page to ``path`` (UTF-8) and return the path.

    Parameters
    ----------
    report : Report
        What :func:`render` returned.
    path : str or Path
        The file to write (its folder must exist); an unwritable one is a ``RelsimError``.

    Returns
    -------
    Path
        The file written.
    """
    from relsim import checks
    from relsim.errors import RelsimError

    path = checks.output_file(path, "path")  # "" is no file (Path("") is the current folder)
    try:
        path.write_text(report.html, encoding="utf-8")
    except OSError as error:  # a path the user gave: bad input, not a bug
        raise RelsimError(f"{path}: cannot write: {error.strerror or error}") from None
    return path


def _lead(ctx: Context) -> str:
    s = ctx.scenario
    words = f"{s.steps} steps; exact success {ctx.exact.success:.4f}"
    if ctx.target is not None:
        words += f" against a target of {ctx.target:g} ({'met' if ctx.meets_target else 'not met'})"
    words += f"; cost per success {ctx.exact.cost_per_success:.4g}"
    if ctx.time_targets:  # the headline of a design with an SLA: its verdicts lead too
        words += "; in time: " + ", ".join(f"{key} {status}" for key, status in ctx.time_targets.items())
    return words + "."
