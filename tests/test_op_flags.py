"""Note [op flags] (ops/registry.py): apply reads an op class's flags from one OpFlags per class,
made on its first op; they must agree with the class attributes, for subclasses too."""
from __future__ import annotations

import numpy as np

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
