"""Note [op flags] (ops/registry.py): apply reads an op class's flags from one OpFlags per class,
made on its first op; they must agree with the class attributes, for subclasses too."""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import autodsl as ad
from autodsl.backend import floats
from autodsl.ops.formula import ARRAYS, FLOATS
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


# sin and cos: the C library's functions on finite floats, where they give NumPy's bits here
# (backend/floats.py checks that at import); NumPy's own value for infinities and nans.

TRIG_VALUES = [*SPECIAL, np.pi, -np.pi / 2, 1e22, 2.0 ** 1023, 1e-300, 710.0,
               *np.random.default_rng(7).uniform(-50.0, 50.0, 200).tolist()]


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_and_cos_of_0d_float64_are_numpys_bits_and_never_warn(name):
    fn, ufunc = getattr(ad, name), getattr(np, name)
    with np.errstate(all="ignore"):
        want = ufunc(np.array(TRIG_VALUES))     # (an array: the bits a 0-d result must share)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for v, w in zip(TRIG_VALUES, want):
            got = fn(ad.tensor(v, dtype=ad.float64))._data
            assert type(got) is np.ndarray and got.shape == () and got.dtype == np.float64
            assert got.tobytes() == w.tobytes() or (np.isnan(got) and np.isnan(w)), v
    assert REGISTRY[name].cls._op_flags.f64 is floats.LIBM_TRIG


def test_the_float_trig_functions_are_numpys_also_where_they_call_numpy():
    for fn, ufunc in ((floats.sin, np.sin), (floats.cos, np.cos)):
        for v in TRIG_VALUES:
            with np.errstate(all="ignore"):
                want = ufunc(np.float64(v))
            got = fn(float(v))
            assert type(got) is float
            assert np.float64(got).tobytes() == want.tobytes() or (np.isnan(got) and np.isnan(want)), v


# The formulas of those ops run on Python floats in a backward of 0-d float64 gradients
# (ops/formula.py's FLOATS): each must give the bits it gives on arrays.

F64_OPS = ["sub", "mul", "relu", "sin", "cos"]     # (add's formula passes g on: it stays on arrays)


def test_the_ops_whose_formulas_run_on_floats_are_the_fast_paths_ops():
    fast = {name for name, info in REGISTRY.items() if OpFlags(info.cls).f64_formula}
    assert fast == ({"sub", "mul", "relu", "sin", "cos"} if floats.LIBM_TRIG else {"sub", "mul", "relu"})
    assert OpFlags(REGISTRY["add"].cls).f64 and not OpFlags(REGISTRY["add"].cls).f64_formula
GRAD_VALUES = [0.5, -0.0, 0.0, 1e308, 5e-324, float("inf"), float("-inf"), float("nan"), -3.0]


@pytest.mark.parametrize("name", F64_OPS)
def test_each_fast_formula_gives_its_array_formulas_bits(name):
    cls = REGISTRY[name].cls
    if not OpFlags(cls).f64_formula:
        pytest.skip(f"{name} has no 0-d fast path on this machine (backend/floats.py)")
    arity = 1 if name in ("relu", "sin", "cos") else 2
    for g in GRAD_VALUES:
        for x in SPECIAL:
            for y in (SPECIAL if arity == 2 else [None]):
                inputs = [ad.tensor(x, requires_grad=True, dtype=ad.float64)]
                if arity == 2:
                    inputs.append(ad.tensor(y, requires_grad=True, dtype=ad.float64))
                with np.errstate(all="ignore"):
                    out = apply(cls, *inputs)
                node = out.grad_fn
                saved = node.saved_arrays if node._saved is not None else ()
                with np.errstate(all="ignore"):
                    want = node.formula(ARRAYS, np.array(g), *saved)
                    got = node.formula(FLOATS, g, *[None if s is None else float(s) for s in saved])
                for w, o in zip(want, got):
                    assert (w is None) == (o is None)
                    if w is not None:
                        assert type(o) is float, (name, g, x, y)
                        w = np.asarray(w, dtype=np.float64)
                        assert np.float64(o).tobytes() == w.tobytes() or (np.isnan(o) and np.isnan(w)), (name, g, x, y)


