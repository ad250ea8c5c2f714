"""Draw docs/frontier.png: the cost-reliability frontier of scenarios/grids/production_frontier.toml.

    python docs/frontier.py [OUT.png]

Runs the sweep (exact, 64 designs, a few seconds), prints the frontier's rows and saves the
figure that the README shows: every design on the left, the frontier's corner enlarged on
the right with each frontier design's point number.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

import relsim

ROOT = Path(__file__).resolve().parents[1]
GRID = ROOT / "scenarios" / "grids" / "production_frontier.toml"


def main(out: str = str(ROOT / "docs" / "frontier.png")) -> None:
    frame = relsim.sweep(GRID)
    best = relsim.plan.frontier(frame)
    keys = ["verifier.miss", "retries.per_step", "checkpoints.every"]
    print(best[["point", *keys, "success", "cost_per_success"]].to_string(index=False))
    figure, (whole, corner) = plt.subplots(1, 2, figsize=(12, 4.8))
    relsim.plot.pareto(frame, best, ax=whole)
    whole.set_title("64 designs: verifier x retries per step x checkpoint spacing")
    relsim.plot.pareto(frame, best, ax=corner, annotate="point")
    low, high = best["cost_per_success"].min(), best["cost_per_success"].max()
    corner.set_xlim(low - 0.1 * (high - low), high + 0.1 * (high - low))
    bottom = best["success"].min()
    corner.set_ylim(bottom - 0.04, best["success"].max() + 0.01)
    corner.set_title("the frontier's corner (point numbers)")
    figure.suptitle("production coding agent (scenarios/production_agent.toml), exact")
    figure.tight_layout()
    figure.savefig(out, dpi=100)
    print(f"saved {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
