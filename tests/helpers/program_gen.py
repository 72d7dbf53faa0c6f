"""Hypothesis strategies for random programs of the language (tests/test_fuzz_programs.py).

``programs()`` draws well-formed programs from the grammar (grammar/autodsl.lark): a short
prelude of typical bindings (leaf tensors, a list, a string, a small function), then random
statements: assignments, in-place and augmented assignments, item and attribute writes,
if/else, for and while loops, defs, no_grad blocks, and expressions with every operator,
literals of every kind, f-strings, indexing and slicing, calls of the built-ins and tensor
methods with random arguments (backward, grad, hooks among them).
``malformed()`` draws text that is mostly not a program: random token sequences, and
mutations of a valid program (a character or a token deleted, replaced, inserted or
duplicated, the text cut short, odd characters spliced in).

A few idioms abuse resources on purpose (an endless loop, a string doubled 40 times, a
10^12-element expand): the session's step, time and memory limits must stop them with a
LimitError. Elsewhere sizes are kept small so that every program ends quickly: loops
run at most a few iterations (a `while` counts with its own counter, which nothing else
assigns), a function only calls functions defined before it, integers that reach
creation functions are small, and lists have at most three entries.
"""
from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["BUILTINS", "METHODS", "malformed", "programs", "statements"]

# Names a program reads and writes. The loop counters (wc0, wc1, ...) and function names
# (f0, f1, ...) are not among them, so nothing else rebinds them.
VARS = ["x", "y", "z", "w", "a", "b", "l", "s", "t", "g", "h", "i"]

BUILTINS = [
    "abs", "add", "all", "amax", "amin", "any", "arange", "argmax", "argmin", "argsort", "atan2",
    "cat", "ceil", "check", "clamp", "clone", "cos", "cross_entropy", "cumprod", "cumsum", "det",
    "digamma", "div", "eq", "exp", "expand", "expm1", "eye", "flatten", "floor", "floor_divide",
    "format", "full", "gather", "ge", "get_default_dtype", "getitem", "grad", "gradcheck",
    "gradgradcheck", "gt", "hessian", "hvp", "index_put", "index_select", "info", "inverse",
    "is_grad_enabled", "jacobian", "jvp", "le", "len", "lgamma", "linspace", "log", "log1p",
    "log_softmax", "logical_and", "logical_not", "logical_or", "logsigmoid", "logsumexp", "lt",
    "masked_fill", "matmul", "max", "maximum", "mean", "min", "minimum", "mse_loss", "mul", "ne",
    "neg", "nll_loss", "norm", "ones", "ones_like", "param", "permute", "polygamma", "pow",
    "print", "prod", "rand", "randn", "range", "relu", "remainder", "reshape", "round", "scatter",
    "scatter_add", "seed", "sgd", "adam", "sigmoid", "sign", "sin", "softmax", "softplus", "solve",
    "sort", "sqrt", "square", "squeeze", "stack", "std", "step", "sub", "sum", "tan", "tanh",
    "tensor", "topk", "trace", "transpose", "tril", "triu", "trunc", "unsqueeze", "var", "vhp",
    "view", "vjp", "where", "zeros", "zeros_like", "anomaly", "compile", "explain", "why",
    "last_trace", "replay", "graph", "set_default_dtype",
    # file built-ins: the session is Session(files=False), so these must refuse cleanly
    "load", "save", "include", "dot", "plot",
]

METHODS = [
    "abs", "add", "add_", "all", "amax", "amin", "any", "argmax", "argmin", "argsort", "atan2",
    "backward", "bool", "ceil", "clamp", "clone", "cos", "cpu", "cumprod", "cumsum", "det",
    "detach", "dim", "div", "div_", "double", "eq", "exp", "expand", "expm1", "flatten", "float",
    "floor", "floor_divide", "floor_divide_", "gather", "ge", "gt", "index_put", "index_put_",
    "index_select", "int", "inverse", "item", "le", "lgamma", "log", "log1p", "log_softmax",
    "logical_not", "logsumexp", "long", "lt", "masked_fill", "masked_fill_", "matmul", "max",
    "maximum", "mean", "min", "minimum", "mul", "mul_", "ne", "neg", "norm", "numel", "permute",
    "polygamma", "pow", "prod", "register_hook", "relu", "remainder", "remainder_",
    "requires_grad_", "reshape", "retain_grad", "round", "scatter", "scatter_", "scatter_add",
    "scatter_add_", "sigmoid", "sign", "sin", "size", "softmax", "sort", "sqrt", "square",
    "squeeze", "std", "sub", "sub_", "sum", "sum_to_size", "tan", "tanh", "to", "tolist", "topk",
    "transpose", "tril", "triu", "trunc", "unsqueeze", "var", "view", "zero_grad",
    # list methods
    "append", "pop",
]

