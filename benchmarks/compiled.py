"""Compiled training loops (issue 10): W7, a small tanh MLP; W1C, W1's chain as a step
function; W4C, W4's MLP with its step compiled.

Every compiled run makes a fresh `autodsl.compile(step)` and calls it in a loop, so its
time includes the first call, which runs eagerly and captures the program (core/capture.py
and core/program.py); the later calls replay it. Each run returns the final state as NumPy
arrays, which the runner checks bit for bit against the same step run eagerly by autodsl
(`timing.identical`) before it times anything, and a compiled run raises when its calls did
not replay (its function fell back to eager: the reason is in the message).

- W7: a 2-16-1 tanh MLP on 64 points, MSE loss, plain SGD (lr 0.1) for 500 steps, float64;
  a step is forward, `p.grad = None`, backward, the update under no_grad. run() returns
  [final loss, W1, b1, W2, b2].
- W1C: one call is W1's whole chain `y = relu(y*0.999 + 0.001)` (N links) from the leaf x,
  after `x.grad = None`, and its backward; run() makes `calls` calls and returns
  [x.grad, the last y].
- W4C: W4's loop (mlp.py) with the step compiled; the NumPy floor is mlp.py's, unchanged.
  run() returns the last step's gradients (W1, b1, ... b3, as W4's runs do) and, with
  state=True, also the final loss and weights.
"""

import time

import numpy as np

from . import graphs, mlp

W7_SIZES = (2, 16, 1)
W7_POINTS = 64
W7_LR = 0.1


class NotReplayed(RuntimeError):
    """A compiled run whose calls ran eagerly (its guards failed or it could not be captured)."""


def _compiled(ad, step, calls):
    """A fresh compiled step and a checker that its later calls replayed."""
    f = ad.compile(step)

    def done():
        if f.stats["replayed"] != calls - 1:
            raise NotReplayed(f"compiled step replayed {f.stats['replayed']} of {calls - 1} calls "
                              f"(stats {f.stats}; eager because: {f.eager_reason})")
    return f, done


class FirstCall:
    """The seconds of each compiled run's first call (the capture), newest last."""

    def __init__(self):
        self.seconds = []

    def timed(self, f, *args):
        t0 = time.perf_counter()
        out = f(*args)
        self.seconds.append(time.perf_counter() - t0)
        return out


# --- W7: a 2-16-1 tanh MLP with MSE and SGD -----------------------------------------

