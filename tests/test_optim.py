"""``sgd`` and ``adam`` against ``torch.optim.SGD`` / ``torch.optim.Adam``, step for step.

Every configuration trains the same least-squares model for 20 steps in float64 with autodsl
and with torch (the reference), eagerly and inside ``compile``: the losses and parameters agree
with torch to rounding (torch's CPU kernels fuse some multiply-adds, NumPy does not), and the
compiled run agrees with the eager one bit for bit, with 19 of its 20 calls replayed, so the
optimizer's state (momentum buffers, Adam's step count and moments, and with it the bias
correction) advanced in the replays too.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

import autodsl as ad
from autodsl.errors import TypeError_, ValueError_

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

STEPS = 20
RTOL, ATOL = 1e-12, 1e-14

CONFIGS = [
    ("sgd", {"lr": 0.1}),
    ("sgd", {"lr": 0.1, "momentum": 0.9}),
    ("sgd", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.1}),
    ("sgd", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.01}),
    ("adam", {"lr": 0.1}),
    ("adam", {"lr": 0.05, "betas": (0.8, 0.99), "weight_decay": 0.1}),
    ("adam", {"lr": 0.05, "amsgrad": True}),
    # beta1 < 0.5: torch's lerp_ takes its other formula
    ("adam", {"lr": 0.05, "betas": (0.3, 0.9), "amsgrad": True, "eps": 1e-3, "weight_decay": 0.02}),
]
IDS = [f"{n}-" + "-".join(f"{k}={v}" for k, v in kw.items()) for n, kw in CONFIGS]


def problem(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(20, 3)), rng.normal(size=(20, 2)), rng.normal(size=(3, 2)), rng.normal(size=2)


def f64(lib, data, requires_grad=False):
    """A float64 tensor of ``lib`` (torch's default is float32)."""
    return lib.tensor(np.array(data, dtype=np.float64), requires_grad=requires_grad)


def make_opt(lib, name, params, kw):
    if lib is ad:
        return (ad.sgd if name == "sgd" else ad.adam)(params, **kw)
    return (torch.optim.SGD if name == "sgd" else torch.optim.Adam)(params, **kw)


def training_step(opt, loss_of, **zero_grad):
    """A step function: zero the grads, backward through ``loss_of(*args)``, step."""
    def step(*args):
        opt.zero_grad(**zero_grad)
        loss = loss_of(*args)
        loss.backward()
        opt.step()
        return loss.detach()
    return step


def train(lib, name, kw, compiled=False, steps=STEPS, lr_at=None):
    """(losses, [w, b] as arrays, versions of w and b, compiled function or None, parameters).
    ``lr_at``: {step: lr} assignments to ``opt.lr`` (torch: the param group's lr)."""
    X, Y, W0, B0 = problem()
    w = lib.tensor(W0.copy(), requires_grad=True)
    b = lib.tensor(B0.copy(), requires_grad=True)
    x, y = lib.tensor(X), lib.tensor(Y)
    opt = make_opt(lib, name, [w, b], kw)

    def step(x, y):
        opt.zero_grad()
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.detach()

    f = ad.compile(step) if compiled else step
    losses = []
    for i in range(steps):
        if lr_at and i in lr_at:
            if lib is ad:
                opt.lr = lr_at[i]
            else:
                opt.param_groups[0]["lr"] = lr_at[i]
        losses.append(f(x, y).item())
    arrays = [t.detach().numpy().copy() for t in (w, b)]
    versions = [t.version if lib is ad else t._version for t in (w, b)]
    return losses, arrays, versions, (f if compiled else None), (w, b)


@pytest.mark.parametrize("name,kw", CONFIGS, ids=IDS)
def test_eager_matches_torch(name, kw):
    got, want = train(ad, name, kw), train(torch, name, kw)
    np.testing.assert_allclose(got[0], want[0], rtol=RTOL, atol=ATOL)
    for a, t in zip(got[1], want[1]):
        np.testing.assert_allclose(a, t, rtol=RTOL, atol=ATOL)
    assert got[2] == want[2] == [STEPS, STEPS]        # one in-place update per step, as torch's
    assert got[0][-1] < got[0][0]


@pytest.mark.parametrize("name,kw", CONFIGS, ids=IDS)
def test_compiled_matches_eager_bit_for_bit_and_torch(name, kw):
    eager, comp, ref = train(ad, name, kw), train(ad, name, kw, compiled=True), train(torch, name, kw)
    f = comp[3]
    assert f.stats == {"replayed": STEPS - 1, "eager": 1, "captures": 1} and f.eager_reason is None
    assert comp[0] == eager[0]
    for c, e, t in zip(comp[1], eager[1], ref[1]):
        assert c.tobytes() == e.tobytes()
        np.testing.assert_allclose(c, t, rtol=RTOL, atol=ATOL)
    assert comp[2] == eager[2] == [STEPS, STEPS]


@pytest.mark.parametrize("name,kw", [CONFIGS[1], CONFIGS[4]], ids=[IDS[1], IDS[4]])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_lr_assigned_between_steps(name, kw, compiled):
    schedule = {5: 0.02, 12: 0.2}
    got = train(ad, name, kw, compiled=compiled, lr_at=schedule)
    want = train(torch, name, kw, lr_at=schedule)
    np.testing.assert_allclose(got[0], want[0], rtol=RTOL, atol=ATOL)
    for a, t in zip(got[1], want[1]):
        np.testing.assert_allclose(a, t, rtol=RTOL, atol=ATOL)
    if compiled:        # the program reads the learning-rate tensor: no new capture needed
        assert got[3].stats["captures"] == 1 and got[3].stats["replayed"] == STEPS - 1


def test_lr_reads_back_and_refuses_a_negative_value():
    w = ad.tensor([1.0], requires_grad=True)
    opt = ad.adam([w], lr=0.01)
    assert opt.lr == 0.01
    opt.lr = 0.5
    assert opt.lr == 0.5
    with pytest.raises(ValueError_, match="negative"):
        opt.lr = -0.1
    assert opt.lr == 0.5


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_a_parameter_without_grad_is_left_alone(name, compiled):
    """b gets no gradient: torch skips it (and, for Adam, does not count a step for it)."""
    kw = {"lr": 0.1, "momentum": 0.9} if name == "sgd" else {"lr": 0.1}
    results = []
    for lib in (ad, torch):
        w = f64(lib, [[0.5, -1.0], [2.0, 0.3]], requires_grad=True)
        b = f64(lib, [0.1, 0.2], requires_grad=True)
        x = f64(lib, [[1.0, 2.0], [3.0, -1.0]])
        opt = make_opt(lib, name, [w, b], kw)
        step = training_step(opt, lambda x, w=w: ((x @ w) ** 2).sum())
        f = ad.compile(step) if lib is ad and compiled else step
        for _ in range(6):
            f(x)
        results.append((w.detach().numpy().copy(), b.detach().numpy().copy(), b.grad))
        if lib is ad and compiled:
            assert f.stats["replayed"] == 5
        if lib is ad and name == "adam":
            assert opt._state[1]["step"].item() == 0 and opt._state[0]["step"].item() == 6
    (aw, ab, agrad), (tw, tb, tgrad) = results
    np.testing.assert_allclose(aw, tw, rtol=RTOL, atol=ATOL)
    assert ab.tolist() == tb.tolist() == [0.1, 0.2]
    assert agrad is None and tgrad is None


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_zero_grad_keeping_the_tensors(compiled):
    """zero_grad(set_to_none=false) fills each .grad with zeros in place, as torch does; the
    default (torch 2's) sets it to none."""
    results = []
    for lib in (ad, torch):
        w = f64(lib, [1.0, -2.0, 0.5], requires_grad=True)
        opt = make_opt(lib, "sgd", [w], {"lr": 0.1, "momentum": 0.5})
        step = training_step(opt, lambda w=w: (w * w * w).sum(), set_to_none=False)
        w.grad = f64(lib, [0.0, 0.0, 0.0])
        g0 = w.grad
        f = ad.compile(step) if lib is ad and compiled else step
        for _ in range(5):
            f()
        assert w.grad is g0                 # the same .grad tensor all along
        if lib is ad and compiled:
            assert f.stats["replayed"] == 4
        results.append((w.detach().numpy().copy(), w.grad.numpy().copy()))
        opt.zero_grad()
        assert w.grad is None
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=RTOL, atol=ATOL)


