"""Errors for people: every bad input becomes a DSLError subclass.

Each error carries an optional source position (file, line, column, the
source line) so that it can be rendered as ``file:line:col: message``, the
source line, and a caret under the column. The position is attached where the
error crosses the language boundary (the interpreter); an error raised by a
call from Python (outside the language) carries the caller's file and line.

It imports only the run context and the source positions, which import nothing.
"""
from __future__ import annotations

import unicodedata

from autodsl.context import current
from autodsl.source import caller_line

__all__ = [
    "DSLError", "ParseError", "NameError_", "ShapeError", "DTypeError",
    "DeviceError", "AutogradError", "ValueError_", "TypeError_", "IndexError_",
    "RuntimeError_", "LimitError",
]


_MAX_SHOWN = 160   # characters of a source line shown under an error
_MAX_CALLS = 5     # call-context lines shown under an error (innermost ones and the outermost)

class DSLError(Exception):
    """Base of every autodsl error.

    Attributes:
        message: one or two sentences: what went wrong and what to do.
        file: source file name (``"<input>"``, ``"<string>"``, a path) or None.
        line, column: 1-based position in that source, or None.
        source_line: the text of that line, or None.
        end_column: 1-based column one past the end of the offending span, or None.
        calls: the user-function calls the error came out of, innermost first, one line
            each (``in f(), called at 7:5 `f(w)```); the interpreter adds them.
    """

    category = "error"

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 column: int | None = None, source_line: str | None = None,
                 end_column: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.source_line = source_line
        self.end_column = end_column
        self.calls: list[str] = []
        self._python = False        # the position is a Python caller's, which a script's replaces
        if line is None and not current().language:      # a call from Python: point at the caller's line
            caller = caller_line()
            if caller is not None:
                self.file, self.line, self.source_line = caller
                self._python = True

    def __str__(self) -> str:
        return self.render()

    @property
    def has_position(self) -> bool:
        """True when a script's position is attached (not only a Python caller's line)."""
        return self.line is not None and not self._python

    def with_position(self, *, file=None, line=None, column=None, source_line=None,
                      end_column=None) -> "DSLError":
        """Attach a position unless a script's position is already set; returns self."""
        if (self.line is None or self._python) and line is not None:
            self._python = False
            self.file = file
            self.line = line
            self.column = column
            self.source_line = source_line
            self.end_column = end_column
        return self

    def add_call(self, text: str) -> "DSLError":
        """Add a call-context line for the next call out (``in f(), called at ...``); returns self."""
        self.calls.append(text)
        return self

    def render(self) -> str:
        """``file:line:col: message``, then the source line and a caret run, then one line per
        user-function call the error came out of (innermost first; a long chain is cut short)."""
        text = self._render_position()
        if not self.calls:
            return text
        calls: list[str] = []       # a recursion's repeated line is shown once, with a count
        count = 0
        for i, c in enumerate(self.calls):
            count += 1
            if i + 1 == len(self.calls) or self.calls[i + 1] != c:
                calls.append(c if count == 1 else f"{c} ({count} times)")
                count = 0
        if len(calls) > _MAX_CALLS:
            calls = calls[:_MAX_CALLS - 1] + [f"... {len(calls) - _MAX_CALLS} more"] + calls[-1:]
        return text + "".join("\n  " + c for c in calls)

    def _render_position(self) -> str:
        if self.line is None:
            return self.message
        if self.column is None:     # a Python caller's line: no column to point at
            out = [f"{self.file or '<input>'}:{self.line}: {self.message}"]
            if self.source_line:
                out.append("    " + self.source_line.strip())
            return "\n".join(out)
        where = f"{self.file or '<input>'}:{self.line}:{self.column}"
        out = [f"{where}: {self.message}"]
        if self.source_line is not None:
            src = self.source_line.rstrip("\n")
            col = max(1, self.column or 1)
            if len(src) > _MAX_SHOWN:
                # show a window of a very long line around the column
                start = max(0, min(col - 1 - _MAX_SHOWN // 2, len(src) - _MAX_SHOWN))
                src = ("..." if start else "") + src[start:start + _MAX_SHOWN] + (
                    "..." if start + _MAX_SHOWN < len(src) else "")
                col = col - start + (3 if start else 0)
            width = 1
            if self.end_column and self.end_column > col:
                width = min(self.end_column - col, max(1, len(src) - col + 1))
            # keep tabs so the caret lines up under tab-indented source, and count the columns a
            # terminal gives each character (two for 日, none for a combining accent)
            pad = "".join(ch if ch == "\t" else " " * _columns(ch) for ch in src[: col - 1])
            out.append("    " + src)
            out.append("    " + pad + "^" * max(1, sum(map(_columns, src[col - 1: col - 1 + width]))))
        return "\n".join(out)


def _columns(ch: str) -> int:
    """The columns a terminal shows ``ch`` in: 2 for a wide (East Asian) character, 0 for a
    combining mark, else 1 (as Python's own tracebacks count them)."""
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


class ParseError(DSLError):
    """The source does not follow the grammar (syntax error)."""
    category = "parse"


class NameError_(DSLError):
    """A name is not defined, or is not reachable from the language."""
    category = "name"


class ShapeError(DSLError):
    """Shapes do not fit: broadcasting, matmul, reshape, cat, backward's gradient shape."""
    category = "shape"


class DTypeError(DSLError):
    """A dtype is not allowed here (e.g. an integer tensor that requires grad)."""
    category = "dtype"


class DeviceError(DSLError):
    """A device is unknown, unavailable, or devices are mixed in one op."""
    category = "device"


class AutogradError(DSLError):
    """Backward cannot run: freed graph, in-place write, non-scalar root, ..."""
    category = "autograd"


class ValueError_(DSLError):
    """An argument has the right type but a value that is not allowed."""
    category = "value"


class TypeError_(DSLError):
    """An argument has the wrong type, or a call has a wrong or missing keyword."""
    category = "type"


class IndexError_(DSLError):
    """An index is out of range or of a kind that cannot index a tensor."""
    category = "index"


class RuntimeError_(DSLError):
    """Anything else that went wrong while running, including internal faults."""
    category = "runtime"


class LimitError(DSLError):
    """A run went past one of its session's resource limits (time, steps or memory)."""
    category = "limit"
