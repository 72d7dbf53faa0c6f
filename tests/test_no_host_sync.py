"""The GPU path without host syncs: a training step on "cuda" reads nothing back to the host.

"cuda" is the recording device of tests/helpers/recording_xp.py here (CuPy's branches of the
backend, on NumPy arrays that count every read to the host), so this runs without a GPU. Each
test runs the same code on the CPU and compares the values, read after the counting.
"""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad
from tests.helpers.recording_xp import Rec, cuda_fixture  # noqa: F401  (the fixture cuda)




def _host(t):
    return None if t is None else np.asarray(t._data._a if type(t._data) is Rec else t._data)


def _mlp_data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((16, 4)), rng.integers(0, 3, 16), rng.standard_normal((4, 8)),
            rng.standard_normal(8), rng.standard_normal((8, 3)), rng.standard_normal(3))


def _train(device, steps, counter=None, momentum=0.0, adam=False):
    X, Y, *P = _mlp_data()
    x = ad.tensor(X, device=device)
    y = ad.tensor(Y, device=device)
    params = [ad.tensor(p, device=device, requires_grad=True) for p in P]
    w1, b1, w2, b2 = params
    opt = (ad.adam(params, lr=0.01, weight_decay=0.1, amsgrad=True) if adam
           else ad.sgd(params, lr=0.1, momentum=momentum))
    if counter is not None:
        counter.reset()
    losses = []
    for _ in range(steps):
        h = ad.relu(x @ w1 + b1)
        loss = ad.cross_entropy(h @ w2 + b2, y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss)
    return losses, params


def test_the_device_is_the_recording_one(cuda):
    x = ad.tensor([1.0, 2.0], device="cuda")
    assert type(x._data) is Rec and x.device == "cuda"
    cuda.reset()
    assert x.sum().item() == 3.0
    assert cuda.syncs == 1          # the read itself is counted


@pytest.mark.parametrize(("momentum", "adam"), [(0.0, False), (0.9, False), (0.0, True)],
                         ids=["sgd", "sgd-momentum", "adam-amsgrad"])
def test_a_training_step_makes_no_host_sync(cuda, momentum, adam):
    losses, params = _train("cuda", 3, cuda, momentum, adam)
    assert cuda.syncs == 0, cuda.where[:3]
    cuda.on = False
    ref_losses, ref_params = _train("cpu", 3, momentum=momentum, adam=adam)
    np.testing.assert_allclose([_host(t) for t in losses], [t.item() for t in ref_losses], rtol=1e-12)
    for p, r in zip(params, ref_params):
        np.testing.assert_allclose(_host(p), r.numpy(), rtol=1e-12)


def test_the_second_step_copies_no_constant_to_the_device(cuda):
    X, Y, *P = _mlp_data()
    x = ad.tensor(X, device="cuda")
    w = ad.tensor(P[0], device="cuda", requires_grad=True)

    def step():
        loss = (ad.tanh(x @ w) * 0.5 + 0.0 - -0.0).pow(2).mean()
        loss.backward()
        with ad.no_grad():
            w.sub_(w.grad * 0.01)
        w.grad = None
    step()
    cuda.reset()
    step()
    assert cuda.uploads == 0 and cuda.syncs == 0


def test_zeros_keep_their_sign_as_cached_constants(cuda):
    x = ad.tensor([1.0, -2.0], device="cuda")
    cuda.on = False
    assert _host(1 / (x * 0.0)).tolist() == [np.inf, -np.inf]
    assert _host(1 / (x * -0.0)).tolist() == [-np.inf, np.inf]
    assert _host(1 / (x * 0.0)).tolist() == [np.inf, -np.inf]


def _grads(device, fn, *values):
    leaves = [ad.tensor(v, device=device, requires_grad=True) for v in values]
    out = fn(*leaves)
    out.sum().backward()
    return out, [t.grad for t in leaves]


@pytest.mark.parametrize("fn", [
    pytest.param(lambda x, y: x ** y, id="x^y"),
    pytest.param(lambda x, y: x ** 2 + y ** 0 + x ** 0.5, id="x^numbers"),
    pytest.param(lambda x, y: (x * y).prod(), id="prod"),
    pytest.param(lambda x, y: (x * y).prod(dim=0), id="prod-dim"),
])
def test_pow_and_prod_with_zeros_make_no_host_sync(cuda, fn):
    xs = np.array([0.0, 2.0, 0.0, 3.0])
    ys = np.array([0.0, 1.5, 2.0, 0.0])
    cuda.reset()
    out, grads = _grads("cuda", fn, xs, ys)
    assert cuda.syncs == 0, cuda.where[:3]
    cuda.on = False
    ref_out, ref_grads = _grads("cpu", fn, xs, ys)
    np.testing.assert_allclose(_host(out), ref_out.numpy(), rtol=1e-12)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(_host(g), r.numpy(), rtol=1e-12)


