"""``relsim analyze``, ``relsim compare`` and ``relsim power``: statistics of real trial data.

A thin layer over :mod:`relsim.evalstats` (imported when a command runs, so building the
parser stays light). Warnings about the data go to stderr as ``relsim: warning: ...``.
"""

from __future__ import annotations

import argparse
from typing import Any

from relsim.cli import _args
from relsim.cli._args import (
    EXIT_INFEASIBLE,
    EXIT_OK,
    finite_float,
    int_list,
    nonnegative_float,
    nonnegative_int,
    open_probability,
    positive_int,
    print_json,
    probability,
    safe_text,
    target,
)
from relsim.errors import RelsimError

nonzero_float = _args.ranged(
    "nonzero_float",
    _args.finite_float_value,
    lambda v: v != 0 and -1 <= v <= 1,
    "a nonzero number in [-1, 1]",
)

#: The bootstrap's seed when none is given: the library draws fresh entropy for None, the
#: command line stays reproducible (the same command prints the same numbers).
DEFAULT_SEED = 0

# relsim.evalstats.MIN_REPLICATES, repeated here because building the parser must not import
# numpy (a test holds the two together)
MIN_REPLICATES = 100
replicates_count = _args.ranged(
    "replicates_count",
    int,
    lambda v: v >= MIN_REPLICATES,
    f"an integer >= {MIN_REPLICATES}",
)

# relsim.evalstats.difficulty.MAX_K, repeated for the same reason (the same test holds it)
MAX_EXTRAPOLATE = 100
extrapolate_count = _args.ranged(
    "extrapolate_count",
    int,
    lambda v: 1 <= v <= MAX_EXTRAPOLATE,
    f"an integer in 1..{MAX_EXTRAPOLATE}",
)

