"""The harness report: an analysis or a comparison of real trials as one page, or Markdown.

::

    relsim analyze TRIALS --report out.html|out.md
    relsim compare BASELINE CANDIDATE --report out.html|out.md

HTML (:func:`render`): the page of :mod:`relsim.report` (its stylesheet, inline SVG, no
script, font or image fetched) with pass@k and pass^k against k with their intervals
(:func:`relsim.plot.pass_k`), the headline table, the per-task table sorted by p, the metrics,
rates and cost per success, failure categories and infrastructure noise; for a comparison,
every paired difference (:func:`relsim.plot.paired_differences`) and the per-task success
differences. An analysis made with ``extrapolate=K`` (``analyze --extrapolate K``) gets a
section of pass@k and pass^k beyond the trials run: the fitted curves with their bands
(:func:`relsim.plot.pass_k_extrapolated`), their table and the fit's check. With
:class:`Evidence` (``analyze --labels``), a grader-audit table (the
grader's error rates with their intervals, the pass rate corrected for them and the
prediction-powered one) and the plan at the audit's bound. Markdown (:func:`markdown`): the
same tables, with the figures written next to it as ``<name>.svg`` (and
``<name>-extrapolated.svg``); user text (tasks, categories, column names) is escaped, so it
shows as written and never as HTML or Markdown.

Every number comes from the result's ``to_dict()``, so the report shows what ``--json``
prints; the one thing computed here is the pass@k curve over every k up to 20, by
:func:`relsim.evalstats.pass_k` with the analysis' own settings and seed (so the table's k
are points of it).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from relsim.errors import invalid
from relsim.report._html import Report, Section, interval, new_figure, number, page, svg
from relsim.report._html import svg_element, table

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["DIGITS", "EXTRAPOLATED", "LARGEST_K", "Evidence", "markdown", "render", "write_report"]

#: Significant figures of the numbers in the tables (the command line prints 4 decimals).
DIGITS = 4
#: The pass@k curve runs over k = 1 .. the most trials of a task, at most this.
LARGEST_K = 20
#: The name of the figure and section of the extrapolated pass@k and pass^k.
EXTRAPOLATED = "extrapolated"
EXTRAPOLATED_CAPTION = "pass@k and pass^k beyond the trials run, with their 95% bands"

#: The harness report's footnote, after "Made by relsim ... with <command>."
FOOTER = (
    "Every number is the result's own: its to_dict() holds the same. Intervals are clustered by "
    "task (the task is the unit of sampling), as each section says."
)


@dataclass(frozen=True)
class Evidence:
    """What a harness report shows beside its trials: a grader audit and the plan at its bound.

    Attributes
    ----------
    audit : mapping
        ``relsim.evalstats.GraderAudit.to_dict()`` (with ``judged``: the pass rate corrected
        for the grader's errors).
    plan : relsim.plan.Plan or None
        A plan made with the grader at the audit's bound (``relsim.plan.with_audit``).
    at : str
        Which bound the plan took: ``"upper"``, ``"estimate"`` or ``"lower"``.
    """

    audit: Mapping[str, Any]
    plan: Any = None
    at: str = "upper"


@dataclass(frozen=True)
class _Table:
    """One table of the report, in a form both HTML and Markdown are written from."""

    id: str
    title: str
    header: Sequence[str]
    rows: list[list[Any]]  # numbers (None: undefined) and text; intervals already as text
    numeric: Sequence[bool]
    note: str = ""


def render(result: Any, *, command: str | None = None, evidence: Evidence | None = None) -> Report:
    """The HTML page of an analysis or a comparison.

    Parameters
    ----------
    result : TrialAnalysis or Comparison
        :func:`relsim.evalstats.analyze`'s or :func:`relsim.evalstats.compare`'s result.
    command : str, optional
        The command line that made the report, shown in the footer.
    evidence : Evidence, optional
        A grader audit (and the plan at its bound) to show after the headline.

    Returns
    -------
    Report
        The page (``html``), its sections and its figures (``"pass-k"`` for an analysis,
        with ``"extrapolated"`` after it when the analysis extrapolated; ``"differences"``
        for a comparison); ``meets_target`` is None.
    """
    analysis = _is_analysis(result)
    name, caption = _figure_names(analysis)
    figure_section = Section("figure", caption, svg(figure(result), name, caption), (name,))
    sections = [figure_section]
    for t in _tables(result, evidence):
        body = table(t.header, t.rows, t.numeric, digits=DIGITS) + (
            f'\n<p class="note">{html.escape(t.note)}</p>' if t.note else "")
        drawn: tuple[str, ...] = ()
        if t.id == EXTRAPOLATED:  # the curve beyond the trials run heads its own table
            body = svg(extrapolated_figure(result), EXTRAPOLATED, EXTRAPOLATED_CAPTION) + "\n" + body
            drawn = (EXTRAPOLATED,)
        sections.append(Section(t.id, t.title, body, drawn))
    kind = "harness report" if analysis else "comparison report"
    html_page = page(
        title=f"relsim {kind}" + (f": {result.source}" if analysis else ""),
        heading=kind[0].upper() + kind[1:],
        lead=_lead(result),
        sections=sections,
        command=command or "relsim.report.eval.render",
        footer=FOOTER,
    )
    figures = tuple(drawn for section in sections for drawn in section.figures)
    return Report(html=html_page, sections=tuple(sections), figures=figures, meets_target=None)


def markdown(
    result: Any,
    figure_file: str = "figure.svg",
    *,
    evidence: Evidence | None = None,
    extrapolated_file: str = "extrapolated.svg",
) -> str:
    """The report as Markdown: the tables, and the figure as an image ``figure_file``
    (:func:`write_report` writes it, named after the report); an analysis made with
    ``extrapolate=K`` shows its fitted curve as ``extrapolated_file`` above its table.

    Parameters
    ----------
    result : TrialAnalysis or Comparison
        As :func:`render` takes it.
    figure_file, extrapolated_file : str
        The image file names the Markdown links to.
    evidence : Evidence, optional
        As :func:`render` takes it.

    Returns
    -------
    str
        The Markdown text.
    """
    analysis = _is_analysis(result)
    _, caption = _figure_names(analysis)
    kind = "harness report" if analysis else "comparison report"
    lines = [f"# relsim {kind}", "", _lead(result, _md_text), "",
             f"![{_md_text(caption)}]({figure_file})", ""]
    for t in _tables(result, evidence):
        lines += [f"## {_md_text(t.title)}", ""]
        if t.id == EXTRAPOLATED:
            lines += [f"![{_md_text(EXTRAPOLATED_CAPTION)}]({extrapolated_file})", ""]
        lines += ["| " + " | ".join(map(_md_text, t.header)) + " |",
                  "|" + "|".join("---:" if n else "---" for n in t.numeric) + "|"]
        lines += ["| " + " | ".join(_md_cell(cell, n) for cell, n in zip(row, t.numeric)) + " |"
                  for row in t.rows]
        lines += ["", _md_text(t.note), ""] if t.note else [""]
    return "\n".join(lines)


def write_report(
    result: Any, path: str | Path, *, command: str | None = None, evidence: Evidence | None = None
) -> list[Path]:
    """Write the report to ``path``: ``.html`` / ``.htm`` (:func:`render`) or ``.md``
    (:func:`markdown`, with its figure as ``<stem>.svg`` beside it, and an extrapolated
    analysis' curve as ``<stem>-extrapolated.svg``).

    Parameters
    ----------
    result : TrialAnalysis or Comparison
        As :func:`render` takes it.
    path : str or Path
        The report's file, ending in ``.html``, ``.htm`` or ``.md`` (a ``RelsimError`` names
        it ``report`` otherwise, as ``relsim analyze --report`` does).
    command, evidence
        As :func:`render` takes them.

    Returns
    -------
    list of Path
        The files written: the report, then its figures.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".html", ".htm", ".md"):
        raise invalid("report", "a file name ending in .html or .md", str(path))
    try:
        if suffix == ".md":
            figure_path = path.with_suffix(".svg")
            name, caption = _figure_names(_is_analysis(result))
            figure_path.write_text(svg_element(figure(result), name, caption), encoding="utf-8")
            written = [path, figure_path]
            extra_path = path.with_name(f"{path.stem}-{EXTRAPOLATED}.svg")
            if getattr(result, "extrapolated", None) is not None:
                extra_path.write_text(svg_element(extrapolated_figure(result), EXTRAPOLATED,
                                                  EXTRAPOLATED_CAPTION), encoding="utf-8")
                written.append(extra_path)
            path.write_text(markdown(result, figure_path.name, evidence=evidence,
                                     extrapolated_file=extra_path.name), encoding="utf-8")
            return written
        path.write_text(render(result, command=command, evidence=evidence).html, encoding="utf-8")
    except OSError as error:  # a path the user gave: bad input, not a bug
        shown = f"{path} ({error.strerror})"
        raise invalid("report", "a file that can be written", shown) from None
    return [path]


