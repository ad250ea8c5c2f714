"""``relsim fit``: a harness's task-difficulty distribution, and the scenario that runs on it.

::

    relsim fit TRIALS [-o scenario.toml] [--json] [--verifier-from audit.json] [--at upper]

Prints the fit of :func:`relsim.evalstats.fit_difficulty` (the weights of the tasks that
always pass, never pass, and of the Beta of the rest; the log-likelihood; fitted against
observed pass^k) and, with ``-o``, writes it as a scenario (:meth:`DifficultyFit.to_scenario`)
that ``relsim evaluate``, ``simulate``, ``timeline`` and ``solve`` read.
"""

from __future__ import annotations

import argparse
from typing import Any

from relsim.cli import _args
from relsim.cli._args import EXIT_OK, finite_float, nonnegative_int, print_json, target
from relsim.errors import RelsimError

# relsim.evalstats.difficulty's MIN_DRAWS and MAX_DRAWS, repeated because building the parser
# must not import numpy (tests/test_difficulty.py holds them together)
MIN_DRAWS, MAX_DRAWS = 200, 10_000
draws_count = _args.ranged(
    "draws_count", int, lambda v: MIN_DRAWS <= v <= MAX_DRAWS,
    f"an integer in {MIN_DRAWS}..{MAX_DRAWS}",
)
#: the scenario's retry budget: relsim.scenario's MAX_PER_STEP
retries_count = _args.ranged(
    "retries_count", int, lambda v: 0 <= v <= 10_000, "an integer in 0..10000"
)

_NAMES = {"always": "always passes", "never": "never passes", "beta": "p ~ Beta"}


def add_parser(subparsers: Any) -> None:
    from relsim.cli.trials import _INPUT_HELP

    parser = subparsers.add_parser(
        "fit",
        help="fit how hard a harness's tasks are, and write it as a scenario",
        description=(
            "Fit the task-difficulty distribution of a harness by maximum likelihood: a "
            "task always passes, never passes, or passes each trial with its own p drawn "
            "from a Beta (a zero-one-inflated beta-binomial), keeping only the parameters the "
            "data identify, with bootstrap refits over tasks. -o writes it as a scenario in "
            "which one task is one step and one trial one attempt (a retry runs the task "
            "again): the point masses and 16 Gauss-Jacobi nodes of the Beta as [[classes]], "
            "a perfect verifier (the harness's own check) or one from --verifier-from, "
            "and [retries]."
        ),
    )
    parser.add_argument("trials", metavar="TRIALS", help=_INPUT_HELP)
    parser.add_argument("-o", "--output", default=None, metavar="FILE",
                        help="write the fit as a scenario (TOML)")
    parser.add_argument(
        "--verifier-from", default=None, metavar="AUDIT",
        help="the scenario's verifier from a grader audit (the JSON of relsim audit --json)",
    )
    parser.add_argument(
        "--at", choices=("upper", "estimate", "lower"), default="upper",
        help="with --verifier-from: each error rate at its upper 95%% bound (default), "
        "estimate or lower bound",
    )
    parser.add_argument("--retries", type=retries_count, metavar="R",
                        help="with -o: the scenario's retries per step (default 0)")
    parser.add_argument("--target", type=target,
                        help="with -o: the scenario's target (default 0.95)")
    parser.add_argument("--seed", type=nonnegative_int, default=0,
                        help="bootstrap seed (default 0)")
    parser.add_argument("--draws", type=draws_count, default=MIN_DRAWS, metavar="D",
                        help=f"bootstrap refits over tasks, {MIN_DRAWS}..{MAX_DRAWS} "
                        f"(default {MIN_DRAWS})")
    parser.add_argument(
        "--threshold", type=finite_float, default=None,
        help="success is a numeric score; a trial succeeds when score >= THRESHOLD",
    )
    parser.add_argument("--scorer", default=None,
                        help="Inspect logs: the scorer whose value is success")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relsim.cli.trials import _check_logs, _quietly
    from relsim.evalstats.difficulty import fit_difficulty, verifier_from_audit

    _check_logs(args.trials)
    if args.output is None:  # they set the scenario -o writes: without it they would do nothing
        for flag, value in (("--retries", args.retries), ("--target", args.target),
                            ("--verifier-from", args.verifier_from)):
            if value is not None:
                raise RelsimError(f"{flag}: sets the scenario that -o FILE writes: give -o too")
    args.retries = 0 if args.retries is None else args.retries
    args.target = 0.95 if args.target is None else args.target
    if args.output is not None:  # before the fit, not after it ('' is refused)
        from relsim import checks

        checks.output_file(args.output, "-o")
    verifier = None
    if args.verifier_from is not None:  # every message names the file
        verifier = verifier_from_audit(args.verifier_from, at=args.at)
    elif args.at != "upper":
        _args.warn("--at sets the verifier read with --verifier-from; without it the "
                   "scenario's verifier is perfect")
    fit = _quietly(fit_difficulty, args.trials, seed=args.seed, draws=args.draws,
                   threshold=args.threshold, scorer=args.scorer)
    written = None
    if args.output:
        from relsim.scenario.files import toml_text

        scenario = fit.to_scenario(verifier=verifier, retries=args.retries, target=args.target)
        data = scenario.to_dict()
        # both rates spelled out, a perfect verifier too (to_dict leaves out the defaults)
        data["verifier"] = {"miss": scenario.verifier.miss,
                            "false_reject": scenario.verifier.false_reject}
        with open(args.output, "w", encoding="utf-8") as file:
            file.write(_header(args) + toml_text(data))
        written = (args.output, scenario)
    if args.json:
        out = fit.to_dict()
        if written:
            out["scenario"] = written[0]
        print_json(out)
        return EXIT_OK
    _print(args, fit)
    if written:
        path, scenario = written
        check = verifier_text(scenario.verifier, args.verifier_from, args.at)
        print(
            f"scenario written: {path} (1 step = 1 task, {len(scenario.classes)} classes; "
            f"{check}; {args.retries} retr{'y' if args.retries == 1 else 'ies'}; target "
            f"{args.target:g})"
        )
    return EXIT_OK


