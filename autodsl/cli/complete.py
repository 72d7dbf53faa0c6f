"""Tab completion for the REPL: names, built-ins, attributes, keyword arguments, commands, files.

``AutodslCompleter`` reads the live session through a callable (``:reset``
replaces it) and never evaluates anything: it looks at the text before the
cursor only. What it offers, by context:

- after ``:`` at the start: the commands; after ``:load``/``:save``/``:dot x``:
  file names; after ``:help``: built-ins, commands and topics; after
  ``:info``/``:graph``/``:dot``/``:time``/``:check``: what an expression offers;
- after ``expr.``: a tensor's public attributes and methods (a graph node's
  ``name`` and ``next_functions`` when ``expr`` is a name bound to one);
- inside a call ``f(...``: ``keyword=`` for each keyword parameter of ``f``
  (from ``inspect.signature``), then names;
- elsewhere: the session's names, the built-ins (with their one-line doc)
  and the keywords.

A completer that raises would put a traceback on the screen, so every
failure here means "no completions".
"""
from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable

from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.document import Document

from autodsl import backend
from autodsl.cli.doctext import first_sentence
from autodsl.cli.path_complete import path_completions
from autodsl.core.tensor import PUBLIC_ATTRIBUTES, PUBLIC_METHODS, Tensor
from autodsl.lang.interpreter import NODE_ATTRIBUTES, UserFunction
from autodsl.lang.parser import KEYWORDS
from autodsl.lang.values import describe

__all__ = ["AutodslCompleter", "call_arguments", "call_context", "describe_binding", "given_arguments",
           "given_keywords", "one_line_doc"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_SCAN = re.compile(r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>"([^"\\\n]|\\.)*"?|'([^'\\\n]|\\.)*'?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?)
  | (?P<open>[(\[{])
  | (?P<close>[)\]}])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)

# commands whose argument is a file name, an expression, or a help topic
FILE_COMMANDS = (":load", ":save")
DOT_FILES = (".dot", ".gv", ".svg", ".png", ".pdf")
EXPR_COMMANDS = (":info", ":graph", ":dot", ":time", ":vars", ":check", ":why")
HELP_TOPICS = ("language", "autograd", "commands", "keys", "builtins")


def one_line_doc(fn, registry=None, name: str | None = None) -> str:
    """The first sentence of a built-in's documentation (the op registry's doc when it has one),
    as plain text: no reST markup in a menu."""
    doc = ""
    if registry is not None and name in registry:
        doc = getattr(registry[name], "doc", "") or ""
    if not doc:
        doc = getattr(fn, "__doc__", "") or ""
    return first_sentence(doc)


def describe_binding(value) -> str:
    """A short description of a session variable, for completion menus and ``:vars``."""
    if isinstance(value, Tensor):
        shape = "x".join(str(n) for n in value.shape) or "scalar"
        grad = ", requires_grad" if value.requires_grad else ""
        return f"tensor {shape} {value.dtype.name}{grad}"
    if isinstance(value, UserFunction):
        return f"def {value.name}{value.signature_text()}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return describe(value)          # the language's words: "a list", "none", "an sgd optimizer"


def _scan(text: str):
    """(inside a string or comment?, stack of (bracket, index, token before it)) of ``text``."""
    stack: list[tuple[str, int, str | None]] = []
    prev = None
    prev_kind = None
    for m in _SCAN.finditer(text):
        kind = m.lastgroup
        tok = m.group()
        unclosed = kind == "comment" or len(tok) < 2 or tok[-1] != tok[0] or tok.endswith("\\" + tok[0])
        if kind in ("comment", "string") and m.end() == len(text) and unclosed:
            return True, stack
        if kind == "open":
            stack.append((tok, m.start(), prev if prev_kind in ("name", "close") else None))
        elif kind == "close" and stack:
            stack.pop()
        if kind not in ("other",) or not tok.isspace():
            prev, prev_kind = tok, kind
    return False, stack


def call_context(text: str) -> tuple[str | None, str | None, bool]:
    """For text before the cursor inside ``f(`` or ``obj.m(``: (callee name, object name, at an argument start?)."""
    quoted, stack = _scan(text)
    if quoted or not stack or stack[-1][0] != "(":
        return None, None, False
    _bracket, index, callee = stack[-1]
    if callee is None or not re.match(r"[A-Za-z_]", callee):
        return None, None, False
    before = text[:index].rstrip()
    before = before[: len(before) - len(callee)].rstrip()
    obj = None
    if before.endswith("."):
        m = _WORD.search(before[:-1].rstrip())
        obj = m.group() if m else ""
    # an argument starts after "(" or "," (the current word may already be half typed)
    rest = text[index + 1:]
    word = _WORD.search(rest)
    head = rest[: word.start()] if word else rest
    at_start = head.strip() == "" or head.rstrip().endswith(",")
    # a nested bracket closed inside the call (e.g. "f(a[0], ") still leaves us in f's arguments
    return callee, obj, at_start