def test_step_count_is_a_tensor_that_replays_advance():
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    opt = ad.adam([w], lr=0.1)

    def step():
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()

    f = ad.compile(step)
    for _ in range(7):
        f()
    assert f.stats["replayed"] == 6
    assert opt._state[0]["step"].item() == 7.0


def test_another_optimizer_in_the_variable_captures_again():
    """The program found the state through the variable ``opt``: a new optimizer there is a
    guard failure, and the next call captures the new optimizer's step."""
    w, we = ad.tensor([1.0, 2.0], requires_grad=True), ad.tensor([1.0, 2.0], requires_grad=True)
    opt, eager_opt = ad.sgd([w], lr=0.1, momentum=0.9), ad.sgd([we], lr=0.1, momentum=0.9)

    def step():
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()

    f = ad.compile(step)
    for i in range(6):
        if i == 3:
            opt, eager_opt = ad.sgd([w], lr=0.1, momentum=0.9), ad.sgd([we], lr=0.1, momentum=0.9)
        f()
        eager_opt.zero_grad()
        (we * we).sum().backward()
        eager_opt.step()
    assert f.stats == {"replayed": 4, "eager": 2, "captures": 2}
    assert w.numpy().tobytes() == we.numpy().tobytes()


def test_parameters_passed_as_arguments():
    """step(w) with w also the optimizer's: replays while the call gets the optimizer's own
    tensor; another tensor is a different call (the optimizer updates its own parameter, not
    the argument), which runs eagerly and captures again."""
    w, we = ad.tensor([1.0, 2.0], requires_grad=True), ad.tensor([1.0, 2.0], requires_grad=True)
    opt, eager_opt = ad.adam([w], lr=0.1), ad.adam([we], lr=0.1)

    def step(p, o):
        o.zero_grad()
        (p * p * p).sum().backward()
        o.step()

    f = ad.compile(lambda p: step(p, opt))
    for _ in range(5):
        f(w)
        step(we, eager_opt)
    assert f.stats == {"replayed": 4, "eager": 1, "captures": 1}
    assert w.numpy().tobytes() == we.numpy().tobytes()
    other = ad.tensor([1.0, 2.0], requires_grad=True)
    f(other)
    assert f.stats["eager"] == 2
    assert other.tolist() == [1.0, 2.0] and other.grad.tolist() == [3.0, 12.0]
    assert w.numpy().tobytes() == we.numpy().tobytes()      # w.grad was none: Adam skipped it
    assert w.grad is None


