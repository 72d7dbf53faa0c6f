"""Imports go one way: cli -> session -> lang -> tools -> ops -> core -> backend -> errors.

Every import in every module, including imports inside functions, is checked
against the layer table below. The package's __init__ only re-exports, so it is
exempt; importing the package itself counts as the public API layer.
"""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "autodsl"

LAYERS = [
    ["errors", "textfmt", "_pure"],   # _pure: the pure-Python switch, imported first by the package
    ["backend"],
    ["core"],
    ["ops"],
    ["tools"],
    ["autodsl"],            # the public API façade (autodsl/__init__.py)
    ["lang"],
    ["session"],
    ["cli", "__main__"],
]
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}


def top_of(module: str) -> str:
    """'autodsl.ops.registry' -> 'ops'; 'autodsl' -> 'autodsl'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "autodsl"


def module_name(path: Path, pkg: Path = PKG) -> str:
    rel = path.relative_to(pkg.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, pkg: Path = PKG):
    mod = module_name(path, pkg)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "autodsl":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:   # "from . import x": x is a module, or a name of the package
                    for alias in node.names:
                        sub = pkg.parent.joinpath(*f"{target}.{alias.name}".split("."))
                        is_module = sub.is_dir() or sub.with_suffix(".py").is_file()
                        yield node.lineno, f"{target}.{alias.name}" if is_module else target
                    continue
                yield node.lineno, target
            elif node.module and node.module.split(".")[0] == "autodsl":
                yield node.lineno, node.module


def violations(pkg: Path = PKG) -> list[str]:
    bad = []
    for path in sorted(pkg.rglob("*.py")):
        mod = module_name(path, pkg)
        if mod == "autodsl":
            continue
        here = LEVEL.get(top_of(mod))
        if here is None:
            bad.append(f"{mod} is in no layer of tests/test_architecture.py")
            continue
        for line, target in imports_of(path, pkg):
            there = LEVEL.get(top_of(target))
            if there is None:
                bad.append(f"{mod}:{line} imports unknown {target}")
            elif there > here:
                bad.append(f"{mod}:{line} imports {target} (layer {there} above {here})")
    return bad


def test_imports_point_down():
    bad = violations()
    assert not bad, "\n".join(bad)


def test_checker_sees_a_violation(tmp_path):
    """The rule can fail: an upward import hidden in a function body is reported."""
    pkg = tmp_path / "autodsl"
    (pkg / "core").mkdir(parents=True)
    (pkg / "ops").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("")
    (pkg / "ops" / "registry.py").write_text("from ..core import engine\n")
    (pkg / "core" / "engine.py").write_text("def f():\n    from ..ops.registry import sum_to\n")
    assert violations(pkg) == ["autodsl.core.engine:2 imports autodsl.ops.registry (layer 3 above 2)"]


def test_only_backend_imports_cupy():
    for path in PKG.rglob("*.py"):
        text = path.read_text()
        if "import cupy" in text:
            assert path.parent.name == "backend", path