_INPUT_HELP = (
    "CSV or JSONL (.jsonl), one row per trial: columns task, trial, success (0/1 or "
    "true/false), optional cost, steps, category and any numeric columns; or an Inspect eval "
    "log (.eval, .json, or a log directory; needs pip install 'agent-relsim[inspect]')"
)


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def add_parser(subparsers) -> None:
    analyze = subparsers.add_parser(
        "analyze",
        help="success, pass@k and pass^k of real trials, with clustered error bars",
        description=(
            "Success rate and pass@k / pass^k (means over tasks of the unbiased per-task "
            "estimators; intervals clustered by task that count the trials within tasks, stay "
            "in [0, 1] and never collapse), per task with --per-task; every numeric column "
            "(mean per trial and per successful trial), rates between columns, cost per "
            "success, failure categories, and the per-step success implied by a steps column "
            "with what `relsim solve` plans from it. --report writes it all as HTML or "
            "Markdown."
        ),
    )
    analyze.add_argument("trials", metavar="TRIALS", help=_INPUT_HELP)
    analyze.add_argument(
        "--k",
        type=int_list,
        default=None,
        metavar="K[,K...]",
        help="k for pass@k and pass^k (default 1,3,5, those not above the most trials of a task)",
    )
    analyze.add_argument(
        "--seed", type=nonnegative_int, default=None, help=f"bootstrap seed (default {DEFAULT_SEED})"
    )
    analyze.add_argument(
        "--replicates",
        type=replicates_count,
        default=None,
        metavar="B",
        help=f"cluster-bootstrap replicates, at least {MIN_REPLICATES} (default 2000)",
    )
    analyze.add_argument(
        "--interval",
        choices=("jeffreys", "bca", "percentile"),
        default="jeffreys",
        help="pass@k/pass^k interval: Jeffreys on effective counts (default), or a cluster "
        "bootstrap over tasks (bca, percentile: these see only the spread between tasks)",
    )
    analyze.add_argument(
        "--per-task", action="store_true", help="print each task's p, pass@k and pass^k"
    )
    analyze.add_argument(
        "--rate",
        action="append",
        default=[],
        metavar="A/B",
        help="a rate between two numeric columns, such as tool_errors/steps (repeatable)",
    )
    analyze.add_argument(
        "--category",
        default=None,
        metavar="COLUMN",
        help="column of failure categories (default: category, when present)",
    )
    analyze.add_argument(
        "--infra-categories",
        type=_names,
        default=["infra", "timeout"],
        metavar="NAME[,NAME...]",
        help="categories whose name contains one of these words are infrastructure noise "
        "(default infra,timeout)",
    )
    analyze.add_argument(
        "--scorer", default=None, help="Inspect logs: the scorer whose value is success"
    )
    analyze.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="SCORER",
        help="Inspect logs: report this scorer's numeric value as a metric column (score: "
        "the success scorer's own value; repeatable)",
    )
    analyze.add_argument(
        "--report",
        default=None,
        metavar="FILE",
        help="write the harness report: FILE.html (self-contained) or FILE.md",
    )
    analyze.add_argument(
        "--threshold",
        type=finite_float,
        default=None,
        help="success is a numeric score; a trial succeeds when score >= THRESHOLD",
    )
    analyze.add_argument(
        "--target",
        type=target,
        default=None,
        help="end-to-end target for the plan drawn from a steps column or from --labels "
        "(default 0.95)",
    )
    analyze.add_argument(
        "--extrapolate",
        type=extrapolate_count,
        default=None,
        metavar="K",
        help="also pass@k and pass^k for every k up to K (at most "
        f"{MAX_EXTRAPOLATE}) from a fitted task-difficulty distribution (see relsim fit), "
        "beside the fit's check against the k that were run",
    )
    analyze.add_argument(
        "--labels",
        metavar="LABELS",
        default=None,
        help="labelled grader verdicts (relsim audit's input): audit the grader, correct the "
        "pass rate for its errors, and plan with the grader at the audit's upper bound",
    )
    analyze.add_argument("--json", action="store_true", help="print one JSON object")
    analyze.set_defaults(run=run_analyze)

    compare = subparsers.add_parser(
        "compare",
        help="paired comparison of two evals on their shared tasks",
        description=(
            "Paired per-task comparison on the tasks both files share, of success, pass@k, "
            "pass^k, cost per success and every numeric column both have: difference "
            "(candidate - baseline), standard error, t interval and two-sided paired t-test "
            "p-value, with Holm's adjustment for the number of quantities tested."
        ),
    )
    compare.add_argument("baseline", metavar="BASELINE", help=_INPUT_HELP)
    compare.add_argument("candidate", metavar="CANDIDATE", help="same format as BASELINE")
    compare.add_argument(
        "--threshold",
        type=finite_float,
        default=None,
        help="success is a numeric score; a trial succeeds when score >= THRESHOLD",
    )
    compare.add_argument(
        "--k",
        type=int_list,
        default=None,
        metavar="K[,K...]",
        help="k for pass@k and pass^k (default 1,3,5, those within both evals' trial counts)",
    )
    compare.add_argument(
        "--scorer", default=None, help="Inspect logs: the scorer whose value is success"
    )
    compare.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="SCORER",
        help="Inspect logs: compare this scorer's numeric value as a metric column (score: "
        "the success scorer's own value; repeatable)",
    )
    compare.add_argument(
        "--report",
        default=None,
        metavar="FILE",
        help="write the comparison report: FILE.html (self-contained) or FILE.md",
    )
    compare.add_argument("--json", action="store_true", help="print one JSON object")
    compare.set_defaults(run=run_compare)

    power = subparsers.add_parser(
        "power",
        help="tasks needed to detect a difference, or the smallest detectable one",
        description=(
            "How many tasks a paired comparison of two versions needs to detect a gain of "
            "--delta in success (or, with --tasks, the smallest gain that many tasks detect). "
            "tasks = the least T >= 2 at which the two-sided paired t-test (T - 1 degrees of "
            "freedom) reaches the power asked, computed exactly from the noncentral t with "
            "noncentrality |D| sqrt(T) / sigma, sigma^2 = W^2 + (P(1-P) + Q(1-Q))/K, Q = P + D. "
            "Assumes a paired design (both systems on the same tasks, K trials each), "
            "independent tasks, binomial trials at rate P or Q on every task (tasks of unequal "
            "difficulty make this conservative) and W the sd of the true per-task differences. "
            "With --tasks instead of --delta: the minimum detectable gain (mde). Both report "
            "the power achieved."
        ),
    )
    effect = power.add_mutually_exclusive_group(required=True)
    effect.add_argument("--delta", type=nonzero_float, help="difference to detect, D = Q - P")
    effect.add_argument("--tasks", type=positive_int, help="tasks available: report the mde")
    power.add_argument("--baseline", type=probability, required=True, help="baseline success P")
    power.add_argument(
        "--trials-per-task",
        type=positive_int,
        default=1,
        metavar="K",
        help="trials per task (default 1)",
    )
    power.add_argument(
        "--alpha", type=open_probability, default=0.05, help="test level (default 0.05)"
    )
    power.add_argument("--power", type=open_probability, default=0.8, help="power (default 0.8)")
    power.add_argument(
        "--difference-sd",
        type=nonnegative_float,
        default=0.0,
        metavar="W",
        help="sd of the true per-task differences (default 0)",
    )
    power.add_argument("--json", action="store_true", help="print one JSON object")
    power.set_defaults(run=run_power)