ATTRS = ["grad", "shape", "T", "mT", "ndim", "dtype", "device", "requires_grad", "is_leaf",
         "grad_fn", "data", "retains_grad", "version", "values", "indices"]

KWARGS = ["dim", "keepdim", "requires_grad", "dtype", "create_graph", "retain_graph", "p",
          "correction", "reduction", "inputs", "grad_outputs", "allow_unused", "lr", "min", "max",
          "descending", "largest", "k", "end", "sep", "weight", "ignore_index", "label_smoothing",
          "rounding_mode", "momentum", "out", "n", "x", "step", "start", "device", "size"]

PRELUDE = [
    "x = tensor([1.0, -2.0, 3.0], requires_grad=true)",
    "y = tensor([[0.5, -1.0, 2.0], [0.0, 4.0, -3.0]], requires_grad=true)",
    "z = tensor(2.0, requires_grad=true)",
    "w = randn([3, 3], requires_grad=true)",
    "a = arange(6).reshape([2, 3])",
    "b = tensor([true, false, true])",
    "l = [1, 2.5, x]",
    "s = \"text\"",
    "t = zeros([2, 3])",
    "g = (x * 2).sum()",
    "h = x.register_hook(hk)",
    "def f(u) { return (u ^ 2).sum() }",
    "i = 1",
    "c = y.T @ y",
]

# Statements a user writes, with {v} and {e} filled in (a variable, an expression): they reach
# the deeper machinery (hooks, retain_grad, views written in place, the functional API,
# optimizers, compile, the tools) far more often than random calls do.
IDIOMS = [
    "{v}.grad = none", "r = {v} * 2; r.retain_grad(); r.sum().backward(); r.grad",
    "q = {v}.detach().clone(); q[0] = {e}; q", "q = {v}.reshape([-1]); q[0] = {e}",
    "q = ({v} * 1.0).transpose(0, 1); q.mul_({e}); q.sum().backward()",
    "q = ({v} + 0).permute([1, 0]); q[0] = {e}",
    "q = {v} * 1; q += {e}; q.sum().backward()", "q = {v}.exp(); q.add_(1); q.sum().backward()",
    "hessian(f, {v})", "jacobian(hk, {v})", "jvp(hk, {v}, {e})", "vjp(f, {v})", "hvp(f, {v}, {e})",
    "vhp(f, {v}, {e})", "check(f, {v})", "gradcheck(f, {v})", "cf = compile(f); cf({v}); cf({e})",
    "opt = sgd([{v}], lr=0.1); ({v} ^ 2).sum().backward(); opt.step(); opt.zero_grad()",
    "opt = adam([{v}]); f({v}).backward(); opt.step()", "st = step(f({v})); st",
    "explain(f, {v})", "why({v})", "info({v})", "graph({v} * 2)", "anomaly(true); ({v} / 0).sum()",
    "trace(true); f({v}).backward(); trace(false); last_trace()",
    "{v}.register_hook(hk); f({v}).backward(); {v}.grad", "hh = {v}.register_hook(hk); hh.remove()",
    "gg = grad(f({v}), {v}, create_graph=true); grad(gg[0].sum(), {v})",
    "{v}.sum().backward(create_graph=true); {v}.grad.sum().backward()",
    "einsum(\"ij,j->i\", {v}, {e})", "stack([{v}, {e}])", "cat([{v}, {e}], dim=-1)",
    "topk({v}, 2).values", "sort({v}).indices", "max({v}, 0)", "where({v} > 0, {v}, {e})",
    "masked_fill({v}, {v} > 0, {e})", "gather({v}, 0, tensor([0]))", "scatter_add({v}, 0, tensor([0]), {e})",
    "index_put({v}, [tensor([0])], {e})", "cross_entropy({v}, tensor([0]))", "mse_loss({v}, {e})",
    "nll_loss({v}, tensor([1]))", "solve({v}, {e})", "det({v})", "inverse({v})",
    "print(f\"{{{v}:.3f}} {{{e}}}\")", "print({v}, {e}, end=none)", "format({v}, \".2e\")",
    "len({v}); {v}.tolist(); {v}.item()", "l.append({e}); l.pop(); l[0] = {e}",
    "{v}.requires_grad_(false); {v}.requires_grad = true",
    "no_grad {{ {v} -= 0.1 * {v}.grad }}", "{v}.size(0); {v}.size(); {v}.shape[0]",
    "linspace(0, 1, {e})", "full([2], {e})", "arange({e})", "eye({e})", "zeros_like({v}) + {e}",
    "seed(0); randn([2]) + rand([2])", "polygamma(1, {v})", "set_default_dtype(float32); ones([1])",
    # resource abuse: the session's step, time and memory limits stop these (a LimitError)
    "while true {{ {v} }}", "for k in range(10^12) {{ }}", "ss = \"ab\"; for k in range(40) {{ ss = ss + ss }}",
    "zeros([10^5, 10^5])", "ones([1]).expand([10^12]).sum()", "ll = [1]; while true {{ ll = ll + ll }}",
    "def rr(n) {{ return rr(n + 1) + rr(n + 2) }}; rr(0)", "nn = 2; while true {{ nn = nn * nn }}",
    "randn([10^4, 10^4]) @ randn([10^4, 10^4])",
]

