"""The second hostile corpus (issue 24): every case is answered by the contract.

Exit 0, 2 (one line on stderr: no traceback, no warning before it) or 3; never a hang; nothing
written outside the requested output; the Python API's bad input always a ``RelsimError``. A
test per *kind* of case, parametrised over the cases of that kind. Where a regression would
hang (a FIFO read, a scheduler that never answers, a run that should have been refused), the
case runs in a subprocess with a timeout, or with the engine's run replaced by a guard that
fails at once if it is reached ("refused before anything runs").
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import relsim
from relsim.cli import main
from relsim.errors import RelsimError
from relsim.scenario import Backoff, Duration, Scenario
from relsim.scenario.time_tables import MAX_SECONDS, backoff_wait
from relsim.sweeps import Grid, point_seed, sweep
from relsim.sweeps.store import journal_path

ROOT = Path(__file__).resolve().parents[1]
LESSON = str(ROOT / "scenarios" / "lesson_25_steps.toml")
FLEET = str(ROOT / "scenarios" / "fleet_rate_limits.toml")
BASE = "steps = 5\np = 0.9\n[verifier]\nmiss = 0.05\n[retries]\nper_step = 2\n"
HUGE = "1" + "0" * 400  # a 401-digit integer


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's own usage errors
        status = int(exit_.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _one_error_line(err: str) -> str:
    """The contract of exit 2: one line on stderr, ours, no traceback and no warning."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("relsim: error: "), err
    assert "Traceback" not in err and "Warning:" not in err and "relsim: warning" not in err
    return lines[0]


def _relsim(*args: str, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    """``python -m relsim ARGS`` in a fresh process, killed after ``timeout`` seconds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("RELSIM_DEBUG", None)
    kwargs.setdefault("stdout", subprocess.PIPE)
    return subprocess.run([sys.executable, "-m", "relsim", *args], stderr=subprocess.PIPE, text=True,
                          timeout=timeout, env=env, **kwargs)


def _python(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.fixture(autouse=True)
def _no_debug_from_the_environment(monkeypatch):
    monkeypatch.delenv("RELSIM_DEBUG", raising=False)


@pytest.fixture
def no_timeline_run(monkeypatch):
    """The timeline's event loop replaced by a guard: a case refused before the run never
    reaches it, and one that is not fails at once instead of running for hours."""
    from relsim.timeline import _driver

    def guard(self):
        raise AssertionError("the timeline run started")

    monkeypatch.setattr(_driver._Run, "go", guard)


@pytest.fixture
def no_point_run(monkeypatch):
    """A sweep's points replaced by a guard (checks must come before the first point)."""
    from relsim.sweeps import execute

    def guard(*args, **kwargs):
        raise AssertionError("a point ran")

    monkeypatch.setattr(execute, "run_batch", guard)


# ------------------------------------------------------ extreme numbers in the time tables
@pytest.mark.parametrize(
    ("tables", "key"),
    [
        (f"[timing]\nattempt = 1\ndeadline = {HUGE}\n", "timing.deadline"),
        (f"[fleet]\narrivals = 'poisson'\nrate_per_hour = {HUGE}\n", "fleet.rate_per_hour"),
        (f"[timing]\nattempt = {{ median = {HUGE}, p95 = {HUGE} }}\n", "timing.attempt.median"),
        ("[timing]\nattempt = { median = 1e300, p95 = 1e301 }\n", "timing.attempt.median"),
        ("[timing]\nattempt = 1e308\n", "timing.attempt"),
        ("[timing]\nattempt = { mean = 1e308 }\n", "timing.attempt.mean"),
        ("[timing]\nattempt = 1\nbackoff = { base = inf }\n", "timing.backoff.base"),
        ("[fleet]\narrivals = 'poisson'\nrate_per_hour = 1e-305\n", "fleet.rate_per_hour"),
        ("[fleet]\narrivals = 'poisson'\nrate_per_hour = 5e-324\n", "fleet.rate_per_hour"),
        ("[resources]\ntpm = 5e-324\ntokens = 5e-324\n", "resources.tpm"),
        # uncapped, the wait before retry 2000 is 2**1999 s: past the float range
        ("[timing]\nattempt = 1\nbackoff = { base = 1, factor = 2 }\n", "timing.backoff"),
    ],
    ids=["huge deadline", "huge rate", "huge median", "median 1e300", "attempt 1e308",
         "mean 1e308", "backoff base inf", "rate 1e-305", "subnormal rate", "subnormal tpm",
         "uncapped backoff"],
)
def test_time_values_past_the_float_range_are_one_line_exit_2(tmp_path, capsys, no_timeline_run,
                                                               tables, key):
    base = BASE.replace("per_step = 2", "per_step = 2000")
    scenario = _write(tmp_path / "s.toml", base + tables)
    status, out, err = _run(["timeline", scenario, "--trials", "10", "--seed", "1"], capsys)
    assert status == 2 and out == ""
    assert f"{scenario}: {key}: must be" in _one_error_line(err)


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "{s}"],
        ["simulate", "{s}", "--trials", "10", "--seed", "1"],
        ["timeline", "{s}", "--trials", "10", "--seed", "1"],
        ["solve", "{s}", "--for", "retries", "--target", "0.9"],
        ["levers", "{s}"],
    ],
)
def test_a_401_digit_integer_in_a_time_key_is_one_line_in_every_command(tmp_path, capsys, argv):
    scenario = _write(tmp_path / "s.toml", BASE + f"[timing]\nattempt = 1\ndeadline = {HUGE}\n")
    status, _, err = _run([arg.format(s=scenario) for arg in argv], capsys)
    assert status == 2
    assert "timing.deadline: must be a finite number > 0, got 1000" in _one_error_line(err)


