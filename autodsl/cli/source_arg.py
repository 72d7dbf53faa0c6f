"""``-c SOURCE`` takes any source, also one that starts with ``-``.

argparse reads an argument that starts with ``-`` as an option unless it looks like
a negative number or holds a space, so ``autodsl -c -pi`` (or ``-c -x``, ``-c --x``)
was refused as bad usage. ``split_source`` takes each ``-c`` and the argument after it
out of the command line before argparse sees it, stepping over the values of the other
options (``--set -c`` is a value, not ``-c``) and stopping at ``--``. ``-cSOURCE`` and
``-c=SOURCE`` are argparse's own and stay with it.
"""
from __future__ import annotations

import argparse

__all__ = ["split_source"]


def split_source(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[list[str], str | None]:
    """``(argv without the -c options, the last -c's source or None)``.

    A ``-c`` at the end, with nothing after it, stays in ``argv``: argparse then says
    that it needs an argument."""
    takes_value = {s for a in parser._actions if a.nargs != 0 for s in a.option_strings}
    rest: list[str] = []
    source = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest.extend(argv[i:])
            break
        if arg == "-c" and i + 1 < len(argv):
            source = argv[i + 1]
            i += 2
            continue
        rest.append(arg)
        if arg in takes_value and arg != "-c" and i + 1 < len(argv):
            rest.append(argv[i + 1])     # this option's value, whatever it looks like
            i += 1
        i += 1
    return rest, source
