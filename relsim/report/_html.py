"""The page around the sections: one HTML template, its stylesheet, and small builders.

Every report of relsim (the design review, the harness report) is a :class:`Report` of
:class:`Section` s laid out by :func:`page`, its tables built by :func:`table` and its
figures by :func:`svg`, so all share one stylesheet and one way of writing SVG.

Everything the page needs is inside it: the stylesheet is inline, the figures are inline
SVG, the fonts are the reader's own (a system font stack), and the one script (the design
review's explorer, :mod:`relsim.report.explorer`) is inline and fetches nothing. So the file
reads the same offline, in a mail attachment or on paper.
"""

from __future__ import annotations

import html
import io
import math
import re
import string
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Section:
    """One part of a report: an anchor ``id``, a ``title``, an HTML ``body`` and the names
    of the ``figures`` it holds."""

    id: str
    title: str
    body: str = field(repr=False)  # HTML, often with inline SVG: too long to print
    figures: tuple[str, ...] = ()


@dataclass(frozen=True)
class Report:
    """A rendered report: the page and what it holds.

    Attributes
    ----------
    html : str
        The whole page.
    sections : tuple of Section
        The sections shown, in order.
    figures : tuple of str
        The names of the figures on the page (each an inline ``<svg>`` inside
        ``<figure data-figure="name">``).
    meets_target : bool or None
        Whether the design's exact success reaches the target; None without a target (and
        for a report of trial data).
    time_targets : dict or None
        The scenario's targets in time (``[targets]``), by key, each ``"met"``, ``"missed"``
        or ``"undecided"`` as the report's run in time judged it; None when it judged none.
    """

    html: str = field(repr=False)  # the whole page (100 KB and more): shown by _repr_html_
    sections: tuple[Section, ...]
    figures: tuple[str, ...]
    meets_target: bool | None
    time_targets: dict[str, str] | None = None

    def _repr_html_(self) -> str:
        """The page in a notebook: inside an iframe, so its stylesheet and script stay its own."""
        return (f'<iframe srcdoc="{html.escape(self.html, quote=True)}" title="relsim report" '
                'style="width: 100%; height: 640px; border: 1px solid #ddd"></iframe>')

    def to_dict(self) -> dict[str, Any]:
        """The report's summary (not the page): sections, figures, meets_target, time_targets."""
        return {
            "sections": [s.id for s in self.sections],
            "figures": list(self.figures),
            "meets_target": self.meets_target,
            "time_targets": None if self.time_targets is None else dict(self.time_targets),
        }

    def to_frame(self) -> "pd.DataFrame":
        """One row per section: ``id``, ``title`` and its ``figures`` (a list)."""
        import pandas as pd

        return pd.DataFrame(
            [{"id": s.id, "title": s.title, "figures": list(s.figures)} for s in self.sections],
            columns=["id", "title", "figures"],
        )

PAGE = string.Template(
    """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="relsim $version">
<title>$title</title>
<style>
$style
</style>
</head>
<body>
<header>
<h1>$heading</h1>
<p class="lead">$lead</p>
<nav aria-label="sections"><ol>
$toc
</ol></nav>
</header>
<main>
$sections
</main>
<footer>
<p>Made by relsim $version with <code>$command</code>. $footer</p>
</footer>
</body>
</html>
"""
)

STYLE = """
:root { --ink: #1d2430; --muted: #5b6576; --rule: #d7dce3; --good: #1a7f37; --bad: #b42318; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 60rem; padding: 1.5rem 1.25rem 3rem; color: var(--ink);
       font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       background: #fff; }
h1 { font-size: 1.8rem; margin: 0 0 .25rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 .6rem; padding-top: .6rem; border-top: 2px solid var(--rule); }
p.lead { color: var(--muted); margin: 0 0 1rem; }
nav ol { margin: 0; padding-left: 1.4rem; columns: 2; }
table { border-collapse: collapse; margin: .6rem 0 1rem; width: 100%; font-size: .92rem; }
.scroll { overflow-x: auto; }
th, td { border-bottom: 1px solid var(--rule); padding: .3rem .5rem; text-align: left;
         vertical-align: top; }
th { background: #f3f5f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.wrap { word-break: break-word; }
td:first-child { white-space: nowrap; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .9em; }
figure { margin: 1rem 0 1.4rem; }
figure svg { display: block; width: 100%; max-width: 46rem; height: auto; margin: 0 auto; }
figcaption { color: var(--muted); font-size: .9rem; text-align: center; margin-top: .3rem; }
.verdict { font-weight: 600; padding: .5rem .75rem; border-left: 4px solid var(--rule);
           background: #f7f8fa; }
.good { color: var(--good); border-left-color: var(--good); }
.bad { color: var(--bad); border-left-color: var(--bad); }
.note { color: var(--muted); font-size: .9rem; }
details.numbers { margin: -.8rem 0 1.2rem; font-size: .9rem; }
details.numbers summary { color: var(--muted); cursor: pointer; }
.explorer { margin: .6rem 0; }
.explorer .slider { display: grid; grid-template-columns: minmax(12rem, 22rem) 1fr 4.5rem;
                    gap: .75rem; align-items: center; padding: .15rem 0; }
.explorer input[type=range] { width: 100%; }
.explorer output { font-variant-numeric: tabular-nums; text-align: right; }
table.explorer-out { max-width: 34rem; }
footer { margin-top: 3rem; color: var(--muted); font-size: .85rem; border-top: 1px solid var(--rule); }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  nav { display: none; }
  h2 { break-after: avoid; }
  figure, table { break-inside: avoid; }
  .scroll { overflow: visible; }
  details.numbers > :not(summary) { display: none; }
}
"""