def test_float32_parameters_stay_float32():
    w = ad.tensor(np.array([1.0, -1.0], dtype=np.float32), requires_grad=True)
    t = torch.tensor([1.0, -1.0], dtype=torch.float32, requires_grad=True)
    for lib, p in ((ad, w), (torch, t)):
        opt = make_opt(lib, "adam", [p], {"lr": 0.1})
        for _ in range(5):
            opt.zero_grad()
            (p * p * 3).sum().backward()
            opt.step()
    assert w.dtype == ad.float32
    np.testing.assert_allclose(w.numpy(), t.detach().numpy(), rtol=1e-6)


# ---- errors in the language's words ------------------------------------------------------------

def test_errors():
    w = ad.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError_, match="not a leaf"):
        ad.sgd([w * 2], lr=0.1)
    with pytest.raises(ValueError_, match="does not require grad"):
        ad.adam([ad.tensor([1.0])])
    with pytest.raises(ValueError_, match="negative"):
        ad.sgd([w], lr=-0.1)
    with pytest.raises(ValueError_, match="negative"):
        ad.adam([w], lr=-1)
    with pytest.raises(ValueError_, match=r"betas\[1\]"):
        ad.adam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError_, match=r"betas\[0\]"):
        ad.adam([w], betas=[-0.1, 0.9])
    with pytest.raises(TypeError_, match="pair"):
        ad.adam([w], betas=0.9)
    with pytest.raises(ValueError_, match="eps"):
        ad.adam([w], eps=-1e-8)
    with pytest.raises(ValueError_, match="nesterov"):
        ad.sgd([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError_, match="nesterov"):
        ad.sgd([w], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError_, match="momentum"):
        ad.sgd([w], lr=0.1, momentum=-0.5)
    with pytest.raises(TypeError_, match="list of tensors"):
        ad.sgd(w, lr=0.1)
    with pytest.raises(TypeError_, match="not a tensor"):
        ad.sgd([w, 3.0], lr=0.1)
    with pytest.raises(ValueError_, match="empty"):
        ad.adam([])
    with pytest.raises(ValueError_, match="twice"):
        ad.adam([w, w])
    with pytest.raises(TypeError_, match="number"):
        ad.sgd([w], lr="fast")


# ---- the language --------------------------------------------------------------------------

SCRIPT = """
seed(0)
x = randn(30, 3)
y = x @ tensor([[1.0], [-2.0], [0.5]]) + 0.3
w = zeros(3, 1); w.requires_grad = true
b = zeros(1); b.requires_grad = true
opt = {make}
def step() {{
    opt.zero_grad()
    loss = mse_loss(x @ w + b, y)
    loss.backward()
    opt.step()
    return loss.detach()
}}
f = {wrap}
for i in range(40) {{
    if i == 20 {{ opt.lr = opt.lr / 2 }}
    loss = f()
}}
"""


@pytest.mark.parametrize("make", ["sgd([w, b], lr=0.1, momentum=0.9)", "adam([w, b], lr=0.05, amsgrad=true)"])
@pytest.mark.parametrize("wrap", ["step", "compile(step)"])
def test_language_calls_the_optimizers(make, wrap):
    s = ad.Session(out=io.StringIO())
    s.run(SCRIPT.format(make=make, wrap=wrap))
    # the same training from Python, against torch
    x = torch.tensor(s["x"].numpy())
    y = torch.tensor(s["y"].numpy())
    w = torch.zeros(3, 1, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = (torch.optim.SGD([w, b], lr=0.1, momentum=0.9) if make.startswith("sgd")
           else torch.optim.Adam([w, b], lr=0.05, amsgrad=True))
    for i in range(40):
        if i == 20:
            opt.param_groups[0]["lr"] /= 2
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(x @ w + b, y)
        loss.backward()
        opt.step()
    np.testing.assert_allclose(s["w"].numpy(), w.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(s["loss"].item(), loss.item(), rtol=1e-10)
    if wrap != "step":
        assert s["f"].stats["replayed"] == 39


def test_language_errors_name_the_attribute():
    s = ad.Session(out=io.StringIO())
    s.run("w = tensor([1.0], requires_grad=true)\nopt = sgd([w], lr=0.1)")
    with pytest.raises(TypeError_, match="cannot set attribute `momentum` on an sgd optimizer; only `lr`"):
        s.run("opt.momentum = 0.5")
    with pytest.raises(ad.NameError_, match="an sgd optimizer has no attribute `foo`; it has: dampening"):
        s.run("opt.foo")
    assert s.run("opt.momentum") == 0.0
    assert s.run("opt.lr") == 0.1


def test_the_repl_completes_an_optimizers_attributes():
    from prompt_toolkit.document import Document

    from autodsl.cli.complete import AutodslCompleter
    from autodsl.tools.optim import Adam
    s = ad.Session(out=io.StringIO())
    s.run("w = tensor([1.0], requires_grad=true)\nopt = adam([w], lr=0.1)")
    c = AutodslCompleter(lambda: s, list, registry=ad.REGISTRY)
    got = {x.text: x.display_meta_text for x in c.get_completions(Document("opt.", 4), None)}
    assert set(got) == set(Adam.LANG_ATTRIBUTES)
    assert got["lr"] == "attribute" and got["step"].startswith("One Adam update")
