"""binary_cross_entropy and binary_cross_entropy_with_logits against torch: the edges (inputs
0 and 1, saturated logits), the result dtypes, and the refusals (the op table checks the smooth
cases by finite differences and against torch: op_samples_binary_loss.py)."""
from __future__ import annotations

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _both(fn_name, xs, ys, **kw):
    out = []
    for lib, make in ((ad, lambda v: ad.tensor(v, requires_grad=True, dtype=ad.float64)),
                      (torch, lambda v: torch.tensor(v, requires_grad=True, dtype=torch.float64))):
        x, y = make(xs), make(ys)
        f = getattr(ad if lib is ad else F, fn_name)
        loss = f(x, y, **kw)
        loss.backward()
        out.append([np.asarray(v) for v in (loss.detach().numpy(), x.grad.numpy(), y.grad.numpy())])
    return out


def test_probabilities_0_and_1_give_torchs_finite_input_gradients():
    xs, ys = [0.0, 1.0, 0.0, 1.0, 0.3], [0.0, 1.0, 1.0, 0.0, 0.6]
    got, want = _both("binary_cross_entropy", xs, ys)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14)
    assert np.isfinite(got[1]).all()        # (x - y) / max((1 - x) x, eps): finite at 0 and 1


def test_saturated_logits_stay_finite_and_match_torch():
    xs, ys = [-800.0, 800.0, -30.0, 30.0, 0.0], [1.0, 0.0, 0.0, 1.0, 0.5]
    for kw in ({}, {"pos_weight": None}):
        got, want = _both("binary_cross_entropy_with_logits", xs, ys, **kw)
        for g, w in zip(got, want):
            assert np.isfinite(g).all()
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-300)


def test_pos_weight_and_weight_match_torch():
    rng = np.random.default_rng(0)
    xs, ys = rng.normal(size=(4, 3)), rng.uniform(size=(4, 3))
    pw, w = [2.0, 0.5, 1.0], [[1.0], [0.5], [2.0], [0.0]]
    got = ad.binary_cross_entropy_with_logits(ad.tensor(xs), ad.tensor(ys), weight=ad.tensor(w),
                                              pos_weight=ad.tensor(pw), reduction="none")
    want = F.binary_cross_entropy_with_logits(torch.tensor(xs), torch.tensor(ys), weight=torch.tensor(w),
                                              pos_weight=torch.tensor(pw), reduction="none")
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)


@pytest.mark.parametrize("dts", [("float32", "float64"), ("float64", "float32"), ("float32", "float32")])
def test_with_logits_has_the_targets_dtype_as_in_torch(dts):
    x, y = np.array([0.5, -1.0]), np.array([1.0, 0.0])
    got = ad.binary_cross_entropy_with_logits(ad.tensor(x, dtype=getattr(ad, dts[0])),
                                              ad.tensor(y, dtype=getattr(ad, dts[1])))
    want = F.binary_cross_entropy_with_logits(torch.tensor(x, dtype=getattr(torch, dts[0])),
                                              torch.tensor(y, dtype=getattr(torch, dts[1])))
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")
    assert got.item() == pytest.approx(want.item(), rel=1e-6)


def test_a_weight_of_another_dtype_keeps_the_inputs():
    x, y = ad.tensor([0.3, 0.6], dtype=ad.float32), ad.tensor([1.0, 0.0], dtype=ad.float32)
    assert ad.binary_cross_entropy(x, y, weight=ad.tensor([1.0, 2.0], dtype=ad.float64)).dtype is ad.float32


@pytest.mark.parametrize("call, error", [
    (lambda: ad.binary_cross_entropy(ad.tensor([1.5]), ad.tensor([1.0])), ad.ValueError_),
    (lambda: ad.binary_cross_entropy(ad.tensor([float("nan")]), ad.tensor([1.0])), ad.ValueError_),
    (lambda: ad.binary_cross_entropy(ad.tensor([0.5], dtype=ad.float32), ad.tensor([1.0])), ad.DTypeError),
    (lambda: ad.binary_cross_entropy(ad.tensor([0.5, 0.5]), ad.tensor([1.0])), ad.ShapeError),
    (lambda: ad.binary_cross_entropy(ad.tensor([0, 1], dtype=ad.int64), ad.tensor([1, 0], dtype=ad.int64)), ad.DTypeError),
    (lambda: ad.binary_cross_entropy(ad.rand(2, 3), ad.rand(2, 3), weight=ad.rand(4, 2, 3)), ad.ShapeError),
    (lambda: ad.binary_cross_entropy(ad.rand(3), ad.rand(3), reduction="avg"), ad.DSLError),
    (lambda: ad.binary_cross_entropy_with_logits(ad.tensor([0.5]), ad.tensor([1], dtype=ad.int64)), ad.DTypeError),
    (lambda: ad.binary_cross_entropy_with_logits(ad.tensor([0.5, 1.0]), ad.tensor([1.0])), ad.ShapeError),
    (lambda: ad.binary_cross_entropy_with_logits(ad.rand(2, 3), ad.rand(2, 3), pos_weight=ad.rand(2)),
     ad.ShapeError),
    (lambda: ad.binary_cross_entropy_with_logits(ad.rand(3), ad.rand(3),
                                                 weight=ad.rand(3, requires_grad=True)), ad.AutogradError),
])
def test_refusals_are_torchs(call, error):
    with pytest.raises(error):
        call()


def test_a_weight_that_requires_grad_is_taken_under_no_grad():
    w = ad.rand(3, requires_grad=True)
    with ad.no_grad():
        loss = ad.binary_cross_entropy(ad.tensor([0.2, 0.5, 0.9]), ad.tensor([0.0, 1.0, 1.0]), weight=w)
    assert np.isfinite(loss.item())


