"""The Monte Carlo kernels as native code kept on disk, loaded without numba.

Private. ``kernel(name)`` returns a callable with the arguments of the numba kernel of that
name (``_layout.KERNEL_ARGS``). The first time on a machine it compiles the kernel with numba
into a self-contained object file (``_compile.py``) and stores it; every later process loads
that file with llvmlite's MCJIT linker in milliseconds and calls it through ctypes, which
releases the GIL, so importing numba (about 0.4 s) and bringing up its compiler (about 0.3 s)
is paid once per machine rather than once per ``relsim simulate``.

The code is the numba kernel itself, compiled by numba with its unreachable error paths
removed (the kernels never raise), so it draws exactly the trials the numba dispatcher draws
(a test holds the two to identical results).

Where this cannot work, ``kernel`` falls back to the numba dispatcher, which keeps numba's
own cache: a platform whose object files are not ELF (the symbol check below reads ELF), no
writable cache directory (compiling in every process would be slower than the dispatcher),
or code that this process cannot link (a symbol it needs is missing). A build that was
refused leaves a ``.refused`` file under the same key, so later processes do not retry it.

The cache lives in ``$RELSIM_CACHE_DIR`` when set, else in ``__pycache__`` beside this file
when writable (as numba's own cache does), else in ``$XDG_CACHE_HOME/relsim`` (default
``~/.cache/relsim``). A file's name carries a hash of everything its code depends on: the
kernel sources, the numba and llvmlite versions, and this CPU's name and features.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import numbers
import os
import struct
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np

from relsim.montecarlo._layout import KERNEL_ARGS

_PACKAGE_DIR = Path(__file__).resolve().parent

# Source files the compiled code depends on: a change to any of them makes a new cache key.
_SOURCES = ("_kernels.py", "_layout.py", "_compile.py", "_native.py")

# Scalars cross the C interface by value; a bool as one byte (see ``_compile.c_interface``).
_SCALAR_CTYPES = {"i8": ctypes.c_int64, "u8": ctypes.c_uint64, "f8": ctypes.c_double,
                  "?": ctypes.c_int8}

# Platforms whose object files are ELF, the format ``undefined_symbols`` reads.
_ELF_PLATFORMS = ("linux", "freebsd")

# Prefixes of symbols that must not appear in a kernel's object code: calls into Python or
# numba's runtime would need the GIL or numba's helper library, and the kernels need neither.
FORBIDDEN = ("Py", "_Py", "numba", "NRT")


class NativeUnavailable(RuntimeError):
    """The kernel cannot run as native code here (the numba dispatcher is used instead)."""


def entry_symbol(name: str) -> str:
    """The C symbol of kernel ``name`` in its object file."""
    return f"relsim_{name}"


_loaded: dict[str, Callable[..., None]] = {}
_loading = threading.Lock()  # one build at a time, however many threads ask


def kernel(name: str) -> Callable[..., None]:
    """The kernel ``name`` as native code, or numba's dispatcher where that cannot work."""
    with _loading:
        if name not in _loaded:
            try:
                _loaded[name] = _native_kernel(name)
            except NativeUnavailable:
                # a speed-up only: the dispatcher runs the same kernel, compiled by numba
                from relsim.montecarlo import _kernels

                _loaded[name] = getattr(_kernels, name)
        return _loaded[name]


def _native_kernel(name: str) -> "NativeKernel":
    if not sys.platform.startswith(_ELF_PLATFORMS):
        raise NativeUnavailable(f"{sys.platform}: object files are not ELF")
    path = cache_path(name)
    if path is None:
        raise NativeUnavailable("no writable cache directory")
    refused = path.with_suffix(".refused")
    if refused.is_file():
        raise NativeUnavailable(f"{name}: refused earlier ({refused})")
    if path.is_file():
        try:
            return NativeKernel(name, unpack(path.read_bytes()))
        except (NativeUnavailable, OSError):
            pass  # a damaged or unreadable file: build it again
    try:
        from relsim.montecarlo import _compile

        code = _compile.object_code(name, entry_symbol(name), target_machine(_llvm()))
        loaded = NativeKernel(name, code)  # the checks every later process will make
    except Exception as error:  # numba's compile errors are plain Exceptions
        _write_atomically(refused, f"{type(error).__name__}: {error}\n".encode())
        raise NativeUnavailable(f"{name}: {error}") from error
    _write_atomically(path, pack(code))
    return loaded


