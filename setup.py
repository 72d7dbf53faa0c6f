"""The optional compiled build: Cython compiles a few hot modules from their ``.py`` sources.

Everything else about the package (name, dependencies, entry points, the grammar
file) is in pyproject.toml; this file only adds the extension modules.

``pip install .`` compiles the modules of ``COMPILED`` (below, the one list) with
Cython in its pure-Python mode: the same ``.py`` files, unchanged. The ``.py``
files are installed too, and the package is complete without the extensions, so
any failure degrades to pure Python instead of failing the install:

* no Cython (``--no-build-isolation`` without it): nothing is compiled;
* a listed file that does not exist (a module was renamed): skipped, with a message;
* a module that Cython cannot compile: that module stays pure Python, with a warning;
* no C compiler, or a C compile or link that fails: that module stays pure Python.

``AUTODSL_NO_COMPILE=1`` skips the compilation. Editable installs
(``pip install -e .``) and ``build_ext --inplace`` never compile: an extension
module next to a ``.py`` source would shadow every later edit of that file.

At run time ``AUTODSL_PURE_PYTHON=1`` makes ``import autodsl`` use the ``.py``
files even when the extensions are installed (see ``autodsl/_pure.py``).
"""
from __future__ import annotations

import os
import sys
import traceback

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

# The modules compiled by Cython, as paths from the repository root. This is the only
# list. Never add autodsl/__init__.py or autodsl/_pure.py: they implement the switch
# that must be able to bypass the compiled modules. A subpackage's __init__.py may be
# listed (its module is then "autodsl.backend.__init__", an __init__ extension module
# that Python imports as the package).
COMPILED = [
    "autodsl/backend/__init__.py",      # the array helpers every op and node calls
    "autodsl/context.py",
    "autodsl/core/engine.py",
    "autodsl/core/grad_mode.py",
    "autodsl/core/grad_sums.py",
    "autodsl/core/journal.py",
    "autodsl/core/node.py",
    "autodsl/core/quiet.py",
    "autodsl/core/step_log.py",
    "autodsl/core/tensor.py",
    "autodsl/core/tensor_fields.py",
    "autodsl/core/watch.py",
    "autodsl/ops/chunked.py",
    "autodsl/ops/elementwise.py",
    "autodsl/ops/formula.py",
    "autodsl/ops/inplace.py",
    "autodsl/ops/linalg.py",
    "autodsl/ops/loss.py",
    "autodsl/ops/methods.py",
    "autodsl/ops/movement.py",
    "autodsl/ops/promotion.py",
    "autodsl/ops/reduce.py",
    "autodsl/ops/registry.py",
    # Never autodsl/source.py: its frame walks count the interpreter's frames, which a
    # compiled function does not push.
]

# Cython options that keep Python semantics: annotations are documentation only (Cython
# would otherwise enforce ``x: int`` or unbox ``x: float`` to a C double), functions
# keep their introspectable signatures.
DIRECTIVES = {
    "language_level": 3,
    "annotation_typing": False,
    "binding": True,
    "embedsignature": False,
    "always_allow_keywords": True,
}

HERE = os.path.dirname(os.path.abspath(__file__))


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


def _say(msg: str) -> None:
    print(f"autodsl build: {msg}", file=sys.stderr, flush=True)


def _extensions() -> list[Extension]:
    """One Extension per listed module whose source exists (paths relative to this file)."""
    if _flag("AUTODSL_NO_COMPILE"):
        _say("AUTODSL_NO_COMPILE is set: installing the pure-Python modules only")
        return []
    exts = []
    for path in COMPILED:
        if not os.path.isfile(os.path.join(HERE, path)):
            _say(f"{path} is listed in setup.py's COMPILED but does not exist: skipped")
            continue
        name = path[:-len(".py")].replace("/", ".")
        exts.append(Extension(name, [path], optional=True))
    return exts


