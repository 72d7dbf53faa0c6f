"""Triangular parts of matrices (the last two dims): tril, triu. The gradient is the same mask."""
from __future__ import annotations

from autodsl import backend
from autodsl.backend import namespace_of
from autodsl.core.words import shown
from autodsl.errors import ShapeError, TypeError_
from autodsl.ops.registry import Op, apply, defop

__all__ = ["tril", "triu"]


def _keep(a, diagonal, lower):
    """The mask of the entries kept, shape (rows, cols): col - row <= diagonal (lower) or >= (upper).
    Built from aranges and a where, as the Array API has no tril."""
    xp = namespace_of(a)
    rows, cols = a.shape[-2], a.shape[-1]
    offset = xp.arange(cols)[None, :] - xp.arange(rows)[:, None]
    return offset <= diagonal if lower else offset >= diagonal


class _Triangle(Op):
    lower = True

    def forward(self, a, diagonal=0):
        if a.ndim < 2:
            raise ShapeError(f"{self.op_name} needs a tensor with at least 2 dimensions (a matrix or a batch "
                             f"of them), not shape {tuple(a.shape)}; reshape it first, e.g. x.reshape(1, -1)")
        self.diagonal = diagonal
        return backend.where(_keep(a, diagonal, self.lower), a, backend.zero_of(a))

    rule = "grad with the same entries kept (the others 0)"

    def backward(self, g):
        return (apply(type(self), g, diagonal=self.diagonal),)


@defop("tril")
class Tril(_Triangle):
    """The lower triangle: entries with col - row <= diagonal, others 0."""
    lower = True


@defop("triu")
class Triu(_Triangle):
    """The upper triangle: entries with col - row >= diagonal, others 0."""
    lower = False


def _diagonal(name, diagonal):
    if isinstance(diagonal, bool) or not isinstance(diagonal, int):
        raise TypeError_(f"{name}: diagonal must be a whole number, not {shown(diagonal)}")
    return diagonal


def tril(input, diagonal=0):
    """The lower triangle of a matrix (or of each matrix in a batch: the last two dims), the rest
    0; ``diagonal=1`` keeps one more diagonal above, ``-1`` drops the main one. The gradient is
    the same triangle of grad. Example: ``tril(x)``, ``x.tril(diagonal=-1)``"""
    return apply(Tril, input, diagonal=_diagonal("tril", diagonal))


def triu(input, diagonal=0):
    """The upper triangle of a matrix (or of each matrix in a batch), the rest 0; ``diagonal``
    as for ``tril``. The gradient is the same triangle of grad. Example: ``triu(x, diagonal=1)``"""
    return apply(Triu, input, diagonal=_diagonal("triu", diagonal))
