"""The exact engine's compiled forward pass (relsim.exact._compiled) against its numpy pass.

The numpy pass is held to outside references by tests/test_exact.py (every path enumerated,
a backward recursion, closed forms); here the compiled pass is held to the numpy one on random
scenarios with every section 3 feature (per-step budgets of several sizes, a binding task
budget or none, checkpoints with rollbacks, confusion, both random effects), and once to the
path enumeration of test_exact directly, in both of its builds: the one compiled ahead of time
when relsim was installed (relsim.exact._aot; the install in the README builds it, so it must
be here) and numba's JIT. The choice between the passes is `use_compiled`'s rule, checked on
its own, as is the ahead-of-time build's CPU rule.
"""

from __future__ import annotations

import copy
import json
import pathlib
import platform
import subprocess
import sys

import numpy as np
import pytest

from relsim.exact import _aot, _chain, _evaluate, evaluate
from relsim.scenario import Scenario

#: Issue 22's target: 200 steps, every section 3 feature (benchmarks/exact_speed.py's first row).
TARGET = {
    "steps": 200, "p": 0.95, "verifier": {"miss": 0.05, "false_reject": 0.02},
    "retries": {"per_step": 3, "total": 40},
    "checkpoints": {"every": 10, "detect": 0.9, "false_alarm": 0.02, "rollbacks": 3},
    "correlation": {"task_sd": 0.5, "step_sd": 0.5,
                    "confusion": {"enter": 0.3, "recover": 0.5, "factor": 0.7}},
    "cost": {"attempt": 1.0, "verify": 0.1, "checkpoint": 0.5, "rollback": 1.0},
}

#: The compiled pass's two builds: ahead of time, and numba's JIT (the ahead-of-time one
#: hidden, as where it was not built).
BUILDS = ["ahead of time", "jit"]


@pytest.fixture(autouse=True)
def _unloaded_after():
    """Each test leaves the compiled pass unloaded if it found it so: once loaded,
    `use_compiled` takes it for every later evaluation in the process, and the other test
    files on this worker should keep running the pass they always ran."""
    loaded = "relsim.exact._compiled" in sys.modules
    yield
    if not loaded:
        sys.modules.pop("relsim.exact._compiled", None)


def _use_build(build: str, monkeypatch) -> None:
    """Make the compiled pass run ``build``."""
    if build == "jit":
        monkeypatch.setattr(_aot, "forward_pass", lambda: None)
    else:
        assert _aot.forward_pass() is not None, "the ahead-of-time pass was not built"


def _both(scenario: Scenario, monkeypatch) -> tuple[np.ndarray, np.ndarray]:
    values = {}
    for compiled in (False, True):
        monkeypatch.setattr(_chain, "COMPILED", compiled)
        values[compiled] = _evaluate(scenario, 1e-8)[0]
    return values[False], values[True]


def _random_scenario(rng: np.random.Generator) -> dict:
    """A scenario drawn with every section 3 feature, each switched on or off at random."""
    n = int(rng.integers(1, 30))
    data: dict = {"steps": n}
    data["p"] = [round(float(x), 3) for x in rng.uniform(0.5, 0.99, n)] if rng.random() < 0.5 \
        else round(float(rng.uniform(0.5, 0.99)), 3)
    data["verifier"] = {"miss": round(float(rng.uniform(0.0, 0.3)), 3),
                        "false_reject": round(float(rng.uniform(0.0, 0.1)), 3)}
    retries: dict = {}
    if rng.random() < 0.8:
        retries["per_step"] = [int(x) for x in rng.integers(0, 7, n)] if rng.random() < 0.4 \
            else int(rng.integers(0, 7))
    if rng.random() < 0.7 or not retries:
        retries["total"] = int(rng.integers(0, 3 * n))
    data["retries"] = retries
    cost = {"attempt": 1.0, "verify": 0.1}
    if rng.random() < 0.7:
        rollbacks = int(rng.integers(0, 4))
        data["checkpoints"] = {
            "every": int(rng.integers(1, n + 1)),
            "final": bool(rng.random() < 0.5),
            "detect": round(float(rng.uniform(0.5, 1.0)), 3),
            "false_alarm": round(float(rng.uniform(0.0, 0.1)), 3),
            "rollbacks": rollbacks,
        }
        cost["checkpoint"] = 0.5
        if rollbacks:
            cost["rollback"] = 1.5
    correlation: dict = {}
    if rng.random() < 0.6:
        correlation["confusion"] = {"enter": 0.3, "recover": 0.5, "factor": 0.7}
    if rng.random() < 0.6:
        correlation["task_sd"] = float(rng.choice([0.3, 1.0]))
    if rng.random() < 0.5:
        correlation["step_sd"] = float(rng.choice([0.3, 1.0]))
    data["correlation"] = correlation
    data["cost"] = cost
    return data


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("seed", range(12))
def test_compiled_pass_equals_the_numpy_pass_on_random_scenarios(seed, build, monkeypatch):
    _use_build(build, monkeypatch)
    data = _random_scenario(np.random.default_rng(seed))
    before, after = _both(Scenario.from_dict(data), monkeypatch)
    # probabilities to 1e-12; expected attempts and cost to 1e-12 of their size
    scale = np.maximum(1.0, np.abs(before))
    assert np.all(np.abs(after - before) <= 1e-12 * scale), (data, before, after)


@pytest.mark.parametrize("build", BUILDS)
def test_compiled_pass_on_the_issue_target_and_a_negative_control(build, monkeypatch):
    """200 steps, every feature (benchmarks/exact_speed.py's first row), and a control: the
    same comparison catches a change of one rollback."""
    _use_build(build, monkeypatch)
    data = copy.deepcopy(TARGET)
    before, after = _both(Scenario.from_dict(data), monkeypatch)
    assert np.all(np.abs(after - before) <= 1e-12 * np.maximum(1.0, np.abs(before)))
    data["checkpoints"]["rollbacks"] = 2
    monkeypatch.setattr(_chain, "COMPILED", True)
    other = _evaluate(Scenario.from_dict(data), 1e-8)[0]
    assert np.abs(other - before).max() > 1e-6


