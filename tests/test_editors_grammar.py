"""The editors' TextMate grammar (editors/): generated, current, and colouring as Pygments does.

The grammar's tokenizer is VS Code's own (the npm packages vscode-textmate and vscode-oniguruma,
driven by editors/tokenize.js). They are looked for in $AUTODSL_TEXTMATE_MODULES (a node_modules
folder; .ci/run installs them there), then in editors/.textmate/node_modules
(``npm install --prefix editors/.textmate vscode-textmate vscode-oniguruma``); without node or
them the comparison skips, with the reason.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

from autodsl.cli.lexer import BUILTIN_NAMES, CONSTANTS, PREDEFINED, AutodslLexer
from autodsl.lang.parser import KEYWORDS

ROOT = Path(__file__).resolve().parents[1]
EDITORS = ROOT / "editors"
SAMPLES = sorted((ROOT / "samples").glob("*.ad"))


def _generator():
    spec = importlib.util.spec_from_file_location("make_grammar", EDITORS / "make_grammar.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_grammar_is_what_the_generator_writes():
    gen = _generator()
    text = gen.grammar_text()
    for path in gen.OUTPUTS:
        assert path.is_file(), f"{path} is missing"
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} is out of date (a keyword or built-in changed): "
            "run .venv/bin/python editors/make_grammar.py and commit its output")


def test_keywords_are_the_lark_grammars_words_as_the_lexer_has_them():
    # the generator reads the Lark grammar, the Pygments lexer the parser's KEYWORDS
    assert _generator().grammar_keywords() == KEYWORDS


def test_grammar_holds_every_keyword_and_builtin():
    rules = json.dumps(_generator().grammar())
    for word in sorted(KEYWORDS | set(BUILTIN_NAMES) | set(PREDEFINED)):
        assert word in rules, f"{word} is not in the grammar"


def test_vscode_extension_declares_the_language_and_grammar():
    ext = EDITORS / "vscode"
    pkg = json.loads((ext / "package.json").read_text(encoding="utf-8"))
    (lang,) = pkg["contributes"]["languages"]
    (gram,) = pkg["contributes"]["grammars"]
    assert lang["id"] == gram["language"] == "autodsl"
    assert lang["extensions"] == [".ad"]
    assert gram["scopeName"] == "source.autodsl" == _generator().grammar()["scopeName"]
    assert (ext / gram["path"]).resolve() == _generator().OUTPUTS[1]
    conf = json.loads((ext / lang["configuration"]).read_text(encoding="utf-8"))
    assert conf["comments"] == {"lineComment": "#"}
    pairs = {(p["open"], p["close"]) for p in conf["autoClosingPairs"]}
    assert {("(", ")"), ("[", "]"), ("{", "}"), ('"', '"'), ("'", "'")} <= pairs
    assert {tuple(b) for b in conf["brackets"]} == {("(", ")"), ("[", "]"), ("{", "}")}
    assert {tuple(p) for p in conf["surroundingPairs"]} >= pairs


# ---- TextMate tokens against Pygments tokens ------------------------------

def _pygments_class(tt) -> str | None:
    """A Pygments token type's class; None for what neither colours (spaces, stray characters)."""
    for base, cls in ((Comment, "comment"), (String, "string"), (Number, "number"),
                      (Keyword.Constant, "constant"), (Keyword, "keyword"), (Operator, "operator"),
                      (Name.Builtin, "builtin"), (Name.Function, "function"),
                      (Name.Attribute, "attribute"), (Punctuation, "punctuation")):
        if tt in base:
            return cls
    if tt in Whitespace or tt in Text:
        return None
    assert tt in Name, f"the test has no class for the Pygments token {tt}"
    return "name"


# Innermost scope first; a comment's or a string's inside (`#`, quotes, `{x}`) is comment or string.
_TM_CLASSES = (("constant.numeric.", "number"), ("constant.language.", "constant"),
               ("support.", "builtin"), ("keyword.operator.", "operator"), ("keyword.", "keyword"),
               ("storage.type.function.", "keyword"), ("entity.name.function.member.", "attribute"),
               ("variable.other.property.", "attribute"), ("entity.name.function.", "function"),
               ("punctuation.", "punctuation"))


