"""Where torch refuses a dtype, autodsl refuses it too, and computes what torch computes elsewhere.

Found by comparing with torch 2.13: integer inputs to the ops torch only defines on floating
tensors, class indices that are not int64, a loss weight of another dtype than the input,
results written in place into a lower kind (bool < integer < floating), subtraction with bool
operands, ``**=`` (in place, as torch's), mse_loss's dtype (torch broadcasts before promoting),
and cross_entropy's label smoothing over no classes (no Python error).
"""
import numpy as np
import pytest

import autodsl as ad
from autodsl.errors import AutogradError, DTypeError, ShapeError

X = np.random.default_rng(0).standard_normal((3, 4))


@pytest.mark.parametrize("call", [
    lambda t: ad.softmax(t, 0), lambda t: ad.log_softmax(t, 0), lambda t: t.var(), lambda t: t.std(),
    lambda t: t.norm(), lambda t: t.norm(p=1), lambda t: t.mean(),
    lambda t: ad.cross_entropy(t.reshape(1, 3), ad.tensor([0], dtype=ad.int64)),
    lambda t: ad.nll_loss(t.reshape(1, 3), ad.tensor([0], dtype=ad.int64)),
    lambda t: ad.mse_loss(t, t),
], ids=["softmax", "log_softmax", "var", "std", "norm", "norm1", "mean", "cross_entropy", "nll_loss", "mse_loss"])
@pytest.mark.parametrize("dtype", [ad.int64, ad.int32, ad.bool], ids=["int64", "int32", "bool"])
def test_floating_only_ops_refuse_integer_tensors(call, dtype):
    with pytest.raises(DTypeError, match="needs a floating tensor"):
        call(ad.tensor([1, 0, 2], dtype=dtype))


@pytest.mark.parametrize("fn", [ad.cross_entropy, ad.nll_loss])
@pytest.mark.parametrize("dtype", [ad.int32, ad.bool])
def test_class_indices_must_be_int64(fn, dtype):
    target = ad.tensor([0, 1, 1], dtype=dtype)
    with pytest.raises(DTypeError, match="int64 class indices"):
        fn(ad.tensor(X), target)
    assert np.isfinite(float(fn(ad.tensor(X), target.to(dtype=ad.int64))))


@pytest.mark.parametrize("fn", [ad.cross_entropy, ad.nll_loss])
def test_a_weight_of_another_dtype_is_refused(fn):
    y = ad.tensor([0, 1, 2], dtype=ad.int64)
    with pytest.raises(DTypeError, match="weight is float32 but the input is float64"):
        fn(ad.tensor(X), y, weight=ad.ones(4, dtype=ad.float32))
    with pytest.raises(DTypeError, match="weight is float64 but the input is float32"):
        fn(ad.tensor(X, dtype=ad.float32), y, weight=ad.ones(4, dtype=ad.float64))
    same = fn(ad.tensor(X), y, weight=ad.ones(4))
    assert float(same) == pytest.approx(float(fn(ad.tensor(X), y)), rel=1e-15)


def test_probability_targets_take_a_weight_of_another_dtype():
    p = ad.softmax(ad.tensor(X[::-1].copy()), 1)
    got = ad.cross_entropy(ad.tensor(X), p, weight=ad.ones(4, dtype=ad.float32))
    assert float(got) == pytest.approx(float(ad.cross_entropy(ad.tensor(X), p)), rel=1e-6)


def test_mse_loss_promotes_as_torch_does_after_broadcasting():
    x = ad.tensor([1.0, 2.0, 3.5], dtype=ad.float32, requires_grad=True)
    t = ad.tensor(0.1, dtype=ad.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="broadcast"):     # torch warns of the broadcast too
        loss = ad.mse_loss(x, t)
    assert loss.dtype is ad.float64
    loss.backward()
    xs = np.array([1.0, 2.0, 3.5], dtype=np.float32).astype(np.float64)
    assert float(loss) == pytest.approx(np.mean((xs - 0.1) ** 2), rel=1e-15)
    assert float(t.grad) == pytest.approx(-2 * np.mean(xs - 0.1), rel=1e-15)    # float64 all through
    assert x.grad.dtype is ad.float32
    np.testing.assert_allclose(x.grad.numpy(), (2 * (xs - 0.1) / 3).astype(np.float32), rtol=1e-7)