def figure(result: Any) -> "Figure":
    """The report's figure: pass@k and pass^k against k = 1 .. the most trials of a task (at
    most :data:`LARGEST_K`) for an analysis, the paired differences for a comparison."""
    from relsim import plot

    drawing = new_figure(7.0, 4.2)
    axes = drawing.add_subplot()
    if _is_analysis(result):
        from relsim.evalstats import pass_k

        # The whole curve, by the estimator, interval and seed of the tables: the bootstrap
        # resamples tasks the same way whatever the k, so the table's k are points of it.
        largest = int(min(LARGEST_K, result.per_task["trials"].max()))
        curve = pass_k(
            result.per_task, range(1, largest + 1), replicates=result.replicates,
            seed=result.seed, confidence=result.confidence, interval=result.interval,
        )
        plot.pass_k(curve, ax=axes)
        axes.set_xticks(range(1, largest + 1))
    else:
        plot.paired_differences(result, ax=axes)
    return drawing


def extrapolated_figure(result: Any) -> "Figure":
    """pass@k and pass^k of the analysis' task-difficulty fit over every k it was extrapolated
    to, with their bands and the observed pass^k (:func:`relsim.plot.pass_k_extrapolated`)."""
    from relsim import plot

    drawing = new_figure(7.0, 4.2)
    axes = drawing.add_subplot()
    plot.pass_k_extrapolated(result, ax=axes)
    axes.set_xticks(range(1, len(result.extrapolated["pass_hat_k"]) + 1))
    return drawing


