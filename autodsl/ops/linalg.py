"""Matrix product with NumPy's (and PyTorch's) rules for 1-D and batched operands."""
from __future__ import annotations

from autodsl.errors import ShapeError
from autodsl.ops import chunked
from autodsl.ops.formula import define
from autodsl.ops.movement import sum_to  # noqa: F401  (the formulas' F.sum_to)
from autodsl.ops.registry import Op, apply2, defop

__all__ = ["matmul"]


@defop("matmul")
class Matmul(Op):
    """a @ b: dot product (1-D @ 1-D), matrix-vector, matrix-matrix, batched with broadcasting."""
    __slots__ = ()
    promote = True
    expr = "{0} @ {1}"          # (a compiled program checked the shapes when it was captured)

    def forward(self, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise ShapeError("matmul needs tensors with at least one dim; use * for scalars")
        if self._record:        # torch: b only for a's gradient, a only for b's
            x, y = self.inputs
            ea, eb = self.next_edges
            self.save_for_backward(x if eb is not None else None, y if ea is not None else None)
        try:
            return _product(a, b)
        except ValueError:
            k1 = a.shape[-1]
            k2 = b.shape[-2] if b.ndim > 1 else b.shape[0]
            raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} do not fit: the last dim of "
                             f"the left ({k1}) must equal the {'first' if b.ndim == 1 else 'second-to-last'} "
                             f"dim of the right ({k2})") from None

    rule = ("grad @ b^T", "a^T @ grad")

    def formula_exprs(self):
        xs, ys = self.input_shapes
        return ("{g} @ _mT({1})", "_mT({0}) @ {g}") if len(xs) == 2 and len(ys) == 2 else None

    def formula(self, F, g, x, y):     # x, y: None where that gradient is not needed
        xs, ys = self.input_shapes
        ea, eb = self.next_edges
        if len(xs) == 2 and len(ys) == 2:     # matrices: what the general case below comes to
            return (F.matmul(g, F.mT(y)) if ea is not None else None,
                    F.matmul(F.mT(x), g) if eb is not None else None)
        # Lift 1-D operands to matrices, use dA = G B^T and dB = A^T G, then drop the
        # lifted dims again; batch dims broadcast, so reduce them to each operand's shape.
        xs2 = (1,) + xs if len(xs) == 1 else xs
        ys2 = ys + (1,) if len(ys) == 1 else ys
        g2 = g
        gs = tuple(g.shape)
        if len(xs) == 1 and len(ys) == 1:
            g2 = F.reshape(g2, (1, 1))        # dot product: g is 0-d
        elif len(xs) == 1:
            g2 = F.reshape(g2, gs[:-1] + (1, gs[-1]))
        elif len(ys) == 1:
            g2 = F.reshape(g2, gs + (1,))
        ga = gb = None
        if ea is not None:
            ga = _as_shape(F, F.sum_to(F.matmul(g2, F.mT(_as_shape(F, y, ys2))), xs2), xs)
        if eb is not None:
            gb = _as_shape(F, F.sum_to(F.matmul(F.mT(_as_shape(F, x, xs2)), g2), ys2), ys)
        return ga, gb


def _as_shape(F, t, shape):
    # no reshape (a view) when the shape is already right: a gradient that is not a view
    # can become .grad without a copy (Note [stealing a gradient] in tensor.py)
    return t if tuple(t.shape) == shape else F.reshape(t, shape)


def matmul(input, other):
    """input @ other. Shapes: (n,)@(n,) -> (), (m,n)@(n,) -> (m,), (m,n)@(n,p) -> (m,p),
    and batched (..., m, n)@(..., n, p) with broadcast batch dims. Raises ShapeError when
    the inner sizes differ. Example: ``w @ x``
    """
    return apply2(Matmul, input, other)


def _product(a, b):
    """``a @ b`` of two arrays; a long one in tiles, so that an interrupt lands (ops/chunked.py).
    Two matrices of at most a sixteenth of a piece's multiply-adds are one call without asking
    chunked.matmul, which decides the same for them (most products of a network: a call less)."""
    if a.ndim == 2 and b.ndim == 2 and a.shape[0] * a.shape[1] * b.shape[1] <= chunked.MATMUL_PIECE // 16 \
            or a.size * b.size <= chunked.LARGE:
        return a @ b
    return chunked.matmul(a, b)


# the gradients' products too
define("matmul", _product, matmul)
