"""Elementwise ops: arithmetic, powers, exponentials, trig, activations, selection.

Each backward is written with autodsl ops. ``# torch:`` marks a subgradient
or an edge-case convention chosen to match PyTorch.
"""
from __future__ import annotations


import autodsl.backend as backend
from autodsl.backend import floats
from autodsl.backend import kind_of, namespace_of
from autodsl.errors import DTypeError, ValueError_
from autodsl.core.tensor import Tensor
from autodsl.core.node import SavedTensor, saved_constant
from autodsl.ops.formula import TENSORS, define
from autodsl.ops.registry import Op, apply, apply1, apply2, defop, mark_pointwise
from autodsl.ops.promotion import constant_value
from autodsl.core import deferred
from autodsl.errors import TypeError_
from autodsl.core.tensor import as_tensor
from autodsl.core.words import kind
from autodsl.ops.rounding import rounded_div
from autodsl.ops.compare import logical_and, logical_or

_f64_array = backend.f64_scalar_array
_ndarray = backend.HOST_ARRAY      # (the 0-d lane's bare constants are host arrays)
_f64_sin, _f64_cos = floats.sin, floats.cos

# The ops every network and chain uses state their derivative once, as a ``formula`` that runs
# on arrays without create_graph and on Tensors with it (Note [one formula], ops/formula.py).
# The others write ``backward(self, g)`` with autodsl's ops.

__all__ = ["add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "sin", "cos", "tan",
           "tanh", "sigmoid", "relu", "abs", "sign", "clamp", "where", "maximum", "minimum", "clone"]


@defop("add")
class Add(Op):
    """a + b, broadcasting."""
    __slots__ = ()
    expr = "{0} + {1}"
    promote = True
    def forward(self, a, b):
        try:
            return a + b
        except TypeError:               # torch: bool + bool is "or"; the standard has no bool +
            if kind_of(a.dtype) == "b" and kind_of(b.dtype) == "b":
                return _xp(a).logical_or(a, b)
            raise

    def forward_f64(self, x, y):        # Note [0-d fast path] (ops/registry.py)
        return _f64_array(x + y)

    rule = ("grad", "grad")
    passes_gradient = True

    def formula(self, F, g):
        return g, g


@defop("sub")
class Sub(Op):
    """a - b, broadcasting."""
    __slots__ = ()
    expr = "{0} - {1}"
    promote = True
    def forward(self, a, b):
        return a - b        # (bool operands are refused by sub(), as torch refuses them)

    def forward_f64(self, x, y):        # Note [0-d fast path] (ops/registry.py)
        return _f64_array(x - y)

    rule = ("grad", "-grad")

    formula_expr = ('{g}', '-{g}')

    def formula(self, F, g):
        return g, (-g if self.next_edges[1] is not None else None)


@defop("mul")
class Mul(Op):
    """a * b, broadcasting."""
    __slots__ = ()
    expr = "{0} * {1}"
    promote = True
    def forward(self, a, b):
        if self._record:
            self._save_inputs()
        try:
            return a * b
        except TypeError:               # torch: bool * bool is "and"; the standard has no bool *
            if kind_of(a.dtype) == "b" and kind_of(b.dtype) == "b":
                return _xp(a).logical_and(a, b)
            raise

    def forward_f64(self, x, y):        # Note [0-d fast path] (ops/registry.py)
        if self._record:
            self._save_inputs()
        return _f64_array(x * y)

    def _save_inputs(self) -> None:
        """torch: keep y only for x's gradient and x only for y's. In the 0-d lane a float's
        y is its bare array (Note [bare constants], core/node.py)."""
        x, y = self.inputs
        ea, eb = self.next_edges
        self._saved = (None if eb is None else SavedTensor(x), None if ea is None else
                       saved_constant(y) if type(y) is _ndarray else SavedTensor(y))

    rule = ("grad * b", "grad * a")

    formula_expr = ('{g} * {1}', '{g} * {0}')

    def formula(self, F, g, x, y):      # d(xy) = y dx + x dy
        return (g * y if y is not None else None), (g * x if x is not None else None)