class NativeKernel:
    """A kernel's object code, linked into this process; call it as the numba kernel.

    Each argument is checked against ``KERNEL_ARGS``: an array must have its dtype and number
    of dimensions and be C-contiguous, aligned and writable (it is passed as its data pointer
    and a pointer to its shape); an integer scalar must fit its C type. Shapes are not checked
    against each other: as under numba's dispatcher, which has no bounds checks either, the
    driver is trusted to size the arrays as the kernel documents.
    """

    def __init__(self, name: str, code: bytes) -> None:
        llvm = _llvm()
        missing = [s for s in undefined_symbols(code) if not _resolvable(llvm, s)]
        if missing:
            raise NativeUnavailable(f"{name}: unresolved or forbidden symbols {missing}")
        # an engine of its own, which holds the linked code as long as this object lives
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine(llvm))
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        self._engine.finalize_object()
        address = self._engine.get_function_address(entry_symbol(name))
        if not address:
            raise NativeUnavailable(f"{name}: no symbol {entry_symbol(name)} in its object code")
        self.name = name
        self._args = KERNEL_ARGS[name]
        argtypes: list[Any] = []
        for _, dtype, ndim in self._args:
            argtypes += [ctypes.c_void_p, ctypes.c_void_p] if ndim else [_SCALAR_CTYPES[dtype]]
        self._function = ctypes.CFUNCTYPE(None, *argtypes)(address)

    def __call__(self, *args: Any) -> None:
        if len(args) != len(self._args):
            raise TypeError(f"{self.name}: takes {len(self._args)} arguments, got {len(args)}")
        c_args: list[Any] = []
        for (arg, dtype, ndim), value in zip(self._args, args):
            if ndim:
                if not (
                    isinstance(value, np.ndarray)
                    and value.dtype == np.dtype(dtype)
                    and value.ndim == ndim
                    and value.flags.c_contiguous
                    and value.flags.aligned
                    and value.flags.writeable
                ):
                    raise TypeError(
                        f"{self.name}: {arg} must be a writable, aligned, C-contiguous "
                        f"{ndim}-d {np.dtype(dtype)} array, got {_describe(value)}"
                    )
                c_args += [value.ctypes.data, value.ctypes.shape]
            else:
                c_args.append(_scalar(self.name, arg, dtype, value))
        self._function(*c_args)  # ctypes releases the GIL for the call


def _scalar(kernel_name: str, arg: str, dtype: str, value: Any) -> Any:
    """``value`` as its C type wants it, refusing what would wrap or truncate silently."""
    if dtype == "f8" and isinstance(value, numbers.Real):
        return float(value)
    if dtype == "?" and isinstance(value, (bool, np.bool_)):
        return int(value)
    if dtype in ("i8", "u8") and isinstance(value, numbers.Integral):
        info = np.iinfo(dtype)
        if info.min <= value <= info.max:
            return int(value)
    raise TypeError(f"{kernel_name}: {arg} must be a {np.dtype(dtype)} scalar, got {value!r}")


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        order = "C-contiguous" if value.flags.c_contiguous else "non-contiguous"
        return f"a {order} {value.ndim}-d {value.dtype} array"
    return type(value).__name__


# ------------------------------------------------------------------------------ llvmlite
@functools.cache
def _llvm() -> Any:
    try:
        import llvmlite.binding as llvm
    except ImportError as error:  # numba requires llvmlite, so this means a broken install
        raise NativeUnavailable(f"llvmlite: {error}") from error
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


def target_machine(llvm: Any) -> Any:
    """This CPU's target machine with the options of numba's JIT (static relocations on x86,
    the JIT code model), so that MCJIT can load the code it emits."""
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=3,
        reloc="static" if target.name.startswith("x86") else "default",
        codemodel="jitdefault",
        jit=True,
    )


def _resolvable(llvm: Any, symbol: str) -> bool:
    """Whether this process provides ``symbol`` (a C library function such as ``exp``).

    It is looked up among the program's global symbols alone, whatever numba may have
    registered with LLVM, so that the process that builds the code checks it exactly as a
    later process without numba will; when found it is registered with LLVM's linker (which
    searches only what was registered or loaded through it), unless already registered.
    """
    if symbol.startswith(FORBIDDEN):
        return False
    try:
        address = ctypes.cast(getattr(_process_symbols(), symbol), ctypes.c_void_p).value
    except AttributeError:
        return False
    if not llvm.address_of_symbol(symbol):
        llvm.add_symbol(symbol, address)
    return True


