"""One test per statement of SPEC section 2 (tensors and autograd), with hand-computed values."""
import math
import warnings

import numpy as np
import pytest

import autodsl as ad
from autodsl.core.trace import tracing


# -- creation and dtypes --------------------------------------------------------------------------

def test_number_literals_are_float64_unless_dtype_given():
    assert ad.tensor([1, 2]).dtype is ad.float64
    assert ad.tensor(2).dtype is ad.float64
    assert ad.tensor([1, 2], dtype=ad.int64).dtype is ad.int64
    assert ad.tensor([1.0], dtype=ad.float32).dtype is ad.float32


def test_seed_makes_random_numbers_reproducible():
    ad.seed(7)
    a = ad.randn(3).numpy()
    ad.seed(7)
    b = ad.randn(3).numpy()
    np.testing.assert_array_equal(a, b)


def test_integer_and_bool_tensors_cannot_require_grad():
    with pytest.raises(ad.DTypeError, match="float"):
        ad.tensor([1, 2], dtype=ad.int64, requires_grad=True)
    with pytest.raises(ad.DTypeError):
        ad.tensor([True, False], requires_grad=True)
    with pytest.raises(ad.DTypeError):
        ad.zeros(2, dtype=ad.int64, requires_grad=True)
    i = ad.tensor([1, 2], dtype=ad.int64)
    with pytest.raises(ad.DTypeError):
        i.requires_grad = True
    with pytest.raises(ad.DTypeError):
        i.requires_grad_()
    assert i.requires_grad is False


# -- grad_fn names and leaves ---------------------------------------------------------------------

def test_grad_fn_names():
    x = ad.tensor([1.0, -2.0], requires_grad=True)
    assert (x * 2).grad_fn.name == "MulBackward"
    assert (x ** 2).grad_fn.name == "PowBackward"
    assert ad.relu(x).grad_fn.name == "ReluBackward"
    assert (x + 1).grad_fn.name == "AddBackward"
    assert x.grad_fn is None


def test_user_tensors_are_leaves():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    c = ad.tensor([1.0, 2.0])
    assert x.is_leaf and x.grad_fn is None and x.requires_grad
    assert c.is_leaf and not c.requires_grad


def test_op_output_is_leaf_only_if_no_input_requires_grad():
    c = ad.tensor([1.0, 2.0])
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = c * 3 + ad.exp(c)
    assert y.is_leaf and y.grad_fn is None and not y.requires_grad
    z = c * x
    assert not z.is_leaf and z.requires_grad and z.grad_fn.name == "MulBackward"
    with ad.no_grad():
        w = x * 2
    assert w.is_leaf and not w.requires_grad


def test_only_leaves_get_grad():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    y = (h * h).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [18.0, 36.0])
    with pytest.warns(UserWarning, match="retain_grad"):
        assert h.grad is None