@defop("div")
class Div(Op):
    """a / b (true division), broadcasting; IEEE results at b = 0."""
    __slots__ = ()
    expr = "{0} / {1}"
    promote = True
    floating = True
    def forward(self, a, b):
        if self._record:        # y is needed for both gradients, x only for y's
            x, y = self.inputs
            self.save_for_backward(x if self.needs_input_grad[1] else None, y)
        return a / b

    rule = ("grad / b", "-grad * a / b^2")

    formula_expr = ('{g} / {1}', '-{g} * ({0} / {1} / {1})')

    def formula(self, F, g, x, y):     # d(x/y)/dy = -x/y^2
        # torch (div_tensor_other_backward): -grad * ((x / y) / y), which neither overflows nor
        # underflows in y*y where the result is finite (1e300 / 1e200: 1e-100, not x / inf = 0)
        ea, eb = self.next_edges
        return (g / y if ea is not None else None), (-g * (x / y / y) if eb is not None else None)


@defop("neg")
class Neg(Op):
    """-a."""
    __slots__ = ()
    def forward(self, a):
        if kind_of(a.dtype) == "b":
            raise DTypeError("cannot negate a bool tensor; use logical_not(x) to flip true and false")
        return -a

    rule = ("-grad",)

    formula_expr = ('-{g}',)

    def formula(self, F, g):
        return (-g,)


@defop("pow")
class Pow(Op):
    """a ^ b elementwise (a tensor or number exponent)."""
    promote = True
    save_output = True

    def forward(self, a, b):
        x, y = self.inputs
        self.save_for_backward(x, y)
        if self._record and not self.needs_input_grad[1]:
            self.save_output = False       # x^c: the output is needed only for the exponent's gradient
        host = backend.on_host(b)
        if kind_of(a.dtype) == "b" and kind_of(b.dtype) == "b":    # torch refuses it too
            raise DTypeError("a bool tensor to a bool power; convert one of them first (.to(dtype=int64))")
        if kind_of(a.dtype) in "iub" and kind_of(b.dtype) in "iub" and (not host or _xp(b).any(b < 0)):
            return _int_power(_xp(a), a, b)
        if b.ndim == 0 and kind_of(a.dtype) == "f":
            # (off the host only a number's exponent is known without reading it: x ^ 2, not x ^ y)
            special = _POWERS.get(float(b) if host else constant_value(b))
            if special is not None:
                return special(_xp(a), a)
        return a ** b

    rule = ("grad * b * a^(b-1)", "grad * out * log(a)")

    def backward(self, g):
        x, y, *rest = self.saved_tensors
        out = rest[0] if rest else None
        na, nb = self.needs_input_grad
        ga = gb = None
        if na:
            # d/dx x^y = y·x^(y-1), computed as a power (never through log|x|), so that
            # negative bases with integer exponents work.  torch: 0 where y == 0 (x^0 is
            # the constant 1, also at x = 0, where the formula would give 0·0^-1 = NaN).
            yd = y._data
            host = backend.on_host(yd)
            c = (float(yd) if host else constant_value(yd)) if yd.ndim == 0 else None
            if not nb and c is not None:
                # torch's pow_backward for a number exponent: zeros_like(self) for x^0 (a constant:
                # no history, so no NaN from 0^-1 in a second derivative), else grad·(y·x^(y-1))
                if c == 0:
                    return _zeros_like(g), None
                return g * (y * x ** (y - 1)), None
            ga = g * (y * x ** (y - 1))
            # torch's pow_backward_self: where(y == 0, 0, ...); off the host without the test
            # (a host sync): the where is taken whether or not some y is 0
            if not host or _xp(yd).any(yd == 0):
                ga = where(y == 0, 0.0, ga)
        if nb:
            # d/dy x^y = x^y·log x.  torch (pow_backward_exponent): grad * where(x == 0 & y >= 0, 0,
            # result * log(x)): 0 at the limit, NaN for x < 0, and grad multiplies outside the where
            gb = g * where((x == 0) & (y >= 0), 0.0, out * log(x))
        return ga, gb


