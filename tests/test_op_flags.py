"""Note [op flags] (ops/registry.py): apply reads an op class's flags from one OpFlags per class,
made on its first op; they must agree with the class attributes, for subclasses too."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import autodsl as ad
from autodsl.ops.registry import REGISTRY, Op, OpFlags, apply, mark_pointwise

FIELDS = ("promote", "floating", "differentiable", "never_differentiable", "pointwise", "moves_device", "view")


def _agrees(cls) -> None:
    flags = OpFlags(cls)
    for name in FIELDS:
        want = getattr(cls, name)
        got = getattr(flags, name)
        assert got == (want if name in ("promote", "differentiable") else bool(want)), (cls, name)
    assert flags.pair is (cls.promote is True)


def test_every_registered_op_has_flags_that_agree_with_its_class():
    x = ad.tensor([0.5, 2.0], requires_grad=True)
    ((x * 2.0 + 1.0).sin().exp().sum()).backward()          # some classes have made theirs
    assert len(REGISTRY) > 100
    for info in REGISTRY.values():
        _agrees(info.cls)
        made = info.cls.__dict__.get("_op_flags")
        if made is not None:
            assert made.cls is info.cls
            for name in FIELDS:
                assert getattr(made, name) == getattr(OpFlags(info.cls), name), (info.cls, name)
    mul = REGISTRY["mul"].cls
    assert mul.__dict__["_op_flags"].pointwise and mul.__dict__["_op_flags"].pair


class _Twice(Op):
    """Not registered (defop): the suite's checks of every registered op do not see it."""
    __slots__ = ()
    name, op_name = "TwiceBackward", "twice"
    formula = None

    def forward(self, a):
        return a * 2.0

    def backward(self, g):
        return (g * 2.0,)


class _TwiceView(_Twice):
    """A subclass whose flags differ from its base's: it must not use the base's OpFlags."""
    __slots__ = ()
    view = True


def test_a_subclass_gets_its_own_flags_and_mark_pointwise_resets_them():
    x = ad.tensor([1.0, 3.0], requires_grad=True)
    y = apply(_Twice, x)
    np.testing.assert_array_equal(y.numpy(), [2.0, 6.0])
    assert _Twice.__dict__["_op_flags"].view is False and not _Twice._op_flags.pointwise
    apply(_TwiceView, x)
    assert _TwiceView.__dict__["_op_flags"].cls is _TwiceView and _TwiceView._op_flags.view is True
    assert _Twice._op_flags.view is False
    mark_pointwise(_Twice)
    assert _Twice.__dict__["_op_flags"] is None and _Twice.pointwise is True
    z = apply(_Twice, x)
    assert _Twice._op_flags.pointwise is True
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


# Note [0-d fast path]: +, - and * of two 0-d float64 arrays compute on Python floats.

SPECIAL = [0.5, -0.0, 0.0, 1e308, -1e308, 5e-324, float("inf"), float("-inf"), float("nan"), 3.0, -2.5e-310]


@pytest.mark.parametrize("name", ["add", "sub", "mul"])
def test_the_0d_fast_path_gives_numpys_values_bit_for_bit(name):
    fn = {"add": ad.add, "sub": ad.sub, "mul": ad.mul}[name]
    ufunc = {"add": np.add, "sub": np.subtract, "mul": np.multiply}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # neither path may warn (overflow, inf - inf)
        for a in SPECIAL:
            for b in SPECIAL:
                got = fn(ad.tensor(a, dtype=ad.float64), ad.tensor(b, dtype=ad.float64))._data
                with np.errstate(all="ignore"):
                    want = ufunc(np.float64(a), np.float64(b))
                assert type(got) is np.ndarray and got.shape == () and got.dtype == np.float64
                assert got.tobytes() == np.asarray(want).tobytes() or (np.isnan(got) and np.isnan(want)), (a, b)
    assert REGISTRY[name].cls._op_flags.f64


def test_the_0d_fast_path_keeps_the_graph_and_the_gradients():
    x = ad.tensor(0.5, requires_grad=True, dtype=ad.float64)
    w = ad.tensor(-3.0, requires_grad=True, dtype=ad.float64)
    y = (x * w - x) * 0.999 + w * w
    y.backward()
    assert y.grad_fn.name == "AddBackward" and float(y) == pytest.approx((0.5 * -3.0 - 0.5) * 0.999 + 9.0)
    assert float(x.grad) == pytest.approx((-3.0 - 1.0) * 0.999) and float(w.grad) == pytest.approx(0.5 * 0.999 - 6.0)
    v = ad.tensor(2.0, dtype=ad.float64)       # only w's gradient is needed: it keeps v, not w
    z = v * w
    assert z.grad_fn._saved[0].tensor is v and z.grad_fn._saved[1] is None


def test_the_0d_fast_path_leaves_other_dtypes_and_shapes_to_numpy():
    assert ad.mul(ad.tensor(0.5, dtype=ad.float32), ad.tensor(3.0, dtype=ad.float32))._data.dtype == np.float32
    assert ad.add(ad.tensor([1.0], dtype=ad.float64), ad.tensor(2.0, dtype=ad.float64))._data.shape == (1,)
    assert ad.mul(ad.tensor(2, dtype=ad.int64), ad.tensor(3, dtype=ad.int64))._data.dtype == np.int64


class _OtherMul(REGISTRY["mul"].cls):
    """A subclass with a forward of its own: it must not take Mul's fast path."""
    __slots__ = ()

    def forward(self, a, b):
        return a * b + 1.0


def test_a_subclass_with_its_own_forward_does_not_take_the_fast_path():
    out = apply(_OtherMul, ad.tensor(2.0, dtype=ad.float64), ad.tensor(3.0, dtype=ad.float64))
    assert float(out) == 7.0 and _OtherMul._op_flags.f64 is False


def test_relus_0d_fast_path_gives_np_maximums_values_bit_for_bit():
    neg_nan = -np.float64("nan")
    for v in [*SPECIAL, neg_nan]:
        got = ad.relu(ad.tensor(v, dtype=ad.float64))._data
        want = np.maximum(np.asarray(v), np.zeros(()))
        assert type(got) is np.ndarray and got.shape == () and got.dtype == np.float64
        assert got.tobytes() == want.tobytes(), v
    assert REGISTRY["relu"].cls._op_flags.f64
    x = ad.tensor(-0.5, requires_grad=True, dtype=ad.float64)
    w = ad.tensor(0.25, requires_grad=True, dtype=ad.float64)
    (ad.relu(x) + ad.relu(w) * 3.0).backward()
    assert float(x.grad) == 0.0 and float(w.grad) == 3.0
