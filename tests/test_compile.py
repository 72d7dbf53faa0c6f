"""``compile(fn)``: compiled calls against eager autodsl, bit for bit.

Every test runs the same code twice, eagerly on one copy of the parameters and compiled on
another, and compares what a user can see: losses, weights, ``.grad`` (None or the same bits),
version counters, results. The stats show that later calls were really replayed (a compiled
function that always ran eagerly would pass every comparison), or, for a guard, that a call
ran eagerly again; ``eager_reason`` and the warning say why a function stays eager.
"""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import autodsl as ad
from autodsl.cli.repl import Repl
from autodsl.core import program as program_mod
from autodsl.ops.registry import Op
from autodsl.tools.compiled import MAX_CAPTURES

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


# ---- helpers --------------------------------------------------------------------------------

def bits(t) -> bytes:
    return t.numpy().tobytes()


def same_tensor(e, c, what="tensor", version=True):
    """``e`` (eager) and ``c`` (compiled) hold the same bits, shape, dtype and autograd state."""
    assert c.dtype == e.dtype and c.shape == e.shape, what
    assert bits(c) == bits(e), f"{what}: {c.numpy()!r} != {e.numpy()!r}"
    assert np.array_equal(c.numpy(), e.numpy(), equal_nan=True), what
    assert c.requires_grad == e.requires_grad and c.is_leaf == e.is_leaf, what
    if version:
        assert c.version == e.version, f"{what}: version {c.version} != {e.version}"


def same_state(es, cs):
    """Parameters after eager and compiled training: values, versions and .grad."""
    assert len(es) == len(cs)
    for i, (e, c) in enumerate(zip(es, cs)):
        same_tensor(e, c, f"parameter {i}")
        if e.grad is None:
            assert c.grad is None, f"parameter {i}: .grad is {c.grad!r}, eager's is none"
        else:
            assert c.grad is not None, f"parameter {i}: .grad is none, eager's is {e.grad!r}"
            same_tensor(e.grad, c.grad, f"parameter {i}'s .grad")


def is_update(line, name):
    """A listing's line for an update of ``name`` under no_grad (NumPy computes ``-=`` in place;
    another array library writes the new values back)."""
    return (f"{name} -= " in line or f"{name}[...] = " in line) and "(in place)" in line


def twins(*arrays, requires_grad=True, dtype=None):
    """Two independent parameter lists with the same values (eager's, compiled's)."""
    def make():
        return [ad.tensor(np.array(a, dtype=dtype), requires_grad=requires_grad) for a in arrays]
    return make(), make()


def mlp_arrays(n_in=2, hidden=16, n_out=1, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n_in, hidden)) * 0.5, np.zeros(hidden),
            rng.normal(size=(hidden, n_out)) * 0.5, np.zeros(n_out)]


def regression_data(n=64, seed=1, dtype=np.float64):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, 2)).astype(dtype)
    y = (np.sin(3 * x[:, :1]) * x[:, 1:]).astype(dtype)
    return ad.tensor(x), ad.tensor(y)


def sgd(params, lr):
    with ad.no_grad():
        for p in params:
            p -= lr * p.grad


def mlp_step(params, x, y, lr):
    w1, b1, w2, b2 = params
    h = ad.tanh(x @ w1 + b1)
    loss = ad.mse_loss(h @ w2 + b2, y)
    loss.backward()
    sgd(params, lr)
    for p in params:
        p.grad = None
    return loss.detach()


def train_both(step, eager_args, compiled_args, steps, **kw):
    """Run ``step`` eagerly and compiled ``steps`` times; the compiled function and both losses."""
    c = ad.compile(step)
    le, lc = [], []
    for _ in range(steps):
        le.append(step(*eager_args, **kw))
        lc.append(c(*compiled_args, **kw))
    for i, (a, b) in enumerate(zip(le, lc)):
        if isinstance(a, ad.Tensor):
            same_tensor(a, b, f"loss of step {i}", version=False)
        else:
            assert a == b
    return c, le, lc


# ---- (1) training loops, bit for bit --------------------------------------------------------

def test_mlp_tanh_mse_sgd_trains_bit_identically():
    pe, pc = twins(*mlp_arrays())
    x, y = regression_data()
    c, le, lc = train_both(mlp_step, (pe, x, y, 0.1), (pc, x, y, 0.1), 200)
    same_state(pe, pc)
    assert c.stats == {"replayed": 199, "eager": 1, "captures": 1} and c.eager_reason is None
    assert le[-1].item() < le[0].item() / 2           # it did train
    assert pe[0].version == 200                       # one update per step, replays included


def test_mlp_in_float32_trains_bit_identically():
    pe, pc = twins(*mlp_arrays(hidden=8), dtype=np.float32)
    x, y = regression_data(32, dtype=np.float32)
    c, _, lc = train_both(mlp_step, (pe, x, y, 0.05), (pc, x, y, 0.05), 50)
    same_state(pe, pc)
    assert lc[-1].dtype == ad.float32 and c.stats["replayed"] == 49


def test_parameters_read_from_globals_and_closures():
    x, y = regression_data(16)
    pe, pc = twins(*mlp_arrays(hidden=4))

    def make_step(params):
        w1, b1, w2, b2 = params

        def step(x, y):
            loss = ad.mse_loss(ad.tanh(x @ w1 + b1) @ w2 + b2, y)
            loss.backward()
            with ad.no_grad():
                for p in (w1, b1, w2, b2):
                    p -= 0.2 * p.grad
                    p.zero_grad()
            return loss.detach()
        return step

    eager, compiled = make_step(pe), ad.compile(make_step(pc))
    for i in range(30):
        same_tensor(eager(x, y), compiled(x, y), f"loss {i}", version=False)
    same_state(pe, pc)
    assert compiled.stats["replayed"] == 29


def test_relu_chain_trains_bit_identically():
    rng = np.random.default_rng(3)
    arrays = [rng.normal(size=(6, 6)) * 0.6 for _ in range(6)]
    pe, pc = twins(*arrays)
    x = ad.tensor(rng.normal(size=(10, 6)))
    target = ad.tensor(rng.normal(size=(10, 6)))

    def step(ws, x, t):
        h = x
        for w in ws:
            h = ad.relu(h @ w)
        loss = ((h - t) ** 2).mean()
        loss.backward()
        sgd(ws, 0.05)
        for w in ws:
            w.grad = None
        return loss.detach()

    c, _, _ = train_both(step, (pe, x, target), (pc, x, target), 40)
    same_state(pe, pc)
    assert c.stats["replayed"] == 39