def w7_problem(seed=7):
    """(X, Y, [W1, b1, W2, b2]) as float64 NumPy arrays: 64 points in [-1, 1]^2 and a
    smooth target, weights scaled by 1/sqrt(fan_in)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (W7_POINTS, W7_SIZES[0]))
    Y = np.sin(3.0 * X[:, :1]) * X[:, 1:]
    params = []
    for fan_in, fan_out in zip(W7_SIZES[:-1], W7_SIZES[1:]):
        params.append(rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in))
        params.append(rng.standard_normal(fan_out) * 0.1)
    return X, Y, params


def w7_step(tanh, mse_loss, no_grad, lr=W7_LR):
    """One training step, the same code for autodsl and PyTorch."""
    def step(x, y, ps):
        W1, b1, W2, b2 = ps
        loss = mse_loss(tanh(x @ W1 + b1) @ W2 + b2, y)
        for p in ps:
            p.grad = None
        loss.backward()
        with no_grad():
            for p in ps:
                p -= lr * p.grad
        return loss.detach()
    return step


def w7_runs(mods, steps, skipped=None, first=None):
    """{"autodsl": eager, "autodsl compiled": compiled, "torch": PyTorch eager}; run()
    trains `steps` steps from the same start and returns [loss, W1, b1, W2, b2]."""
    X, Y, init = w7_problem()
    ad = mods["autodsl"]
    step = w7_step(ad.tanh, ad.mse_loss, ad.no_grad)
    x, y = ad.tensor(X, dtype=ad.float64), ad.tensor(Y, dtype=ad.float64)

    def params():
        return [ad.tensor(p.copy(), requires_grad=True, dtype=ad.float64) for p in init]

    def state(loss, ps):
        return [loss.numpy()] + [p.numpy().copy() for p in ps]

    def eager():
        ps = params()
        for _ in range(steps):
            loss = step(x, y, ps)
        return state(loss, ps)

    def compiled():
        ps = params()
        f, done = _compiled(ad, step, steps)
        loss = first.timed(f, x, y, ps) if first is not None else f(x, y, ps)
        for _ in range(steps - 1):
            loss = f(x, y, ps)
        done()
        return state(loss, ps)

    runs = {"autodsl": eager, "autodsl compiled": compiled}
    if "torch" in mods:
        try:
            runs["torch"] = _w7_torch(mods["torch"], X, Y, init, steps)
        except Exception as exc:
            if skipped is None:
                raise
            skipped["torch"] = exc
    return runs


def _w7_torch(torch, X, Y, init, steps):
    step = w7_step(torch.tanh, torch.nn.functional.mse_loss, torch.no_grad)
    x, y = torch.from_numpy(X), torch.from_numpy(Y)

    def run():
        ps = [torch.tensor(p, requires_grad=True) for p in init]
        for _ in range(steps):
            loss = step(x, y, ps)
        return [loss.numpy()] + [p.detach().numpy().copy() for p in ps]
    return run


# --- W1C: W1's chain as one step ----------------------------------------------------

def w1_step(relu, n):
    """One call: x.grad = None, the n-link chain from x, its backward; returns y detached."""
    def step(x):
        x.grad = None
        y = x
        for _ in range(n):
            y = relu(y * 0.999 + 0.001)
        y.backward()
        return y.detach()
    return step


def w1c_runs(mods, n, calls, compiled=True, skipped=None, first=None):
    """{"autodsl": the step compiled (or eager with compiled=False), "torch": eager};
    run() makes `calls` calls and returns [x.grad, the last y]."""
    ad = mods["autodsl"]
    step = w1_step(ad.relu, n)

    def run():
        x = ad.tensor(graphs.X0, requires_grad=True, dtype=ad.float64)
        if compiled:
            f, done = _compiled(ad, step, calls)
            y = first.timed(f, x) if first is not None else f(x)
            for _ in range(calls - 1):
                y = f(x)
            done()
        else:
            for _ in range(calls):
                y = step(x)
        return [x.grad.numpy().copy(), y.numpy().copy()]

    runs = {"autodsl": run}
    if "torch" in mods:
        torch = mods["torch"]
        tstep = w1_step(torch.relu, n)

        def trun():
            x = torch.tensor(graphs.X0, requires_grad=True, dtype=torch.float64)
            for _ in range(calls):
                y = tstep(x)
            return [x.grad.numpy().copy(), y.numpy().copy()]
        runs["torch"] = trun
    return runs


# --- W4C: W4's MLP with its step compiled -------------------------------------------

def w4_step(ad):
    """W4's step (mlp.py's eager loop body), as a function of (X, y, params)."""
    def step(X, y, ps):
        W1, b1, W2, b2, W3, b3 = ps
        h1 = ad.relu(X @ W1 + b1)
        h2 = ad.relu(h1 @ W2 + b2)
        loss = ad.cross_entropy(h2 @ W3 + b3, y)
        for p in ps:
            p.grad = None
        loss.backward()
        with ad.no_grad():
            for p in ps:
                p -= mlp.LR * p.grad
        return loss.detach()
    return step


def w4c_runs(ad, dtype, steps, batch=mlp.BATCH, state=False, first=None):
    """{"numpy": the floor (mlp.py's), "autodsl": the step eager, "autodsl compiled": the
    step compiled}; run() returns the last step's gradients (the floor's order), and with
    state=True (autodsl only) also the final loss and weights."""
    X, y, init = mlp.problem(dtype, batch)
    adt = ad.float32 if dtype == np.float32 else ad.float64
    Xt, yt = ad.tensor(X, dtype=adt), ad.tensor(y, dtype=ad.int64)
    step = w4_step(ad)

    def params():
        return [ad.tensor(p.copy(), requires_grad=True, dtype=adt) for p in init]

    def out(loss, ps):
        grads = [p.grad.numpy().copy() for p in ps]
        return grads + [loss.numpy()] + [p.numpy().copy() for p in ps] if state else grads

    def eager():
        ps = params()
        for _ in range(steps):
            loss = step(Xt, yt, ps)
        return out(loss, ps)

    def compiled():
        ps = params()
        f, done = _compiled(ad, step, steps)
        loss = first.timed(f, Xt, yt, ps) if first is not None else f(Xt, yt, ps)
        for _ in range(steps - 1):
            loss = f(Xt, yt, ps)
        done()
        return out(loss, ps)

    runs = {"autodsl": eager, "autodsl compiled": compiled}
    if not state:
        runs = {"numpy": mlp.make_runs(dtype, steps, {}, batch)["numpy"], **runs}
    return runs