def test_empty_mean_is_nan_as_in_torch():
    assert np.isnan(ad.binary_cross_entropy(ad.zeros(0), ad.zeros(0)).item())
    assert np.isnan(ad.binary_cross_entropy_with_logits(ad.zeros(0), ad.zeros(0)).item())


def test_the_language_trains_a_logistic_regression():
    s = ad.Session(echo=False)
    s.run("X = tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [0.0, 2.0]])\n"
          "y = tensor([0.0, 1.0, 1.0, 0.0])\n"
          "w = zeros(2, requires_grad=true)\n"
          "for i in range(200) {\n"
          "    loss = binary_cross_entropy_with_logits(X @ w, y)\n"
          "    w.grad = none\n"
          "    loss.backward()\n"
          "    no_grad { w -= 0.5 * w.grad }\n"
          "}\n"
          "p = sigmoid(X @ w)\n"
          "bce = binary_cross_entropy(p, y)\n")
    assert s.get("bce").item() == pytest.approx(s.get("loss").item(), rel=0.05)
    assert (s.get("p").numpy() > 0.5).tolist() == [False, True, True, False]


def _second_order(fn_name, xs, ys, pos_weight=None):
    """Both gradients and every second derivative of (x, y), in autodsl and torch."""
    out = []
    for make, f, grad in ((lambda v: ad.tensor(v, requires_grad=True, dtype=ad.float64), getattr(ad, fn_name),
                           ad.grad),
                          (lambda v: torch.tensor(v, requires_grad=True, dtype=torch.float64), getattr(F, fn_name),
                           torch.autograd.grad)):
        x, y = make(xs), make(ys)
        kw = {} if pos_weight is None else {"pos_weight": make(pos_weight).detach()}
        gx, gy = grad(f(x, y, reduction="sum", **kw), [x, y], create_graph=True)
        got = [gx.detach().numpy(), gy.detach().numpy()]
        got += [t.detach().numpy() for t in grad(gx.sum(), [x, y])]
        got += [grad(gy.sum(), [x])[0].detach().numpy()]
        out.append(got)
    return out


def test_second_derivatives_at_0_and_1_are_torchs():
    """torch's own double backward (not the derivative of a clamp: 1e24 at x = 0, y = 1, where a
    clamp's would be 1e12) and logit's derivative for the target's gradient (-inf, not nan)."""
    got, want = _second_order("binary_cross_entropy", [0.0, 1.0, 0.0, 1e-13, 0.3, 0.99],
                              [1.0, 0.0, 0.0, 0.5, 0.6, 0.2])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert got[2][0] == want[2][0] == pytest.approx(1e24, rel=1e-9)
    assert got[4][0] == -np.inf


@pytest.mark.parametrize("pos_weight", [None, [2.0, 0.5, 1.0, 3.0]])
def test_with_logits_second_derivatives_are_torchs(pos_weight):
    got, want = _second_order("binary_cross_entropy_with_logits", [0.5, -40.0, 30.0, 0.0], [1.0, 0.0, 1.0, 0.3],
                              pos_weight)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-300)


def test_a_target_outside_0_1_is_refused_as_in_torch():
    for bad in (2.0, -0.5, float("nan"), float("inf")):
        with pytest.raises(ad.ValueError_, match="target"):
            ad.binary_cross_entropy(ad.tensor([0.5]), ad.tensor([bad]))
        with pytest.raises(RuntimeError):
            F.binary_cross_entropy(torch.tensor([0.5], dtype=torch.float64), torch.tensor([bad], dtype=torch.float64))


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_integer_and_bool_weights_are_taken_as_in_torch(dtype):
    p, y, w = [0.2, 0.5], [1.0, 0.0], [1, 2] if dtype == "int64" else [True, False]
    got = ad.binary_cross_entropy(ad.tensor(p), ad.tensor(y), weight=ad.tensor(w, dtype=getattr(ad, dtype)))
    want = F.binary_cross_entropy(torch.tensor(p, dtype=torch.float64), torch.tensor(y, dtype=torch.float64),
                                  weight=torch.tensor(w))
    assert got.item() == pytest.approx(want.item(), rel=1e-14)


def test_an_integer_pos_weight_is_taken_and_a_bool_one_refused_as_in_torch():
    p, y = [0.2, 0.5], [1.0, 0.0]
    got = ad.binary_cross_entropy_with_logits(ad.tensor(p), ad.tensor(y), pos_weight=ad.tensor([1, 2], dtype=ad.int64))
    want = F.binary_cross_entropy_with_logits(torch.tensor(p, dtype=torch.float64),
                                              torch.tensor(y, dtype=torch.float64), pos_weight=torch.tensor([1, 2]))
    assert got.item() == pytest.approx(want.item(), rel=1e-14)
    with pytest.raises(ad.DTypeError):
        ad.binary_cross_entropy_with_logits(ad.tensor(p), ad.tensor(y), pos_weight=ad.tensor([True, False]))
    with pytest.raises(RuntimeError):
        F.binary_cross_entropy_with_logits(torch.tensor(p), torch.tensor(y), pos_weight=torch.tensor([True, False]))


def test_with_logits_rounds_as_torch_across_dtypes():
    """logsigmoid in the input's dtype, the rest in the target's: torch's values bit for bit here."""
    got = ad.binary_cross_entropy_with_logits(ad.tensor([0.2, 0.5], dtype=ad.float32), ad.tensor([1.0, 0.0]))
    want = F.binary_cross_entropy_with_logits(torch.tensor([0.2, 0.5]), torch.tensor([1.0, 0.0], dtype=torch.float64))
    assert got.item() == want.item()
