"""A Pygments lexer for the autodsl language (``.ad`` files and the REPL).

Registered as a Pygments plugin (``[project.entry-points."pygments.lexers"]``
in pyproject.toml), so ``pygmentize -l autodsl file.ad`` highlights a script
after install; the REPL colours its input with the same lexer. Keywords come
from the parser and built-in names from the built-ins table, so highlighting
cannot drift from the language.
"""
from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (Comment, Keyword, Name, Number, Operator, Punctuation, String, Text,
                            Whitespace)

from autodsl.lang.builtins import LANGUAGE_BUILTINS, core_functions
from autodsl.lang.parser import KEYWORDS

__all__ = ["AutodslLexer", "BUILTIN_NAMES", "CONSTANTS", "PREDEFINED"]

CONSTANTS = ("true", "false", "none")
PREDEFINED = ("inf", "nan", "pi", "float32", "float64", "int32", "int64", "bool")
BUILTIN_NAMES = tuple(sorted((set(core_functions()) | set(LANGUAGE_BUILTINS)) - set(PREDEFINED)))
_KEYWORDS = tuple(sorted(KEYWORDS - set(CONSTANTS) - {"and", "or", "not"}))

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


class AutodslLexer(RegexLexer):
    """Keywords, numbers, strings, comments, operators and built-in names of autodsl."""

    name = "autodsl"
    aliases = ["autodsl", "ad"]
    filenames = ["*.ad"]
    mimetypes = ["text/x-autodsl"]
    url = "https://github.com/autodsl/autodsl"

    tokens = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t\f\r]+", Whitespace),
            (r"\\[ \t\f]*\r?\n", Text),                     # line continuation
            (r"#[^\n]*", Comment.Single),
            (r'f"([^"\\\n]|\\.)*"', String.Double),              # f-strings before the name `f`
            (r"f'([^'\\\n]|\\.)*'", String.Single),
            (r'"([^"\\\n]|\\.)*"', String.Double),
            (r"'([^'\\\n]|\\.)*'", String.Single),
            (r"(def)(\s+)(" + _NAME + ")", bygroups(Keyword, Whitespace, Name.Function)),
            (words(_KEYWORDS, suffix=r"\b"), Keyword),
            (words(("and", "or", "not"), suffix=r"\b"), Operator.Word),
            (words(CONSTANTS, suffix=r"\b"), Keyword.Constant),
            (r"(\.)(" + _NAME + ")", bygroups(Punctuation, Name.Attribute)),
            (r"(\d+\.\d*|\.\d+)([eE][-+]?\d+)?|\d+[eE][-+]?\d+", Number.Float),
            (r"\d+", Number.Integer),
            (words(PREDEFINED, suffix=r"\b"), Name.Builtin.Pseudo),
            (words(BUILTIN_NAMES, suffix=r"\b"), Name.Builtin),
            (_NAME, Name),
            (r"==|!=|<=|>=|\+=|-=|\*=|//=|/=|%=|//|[-+*/%@^<>=]", Operator),
            (r"[()\[\]{},;:.]", Punctuation),
            (r".", Text),
        ],
    }