def _warn(messages) -> None:
    for message in messages:
        _args.warn(message)  # printed once the command has succeeded


def _quietly(function, *args, **kwargs):
    """Call ``function`` with the API's TrialDataWarning silenced: the result carries the
    same messages, which the command prints itself."""
    import warnings

    from relsim.evalstats import TrialDataWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrialDataWarning)
        return function(*args, **kwargs)


#: Defaults of the flags :func:`_flags` leaves out (those not None).
_DEFAULTS = {"interval": "jeffreys", "infra_categories": ["infra", "timeout"], "target": 0.95}


def _flags(args: argparse.Namespace, names) -> list[str]:
    """The flags among ``names`` set to other than their default, as command-line words
    (``--rate`` repeated, other lists joined with commas)."""
    words: list[str] = []
    for name in names:
        value = getattr(args, name)
        flag = "--" + name.replace("_", "-")
        if value is None or value == [] or value == _DEFAULTS.get(name):
            continue
        if name == "rate":
            for item in value:
                words += [flag, item]
        elif isinstance(value, list):
            words += [flag, ",".join(str(item) for item in value)]
        else:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return words


def _command(name: str, inputs: list[str], flags: list[str], report: str) -> str:
    """The command line that makes this report again (shown in its footer)."""
    import shlex

    return "relsim " + shlex.join([name, *inputs, *flags, "--report", report])


def _interval(low, high) -> str:
    if low is None or high is None:
        return "[n/a]"
    return f"[{low:.4f}, {high:.4f}]"


def _value(value, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _number(value, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}g}"


def _range(pair, digits: int = 4) -> str:
    low, high = pair
    if low is None or high is None:
        return "[n/a]"
    return f"[{low:.{digits}g}, {high:.{digits}g}]"


def _print_notes(notes, metrics=()) -> None:
    """Coverage notes, one line per note, naming the quantities it holds for (the metrics
    together when the note holds for every one of them)."""
    grouped: dict[str, list[str]] = {}
    for label, note in notes.items():
        grouped.setdefault(note, []).append(label)
    every = [f"{name}{suffix}" for name in metrics for suffix in ("", " per successful trial")]
    for note, labels in grouped.items():
        if every and set(every) <= set(labels):
            labels = ["every metric (per trial and per successful trial)"] + [
                label for label in labels if label not in every
            ]
        print(f"coverage     {', '.join(labels)}: {note}")


#: A missing Inspect log folder of the examples: how the example makes it.
EXAMPLE_LOGS = (
    "; the example's, examples/harness/logs/, are made by "
    "'python examples/harness/make_trials.py --inspect'"
)


def _check_logs(*paths: str) -> None:
    """A path that looks like an Inspect log (a folder, ``.eval``, ``.json``) and does not
    exist: say where such logs come from, and how the example makes its own."""
    from pathlib import Path

    for path in paths:
        if not Path(path).exists() and Path(path).suffix.lower() in ("", ".eval", ".json"):
            raise RelsimError(
                f"{path}: file: must exist, got no such file or folder (an Inspect log folder "
                f"is written by Inspect when it runs an eval{EXAMPLE_LOGS})"
            )


