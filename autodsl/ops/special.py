"""Special and smooth pointwise functions: atan2, log1p, expm1, square, softplus, logsigmoid,
lgamma, digamma, polygamma.

lgamma, digamma and polygamma come from ``scipy.special`` (``cupyx.scipy.special`` for CuPy
arrays) through ``backend.special``, which imports SciPy on first use so that importing autodsl
stays fast. ``# torch:`` marks a
convention chosen to match PyTorch.
"""
from __future__ import annotations

from autodsl import backend
from autodsl.backend import kind_of, namespace_of
from autodsl.core.words import shown
from autodsl.errors import TypeError_, ValueError_
from autodsl.ops.elementwise import sigmoid, where
from autodsl.ops.registry import Op, apply, apply1, apply2, defop, mark_pointwise

__all__ = ["atan2", "digamma", "expm1", "lgamma", "log1p", "logsigmoid", "polygamma", "softplus", "square"]

_xp = namespace_of


@defop("atan2")
class Atan2(Op):
    """The angle of the point (b, a) (a = y, b = x) in radians, in [-pi, pi], broadcasting."""
    __slots__ = ()
    promote = True
    floating = True

    def forward(self, a, b):
        self.save_for_backward(*self.inputs)
        return _xp(a).atan2(a, b)

    rule = ("grad * b / (a^2 + b^2)", "-grad * a / (a^2 + b^2)")

    def backward(self, g):
        y, x = self.saved_tensors
        d = y * y + x * x
        # torch: 0 at the origin for both inputs (and, as there, a nan second derivative)
        recip = where(d == 0, 0.0, 1 / d)
        na, nb = self.needs_input_grad
        return (g * x * recip if na else None), (g * -y * recip if nb else None)


@defop("log1p")
class Log1p(Op):
    """log(1 + a), accurate for small a."""
    __slots__ = ()
    array_function = "log1p"
    promote = True
    floating = True

    def forward(self, a):
        self.save_for_backward(self.inputs[0])
        return _xp(a).log1p(a)

    rule = ("grad / (1 + a)",)

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g / (x + 1),)          # torch: grad / (self + 1)


@defop("expm1")
class Expm1(Op):
    """e^a - 1, accurate for small a."""
    __slots__ = ()
    array_function = "expm1"
    promote = True
    floating = True
    save_output = True

    def forward(self, a):
        return _xp(a).expm1(a)

    rule = ("grad * (out + 1)",)

    def backward(self, g):
        (out,) = self.saved_tensors
        return (g * (out + 1),)        # torch: grad * (result + 1)


@defop("square")
class Square(Op):
    """a * a (integers stay integers, bools become int64)."""
    __slots__ = ()

    def forward(self, a):
        self.save_for_backward(self.inputs[0])
        if kind_of(a.dtype) == "b":          # torch: pow(bool, 2) is int64
            a = _xp(a).astype(a, _xp(a).int64)
        return a * a

    rule = ("grad * 2 * a",)

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * (2 * x),)          # torch: square is pow(x, 2): grad * (2 * x^1)


@defop("softplus")
class Softplus(Op):
    """log(1 + e^(beta a)) / beta, and a itself where beta a > threshold (PyTorch's linear region)."""
    promote = True
    floating = True

    def forward(self, a, beta=1.0, threshold=20.0):
        self.save_for_backward(self.inputs[0])
        self.beta, self.threshold = beta, threshold
        xp = _xp(a)
        ab = a * beta
        return xp.where(ab > threshold, a, xp.log1p(xp.exp(ab)) / beta)

    rule = "grad * sigmoid(beta * a), and grad itself where beta * a > threshold"

    def backward(self, g):
        (x,) = self.saved_tensors
        xb = x * self.beta
        # torch: z / (z + 1) with z = e^(beta x), which is sigmoid(beta x) (computed without overflow)
        return (where(xb > self.threshold, g, g * sigmoid(xb)),)


def log_sigmoid_array(a):
    """log(sigmoid(a)) of an array, as min(a, 0) - log(1 + e^-|a|): no overflow, no log(0)."""
    xp = _xp(a)
    return xp.minimum(a, backend.zero_of(a)) - xp.log1p(xp.exp(-xp.abs(a)))


@defop("logsigmoid")
class Logsigmoid(Op):
    """log(sigmoid(a)) = min(a, 0) - log(1 + e^-|a|): no overflow, no log(0)."""
    __slots__ = ()
    promote = True
    floating = True

    def forward(self, a):
        self.save_for_backward(self.inputs[0])
        return log_sigmoid_array(a)

    rule = ("grad * (1 - exp(out))",)

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * sigmoid(-x),)       # 1 - sigmoid(x), without the cancellation for large x


