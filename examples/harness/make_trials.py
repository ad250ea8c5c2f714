"""Write the example trial files of docs/trial-data.md (seeded, so they repeat).

    python examples/harness/make_trials.py            # writes the CSVs next to this script
    python examples/harness/make_trials.py --inspect  # and an Inspect log (needs inspect-ai)

- ``exercise1.csv``: 10 tasks x 5 trials of an agent whose per-task success rates were drawn
  from Beta(1.5, 1) (the lesson's exercise 1: each task's p, pass@3 and pass^3).
- ``exercise3_v1.csv`` and ``exercise3_v2.csv``: a 20-task harness, 3 trials each, with
  ``steps``, ``tool_errors``, ``cost`` (dollars) and a failure ``category`` read from the
  trajectories (exercise 3); v2 fixes the top category (``wrong_tool``) and re-runs.
- ``--inspect``: ``logs/exercise1/`` and ``logs/exercise3/``, the trials of ``exercise1.csv``
  (10 samples x 5 epochs) and ``exercise3_v1.csv`` (20 x 3) as Inspect eval logs, run on
  Inspect's mock model (no network) with a scorer that replays the outcomes.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CATEGORIES = ["wrong_tool", "lost_context", "gave_up", "timeout"]


def exercise1() -> list[dict]:
    rng = np.random.default_rng(14)
    rates = rng.beta(1.5, 1.0, size=10)
    return [
        {"task": f"task{i + 1:02d}", "trial": j + 1, "success": int(rng.random() < rates[i])}
        for i in range(10)
        for j in range(5)
    ]


def exercise3(fixed: bool) -> list[dict]:
    rng = np.random.default_rng(3)
    rates = rng.beta(3.0, 1.5, size=20)
    difficulty = rng.uniform(6, 30, size=20)
    # why each task tends to fail, drawn once per task (a task fails the same way)
    leaning = rng.dirichlet([4.0, 1.5, 1.0, 0.5], size=20)
    rows = []
    draw = np.random.default_rng(33 if fixed else 31)
    for i in range(20):
        for j in range(3):
            category = CATEGORIES[draw.choice(4, p=leaning[i])]
            failed = draw.random() >= rates[i]
            if fixed and failed and category == "wrong_tool" and draw.random() < 0.8:
                failed = False  # the fix: most wrong-tool failures now succeed
            steps = int(max(2, draw.normal(difficulty[i] * (1.4 if failed else 1.0), 3)))
            errors = int(draw.poisson(0.05 * steps * (3.0 if failed else 1.0)))
            rows.append(
                {
                    "task": f"h{i + 1:02d}",
                    "trial": j + 1,
                    "success": int(not failed),
                    "steps": steps,
                    "tool_errors": errors,
                    "cost": round(0.004 * steps + 0.002 * errors, 4),
                    "category": category if failed else "",
                    "notes": "see trajectory" if failed else "",
                }
            )
    return rows


def write(name: str, rows: list[dict]) -> None:
    with open(HERE / name, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def inspect_log(rows: list[dict], name: str) -> str:
    import os

    os.environ.setdefault("INSPECT_LOG_DIR", str(HERE / "logs"))
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, accuracy, scorer

    outcome = {(row["task"], row["trial"]): row for row in rows}
    outputs = []
    for row in rows:  # the mock model's outputs carry their usage: no tokenizer download
        output = ModelOutput.from_content("mockllm/model", "done")
        steps = row.get("steps", 10)
        output.usage = ModelUsage(
            input_tokens=200 * steps, output_tokens=40 * steps, total_tokens=240 * steps
        )
        outputs.append(output)

    @scorer(metrics=[accuracy()])
    def end_state():
        async def score(state, target):
            row = outcome[(state.sample_id, state.epoch)]
            notes = {key: row[key] for key in ("steps", "tool_errors", "cost", "category")
                     if key in row}  # what the grader read from the trajectory
            return Score(value="C" if row["success"] else "I", metadata=notes)

        return score

    tasks = list(dict.fromkeys(row["task"] for row in rows))
    epochs = len(rows) // len(tasks)
    task = Task(
        name=name,
        dataset=[Sample(id=task, input="organize the files") for task in tasks],
        scorer=end_state(),
    )
    model = get_model("mockllm/model", custom_outputs=outputs)
    log_dir = str(HERE / "logs" / name)
    log = eval(task, model=model, epochs=epochs, log_dir=log_dir, display="none")[0]
    return log.location


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inspect", action="store_true", help="also write an Inspect log")
    args = parser.parse_args()
    write("exercise1.csv", exercise1())
    write("exercise3_v1.csv", exercise3(fixed=False))
    write("exercise3_v2.csv", exercise3(fixed=True))
    if args.inspect:
        print(inspect_log(exercise1(), "exercise1"))
        print(inspect_log(exercise3(fixed=False), "exercise3"))


if __name__ == "__main__":
    main()
