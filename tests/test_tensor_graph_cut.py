"""tensor(...) given tensors that require grad copies their values and cuts the graph, as
torch.tensor does; it warns there (with the position) and points at stack."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import autodsl as ad


def run(src: str, filename: str = "cut.ad"):
    out = io.StringIO()
    s = ad.Session(out=out)
    s.run(src, filename=filename)
    return s, out.getvalue()


def test_a_list_of_tensors_that_require_grad_warns_at_the_call_and_keeps_the_values(capsys):
    s, _ = run("v = tensor([2.0, 3.0], requires_grad=true)\n"
               "y = tensor([v[0]*v[1], v[0]^2])\n")
    err = capsys.readouterr().err
    assert err.count("warning:") == 1
    assert "cut.ad:2:5: warning:" in err and "graph is cut" in err and "stack([...])" in err
    assert np.array_equal(s["y"].numpy(), [6.0, 4.0])
    assert s["y"].requires_grad is False and s["y"].grad_fn is None      # as torch.tensor: a copy


def test_the_jacobian_that_was_zeros_warns_and_stack_gives_the_right_one(capsys):
    torch = pytest.importorskip("torch")
    s, _ = run("v = tensor([2.0, 3.0])\n"
               "def cut(v) { return tensor([v[0]*v[1], v[0]^2]) }\n"
               "def kept(v) { return stack([v[0]*v[1], v[0]^2]) }\n"
               "jc = jacobian(cut, v)\njk = jacobian(kept, v)\n")
    err = capsys.readouterr().err
    assert "cut.ad:2:21: warning:" in err and "stack" in err
    assert np.array_equal(s["jc"].numpy(), np.zeros((2, 2)))
    want = torch.autograd.functional.jacobian(
        lambda v: torch.stack([v[0] * v[1], v[0] ** 2]), torch.tensor([2.0, 3.0], dtype=torch.float64))
    assert np.allclose(s["jk"].numpy(), want.numpy())


def test_a_tensor_that_requires_grad_given_whole_warns_and_points_at_clone(capsys):
    s, _ = run("w = tensor([1.0, 2.0], requires_grad=true)\nc = tensor(w)\n")
    err = capsys.readouterr().err
    assert "cut.ad:2:5: warning:" in err and "x.clone()" in err
    assert np.array_equal(s["c"].numpy(), [1.0, 2.0]) and not s["c"].requires_grad


@pytest.mark.parametrize("src", [
    "v = tensor([2.0, 3.0]); y = tensor([v[0], v[1]])",                           # no grad to cut
    "v = tensor([2.0, 3.0], requires_grad=true); y = tensor([v[0].detach(), 1.0])",
    "v = tensor([2.0, 3.0], requires_grad=true); no_grad { y = tensor([v[0], v[1]]) }",
    "v = tensor([2.0, 3.0], requires_grad=true); y = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=true)",
    "v = tensor([2.0, 3.0], requires_grad=true); y = tensor(v.detach())",
])
def test_no_warning_where_no_graph_is_cut(src, capsys):
    run(src)
    assert "warning" not in capsys.readouterr().err


def test_from_python_the_warning_names_the_callers_line():
    v = ad.tensor([2.0, 3.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        y = ad.tensor([v[0] * v[1], [v[1]][0]])
    assert len(got) == 1 and got[0].filename == __file__ and "stack" in str(got[0].message)
    assert np.array_equal(y.numpy(), [6.0, 3.0])
