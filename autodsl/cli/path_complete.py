"""File-name completion for ``:load``, ``:save`` and ``:dot x file``: folders and the files a
command takes first.

A folder completes with ``/`` after it, so the next Tab walks into it; the files with a
wanted extension (``.ad`` for ``:load``) come first, folders next, and any other file only
when nothing else matches (``:load da`` with only ``data.csv`` there still offers it).
Hidden entries appear once the typed name starts with a dot, as in a shell.
"""
from __future__ import annotations

import os

from prompt_toolkit.completion import Completion

__all__ = ["path_completions"]


def path_completions(typed: str, extensions: tuple[str, ...] = (".ad",)):
    """Completions for the file name ``typed`` (``~`` expanded), each replacing the typed part
    after the last ``/``."""
    folder, _, prefix = typed.rpartition("/")
    if typed.startswith("/") and not folder:
        folder = "/"
    where = os.path.expanduser(folder) if folder else "."
    try:
        entries = sorted(os.listdir(where))
    except OSError:
        return
    wanted, folders, others = [], [], []
    for name in entries:
        if not name.startswith(prefix) or (name.startswith(".") and not prefix.startswith(".")):
            continue
        if os.path.isdir(os.path.join(where, name)):
            folders.append(name + "/")
        elif name.lower().endswith(extensions):
            wanted.append(name)
        else:
            others.append(name)
    chosen = wanted + folders if wanted or folders else others
    for name in chosen:
        meta = "folder" if name.endswith("/") else ""
        yield Completion(name, -len(prefix), display=name, display_meta=meta)
