"""The language's words for Python values, and Python's and NumPy's messages said in them.

A user of the language writes ``none``, numbers, strings, lists and tensors; a message that
says ``NoneType``, ``'float' object is not iterable``, ``ufunc 'sign'`` or ``numpy.newaxis``
speaks of the implementation instead. ``kind`` names a value the way the language does;
``plain`` rewrites a message Python or NumPy wrote (the ones an op or a built-in can let
through) into those words, with what to do where the rewrite knows it. Both are used where
stray exceptions are translated (``ops/registry.py``, ``lang/values.py``, the interpreter's
call errors) and by messages that name a value's kind.

Imports nothing but ``autodsl.names`` (to tell a tensor), so that every layer from core up
says the same words.
"""
from __future__ import annotations

import re

from autodsl.names import is_tensor

__all__ = ["kind", "plain", "shown", "type_words"]

# Python's and NumPy's type names as they appear in messages ('NoneType', <class 'float'>)
_TYPE_WORDS = {
    "NoneType": "none", "None": "none", "bool": "a boolean", "int": "a number", "float": "a number",
    "complex": "a complex number", "str": "a string", "list": "a list", "tuple": "a sequence",
    "dict": "a dictionary", "range": "a range", "function": "a function", "bytes": "bytes",
    "bytearray": "bytes",
    "builtin_function_or_method": "a function", "method": "a function", "UserFunction": "a function",
    "_Hook": "a function", "CompiledFunction": "a function", "partial": "a function",
    "Tensor": "a tensor", "ndarray": "a NumPy array", "slice": "a slice", "ellipsis": "`...`",
    "type": "a type", "MinMaxResult": "a (values, indices) pair", "generator": "a sequence",
    # the results of the language's tools, by what made them
    "DType": "a dtype", "RemovableHandle": "a hook handle", "Why": "the result of why()",
    "Graph": "the result of graph()", "Info": "the result of info()", "Plot": "a plot",
    "Explanation": "the result of explain()", "CheckResult": "the result of check()",
    "BackwardStepper": "the result of step()", "Checkpoint": "a checkpoint", "Node": "a graph node",
    "numpy.bool": "a boolean", "bool_": "a boolean", "numpy.bool_": "a boolean",
    **{f"{p}{n}": "a number" for p in ("", "numpy.") for n in (
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "longlong", "intc", "double")},
}


def type_words(name: str) -> str:
    """The language's words for a Python type name (``'NoneType'`` is ``none``)."""
    name = name.strip("'\"")
    if name in _TYPE_WORDS:
        return _TYPE_WORDS[name]
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name.lstrip('_')}"


def kind(v) -> str:
    """The kind of a value in the language's words: ``none``, ``a number``, ``a tensor``, ..."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if is_tensor(v):
        return "a tensor"
    if isinstance(v, list):
        return "a list"
    if type(v) is tuple:          # the language has no tuple literal: a tuple of integers is a shape
        return "a shape" if all(type(n) is int for n in v) else "a sequence"
    text = getattr(type(v), "LANG_DESCRIPTION", None)      # a type may name itself ("an sgd optimizer")
    if text is not None:
        return text
    if isinstance(v, range):
        return "a range"
    if hasattr(type(v), "next_functions"):     # a grad_fn (core/node.py sits above this module)
        return "a graph node"
    if callable(v) and not isinstance(v, type):
        return "a function"
    if type(v).__name__ == "ndarray":       # given from Python (Session.run(variables=...))
        return "a NumPy array (give the session a tensor instead: autodsl.tensor(array))"
    return type_words(type(v).__name__)


def shown(v) -> str:
    """A value as a script writes it, for a message: ``none``, ``true``, ``2.5``, ``"a"``; a value
    with no literal (a function, a tensor) by its kind."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        if len(v) > 40:
            return "a string"
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
    if isinstance(v, (list, tuple)) and len(v) <= 8 and all(
            x is None or isinstance(x, (bool, int, float, str)) for x in v):
        return "[" + ", ".join(shown(x) for x in v) + "]"
    return kind(v)


_Q = r"'([\w.]+)'"              # a quoted type name
_CLS = r"<class '([\w.]+)'>"    # NumPy's spelling of one
_OPS = {"**": "^", "@": "@", "+": "+", "-": "-", "*": "*", "/": "/", "//": "//", "%": "%",
        "&": "&", "|": "|", "<<": "<<", ">>": ">>", "^": "xor"}


def _t(m, i=1) -> str:
    return type_words(m.group(i))


