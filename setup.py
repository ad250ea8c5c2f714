"""relsim's one build step beyond pyproject.toml: the exact engine's compiled pass, ahead of time.

``relsim/exact/_aot.py`` says why and for which CPU. This compiles
``relsim/exact/_compiled.py``'s ``forward_pass`` with numba's ahead-of-time compiler
(``numba.pycc``, in the build's own environment: pyproject.toml's ``build-system.requires``)
into the extension module ``relsim.exact._forward_pass_aot``. The extension is optional:
where numba.pycc or a C compiler is missing, or the build fails, relsim is installed without
it (a line says so) and the exact engine runs as it does without it.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
import warnings

import setuptools.command.build_ext
from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str, *path: str):
    """Import one source file as module ``name``, without importing the relsim package (its
    dependencies are not in the build's environment)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, *path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _say(text: str) -> None:
    print(f"relsim: {text}", file=sys.stderr)


def _extensions() -> list:
    aot = _load("_relsim_aot", "relsim", "exact", "_aot.py")  # the standard library only
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba.pycc is "pending deprecation"
            from numba.pycc import CC
        source = _load("relsim.exact._compiled", "relsim", "exact", "_compiled.py")
        compiler = CC(aot.NAME, "relsim.exact._compiled")
        compiler.target_cpu = aot.target_cpu(platform.machine())
        compiler.verbose = False
        compiler.export("forward_pass", aot.SIGNATURE)(source.forward_pass.py_func)
        # the source's digest, so that the engine never takes a build of another source
        digest = aot.source_digest(os.path.join(HERE, "relsim", "exact", "_compiled.py"))
        compiler.export("source_digest", "i8()")(lambda: digest)
        return [compiler.distutils_extension()]
    except Exception as error:  # no numba.pycc in this numba: build without the extension
        _say(f"the exact engine's ahead-of-time pass is left out ({error!r})")
        return []


EXTENSIONS = _extensions()


# numba.pycc's extension replaces setuptools' build_ext with one that compiles it first; this
# subclass of that one leaves out an extension that fails to build (no Python headers, say),
# from the outputs too, so that an editable install does not look for its file.
class _OptionalBuildExt(setuptools.command.build_ext.build_ext):
    def build_extensions(self) -> None:
        self.check_extensions_list(self.extensions)
        built = []
        for ext in self.extensions:
            try:
                self.build_extension(ext)
            except Exception as error:
                _say(f"the exact engine's ahead-of-time pass is left out ({error!r})")
            else:
                built.append(ext)
        self.extensions = built


setup(ext_modules=EXTENSIONS, cmdclass={"build_ext": _OptionalBuildExt})
