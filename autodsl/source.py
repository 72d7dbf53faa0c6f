"""Source positions: where an expression or a Python call that made a node was written.

A position is a tuple ``(file, line, column, text)``: the language sets one per
expression (``text`` is the expression's source, e.g. ``w1*x^2``) as the run
context's ``pos``, a ``SourcePos`` that reads like that tuple and cuts ``text``
from the one shared source text only when it is read; nodes made from the Python
API take their caller's ``(file, line, None, None)`` from ``caller_pos()``, and the
line's text is read back from the file only when shown. ``user_frame()`` is the one frame walker:
the first frame outside the autodsl package is the user's.
"""
from __future__ import annotations

import linecache
import os
import sys
import warnings

from autodsl.context import current

__all__ = ["SOURCE_POS", "POSITIONS", "SourcePos", "user_frame", "caller_pos", "python_frames", "caller_line", "warn_user", "current_pos",
           "backward_pos", "pos_text", "format_pos"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_OURS = (_PACKAGE_DIR, "<frozen ")      # frames that are not the user's (runpy's are frozen)
_getframe = sys._getframe


def user_frame():
    """The first frame outside autodsl (and outside frozen runpy frames), or None.

    The walk starts at this function's caller and skips the package's frames, so it
    finds the user's frame however many of autodsl's functions are between, and also
    when some of them are compiled (a compiled function has no Python frame)."""
    f = _getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_OURS):
        f = f.f_back
    return f


class SourcePos:
    """``(file, line, column, text)`` of a language expression, read as that tuple (indexing,
    slicing, unpacking, ``==`` and ``hash`` as the tuple's), holding no copy of ``text``.

    ``text`` is cut from ``source`` (anything with ``line_text(line)``: the one text of the
    script, shared by every position in it) between columns ``start`` and ``end`` each time
    it is read: a copy per node made a 100,000-term sum keep 100,000 growing prefixes of its
    line (gigabytes). ``prefix`` and ``fallback`` make the text of a node recorded by a
    backward formula, ``backward of w*x`` (``backward of MulBackward`` when there is no
    text). A pickle or a copy of it is the plain tuple."""

    __slots__ = ("_end", "_fallback", "_prefix", "_source", "_start", "column", "file", "line")

    def __init__(self, file, line, column, source=None, start=None, end=None, prefix=None, fallback=None):
        self.file, self.line, self.column = file, line, column
        self._source, self._start, self._end = source, start, end
        self._prefix, self._fallback = prefix, fallback

    def _bounds(self):
        """``(line text, first, last)``: the stripped text is ``full[first:last]``; None if unknown."""
        if self._source is None or self._start is None or not self._end:
            return None
        full = self._source.line_text(self.line)
        if full is None:
            return None
        # strip by scanning, not by slicing first: only the whitespace is walked
        i, j = self._start - 1, min(self._end - 1, len(full))
        while i < j and full[i].isspace():
            i += 1
        while j > i and full[j - 1].isspace():
            j -= 1
        return (full, i, j) if i < j else None

    @property
    def text(self) -> str | None:
        b = self._bounds()
        t = b[0][b[1]:b[2]] if b else None
        if self._prefix is None:
            return t
        return self._prefix + (t or self._fallback or "")

    def head(self, n: int) -> str | None:
        """``text`` cut to at most ``n + 1`` characters (longer than ``n``: it goes on), read
        without copying the rest of it (a 200 KB line shown in a trace of 100,000 nodes)."""
        b = self._bounds()
        t = b[0][b[1]:min(b[2], b[1] + n + 1)] if b else None
        if self._prefix is None:
            return t
        return (self._prefix + (t or self._fallback or ""))[:n + 1]

    def backward(self, name: str) -> SourcePos:
        """The position of a node that this node's backward formula records (``backward_pos``)."""
        if self._prefix is None and self._bounds() is None:
            return SourcePos(self.file, self.line, self.column, prefix=f"backward of {name}")
        fallback = self._fallback if self._prefix is not None else None
        return SourcePos(self.file, self.line, self.column, self._source, self._start, self._end,
                         "backward of " + (self._prefix or ""), fallback)

    def _tuple(self) -> tuple:
        return (self.file, self.line, self.column, self.text)

    def __getitem__(self, i):
        if i == 0:                  # the common reads, without cutting the text
            return self.file
        if i == 1:
            return self.line
        if i == 2:
            return self.column
        return self._tuple()[i]

    def __len__(self) -> int:
        return 4

    def __iter__(self):
        return iter(self._tuple())

    def __eq__(self, other):
        if isinstance(other, (SourcePos, tuple)):
            return self._tuple() == tuple(other)
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __reduce__(self):
        return (tuple, (self._tuple(),))

    def __repr__(self) -> str:
        return repr(self._tuple())


# Positions by (id of the code, instruction offset) and by (file, line). The first lets a node
# made again at the same place skip the frame's line number (which scans the code's line
# table: over a thousand instructions in a long function); each entry keeps its code object
# alive, so while an id is in the table no other code can have it. The second makes every node of one source line share
# one tuple, so that a loop that makes a million nodes does not make a million more objects
# for the cyclic GC to walk. The compiled ops/registry.py reads the first one itself.
POSITIONS: dict = {}
_LINES: dict = {}