def _int_power(xp, a, b):
    """torch's integer ``a ** b`` where an exponent may be negative (a tensor's: a negative
    number exponent is refused by ``pow``): 1 for a base of 1, 1 or -1 for -1 (by the
    exponent's parity), 0 for any other base, as integer division would give."""
    neg = b < 0
    out = a ** xp.where(neg, xp.zeros((), dtype=b.dtype), b)
    odd = (b % 2) != 0
    at_neg = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0))
    return xp.where(neg, xp.astype(at_neg, out.dtype), out)


def _negative_int_power():
    raise ValueError_("integers to negative integer powers are not allowed (the result is not "
                      "an integer); use a floating base, e.g. tensor(..., dtype=float64)")


# torch's pow of a floating tensor by a number computes these exponents without pow (its CPU
# kernel, pow_tensor_scalar_optimized): the same arithmetic gives torch's bits, and its signs at
# -0.0 (sqrt(-0.0) = -0.0, 1/sqrt(-0.0) = -inf, where pow gives +0.0 and +inf)
_POWERS = {
    2.0: lambda xp, a: a * a,
    3.0: lambda xp, a: a * a * a,
    0.5: lambda xp, a: xp.sqrt(a),
    -0.5: lambda xp, a: 1 / xp.sqrt(a),
    -1.0: lambda xp, a: 1 / a,
    -2.0: lambda xp, a: 1 / (a * a),
}


@defop("exp")
class Exp(Op):
    """e^a."""
    __slots__ = ()
    array_function = "exp"
    promote = True
    floating = True
    save_output = True

    def forward(self, a):
        return _xp(a).exp(a)

    rule = ("grad * out",)

    formula_expr = ('{g} * {0}',)

    def formula(self, F, g, out):       # d e^x = e^x
        return (g * out,)


@defop("log")
class Log(Op):
    """Natural logarithm (log 0 = -inf, log of a negative number = nan)."""
    __slots__ = ()
    array_function = "log"
    promote = True
    floating = True
    def forward(self, a):
        self.save_for_backward(self.inputs[0])
        return _xp(a).log(a)

    rule = ("grad / a",)

    def formula(self, F, g, x):
        return (g / x,)


@defop("sqrt")
class Sqrt(Op):
    """Square root."""
    __slots__ = ()
    array_function = "sqrt"
    promote = True
    floating = True
    save_output = True

    def forward(self, a):
        return _xp(a).sqrt(a)

    rule = ("grad / (2 * out)",)

    def formula(self, F, g, out):      # torch: +inf at 0, like x^0.5
        return (g / (2 * out),)


@defop("sin")
class Sin(Op):
    """Sine (radians)."""
    __slots__ = ()
    array_function = "sin"
    promote = True
    floating = True
    def forward(self, a):
        self.save_for_backward(self.inputs[0])
        return _xp(a).sin(a)

    if floats.LIBM_TRIG:
        def forward_f64(self, x):       # Note [0-d fast path] (ops/registry.py)
            if self._record:            # (save_for_backward's work for one tensor, without its calls)
                self._saved = SavedTensor(self.inputs[0])     # (bare: Note [node memory])
            return _f64_array(_f64_sin(x))

    rule = ("grad * cos(a)",)

    def formula(self, F, g, x):
        return (g * F.cos(x),)


@defop("cos")
class Cos(Op):
    """Cosine (radians)."""
    __slots__ = ()
    array_function = "cos"
    promote = True
    floating = True
    def forward(self, a):
        self.save_for_backward(self.inputs[0])
        return _xp(a).cos(a)

    if floats.LIBM_TRIG:
        def forward_f64(self, x):       # Note [0-d fast path] (ops/registry.py)
            if self._record:            # (save_for_backward's work for one tensor, without its calls)
                self._saved = SavedTensor(self.inputs[0])     # (bare: Note [node memory])
            return _f64_array(_f64_cos(x))

    rule = ("-grad * sin(a)",)

    def formula(self, F, g, x):
        return (-g * F.sin(x),)


