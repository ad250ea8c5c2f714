"""Compile a Monte Carlo kernel with numba into object code that needs neither numba nor
Python at run time.

Private; ``_native`` calls it once per machine and keeps the result. Three steps:

1. ``c_interface`` wraps the numba kernel in a ``numba.cfunc`` with a plain C signature: each
   array becomes a data pointer and a pointer to its shape (viewed again as an array with
   ``numba.carray``), each scalar is passed by value.
2. numba compiles it; its LLVM module holds the kernel and everything it calls. Every
   function but the entry is made internal, and three LLVM passes run over the module: they
   see that the kernel only ever returns "no error" and remove the error paths, the only
   code that called into Python or numba's runtime.
3. What is left may call LLVM intrinsics and C library functions (``exp``, ``log``,
   ``sincos``, which the loader checks the running process provides) but nothing of Python
   or numba's runtime; it is emitted as an object file for this CPU.

The kernels are compiled with ``error_model="numpy"`` so that no float operation of theirs
has a Python exception path (their arguments never reach a domain error anyway).
"""

from __future__ import annotations

import functools
from typing import Any

import llvmlite.binding as llvm
import numba
import numpy as np
from numba import carray, types
from numba.core.compiler_lock import global_compiler_lock

from relsim.montecarlo import _kernels
from relsim.montecarlo._layout import KERNEL_ARGS
from relsim.montecarlo._native import FORBIDDEN

# A bool scalar crosses as one byte (LLVM's i1 has no portable C calling convention);
# bool arrays are numpy's one byte per element, as numba's.
_SCALAR_TYPES = {"i8": types.int64, "u8": types.uint64, "f8": types.float64, "?": types.int8}


class NotSelfContained(RuntimeError):
    """The compiled kernel still calls something outside itself."""


def c_interface(name: str) -> Any:
    """The kernel ``name`` behind a C signature built from ``KERNEL_ARGS[name]``.

    For ``(("seeds", "u8", 2), ("unit_cost", "f8", 0), ...)`` the wrapper is

    .. code-block:: python

        def run_simple_c(seeds, seeds_shape, unit_cost, ...):
            kernel(carray(seeds, (seeds_shape[0], seeds_shape[1]), np.dtype("u8")),
                   unit_cost, ...)

    with ``seeds: void*``, ``seeds_shape: int64*`` and ``unit_cost: double``.
    """
    parameters, arguments, c_types = [], [], []
    for arg, dtype, ndim in KERNEL_ARGS[name]:
        if ndim:
            parameters += [arg, f"{arg}_shape"]
            c_types += [types.voidptr, types.CPointer(types.int64)]
            shape = ", ".join(f"{arg}_shape[{d}]" for d in range(ndim))
            arguments.append(f"carray({arg}, ({shape},), np.dtype({dtype!r}))")
        else:
            parameters.append(arg)
            c_types.append(_SCALAR_TYPES[dtype])
            arguments.append(f"{arg} != 0" if dtype == "?" else arg)
    source = (
        f"def {name}_c({', '.join(parameters)}):\n"
        f"    kernel({', '.join(arguments)})\n"
    )
    namespace = {"kernel": fresh_kernel(name), "carray": carray, "np": np}
    exec(source, namespace)  # generated from the table above, not from input
    return numba.cfunc(types.void(*c_types))(namespace[f"{name}_c"])


@functools.cache
def fresh_kernel(name: str) -> Any:
    """The kernel ``name`` compiled from its current source, never from numba's cache.

    numba's cache is keyed on ``_kernels.py`` alone and would not notice a change to the
    constants it imports from ``_layout.py``; the native cache's key covers both files, so
    what it stores must come from both as they are now. (One per process: the source cannot
    change under a running process, and numba keeps what it compiled in memory.)
    """
    dispatcher = getattr(_kernels, name)
    options = {k: v for k, v in dispatcher.targetoptions.items() if k != "nopython"}
    return numba.njit(cache=False, **options)(dispatcher.py_func)


def object_code(name: str, entry: str, machine: Any) -> bytes:
    """Object code of kernel ``name`` for ``machine``, its C entry point named ``entry``.

    Raises
    ------
    NotSelfContained
        If the optimised module still uses a function of Python or numba's runtime, or any
        global variable defined elsewhere.
    """
    with global_compiler_lock:  # llvmlite's LLVM context is shared with numba's compiler
        return _object_code(name, entry, machine)


def _object_code(name: str, entry: str, machine: Any) -> bytes:
    wrapper = c_interface(name)
    module = llvm.parse_assembly(wrapper.inspect_llvm())
    module.get_function(wrapper.native_name).name = entry
    for function in module.functions:
        if not function.is_declaration and function.name != entry:
            function.linkage = "internal"
    # Only what removes the error paths (numba has already optimised the code): constants
    # propagated across functions (the kernel's status is always 0), dead branches, then
    # the functions and declarations nothing uses any more.
    passes = llvm.create_new_module_pass_manager()
    passes.add_ipsccp_pass()
    passes.add_simplify_cfg_pass()
    passes.add_global_dead_code_eliminate_pass()
    passes.add_strip_dead_prototype_pass()
    passes.run(module, llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options()))
    outside = [
        f.name for f in module.functions if f.is_declaration and f.name.startswith(FORBIDDEN)
    ]
    outside += [g.name for g in module.global_variables if g.is_declaration]
    if outside:
        raise NotSelfContained(f"{name}: the compiled kernel still uses {outside}")
    module.verify()
    return machine.emit_object(module)
