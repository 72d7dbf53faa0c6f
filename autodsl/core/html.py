"""What a notebook shows: HTML tables and the IPython display protocol, with no IPython import.

IPython and Jupyter (and autodsl's own kernel) look for ``_repr_pretty_``, ``_repr_html_``,
``_repr_svg_``, ``_repr_png_`` and ``_repr_mimebundle_`` on the value a cell shows. The
``RichDisplay`` mixin gives an object the first and the last from its text (``str()``, what
the REPL prints) and whichever of the others it defines, so every front end sees the same
bundle. Every piece of text that goes into HTML is escaped here (``html.escape``): a
variable name or a source line such as ``a<b`` must show as written.
"""
from __future__ import annotations

import base64
import html

__all__ = ["Markup", "RichDisplay", "block", "escape", "mimebundle", "pre", "table"]

# text-like cells keep their layout (a 2-d array spans lines) and line up in columns
_CELL = "text-align:left;vertical-align:top;font-family:monospace;white-space:pre"
_HEAD = "text-align:left;vertical-align:bottom"


class Markup(str):
    """Text that is already HTML: ``table`` and ``block`` put it in as it is."""

    __slots__ = ()


def escape(text) -> Markup:
    """``text`` (anything; ``str()`` of it) as HTML text: ``<``, ``>``, ``&`` and quotes escaped."""
    return text if isinstance(text, Markup) else Markup(html.escape(str(text), quote=True))


def pre(text, title: str | None = None, css_class: str = "autodsl") -> Markup:
    """Text in a ``<pre>`` block (monospaced, lines and their spaces kept, long lines wrapped),
    under an optional bold title."""
    head = f"<div><b>{escape(title)}</b></div>" if title else ""
    return Markup(f'<div class="{escape(css_class)}">{head}'
                  f'<pre style="margin:0;white-space:pre-wrap">{escape(text)}</pre></div>')


def table(head, rows, *, caption=None, footer=(), css_class: str = "autodsl",
          row_styles=None) -> Markup:
    """An HTML table: ``head`` (column titles), ``rows`` (a list of cell lists; a cell is text,
    escaped, or ``Markup``), an optional ``caption`` above it and ``footer`` lines below it.
    ``row_styles``: a CSS style per row (or None), e.g. to mark a failing row."""
    out = [f'<div class="{escape(css_class)}">']
    if caption:
        out.append(f'<div style="font-family:monospace;white-space:pre">{escape(caption)}</div>')
    out.append(f'<table class="{escape(css_class)}">')
    if any(head):       # (a table of name-value pairs has no titles)
        out.append("<thead><tr>" + "".join(f'<th style="{_HEAD}">{escape(h)}</th>' for h in head)
                   + "</tr></thead>")
    out.append("<tbody>")
    for k, row in enumerate(rows):
        style = row_styles[k] if row_styles is not None else None
        attr = f' style="{escape(style)}"' if style else ""
        out.append(f"<tr{attr}>" + "".join(f'<td style="{_CELL}">{escape(c)}</td>' for c in row) + "</tr>")
    out.append("</tbody></table>")
    for line in footer:
        out.append(f'<div style="font-family:monospace;white-space:pre">{escape(line)}</div>')
    out.append("</div>")
    return Markup("\n".join(out))


def block(*parts) -> Markup:
    """Pieces of HTML (``Markup``) and text (escaped) one after another in one ``<div>``."""
    return Markup('<div class="autodsl">' + "".join(escape(p) for p in parts) + "</div>")


def mimebundle(obj, include=None, exclude=None) -> dict:
    """``{mime type: data}`` of ``obj``: ``text/plain`` from ``_display_text()`` (or ``str()``),
    and ``text/html``, ``image/svg+xml``, ``image/png`` from the ``_repr_*_`` methods it has
    (those that return None are left out). PNG is base64 text, as in a Jupyter message (and as
    IPython's own ``Image`` bundles it); ``_repr_png_`` itself gives the bytes."""
    def wanted(mime):
        return (include is None or mime in include) and not (exclude and mime in exclude)

    data = {}
    if wanted("text/plain"):
        text = getattr(obj, "_display_text", None)
        data["text/plain"] = text() if text is not None else str(obj)
    for mime, method in (("text/html", "_repr_html_"), ("image/svg+xml", "_repr_svg_"),
                         ("image/png", "_repr_png_")):
        fn = getattr(obj, method, None)
        if fn is None or not wanted(mime):
            continue
        value = fn()
        if value is None:
            continue
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode("ascii")
        data[mime] = str(value)
    return data


class RichDisplay:
    """Mixin of the display protocol: ``_repr_pretty_`` prints the object's text (what the REPL
    prints: ``_display_text()``, else ``str()``), and ``_repr_mimebundle_`` gathers every form
    it has (see ``mimebundle``). A class adds ``_repr_html_`` / ``_repr_svg_`` / ``_repr_png_``."""

    __slots__ = ()

    def _display_text(self) -> str:
        return str(self)

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(self._display_text())

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return mimebundle(self, include, exclude)