# ------------------------------------------------------------------------------ the tables
def _tables(result: Any, evidence: Evidence | None = None) -> list[_Table]:
    if not _is_analysis(result):
        return _comparison_tables(result)
    tables = _analysis_tables(result)
    if result.extrapolated is not None:  # after the headline: what it says beyond the trials
        tables[1:1] = [_extrapolated_table(result.extrapolated)]
    if evidence is not None:  # after the headline: what the grader's errors do to it
        tables[1:1] = _evidence_tables(evidence)
    return tables


def _extrapolated_table(extrapolated: Mapping[str, Any]) -> _Table:
    """pass@k and pass^k of the fit for every k to K, with the fit and its check as a note."""
    rows = []
    for k, at in extrapolated["pass_at_k"].items():
        hat = extrapolated["pass_hat_k"][k]
        rows.append([k, at["estimate"], interval(at["ci"], DIGITS), hat["estimate"],
                     interval(hat["ci"], DIGITS), "extrapolated" if at["extrapolated"] else "run"])
    fit = extrapolated["fit"]
    beta = fit["beta"]
    shape = ("" if beta is None else
             f", a Beta({number(beta['alpha'], DIGITS)}, {number(beta['beta'], DIGITS)}) for "
             f"the rest ({number(beta['weight'], DIGITS)})")
    check = "; ".join(f"k={c['k']}: {number(c['fitted'], DIGITS)} fitted, "
                      f"{number(c['observed'], DIGITS)} observed" for c in extrapolated["check"])
    note = (f"The task-difficulty fit (zero-one-inflated beta-binomial, maximum likelihood over "
            f"{fit['tasks']} tasks): always passes {number(fit['always'], DIGITS)}, never "
            f"{number(fit['never'], DIGITS)}{shape}. Intervals: expanded percentile intervals of "
            f"{extrapolated['draws']} bootstrap refits over tasks. The fit's check, pass^k: {check}.")
    return _Table(EXTRAPOLATED, "pass^k beyond the trials run (fitted task difficulty)",
                  ["k", "pass@k", "95% CI", "pass^k", "95% CI", "from"], rows,
                  [True, True, True, True, True, False], note)


