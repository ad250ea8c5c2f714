"""Where a sweep keeps its results: an append-only journal beside the output, and the output.

The journal ``OUT.journal.jsonl`` opens with a manifest line (the grid's and the base
scenario's SHA-256, the number of points, the method, the relsim version); then one JSON line
per finished point, appended and flushed to disk as each batch of points finishes. A sweep run
again reads it, computes only the points it lacks, and refuses a journal written for another
grid or base. A line cut short by a crash (the last one, with no newline) is dropped. Floats
are written with Python's ``repr`` (``Infinity`` and ``NaN`` included), so a resumed sweep's
numbers are bit-for-bit those of an uninterrupted one. Every record read back is checked
(``Journal.open``'s ``check``) before its numbers reach a row: a damaged journal (not UTF-8,
nested past the parser's reach, a record without its columns or with a share of 7.5) is
refused naming its line.

The output (``.parquet`` or ``.csv``) and the journal are checked before the first point runs
(:func:`check_output`), and the output is written once all points are in, through a temporary
file renamed into place, so it is never half-written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from relsim import checks
from relsim.errors import RelsimError, invalid, show

__all__ = ["FORMATS", "Journal", "check_output", "journal_path", "write_frame"]

#: Output suffixes and the format each chooses.
FORMATS = (".parquet", ".csv")
_FORMAT_VERSION = 1
#: The largest journal read back: its manifest line, and a record line per point (a timeline
#: point's 40-odd columns take about 1.5 KB; anything near this bound is not a journal).
_MANIFEST_BYTES = 2**20
_RECORD_BYTES = 2**14

#: ``check(point, row)``: raises a RelsimError for a record this sweep could not have written.
RowCheck = Callable[[int, Mapping[str, Any]], None]


def check_output(out: str | Path) -> Path:
    """The output path, or an error when its suffix chooses no format or it cannot be written
    (a folder, a FIFO, a device, under a file: :func:`relsim.checks.output_file`; a missing
    folder is made when the rows are written). Checked before the first point runs."""
    if not isinstance(out, (str, os.PathLike)):
        raise invalid("out", "a file name ending in .parquet or .csv, or None", out)
    path = Path(out)
    if path.suffix.lower() not in FORMATS:
        raise invalid("out", "a file name ending in .parquet or .csv", str(out))
    checks.output_file(path, "out", make_folders=True)
    checks.output_file(journal_path(path), "out (its journal)", make_folders=True)
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
    def open(
        cls, path: str | Path, manifest: Mapping[str, Any], check: RowCheck | None = None
    ) -> "Journal":
        """Open (or create) the journal for a sweep described by ``manifest``.

        ``check(point, row)`` validates each record read back (a resumed sweep writes the
        journal's numbers into its rows): it raises a ``RelsimError`` for a record that this
        sweep could not have written.

        Raises
        ------
        relsim.errors.RelsimError
            When the journal was written by a sweep of another grid, base or relsim version,
            or is damaged (not UTF-8, a record without its columns or with a value out of
            range, nesting beyond the JSON parser's reach), naming the line.
        """
        path = checks.output_file(path, "out (its journal)", make_folders=True)
        done: dict[int, dict[str, Any]] = {}
        try:
            if path.exists() and path.stat().st_size > 0:
                done = _read(path, manifest, check)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "w", encoding="utf-8") as file:
                    file.write(json.dumps({"relsim_sweep": _FORMAT_VERSION, **manifest}) + "\n")
                    _sync(file)
            return cls(path, manifest, done)
        except OSError as error:
            raise RelsimError(f"{path}: cannot write the sweep journal: {error.strerror or error}") from None

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


def _read(path: Path, manifest: Mapping[str, Any], check: RowCheck | None) -> dict[int, dict[str, Any]]:
    start_over = "delete the journal to start over"
    limit = _MANIFEST_BYTES + manifest["points"] * _RECORD_BYTES
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise RelsimError(
            f"{path}: must be a sweep journal of at most {limit:,} bytes for "
            f"{manifest['points']:,} points, got a larger file; {start_over}"
        )
    complete = data.rfind(b"\n") + 1
    if complete < len(data):  # the last line was cut short by a crash: drop it
        with open(path, "r+b") as file:
            file.truncate(complete)
    lines = data[:complete].split(b"\n")[:-1]
    if not lines:
        raise RelsimError(f"{path}: not a sweep journal (no manifest); delete it to start over")
    head = _json_line(lines[0])
    if not isinstance(head, dict) or head.get("relsim_sweep") != _FORMAT_VERSION:
        raise RelsimError(f"{path}: not a sweep journal of this relsim; delete it to start over")
    _check_manifest(path, head, manifest)
    done: dict[int, dict[str, Any]] = {}
    for number, line in enumerate(lines[1:], start=2):
        where = f"{path} line {number}"
        record = _json_line(line)
        if not isinstance(record, dict) or "point" not in record:
            raise RelsimError(f"{where}: not a sweep record; {start_over}")
        index = record.pop("point")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < manifest["points"]:
            raise RelsimError(
                f"{where}: point: must be an integer in 0..{manifest['points'] - 1}, got "
                f"{show(index)}; {start_over}"
            )
        if check is not None:
            try:
                check(index, record)
            except RelsimError as error:
                raise RelsimError(f"{where}: {error}; {start_over}") from None
        done.setdefault(index, record)
    return done


def _json_line(line: bytes) -> Any:
    """One line of JSON, or None when it is not (not UTF-8, bad syntax, nested too deep)."""
    try:
        return json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return None


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
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() == ".parquet":
            frame.to_parquet(temporary, index=False)
        else:
            frame.to_csv(temporary, index=False)
        os.replace(temporary, path)
    except OSError as error:  # a full disk: the points stay in the journal
        raise RelsimError(
            f"out: cannot write {str(path)!r}: {error.strerror or error} (the finished points "
            f"are kept in {journal_path(path)}; run the sweep again to write them)"
        ) from None
    finally:
        temporary.unlink(missing_ok=True)
