"""Matrix product with NumPy's (and PyTorch's) rules for 1-D and batched operands."""
from __future__ import annotations

from ..errors import ShapeError
from .registry import Op, apply, defop, sum_to

__all__ = ["matmul"]


@defop("matmul")
class Matmul(Op):
    """a @ b: dot product (1-D @ 1-D), matrix-vector, matrix-matrix, batched with broadcasting."""
    promote = True

    def forward(self, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise ShapeError("matmul needs tensors with at least one dim; use * for scalars")
        self.save_for_backward(*self.inputs)
        try:
            return a @ b
        except ValueError:
            k1 = a.shape[-1]
            k2 = b.shape[-2] if b.ndim > 1 else b.shape[0]
            raise ShapeError(f"matmul: shapes {a.shape} and {b.shape} do not fit: the last dim of "
                             f"the left ({k1}) must equal the {'first' if b.ndim == 1 else 'second-to-last'} "
                             f"dim of the right ({k2})") from None

    def backward(self, g):
        x, y = self.saved_tensors
        na, nb = self.needs_input_grad
        # Lift 1-D operands to matrices, use dA = G B^T and dB = A^T G, then drop the
        # lifted dims again; batch dims broadcast, so reduce them to each operand's shape.
        x2 = x.unsqueeze(0) if x.ndim == 1 else x
        y2 = y.unsqueeze(-1) if y.ndim == 1 else y
        g2 = g
        if x.ndim == 1 and y.ndim == 1:
            g2 = g2.reshape(1, 1)        # dot product: g is 0-d
        elif x.ndim == 1:
            g2 = g2.unsqueeze(-2)
        elif y.ndim == 1:
            g2 = g2.unsqueeze(-1)
        ga = gb = None
        if na:
            ga = sum_to(matmul(g2, y2.transpose(-1, -2)), x2.shape).reshape(x.shape)
        if nb:
            gb = sum_to(matmul(x2.transpose(-1, -2), g2), y2.shape).reshape(y.shape)
        return ga, gb


def matmul(input, other):
    """input @ other. Shapes: (n,)@(n,) -> (), (m,n)@(n,) -> (m,), (m,n)@(n,p) -> (m,p),
    and batched (..., m, n)@(..., n, p) with broadcast batch dims. Raises ShapeError when
    the inner sizes differ. Example: ``w @ x``
    """
    return apply(Matmul, input, other)
