"""The evidence flags of ``relsim solve``, ``report`` and ``levers``: a grader audit
(``--verifier-from AUDIT.json [--at upper|estimate|lower]``) and, for ``solve``, a
task-difficulty fit (``--difficulty-from FIT.json``), applied to the scenario in one place
(:func:`apply_evidence`) and said in one line each (:func:`evidence_lines`)."""

from __future__ import annotations

import argparse
from typing import Any

from relsim.errors import RelsimError

#: ``--at``'s values (relsim.plan.evidence.BOUNDS, here so the parser imports nothing heavy).
AT_CHOICES = ("upper", "estimate", "lower")


def add_verifier_arguments(parser: Any) -> None:
    """``--verifier-from`` and ``--at``."""
    parser.add_argument(
        "--verifier-from", dest="verifier_from", metavar="AUDIT",
        help="set the scenario's verifier from a grader audit (the JSON of 'relsim audit "
        "--json'): its miss and false_reject at --at",
    )
    parser.add_argument(
        "--at", choices=AT_CHOICES,
        help="where on the audit's 95%% intervals --verifier-from sets the verifier: upper (the "
        "default: the grader we may really have), estimate or lower",
    )


def add_difficulty_argument(parser: Any) -> None:
    """``--difficulty-from``."""
    parser.add_argument(
        "--difficulty-from", dest="difficulty_from", metavar="FIT",
        help="set a one-step scenario's task classes from a task-difficulty fit (the JSON of "
        "'relsim fit --json'): its point fit, or with --confidence its bootstrap draws",
    )


def check_evidence_flags(args: argparse.Namespace) -> None:
    """``--at`` only with ``--verifier-from``."""
    if getattr(args, "at", None) is not None and getattr(args, "verifier_from", None) is None:
        raise RelsimError("--at: is where on an audit's intervals --verifier-from sets the "
                          "verifier: give --verifier-from AUDIT too")


def apply_evidence(args: argparse.Namespace, scenario: Any) -> tuple[Any, dict[str, Any]]:
    """The scenario with ``args``' evidence applied, and what was applied (JSON-ready:
    ``verifier_from`` ``{file, at, miss, false_reject}`` and ``difficulty_from`` ``{file, at,
    always, never, beta, classes}``, each only when given)."""
    from relsim.plan import evidence

    check_evidence_flags(args)
    applied: dict[str, Any] = {}
    audit_file = getattr(args, "verifier_from", None)
    if audit_file is not None:
        at = getattr(args, "at", None) or "upper"
        audit = evidence.read_audit(audit_file)
        scenario = evidence.with_audit(scenario, audit, at)
        miss, false_reject = evidence.verifier_at(audit, at)
        applied["verifier_from"] = {"file": audit_file, "at": at, "miss": miss,
                                    "false_reject": false_reject}
    fit_file = getattr(args, "difficulty_from", None)
    if fit_file is not None:
        fit = evidence.read_fit(fit_file)
        scenario = evidence.with_fit(scenario, fit)
        point = fit.point
        applied["difficulty_from"] = {
            "file": fit_file, "at": "estimate", "always": point.always, "never": point.never,
            "beta": None if point.beta_weight == 0 else
            {"weight": point.beta_weight, "alpha": point.alpha, "beta": point.beta},
            "classes": len(scenario.classes),
        }
    return scenario, applied


def evidence_lines(applied: dict[str, Any]) -> list[str]:
    """One line for each piece of evidence applied, as the output says it."""
    from relsim.plan.evidence import Difficulty, at_words

    lines = []
    audit = applied.get("verifier_from")
    if audit is not None:
        lines.append(f"verifier from {audit['file']} {at_words(audit['at'])}: miss "
                     f"{audit['miss']:.4g}, false_reject {audit['false_reject']:.4g}")
    fit = applied.get("difficulty_from")
    if fit is not None:
        beta = fit["beta"] or {"weight": 0.0, "alpha": None, "beta": None}
        point = Difficulty(fit["always"], fit["never"], beta["weight"], beta["alpha"], beta["beta"])
        lines.append(f"difficulty from {fit['file']} at the estimate: {point.describe()} "
                     f"({fit['classes']} task classes)")
    return lines


def after_title(text: str, lines: list[str]) -> str:
    """``text`` with ``lines`` inserted after its first line (the title)."""
    if not lines:
        return text
    first, _, rest = text.partition("\n")
    return "\n".join([first, *lines, *([rest] if rest else [])])