def _evidence(result: Any, trials: Any, labels: str, target: float, seed: int) -> Any:
    """The grader audit of ``labels``, with the analysis' verdicts as the judged ones (so the
    pass rate is corrected for the grader's errors), and the plan at the audit's bound."""
    import pandas as pd

    from relsim.evalstats import audit
    from relsim.report.eval import Evidence

    per_task = result.per_task
    judged = pd.DataFrame({
        "task": [str(t) for t, n in zip(per_task.index, per_task["trials"]) for _ in range(int(n))],
        "verdict": [int(j < c) for n, c in zip(per_task["trials"], per_task["successes"])
                    for j in range(int(n))],
    })
    found = audit(labels, judged, seed=seed)
    return Evidence(audit=found.to_dict(), plan=_plan_at_bound(trials, found, target, seed))


def _print_audit(labels: str, audit: Any, plan: Any) -> None:
    """The grader audit's lines of ``analyze --labels``."""
    print(f"\ngrader audit ({labels}: {audit['labels']} labelled verdicts)")
    for key in ("miss", "false_reject"):
        rate = audit[key]
        print(f"{key:<24} {_value(rate['estimate'])}  95% CI {_interval(*rate['ci'])}  "
              f"({rate['count']} of {rate['of']})")
    judged = audit["judged"]
    corrected = judged["corrected"]
    if corrected is None:
        print(f"pass rate corrected      none: {judged['reason'] or 'the grader is no better than chance'}")
    else:
        print(f"pass rate corrected      {_value(corrected['estimate'])}  95% CI "
              f"{_interval(*corrected['ci'])}  (for the grader's errors)")
    ppi = judged["ppi"]
    print(f"pass rate, PPI++         {_value(ppi['estimate'])}  95% CI {_interval(*ppi['ci'])}")
    if plan is not None:
        shown = plan["value"] if plan["feasible"] else "infeasible"
        print(f"plan at the upper bound  retries per task {shown} for {plan['target']:g} "
              f"(success {_value(plan['success'])})")


def _plan_at_bound(trials: Any, found: Any, target: float, seed: int) -> Any:
    """The least retries per task for ``target`` on the harness's fitted task difficulty with
    the grader at the audit's upper bound (None when the grader is no better than chance or the
    trials cannot be fitted: one trial per task)."""
    from relsim import plan
    from relsim.evalstats import fit_difficulty

    record = found.to_dict()
    if not record["better_than_chance"]:
        return None
    try:
        fit = fit_difficulty(trials, seed=seed)
    except RelsimError:
        return None
    return plan.retries(fit.to_scenario(verifier=record, at="upper", target=target), target)


