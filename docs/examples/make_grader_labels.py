"""Write grader_labels.csv and judged.csv, the example inputs of `relsim audit`.

Drawn once from a known grader (miss 0.15, false_reject 0.05) with a fixed seed, and
committed: `python docs/examples/make_grader_labels.py` writes the same files again.

- grader_labels.csv: 100 answers, one per task, each right (label 1) with chance 0.625, with the
  grader's verdict (1: pass).
- judged.csv: a harness of 50 tasks x 3 trials whose answers nobody labelled: each task has
  its own chance of a right answer (Beta(2, 1.2), mean 0.625), and the same grader judged
  every trial.
"""

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MISS, FALSE_REJECT = 0.15, 0.05


def verdicts(rng, right):
    """The grader's verdicts (1: pass) on answers whose truth is ``right``."""
    draw = rng.random(right.size)
    return np.where(right == 1, draw >= FALSE_REJECT, draw < MISS).astype(int)


def main():
    rng = np.random.default_rng(21)
    right = (rng.random(100) < 0.625).astype(int)
    rows = zip(range(1, 101), verdicts(rng, right), right)
    (HERE / "grader_labels.csv").write_text(
        "task,verdict,label\n" + "".join(f"t{t:03d},{v},{y}\n" for t, v, y in rows)
    )
    tasks, trials = 50, 3
    chance = rng.beta(2.0, 1.2, tasks)
    right = (rng.random((tasks, trials)) < chance[:, None]).astype(int).ravel()
    judged = verdicts(rng, right)
    lines = [
        f"h{i // trials + 1:02d},{i % trials + 1},{v}\n" for i, v in enumerate(judged)
    ]
    (HERE / "judged.csv").write_text("task,trial,verdict\n" + "".join(lines))


if __name__ == "__main__":
    main()