def _evidence_tables(evidence: Evidence) -> list[_Table]:
    """The grader audit, the pass rate corrected for it, and the plan at its bound."""
    audit = evidence.audit
    rows = []
    for key, words in (("miss", "miss: passes a wrong answer"),
                       ("false_reject", "false_reject: fails a right answer")):
        rate = audit[key]
        rows.append([words, rate["estimate"], interval(rate["ci"], DIGITS),
                     f"{rate['count']} of {rate['of']}", rate["effective"]])
    judged = audit.get("judged")
    if judged is not None:
        rows.append(["pass rate as graded", judged["pass_rate"]["estimate"],
                     interval(judged["pass_rate"]["ci"], DIGITS), f"{judged['verdicts']} verdicts", ""])
        corrected = judged.get("corrected")
        if corrected is not None:
            rows.append(["pass rate corrected for the grader", corrected["estimate"],
                         interval(corrected["ci"], DIGITS), "Rogan-Gladen / Lee et al.", ""])
        rows.append(["pass rate, prediction-powered (PPI++)", judged["ppi"]["estimate"],
                     interval(judged["ppi"]["ci"], DIGITS), "labels and verdicts", ""])
    note = (f"{audit['labels']} labelled verdicts ({audit['interval']} intervals). "
            + ("The grader is better than chance."
               if audit["better_than_chance"] else
               "The grader is no better than chance: no corrected pass rate exists."))
    if judged is not None and judged.get("corrected") is None and judged.get("reason"):
        note += f" {judged['reason']}"
    tables = [_Table("audit", "Grader audit: how often the grader is wrong",
                     ["quantity", "estimate", "95% CI", "from", "effective labels"], rows,
                     [False, True, True, False, True], note)]
    plan = evidence.plan
    if plan is not None:
        out = plan.to_dict()
        verifier = plan.scenario.verifier
        rows = [
            ["verifier miss used", verifier.miss],
            ["verifier false_reject used", verifier.false_reject],
            [f"{out['for']} (the plan)", str(out["value"]) if out["feasible"] else "infeasible"],
            ["success", out["success"]],
            ["cost per success", _infinite_if_none(out["cost_per_success"])],
        ]
        if out.get("target") is not None:
            rows.append(["target", out["target"]])
        tables.append(_Table(
            "plan", f"The plan with the grader at the audit's {evidence.at} bound",
            ["quantity", "value"], rows, [False, True],
            "One harness task is one step and one trial one attempt (a retry reruns the task); "
            "the task difficulty is the fit of these trials (zero-one-inflated beta-binomial), "
            "the grader the audit's at the bound named.",
        ))
    return tables


def _analysis_tables(result: Any) -> list[_Table]:
    out = result.to_dict()
    tables = []
    success = out["success"]
    rows = [["success (= pass@1)", success["mean"], success["se"], interval(success["ci"], DIGITS), 0]]
    for metric, label in (("pass_at_k", "pass@"), ("pass_hat_k", "pass^")):
        for k, row in out[metric].items():
            if k != "1":
                rows.append([label + k, row["estimate"], row["se"], interval(row["ci"], DIGITS),
                             row["excluded_tasks"]])
    tables.append(_Table(
        "headline", f"Headline: {out['tasks']} tasks, {out['trials']} trials",
        ["quantity", "estimate", "se", "95% CI", "excluded tasks"], rows,
        [False, True, True, True, True],
        "Means over tasks of the unbiased per-task estimators; intervals clustered by task "
        f"({out['interval']['method']}), inside [0, 1].",
    ))
    ks = [k for k in out["pass_at_k"] if k != "1"]
    header = ["task", "trials", "successes", "p"] + [f"pass@{k}" for k in ks] + [f"pass^{k}" for k in ks]
    rows = [
        [row["task"], row["trials"], row["successes"], row["p"]]
        + [row["pass_at_k"][k] for k in ks] + [row["pass_hat_k"][k] for k in ks]
        for row in sorted(out["per_task"], key=lambda r: (r["p"], r["task"]))
    ]
    tables.append(_Table("per-task", "Per task, sorted by p", header, rows,
                         [False] + [True] * (len(header) - 1)))
    if out["metrics"] or out["rates"] or "cost_per_success" in out:
        rows = [
            [name, value["mean"], interval(value["ci"], DIGITS), value["mean_success"],
             interval(value["ci_success"], DIGITS)]
            for name, value in out["metrics"].items()
        ]
        for name, value in out["rates"].items():
            rows.append([f"rate {name}", value["estimate"], interval(value["ci"], DIGITS), "", ""])
        if "cost_per_success" in out:
            cost = out["cost_per_success"]
            rows.append(["cost per success", _infinite_if_none(cost["estimate"]),
                         interval(cost["ci"], DIGITS), "", ""])
        tables.append(_Table(
            "metrics", "Metrics", ["column", "per trial", "95% CI", "per success", "95% CI"], rows,
            [False, True, True, True, True], "Ratios of per-task totals, intervals clustered by task.",
        ))
    if "categories" in out:
        rows = [
            [name, value["count"], value["share"], interval(value["ci"], DIGITS),
             ", ".join(value["tasks"])]
            for name, value in out["categories"].items()
        ]
        note = ""
        if "infrastructure" in out:
            infra = out["infrastructure"]
            note = (
                f"Infrastructure noise ({', '.join(infra['categories'])}): {infra['trials']} "
                f"failed trials; without them success is {number(infra['success']['mean'], DIGITS)} "
                f"{interval(infra['success']['ci'], DIGITS)}."
            )
        tables.append(_Table(
            "categories", "Failure categories",
            ["category", "count", "share of failures", "95% CI", "tasks"], rows,
            [False, True, True, True, False], note,
        ))
    if out["ignored_columns"]:
        tables.append(_Table("ignored", "Ignored columns (not numeric)", ["column"],
                             [[name] for name in out["ignored_columns"]], [False]))
    if "errors" in out:
        rows = [[e["task"], e["trial"], e["error"]] for e in out["errors"]["samples"]]
        tables.append(_Table(
            "errors", f"Errored samples ({out['errors']['count']}), not counted as failures",
            ["task", "trial", "error"], rows, [False, False, False],
        ))
    return tables