@functools.cache
def _process_symbols() -> ctypes.CDLL:
    return ctypes.CDLL(None)  # the running program and the libraries it links (libc, libm)


# ------------------------------------------------------------------------------ ELF
def undefined_symbols(code: bytes) -> list[str]:
    """Names of the symbols an ELF64 little-endian object file uses but does not define.

    Reads the section headers, finds the symbol table (``SHT_SYMTAB``) and its string
    table, and keeps the named symbols whose section index is ``SHN_UNDEF`` (0).
    """
    if code[:6] != b"\x7fELF\x02\x01":  # magic, 64-bit, little-endian
        raise NativeUnavailable("the object code is not ELF64 little-endian")
    try:
        (section_offset,) = struct.unpack_from("<Q", code, 0x28)
        entry_size, count = struct.unpack_from("<HH", code, 0x3A)
        sections = [
            struct.unpack_from("<IIQQQQIIQQ", code, section_offset + i * entry_size)
            for i in range(count)
        ]
        names = []
        for _, kind, _, _, offset, size, link, _, _, symbol_size in sections:
            if kind != 2:  # SHT_SYMTAB
                continue
            strings_offset = sections[link][4]
            for at in range(offset, offset + size, symbol_size):
                name_offset, _, _, section_index = struct.unpack_from("<IBBH", code, at)
                if section_index == 0 and name_offset:
                    end = code.index(b"\0", strings_offset + name_offset)
                    names.append(code[strings_offset + name_offset:end].decode())
        return names
    except (struct.error, IndexError, ValueError, OverflowError, UnicodeDecodeError) as error:
        raise NativeUnavailable(f"the object code's symbol table is damaged: {error}") from error


# ------------------------------------------------------------------------------ the cache
def cache_path(name: str) -> Path | None:
    """Where the object code of kernel ``name`` for this machine is kept (None: nowhere
    writable)."""
    directory = cache_directory()
    return None if directory is None else directory / f"{name}-{_cache_key()}.kernel"


def cache_directory() -> Path | None:
    """``$RELSIM_CACHE_DIR``, else ``__pycache__`` beside this file, else the user cache
    directory: the first that exists or can be made, and can be written."""
    candidates = []
    if os.environ.get("RELSIM_CACHE_DIR"):
        candidates.append(Path(os.environ["RELSIM_CACHE_DIR"]))
    else:
        candidates.append(_PACKAGE_DIR / "__pycache__")
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        candidates.append(Path(xdg) / "relsim")
    for directory in candidates:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(directory, os.W_OK):
            return directory
    return None


@functools.cache
def _cache_key() -> str:
    from importlib.metadata import version

    llvm = _llvm()
    digest = hashlib.sha256()
    for source in _SOURCES:
        digest.update((_PACKAGE_DIR / source).read_bytes())
    for part in (
        version("numba"),
        version("llvmlite"),
        llvm.get_process_triple(),
        llvm.get_host_cpu_name(),
        llvm.get_host_cpu_features().flatten(),
    ):
        digest.update(b"\0" + str(part).encode())
    return digest.hexdigest()[:24]


# A cache file is this magic, the SHA-256 of the object code, then the code: LLVM is never
# handed bytes that were damaged on disk.
_MAGIC = b"relsim kernel 1\n"


def pack(code: bytes) -> bytes:
    return _MAGIC + hashlib.sha256(code).digest() + code


def unpack(data: bytes) -> bytes:
    """The object code of a cache file; NativeUnavailable if the file is not intact."""
    start = len(_MAGIC) + 32
    code = data[start:]
    if data[: len(_MAGIC)] != _MAGIC or data[len(_MAGIC) : start] != hashlib.sha256(code).digest():
        raise NativeUnavailable("the cache file is damaged")
    return code


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that no reader ever sees a partial file (a failure to
    write only costs the next process a compile)."""
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.chmod(temporary, 0o644)  # readable by all, as .pyc files and numba's cache are
        os.replace(temporary, path)
    except OSError:
        Path(temporary).unlink(missing_ok=True)
