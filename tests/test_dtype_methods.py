"""x.float() .double() .int() .long() .bool() and the int32 dtype, against PyTorch: values, dtypes,
what keeps the graph, gradients, promotion with int32, and the language's names for them."""
from __future__ import annotations

import io

import numpy as np
import pytest

import autodsl as ad
from autodsl.errors import DTypeError

torch = pytest.importorskip("torch")

_TORCH = {"float": torch.float32, "double": torch.float64, "int": torch.int32, "long": torch.int64,
          "bool": torch.bool}
_AD = {"float": ad.float32, "double": ad.float64, "int": ad.int32, "long": ad.int64, "bool": ad.bool}
_DATA = [[1.5, -2.7, 0.0], [3.99, -0.5, 7.0]]


def _t(dtype_name):
    return torch.tensor(_DATA, dtype=_TORCH[dtype_name]) if dtype_name != "bool" else torch.tensor(_DATA) != 0


def _a(dtype_name):
    return ad.tensor(np.asarray(_t(dtype_name).numpy()))


@pytest.mark.parametrize("method", list(_TORCH))
@pytest.mark.parametrize("source", ["double", "float", "long", "int", "bool"])
def test_dtype_methods_values_and_dtypes_match_pytorch(method, source):
    x, tx = _a(source), _t(source)
    assert x.dtype is _AD[source]
    y, ty = getattr(x, method)(), getattr(tx, method)()
    assert y.dtype is _AD[method] and str(y.dtype) == str(ty.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
    assert (y is x) == (ty.dtype == tx.dtype)       # already of that dtype: the tensor itself, as torch's


@pytest.mark.parametrize("chain", [("float",), ("double",), ("float", "double"), ("double", "float", "double")])
def test_float_double_keep_the_graph_and_the_gradient_matches_pytorch(chain):
    data = [[0.3, -1.7], [2.25, 0.1]]
    x = ad.tensor(data, dtype=ad.float64, requires_grad=True)
    tx = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    y, ty = x, tx
    for m in chain:
        y, ty = getattr(y, m)(), getattr(ty, m)()
    assert y.requires_grad and y.dtype is _AD[chain[-1]]
    (y * y * y).sum().backward()
    (ty * ty * ty).sum().backward()
    assert x.grad.dtype is ad.float64                  # the gradient comes back in x's dtype
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_float_of_a_float32_leaf_gradient_is_float32_as_in_pytorch():
    x = ad.tensor([0.5, -1.5], dtype=ad.float32, requires_grad=True)
    tx = torch.tensor([0.5, -1.5], dtype=torch.float32, requires_grad=True)
    (x.double() ** 2).sum().backward()
    (tx.double() ** 2).sum().backward()
    assert x.grad.dtype is ad.float32
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    assert x.double().grad_fn.name == "ToCopyBackward"


@pytest.mark.parametrize("method", ["int", "long", "bool"])
def test_integer_and_bool_casts_leave_the_graph(method):
    x = ad.tensor([1.5, -2.5], requires_grad=True)
    tx = torch.tensor([1.5, -2.5], requires_grad=True)
    y, ty = getattr(x, method)(), getattr(tx, method)()
    assert y.requires_grad is ty.requires_grad is False
    assert y.grad_fn is None and ty.grad_fn is None
    np.testing.assert_array_equal(y.numpy(), ty.numpy())


def test_int32_promotion_matches_pytorch():
    a, ta = ad.tensor([7, -3, 2], dtype=ad.int32), torch.tensor([7, -3, 2], dtype=torch.int32)
    b, tb = ad.tensor([2, 2, 5], dtype=ad.int64), torch.tensor([2, 2, 5], dtype=torch.int64)
    f, tf = ad.tensor([0.5, 1.0, 2.0], dtype=ad.float32), torch.tensor([0.5, 1.0, 2.0])
    for ours, theirs in [(a + 5, ta + 5), (a * a, ta * ta), (a + b, ta + tb), (b - a, tb - ta),
                         (a * f, ta * tf), (a % 4, ta % 4), (a // 2, ta // 2), (a.sum(), ta.sum()),
                         (a.max(), ta.max()), (-a, -ta), (a > 0, ta > 0), (a[1:], ta[1:]),
                         (a.prod(), ta.prod()), (a.to(ad.float64), ta.to(torch.float64))]:
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch."), (ours, theirs)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_int32_from_numpy_and_by_name():
    t = ad.tensor(np.arange(3, dtype=np.int32))
    assert t.dtype is ad.int32                         # torch.tensor(np int32) is int32 too
    assert ad.zeros(2, dtype="int32").dtype is ad.int32
    assert ad.zeros(2, dtype="int").dtype is ad.int32   # torch.int is int32
    assert ad.tensor([1.9, -1.9]).to("int32").tolist() == [1, -1]
    assert ad.tensor(np.arange(3, dtype=np.int16)).dtype is ad.int64
    with pytest.raises(DTypeError) as info:
        ad.zeros(2, dtype="int8")
    assert "int32" in info.value.message


def test_int32_shown_with_its_dtype_as_pytorch_does():
    assert repr(ad.tensor([1, 2], dtype=ad.int32)) == "tensor([1, 2], dtype=int32)"
    assert repr(ad.tensor([1, 2], dtype=ad.int64)) == "tensor([1, 2])"
    assert repr(torch.tensor([1, 2], dtype=torch.int32)) == "tensor([1, 2], dtype=torch.int32)"


def test_dtype_methods_in_the_language():
    out = io.StringIO()
    s = ad.Session(out=out, echo=False)
    s.run("x = tensor([1.5, -2.7], requires_grad=true)\n"
          "y = x.float(); d = y.double(); i = x.int(); n = x.long(); b = x.bool()\n"
          "(d * d).sum().backward()\n"
          "ok = y.dtype == float32 and d.dtype == float64 and i.dtype == int32 and n.dtype == int64 "
          "and b.dtype == bool\n"
          "print(i, n.requires_grad)")
    assert s["ok"] is True
    assert out.getvalue() == "tensor([ 1, -2], dtype=int32) false\n"
    np.testing.assert_allclose(s["x"].grad.numpy(), 2 * np.float32([1.5, -2.7]).astype(np.float64))
    assert s.run("int32 == tensor([3], dtype=int32).dtype") is True
    assert s.run("x.to(int32).dtype == int32") is True
