"""Issue 12, breaks 9 and 12: PyTorch's answers at nan, infinity and zero, and on empty tensors.

Each case is checked two ways: against the value PyTorch's formula (tools/autograd/derivatives.yaml)
gives, written out here, and against torch itself in float32 and float64, for the forward value, the
first derivative with and without create_graph, and the second derivative (create_graph), where
"no history" (a first derivative that is a constant, as torch's zeros_like) must agree too.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import autodsl as ad
from autodsl.errors import AutogradError, DSLError

nan, inf = math.nan, math.inf


def _t(values, dtype="float64", requires_grad=True):
    return ad.tensor(values, dtype=dtype, requires_grad=requires_grad)


def _np(t):
    return np.asarray(t.numpy())


def _same(actual, expected):
    np.testing.assert_array_equal(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float))


# -- the formulas, value by value (no torch needed) -----------------------------------------------

def test_relu_passes_the_gradient_at_nan_and_not_at_zero():
    # torch: relu's backward is threshold_backward(grad, result, 0) = where(result <= 0, 0, grad):
    # nan <= 0 is false, so a nan input gets the gradient; 0 gets none
    x = _t([nan, 0.0, -0.0, -1.0, 2.0, inf, -inf])
    ad.relu(x).sum().backward()
    _same(_np(x.grad), [1, 0, 0, 0, 1, 1, 0])


def test_relu_gradient_at_nan_in_a_tensor_of_one_element():
    x = _t(nan)      # the 0-d path of the array formula
    ad.relu(x).backward()
    assert float(x.grad) == 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_second_derivative_is_zeros_not_an_error(dtype):
    # torch: threshold_backward's derivative for `self` is zeros_like(grad)
    x = _t([0.0, -1.0, 2.0, nan], dtype)
    (g,) = ad.grad(ad.relu(x).sum(), x, create_graph=True)
    assert g.requires_grad
    (gg,) = ad.grad(g.sum(), x)
    _same(_np(gg), [0, 0, 0, 0])
    (g2,) = ad.grad((ad.relu(x) * x).sum(), x, create_graph=True)   # relu(x) + x relu'(x)
    (gg2,) = ad.grad(g2.sum(), x)
    _same(_np(gg2), [0, 0, 2, 2])


def test_maximum_minimum_with_a_nan_operand_give_both_the_gradient():
    # torch: maximum's self gets where(self == other, grad/2, grad).masked_fill_(self < other, 0);
    # with a nan neither comparison holds, so both operands get all of it
    for f, win_a in ((ad.maximum, [1, 1, 1, 0.5, 1, 0]), (ad.minimum, [1, 1, 1, 0.5, 0, 1])):
        a = _t([nan, 1.0, nan, 2.0, 3.0, -1.0])
        b = _t([1.0, nan, nan, 2.0, 1.0, 5.0])
        f(a, b).sum().backward()
        _same(_np(a.grad), win_a)
        _same(_np(b.grad), [1, 1, 1, 0.5] + [1 - v for v in win_a[4:]])


def test_sign_of_nan_is_zero_and_its_gradient_is_exactly_zero():
    x = _t([nan, -2.0, 0.0, 3.0])
    _same(_np(ad.sign(x)), [0, -1, 0, 1])       # torch: (0 < x) - (x < 0)
    # torch: sign's derivative is zeros_like(grad): 0 even where the incoming gradient is inf/nan
    (g,) = ad.grad(ad.sign(x), x, grad_outputs=ad.tensor([inf, nan, -inf, 1.0], dtype="float64"))
    _same(_np(g), [0, 0, 0, 0])
    (g,) = ad.grad(ad.sign(x), x, grad_outputs=ad.tensor([inf, nan, -inf, 1.0], dtype="float64"),
                   create_graph=True)
    _same(_np(g), [0, 0, 0, 0])


def test_abs_at_nan_and_zero_and_its_second_derivative():
    # torch: abs' = grad * sgn(x): 0 at 0 and at nan; the second derivative is 0
    x = _t([nan, 0.0, -2.0, 3.0])
    (g,) = ad.grad(ad.abs(x).sum(), x, create_graph=True)
    _same(_np(g), [0, 0, -1, 1])
    (gg,) = ad.grad(g.sum(), x, allow_unused=True)
    assert gg is None or not np.any(_np(gg))


def test_softmax_with_a_plus_inf_logit_is_nan_like_torch():
    # torch's kernel shifts by the max as it is: inf - inf = nan for the whole slice
    x = _t([1.0, inf, 2.0])
    assert np.all(np.isnan(_np(ad.softmax(x, 0))))
    assert np.all(np.isnan(_np(ad.log_softmax(x, 0))))
    y = _t([[1.0, inf], [0.5, -inf]])
    s = _np(ad.softmax(y, 1))
    assert np.all(np.isnan(s[0])) and s[1].tolist() == [1.0, 0.0]
    ls = _np(ad.log_softmax(y, 1))
    assert np.all(np.isnan(ls[0])) and ls[1].tolist() == [0.0, -inf]
    assert float(ad.logsumexp(x, 0)) == inf          # logsumexp masks an infinite max: inf


def test_x_to_the_zero_has_a_constant_gradient():
    # torch's pow_backward for a number exponent: zeros_like(self) when it is 0 (no history),
    # so a second derivative has no 0^-1 = inf times 0 in it
    x = _t([0.0, 1.0, -2.0])
    (g,) = ad.grad((x ** 0).sum(), x, create_graph=True)
    _same(_np(g), [0, 0, 0])
    assert not g.requires_grad
    (g,) = ad.grad((x ** 0 + x ** 2).sum(), x, create_graph=True)
    (gg,) = ad.grad(g.sum(), x)
    _same(_np(gg), [2, 2, 2])


def test_pow_exponent_gradient_multiplies_the_grad_outside_the_mask():
    # torch's pow_backward_exponent: grad * where(x == 0 & y >= 0, 0, x^y log x): an inf grad at
    # the masked point gives nan, as inf * 0
    x = ad.tensor([0.0, 2.0], dtype="float64")
    y = _t([1.0, 2.0])
    (gy,) = ad.grad(x ** y, y, grad_outputs=ad.tensor([inf, 1.0], dtype="float64"))
    assert math.isnan(float(gy[0])) and float(gy[1]) == pytest.approx(4 * math.log(2))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_std_with_no_spread_has_zero_first_and_second_derivatives(dtype):
    # torch's std_backward: (grad / (2 std)).masked_fill_(std == 0, 0), then var_backward
    x = _t([2.0, 2.0, 2.0], dtype)
    (g,) = ad.grad(ad.std(x), x, create_graph=True)
    _same(_np(g), [0, 0, 0])
    (gg,) = ad.grad(g.sum(), x)
    _same(_np(gg), [0, 0, 0])
    y = _t([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]], dtype)
    (g,) = ad.grad(ad.std(y, dim=1).sum(), y, create_graph=True)
    (gg,) = ad.grad(g.sum(), y)
    assert np.all(_np(gg)[0] == 0)


def test_var_with_no_degrees_of_freedom():
    # torch's var_backward over the whole tensor with n - correction <= 0: grad * (nan where
    # x == mean, else inf), a constant; over a dim 2/0 is inf, so inf * (x - mean) = nan
    x = _t([2.0])
    v = ad.var(x)
    assert math.isnan(float(v))
    (g,) = ad.grad(v, x, create_graph=True)
    assert math.isnan(float(g[0])) and not g.requires_grad
    assert math.isnan(float(ad.var(_t([2.0]), correction=2)))     # dof clamped at 0: 0/0, not -0.0
    y = _t([[2.0, 1.0]])
    (g,) = ad.grad(ad.var(y, dim=0).sum(), y)
    assert np.all(np.isnan(_np(g)))


def test_amax_of_a_slice_with_nan_gives_nan_and_max_of_all_picks_the_nans():
    # torch: amax/amin use scale_grad_by_count, (grad / count) * (x == out): nan == nan is false,
    # so 0/0; max()/min() of everything use evenly_distribute_backward: the nan elements share it
    x = _t([[nan, 1.0], [2.0, 3.0]])
    ad.amax(x, dim=1).sum().backward()
    g = _np(x.grad)
    assert np.all(np.isnan(g[0])) and g[1].tolist() == [0.0, 1.0]
    for f in (ad.max, ad.min):
        x = _t([1.0, nan, nan, 3.0])
        f(x).backward()
        _same(_np(x.grad), [0, 0.5, 0.5, 0])
    x = _t([2.0, 1.0, 2.0])
    (g,) = ad.grad(ad.max(x), x, grad_outputs=ad.tensor(inf, dtype="float64"))
    _same(_np(g), [inf, 0, inf])          # a fill: 0 where x is not the max, even for an inf grad


def test_inf_norm_with_a_nan_element_has_a_zero_gradient():
    # torch (linalg_vector_norm_backward, inf): mask = |x| == norm or isnan(|x|), then
    # sgn(x) * (grad / count) * mask: the nan element holds the gradient and its sgn is 0
    x = _t([1.0, nan, 3.0])
    ad.norm(x, p=inf).backward()
    _same(_np(x.grad), [0, 0, 0])
    x = _t([1.0, -3.0, 3.0])
    ad.norm(x, p=inf).backward()
    _same(_np(x.grad), [0, -0.5, 0.5])
    with pytest.raises(DSLError):
        ad.norm(ad.zeros([0]), p=inf)


def test_a_write_into_a_norm_is_caught_as_in_torch():
    # torch's vector norms keep their result for backward (LinalgVectorNormBackward0), p = 1 too
    for p in (1, 2, 3, inf):
        x = _t([1.0, -2.0])
        y = ad.norm(x, p=p)
        y.add_(x.sum())
        with pytest.raises(AutogradError, match="modified in place"):
            y.backward()


def test_p_norm_second_derivative_at_the_zero_vector_is_zero():
    # torch: x|x|^(p-2) * (grad / norm^(p-1)).masked_fill_(norm == 0, 0)
    x = _t([0.0, 0.0])
    (g,) = ad.grad(ad.norm(x, p=3), x, create_graph=True)
    (gg,) = ad.grad(g.sum(), x)
    _same(_np(g), [0, 0])
    _same(_np(gg), [0, 0])


def test_the_divisor_gradient_does_not_overflow_in_y_squared():
    # torch (div_tensor_other_backward): -grad * ((x / y) / y): 1e300 / 1e200 has the gradient
    # -1e-100 for y, where -grad * x / (y * y) would give x / inf = 0
    x = ad.tensor(1e300, dtype="float64")
    y = _t(1e200)
    (gy,) = ad.grad(x / y, y)
    assert float(gy) == pytest.approx(-1e-100)


def test_clamp_with_tensor_bounds_and_nan():
    # torch (clamp_min.Tensor): self: where(x >= min, grad, 0), min: where(x < min, grad, 0)
    x = _t([nan, 0.0, -1.0, 1.0, 0.0])
    lo = _t([0.0, 0.0, 0.0, 0.0, nan])
    ad.clamp(x, min=lo).sum().backward()
    _same(_np(x.grad), [0, 1, 0, 1, 0])
    _same(_np(lo.grad), [0, 0, 1, 0, 0])
    x = _t([nan, 0.0, -1.0, 1.0, 0.0])
    hi = _t([0.0, 0.0, 0.0, 0.0, nan])
    ad.clamp(x, max=hi).sum().backward()
    _same(_np(x.grad), [0, 1, 1, 0, 0])
    _same(_np(hi.grad), [0, 0, 0, 1, 0])


def test_clamp_with_number_bounds_passes_the_gradient_at_the_bounds_but_not_at_nan():
    x = _t([0.0, 1.0, 0.5, -1.0, 2.0, nan])
    ad.clamp(x, min=0.0, max=1.0).sum().backward()
    _same(_np(x.grad), [1, 1, 1, 0, 0, 0])


# -- empty tensors (break 9) ---------------------------------------------------------------------

@pytest.mark.parametrize("shape", [[0], [0, 3], [3, 0]])
def test_std_and_var_of_an_empty_tensor_are_nan_without_a_warning(shape):
    x = ad.zeros(shape, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no NumPy "Mean of empty slice"
        for f in (ad.std, ad.var):
            y = f(x)
            assert math.isnan(float(y))
            (g,) = ad.grad(y, x)
            assert g.shape == x.shape
        assert math.isnan(float(ad.std(ad.zeros(shape), correction=0)))


def test_reductions_of_empty_tensors():
    e = ad.zeros([0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(float(ad.mean(e)))
        assert float(ad.prod(e)) == 1.0 and float(ad.norm(e)) == 0.0 and float(ad.sum(e)) == 0.0
        assert float(ad.logsumexp(e, 0)) == -inf
        assert tuple(ad.softmax(e, 0).shape) == (0,) and tuple(ad.log_softmax(e, 0).shape) == (0,)
        e2 = ad.zeros([0, 3], requires_grad=True)
        _same(_np(ad.logsumexp(e2, 0)), [-inf] * 3)
        _same(_np(ad.std(e2, dim=0)), [nan] * 3)
        assert tuple(ad.std(e2, dim=1).shape) == (0,) and tuple(ad.amax(e2, dim=1).shape) == (0,)
        for f in (ad.max, ad.min, ad.amax):
            with pytest.raises(DSLError):
                f(e)
            with pytest.raises(DSLError):
                f(e2, dim=0)


# -- against torch itself, float32 and float64, first and second order ---------------------------

def _run(lib, fn, arrays, dtype):
    """fn's value, first derivatives (without and with create_graph) and second derivatives."""
    import torch
    if lib == "torch":
        xs = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in arrays]
        grad, mod = torch.autograd.grad, torch

        def host(t):
            try:
                return t.detach().numpy().astype(float)
            except RuntimeError:                  # torch's ZeroTensor: zeros
                return np.zeros(tuple(t.shape))
    else:
        xs = [ad.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
        grad, mod = ad.grad, ad

        def host(t):
            return np.asarray(t.numpy(), dtype=float)
    out = {}
    y = fn(mod, *xs)
    out["value"] = host(y)
    g0 = grad(y.sum(), xs, allow_unused=True, retain_graph=True)
    out["grad"] = [None if g is None else host(g) for g in g0]
    g1 = grad(y.sum(), xs, allow_unused=True, create_graph=True)
    out["grad, create_graph"] = [None if g is None else host(g) for g in g1]
    live = [g for g in g1 if g is not None and g.requires_grad]
    if live:
        total = live[0].sum()
        for g in live[1:]:
            total = total + g.sum()
        out["second"] = [None if g is None else host(g) for g in grad(total, xs, allow_unused=True)]
    else:
        out["second"] = "no history"
    return out


def _agree(a, b, dtype):
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if isinstance(a, list):
        return len(a) == len(b) and all(_agree(u, v, dtype) for u, v in zip(a, b))
    if a is None or b is None:                 # no gradient and a zero gradient agree
        other = a if b is None else b
        return other is None or not np.any(other)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True)


