"""Gathers, scatters, masks, sorting, argmax/argmin and max/min over dims at their edges, against
PyTorch: ties, NaN, repeated indices, integer dtypes, empty tensors and the language's errors."""
import math

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")

NAN = math.nan


def T(data, dtype=ad.float64, requires_grad=False):
    return ad.tensor(data, dtype=dtype, requires_grad=requires_grad)


def I(data):  # an index tensor
    return ad.tensor(data, dtype=ad.int64)


def same(a, t):
    """An autodsl tensor equals a torch tensor: shape, dtype kind and values (nan equal to nan)."""
    t = t.detach().numpy()
    assert a.shape == t.shape
    assert a.numpy().dtype == t.dtype
    np.testing.assert_array_equal(a.numpy(), t)


# -- sorting: torch's stable order, NaN, integers -------------------------------------------------

SORT_CASES = [
    [1.0, 2.0, 1.0, 2.0, 0.0],
    [3.0, NAN, 1.0, NAN, 3.0, -math.inf],
    [[2.0, 2.0, 1.0], [0.0, 5.0, 0.0]],
]


@pytest.mark.parametrize("data", SORT_CASES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_ties_and_nan_follow_torch_stable_order(data, descending):
    v, i = ad.sort(T(data), descending=descending)
    tv, ti = torch.sort(torch.tensor(data, dtype=torch.float64), descending=descending, stable=True)
    same(v, tv)
    same(i, ti)
    same(ad.argsort(T(data), descending=descending), ti)


def test_sort_of_integers_and_along_dim0():
    data = [[3, 1, 2], [1, 1, 0]]
    v, i = ad.sort(I(data), dim=0)
    tv, ti = torch.sort(torch.tensor(data), dim=0, stable=True)
    same(v, tv)
    same(i, ti)
    assert not v.requires_grad


def test_sort_gradient_with_ties_goes_back_through_the_indices_as_torch():
    data = [[1.0, 3.0, 1.0, 2.0], [2.0, 2.0, 2.0, 0.5]]
    w = np.arange(8.0).reshape(2, 4)
    x = T(data, requires_grad=True)
    (ad.sort(x, dim=1, descending=True).values * T(w.tolist())).sum().backward()
    tx = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    (torch.sort(tx, dim=1, descending=True, stable=True).values * torch.tensor(w)).sum().backward()
    same(x.grad, tx.grad)
    assert ad.sort(x).values.grad_fn.name == "SortBackward"


def test_topk_values_indices_and_gradient_match_torch():
    data = [[0.5, 3.0, -1.0, 2.0], [4.0, 1.0, 0.0, -2.0]]
    for largest in (True, False):
        x = T(data, requires_grad=True)
        v, i = ad.topk(x, 2, dim=1, largest=largest)
        tx = torch.tensor(data, dtype=torch.float64, requires_grad=True)
        tv, ti = torch.topk(tx, 2, dim=1, largest=largest)
        same(v, tv)
        same(i, ti)
        (v * T([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        (tv * torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)).sum().backward()
        same(x.grad, tx.grad)
    assert v.grad_fn.name == "TopkBackward"


def test_topk_ties_come_in_their_original_order():
    v, i = ad.topk(T([1.0, 2.0, 1.0, 2.0, 0.0]), 3)
    np.testing.assert_array_equal(v.numpy(), [2.0, 2.0, 1.0])
    np.testing.assert_array_equal(i.numpy(), [1, 3, 0])       # (torch leaves this order unspecified)


def test_topk_k_out_of_range_raises_like_torch():
    for k in (-1, 4):
        with pytest.raises(ad.RuntimeError_, match="out of range"):
            ad.topk(T([1.0, 2.0, 3.0]), k)
        with pytest.raises(RuntimeError):
            torch.topk(torch.tensor([1.0, 2.0, 3.0]), k)
    with pytest.raises(ad.TypeError_, match="integer"):
        ad.topk(T([1.0, 2.0]), 1.5)


def test_sort_replay_sorts_the_new_values():
    x = T([3.0, 1.0, 2.0], requires_grad=True)
    y = ad.sort(x).values * T([1.0, 10.0, 100.0])
    again = ad.replay(y, x, [1.0, 3.0, 2.0])
    np.testing.assert_array_equal(again.numpy(), [1.0, 20.0, 300.0])


# -- argmax / argmin ---------------------------------------------------------------------------------

ARG_CASES = [
    ([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]], 1),
    ([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]], 0),
    ([1.0, NAN, 3.0, NAN], 0),
    ([[NAN, 1.0], [0.0, NAN]], 1),
    ([-math.inf, -math.inf, 1.0], 0),
]


@pytest.mark.parametrize("data,dim", ARG_CASES)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin_first_of_ties_and_nan_as_torch(data, dim, name):
    x, t = T(data), torch.tensor(data, dtype=torch.float64)
    f, tf = getattr(ad, name), getattr(torch, name)
    same(f(x), tf(t))
    same(f(x, dim=dim), tf(t, dim=dim))
    same(f(x, dim=dim, keepdim=True), tf(t, dim=dim, keepdim=True))
    same(f(x, keepdim=True), tf(t, keepdim=True))
    same(getattr(x, name)(dim=dim), tf(t, dim=dim))


def test_argmax_of_integers_scalars_and_no_gradient():
    same(ad.argmax(I([1, 3, 3])), torch.argmax(torch.tensor([1, 3, 3])))
    same(ad.argmin(T(2.0), dim=0), torch.argmin(torch.tensor(2.0), dim=0))
    x = T([1.0, 2.0], requires_grad=True)
    out = ad.argmax(x)
    assert out.dtype is ad.int64 and not out.requires_grad


def test_argmax_errors():
    with pytest.raises(ad.DTypeError, match="bool"):
        ad.argmax(ad.tensor([True, False]))
    with pytest.raises(ad.IndexError_, match="empty"):
        ad.argmax(ad.zeros(0, 3))
    with pytest.raises(ad.IndexError_, match="size 0"):
        ad.argmin(ad.zeros(0, 3), dim=0)
    with pytest.raises(IndexError):
        torch.argmin(torch.zeros(0, 3), dim=0)
    same(ad.argmax(ad.zeros(0, 3), dim=1), torch.argmax(torch.zeros(0, 3, dtype=torch.float64), dim=1))


def test_gather_at_argmax_gives_the_gradient_to_the_first_maximum():
    data = [[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]]
    x = T(data, requires_grad=True)
    ad.gather(x, 1, ad.argmax(x, dim=1, keepdim=True)).sum().backward()
    tx = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    torch.gather(tx, 1, torch.argmax(tx, dim=1, keepdim=True)).sum().backward()
    same(x.grad, tx.grad)


# -- gather / scatter / scatter_add / index_select / masked_fill / index_put -------------------------

def test_scatter_add_with_repeated_indices_and_its_gradients_match_torch():
    idx = [[0, 0, 2], [1, 1, 1]]
    x = T(np.arange(6.0).reshape(2, 3).tolist(), requires_grad=True)
    s = T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    w = [[1.0, -2.0, 3.0], [0.5, 4.0, 1.0]]
    out = ad.scatter_add(x, 1, I(idx), s)
    (out * T(w)).sum().backward()
    tx = torch.arange(6.0, dtype=torch.float64).reshape(2, 3).requires_grad_()
    ts = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64, requires_grad=True)
    tout = torch.scatter_add(tx, 1, torch.tensor(idx), ts)
    (tout * torch.tensor(w, dtype=torch.float64)).sum().backward()
    same(out, tout)
    same(x.grad, tx.grad)
    same(s.grad, ts.grad)
    assert out.grad_fn.name == "ScatterAddBackward"


