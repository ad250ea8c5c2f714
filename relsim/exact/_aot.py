"""The exact engine's compiled pass, built ahead of time when relsim is installed.

Private to ``relsim.exact``. ``_compiled.forward_pass`` is a numba function: a process that
calls it first pays 1-1.3 s to import numba and load its cached machine code, more than the
pass saves on most scenarios, so ``_chain.use_compiled`` used to keep a fresh process on the
numpy pass. ``setup.py`` therefore also compiles the same function, for the one signature
``_chain._compiled_pass`` calls it with, into the extension module ``relsim.exact.`` +
:data:`NAME` (numba's ahead-of-time compiler, ``numba.pycc``): it imports in about a
millisecond and does not import numba, so every section 3 pass can run compiled.

The module's machine code is for a fixed CPU level, not the building machine's CPU (a wheel or
an environment may move to another machine): on x86-64 the x86-64-v3 level (AVX2, FMA, BMI;
every x86-64 server CPU since about 2015), which this module checks the running CPU for
(:func:`can_run`); on any other architecture its baseline. The build is optional: without a C
compiler, or with a numba that no longer has ``numba.pycc``, relsim installs without the
module and the engine runs as before (numpy, or numba's JIT where it pays). The module also
records the digest of the ``_compiled.py`` it was built from, and is not taken once that file
changes (an editable install edited since its build).

This file imports nothing outside the standard library: ``setup.py`` reads it before relsim
or its dependencies are importable.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import platform
from typing import Callable

#: The extension module's name, in ``relsim.exact``.
NAME = "_forward_pass_aot"

#: ``_compiled.forward_pass``'s signature as ``_chain._compiled_pass`` calls it (every array
#: C-contiguous): kernel_of, correct, accepted, lost, checkpoint_after, target_slot, slot_at,
#: slot_position, attempt_cost, checkpoint_cost, rollback_cost, false_alarm, detect,
#: rollbacks, n_d, result.
SIGNATURE = (
    "void(i8[::1], f8[:, :, :, :, ::1], f8[:, :, :, :, ::1], f8[:, :, :, :, ::1], b1[::1], "
    "i8[::1], i8[::1], i8[::1], f8[::1], f8, f8, f8, f8, i8, i8, f8[:, ::1])"
)

#: The CPU level the module is compiled for on x86-64, and the ``/proc/cpuinfo`` flags that
#: level needs (LZCNT is listed as ``abm``).
X86_LEVEL = "x86-64-v3"
X86_FLAGS = frozenset({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"})
_X86 = frozenset({"x86_64", "amd64"})


#: The source the module is compiled from: the module records its digest, and the engine takes
#: the module only while this file is unchanged (`forward_pass`).
COMPILED_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_compiled.py")


def source_digest(path: str) -> int:
    """The first 60 bits of the SHA-256 of the file at ``path`` (an int64)."""
    with open(path, "rb") as source:
        return int(hashlib.sha256(source.read()).hexdigest()[:15], 16)


def target_cpu(machine: str) -> str:
    """The CPU name to compile for on ``machine`` (``platform.machine()``); ``""`` is the
    architecture's baseline."""
    return X86_LEVEL if machine.lower() in _X86 else ""


def can_run(machine: str, flags: frozenset[str] | None) -> bool:
    """Whether a module built by :func:`target_cpu`'s rule runs on this CPU: off x86-64 the
    baseline always does; on x86-64 only a CPU with every flag of :data:`X86_FLAGS` (``flags``
    None: unknown, as off Linux, so not)."""
    if machine.lower() not in _X86:
        return True
    return flags is not None and X86_FLAGS <= flags


def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str] | None:
    """The CPU's feature flags as Linux lists them, or None where it does not."""
    try:
        with open(path, encoding="ascii", errors="replace") as lines:
            for line in lines:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        return None
    return None


@functools.cache
def forward_pass() -> Callable[..., None] | None:
    """The ahead-of-time build of ``_compiled.forward_pass``, or None when it was not built,
    cannot run on this CPU, or was built from another ``_compiled.py`` (an editable install
    edited since: a stale build would give the old pass's numbers); then the engine keeps to
    numpy and numba's JIT."""
    if not can_run(platform.machine(), cpu_flags()):
        return None
    try:
        module = importlib.import_module(f"relsim.exact.{NAME}")
    except ImportError:
        return None
    if module.source_digest() != source_digest(COMPILED_SOURCE):
        return None
    return module.forward_pass
