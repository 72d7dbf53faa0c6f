"""Docstrings as the REPL shows them: plain text, without reStructuredText markup.

The package's docstrings are written for Sphinx (````x.grad````, ``:func:`grad```,
``**note**``, ``::`` before an example); a completion menu, ``:help NAME`` and the
Jupyter kernel's inspection show them on a terminal or in a tooltip, where markup is noise.
``plain`` lives in the language's layer (lang/help_text.py), which the language's ``help()`` uses too.
"""
from __future__ import annotations

import re

from autodsl.lang.help_text import plain

__all__ = ["first_sentence", "plain"]


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
