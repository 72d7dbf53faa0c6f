"""``include("layers.ad")``: run another script file in the current scope.

The file is read and parsed whole first (a syntax error in it runs none of it), then its
statements run in the scope of the ``include`` call, as if its text stood there: its
functions and variables become visible to the code after the call (inside a function, in
that function's scope). While it runs, positions are the included file's, so an error names
that file and line, with a line saying where it was included; a function it defines keeps its
file for the errors of later calls. Its relative paths (``load``, ``save``, ``include``) start
at its own directory, like any script file's (``autodsl/tools/io.py``).

An include cycle (a file that includes itself, directly or through others) is an error. The
files being included live in the closure of one session's built-in, never in module state.
"""
from __future__ import annotations

import os
from collections.abc import Callable

from autodsl.context import current
from autodsl.errors import DSLError, RuntimeError_
from autodsl.lang.parser import parse
from autodsl.source import format_pos
from autodsl.tools.io import read_text, resolve_path

__all__ = ["make_include"]


def _real(filename: str | None) -> str | None:
    """The real path of a script file, or None for "<string>", "<stdin>", "<input 3>"."""
    if not filename or filename.startswith("<"):
        return None
    return os.path.realpath(filename)


def make_include(get_interp: Callable[[], object] | None) -> Callable[[str], None]:
    """The ``include`` built-in of the interpreter ``get_interp()`` returns."""
    running: list[tuple[str | None, str]] = []      # (real path, name shown), outermost first

    def include(path) -> None:
        """Run the script file ``path`` here, in the current scope: its functions and variables
        become visible after the call. A relative path starts at the including script's
        directory (the current directory, or the session's ``base_dir``, for the REPL and
        ``-c``). Errors inside it name the included file and line.

        Raises ValueError_ (a missing or unreadable file), ParseError (a syntax error in it),
        RuntimeError_ (an include cycle; in a session made with ``files=False``), TypeError_ (a
        path that is not a string), and any error of the statements it runs.

        Example: ``include("layers.ad")``
        """
        interp = get_interp() if get_interp is not None else None
        if interp is None:
            raise RuntimeError_("include() runs a script file inside a running script; "
                                "from Python, use Session().run(text, filename)")
        fname = resolve_path(path, "include")
        site = current().pos
        outermost = not running
        if outermost:               # the file that starts the chain takes part in a cycle too
            src = interp.source
            name = src.filename if src is not None else None
            running.append((_real(name), name or "<string>"))
        try:
            real = _real(fname)
            if any(r == real for r, _ in running):
                chain = " -> ".join(f'"{n}"' for _, n in running[[r for r, _ in running].index(real):])
                raise RuntimeError_(f'include(): "{fname}" is already being included ({chain} -> "{fname}"); '
                                    "an include cycle never ends: include each file once, from one place")
            text = read_text(fname, "include")
            running.append((real, fname))
            try:
                _run_here(interp, fname, text, site)
            finally:
                running.pop()
        finally:
            if outermost:
                running.pop()

    return include


def _run_here(interp, fname: str, text: str, site) -> None:
    """Parse ``text`` and run its statements in the interpreter's current scope."""
    saved = (interp.source, interp.current_stmt)
    try:
        program = parse(text, fname)
        interp.source = program.source
        for stmt in program.body:
            interp.current_stmt = stmt
            interp.exec(stmt)
    except DSLError as e:
        where = format_pos(site, text=False, file=True)
        e.add_call(f'in "{fname}", included at {where}' if where else f'in "{fname}", included')
        raise
    finally:
        interp.source, interp.current_stmt = saved