# ------------------------------------------------------------ backoffs that would overflow
@pytest.mark.parametrize(
    ("base", "factor", "cap"),
    [(1.0, 2.0, 60.0), (1.0, 1e300, 60.0), (0.5, 3.0, None), (2.0, 1.0, 5.0), (0.0, 1e300, 1.0),
     (7.0, 2.0, 0.0), (1e-300, 1e300, 1e300), (3.0, 1.5, 3.0)],
)
def test_the_backoff_cap_comes_before_the_power(base, factor, cap):
    # min(max, base * factor**(j-1)) in exact rational arithmetic, the float range no limit
    backoff = Backoff(base=base, factor=factor, max=cap)
    for retry in (1, 2, 3, 10, 100, 2000, 10**6):
        exact = Fraction(base) * Fraction(factor) ** (retry - 1) if retry < 3000 else None
        got = backoff_wait(backoff, retry)
        if exact is None:  # far past any cap: only the cap (or infinity) is possible
            assert got == (cap if cap is not None and factor > 1 and base > 0 else got)
            continue
        want = exact if cap is None else min(Fraction(cap), exact)
        assert got == (float(want) if want < Fraction(2) ** 1024 else math.inf)


def test_thousands_of_capped_retries_run_and_a_trial_lasts_its_attempts_and_waits():
    # Every attempt fails (p = 0), so a trial makes all 1101 attempts (past 2**1024 the old
    # power overflowed) and lasts 1101 s of attempts plus sum_{j<=1100} min(60, 2**(j-1)).
    data = {"steps": 1, "p": 0.0, "verifier": {"miss": 0.0}, "retries": {"per_step": 1100},
            "timing": {"attempt": 1, "backoff": {"base": 1, "factor": 2, "max": 60}}}
    out = relsim.simulate_timeline(data, 1, seed=5)
    waits = sum(min(60.0, 2.0 ** min(j - 1, 10)) for j in range(1, 1101))  # 2**10 > 60
    assert not out.partial and out.expected_attempts == 1101 and out.detected_failure == 1.0
    assert out.duration["mean"] == pytest.approx(1101 + waits, rel=1e-12)
    # a factor of 1e300 under a cap of 60 s: 60 s before every retry but the first
    data["timing"]["backoff"] = {"base": 1, "factor": 1e300, "max": 60}
    out = relsim.simulate_timeline(data, 1, seed=5)
    assert out.duration["mean"] == pytest.approx(1101 + 1 + 60 * 1099, rel=1e-12)


def test_a_run_at_the_duration_limit_ends_without_being_called_interrupted(tmp_path, capsys):
    scenario = _write(tmp_path / "s.toml", BASE + f"[timing]\nattempt = {MAX_SECONDS:g}\n"
                      "[fleet]\nagents = 1\ntasks = 50\n")
    status, out, err = _run(["timeline", scenario, "--replications", "2", "--seed", "1", "--json"], capsys)
    assert status == 0 and err == ""
    result = json.loads(out)
    assert result["partial"] is False and result["trials"] == 2 * 50  # 2 replications of 50
    assert math.isfinite(result["makespan"]) and result["makespan"] >= 50 * 5 * MAX_SECONDS


# ----------------------------------------------------------- runs refused with an estimate
def _long_chain(tmp_path: Path) -> str:
    return _write(tmp_path / "long.toml", "steps = 100000\np = 0.999\n[timing]\nattempt = 1\n")