HOOK = "def hk(u) { return u * 2 }"     # every program has it: a hook for register_hook

TENSORS = ["x", "y", "z", "w", "a", "b", "t", "c", "g", "x.grad", "y[0]", "x.detach()",
           "w.T", "y.reshape([3, 2])", "x[1:]", "y.permute([1, 0])", "zeros([0])", "tensor(nan)",
           "tensor([inf, -inf, 0.0])", "ones([2, 1])"]
_TYPED_KW = {"dim": ["0", "1", "-1", "[0, 1]", "none", "5"], "keepdim": ["true", "false"],
             "requires_grad": ["true", "false"], "dtype": ["float32", "int64", "bool", '"float64"'],
             "create_graph": ["true", "false"], "retain_graph": ["true"], "p": ["1", "2", "inf", "0", "-1"],
             "correction": ["0", "1", "2"], "reduction": ['"sum"', '"mean"', '"none"', '"max"'],
             "inputs": ["[x]", "x", "[x, y]"], "allow_unused": ["true"], "lr": ["0.1", "-1"],
             "k": ["1", "2", "0", "9"], "descending": ["true"], "min": ["0", "-1.0", "none"],
             "max": ["1", "0.5"], "rounding_mode": ['"floor"', '"trunc"', '"up"'],
             "grad_outputs": ["[ones([3])]", "ones([3])", "x"], "alpha": ["2", "0.5"],
             "diagonal": ["1", "-1"], "weight": ["ones([3])", "x"], "end": ['""', '"!"']}

_INTS = [-3, -2, -1, 0, 1, 2, 3, 4, 5, 10, 100]
_FLOATS = ["0.0", "1.0", "2.5", ".5", "1.", "1e-3", "2.5E+4", "1e308", "1e-320", "3.14159",
           "0.1", "1e400"]
_STRINGS = ['"a"', "'b'", '""', '"float32"', '"mean"', '"sum"', '"none"', '"cpu"', '"cuda"',
            '"floor"', '"trunc"', '"\\n\\t\\\\\\""', "'it\\'s'", '"ii"', '"ij,jk->ik"', '"i,i"']
_SPECS = ["", ":.3f", ":.2e", ":>8", ":04d", ":,", ":g", ":x", ":s", ":%", ":=^9"]
_BINOPS = ["+", "-", "*", "/", "//", "%", "@", "^", "==", "!=", "<", "<=", ">", ">=", "and", "or"]
_AUGOPS = ["+=", "-=", "*=", "/=", "%=", "//="]


