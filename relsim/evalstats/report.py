"""The harness report: an analysis or a comparison as one self-contained HTML file, or Markdown.

HTML: the headline table, pass@k and pass^k against k with their intervals (a figure, inline
SVG drawn by matplotlib's Agg/SVG backend), the per-task table sorted by p, the metrics,
rates and cost per success, failure categories and infrastructure noise; for a comparison,
every paired difference and the per-task success differences. No scripts, fonts, images or
style sheets are fetched: everything is in the file. Markdown: the same tables, with the
figure written next to it as ``<name>.svg``.

Every number comes from the result's ``to_dict()``, so the report shows what ``--json`` prints.
"""

from __future__ import annotations

import html
import io
import math
from pathlib import Path
from typing import Any, Sequence

from relsim.errors import invalid

__all__ = ["figure_svg", "render", "write_report"]

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 60em; color: #222; line-height: 1.4; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.7em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3em; }
.note { color: #555; font-size: 0.9em; }
"""


def _fmt(value: Any, digits: int = 4) -> str:
    """A number as text: ``n/a`` when undefined, ``inf`` when infinite."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if math.isinf(value):
            return "inf"
        return f"{value:.{digits}g}"
    return str(value)


def _ci(pair: Sequence[Any]) -> str:
    low, high = pair
    if low is None or high is None:
        return "n/a"
    return f"[{_fmt(low)}, {_fmt(high)}]"


def _sections(result: Any) -> list[tuple[str, list[str], list[list[str]], str]]:
    """The report's tables: (caption, header, rows, note)."""
    from relsim.evalstats.analysis import TrialAnalysis

    out = result.to_dict()
    sections = []
    if isinstance(result, TrialAnalysis):
        success = out["success"]
        rows = [["success (= pass@1)", _fmt(success["mean"]), _fmt(success["se"]),
                 _ci(success["ci"]), "0"]]
        for metric, label in (("pass_at_k", "pass@"), ("pass_hat_k", "pass^")):
            for k, row in out[metric].items():
                if k != "1":
                    rows.append([label + k, _fmt(row["estimate"]), _fmt(row["se"]),
                                 _ci(row["ci"]), str(row["excluded_tasks"])])
        sections.append((
            f"Headline: {out['tasks']} tasks, {out['trials']} trials",
            ["quantity", "estimate", "se", "95% CI", "excluded tasks"], rows,
            "Means over tasks of the unbiased per-task estimators; intervals clustered by task "
            f"({out['interval']['method']}), inside [0, 1].",
        ))
        ks = [k for k in out["pass_at_k"] if k != "1"]
        header = ["task", "trials", "successes", "p"] + [f"pass@{k}" for k in ks] + [
            f"pass^{k}" for k in ks
        ]
        rows = [
            [row["task"], str(row["trials"]), str(row["successes"]), _fmt(row["p"])]
            + [_fmt(row["pass_at_k"][k]) for k in ks]
            + [_fmt(row["pass_hat_k"][k]) for k in ks]
            for row in sorted(out["per_task"], key=lambda r: (r["p"], r["task"]))
        ]
        sections.append(("Per task, sorted by p", header, rows, ""))
        if out["metrics"]:
            rows = [
                [name, _fmt(value["mean"]), _ci(value["ci"]), _fmt(value["mean_success"]),
                 _ci(value["ci_success"])]
                for name, value in out["metrics"].items()
            ]
            for name, value in out["rates"].items():
                rows.append([f"rate {name}", _fmt(value["estimate"]), _ci(value["ci"]), "", ""])
            if "cost_per_success" in out:
                cost = out["cost_per_success"]
                rows.append(["cost per success", _fmt(cost["estimate"]), _ci(cost["ci"]), "", ""])
            sections.append((
                "Metrics", ["column", "per trial", "95% CI", "per success", "95% CI"], rows,
                "Ratios of per-task totals, intervals clustered by task.",
            ))
        if "categories" in out:
            rows = [
                [name, str(value["count"]), _fmt(value["share"]), _ci(value["ci"]),
                 ", ".join(value["tasks"])]
                for name, value in out["categories"].items()
            ]
            note = ""
            if "infrastructure" in out:
                infra = out["infrastructure"]
                note = (
                    f"Infrastructure noise ({', '.join(infra['categories'])}): "
                    f"{infra['trials']} failed trials; without them success is "
                    f"{_fmt(infra['success']['mean'])} {_ci(infra['success']['ci'])}."
                )
            sections.append((
                "Failure categories", ["category", "count", "share of failures", "95% CI",
                                       "tasks"], rows, note,
            ))
        if out["ignored_columns"]:
            sections.append(("Ignored columns (not numeric)", ["column"],
                             [[name] for name in out["ignored_columns"]], ""))
        if "errors" in out:
            rows = [[e["task"], e["trial"], e["error"]] for e in out["errors"]["samples"]]
            sections.append((
                f"Errored samples ({out['errors']['count']}), not counted as failures",
                ["task", "trial", "error"], rows, "",
            ))
    else:
        rows = [
            [name, str(value["tasks"]), _fmt(value["baseline"]), _fmt(value["candidate"]),
             _fmt(value["difference"]), _ci(value["ci"]), _fmt(value["p_value"], 3),
             _fmt(value["p_holm"], 3)]
            for name, value in out["quantities"].items()
        ]
        sections.append((
            f"Paired differences over {out['tasks']} shared tasks (candidate - baseline)",
            ["quantity", "tasks", "baseline", "candidate", "difference", "95% CI", "p",
             "p (Holm)"], rows,
            f"{out['tested']} quantities tested; p (Holm) adjusts for testing them together.",
        ))
        table = result.per_task.sort_values("difference")
        rows = [
            [str(task), _fmt(float(row["baseline"])), _fmt(float(row["candidate"])),
             _fmt(float(row["difference"]))]
            for task, row in table.iterrows()
        ]
        sections.append(("Per task success, sorted by difference",
                         ["task", "baseline", "candidate", "difference"], rows, ""))
    return sections


def figure_svg(result: Any) -> str:
    """pass@k and pass^k against k = 1, 2, ... with their intervals (an analysis), or the paired
    differences with their intervals (a comparison), as an inline ``<svg>`` element."""
    import matplotlib
    from matplotlib.figure import Figure  # Figure draws without pyplot or a display

    from relsim.evalstats.analysis import TrialAnalysis

    out = result.to_dict()
    figure = Figure(figsize=(6.4, 3.6))
    axes = figure.add_subplot()
    if isinstance(result, TrialAnalysis):
        # the whole curve, k = 1 .. the most trials of a task (at most 20), by the same
        # estimator and interval as the tables (so the table's k are points of it)
        from relsim.evalstats.estimators import pass_k

        largest = int(min(20, result.per_task["trials"].max()))
        curve = pass_k(
            result.per_task, range(1, largest + 1), replicates=result.replicates,
            seed=result.seed, confidence=result.confidence, interval=result.interval,
        )
        for metric, label, marker in (("pass_at_k", "pass@k", "o"), ("pass_hat_k", "pass^k", "s")):
            rows = curve.loc[metric]
            ks = [int(k) for k in rows.index]
            values = rows["estimate"].to_numpy()
            errors = [values - rows["ci_low"].to_numpy(), rows["ci_high"].to_numpy() - values]
            axes.errorbar(ks, values, yerr=errors, marker=marker, capsize=4, label=label)
        axes.set_xlabel("k (trials)")
        axes.set_ylabel("estimate, 95% CI")
        axes.set_ylim(-0.02, 1.02)
        axes.set_xticks(list(range(1, largest + 1)))
        axes.legend()
    else:
        names = [n for n, v in out["quantities"].items() if v["difference"] is not None]
        values = [out["quantities"][n]["difference"] for n in names]
        bounds = [out["quantities"][n]["ci"] for n in names]
        lows = [v - (b[0] if b[0] is not None else v) for b, v in zip(bounds, values)]
        highs = [(b[1] if b[1] is not None else v) - v for b, v in zip(bounds, values)]
        positions = list(range(len(names)))
        axes.errorbar(values, positions, xerr=[lows, highs], fmt="o", capsize=4)
        axes.axvline(0.0, color="#888", linewidth=1)
        axes.set_yticks(positions, names)
        axes.set_xlabel("candidate - baseline, 95% CI")
    figure.tight_layout()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "relsim"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # drop the XML declaration and DOCTYPE


def render(result: Any, kind: str = "html") -> str:
    """The report as text: ``kind`` is ``"html"`` or ``"md"`` (whose figure is referenced as
    ``figure.svg``; :func:`write_report` names it after the file)."""
    sections = _sections(result)
    title = "relsim harness report" if hasattr(result, "pass_k") else "relsim comparison report"
    source = getattr(result, "source", "")
    if kind == "md":
        lines = [f"# {title}", ""]
        if source:
            lines += [f"Source: `{source}`", ""]
        lines += ["![pass@k and pass^k against k](figure.svg)", ""]
        for caption, header, rows, note in sections:
            lines += [f"## {caption}", "", "| " + " | ".join(header) + " |",
                      "|" + "|".join(["---"] * len(header)) + "|"]
            lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"
                      for row in rows]
            lines += ["", note, ""] if note else [""]
        return "\n".join(lines)
    if kind != "html":
        raise invalid("report", "a .html or .md file", kind)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if source:
        parts.append(f'<p class="note">Source: <code>{html.escape(source)}</code></p>')
    parts.append(f"<figure>{figure_svg(result)}</figure>")
    for caption, header, rows, note in sections:
        parts.append("<table>")
        parts.append(f"<caption>{html.escape(caption)}</caption>")
        parts.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>")
        for row in rows:
            parts.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
        parts.append("</table>")
        if note:
            parts.append(f'<p class="note">{html.escape(note)}</p>')
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(result: Any, path: str | Path) -> list[Path]:
    """Write :func:`render`'s report to ``path`` (``.html``/``.htm`` or ``.md``); returns the
    files written (a Markdown report also writes its figure as ``<stem>.svg``)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".html", ".htm", ".md"):
        raise invalid("report", "a file name ending in .html or .md", str(path))
    try:
        if suffix == ".md":
            figure = path.with_suffix(".svg")
            text = render(result, "md").replace("](figure.svg)", f"]({figure.name})")
            figure.write_text(figure_svg(result), encoding="utf-8")
            path.write_text(text, encoding="utf-8")
            return [path, figure]
        path.write_text(render(result, "html"), encoding="utf-8")
    except OSError as error:
        shown = f"{path} ({error.strerror})"
        raise invalid("report", "a file that can be written", shown) from None
    return [path]
