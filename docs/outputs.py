"""The command outputs shown in the documentation: find them, run them, check or rewrite them.

    python3 docs/outputs.py            # rewrite every shown output from a fresh run
    python3 docs/outputs.py --check    # exit 1 and show the differences if any output is stale

A shown output is a fenced ``console`` block in README.md or a page under docs/. Each line
that starts with ``$ relsim`` is a command; the lines after it, up to the next command, are
what it prints: its standard error, then its standard output. A command that exits with a
status other than 0 says so in a shell comment at the end of its line, ``# exit status 3``.
tests/test_docs.py runs every command through :func:`relsim.cli.main` and compares.

Each command runs in a fresh folder that holds the repository's ``scenarios/``,
the files of each ``examples/`` folder and ``docs/examples/`` (so files the command writes land there, never
in the repository). Inspect logs under ``examples/harness/logs/`` are made once per run by
``examples/harness/make_trials.py`` on Inspect's mock model. Two figures of an Inspect log
measure the run itself (``working_time``, ``total_time``): their lines are compared by their
first word only.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib.util
import io
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Run as a script, Python puts docs/ first on the path, and `import relsim` would find
# whichever relsim is installed (another checkout's, say): the outputs are this checkout's.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```console\n(.*?)^```$", re.M | re.S)
EXIT = re.compile(r"#\s*exit status (\d+)\s*$")
#: lines whose figures measure the run itself (an Inspect log's own timing)
TIMED = ("working_time", "total_time")


@dataclass(frozen=True)
class Shown:
    """One command of a console block and the output shown under it."""

    page: Path
    line: int  # of the ``$ relsim`` line, 1-based
    command: str  # as written, without the leading ``$ ``
    argv: tuple[str, ...]  # the arguments after ``relsim``
    status: int
    output: str
    span: tuple[int, int]  # character offsets of the output in the page

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def shown(page: Path) -> list[Shown]:
    """Every command of every console block of a page, in order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for block in FENCE.finditer(text):
        start = block.start(1)
        body = block.group(1)
        offsets = [m.start() for m in re.finditer(r"^\$ ", body, re.M)]
        if not offsets or offsets[0] != 0:
            raise ValueError(f"{page}: a console block must start with a '$ relsim' line")
        for i, offset in enumerate(offsets):
            end = offsets[i + 1] if i + 1 < len(offsets) else len(body)
            command, _, output = body[offset:end].partition("\n")
            command = command[2:]
            words = shlex.split(command, comments=True)
            if words[:1] != ["relsim"]:
                raise ValueError(f"{page}: a console block runs relsim only, got {command!r}")
            match = EXIT.search(command)
            line = text.count("\n", 0, start + offset) + 1
            found.append(
                Shown(page, line, command, tuple(words[1:]), int(match.group(1)) if match else 0,
                      output, (start + offset + len(command) + 3, start + end))
            )
    return found


def everything() -> list[Shown]:
    """Every shown command of README.md and docs/, in page order."""
    return [item for page in PAGES for item in shown(page)]


def needs_inspect_logs(items: list[Shown]) -> bool:
    return any("examples/harness/logs" in " ".join(item.argv) for item in items)


def make_inspect_logs(folder: Path) -> Path:
    """Write the harness's Inspect logs under ``folder/logs`` (Inspect's mock model, offline)."""
    path = ROOT / "examples" / "harness" / "make_trials.py"
    spec = importlib.util.spec_from_file_location("make_trials", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.HERE = folder  # the script writes beside itself; here, into the scratch folder
    before = os.environ.get("INSPECT_LOG_DIR")
    os.environ["INSPECT_LOG_DIR"] = str(folder / "logs")
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            module.inspect_log(module.exercise1(), "exercise1")
            module.inspect_log(module.exercise3(fixed=False), "exercise3")
    finally:
        if before is None:
            del os.environ["INSPECT_LOG_DIR"]
        else:
            os.environ["INSPECT_LOG_DIR"] = before
    return folder / "logs"


def sandbox(folder: Path, logs: Path | None = None) -> Path:
    """A working folder with the repository's inputs linked in (outputs stay in the folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scenarios").symlink_to(ROOT / "scenarios", target_is_directory=True)
    (folder / "docs").mkdir()
    (folder / "docs" / "examples").symlink_to(ROOT / "docs" / "examples", target_is_directory=True)
    for example in (ROOT / "examples").iterdir():
        if example.is_dir():
            (folder / "examples" / example.name).mkdir(parents=True)
            for file in example.iterdir():
                if file.is_file():
                    (folder / "examples" / example.name / file.name).symlink_to(file)
    harness = folder / "examples" / "harness"
    if logs is not None:
        (harness / "logs").symlink_to(logs, target_is_directory=True)
    return folder


def run(argv: tuple[str, ...], folder: Path) -> tuple[int, str]:
    """Run ``relsim ARGV`` in-process in ``folder``: (exit status, stderr + stdout)."""
    from relsim.cli import main

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(argv))
            except SystemExit as stop:  # argparse's usage errors
                status = stop.code if isinstance(stop.code, int) else 1
    finally:
        os.chdir(here)
    return status, err.getvalue() + out.getvalue()


def normalise(text: str) -> list[str]:
    """Lines without trailing blanks or trailing empty lines; timed lines by their first word."""
    lines = [line.rstrip() for line in text.rstrip().splitlines()]
    return [line.split()[0] if line.split()[:1] and line.split()[0] in TIMED else line
            for line in lines]


def main(argv: list[str] | None = None) -> int:
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    items = everything()
    stale = 0
    with tempfile.TemporaryDirectory() as scratch:
        logs = make_inspect_logs(Path(scratch) / "inspect") if needs_inspect_logs(items) else None
        fresh: dict[Path, list[tuple[Shown, str]]] = {}
        for i, item in enumerate(items):
            status, output = run(item.argv, sandbox(Path(scratch) / f"run{i}", logs))
            if status != item.status:
                print(f"{item.name}: {item.command}: exit status {status}, shown {item.status}")
                stale += 1
            if normalise(output) != normalise(item.output):
                stale += 1
                sys.stdout.writelines(difflib.unified_diff(
                    item.output.splitlines(True), output.splitlines(True), item.name, "fresh"))
            fresh.setdefault(item.page, []).append((item, output))
    if not check:
        for page, pairs in fresh.items():
            text = page.read_text(encoding="utf-8")
            for item, output in reversed(pairs):  # from the end, so earlier offsets hold
                lines = [line.rstrip() for line in output.rstrip().splitlines()]
                body = "".join(line + "\n" for line in lines)
                text = text[: item.span[0]] + body + text[item.span[1]:]
            page.write_text(text, encoding="utf-8")
    print(f"{len(items)} shown outputs, {stale} stale" + ("" if check else " (rewritten)"))
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
