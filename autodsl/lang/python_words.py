"""What a Python user will type that the language leaves out, and what to write instead.

``syntax_hint`` is asked by the parser before it reports an unexpected token, so
that ``if x > 0:``, ``lambda x: ...``, ``a if c else b``, ``elif``, ``else`` after
a loop, comprehensions, ``import`` and ``with`` get one sentence naming the language's form
rather than "unexpected name". ``NAME_HINTS`` are for words that parse as names
(``pass``, ``None``): the interpreter uses them when such a name is not defined.
"""
from __future__ import annotations

__all__ = ["NAME_HINTS", "TENSOR_ATTRIBUTE_HINTS", "syntax_hint"]

NAME_HINTS = {
    "pass": "the language needs no `pass`, a block may be empty (`{ }`)",
    "None": "write `none`",
    "True": "write `true`",
    "False": "write `false`",
    "elif": "write `else if cond { ... }`",
    "lambda": "define a function with `def name(x) { return ... }`",
    "self": "there are no classes; use functions and variables",
    # the REPL's and IPython's way out
    "exit": "leave the REPL with :quit or Ctrl-D (a script ends after its last line)",
    "quit": "leave the REPL with :quit or Ctrl-D (a script ends after its last line)",
    "str": 'put a value into a string with an f-string, f"{x}" (f"{x:.4f}" for 4 decimals)',
    "int": ("round(x) is a plain number's nearest whole number, x.item() a tensor's value, "
            "x.long() or x.to(int64) an integer tensor"),
    "float": "a number with a point is a float (3.0), x.item() a tensor's value, x.double() a float64 tensor",
    # library prefixes from Python code: the language's built-ins are the same functions, unprefixed
    **{lib: ("the built-ins (exp, zeros, tensor, pi, ...) are always there without a prefix: "
             f"write exp(x), not {lib}.exp(x)") for lib in ("torch", "np", "numpy", "math", "F", "nn", "scipy")},
}

# a tensor's attributes from PyTorch or NumPy code that the language leaves out
TENSOR_ATTRIBUTE_HINTS = {
    "numpy": "a tensor is the language's array: x.tolist() gives its values as a list, x.item() the "
             "number in a one-element tensor",
    "astype": "convert with x.to(float64) (or x.double(), x.long())",
}

_STMT_START = ("_NL", "SEMICOLON", "LBRACE", "RBRACE")

# Python statements that are not part of the language, seen as a name at the start of a
# statement followed by something a name cannot be followed by
_STATEMENTS = {
    "try": ("there is no `try`: an error stops the script with its message; check the values "
            "first with `if`"),
    "class": "there are no classes: use functions (`def`) and variables",
    "del": "there is no `del`: bind the name to something else (`x = none`)",
    "assert": ("there is no `assert`: check with `if not cond { print(...) }`, or compare "
               "gradients with check(f, x)"),
    "raise": ("there is no `raise`: a script stops at an error the built-ins raise; print a "
              "message instead"),
    "global": ("there is no `global`: a function reads the names around it; to change one, "
               "return the new value and assign it outside"),
    "nonlocal": ("there is no `nonlocal`: a function reads the names around it; to change one, "
                 "return the new value and assign it outside"),
    "yield": "there are no generators (`yield`): fill a list in a `for` loop and return it",
}


def _statement_start(tokens, i: int) -> bool:
    return i == 0 or tokens[i - 1].type in _STMT_START


def _block_owner(tokens):
    """The first token of the statement whose block the last token (a `}`) closes."""
    depth = 0
    for j in range(len(tokens) - 1, -1, -1):
        t = tokens[j].type
        if t == "RBRACE":
            depth += 1
        elif t == "LBRACE":
            depth -= 1
            if depth == 0:
                k = j
                while k > 0 and tokens[k - 1].type not in _STMT_START:
                    k -= 1
                return tokens[k] if k < j else None
    return None


