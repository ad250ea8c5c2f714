"""``relsim audit``: a grader's miss and false-reject rates from labelled verdicts, and the pass
rate it judged, corrected for them.

A thin layer over :func:`relsim.evalstats.audit` (imported when the command runs).
"""

from __future__ import annotations

import argparse

from relsim.cli._args import EXIT_OK, nonnegative_int, print_json
from relsim.cli.trials import DEFAULT_SEED, MIN_REPLICATES, replicates_count

_LABELS_HELP = (
    "CSV or JSONL (.jsonl), one row per labelled verdict: columns verdict (1: the grader "
    "passed the answer) and label (the truth, 1: the answer is right), each 0/1 or "
    "true/false, optional task; or an Inspect eval log (.eval, .json, or a log directory) "
    "scored by the grader and the truth (--grader, --truth)"
)


def add_parser(subparsers) -> None:
    audit = subparsers.add_parser(
        "audit",
        help="a grader's miss and false-reject rates from labelled verdicts, and the pass "
        "rate it judged, corrected",
        description=(
            "How often a grader is wrong (and, with --judged, the pass rate it judged, "
            "corrected for its errors): "
            "miss = P(pass | wrong) and false_reject = P(fail | right) from verdicts whose "
            "truth is known, with exact (Clopper-Pearson) 95% intervals, or a cluster "
            "bootstrap over tasks when a task carries several labels; with --judged, the "
            "judged pass rate p, the pass rate corrected for the grader's errors, (p + q0 - "
            "1) / (q0 + q1 - 1) with q0 = 1 - miss and q1 = 1 - false_reject (Lee et al.; "
            "delta-method interval over both samples), and the prediction-powered (PPI++) "
            "mean of the true pass rate. A grader no better than chance (q0 + q1 <= 1) gets "
            "no corrected number. --json > audit.json keeps the audit for a plan."
        ),
    )
    audit.add_argument("labels", metavar="LABELS", help=_LABELS_HELP)
    audit.add_argument(
        "--judged",
        default=None,
        metavar="JUDGED",
        help="verdicts on answers nobody labelled (column verdict, optional task; or an "
        "Inspect log scored by --grader): report their pass rate, corrected",
    )
    audit.add_argument(
        "--grader", default=None, metavar="NAME", help="Inspect logs: the grader's scorer"
    )
    audit.add_argument(
        "--truth", default=None, metavar="NAME", help="Inspect logs: the truth's scorer"
    )
    audit.add_argument(
        "--seed",
        type=nonnegative_int,
        default=None,
        help=f"cluster-bootstrap seed (default {DEFAULT_SEED})",
    )
    audit.add_argument(
        "--replicates",
        type=replicates_count,
        default=None,
        metavar="B",
        help=f"cluster-bootstrap replicates, at least {MIN_REPLICATES} (default 2000)",
    )
    audit.add_argument(
        "--interval",
        choices=("bca", "percentile"),
        default="bca",
        help="the cluster bootstrap's interval when tasks carry several labels (default bca)",
    )
    audit.add_argument("--json", action="store_true", help="print one JSON object")
    audit.set_defaults(run=run_audit)


def _interval(pair) -> str:
    low, high = pair
    return f"[{low:.4f}, {high:.4f}]"


def _count(number: int, word: str) -> str:
    return f"{number} {word}{'' if number == 1 else 's'}"


def run_audit(args: argparse.Namespace) -> int:
    from relsim import evalstats
    from relsim.cli import _args

    result = evalstats.audit(
        args.labels,
        args.judged,
        grader=args.grader,
        truth=args.truth,
        seed=DEFAULT_SEED if args.seed is None else args.seed,
        replicates=evalstats.DEFAULT_REPLICATES if args.replicates is None else args.replicates,
        interval=args.interval,
    )
    out = result.to_dict()
    if out["bootstrap"] is None and (
        args.seed is not None or args.replicates is not None or args.interval != "bca"
    ):
        _args.warn("--seed, --replicates and --interval set the cluster bootstrap, drawn only "
                   "when a task carries several verdicts; these intervals are exact")
    if args.json:
        print_json(out)
        return EXIT_OK

    miss, reject = out["miss"], out["false_reject"]
    tasks = "" if out["tasks"] is None else f" over {_count(out['tasks'], 'task')}"
    print(
        f"{args.labels}: {_count(out['labels'], 'labelled verdict')}{tasks} "
        f"({miss['of']} wrong answers, {reject['of']} right)"
    )
    effective = out["clustered"]
    print(f"{'':14} {'estimate':>8}  {'95% CI':<18}  counted" + ("  effective" if effective else ""))
    for name, rate, what in (
        ("miss", miss, "wrong answers passed"),
        ("false reject", reject, "right answers failed"),
    ):
        line = (
            f"{name:<14} {rate['estimate']:>8.4f}  {_interval(rate['ci']):<18}  "
            f"{rate['count']} of {rate['of']} {what}"
        )
        if effective:
            line += f"  ({rate['effective']:.1f} effective)"
        print(line)
    informative = 1.0 - miss["estimate"] - reject["estimate"]  # q0 + q1 - 1
    if out["better_than_chance"]:
        print(f"grader         better than chance: q0 + q1 = {1 + informative:.4f} > 1")
    else:
        print(f"grader         NO better than chance: q0 + q1 = {1 + informative:.4f} <= 1")
    judged = out["judged"]
    if judged is not None:
        tasks = "" if judged["tasks"] is None else f" over {_count(judged['tasks'], 'task')}"
        print(f"\n{args.judged}: {_count(judged['verdicts'], 'judged verdict')}{tasks}")
        rate = judged["pass_rate"]
        print(
            f"{'pass rate':<14} {rate['estimate']:>8.4f}  {_interval(rate['ci']):<18}  "
            "as judged (p)"
        )
        corrected = judged["corrected"]
        if corrected is None:
            print(f"{'corrected':<14} {'n/a':>8}  {'[n/a]':<18}  {_args.as_flags(judged['reason'])}")
        else:
            print(
                f"{'corrected':<14} {corrected['estimate']:>8.4f}  "
                f"{_interval(corrected['ci']):<18}  (p + q0 - 1) / (q0 + q1 - 1), Lee et al.; "
                "delta method"
            )
        ppi = judged["ppi"]
        print(
            f"{'ppi':<14} {ppi['estimate']:>8.4f}  {_interval(ppi['ci']):<18}  PPI++ "
            f"(lambda {ppi['lambda']:.3f}): labels, with the judged verdicts as predictions"
        )
    boot = out["bootstrap"]
    drawn = "" if boot is None else (
        f"by a cluster bootstrap over tasks ({boot['method']}, {boot['replicates']} replicates, "
        f"seed {boot['seed']}), never narrower than the exact interval of the effective count"
    )
    parts = [f"miss and false reject {drawn if out['clustered'] else 'exact (Clopper-Pearson)'}"]
    if judged is not None:
        repeated = judged["tasks"] is not None and judged["tasks"] < judged["verdicts"]
        parts.append(f"pass rate {drawn if repeated else 'exact (Clopper-Pearson)'}")
    print(f"intervals: 95%; {'; '.join(parts)}")
    return EXIT_OK