@defop("tan")
class Tan(Op):
    """Tangent (radians)."""
    __slots__ = ()
    array_function = "tan"
    promote = True
    floating = True
    save_output = True

    def forward(self, a):
        return _xp(a).tan(a)

    rule = ("grad * (1 + out^2)",)

    def backward(self, g):
        (out,) = self.saved_tensors
        return (g * (1 + out * out),)   # d tan x = 1 + tan^2 x


@defop("tanh")
class Tanh(Op):
    """Hyperbolic tangent; saturates to ±1 with gradient 0, never nan."""
    __slots__ = ()
    array_function = "tanh"
    promote = True
    floating = True
    save_output = True

    def forward(self, a):
        return _xp(a).tanh(a)

    rule = ("grad * (1 - out^2)",)

    formula_expr = ('{g} * (1 - {0} * {0})',)

    def formula(self, F, g, out):      # d tanh x = 1 - tanh^2 x
        return (g * (1 - out * out),)


@defop("sigmoid")
class Sigmoid(Op):
    """Logistic function 1 / (1 + e^-a), computed without overflow."""
    __slots__ = ()
    promote = True
    floating = True
    save_output = True

    def forward(self, a):
        xp = _xp(a)
        e = xp.exp(-xp.abs(a))           # in (0, 1]: never overflows
        return xp.where(a >= 0, 1 / (1 + e), e / (1 + e))

    rule = ("grad * out * (1 - out)",)

    def formula(self, F, g, out):      # s' = s(1-s): 0 at saturation, never inf/inf
        return (g * out * (1 - out),)


@defop("relu")
class Relu(Op):
    """max(a, 0.0)."""
    __slots__ = ()
    save_output = True

    def forward(self, a):
        if kind_of(a.dtype) == "b":         # torch refuses it too
            raise DTypeError("relu of a bool tensor; convert it first (.to(dtype=float64))")
        return _xp(a).maximum(a, backend.zero_of(a))     # a zero of a's dtype

    def forward_f64(self, x):           # Note [0-d fast path] (ops/registry.py): np.maximum's
        return _f64_array(x if x > 0.0 or x != x else 0.0)     # +0.0 for -0.0, a nan as it came

    @classmethod
    def specialize(cls, arrays, params):
        maximum, zero = _xp(arrays[0]).maximum, backend.zero_of(arrays[0])
        return lambda a: maximum(a, zero)

    rule = ("where(a <= 0, 0, grad)",)

    def formula(self, F, g, out):       # torch: relu'(0) = 0, and relu'(nan) = 1 (nan <= 0 is false)
        return (F.threshold_backward(g, out),)


@defop("threshold_backward", public=False)
class ThresholdBackward(Op):
    """0 where x <= 0, else g: relu's backward as one op, as PyTorch's threshold_backward
    (a comparison and a where would be three ops per relu in every backward)."""
    __slots__ = ()

    def forward(self, g, x):
        if self._record:
            self.save_for_backward(None, self.inputs[1] if self.needs_input_grad[0] else None)
        return _zero_where_not_positive(g, x)

    rule = ("where(b <= 0, 0, grad)", "0")

    def backward(self, gg):
        # torch (derivatives.yaml, threshold_backward): grad_output: threshold_backward(grad, self,
        # threshold), linear in g: the same mask again; self: zeros_like(grad): the mask is flat
        # almost everywhere, so relu's second derivative is exact zeros (at 0 too), not an error
        _, x = self.saved_tensors
        return (threshold_backward(gg, x) if x is not None else None,
                _zeros_like(gg) if self.needs_input_grad[1] else None)


def _zero_where_not_positive(g, x):
    """The arrays' ``where(x <= 0, +0, g)``: relu's gradient, for the op and the array formula.
    torch's threshold_backward tests ``x <= threshold``, so a nan x passes g on."""
    return backend.where(x <= 0, backend.zero_of(g), g)


def _zeros_like(g):
    """Zeros of g's shape, dtype and device, outside the graph: torch's ``zeros_like(grad)`` in
    a derivative, exactly 0 even where g is inf or nan (``g * 0`` would give nan there)."""
    return Tensor(_xp(g._data).zeros_like(g._data), _device=g.device)


