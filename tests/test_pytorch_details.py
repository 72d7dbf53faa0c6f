"""Details where autodsl follows PyTorch, each found by trying to break it.

The expected values are worked out by hand (and were checked against PyTorch
2.13 in float64 when written).
"""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad
from autodsl.core.journal import transaction


def T(data, **kw):
    return ad.tensor(data, **kw)


# -- type promotion (PyTorch's three tiers) ----------------------------------------------------

@pytest.mark.parametrize("make, dtype", [
    (lambda: T([1.0, 2.0], dtype=ad.float32) * 2.5, "float32"),                 # number: lower tier
    (lambda: T([1.0, 2.0], dtype=ad.float32) * T(2.5), "float32"),              # 0-d tensor: lower tier
    (lambda: T([1, 2], dtype=ad.int64) + T([0.5, 0.5], dtype=ad.float32), "float32"),
    (lambda: T([1, 2], dtype=ad.int64) * 2.5, "float64"),                       # int tensor, float number
    (lambda: T([1, 2], dtype=ad.int64) * 2, "int64"),
    (lambda: T([1, 2], dtype=ad.int64) / 2, "float64"),                         # true division
    (lambda: ad.exp(T([1, 2], dtype=ad.int64)), "float64"),
    (lambda: T([1.0], dtype=ad.float32) + T([1.0], dtype=ad.float64), "float64"),
    (lambda: T([True, False]) + T([True, True]), "bool"),
])
def test_result_dtype(make, dtype):
    assert make().dtype.name == dtype


def test_integer_division_follows_the_default_dtype():
    s = ad.Session(echo=False)
    s.run("set_default_dtype(float32)\nq = tensor([1, 2], dtype=int64) / 2")
    assert s["q"].dtype.name == "float32"
    np.testing.assert_array_equal(s["q"].numpy(), [0.5, 1.0])
    assert ad.get_default_dtype().name == "float64"        # scoped to that session


def test_integer_to_negative_integer_power_is_refused():
    with pytest.raises(ad.ValueError_, match="negative integer powers"):
        T([1, 2], dtype=ad.int64) ** -1


# -- max/min with dim: (values, indices), gradient to the first extreme --------------------------

def test_max_dim_returns_values_and_indices():
    x = T([[1.0, 5.0], [3.0, 5.0], [7.0, 7.0]], requires_grad=True)
    values, indices = x.max(dim=1)
    np.testing.assert_array_equal(values.numpy(), [5.0, 5.0, 7.0])
    np.testing.assert_array_equal(indices.numpy(), [1, 1, 0])
    assert indices.dtype.name == "int64"
    values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1], [0, 1], [1, 0]])   # no split at the tie


def test_full_max_still_splits_ties():
    x = T([7.0, 7.0, 1.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.5, 0.5, 0.0])


def test_max_dim_in_the_language():
    s = ad.Session(echo=False)
    s.run("x = tensor([[1.0, 5.0], [3.0, 2.0]])\nv = x.max(dim=1)[0]\ni = x.max(dim=1).indices")
    np.testing.assert_array_equal(s["v"].numpy(), [5.0, 3.0])
    np.testing.assert_array_equal(s["i"].numpy(), [1, 0])


# -- clamp with tensor bounds --------------------------------------------------------------------

def test_clamp_with_tensor_bounds_routes_the_gradient_like_torch():
    x = T([0.0, 1.0, 2.0, 5.0], requires_grad=True)
    lo = T([1.0, 1.0, 1.0, 1.0], requires_grad=True)
    hi = T([3.0, 3.0, 3.0, 3.0], requires_grad=True)
    x.clamp(min=lo, max=hi).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 1, 0])     # x == lo keeps the gradient
    np.testing.assert_array_equal(lo.grad.numpy(), [1, 0, 0, 0])
    np.testing.assert_array_equal(hi.grad.numpy(), [0, 0, 0, 1])


# -- indexing and views --------------------------------------------------------------------------

