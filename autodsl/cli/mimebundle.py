"""A value's Jupyter mimebundle, read through IPython's display protocol, without IPython.

The kernel (``cli/kernel.py``) shows a bare expression's value as an ``execute_result``
whose data is this bundle. What goes in it is the value's own choice, as IPython asks it:

- ``_repr_mimebundle_(include=None, exclude=None)``: a dict ``{mimetype: data}``, or a pair
  ``(data, metadata)``; its entries win over the ones below;
- ``_repr_html_()``, ``_repr_svg_()``, ``_repr_png_()``, ``_repr_jpeg_()``, ``_repr_markdown_()``,
  ``_repr_latex_()``, ``_repr_json_()``: one mimetype each; None means "not available", a pair
  ``(data, metadata)`` adds metadata;
- ``text/plain`` is the text the REPL prints (``core.display.format_value``), so that a
  notebook without rich output reads as the terminal does.

A method that raises is skipped (the other entries still show), as IPython does. Images
given as bytes are base64-encoded, as the Jupyter protocol carries them.
"""
from __future__ import annotations

import base64
import json

from autodsl.core.display import format_value

__all__ = ["REPR_METHODS", "mimebundle"]

REPR_METHODS = (
    ("text/html", "_repr_html_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("text/markdown", "_repr_markdown_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
)

_BINARY = ("image/png", "image/jpeg")


def _call(obj, name: str, *args, **kwargs):
    # the method on the value's type, so that a Python value's attribute lookup (or a
    # class passed as a value) cannot answer for it
    method = getattr(type(obj), name, None)
    if method is None or isinstance(obj, type):
        return None
    try:
        return method(obj, *args, **kwargs)
    except Exception:  # noqa: BLE001 - a failing repr method is skipped, as IPython skips it
        return None


def _encode(mime: str, data):
    """Data as the protocol carries it (a str, or JSON for application/json), or None."""
    if data is None:
        return None
    if mime in _BINARY:
        if isinstance(data, (bytes, bytearray, memoryview)):
            return base64.b64encode(bytes(data)).decode("ascii")
        return data if isinstance(data, str) else None
    if mime == "application/json" or mime.endswith("+json"):
        try:
            json.dumps(data)
        except (TypeError, ValueError):
            return None
        return data
    if isinstance(data, (bytes, bytearray)):
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            return None
    return data if isinstance(data, str) else None


def mimebundle(value) -> tuple[dict, dict]:
    """``(data, metadata)`` for ``value``: ``text/plain`` always, and each rich form the
    value offers through the display protocol (see the module docs)."""
    data: dict = {}
    metadata: dict = {}
    for mime, name in REPR_METHODS:
        got = _call(value, name)
        md = None
        if isinstance(got, tuple) and len(got) == 2:
            got, md = got
        got = _encode(mime, got)
        if got is not None:
            data[mime] = got
            if isinstance(md, dict) and md:
                metadata[mime] = md
    bundle = _call(value, "_repr_mimebundle_", include=None, exclude=None)
    md = None
    if isinstance(bundle, tuple) and len(bundle) == 2:
        bundle, md = bundle
    if isinstance(bundle, dict):
        for mime, got in bundle.items():
            got = _encode(str(mime), got)
            if got is not None:
                data[str(mime)] = got
        if isinstance(md, dict):
            metadata.update({str(k): v for k, v in md.items() if isinstance(v, dict)})
    if "text/plain" not in data:
        data["text/plain"] = format_value(value)
    return data, metadata
