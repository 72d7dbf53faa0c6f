"""Which libraries are installed: autodsl always, the peers when they import.

A peer that does not import is skipped for the whole run; one whose setup for
a workload raises (an optional part missing, such as HIPS autograd's scipy
functions without scipy) is skipped for that workload only (make_runs), with
the reason in the table. autodsl failing is never a skip: it is an error.
"""

import importlib
import importlib.machinery
import os
import sys

PEERS = ("torch", "autograd", "micrograd")
LIBS = ("autodsl",) + PEERS
OWN = ("autodsl", "numpy")   # never skipped: the subject and the NumPy floor


def load():
    """Return ({name: module}, {name: reason it is skipped})."""
    import autodsl

    mods, skipped = {"autodsl": autodsl}, {}
    for name in PEERS:
        try:
            mod = importlib.import_module("micrograd.engine" if name == "micrograd" else name)
            if name == "torch":
                mod.set_num_threads(1)
                try:
                    mod.set_num_interop_threads(1)
                except RuntimeError:
                    pass
        except Exception as exc:  # not installed or broken: reported, never a failure
            what = "not installed" if isinstance(exc, ModuleNotFoundError) else "broken"
            skipped[name] = f"{what} ({type(exc).__name__}: {exc})"
            continue
        mods[name] = mod
    return mods, skipped


def make_runs(makers, mods, args, skipped):
    """{name: makers[name](mods[name], *args)} for the libraries that have a
    maker; a peer whose maker raises is left out and its exception put in
    `skipped` (with skipped=None, it raises). A maker may return None for
    work the library cannot do."""
    runs = {}
    for name, mod in mods.items():
        if name not in makers:
            continue
        try:
            run = makers[name](mod, *args)
        except Exception as exc:
            if name in OWN or skipped is None:
                raise
            skipped[name] = exc
            continue
        if run is not None:
            runs[name] = run
    return runs


def _autodsl_modules():
    try:
        import autodsl.core.engine  # noqa: F401  (the hot path; loaded by autodsl anyway)
    except ImportError:
        import autodsl  # noqa: F401
    return {name: mod for name, mod in list(sys.modules.items())
            if (name == "autodsl" or name.startswith("autodsl.")) and mod is not None}


def _is_extension(mod):
    return (getattr(mod, "__file__", None) or "").endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def build_kind():
    """"compiled" when autodsl runs from extension modules (Cython builds of its
    .py sources), else "pure-Python" (also under AUTODSL_PURE_PYTHON=1)."""
    return "compiled" if any(_is_extension(m) for m in _autodsl_modules().values()) else "pure-Python"


def build_line():
    """One line for the results header: the build, and how it was told."""
    mods = _autodsl_modules()
    compiled = sorted(n for n, m in mods.items() if _is_extension(m))
    engine = mods.get("autodsl.core.engine")
    where = os.path.basename(getattr(engine, "__file__", "") or "?") if engine else "no autodsl.core.engine"
    text = f"{build_kind()} (autodsl.core.engine: {where}; {len(compiled)} of {len(mods)} loaded autodsl modules compiled"
    if os.environ.get("AUTODSL_PURE_PYTHON"):
        text += f"; AUTODSL_PURE_PYTHON={os.environ['AUTODSL_PURE_PYTHON']}"
    return text + ")"


def version(name):
    try:
        from importlib.metadata import version as v
        return v(name)
    except Exception:
        return "?"