def test_scatter_gradient_to_src_reads_every_index_as_torch():
    # repeated index: torch's src gradient is grad gathered at the index, for each src element
    idx = [[1, 1]]
    x = T([[0.0, 0.0, 0.0]], requires_grad=True)
    s = T([[5.0, 5.0]], requires_grad=True)
    (ad.scatter(x, 1, I(idx), s) * T([[1.0, 2.0, 3.0]])).sum().backward()
    tx = torch.zeros(1, 3, dtype=torch.float64, requires_grad=True)
    ts = torch.tensor([[5.0, 5.0]], dtype=torch.float64, requires_grad=True)
    (torch.scatter(tx, 1, torch.tensor(idx), ts) * torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
     ).sum().backward()
    same(x.grad, tx.grad)
    same(s.grad, ts.grad)


def test_scatter_src_larger_than_the_index_gets_zeros_around():
    s = T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    out = ad.scatter(ad.zeros(2, 3), 1, I([[2], [0]]), s)
    np.testing.assert_array_equal(out.numpy(), [[0, 0, 1], [4, 0, 0]])
    out.sum().backward()
    np.testing.assert_array_equal(s.grad.numpy(), [[1, 0, 0], [1, 0, 0]])


def test_scatter_value_and_integer_tensors_match_torch():
    same(ad.scatter(I([[1, 2, 3]]), 1, I([[0, 2]]), 7), torch.tensor([[1, 2, 3]]).scatter(1, torch.tensor([[0, 2]]), 7))
    same(ad.scatter(T([1.0, 2.0]), 0, I([1]), value=-1.0),
         torch.tensor([1.0, 2.0], dtype=torch.float64).scatter(0, torch.tensor([1]), -1.0))
    with pytest.raises(ad.ValueError_, match="reduce"):
        ad.scatter(T([1.0, 2.0]), 0, I([1]), 2.0, reduce="add")