@pytest.mark.parametrize("build", BUILDS)
def test_compiled_pass_equals_every_path_enumerated(build, monkeypatch):
    """One small scenario with every feature, against test_exact's path enumeration."""
    from test_exact import _close, enumerate_paths  # tests/ is on the path (rootdir mode)

    _use_build(build, monkeypatch)
    s = Scenario.from_dict({
        "steps": 3, "p": [0.8, 0.6, 0.9], "verifier": {"miss": 0.2, "false_reject": 0.1},
        "retries": {"per_step": 1, "total": 2},
        "checkpoints": {"every": 2, "final": True, "detect": 0.7, "false_alarm": 0.1,
                        "rollbacks": 1},
        "correlation": {"confusion": {"enter": 0.3, "recover": 0.5, "factor": 0.6}},
        "cost": {"attempt": 1.0, "verify": 0.2, "checkpoint": 0.5, "rollback": 1.5},
    })
    monkeypatch.setattr(_chain, "COMPILED", True)
    _close(evaluate(s), enumerate_paths(s), 1e-12)


def test_the_pass_is_chosen_by_the_estimate_until_the_compiled_one_is_loaded(monkeypatch):
    """Without the ahead-of-time build: numpy until numba's load pays or it is loaded."""
    monkeypatch.setattr(_chain, "COMPILED", None)
    monkeypatch.setattr(_aot, "forward_pass", lambda: None)
    monkeypatch.delitem(sys.modules, "relsim.exact._compiled", raising=False)
    assert not _chain.use_compiled(0.9 * _chain.LOAD_ESTIMATE)
    assert _chain.use_compiled(_chain.LOAD_ESTIMATE)
    monkeypatch.setitem(sys.modules, "relsim.exact._compiled", object())
    assert _chain.use_compiled(0.0)  # loaded: free to use
    monkeypatch.setattr(_chain, "COMPILED", False)
    assert not _chain.use_compiled(1e9)


def test_the_ahead_of_time_pass_is_always_chosen_and_never_loads_numba(monkeypatch):
    """A fresh process, as `relsim evaluate` starts: the pass built at install time runs the
    issue's 200-step target at once (no load worth avoiding), and numba is never imported;
    its answer is the JIT's to rounding."""
    script = (
        "import sys, json\n"
        "import relsim\n"
        "from relsim.exact import _aot, _chain\n"
        "from test_exact_compiled import TARGET\n"
        "assert _aot.forward_pass() is not None and _chain.use_compiled(0.0)\n"
        "out = relsim.evaluate(relsim.Scenario.from_dict(TARGET))\n"
        "print(json.dumps(['numba' in sys.modules, out.success, out.expected_cost]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        cwd=str(pathlib.Path(__file__).parent),
    )
    assert done.returncode == 0, done.stderr
    numba_loaded, success, cost = json.loads(done.stdout)
    assert not numba_loaded
    _use_build("jit", monkeypatch)
    monkeypatch.setattr(_chain, "COMPILED", True)
    jit = evaluate(Scenario.from_dict(TARGET))
    assert abs(success - jit.success) <= 1e-12
    assert abs(cost - jit.expected_cost) <= 1e-12 * jit.expected_cost


def test_a_build_of_another_source_is_not_taken(monkeypatch, tmp_path):
    """An editable install whose _compiled.py changed after its build: the stale module would
    give the old pass's numbers, so the engine does not take it (the module records the
    digest of the source it was compiled from)."""
    source = pathlib.Path(_aot.COMPILED_SOURCE)
    assert source == pathlib.Path(_chain.__file__).with_name("_compiled.py")
    edited = tmp_path / "_compiled.py"
    edited.write_bytes(source.read_bytes() + b"\n# edited\n")
    monkeypatch.setattr(_aot, "COMPILED_SOURCE", str(edited))
    assert _aot.forward_pass.__wrapped__() is None
    monkeypatch.setattr(_aot, "COMPILED_SOURCE", str(source))
    assert _aot.forward_pass.__wrapped__() is not None


def test_the_ahead_of_time_build_targets_a_cpu_level_and_checks_the_cpu(tmp_path):
    assert _aot.target_cpu("x86_64") == "x86-64-v3" == _aot.target_cpu("AMD64")
    assert _aot.target_cpu("aarch64") == ""  # the architecture's baseline
    assert _aot.can_run("aarch64", None)
    assert not _aot.can_run("x86_64", None)  # flags unknown (off Linux): not taken
    every = _aot.X86_FLAGS | {"sse2", "sha_ni"}
    assert _aot.can_run("x86_64", every)
    for flag in _aot.X86_FLAGS:  # each flag of the level is needed
        assert not _aot.can_run("x86_64", every - {flag})
    listing = tmp_path / "cpuinfo"
    listing.write_text("processor\t: 0\nflags\t\t: fpu avx2 fma\nbugs\t: none\n")
    assert _aot.cpu_flags(str(listing)) == {"fpu", "avx2", "fma"}
    listing.write_text("processor\t: 0\n")
    assert _aot.cpu_flags(str(listing)) is None
    assert _aot.cpu_flags(str(tmp_path / "missing")) is None
    # this machine: the build here runs here, and the flags Linux lists are read
    if platform.system() == "Linux":
        assert _aot.cpu_flags() is not None
    assert _aot.can_run(platform.machine(), _aot.cpu_flags())
