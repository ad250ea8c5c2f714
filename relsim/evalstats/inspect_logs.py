"""Reading Inspect eval logs (UK AISI's ``inspect_ai``) as trials, through Inspect's own reader.

One trial per sample and epoch: the sample id is the task, the epoch the trial, the chosen
scorer's value the success. Values ``"C"`` (correct) and ``"I"`` (incorrect), booleans and
0/1 are success as they are; ``"N"`` (no answer) is a failure; ``"P"`` (partial, 0.5) and other
numbers need a ``threshold`` (success when ``value >= threshold``). Token usage summed over the
models a sample called (``input_tokens``, ``output_tokens``, ``total_tokens``, and the
provider's ``total_cost`` as ``cost`` when reported) and the sample's ``working_time`` and
``total_time`` (seconds) become metric columns when the log has them, and so do the scalar
entries of the score's and the sample's ``metadata`` (numbers as metrics, text such as a
failure ``category`` as text; the score's first, and never over the columns above). A sample
that errored
(the eval failed, not the agent) is not a trial: it is reported apart, never as a failure.

``inspect_ai`` is an optional extra (``pip install 'agent-relsim[inspect]'``), imported only
when a log is read.
"""

from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from relsim.errors import RelsimError, invalid, show
from relsim.evalstats._common import TrialDataError, source_path
from relsim.evalstats._frames import MAX_FILE_BYTES, check_file, check_trials

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["read_inspect_log"]

# Inspect's letter grades (inspect_ai.scorer CORRECT, INCORRECT, PARTIAL, NOANSWER)
_BINARY = {"C": 1.0, "I": 0.0, "N": 0.0}
_GRADES = {"C": 1.0, "I": 0.0, "N": 0.0, "P": 0.5}
_USAGE = ("input_tokens", "output_tokens", "total_tokens")


def _not_a_log(file: Path, error: Exception) -> str:
    """What a file Inspect could not read is: for JSON that is not a log (an audit, a list),
    its shape, rather than pydantic's validation report; for an .eval log that is no zip,
    that; else Inspect's error, cut short."""
    if file.suffix.lower() == ".json":
        import json

        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as reading:
            return f"a file that is not JSON ({' '.join(str(reading).split())[:120]})"
        if not isinstance(data, dict):
            return f"a JSON {type(data).__name__}, not an object"
        if "eval" not in data:
            keys = ", ".join(map(str, list(data)[:8])) or "none"
            return f"a JSON object without Inspect's 'eval' key (keys {keys})"
    elif file.suffix.lower() == ".eval":
        import zipfile

        if not zipfile.is_zipfile(file):
            return "a file that is not a zip archive (an .eval log is one)"
    return f"{type(error).__name__}: {' '.join(str(error).split())[:160]}"