def test_reading_grad_of_a_leaf_does_not_warn():
    x = ad.tensor(1.0, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is None


def test_retain_grad_fills_a_non_leaf_grad():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    assert h.retains_grad
    y = (h * h).sum()
    y.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(h.grad.numpy(), [6.0, 12.0])   # 2h


# -- backward -------------------------------------------------------------------------------------

def test_scalar_backward_seeds_with_one():
    x = ad.tensor(3.0, requires_grad=True)
    (x * x).backward()
    assert x.grad.item() == 6.0


def test_non_scalar_backward_needs_a_gradient():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(ad.AutogradError, match="gradient"):
        y.backward()
    assert x.grad is None


def test_non_scalar_backward_wrong_shape_gradient():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(ad.ShapeError):
        y.backward(ad.tensor([1.0, 1.0, 1.0]))
    assert x.grad is None


def test_non_scalar_backward_is_a_vjp():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.backward(ad.tensor([1, 1]))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    x.grad = None
    y2 = x * x
    y2.backward(ad.tensor([0.5, -3.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, -12.0])


def test_backward_of_tensor_without_grad_is_an_error():
    with pytest.raises(ad.AutogradError):
        ad.tensor(1.0).backward()


def test_gradients_accumulate_until_zeroed():
    x = ad.tensor(2.0, requires_grad=True)
    (x * 3).backward()
    (x * 3).backward()
    assert x.grad.item() == 6.0
    x.grad = None
    assert x.grad is None
    (x * 4).backward()
    assert x.grad.item() == 4.0
    x.zero_grad()
    assert x.grad is None
    (x * 5).backward()
    assert x.grad.item() == 5.0


def test_retain_graph_false_frees_and_errors_with_advice():
    x = ad.tensor(2.0, requires_grad=True)
    y = ad.sin(x) * x
    y.backward()
    with pytest.raises(ad.AutogradError, match="retain_graph"):
        y.backward()
    assert math.isclose(x.grad.item(), math.cos(2.0) * 2.0 + math.sin(2.0))


def test_grad_function():
    x = ad.tensor(2.0, requires_grad=True)
    y = x ** 3
    (g,) = ad.grad(y, [x], create_graph=True)
    assert g.item() == 12.0 and g.requires_grad
    (g2,) = ad.grad(g, [x])
    assert g2.item() == 12.0
    assert x.grad is None
    z = ad.tensor(1.0, requires_grad=True)
    with pytest.raises(ad.AutogradError):
        ad.grad(x * 2, [z])
    assert ad.grad(x * 2, [z], allow_unused=True) == [None]


# -- detach, version counters, in-place -----------------------------------------------------------

def test_detach_shares_storage():
    y = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = y.detach()
    assert x.is_leaf and x.requires_grad is False and x.grad_fn is None
    x[0] = 4
    assert y[0].item() == 4.0
    np.testing.assert_array_equal(y.numpy(), [4.0, 2.0, 3.0])


def test_detach_of_a_non_leaf():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    d = h.detach()
    assert d.is_leaf and not d.requires_grad
    np.testing.assert_array_equal(d.numpy(), [2.0, 4.0])


def test_version_counter_error_names_the_node():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    y = (h * h).sum()                   # MulBackward saves h
    h += 1                               # in-place write to a saved tensor
    with pytest.raises(ad.AutogradError, match="MulBackward"):
        y.backward()
    assert x.grad is None


def test_version_counter_through_detach():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = ad.exp(x)                        # ExpBackward saves its output
    y.detach()[0] = 0.0
    with pytest.raises(ad.AutogradError, match="ExpBackward"):
        y.sum().backward()


def test_in_place_on_leaf_requiring_grad_is_refused():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ad.AutogradError, match="no_grad"):
        x += 1
    with pytest.raises(ad.AutogradError):
        x[0] = 5.0
    with pytest.raises(ad.AutogradError):
        x.mul_(2)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


def test_in_place_on_leaf_allowed_inside_no_grad():
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with ad.no_grad():
        w -= 0.1 * w.grad
    np.testing.assert_allclose(w.numpy(), [0.8, 1.6])
    assert w.requires_grad and w.is_leaf
    with ad.no_grad():
        w[1] = 7.0
    np.testing.assert_allclose(w.numpy(), [0.8, 7.0])


def test_no_grad_is_restored_after_an_exception():
    assert ad.is_grad_enabled()
    with pytest.raises(ZeroDivisionError):
        with ad.no_grad():
            assert not ad.is_grad_enabled()
            1 / 0
    assert ad.is_grad_enabled()
    with pytest.raises(ad.ShapeError):
        with ad.no_grad():
            ad.ones(2) + ad.ones(3)
    assert ad.is_grad_enabled()
    x = ad.tensor(1.0, requires_grad=True)
    assert (x * 2).requires_grad


def test_set_grad_enabled_called_alone_a_block_and_a_decorator_as_in_pytorch():
    torch = pytest.importorskip("torch")

    def trace(lib):
        seen = []
        x = lib.tensor(1.0, requires_grad=True)
        try:
            lib.set_grad_enabled(False)                     # alone: at once, until set again
            seen.append((lib.is_grad_enabled(), (x * 2).requires_grad))
            lib.set_grad_enabled(True)
            seen.append((lib.is_grad_enabled(), (x * 2).requires_grad))
            with lib.set_grad_enabled(False):
                seen.append(lib.is_grad_enabled())
            seen.append(lib.is_grad_enabled())
            with lib.no_grad():
                with lib.set_grad_enabled(True):
                    seen.append(lib.is_grad_enabled())
                seen.append(lib.is_grad_enabled())

            @lib.set_grad_enabled(False)
            def f():
                return lib.is_grad_enabled()
            seen.append((lib.is_grad_enabled(), f(), lib.is_grad_enabled()))
            lib.no_grad()                                   # made, not entered: nothing changes
            seen.append(lib.is_grad_enabled())
        finally:
            lib.set_grad_enabled(True)
        return seen

    assert trace(ad) == trace(torch)
    assert trace(ad)[0] == (False, False)

def test_in_place_on_non_leaf_is_recorded():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y += 1
    assert y.grad_fn.name == "AddBackward"
    np.testing.assert_array_equal(y.numpy(), [3.0, 5.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_in_place_mul_on_non_leaf():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    y = x + 0.0
    y *= x                                # y = x^2
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_setitem_on_non_leaf():
    x = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y[0] = 5.0
    np.testing.assert_array_equal(y.numpy(), [5.0, 2.0, 3.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 1.0])


def test_setitem_with_a_differentiable_value():
    x = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = ad.tensor(4.0, requires_grad=True)
    y = x * 1
    y[1] = v * 2
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, 6.0])
    assert v.grad.item() == 2 * 8.0 * 2


# -- broadcasting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("sa, sb", [((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3)), ((4, 1, 3), (2, 1)),
                                    ((1,), (3,))])
