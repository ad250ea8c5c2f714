"""Draw the gallery of docs/gallery.md: one figure of every function of relsim.plot.

    python3 docs/gallery.py [FOLDER]      # default docs/gallery/; about half a minute

Each figure is drawn from the ready scenarios and example trial files of the repository with
fixed seeds, so the same code draws the same picture. tests/test_docs.py runs this script
into a scratch folder and checks that it draws one figure per function of relsim.plot.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import relsim  # noqa: E402
import relsim.plot  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
HARNESS = ROOT / "examples" / "harness"


def figures() -> dict[str, object]:
    """Each relsim.plot function's name -> a function that draws its figure and returns the Axes."""
    plot = relsim.plot

    def production():
        return relsim.Scenario.from_toml(SCENARIOS / "production_agent.toml")

    def outcome_split():
        names = {"lesson_25_steps": "25 steps", "verifier_ceiling": "10% misses",
                 "checkpoints_catch_silent_failures": "checkpoints",
                 "production_agent": "production"}
        return plot.outcome_split(
            {label: relsim.evaluate(relsim.Scenario.from_toml(SCENARIOS / f"{name}.toml"))
             for name, label in names.items()})

    def levers():
        return plot.levers(relsim.plan.levers(production()))

    def pareto():
        frame = relsim.sweep(SCENARIOS / "grids" / "production_frontier.toml")
        return plot.pareto(frame, relsim.plan.frontier(frame), annotate="point")

    def convergence():
        design = relsim.Scenario.from_toml(SCENARIOS / "lesson_25_steps.toml")
        run = relsim.simulate(design, trials=20_000, seed=1, record=20_000)
        return plot.convergence(run, relsim.evaluate(design))

    def trials():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the harness's infrastructure failure, noted
            return (relsim.evalstats.analyze(HARNESS / "exercise3_v1.csv", k=[1, 2, 3], seed=0),
                    relsim.evalstats.compare(HARNESS / "exercise3_v1.csv",
                                             HARNESS / "exercise3_v2.csv", k=[3]))

    def timed():
        design = relsim.Scenario.from_toml(SCENARIOS / "support_reviewers.toml")
        return relsim.simulate_timeline(design, replications=5, seed=1, record=1000)

    return {
        "compounding": lambda: plot.compounding(target=0.95),
        "retries": lambda: plot.retries(0.9, 25, miss=0.1, target=0.95),
        "required_accuracy": lambda: plot.required_accuracy(0.95),
        "outcome_split": outcome_split,
        "levers": levers,
        "curve": lambda: plot.curve(relsim.plan.curve(production(), "retries.per_step"), target=0.95),
        "pareto": pareto,
        "convergence": convergence,
        "pass_k": lambda: plot.pass_k(trials()[0]),
        "pass_k_extrapolated": lambda: plot.pass_k_extrapolated(relsim.evalstats.analyze(
            HARNESS / "exercise1.csv", k=[1, 3], extrapolate=12, seed=0)),
        "paired_differences": lambda: plot.paired_differences(trials()[1]),
        "durations": lambda: plot.durations(timed()),
        "timeline": lambda: plot.timeline(timed().events, trials=20),
    }


def main(folder: str = str(ROOT / "docs" / "gallery")) -> list[Path]:
    import matplotlib.pyplot as plt

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in figures().items():
        ax = draw()
        ax.figure.set_size_inches(8, 5.5)
        path = out / f"{name}.png"
        ax.figure.savefig(path, dpi=80, bbox_inches="tight")
        plt.close(ax.figure)
        written.append(path)
        print(path.relative_to(out.parent) if out.parent in path.parents else path)
    return written


if __name__ == "__main__":
    main(*sys.argv[1:])