def threshold_backward(g, x):
    """``where(x <= 0, 0, g)`` for tensors ``g`` and ``x`` of one shape (relu's gradient)."""
    return apply(ThresholdBackward, g, x)


@defop("abs")
class Abs(Op):
    """|a|."""
    __slots__ = ()
    def forward(self, a):
        if kind_of(a.dtype) == "b":         # torch refuses it too
            raise DTypeError("abs of a bool tensor; convert it first (.to(dtype=int64))")
        self.save_for_backward(self.inputs[0])
        return _xp(a).abs(a)

    rule = ("grad * sign(a)",)

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * sign(x),)   # torch: grad * sgn(self): abs'(0) = sign(0) = 0, abs'(nan) = sign(nan) = 0


@defop("sign")
class Sign(Op):
    """-1, 0 or 1 by the sign of a (0 for nan, as torch); its gradient is 0 everywhere."""
    __slots__ = ()
    def forward(self, a):
        xp = _xp(a)
        if kind_of(a.dtype) == "b":     # torch: sign of a bool tensor is itself (NumPy has no loop)
            return xp.asarray(a, copy=True)
        out = xp.sign(a)
        if kind_of(a.dtype) == "f":     # torch: sign(nan) = 0, (0 < a) - (a < 0); NumPy gives nan
            out = backend.where(xp.isnan(out), backend.zero_of(out), out)
        return out

    rule = ("0",)

    def backward(self, g):
        return (_zeros_like(g),)        # torch: zeros_like(grad), exactly 0 for an inf or nan grad


@defop("clamp")
class Clamp(Op):
    """Limit a to [min, max] (either may be none)."""
    def forward(self, a, min=None, max=None):
        self.save_for_backward(self.inputs[0])
        self.lo, self.hi = min, max
        xp = _xp(a)
        out = a
        if min is not None:
            out = xp.maximum(out, xp.asarray(min, dtype=a.dtype))
        if max is not None:
            out = xp.minimum(out, xp.asarray(max, dtype=a.dtype))
        return out if out is not a else xp.asarray(a, copy=True)

    rule = ("grad * (min <= a <= max)",)

    def backward(self, g):
        (x,) = self.saved_tensors
        inside = None
        if self.lo is not None:
            inside = x >= self.lo           # torch: the gradient passes at the bounds themselves
        if self.hi is not None:
            m = x <= self.hi
            inside = m if inside is None else inside & m
        return (g if inside is None else where(inside, g, 0.0),)


@defop("clamp_min", public=False)
class ClampMin(Op):
    """max(a, lo) for a tensor bound lo."""
    __slots__ = ()
    promote = True

    def forward(self, a, lo):
        self.save_for_backward(*self.inputs)
        return _xp(a).maximum(a, lo)

    rule = ("grad * (a >= b)", "grad * (a < b)")

    def backward(self, g):
        x, lo = self.saved_tensors
        # torch (clamp_min.Tensor): self: where(self >= min, grad, 0), min: where(self < min, grad, 0):
        # x keeps the gradient at x == lo, and neither gets it where x or lo is nan
        na, nb = self.needs_input_grad
        return (where(x >= lo, g, 0.0) if na else None), (where(x < lo, g, 0.0) if nb else None)


@defop("clamp_max", public=False)
class ClampMax(Op):
    """min(a, hi) for a tensor bound hi."""
    __slots__ = ()
    promote = True

    def forward(self, a, hi):
        self.save_for_backward(*self.inputs)
        return _xp(a).minimum(a, hi)

    rule = ("grad * (a <= b)", "grad * (a > b)")

    def backward(self, g):
        x, hi = self.saved_tensors
        # torch (clamp_max.Tensor): self: where(self <= max, grad, 0), max: where(self > max, grad, 0)
        na, nb = self.needs_input_grad
        return (where(x <= hi, g, 0.0) if na else None), (where(x > hi, g, 0.0) if nb else None)


