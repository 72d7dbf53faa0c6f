"""Square-matrix linear algebra: det, inverse, solve (torch.linalg's det, inv, solve), batched.

The arrays go through the Array API's linalg extension (NumPy, CuPy, array_api_strict all
have it). A singular matrix makes inverse and solve raise, as PyTorch's CPU kernels do; NumPy's
LU reports it (CuPy's does not: on "cuda" the result holds inf or nan instead, as checking
would cost a host sync per call). A matrix holding a nan gives nan, as in PyTorch.
"""
from __future__ import annotations

from autodsl import backend
from autodsl.backend import namespace_of
from autodsl.core.tensor import as_tensor
from autodsl.errors import RuntimeError_, ShapeError
from autodsl.ops import linalg, movement, reduce  # noqa: F401  (the formulas' F.matmul, F.mT, F.sum_keepdim)
from autodsl.ops.formula import define
from autodsl.ops.registry import Op, apply, defop

__all__ = ["det", "inverse", "solve"]


def _square(name: str, shape) -> None:
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ShapeError(f"{name} needs square matrices, shape (..., n, n), got {tuple(shape)}; "
                         "reshape the tensor or pick a square part of it")


def _singular(name: str):
    return RuntimeError_(f"{name}: the matrix is singular (not invertible, det(A) = 0); check it with "
                         "det(A), or make it invertible (for example A + 1e-6 * eye(n))")


def _linalg(name, fn, *arrays):
    try:
        return fn(*arrays)
    except ValueError as e:          # NumPy's LinAlgError is a ValueError
        if "ingular" not in str(e):
            raise
        a = arrays[0]
        xp = namespace_of(a)
        bad = xp.any(xp.isnan(a), axis=(-2, -1)) if backend.on_host(a) else None
        if bad is None or not xp.any(bad):
            raise _singular(name) from None
    # torch: a matrix holding a nan gives nan (LAPACK's LU called it singular); the others
    # as they are (a singular one among them still raises)
    return _nan_where(bad, _linalg(name, fn, _identity_where(bad, a), *arrays[1:]))


def _identity_where(bad, a):
    """``a`` with the matrices where ``bad`` (a's batch shape) replaced by the identity."""
    xp = namespace_of(a)
    return xp.where(bad[..., None, None], xp.eye(a.shape[-1], dtype=a.dtype), a)


def _nan_where(bad, out):
    """``out`` (one result per matrix of a's batch, batch dims first) with nan for the matrices
    where ``bad``."""
    xp = namespace_of(out)
    return xp.where(xp.reshape(bad, bad.shape + (1,) * (out.ndim - bad.ndim)),
                    xp.asarray(float("nan"), dtype=out.dtype), out)


def _lifted(shape):
    return tuple(shape) + (1, 1)


def _matrices(fn, core: int):
    """``fn`` on arrays of matrices, also on dask: there per block of whole matrices
    (``backend.per_matrix``: dask's linalg has no det, and no batches)."""
    def run(*arrays):
        if backend.is_lazy(arrays[0]):
            return backend.per_matrix(fn, arrays, core)
        return fn(*arrays)
    return run


# -- det ---------------------------------------------------------------------------------------------

def _cofactor_arrays(a):
    """The cofactor matrix det(A)·A^{-T}, also where A is singular: from A = U·diag(s)·Vh it is
    det(U)·det(Vh)·U·diag(prod_{j != i} s_j)·Vh, as PyTorch's det backward computes it for a
    singular matrix (no division by a singular value)."""
    xp = namespace_of(a)
    n = a.shape[-1]
    if a.size == 0 or n == 0:
        return xp.zeros(a.shape, dtype=a.dtype)
    if backend.is_lazy(a):
        return backend.per_matrix(_cofactor_arrays, (a,), 2)
    try:
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
    except ValueError:      # NumPy's LinAlgError ("SVD did not converge": a nan or inf in a matrix)
        # those matrices' cofactors are nan (torch's gradient there is nan too); the others' as usual
        bad = ~xp.all(xp.isfinite(a), axis=(-2, -1))
        return _nan_where(bad, _cofactor_arrays(_identity_where(bad, a)))
    eye = xp.eye(n, dtype=xp.bool)
    others = xp.prod(xp.where(eye, xp.ones((), dtype=a.dtype), s[..., None, :]), axis=-1)
    sign = xp.linalg.det(u) * xp.linalg.det(vh)
    return (u * (others * sign[..., None])[..., None, :]) @ vh


@defop("cofactor", node_name="CofactorBackward", public=False)
class Cofactor(Op):
    """det(A)·A^{-T}, the gradient of det (from an SVD, so also for singular A)."""

    def forward(self, a):
        self.save_for_backward(self.inputs[0])
        return _cofactor_arrays(a)

    rule = "grad of det(A)·inverse(A)^T: det·(sum(grad·A^-T)·A^-T - A^-T·grad^T·A^-T)"

    def formula(self, F, g, a):
        # C = d·A^{-T}: dC = d·tr(A^{-1}dA)·A^{-T} - d·A^{-T}·dA^T·A^{-T} (Giles 2008, "Collected
        # matrix derivative results"), so the gradient is d·(<G, A^{-T}>·A^{-T} - A^{-T}·G^T·A^{-T})
        # (needs A invertible: a second derivative at a singular A raises, as inverse does)
        it = F.mT(F.inverse(a))
        d = F.reshape(F.det(a), _lifted(self.input_shapes[0][:-2]))
        c = F.sum_keepdim(g * it, (-2, -1))
        return (d * (c * it - F.matmul(F.matmul(it, F.mT(g)), it)),)