@pytest.mark.parametrize(
    ("argv", "key"),
    [
        (["timeline", LESSON, "--trials", str(10**12)], "--trials"),
        (["timeline", LESSON, "--trials", "123456789012345678901234567890"], "--trials"),
        (["timeline", LESSON, "--trials", HUGE], "--trials"),
        (["timeline", FLEET, "--replications", "100000"], "--replications"),
        (["timeline", "{long}", "--trials", "100000"], "--trials"),  # compiled: 1e10 attempts
        (["timeline", FLEET, "--replications", "2", "--events", "{events}", "--record", "2000"], None),
        (["timeline", LESSON, "--trials", str(10**8), "--events", "{events}", "--record", str(10**8)],
         "--record"),
        (["simulate", LESSON, "--trials", HUGE], "--trials"),
    ],
    ids=["1e12 trials", "30 digits", "401 digits", "fleet 1e6", "100000 steps", "control",
         "record 1e8", "simulate 401 digits"],
)
def test_runs_over_the_limits_are_refused_at_once_with_an_estimate(tmp_path, capsys, no_timeline_run,
                                                                   argv, key):
    argv = [arg.format(long=_long_chain(tmp_path), events=tmp_path / "e.jsonl") for arg in argv]
    status, out, err = _run([*argv, "--seed", "1"], capsys)
    if key is None:  # control: within the limits, the run starts (and meets the guard)
        assert status == 1 and "the timeline run started" in err
        return
    line = _one_error_line(err)
    assert status == 2 and out == "" and line.startswith(f"relsim: error: {key}: must be")
    assert "estimated" in line or "2**62" in line
    assert not (tmp_path / "e.jsonl").exists()  # nothing written


def test_a_workload_over_the_limits_is_told_in_replications_or_fleet_tasks(tmp_path, capsys,
                                                                          no_timeline_run):
    # a workload's count is replications of fleet.tasks: "trials: ... run at most about
    # 48,159 trials" named a flag a workload refuses
    status, _, err = _run(["timeline", FLEET, "--replications", "100000", "--seed", "1"], capsys)
    line = _one_error_line(err)
    assert status == 2 and line.startswith("relsim: error: --replications: must be within about")
    fitting = int(re.search(r"run at most about ([\d,]+) replications of fleet.tasks = 2,000",
                            line).group(1).replace(",", ""))
    assert 5 <= fitting < 100000
    big = _write(tmp_path / "big.toml", "steps = 25\np = 0.9\n[verifier]\nmiss = 0.05\n"
                 "[retries]\nper_step = 2\n[fleet]\nagents = 40\ntasks = 1000000\n")
    for argv, runs in (([], 5), (["--replications", "2"], 2)):
        status, _, err = _run(["timeline", big, "--seed", "1", *argv], capsys)
        line = _one_error_line(err)
        assert status == 2 and line.startswith("relsim: error: fleet.tasks: must be within about")
        tasks = int(re.search(rf"; {runs} replications of at most about ([\d,]+) tasks fit",
                              line).group(1).replace(",", ""))
        assert 1 <= tasks < 1000000


def test_the_timeline_estimate_is_within_a_few_times_a_measured_run():
    import time

    design = {"steps": 25, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 2},
              "timing": {"attempt": 8, "verify": 2}, "resources": {"llm_concurrency": 4},
              "fleet": {"tasks": 50}}
    estimate = relsim.timeline.work_estimate(design, 100)  # 2 replications of 50 tasks
    start = time.perf_counter()
    relsim.simulate_timeline(design, replications=2, seed=1)
    measured = time.perf_counter() - start
    # pessimistic by design: never far below the truth (a loaded machine only slows the run)
    assert estimate.seconds > measured / 10
    assert relsim.timeline.work_estimate(design, 10**12).seconds > 86400


def test_levers_refuses_at_once_when_its_evaluations_together_exceed_the_limit(tmp_path, capsys,
                                                                                monkeypatch):
    import relsim.plan.sensitivity as sensitivity

    monkeypatch.setattr(sensitivity, "evaluate", lambda *a, **k: pytest.fail("evaluated"))
    scenario = _write(tmp_path / "s.toml", "steps = 4000\np = 0.9\n[verifier]\nmiss = 0.1\n"
                      "[retries]\nper_step = 30\ntotal = 3000\n")
    status, _, err = _run(["levers", scenario], capsys)
    line = _one_error_line(err)
    assert status == 2 and "exact evaluations, the design's and" in line and "estimated" in line