def test_a_gradient_nobody_else_holds_is_kept_not_copied(cuda):
    # Note [stealing a gradient] on CuPy: the engine's own gradient becomes .grad as it is
    w = ad.tensor([1.0, 2.0, 3.0], device="cuda", requires_grad=True)
    cuda.reset()
    (w * 2.0).sum().backward()
    assert type(w.grad._data) is Rec and cuda.copies == 0
    cuda.on = False
    assert _host(w.grad).tolist() == [2.0, 2.0, 2.0]


def test_a_parameter_update_writes_into_the_parameter(cuda):
    w = ad.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    before = w._data._a
    (w * w).sum().backward()
    opt = ad.sgd([w], lr=0.5)
    cuda.reset()
    opt.step()
    # computed straight into the parameter's memory: no new array copied back
    assert w._data._a is before and cuda.written == 1 and cuda.copies == 0
    cuda.on = False
    assert _host(w).tolist() == [0.0, 0.0]


def test_ops_on_cuda_set_no_numpy_error_state(cuda, monkeypatch):
    # CuPy never warns: an op from the Python API enters NumPy's error state on the CPU only
    import autodsl.backend as backend
    calls = []
    real = backend.fp_errors_off
    monkeypatch.setattr(backend, "fp_errors_off", lambda: calls.append(1) or real())
    x = ad.tensor([0.0, 1.0], device="cuda")
    ad.log(x) / 0.0
    assert calls == []
    ad.log(ad.tensor([0.0, 1.0])) / 0.0
    assert len(calls) == 2


TRAIN = """
w = W.clone().requires_grad_()
opt = sgd([w], lr=0.1)
for i in range(3) {
    loss = cross_entropy(X @ w, y) + (w^2).sum() * 0.01
    loss.backward()
    opt.step()
    opt.zero_grad()
}
"""

CHAIN = """
x = tensor(2.0)
w1 = tensor(0.5, requires_grad=true)
b = tensor(1.0, requires_grad=true)
f = (w1*x^2 + b)^3
f.backward()
"""


def _session(device):
    import io
    X, Y, W, *_ = _mlp_data()
    s = ad.Session(device=device, out=io.StringIO())
    s["X"] = ad.tensor(X, device=device)
    s["y"] = ad.tensor(Y, device=device)
    s["W"] = ad.tensor(W[:, :3], device=device)
    return s


def test_a_training_loop_in_a_session_makes_no_host_sync(cuda):
    # a Session keeps every backward's trace: its numbers are device copies until it is shown
    s = _session("cuda")
    cuda.reset()
    s.run(TRAIN)
    assert cuda.syncs == 0, cuda.where[:2]
    cuda.on = False
    ref = _session("cpu")
    ref.run(TRAIN)
    np.testing.assert_allclose(_host(s["w"]), ref["w"].numpy(), rtol=1e-12)


def test_a_sessions_trace_on_cuda_shows_the_cpus_numbers(cuda):
    s, ref = _session("cuda"), _session("cpu")
    s.run(CHAIN)
    ref.run(CHAIN)
    cuda.on = False
    text = str(s.last_trace)
    assert text == str(ref.last_trace) and "= 1.0 * 3.0 * 3.0^(3.0-1)" in text


def _compiled_step(device):
    X, _, W, *_ = _mlp_data()
    x = ad.tensor(X, device=device)
    w = ad.tensor(W, device=device, requires_grad=True)

    def step():
        loss = (ad.tanh(x @ w) ** 2).mean()
        loss.backward()
        with ad.no_grad():
            w.sub_(w.grad * 0.1)
        w.grad = None
        return loss.detach()
    return ad.compile(step), w


def test_a_compiled_step_makes_no_host_sync_and_updates_in_place(cuda):
    f, w = _compiled_step("cuda")
    f()
    f()                     # the capture, then the program
    cuda.reset()
    f()
    assert cuda.syncs == 0 and cuda.written == 1      # the update with CuPy's ufunc, out=
    cuda.on = False
    g, ref = _compiled_step("cpu")
    for _ in range(3):
        g()
    np.testing.assert_array_equal(_host(w), ref.numpy())
