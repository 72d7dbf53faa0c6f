"""einsum, det, inverse, solve and the losses' keywords at their edges, against PyTorch:
broadcast subscripts, implicit outputs, integer dtypes, singular matrices, torch's vector rule of
solve, all-ignored targets, and the errors (the op table covers the ordinary values and gradients)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import to_ad

import autodsl as ad

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _both(a, requires_grad=True):
    return to_ad(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def _close(x, t):
    np.testing.assert_allclose(x.numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12, equal_nan=True)


rng = np.random.default_rng(11)


# -- einsum ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("eq, shapes", [
    ("i,i->i", [(1,), (3,)]),                 # a size-1 subscript broadcasts, as in torch
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("...,...", [(2, 1), (3,)]),
    ("bA,ab", [(2, 3), (2, 2)]),              # implicit output: ASCII order, upper case first
    ("i...i", [(2, 3, 2)]),                   # a diagonal around an ellipsis
    ("ij...->ij", [(2, 3, 4)]),               # ellipsis dims left out of the output are summed
    ("iij->ji", [(2, 2, 3)]),
])
def test_einsum_edge_equations_match_torch(eq, shapes):
    pairs = [_both(rng.standard_normal(s)) for s in shapes]
    out = ad.einsum(eq, *[a for a, _ in pairs])
    ref = torch.einsum(eq, *[t for _, t in pairs])
    _close(out, ref)
    v = rng.standard_normal(out.shape)
    got = ad.grad(out, [a for a, _ in pairs], grad_outputs=[to_ad(v)])
    want = torch.autograd.grad(ref, [t for _, t in pairs], grad_outputs=torch.tensor(v))
    for g, w in zip(got, want):
        _close(g, w)


def test_einsum_of_integers_stays_integer():
    a = np.array([[1, 2], [3, 4]])
    out = ad.einsum("ij,jk->ik", to_ad(a), to_ad(a))
    ref = torch.einsum("ij,jk->ik", torch.tensor(a), torch.tensor(a))
    assert out.dtype is ad.int64
    np.testing.assert_array_equal(out.numpy(), ref.numpy())


def test_einsum_propagates_nan_and_owns_its_memory():
    x = ad.tensor([[1.0, float("nan")], [2.0, 3.0]])
    np.testing.assert_array_equal(ad.einsum("ij->i", x).numpy(), [np.nan, 5.0])
    same = ad.einsum("ij->ij", x)
    x[0, 0] = 7.0
    assert same[0, 0].item() == 1.0       # a copy, not a view of x


def test_einsum_accepts_a_list_and_mixed_dtypes_promote():
    a = ad.tensor([[1.0, 2.0]], dtype=ad.float32)
    b = ad.tensor([3.0, 4.0])
    out = ad.einsum("ij,j->i", [a, b])
    assert out.dtype is ad.float64           # (torch refuses mixed dtypes; autodsl promotes, as matmul)
    np.testing.assert_array_equal(out.numpy(), [11.0])


@pytest.mark.parametrize("eq, shapes, exc", [
    ("ij,jk", [(2, 3)], ad.ValueError_),                  # fewer operands than terms
    ("ij", [(2,)], ad.ShapeError),                         # subscripts != dims
    ("ii->i", [(2, 3)], ad.ShapeError),                    # a diagonal of unequal sizes
    ("i,i", [(2,), (3,)], ad.ShapeError),                  # sizes that do not broadcast
    ("ij->ii", [(2, 2)], ad.ValueError_),                  # repeated output subscript
    ("i->j", [(2,)], ad.ValueError_),                      # output subscript in no operand
    ("a.b", [(2, 2)], ad.ValueError_),
    ("i1", [(2, 2)], ad.ValueError_),
])
def test_einsum_errors_are_language_errors_where_torch_raises(eq, shapes, exc):
    with pytest.raises(exc):
        ad.einsum(eq, *[ad.ones(s) for s in shapes])
    with pytest.raises(RuntimeError):
        torch.einsum(eq, *[torch.ones(s) for s in shapes])


def test_einsum_in_the_language():
    out = ad.Session().run('a = tensor([[1.0, 2], [3, 4]], requires_grad=true)\n'
                           't = einsum("ii", a)\nt.backward()\na.grad')
    np.testing.assert_array_equal(out.numpy(), np.eye(2))


# -- det, inverse, solve ------------------------------------------------------------------------------

SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix():
    a, t = _both(SINGULAR)
    assert ad.det(a).item() == 0.0
    (g,) = ad.grad(ad.det(a), [a])
    np.testing.assert_allclose(g.numpy(), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    # torch gives the cofactor matrix when it records the backward (create_graph); its plain
    # backward gives 0 there (an LU pivot exactly 0): autodsl gives the cofactor matrix in both
    (tg,) = torch.autograd.grad(torch.linalg.det(t), [t], create_graph=True)
    _close(g, tg)
    (g2,) = ad.grad(ad.det(a), [a], create_graph=True)
    _close(g2, tg)


def test_det_of_integer_empty_and_batched_matrices():
    assert ad.det(ad.tensor([[2, 1], [1, 3]], dtype=ad.int64)).dtype is ad.float64
    assert ad.det(ad.zeros((0, 0))).item() == 1.0          # torch: det of a 0x0 matrix is 1
    a, t = _both(rng.standard_normal((2, 3, 3, 3)) + 3 * np.eye(3))
    _close(ad.det(a), torch.linalg.det(t))
    assert ad.tensor([[2.0, 1.0], [1.0, 3.0]]).det().item() == pytest.approx(5.0)


@pytest.mark.parametrize("fn, tfn", [(lambda x: ad.inverse(x), torch.linalg.inv),
                                     (lambda x: ad.solve(x, ad.ones(2)), lambda x: torch.linalg.solve(x, torch.ones(2,
                                                                                   dtype=x.dtype)))])
def test_a_singular_matrix_raises_as_in_torch(fn, tfn):
    with pytest.raises(ad.RuntimeError_, match="singular"):
        fn(to_ad(SINGULAR))
    with pytest.raises(RuntimeError):
        tfn(torch.tensor(SINGULAR))


@pytest.mark.parametrize("fn", [ad.det, ad.inverse, lambda x: ad.solve(x, ad.ones(2))])
def test_non_square_matrices_raise_shape_errors(fn):
    with pytest.raises(ad.ShapeError):
        fn(ad.ones((2, 3)))
    with pytest.raises(ad.ShapeError):
        fn(ad.ones(3))


def test_inverse_method_and_values():
    a, t = _both(rng.standard_normal((3, 3)) + 2 * np.eye(3))
    _close(a.inverse(), torch.linalg.inv(t))
    np.testing.assert_allclose((a @ a.inverse()).numpy(), np.eye(3), atol=1e-12)


@pytest.mark.parametrize("a_shape, b_shape", [
    ((2, 2, 2), (2, 2)),       # B has A's shape without its last dim: a batch of vectors (torch's rule)
    ((2, 3, 3), (3,)),         # a vector broadcast over the batch
    ((3, 3), (2, 3, 1)),       # matrices, A broadcast
    ((2, 1, 3, 3), (4, 3, 2)),  # batch dims broadcast
])
def test_solve_follows_torch_for_vectors_and_batches(a_shape, b_shape):
    a, ta = _both(rng.standard_normal(a_shape) * 0.3 + 2 * np.eye(a_shape[-1]))
    b, tb = _both(rng.standard_normal(b_shape))
    x, tx = ad.solve(a, b), torch.linalg.solve(ta, tb)
    _close(x, tx)
    v = rng.standard_normal(x.shape)
    for g, w in zip(ad.grad(x, [a, b], grad_outputs=[to_ad(v)]),
                    torch.autograd.grad(tx, [ta, tb], grad_outputs=torch.tensor(v))):
        _close(g, w)


def test_solve_with_mismatched_sizes_raises_a_shape_error():
    with pytest.raises(ad.ShapeError):
        ad.solve(ad.eye(3), ad.ones(2))
    with pytest.raises(RuntimeError):
        torch.linalg.solve(torch.eye(3), torch.ones(2))


# -- losses ---------------------------------------------------------------------------------------------

W = [0.5, 1.0, 2.0, 1.5]


@pytest.mark.parametrize("name, kw", [("nll_loss", {}), ("nll_loss", {"weight": W}), ("cross_entropy", {}),
                                      ("cross_entropy", {"weight": W}), ("cross_entropy", {"label_smoothing": 0.2})])
def test_every_target_ignored_gives_nan_and_zero_gradients(name, kw):
    x, tx = _both(rng.standard_normal((3, 4)))
    t = np.array([-100, -100, -100])
    tkw = {k: torch.tensor(v, dtype=torch.float64) if k == "weight" else v for k, v in kw.items()}
    out = getattr(ad, name)(x, to_ad(t), **kw)
    ref = getattr(F, name)(tx, torch.tensor(t), **tkw)
    assert np.isnan(out.item()) and np.isnan(ref.item())
    (g,) = ad.grad(out, [x])
    (tg,) = torch.autograd.grad(ref, [tx])
    _close(g, tg)


def test_float32_losses_stay_float32_with_weight_and_smoothing():
    x = ad.tensor(rng.standard_normal((3, 4)).tolist(), dtype=ad.float32, requires_grad=True)
    t = ad.tensor([1, 0, 3], dtype=ad.int64)
    w = ad.tensor(W, dtype=ad.float32)
    for loss in (ad.nll_loss(x, t, weight=w), ad.cross_entropy(x, t, weight=w, label_smoothing=0.1)):
        assert loss.dtype is ad.float32
        (g,) = ad.grad(loss, [x])
        assert g.dtype is ad.float32


def test_large_logits_with_weight_and_smoothing_match_torch():
    x, tx = _both(rng.standard_normal((2, 3)) * 5 + 800.0)
    t = np.array([2, 0])
    out = ad.cross_entropy(x, to_ad(t), weight=W[:3], label_smoothing=0.1)
    ref = F.cross_entropy(tx, torch.tensor(t), weight=torch.tensor(W[:3], dtype=torch.float64),
                          label_smoothing=0.1)
    _close(out, ref)


@pytest.mark.parametrize("call, exc", [
    (lambda x, t: ad.cross_entropy(x, t, label_smoothing=1.5), ad.ValueError_),
    (lambda x, t: ad.cross_entropy(x, t, weight=[1.0, 2.0, 3.0]), ad.ShapeError),
    (lambda x, t: ad.nll_loss(x, t, weight=ad.ones(4, requires_grad=True)), ad.AutogradError),
    (lambda x, t: ad.cross_entropy(x, ad.softmax(x, dim=1), ignore_index=1), ad.ValueError_),
    (lambda x, t: ad.nll_loss(x, ad.tensor([1, 4, 0], dtype=ad.int64)), ad.ValueError_),
    (lambda x, t: ad.nll_loss(ad.reshape(x, 3, 2, 2), t), ad.ShapeError),
])
def test_loss_errors_where_torch_raises(call, exc):
    x = ad.tensor(rng.standard_normal((3, 4)).tolist(), requires_grad=True)
    with pytest.raises(exc):
        call(x, ad.tensor([1, 0, 3], dtype=ad.int64))


def test_torch_raises_for_the_same_loss_arguments():
    x, t = torch.randn(3, 4, requires_grad=True), torch.tensor([1, 0, 3])
    for call in (lambda: F.cross_entropy(x, t, label_smoothing=1.5),
                 lambda: F.cross_entropy(x, t, weight=torch.ones(3)),
                 lambda: F.nll_loss(x, t, weight=torch.ones(4, requires_grad=True)),
                 lambda: F.cross_entropy(x, torch.softmax(x, 1), ignore_index=1),
                 lambda: F.nll_loss(x, torch.tensor([1, 4, 0]))):
        with pytest.raises((RuntimeError, IndexError)):
            call()


def test_cross_entropy_keywords_in_the_language():
    out = ad.Session().run("x = tensor([[1.0, 2, 3], [1, 0, -1]])\n"
                           "cross_entropy(x, tensor([2, 5], dtype=int64), weight=tensor([1.0, 2, 3]), "
                           "ignore_index=5, label_smoothing=0.1)")
    ref = F.cross_entropy(torch.tensor([[1.0, 2, 3], [1, 0, -1]], dtype=torch.float64), torch.tensor([2, 5]),
                          weight=torch.tensor([1.0, 2, 3], dtype=torch.float64), ignore_index=5,
                          label_smoothing=0.1)
    assert out.item() == pytest.approx(ref.item(), rel=1e-12)


def test_a_compiled_step_with_these_ops_replays_bit_identically():
    """The nodes' facts (targets' weights, solve's vector case) come from forward, which a replay
    runs: new labels every step, some ignored, still give eager's values exactly."""
    from test_compile import same_state, same_tensor, sgd, twins
    x = ad.tensor(rng.normal(size=(6, 4, 2)).tolist())
    labels = [ad.tensor(rng.integers(-1, 3, size=(6, 2)).tolist(), dtype=ad.int64) for _ in range(12)]
    weight = ad.tensor([0.5, 2.0, 1.0])
    pe, pc = twins(rng.normal(size=(3, 4)) * 0.1, np.eye(3) + 0.1 * rng.normal(size=(3, 3)))

    def step(params, x, t, lr=0.1):
        w, a = params
        logits = ad.einsum("nci,kc->nki", x, w)
        loss = (ad.cross_entropy(logits, t, weight=weight, ignore_index=-1, label_smoothing=0.1)
                + 0.01 * (ad.det(a) + ad.solve(a, ad.ones(3)).sum() + ad.inverse(a).sum()))
        loss.backward()
        sgd(params, lr)
        w.zero_grad()
        a.zero_grad()
        return loss.detach()

    c = ad.compile(step)
    for i, t in enumerate(labels):
        same_tensor(step(pe, x, t), c(pc, x, t), f"loss of step {i}", version=False)
    same_state(pe, pc)
    assert c.stats["replayed"] == len(labels) - 1