V = [nan, inf, -inf, 0.0, -0.0, 1.5, -2.0]
W3 = [1.0, 2.0, 3.0]
CASES = {
    "relu": (lambda m, x: m.relu(x), [V]),
    "relu(x) * x": (lambda m, x: m.relu(x) * x, [V]),
    "relu(x^2 - 1) * x": (lambda m, x: m.relu(x * x - 1.0) * x, [V]),
    "abs": (lambda m, x: m.abs(x), [V]),
    "abs(x)^3": (lambda m, x: m.abs(x) ** 3, [V]),
    "sign": (lambda m, x: m.sign(x), [V]),
    "sign(x) * exp(1000 x)": (lambda m, x: m.sign(x) * m.exp(x * 1000.0), [[0.0, -1.0, 2.0, nan, inf]]),
    "sqrt": (lambda m, x: m.sqrt(x), [[0.0, 1.0, nan, inf, -1.0]]),
    "sqrt(x) * x": (lambda m, x: m.sqrt(x) * x, [[0.0, 1.0, nan, inf]]),
    "maximum": (lambda m, x, y: m.maximum(x, y), [[nan, 1.0, 1.0, nan, 2.0, 0.0, inf],
                                                  [1.0, nan, 1.0, nan, 1.0, 0.0, inf]]),
    "minimum": (lambda m, x, y: m.minimum(x, y), [[nan, 1.0, 1.0, nan, 2.0, 0.0, -inf],
                                                  [1.0, nan, 1.0, nan, 1.0, 0.0, -inf]]),
    "clamp(x, 0, 1)^2": (lambda m, x: m.clamp(x, min=0.0, max=1.0) ** 2, [[0.0, 1.0, 0.5, -1.0, 2.0, nan]]),
    "clamp(x, tensor, tensor)": (lambda m, x, lo, hi: m.clamp(x, min=lo, max=hi),
                                 [[nan, 0.0, -1.0, 1.0, 0.5, 3.0, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0, 2.0, nan],
                                  [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]]),
    "where with nan": (lambda m, x: m.where(x > 0, m.log(x), x), [[nan, -1.0, 1.0, 0.0]]),
    "softmax, +inf": (lambda m, x: m.softmax(x, 0) * m.tensor(W3, dtype=x.dtype), [[1.0, inf, 2.0]]),
    "softmax, -inf": (lambda m, x: m.softmax(x, 0) * m.tensor(W3, dtype=x.dtype), [[-inf, 0.0, 2.0]]),
    "softmax, all -inf": (lambda m, x: m.softmax(x, 0) * m.tensor(W3, dtype=x.dtype), [[-inf, -inf, -inf]]),
    "softmax, nan": (lambda m, x: m.softmax(x, 0) * m.tensor(W3, dtype=x.dtype), [[nan, 0.0, 2.0]]),
    "softmax, large": (lambda m, x: m.softmax(x, 0) * m.tensor(W3, dtype=x.dtype), [[1000.0, 2.0, -1e30]]),
    "log_softmax, +inf": (lambda m, x: m.log_softmax(x, 0) * m.tensor(W3, dtype=x.dtype), [[1.0, inf, 2.0]]),
    "log_softmax, -inf": (lambda m, x: m.log_softmax(x, 0) * m.tensor(W3, dtype=x.dtype), [[-inf, 1.0, 2.0]]),
    "log_softmax, large": (lambda m, x: m.log_softmax(x, 0) * m.tensor(W3, dtype=x.dtype),
                           [[1000.0, 2.0, -1e30]]),
    "logsumexp, +inf": (lambda m, x: m.logsumexp(x, 0), [[1.0, inf, 2.0]]),
    "logsumexp, all -inf": (lambda m, x: m.logsumexp(x, 0), [[-inf, -inf]]),
    "x^0": (lambda m, x: x ** 0, [[0.0, 1.0, -2.0, nan, inf]]),
    "x^0 + x^2": (lambda m, x: x ** 0 + x ** 2, [[0.0, 1.0, -2.0]]),
    "x^3": (lambda m, x: x ** 3, [[0.0, 1.0, -2.0, nan, inf]]),
    "x^-1": (lambda m, x: x ** -1, [[0.0, 1.0, -2.0]]),
    "x^0.5": (lambda m, x: x ** 0.5, [[0.0, 1.0, 4.0]]),
    "x^y": (lambda m, x, y: x ** y, [[0.0, 1.0, -2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0, -1.0]]),
    "x^y * exp(1000 x)": (lambda m, x, y: x ** y * m.exp(x * 1000.0), [[0.0, 0.0, 1.0], [0.0, 1.0, 2.0]]),
    "std, no spread": (lambda m, x: m.std(x), [[1.0, 1.0, 1.0]]),
    "std * sum, no spread": (lambda m, x: m.std(x) * x.sum(), [[2.0, 2.0, 2.0]]),
    "std(dim), one row without spread": (lambda m, x: m.std(x, dim=1), [[[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]]]),
    "var, one element": (lambda m, x: m.var(x), [[2.0]]),
    "std, one element": (lambda m, x: m.std(x), [[2.0]]),
    "var(dim), one row": (lambda m, x: m.var(x, dim=0), [[[2.0, 1.0]]]),
    "var, correction 2": (lambda m, x: m.var(x, correction=2), [[2.0]]),
    "norm of zeros": (lambda m, x: m.norm(x), [[0.0, 0.0]]),
    "amax, nan": (lambda m, x: m.amax(x, dim=1), [[[nan, 1.0], [2.0, 3.0]]]),
    "amax, ties and inf": (lambda m, x: m.amax(x, dim=0), [[[inf, 1.0], [2.0, inf]]]),
    "max, nan": (lambda m, x: m.max(x), [[nan, 1.0, 2.0]]),
    "max, two nans": (lambda m, x: m.max(x), [[[1.0, nan], [nan, 3.0]]]),
    "min, two nans": (lambda m, x: m.min(x), [[[1.0, nan], [nan, 3.0]]]),
    "max, ties": (lambda m, x: m.max(x) * m.exp(m.max(x) * 1000.0), [[2.0, 1.0, 2.0]]),
    "max(dim), nan": (lambda m, x: m.max(x, dim=0)[0], [[1.0, nan, 3.0]]),
    "norm, zero vector": (lambda m, x: m.norm(x), [[0.0, 0.0]]),
    "norm(dim), a zero row": (lambda m, x: m.norm(x, dim=1), [[[0.0, 0.0], [3.0, 4.0]]]),
    "norm with an inf grad at the zero vector": (lambda m, x: m.norm(x) * m.exp(m.norm(x) * -1000.0 + 1000.0),
                                                 [[0.0, 0.0]]),
    "norm, nan": (lambda m, x: m.norm(x), [[1.0, nan]]),
    "norm(p=1)": (lambda m, x: m.norm(x, p=1), [[1.0, 0.0, nan, -2.0]]),
    "softmax of a 0-d nan": (lambda m, x: m.softmax(x, 0), [nan]),
    "softmax of a 0-d inf": (lambda m, x: m.softmax(x, 0), [inf]),
    "softmax of a 0-d number": (lambda m, x: m.softmax(x, 0), [2.0]),
    "log_softmax of a 0-d nan": (lambda m, x: m.log_softmax(x, 0), [nan]),
    "log_softmax of a 0-d -inf": (lambda m, x: m.log_softmax(x, 0), [-inf]),
    "log_softmax of a 0-d number": (lambda m, x: m.log_softmax(x, 0), [2.0]),
    "norm(p=inf), nan": (lambda m, x: m.norm(x, p=inf), [[1.0, nan, 3.0]]),
    "norm(p=inf), ties": (lambda m, x: m.norm(x, p=inf), [[1.0, -3.0, 3.0]]),
    "norm(p=inf, dim)": (lambda m, x: m.norm(x, p=inf, dim=1), [[[1.0, nan], [-2.0, 2.0]]]),
    "norm(p=3), zero vector": (lambda m, x: m.norm(x, p=3), [[0.0, 0.0]]),
    "norm(p=3)": (lambda m, x: m.norm(x, p=3), [[1.0, 0.0, -2.0]]),
    "norm(p=1.5), zero vector": (lambda m, x: m.norm(x, p=1.5), [[0.0, 0.0]]),
    "norm(p=0.5)": (lambda m, x: m.norm(x, p=0.5), [[1.0, 0.0, -4.0]]),
    "norm(p=1), nan": (lambda m, x: m.norm(x, p=1), [[1.0, 0.0, nan]]),
    "prod, nan and a zero": (lambda m, x: m.prod(x), [[nan, 0.0, 3.0]]),
    "prod, inf and a zero": (lambda m, x: m.prod(x), [[inf, 0.0, 3.0]]),
    "prod, two zeros": (lambda m, x: m.prod(x), [[0.0, 2.0, 0.0, 5.0]]),
    "prod(dim), zeros": (lambda m, x: m.prod(x, 1), [[[0.0, 2.0, 3.0], [3.0, 4.0, 0.0]]]),
    "prod(dim), nan": (lambda m, x: m.prod(x, 0), [[[0.0, 2.0], [nan, 4.0], [1.0, 0.0]]]),
    "prod(dim) of one element": (lambda m, x: m.prod(x, 1), [[[0.0], [2.0]]]),
    "prod of a 0-d tensor": (lambda m, x: m.prod(x), [0.0]),
    "prod^2, a zero": (lambda m, x: m.prod(x) ** 2, [[0.0, 2.0, 3.0]]),
    "1 / x at 0": (lambda m, x: 1.0 / x, [[0.0, -0.0, inf, nan, 2.0]]),
    "x / y": (lambda m, x, y: x / y, [[0.0, 1.0, 1e30, 2.0], [0.0, 0.0, 1e20, -4.0]]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_values_and_derivatives_agree_with_torch(case, dtype):
    pytest.importorskip("torch")
    fn, arrays = CASES[case]
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # torch's own warnings (no degrees of freedom)
        want = _run("torch", fn, arrays, dtype)
    got = _run("autodsl", fn, arrays, dtype)
    for key in ("value", "grad", "grad, create_graph", "second"):
        assert _agree(got[key], want[key], dtype), (key, got[key], want[key])


def test_a_second_derivative_of_a_constant_gradient_raises_as_in_torch():
    x = _t([0.0, 1.0])
    (g,) = ad.grad((x ** 0).sum(), x, create_graph=True)
    with pytest.raises(AutogradError):
        ad.grad(g.sum(), x)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_powers_torch_computes_without_pow_give_its_bits_and_signs(dtype):
    # torch's pow by a number: x*x, x*x*x, sqrt, 1/sqrt, 1/x, 1/(x*x) for 2, 3, 0.5, -0.5, -1, -2
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.standard_normal(2000) * 10, [0.0, -0.0, inf, -inf, nan, 1e-30, -1e-30]])
    for e in (2, 3, 0.5, -0.5, -1, -2):
        want = (torch.tensor(a, dtype=getattr(torch, dtype)) ** e).numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = _np(ad.tensor(a, dtype=dtype) ** e)
        if e == 0.5:        # torch's vectorized sqrt of an array with negatives differs in last bits
            np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, want)
        keep = ~np.isnan(want[-7:])        # (a nan's sign bit means nothing)
        np.testing.assert_array_equal(np.signbit(got[-7:])[keep], np.signbit(want[-7:])[keep])


