"""What a backward does at each node, in PyTorch's order (GraphTask._evaluate, core/engine.py).

PyTorch's evaluate_function: a node that runs gives grad() its gradient before the node's
hooks (which change what flows on); a node that does not run (pruned by grad()'s or
backward(inputs=)'s targets) runs its hooks first; retain_grad() fills .grad in grad() too;
backward(inputs=[h]) with a non-leaf h retains h's gradient from then on and runs h's own node
(which frees its saved values and checks their versions); a node that leads to no target is
not visited at all; a retained non-leaf's .grad is a new tensor each time.
Each case checks values, and the same code on torch where it is installed.
"""
import warnings

import pytest

import autodsl as ad
from autodsl.errors import AutogradError

torch = None
try:
    import torch  # noqa: F811
except ImportError:       # the values below are checked either way
    pass

LIBS = [ad] + ([torch] if torch is not None else [])


def _grad(lib, outputs, inputs, **kw):
    return (torch.autograd.grad if lib is torch else ad.grad)(outputs, inputs, **kw)


def _ids(lib):
    return "torch" if lib is torch else "autodsl"


def _square_of_retained(lib, scale):
    """(x = 2, h = x * scale retaining its grad, y = h * h)."""
    x = lib.tensor(2.0, requires_grad=True)
    h = x * scale
    h.retain_grad()
    return x, h, h * h


@pytest.mark.parametrize("lib", LIBS, ids=_ids)
def test_grad_fills_retained_grads(lib):
    x, h, y = _square_of_retained(lib, 3)
    y.retain_grad()
    (gx,) = _grad(lib, y, x)
    assert float(gx) == 36.0
    assert float(h.grad) == 12.0 and float(y.grad) == 1.0
    assert x.grad is None                   # a leaf's .grad stays as it was


@pytest.mark.parametrize("lib", LIBS, ids=_ids)
def test_grad_of_a_retained_input(lib):
    x = lib.tensor(2.0, requires_grad=True)
    h = x * 3
    h.retain_grad()
    (gh,) = _grad(lib, h * h, h)
    assert float(gh) == 12.0 and float(h.grad) == 12.0


@pytest.mark.parametrize("lib", LIBS, ids=_ids)
def test_a_running_input_is_captured_before_its_hooks(lib):
    x = lib.tensor(2.0, requires_grad=True)
    h = x * 2
    h.register_hook(lambda g: g * 10)
    gh, gx = _grad(lib, h * 3, [h, x])
    assert (float(gh), float(gx)) == (3.0, 60.0)     # h's own gradient raw; the hooked one flows on
    h2 = x * 2
    h2.register_hook(lambda g: g * 10)
    (gh2,) = _grad(lib, h2 * 3, h2)                  # h2's node does not run: its hook comes first
    assert float(gh2) == 30.0


@pytest.mark.parametrize("lib", LIBS, ids=_ids)
def test_backward_inputs_retains_a_non_leaf(lib):
    x = lib.tensor(2.0, requires_grad=True)
    h = x * x
    (h * 3).backward(inputs=[h], retain_graph=True)
    assert h.retains_grad and float(h.grad) == 3.0 and x.grad is None
    (h * 3).backward()
    assert float(h.grad) == 6.0 and float(x.grad) == 12.0


@pytest.mark.parametrize("lib", LIBS, ids=_ids)
def test_backward_inputs_runs_the_inputs_own_node(lib):
    x = lib.tensor(2.0, requires_grad=True)
    h = x * x
    (h * 3).backward(inputs=[h])
    with pytest.raises(AutogradError if lib is ad else RuntimeError):
        h.backward()                    # h's node ran and freed its saved values
    u = lib.tensor([2.0, 3.0], requires_grad=True) * 1
    s = u.sin()
    u.add_(1)
    with pytest.raises(AutogradError if lib is ad else RuntimeError):
        (s * 3).sum().backward(inputs=[s])      # ... and checked their versions


@pytest.mark.parametrize("lib", LIBS, ids=_ids)
def test_nodes_that_lead_to_no_input_are_not_visited(lib):
    x = lib.tensor(2.0, requires_grad=True)
    w = lib.tensor(3.0, requires_grad=True)
    seen = []
    w.register_hook(lambda g: seen.append("w"))
    b = w * 4
    b.register_hook(lambda g: seen.append("b"))
    b.retain_grad()
    (x * 5 + b).backward(inputs=[x])
    assert seen == [] and b.grad is None and w.grad is None
    assert float(x.grad) == 5.0
    (gx,) = _grad(lib, x * 5 + b, x)
    assert seen == [] and float(gx) == 5.0


@pytest.mark.parametrize("lib", LIBS, ids=_ids)
def test_a_retained_grad_is_a_new_tensor_each_time(lib):
    x, h, y = _square_of_retained(lib, 2)
    y.backward(retain_graph=True)
    first = h.grad
    y.backward()
    assert float(first) == 8.0 and float(h.grad) == 16.0 and h.grad is not first
    g = x.grad                      # a leaf's .grad is added into in place
    (x * 1.0).backward()
    assert x.grad is g and float(g) == 33.0


def test_why_does_not_fill_retained_grads():
    w = ad.tensor(1.5, requires_grad=True)
    h = w * 0.0
    h.retain_grad()
    out = h * 4.0 + 1.0      # (kept, with its graph: why() re-runs the pass from it)
    out.backward(retain_graph=True)
    assert float(h.grad) == 4.0 and float(w.grad) == 0.0
    first = h.grad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        told = ad.why(w)        # w.grad is 0: why() runs the pass again, quietly
    assert told.reason == "zero"
    assert h.grad is first and float(h.grad) == 4.0     # no .grad changed


def test_explain_does_not_fill_retained_grads():
    w = ad.tensor(2.0, requires_grad=True)
    h = w * 3
    h.retain_grad()
    h.register_hook(lambda g: g)        # (a hook: explain() sums the paths through grad())
    f = h * h
    ad.explain(f, w)
    ad.explain(f, w)
    assert h.grad is None and w.grad is None