# --------------------------------------------------------- outputs checked before the run
@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("{tmp}/missing/e.jsonl", "does not exist"),
        ("{tmp}", "a folder"),
        ("{tmp}/file.txt/e.jsonl", "a folder on its path is a file"),
        ("/dev/full", "not a regular file"),
        ("", "the name of a file to write"),
        ("{tmp}/fifo", "a FIFO"),
    ],
)
def test_an_events_file_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys,
                                                                          no_timeline_run,
                                                                          target, reason):
    (tmp_path / "file.txt").write_text("kept\n")
    os.mkfifo(tmp_path / "fifo")
    target = target.format(tmp=tmp_path)
    status, _, err = _run(["timeline", LESSON, "--trials", "10", "--seed", "1", "--events", target],
                          capsys)
    assert status == 2
    line = _one_error_line(err)
    assert line.startswith("relsim: error: --events: must be") and reason in line
    assert (tmp_path / "file.txt").read_text() == "kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "file.txt"]


def test_events_with_record_0_write_an_empty_file(tmp_path, capsys):
    events = tmp_path / "e.jsonl"
    status, _, err = _run(["timeline", LESSON, "--trials", "10", "--seed", "1", "--events",
                           str(events), "--record", "0"], capsys)
    assert status == 0 and err == "" and events.read_text() == ""
    status, _, _ = _run(["timeline", LESSON, "--trials", "10", "--seed", "1", "--events",
                         str(events), "--record", "2"], capsys)  # control: two trials' events
    assert status == 0 and {json.loads(line)["trial"] for line in events.read_text().splitlines()} == {0, 1}


GRID = {"base": {"steps": 5, "p": 0.9, "verifier": {"miss": 0.05}, "retries": {"per_step": 2}},
        "axes": {"p": [0.9, 0.95]}}


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("{tmp}/folder.csv", "a folder"),
        ("{tmp}/file.txt/r.csv", "a folder on its path is a file"),
        ("{tmp}/file.txt/deeper/r.csv", "a folder on its path is a file"),
        ("{tmp}/fifo.csv", "a FIFO"),
        ("{tmp}/journal_is_a_folder.csv", "a folder"),
        ("", "a file name ending in .parquet or .csv"),
        ("/dev/full", "a file name ending in .parquet or .csv"),
    ],
)
def test_a_sweep_output_that_cannot_be_written_is_refused_before_the_first_point(
    tmp_path, no_point_run, target, reason
):
    (tmp_path / "file.txt").write_text("kept\n")
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "journal_is_a_folder.csv.journal.jsonl").mkdir()
    os.mkfifo(tmp_path / "fifo.csv")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(RelsimError, match=r"^out( \(its journal\))?: must be") as info:
        sweep(GRID, target.format(tmp=tmp_path))
    assert reason in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_sweep_into_a_missing_folder_makes_it(tmp_path):
    out = tmp_path / "new" / "deeper" / "r.csv"
    assert len(sweep(GRID, out)) == 2 and out.exists()


# --------------------------------------------------------------- journals checked on resume
@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (b"\xff\xfe\n", "line 2: not a sweep record"),
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", "line 2: not a sweep record"),
        (b'{"point": 0, "a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "line 2: not a sweep record"),
        (b'{"point": 0}\n', "line 2: columns: must be those of a exact point, got missing success"),
        (b'{"point": true}\n', "line 2: point: must be an integer in 0..1, got True"),
        (b'{"point": 0, "success": 7.5}\n', "line 2: columns"),
        ("success=7.5", "line 2: success: must be a share in [0, 1], got 7.5"),
        ("success='abc'", "line 2: success: must be a share in [0, 1], got 'abc'"),
        ("expected_cost=-1.0", "line 2: expected_cost: must be a number >= 0"),
        ("extra=1.0", "line 2: columns: must be those of a exact point, got unknown extra"),
    ],
    ids=["not UTF-8", "nested 100000 deep", "a value nested 100000 deep", "no columns",
         "point true", "one column", "success 7.5", "success abc", "negative cost", "extra column"],
)
def test_a_damaged_journal_is_refused_naming_its_line(tmp_path, damage, message):
    out = tmp_path / "r.csv"
    sweep(GRID, out)
    journal = journal_path(out)
    head, first, _ = journal.read_bytes().split(b"\n", 2)
    if isinstance(damage, str):  # one column of a real record changed
        key, value = damage.split("=")
        record = json.loads(first)
        record[key] = eval(value)  # noqa: S307 - the test's own literal
        damage = (json.dumps(record) + "\n").encode()
    journal.write_bytes(head + b"\n" + damage)
    with pytest.raises(RelsimError) as info:
        sweep(GRID, out)
    assert message in str(info.value) and "delete the journal to start over" in str(info.value)