# (pattern, replacement): a function of the match, most specific first. Each gives one sentence.
_RULES: list = [
    (r"object of type " + _Q + r" has no len\(\)",
     lambda m: f"{_t(m)} has no length; len() takes a list, a string or a tensor"),
    (r"argument of type " + _Q + r" is not iterable",
     lambda m: f"`in` needs a list, a string or a tensor on its right, not {_t(m)}"),
    (_Q + r" object is not iterable",
     lambda m: f"expected a list (or a tensor), got {_t(m)}; write a list such as [a, b]"),
    (_Q + r" object is not subscriptable",
     lambda m: f"{_t(m)} cannot be indexed; only lists, strings and tensors take [...]"),
    (_Q + r" object is not callable",
     lambda m: f"{_t(m)} is not a function and cannot be called"),
    (_Q + r" object has no attribute '(\w+)'",
     lambda m: f"{_t(m)} has no attribute `{m.group(2)}`"),
    (_Q + r" object cannot be interpreted as an integer",
     lambda m: f"expected a whole number, got {_t(m)}"),
    (_Q + r" object does not support item assignment",
     lambda m: f"{_t(m)} cannot be changed in place with [...] = ..."),
    (r"unsupported operand type\(s\) for ([^:]+): " + _Q + " and " + _Q,
     lambda m: f"`{_OPS.get(m.group(1).strip(), m.group(1).strip())}` does not take {_t(m, 2)} and "
               f"{_t(m, 3)}"),
    (r"bad operand type for unary ([^:]+): " + _Q,
     lambda m: f"unary `{m.group(1).strip()}` does not take {_t(m, 2)}"),
    (r"'([<>=!]+)' not supported between instances of " + _Q + " and " + _Q,
     lambda m: f"cannot compare {_t(m, 2)} with {_t(m, 3)} using `{m.group(1)}`"),
    (r'can only concatenate (\w+) \(not "(\w+)"\) to \w+',
     lambda m: f"`+` joins {type_words(m.group(1))} only to another, not to {type_words(m.group(2))}; "
               'for text use an f-string, f"{x}"'),
    (r"can't multiply sequence by non-int of type " + _Q,
     lambda m: f"a list or a string can be repeated only a whole number of times, not {_t(m)}"),
    (r"(\w+)\(\) argument must be a string[\w ,-]* or a (?:real )?number, not " + _Q,
     lambda m: f"expected a number, got {_t(m, 2)}"),
    (r"(\w+) indices must be integers(?: or slices)?, not " + r"'?([\w.]+)'?",
     lambda m: f"{type_words(m.group(1))} is indexed by an integer or a slice, not {_t(m, 2)}"),
    (r"(?:tuple|list|string) index out of range", lambda m: "the index is out of range"),
    (r"invalid literal for int\(\) with base \d+: (.*)",
     lambda m: f"expected a whole number, got the string {m.group(1)}"),
    (r"could not convert string to float: (.*)", lambda m: f"expected a number, got the string {m.group(1)}"),
    (r"(?:\w+\(\) )?takes (?:from )?(\d+)(?: to (\d+))? positional arguments? but (\d+) (?:was|were) given",
     lambda m: f"it takes at most {m.group(2) or m.group(1)} arguments, {m.group(3)} were given"),
    (r"(?:\w+\(\) )?missing \d+ required (?:positional |keyword-only )?arguments?: (.*)",
     lambda m: f"it needs the argument {_names(m.group(1))}"),
    (r"(?:\w+\(\) )?got an unexpected keyword argument '(\w+)'",
     lambda m: f"unknown keyword `{m.group(1)}`"),
    (r"(?:\w+\(\) )?got multiple values for (?:argument|keyword argument) '(\w+)'",
     lambda m: f"`{m.group(1)}` is given twice (once by position, once by keyword)"),
    (r"(?:\w+\(\) )?got some positional-only arguments passed as keyword arguments: (.*)",
     lambda m: f"{_names(m.group(1))} is given by keyword but is taken by position only"),
    (r"too many positional arguments", lambda m: "too many arguments"),
    (r"missing a required argument: '(\w+)'", lambda m: f"the argument `{m.group(1)}` is missing"),
    (r"too many keyword arguments", lambda m: "too many keyword arguments"),
    # NumPy's
    (r"numpy boolean subtract.*",
     lambda m: "cannot subtract bool tensors; use logical_xor(a, b) for 'one but not both', or convert "
               "them first with .to(int64)"),
    (r"numpy boolean negative.*",
     lambda m: "cannot negate a bool tensor; use logical_not(x) to flip true and false"),
    ((r"ufunc '(\w+)' (?:did not contain a loop with signature matching types|not supported for the "
      r"input types).*"),
     lambda m: f"{m.group(1)} does not take tensors of this dtype (for instance bool); convert first, "
               "e.g. x.to(float64)"),
    (r"Cannot cast ufunc '(\w+)' output from dtype\('(\w+)'\) to dtype\('(\w+)'\).*",
     lambda m: f"{m.group(1)}: the result is {m.group(2)} but the tensor written into is {m.group(3)}; "
               f"convert one first, e.g. .to({m.group(2)})"),
    ((r"only integers, slices \(`:`\), ellipsis \(`...`\), numpy.newaxis \(`None`\) and integer or "
      r"boolean arrays are valid indices"),
     lambda m: "only integers, slices (`:`), `...`, none and int64 or bool tensors can index a tensor"),
    ((r"The DType <class 'numpy\.dtypes\.(\w+)DType'> could not be promoted by <class "
      r"'numpy\.dtypes\.(\w+)DType'>.*"),
     lambda m: f"{_dtype_words(m.group(1))} and {_dtype_words(m.group(2))} cannot be combined in one "
               "tensor; give numbers only"),
    (r"Cannot interpret '(.*)' as a data type", lambda m: f"{m.group(1)} is not a dtype"),
    (r"axis (-?\d+) is out of bounds for array of dimension (\d+)",
     lambda m: f"dim {m.group(1)} is out of range for a tensor with {m.group(2)} dimensions"),
    (r"integer argument expected, got (\w+)", lambda m: f"expected a whole number, got {type_words(m.group(1))}"),
    (r"setting an array element with a sequence.*",
     lambda m: "the values do not make a block of numbers: a list holds a list, a tensor of another "
               "shape or something that is not a number; give rows of equal length"),
    (r"Python integer (-?\d+) out of bounds for (\w+)", lambda m: f"{m.group(1)} is outside {m.group(2)}'s range"),
    (r"shape mismatch: indexing arrays could not be broadcast together with shapes (.*)",
     lambda m: f"the index lists or tensors have shapes {m.group(1).strip()}, which do not broadcast together"),
    (r"Maximum allowed dimension exceeded|maximum supported dimension for an ndarray is.*",
     lambda m: "too many dimensions (at most 64)"),
    (r"array is too big; `arr.size \* arr.dtype.itemsize` is larger than the maximum possible size\.?",
     lambda m: "the result is too large to fit in memory"),
    (r"Unable to allocate ([\w.]+ [KMGTPE]?i?B).*",
     lambda m: f"out of memory: the result needs {m.group(1)}"),
    (r"negative dimensions are not allowed", lambda m: "a size cannot be negative"),
]
_RULES = [(re.compile(p), f) for p, f in _RULES]