def test_bool_list_is_a_mask():
    x = T([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(x[[True, False, True]].numpy(), [1.0, 3.0])
    x[[True, False, True]] = 0.0
    np.testing.assert_array_equal(x.numpy(), [0.0, 2.0, 0.0])


def test_view_refuses_to_copy():
    x = ad.zeros(2, 3)
    with pytest.raises(ad.ShapeError, match="reshape"):
        x.T.view(6)
    y = x.view(6)                       # contiguous: a real view
    y[0] = 5.0
    assert x[0, 0].item() == 5.0


def test_reshape_with_two_inferred_sizes():
    with pytest.raises(ad.ShapeError, match="only one size may be -1"):
        ad.zeros(2, 3).reshape(-1, -1)


def test_writing_a_grad_tensor_into_an_int_tensor_does_not_record():
    x = ad.zeros(3, dtype=ad.int64)
    w = T(2.5, requires_grad=True)
    x[0] = w
    assert x.tolist() == [2, 0, 0] and not x.requires_grad and x.is_leaf


# -- reductions and losses -----------------------------------------------------------------------

def test_sum_over_an_empty_dim_list_reduces_everything():
    assert T([[1.0, 5.0], [3.0, 2.0]]).sum(dim=[]).item() == 11.0


def test_var_of_one_element_backward_gives_nan_not_an_error():
    x = T([1.0], requires_grad=True)
    y = x.var()
    assert np.isnan(y.item())
    y.backward()
    assert np.isnan(x.grad.numpy()).all()


def test_cross_entropy_ignore_index():
    x = T([[1.0, 2.0, 3.0], [0.5, 0.1, 3.0]], requires_grad=True)
    loss = ad.cross_entropy(x, T([-100, 1], dtype=ad.int64))
    row = [0.5, 0.1, 3.0]
    lse = np.log(np.exp(row).sum())
    assert loss.item() == pytest.approx(lse - 0.1)          # only the second row counts
    loss.backward()
    soft = np.exp(row) / np.exp(row).sum()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0, 0], soft - [0, 1, 0]], atol=1e-12)


def test_cross_entropy_float_indices_message_names_int64():
    with pytest.raises(ad.ShapeError, match="int64"):
        ad.cross_entropy(T([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]), T([2.0, 0.0]))


def test_where_needs_a_bool_condition():
    x = T([1.0, 2.0])
    with pytest.raises(ad.DTypeError, match="bool"):
        ad.where(x, x, x)


# -- autograd state ------------------------------------------------------------------------------

def test_retain_grad_is_kept_with_backward_inputs():
    x = T(3.0, requires_grad=True)
    h = x * x
    h.retain_grad()
    (h * 2).backward(inputs=[x])
    assert h.grad.item() == 2.0 and x.grad.item() == 12.0


def test_grad_of_another_dtype_is_refused():
    x = T([1.0], dtype=ad.float32, requires_grad=True)
    with pytest.raises(ad.DTypeError, match="float32"):
        x.grad = T([1.0])


def test_backward_inputs_on_a_non_leaf_fills_its_grad_without_warning(recwarn):
    x = T(3.0, requires_grad=True)
    h = x * x
    (h * 2).backward(inputs=[h])
    assert h.grad.item() == 2.0 and x.grad is None
    assert not [w for w in recwarn if "retain_grad" in str(w.message)]


def test_transaction_rolls_back_writes_through_views_and_aliases():
    y = T([1.0, 2.0, 3.0])
    d = y.detach()
    before = y.numpy()
    with pytest.raises(KeyboardInterrupt), transaction():
        d[0] = 10.0            # through the alias first
        y[1] = 20.0            # then the original (its snapshot holds the alias's write)
        d[2] = 30.0
        raise KeyboardInterrupt
    np.testing.assert_array_equal(y.numpy(), before)


# -- in-place writes through an indexing view (PyTorch's CopySlices) -----------------------------

