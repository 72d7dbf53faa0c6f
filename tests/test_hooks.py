"""Tensor hooks: ``x.register_hook(fn)`` with PyTorch's semantics, checked against torch.

A hook gets the summed gradient of its tensor; a returned tensor replaces it (for a
leaf before accumulation into .grad, for a non-leaf what flows on); none keeps it.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import autodsl as ad

torch = pytest.importorskip("torch")


def T(values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def A(values):
    return ad.tensor(values, requires_grad=True)


def close(a, b):
    a = a.numpy() if isinstance(a, ad.Tensor) else a
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else b
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# -- the four basic cases, against torch -------------------------------------------------

def test_leaf_hook_doubles_the_gradient():
    def run(lib, leaf):
        x = leaf([1.0, -2.0, 3.0])
        x.register_hook(lambda g: g * 2)
        (x * x).sum().backward()
        return x.grad
    got, want = run(ad, A), run(torch, T)
    close(got, want)
    close(got, [4.0, -8.0, 12.0])          # 2 * 2x


def test_non_leaf_hook_changes_what_flows_on():
    def run(lib, leaf):
        x = leaf([1.0, 2.0])
        w = leaf([0.5, -1.0])
        u = x * w                           # non-leaf
        u.register_hook(lambda g: g * 2)
        (u * u).sum().backward()
        return x.grad, w.grad
    for got, want in zip(run(ad, A), run(torch, T)):
        close(got, want)
    x, w = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    close(run(ad, A)[0], 2 * (2 * x * w) * w)


def test_hook_returning_none_sees_the_gradient_and_keeps_it():
    seen = {}

    def run(lib, leaf):
        x = leaf([1.0, 2.0])
        y = x * 3
        got = []
        y.register_hook(lambda g: got.append(np.array(g.detach().numpy() if lib is torch else g.numpy())))
        x.register_hook(lambda g: got.append(np.array(g.detach().numpy() if lib is torch else g.numpy())))
        (y * y).sum().backward()
        seen[lib.__name__] = got
        return x.grad
    close(run(ad, A), run(torch, T))
    assert len(seen["autodsl"]) == len(seen["torch"]) == 2
    for a, b in zip(seen["autodsl"], seen["torch"]):
        close(a, b)
    close(seen["autodsl"][0], [6.0, 12.0])      # d(y.y)/dy = 2y
    close(seen["autodsl"][1], [18.0, 36.0])     # then times 3


def test_remove_unregisters_and_is_idempotent():
    x = A([1.0, 2.0])
    calls = []
    h = x.register_hook(lambda g: calls.append(1) or g * 10)
    (x * 1).sum().backward()
    close(x.grad, [10.0, 10.0])
    h.remove()
    h.remove()
    assert "removed" in repr(h)
    (x * 1).sum().backward()
    close(x.grad, [11.0, 11.0])
    assert calls == [1]


def test_tensor_used_twice_gets_one_call_with_the_sum():
    def run(lib, leaf):
        a = leaf(2.0)
        b = a * 1
        calls = []
        b.register_hook(lambda g: calls.append(float(g)))
        (b * b + 3 * b).backward()
        return calls, a.grad
    (c1, g1), (c2, g2) = run(ad, A), run(torch, T)
    assert c1 == c2 == [2 * 2.0 + 3]
    close(g1, g2)


def test_hook_that_raises_leaves_every_grad_untouched():
    x, w = A([1.0, 2.0]), A([3.0, 4.0])
    (x * w).sum().backward()
    before_x, before_w = x.grad.numpy(), w.grad.numpy()

    def bad(g):
        raise ValueError("boom")
    w.register_hook(lambda g: g * 100)
    x.register_hook(bad)
    with pytest.raises(ValueError, match="boom"):
        (x * w).sum().backward()
    close(x.grad, before_x)
    close(w.grad, before_w)


def test_several_hooks_run_in_order_each_on_the_last_result():
    def run(lib, leaf):
        x = leaf([1.0, 2.0])
        x.register_hook(lambda g: g + 1)
        x.register_hook(lambda g: g * 10)
        (x * 2).sum().backward()
        return x.grad
    close(run(ad, A), run(torch, T))
    close(run(ad, A), [30.0, 30.0])


def test_hook_registered_before_an_in_place_op_stays_with_the_old_value():
    def run(lib, leaf):
        x = leaf([1.0, 2.0])
        y = x * 2
        calls = []
        y.register_hook(lambda g: calls.append(("first", g.detach().numpy().copy() if lib is torch else g.numpy())))
        if lib is torch:
            y.mul_(3)
        else:
            y *= 3
        y.register_hook(lambda g: calls.append(("second", g.detach().numpy().copy() if lib is torch else g.numpy())))
        (y * y).sum().backward()
        return calls, x.grad
    (c1, g1), (c2, g2) = run(ad, A), run(torch, T)
    assert [n for n, _ in c1] == [n for n, _ in c2] == ["second", "first"]
    for (_, a), (_, b) in zip(c1, c2):
        close(a, b)
    close(g1, g2)


# -- with grad(), retain_grad() and create_graph ------------------------------------------

def test_grad_returns_the_hooked_gradients():
    def run(lib, leaf, grad):
        x = leaf([1.0, 2.0])
        x.register_hook(lambda g: g * 2)
        h = x * 3
        h.register_hook(lambda g: g * 10)
        z = (h * h).sum()
        gh = grad(z, [h], retain_graph=True)[0]
        gx = grad(z, [x])[0]
        return gh, gx
    for got, want in zip(run(ad, A, ad.grad), run(torch, T, torch.autograd.grad)):
        close(got, want)


def test_retain_grad_keeps_the_hooked_gradient():
    def run(lib, leaf):
        x = leaf([1.0, 2.0])
        h = x * 3
        h.retain_grad()
        h.register_hook(lambda g: g * 10)
        (h * h).sum().backward()
        return h.grad, x.grad
    for got, want in zip(run(ad, A), run(torch, T)):
        close(got, want)


def test_hooks_under_create_graph_are_differentiable():
    def run(lib, leaf, grad):
        w = leaf(3.0)
        w.register_hook(lambda g: g * w)
        (g,) = grad(w ** 2, [w], create_graph=True)
        first = float(g.detach())
        g.backward()
        return first, g.requires_grad, w.grad
    a, b = run(ad, A, ad.grad), run(torch, T, torch.autograd.grad)
    assert a[0] == b[0] == 18.0          # the hook's g * w: 2w * w
    assert a[1] and b[1]
    close(a[2], b[2])                    # d(2w^2)/dw = 12, hooked again: 12 * w = 36
    close(a[2], 36.0)


# -- errors -------------------------------------------------------------------------------------

def test_hook_on_a_tensor_without_grad_is_refused():
    with pytest.raises(ad.AutogradError, match="does not require grad"):
        ad.tensor([1.0]).register_hook(lambda g: g)
    with pytest.raises(ad.TypeError_, match="function"):
        A([1.0]).register_hook(3)


@pytest.mark.parametrize("result, error, words", [
    (lambda g: 3.0, ad.TypeError_, "returned a number"),
    (lambda g: g.sum(), ad.ShapeError, "shape ()"),
    (lambda g: g.to(dtype="float32"), ad.DTypeError, "float32"),
])
def test_a_replacement_that_does_not_fit_is_refused(result, error, words):
    x = A([1.0, 2.0])
    (x * 1).sum().backward()
    x.register_hook(result)
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")) as e:
        (x * 5).sum().backward()
    assert "hook" in str(e.value) and "a leaf of shape (2,)" in str(e.value)
    close(x.grad, [1.0, 1.0])


# -- the language and the trace ------------------------------------------------------------

def run_lang(session, src):
    out = io.StringIO()
    session.out = out
    with contextlib.redirect_stdout(out):
        value = session.run(src)
    return value, out.getvalue()


def test_language_hooks_and_handles():
    s = ad.Session()
    _, out = run_lang(s, """