def given_keywords(text: str) -> set[str]:
    """The keyword arguments already written in the innermost open call of ``text``
    (``f(x, dim=1, `` gives {"dim"}): the completer offers the others only. A ``==`` is a
    comparison, and keywords of calls nested inside the arguments are not this call's."""
    return given_arguments(text)[1]


def given_arguments(text: str) -> tuple[int, set[str]]:
    """(how many positional arguments, which keywords) the innermost open call of ``text``
    has before its last, unfinished argument: ``sum(x, dim=0, `` gives (1, {"dim"})."""
    done = call_arguments(text)[:-1]
    keywords = {m.group(1) for m in map(_KEYWORD_ARG.match, done) if m}
    return sum(1 for a in done if a.strip() and not _KEYWORD_ARG.match(a)), keywords


_KEYWORD_ARG = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)")


def call_arguments(text: str) -> list[str]:
    """The arguments of the innermost open call of ``text`` as written, the last one the
    unfinished argument at the cursor; a nested bracket reads ``()`` and a string ``""``
    (``f(x, g(1, 2), "a,b", d`` gives ["x", " g()", ' ""', " d"]); [] outside a call."""
    quoted, stack = _scan(text)
    if quoted or not stack or stack[-1][0] != "(":
        return []
    depth, flat = 0, []
    for m in _SCAN.finditer(text, stack[-1][1] + 1):
        kind, tok = m.lastgroup, m.group()
        if kind == "open":
            depth += 1
            flat.append("()" if depth == 1 else "")       # a nested bracket is part of one argument
        elif kind == "close":
            depth -= 1
        elif depth == 0:
            flat.append('""' if kind == "string" else tok)
    return "".join(flat).split(",")


