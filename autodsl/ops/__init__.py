"""Every differentiable operation, declared with its forward and backward in one place.

Importing this package registers all ops into ``REGISTRY`` and installs the
operator dunders and methods on ``Tensor``.
"""
from autodsl.ops.registry import REGISTRY, Op, apply, defop  # noqa: F401
from autodsl.ops import elementwise, reduce, movement, linalg, compare, loss, inplace  # noqa: F401,E401
from autodsl.ops import rounding  # noqa: F401
from autodsl.ops import cumulative, special, triangle  # noqa: F401,E401
from autodsl.ops import gather, sorting  # noqa: F401,E401
from autodsl.ops import einsum, decomp  # noqa: F401,E401
from autodsl.ops import dtype_methods  # noqa: F401  (x.float() x.double() x.int() x.long() x.bool())
from autodsl.ops import methods  # noqa: F401  (installs Tensor methods; must come last)
