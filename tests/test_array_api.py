"""The op table and the engine on ``array_api_strict``: proof, in every normal test run, that
autodsl computes with the Array API standard only (issue 4, "GPU (CuPy)").

``array_api_strict`` implements the standard and nothing more: any NumPy-only call (a method
such as ``a.sum()``, ``a.dtype.kind``, ``np.add.at``, fancy ``__setitem__``...) on a tensor's
array raises there. Each test switches the "cpu" device to it in-process
(``backend.use_namespace("strict")``) and compares values and gradients with the NumPy
namespace's, which the rest of the suite checks against finite differences and PyTorch.

The whole suite runs on it too: ``python -m pytest --array-api=strict`` (or
``AUTODSL_ARRAY_API=strict python -m pytest``); tests marked ``numpy_only`` skip there.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("array_api_strict")

import autodsl as ad  # noqa: E402
from autodsl import backend# noqa: E402
from helpers import gradgradcheck, to_ad  # noqa: E402
from op_samples import DIFF_SAMPLES, SAMPLES  # noqa: E402


def _strict():
    return backend.use_namespace("strict")


def _numpy():
    return backend.use_namespace("numpy")


def _is_strict(arr) -> bool:
    return type(arr).__module__.startswith("array_api_strict")


def _run(sample, grad: bool):
    """(output, [gradients]) of a sample as host arrays, in the current namespace."""
    ts = [to_ad(a, requires_grad=grad) for a in sample.args]
    out = sample.fn(ad, *ts)
    if isinstance(out, tuple):
        out = out[0]
    leaves = [t for t in ts if isinstance(t, ad.Tensor) and t.requires_grad]
    grads = []
    if grad and leaves and out.requires_grad:
        seed = ad.tensor(np.linspace(-1.0, 1.5, out.numel()).reshape(out.shape).tolist(),
                         dtype=out.dtype)
        grads = ad.grad(out, leaves, grad_outputs=seed, allow_unused=True)
        for g in grads:
            assert g is None or _is_strict(g._data) or backend.namespace_name() == "numpy"
    assert _is_strict(out._data) == (backend.namespace_name() == "strict")
    return out, [None if g is None else g.numpy() for g in grads]


def _same(a, b):
    assert a.shape == b.shape
    assert a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, equal_nan=True)


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_every_sample_gives_numpys_values_and_gradients(sample):
    """Forward value, dtype and (for differentiable samples) every input's gradient."""
    with _numpy():
        ref_out, ref_grads = _run(sample, sample.grad)
    with _strict():
        out, grads = _run(sample, sample.grad)
    assert out.dtype is ref_out.dtype and out.requires_grad == ref_out.requires_grad
    _same(out.numpy(), ref_out.numpy())
    assert len(grads) == len(ref_grads)
    for g, rg in zip(grads, ref_grads):
        assert (g is None) == (rg is None)
        if g is not None:
            _same(g, rg)


# second order (create_graph), checked against finite differences on strict itself
GG = [s for s in DIFF_SAMPLES if s.gradgrad]


@pytest.mark.parametrize("sample", GG, ids=[s.id for s in GG])
def test_second_derivatives_on_strict(sample):
    with _strict():
        assert gradgradcheck(lambda *ts: sample.fn(ad, *ts), list(sample.args),
                             atol=sample.atol, rtol=sample.rtol, seed=0)


def test_the_switch_reaches_every_array():
    before = backend.namespace_name()
    with _strict():
        x = ad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = ad.randn(2, 2)
        z = (x @ y).relu().sum()
        z.backward()
        for t in (x, y, z, x.grad, ad.zeros(2), ad.arange(3), ad.eye(2), ad.linspace(0, 1, 3)):
            assert _is_strict(t._data), t
        assert backend.namespace_name() == "strict"
    assert backend.namespace_name() == before               # the block switched back
    with _numpy():
        assert isinstance(ad.tensor([1.0])._data, np.ndarray)