@pytest.mark.filterwarnings("ignore::UserWarning")     # (torch's own, on the broadcast and float())
def test_mse_loss_against_torch():
    torch = pytest.importorskip("torch")
    xt = torch.tensor([1.0, 2.0, 3.5], requires_grad=True)
    tt = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    lt = torch.nn.functional.mse_loss(xt, tt)
    lt.backward()
    x = ad.tensor([1.0, 2.0, 3.5], dtype=ad.float32, requires_grad=True)
    t = ad.tensor(0.1, dtype=ad.float64, requires_grad=True)
    loss = ad.mse_loss(x, t)
    loss.backward()
    assert str(lt.dtype) == "torch.float64" and loss.dtype is ad.float64
    assert float(loss) == pytest.approx(float(lt), rel=1e-15)
    assert float(t.grad) == pytest.approx(float(tt.grad), rel=1e-15)


def test_ipow_writes_in_place():
    x = ad.tensor([1.0, 2.0, 3.0])
    alias = x
    version = x._version[0]
    x **= 2
    assert x is alias and alias.tolist() == [1.0, 4.0, 9.0] and x._version[0] == version + 1
    y = ad.tensor([4.0, 9.0])
    assert y.pow_(0.5) is y and y.tolist() == [2.0, 3.0]


def test_ipow_refusals():
    i = ad.tensor([4, 9], dtype=ad.int64)
    with pytest.raises(DTypeError, match="the result is float64 but the tensor written into is int64"):
        i **= 0.5
    assert i.tolist() == [4, 9]
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(AutogradError, match="leaf tensor that requires grad"):
        w **= 2
    with ad.no_grad():
        w **= 2
    assert w.tolist() == [1.0, 4.0]
    s = ad.tensor(2.0)
    with pytest.raises(ShapeError):
        s **= ad.tensor([1.0, 2.0, 3.0])


def test_ipow_records_when_grad_is_on():
    x = ad.tensor([1.5, 2.0], requires_grad=True)
    y = x * 1.0
    y **= 3
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.array([1.5, 2.0]) ** 2, rtol=1e-15)


@pytest.mark.parametrize("write", [
    lambda b: b.__iadd__(ad.tensor([2, 3], dtype=ad.int64)),
    lambda b: b.__imul__(2), lambda b: b.__ifloordiv__(2), lambda b: b.__imod__(2),
    lambda b: b.__iadd__(1.5),
], ids=["+= int", "*= 2", "//= 2", "%= 2", "+= 1.5"])
def test_no_result_is_written_into_a_lower_kind(write):
    b = ad.tensor([True, False])
    with pytest.raises(DTypeError, match="tensor written into is bool"):
        write(b)
    assert b.tolist() == [True, False]


def test_writes_into_the_same_or_a_higher_kind_still_work():
    b = ad.tensor([True, False])
    b += ad.tensor([True, True])            # bool + bool stays bool
    assert b.tolist() == [True, True]
    i = ad.tensor([1, 2], dtype=ad.int64)
    i += ad.tensor([True, False])
    i *= 3
    assert i.tolist() == [6, 6]
    f = ad.tensor([1.0, 2.0], dtype=ad.float32)
    f += ad.tensor([1.0, 1.0], dtype=ad.float64)     # float64 into float32: one kind
    assert f.dtype is ad.float32 and f.tolist() == [2.0, 3.0]
    i[0] = 2.7                              # an indexed write casts, as torch's
    assert i.tolist() == [2, 6]


@pytest.mark.parametrize("expr", [
    lambda f, b: f - b, lambda f, b: b - f, lambda f, b: f - True, lambda f, b: False - f,
    lambda f, b: b - b, lambda f, b: ad.sub(f, b), lambda f, b: f.__isub__(b),
    lambda f, b: ad.tensor([1, 2], dtype=ad.int64) - b,
], ids=["f-b", "b-f", "f-True", "False-f", "b-b", "sub", "-=", "int-b"])
def test_subtraction_with_bool_is_refused(expr):
    f = ad.tensor([1.0, 2.0])
    b = ad.tensor([True, False])
    with pytest.raises(DTypeError, match="cannot subtract (with a bool|two bool)"):
        expr(f, b)
    assert f.tolist() == [1.0, 2.0]
    assert (f - 1).tolist() == [0.0, 1.0] and (f - b.to(dtype=ad.float64)).tolist() == [0.0, 2.0]


@pytest.mark.parametrize("reduction,want", [("mean", "nan"), ("sum", -0.0), ("none", -0.0)])
def test_label_smoothing_over_no_classes(reduction, want):
    got = ad.cross_entropy(ad.zeros(0), ad.zeros(0), label_smoothing=0.3, reduction=reduction)
    if want == "nan":
        assert np.isnan(float(got))
    else:
        assert float(got) == 0.0 and np.signbit(float(got))


def _int_pow_reference(a, b):
    """torch's integer a ** b: a negative exponent gives 1 (base 1), +-1 (base -1) or 0."""
    if b >= 0:
        return a ** b
    return 1 if a == 1 else (-1 if b % 2 else 1) if a == -1 else 0


