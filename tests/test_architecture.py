"""The package's shape: imports point down the layers, no import cycles, no tool imports
another, function-local imports only for optional dependencies, and no module-level mutable
state besides what the allowlist below names (tables filled at import, memo caches, id counters).

    cli, kernel -> session -> lang -> (the autodsl facade) -> tools -> ops -> core -> backend
        -> names -> errors, textfmt -> source -> context

Every import in every module is checked, including imports inside functions. The package's
``__init__`` only re-exports, so it is exempt from the layer rule.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "autodsl"

LAYERS = [
    ["context", "_pure"],
    ["source"],
    ["errors", "textfmt"],
    ["names"],
    ["backend"],
    ["core"],
    ["ops"],
    ["tools"],
    ["autodsl"],            # the public API facade (autodsl/__init__.py)
    ["lang"],
    ["session"],
    ["cli", "__main__", "kernel"],    # kernel: the Jupyter kernel's launcher (python -m autodsl.kernel)
]
LEVEL = {name: i for i, names in enumerate(LAYERS) for name in names}

# Imported inside functions, and only there: they are optional extras (or load on first use).
# (scipy is a dependency imported on first use: tests/test_ops_pointwise.py checks that
# importing autodsl does not import it.)
OPTIONAL = {"cupy", "cupyx", "dask", "distributed", "matplotlib", "IPython", "ipykernel", "graphviz",
            "jupyter_client", "array_api_strict", "zarr"}

# Module-level mutable objects that are not per-run state, each with why it may be global.
ALLOWED_GLOBALS = {
    "autodsl.context:_current": "the one ContextVar: the current run context",
    "autodsl.source:POSITIONS": "memo cache: (code id, offset) -> the position, without a line-table scan",
    "autodsl.source:_LINES": "memo cache: one interned position tuple per source line",
    "autodsl.names:TENSOR_TYPES": "filled once at import by core/tensor.py",
    "autodsl.backend:_cpu": "the CPU array namespace (numpy or array_api_strict), chosen at startup or by tests",
    "autodsl.backend:_ZEROS": "memo cache: one shared 0-d zero per dtype",
    "autodsl.backend:_BY_ID": "memo cache: dtype object -> DType",
    "autodsl.backend:_KIND": "memo cache: dtype object -> kind letter",
    "autodsl.backend:_namespaces": "memo cache of loaded array namespaces",
    "autodsl.backend:_native_tables": "memo cache of each namespace's dtype objects",
    "autodsl.backend:_BY_DTYPE_CLASS": "memo cache of dtype lookups",
    "autodsl.backend:_NS_BY_TYPE": "memo cache: array type -> namespace",
    "autodsl.backend:_DEVICE_BY_TYPE": "memo cache: array type -> device",
    "autodsl.backend:_FLAVOR_BY_TYPE": "memo cache: array type -> namespace flavour",
    "autodsl.backend:_cupy": "CuPy, loaded on first use",
    "autodsl.backend:_cupy_xp": "CuPy's namespace, loaded on first use",
    "autodsl.backend:_strict_xp": "array_api_strict, loaded on first use",
    "autodsl.backend:_dask_xp": "dask's namespace, loaded on first use",
    "autodsl.ops.promotion:_CONSTANTS": "memo cache: one 0-d tensor per Python constant (Note [constant tensors])",
    "autodsl.ops.promotion:_F64_CONSTANTS": "memo cache: one 0-d float64 array per Python float of apply's 0-d lane (Note [bare constants])",
    "autodsl.ops.promotion:_VALUES": "memo cache: the Python number of each cached constant (Note [constant tensors])",
    "autodsl.core.node:_seq": "id counter: creation order of nodes (seq_nr)",
    "autodsl.core.node:_hook_ids": "id counter of hook handles",
    "autodsl.core.watch:_serial": "id counter: the order of records",
    "autodsl.ops.registry:REGISTRY": "the op table, filled at import",
    "autodsl.core.program:_CODE": "memo cache: one code object per generated source (compile() of a program)",
    "autodsl.ops.registry:_SHAPES": "memo cache: one interned input-shapes tuple per distinct shapes (Note [node memory])",
    "autodsl.ops.methods:_dunders": "table of Tensor's operators, installed at import",
    "autodsl.ops.methods:_methods": "table of Tensor's methods, installed at import",
}


def module_name(path: Path, pkg: Path = PKG) -> str:
    rel = path.relative_to(pkg.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules(pkg: Path = PKG) -> dict:
    return {module_name(p, pkg): p for p in sorted(pkg.rglob("*.py"))}


def _resolve(mod: str, path: Path, node, mods: dict) -> list[str]:
    """The package modules an import statement names (a package's __init__ for its names)."""
    if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
    else:
        if node.level:
            base = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in mods]
        targets = subs or [module]
    out = []
    for t in targets:
        while t and t not in mods:
            t = t.rpartition(".")[0]
        if t and t.split(".")[0] == "autodsl":
            out.append(t)
    return out


