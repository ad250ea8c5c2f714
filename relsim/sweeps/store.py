"""Where a sweep keeps its results: an append-only journal beside the output, and the output.

The journal ``OUT.journal.jsonl`` opens with a manifest line (the grid's and the base
scenario's SHA-256, the number of points, the method, the relsim version); then one JSON line
per finished point, appended and flushed to disk as each batch of points finishes. A sweep run
again reads it, computes only the points it lacks, and refuses a journal written for another
grid or base. A line cut short by a crash (the last one, with no newline) is dropped. Floats
are written with Python's ``repr`` (``Infinity`` and ``NaN`` included), so a resumed sweep's
numbers are bit-for-bit those of an uninterrupted one.

The output (``.parquet`` or ``.csv``) is written once all points are in, through a temporary
file renamed into place, so it is never half-written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from relsim.errors import RelsimError, invalid

__all__ = ["FORMATS", "Journal", "check_output", "journal_path", "write_frame"]

#: Output suffixes and the format each chooses.
FORMATS = (".parquet", ".csv")
_FORMAT_VERSION = 1


def check_output(out: str | Path) -> Path:
    """The output path, or an error when its suffix chooses no format."""
    path = Path(out)
    if path.suffix.lower() not in FORMATS:
        raise invalid("out", "a file name ending in .parquet or .csv", str(out))
    return path


def journal_path(out: str | Path) -> Path:
    """``OUT.journal.jsonl``: the journal that makes the sweep writing ``OUT`` resumable."""
    path = Path(out)
    return path.with_name(path.name + ".journal.jsonl")


class Journal:
    """The append-only record of a sweep's finished points (see the module docstring).

    Use :meth:`open`; ``done`` maps each finished point to its columns.
    """

    def __init__(self, path: Path, manifest: Mapping[str, Any], done: dict[int, dict[str, Any]]):
        self.path = path
        self.manifest = dict(manifest)
        self.done = done
        self._file = open(path, "a", encoding="utf-8")

    @classmethod
    def open(cls, path: str | Path, manifest: Mapping[str, Any]) -> "Journal":
        """Open (or create) the journal for a sweep described by ``manifest``.

        Raises
        ------
        relsim.errors.RelsimError
            When the journal was written by a sweep of another grid, base or relsim version.
        """
        path = Path(path)
        done: dict[int, dict[str, Any]] = {}
        if path.exists() and path.stat().st_size > 0:
            done = _read(path, manifest)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8") as file:
                file.write(json.dumps({"relsim_sweep": _FORMAT_VERSION, **manifest}) + "\n")
                _sync(file)
        return cls(path, manifest, done)

    def append(self, rows: Iterable[tuple[int, Mapping[str, Any]]]) -> None:
        """Record finished points and push them to disk before returning."""
        lines = []
        for index, row in rows:
            if index in self.done:  # a task dask ran twice (after a lost worker)
                continue
            self.done[index] = dict(row)
            lines.append(json.dumps({"point": index, **row}) + "\n")
        if lines:
            self._file.write("".join(lines))
            _sync(self._file)

    def close(self) -> None:
        """Close the journal's file (what was appended is already on disk)."""
        self._file.close()

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _read(path: Path, manifest: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    with open(path, "rb") as file:
        data = file.read()
    complete = data.rfind(b"\n") + 1
    if complete < len(data):  # the last line was cut short by a crash: drop it
        with open(path, "r+b") as file:
            file.truncate(complete)
    lines = data[:complete].decode("utf-8").splitlines()
    if not lines:
        raise RelsimError(f"{path}: not a sweep journal (no manifest); delete it to start over")
    try:
        head = json.loads(lines[0])
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("relsim_sweep") != _FORMAT_VERSION:
        raise RelsimError(f"{path}: not a sweep journal of this relsim; delete it to start over")
    _check_manifest(path, head, manifest)
    done: dict[int, dict[str, Any]] = {}
    for number, line in enumerate(lines[1:], start=2):
        try:
            record = json.loads(line)
            index = record.pop("point")
        except (json.JSONDecodeError, KeyError, AttributeError, TypeError):
            raise RelsimError(
                f"{path} line {number}: not a sweep record; delete the journal to start over"
            ) from None
        if not isinstance(index, int) or not 0 <= index < manifest["points"]:
            raise invalid(f"{path} line {number}: point", f"an integer in 0..{manifest['points'] - 1}", index)
        done.setdefault(index, record)
    return done


def _check_manifest(path: Path, head: Mapping[str, Any], manifest: Mapping[str, Any]) -> None:
    fix = f"delete {path} to start over, or restore what changed"
    if head.get("base") != manifest["base"]:
        raise RelsimError(
            f"{path}: the base scenario has changed since this sweep began "
            f"(its journal holds {_count(path)} points of the old one); {fix}"
        )
    if head.get("grid") != manifest["grid"] or head.get("points") != manifest["points"]:
        raise RelsimError(
            f"{path}: the grid has changed since this sweep began (method, mode, axes, trials "
            f"or seed); {fix}"
        )
    if head.get("relsim") != manifest["relsim"]:
        raise RelsimError(
            f"{path}: was written by relsim {head.get('relsim')}, this is relsim "
            f"{manifest['relsim']}; the engines' numbers may differ, so {fix}"
        )


def _count(path: Path) -> int:
    with open(path, "rb") as file:
        return max(0, file.read().count(b"\n") - 1)


def _sync(file: Any) -> None:
    file.flush()
    os.fsync(file.fileno())


def write_frame(frame: Any, out: str | Path) -> None:
    """Write ``frame`` to ``out`` (.parquet or .csv), atomically: a temporary file renamed."""
    path = check_output(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if path.suffix.lower() == ".parquet":
            frame.to_parquet(temporary, index=False)
        else:
            frame.to_csv(temporary, index=False)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
