"""Docstrings as the REPL shows them: plain text, without reStructuredText markup.

The package's docstrings are written for Sphinx (````x.grad````, ``:func:`grad```,
``**note**``, ``::`` before an example); a completion menu, ``:help NAME`` and the
Jupyter kernel's inspection show them on a terminal or in a tooltip, where markup is noise.
"""
from __future__ import annotations

import re

__all__ = ["first_sentence", "plain"]

_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`]+)`")        # :func:`grad`, :py:meth:`~x.sum`
_LITERAL = re.compile(r"``(.+?)``")
_LINK = re.compile(r"`([^`<]+?)(?:\s*<[^>]+>)?`_{1,2}")        # `text <url>`_ and `name`_
_STRONG = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*")
_WORDS = re.compile(r"\b(True|False|None)\b")


def plain(doc: str, quote: str = "`") -> str:
    """``doc`` without reST markup: inline literals and roles become ``quote``-quoted
    (```x```, the language's way of quoting code in messages; ``quote=""`` for none), links
    their text, ``**strong**`` plain, ``::`` a colon; Python's True/False/None read as the
    language writes them (true, false, none)."""
    text = _ROLE.sub(lambda m: quote + m.group(1) + quote, doc)
    text = _LITERAL.sub(lambda m: quote + m.group(1) + quote, text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _STRONG.sub(lambda m: m.group(1), text)
    text = re.sub(r"(?<=\S)::(?=\s|$)", ":", text)          # "Example::" introduces a block
    text = re.sub(r"^\s*::\s*$", "", text, flags=re.MULTILINE)
    return _WORDS.sub(lambda m: m.group().lower(), text)


def first_sentence(doc: str, limit: int = 72) -> str:
    """The first sentence of ``doc``'s first paragraph, as plain text with no quotes, cut to
    ``limit`` characters (completion menus have one line per entry)."""
    para = " ".join(plain(doc or "", quote="").strip().split("\n\n")[0].split())
    para = re.sub(r"`([^`]+)`", r"\1", para)          # reST's default role: `sep` is code too
    text = para[: _sentence_end(para)]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sentence_end(para: str) -> int:
    """Where the first sentence of ``para`` ends: at ". " outside brackets, or at ": " after
    a few words ("Running sums along dim: ..."), not inside "(reverse: ...)" or after a
    short lead such as "(values, indices):"."""
    depth = 0
    for i, ch in enumerate(para):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0 and ch in ".:" and para[i + 1: i + 2] == " " and (ch == "." or i >= 24):
            return i + 1
    return len(para)