def _imports(pkg: Path = PKG):
    """(module, line, target module, inside a function) for every import of the package."""
    mods = _modules(pkg)
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        local = {id(n) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for n in ast.walk(fn)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(mod, path, node, mods):
                    if target != mod:
                        yield mod, node.lineno, target, id(node) in local


def top_of(module: str) -> str:
    """'autodsl.ops.registry' -> 'ops'; 'autodsl' -> 'autodsl'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "autodsl"


def violations(pkg: Path = PKG) -> list[str]:
    bad = []
    for mod, line, target, _ in _imports(pkg):
        if mod == "autodsl":
            continue
        here, there = LEVEL.get(top_of(mod)), LEVEL.get(top_of(target))
        if here is None:
            bad.append(f"{mod} is in no layer of tests/test_architecture.py")
        elif there is None:
            bad.append(f"{mod}:{line} imports unknown {target}")
        elif there > here:
            bad.append(f"{mod}:{line} imports {target} (layer {there} above {here})")
        elif top_of(mod) == top_of(target) == "tools" and mod != "autodsl.tools" and target != "autodsl.tools":
            bad.append(f"{mod}:{line} imports {target}: a tool never imports another tool")
    return sorted(set(bad))


def cycles(pkg: Path = PKG) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    edges: dict = {}
    for mod, _, target, _ in _imports(pkg):
        if target != "autodsl":         # the facade re-exports everything: not a dependency
            edges.setdefault(mod, set()).add(target)
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(_modules(pkg)):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def local_imports(pkg: Path = PKG) -> list[str]:
    """Function-local imports of the package itself (they hide cycles and upward imports); an
    optional dependency is imported where it is used, and the standard library anywhere."""
    bad = []
    for path in sorted(pkg.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = ["autodsl"] if node.level else [node.module or ""]
                else:
                    continue
                for n in names:
                    if n.split(".")[0] == "autodsl":
                        bad.append(f"{module_name(path, pkg)}:{node.lineno} imports {n} inside {fn.name}()")
    return bad


_MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "collections.defaultdict", "itertools.count", "count",
                  "ContextVar", "contextvars.ContextVar", "weakref.WeakKeyDictionary", "WeakKeyDictionary",
                  "weakref.WeakValueDictionary", "deque", "collections.deque"}


def module_state(pkg: Path = PKG) -> list[str]:
    """Module-level names bound to a mutable container, a counter or a ContextVar, or rebound by
    ``global`` inside a function; lists, dicts and sets of literals count."""
    found = []
    for path in sorted(pkg.rglob("*.py")):
        mod = module_name(path, pkg)
        tree = ast.parse(path.read_text())
        for st in tree.body:
            target = st.targets[0] if isinstance(st, ast.Assign) else st.target if isinstance(st, ast.AnnAssign) else None
            if not isinstance(target, ast.Name) or target.id == "__all__" or st.value is None:
                continue
            v = st.value
            mutable = isinstance(v, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
                isinstance(v, ast.Call) and ast.unparse(v.func) in _MUTABLE_CALLS)
            if mutable and not (target.id.isupper() and _never_changed(tree, target.id)):
                found.append(f"{mod}:{target.id}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Global):
                found.extend(f"{mod}:{n}" for n in node.names)
    return sorted(set(found))


def _never_changed(tree, name: str) -> bool:
    """An UPPER_CASE table that no code writes into after the module's own top level."""
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        isinstance(node.func.value, ast.Name) and node.func.value.id == name and \
                        node.func.attr in ("append", "add", "update", "pop", "clear", "setdefault", "extend",
                                           "remove", "discard", "insert", "popitem"):
                    return False
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                    for t in (node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]):
                        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == name:
                            return False
    return True