def test_index_select_and_method_forms_match_torch():
    data = np.arange(6.0).reshape(2, 3)
    x, t = T(data.tolist()), torch.tensor(data)
    same(x.index_select(1, I([2, 0, 2])), t.index_select(1, torch.tensor([2, 0, 2])))
    same(ad.index_select(x, 1, I(1)), torch.index_select(t, 1, torch.tensor(1)))
    same(x.gather(0, I([[1, 0, 1]])), t.gather(0, torch.tensor([[1, 0, 1]])))
    same(ad.index_select(x, 0, [1, 1]), t.index_select(0, torch.tensor([1, 1])))   # a list of ints


def test_masked_fill_value_gradient_and_dtypes_match_torch():
    mask = [True, False, True]
    x = T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    v = T(0.5, requires_grad=True)
    out = x.masked_fill(ad.tensor(mask), v)
    (out * T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    tx = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64, requires_grad=True)
    tv = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    tout = tx.masked_fill(torch.tensor(mask), tv)
    (tout * torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)).sum().backward()
    same(out, tout)
    same(x.grad, tx.grad)
    same(v.grad, tv.grad)
    same(ad.masked_fill(I([1, 2, 3]), ad.tensor(mask), 2.7),
         torch.tensor([1, 2, 3]).masked_fill(torch.tensor(mask), 2.7))     # the tensor's dtype stays
    same(ad.masked_fill(T([1.0, NAN]), ad.tensor([False, True]), 0.0),
         torch.tensor([1.0, NAN], dtype=torch.float64).masked_fill(torch.tensor([False, True]), 0.0))