def verifier_text(verifier: Any, audit: str | None, at: str) -> str:
    """How the written scenario's verifier was chosen, in a few words."""
    if audit is None:
        return "perfect verifier (the harness's own check)"
    which = "estimates" if at == "estimate" else f"{at} 95% bounds"
    return (f"verifier miss {verifier.miss:.4g}, false_reject {verifier.false_reject:.4g} "
            f"(the {which} of {audit})")


def _header(args: argparse.Namespace) -> str:
    import shlex

    words = ["fit", args.trials]
    if args.verifier_from is not None:
        words += ["--verifier-from", args.verifier_from, "--at", args.at]
    words += ["--retries", str(args.retries), "--target", f"{args.target:g}",
              "--seed", str(args.seed), "--draws", str(args.draws)]
    for flag, value in (("--threshold", args.threshold), ("--scorer", args.scorer)):
        if value is not None:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return f"# written by: relsim {shlex.join(words)} -o <this file>\n"


def _print(args: argparse.Namespace, fit: Any) -> None:
    from relsim.evalstats.difficulty import DRAW_KEYS, _interval

    low, high = fit.trials_per_task
    trials = f"{low} trials each" if low == high else f"{low} to {high} trials each"
    print(f"{args.trials}: {fit.tasks} tasks, {trials}")
    print(f"{'component':<16} {'weight':>7}  95% CI")
    column = {name: fit.draws[:, i] for i, name in enumerate(DRAW_KEYS)}

    def row(name: str, weight: float, draws: Any, extra: str = "") -> None:
        if name in fit.left_out:
            print(f"{_NAMES[name]:<16} {0:>7}  left out: {fit.left_out[name]}")
            return
        ci = _interval(draws, fit.tasks, 0.95)
        print(f"{_NAMES[name]:<16} {weight:>7.4f}  [{ci[0]:.4f}, {ci[1]:.4f}]{extra}")

    row("always", fit.always, column["always"])
    row("never", fit.never, column["never"])
    extra = ""
    if fit.alpha is not None and fit.beta is not None:
        mean = fit.alpha / (fit.alpha + fit.beta)
        extra = f"  alpha {fit.alpha:.4g}, beta {fit.beta:.4g} (mean p {mean:.4f}"
        extra += _at_bound(fit.alpha + fit.beta, mean) + ")"
    row("beta", fit.beta_weight, column["beta_weight"], extra)
    print(f"log-likelihood {fit.loglik:.4f}; identified: {', '.join(fit.identified)}")
    print(f"check (pass^k)   {'k':>3}  {'observed':>8}  {'fitted':>8}")
    for entry in fit.check:
        print(f"{'':16} {entry['k']:>3}  {entry['observed']:>8.4f}  {entry['fitted']:>8.4f}")
    print(f"intervals: 95%, {len(fit.draws)} bootstrap refits over tasks (seed {fit.seed}), "
          "expanded percentile")


def _at_bound(precision: float, mean: float) -> str:
    """What a Beta whose precision alpha + beta lies at the fit's search bound means, for a
    reader who sees alpha 2000, beta 3000 and wonders (empty when it lies inside)."""
    import math

    from relsim.evalstats._zoib import V_RANGE

    low, high = (math.exp(v) for v in V_RANGE)
    if precision >= high * (1 - 1e-6):
        return (f"; its precision alpha + beta at the fit's bound {high:g}: these tasks share "
                f"one p, {mean:.4f}, with no spread beyond the binomial")
    if precision <= low * (1 + 1e-6):
        return (f"; its precision alpha + beta at the fit's bound {low:g}: these tasks pass "
                "nearly always or nearly never")
    return ""
