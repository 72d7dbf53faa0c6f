"""Which variable holds this tensor: the one resolver for errors, traces, graphs, why and explain.

A Session puts a callable returning its namespace in the run context (``names``);
from the Python API the names are the caller's variables (the first frame
outside autodsl, found by ``autodsl.source.user_frame``).
"""
from __future__ import annotations

from autodsl.context import current
from autodsl.errors import TypeError_
from autodsl.source import user_frame

__all__ = ["TENSOR_TYPES", "names_of", "caller_namespace", "named_tensors", "frame_namespaces",
           "is_tensor", "caller_frame", "user_names", "names_by_id", "name_maps"]

# The tensor class, registered by autodsl.core.tensor at import (this module sits below it).
TENSOR_TYPES: tuple = ()


def caller_frame():
    """The frame whose variables name tensors from the Python API: the first outside autodsl."""
    return user_frame()


def register_tensor_type(cls) -> None:
    """Called once, by the module that defines Tensor."""
    global TENSOR_TYPES
    TENSOR_TYPES = (*TENSOR_TYPES, cls)


def names_of(tensor=None, counter=None, data=None) -> list[str]:
    """The user's variable names for ``tensor`` (exactly that object first), then for
    tensors sharing its version ``counter`` (views, detached aliases), from the run context's ``names``."""
    provider = current().names
    try:
        ns = provider() if provider is not None else caller_namespace()
    except Exception:  # noqa: BLE001 - a name is a nicety
        return []
    exact, alias = [], []
    for k, v in list(ns.items()):
        if not isinstance(k, str) or k.startswith("_") or not hasattr(v, "_version"):
            continue
        if tensor is not None and v is tensor:
            exact.append(k)
        elif data is not None and getattr(v, "_data", None) is data:
            exact.append(k)
        elif counter is not None and v._version is counter:
            alias.append(k)
    return exact + alias


def is_tensor(v) -> bool:
    """True for an autodsl tensor (the class registers itself: ``TENSOR_TYPES``). Judged by the
    type alone: the names walk meets any object of the user's, whose ``__class__`` may be a
    property that warns or fails (a deprecated module attribute's proxy)."""
    return issubclass(type(v), TENSOR_TYPES)


def named_tensors(*namespaces) -> dict:
    """``{name: tensor}`` from ``{name: value}`` dicts, later ones winning for a name (locals
    after globals); names starting with ``_`` (``_``, IPython's ``_1``) are left out."""
    merged = {}
    for ns in namespaces:
        merged.update(ns)
    return {k: v for k, v in merged.items()
            if isinstance(k, str) and not k.startswith("_") and is_tensor(v)}


def frame_namespaces(frame) -> tuple:
    """Copies of ``frame``'s globals and locals (two dict copies: cheap; the names as they are now)."""
    if frame is None:
        return ()
    g = frame.f_globals
    loc = frame.f_locals
    return (dict(g),) if loc is g else (dict(g), dict(loc))


def caller_namespace() -> dict:
    """``{name: tensor}`` of the Python API user's code: the global, then the local variables
    (a local wins) of the first frame outside autodsl. Only tensors; names starting with ``_``
    are left out. Used when no Session supplies names: ``why``, ``explain``, ``graph``,
    ``dot``, ``step``, version errors, and the backward trace (``trace.Recorder.finish``)."""
    return named_tensors(*frame_namespaces(caller_frame()))


def user_names(names=None):
    """The names to show: ``names`` when given; None inside a Session (``name_maps`` then
    reads its namespace through the run context's ``names``); else, from the Python API, the caller's variables
    (``{name: tensor}`` of the first frame outside autodsl: ``caller_namespace``)."""
    if names is None and current().names is None:
        return caller_namespace()
    return names


def names_by_id(names=None) -> dict:
    """``{id(tensor): variable name}`` from ``names`` ({name: tensor}, or already by id), or
    from the running Session's namespace when ``names`` is None; {} outside a Session."""
    return name_maps(names)[0]


def name_maps(names):
    """``names`` -> ({id(tensor): name}, {node: name}).

    Accepts {id(tensor): name} (what the trace uses) or {name: tensor} (a
    session's namespace); other values in the latter are ignored.
    """
    by_id, by_node = {}, {}
    if names is None:
        provider = current().names
        names = provider() if provider is not None else None
    if names is None:
        return by_id, by_node
    if not hasattr(names, "items"):
        raise TypeError_("names= is a dictionary from Python ({name: tensor}, or {id(tensor): name}); "
                         "a script leaves it out, as its variables name the tensors already")
    for k, v in names.items():
        if isinstance(k, int) and isinstance(v, str):
            by_id[k] = v
        elif isinstance(k, str) and is_tensor(v):
            by_id[id(v)] = k
            if v.grad_fn is not None:
                by_node[v.grad_fn] = k
    return by_id, by_node