def test_cross_entropy_classifier_trains_bit_identically():
    rng = np.random.default_rng(5)
    x = ad.tensor(rng.normal(size=(30, 4)))
    labels = ad.tensor(rng.integers(0, 3, size=30), dtype=ad.int64)
    pe, pc = twins(rng.normal(size=(4, 3)) * 0.1, np.zeros(3))

    def step(params, x, t, lr=0.5):
        w, b = params
        loss = ad.cross_entropy(x @ w + b, t)
        loss.backward()
        sgd(params, lr)
        w.zero_grad()
        b.zero_grad()
        return loss.detach()

    c, le, _ = train_both(step, (pe, x, labels), (pc, x, labels), 60)
    same_state(pe, pc)
    assert c.stats["replayed"] == 59 and le[-1].item() < le[0].item()


def test_grad_none_and_zero_grad_in_one_loop():
    pe, pc = twins([1.0, -2.0, 0.5], [[0.3], [0.2], [-0.1]])
    x = ad.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])

    def step(params, x):
        a, w = params
        loss = ((x * a) @ w).sum() ** 2
        loss.backward()
        with ad.no_grad():
            a -= 0.01 * a.grad
            w -= 0.01 * w.grad
        a.grad = None
        w.zero_grad()
        return loss.detach()

    c, _, _ = train_both(step, (pe, x), (pc, x), 25)
    same_state(pe, pc)
    assert pe[0].grad is None and pc[1].grad is None and c.stats["replayed"] == 24


def test_gradients_accumulate_across_calls_like_eager():
    pe, pc = twins([1.0, 2.0, 3.0])
    x = ad.tensor([0.5, -1.0, 2.0])

    def step(params, x):
        (w,) = params
        loss = (ad.sin(w * x) * w).sum()
        loss.backward()               # never zeroed: .grad accumulates, in place after the first
        return loss.detach()

    c, _, _ = train_both(step, (pe, x), (pc, x), 6)
    same_state(pe, pc)
    assert pc[0].grad.version == pe[0].grad.version == 5
    assert c.stats["replayed"] >= 4


def test_new_data_of_the_same_shape_every_call():
    rng = np.random.default_rng(11)
    pe, pc = twins(*mlp_arrays(hidden=5))
    batches = [regression_data(8, seed=s) for s in range(12)]
    c = ad.compile(mlp_step)
    for i, (x, y) in enumerate(batches):
        same_tensor(mlp_step(pe, x, y, 0.1), c(pc, x, y, 0.1), f"loss {i}", version=False)
    same_state(pe, pc)
    assert c.stats["replayed"] == 11
    del rng


def test_other_parameter_tensors_of_the_same_shapes():
    # the same compiled function trains two models: each call updates the tensors it was given
    (ae, ac), (be, bc) = [twins(*mlp_arrays(hidden=3, seed=s)) for s in (0, 1)]
    x, y = regression_data(8)
    c = ad.compile(mlp_step)
    for i in range(6):
        for pe, pc in ((ae, ac), (be, bc)):
            same_tensor(mlp_step(pe, x, y, 0.1), c(pc, x, y, 0.1), f"loss {i}", version=False)
    same_state(ae, ac)
    same_state(be, bc)
    assert c.stats["replayed"] == 11


def test_backward_only_into_other_tensors_of_the_same_shape():
    def step(w, x):
        loss = (w * x).sum()
        loss.backward()
        return loss.detach()

    c = ad.compile(step)
    x = ad.tensor([1.0, 2.0])
    wa = ad.tensor([1.0, 1.0], requires_grad=True)
    wb = ad.tensor([5.0, 5.0], requires_grad=True)
    c(wa, x)
    assert c(wb, x).item() == 15.0
    assert wa.grad.tolist() == [1.0, 2.0] and wb.grad.tolist() == [1.0, 2.0]


def test_a_compiled_decorator_and_keyword_arguments():
    pe, pc = twins(*mlp_arrays(hidden=3))
    x, y = regression_data(8)

    @ad.compile
    def step(params, x, y, lr=0.1):
        return mlp_step(params, x, y, lr)

    for i in range(5):
        same_tensor(mlp_step(pe, x, y, lr=0.3), step(pc, x, y, lr=0.3), f"loss {i}", version=False)
    same_state(pe, pc)
    assert step.stats["replayed"] == 4 and "replayed" in repr(step)


def test_a_result_that_is_a_list_of_numbers_and_tensors():
    def f(a, b):
        s = (a * b).sum()
        return [s.detach(), (a + b).detach(), 3, "text", None]

    c = ad.compile(f)
    a = ad.tensor([1.0, 2.0])
    for b in ([3.0, 4.0], [5.0, -1.0]):
        eb = ad.tensor(b)
        r_e, r_c = f(a, eb), c(a, eb)
        same_tensor(r_e[0], r_c[0], version=False)
        same_tensor(r_e[1], r_c[1], version=False)
        assert r_c[2:] == [3, "text", None]
    assert c.stats["replayed"] == 1


def test_creation_inside_the_function_gives_fresh_tensors():
    def f(x):
        with ad.no_grad():
            acc = ad.zeros(3)
            acc += x
        return acc

    c = ad.compile(f)
    x = ad.tensor([1.0, 2.0, 3.0])
    results = [c(x) for _ in range(3)]
    for r in results:
        same_tensor(f(x), r)
        assert r.tolist() == [1.0, 2.0, 3.0]
    results[0][0] = 100.0                     # each call's result is its own storage
    assert results[1].tolist() == [1.0, 2.0, 3.0] and c(x).tolist() == [1.0, 2.0, 3.0]
    assert c.stats["replayed"] >= 2


def test_an_update_of_a_tensor_made_inside_the_function():
    def f(x):
        with ad.no_grad():
            h = x * 2
            h += 1
            h *= x
        return h

    c = ad.compile(f)
    for v in ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [0.5, 0.25, -1.0]):
        x = ad.tensor(v)
        same_tensor(f(x), c(x))
        assert c(x).version == 2
    assert c.stats["replayed"] >= 3 and c.eager_reason is None