@pytest.mark.parametrize("create_graph", [False, True])
def test_cumprod_gradient_with_zeros_inf_and_nan_is_torchs(create_graph):
    # torch's cumprod_backward: grad along a dim of size 1; without create_graph the O(n) form
    # whose sums stop at the zeros (w masked before the first zero, the first run after it), with
    # it the O(n^2) form with prod_{m < k} x_m inside each product: the same nan and inf
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    vals = [0.0, 0.0, 1.5, -2.0, 3.0, inf, nan, -0.5, -inf]
    gvals = [1.0, -2.0, inf, nan, 0.5, -inf]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for trial in range(400):
            shape = [(4,), (2, 3), (3, 1), (1, 3), (5,), (2, 4), (), (1,)][trial % 8]
            d = int(rng.integers(0, max(1, len(shape))))
            x, g = rng.choice(vals, size=shape), rng.choice(gvals, size=shape)
            tx = torch.tensor(x, requires_grad=True)
            (want,) = torch.autograd.grad(torch.cumprod(tx, d), tx, torch.tensor(g), create_graph=create_graph)
            ax = ad.tensor(x, dtype="float64", requires_grad=True)
            (got,) = ad.grad(ad.cumprod(ax, d), ax, grad_outputs=ad.tensor(g, dtype="float64"),
                             create_graph=create_graph)
            np.testing.assert_allclose(_np(got), want.detach().numpy(), rtol=1e-12, equal_nan=True,
                                       err_msg=f"x={x} dim={d} grad={g}")


def test_softmax_in_pieces_shifts_by_the_max_as_the_one_call_forward():
    # ops/chunked.py runs softmax/log_softmax above 2^24 elements; called here on a small array
    from autodsl.ops import chunked
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 50))
    a[1, 7], a[2, :] = inf, -inf
    with np.errstate(all="ignore"):
        for pieces, op in ((chunked.softmax, ad.softmax), (chunked.log_softmax, ad.log_softmax)):
            want = _np(op(ad.tensor(a, dtype="float64"), 1))
            np.testing.assert_array_equal(pieces(a, 1), want)
            assert np.all(np.isnan(want[1])) and np.all(np.isnan(want[2]))
