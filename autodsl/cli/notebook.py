"""The IPython extension: ``%load_ext autodsl``, then the language in a notebook's cells.

    %load_ext autodsl
    %%autodsl                 run the cell in the notebook's session
    %%autodsl other           ... in the session named ``other`` (made on first use)
    %autodsl y.backward()     run one line (``%autodsl -s other ...`` in a named session)

The sessions belong to the extension's magics object, which the IPython shell holds; nothing is
put into the notebook's namespace. ``autodsl.notebook_session(name)`` gives Python cells the
Session itself (``notebook_session()["w"].grad``).

A cell shows what the REPL shows, with rich display: every bare expression's value, in order
(``graph(f)`` a picture, a trace or a check an HTML table, a tensor its text), the last one as
the cell's result (``Out[n]``); plain values (numbers, strings, lists, true/none) are printed as
the language writes them. With ``trace(true)`` each backward shows its trace table. An error
is shown as the command line prints it (``<input 3>:2:5: message``, the line, a caret; lines
are the cell's own), never a Python traceback, and the session keeps what ran before it.
An interrupt (Jupyter's stop button, Ctrl-C) takes back everything the cell changed, as the
REPL's Ctrl-C does.

IPython is an optional dependency: it is imported only inside the functions here.
"""
from __future__ import annotations

import sys

from autodsl.core.display import format_value
from autodsl.errors import DSLError, RuntimeError_, TypeError_, ValueError_
from autodsl.lang import ast as A
from autodsl.session import Session

__all__ = ["INTERRUPTED", "MAGIC", "NotebookMagics", "NotebookSession", "load_ipython_extension", "notebook_session",
           "unload_ipython_extension"]

MAGIC = "autodsl"
DEFAULT_SESSION = "default"
_NEEDS_IPYTHON = "the autodsl notebook extension needs IPython: pip install ipython (or autodsl[jupyter])"
_USAGE = ("%autodsl CODE runs one line in the notebook's autodsl session (%autodsl -s NAME CODE in the "
          "session NAME); a cell that starts with %%autodsl (or %%autodsl NAME) runs in it")
INTERRUPTED = "interrupted: variables and gradients are as they were before this cell"
_NOTHING = object()


def _show(value) -> None:
    """Show one value as the REPL would: rich display for what has it, the language's text else."""
    if _plain(value):
        print(format_value(value))
        return
    from IPython.display import display  # (optional dependency)
    display(value)


def _plain(value) -> bool:
    """A value shown as text: Python's repr of it (True, 'a', [tensor...]) is not the language's."""
    return value is None or isinstance(value, (bool, int, float, complex, str, list, tuple, dict, range)) \
        or not any(hasattr(type(value), m) for m in ("_repr_pretty_", "_repr_mimebundle_", "_repr_html_",
                                                     "_repr_svg_", "_repr_png_"))


class NotebookSession(Session):
    """A Session whose bare expressions and traces are shown in the notebook (rich display)
    instead of written as text; ``run_cell`` runs a cell and returns its last value."""

    def __init__(self, **options):
        super().__init__(**options)
        self._final = None          # the top-level bare expression whose value the cell returns
        self._pending = _NOTHING    # its latest value, held until the run says it was the last

    def run_cell(self, source: str, filename: str, first_line: int = 1):
        """Run ``source`` (its first line is line ``first_line`` of the cell, so that positions
        are the cell's); every bare expression is shown as it runs, except the value of the
        last statement when it is one: that is returned (None otherwise)."""
        program = self.parse("\n" * (first_line - 1) + source, filename)
        # Ctrl-C (Jupyter's interrupt) takes back everything the cell changed, as in the REPL;
        # an error does not: what ran before it stays, as in a script
        return self.run_input(program)

    def run(self, source, filename: str = "<string>", variables: dict | None = None):
        """``Session.run``, showing each bare expression as it runs except the last statement's
        value when it is one, which is returned (None otherwise): a Python cell that calls
        ``notebook_session().run(...)`` shows that value once, as its result."""
        program = source if isinstance(source, A.Program) else self.parse(source, filename)
        body = program.body
        outer = self._final, self._pending          # (a run inside a run keeps its own)
        self._final = body[-1] if body and isinstance(body[-1], A.ExprStmt) else None
        self._pending = _NOTHING
        value = None
        try:
            value = super().run(program, filename, variables)
        finally:
            pending = self._pending
            self._final, self._pending = outer
            if pending is not _NOTHING and pending is not value:
                _show(pending)      # (an error after it: it was shown before the error)
        return value if pending is not _NOTHING or not self.echo else None

    def _echo(self, value) -> None:
        if not self.echo:
            return
        if self._final is not None and self._interp.current_stmt is self._final:
            # inside the cell's last statement: the final value is the cell's result, so hold
            # each value until the next one shows that it was not the final one
            if self._pending is not _NOTHING:
                _show(self._pending)
            self._pending = value
            return
        _show(value)

    def _print_trace(self, text: str) -> None:
        if self.last_trace is None:         # (not a trace of this session's: shown as text)
            super()._print_trace(text)
            return
        sys.stdout.flush()
        _show(self.last_trace)


