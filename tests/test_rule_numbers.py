"""Each derivative once (Note [one formula]): for every op with a scalar sample, the rule text
the trace prints, with its numbers put in, evaluates to the gradient the op's formula sent."""
from __future__ import annotations

import re

import numpy as np
import pytest

import autodsl as ad
from autodsl.core import trace as trace_mod
from autodsl.ops import REGISTRY

from op_samples import SAMPLES
from test_rules_trace import evaluate


def _scalar_samples():
    out = []
    for s in SAMPLES:
        if not s.grad:
            continue
        arrays = [a for a in s.args if isinstance(a, np.ndarray)]
        if arrays and all(a.ndim == 0 for a in arrays) and any(a.dtype.kind == "f" for a in arrays):
            out.append(s)
    return out


SCALAR = _scalar_samples()


def _sends(sample):
    inputs = [ad.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a
              for a in sample.args]
    kept = []
    with trace_mod.tracing(False, sink=kept.append):
        out = sample.fn(ad, *inputs)
        out = out[0] if isinstance(out, tuple) else out
        (out.sum() if out.ndim else out).backward()
    (tr,) = kept
    return [(r["op"], sd) for r in tr for sd in r.get("sends", [])]


_BY_NODE = {info.node_name: info.cls for info in REGISTRY.values()}
# A rule naming an op parameter (clamp's min and max, mse_loss's n) shows no numbers: the trace
# fills in operands only.
_PARAM = re.compile(r"\b(min|max|n|p|dim)\b")


@pytest.mark.parametrize("sample", SCALAR, ids=lambda s: s.id)
def test_the_rule_numbers_give_the_gradient_sent(sample):
    checked = 0
    for op, sd in _sends(sample):
        cls = _BY_NODE.get(op)
        formulas = getattr(cls, "rule", None)
        if not isinstance(formulas, tuple):      # a sentence ("grad spread back over ..."): no numbers
            continue
        if sd["numbers"] is not None:
            assert evaluate(sd["numbers"]) == pytest.approx(sd["grad"], rel=1e-12, abs=1e-15), (op, sd)
            checked += 1
        elif sd["rule"] not in ("grad", None) and not _PARAM.search(sd["rule"]):
            # a formula without operands: a constant ("0")
            assert evaluate(sd["rule"]) == pytest.approx(sd["grad"], abs=1e-15), (op, sd)
            checked += 1
    if any(isinstance(getattr(_BY_NODE.get(op), "rule", None), tuple) and sd["rule"] not in ("grad", None)
           and not _PARAM.search(sd["rule"]) for op, sd in _sends(sample)):
        assert checked >= 1


def test_every_op_with_a_formula_rule_is_covered_by_a_scalar_sample():
    """The ops whose rule is a formula per input (not a sentence) all have a scalar sample here."""
    covered = {s.op for s in SCALAR}
    formula_ops = {name for name, info in REGISTRY.items()
                   if info.public and isinstance(getattr(info.cls, "rule", None), tuple)
                   and not getattr(info.cls, "never_differentiable", False)}
    # (these need at least one dimension: a matrix product, a class index into logits, an index)
    no_scalar_form = {"matmul", "nll_loss", "index_put"}
    missing = sorted(name for name in formula_ops - covered - no_scalar_form if any(s.op == name for s in SAMPLES))
    assert not missing, f"ops with formula rules and samples but no scalar sample: {missing}"