def test_chain_rule_script_through_the_language():
    with _strict():
        s = ad.Session(echo=False)
        s.run("x = tensor(2.0)\nw1 = tensor(0.5, requires_grad=true)\nw2 = tensor(-1.5, requires_grad=true)\n"
              "b = tensor(1.0, requires_grad=true)\nf = (w2*(w1*x^2+b))^3\nf.backward()")
        assert _is_strict(s["w1"].grad._data)
        assert s["w1"].grad.item() == pytest.approx(-364.5)
        assert s["w2"].grad.item() == pytest.approx(182.25)
        assert s["b"].grad.item() == pytest.approx(-91.125)


def test_views_detach_and_in_place_writes_share_storage():
    with _strict():
        y = ad.tensor([1.0, 2.0, 3.0])
        x = y.detach()
        x[0] = 4.0
        assert y.tolist() == [4.0, 2.0, 3.0]
        m = ad.tensor([[1.0, 2.0], [3.0, 4.0]])
        row = m[1]
        row += 10
        assert m.tolist() == [[1.0, 2.0], [13.0, 14.0]]
        t = m.T
        with ad.no_grad():
            t[0, 1] = -1.0
        assert m.tolist() == [[1.0, 2.0], [-1.0, 14.0]]
        i = ad.tensor([0, 2], dtype=ad.int64)
        v = ad.zeros(3, dtype=ad.int64)
        v[i] = 7                                    # an int64 tensor, a Python int
        assert v.tolist() == [7, 0, 7] and v.dtype is ad.int64


def test_saved_tensor_modified_in_place_is_an_error():
    with _strict():
        w = ad.tensor([1.0, 2.0], requires_grad=True)
        h = w * 1
        y = (h * h).sum()
        h += 1
        with pytest.raises(ad.AutogradError, match="modified in place"):
            y.backward()
        assert w.grad is None


def test_in_place_write_through_an_index_is_recorded():
    with _strict():
        w = ad.tensor([1.0, 2.0, 3.0], requires_grad=True)
        a = ad.tensor(5.0, requires_grad=True)
        z = w * 2
        z[1] = a * a
        z.sum().backward()
        assert w.grad.tolist() == [2.0, 0.0, 2.0]
        assert a.grad.item() == 10.0


def test_mixed_and_repeated_indices_add_their_gradients():
    """An integer tensor next to a slice and repeated indices: outside the standard, so the
    backend does them by hand for strict; the gradients must match NumPy's."""
    def run():
        x = ad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        idx = ad.tensor([0, 0, 2], dtype=ad.int64)
        y = x[:, idx] * ad.tensor([1.0, 2.0, 3.0])
        m = x[x > 2.5]
        (y.sum() + (m * m).sum() + x[[1, 1], [0, 0]].sum()).backward()
        return y.numpy(), m.numpy(), x.grad.numpy()
    with _numpy():
        ref = run()
    with _strict():
        got = run()
    for a, b in zip(got, ref):
        _same(a, b)
    np.testing.assert_array_equal(ref[2], [[3.0, 0.0, 9.0], [13.0, 10.0, 15.0]])


def test_max_with_dim_gives_indices_and_one_gradient():
    with _strict():
        x = ad.tensor([[1.0, 5.0, 5.0], [7.0, 0.0, 7.0]], requires_grad=True)
        values, indices = ad.max(x, dim=1)
        assert indices.dtype is ad.int64 and indices.tolist() == [1, 0]
        values.sum().backward()
        assert x.grad.tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
        assert (x > 4).sum().item() == 4 and (x > 4).sum().dtype is ad.int64