def test_an_in_place_update_through_detach_of_a_parameter():
    pe, pc = twins([1.0, 2.0, 3.0])

    def step(params):
        (w,) = params
        loss = (w * w).sum()
        loss.backward()
        d = w.detach()                 # shares w's storage and version counter
        d -= 0.1 * w.grad
        w.grad = None
        return loss.detach()

    c, _, _ = train_both(step, (pe,), (pc,), 5)
    same_state(pe, pc)
    assert pc[0].version == 5 and c.stats["replayed"] == 4


def test_an_update_through_a_view_and_an_index_of_a_parameter():
    def step(ws):
        (w,) = ws
        loss = (w * w).sum()
        loss.backward()
        with ad.no_grad():
            v = w[0:2]                  # a view: its writes count in w's version
            v -= 0.5 * w.grad[0:2]
            w[2] = 7.0
        w.grad = None
        return loss.detach()

    (we,), (wc,) = twins([1.0, 2.0, 3.0])
    c = ad.compile(step)
    for i in range(4):
        same_tensor(step([we]), c([wc]), f"loss {i}", version=False)
        same_state([we], [wc])
    assert wc.version == 8 and c.stats["replayed"] == 3


def test_an_update_of_a_grad_in_place_counts_in_its_version():
    def step(ws):
        (w,) = ws
        loss = (w * w * w).sum()
        loss.backward()
        with ad.no_grad():
            g = w.grad
            g *= 0.5                    # gradient scaling, in place
            w -= 0.1 * g
        return loss.detach()

    (we,), (wc,) = twins([1.0, 2.0, 3.0])
    c, _, _ = train_both(step, ([we],), ([wc],), 4)
    same_state([we], [wc])               # .grad accumulates: its version counts both writes
    assert wc.grad.version == 7 and c.stats["replayed"] == 3


def test_a_returned_detach_shares_the_argument_s_version_counter():
    def f(w):
        with ad.no_grad():
            w += 1
        return w.detach()

    we, wc = ad.tensor([1.0]), ad.tensor([1.0])
    c = ad.compile(f)
    for i in range(3):
        a, b = f(we), c(wc)
        same_tensor(a, b)
        same_tensor(we, wc)
        assert b.version == 2 * i + 1 and b._version is wc._version   # (b[0] = ... counts too)
        b[0] = 10.0 * (i + 1)            # the same storage as the argument, as eager's
        a[0] = 10.0 * (i + 1)
        same_tensor(we, wc)
    assert c.stats["replayed"] == 2


def test_a_named_tuple_result_is_made_again():
    import collections
    Out = collections.namedtuple("Out", "loss n")

    def f(x):
        return Out((x * 2).sum().detach(), 3)

    c = ad.compile(f)
    for v in ([1.0, 2.0], [3.0, 5.0]):
        x = ad.tensor(v)
        e, k = f(x), c(x)
        assert type(k) is Out and k.n == 3
        same_tensor(e.loss, k.loss, version=False)
    assert c.stats["replayed"] == 1


HELPER_SCALE = 2.0


def _helper(t):
    return t * HELPER_SCALE


def test_a_number_read_by_a_function_it_calls_is_guarded():
    global HELPER_SCALE

    def f(d):
        return _helper(d["x"]).sum().detach()

    c = ad.compile(f)
    x = ad.tensor([1.0, 2.0])
    try:
        assert c({"x": x}).item() == c({"x": x}).item() == 6.0
        HELPER_SCALE = 3.0
        same_tensor(f({"x": x}), c({"x": x}), version=False)
        assert c({"x": x}).item() == 9.0
    finally:
        HELPER_SCALE = 2.0
    assert c.stats == {"replayed": 2, "eager": 2, "captures": 2}


def test_the_same_tensor_twice_is_another_call_than_two_tensors():
    def f(a, b):
        with ad.no_grad():
            a += 1
        return (a * b).sum().detach()

    pe, qe, pc, qc = (ad.tensor([1.0]) for _ in range(4))
    c = ad.compile(f)
    for args_e, args_c in (((pe, pe), (pc, pc)), ((pe, qe), (pc, qc)), ((pe, pe), (pc, pc))):
        same_tensor(f(*args_e), c(*args_c), version=False)
        same_state([pe, qe], [pc, qc])
    assert c.stats == {"replayed": 1, "eager": 2, "captures": 2}


def test_compile_needs_a_function():
    with pytest.raises(ad.TypeError_, match="compile\\(\\) needs a function"):
        ad.compile(42)
    with pytest.raises(ad.TypeError_, match="needs a function"):
        ad.Session(out=io.StringIO()).run("f = compile(3)")


# ---- (2) guards: each gives eager's results -------------------------------------------------

def test_a_branch_on_item_that_flips_between_calls():
    def step(w, x, t):
        loss = ((w * x).sum() - t) ** 2
        if loss.item() > 1.0:
            loss = loss * 0.5                 # a different program on each side
        loss.backward()
        with ad.no_grad():
            w -= 0.1 * w.grad
        w.grad = None
        return loss.detach()

    (we,), (wc,) = twins([0.5, -0.5])
    c = ad.compile(step)
    x = ad.tensor([1.0, 2.0])
    for i, t in enumerate([0.0, 0.0, 3.0, 3.0, 0.0, 5.0, 0.0]):
        same_tensor(step(we, x, t), c(wc, x, t), f"loss {i}", version=False)
        same_tensor(we, wc)
    assert c.stats["captures"] >= 2         # the branch flipped: captured again


def test_a_branch_on_a_comparison_replays_while_its_outcome_holds():
    def step(w, x):
        loss = (w * x).sum()
        if loss > 0:                   # bool of a one-element tensor: a guard on its value
            out = loss * 2
        else:
            out = -loss
        out.backward()
        return out.detach()

    (we,), (wc,) = twins([1.0, 1.0])
    c = ad.compile(step)
    xs = [[1.0, 2.0], [2.0, 1.0], [3.0, 0.5], [-1.0, -2.0], [-2.0, -3.0], [1.0, 1.0]]
    for i, v in enumerate(xs):
        x = ad.tensor(v)
        same_tensor(step(we, x), c(wc, x), f"result {i}", version=False)
        same_tensor(we.grad, wc.grad, f"grad {i}")
    # calls 2, 3 replay the `> 0` program, call 4 captures `<= 0`, call 5 replays it, call 6 the first
    assert c.stats == {"replayed": 4, "eager": 2, "captures": 2}


