"""Write the worked example's inputs: an Inspect log of a small harness and 100 labelled verdicts.

    python examples/evals_to_plan/make_example.py     # needs pip install 'agent-relsim[inspect]'

Both are drawn once, with fixed seeds, from a known truth, and committed; running this script
writes the same outcomes again (the log's own timestamps and ids differ).

- ``harness.eval``: an Inspect eval log of a 30-task harness run 5 epochs on
  Inspect's mock model (offline), scored by ``grader``, an LLM judge that passes a wrong
  answer with chance :data:`MISS` and fails a right one with chance :data:`FALSE_REJECT`.
  The tasks' chances of a right answer: 8 always right, 2 never, 20 drawn from
  Beta(2, 1.5).
- ``labels.csv``: 100 verdicts of the same grader that a person checked (``label``, 1: the
  answer is right): a second run of the harness's first 25 tasks, 4 answers each.

The outputs of relsim made from them (``audit.json``, ``fit.json``, ``harness.toml``) are
made by the commands the README shows; ``tests/test_evals_to_plan.py`` checks they are
current.
"""

from __future__ import annotations

import csv
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MISS, FALSE_REJECT = 0.10, 0.05
TASKS, EPOCHS = 30, 5


def verdicts(rng: np.random.Generator, right: np.ndarray) -> np.ndarray:
    """The grader's verdicts (1: pass) on answers whose truth is ``right`` (1: right)."""
    draw = rng.random(right.shape)
    return np.where(right == 1, draw >= FALSE_REJECT, draw < MISS).astype(int)


def chances() -> np.ndarray:
    """Each harness task's chance of a right answer: 8 always right, 2 never, 20 from a Beta."""
    rng = np.random.default_rng(2026)
    chance = np.concatenate([np.ones(8), np.zeros(2), rng.beta(2.0, 1.5, TASKS - 10)])
    return chance[rng.permutation(TASKS)]


def harness() -> list[dict]:
    """The harness's trials: task, epoch, the truth and the grader's verdict."""
    rng = np.random.default_rng(2027)
    right = (rng.random((TASKS, EPOCHS)) < chances()[:, None]).astype(int)
    graded = verdicts(rng, right)
    return [
        {"task": f"task{i + 1:02d}", "epoch": j + 1, "right": int(right[i, j]),
         "verdict": int(graded[i, j])}
        for i in range(TASKS) for j in range(EPOCHS)
    ]


def labels() -> list[dict]:
    """100 labelled verdicts: a second run of the first 25 tasks, 4 answers each, that a
    person checked (the same tasks, so the same population as the harness's verdicts)."""
    # Seed 2030, not 2028: 2028 drew no passed wrong answer of 27 (an audit that says miss 0,
    # which a 10% grader gives one time in 17), so the example would read as a lucky grader.
    rng = np.random.default_rng(2030)
    right = (rng.random((25, 4)) < chances()[:25, None]).astype(int)
    graded = verdicts(rng, right)
    return [
        {"task": f"task{i + 1:02d}", "verdict": int(graded[i, j]), "label": int(right[i, j])}
        for i in range(25) for j in range(4)
    ]


def inspect_log(rows: list[dict], path: Path) -> Path:
    """Run the harness on Inspect's mock model with a scorer that replays the grader's
    verdicts, and move its log to ``path``."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, accuracy, scorer

    verdict = {(row["task"], row["epoch"]): row["verdict"] for row in rows}
    outputs = []
    for _ in rows:  # the mock model's outputs carry their usage: no tokenizer download
        output = ModelOutput.from_content("mockllm/model", "done")
        output.usage = ModelUsage(input_tokens=1200, output_tokens=300, total_tokens=1500)
        outputs.append(output)

    @scorer(metrics=[accuracy()])
    def grader():
        async def score(state, target):
            return Score(value="C" if verdict[(state.sample_id, state.epoch)] else "I")

        return score

    tasks = list(dict.fromkeys(row["task"] for row in rows))
    task = Task(name="harness", dataset=[Sample(id=t, input="fix the failing test") for t in tasks],
                scorer=grader())
    with tempfile.TemporaryDirectory() as folder:
        os.environ["INSPECT_LOG_DIR"] = folder
        model = get_model("mockllm/model", custom_outputs=outputs)
        log = eval(task, model=model, epochs=EPOCHS, log_dir=folder, log_format="eval",
                   display="none")[0]
        shutil.move(log.location, path)
    return path


def main() -> None:
    with open(HERE / "labels.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["task", "verdict", "label"])
        writer.writeheader()
        writer.writerows(labels())
    print(inspect_log(harness(), HERE / "harness.eval"))


if __name__ == "__main__":
    main()