class _Gen:
    """One program's drawing state: its depth budget and the names it has defined."""

    def __init__(self, draw, depth):
        self.draw = draw
        self.depth = depth
        self.funcs: list[str] = ["f", "hk"]     # callable names of the program's own functions
        self.loops = 0                  # loops open now (break/continue are valid inside)
        self.in_def = False
        self.counters = 0

    def pick(self, seq):
        return self.draw(st.sampled_from(seq))

    def chance(self, p) -> bool:
        return self.draw(st.floats(0, 1)) < p

    # -- expressions --------------------------------------------------------------------------
    def atom(self) -> str:
        kind = self.draw(st.integers(0, 11))
        if kind <= 3:
            return self.pick(VARS)
        if kind == 4:
            return str(self.pick(_INTS))
        if kind == 5:
            return self.pick(_FLOATS)
        if kind == 6:
            return self.pick(["true", "false", "none", "inf", "nan", "pi", "float32", "float64",
                              "int32", "int64", "bool"])
        if kind == 7:
            return self.pick(_STRINGS)
        if kind == 8:
            return self.fstring()
        if kind == 9:
            return self.list_literal()
        if kind == 10:
            return self.tensor_literal()
        return self.pick(self.funcs)

    def fstring(self) -> str:
        parts = []
        for _ in range(self.draw(st.integers(0, 2))):
            parts.append(self.pick(["x=", "{{", "}}", " ", "v"]))
            if self.depth > 0:
                inner = self.sub().expr().replace('"', "'")
                parts.append("{" + inner + self.pick(_SPECS) + "}")
        return 'f"' + "".join(parts) + '"'

    def list_literal(self) -> str:
        n = self.draw(st.integers(0, 3))
        items = [self.sub().expr() if self.depth > 0 else str(self.pick(_INTS)) for _ in range(n)]
        return "[" + ", ".join(items) + ("," if items and self.chance(0.1) else "") + "]"

    def tensor_literal(self) -> str:
        shape = self.pick([(), (1,), (3,), (2, 3), (2, 1), (0,), (3, 3), (1, 3)])
        vals = self.pick(["1.0", "-1.0", "0.0", "2.0", "0.5", "-0.0", "inf", "nan", "3", "true"])
        if not shape:
            body = vals
        elif len(shape) == 1:
            body = "[" + ", ".join(vals for _ in range(shape[0])) + "]"
        else:
            row = "[" + ", ".join(vals for _ in range(shape[1])) + "]"
            body = "[" + ", ".join(row for _ in range(shape[0])) + "]"
        rg = ", requires_grad=true" if self.chance(0.5) else ""
        return f"tensor({body}{rg})"

    def sub(self) -> _Gen:
        g = _Gen(self.draw, self.depth - 1)
        g.funcs, g.loops, g.in_def, g.counters = self.funcs, self.loops, self.in_def, self.counters
        return g

    def args(self) -> str:
        out = []
        for _ in range(self.draw(st.integers(0, 3))):
            out.append(self.sub().expr())
        for k in self.draw(st.lists(st.sampled_from(KWARGS), max_size=2, unique=True)):
            out.append(f"{k}={self.sub().expr()}")
        return ", ".join(out)

    def typed_args(self) -> list[str]:
        """Arguments an op may well accept: tensors, small dims, a shape, a fitting keyword."""
        out = [self.pick(TENSORS)]
        for _ in range(self.draw(st.integers(0, 2))):
            out.append(self.pick(TENSORS + ["0", "1", "-1", "2", "[2, 3]", "[3]", "0.5", "[0, 1]",
                                            "2.0", "true", "hk", "f"]))
        for k in self.draw(st.lists(st.sampled_from(list(_TYPED_KW)), max_size=2, unique=True)):
            out.append(f"{k}={self.pick(_TYPED_KW[k])}")
        return out

    def expr(self) -> str:
        if self.depth <= 0:
            return self.atom()
        kind = self.draw(st.integers(0, 16))
        s = self.sub()
        if kind <= 2:
            return self.atom()
        if kind in (14, 15):
            return f"{self.pick(BUILTINS)}({', '.join(s.typed_args())})"
        if kind == 16:
            first, *rest = s.typed_args()
            return f"{first}.{self.pick(METHODS)}({', '.join(rest)})"
        if kind == 3:
            return f"{s.expr()} {self.pick(_BINOPS)} {s.expr()}"
        if kind == 4:
            return f"{self.pick(['-', '+', 'not ', '- -'])}{s.expr()}"
        if kind == 5:
            return f"({s.expr()})"
        if kind in (6, 7, 8):
            return f"{self.pick(BUILTINS + self.funcs)}({s.args()})"
        if kind in (9, 10):
            return f"{s.postfix()}.{self.pick(METHODS)}({s.args()})"
        if kind == 11:
            return f"{s.postfix()}.{self.pick(ATTRS)}"
        return f"{s.postfix()}[{s.subscripts()}]"

    def postfix(self) -> str:
        """An expression that can stand before `.name`, `(...)` or `[...]` without brackets."""
        e = self.expr()
        if e.isidentifier() or e.endswith((")", "]")) and not any(c in e for c in " -+"):
            return e
        return f"({e})"

    def subscripts(self) -> str:
        parts = []
        for _ in range(self.draw(st.integers(1, 3))):
            kind = self.draw(st.integers(0, 5))
            if kind <= 2:
                parts.append(self.pick(["0", "1", "-1", "2", "5", "i"]) if kind else self.sub().expr())
            elif kind == 3:
                parts.append(":")
            elif kind == 4:
                lo, hi = self.pick(["", "0", "1", "-1"]), self.pick(["", "2", "-1", "10"])
                parts.append(f"{lo}:{hi}")
            else:
                parts.append(self.pick(["::2", "1::", ":2:", "::-1", "::0", "b", "[0, 1]", "none"]))
        return ", ".join(parts)

    # -- statements ---------------------------------------------------------------------------
    def block(self) -> str:
        n = self.draw(st.integers(0, 3))
        inner = [self.sub().stmt() for _ in range(n)]
        sep = self.pick(["\n", "; "])
        return "{" + ("\n" if sep == "\n" else " ") + sep.join(inner) + "\n}"

    def loop_block(self) -> str:
        self.loops += 1
        try:
            return self.block()
        finally:
            self.loops -= 1

    def stmt(self) -> str:
        if self.depth <= 0:
            return self.simple()
        kind = self.draw(st.integers(0, 19))
        if kind <= 9:
            return self.simple()
        if kind <= 11:
            body = self.block()
            tail = ""
            if self.chance(0.5):
                tail = " else " + (self.block() if self.chance(0.7) else self.sub().stmt_if())
            return f"if {self.sub().expr()} {body}{tail}"
        if kind == 12:
            return self.stmt_if()
        if kind <= 14:
            it = self.pick(["range(3)", "range(0)", "range(-1, 2)", "[1, x, s]", "x", "y", "l",
                            "s", "range(2, 0, -1)", "a", "b", "none", "3", "tensor(2.0)"])
            if self.chance(0.3):
                it = self.sub().expr()
            return f"for {self.pick(VARS)} in {it} {self.loop_block()}"
        if kind == 15:
            c = f"wc{self.counters}"
            self.counters += 1
            n = self.draw(st.integers(0, 3))
            body = self.loop_block()
            return f"{c} = 0\nwhile {c} < {n} {{ {c} += 1\n{body[1:]}"
        if kind == 16:
            return f"no_grad {self.block()}"
        if kind == 17 and not self.in_def:
            return self.funcdef()
        return self.simple()

    def stmt_if(self) -> str:
        return f"if {self.sub().expr()} {self.block()}"

    def funcdef(self) -> str:
        name = f"f{len(self.funcs)}"
        params = self.draw(st.lists(st.sampled_from(["u", "v", "k", "x"]), max_size=3, unique=True))
        if params and self.chance(0.3):
            params[-1] += f"={self.sub().expr()}"
        g = self.sub()
        g.in_def, g.loops = True, 0
        body = g.block()
        self.funcs = self.funcs + [name]        # after its body: a function only calls earlier ones
        return f"def {name}({', '.join(params)}) {body}"

    def simple(self) -> str:
        kind = self.draw(st.integers(0, 14))
        s = self.sub()
        if kind <= 3:
            return f"{self.pick(VARS)} = {s.expr()}"
        if kind == 4:
            return f"{self.pick(VARS)} {self.pick(_AUGOPS)} {s.expr()}"
        if kind == 5:
            return f"{self.pick(VARS)}[{s.subscripts()}] = {s.expr()}"
        if kind == 6:
            return f"{self.pick(VARS)}.{self.pick(['grad', 'requires_grad', 'data', 'shape'])} = {s.expr()}"
        if kind == 7:
            v = self.pick(VARS)
            return self.pick([f"{v}.backward()", f"{v}.sum().backward()",
                              f"{v}.sum().backward(create_graph=true)",
                              f"{v}.backward(retain_graph=true)", f"grad({v}.sum(), [x])",
                              f"grad({v}.sum(), x, create_graph=true)",
                              f"{v}.register_hook(f)", f"{v}.retain_grad()", "h.remove()",
                              f"{v}.requires_grad_(false)", f"print({v}, {v}.grad)"])
        if kind == 8 and self.in_def:
            return "return" + ("" if self.chance(0.2) else " " + s.expr())
        if kind == 9 and self.loops:
            return self.pick(["break", "continue"])
        if kind in (11, 12):
            e = s.expr() if self.chance(0.5) else self.pick(TENSORS)
            idiom = self.pick(IDIOMS)
            if 'f"' in idiom:
                e = e.replace('"', "'")     # a string inside an f-string's field takes the other quote
            return idiom.format(v=self.pick(TENSORS[:9]), e=e)
        if kind == 10 and self.chance(0.01):
            return self.pick(["return 1", "break", "continue"])    # outside a def or loop: an error
        return s.expr()