def test_a_guard_after_the_updates_puts_them_back_before_running_eagerly():
    def step(w, x):
        loss = (w * x).sum()
        loss.backward()
        with ad.no_grad():
            w -= 0.5 * w.grad
        w.grad = None
        if (w * x).sum() > 0:               # read after the update: the replay is a transaction
            return 1
        return -1

    (we,), (wc,) = twins([1.0, 1.0])
    c = ad.compile(step)
    for i, v in enumerate([[0.1, 0.1], [0.2, 0.1], [4.0, 1.0], [0.1, 0.3]]):
        x = ad.tensor(v)
        assert step(we, x) == c(wc, x), i
        same_tensor(we, wc, f"w after call {i}")
        assert wc.grad is None
    assert c.stats["replayed"] >= 1 and c.stats["captures"] >= 2


def test_a_shape_change_captures_again_and_the_first_program_stays():
    pe, pc = twins(*mlp_arrays(hidden=4))
    data = [regression_data(n) for n in (8, 8, 12, 12, 8)]
    c = ad.compile(mlp_step)
    for i, (x, y) in enumerate(data):
        same_tensor(mlp_step(pe, x, y, 0.1), c(pc, x, y, 0.1), f"loss {i}", version=False)
    same_state(pe, pc)
    assert c.stats == {"replayed": 3, "eager": 2, "captures": 2}


def test_a_dtype_change_captures_again():
    def f(x):
        return (ad.exp(x) * 3 + x).sum().detach()

    c = ad.compile(f)
    for dt in (ad.float64, ad.float64, ad.float32, ad.float32, ad.float64):
        x = ad.tensor([0.1, 0.7, -1.3], dtype=dt)
        r_e, r_c = f(x), c(x)
        same_tensor(r_e, r_c, version=False)
        assert r_c.dtype == dt
    assert c.stats == {"replayed": 3, "eager": 2, "captures": 2}


def test_a_write_into_the_data_between_calls():
    pe, pc = twins(*mlp_arrays(hidden=4))
    x, y = regression_data(8)
    c = ad.compile(mlp_step)
    for i in range(6):
        same_tensor(mlp_step(pe, x, y, 0.1), c(pc, x, y, 0.1), f"loss {i}", version=False)
        with ad.no_grad():
            x += 0.25                   # the data changes in place: the program reads it anew
        y[0] = float(i)
    same_state(pe, pc)
    assert c.stats["replayed"] == 5


def test_a_write_into_a_global_tensor_and_a_parameter_between_calls():
    state = {"scale": ad.tensor([2.0, 3.0])}
    scale = state["scale"]

    def step(w):
        loss = (w * scale).sum() ** 2
        loss.backward()
        with ad.no_grad():
            w -= 0.01 * w.grad
        w.grad = None
        return loss.detach()

    (we,), (wc,) = twins([1.0, -1.0])
    c = ad.compile(step)
    for i in range(5):
        same_tensor(step(we), c(wc), f"loss {i}", version=False)
        with ad.no_grad():
            scale *= 1.5                # an outside tensor the function reads
            we += 0.125                 # and the parameters themselves, outside the function
            wc += 0.125
        same_tensor(we, wc)
    assert c.stats["replayed"] == 4


SCALE = ad.tensor([1.0, 2.0])


def _global_step(w):
    loss = (w * SCALE).sum()
    loss.backward()
    return loss.detach()


def test_rebinding_a_global_tensor_captures_again():
    global SCALE
    (we,), (wc,) = twins([1.0, 1.0])
    c = ad.compile(_global_step)
    old = SCALE
    try:
        for i, s in enumerate([[1.0, 2.0], None, [10.0, 20.0], None, [3.0, -1.0]]):
            if s is not None:
                SCALE = ad.tensor(s)       # a new tensor under the same name
            same_tensor(_global_step(we), c(wc), f"loss {i}", version=False)
            same_tensor(we.grad, wc.grad)
        assert wc.grad.tolist() == [1 + 1 + 10 + 10 + 3, 2 + 2 + 20 + 20 - 1]
        assert c.stats["captures"] == 3 and c.stats["replayed"] == 2
    finally:
        SCALE = old


def test_a_leaf_whose_requires_grad_changes_between_calls():
    def step(a, b):
        loss = (a * b * b).sum()
        loss.backward()
        return loss.detach()

    (ae, be), (ac, bc) = twins([1.0, 2.0], [3.0, 4.0])
    c = ad.compile(step)
    for i, flag in enumerate([True, True, False, False, True]):
        be.requires_grad = bc.requires_grad = flag
        same_tensor(step(ae, be), c(ac, bc), f"loss {i}", version=False)
        same_state([ae, be], [ac, bc])
    assert bc.grad.tolist() == [2 * 1 * 3 * 3, 2 * 2 * 4 * 3]     # three calls gave b 2ab
    # one program for each flag: the fifth call replays the first one's
    assert c.stats == {"replayed": 3, "eager": 2, "captures": 2}


def test_a_branch_on_whether_a_grad_is_none():
    def step(w):
        if w.grad is not None:          # PyTorch-style: clear what the last call left
            w.grad = None
        (w * w).sum().backward()

    (we,), (wc,) = twins([1.0, 2.0])
    c = ad.compile(step)
    for _ in range(4):
        step(we)
        c(wc)
        same_state([we], [wc])
    assert wc.grad.tolist() == [2.0, 4.0]


def test_other_non_tensor_arguments_capture_again():
    pe, pc = twins(*mlp_arrays(hidden=3))
    x, y = regression_data(8)
    c = ad.compile(mlp_step)
    for i, lr in enumerate([0.1, 0.1, 0.05, 0.05, 0.1]):
        same_tensor(mlp_step(pe, x, y, lr), c(pc, x, y, lr), f"loss {i}", version=False)
    same_state(pe, pc)
    assert c.stats == {"replayed": 3, "eager": 2, "captures": 2}


def test_minus_zero_is_another_argument_than_zero():
    def f(x, s):
        return (x * s).detach()

    c = ad.compile(f)
    x = ad.tensor([1.0, 2.0])
    for s in (0.0, -0.0, 0.0, -0.0):
        same_tensor(f(x, s), c(x, s), f"scale {s!r}")


LR = 0.1


def _lr_step(w):
    loss = (w * w).sum()
    loss.backward()
    with ad.no_grad():
        w -= LR * w.grad
    w.grad = None
    return loss.detach()


