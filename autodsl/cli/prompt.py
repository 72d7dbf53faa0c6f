"""The REPL's prompt-toolkit side: one ``PromptSession`` built from small collaborators.

Persistent history (Ctrl-R searches it), the completer (``cli/complete.py``), the
Pygments lexer (``cli/lexer.py``), matching-bracket highlight, a bottom bar with the
signature of the call being typed (``cli/hints.py``; the bar shows only then), and key
bindings where Enter runs the input when it parses as complete and opens a continuation
line otherwise.

Enter on complete input always hands it to the REPL, a syntax error included: the REPL
prints it as it prints every error (``<input 3>:1:9:``, the line, a caret) and gives a
fresh prompt, and the input is in the history to be fixed with Up, as in IPython. A
prompt that refused the input instead left it in the editor, and what was typed next
landed inside the old line.
"""
from __future__ import annotations

import os
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.enums import DEFAULT_BUFFER
from prompt_toolkit.filters import has_focus
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.layout.processors import HighlightMatchingBracketProcessor
from prompt_toolkit.output import ColorDepth
from prompt_toolkit.validation import ValidationError, Validator

from autodsl.cli.complete import AutodslCompleter
from autodsl.cli.hints import signature_fragments
from autodsl.cli.lexer import AutodslLexer
from autodsl.errors import DSLError
from autodsl.lang.parser import is_incomplete, parse
from autodsl.ops import REGISTRY

__all__ = ["SourceValidator", "build_prompt_session", "history_path"]

# `<` and `>` are comparisons in the language, never brackets
BRACKETS = "[](){}"


def history_path() -> Path:
    """Where the history lives: $XDG_DATA_HOME/autodsl/history (~/.local/share by default)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "autodsl" / "history"


class SourceValidator(Validator):
    """A syntax error at its column (``:`` commands are not checked), for an editor that marks
    errors while typing; the REPL's prompt lets Enter through and the REPL prints the error."""

    def validate(self, document) -> None:
        text = document.text
        if not text.strip() or text.lstrip().startswith(":"):
            return
        try:
            parse(text, "<input>")
        except DSLError as e:
            if not e.has_position:
                raise ValidationError(cursor_position=len(text), message=e.message) from None
            try:
                index = document.translate_row_col_to_index(max(0, e.line - 1), max(0, (e.column or 1) - 1))
            except Exception:  # noqa: BLE001
                index = len(text)
            raise ValidationError(cursor_position=index,
                                  message=f"line {e.line}, column {e.column or 1}: {e.message}") from None
        except Exception:  # noqa: BLE001 - a broken check must not block input
            return


def _key_bindings() -> KeyBindings:

    kb = KeyBindings()
    editing = has_focus(DEFAULT_BUFFER)     # not in the Ctrl-R search field

    def newline(buf) -> None:
        line = buf.document.current_line_before_cursor
        indent = line[: len(line) - len(line.lstrip())]
        if line.rstrip().endswith("{"):
            indent += "    "
        buf.insert_text("\n" + indent)

    @kb.add("enter", filter=editing)
    def _(event):
        buf = event.current_buffer
        text = buf.document.text
        try:
            incomplete = not text.lstrip().startswith(":") and is_incomplete(text)
        except Exception:  # noqa: BLE001
            incomplete = False
        if incomplete and text.strip():
            newline(buf)
        else:
            buf.validate_and_handle()

    @kb.add("escape", "enter", filter=editing)
    def _(event):
        newline(event.current_buffer)

    @kb.add("}", filter=editing)
    def _(event):
        buf = event.current_buffer
        before = buf.document.current_line_before_cursor
        if before and not before.strip():
            buf.delete_before_cursor(min(4, len(before)))
        buf.insert_text("}")

    return kb


def _show_signatures(prompt: PromptSession, get_session) -> None:
    """Keep ``prompt.bottom_toolbar`` the signature of the call at the cursor, None (no bar)
    elsewhere: prompt-toolkit shows the bar whenever the attribute is not None."""

    def update(buf) -> None:
        try:
            width = prompt.app.output.get_size().columns - 1
        except Exception:  # noqa: BLE001
            width = 79
        prompt.bottom_toolbar = signature_fragments(buf.document.text_before_cursor, get_session(),
                                                    width=width, registry=REGISTRY)

    prompt.default_buffer.on_text_changed += update
    prompt.default_buffer.on_cursor_position_changed += update


def build_prompt_session(repl, history: bool = True, input=None, output=None, color: bool = True):
    """One PromptSession wired to ``repl`` (a ``cli.repl.Repl``: its session and command table):
    history, completion, lexer, bracket highlight, the signature bar and the key bindings."""

    hist = InMemoryHistory()
    if history:
        path = history_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            hist = FileHistory(str(path))
        except OSError:
            pass
    lexer = None
    if color:
        try:
            from prompt_toolkit.lexers import PygmentsLexer

            lexer = PygmentsLexer(AutodslLexer)
        except ImportError:   # pygments missing: plain text
            lexer = None
    completer = AutodslCompleter(lambda: repl.session, lambda: repl.commands, registry=REGISTRY)
    prompt = PromptSession(
        history=hist, key_bindings=_key_bindings(), multiline=True, completer=completer,
        complete_while_typing=False, auto_suggest=AutoSuggestFromHistory(), lexer=lexer,
        search_ignore_case=True, input_processors=[HighlightMatchingBracketProcessor(chars=BRACKETS)],
        prompt_continuation=lambda width, line, soft: "... ".rjust(width), input=input, output=output,
        color_depth=None if color else ColorDepth.MONOCHROME,
    )
    _show_signatures(prompt, lambda: repl.session)
    return prompt