def test_an_intact_journal_resumes_and_a_wrong_seed_is_refused(tmp_path):
    grid = {**GRID, "method": "timeline", "trials": 50, "seed": 3}
    out = tmp_path / "r.csv"
    first = sweep(grid, out)
    again = sweep(grid, out)  # control: the journal as written resumes, every point skipped
    assert again.attrs["sweep"]["skipped"] == 2
    pd.testing.assert_frame_equal(first, again)
    journal = journal_path(out)
    lines = journal.read_text().splitlines()
    record = json.loads(lines[1])
    record["seed"] = 12
    journal.write_text("\n".join([lines[0], json.dumps(record)]) + "\n")
    with pytest.raises(RelsimError, match=r"line 2: seed: must be the point's seed \d+, got 12"):
        sweep(grid, out)


# ------------------------------------------------------------- workers and schedulers
def test_workers_are_capped_per_core_before_any_process_starts(capsys, tmp_path):
    with pytest.raises(RelsimError, match=r"^workers: must be an integer in 1\.\.\d+ \(4 per core"):
        sweep(GRID, workers=1000)
    grid = _write(tmp_path / "g.toml", "base = { steps = 5, p = 0.9 }\n[axes]\np = [0.9]\n")
    status, _, err = _run(["sweep", grid, "-o", str(tmp_path / "r.csv"), "--workers", "1000"], capsys)
    assert status == 2 and "per core" in _one_error_line(err)
    assert list(tmp_path.iterdir()) == [tmp_path / "g.toml"]


@pytest.mark.parametrize(
    "address",
    ["", "tcp://", "http://127.0.0.1:8787/status", "tls://", "ucx://127.0.0.1:8786", "inproc://",
     "tcp://127.0.0.1:99999", "tcp://127.0.0.1", "127.0.0.1:8786", "tcp://host name:1",
     pytest.param(8786, marks=pytest.mark.slow)],  # not text: distributed is imported to check
)
def test_a_malformed_scheduler_address_is_refused_before_anything(address, no_point_run):
    with pytest.raises(RelsimError, match="^scheduler: must be a dask scheduler address tcp://HOST:PORT"):
        sweep(GRID, scheduler=address)