def test_a_global_number_the_function_reads_is_guarded():
    global LR
    (we,), (wc,) = twins([1.0, 2.0])
    c = ad.compile(_lr_step)
    try:
        for i in range(6):
            if i == 3:
                LR = 0.5               # a learning-rate schedule outside the function
            same_tensor(_lr_step(we), c(wc), f"loss {i}", version=False)
            same_tensor(we, wc)
    finally:
        LR = 0.1
    assert c.stats["replayed"] >= 3


def test_after_max_captures_it_stays_eager_and_warns_once():
    def f(x):
        return (x * 2).sum().detach()

    c = ad.compile(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, MAX_CAPTURES + 4):
            x = ad.tensor(np.arange(float(n)))
            same_tensor(f(x), c(x), version=False)
    assert c.stats["captures"] == MAX_CAPTURES and c.stats["replayed"] == 0
    assert "guards failed" in c.eager_reason
    said = [w for w in caught if "runs eagerly" in str(w.message)]
    assert len(said) == 1 and "guards failed" in str(said[0].message)
    c(ad.tensor([1.0]))                          # a shape it has a program for: still eager now
    assert c.stats["replayed"] == 0


def test_calls_run_eagerly_while_a_trace_or_anomaly_mode_is_on():
    pe, pc = twins(*mlp_arrays(hidden=3))
    x, y = regression_data(8)
    c = ad.compile(mlp_step)
    s = ad.Session(out=io.StringIO())
    same_tensor(mlp_step(pe, x, y, 0.1), c(pc, x, y, 0.1), version=False)
    s.namespace.update(c=c, pc=pc, x=x, y=y)
    s.run("trace(true)\nc(pc, x, y, 0.1)\ntrace(false)")
    mlp_step(pe, x, y, 0.1)
    assert "step 1" in s.out.getvalue()           # the trace was printed: the call ran eagerly
    with ad.detect_anomaly():
        same_tensor(mlp_step(pe, x, y, 0.1), c(pc, x, y, 0.1), version=False)
    same_tensor(mlp_step(pe, x, y, 0.1), c(pc, x, y, 0.1), version=False)
    same_state(pe, pc)
    assert c.stats == {"replayed": 1, "eager": 3, "captures": 1}


def test_a_compiled_function_called_inside_another_capture():
    inner = ad.compile(lambda w, x: (w * x).sum())

    def outer(w, x):
        loss = inner(w, x) ** 2
        loss.backward()
        return loss.detach()

    (we,), (wc,) = twins([1.0, -2.0])
    c = ad.compile(outer)
    for v in ([1.0, 2.0], [0.5, 0.25], [3.0, 1.0]):
        x = ad.tensor(v)
        same_tensor(outer(we, x), c(wc, x), version=False)
        same_tensor(we.grad, wc.grad)
    assert c.stats["replayed"] == 2
    assert inner.stats["replayed"] == 0 and inner.program is None   # part of outer's program


# ---- (3) what a replay cannot repeat: eager results and a reason ---------------------------

def test_rand_inside_runs_eagerly_with_the_same_numbers():
    def step(w):
        loss = (w * ad.rand(3)).sum()
        loss.backward()
        return loss.detach()

    (we,), (wc,) = twins([1.0, 2.0, 3.0])
    c = ad.compile(step)
    ad.seed(7)
    eager = [step(we) for _ in range(3)]
    ad.seed(7)
    with pytest.warns(UserWarning, match="rand\\(\\) draws new numbers"):
        compiled = [c(wc) for _ in range(3)]
    for e, k in zip(eager, compiled):
        same_tensor(e, k, version=False)
    same_state([we], [wc])
    assert "rand() draws new numbers on every call" == c.eager_reason
    assert c.stats == {"replayed": 0, "eager": 3, "captures": 0} and c.program is None


def test_giving_up_after_updates_does_not_run_them_twice():
    def step(w):
        loss = (w * w).sum()
        loss.backward()
        with ad.no_grad():
            w -= 0.1 * w.grad
        w.grad = None
        noise = ad.randn(2)             # after the update: the capture learns only now
        return (loss + noise.sum()).detach()

    (we,), (wc,) = twins([1.0, 2.0])
    c = ad.compile(step)
    ad.seed(3)
    e = [step(we) for _ in range(3)]
    ad.seed(3)
    k = [c(wc) for _ in range(3)]
    for a, b in zip(e, k):
        same_tensor(a, b, version=False)
    same_state([we], [wc])
    assert "randn()" in c.eager_reason


def test_a_hook_runs_eagerly():
    def step(w):
        y = w * 2
        y.register_hook(lambda g: g * 3)
        y.sum().backward()

    (we,), (wc,) = twins([1.0, 1.0])
    c = ad.compile(step)
    for _ in range(3):
        step(we)
        c(wc)
    same_state([we], [wc])
    assert wc.grad.tolist() == [18.0, 18.0]
    assert "hook" in c.eager_reason and c.stats["replayed"] == 0


def test_returning_a_tensor_that_requires_grad_runs_eagerly():
    def f(w):
        return w * 2

    c = ad.compile(f)
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="returns a tensor that requires grad"):
        out = c(w)
    assert out.grad_fn is not None and out.tolist() == [2.0, 4.0]
    out2 = c(w)
    out2.sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]
    assert "loss.detach()" in c.eager_reason and c.stats["replayed"] == 0


@pytest.mark.parametrize("body, reason", [
    ("g, = ad.grad(y, [w], create_graph=True)\n    return g.detach()", "create_graph"),
    ("h = w * 1.0\n    h += 1\n    return (h * h).sum().detach()", "writes in place while recording"),
    ("return ad.tensor(y).detach()", "tensor()"),
    ("w.requires_grad = False\n    return y.detach()", "requires_grad"),
])
def test_other_things_a_replay_cannot_repeat(body, reason):
    ns = {"ad": ad}
    exec(f"def f(w):\n    y = (w * w).sum()\n    {body}\n", ns)
    f = ns["f"]
    we, wc = ad.tensor([1.0, 2.0], requires_grad=True), ad.tensor([1.0, 2.0], requires_grad=True)
    c = ad.compile(f)
    for _ in range(2):
        same_tensor(f(we), c(wc), version=False)
    same_state([we], [wc])
    assert reason in c.eager_reason and c.stats["replayed"] == 0