@defop("det", node_name="LinalgDetBackward")
class Det(Op):
    """The determinant of each square matrix (..., n, n) -> (...)."""
    floating = True

    def forward(self, a):
        _square("det", a.shape)
        self.save_for_backward(self.inputs[0])
        return _det(a)

    rule = "grad * det(A) * inverse(A)^T (the cofactor matrix, also for a singular A)"

    def formula(self, F, g, a):      # d det(A) = det(A)·tr(A^{-1} dA) (Jacobi's formula)
        return (F.reshape(g, _lifted(self.input_shapes[0][:-2])) * F.cofactor(a),)


def det(input):
    """The determinant of a square matrix, or of each in a batch: shape (..., n, n) -> (...),
    as torch.linalg.det (a 0x0 matrix has det 1). Floating result; an integer matrix is
    converted to the default float dtype. Gradient: det(A)·A^{-T}, the cofactor matrix, from an
    SVD so that it is right for a singular A too (PyTorch computes it so with create_graph; its
    plain backward gives 0 where an LU pivot is exactly 0); the second derivative needs A
    invertible. Raises ShapeError for a non-square input. Example: ``det(A)``
    """
    return apply(Det, input)


# -- inverse -----------------------------------------------------------------------------------------

@defop("inverse", node_name="LinalgInvExBackward")
class Inverse(Op):
    """The inverse of each square matrix (..., n, n)."""
    floating = True
    save_output = True

    def forward(self, a):
        _square("inverse", a.shape)
        return _linalg("inverse", _inv, a)

    rule = "-inverse(A)^T @ grad @ inverse(A)^T"

    def formula(self, F, g, inv):     # d(A^{-1}) = -A^{-1}·dA·A^{-1}
        it = F.mT(inv)
        return (-F.matmul(F.matmul(it, g), it),)


def inverse(input):
    """The inverse of a square matrix, or of each in a batch (..., n, n), as torch.linalg.inv.
    Raises RuntimeError_ for a singular matrix (on the CPU) and ShapeError for a non-square one.
    Gradient: -A^{-T}·grad·A^{-T}. Example: ``inverse(A) @ b``
    """
    return apply(Inverse, input)


# -- solve ---------------------------------------------------------------------------------------------

def _vector_case(a_shape, b_shape) -> bool:
    # torch.linalg.solve: B is a (batch of) vector(s) when it is 1-D or has A's shape without its last dim
    return len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and tuple(b_shape) == tuple(a_shape[:-1]))


def _solve_arrays(a, b):
    if _vector_case(a.shape, b.shape):
        return _linalg("solve", _solve, a, b[..., None])[..., 0]
    return _linalg("solve", _solve, a, b)


@defop("solve", node_name="LinalgSolveExBackward")
class Solve(Op):
    """X with A @ X = B, for square A (..., n, n) and B (..., n, k) or a vector (..., n)."""
    promote = True
    floating = True
    save_output = True

    def forward(self, a, b):
        _square("solve", a.shape)
        n = a.shape[-1]
        vec = _vector_case(a.shape, b.shape)
        if (b.shape[-1] if vec else (b.shape[-2] if b.ndim >= 2 else -1)) != n:
            raise ShapeError(f"solve: A of shape {tuple(a.shape)} needs B of shape (..., {n}) or (..., {n}, k), "
                             f"got {tuple(b.shape)}")
        self.vec = vec
        self.save_for_backward(self.inputs[0])
        return _solve_arrays(a, b)

    rule = "B's grad: solve(A^T, grad); A's: -solve(A^T, grad) @ X^T, X the output"

    def formula(self, F, g, a, x):      # X = A^{-1}B: dX = A^{-1}(dB - dA·X)
        gb = F.solve(F.mT(a), g)
        ga = None
        if self.next_edges[0] is not None:
            if self.vec:        # an outer product per vector
                ga = -F.matmul(F.reshape(gb, tuple(gb.shape) + (1,)), F.reshape(x, tuple(x.shape[:-1]) + (1, x.shape[-1])))
            else:
                ga = -F.matmul(gb, F.mT(x))
        return ga, (gb if self.next_edges[1] is not None else None)


def solve(A, B):
    """The solution X of A @ X = B, as torch.linalg.solve: A square (..., n, n); B a vector
    (n,) or a batch of them (..., n) shaped as A without its last dim, or matrices (..., n, k);
    batch dims broadcast. Raises RuntimeError_ for a singular A (on the CPU) and ShapeError when
    the shapes do not fit. Gradients: solve(A^T, grad) for B and -solve(A^T, grad) @ X^T for A.
    Example: ``x = solve(A, b)``
    """
    a, b = as_tensor(A), as_tensor(B)
    if b.ndim == 0:
        raise ShapeError("solve needs B as a vector (..., n) or matrices (..., n, k), got a scalar")
    return apply(Solve, a, b)


def _det_tensors(t):
    return apply(Det, t)


def _det_nan(a):
    """The determinants; nan for a matrix holding a nan, as torch's (LAPACK's LU can pivot
    around it and give a number)."""
    xp = namespace_of(a)
    d = xp.linalg.det(a)
    if a.size and backend.on_host(a):
        bad = xp.any(xp.isnan(a), axis=(-2, -1))
        if xp.any(bad):
            d = _nan_where(bad, d)
    return d


_det = _matrices(_det_nan, 0)
_inv = _matrices(lambda a: namespace_of(a).linalg.inv(a), 2)
_solve = _matrices(lambda a, b: namespace_of(a).linalg.solve(a, b), 2)

define("det", _det, _det_tensors)
define("cofactor", _cofactor_arrays, lambda t: apply(Cofactor, t))
define("inverse", lambda a: _linalg("inverse", _inv, a), inverse)
define("solve", _solve_arrays, solve)