x = tensor([1.0, 2.0], requires_grad=true)
def double(g) { return 2 * g }
def show(g) { print("hook got", g) }
h = x.register_hook(double)
x.register_hook(show)
(x * x).sum().backward()
x.grad
h.remove()
x.grad = none
(x * x).sum().backward()
x.grad
""")
    lines = out.splitlines()
    assert lines[0] == "<hook `show` on a leaf of shape (2,)>"      # a bare call prints the handle
    assert lines[1] == "hook got tensor([4., 8.])"                  # show runs after double
    assert lines[2] == "tensor([4., 8.])"
    assert lines[3] == "hook got tensor([2., 4.])"
    assert lines[4] == "tensor([2., 4.])"


def test_language_hook_errors_are_positioned_and_undo_nothing():
    s = ad.Session()
    run_lang(s, "x = tensor(2.0, requires_grad=true)\n(x * x).backward()")
    with pytest.raises(ad.DSLError) as e:
        run_lang(s, "def bad(g) { return g + undefined_thing }\nx.register_hook(bad)\n(x * x).backward()")
    assert e.value.line == 1 and "undefined_thing" in str(e.value)
    assert s["x"].grad.item() == 4.0
    with pytest.raises(ad.NameError_, match="remove"):
        run_lang(s, "h = x.register_hook(bad)\nh.detach()")


def test_trace_shows_the_gradient_after_the_hook_and_says_so():
    s = ad.Session()
    _, out = run_lang(s, """
x = tensor(3.0, requires_grad=true)
u = x * x
def double(g) { return 2 * g }
h = u.register_hook(double)
trace(true)
(u * u).backward()
trace(false)
x.grad
""")
    lines = out.splitlines()
    i = next(k for k, ln in enumerate(lines) if "MulBackward#2" in ln and ln.startswith("step"))
    assert lines[i + 1].split() == ["grad", "in", "36.0"]                # 2 * (2u = 18)
    assert "a hook replaced it; before the hook it was 18.0" in lines[i + 2]
    assert lines[i + 3].split()[-1] == "108.0"                            # 36 * x, to each input
    assert lines[-1] == "tensor(216.)"
    steps = s.last_trace.steps
    hooked = [st for st in steps if st.grad_before_hook is not None]
    assert len(hooked) == 1 and float(hooked[0].grad_before_hook) == 18.0 and float(hooked[0].grad_in) == 36.0
    assert all(st.grad_before_hook is None for st in steps if st is not hooked[0])


def test_help_on_register_hook_and_other_tensor_methods():
    from autodsl.cli.repl import Repl
    out = io.StringIO()
    r = Repl(ad.Session(out=out), out=out)
    r.handle(":help register_hook")
    text = out.getvalue()
    assert text.startswith("x.register_hook(hook)\nCall `hook(grad)` with this tensor's gradient")
    assert "handle.remove()" in text
    out.seek(0)
    out.truncate()
    r.handle(":help x.backward")
    assert out.getvalue().startswith("x.backward(gradient=none, retain_graph=none, create_graph=false, "
                                     "inputs=none)\n")