@pytest.mark.parametrize("dtype", [ad.int64, ad.int32])
def test_integer_tensor_powers_with_negative_exponents(dtype):
    bases = [0, 1, -1, 2, -2, 3, -1, 1, 5, -3]
    exps = [-1, -2, -3, -1, -2, -1, -2, 5, 2, 3]
    got = ad.tensor(bases, dtype=dtype) ** ad.tensor(exps, dtype=dtype)
    assert got.dtype is dtype
    assert got.tolist() == [_int_pow_reference(a, b) for a, b in zip(bases, exps)]
    assert (2 ** ad.tensor([3, -7, 4], dtype=dtype)).tolist() == [8, 0, 16]
    with pytest.raises(ad.ValueError_, match="negative integer powers"):
        ad.tensor(bases, dtype=dtype) ** -2            # a number exponent: refused, as torch
    torch = pytest.importorskip("torch")
    tdt = torch.int64 if dtype is ad.int64 else torch.int32
    assert (torch.tensor(bases, dtype=tdt) ** torch.tensor(exps, dtype=tdt)).tolist() == got.tolist()


@pytest.mark.parametrize("exponent", [np.int64(-1), np.int32(-2), -3])
def test_a_negative_number_exponent_of_any_integer_type_is_refused(exponent):
    x = ad.tensor([2, 3], dtype=ad.int64)
    with pytest.raises(ad.ValueError_, match="negative integer powers"):
        x ** exponent
    with pytest.raises(ad.ValueError_, match="negative integer powers"):
        x.pow_(exponent)
    assert x.tolist() == [2, 3]


def test_a_bool_array_from_a_pickle_is_refused_in_a_subtraction_too():
    import pickle
    m = pickle.loads(pickle.dumps(ad.tensor([True, False])))
    for expr in (lambda: m - 1, lambda: 1.0 - m, lambda: ad.tensor(pickle.loads(pickle.dumps(np.array([True])))) - 1):
        with pytest.raises(DTypeError, match="cannot subtract with a bool"):
            expr()


@pytest.mark.parametrize("make", [
    lambda x: ad.relu(x), lambda x: ad.maximum(x, ad.tensor(0.5)), lambda x: ad.maximum(ad.tensor(0.5), x),
    lambda x: ad.minimum(x, ad.tensor(0.5)), lambda x: ad.minimum(ad.tensor(0.5), x),
], ids=["relu", "maximum-a", "maximum-b", "minimum-a", "minimum-b"])
@pytest.mark.parametrize("x0", [1.5, -0.5, 0.5])
def test_the_rules_with_bool_masks_run_in_the_language(make, x0):
    """The trace's rule text is an expression the language runs on tensors (no bool
    subtraction), and it gives the gradient the op sent."""
    from autodsl.core import trace as trace_mod
    x = ad.tensor(x0, requires_grad=True)
    y = make(x)
    kept = []
    with trace_mod.tracing(False, sink=kept.append):
        y.backward()
    (tr,) = kept
    sends = [sd for r in tr for sd in r.get("sends", []) if sd.get("rule") not in (None, "grad", "0")]
    assert sends
    a, b = (x, ad.tensor(0.5)) if y.grad_fn.name == "ReluBackward" or y.grad_fn.next_edges[0] is not None \
        else (ad.tensor(0.5), x)
    for sd in sends:
        s = ad.Session()
        s["a"], s["b"], s["grad"] = a.detach(), b.detach(), ad.tensor(1.0)
        s.run(f"r = {sd['rule']}")
        assert float(s["r"]) == sd["grad"], sd


@pytest.mark.parametrize("call", [
    lambda b: abs(b), lambda b: ad.relu(b), lambda b: b ** b, lambda b: ad.relu(b[0]),
], ids=["abs", "relu", "bool ** bool", "relu 0-d"])
def test_bool_tensors_refused_where_torch_refuses_them(call):
    with pytest.raises(DTypeError, match="bool"):
        call(ad.tensor([True, False, True]))


def test_bool_tensors_where_torch_computes():
    b = ad.tensor([True, False, True])
    assert (b ** 2).tolist() == [1, 0, 1] and (b ** 2).dtype is ad.int64
    assert (2 ** b).tolist() == [2, 1, 2]
    c = ad.clamp(b, min=0)
    assert c.dtype is ad.int64 and c.tolist() == [1, 0, 1]          # torch: int64 too
    f = ad.clamp(b, min=0.5)
    assert f.dtype.is_floating and f.tolist() == [1.0, 0.5, 1.0]
    assert ad.relu(b.to(dtype=ad.float64)).tolist() == [1.0, 0.0, 1.0]