class OptionalBuildExt(build_ext):
    """Cythonize each listed module on its own, then build the C with ``optional=True``,
    so that whatever fails leaves that module (or all of them) pure Python."""

    def run(self):
        if getattr(self, "editable_mode", False) or self.inplace:
            if self.extensions:
                _say("editable install or --inplace: not compiling (an extension module next to a "
                     ".py source would shadow its edits); the .py modules are used")
            self.extensions = []
            return
        built: list[str] = []
        try:
            self._run(built)
        except Exception:
            _say("warning: building the extension modules failed; the pure-Python modules are used\n"
                 + traceback.format_exc(limit=4))
            built.clear()
        # An extension module left in the build folder by an earlier build (of a module since
        # dropped from COMPILED, or that failed this time) would be installed with the rest.
        self._remove_stale(set(built))

    def _run(self, built: list[str]) -> None:
        if not self.extensions:
            return
        try:
            from Cython.Build import cythonize
        except ImportError:
            _say("Cython is not installed: installing the pure-Python modules only")
            self.extensions = []
            return
        keep = []
        for ext in self.extensions:
            src = ext.sources[0]
            if not os.path.isfile(src):
                _say(f"{src} does not exist: skipped")
                continue
            try:
                [c_ext] = cythonize([Extension(ext.name, [src])], build_dir=self.build_temp,
                                    compiler_directives=DIRECTIVES, quiet=True, force=self.force)
            except (Exception, SystemExit) as e:     # Cython reports a compile error by raising
                _say(f"warning: Cython could not compile {src} ({type(e).__name__}: {e}); "
                     f"{ext.name} stays pure Python")
                continue
            ext.sources = list(c_ext.sources)         # the generated C file, in build_temp
            keep.append(ext)
        self.extensions = keep
        self._built = built
        if keep:
            super().run()       # optional=True: a failed C compile or link is a warning
        _drop_dependents(built)
        failed = [e.name for e in keep if e.name not in built]
        _say(f"compiled {len(built)} of {len(COMPILED)} listed modules"
             + (f"; pure Python (failed): {', '.join(failed)}" if failed else ""))

    def build_extension(self, ext):
        super().build_extension(ext)
        getattr(self, "_built", []).append(ext.name)

    def _remove_stale(self, built: set[str]) -> None:
        _remove_extensions(self.build_lib, keep=built)


def _cimports(module: str) -> set[str]:
    """The autodsl modules whose extension types ``module``'s .pxd file cimports."""
    pxd = os.path.join(HERE, module.replace(".", os.sep) + ".pxd")
    if not os.path.isfile(pxd):
        return set()
    with open(pxd, encoding="utf-8") as f:
        return {line.split()[1] for line in f if line.startswith("from autodsl.") and " cimport " in line}


def _drop_dependents(built: list[str]) -> None:
    """Take out of ``built`` every module that cimports one that is not compiled: its extension
    module checks, at import, that the classes it derives from or reads as struct members are
    the extension types it was compiled against (Note [typed locals] in autodsl/_pure.py), so
    it would not import beside the pure-Python one."""
    changed = True
    while changed:
        changed = False
        for name in list(built):
            if not _cimports(name) <= set(built):
                _say(f"{name} stays pure Python too: it cimports {', '.join(sorted(_cimports(name) - set(built)))}")
                built.remove(name)
                changed = True


class BuildPy(build_py):
    """With nothing to compile (AUTODSL_NO_COMPILE=1, or every listed file gone), build_ext
    does not run: clear what an earlier build left in the build folder here instead."""

    def run(self):
        super().run()
        if not self.distribution.has_ext_modules():
            _remove_extensions(self.build_lib, keep=set())


def _remove_extensions(build_lib: str, keep: set[str]) -> None:
    """Delete the autodsl extension modules in ``build_lib`` but those named in ``keep``."""
    from importlib.machinery import EXTENSION_SUFFIXES
    for folder, _dirs, files in os.walk(os.path.join(build_lib, "autodsl")):
        for f in files:
            suffix = next((x for x in EXTENSION_SUFFIXES if f.endswith(x)), None)
            if suffix is None:
                continue
            path = os.path.join(folder, f)
            if os.path.relpath(path, build_lib)[:-len(suffix)].replace(os.sep, ".") not in keep:
                _say(f"removing {os.path.relpath(path, build_lib)}, left by an earlier build")
                os.remove(path)


# The grammar lives at the top of the repository (grammar/autodsl.lark) and is installed as
# autodsl/grammar/autodsl.lark, where autodsl.lang.parser looks for it first.
setup(
    packages=find_packages(HERE, include=["autodsl", "autodsl.*"]) + ["autodsl.grammar"],
    package_dir={"autodsl.grammar": "grammar"},
    package_data={"autodsl.grammar": ["autodsl.lark"]},
    ext_modules=_extensions(),
    cmdclass={"build_ext": OptionalBuildExt, "build_py": BuildPy},
)
