"""Issue 12, break 12 (second part): in-place writes through reshape, transpose and permute views
while recording, as PyTorch records them (CopySlices on the base), by replaying the view's steps on
the base and putting the result back through each step's inverse (ops/inplace.py, Note [writes
through views]).

Each script runs in torch and in autodsl; the loss, the leaf's gradient, the values of the base and
the view afterwards, and the gradients of the tensors that retain_grad() must agree.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

import autodsl as ad

W = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
C = [[0.5, -1.0], [2.0, 3.0], [1.5, 0.25]]

SCRIPTS = {
    "reshape, mul_": "b = w * 1; v = b.reshape(3, 2); v.mul_(c); out = (b * b).sum() + (v * v).sum()",
    "reshape, += a tensor with grad": "b = w * 1; v = b.reshape(6); v += w.reshape(6) * 2; out = (b * b).sum()",
    "view, index write of all": "b = w * 1; v = b.view(3, 2); v[...] = c * w[0, 0]; out = (b * w).sum()",
    "transpose, +=": "b = w * 1; v = b.transpose(0, 1); v += c; out = (b * b * b).sum() + v.sum()",
    "transpose, write of a row": "b = w * 1; v = b.transpose(0, 1); v[0] += 10; out = (b * b).sum()",
    "transpose, broadcast write": "b = w * 1; v = b.transpose(0, 1); v[...] = w[0, :2]; out = (b * b).sum()",
    "transpose, number into a column": "b = w * 1; v = b.transpose(0, 1); v[:, 1] = 2.0; out = (b * w).sum()",
    "T, -=": "b = w * 1; v = b.T; v -= c * w[1, 2]; out = (b * b).sum()",
    "permute of unsqueeze, add_": "b = w * 1; p = b.unsqueeze(0).permute(2, 0, 1); p.add_(1.0); "
                                  "out = (b * b).sum() + (p * 3).sum()",
    "permute, index write": "b = w * 1; p = b.permute(1, 0); p[1, 0] = w[0, 0] * 7; out = (b * b).sum()",
    "index then reshape": "b = w * 1; v = b[0].reshape(3, 1); v *= 4; out = (b * b).sum() + v.sum()",
    "reshape then index": "b = w * 1; v = b.reshape(3, 2)[1:]; v -= w[1, :2]; out = (b * b).sum() + (v * v).sum()",
    "a constant base": "z = zeros(); v = z.transpose(0, 1); v.mul_(w.transpose(0, 1)); out = (z * z).sum()",
    "a constant base, +=": "z = zeros(); v = z.reshape(6); v += w.reshape(6); out = (z * w).sum()",
    "views made before the write": "b = w * 1; v1 = b.reshape(6); v2 = b.transpose(0, 1); "
                                   "v2[0, 1] = w[0, 0] * 100; out = (v1 * v1).sum() + (b * 2).sum()",
    "two writes through two views": "b = w * 1; v = b.reshape(3, 2); v.mul_(c); t = b.transpose(0, 1); "
                                    "t += 1.0; out = (b * b).sum() + (v * t.reshape(3, 2)).sum()",
    "unsqueeze then squeeze": "b = w * 1; v = b.unsqueeze(1).squeeze(1); v.mul_(2.0); out = (b * b).sum()",
    "flatten, index write": "b = w * 1; v = b.flatten(); v[2] = w[1, 1] * 3; out = (b * b).sum()",
    "masked_fill_": "b = w * 1; v = b.reshape(6); v.masked_fill_(v > 2.5, 0.0); out = (b * b).sum()",
    "scatter_add_": "b = w * 1; v = b.transpose(0, 1); v.scatter_add_(0, idx, c[:, :2] * w[0, 0]); "
                    "out = (b * b).sum()",
    "index_put_ accumulate": "b = w * 1; v = b.permute(1, 0); v.index_put_((idx0,), w.T * 2, accumulate=True); "
                             "out = (b * b).sum()",
    "div_ by a tensor with grad": "b = w * 1; v = b.reshape(3, 2); v.div_(w.reshape(3, 2) + 1); out = (b * b).sum()",
    "float32 view += float64": "b = (w * 1).to(float32); v = b.transpose(0, 1); v += c; out = (b * b).sum()",
    "a view of the view after a write": "b = w * 1; v = b.reshape(6); v *= 2; u = v.reshape(3, 2); u += c; "
                                        "out = (b * b).sum() + (v * v).sum() + (u * u).sum()",
    "the view alone": "b = w * 1; v = b.reshape(3, 2); v.mul_(c); out = (v * v).sum()",
    "retain_grad on the view": "b = w * 1; v = b.reshape(6); v.retain_grad(); v *= 3; out = (v * v).sum()",
    "retain_grad on the base": "b = w * 1; b.retain_grad(); v = b.T; v *= c; out = (b * b).sum()",
}


def _env(lib):
    if lib == "torch":
        import torch
        f64 = torch.float64
        return {"w": torch.tensor(W, dtype=f64, requires_grad=True), "c": torch.tensor(C, dtype=f64),
                "zeros": lambda: torch.zeros(2, 3, dtype=f64), "float32": torch.float32,
                "idx": torch.tensor([[0, 1], [2, 0], [1, 2]]), "idx0": torch.tensor([2, 0, 1])}
    return {"w": ad.tensor(W, dtype="float64", requires_grad=True), "c": ad.tensor(C, dtype="float64"),
            "zeros": lambda: ad.zeros([2, 3], dtype="float64"), "float32": "float32",
            "idx": ad.tensor([[0, 1], [2, 0], [1, 2]], dtype="int64"),
            "idx0": ad.tensor([2, 0, 1], dtype="int64")}


def _host(t):
    return np.asarray(t.detach().numpy(), dtype=float)


def _run(lib, script):
    env = _env(lib)
    exec(script.replace("; ", "\n"), {}, env)   # noqa: S102 - our own test scripts
    env["out"].backward()
    facts = {"out": float(env["out"].item()), "w.grad": _host(env["w"].grad)}
    for name in ("b", "v", "z", "p", "t", "u", "v1", "v2"):
        x = env.get(name)
        if x is None:
            continue
        facts[name] = _host(x)
        if x.retains_grad:
            facts[f"{name}.grad"] = None if x.grad is None else _host(x.grad)
        facts[f"{name} has a grad_fn"] = x.grad_fn is not None
    return facts


@pytest.mark.parametrize("name", list(SCRIPTS), ids=list(SCRIPTS))
def test_writes_through_views_match_torch(name):
    pytest.importorskip("torch")
    want = _run("torch", SCRIPTS[name])
    got = _run("autodsl", SCRIPTS[name])
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(got[key], value, rtol=1e-6, err_msg=key)
        else:
            assert got[key] == pytest.approx(value, rel=1e-6), key


def test_the_view_after_a_write_is_a_view_of_the_new_base():
    w = ad.tensor(W, dtype="float64", requires_grad=True)
    b = w * 1
    v = b.reshape(3, 2)
    v.mul_(2.0)
    assert v.requires_grad and v.grad_fn.name == "ReshapeBackward"     # torch: AsStridedBackward0
    assert b.grad_fn.name == "ReshapeBackward"                            # torch: CopySlices
    np.testing.assert_array_equal(b.numpy(), np.array(W) * 2)
    with ad.no_grad():
        b[0, 0] = 100.0                 # the view still shares the base's storage
    assert v[0, 0].item() == 100.0
    assert v._version[0] == b._version[0] == 2


def test_second_derivatives_through_a_write_into_a_transposed_view():
    torch = pytest.importorskip("torch")

    def f(lib, w):
        b = w * 1
        v = b.transpose(0, 1)
        v *= w.transpose(0, 1)          # b = w * w
        return (b * b * b).sum()        # sum w^6

    w = ad.tensor(W, dtype="float64", requires_grad=True)
    (g,) = ad.grad(f("autodsl", w), w, create_graph=True)
    (gg,) = ad.grad(g.sum(), w)
    tw = torch.tensor(W, dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad(f("torch", tw), tw, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tw)
    np.testing.assert_allclose(g.numpy(), tg.detach().numpy())
    np.testing.assert_allclose(gg.numpy(), tgg.numpy())
    np.testing.assert_allclose(gg.numpy(), 30 * np.array(W) ** 4)


def test_refused_as_in_torch_a_view_of_a_leaf_and_an_expanded_view():
    w = ad.tensor(W, dtype="float64", requires_grad=True)
    with pytest.raises(ad.AutogradError, match="leaf"):
        w.reshape(6).mul_(2.0)          # torch: a view of a leaf Variable that requires grad
    with pytest.raises(ad.AutogradError, match="expanded"):
        (w * 1)[:, :1].expand(2, 3).add_(1.0)      # torch: more than one element ... single location
    with ad.no_grad():                  # outside recording: a plain write
        v = w.T
        v += 1.0
    np.testing.assert_array_equal(w.numpy(), np.array(W) + 1)


def test_in_a_script():
    s = ad.Session(out=io.StringIO())
    s.run("a = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=true)\n"
          "x = a * 1\n"
          "v = x.T\n"
          "v += a\n"                    # x = a + a^T
          "u = x.reshape(4)\n"
          "u[0] = 0.0\n"
          "(x * x).sum().backward()\n")
    np.testing.assert_array_equal(s["x"].numpy(), [[0.0, 5.0], [5.0, 8.0]])
    # d/da sum(x^2) with x = a + a^T, x00 then overwritten: 2x + 2x^T with x00 = 0
    np.testing.assert_array_equal(s["a"].grad.numpy(), [[0.0, 20.0], [20.0, 32.0]])