def test_indexing_with_a_tensor_uses_each_call_s_index():
    def step(w, idx):
        loss = (w[idx] * 2).sum()
        loss.backward()
        return loss.detach()

    (we,), (wc,) = twins([1.0, 2.0, 3.0, 4.0])
    c = ad.compile(step)
    for v in ([0, 1], [2, 3], [3, 3]):
        idx = ad.tensor(v, dtype=ad.int64)
        same_tensor(step(we, idx), c(wc, idx), version=False)
        same_tensor(we.grad, wc.grad)


def test_a_bool_mask_uses_each_call_s_mask():
    def step(w, x):
        loss = (w[x > 0] * 2).sum()
        loss.backward()
        return loss.detach()

    (we,), (wc,) = twins([1.0, 2.0, 3.0])
    c = ad.compile(step)
    for v in ([1.0, 1.0, -1.0], [1.0, -1.0, -1.0], [1.0, 1.0, 1.0]):
        x = ad.tensor(v)
        same_tensor(step(we, x), c(wc, x), version=False)
        same_tensor(we.grad, wc.grad)


def test_max_with_dim_uses_each_call_s_values():
    def f(x):
        r = ad.max(x, dim=0)
        return r.values.detach(), r.indices

    c = ad.compile(f)
    for v in ([[1.0, 5.0], [2.0, 3.0]], [[9.0, 0.0], [2.0, 3.0]], [[0.0, 0.0], [1.0, 7.0]]):
        x = ad.tensor(v)
        (ve, ie), (vc, ic) = f(x), c(x)
        same_tensor(ve, vc, version=False)
        assert ie.tolist() == ic.tolist()


def test_a_branch_on_tolist_is_guarded():
    def f(w, x):
        loss = (w * x).sum()
        out = loss * 2 if loss.tolist() > 0 else loss * 3
        return out.detach()

    c = ad.compile(f)
    w = ad.tensor([1.0])
    for v in (1.0, 2.0, -1.0):
        same_tensor(f(w, ad.tensor([v])), c(w, ad.tensor([v])), version=False)


def test_a_bad_class_index_in_a_replay_raises_as_eager():
    def step(w, t):
        loss = ad.cross_entropy(w, t)
        loss.backward()
        return loss.detach()

    c = ad.compile(step)
    w = ad.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    c(w, ad.tensor([1], dtype=ad.int64))
    with pytest.raises(ad.ValueError_, match="class indices"):
        c(w, ad.tensor([-1], dtype=ad.int64))


def test_an_error_in_a_replay_is_eager_s_error_and_changes_nothing():
    def step(w, t):
        loss = ad.cross_entropy(w, t)
        loss.backward()
        with ad.no_grad():
            w -= 0.1 * w.grad
        return loss.detach()

    (we,), (wc,) = twins([[1.0, 2.0, 3.0]])
    c = ad.compile(step)
    good, bad = ad.tensor([1], dtype=ad.int64), ad.tensor([7], dtype=ad.int64)
    same_tensor(step(we, good), c(wc, good), version=False)
    for f, w in ((step, we), (c, wc)):
        with pytest.raises(ad.ValueError_, match="class indices must be in 0..2"):
            f(w, bad)
    same_state([we], [wc])
    same_tensor(step(we, good), c(wc, good), version=False)
    same_state([we], [wc])
    assert c.stats["replayed"] == 1


# ---- (4) the language ----------------------------------------------------------------------

TRAIN_SCRIPT = """
x = tensor([[0.1, 0.2], [0.3, -0.4], [-0.5, 0.6], [0.7, 0.8], [0.9, -0.1]])
y = tensor([[1.0], [0.0], [1.0], [0.5], [-0.5]])
w1 = tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], requires_grad=true)
b1 = zeros(3, requires_grad=true)
w2 = tensor([[0.2], [-0.3], [0.1]], requires_grad=true)
def step(x, y, lr) {
    h = tanh(x @ w1 + b1)
    loss = mse_loss(h @ w2, y)
    loss.backward()
    no_grad {
        w1 -= lr * w1.grad
        b1 -= lr * b1.grad
        w2 -= lr * w2.grad
    }
    w1.grad = none
    b1.zero_grad()
    w2.zero_grad()
    return loss.detach()
}
train = MAKE(step)
for i in range(40) { record(train(x, y, 0.2)) }
"""


def run_script(make, source=TRAIN_SCRIPT):
    out = io.StringIO()
    s = ad.Session(out=out)
    losses = []
    s.namespace["record"] = losses.append
    s.run(source.replace("MAKE(step)", make))
    return s, losses, out


def test_a_script_trains_the_same_compiled_and_eager():
    se, le, _ = run_script("step")
    sc, lc, _ = run_script("compile(step)")
    assert len(le) == len(lc) == 40
    for i, (a, b) in enumerate(zip(le, lc)):
        same_tensor(a, b, f"loss {i}", version=False)
    same_state([se[n] for n in ("w1", "b1", "w2")], [sc[n] for n in ("w1", "b1", "w2")])
    assert sc["train"].stats == {"replayed": 39, "eager": 1, "captures": 1}
    assert le[-1].item() < le[0].item()


def test_a_script_reads_the_program_and_its_stats():
    sc, _, out = run_script("compile(step)", TRAIN_SCRIPT + "print(train.program)\nprint(train.stats)\n"
                            "print(train.eager_reason)\n")
    text = out.getvalue()
    assert "program of step:" in text
    lines = text.splitlines()
    assert any(line.startswith("   1  ") and "argument 1" in line for line in lines)
    assert any("= tanh(" in line and "`tanh(x @ w1 + b1)`" in line and "# 8:" in line for line in lines)
    assert any("w1.grad += " in line for line in lines)
    assert any(is_update(line, "w1") for line in lines)
    assert any("w1.grad = none" in line for line in lines)
    assert "'replayed': 39" in text and text.rstrip().endswith("none")


def test_a_learning_rate_schedule_in_a_script():
    source = TRAIN_SCRIPT.replace("def step(x, y, lr) {", "lr = 0.2\ndef step(x, y, unused) {") \
        .replace("for i in range(40) { record(train(x, y, 0.2)) }",
                 "for i in range(12) { record(train(x, y, 0)); if i == 5 { lr = 0.05 } }")
    se, le, _ = run_script("step", source)
    sc, lc, _ = run_script("compile(step)", source)
    for i, (a, b) in enumerate(zip(le, lc)):
        same_tensor(a, b, f"loss {i}", version=False)
    same_state([se[n] for n in ("w1", "b1", "w2")], [sc[n] for n in ("w1", "b1", "w2")])


