"""The compiled build and its pure-Python switch (setup.py, autodsl/_pure.py).

``pip install .`` compiles the modules of setup.py's ``COMPILED`` list with Cython when
it can; ``AUTODSL_PURE_PYTHON=1`` makes ``import autodsl`` use the ``.py`` files even
then. These tests check the switch in a subprocess, that ``build_kind()`` agrees with
the modules actually loaded, that a compiled install really has the listed modules
compiled (skipped for a pure-Python install: an editable one, the source tree, or a
build without a C compiler), and that no extension module sits in the source tree.
"""
from __future__ import annotations

import ast
import importlib.machinery
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import autodsl
from autodsl import _pure

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(autodsl.__file__).resolve().parent      # the autodsl these tests run on
EXT_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)

# Everything the package has, so that the subprocess loads every module there is.
_LOAD_ALL = """
import importlib, json, pkgutil, sys
import autodsl, autodsl.session
for m in pkgutil.walk_packages(autodsl.__path__, "autodsl."):
    if m.name == "autodsl.__main__":
        continue
    try:
        importlib.import_module(m.name)
    except Exception:        # an optional dependency missing: that module is not loaded
        pass
from autodsl import _pure
files = {n: getattr(m, "__file__", None) for n, m in sys.modules.items()
         if (n == "autodsl" or n.startswith("autodsl.")) and m is not None}
print(json.dumps({"kind": _pure.build_kind(), "compiled": _pure.compiled_modules(), "files": files}))
"""