def syntax_hint(tok, before, expected):
    """``(message, first token, last token)`` for a Python form at ``tok``, or None.

    ``before``: the tokens before ``tok``; ``expected``: what the parser would accept.
    """
    prev = before[-1] if before else None
    if tok.type == "PERCENT" and _statement_start(before, len(before)):
        return ("`%` starts no statement: IPython's magics are not part of the language (time a "
                "statement with :time; in the autodsl kernel a cell is the language already, without "
                "%%autodsl)"), tok, tok
    hint = _string_form_hint(tok, prev)
    if hint is not None:
        return hint
    if prev is not None and prev.type == "NAME" and str(prev) == "lambda":
        return "there is no `lambda`: " + NAME_HINTS["lambda"] + " and pass its name", prev, prev
    if prev is not None and prev.type == "NAME" and str(prev) == "elif":
        return "there is no `elif`: " + NAME_HINTS["elif"], prev, prev
    if prev is not None and prev.type == "FSTRING" and tok.line == prev.line and tok.column == prev.end_column:
        q = str(prev)[1]
        other = "'" if q == '"' else '"'
        return (f"this f-string ends at the second {q}: a string inside its `{{ }}` is written with "
                f"the other quote ({other}...{other})"), prev, tok
    if prev is not None and prev.type == "NAME" and _statement_start(before, len(before) - 1):
        word = str(prev)
        if word in ("import", "from") and tok.type == "NAME":
            return ("there is no `import`: the built-ins (tensor, zeros, exp, ...) are always "
                    "there, without a prefix"), prev, prev
        if word == "with":
            return "there is no `with`: write `no_grad { ... }` for `with torch.no_grad():`", prev, prev
        if word in _STATEMENTS:
            return _STATEMENTS[word], prev, prev
        if tok.type == "COMMA":
            return ("there is no unpacking (`a, b = ...`): assign one name and index it, "
                    "`r = sort(x); values = r[0]; indices = r[1]` (or `r.values`, `r.indices`)"), prev, tok
    if tok.type == "COMMA" and prev is not None and prev.type == "NAME" and len(before) >= 2 \
            and before[-2].type == "FOR":
        return ("a `for` loop takes one name: `for pair in xs { i = pair[0]; j = pair[1] }`, "
                "or `for k in range(len(xs))`"), prev, tok
    if tok.type == "AUGOP" and str(tok) == "*=" and prev is not None and prev.type == "STAR" \
            and _touching(prev, tok):
        name = str(before[-2]) if len(before) >= 2 and before[-2].type == "NAME" else "x"
        return (f"`**=` is not an operator: powers are `^`, so write `{name} = {name} ^ 2` "
                f"for `{name} **= 2`"), prev, tok
    if tok.type == "NAME" and str(tok) == "is" and prev is not None and prev.type not in _STMT_START:
        return ("there is no `is`: compare with `==` (`x == none`), and `is not` with `!=`"), tok, tok
    if tok.type == "COLON" and "LBRACE" in expected:
        return ("a block is written in braces, not after a `:`: `if x > 0 { ... }`, "
                "`def f(x) { ... }`"), tok, tok
    if tok.type == "IF" and prev is not None and prev.type not in _STMT_START:
        return ("there is no `a if c else b` expression: write `if c { y = a } else { y = b }`, or "
                "`where(c, a, b)` for tensors"), tok, tok
    if tok.type == "FOR" and prev is not None and prev.type not in _STMT_START:
        return ("there are no comprehensions (`[f(x) for x in xs]`): fill a list in a `for` loop, or "
                "compute on a whole tensor at once (`f(xs)`, `arange(n)`)"), tok, tok
    if tok.type == "ELSE" and prev is not None and prev.type == "RBRACE":
        owner = _block_owner(before)
        if owner is not None and owner.type in ("FOR", "WHILE"):
            return (f"`else` after a `{owner}` loop is not part of the language: set a flag before "
                    "`break` and test it after the loop"), tok, tok
    return None


_STRINGS = ("STRING", "FSTRING")


def _touching(a, b) -> bool:
    """Is ``b`` right after ``a``, with no space between them?"""
    return a.line == b.line and b.column == a.end_column


def _string_form_hint(tok, prev):
    """Triple quotes and string prefixes other than f (r"", b"", F""), which the lexer sees as
    an empty string, or a name, right before a string."""
    if prev is None or tok.type not in _STRINGS or not _touching(prev, tok):
        return None
    text = str(prev)
    if prev.type in _STRINGS and text in ('""', "''", 'f""', "f''"):
        return ("there are no triple-quoted strings: a string is one line, in \"...\" or '...' "
                "(\\n for a line break)"), prev, tok
    if prev.type == "NAME" and text.lower() in ("r", "b", "u", "f", "rb", "br", "rf", "fr"):
        if text == "F":
            return "an f-string is written with a lowercase f: f\"...\"", prev, tok
        return (f"there is no `{text}` string prefix: the only prefix is f (f\"...\"); a plain string "
                "writes a backslash as \\\\"), prev, tok
    return None