def _server(answer: bytes | None) -> tuple[socket.socket, int]:
    """A local TCP server that accepts and never answers (``answer`` None) or answers each
    connection's first bytes with ``answer`` (an HTTP server's reply)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve():
        held = []
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)
            if answer is not None:
                try:
                    conn.recv(65536)
                    conn.sendall(answer)
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("answer", "reason"),
    [(None, "TimeoutError"), (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
                              "does not answer as a dask scheduler")],
)
def test_a_scheduler_that_never_shakes_hands_is_refused_within_the_timeout(monkeypatch, answer, reason):
    monkeypatch.setattr("relsim.sweeps.execute.CONNECT_TIMEOUT", 1)
    server, port = _server(answer)
    try:
        with pytest.raises(RelsimError, match=f"^scheduler: cannot connect to 'tcp://127.0.0.1:{port}' "
                                              "within 1 s") as info:
            sweep(GRID, scheduler=f"tcp://127.0.0.1:{port}")
        assert reason in str(info.value)
    finally:
        server.close()


# ------------------------------------------------------ files: no FIFO, no endless input
@pytest.mark.slow
def test_fifos_devices_and_deep_nesting_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    deep = "[" * 100_000 + "]" * 100_000
    cases = {
        "scenario": ["evaluate", str(fifo)],
        "grid": ["sweep", str(fifo), "-o", str(tmp_path / "a.csv")],
        "base": ["sweep", _write(tmp_path / "g1.toml", f"base = '{fifo.name}'\n[axes]\np = [0.9]\n"),
                 "-o", str(tmp_path / "b.csv")],
        "zero": ["sweep", "/dev/zero", "-o", str(tmp_path / "c.csv")],
        "deep grid": ["sweep", _write(tmp_path / "g2.toml", f"base = 'b.toml'\n[axes]\np = {deep}\n"),
                      "-o", str(tmp_path / "d.csv")],
        "deep base": ["sweep", _write(tmp_path / "g3.toml", "base = 'deep.toml'\n[axes]\np = [0.9]\n"),
                      "-o", str(tmp_path / "e.csv")],
    }
    _write(tmp_path / "deep.toml", f"steps = 2\np = {deep}\n")
    script = f"""
        import json, sys
        from relsim.cli import main
        results = {{}}
        for name, argv in {cases!r}.items():
            results[name] = main(argv)
        print(json.dumps(results))
    """
    result = _python(script, timeout=60)
    assert json.loads(result.stdout) == {name: 2 for name in cases}
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == len(cases) and all(line.startswith("relsim: error: ") for line in lines)
    assert "got a FIFO" in lines[0] and "got a character device" in lines[3]
    assert "nest arrays and inline tables at most 32 deep" in lines[4] + lines[5]
    assert not any(tmp_path.glob("*.csv*"))


# ----------------------------------------------------------------- grids of 10**6 points
def test_points_built_by_replacing_fields_equal_those_built_from_their_file_form():
    grid = Grid.from_dict({
        "base": {"steps": 4, "p": 0.9, "verifier": {"miss": 0.1}, "retries": {"per_step": 1},
                 "checkpoints": {"every": 2, "rollbacks": 1}, "cost": {"attempt": 1.0}},
        "axes": {"p": [0.8, [0.9, 0.8, 0.7, 0.95]], "retries.per_step": [0, 2],
                 "verifier.false_reject,cost.verify": [[0.0, 0.0], [0.1, 0.5]],
                 "checkpoints.at": [[], [1, 3]], "timing.attempt": [1, {"median": 2, "p95": 9}]},
    })
    assert grid._fast_build is not None  # every axis a value or a table field
    for index in range(len(grid)):
        assert grid.scenario(index) == Scenario.from_dict(grid.scenario_dict(index))


def test_a_bad_point_far_into_a_grid_gets_the_file_forms_message():
    grid = {"base": {"steps": 3, "p": 0.9, "verifier": {"miss": 0.1}},
            "axes": {"p": [0.5 + i * 1e-4 for i in range(300)], "verifier.miss": [0.1] * 299 + [1.5]}}
    with pytest.raises(RelsimError, match=r"^point 299 \(p = 0.5, verifier.miss = 1.5\): verifier\.miss: "
                                          r"must be a probability in \[0, 1\], got 1.5$"):
        Grid.from_dict(grid)


@pytest.mark.slow
def test_a_grid_of_the_documented_million_points_is_validated_without_a_hang():
    script = """
        import time
        from relsim.sweeps.grid import Grid, MAX_POINTS
        axes = {"p": [0.5 + i * 1e-4 for i in range(1000)], "verifier.miss": [i * 1e-4 for i in range(1000)]}
        grid = Grid.from_dict({"base": {"steps": 5, "p": 0.9, "verifier": {"miss": 0.05}}, "axes": axes})
        assert len(grid) == MAX_POINTS
        print(grid.scenario(MAX_POINTS - 1).verifier.miss)
    """
    # The contract is an answer within 60 s; about 20 s on a quiet 2-core machine (the file
    # form took 90 s there). The timeout leaves room for a test machine shared with others.
    result = _python(script, timeout=150)
    assert result.returncode == 0 and float(result.stdout) == pytest.approx(0.0999)


# ------------------------------------------------------------ a million failure categories
def _reference_categories(frame, codes, names):
    """The obvious loop, one category at a time, over metrics.ratio and the interval."""
    from relsim import intervals
    from relsim.evalstats.metrics import ratio

    failed = frame["success"].to_numpy() == 0
    labels = frame["category"].to_numpy()[failed]
    tasks = len(names)
    failures = np.bincount(codes[failed], minlength=tasks).astype(float)
    out = {}
    for label in sorted(set(labels)):
        per_task = np.bincount(codes[failed][labels == label], minlength=tasks).astype(float)
        share = ratio(per_task, failures)
        ci = intervals.effective_count_interval(share["estimate"], share["se"] ** 2,
                                                int(failures.sum()), int((failures > 0).sum()))
        out[label] = (int(per_task.sum()), share["estimate"], ci)
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_categories_counted_in_one_pass_match_the_one_at_a_time_loop(seed):
    from relsim.evalstats.metrics import categories

    rng = np.random.default_rng(seed)
    n, tasks = 400, int(rng.integers(1, 9))
    codes = rng.integers(0, tasks, n)
    frame = pd.DataFrame({"success": (rng.random(n) < 0.4).astype(int),
                          "category": rng.choice(["a", "b", "c", "d", "e"], n)})
    names = pd.Index([f"t{i}" for i in range(tasks)])
    found = categories(frame, codes, names, "category")
    reference = _reference_categories(frame, codes, names)
    assert set(found) == set(reference)
    counts = [found[label]["count"] for label in found]
    assert counts == sorted(counts, reverse=True)
    for label, (count, share, (low, high)) in reference.items():
        assert found[label]["count"] == count
        assert found[label]["share"] == pytest.approx(share, rel=1e-12)
        for got, want in zip(found[label]["ci"], (low, high)):
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=1e-9, abs=1e-15)


@pytest.mark.slow
def test_a_hundred_thousand_distinct_categories_are_counted_without_a_hang(tmp_path):
    rows = ["task,trial,success,category"]
    rows += [f"t{i % 1000},{i // 1000},{int(i % 3 == 0)},c{i}" for i in range(150_000)]
    trials = _write(tmp_path / "t.csv", "\n".join(rows) + "\n")
    result = _relsim("analyze", trials, "--json", timeout=120)
    assert result.returncode == 0 and result.stderr == ""
    assert len(json.loads(result.stdout)["categories"]) == 100_000


# --------------------------------------------------------------- warnings and full disks
def _huge_metrics(tmp_path: Path) -> str:
    rows = ["task,trial,success,tokens,calls"]
    rows += [f"t{t},{k},{(t + k) % 2},1.7e308,-1.7e308" for t in range(5) for k in range(3)]
    return _write(tmp_path / "huge.csv", "\n".join(rows) + "\n")


def test_numpy_warnings_never_come_before_the_error_line(tmp_path, capsys):
    status, out, err = _run(["analyze", _huge_metrics(tmp_path), "--rate", "tokens/nope"], capsys)
    assert status == 2 and out == ""
    assert "rate tokens/nope: must be made of numeric columns" in _one_error_line(err)


def test_numpy_warnings_at_success_are_one_line_each_in_our_words(tmp_path, capsys):
    status, _, err = _run(["analyze", _huge_metrics(tmp_path), "--rate", "tokens/calls"], capsys)
    assert status == 0
    for line in err.splitlines():
        assert line.startswith("relsim: warning: ")
        assert "RuntimeWarning" not in line and ".py:" not in line


def test_a_data_warning_then_an_error_prints_the_error_alone(tmp_path, capsys):
    # counts that differ across tasks warn; the report's folder is missing: the error alone
    trials = _write(tmp_path / "t.csv", "task,trial,success\na,0,1\na,1,0\nb,0,1\n")
    status, _, err = _run(["analyze", trials, "--report", str(tmp_path / "no" / "r.md")], capsys)
    assert status == 2 and "--report: must be a file that can be written" in _one_error_line(err)
    status, _, err = _run(["analyze", trials], capsys)  # control: the warning shows on success
    assert status == 0 and err.startswith("relsim: warning: trial counts differ")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("argv", [["evaluate", LESSON], ["evaluate", LESSON, "--json"],
                                  ["timeline", LESSON, "--trials", "100", "--seed", "1"]])
def test_a_full_disk_is_one_line_exit_2_not_an_internal_error(argv):
    with open("/dev/full", "w") as full:
        result = _relsim(*argv, stdout=full, timeout=60)
    assert result.returncode == 2
    assert _one_error_line(result.stderr) == "relsim: error: cannot write the output: No space left on device"


# ------------------------------------------------------- the Python API: RelsimError only
SCENARIO = {"steps": 5, "p": 0.9, "verifier": {"miss": 0.05}, "retries": {"per_step": 2}}


@pytest.mark.parametrize(
    "call",
    [
        lambda: relsim.plan.frontier("frame"),
        lambda: relsim.plan.frontier(None),
        lambda: relsim.simulate_timeline(SCENARIO, 10**12),
        lambda: relsim.simulate_timeline(SCENARIO, 10**400),
        lambda: relsim.simulate(SCENARIO, 10**400),
        lambda: Duration.lognormal("eight", 30),
        lambda: Duration.constant(None),
        lambda: Duration.constant(1e308),
        lambda: sweep(GRID, out=123),
        lambda: sweep(GRID, progress=5),
        lambda: sweep(GRID, workers="2"),
        lambda: point_seed("a", 1),
        lambda: point_seed(None, 1),
        lambda: point_seed(1, 1.5),
        lambda: point_seed(1, -1),
        lambda: Grid.from_toml(123),
        lambda: Grid.from_toml(None),
        lambda: Grid.from_dict({"base": "x.toml", "axes": {"p": [0.9]}}, base_dir=5),
        lambda: Grid(base=5, axes=(("p", (0.9,)),)),
        lambda: Grid(base=SCENARIO, axes=[1, 2]),
        lambda: Grid.from_dict(GRID).point(2),
        lambda: Grid.from_dict(GRID).scenario(-1),
        lambda: relsim.timeline.work_estimate(SCENARIO, 10) and relsim.timeline.work_estimate("x", 10),
    ],
)
def test_the_api_answers_bad_input_with_a_relsim_error(call, no_timeline_run):
    with pytest.raises(RelsimError):
        call()


def test_numpy_values_in_axes_sweep_like_python_values(tmp_path):
    python = {**GRID, "axes": {"retries.per_step": [0, 1, 2], "p": [0.8, 0.9]}}
    numpy = {**GRID, "axes": {"retries.per_step": np.arange(3), "p": np.array([0.8, 0.9])}}
    expected = sweep(python)
    for out in (tmp_path / "r.csv", tmp_path / "r.parquet"):
        pd.testing.assert_frame_equal(sweep(numpy, out), expected, check_dtype=False)
    listed = {**GRID, "axes": {"retries.per_step": list(np.arange(3, dtype=np.int64)),
                               "p": [np.float64(0.8), np.float64(0.9)]}}
    pd.testing.assert_frame_equal(sweep(listed), expected)
    assert point_seed(np.int64(1), np.int32(3)) == point_seed(1, 3)


HARNESS = str(ROOT / "examples" / "harness" / "exercise1.csv")
LABELS = str(ROOT / "examples" / "evals_to_plan" / "labels.csv")


@pytest.mark.parametrize(
    "call, named",
    [
        # a source that is no path nor DataFrame: Path(None) was a TypeError deep in the reader
        (lambda: relsim.evalstats.analyze(None), "trials"),
        (lambda: relsim.evalstats.analyze(5), "trials"),
        (lambda: relsim.evalstats.compare(None, HARNESS), "baseline"),
        (lambda: relsim.evalstats.compare(HARNESS, 1.5), "candidate"),
        (lambda: relsim.evalstats.audit(None), "labels"),
        (lambda: relsim.evalstats.audit(LABELS, judged=5), "judged"),
        (lambda: relsim.evalstats.fit_difficulty([1]), "trials"),
        (lambda: relsim.evalstats.read_trials(b"x.csv"), "source"),
        (lambda: relsim.evalstats.read_inspect_log(None), "source"),
        (lambda: relsim.evalstats.per_task({"a": 1}), "trials"),
        # not iterable, or not text: a TypeError, or (infra_categories) ignored without a
        # category column
        (lambda: relsim.evalstats.analyze(HARNESS, rates=1), "rates"),
        (lambda: relsim.evalstats.analyze(HARNESS, rates=["a/b", 2]), "rates"),
        (lambda: relsim.evalstats.analyze(HARNESS, category=0), "category"),
        (lambda: relsim.evalstats.analyze(HARNESS, infra_categories=1.5), "infra_categories"),
        # past int64: scipy's TypeError
        (lambda: relsim.evalstats.minimum_detectable_effect(10**30, 0.5), "tasks"),
        (lambda: relsim.evalstats.paired_power(10**30, 0.1, 0.5), "tasks"),
        # a lone number for a list, a list for a name: TypeErrors
        (lambda: relsim.plan.curve(SCENARIO, "retries.per_step", 3), "values"),
        (lambda: relsim.plan.curve(SCENARIO, "retries.per_step", also=3), "also"),
        (lambda: relsim.plan.resources(Scenario.from_toml(FLEET), ["agents"]), "for_"),
        # a TypeError from Path(), an AttributeError from the compiler
        (lambda: Scenario.from_toml(None), "file"),
        (lambda: Scenario.from_toml(5), "file"),
        (lambda: Scenario(steps=5, p=0.9, cost=None), "cost"),
    ],
)
def test_the_api_names_the_argument_of_bad_input(call, named):
    with pytest.raises(RelsimError, match=rf"^{named}: must be"):
        call()


@pytest.mark.filterwarnings("ignore::relsim.evalstats.TrialDataWarning")
def test_one_text_is_one_rate_and_one_infrastructure_word():
    frame = pd.DataFrame({"task": list("aabb"), "trial": [1, 2] * 2, "success": [1, 0, 0, 1],
                          "errors": [0, 2, 1, 0], "steps": [4, 4, 5, 5],
                          "category": ["", "infra_down", "wrong", ""]})
    one = relsim.evalstats.analyze(frame, rates="errors/steps", infra_categories="infra")
    listed = relsim.evalstats.analyze(frame, rates=["errors/steps"], infra_categories=["infra"])
    assert one.rates == listed.rates and list(one.rates) == ["errors/steps"]
    assert one.infrastructure == listed.infrastructure and one.infrastructure is not None