def _listed_modules() -> list[str]:
    """setup.py's COMPILED, as module names (the source tree's setup.py; [] without one)."""
    setup = ROOT / "setup.py"
    if not setup.is_file():
        return []
    for node in ast.parse(setup.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COMPILED" for t in node.targets):
            return [p[:-len(".py")].replace("/", ".") for p in ast.literal_eval(node.value)]
    return []


def _load_all(pure: bool) -> dict:
    """Import every autodsl module in a fresh interpreter of this Python, on the same
    autodsl as this process, with the switch on or off; report what was loaded from where."""
    env = {k: v for k, v in os.environ.items() if k != _pure.ENV}
    if pure:
        env[_pure.ENV] = "1"
    env["PYTHONPATH"] = str(PACKAGE.parent) + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-P", "-c", _LOAD_ALL], capture_output=True, text=True, env=env,
                       cwd=tempfile.gettempdir(), timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert Path(out["files"]["autodsl"]).resolve().parent == PACKAGE, "the subprocess ran another autodsl"
    return out


def _installed_extensions() -> list[str]:
    """Module names of the extension modules installed in this autodsl's folder."""
    names = []
    for path in PACKAGE.rglob("*"):
        for suffix in EXT_SUFFIXES:
            if path.name.endswith(suffix):
                rel = path.relative_to(PACKAGE.parent).as_posix()[:-len(suffix)]
                names.append(rel.replace("/", "."))
                break
    return sorted(names)


def test_the_switch_loads_every_module_from_its_py_file():
    out = _load_all(pure=True)
    not_py = {n: f for n, f in out["files"].items() if f is not None and not f.endswith(".py")}
    assert not not_py, f"{_pure.ENV}=1, yet these were not loaded from .py files: {not_py}"
    assert out["kind"] == "pure-Python" and out["compiled"] == []
    assert len(out["files"]) > 40          # the whole package was loaded, not just its top


def test_build_kind_agrees_with_the_loaded_modules():
    engine = sys.modules["autodsl.core.engine"]
    assert _pure.build_kind() == ("compiled" if engine.__file__.endswith(EXT_SUFFIXES) else "pure-Python")
    for name in _pure.compiled_modules():
        assert sys.modules[name].__file__.endswith(EXT_SUFFIXES), name
    loaded = [n for n, m in sys.modules.items() if n.startswith("autodsl.") and m is not None
              and getattr(m, "__file__", None)]
    assert sorted(n for n in loaded if sys.modules[n].__file__.endswith(EXT_SUFFIXES)) == _pure.compiled_modules()
    if _pure.enabled():                    # the suite itself runs with AUTODSL_PURE_PYTHON=1
        assert _pure.build_kind() == "pure-Python" and _pure.compiled_modules() == []
        assert all(sys.modules[n].__file__.endswith(".py") for n in loaded)


def test_the_switch_reads_its_variable(monkeypatch):
    for value, on in [("1", True), ("yes", True), ("0", False), ("", False), ("off", False)]:
        monkeypatch.setenv(_pure.ENV, value)
        assert _pure.enabled() is on
    monkeypatch.delenv(_pure.ENV)
    assert _pure.enabled() is False


def test_a_compiled_install_has_the_listed_modules_compiled():
    installed = _installed_extensions()
    if not installed:
        pytest.skip(f"this autodsl ({PACKAGE}) is the pure-Python build (an editable install, the source "
                    f"tree, or an install without Cython or a C compiler): nothing to check")
    listed = [m for m in _listed_modules()
              if (ROOT / (m.replace(".", "/") + ".py")).is_file()] or installed
    missing = [m for m in listed if m not in installed]
    assert not missing, f"setup.py's COMPILED lists these, but they were not compiled: {missing}"
    out = _load_all(pure=False)
    assert out["kind"] == "compiled"
    # (a package's compiled __init__ is loaded as the package: "autodsl.backend.__init__" is
    # sys.modules' "autodsl.backend")
    not_ext = [m for m in listed
               if not (out["files"].get(m.removesuffix(".__init__")) or "").endswith(EXT_SUFFIXES)]
    assert not not_ext, f"installed as extension modules but loaded from elsewhere: {not_ext}"
    for m in listed:                       # the .py source is installed next to each, for the switch
        assert (PACKAGE.parent / (m.replace(".", "/") + ".py")).is_file(), m


def test_no_extension_module_in_the_source_tree():
    """A compiled module next to its .py source would shadow every edit of that file
    (editable installs never compile; setup.py's build_ext --inplace refuses to)."""
    src = ROOT / "autodsl"
    if not (ROOT / "setup.py").is_file() or not src.is_dir():
        pytest.skip("not run from a source checkout")
    stale = [str(p.relative_to(ROOT)) for p in src.rglob("*") if p.name.endswith(EXT_SUFFIXES)]
    assert not stale, f"extension modules in the source tree (delete them): {stale}"


def _setup_functions(*names: str) -> dict:
    """setup.py's functions ``names``, defined without running setup() (messages collected)."""
    said: list[str] = []
    ns = {"os": os, "HERE": str(ROOT), "_say": said.append, "said": said}
    for node in ast.parse((ROOT / "setup.py").read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            exec(compile(ast.Module([node], []), "setup.py", "exec"), ns)   # noqa: S102
    return ns


def test_every_pxd_belongs_to_a_compiled_module_and_cimports_compiled_ones():
    """Note [typed locals] (autodsl/_pure.py): a .pxd makes its module's classes extension types
    and lets compiled modules read them as such, so each one and what it cimports must be compiled."""
    if not (ROOT / "setup.py").is_file():
        pytest.skip("not run from a source checkout")
    listed = set(_listed_modules())
    ns = _setup_functions("_cimports")
    pxds = sorted(p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
                  for p in (ROOT / "autodsl").rglob("*.pxd"))
    assert {"autodsl.core.node", "autodsl.core.tensor", "autodsl.ops.registry"} <= set(pxds)
    for name in pxds:
        assert name in listed, f"{name}.pxd declares a module that setup.py does not compile"
        assert ns["_cimports"](name) <= listed, name
    assert ns["_cimports"]("autodsl.ops.registry") >= {"autodsl.core.node", "autodsl.core.tensor"}


def test_a_module_whose_cimport_stays_pure_python_stays_pure_python_too():
    """A compiled registry cannot import beside a pure-Python node.py (its Op derives from the
    extension type Node): when one module fails to compile, the ones that cimport it go too."""
    if not (ROOT / "setup.py").is_file():
        pytest.skip("not run from a source checkout")
    ns = _setup_functions("_cimports", "_drop_dependents")
    built = [m for m in _listed_modules() if m != "autodsl.core.node"]
    ns["_drop_dependents"](built)
    for gone in ("autodsl.core.node", "autodsl.ops.registry", "autodsl.core.engine"):
        assert gone not in built
    assert "autodsl.core.tensor" in built and "autodsl.ops.elementwise" in built
    assert any("autodsl.ops.registry stays pure Python too" in m for m in ns["said"])
    everything = _listed_modules()
    ns["_drop_dependents"](everything)
    assert everything == _listed_modules()          # all compiled: nothing dropped
