"""Reading a script or a text file with a size bound, refusing binary input at its first byte.

``autodsl FILE``, standard input, ``include`` and the text formats of ``load`` read whole
files; ``/dev/zero`` or ``/dev/urandom`` (or a huge file) would be read until memory runs
out. ``read_text`` reads a binary stream in pieces of 64 KiB and stops at once: when a
regular file's size is above the bound (before reading anything), when what it has read
passes the bound, at a NUL byte (no text file holds one) and at the first byte that is not
UTF-8. Newlines are read as text mode reads them (``\\r\\n`` and ``\\r`` become ``\\n``).

The bound is the run context's ``source_limit`` (``DEFAULT_SOURCE_LIMIT``, 16 MB, unless a
Session or ``autodsl --source-limit`` sets another).
"""
from __future__ import annotations

import codecs
import os
import stat

from autodsl.errors import ValueError_

__all__ = ["DEFAULT_SOURCE_LIMIT", "TextInputError", "read_str", "read_text"]

DEFAULT_SOURCE_LIMIT = 16_000_000
_PIECE = 1 << 16


class TextInputError(ValueError_):
    """Why a text input was refused: ``kind`` is "large", "binary" or "utf8"; the message is a
    phrase to follow the file's name ("is larger than ..."), ``detail`` where it happened."""

    def __init__(self, kind: str, phrase: str, detail: str = ""):
        super().__init__(phrase)
        self.kind = kind
        self.detail = detail


def _size_words(n: int) -> str:
    if n < 1000:
        return f"{n} byte{'s' if n != 1 else ''}"
    for unit in ("KB", "MB", "GB", "TB"):
        n /= 1000
        if n < 1000 or unit == "TB":
            return f"{n:g} {unit}"
    raise AssertionError("unreachable")


def _too_large(limit: int) -> TextInputError:
    return TextInputError("large", f"is larger than {_size_words(limit)}, the most that is read as a "
                                   "script or text file")


def read_text(f, limit: int, *, bom: bool = False) -> str:
    """The UTF-8 text of the binary stream ``f`` (a file opened with ``"rb"``, ``sys.stdin.buffer``),
    at most ``limit`` bytes; ``bom=True`` drops a leading byte order mark (``utf-8-sig``).

    Raises TextInputError: "large" (above ``limit``; a regular file is refused before it is
    read), "binary" (a NUL byte), "utf8" (a byte that is not UTF-8). OSError passes through.
    """
    try:
        st = os.fstat(f.fileno())
    except (OSError, AttributeError, ValueError):
        st = None
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size > limit:
        raise _too_large(limit)
    decoder = codecs.getincrementaldecoder("utf-8-sig" if bom else "utf-8")()
    parts, total = [], 0
    while True:
        piece = f.read(min(_PIECE, limit + 1 - total))       # never more than one byte past the bound
        if not piece:
            break
        nul = piece.find(b"\0")
        if nul >= 0:
            raise TextInputError("binary", f"is not a text file (it has a NUL byte at byte {total + nul})")
        try:
            parts.append(decoder.decode(piece))
        except UnicodeDecodeError as e:
            detail = f"byte {total + e.start} is 0x{piece[e.start]:02X}"
            raise TextInputError("utf8", f"is not a text file in UTF-8 ({detail})", detail) from None
        total += len(piece)
        if total > limit:
            raise _too_large(limit)
    try:
        parts.append(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        detail = "it ends inside a character"
        raise TextInputError("utf8", f"is not a text file in UTF-8 ({detail})", detail) from None
    text = "".join(parts)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def read_str(f, limit: int) -> str:
    """``read_text`` for a text stream without a binary buffer (a StringIO as standard input):
    at most ``limit`` characters, refused above it."""
    text = f.read(limit + 1)
    if len(text) > limit:
        raise _too_large(limit)
    if "\0" in text:
        raise TextInputError("binary", f"is not a text file (it has a NUL byte at character {text.index(chr(0))})")
    return text
