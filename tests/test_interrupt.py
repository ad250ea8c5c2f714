"""Issue 15, item 4: Ctrl-C means stop, in a real process.

``relsim simulate`` runs a heavy scenario in a subprocess (the time limit raised so that it is
allowed to run long); SIGINT is sent once it is computing, and the process must exit 130 with
the PARTIAL estimate within a generous deadline; two SIGINTs must end it too. The deadlines
bound hanging (before the kernels stopped in slices it took minutes), they time nothing: on
this loaded machine a stop takes well under a second, the deadline is 15 s.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 15.0

# 100,000 steps on the general kernel (checkpoints and a step effect): 1e5 attempts a trial,
# 10**7 trials is hours. One thread: the case the issue saw live on after a second Ctrl-C.
HEAVY = """\
steps = 100000
p = 0.999
[verifier]
miss = 0.1
[retries]
per_step = 2
[checkpoints]
every = 100
detect = 0.9
rollbacks = 3
[correlation]
step_sd = 0.3
"""


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    path = tmp_path_factory.mktemp("interrupt") / "heavy.toml"
    path.write_text(HEAVY)
    # Load (or compile) the general kernel once; a second run's start-up costs what this
    # one's CPU time was at most, so a run past it by 2 s of CPU is computing trials.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "relsim", "simulate", str(path), "--trials", "1", "--seed", "0"],
        cwd=ROOT, env=_environment(), capture_output=True, check=True, timeout=600,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    startup = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return path, startup + 2.0


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["RELSIM_TIME_LIMIT"] = "1e9"  # a run of hours is what this test interrupts
    return env


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start(heavy: tuple[Path, float], *extra: str) -> subprocess.Popen:
    """Start the heavy run and return once it has computed for a while (CPU time past what
    start-up and loading the kernel took)."""
    path, computing = heavy
    process = subprocess.Popen(
        [sys.executable, "-m", "relsim", "simulate", str(path), "--trials", "10000000",
         "--seed", "1", "--threads", "1", *extra],
        cwd=ROOT, env=_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    start = time.monotonic()
    while True:
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the run ended before it was interrupted: {process.returncode} {err}")
        if _cpu_seconds(process.pid) > computing or time.monotonic() - start > 120:
            return process
        time.sleep(0.2)


def _wait(process: subprocess.Popen) -> tuple[int, str, str, float]:
    sent = time.monotonic()
    try:
        out, err = process.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"still running {DEADLINE} s after Ctrl-C")
    return process.returncode, out, err, time.monotonic() - sent


@pytest.mark.slow
def test_ctrl_c_prints_the_partial_estimate_and_exits_130_within_the_deadline(heavy):
    process = _start(heavy, "--json")
    process.send_signal(signal.SIGINT)
    code, out, err, _ = _wait(process)
    assert code == 130, err
    data = json.loads(out)
    assert data["partial"] is True and 0 < data["trials"] < 10_000_000
    assert err.startswith("relsim: interrupted: the estimate covers") and err.count("\n") == 1
    assert "Traceback" not in err


@pytest.mark.slow
def test_a_second_ctrl_c_exits_at_once(heavy):
    process = _start(heavy)
    process.send_signal(signal.SIGINT)
    time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    code, out, err, _ = _wait(process)
    # 130 from relsim, or death by SIGINT (-2 here; a shell reports it as 130 too) when the
    # second signal lands while the interpreter is already finishing after the first
    assert code in (130, -signal.SIGINT), err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("relsim: interrupted")