class AutodslCompleter(Completer):
    """Completion for the autodsl REPL; see the module docs."""

    def __init__(self, get_session: Callable[[], object], get_commands: Callable[[], Iterable[str]],
                 registry=None):
        self.get_session = get_session
        self.get_commands = get_commands
        self.registry = registry

    # -- the entry point ---------------------------------------------------------
    def get_completions(self, document: Document, complete_event):
        try:
            yield from self._completions(document, complete_event)
        except Exception:  # noqa: BLE001 - never a traceback from the menu
            return

    def _completions(self, document: Document, complete_event):
        text = document.text_before_cursor
        if text.lstrip().startswith(":"):
            yield from self._command_completions(text.lstrip(), complete_event)
            return
        yield from self._code_completions(text)

    # -- `:` commands ---------------------------------------------------------------
    def _command_completions(self, text: str, complete_event):
        commands = sorted(self.get_commands())
        if " " not in text:
            for c in commands:
                if c.startswith(text):
                    yield Completion(c, -len(text), display_meta=self._command_meta(c))
            return
        head, _, arg = text.partition(" ")
        matches = [c for c in commands if c.startswith(head)]
        name = head if head in commands else (matches[0] if len(matches) == 1 else None)
        if name is None:
            return
        arg = arg.lstrip()
        if name in FILE_COMMANDS or (name == ":dot" and " " in arg.strip()):
            path = arg if name != ":dot" else arg.split()[-1] if not arg.endswith(" ") else ""
            yield from path_completions(path, DOT_FILES if name == ":dot" else (".ad",))
        elif name == ":help":
            mine = [n for n, v in self.get_session().namespace.items() if isinstance(v, UserFunction)]
            for c in self._matching(arg, [*self._builtins(), *commands, *HELP_TOPICS, *mine]):
                yield Completion(c, -len(arg), display_meta=self._help_meta(c))
        elif name == ":trace":
            yield from self._choices(arg, ("on", "off", "last"))
        elif name == ":anomaly":
            yield from self._choices(arg, ("on", "off", "raise"))
        elif name == ":device":
            yield from self._choices(arg, backend.DEVICES)
        elif name == ":dtype":
            yield from self._choices(arg, ("float32", "float64"))
        elif name in EXPR_COMMANDS:
            yield from self._code_completions(arg)

    def _choices(self, arg: str, options):
        for o in options:
            if o.startswith(arg):
                yield Completion(o, -len(arg))

    def _command_meta(self, name: str) -> str:
        """The description half of a command's usage line (``":vars  your variables..."``)."""
        commands = self.get_commands()
        fn = commands.get(name) if hasattr(commands, "get") else None
        usage = ((getattr(fn, "__doc__", None) or "").strip().splitlines() or [""])[0]
        return usage.split("  ", 1)[1].strip() if "  " in usage else ""

    def _help_meta(self, name: str) -> str:
        if name.startswith(":"):
            return self._command_meta(name) or "command"
        if name in HELP_TOPICS:
            return "topic"
        mine = self.get_session().namespace.get(name)
        if isinstance(mine, UserFunction):
            return describe_binding(mine)
        fn = self._builtins().get(name)
        return one_line_doc(fn, self.registry, name) if fn is not None else ""

    # -- code ---------------------------------------------------------------------
    def _builtins(self) -> dict:
        return self.get_session().builtins

    @staticmethod
    def _matching(prefix: str, names: Iterable[str]) -> list[str]:
        return sorted({n for n in names if n.startswith(prefix) and not n.startswith("_")})

    def _code_completions(self, text: str):
        quoted, _ = _scan(text)
        if quoted:
            return
        m = _WORD.search(text)
        word = m.group() if m else ""
        before = text[: len(text) - len(word)]
        if before.endswith("."):
            yield from self._attribute_completions(before[:-1], word)
            return
        if word and word[0].isdigit():
            return
        # inside a call at an argument's start: keyword arguments first
        callee, obj, at_start = call_context(text)
        if callee is not None and at_start:
            # neither a keyword already given nor a parameter an argument already filled
            positional, given = given_arguments(text[: len(text) - len(word)])
            for kw in self._keyword_params(callee, obj, skip=positional):
                if kw.startswith(word) and kw not in given:
                    yield Completion(kw + "=", -len(word), display=kw + "=", display_meta="keyword argument")
        if not word:
            return
        yield from self._name_completions(word)

    def _name_completions(self, word: str):
        session = self.get_session()
        namespace = session.namespace
        builtins = self._builtins()
        for n in self._matching(word, namespace):
            yield Completion(n, -len(word), display_meta=describe_binding(namespace[n]))
        for n in self._matching(word, builtins):
            if n not in namespace:
                yield Completion(n, -len(word), display_meta=one_line_doc(builtins[n], self.registry, n))
        for n in self._matching(word, KEYWORDS):
            if n not in namespace and n not in builtins:
                yield Completion(n, -len(word), display_meta="keyword")

    def _attribute_completions(self, obj_text: str, word: str):
        m = _WORD.search(obj_text.rstrip())
        value = None
        if m and not obj_text.rstrip()[: m.start()].rstrip().endswith("."):
            value = self.get_session().namespace.get(m.group())
        after_grad_fn = obj_text.rstrip().endswith(".grad_fn")
        if after_grad_fn or (value is not None and not isinstance(value, Tensor)
                             and hasattr(value, "next_functions")):
            names = {n: "graph node attribute" for n in NODE_ATTRIBUTES}
        elif value is not None and getattr(type(value), "LANG_ATTRIBUTES", None) is not None:
            # a result type or an optimizer: what a script may reach on it (interpreter.getattr)
            names = {n: "method" if callable(getattr(value, n, None)) else "attribute"
                     for n in type(value).LANG_ATTRIBUTES}
        elif obj_text.rstrip() and obj_text.rstrip()[-1].isdigit() and not m:
            return
        else:
            names = {n: "attribute" for n in PUBLIC_ATTRIBUTES}
            names.update({n: "method" for n in PUBLIC_METHODS})
        for n in self._matching(word, names):
            meta = names[n]
            if meta == "method":
                doc = one_line_doc(getattr(Tensor if isinstance(value, Tensor) or value is None else value, n, None))
                meta = doc or meta
            yield Completion(n, -len(word), display_meta=meta)

    def _keyword_params(self, callee: str, obj: str | None, skip: int = 0) -> list[str]:
        """The parameters of the callee that a keyword may name, less the first ``skip``
        that positional arguments already filled (keyword-only ones are never filled so)."""
        if obj is not None:
            if callee not in PUBLIC_METHODS:
                return []
            fn = getattr(Tensor, callee, None)
        else:
            session = self.get_session()
            fn = session.namespace.get(callee)
            if fn is None:
                fn = self._builtins().get(callee)
        if fn is None:
            return []
        if isinstance(fn, UserFunction):
            return [p.name for p in fn.params][skip:]
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return []
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        params = [p for p in sig.parameters.values() if p.kind in kinds]
        if obj is not None and params:
            params = params[1:]          # x.sum(...): the tensor itself is the first parameter
        filled = {p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD}
        filled = set([p.name for p in params if p.name in filled][:skip])
        return [p.name for p in params if p.name != "self" and not p.name.startswith("_") and p.name not in filled]