def run_analyze(args: argparse.Namespace) -> int:
    from relsim import evalstats

    _check_logs(args.trials)

    replicates = evalstats.DEFAULT_REPLICATES if args.replicates is None else args.replicates
    if args.report is not None:  # before the analysis, not after it ('' is refused)
        from relsim import checks

        checks.output_file(args.report, "--report")
    seed = DEFAULT_SEED if args.seed is None else args.seed
    given_target = args.target is not None
    if args.target is None:
        args.target = _DEFAULTS["target"]
    result = _quietly(
        evalstats.analyze,
        args.trials,
        k=args.k,
        threshold=args.threshold,
        scorer=args.scorer,
        seed=seed,
        replicates=replicates,
        interval=args.interval,
        target=args.target,
        rates=args.rate,
        category=args.category,
        infra_categories=args.infra_categories,
        metric=args.metric,
        extrapolate=args.extrapolate,
    )
    _warn(result.warnings)
    if args.interval == "jeffreys" and (args.replicates is not None or args.seed is not None):
        _warn(["--replicates and --seed set the bootstrap intervals (--interval bca or "
               "percentile); the default jeffreys interval draws nothing"])
    if given_target and result.steps is None and args.labels is None:
        _warn(["--target sets the plan drawn from a steps column or from --labels; these "
               "trials have neither, so no plan uses it"])
    evidence = None
    if args.labels is not None:
        evidence = _evidence(result, args.trials, args.labels, args.target, seed)
    written = None
    if args.report:
        from relsim.report.eval import write_report

        flags = _flags(args, ("k", "threshold", "scorer", "interval", "rate", "category",
                              "infra_categories", "target", "extrapolate", "labels"))
        if args.interval != "jeffreys":
            flags += ["--seed", str(seed), "--replicates", str(replicates)]
        written = write_report(result, args.report, evidence=evidence,
                               command=_command("analyze", [args.trials], flags, args.report))
    out = result.to_dict()
    if evidence is not None:
        out["audit"] = dict(evidence.audit)
        if evidence.plan is not None:
            out["plan_at_bound"] = evidence.plan.to_dict()
    if args.json:
        if written:
            out["report"] = [str(path) for path in written]
        print_json(out)
        return EXIT_OK

    success = out["success"]
    print(f"{args.trials}: {out['tasks']} tasks, {out['trials']} trials")
    print(
        f"success      {_value(success['mean'])}  se {_value(success['se'])}  "
        f"95% CI {_interval(*success['ci'])}   (mean over tasks; = pass@1)"
    )
    print(f"{'':12} {'estimate':>8}  {'95% CI':<18}  excluded tasks")
    for metric, label in (("pass_at_k", "pass@"), ("pass_hat_k", "pass^")):
        for k, row in out[metric].items():
            if k == "1":
                continue  # the success line
            print(
                f"{label + k:<12} {_value(row['estimate']):>8}  {_interval(*row['ci']):<18}  "
                f"{row['excluded_tasks']}"
            )
    if "extrapolated" in out:
        _print_extrapolated(out["extrapolated"])
    if args.per_task:
        ks = list(out["pass_at_k"])
        head = "".join(f"  {'pass@' + k:>8}" for k in ks if k != "1") + "".join(
            f"  {'pass^' + k:>8}" for k in ks if k != "1"
        )
        print(f"\nper task (sorted by p)\n{'task':<16} {'trials':>6} {'succ':>5} {'p':>7}{head}")
        for row in sorted(out["per_task"], key=lambda r: (r["p"], r["task"])):
            cells = "".join(
                f"  {_value(row['pass_at_k'][k]):>8}" for k in ks if k != "1"
            ) + "".join(f"  {_value(row['pass_hat_k'][k]):>8}" for k in ks if k != "1")
            print(
                f"{safe_text(row['task'])[:16]:<16} {row['trials']:>6} {row['successes']:>5} "
                f"{row['p']:>7.3f}{cells}"
            )
    # a rate's label (rate tool_errors/steps) widens the first column, so that its value
    # stands under "per trial" with the metrics' values
    width = max([16] + [len(f"rate {safe_text(name)}") for name in out["rates"]])
    if out["metrics"]:
        print(f"\n{'metric':<{width}} {'per trial':>10}  {'95% CI':<22} {'per success':>11}  95% CI")
        for name, value in out["metrics"].items():
            print(
                f"{safe_text(name)[:16]:<{width}} {_number(value['mean']):>10}  "
                f"{_range(value['ci']):<22} {_number(value['mean_success']):>11}  {_range(value['ci_success'])}"
            )
    for name, value in out["rates"].items():
        print(f"{'rate ' + safe_text(name):<{width}} {_number(value['estimate']):>10}  {_range(value['ci'])}")
    if "cost_per_success" in out:
        cost = out["cost_per_success"]
        if cost["estimate"] is not None:  # to 4 figures, as its interval and `compare` show it
            shown = f"{_number(cost['estimate'])}  95% CI {_range(cost['ci'])}"
        elif cost["ci"][0] is not None:
            shown = f"infinite (no success; 95% CI from {_number(cost['ci'][0])})"
        else:
            shown = "infinite (no success)"
        print(f"cost per success  {shown}")
    if "categories" in out:
        print(f"\n{'failure category':<20} {'count':>5} {'share':>7}  {'95% CI':<18}  tasks")
        for name, value in out["categories"].items():
            tasks = ", ".join(map(safe_text, value["tasks"][:6]))
            tasks += ", ..." if len(value["tasks"]) > 6 else ""
            print(
                f"{safe_text(name)[:20]:<20} {value['count']:>5} {value['share']:>7.3f}  "
                f"{_interval(*value['ci']):<18}  {tasks}"
            )
    if "infrastructure" in out:
        infra = out["infrastructure"]
        print(
            f"infrastructure ({', '.join(infra['categories'])}): {infra['trials']} failed "
            f"trial{'' if infra['trials'] == 1 else 's'} left out -> success "
            f"{_value(infra['success']['mean'])} 95% CI "
            f"{_interval(*infra['success']['ci'])} over {infra['tasks']} tasks"
        )
    if out["ignored_columns"]:
        print(f"ignored (not numeric): {', '.join(map(safe_text, out['ignored_columns']))}")
    if "errors" in out:
        print(f"errored samples (not counted as failures): {out['errors']['count']}")
    if "audit" in out:
        _print_audit(args.labels, out["audit"], out.get("plan_at_bound"))
    for entry in out.get("inspect") or ():
        shown = ", ".join(f"{name} {value:.4g}" for name, value in entry["headline"].items())
        line = (
            f"inspect      {entry['scorer']}, {entry['epochs']} epochs reduced by "
            f"{entry['reducer']}: Inspect's {shown or 'headline (none)'}"
        )
        if entry["quantity"] is not None:
            line += (
                f" = {entry['quantity']}: relsim {_value(entry['estimate'])} 95% CI "
                f"{_interval(*entry['ci'])}"
            )
        else:
            line += " (no relsim equivalent)"
        print(line)
    if result.steps is not None:
        steps, plan = out["steps"], out["steps"]["plan"]
        print(
            f"steps        mean {steps['mean']:.4g}, planned as {plan['steps']}; implied "
            f"per-step success {_value(steps['per_step_success'], 6)} = "
            f"success^(1/{plan['steps']})"
        )
        if plan["feasible"]:
            outcome = (
                f"{plan['retries']} retr{'y' if plan['retries'] == 1 else 'ies'} per step "
                f"(perfect verifier) reach{'es' if plan['retries'] == 1 else ''} {plan['success']:.6f} "
                f">= {plan['target']:g}"
            )
        else:
            outcome = f"no retry budget reaches {plan['target']:g}"
        print(f"plan         {plan['command']}: {outcome}")
    _print_notes(result.coverage_notes, list(out["metrics"]))
    method = out["interval"]
    if method["method"] == "jeffreys":
        print(
            "intervals: 95%, clustered by task with the binomial floor, Jeffreys on effective "
            "counts (success, pass@k, pass^k); skewness-corrected and log-scale ratio intervals "
            "(metrics, rates, cost)"
        )
    else:
        print(
            f"pass@k/pass^k intervals: cluster bootstrap over tasks ({method['method']}), "
            f"{method['replicates']} replicates, seed {method['seed']}"
        )
    for path in written or ():
        print(f"report written: {path}")
    return EXIT_OK


