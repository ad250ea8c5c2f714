"""The compiled-kernel cache (``relsim.montecarlo._native``): the native kernels draw exactly
the trials numba's dispatcher draws, a second process runs them without importing numba, and
every way the cache can fail falls back to a correct simulation.

Start-up time itself is measured by ``benchmarks/montecarlo_speed.py``; these tests check
what makes it fast (no numba import), not the clock.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import relsim
from relsim import Scenario
from relsim.montecarlo import _compile, _kernels, _layout, _native

from test_montecarlo import REFERENCE

DISPATCHERS = {name: getattr(_kernels, name) for name in _layout.KERNEL_ARGS}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty cache and no kernel loaded yet in this process."""
    monkeypatch.setenv("RELSIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_native, "_loaded", {})
    return tmp_path


@pytest.mark.parametrize("name", sorted(_layout.KERNEL_ARGS))
def test_argument_table_matches_the_kernel(name):
    parameters = list(inspect.signature(DISPATCHERS[name].py_func).parameters)
    assert [arg for arg, _, _ in _layout.KERNEL_ARGS[name]] == parameters


# Every feature of MODEL.md section 3 (R1..R8), with trajectories recorded.
@pytest.mark.parametrize("case", sorted(REFERENCE))
def test_native_kernels_draw_the_same_trials_as_numba(case, cache_dir, monkeypatch):
    scenario = Scenario.from_dict(REFERENCE[case][0])
    native = relsim.simulate(scenario, 150_000, seed=11, threads=2, record=40)
    assert all(isinstance(k, _native.NativeKernel) for k in _native._loaded.values())
    monkeypatch.setattr(_native, "_loaded", dict(DISPATCHERS))
    dispatched = relsim.simulate(scenario, 150_000, seed=11, threads=2, record=40)
    assert native.to_dict() == dispatched.to_dict()
    assert native.trajectories.equals(dispatched.trajectories)


def test_the_comparison_sees_a_tiny_change(cache_dir, monkeypatch):
    # negative control for the equality above: native trials against the dispatcher's trials
    # of a scenario whose p differs by 1e-4 at one step
    data = REFERENCE["R7"][0]
    native = relsim.simulate(Scenario.from_dict(data), 150_000, seed=11)
    changed = dict(data, p=[data["p"][0] - 1e-4, *data["p"][1:]])
    monkeypatch.setattr(_native, "_loaded", dict(DISPATCHERS))
    dispatched = relsim.simulate(Scenario.from_dict(changed), 150_000, seed=11)
    assert native.to_dict() != dispatched.to_dict()


RUN = """
import json, sys
import relsim
outcome = relsim.simulate(relsim.Scenario.from_dict({scenario!r}), 5000, seed=3)
print(json.dumps([outcome.to_dict(), "numba" in sys.modules]))
"""


def _run_in_fresh_process(scenario: dict, cache: str) -> tuple[dict, bool]:
    env = {**os.environ, "RELSIM_CACHE_DIR": cache}
    code = RUN.format(scenario=scenario)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    result, numba_imported = json.loads(out.stdout)
    return result, numba_imported


@pytest.mark.parametrize("case", ["R1", "R7"])  # one per kernel
def test_second_process_runs_without_numba(case, tmp_path):
    scenario = REFERENCE[case][0]
    first, first_imported_numba = _run_in_fresh_process(scenario, str(tmp_path))
    assert first_imported_numba  # an empty cache: compiled with numba
    assert len(list(tmp_path.glob("*.kernel"))) == 1
    second, second_imported_numba = _run_in_fresh_process(scenario, str(tmp_path))
    assert not second_imported_numba
    assert second == first


def test_damaged_cache_file_is_rebuilt(cache_dir):
    scenario = Scenario.from_dict(REFERENCE["R1"][0])
    expected = relsim.simulate(scenario, 20_000, seed=5).to_dict()
    (path,) = cache_dir.glob("run_simple-*.kernel")
    intact = path.read_bytes()
    flipped = bytearray(intact)
    flipped[-100] ^= 1
    for damage in (b"", intact[:-1], bytes(flipped), b"not a cache file"):
        path.write_bytes(damage)
        _native._loaded.clear()
        assert relsim.simulate(scenario, 20_000, seed=5).to_dict() == expected
        assert isinstance(_native._loaded["run_simple"], _native.NativeKernel)
        assert _native.unpack(path.read_bytes())  # written again, intact


def test_no_writable_cache_uses_the_dispatcher(cache_dir, monkeypatch):
    monkeypatch.setattr(_native, "cache_directory", lambda: None)
    scenario = Scenario.from_dict(REFERENCE["R1"][0])
    assert relsim.simulate(scenario, 1000, seed=5).trials == 1000
    assert _native._loaded["run_simple"] is _kernels.run_simple
    assert list(cache_dir.iterdir()) == []


def test_unusable_native_code_falls_back_to_numba(cache_dir, monkeypatch):
    def unavailable(name):
        raise _native.NativeUnavailable("test")

    monkeypatch.setattr(_native, "_native_kernel", unavailable)
    assert _native.kernel("run_general") is _kernels.run_general
    scenario = Scenario.from_dict(REFERENCE["R7"][0])
    assert relsim.simulate(scenario, 1000, seed=5).trials == 1000


def test_a_failed_build_falls_back_and_is_not_retried(cache_dir, monkeypatch):
    def failing_build(name, entry, machine):
        raise Exception("a compile error of numba's")  # numba's errors are plain Exceptions

    monkeypatch.setattr(_compile, "object_code", failing_build)
    assert _native.kernel("run_general") is _kernels.run_general
    (refused,) = cache_dir.glob("run_general-*.refused")
    assert "a compile error" in refused.read_text()

    def must_not_build(name, entry, machine):
        raise AssertionError("a refused build was tried again")

    monkeypatch.setattr(_compile, "object_code", must_not_build)
    _native._loaded.clear()
    assert _native.kernel("run_general") is _kernels.run_general
    refused.unlink()  # deleting the cache retries
    _native._loaded.clear()
    with pytest.raises(_native.NativeUnavailable, match="tried again"):
        _native._native_kernel("run_general")


def test_platforms_without_elf_use_the_dispatcher(cache_dir, monkeypatch):
    monkeypatch.setattr(_native.sys, "platform", "darwin")
    assert _native.kernel("run_simple") is _kernels.run_simple
    assert list(cache_dir.iterdir()) == []


def _object_code(ir: str) -> bytes:
    llvm = _native._llvm()
    return _native.target_machine(llvm).emit_object(llvm.parse_assembly(ir))


UNRESOLVED = """
declare double @relsim_test_no_such_function(double)
define void @relsim_run_simple(double %x) {
  %r = call double @relsim_test_no_such_function(double %x)
  ret void
}
"""


def test_object_code_with_an_unresolvable_symbol_is_refused():
    code = _object_code(UNRESOLVED)
    assert _native.undefined_symbols(code) == ["relsim_test_no_such_function"]
    with pytest.raises(_native.NativeUnavailable, match="relsim_test_no_such_function"):
        _native.NativeKernel("run_simple", code)


def test_object_code_calling_python_is_refused():
    code = _object_code(UNRESOLVED.replace("relsim_test_no_such_function", "PyFloat_FromDouble"))
    with pytest.raises(_native.NativeUnavailable, match="PyFloat_FromDouble"):
        _native.NativeKernel("run_simple", code)


def test_undefined_symbols_of_the_real_kernels(cache_dir):
    llvm = _native._llvm()
    machine = _native.target_machine(llvm)
    simple = _compile.object_code("run_simple", "relsim_run_simple", machine)
    general = _compile.object_code("run_general", "relsim_run_general", machine)
    # run_general draws normals (log, cos/sin) and takes expit (exp); run_simple calls nothing
    assert set(_native.undefined_symbols(simple)) <= {"memset", "memcpy"}
    assert {"exp", "log"} <= set(_native.undefined_symbols(general))
    nm = shutil.which("nm")
    if nm:  # an outside reading of the same symbol table, where binutils is installed
        path = cache_dir / "general.o"
        path.write_bytes(general)
        listed = subprocess.run([nm, "-u", str(path)], capture_output=True, text=True).stdout
        assert sorted(line.split()[-1] for line in listed.splitlines()) == sorted(
            _native.undefined_symbols(general)
        )


def test_native_kernel_checks_its_arrays(cache_dir):
    run = _native.kernel("run_simple")
    assert isinstance(run, _native.NativeKernel)
    seeds = np.ones((1, 4), np.uint64)
    args = [seeds, np.ones(1, np.int64), np.zeros((2, 2, 3), np.uint64), np.zeros(2, np.int64),
            0, 1.0, np.zeros((3, 10), np.int64), np.zeros((0, 7), np.int64), np.zeros(0)]
    with pytest.raises(TypeError, match="takes 9 arguments"):
        run(*args[:-1])
    wrong = list(args)
    wrong[0] = seeds.astype(np.int64)
    with pytest.raises(TypeError, match="seeds must be a writable, aligned, C-contiguous 2-d"):
        run(*wrong)
    wrong[0] = np.ones((1, 8), np.uint64)[:, ::2]
    with pytest.raises(TypeError, match="seeds"):
        run(*wrong)
    frozen = np.zeros((3, 10), np.int64)
    frozen.flags.writeable = False
    wrong = list(args)
    wrong[6] = frozen
    with pytest.raises(TypeError, match="counts_by_attempts"):
        run(*wrong)
    unaligned = np.frombuffer(bytearray(8 * 30 + 1), np.int64, offset=1, count=30)
    unaligned = unaligned.reshape(3, 10)
    assert unaligned.flags.writeable and not unaligned.flags.aligned
    wrong[6] = unaligned
    with pytest.raises(TypeError, match="counts_by_attempts"):
        run(*wrong)
    for position, value in ((4, 2**63), (4, 0.5), (5, "1.0")):  # total_retries, unit_cost
        wrong = list(args)
        wrong[position] = value
        with pytest.raises(TypeError, match="must be a"):
            run(*wrong)
    general = _native.kernel("run_general")
    assert _layout.KERNEL_ARGS["run_general"][12][0] == "detect_threshold"
    for value in (-1, 2**64):  # unsigned 64 bits
        wrong = _valid_general_args()
        wrong[12] = value
        with pytest.raises(TypeError, match="detect_threshold must be a uint64"):
            general(*wrong)


@pytest.mark.parametrize(
    "data", [b"", b"\x7fEL", b"\x7fELF\x01\x01" + b"\0" * 64, b"\x7fELF\x02\x01" + b"\xff" * 80]
)
def test_symbol_reader_refuses_what_is_not_an_elf64_object(data):
    with pytest.raises(_native.NativeUnavailable):
        _native.undefined_symbols(data)


def _valid_general_args() -> list:
    """Arguments of the right types for run_general (what they hold does not matter here)."""
    values = []
    for _, dtype, ndim in _layout.KERNEL_ARGS["run_general"]:
        if ndim:
            values.append(np.zeros((1,) * ndim, np.dtype(dtype)))
        else:
            values.append({"i8": 0, "u8": 0, "f8": 0.0, "?": False}[dtype])
    return values
