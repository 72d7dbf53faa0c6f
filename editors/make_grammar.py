"""Write the TextMate grammar of autodsl (``editors/autodsl.tmLanguage.json``).

Run ``.venv/bin/python editors/make_grammar.py`` after a keyword or a built-in is added;
``--check`` only says whether the committed files are what it would write (exit status 1 when
not). The word lists come from the language itself: the keywords from the Lark grammar's
terminals, the built-in names from the built-ins table (as the Pygments lexer,
``autodsl/cli/lexer.py``, has them); the rules are the lexer's, in the lexer's order, so that an
editor colours a script as ``pygmentize`` and the REPL do (tests/test_editors_grammar.py checks
this on the samples). The grammar is written twice: here, and inside the VS Code extension
folder (``editors/vscode/syntaxes/``), which must hold its own copy to be packaged.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import autodsl
from autodsl.backend import DType
from autodsl.cli.lexer import BUILTIN_NAMES, CONSTANTS, PREDEFINED
from autodsl.lang.parser import get_parser

HERE = Path(__file__).resolve().parent
OUTPUTS = (HERE / "autodsl.tmLanguage.json", HERE / "vscode" / "syntaxes" / "autodsl.tmLanguage.json")
SCOPE = "source.autodsl"

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_LOGICAL = ("and", "or", "not")


def _words(names) -> str:
    """An alternation of whole words, longest first. Like Pygments' ``words(suffix=r"\\b")`` it
    has no leading ``\\b``: the identifier rule after it starts earlier inside a longer name, and
    TextMate takes the leftmost match."""
    return "(?:" + "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n))) + r")\b"


def _quoted(q: str, prefix: str = "") -> str:
    """A one-line string in quote `q` (the lexer's and the Lark grammar's STRING), with its prefix,
    quotes and contents as groups 1-4 (group 1 empty without a prefix)."""
    return f"({prefix})({q})((?:[^{q}\\\\\\n]|\\\\.)*)({q})"


def grammar_keywords() -> frozenset[str]:
    """The words the Lark grammar (grammar/autodsl.lark) spells out: `def`, `for`, `true`, ..."""
    return frozenset(t.pattern.value for t in get_parser().terminals
                     if t.pattern.type == "str" and t.pattern.value.isidentifier())


def grammar() -> dict:
    """The grammar as a JSON-ready dict: the lexer's rules in its order, one scope a token class."""
    keywords = sorted(grammar_keywords() - set(CONSTANTS) - set(_LOGICAL))
    control = [k for k in keywords if k != "def"]
    dtypes = [n for n in PREDEFINED if isinstance(getattr(autodsl, n, None), DType)]
    values = [n for n in PREDEFINED if n not in dtypes]

    def string_rule(q: str, prefix: str, name: str, content: list) -> dict:
        return {"name": f"{name}.autodsl", "match": _quoted(q, prefix),
                "captures": {"1": {"name": "storage.type.string.autodsl"},
                             "2": {"name": "punctuation.definition.string.begin.autodsl"},
                             "3": {"patterns": content},
                             "4": {"name": "punctuation.definition.string.end.autodsl"}}}

    escape = [{"include": "#escape"}]
    fstring = [{"include": "#escape"}, {"include": "#fstring-field"}]
    # Inside `{...}`: brackets (a slice's colon), quoted text of the other quote, anything but `:`.
    field_expr = r"""(?:[^{}:'"\[\]()]|\[[^\]]*\]|\([^)]*\)|'[^']*'|"[^"]*")*"""
    repository = {
        "comment": {"name": "comment.line.number-sign.autodsl", "match": r"(#)[^\n]*",
                    "captures": {"1": {"name": "punctuation.definition.comment.autodsl"}}},
        "line-continuation": {"match": r"(\\)[ \t\f]*$",
                              "captures": {"1": {"name": "punctuation.separator.continuation.line.autodsl"}}},
        "string": {"patterns": [
            string_rule('"', "f", "string.interpolated.double", fstring),
            string_rule("'", "f", "string.interpolated.single", fstring),
            string_rule('"', "", "string.quoted.double", escape),
            string_rule("'", "", "string.quoted.single", escape)]},
        "escape": {"name": "constant.character.escape.autodsl", "match": r"\\."},
        "fstring-field": {"patterns": [
            {"name": "constant.character.escape.autodsl", "match": r"\{\{|\}\}"},
            {"name": "meta.interpolation.autodsl",
             "match": r"(\{)(" + field_expr + r")(?:(:)([^{}]*))?(\})",
             "captures": {"1": {"name": "punctuation.section.interpolation.begin.autodsl"},
                          "2": {"patterns": [{"include": "#code"}]},
                          "3": {"name": "punctuation.separator.format.autodsl"},
                          "4": {"name": "constant.other.format-spec.autodsl"},
                          "5": {"name": "punctuation.section.interpolation.end.autodsl"}}}]},
        "function-definition": {"match": r"(def)(\s+)(" + _NAME + ")",
                                "captures": {"1": {"name": "storage.type.function.autodsl"},
                                             "3": {"name": "entity.name.function.autodsl"}}},
        "keyword": {"patterns": [
            {"name": "keyword.control.autodsl", "match": _words(control)},
            {"name": "storage.type.function.autodsl", "match": _words(["def"])},
            {"name": "keyword.operator.logical.autodsl", "match": _words(_LOGICAL)},
            {"name": "constant.language.autodsl", "match": _words(CONSTANTS)}]},
        "attribute": {"patterns": [
            {"match": r"(\.)(" + _NAME + r")(?=\s*\()",
             "captures": {"1": {"name": "punctuation.accessor.autodsl"},
                          "2": {"name": "entity.name.function.member.autodsl"}}},
            {"match": r"(\.)(" + _NAME + ")",
             "captures": {"1": {"name": "punctuation.accessor.autodsl"},
                          "2": {"name": "variable.other.property.autodsl"}}}]},
        "number": {"patterns": [
            {"name": "constant.numeric.float.autodsl",
             "match": r"(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+"},
            {"name": "constant.numeric.integer.autodsl", "match": r"\d+"}]},
        "builtin": {"patterns": [
            {"name": "support.type.dtype.autodsl", "match": _words(dtypes)},
            {"name": "support.constant.autodsl", "match": _words(values)},
            {"name": "support.function.builtin.autodsl", "match": _words(BUILTIN_NAMES)}]},
        # A plain name has no scope, but it must be a rule: it keeps a built-in's or keyword's
        # letters inside a longer name (`xsum`, `format`) from matching.
        "name": {"match": _NAME},
        # The lexer's operator alternation, split by kind in its order (longest first).
        "operator": {"patterns": [
            {"name": "keyword.operator.comparison.autodsl", "match": r"==|!=|<=|>="},
            {"name": "keyword.operator.assignment.augmented.autodsl", "match": r"\+=|-=|\*=|//=|/=|%="},
            {"name": "keyword.operator.arithmetic.autodsl", "match": r"//|[-+*/%@^]"},
            {"name": "keyword.operator.comparison.autodsl", "match": r"[<>]"},
            {"name": "keyword.operator.assignment.autodsl", "match": r"="}]},
        "punctuation": {"patterns": [
            {"name": "punctuation.parenthesis.begin.autodsl", "match": r"\("},
            {"name": "punctuation.parenthesis.end.autodsl", "match": r"\)"},
            {"name": "punctuation.definition.list.begin.autodsl", "match": r"\["},
            {"name": "punctuation.definition.list.end.autodsl", "match": r"\]"},
            {"name": "punctuation.section.block.begin.autodsl", "match": r"\{"},
            {"name": "punctuation.section.block.end.autodsl", "match": r"\}"},
            {"name": "punctuation.separator.element.autodsl", "match": ","},
            {"name": "punctuation.separator.colon.autodsl", "match": ":"},
            {"name": "punctuation.terminator.statement.autodsl", "match": ";"},
            {"name": "punctuation.accessor.autodsl", "match": r"\."}]},
        # The order of the lexer's rules: at one place the first rule that matches wins.
        "code": {"patterns": [{"include": f"#{n}"} for n in (
            "line-continuation", "comment", "string", "function-definition", "keyword", "attribute",
            "number", "builtin", "name", "operator", "punctuation")]},
    }
    return {
        "information_for_contributors": [
            "Generated by editors/make_grammar.py from the language's keywords and built-ins;",
            "do not edit: run `.venv/bin/python editors/make_grammar.py` instead."],
        "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
        "name": "autodsl",
        "scopeName": SCOPE,
        "fileTypes": ["ad"],
        "patterns": [{"include": "#code"}],
        "repository": repository,
    }


def grammar_text() -> str:
    """The grammar file's exact text."""
    return json.dumps(grammar(), indent=2, ensure_ascii=True) + "\n"


def main(argv: list[str]) -> int:
    text = grammar_text()
    if argv[1:] == ["--check"]:
        stale = [p for p in OUTPUTS if not p.is_file() or p.read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"{p.relative_to(HERE.parent)} is out of date: run .venv/bin/python editors/make_grammar.py")
        return 1 if stale else 0
    if argv[1:]:
        print("usage: make_grammar.py [--check]", file=sys.stderr)
        return 2
    for p in OUTPUTS:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        print(f"wrote {p.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