def _chain_grads(shape):
    """d/dx and d/dw of a graph that uses every op with a 0-d fast path, fan-out included."""
    x = ad.tensor(np.full(shape, 0.7), requires_grad=True)
    w = ad.tensor(np.full(shape, -1.3), requires_grad=True)
    y = x
    for _ in range(5):
        y = ad.relu(ad.sin(y) * ad.cos(w) - y * 0.25 + w)
    (y + x * w).backward(ad.tensor(np.full(shape, 1.5)))
    return x.grad._data, w.grad._data


def test_a_0d_backward_gives_the_bits_of_the_same_backward_on_arrays():
    gx, gw = _chain_grads(())
    ax, aw = _chain_grads((1,))         # (shape (1,): every op and formula on NumPy's arrays)
    assert gx.shape == () and gx.tobytes() == ax.tobytes() and gw.tobytes() == aw.tobytes()


def test_relus_fast_gradient_is_a_tensor_of_its_own_and_add_passes_its_gradient_on():
    x = ad.tensor(0.5, requires_grad=True, dtype=ad.float64)
    r = ad.relu(x)
    g = ad.tensor(2.0, dtype=ad.float64)
    (gr,) = r.grad_fn.apply(g)
    assert gr is not g and gr._data is not g._data and float(gr) == 2.0
    s = x + x
    a, b = s.grad_fn.apply(g)
    assert a is g and b is g


class _OtherFormulaMul(REGISTRY["mul"].cls):
    """A subclass with a formula of its own: its formula must run on arrays, not on floats."""
    __slots__ = ()

    def formula(self, F, g, x, y):
        assert type(g) is np.ndarray
        return (g * 2.0 if y is not None else None), (g * 3.0 if x is not None else None)


def test_a_subclass_with_its_own_formula_does_not_run_it_on_floats():
    x = ad.tensor(2.0, requires_grad=True, dtype=ad.float64)
    w = ad.tensor(3.0, requires_grad=True, dtype=ad.float64)
    out = apply(_OtherFormulaMul, x, w)
    assert float(out) == 6.0 and _OtherFormulaMul._op_flags.f64 and not _OtherFormulaMul._op_flags.f64_formula
    out.backward()
    assert float(x.grad) == 2.0 and float(w.grad) == 3.0


# The 0-d float64 lane of apply (ops/registry.py's _apply_f64) records what the general path
# records: compared field by field with the same ops on a view, which takes the general path.

def _node_fields(node):
    return (type(node), node.input_shapes, node.input_dtypes, getattr(node, "_consts", None) is not None,
            node._params, node._out_scalar is not None, node._saved is not None,
            tuple(e is None for e in node.next_edges))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "relu", "sin", "cos"])
def test_the_0d_lane_records_what_the_general_path_records(name):
    fn = getattr(ad, name)
    arity = 1 if name in ("relu", "sin", "cos") else 2
    x = ad.tensor(0.5, requires_grad=True, dtype=ad.float64)
    base = ad.tensor([0.5], requires_grad=True, dtype=ad.float64)
    here = sys._getframe().f_lineno
    lane = fn(x) if arity == 1 else fn(x, 0.25)                       # here + 1
    view = base[0] * 1.0                # (a 0-d result of an op on a view's history: general)
    general = fn(base[0]) if arity == 1 else fn(base[0], 0.25)        # here + 3
    assert lane._data.tobytes() == general._data.tobytes()
    assert _node_fields(lane.grad_fn) == _node_fields(general.grad_fn), name
    assert lane.grad_fn.pos == (__file__, here + 1, None, None)
    assert general.grad_fn.pos == (__file__, here + 3, None, None)
    assert lane.grad_fn.seq_nr < view.grad_fn.seq_nr < general.grad_fn.seq_nr and lane.grad_fn._out_scalar is lane._data
    assert lane.requires_grad and lane.grad_fn.next_edges[0] is x._accumulate
    lane.backward()
    general.backward()
    assert x.grad._data.tobytes() == base.grad._data[0].tobytes()


def test_the_0d_lane_without_grad_records_no_node_and_remembers_where_a_value_left_the_graph():
    from autodsl.core import watch
    x = ad.tensor(0.5, requires_grad=True, dtype=ad.float64)
    with ad.no_grad():
        y = x * 2.0
    assert y.grad_fn is None and not y.requires_grad and float(y) == 1.0
    assert [b.kind for b in watch.breaks_from(x._accumulate_node())] == ["no_grad"]
    z = ad.tensor(3.0, dtype=ad.float64) * 2.0          # nothing requires grad: no node
    assert z.grad_fn is None and float(z) == 6.0
