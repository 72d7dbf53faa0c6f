"""autodsl: differentiable expressions, a dependency-counted reverse-mode engine,
a scripting language and a REPL.

Every built-in of the language is a function of this module with the same name
and keywords.
"""
# First, before any other autodsl import: AUTODSL_PURE_PYTHON=1 loads the .py modules
# even where compiled ones are installed (autodsl/_pure.py).
from autodsl import _pure  # noqa: F401, I001
from autodsl.core.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from autodsl.core.anomaly import anomaly, detect_anomaly
from autodsl.core.trace import last_trace, trace
from autodsl.backend import (DType, float32, float64, get_default_dtype, int32, int64, set_default_dtype)
from autodsl.backend import bool_ as bool  # noqa: A001  (the dtype, named as in PyTorch)
from autodsl.ops.creation import (arange, eye, full, linspace, ones, ones_like, rand, randn, seed, tensor,
                       zeros, zeros_like)
from autodsl.errors import (AutogradError, DeviceError, DSLError, DTypeError, IndexError_, NameError_,
                     LimitError, ParseError, RuntimeError_, ShapeError, TypeError_, ValueError_)
from autodsl.tools.functional import hessian, hvp, jacobian, jvp, vhp, vjp
from autodsl.tools.check import check, gradcheck, gradgradcheck
from autodsl.core.autograd import grad
from autodsl.core.replay import replay
from autodsl.tools.graph import dot, graph
from autodsl.tools.step import step
from autodsl.tools.explain import explain
from autodsl.tools.info import info
from autodsl.tools.why import why
from autodsl.tools.formatting import format  # noqa: A004  (Python's format(value, format_spec))
from autodsl.tools.compiled import compile  # noqa: A004  (torch.compile's name)
from autodsl.tools.optim import adam, sgd
from autodsl.tools.io import load, save
from autodsl.tools.compute import compute, persist
from autodsl.ops import REGISTRY
from autodsl.ops.compare import all, any, eq, ge, gt, le, logical_and, logical_not, logical_or, lt, ne  # noqa: A004
from autodsl.ops.elementwise import (abs, add, clamp, clone, cos, div, exp, log, maximum, minimum, mul,  # noqa: A004
                              neg, pow, relu, sigmoid, sign, sin, sqrt, sub, tan, tanh, where)
from autodsl.ops.linalg import matmul
from autodsl.tools.plot import plot
from autodsl.ops.loss import cross_entropy, mse_loss, nll_loss
from autodsl.ops.binary_loss import binary_cross_entropy, binary_cross_entropy_with_logits
from autodsl.ops.movement import (cat, expand, flatten, getitem, index_put, permute, reshape, squeeze,
                           stack, transpose, unsqueeze, view)
from autodsl.ops.reduce import (amax, amin, log_softmax, logsumexp, max, mean, min, norm, prod, softmax,  # noqa: A004
                         std, sum, var)
from autodsl.ops.einsum import einsum
from autodsl.ops.decomp import det, inverse, solve
from autodsl.ops.rounding import ceil, floor, floor_divide, remainder, round, trunc  # noqa: A004
from autodsl.ops.cumulative import cumprod, cumsum
from autodsl.ops.special import atan2, digamma, expm1, lgamma, log1p, logsigmoid, polygamma, softplus, square
from autodsl.ops.triangle import tril, triu
from autodsl.ops.gather import gather, index_select, masked_fill, scatter, scatter_add
from autodsl.ops.sorting import argmax, argmin, argsort, sort, topk
from autodsl.core.tensor import Tensor
from autodsl.session import Session
# The IPython extension (%load_ext autodsl): not in __all__, so not built-ins of the language.
from autodsl.cli.notebook import load_ipython_extension as load_ipython_extension
from autodsl.cli.notebook import notebook_session as notebook_session
from autodsl.cli.notebook import unload_ipython_extension as unload_ipython_extension


__version__ = "0.1.0"


__all__ = [
    # tensors and creation
    "Tensor", "tensor", "zeros", "ones", "full", "zeros_like", "ones_like", "rand", "randn",
    "arange", "linspace", "eye", "seed",
    # dtypes
    "DType", "float32", "float64", "int32", "int64", "bool", "get_default_dtype", "set_default_dtype",
    # elementwise
    "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh",
    "sigmoid", "relu", "abs", "sign", "clamp", "where", "maximum", "minimum", "clone",
    # comparisons
    "lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or", "logical_not", "any", "all",
    # reductions
    "sum", "mean", "prod", "max", "min", "amax", "amin", "norm", "var", "std", "logsumexp",
    "softmax", "log_softmax",
    # rounding and integer division
    "floor", "ceil", "trunc", "round", "remainder", "floor_divide",
    # more pointwise functions, running sums and products, triangles
    "atan2", "log1p", "expm1", "square", "softplus", "logsigmoid", "lgamma", "digamma", "polygamma",
    "cumsum", "cumprod", "tril", "triu",
    # shapes and indexing
    "reshape", "view", "transpose", "permute", "unsqueeze", "squeeze", "expand", "cat", "stack",
    "flatten", "getitem", "index_put",
    # gathers, scatters, masks and sorting
    "gather", "scatter", "scatter_add", "index_select", "masked_fill", "sort", "argsort", "topk",
    "argmax", "argmin",
    # linear algebra and losses
    "matmul", "einsum", "det", "inverse", "solve", "mse_loss", "nll_loss", "cross_entropy",
    "binary_cross_entropy", "binary_cross_entropy_with_logits",
    # autograd
    "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "jacobian", "hessian", "vjp", "jvp", "hvp", "vhp",
    # the recorded graph, evaluated again
    "replay",
    # checking a derivative
    "check", "gradcheck", "gradgradcheck",
    # a number as text (the f-strings' fields)
    "format",
    # seeing what happens
    "info", "trace", "last_trace", "graph", "dot", "plot", "step", "explain",
    # why a gradient is missing, zero or nan
    "why", "anomaly", "detect_anomaly",
    # the recorded graph as a program
    "compile",
    # optimizers
    "sgd", "adam",
    # data files
    "load", "save",
    # lazy devices (dask): values computed in one pass, parameters kept between steps
    "compute", "persist",
    # embedding
    "Session", "REGISTRY",
    # errors
    "DSLError", "ParseError", "NameError_", "ShapeError", "DTypeError", "DeviceError",
    "AutogradError", "ValueError_", "TypeError_", "IndexError_", "RuntimeError_", "LimitError",
]