def esc(value: Any) -> str:
    """``value`` as HTML text (every user string passes through here)."""
    return html.escape(str(value), quote=True)


def decimals_for(baseline: float) -> int | None:
    """Decimals that show ``baseline`` to 6 significant figures, for a column and its changes
    in the baseline's units to line up on the point (None: no finite, nonzero baseline to scale
    by, so each number gets its own 6 figures). `relsim levers` and the report's levers table
    share it."""
    if not math.isfinite(baseline) or baseline == 0:
        return None
    return max(0, 5 - math.floor(math.log10(abs(baseline))))


def number(value: Any, digits: int = 6) -> str:
    """A number for a table: ``digits`` significant figures, ``inf`` / ``-`` when not finite."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    value = float(value)
    if math.isnan(value):
        return "-"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}g}"


def scenario_value(value: Any) -> str:
    """A scenario value as the file would write it: a list with repeats run-length coded (30
    steps of ``p`` read ``[0.97 \u00d711, 0.8, 0.97 \u00d711, 0.75, 0.97 \u00d76]``), a table
    inline (``{ median = 90, p95 = 450 }``, not Python's ``{'median': 90.0, ...}``)."""
    if isinstance(value, (list, tuple)):
        runs: list[list[Any]] = []
        for item in value:
            if runs and runs[-1][0] == item:
                runs[-1][1] += 1
            else:
                runs.append([item, 1])
        parts = [scenario_value(item) + (f" \u00d7{count}" if count > 1 else "")
                 for item, count in runs]
        return "[" + ", ".join(parts) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {scenario_value(item)}" for key, item in value.items()) + " }"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.12g}"
    if value is None:
        return "none"
    return str(value)


def interval(bounds: Sequence[Any], digits: int = 6) -> str:
    """An interval ``(low, high)`` as ``[low, high]`` (:func:`number` each), or ``-`` when it
    is undefined."""
    low, high = bounds
    if number(low) == "-" or number(high) == "-":
        return "-"
    return f"[{number(low, digits)}, {number(high, digits)}]"


def table(
    header: Sequence[str],
    rows: Iterable[Sequence[Any]],
    numeric: Sequence[bool] | None = None,
    digits: int = 6,
) -> str:
    """An HTML table; cells are escaped, numbers formatted by :func:`number` to ``digits``
    significant figures (a text cell in a numeric column, such as an :func:`interval`, is
    shown as it is, aligned as a number)."""
    numeric = list(numeric) if numeric is not None else [False] * len(header)
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for cell, is_number in zip(row, numeric):
            if is_number:
                shown = cell if isinstance(cell, str) else number(cell, digits)
                cells.append(f'<td class="num">{esc(shown)}</td>')
            else:
                cells.append(f'<td class="wrap">{esc(cell)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    # in a box that scrolls sideways: a wide table on a narrow screen stays readable
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def svg(figure: "Figure", name: str, caption: str) -> str:
    """``figure`` as an inline ``<figure>`` holding its SVG (:func:`svg_element`), with a
    caption."""
    return (
        f'<figure id="figure-{esc(name)}" data-figure="{esc(name)}">\n'
        f"{svg_element(figure, name, caption)}\n"
        f"<figcaption>{esc(caption)}</figcaption></figure>"
    )


def svg_element(figure: "Figure", name: str, caption: str) -> str:
    """``figure`` as one ``<svg>`` element, inline in a page or on its own as an SVG file.

    :data:`SVG_SETTINGS` is the one way relsim writes SVG: text stays text (selectable, crisp
    in print, no embedded font) and the ids are the same on every run. matplotlib numbers its
    ids per file (``figure_1``, ``patch_1``, ...), so every id and every reference to one is
    prefixed with ``name``: figures on one page share no id.
    """
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context(SVG_SETTINGS):
        figure.savefig(buffer, format="svg", metadata=_NO_METADATA)
    text = buffer.getvalue()
    body = text[text.index("<svg"):]  # the XML prolog and doctype are not allowed inline
    prefix = f"{name}-"
    body = re.sub(r'\bid="', f'id="{prefix}', body)
    body = body.replace("url(#", f"url(#{prefix}").replace('href="#', f'href="#{prefix}')
    return body.replace("<svg ", f'<svg role="img" aria-label="{esc(caption)}" ', 1)


#: matplotlib's SVG settings for every figure of a report (see :func:`svg_element`).
SVG_SETTINGS: dict[Any, Any] = {"svg.fonttype": "none", "svg.hashsalt": "relsim"}


#: No <metadata> block (it names matplotlib's web site and the date: neither belongs here).
_NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}


def new_figure(width: float = 7.0, height: float = 4.0) -> "Figure":
    """A matplotlib figure that is not registered with pyplot (nothing to close, no GUI)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def page(
    *, title: str, heading: str, lead: str, sections: Sequence[Section], command: str, footer: str
) -> str:
    """The whole page of a report: :data:`PAGE` around ``sections`` (text arguments are
    escaped here; section bodies are HTML already)."""
    import relsim

    toc = "\n".join(f'<li><a href="#{esc(s.id)}">{esc(s.title)}</a></li>' for s in sections)
    body = "\n".join(
        f'<section id="{esc(s.id)}">\n<h2>{esc(s.title)}</h2>\n{s.body}\n</section>'
        for s in sections
    )
    return PAGE.substitute(
        version=esc(relsim.__version__),
        title=esc(title),
        heading=esc(heading),
        lead=esc(lead),
        toc=toc,
        sections=body,
        style=STYLE,
        command=esc(command),
        footer=esc(footer),
    )
