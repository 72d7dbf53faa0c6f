"""What ``autodsl`` reads as scripts: files and standard input, at most ``--source-limit`` bytes.

A script is refused before it is read whole (core/text_input.py): a regular file larger than
the bound at once, a stream (a pipe, ``/dev/zero``) once it passes the bound, and binary input
at its first NUL byte or the first byte that is not UTF-8. The command reports each as bad
usage (exit status 2), like a file that does not exist.
"""
from __future__ import annotations

import sys

from autodsl.core.text_input import TextInputError, read_str, read_text

__all__ = ["read_script", "read_stdin", "refusal"]


def read_script(path: str, limit: int) -> str:
    """The text of the script file ``path``. Raises TextInputError, or OSError (cannot open)."""
    with open(path, "rb") as f:
        return read_text(f, limit)


def read_stdin(limit: int) -> str:
    """The text of standard input ("" when there is none). Raises TextInputError."""
    stdin = sys.stdin
    if stdin is None:
        return ""
    buffer = getattr(stdin, "buffer", None)
    return read_text(buffer, limit) if buffer is not None else read_str(stdin, limit)


def refusal(what: str, e: TextInputError) -> str:
    """The command's words for a refused script: ``what`` is its path or "standard input"."""
    hint = "; --source-limit SIZE reads a larger one (64M, 1G)" if e.kind == "large" else \
        "; a script is a text file in UTF-8"
    return f"cannot read {what}: it {e.message}{hint}"