def read_inspect_log(
    source: str | Path,
    *,
    scorer: str | None = None,
    threshold: float | None = None,
    metric: str | Iterable[str] = (),
) -> pd.DataFrame:
    """Read an Inspect eval log (a ``.eval`` or ``.json`` file, or a directory of them).

    Parameters
    ----------
    source : str or Path
        A log file, or a directory whose ``.eval`` and ``.json`` logs (searched recursively)
        are read together; with logs of several Inspect tasks, each task name is prefixed to
        the sample id (``task/id``).
    scorer : str, optional
        The scorer whose value is success; needed when the samples carry several.
    threshold : float, optional
        Numeric or partial values: success when ``value >= threshold``.
    metric : str or iterable of str
        Scorers whose values become numeric metric columns, each named after its scorer;
        ``"score"`` is the success scorer's own value (a column ``score``), so a numeric
        score is reported with its mean and interval, not only binarised by ``threshold``.

    Returns
    -------
    pandas.DataFrame
        The trials frame of :func:`relsim.evalstats.read_trials` (``line`` is the sample's
        position in its log), with ``attrs["relsim_errors"]``: the errored samples as
        ``{task, trial, error}``, and ``attrs["relsim_inspect"]``: for each log, its task,
        scorer, epochs and Inspect's own headline for that scorer under each epoch reducer
        (``{"reducer", "metrics"}``), read from the log's results.

    Raises
    ------
    RelsimError
        When ``inspect_ai`` is not installed, and for a log that cannot be read, a missing or
        ambiguous scorer, or a value that is not a success (see :func:`read_trials` for the
        rest); messages name the log and the sample.
    """
    path = source_path(source, "source", "a file or folder path (str or os.PathLike)")
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as error:
        raise RelsimError(
            "inspect: must be installed to read Inspect eval logs (pip install "
            f"'agent-relsim[inspect]'), got {type(error).__name__}: {error}"
        ) from None

    if path.is_dir():
        files = sorted(
            p for p in path.rglob("*") if p.suffix.lower() in (".eval", ".json") and p.is_file()
        )
        if not files:
            raise TrialDataError(f"{path}: logs: must hold .eval or .json Inspect logs, got none")
    else:
        check_file(path)
        files = [path]
    name = str(path)

    logs = []
    for file in files:
        if file.stat().st_size > MAX_FILE_BYTES:
            check_file(file)
        try:
            log = read_eval_log(str(file))
        except Exception as error:  # Inspect raises many types for a file that is not a log
            raise TrialDataError(
                f"{file}: log: must be an Inspect eval log, got {_not_a_log(file, error)}"
            ) from None
        logs.append((file, log))
    several = len({log.eval.task for _, log in logs}) > 1
    try:
        wanted = [] if metric is None else [metric] if isinstance(metric, str) else list(metric)
    except TypeError:
        raise invalid("metric", "scorer names (or score, the success scorer's value)",
                      metric) from None
    for column in wanted:
        if not isinstance(column, str) or column in ("task", "trial", "success", "line"):
            raise invalid("metric", "scorer names (or score, the success scorer's value)",
                          column)

    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    errored: list[dict[str, str]] = []
    chosen = scorer
    for file, log in logs:
        where = f"{file} sample" if len(logs) > 1 else f"{name} sample"
        for position, sample in enumerate(log.samples or [], start=1):
            task = f"{log.eval.task}/{sample.id}" if several else str(sample.id)
            if sample.error is not None:
                message = " ".join(str(sample.error.message).split())
                errored.append({"task": task, "trial": str(sample.epoch), "error": message[:200]})
                continue
            scores = sample.scores or {}
            if not scores:
                raise TrialDataError(f"{where} {position}: scores: must hold a score, got none")
            if chosen is None:
                if len(scores) > 1:
                    raise invalid(
                        "scorer",
                        f"named (scorer=NAME) when samples carry several: {', '.join(scores)}",
                        None,
                    )
                chosen = next(iter(scores))
            if chosen not in scores:
                close = difflib.get_close_matches(chosen, list(scores), n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise TrialDataError(
                    f"{where} {position}: scorer: must be one of {', '.join(scores)}{hint}, "
                    f"got {chosen!r}"
                )
            row = {
                "task": task,
                "trial": str(sample.epoch),
                "success": _success(scores[chosen].value, threshold, f"{where} {position}"),
            }
            for column in wanted:
                source_name = chosen if column == "score" else column
                if source_name not in scores:
                    raise TrialDataError(
                        f"{where} {position}: metric: must be one of score, "
                        f"{', '.join(scores)}, got {column!r}"
                    )
                row[column] = _number(scores[source_name].value, f"{where} {position}")
            usage = sample.model_usage or {}
            for key in _USAGE:
                found = [getattr(u, key) for u in usage.values() if getattr(u, key) is not None]
                if found:
                    row[key] = repr(float(sum(found)))
            costs = [u.total_cost for u in usage.values() if u.total_cost is not None]
            if costs:
                row["cost"] = repr(float(sum(costs)))
            for key in ("working_time", "total_time"):
                value = getattr(sample, key, None)
                if value is not None:
                    row[key] = repr(float(value))
            # what the scorer and the sample recorded about the trial (a failure category,
            # tool errors, steps): scalar metadata become columns, the score's first
            for metadata in (scores[chosen].metadata or {}, sample.metadata or {}):
                for key, value in metadata.items():
                    text = _cell(value)
                    if text is not None and str(key) not in row and str(key) != "line":
                        row[str(key)] = text
            rows.append(row)
            lines.append(position)
    if not rows and errored:
        raise TrialDataError(
            f"{name}: samples: must include one that did not error, got {len(errored)} "
            f"errored (first: {errored[0]['error'][:80]})"
        )
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [np.array([row.get(c, "") for row in rows], dtype=object) for c in columns]
    frame = check_trials(
        name, "sample", columns, cells, np.asarray(lines, dtype=np.int64), None
    )
    frame.attrs["relsim_errors"] = errored
    frame.attrs["relsim_scorer"] = chosen
    frame.attrs["relsim_inspect"] = [
        _headline(file, log, chosen, threshold) for file, log in logs
    ]
    return frame


def _headline(
    file: Path, log: Any, chosen: str | None, threshold: float | None
) -> dict[str, Any]:
    """Inspect's own results for the chosen scorer: each epoch reducer and its metrics."""
    config = log.eval.config
    reducers = []
    for score in getattr(log.results, "scores", None) or []:
        if chosen is not None and chosen in (score.scorer, score.name):
            metrics = {
                str(name): float(value.value)
                for name, value in (score.metrics or {}).items()
                if isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
            }
            reducers.append({"reducer": str(score.reducer or "mean"), "metrics": metrics})
    return {
        "log": str(file),
        "task": str(log.eval.task),
        "scorer": chosen,
        "epochs": int(config.epochs or 1),
        "reducers": reducers,
        "threshold": threshold,
    }


def _number(value: Any, where: str) -> str:
    """A score value as the text of a number (letter grades as Inspect counts them)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)) and math.isfinite(value):
        return repr(float(value))
    if isinstance(value, str) and value.strip().upper() in _GRADES:
        return repr(_GRADES[value.strip().upper()])
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return repr(number)
    raise TrialDataError(f"{where}: metric: must be a numeric score value, got {show(value)}")


def _cell(value: Any) -> str | None:
    """A scalar metadata value as a text cell (None for lists, dicts and the like)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(float(value)) if math.isfinite(value) else None
    if isinstance(value, str):
        return value.strip()
    return None


def _success(value: Any, threshold: float | None, where: str) -> str:
    """A score value as the text ``"1"`` or ``"0"``."""
    if threshold is not None and not (
        isinstance(threshold, (int, float)) and math.isfinite(threshold)
    ):
        raise invalid("threshold", "a finite number", threshold)
    number: float | None = None
    if isinstance(value, bool):
        number = float(value)
    elif isinstance(value, (int, float)) and math.isfinite(value):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if text.upper() in _GRADES:
            number = (_GRADES if threshold is not None else _BINARY).get(text.upper())
            if number is None:
                raise TrialDataError(
                    f"{where}: success: must be C, I or N (or a partial P with threshold=T), "
                    f"got {show(value)}"
                )
        else:
            try:
                number = float(text)
            except ValueError:
                number = None
    if number is None or not math.isfinite(number):
        raise TrialDataError(
            f"{where}: success: must be a score value C/I, a boolean or a number, "
            f"got {show(value)}"
        )
    if threshold is None:
        if number not in (0.0, 1.0):
            raise TrialDataError(
                f"{where}: success: must be C/I, a boolean or 0/1 (or a score with "
                f"threshold=T), got {show(value)}"
            )
        return "1" if number == 1.0 else "0"
    return "1" if number >= threshold else "0"