def _print_extrapolated(extrapolated) -> None:
    """The fit's pass@k and pass^k up to K, those beyond the trials run marked, and its
    check: fitted against observed pass^k for each k that was run."""
    fit = extrapolated["fit"]
    beta = fit["beta"]
    shape = "" if beta is None else f", Beta({beta['alpha']:.4g}, {beta['beta']:.4g})"
    print(
        f"\nfitted       task difficulty: always {fit['always']:.4f}, never "
        f"{fit['never']:.4f}{shape} (relsim fit)"
    )
    print(f"{'':12} {'pass@k':>8}  {'95% CI':<18}  {'pass^k':>8}  {'95% CI':<18}")
    for k, at in extrapolated["pass_at_k"].items():
        hat = extrapolated["pass_hat_k"][k]
        mark = "  extrapolated" if at["extrapolated"] else ""
        print(
            f"{'k=' + k:<12} {_value(at['estimate']):>8}  {_interval(*at['ci']):<18}  "
            f"{_value(hat['estimate']):>8}  {_interval(*hat['ci']):<18}{mark}"
        )
    shown = ", ".join(
        f"k={entry['k']} {entry['fitted']:.4f} vs {entry['observed']:.4f}"
        for entry in extrapolated["check"]
    )
    print(f"check        pass^k fitted vs observed: {shown}")
    print(
        f"fitted intervals: 95%, {extrapolated['draws']} bootstrap refits over tasks, "
        "expanded percentile"
    )