def test_inplace_add_through_a_slice_of_a_non_leaf():
    a = T([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    x = a * 1
    v = x[0:2]
    v += a[2:]                          # x = [a0+a2, a1+a3, a2, a3] = [4, 6, 3, 4]
    loss = (x * x).sum()
    assert loss.item() == 16 + 36 + 9 + 16
    loss.backward()
    # d/da0 = 2x0, d/da1 = 2x1, d/da2 = 2x0 + 2x2, d/da3 = 2x1 + 2x3
    np.testing.assert_array_equal(a.grad.numpy(), [8.0, 12.0, 14.0, 20.0])
    assert x.grad_fn.name == "IndexPutBackward" and v.grad_fn.name == "IndexBackward"


def test_inplace_write_into_a_constant_buffer_makes_it_require_grad():
    a = T([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    buf = ad.zeros(4)
    v = buf[1:3]
    v += a[0:2]                         # buf = [0, a0, a1, 0]
    assert buf.requires_grad and not buf.is_leaf
    (buf * buf).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0, 0.0, 0.0])


@pytest.mark.parametrize("script", [
    "x = a * 2; v = x[1:3]; v *= 3; w = v[0:1]; w += 10; out = (x * x).sum() + (v * v).sum()",
    "x = a * 1; v = x[0:2]; v[1] = a[3] * 5; out = (x ^ 3).sum()",
])
def test_view_writes_match_torch(script):
    torch = pytest.importorskip("torch")
    s = ad.Session(echo=False)
    s.run("a = tensor([1.0, 2.0, 3.0, 4.0], requires_grad=true)\n" + script + "\nout.backward()")
    a = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
    env = {"a": a}
    exec(script.replace("^", "**").replace("; ", "\n"), {}, env)   # the same statements in PyTorch
    env["out"].backward()
    assert s["out"].item() == env["out"].item()
    np.testing.assert_allclose(s["a"].grad.numpy(), a.grad.numpy())


def test_inplace_on_a_transposed_view_with_grad_is_recorded_as_in_torch():
    # (refused before issue 12; tests/test_issue12_views.py has the cases against torch)
    a = T([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    x = a * 1
    v = x.T
    v += a                              # x = a + a.T
    np.testing.assert_array_equal(x.numpy(), [[2.0, 5.0], [5.0, 8.0]])
    (x * x).sum().backward()            # d/da sum((a + a^T)^2) = 2x + 2x^T
    np.testing.assert_array_equal(a.grad.numpy(), [[8.0, 20.0], [20.0, 32.0]])


# -- found in review: ownership of .grad, stale views, saved values --------------------------------

def test_create_graph_grads_are_not_shared_between_leaves():
    x = T(1.0, requires_grad=True)
    y = T(2.0, requires_grad=True)
    (x + y).backward(create_graph=True)          # AddBackward sends one tensor to both
    assert x.grad is not y.grad
    (x * 3).backward()
    assert (x.grad.item(), y.grad.item()) == (4.0, 1.0)


def test_the_seed_gradient_is_never_modified():
    g = T([1.0, 1.0])
    x = T([1.0, 2.0], requires_grad=True)
    x.backward(g, create_graph=True)
    x.backward(g)
    np.testing.assert_array_equal(g.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_create_graph_accumulation_keeps_its_graph_inside_no_grad():
    x = T(3.0, requires_grad=True)
    (x * x).backward(create_graph=True)
    y = x * x
    with ad.no_grad():
        y.backward(create_graph=True)                # the second gradient is added with a graph
    assert x.grad.item() == 12.0 and x.grad.requires_grad


def test_a_read_only_grad_buffer_is_replaced_not_written():
    x = T([1.0, 2.0, 3.0], requires_grad=True)
    x.grad = ad.ones(1).expand(3)                    # a broadcast view: not writable
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])


@pytest.mark.parametrize("script, expected", [
    # the view v was made before b got a new history (b *= 2): v must follow it
    ("b = x * 1; v = b[0]; b *= 2; v.sum().backward()", [[2, 2], [0, 0]]),
    ("b = x * 1; v = b.T; b *= 2; v.sum().backward()", [[2, 2], [2, 2]]),
    # a sibling view written in place
    ("b = x.reshape(4) * 1; v1 = b[0:2]; v2 = b[1:3]; v1 *= 3; (v2 * v2).sum().backward()", [[0, 36], [6, 0]]),
])
def test_views_follow_their_base_after_an_in_place_op(script, expected):
    s = ad.Session(echo=False)
    s.run("x = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=true)\n" + script)
    np.testing.assert_array_equal(s["x"].grad.numpy(), expected)


def test_in_place_write_to_a_max_output_is_caught():
    x = T([1.0, 3.0, 2.0], requires_grad=True)
    m = x.amax(0)
    m *= 2
    with pytest.raises(ad.AutogradError, match="MaxBackward"):
        m.backward()


def test_an_index_tensor_changed_after_use_does_not_move_the_gradient():
    x = T([1.0, 2.0, 3.0], requires_grad=True)
    i = T([0, 1], dtype=ad.int64)
    y = x[i]
    i[0] = 2
    (y * T([1.0, 10.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 10.0, 0.0])


def test_retained_target_is_not_counted_twice():
    x = T([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    (y * y).sum().backward(inputs=[y, x])
    np.testing.assert_array_equal(y.grad.numpy(), [4.0, 8.0])        # 2y
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 16.0])       # 2y * 2


def test_retain_grad_follows_an_in_place_op():
    x = T(2.0, requires_grad=True)
    a = x * 2
    a.retain_grad()
    a *= 3
    a.backward()
    assert a.grad.item() == 1.0 and x.grad.item() == 6.0


def test_an_integer_index_gives_a_view():
    b = T([1.0, 2.0, 3.0])
    v = b[0]
    v += 1.0
    np.testing.assert_array_equal(b.numpy(), [2.0, 2.0, 3.0])


def test_ieee_results_without_warnings_even_when_numpy_would_raise():
    import warnings
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        assert ad.log(T(0.0)).item() == -np.inf
        assert np.isnan((T(0.0) / T(0.0)).item())
        x = T([0.0, 1.0], requires_grad=True)
        (x / 0.0).sum().backward()                   # inf and nan in the backward too
        np.testing.assert_array_equal(x.grad.numpy(), [np.inf, np.inf])
        s = ad.Session(echo=False)
        assert s.run("log(tensor(0.0))").item() == -np.inf


def test_data_shares_storage_but_not_the_version_counter():
    x = T([1.0, 2.0], requires_grad=True)
    y = x * x
    y.data[0] = 5.0                         # as PyTorch: seen by y, not by the version check
    assert y.tolist() == [5.0, 4.0] and y.version == 0
    d = y.detach()
    d[1] = 7.0                              # detach() shares the counter
    assert y.version == 1


def test_dot_writes_all_or_nothing(tmp_path, monkeypatch):
    from autodsl.tools import graph as graphview
    target = tmp_path / "g.dot"
    target.write_text("old")
    real = type(target).write_text

    def failing_write(self, *a, **k):
        real(self, "half")
        raise KeyboardInterrupt
    monkeypatch.setattr(type(target), "write_text", failing_write)
    with pytest.raises(KeyboardInterrupt):
        graphview.dot(T(1.0, requires_grad=True) * 2, str(target))
    monkeypatch.undo()
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["g.dot"]


# -- found by differential fuzzing against PyTorch ------------------------------------------------

def test_write_through_a_view_made_before_its_base_changed():
    c = T([1.0, 2.0, 3.0], requires_grad=True)
    v2 = c * 1.0
    v3 = v2[1:]                 # made before the next line gives v2 a new history
    v2.mul_(2.0)
    v3.mul_(3.0)                # v2 = [2c0, 6c1, 6c2]
    v2.sum().backward()
    np.testing.assert_array_equal(c.grad.numpy(), [2.0, 6.0, 6.0])


def test_only_the_needed_inputs_are_saved():
    c = T(2.0, requires_grad=True)
    v = c * 1.0
    w = v * 2                   # 2 needs no gradient, so v is not saved
    v.add_(1.0)
    w.backward()
    assert c.grad.item() == 2.0
    x = T([1.0, 2.0], requires_grad=True)
    y = ad.pow(x, 2.0)          # a constant exponent: the output is not saved
    y += 1.0
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_p_norm_of_the_zero_vector_has_gradient_zero():
    x = T([0.0, 0.0], requires_grad=True)
    x.norm(p=3).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    y = T([1.0, -2.0], requires_grad=True)
    y.norm(p=3).backward()
    n = (1 + 8) ** (1 / 3)
    np.testing.assert_allclose(y.grad.numpy(), [1 / n ** 2, -4 / n ** 2])   # sign(x)|x|^2 / n^2


def test_scalar_in_place_through_an_empty_index():
    c = T(1.5, requires_grad=True)
    v = c * c
    v[()] += c                  # v = c^2 + c
    v.backward()
    assert v.item() == 3.75 and c.grad.item() == 4.0


def test_softmax_of_a_0d_tensor():
    x = T(1.5, requires_grad=True)
    y = ad.log_softmax(x, 0)
    y.backward()
    assert (y.item(), x.grad.item()) == (0.0, 0.0)
    assert ad.softmax(T(1.5), -1).item() == 1.0


def test_leaf_that_stopped_requiring_grad_gets_none():
    a = T([1.0, 2.0], requires_grad=True)
    v = a * 2
    a.requires_grad_(False)
    v.sum().backward()
    assert a.grad is None


def test_accumulating_into_a_grad_with_a_graph_keeps_it():
    a = T(3.0, requires_grad=True)
    (a * a).backward(create_graph=True)
    (a * 2).backward()
    assert a.grad.item() == 8.0 and a.grad.requires_grad


def test_stack_and_cat_give_contiguous_results():
    a = T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    s = ad.stack([a.T, a.T])
    v = s.reshape(-1)           # a view, as in PyTorch
    s *= 0.0
    assert v.sum().item() == 0.0