def _comparison_tables(result: Any) -> list[_Table]:
    out = result.to_dict()
    rows = [
        [name, value["tasks"], value["baseline"], value["candidate"], value["difference"],
         interval(value["ci"], DIGITS), _p(value["p_value"]), _p(value["p_holm"])]
        for name, value in out["quantities"].items()
    ]
    differences = _Table(
        "differences",
        f"Paired differences over {out['tasks']} shared tasks (candidate - baseline)",
        ["quantity", "tasks", "baseline", "candidate", "difference", "95% CI", "p", "p (Holm)"],
        rows, [False] + [True] * 7,
        f"{out['tested']} quantities tested; p (Holm) adjusts for testing them together.",
    )
    per_task = result.per_task.sort_values("difference", kind="stable")
    rows = [
        [str(task), float(row["baseline"]), float(row["candidate"]), float(row["difference"])]
        for task, row in per_task.iterrows()
    ]
    return [differences, _Table("per-task", "Per task success, sorted by difference",
                                ["task", "baseline", "candidate", "difference"], rows,
                                [False, True, True, True])]


# ------------------------------------------------------------------------------ helpers
def _is_analysis(result: Any) -> bool:
    from relsim.evalstats import Comparison, TrialAnalysis

    if isinstance(result, TrialAnalysis):
        return True
    if isinstance(result, Comparison):
        return False
    raise invalid("result", "a TrialAnalysis or a Comparison (relsim.evalstats)", result)


def _figure_names(analysis: bool) -> tuple[str, str]:
    """The figure's name on the page and its caption."""
    if analysis:
        return "pass-k", "pass@k and pass^k against k"
    return "differences", "Paired differences with their intervals"


def _lead(result: Any, escape: Callable[[str], str] = str) -> str:
    """The line under the heading; ``escape`` is applied to the user's text (the source)."""
    out = result.to_dict()
    if _is_analysis(result):
        success = out["success"]
        return (f"{escape(out['source'])}: {out['tasks']} tasks, {out['trials']} trials; success "
                f"{number(success['mean'], DIGITS)}, 95% CI {interval(success['ci'], DIGITS)}.")
    return (f"{out['tasks']} shared tasks, paired by task: success from "
            f"{number(out['baseline'], DIGITS)} to {number(out['candidate'], DIGITS)}, difference "
            f"{number(out['difference'], DIGITS)}, 95% CI {interval(out['ci'], DIGITS)}.")


def _p(value: Any) -> str:
    return number(value, 3)


def _infinite_if_none(value: Any) -> Any:
    """``to_dict()`` writes an infinite cost per success (no success) as None."""
    return float("inf") if value is None else value


#: What Markdown would read as markup in user text: escaped with a backslash.
_MARKDOWN = re.compile(r"([\\`*_\[\]|#!])")


def _md_text(text: Any) -> str:
    r"""User text for Markdown: HTML escaped (``<`` as ``&lt;``) and Markdown's markup
    characters escaped with a backslash (``\*``, ``\[``, ``\|``), so a task named ``<b>x</b>``
    or ``[x](y)`` shows as written and never as markup."""
    escaped = html.escape(" ".join(str(text).split()), quote=False)
    return _MARKDOWN.sub(r"\\\1", escaped)


def _md_cell(cell: Any, numeric: bool) -> str:
    if numeric:  # a number, or the report's own text for one (an interval)
        return cell if isinstance(cell, str) else number(cell, DIGITS)
    return _md_text(cell)