@defop("clamp_tensor", public=False)
class ClampTensor(Op):
    """min(max(a, lo), hi) for tensor bounds lo and hi (nan where any of the three is)."""
    __slots__ = ()
    promote = True

    def forward(self, a, lo, hi):
        self.save_for_backward(*self.inputs)
        xp = _xp(a)
        return xp.minimum(xp.maximum(a, lo), hi)

    rule = ("grad * (lo <= a <= hi)", "grad * (a < lo < hi)", "where(a > hi, grad, where(hi < lo, grad, 0))")
    rule_inputs = ("a", "lo", "hi")

    def backward(self, g):
        # torch (derivatives.yaml, clamp.Tensor: clamp_backward, clamp_backward_min_max): lo gets
        # the gradient only where lo < hi, so where a < lo == hi no input gets it; hi gets it
        # where a > hi or hi < lo (then the result is hi), a nan lo included
        x, lo, hi = self.saved_tensors
        na, nl, nh = self.needs_input_grad
        return ((where(logical_and(x >= lo, x <= hi), g, 0.0) if na else None),
                (where(logical_and(x < lo, lo < hi), g, 0.0) if nl else None),
                (where(logical_or(x > hi, hi < lo), g, 0.0) if nh else None))


@defop("where")
class Where(Op):
    """Pick a where cond is true, b elsewhere (selects; never blends, so nan in the
    branch not taken does not leak)."""
    __slots__ = ()
    promote = (1, 2)
    differentiable = (1, 2)

    def forward(self, c, a, b):
        self.save_for_backward(self.inputs[0])
        return backend.where(c, a, b)         # c is bool: where() checks it

    rule = (None, "grad * cond", "grad * !cond")
    rule_inputs = ("cond", "a", "b")

    def backward(self, g):
        (c,) = self.saved_tensors
        _, na, nb = self.needs_input_grad
        return None, (where(c, g, 0.0) if na else None), (where(c, 0.0, g) if nb else None)


@defop("maximum")
class Maximum(Op):
    """Elementwise larger of a and b."""
    __slots__ = ()
    promote = True
    def forward(self, a, b):
        self.save_for_backward(*self.inputs)
        return _xp(a).maximum(a, b)

    rule = ("where(a < b, 0, grad) - grad/2 * (a == b)", "where(a > b, 0, grad) - grad/2 * (a == b)")

    def backward(self, g):
        return _max_min_grads(self, g, lambda x, y: x < y)


def _max_min_grads(node, g, loses):
    """maximum's and minimum's gradients by torch's formula (derivatives.yaml, maximum: ``self:
    at::where(self == other, grad / 2, grad).masked_fill_(self < other, 0)``, other alike): ties
    split the gradient in half, and where an operand is nan (so is the result) both get all of it."""
    x, y = node.saved_tensors
    na, nb = node.needs_input_grad
    both = where(x == y, g * 0.5, g)
    return (where(loses(x, y), 0.0, both) if na else None), (where(loses(y, x), 0.0, both) if nb else None)


@defop("minimum")
class Minimum(Op):
    """Elementwise smaller of a and b."""
    __slots__ = ()
    promote = True
    def forward(self, a, b):
        self.save_for_backward(*self.inputs)
        return _xp(a).minimum(a, b)

    rule = ("where(a > b, 0, grad) - grad/2 * (a == b)", "where(a < b, 0, grad) - grad/2 * (a == b)")

    def backward(self, g):
        return _max_min_grads(self, g, lambda x, y: x > y)


@defop("clone")
class Clone(Op):
    """A copy with its own storage (still in the graph)."""
    __slots__ = ()
    def forward(self, a):
        return _xp(a).asarray(a, copy=True)    # torch: the clone keeps the memory layout (NumPy: order K)

    rule = ("grad",)

    def backward(self, g):
        return (g,)


_xp = namespace_of


# -- public functions ---------------------------------------------------------------------------

def add(input, other):
    """input + other (broadcasting). Shapes: any two broadcastable shapes.

    Example: ``add(x, 1)``
    """
    return apply2(Add, input, other)


