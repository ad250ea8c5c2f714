"""The command line's one error family: bad input exits 2, a bug exits 1 and looks like one.

Only ``relsim.errors.RelsimError`` is bad input (one line on stderr, exit 2, no traceback).
Anything else that escapes a command is an internal error: exit 1 and one line naming the
exception, with the traceback only under ``--debug`` or ``RELSIM_DEBUG=1``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import relsim
import relsim.exact
from relsim.cli import main
from relsim.errors import RelsimError, invalid
from relsim.scenario import ScenarioError

ROOT = Path(__file__).resolve().parents[1]
LESSON = str(ROOT / "scenarios" / "lesson_25_steps.toml")
HINT = "(please report; run with --debug or RELSIM_DEBUG=1 for the traceback)"


def _engine_raising(error: BaseException):
    def evaluate(*args, **kwargs):
        raise error

    return evaluate


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def _no_debug_from_the_environment(monkeypatch):
    monkeypatch.delenv("RELSIM_DEBUG", raising=False)


# ----------------------------------------------------------------------------- the family
def test_relsim_error_is_exported_and_is_a_value_error():
    assert relsim.RelsimError is RelsimError
    assert "RelsimError" in relsim.__all__
    assert issubclass(RelsimError, ValueError)
    assert issubclass(ScenarioError, RelsimError)
    assert str(invalid("steps", "an integer >= 1", 0)) == "steps: must be an integer >= 1, got 0"


# ---------------------------------------------------------------------- bad input: exit 2
def test_relsim_error_from_an_engine_exits_2_with_one_line(monkeypatch, capsys):
    error = invalid("tol", "a number in (0, 1e-3]", 1.0)
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(error))
    assert main(["evaluate", LESSON]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _lines(captured.err) == ["relsim: error: tol: must be a number in (0, 1e-3], got 1.0"]


def test_missing_file_exits_2_naming_the_file(tmp_path, capsys):
    missing = tmp_path / "no_such.toml"
    assert main(["evaluate", str(missing)]) == 2
    lines = _lines(capsys.readouterr().err)
    assert len(lines) == 1
    assert lines[0].startswith(f"relsim: error: {missing}: cannot read")


def test_a_directory_instead_of_a_file_exits_2(tmp_path, capsys):
    # IsADirectoryError is an OSError: it must become a RelsimError where the file is read
    assert main(["evaluate", str(tmp_path)]) == 2
    lines = _lines(capsys.readouterr().err)
    assert len(lines) == 1 and "cannot read" in lines[0] and "Traceback" not in lines[0]


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate"])
    assert exit_.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


# --------------------------------------------------------------------- a bug: exit 1
@pytest.mark.parametrize(
    "error, shown",
    [
        (ZeroDivisionError("float division by zero"), "ZeroDivisionError: float division by zero"),
        # a plain ValueError is not bad input: the engine has a bug
        (ValueError("operands could not be broadcast"), "ValueError: operands could not be broadcast"),
        (OSError("disk on fire"), "OSError: disk on fire"),
    ],
)
def test_any_other_exception_is_an_internal_error(monkeypatch, capsys, error, shown):
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(error))
    assert main(["evaluate", LESSON]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _lines(captured.err) == [f"relsim: internal error: {shown} {HINT}"]
    assert "Traceback" not in captured.err


def test_debug_flag_prints_the_traceback(monkeypatch, capsys):
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(ZeroDivisionError("boom")))
    assert main(["--debug", "evaluate", LESSON]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert "raise error" in err  # the frame that raised is shown
    assert _lines(err)[-1] == f"relsim: internal error: ZeroDivisionError: boom {HINT}"


def test_debug_after_the_command_works_too(monkeypatch, capsys):
    # the hint says "run with --debug": appending it to the failing command line must work
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(ZeroDivisionError("boom")))
    assert main(["evaluate", LESSON, "--debug"]) == 1
    assert "Traceback" in capsys.readouterr().err


@pytest.mark.parametrize("value, traceback", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_relsim_debug_environment_variable(monkeypatch, capsys, value, traceback):
    monkeypatch.setenv("RELSIM_DEBUG", value)
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(ZeroDivisionError("boom")))
    assert main(["evaluate", LESSON]) == 1
    assert ("Traceback" in capsys.readouterr().err) is traceback


def test_debug_does_not_change_bad_input(monkeypatch, capsys, tmp_path):
    # bad input stays one line even with --debug: the traceback is for bugs
    assert main(["--debug", "evaluate", str(tmp_path / "missing.toml")]) == 2
    err = capsys.readouterr().err
    assert len(_lines(err)) == 1 and "Traceback" not in err


def test_a_long_message_stays_one_short_line(monkeypatch, capsys):
    message = "first line\nsecond line " + "x" * 1000
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(RuntimeError(message)))
    assert main(["evaluate", LESSON]) == 1
    (line,) = _lines(capsys.readouterr().err)
    assert line.startswith("relsim: internal error: RuntimeError: first line second line xxx")
    assert line.endswith(HINT) and len(line) < 400


# ------------------------------------------------------------------ interrupts stay as they were
def test_ctrl_c_exits_130(monkeypatch, capsys):
    monkeypatch.setattr(relsim.exact, "evaluate", _engine_raising(KeyboardInterrupt()))
    assert main(["evaluate", LESSON]) == 130
    assert _lines(capsys.readouterr().err) == ["relsim: interrupted"]


def test_the_console_command_exits_with_the_mapped_status(tmp_path):
    # the real process: the exit status reaches the shell and stderr holds one line
    out = subprocess.run(
        [sys.executable, "-m", "relsim", "evaluate", str(tmp_path / "missing.toml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 2
    assert len(_lines(out.stderr)) == 1 and "Traceback" not in out.stderr