@st.composite
def programs(draw, max_depth: int = 3):
    """A well-formed program: a prelude of typical bindings, then random statements."""
    return "\n".join(draw(statements(max_depth))) + draw(st.sampled_from(["", "\n", "\n\n", " # end"]))


@st.composite
def statements(draw, max_depth: int = 3):
    """A program as its top-level statements: the prelude, then random ones."""
    g = _Gen(draw, draw(st.integers(1, max_depth)))
    return [HOOK] + PRELUDE + [g.stmt() for _ in range(draw(st.integers(1, 8)))]


_TOKENS = (["def", "for", "while", "if", "else", "in", "no_grad", "return", "break", "continue",
            "and", "or", "not", "true", "false", "none", "(", ")", "[", "]", "{", "}", ",", ".",
            ":", ";", "=", "\n", "\\\n", "#c\n", " ", "@", "^", "'", '"', 'f"', "f'", "{{", "}}",
            "\t", "\r\n", "\r", "\x00", "\u200b", "\u00e9", "\U0001f600", "$", "?", "!", "`",
            "..."] + _BINOPS + _AUGOPS + VARS + BUILTINS[:40] + METHODS[:20] + _FLOATS
           + [str(n) for n in _INTS] + _STRINGS + ["1" * 40, "9" * 400, "1e99999", "0x10", "1_000",
                                                  "f\"{", "f'{x:", "f\"{}\"", "f\"{x!r}\""])