def test_broadcast_gradient_is_reduced_to_the_input_shape(sa, sb):
    a = ad.ones(*sa, requires_grad=True) if sa else ad.tensor(1.0, requires_grad=True)
    b = ad.ones(*sb, requires_grad=True)
    y = a * b * 2.0
    out_shape = np.broadcast_shapes(sa, sb)
    assert y.shape == out_shape
    y.sum().backward()
    assert a.grad.shape == sa and b.grad.shape == sb
    n = int(np.prod(out_shape))
    np.testing.assert_array_equal(a.grad.numpy(), np.full(sa, 2.0 * n / max(int(np.prod(sa)), 1)))
    np.testing.assert_array_equal(b.grad.numpy(), np.full(sb, 2.0 * n / int(np.prod(sb))))


def test_broadcast_shape_mismatch_is_a_shape_error():
    with pytest.raises(ad.ShapeError):
        ad.ones(2, 3) + ad.ones(2)


# -- all-or-nothing backward ----------------------------------------------------------------------

def _late_failure_graph():
    """A graph in which w's AccumulateGrad runs early and a saved-tensor check fails late."""
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    x = ad.tensor([3.0, 4.0], requires_grad=True)
    t = x * 1.0
    u = ad.exp(t * t)                    # MulBackward saves t; deep in the graph
    L = (u * 0.0 + w * 3.0).sum()
    return w, x, t, L


def test_failed_backward_changes_no_grad():
    # First show the order in a good run: w's AccumulateGrad runs before the deep MulBackward.
    w, x, t, L = _late_failure_graph()
    got = []
    with tracing(False, sink=got.append):
        L.backward()
    names = [(s.node.name, getattr(s, "leaf", None)) for s in got[0].steps]
    w_at = next(i for i, (n, leaf) in enumerate(names) if leaf is w)
    deep_at = max(i for i, s in enumerate(got[0].steps) if s.node is t.grad_fn)
    assert w_at < deep_at
    # Now make the deep node fail after w could have been accumulated.
    w, x, t, L = _late_failure_graph()
    w.grad = ad.tensor([10.0, 20.0])
    t += 1.0
    with pytest.raises(ad.AutogradError, match="MulBackward"):
        L.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [10.0, 20.0])
    assert x.grad is None


def test_failed_backward_changes_no_retained_grad():
    x = ad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    h.retain_grad()
    k = h * 1.0
    y = (k * k).sum() + h.sum()
    k += 1.0
    with pytest.raises(ad.AutogradError):
        y.backward()
    assert h.grad is None and x.grad is None


def test_failed_second_backward_keeps_first_grads():
    x = ad.tensor(2.0, requires_grad=True)
    w = ad.tensor(3.0, requires_grad=True)
    y = ad.exp(x) + w * 2.0
    y.backward()
    with pytest.raises(ad.AutogradError, match="retain_graph"):
        y.backward()
    assert math.isclose(x.grad.item(), math.exp(2.0))
    assert w.grad.item() == 2.0


def test_worked_example():
    """f = (w2 * (w1 * x^2 + b))^3, by hand."""
    x = ad.tensor(2.0)
    w1 = ad.tensor(0.5, requires_grad=True)
    b = ad.tensor(-1.0, requires_grad=True)
    w2 = ad.tensor(3.0, requires_grad=True)
    inner = w1 * x ** 2 + b              # 0.5*4 - 1 = 1
    f = (w2 * inner) ** 3                # 27
    f.backward()
    assert f.item() == 27.0
    # df/d(w2*inner) = 3 * 3^2 = 27
    assert w2.grad.item() == 27.0 * 1.0
    assert b.grad.item() == 27.0 * 3.0
    assert w1.grad.item() == 27.0 * 3.0 * 4.0