# what is left of Python's and NumPy's spelling in a message no rule matched
_SCRUB = [
    (re.compile(_CLS), lambda m: type_words(m.group(1))),
    (re.compile(r"dtype\('(\w+)'\)"), lambda m: m.group(1)),
    (re.compile(r"\bnumpy\.dtypes\.(\w+)DType\b"), lambda m: m.group(1).lower()),
    (re.compile(r"'NoneType'|\bNoneType\b"), lambda m: "none"),
    (re.compile(r"\bnumpy\.newaxis\b"), lambda m: "none"),
    (re.compile(r"\bpositional argument"), lambda m: "argument"),
    (re.compile(r"\bufunc '(\w+)'"), lambda m: m.group(1)),
    (re.compile(r"\bTraceback\b.*", re.DOTALL), lambda m: ""),
]


def _dtype_words(name: str) -> str:
    """NumPy's DType class name (``Str``, ``Float64``, ``_PyFloat``) in the language's words."""
    low = name.lower()
    if low in ("str", "bytes", "unicode"):
        return "a string"
    if low.startswith("_py") or low == "object":
        return "a number" if low in ("_pyfloat", "_pyint", "_pylong", "_pycomplex") else "a value"
    return low


def _names(text: str) -> str:
    names = re.findall(r"'(\w+)'", text) or [text.strip()]
    return " and ".join(f"`{n}`" for n in names)


def plain(msg: str) -> str:
    """``msg`` (from Python or NumPy) in the language's words: a known message rewritten whole
    (each rule's sentence replaces the part it matched), the rest with Python's and NumPy's
    spellings of types and values replaced."""
    for pattern, make in _RULES:
        m = pattern.search(msg)
        if m is not None:
            msg = msg[:m.start()] + make(m) + msg[m.end():]
            break
    for pattern, make in _SCRUB:
        msg = pattern.sub(make, msg)
    return msg.strip()