def _textmate_class(scopes: list[str]) -> str:
    for outer, cls in (("comment.", "comment"), ("string.", "string")):
        if any(s.startswith(outer) for s in scopes):
            return cls
    for scope in reversed(scopes):
        for prefix, cls in _TM_CLASSES:
            if scope.startswith(prefix):
                return cls
    return "name"


def _node_env() -> dict | None:
    """The environment that lets editors/tokenize.js find its npm packages, or None."""
    if shutil.which("node") is None:
        return None
    candidates = [os.environ.get("AUTODSL_TEXTMATE_MODULES"), str(EDITORS / ".textmate" / "node_modules")]
    for modules in filter(None, candidates):
        if (Path(modules) / "vscode-textmate").is_dir() and (Path(modules) / "vscode-oniguruma").is_dir():
            return dict(os.environ, NODE_PATH=modules)
    return None


def _tokenize(env: dict, files: list[Path]) -> dict[str, list]:
    grammar = _generator().OUTPUTS[0]
    proc = subprocess.run(["node", str(EDITORS / "tokenize.js"), str(grammar), *map(str, files)],
                          check=False, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# Every word list, operator and token form once, beyond what the samples happen to use.
def _every_token() -> str:
    lines = [" ".join(sorted(KEYWORDS)), " ".join(BUILTIN_NAMES), " ".join(PREDEFINED + CONSTANTS),
             "a == b != c <= d >= e += f -= g *= h //= i /= j %= k // l + m - n * o / p % q @ r ^ s < t > u = v",
             "( ) [ ] { } , ; : . x.grad x.sum() 1 12 1.5 1. .5 1e3 1.5e-3 2E+4 2x xsum format defx",
             "def f(x) { return x } sum(x)", 'y = "a\\"b" + \'c\\\'d\' # comment "not a string"',
             'print(f"loss {loss:.4f} at {i} {{braces}} {w[0:2]}", f\'{x["k"]}\')', "z = 1 + \\",
             "  2 $ ? ! ` tensor.x no_grad { }", "notx nota_b and_ or_x in_ _in"]
    return "\n".join(lines) + "\n"


def _mismatches(text: str, tm_tokens: list) -> list[str]:
    at = [None] * len(text)
    for start, end, scopes in tm_tokens:
        for i in range(start, end):
            at[i] = _textmate_class(scopes)
    bad = []
    for start, tt, value in AutodslLexer().get_tokens_unprocessed(text):
        want = _pygments_class(tt)
        if want is None:
            continue
        got = {at[i] for i in range(start, start + len(value))}
        if got != {want}:
            line = text.count("\n", 0, start) + 1
            bad.append(f"line {line}: {value!r} is {want} for Pygments ({tt}), {sorted(map(str, got))} for TextMate")
    return bad


def test_textmate_grammar_colours_the_samples_as_pygments():
    env = _node_env()
    if env is None:
        pytest.skip("no node with the npm packages vscode-textmate and vscode-oniguruma: "
                    "npm install --prefix editors/.textmate vscode-textmate vscode-oniguruma "
                    "(or set AUTODSL_TEXTMATE_MODULES to a node_modules folder holding them)")
    assert SAMPLES, "no samples/*.ad found"
    tokens = _tokenize(env, SAMPLES)
    bad = []
    for path in SAMPLES:
        bad += [f"{path.name} {m}" for m in _mismatches(path.read_text(encoding="utf-8"), tokens[str(path)])]
    assert not bad, "\n".join(bad[:30])


def test_textmate_grammar_colours_every_token_form_as_pygments(tmp_path):
    env = _node_env()
    if env is None:
        pytest.skip("no node with the npm packages vscode-textmate and vscode-oniguruma")
    path = tmp_path / "every.ad"
    text = _every_token()
    path.write_text(text, encoding="utf-8")
    bad = _mismatches(text, _tokenize(env, [path])[str(path)])
    assert not bad, "\n".join(bad[:30])
    # and the check is not empty: each class occurs
    classes = {_pygments_class(tt) for _, tt, _ in AutodslLexer().get_tokens_unprocessed(text)}
    assert classes >= {"keyword", "constant", "builtin", "function", "number", "string", "comment",
                       "operator", "punctuation", "attribute", "name"}