def test_index_put_accumulate_adds_repeated_indices_as_torch():
    idx = [0, 2, 0, 0]
    x = T([1.0, 2.0, 3.0], requires_grad=True)
    v = T([1.0, 10.0, 100.0, 1000.0], requires_grad=True)
    out = ad.index_put(x, (I(idx),), v, accumulate=True)
    (out * T([1.0, 2.0, 3.0])).sum().backward()
    tx = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    tv = torch.tensor([1.0, 10.0, 100.0, 1000.0], dtype=torch.float64, requires_grad=True)
    tout = torch.index_put(tx, (torch.tensor(idx),), tv, accumulate=True)
    (tout * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    same(out, tout)
    same(x.grad, tx.grad)
    same(v.grad, tv.grad)
    same(x.index_put((I([1]),), T(5.0), accumulate=True), tx.index_put((torch.tensor([1]),),
                                                                       torch.tensor(5.0, dtype=torch.float64),
                                                                       accumulate=True))


INDEX_ERRORS = [
    ("gather-out-of-range", lambda m, x, i: m.gather(x, 1, i), [[3], [0]], ad.IndexError_, "index 3 is out of range"),
    ("gather-negative", lambda m, x, i: m.gather(x, 1, i), [[-1], [0]], ad.IndexError_, "index -1 is out of range"),
    ("gather-ndim", lambda m, x, i: m.gather(x, 1, i), [1, 0], ad.ShapeError, "as many dims"),
    ("gather-larger", lambda m, x, i: m.gather(x, 1, i), [[0], [0], [1]], ad.ShapeError, "larger"),
    ("gather-dim", lambda m, x, i: m.gather(x, 2, i), [[0], [0]], ad.IndexError_, "dim 2 is out of range"),
    ("scatter-out-of-range", lambda m, x, i: m.scatter(x, 0, i, 1.0), [[2, 0, 0]], ad.IndexError_, "out of range"),
    ("scatter_add-larger-than-src", lambda m, x, i: m.scatter_add(x, 1, i, m.ones(2, 1, dtype=m.float64)),
     [[0, 1], [0, 1]], ad.ShapeError, "src"),
    ("index_select-2d", lambda m, x, i: m.index_select(x, 0, i), [[0]], ad.ShapeError, "1-d"),
    ("index_select-out-of-range", lambda m, x, i: m.index_select(x, 1, i), [3], ad.IndexError_, "out of range"),
    ("index_select-negative", lambda m, x, i: m.index_select(x, 1, i), [-1], ad.IndexError_, "out of range"),
]


@pytest.mark.parametrize("case", INDEX_ERRORS, ids=[c[0] for c in INDEX_ERRORS])
def test_index_errors_are_language_errors_where_torch_raises(case):
    _, fn, idx, exc, words = case
    with pytest.raises(exc, match=words):
        fn(ad, ad.zeros(2, 3, dtype=ad.float64), I(idx))
    with pytest.raises((RuntimeError, IndexError)):
        fn(torch, torch.zeros(2, 3, dtype=torch.float64), torch.tensor(idx))


def test_index_dtype_and_mask_errors():
    x = ad.zeros(2, 3)
    with pytest.raises(ad.DTypeError, match="int64"):
        ad.gather(x, 1, ad.tensor([[0.0], [1.0]]))
    with pytest.raises(ad.DTypeError, match="int64"):
        ad.index_select(x, 0, ad.tensor([True, False]))
    with pytest.raises(ad.DTypeError, match="bool"):
        ad.masked_fill(x, I([1, 0, 1]), 1.0)
    with pytest.raises(ad.ShapeError, match="broadcast"):
        ad.masked_fill(x, ad.tensor([True, False]), 1.0)
    with pytest.raises(ad.ShapeError, match="0-d"):
        ad.masked_fill(x, ad.tensor([True, False, True]), ad.tensor([1.0]))
    with pytest.raises(ad.DTypeError, match="src"):
        ad.scatter(x, 1, I([[0], [1]]), ad.ones(2, 1, dtype=ad.float32))
    with pytest.raises(ad.DTypeError, match="integers"):
        ad.index_select(x, 0, [0.5])


# -- max/min: an integer second argument is a dim; empty tensors ------------------------------------

def test_max_min_with_an_integer_second_argument_reduce_over_that_dim_as_torch():
    data = [[1.0, 5.0, 2.0], [3.0, 3.0, 0.0]]
    x, t = T(data), torch.tensor(data, dtype=torch.float64)
    for name in ("max", "min"):
        f, tf = getattr(ad, name), getattr(torch, name)
        for args in ((1,), (0,), (-1, True)):
            v, i = f(x, *args)
            tv, ti = tf(t, *args)
            same(v, tv)
            same(i, ti)
        same(getattr(x, name)(1).indices, getattr(t, name)(1).indices)
    # a float or a tensor second argument stays elementwise
    np.testing.assert_array_equal(ad.max(x, 2.0).numpy(), np.maximum(data, 2.0))
    np.testing.assert_array_equal(ad.min(x, T([0.0, 4.0, 1.0])).numpy(), np.minimum(data, [0.0, 4.0, 1.0]))
    with pytest.raises(ad.TypeError_, match="once"):
        ad.max(x, 1, dim=0)


def test_max_with_an_integer_second_argument_in_the_language():
    s = ad.Session()
    s.run("x = tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=true)\n"
          "r = max(x, 1)\nr.values.sum().backward()\ne = max(x, 0.0)\nk = x.min(0, true)")
    np.testing.assert_array_equal(s.run("r.indices").numpy(), [1, 0])
    np.testing.assert_array_equal(s.run("x.grad").numpy(), [[0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(s.run("e").numpy(), [[1.0, 5.0], [3.0, 2.0]])
    assert s.run("k[0]").shape == (1, 2)


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin"])
def test_extremes_of_empty_tensors_follow_torch(name):
    f, tf = getattr(ad, name), getattr(torch, name)
    z, tz = ad.zeros(0, 3), torch.zeros(0, 3, dtype=torch.float64)
    got, want = f(z, dim=1), tf(tz, dim=1)
    if name in ("max", "min"):
        same(got.values, want.values)
        same(got.indices, want.indices)
    else:
        same(got, want)
    with pytest.raises(ad.IndexError_, match="dim 0 has size 0"):
        f(z, dim=0)
    with pytest.raises(IndexError):
        tf(tz, dim=0)
    with pytest.raises(ad.RuntimeError_, match=f"{name} of an empty tensor"):
        f(z)
    with pytest.raises(RuntimeError):
        tf(tz)


def test_amax_over_several_dims_names_the_empty_one_as_torch():
    with pytest.raises(ad.IndexError_, match="dim 1 has size 0"):
        ad.amax(ad.zeros(2, 0), dim=[0, 1])
    with pytest.raises(IndexError, match="dim 1"):
        torch.amax(torch.zeros(2, 0), dim=(0, 1))


def test_logsumexp_softmax_of_empty_tensors_follow_torch():
    z, tz = ad.zeros(0, 3), torch.zeros(0, 3, dtype=torch.float64)
    same(ad.logsumexp(z, dim=0), torch.logsumexp(tz, dim=0))           # -inf: the log of an empty sum
    same(ad.logsumexp(z, dim=[0, 1]), torch.logsumexp(tz, dim=(0, 1)))
    same(ad.logsumexp(z, dim=1), torch.logsumexp(tz, dim=1))           # empty
    same(ad.logsumexp(z, dim=0, keepdim=True), torch.logsumexp(tz, dim=0, keepdim=True))
    for d in (0, 1):
        same(ad.softmax(z, dim=d), torch.softmax(tz, dim=d))
        same(ad.log_softmax(z, dim=d), torch.log_softmax(tz, dim=d))
    x = ad.zeros(3, 0, requires_grad=True)
    ad.logsumexp(x, dim=1).sum().backward()
    assert x.grad.shape == (3, 0)


# -- reshape(shape=), permute(dims=) ----------------------------------------------------------------

def test_reshape_and_permute_take_torchs_keywords():
    x = ad.arange(6.0)
    t = torch.arange(6.0, dtype=torch.float64)
    same(ad.reshape(x, shape=[2, 3]), torch.reshape(t, shape=(2, 3)))
    same(ad.permute(ad.reshape(x, shape=(1, 2, 3)), dims=[2, 0, 1]),
         torch.permute(t.reshape(1, 2, 3), dims=(2, 0, 1)))
    assert x.reshape(shape=[3, -1]).shape == (3, 2)
    with pytest.raises(ad.TypeError_, match="once"):
        ad.reshape(x, 2, 3, shape=[2, 3])
    s = ad.Session()
    assert s.run("permute(reshape(arange(6.0), shape=[2, 3]), dims=[1, 0])").shape == (3, 2)


def test_sort_topk_gather_in_the_language():
    s = ad.Session()
    s.run("x = tensor([3.0, 1.0, 2.0], requires_grad=true)\n"
          "r = sort(x, descending=true)\n"
          "t = topk(x, 2)\n"
          "(r.values * tensor([1.0, 10.0, 100.0])).sum().backward()")
    np.testing.assert_array_equal(s.run("r[1]").numpy(), [0, 2, 1])
    np.testing.assert_array_equal(s.run("t.indices").numpy(), [0, 2])
    np.testing.assert_array_equal(s.run("x.grad").numpy(), [1.0, 100.0, 10.0])
    np.testing.assert_array_equal(
        s.run("gather(x, 0, tensor([2, 2], dtype=int64))").numpy(), [2.0, 2.0])
    with pytest.raises(ad.DTypeError, match="int64"):
        s.run("gather(x, 0, tensor([2, 2]))")


def test_a_compiled_step_sorts_gathers_and_scatters_again_on_every_call():
    def f(x, i):
        loss = ((ad.sort(x, dim=1).values * ad.arange(3.0)).sum() + ad.gather(x, 1, i).sum()
                + ad.scatter_add(x, 1, i, ad.gather(x, 1, i)).sum() + ad.topk(x, 2).values.sum()
                + ad.masked_fill(x, x > 0, 0.5).sum() + ad.index_select(x, 1, i[0]).sum())
        loss.backward()
        return loss.detach()

    cf = ad.compile(f)
    i = I([[0, 2], [1, 1]])
    for k in range(3):      # new values each call: a different order to sort
        data = np.random.default_rng(k).standard_normal((2, 3)).tolist()
        x, x2 = T(data, requires_grad=True), T(data, requires_grad=True)
        assert cf(x, i).item() == f(x2, i).item()
        np.testing.assert_array_equal(x.grad.numpy(), x2.grad.numpy())
    assert cf.eager_reason is None


def test_in_place_forms_write_into_the_tensor_and_record_as_torch():
    w = T([1.0, 2.0, 3.0], requires_grad=True)
    v = T(5.0, requires_grad=True)
    y = w * 2
    y.masked_fill_(ad.tensor([True, False, False]), v)
    y.scatter_(0, I([1]), 7.0)
    y.index_put_((I([2, 2]),), T([1.0, 1.0]), accumulate=True)
    y.scatter_add_(0, I([0]), w[:1])
    (y * T([1.0, 2.0, 3.0])).sum().backward()
    tw = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    tv = torch.tensor(5.0, dtype=torch.float64, requires_grad=True)
    ty = tw * 2
    ty.masked_fill_(torch.tensor([True, False, False]), tv)
    ty.scatter_(0, torch.tensor([1]), 7.0)
    ty.index_put_((torch.tensor([2, 2]),), torch.tensor([1.0, 1.0], dtype=torch.float64), accumulate=True)
    ty.scatter_add_(0, torch.tensor([0]), tw[:1])
    (ty * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    same(y, ty)
    same(w.grad, tw.grad)
    same(v.grad, tv.grad)
    with pytest.raises(ad.AutogradError, match="masked_fill_ on a leaf"):
        w.masked_fill_(w > 0, 0.0)


def test_an_integer_dim_out_of_range_says_how_to_write_the_elementwise_form():
    with pytest.raises(ad.IndexError_, match=r"for the elementwise maximum write max\(x, 1.0\)"):
        ad.max(T([1.0, 2.0]), 1)
    with pytest.raises(IndexError):
        torch.max(torch.tensor([1.0, 2.0]), 1)
    with pytest.raises(ad.IndexError_, match=r"min\(x, 3.0\)"):
        ad.Session().run("x = tensor([1.0, -2.0])\nmin(x, 3)")


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_over_a_dim_with_nan_and_integers_match_torch(name):
    for data in ([[1.0, NAN, 3.0], [NAN, NAN, 0.0], [2.0, 2.0, -1.0]], [[1, 5, 5], [0, -3, 0]]):
        dt = ad.float64 if isinstance(data[0][0], float) else ad.int64
        x = T(data, dtype=dt)
        t = torch.tensor(data, dtype=torch.float64 if dt is ad.float64 else torch.int64)
        for d in (0, 1):
            v, i = getattr(ad, name)(x, d)
            tv, ti = getattr(torch, name)(t, d)
            same(v, tv)
            same(i, ti)