def sub(input, other):
    """input - other (broadcasting). Raises DTypeError when either is a bool tensor or true/false,
    as torch does (to flip a mask, logical_not). Example: ``sub(x, y)``"""
    a, b = _is_bool(input), _is_bool(other)
    if a and b:
        raise DTypeError("cannot subtract two bool tensors; use logical_xor(a, b) for 'one but "
                         "not both', or convert them first with .to(int64)")
    if a or b:
        raise DTypeError("cannot subtract with a bool tensor or true/false; to flip a mask use "
                         "logical_not(x), or convert the bool tensor first (.to(dtype=int64))")
    return apply2(Sub, input, other)


def _is_bool(v) -> bool:
    """``v`` is true/false or a bool tensor (the operands torch refuses to subtract)."""
    if isinstance(v, Tensor):
        d = v._data.dtype
        # (by kind: an unpickled array's bool dtype is not NumPy's shared object)
        return d.kind == "b" if type(v._data) is _ndarray else kind_of(d) == "b"
    return isinstance(v, backend.HOST_BOOL)


def mul(input, other):
    """input * other (broadcasting). Example: ``mul(x, 2)``"""
    return apply2(Mul, input, other)


def div(input, other, rounding_mode=None):
    """input / other (true division, broadcasting; x/0 gives ±inf or nan as IEEE says).
    ``rounding_mode="trunc"`` rounds the quotient toward zero, ``"floor"`` down (as ``//``);
    those keep integer dtypes, have a zero gradient, and raise ValueError_ for an integer
    division by zero, as PyTorch.

    Example: ``div(x, y)``, ``div(x, 3, rounding_mode="floor")``
    """
    if rounding_mode is None:
        return apply2(Div, input, other)
    return rounded_div(input, other, rounding_mode)


def neg(input):
    """-input. Example: ``neg(x)``"""
    return apply1(Neg, input)


def pow(input, exponent):
    """input ^ exponent elementwise; gradients as PyTorch: 0 for x^0 (even at x=0),
    n·x^(n-1) at negative x for integer n, +inf for x^0.5 at 0.

    An integer tensor to a negative number power raises ValueError_, as torch; to a tensor
    exponent with negative entries it gives torch's integers (1 for a base of 1, ±1 for -1,
    else 0).

    Example: ``pow(x, 3)`` (the same as ``x^3``)
    """
    if isinstance(exponent, backend.HOST_INT) and not isinstance(exponent, backend.HOST_BOOL) and exponent < 0 \
            and isinstance(input, Tensor) and not input.dtype.is_floating:
        _negative_int_power()
    return apply(Pow, input, exponent)


def exp(input):
    """e^input. Example: ``exp(x)``"""
    return apply1(Exp, input)


def log(input):
    """Natural log; log(0) = -inf and log(x<0) = nan, as NumPy and PyTorch. Example: ``log(x)``"""
    return apply1(Log, input)


def sqrt(input):
    """Square root; its gradient at 0 is +inf. Example: ``sqrt(x)``"""
    return apply1(Sqrt, input)


def sin(input):
    """Sine of input in radians. Example: ``sin(x)``"""
    return apply1(Sin, input)


def cos(input):
    """Cosine of input in radians. Example: ``cos(x)``"""
    return apply1(Cos, input)


def tan(input):
    """Tangent of input in radians. Example: ``tan(x)``"""
    return apply1(Tan, input)


def tanh(input):
    """Hyperbolic tangent; gradient 1 - tanh², exactly 0 when saturated. Example: ``tanh(x)``"""
    return apply1(Tanh, input)


def sigmoid(input):
    """1 / (1 + e^-x), overflow-free; gradient s(1-s). Example: ``sigmoid(x)``"""
    return apply1(Sigmoid, input)


def relu(input):
    """max(x, 0.0); its gradient at 0 is 0 (PyTorch's choice). Example: ``relu(x)``"""
    return apply1(Relu, input)


def abs(input):
    """|x|; its gradient at 0 is 0 (sign(0)). Example: ``abs(x)``"""
    return apply1(Abs, input)


def sign(input):
    """-1, 0 or 1 by sign; gradient 0. Example: ``sign(x)``"""
    return apply1(Sign, input)