@defop("lgamma")
class Lgamma(Op):
    """log |Gamma(a)|."""
    __slots__ = ()
    promote = True
    floating = True

    def forward(self, a):
        self.save_for_backward(self.inputs[0])
        xp = _xp(a)
        out = backend.special("gammaln", a)
        return xp.where(a == -xp.inf, xp.abs(out), out)      # torch: lgamma(-inf) = +inf

    rule = "grad * digamma(a)"

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * digamma(x),)


@defop("digamma")
class Digamma(Op):
    """The digamma function: d/da log Gamma(a)."""
    __slots__ = ()
    promote = True
    floating = True

    def forward(self, a):
        self.save_for_backward(self.inputs[0])
        return backend.special("psi", a)          # torch and SciPy: -inf at +0, +inf at -0, nan at -1, -2, ...

    rule = "grad * polygamma(1, a)"

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * polygamma(1, x),)


@defop("polygamma")
class Polygamma(Op):
    """The n-th derivative of digamma, at a."""
    promote = True
    floating = True

    def forward(self, a, n):
        self.save_for_backward(self.inputs[0])
        self.n = n
        if n == 0:
            return backend.special("psi", a)
        return backend.special("polygamma", a, n)

    rule = "grad * polygamma(n + 1, a)"

    def backward(self, g):
        (x,) = self.saved_tensors
        return (g * polygamma(self.n + 1, x),)


# -- public functions ---------------------------------------------------------------------------

def atan2(input, other):
    """The angle of the point (x=other, y=input) in radians, in [-pi, pi] (broadcasting); signed
    zeros pick the side as in C: ``atan2(0, -1)`` is pi, ``atan2(-0.0, -1)`` is -pi. The gradient
    at the origin is 0 for both (PyTorch's choice). Example: ``atan2(y, x)``"""
    return apply2(Atan2, input, other)


def log1p(input):
    """log(1 + x), exact for small x (log1p(1e-20) is 1e-20); gradient 1 / (1 + x).
    Example: ``log1p(x)``"""
    return apply1(Log1p, input)


def expm1(input):
    """e^x - 1, exact for small x; gradient e^x. Example: ``expm1(x)``"""
    return apply1(Expm1, input)


def square(input):
    """x * x, elementwise (integer tensors stay integer); gradient 2x. Example: ``square(x)``"""
    return apply1(Square, input)


def softplus(input, beta=1, threshold=20):
    """log(1 + e^(beta x)) / beta, a smooth relu; where beta x > threshold it is x itself (and
    its gradient 1), as PyTorch. Gradient sigmoid(beta x). Example: ``softplus(x, beta=2)``"""
    for v, nm in ((beta, "beta"), (threshold, "threshold")):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError_(f"softplus: {nm} must be a number, not {shown(v)}")
    return apply(Softplus, input, beta=float(beta), threshold=float(threshold))


def logsigmoid(input):
    """log(sigmoid(x)), computed without overflow or log(0): logsigmoid(-1000) is -1000 and
    logsigmoid(1000) is -0. Gradient sigmoid(-x). Example: ``logsigmoid(x)``"""
    return apply1(Logsigmoid, input)


def lgamma(input):
    """log |Gamma(x)| (inf at 0, -1, -2, ...); gradient digamma(x). Example: ``lgamma(x)``"""
    return apply1(Lgamma, input)


def digamma(input):
    """The digamma function psi(x) = d/dx lgamma(x) (-inf at 0, nan at -1, -2, ..., as PyTorch);
    gradient polygamma(1, x). Example: ``digamma(x)``"""
    return apply1(Digamma, input)


def polygamma(n, input):
    """The n-th derivative of digamma at x (n = 0, 1, 2, ...: polygamma(0, x) is digamma(x));
    gradient polygamma(n + 1, x). Example: ``polygamma(1, x)``"""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError_(f"polygamma: n must be a whole number 0, 1, 2, ..., not {shown(n)}")
    if n < 0:
        raise ValueError_(f"polygamma: n must be 0 or more, not {n}")
    return apply(Polygamma, input, n=n)


# forwards that work element by element: a huge one runs in pieces (ops/chunked.py)
mark_pointwise(Atan2, Log1p, Expm1, Square, Softplus, Logsigmoid, Lgamma, Digamma, Polygamma)