def test_imports_point_down():
    bad = violations()
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    found = cycles()
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_function_local_imports_are_optional_dependencies_only():
    bad = local_imports()
    assert not bad, "\n".join(bad)


def test_no_module_level_state_but_the_allowed():
    found = module_state()
    unexpected = [f for f in found if f not in ALLOWED_GLOBALS]
    assert not unexpected, "module-level mutable state (move it into the run context):\n" + "\n".join(unexpected)
    stale = sorted(set(ALLOWED_GLOBALS) - set(found))
    assert not stale, "allowlisted but no longer there: " + ", ".join(stale)


def test_the_engine_stays_small():
    assert sum(1 for _ in (PKG / "core" / "engine.py").open()) <= 250


def test_each_layer_package_has_its_modules():
    root = [p.name for p in PKG.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(root) <= 8, root
    for pkg in ("backend", "core", "ops", "tools", "lang", "cli"):
        assert (PKG / pkg / "__init__.py").is_file(), pkg


# -- the checkers can fail ------------------------------------------------------------------------

def _fake(tmp_path, files: dict) -> Path:
    pkg = tmp_path / "autodsl"
    for rel, text in files.items():
        p = pkg / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for d in {p.parent for p in pkg.rglob("*.py")} | {pkg}:
        (d / "__init__.py").touch()
    return pkg


def test_checker_sees_an_upward_import(tmp_path):
    pkg = _fake(tmp_path, {"ops/registry.py": "from ..core import engine\n",
                           "core/engine.py": "def f():\n    from ..ops.registry import apply\n"})
    assert violations(pkg) == ["autodsl.core.engine:2 imports autodsl.ops.registry (layer 6 above 5)"]
    assert local_imports(pkg) == ["autodsl.core.engine:2 imports autodsl inside f()"]


def test_checker_sees_a_cycle_and_a_tool_importing_a_tool(tmp_path):
    pkg = _fake(tmp_path, {"core/a.py": "from autodsl.core import b\n", "core/b.py": "from autodsl.core import a\n",
                           "tools/why.py": "from autodsl.tools import graph\n", "tools/graph.py": ""})
    assert cycles(pkg) == [["autodsl.core.a", "autodsl.core.b"]]
    assert violations(pkg) == ["autodsl.tools.why:1 imports autodsl.tools.graph: a tool never imports another tool"]


def test_checker_sees_module_state(tmp_path):
    pkg = _fake(tmp_path, {"core/flags.py": "ON = [False]\nTABLE = {'a': 1}\n_seen = set()\n"
                                            "def f():\n    global X\n    ON[0] = True\n"})
    assert module_state(pkg) == ["autodsl.core.flags:ON", "autodsl.core.flags:X", "autodsl.core.flags:_seen"]


@pytest.mark.parametrize("name", sorted(OPTIONAL))
def test_optional_dependencies_are_not_required(name):
    text = (PKG.parent / "pyproject.toml").read_text()
    deps = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert f'"{name}' not in deps.replace("-", "_").replace("cupy_cuda", "cupy")
