"""First- and second-order gradient checks of every op in the sample table (float64, seeded)."""
import numpy as np
import pytest

import autodsl as ad
from helpers import gradcheck, gradgradcheck, to_ad
from op_samples import COMPOSITES, DIFF_SAMPLES, NONDIFF, NONDIFF_SAMPLES, SAMPLES, samples_for

# Second order is not meaningful (or not supported) for these; each entry says why.
NO_GRADGRAD = {
    "sign": "the derivative is the constant 0; nothing to check a second time",
}


def _ids(samples):
    return [s.id for s in samples]


def _fn(sample):
    return lambda *ts: sample.fn(ad, *ts)


@pytest.mark.parametrize("sample", DIFF_SAMPLES, ids=_ids(DIFF_SAMPLES))
def test_grad(sample):
    assert gradcheck(_fn(sample), list(sample.args), atol=sample.atol, rtol=sample.rtol, seed=0)


GG = [s for s in DIFF_SAMPLES if s.gradgrad and s.op not in NO_GRADGRAD]


@pytest.mark.parametrize("sample", GG, ids=_ids(GG))
def test_gradgrad(sample):
    assert gradgradcheck(_fn(sample), list(sample.args), atol=sample.atol, rtol=sample.rtol, seed=0)


@pytest.mark.parametrize("sample", NONDIFF_SAMPLES, ids=_ids(NONDIFF_SAMPLES))
def test_nondifferentiable_ops_give_bool_without_grad(sample):
    ts = [to_ad(a, requires_grad=True) for a in sample.args]
    out = sample.fn(ad, *ts)
    assert out.dtype is ad.bool
    assert out.requires_grad is False
    assert out.grad_fn is None and out.is_leaf


def test_every_public_registry_op_has_samples():
    covered = {s.op for s in SAMPLES}
    public = {name for name, info in ad.REGISTRY.items() if info.public}
    missing = sorted(public - covered)
    assert not missing, f"public ops without samples in tests/op_samples.py: {missing}"


def test_every_composite_function_has_samples():
    missing = [name for name in COMPOSITES if not samples_for(name)]
    assert not missing, f"composite functions without samples: {missing}"


def test_registry_nondifferentiable_ops_are_declared():
    for name in NONDIFF:
        assert ad.REGISTRY[name].cls.never_differentiable, name
    for s in DIFF_SAMPLES:
        info = ad.REGISTRY.get(s.op)
        if info is not None:
            assert not info.cls.never_differentiable, s.op


def test_every_differentiable_sample_reaches_its_inputs():
    """Guards the table itself: a sample whose output ignores an input would check nothing."""
    for s in DIFF_SAMPLES:
        ts = [to_ad(a, requires_grad=True) for a in s.args]
        out = s.fn(ad, *ts)
        assert out.requires_grad, s.id
        floats = [t for t, a in zip(ts, s.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        gs = ad.grad(out.sum(), floats, allow_unused=True)
        assert any(g is not None for g in gs), s.id


LARGE = [
    ("matmul", lambda a, b: ad.matmul(ad.tanh(a), b), [(16, 24), (24, 12)]),
    ("softmax-cross-entropy", lambda a, b: ad.cross_entropy(a @ b, ad.tensor([i % 12 for i in range(16)],
                                                                              dtype=ad.int64)),
     [(16, 24), (24, 12)]),
    ("reductions", lambda a, b: (ad.logsumexp(a, dim=1) * ad.std(b, dim=1)[:16]).sum() + a.var(),
     [(16, 24), (24, 12)]),
]


@pytest.mark.parametrize("case", LARGE, ids=[c[0] for c in LARGE])
def test_directional_on_larger_inputs(case):
    from helpers import directional_check
    _, fn, shapes = case
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(s) for s in shapes]
    for seed in range(3):
        assert directional_check(fn, args, seed=seed)