def test_a_session_s_last_trace_after_a_replay_is_the_captured_call_s():
    s, _, _ = run_script("compile(step)", TRAIN_SCRIPT.replace("range(40)", "range(3)")
                         + "w1.grad = none\nother = (w1 * w1).sum()\nother.backward()\nw1.grad = none\n"
                         + "train(x, y, 0.2)\n")
    text = str(s.last_trace)
    assert "the captured call of the compiled step" in text
    assert "MseLossBackward" in text and "SumBackward" not in text    # not `other`'s backward


def test_program_in_the_repl():
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    r.handle(TRAIN_SCRIPT.replace("MAKE(step)", "compile(step)").replace("record(", "(").strip())
    r.handle(":program train")
    r.handle(":program step")
    r.handle("fresh = compile(step)")
    r.handle(":program fresh")
    text = out.getvalue()
    assert "program of step:" in text
    assert "w2.grad += " in text and any(is_update(line, "b1") for line in text.splitlines())
    assert "step is not a compiled function" in text
    assert "fresh has not been called yet" in text


def test_ctrl_c_in_a_replayed_call_undoes_its_updates(monkeypatch):
    stop = {"on": False, "stopped": 0}
    real = program_mod._grad_none

    def interrupting(*args):
        real(*args)
        if stop["on"]:
            stop["stopped"] += 1
            raise KeyboardInterrupt      # after the updates and the first `.grad = none`
    monkeypatch.setattr(program_mod, "_grad_none", interrupting)
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    r.handle(TRAIN_SCRIPT.replace("MAKE(step)", "compile(step)").replace("range(40)", "range(3)")
             .replace("record(", "("))
    s = r.session
    before = {n: (s[n].numpy(), s[n].version, s[n].grad) for n in ("w1", "b1", "w2")}
    assert s["train"].stats["replayed"] == 2
    stop["on"] = True
    r.handle("k = 1\nl = train(x, y, 0.2)")
    stop["on"] = False
    assert stop["stopped"] == 1 and "interrupted" in out.getvalue().lower()
    assert "k" not in s.namespace and "l" not in s.namespace
    for n, (values, version, grad) in before.items():
        assert bits(s[n]) == values.tobytes() and s[n].version == version and s[n].grad is grad is None
    assert s["train"].stats["replayed"] == 2          # the interrupted call does not count
    # and the next call goes on from there as eager would
    se, le, _ = run_script("step", TRAIN_SCRIPT.replace("range(40)", "range(4)"))
    r.handle("l = train(x, y, 0.2)")
    same_tensor(le[-1], s["l"], version=False)
    same_state([se[n] for n in ("w1", "b1", "w2")], [s[n] for n in ("w1", "b1", "w2")])


def test_ctrl_c_in_a_replay_that_runs_as_a_transaction(monkeypatch):
    # a guard after the updates makes the replay a transaction of its own, inside the REPL's
    stop = {"on": False, "stopped": 0}
    real = program_mod._grad_none

    def interrupting(*args):
        real(*args)
        if stop["on"]:
            stop["stopped"] += 1
            raise KeyboardInterrupt
    monkeypatch.setattr(program_mod, "_grad_none", interrupting)
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    r.handle("""w = tensor([1.0, 2.0], requires_grad=true)
x = tensor([0.5, 0.25])
def step(x) {
    loss = (w * x).sum()
    loss.backward()
    no_grad { w -= 0.1 * w.grad }
    w.grad = none
    if (w * x).sum() > 0 { return 1 }
    return -1
}
train = compile(step)
a = train(x)
b = train(x)""")
    s = r.session
    assert s["train"].stats["replayed"] == 1 and s["train"].program.transactional
    values, version = s["w"].numpy(), s["w"].version
    stop["on"] = True
    r.handle("c = train(x)")
    assert stop["stopped"] == 1 and "c" not in s.namespace
    assert bits(s["w"]) == values.tobytes() and s["w"].version == version and s["w"].grad is None


def test_a_call_that_fails_eagerly_is_not_captured():
    def step(w, x):
        loss = (w @ x).sum()
        loss.backward()
        return loss.detach()

    c = ad.compile(step)
    w = ad.tensor([[1.0, 2.0]], requires_grad=True)
    with pytest.raises(ad.ShapeError):
        c(w, ad.tensor([1.0, 2.0, 3.0]))
    assert c.program is None and c.stats["captures"] == 0 and w.grad is None
    x = ad.tensor([[1.0], [2.0]])
    assert c(w, x).item() == c(w, x).item() == 5.0
    assert w.grad.tolist() == [[2.0, 4.0]] and c.stats["replayed"] == 1


def test_an_error_in_a_replayed_call_in_a_session_leaves_the_variables():
    source = """
w = tensor([[1.0, 2.0, 3.0]], requires_grad=true)
def step(w, t) {
    loss = cross_entropy(w, t)
    loss.backward()
    no_grad { w -= 0.1 * w.grad }
    w.zero_grad()
    return loss.detach()
}
train = compile(step)
good = tensor([1], dtype=int64)
bad = tensor([5], dtype=int64)
l = train(w, good)
l = train(w, good)
"""
    errors = []
    for make in ("compile(step)", "step"):
        s = ad.Session(out=io.StringIO())
        s.run(source.replace("compile(step)", make))
        before = s["w"].numpy(), s["w"].version, s["l"]
        with pytest.raises(ad.ValueError_, match="class indices") as e:
            s.run("l = train(w, bad)")
        errors.append(str(e.value))
        assert bits(s["w"]) == before[0].tobytes() and s["w"].version == before[1] == 2
        assert s["l"] is before[2] and s["w"].grad is None
    assert s.namespace.get("train") is not None
    # the same error at the same place (how the call is named differs: through compile's wrapper)
    first = [e.split(", called")[0] for e in errors]
    assert first[0] == first[1] and "class indices" in first[0] and "4:" in first[0]


# ---- (5) the listing ------------------------------------------------------------------------