def caller_pos(start: int = 1):
    """``(file, line, None, None)`` of the user's frame (see ``user_frame``), or None.

    Used for nodes made from the Python API, so that a user of
    ``autodsl.tensor(...) * w`` sees their own file and line in traces and errors.
    (``user_frame``'s walk written out: this runs for every node made from Python.)
    ``start``: how many frames up the walk may begin, when the caller knows that the frames
    below are all autodsl's (``sys._getframe(n)`` makes no frame objects on the way; each
    step of the walk does).
    """
    try:
        f = _getframe(start)
    except ValueError:      # fewer frames than the caller counted (a call from C): walk them all
        f = _getframe(1)
    # the usual case first: that frame is a user's, at a place seen before (only users' frames
    # are in the table, so a hit needs no check of the file name)
    hit = POSITIONS.get((id(f.f_code), f.f_lasti))
    if hit is not None:
        return hit[1]
    ours = _OURS
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(ours):
            break
        f = f.f_back
    else:
        return None
    key = (id(code), f.f_lasti)
    hit = POSITIONS.get(key)
    if hit is not None:
        return hit[1]
    if len(POSITIONS) >= 10_000:
        POSITIONS.clear()
        _LINES.clear()
    line = (code.co_filename, f.f_lineno)
    pos = _LINES.get(line)
    if pos is None:
        pos = _LINES[line] = (line[0], line[1], None, None)
    POSITIONS[key] = (code, pos)
    return pos


def python_frames(*functions) -> int:
    """How many of ``functions`` push a frame when they run: those run as Python, not the
    compiled ones. A caller of ``caller_pos`` that knows these functions are between it and the
    user's frame counts them once, at import, and starts the walk above them."""
    return sum(type(f).__name__ == "function" for f in functions)


def warn_user(message, category=UserWarning) -> None:
    """``warnings.warn`` pointed at the user's frame: the stack level counted by the same walk,
    so it is right however many of autodsl's Python frames (and compiled calls) are between."""
    f = _getframe(1)
    level = 2
    while f is not None and f.f_code.co_filename.startswith(_OURS):
        f = f.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


def caller_line():
    """``(file, line, source line)`` of the user's frame, or None (errors from Python calls)."""
    f = user_frame()
    if f is None:
        return None
    name, line = f.f_code.co_filename, f.f_lineno
    return name, line, linecache.getline(name, line).rstrip("\n") or None


def current_pos():
    """The language's position of the expression being evaluated, else the Python caller's."""
    return current().pos or caller_pos()


class _SourcePos:
    """The run context's ``pos`` with a ContextVar-like ``get``/``set``/``reset`` (the token
    ``set`` returns restores the position on the context it was set on)."""

    __slots__ = ()

    def get(self):
        return current().pos

    def set(self, pos):
        ctx = current()
        old = ctx.pos
        ctx.pos = pos
        return ctx, old

    def reset(self, token) -> None:
        ctx, old = token
        ctx.pos = old


SOURCE_POS = _SourcePos()


def backward_pos(pos, name: str):
    """Where nodes made by a backward formula under create_graph say they come from: the
    node's own place ``pos``, with the text ``backward of w*x`` (``name``: the node's)."""
    if isinstance(pos, SourcePos):      # still no copy of the text
        return pos.backward(name)
    text = pos_text(pos) if pos else None
    what = f"backward of {text}" if text else f"backward of {name}"
    return (pos[0], pos[1], pos[2], what) if pos else (None, None, None, what)


def pos_text(pos) -> str | None:
    """The source text recorded with ``pos``: the expression in the language, the
    caller's line (read back from the file) for the Python API; None if unknown."""
    if not pos:
        return None
    if pos[3] is not None:
        return pos[3]
    if pos[0] and pos[1]:
        line = linecache.getline(pos[0], pos[1]).strip()
        return line or None
    return None


def _elsewhere(fname: str) -> bool:
    """Whether ``fname`` is not the file of the language code running now, when that is a
    file or a REPL input (``Session.run``'s default ``<string>`` names no place to look at)."""
    here = current().pos
    if not here or not here[0] or here[0] == fname:
        return False
    return not here[0].startswith("<") or here[0].startswith("<input ")


def format_pos(pos, *, text: bool = True, file: bool = False) -> str:
    """``line:col`` (``file:line:col`` with ``file=True``, ``file:line`` for Python callers),
    followed by the source text in backquotes when ``text``; "" when ``pos`` is None.

    A REPL input (file ``<input 3>``) always shows its name, ``<input 3>:1:7``: every
    input is line 1, so without it positions from different inputs look the same. So does a
    position in another file than the code running now (a ``:load``ed file's, seen from a
    REPL input; an included file's, seen from the script): ``lib.ad:2:7``."""
    if not pos or pos[1] is None:
        return ""
    fname, line, col = pos[0], pos[1], pos[2]
    if col is None:         # a Python caller: the file is the useful part
        where = f"{os.path.basename(fname) if fname else '<python>'}:{line}"
    else:
        show = fname and (file or fname.startswith("<input ") or _elsewhere(fname))
        where = f"{fname}:{line}:{col}" if show else f"{line}:{col}"
    if text:
        t = pos.head(60) if isinstance(pos, SourcePos) else pos_text(pos)
        if t:
            if len(t) > 60:
                t = t[:57] + "..."
            where += f" `{t}`"
    return where
