"""Inputs the fuzz suites (test_fuzz_programs.py, test_fuzz_vs_torch.py) found, one test each.

The expected values are PyTorch's (2.x, float64), written out so that the tests run without it.
"""
import math

import pytest

import autodsl as ad


def test_masked_fill_broadcasts_input_and_mask_together_as_torch():
    # torch's out-of-place masked_fill expands input and mask to their broadcast shape (ATen:
    # expand_outplace(mask, self), then masked_fill_); autodsl refused a mask larger than input
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = ad.masked_fill(x, ad.tensor([[True], [False]]), 0.5)
    assert y.shape == (2, 2)
    assert y.tolist() == [[0.5, 0.5], [1.0, 2.0]]
    (y * ad.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]         # summed back over the broadcast dim, masked rows 0


def test_masked_fill_value_tensor_gets_the_masked_grads_after_broadcasting():
    v = ad.tensor(0.5, requires_grad=True)
    y = ad.masked_fill(ad.tensor([1.0, 2.0, 3.0]), ad.tensor([[True], [False]]), v)
    assert y.tolist() == [[0.5, 0.5, 0.5], [1.0, 2.0, 3.0]]
    y.sum().backward()
    assert v.grad.item() == 3.0


def test_masked_fill_in_place_still_needs_a_mask_that_fits_the_tensor():
    # torch: "output with shape [2] doesn't match the broadcast shape [2, 2]"
    x = ad.tensor([1.0, 2.0])
    try:
        x.masked_fill_(ad.tensor([[True], [False]]), 0.5)
    except ad.ShapeError as e:
        assert "(2, 1)" in e.message and "(2,)" in e.message
    else:
        raise AssertionError("masked_fill_ wrote a (2, 2) result into a (2,) tensor")
    assert x.tolist() == [1.0, 2.0]


def test_masked_fill_in_the_language_broadcasts_too():
    s = ad.Session(echo=False)
    y = s.run("x = tensor([1.0, 2.0]); x.masked_fill(tensor([[true], [false]]), 0.0)")
    assert y.tolist() == [[0.0, 0.0], [1.0, 2.0]]


def test_softmax_of_a_0d_nonfinite_is_nan_as_torch():
    # found by the differential fuzz (the 0-d case was 1 and 0 whatever the value); fixed in 4ff9d1f
    for v in (math.nan, math.inf, -math.inf):
        assert math.isnan(ad.softmax(ad.tensor(v), 0).item())
        assert math.isnan(ad.log_softmax(ad.tensor(v), 0).item())
    assert ad.softmax(ad.tensor(2.0), 0).item() == 1.0       # the finite case stays
    assert ad.log_softmax(ad.tensor(2.0), 0).item() == 0.0


# ---- found by the differential fuzz, listed as open, since fixed ------------------------------
# An open one is a strict xfail naming its KNOWN_OPEN entry of test_fuzz_vs_torch.py (which lets
# the fuzz pass meanwhile); when the bug is fixed, the test passes, strict makes that a failure,
# and the mark and the entry go.

def test_cumprod_grad_along_a_dim_of_size_one_is_grad_as_torch():
    # found by the differential fuzz: the gradient divided by x even along a dim of size 1, where
    # torch's cumprod_backward returns grad; fixed in ops/cumulative.py
    x = ad.tensor([[-math.inf], [3.0]], requires_grad=True)
    ad.cumprod(x, 1).sum().backward()
    assert x.grad.tolist() == [[1.0], [1.0]]


def test_cumprod_grad_before_a_zero_ignores_an_inf_gradient_after_it():
    # found by the differential fuzz: the O(n) gradient with a zero formed inf * 0 where torch
    # sums only up to the first zero (and the first run after it); fixed in ops/cumulative.py
    x = ad.tensor([3.0, 0.0, -2.0], requires_grad=True)
    (g,) = ad.grad(ad.cumprod(x, 0), [x], grad_outputs=[ad.tensor([1.0, math.inf, 1.0])])
    assert g.tolist() == [1.0, math.inf, 0.0]


def test_pow_minus_half_at_negative_zero_is_minus_inf_as_torch():
    # found by the differential fuzz: torch computes x^-0.5 as 1/sqrt(x), -inf at -0.0, where
    # NumPy's power gives +inf; fixed with torch's special exponents (ops/elementwise.py _POWERS)
    assert (ad.tensor([-0.0, 0.0]) ** -0.5).tolist() == [-math.inf, math.inf]


def test_pow_half_grad_at_negative_zero_is_minus_inf_as_torch():
    # the gradient of x^0.5 is 0.5 * x^-0.5: -inf at -0.0, as torch
    x = ad.tensor([-0.0, 0.0], requires_grad=True)
    (x ** 0.5).sum().backward()
    assert x.grad.tolist() == [-math.inf, math.inf]


def test_a_reshape_of_index_selects_result_is_a_view_as_torch():
    # found by the differential fuzz: index_select along dim 1 left a Fortran-ordered array, so
    # reshape(-1) copied where torch's contiguous result gives a view; its result is C-ordered now
    y = ad.index_select(ad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), 1, ad.tensor([0, 0], dtype=ad.int64))
    v = y.reshape(-1)
    v[0] = 9.0
    assert y.tolist() == [[9.0, 1.0], [4.0, 4.0]]       # torch: the write lands in y


# ---- found by the program fuzz under --array-api=strict ----

# ops/op_limits.py read a.dtype.itemsize, which array_api_strict's dtypes lack: under a memory limit
# every op was an internal error
def test_an_op_under_a_memory_limit_runs_on_array_api_strict():
    pytest.importorskip("array_api_strict")
    from autodsl import backend

    s = ad.Session(memory_limit=2 ** 28, echo=False)
    with backend.use_namespace("strict"):
        assert s.run("x = tensor([1.0, 2.0], requires_grad=true); (x * 2).sum()").item() == 6.0
