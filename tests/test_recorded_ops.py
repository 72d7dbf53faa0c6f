"""Note [recorded ops] (ops/registry.py): a recorded op of one tensor, or of two tensors of one
dtype, on host arrays takes _apply_rec. Each case is checked against the general path: in the
pure-Python build by calling _apply itself (the node's fields, the bits), in both builds through
anomaly mode, which _apply_rec leaves to the general path (the values, the gradients, the
errors)."""
import numpy as np
import pytest

import autodsl as ad
from autodsl.ops import elementwise as E
from autodsl.ops import linalg as L
from autodsl.ops import reduce as R
from autodsl.ops import gather as G
from autodsl.ops import loss as Lo
from autodsl.ops import registry

PURE = hasattr(registry, "_apply_rec")      # (compiled, both are C functions)
FIELDS = ("next_edges", "input_shapes", "input_dtypes", "pos", "_params", "_record")


def _node_fields(t):
    node = t.grad_fn
    return {f: getattr(node, f) for f in FIELDS} | {
        "consts": getattr(node, "_consts", None),
        "out_scalar": getattr(node, "_out_scalar", None), "type": type(node),
        "own": dict(getattr(node, "__dict__", {}))}      # (a reduction's axis)


def _same_value(a, b):
    """Equal arrays (bit for bit), numbers, or tuples of them."""
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, slice) or a is None:
        return a == b
    return np.asarray(a).dtype == np.asarray(b).dtype and np.asarray(a).tobytes() == np.asarray(b).tobytes()


def _same_consts(a, b):
    if a is None or b is None:
        return a is b
    return np.asarray(a).tobytes() == np.asarray(b).tobytes()


CASES = [   # (op class, inputs' shapes, which require grad[, the op's keyword parameters])
    (L.Matmul, ((4, 3), (3, 5)), (True, True)),
    (L.Matmul, ((4, 3), (3, 5)), (False, True)),
    (E.Add, ((4, 5), (5,)), (True, True)),
    (E.Add, ((4, 5), (5,)), (True, False)),
    (E.Mul, ((), ()), (True, True)),
    (E.Div, ((2, 3), (2, 3)), (False, True)),
    (E.Relu, ((3, 4),), (True,)),
    (E.Exp, ((5,),), (True,)),
    (E.Tanh, ((),), (True,)),
    (R.LogSoftmax, ((4, 3),), (True,), {"dim": 1}),
    (R.Sum, ((4, 3),), (True,), {"dim": 0, "keepdim": True}),
    (R.Sum, ((),), (True,), {"dim": None, "keepdim": False}),
]
# (ops of two inputs of any dtypes, the second without a gradient: the input, then int64 indices)
INDEXED = [
    (Lo.NllLoss, (4, 3), [0, 2, 1, 2], {"reduction": "mean", "ignore_index": -100}),
    (Lo.NllLoss, (4, 3), [0, 2, -100, 2], {"reduction": "sum", "ignore_index": -100}),
    (Lo.NllLoss, (4, 3), [0, 2, 1, 2], {"reduction": "none", "ignore_index": 1}),
    (G.Gather, (3, 2), [[0, 0], [2, 1]], {"dim": 0}),
    (G.IndexSelect, (3, 2), [2, 0, 2], {"dim": 0}),
]


@pytest.mark.skipif(not PURE, reason="_apply and _apply_rec are C functions in the compiled build")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_recorded_op_makes_the_general_paths_node(dtype, case):
    cls, shapes, grads, *params = CASES[case]
    params = params[0] if params else None
    rng = np.random.default_rng(case)
    ts = [ad.tensor(rng.standard_normal(s).astype(dtype), requires_grad=r) for s, r in zip(shapes, grads)]
    fast = registry._apply_rec(cls, cls._op_flags or registry._op_flags(cls), ts[0], ts[1] if len(ts) == 2 else None,
                               params)
    if dtype is np.float64 and all(s == () for s in shapes) and registry._op_flags(cls).f64:
        assert fast is None         # the 0-d fast path's (Note [0-d fast path])
        return
    general = registry._apply(cls, tuple(ts), params)
    assert fast is not None
    assert fast.numpy().tobytes() == general.numpy().tobytes() and fast.dtype == general.dtype
    a, b = _node_fields(fast), _node_fields(general)
    assert _same_consts(a.pop("consts"), b.pop("consts"))
    assert _same_consts(a.pop("out_scalar"), b.pop("out_scalar"))
    assert a == b
    assert fast.requires_grad and fast.grad_fn.seq_nr != general.grad_fn.seq_nr


