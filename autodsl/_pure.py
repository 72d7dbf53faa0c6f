"""The pure-Python switch, and which build is running.

A normal install (``pip install .`` with a C compiler) has some modules compiled
by Cython from their ``.py`` files (the list is ``COMPILED`` in setup.py); the
``.py`` files are installed next to the extension modules. CPython's path finder
prefers an extension module to a ``.py`` file of the same name, so with the
environment variable ``AUTODSL_PURE_PYTHON=1`` this module puts a finder in
front of ``sys.meta_path`` that loads every ``autodsl.*`` module from its
``.py`` source instead. ``autodsl/__init__.py`` imports this module first, so
the switch covers every ``autodsl`` module but the package's ``__init__`` (which
is never compiled) and this module (never compiled either).

``build_kind()`` says which build is running: "compiled" when at least the
engine is an extension module, otherwise "pure-Python".
"""
from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys

__all__ = ["ENV", "enabled", "build_kind", "compiled_modules", "is_extension", "cython"]

ENV = "AUTODSL_PURE_PYTHON"
_ENGINE = "autodsl.core.engine"
_PREFIX = "autodsl."


def enabled() -> bool:
    """True when ``AUTODSL_PURE_PYTHON`` asks for the ``.py`` modules."""
    return os.environ.get(ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


class SourceFinder:
    """Finds ``autodsl.*`` modules as their ``.py`` sources, never as extension modules.

    It looks in the parent package's ``__path__`` only, like the path finder; a name
    with no ``.py`` file or package there is left to the other finders."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if not name.startswith(_PREFIX) or not path:
            return None
        tail = name.rpartition(".")[2]
        for entry in path:
            if not isinstance(entry, str):
                continue
            base = os.path.join(entry, tail)
            init = os.path.join(base, "__init__.py")
            if os.path.isfile(init):
                return importlib.util.spec_from_file_location(name, init, submodule_search_locations=[base])
            source = base + ".py"
            if os.path.isfile(source):
                return importlib.util.spec_from_file_location(name, source)
        return None

    @classmethod
    def invalidate_caches(cls):
        pass


class cython:  # noqa: N801 - it stands in for the module of that name
    """What ``cython`` is to the compiled modules' ``.py`` files when Cython is not installed.

    Note [typed locals]: a compiled module writes ``try: import cython`` / ``except ImportError:
    from autodsl._pure import cython``. Compiled, Cython reads ``import cython`` as its own
    directives: ``@cython.locals(node=Op)`` types a local as an extension type declared in the
    module's ``.pxd`` (its attributes become struct fields), and ``cython.compiled`` is True.
    Run as Python, the decorator does nothing and ``cython.compiled`` is False, whether the
    name comes from here or from Cython's own stand-in (``Cython.Shadow``)."""

    compiled = False
    bint = bool

    @staticmethod
    def locals(**_types):
        return lambda f: f


def install() -> None:
    """Put ``SourceFinder`` first on ``sys.meta_path`` (once)."""
    if not any(f is SourceFinder for f in sys.meta_path):
        sys.meta_path.insert(0, SourceFinder)


def is_extension(module) -> bool:
    """True when ``module`` was loaded from a compiled extension module."""
    loader = getattr(getattr(module, "__spec__", None), "loader", None)
    if isinstance(loader, importlib.machinery.ExtensionFileLoader):
        return True
    path = getattr(module, "__file__", None) or ""
    return path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def compiled_modules() -> list[str]:
    """The names of the loaded ``autodsl`` modules that are extension modules, sorted."""
    return sorted(name for name, mod in list(sys.modules.items())
                  if (name == "autodsl" or name.startswith(_PREFIX)) and mod is not None and is_extension(mod))


def build_kind() -> str:
    """"compiled" when the engine module in use is an extension module, else "pure-Python"."""
    try:
        engine = importlib.import_module(_ENGINE)
    except ImportError:     # pragma: no cover - the engine was renamed
        return "compiled" if compiled_modules() else "pure-Python"
    return "compiled" if is_extension(engine) else "pure-Python"


if enabled():
    install()