def test_the_listing_numbers_operations_with_their_source_positions():
    w1 = ad.tensor([[0.5, -0.5], [0.25, 1.0]], requires_grad=True)
    bias = ad.tensor([0.1, 0.2], requires_grad=True)
    x = ad.tensor([[1.0, 2.0]])

    def step(x):
        nonlocal w1
        h = ad.tanh(x @ w1 + bias)
        loss = (h * h).sum()
        if loss.item() > 100:
            loss = loss / 2
        loss.backward()
        with ad.no_grad():
            w1 -= 0.1 * w1.grad
        w1.grad = None
        bias.zero_grad()
        return loss.detach()

    c = ad.compile(step)
    assert c.program is None
    c(x)
    text = str(c.program)
    lines = text.splitlines()
    assert lines[0].startswith("program of step: ") and "1 tensor argument(s)" in lines[0]
    body = lines[1:]
    numbers = [int(line.split()[0]) for line in body]
    assert numbers == list(range(1, len(body) + 1))
    assert f"program of step: {len(body)} steps" in lines[0]
    assert body[0].split(None, 1)[1] == "v0 = argument 1"
    here = __file__.rsplit("/", 1)[-1]
    tanh_line = next(line for line in body if "= tanh(" in line)
    assert f"# {here}:" in tanh_line and "`h = ad.tanh(x @ w1 + bias)`" in tanh_line
    assert any("matmul(v0, w1)" in line for line in body)
    assert any(line.split(None, 1)[1].startswith("guard: ") and "(Python branched on it)" in line
               for line in body)
    assert any("Backward(" in line for line in body)             # the backward, node by node
    assert any("w1.grad += " in line for line in body) and any("bias.grad += " in line for line in body)
    assert any(is_update(line, "w1") for line in body)
    assert any("w1.grad = none" in line for line in body) and any("bias.grad = none" in line for line in body)
    assert repr(c.program).startswith("<program of step: ")


def test_an_op_that_passes_the_gradient_on_does_so_unchanged():
    # a compiled program skips the formula of such an op (core/program.py): it must be `g, g`
    import numpy as np
    from autodsl.ops.formula import ARRAYS
    from autodsl.ops.registry import REGISTRY
    flagged = [info.cls for info in REGISTRY.values() if info.cls.passes_gradient]
    assert flagged, "add passes its gradient on"
    for cls in flagged:
        node = cls.__new__(cls)
        node.next_edges = (True, True)
        g = np.array([1.5, -2.0])
        outs = cls.formula(node, ARRAYS, g)
        assert all(o is g for o in outs), cls.__name__


def test_specialized_forwards_compute_what_forward_does():
    # a compiled program calls Op.specialize's function instead of forward (core/program.py)
    import numpy as np
    from autodsl.ops.registry import REGISTRY
    rng = np.random.default_rng(0)
    checked = 0
    for info in REGISTRY.values():
        cls = info.cls
        for a in (rng.uniform(0.1, 2.0, (3, 4)), np.array(0.7), rng.uniform(0.1, 1.5, (5,)).astype(np.float32)):
            fast = cls.specialize((a,), {}) if cls.op_name not in ("sum_to", "mse_loss") else None
            if fast is None:
                continue
            node = cls.__new__(cls)
            node._record = False
            node.inputs = (None,)
            node.next_edges = (None,)
            slow = cls.forward(node, a)
            assert np.array_equal(np.asarray(fast(a)), np.asarray(slow), equal_nan=True), cls.__name__
            checked += 1
    assert checked >= 8 * 3         # exp, log, sqrt, sin, cos, tan, tanh, relu


def test_the_specialized_sum_to_computes_what_its_forward_does():
    import numpy as np
    from autodsl.ops.movement import SumTo
    rng = np.random.default_rng(1)
    cases = [((64, 16), (16,)), ((4, 1, 3), (1, 3)), ((2, 3, 4), (3, 1)), ((5, 2), (1, 2)), ((3,), ())]
    for a_shape, shape in cases:
        a = rng.standard_normal(a_shape)
        fast = SumTo.specialize((a,), {"shape": shape})
        node = SumTo.__new__(SumTo)
        slow = SumTo.forward(node, a, shape)
        got = fast(a)
        assert got.shape == slow.shape == shape and np.array_equal(got, slow), (a_shape, shape)



def test_the_specialized_mse_loss_computes_what_its_forward_does():
    import numpy as np
    from autodsl.ops.loss import MseLoss
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((64, 1)), rng.standard_normal((64, 1))
    for reduction in ("mean", "sum", "none"):
        fast = MseLoss.specialize((a, b), {"reduction": reduction})
        node = MseLoss.__new__(MseLoss)
        node._record = False
        node.inputs = (None, None)
        slow = MseLoss.forward(node, a, b, reduction=reduction)
        assert np.array_equal(np.asarray(fast(a, b)), np.asarray(slow)), reduction


def test_written_formulas_compute_what_the_formulas_do():
    # a compiled program writes Op.formula_exprs out instead of calling formula (core/program.py)
    import numpy as np
    from autodsl.backend import swap_last
    from autodsl.ops.formula import ARRAYS
    from autodsl.ops.registry import REGISTRY
    rng = np.random.default_rng(3)
    checked = []
    for info in REGISTRY.values():
        cls = info.cls
        if cls.formula is None or (cls.formula_expr is None and cls.formula_exprs is Op.formula_exprs):
            continue
        for dtype in (np.float64, np.float32):
            y_shape = (4, 2) if cls.op_name == "matmul" else (3, 4)
            x, y = rng.uniform(0.5, 1.5, (3, 4)).astype(dtype), rng.uniform(0.5, 1.5, y_shape).astype(dtype)
            node = cls.__new__(cls)
            node.next_edges = (True, True)
            node.input_shapes = (x.shape, y.shape)
            n_saved = cls.formula.__code__.co_argcount - 3
            saved = (x, y)[:n_saved]
            g = rng.standard_normal((3, 2) if cls.op_name == "matmul" else x.shape).astype(dtype)
            if cls.op_name == "mse_loss":       # its expressions use what forward left (the count)
                node._record, node.inputs = False, (None, None)
                cls.forward(node, x, y)
                g = np.asarray(rng.standard_normal(), dtype=dtype)
            want = cls.formula(node, ARRAYS, g, *saved)
            env = {"_mT": swap_last, "g": g, **{f"s{i}": v for i, v in enumerate(saved)}}
            got = [eval(e.format(*(f"s{i}" for i in range(n_saved)), g="g"), env)
                   for e in node.formula_exprs()]
            assert all(np.array_equal(np.asarray(a), np.asarray(b)) and np.asarray(a).dtype == np.asarray(b).dtype
                       for a, b in zip(got, want)), cls.__name__
        checked.append(cls.op_name)
    assert {"mul", "sub", "div", "neg", "exp", "tanh", "matmul", "mse_loss"} <= set(checked)