@st.composite
def token_soup(draw):
    """Random tokens of the language (and a few that are not), joined by random spacing."""
    toks = draw(st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=30))
    seps = draw(st.lists(st.sampled_from(["", " ", "\n"]), min_size=len(toks), max_size=len(toks)))
    return "".join(t + s for t, s in zip(toks, seps))


@st.composite
def mutated(draw):
    """A valid program with a few random edits (most of them break it somewhere)."""
    text = draw(programs(max_depth=2))
    for _ in range(draw(st.integers(1, 3))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 8)))
        op = draw(st.integers(0, 5))
        if op == 0:
            text = text[:i] + text[j:]                                    # delete a span
        elif op == 1:
            text = text[:i] + draw(st.sampled_from(_TOKENS)) + text[i:]  # insert a token
        elif op == 2:
            text = text[:i] + draw(st.sampled_from(_TOKENS)) + text[j:]  # replace a span
        elif op == 3:
            text = text[:j] + text[i:j] + text[j:]                        # duplicate a span
        elif op == 4:
            text = text[:i]                                               # cut short
        else:
            text = text[:i] + draw(st.text(max_size=3)) + text[i:]       # any characters
    return text


def malformed():
    """Text that is mostly not a valid program (token soup or mutated programs)."""
    return st.one_of(token_soup(), mutated(), st.text(max_size=40))