def test_prod_with_zeros_and_float32_losses():
    with _strict():
        x = ad.tensor([[2.0, 0.0, 3.0], [1.0, 4.0, 0.0]], requires_grad=True)
        x.prod(dim=1).sum().backward()
        assert x.grad.tolist() == [[0.0, 6.0, 0.0], [0.0, 0.0, 4.0]]
        logits = ad.tensor([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]], dtype=ad.float32, requires_grad=True)
        loss = ad.cross_entropy(logits, ad.tensor([1, 2], dtype=ad.int64))
        assert loss.dtype is ad.float32            # torch: a float32 loss stays float32
        loss.backward()
        assert logits.grad.dtype is ad.float32
        with pytest.raises(ad.DSLError, match="class indices must be in 0..2"):
            ad.cross_entropy(logits, ad.tensor([1, 3], dtype=ad.int64))


def test_cat_and_stack_results_are_contiguous():
    with _strict():
        a = ad.tensor([[1.0, 2.0], [3.0, 4.0]])
        c = ad.cat([a.T, a.T], dim=1)
        v = c.view(-1)                      # torch: a view of a contiguous result
        assert v.tolist() == [1.0, 3.0, 1.0, 3.0, 2.0, 4.0, 2.0, 4.0]
        assert ad.stack([a.T, a]).view(-1).shape == (8,)


def test_random_numbers_are_the_numpy_path_numbers():
    with _numpy():
        ad.seed(3)
        ref = (ad.rand(2, 3).numpy(), ad.randn(4, dtype=ad.float32).numpy())
    with _strict():
        ad.seed(3)
        got = (ad.rand(2, 3).numpy(), ad.randn(4, dtype=ad.float32).numpy())
    for a, b in zip(got, ref):
        _same(a, b)


def test_printing_and_dtype_conversion():
    with _numpy():
        ref = repr(ad.tensor([[1.5, -2.0], [3.0, 4.0]], requires_grad=True) * 2)
    with _strict():
        x = ad.tensor([[1.5, -2.0], [3.0, 4.0]], requires_grad=True)
        assert repr(x * 2) == ref
        y = x.to(ad.float32)
        assert y.dtype is ad.float32 and _is_strict(y._data)
        (y * y).sum().backward()
        assert x.grad.dtype is ad.float64
        assert x.grad.tolist() == [[3.0, -4.0], [6.0, 8.0]]
        assert (ad.tensor([True, False]) + ad.tensor([True, True])).tolist() == [True, True]
        with pytest.raises(ad.DTypeError):
            -ad.tensor([True])


def test_unknown_namespace_is_refused():
    before = backend.namespace_name()
    with pytest.raises(ad.DSLError, match="unknown array namespace"):
        backend.use_namespace("jax")
    assert backend.namespace_name() == before


# The modules that compute on tensor data: they reach arrays only through a namespace from
# autodsl.backend. (Host-side formatting, plotting and checks may use NumPy on host copies.)
COMPUTE_MODULES = ["core/tensor.py", "core/autograd.py", "tools/info.py", "ops/*.py",
                   "core/engine.py", "core/node.py", "core/journal.py",
                   "core/quiet.py", "core/grad_mode.py"]
ARRAY_LIBRARIES = {"numpy", "cupy", "cupyx", "array_api_strict", "array_api_compat"}


def test_only_the_backend_names_an_array_library():
    import ast
    from pathlib import Path
    pkg = Path(ad.__file__).parent
    offenders = []
    for pattern in COMPUTE_MODULES:
        for path in sorted(pkg.glob(pattern)):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
                offenders += [f"{path.relative_to(pkg)}:{node.lineno} imports {n}" for n in names
                              if n.split(".")[0] in ARRAY_LIBRARIES]
    assert not offenders, offenders


@pytest.mark.parametrize("namespace", ["numpy", "strict"])
def test_tensor_from_a_host_array_is_an_own_c_order_copy(namespace):
    with backend.use_namespace(namespace):
        assert ad.tensor(np.float64(3.0)).shape == ()
        assert ad.tensor(np.array(2.0, dtype=np.float32)).dtype is ad.float32
        host = np.arange(6.0).reshape(2, 3).T          # a Fortran-order view
        t = ad.tensor(host)
        host[0, 0] = 100.0
        assert t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
        assert t.view(-1).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]   # C order: a view is possible