def clamp(input, min=None, max=None):
    """Limit input to [min, max] (numbers or tensors that broadcast with input; either may be
    none). The gradient is 1 inside the interval and at its bounds, 0 outside (PyTorch's
    convention); tensor bounds get theirs as torch's clamp.Tensor gives them (lo where input <
    lo < hi, hi where input > hi or hi < lo). Raises TypeError_ for neither bound, or a bound
    that is no number or tensor; ValueError_ for an integer bound outside an integer input's range.

    Example: ``clamp(x, min=0, max=1)``, ``clamp(x, lo, hi)``
    """
    if min is None and max is None:
        raise TypeError_("clamp needs at least one of min= and max=")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        if min is None:
            return apply(ClampMax, input, max)
        if max is None:
            return apply(ClampMin, input, min)
        # one op, as torch's clamp.Tensor: its gradients at lo == hi are not the two ops' in turn
        # (a number beside a tensor bound, which torch refuses, is a constant tensor bound)
        return apply(ClampTensor, input, min, max)
    for v, nm in ((min, "min"), (max, "max")):
        if v is not None and not isinstance(v, (int, float)):
            raise TypeError_(f"clamp: {nm} must be a number or a tensor, not {kind(v)}")
    if any(isinstance(v, float) for v in (min, max)):
        t = as_tensor(input)
        if not t.dtype.is_floating:     # torch: a float bound makes the result floating (1.5, inf, nan)
            input = t.to(dtype=backend.get_default_dtype())
    else:
        t = as_tensor(input)
        if t.dtype is backend.bool_ and any(isinstance(v, int) and not isinstance(v, bool) for v in (min, max)):
            t = input = t.to(dtype=backend.int64)      # torch: an integer bound makes a bool tensor int64
        for v, nm in ((min, "min"), (max, "max")):      # integer bounds of an integer tensor
            if v is not None and not backend.value_fits(v, t._data.dtype, namespace_of(t._data)):
                raise ValueError_(f"clamp: {nm}={v} does not fit in {t.dtype.name}, the tensor's dtype; "
                                  "give a bound inside its range, or convert the tensor first (x.to(float64))")
    return apply(Clamp, input, min=min, max=max)


def where(condition, input, other):
    """Elementwise select: input where condition is true, other elsewhere (broadcasting).
    condition is a bool tensor (e.g. ``x > 0``) and gets no gradient.

    Example: ``where(x > 0, log(x), x * 2)``
    """
    if not isinstance(condition, Tensor):
        condition = as_tensor(condition)
    if condition.dtype is not backend.bool_:
        raise DTypeError(f"where needs a bool condition (e.g. x > 0), not a {condition.dtype.name} tensor; "
                         "compare it first, e.g. where(c != 0, a, b)")
    return apply(Where, condition, input, other)


def maximum(input, other):
    """Elementwise maximum; at ties each side gets half the gradient. Example: ``maximum(x, y)``"""
    return apply2(Maximum, input, other)


def minimum(input, other):
    """Elementwise minimum; at ties each side gets half the gradient. Example: ``minimum(x, y)``"""
    return apply2(Minimum, input, other)


def clone(input):
    """A copy with its own storage; gradients flow through it. Example: ``y = x.clone()``"""
    return apply1(Clone, input)


# What formulas call as F.<name> when they record (create_graph): Note [one formula].
TENSORS.sin = sin
TENSORS.cos = cos
TENSORS.threshold_backward = threshold_backward
define("exp", lambda a: _xp(a).exp(a), exp)
# where(mask, a, 0) with the mask an array (a node's fact, not a recorded input)
define("where_zero", lambda c, a: backend.where(c, a, backend.zero_of(a)),
       lambda c, a: where(Tensor(c) if not isinstance(c, Tensor) else c, a, 0.0))

# forwards that work element by element: a huge one runs in pieces (ops/chunked.py)
mark_pointwise(Add, Sub, Mul, Div, Neg, Pow, Exp, Log, Sqrt, Sin, Cos, Tan, Tanh, Sigmoid, Relu,
               ThresholdBackward, Abs, Sign, Clamp, ClampMin, ClampMax, Where, Maximum, Minimum, Clone)