def run_compare(args: argparse.Namespace) -> int:
    from relsim import evalstats

    _check_logs(args.baseline, args.candidate)

    if args.report is not None:  # before the comparison, not after it ('' is refused)
        from relsim import checks

        checks.output_file(args.report, "--report")
    result = _quietly(
        evalstats.compare,
        args.baseline,
        args.candidate,
        k=args.k,
        threshold=args.threshold,
        scorer=args.scorer,
        metric=args.metric,
    )
    _warn(result.warnings)
    written = None
    if args.report:
        from relsim.report.eval import write_report

        flags = _flags(args, ("k", "threshold", "scorer"))
        command = _command("compare", [args.baseline, args.candidate], flags, args.report)
        written = write_report(result, args.report, command=command)
    out = result.to_dict()
    if args.json:
        if written:
            out["report"] = [str(path) for path in written]
        print_json(out)
        return EXIT_OK
    print(f"{out['tasks']} shared tasks, paired by task: {args.baseline} -> {args.candidate}")
    print(
        f"{'quantity':<18} {'baseline':>9} {'candidate':>9} {'difference':>10}  "
        f"{'95% CI':<22} {'p':>8} {'p (Holm)':>9}"
    )
    for name, value in out["quantities"].items():
        print(
            f"{safe_text(name)[:18]:<18} {_number(value['baseline']):>9} "
            f"{_number(value['candidate']):>9} {_number(value['difference']):>10}  "
            f"{_range(value['ci']):<22} "
            f"{_number(value['p_value'], 3):>8} {_number(value['p_holm'], 3):>9}"
        )
    print(
        f"{out['tested']} quantities tested: read p (Holm) when judging them together; exact "
        "sign tests where every per-task value is 0 or 1, else the test each interval inverts"
    )
    _print_notes({
        name: value["coverage_note"]
        for name, value in out["quantities"].items() if "coverage_note" in value
    })
    for path in written or ():
        print(f"report written: {path}")
    return EXIT_OK


def run_power(args: argparse.Namespace) -> int:
    from relsim import evalstats

    common = dict(
        trials_per_task=args.trials_per_task,
        alpha=args.alpha,
        power=args.power,
        difference_sd=args.difference_sd,
    )
    settings = {
        "baseline": args.baseline,
        "trials_per_task": args.trials_per_task,
        "alpha": args.alpha,
        "power": args.power,
        "difference_sd": args.difference_sd,
    }
    if args.power <= args.alpha:
        # a two-sided test rejects with chance alpha even when nothing differs: every gain,
        # however small, and the fewest tasks already have that power
        _warn([f"--power {args.power:g} is not above --alpha {args.alpha:g}: the test rejects "
               "that often with no difference at all, so any gain counts as detected"])
    if args.delta is not None:
        tasks = evalstats.tasks_needed(args.delta, args.baseline, **common)
        achieved = evalstats.paired_power(
            tasks, args.delta, args.baseline, trials_per_task=args.trials_per_task,
            alpha=args.alpha, difference_sd=args.difference_sd,
        )
        out = {
            "tasks": tasks,
            "delta": args.delta,
            "candidate": args.baseline + args.delta,
            "achieved_power": achieved,
            **settings,
        }
        if args.json:
            print_json(out)
        else:
            print(
                f"{tasks} tasks to detect {args.baseline:g} -> {args.baseline + args.delta:g} "
                f"(delta {args.delta:+g}) with power {args.power:g} at alpha {args.alpha:g}, "
                f"{args.trials_per_task} trial(s) per task (paired t-test: power "
                f"{achieved:.3f} at {tasks} tasks)"
            )
        return EXIT_OK

    mde = evalstats.minimum_detectable_effect(args.tasks, args.baseline, **common)
    power_at_mde = None
    if mde is not None:
        power_at_mde = evalstats.paired_power(
            args.tasks, mde, args.baseline, trials_per_task=args.trials_per_task,
            alpha=args.alpha, difference_sd=args.difference_sd,
        )
    out = {
        "mde": mde,
        "tasks": args.tasks,
        "candidate": None if mde is None else args.baseline + mde,
        "achieved_power": power_at_mde,
        **settings,
    }
    if args.json:
        print_json(out)
    elif mde is None:
        print(
            f"no gain over {args.baseline:g} (up to 1) is detectable with {args.tasks} tasks at "
            f"power {args.power:g}, alpha {args.alpha:g}"
        )
    else:
        print(
            f"minimum detectable gain with {args.tasks} tasks: {mde:.4g} "
            # the rate reached to the gain's own precision: 0.6 -> 0.7524, not 0.752364
            f"({args.baseline:g} -> {args.baseline + float(f'{mde:.4g}'):.6g}) with power {args.power:g} at "
            f"alpha {args.alpha:g}, {args.trials_per_task} trial(s) per task (paired t-test)"
        )
    return EXIT_OK if mde is not None else EXIT_INFEASIBLE