class NotebookMagics:
    """The ``%autodsl`` / ``%%autodsl`` magic of one IPython shell and the sessions it keeps."""

    # IPython puts the notebook's Python variables into a line magic's text where it reads
    # {expr} or $name (IPython.core.magic.no_var_expand); here braces are the language's
    # f-strings and blocks, and the text is the language's, with nothing of Python's in it
    _ipython_magic_no_var_expand = True

    def __init__(self, shell):
        self.shell = shell
        self.sessions: dict[str, NotebookSession] = {}

    def session(self, name: str = DEFAULT_SESSION) -> NotebookSession:
        if not isinstance(name, str) or not name.strip():
            raise TypeError_("a notebook session's name is a non-empty string, such as \"default\" or \"model\"")
        name = name.strip()
        if name not in self.sessions:
            self.sessions[name] = NotebookSession()
        return self.sessions[name]

    def __call__(self, line: str, cell: str | None = None):
        """The magic: ``%autodsl [-s NAME] CODE`` (``cell`` None) or ``%%autodsl [NAME]``."""
        if cell is None:
            name, code = _line_options(line)
            if not code.strip():
                print(_USAGE + "; sessions: " + ", ".join(sorted(self.sessions) or [DEFAULT_SESSION]))
                return None
            first = 1
        else:
            name, rest = _line_options(line)
            if rest.strip():
                if name != DEFAULT_SESSION or len(rest.split()) > 1:
                    _usage_error(f"%%autodsl takes one session name, not {line.strip()!r}")
                name = rest.strip()
            code, first = cell, 2           # the cell's first line is the %%autodsl line
        session = self.session(name)
        try:
            value = session.run_cell(code, f"<input {_cell_number(self.shell)}>", first)
        except DSLError as e:
            _shown_as(e, e.render())
            raise
        except KeyboardInterrupt as stop:
            kept = getattr(stop, "kept", None)
            _shown_as(stop, "interrupted" if kept is None else INTERRUPTED + (
                f"; the files it wrote stay: {', '.join(kept)}" if kept else ""))
            raise
        if value is None:
            return None
        if _plain(value):
            print(format_value(value))
            return None
        return value


def _shown_as(exc: BaseException, text: str) -> None:
    """IPython shows an exception with ``_render_traceback_`` as those lines, with no traceback."""
    exc._render_traceback_ = lambda: text.split("\n")


def _cell_number(shell) -> int:
    """The running cell's number (``In [3]``): the inputs in its history (IPython 9 counts
    ``execution_count`` up before a cell runs, IPython 8 after it)."""
    inputs = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if inputs and len(inputs) > 1:
        return len(inputs) - 1
    return getattr(shell, "execution_count", None) or 1


def _line_options(line: str) -> tuple[str, str]:
    """``-s NAME rest`` / ``--session NAME rest`` / ``--session=NAME rest`` -> (NAME, rest)."""
    text = line.lstrip()
    if text.rstrip() in ("-s", "--session"):        # (IPython strips the line: no space after it)
        _usage_error(f"{text.rstrip()} needs a session name")
    for flag in ("-s ", "--session ", "--session="):
        if text.startswith(flag):
            parts = text[len(flag):].lstrip().split(None, 1)
            if not parts:
                _usage_error(f"{flag.strip(' =')} needs a session name")
            return parts[0], parts[1] if len(parts) > 1 else ""
    return DEFAULT_SESSION, line


def _usage_error(message: str):
    from IPython.core.error import UsageError  # (optional dependency)
    raise UsageError(f"{message}. {_USAGE}")


def _magics(shell) -> NotebookMagics | None:
    """The shell's autodsl magics object, or None when the extension is not loaded there."""
    fn = shell.magics_manager.magics.get("cell", {}).get(MAGIC)
    owner = getattr(fn, "__self__", fn)
    return owner if isinstance(owner, NotebookMagics) else None


def load_ipython_extension(ipython) -> None:
    """``%load_ext autodsl``: register the ``%autodsl`` / ``%%autodsl`` magic on the shell
    ``ipython``. Loading it again keeps its sessions."""
    if _magics(ipython) is None:
        ipython.register_magic_function(NotebookMagics(ipython), magic_kind="line_cell", magic_name=MAGIC)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext autodsl``: remove the magic and drop its sessions."""
    if _magics(ipython) is None:
        return
    manager = ipython.magics_manager
    for kind in ("line", "cell"):
        manager.magics.get(kind, {}).pop(MAGIC, None)
    if getattr(manager, "user_magics", None) is not None and MAGIC in vars(manager.user_magics):
        delattr(manager.user_magics, MAGIC)


def notebook_session(name: str = DEFAULT_SESSION) -> Session:
    """The Session that ``%%autodsl`` cells (``%%autodsl name`` for a named one) run in, for a
    Python cell of the same notebook: ``notebook_session()["w"].grad``, ``notebook_session().run(...)``.
    Loads the extension when it is not loaded yet. Raises RuntimeError_ outside IPython
    (a Python program makes its own: ``autodsl.Session()``), TypeError_ for a name that is
    not a non-empty string."""
    try:
        from IPython import get_ipython  # (optional dependency)
    except ImportError:
        raise RuntimeError_(f"notebook_session(): {_NEEDS_IPYTHON}; outside a notebook, make a "
                            "session with autodsl.Session()") from None
    shell = get_ipython()
    if shell is None:
        raise RuntimeError_("notebook_session() is for IPython and Jupyter notebooks (after %load_ext autodsl); "
                            "outside one, make a session with autodsl.Session()")
    if not isinstance(name, str):
        raise TypeError_(f"notebook_session(name): the name is a string such as \"default\", not "
                         f"{type(name).__name__}")
    if _magics(shell) is None:
        load_ipython_extension(shell)
    magics = _magics(shell)
    if magics is None:      # pragma: no cover - a shell that would not take the magic
        raise ValueError_("notebook_session(): the autodsl magic could not be registered on this shell")
    return magics.session(name)