@pytest.mark.skipif(not PURE, reason="_apply and _apply_rec are C functions in the compiled build")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(INDEXED)))
def test_an_op_of_a_tensor_and_its_indices_makes_the_general_paths_node(dtype, case):
    cls, shape, index, params = INDEXED[case]
    x = ad.tensor(np.random.default_rng(case).standard_normal(shape).astype(dtype), requires_grad=True)
    i = ad.tensor(index, dtype=ad.int64)
    fast = registry._apply_rec(cls, cls._op_flags or registry._op_flags(cls), x, i, params)
    general = registry._apply(cls, (x, i), params)
    assert fast is not None
    assert fast.numpy().tobytes() == general.numpy().tobytes() and fast.dtype == general.dtype
    a, b = _node_fields(fast), _node_fields(general)
    assert _same_consts(a.pop("consts"), b.pop("consts"))
    assert _same_consts(a.pop("out_scalar"), b.pop("out_scalar"))
    own_a, own_b = a.pop("own"), b.pop("own")
    assert own_a.keys() == own_b.keys()
    for k in own_a:
        assert _same_value(own_a[k], own_b[k]), k
    assert a == b and fast.grad_fn.next_edges[1] is None
    g = ad.ones_like(fast)
    (gx_fast,) = ad.grad(fast, [x], g)
    (gx_general,) = ad.grad(general, [x], g)
    assert gx_fast.numpy().tobytes() == gx_general.numpy().tobytes()


@pytest.mark.skipif(not PURE, reason="_apply_rec is a C function in the compiled build")
def test_what_the_recorded_path_leaves_to_the_general_one():
    w = ad.tensor(np.ones((3, 3)), requires_grad=True)
    flags = registry._op_flags(E.Mul)
    assert registry._apply_rec(E.Mul, flags, w, ad.tensor(np.ones((3, 3))), None) is not None
    assert registry._apply_rec(E.Mul, flags, w, ad.tensor(np.ones((3, 3)), dtype=ad.float32), None) is None   # promotion
    assert registry._apply_rec(E.Mul, flags, w[0], ad.tensor(np.ones(3)), None) is None      # a view
    with ad.no_grad():
        assert registry._apply_rec(E.Mul, flags, w, w, None) is None          # nothing records
    with ad.detect_anomaly():
        assert registry._apply_rec(E.Mul, flags, w, w, None) is None          # anomaly mode's own work
    i = ad.tensor(np.ones((3, 3), dtype=np.int64))
    assert registry._apply_rec(E.Exp, registry._op_flags(E.Exp), i, None, None) is None   # an int input of a float op
    assert registry._apply_rec(L.Matmul, registry._op_flags(L.Matmul), w, ad.tensor(np.ones((2, 2))), None) is None
    # a class index outside the classes: the general path's error
    logp = ad.tensor(np.zeros((2, 3)), requires_grad=True)
    with pytest.raises(ad.DSLError) as bad:
        ad.nll_loss(logp, ad.tensor([0, 7], dtype=ad.int64))
    assert "7" in bad.value.message


def _loop(anomaly, dtype):
    rng = np.random.default_rng(3)
    X = ad.tensor(rng.standard_normal((6, 4)).astype(dtype))
    W1 = ad.tensor(rng.standard_normal((4, 5)).astype(dtype), requires_grad=True)
    b1 = ad.tensor(rng.standard_normal(5).astype(dtype), requires_grad=True)
    W2 = ad.tensor(rng.standard_normal((5, 3)).astype(dtype), requires_grad=True)
    with ad.detect_anomaly() if anomaly else ad.enable_grad():
        z = ad.relu(X @ W1 + b1) @ W2
        loss = ad.cross_entropy(z, ad.tensor([0, 1, 2, 0, 1, 2], dtype=ad.int64))
        loss.backward()
    return [loss] + [p.grad for p in (W1, b1, W2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_small_network_gets_the_general_paths_values_and_gradients(dtype):
    fast, general = _loop(False, dtype), _loop(True, dtype)
    for a, b in zip(fast, general):
        assert a.dtype == b.dtype and a.numpy().tobytes() == b.numpy().tobytes()


def test_an_error_is_the_ops_own():
    a = ad.tensor(np.ones((2, 3)), requires_grad=True)
    b = ad.tensor(np.ones((4, 5)), requires_grad=True)
    with pytest.raises(ad.ShapeError) as fast:
        a @ b
    with ad.detect_anomaly():
        with pytest.raises(ad.ShapeError) as general:
            a @ b
    assert fast.value.message == general.value.message and "matmul" in fast.value.message
    with pytest.raises(ad.ShapeError) as bad_add:
        a + b
    assert "add" in bad_add.value.message


def test_a_recorded_op_names_the_callers_line():
    w = ad.tensor(np.ones((2, 2)), requires_grad=True)
    y = w @ w; line = __import__("inspect").currentframe().f_lineno     # noqa: E702
    assert y.grad_fn.pos[:2] == (__file__, line)
    z = ad.relu(y); line = __import__("inspect").currentframe().f_lineno    # noqa: E702
    assert z.grad_fn.pos[:2] == (__file__, line)
