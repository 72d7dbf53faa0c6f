"""W4: an MLP 784 -> 512 -> 512 -> 10 with relu and softmax cross-entropy.

Every library trains the same network from the same initial weights on the
same batch with plain SGD for `steps` steps. run() returns the gradients of
the last step (W1, b1, W2, b2, W3, b3); with steps=1 those are the gradients
at the initial weights, which the check compares with the NumPy floor.
"""

import numpy as np

from . import peers

SIZES = (784, 512, 512, 10)
BATCH = 256
LR = 0.01


def problem(dtype, batch=BATCH, seed=0):
    """(X, labels, [W1, b1, W2, b2, W3, b3]) as NumPy arrays of `dtype`."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((batch, SIZES[0])).astype(dtype)
    y = rng.integers(0, SIZES[-1], batch).astype(np.int64)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        params.append((rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(dtype))
        params.append((rng.standard_normal(fan_out) * 0.01).astype(dtype))
    return X, y, params


# --- the floor: NumPy by hand ------------------------------------------------

def _numpy(_mod, dtype, steps, batch):
    X, y, init = problem(dtype, batch)
    rows = np.arange(len(y))
    lr = dtype(LR)

    def run():
        W1, b1, W2, b2, W3, b3 = [p.copy() for p in init]
        for _ in range(steps):
            z1 = X @ W1 + b1
            h1 = np.maximum(z1, 0)
            z2 = h1 @ W2 + b2
            h2 = np.maximum(z2, 0)
            z3 = h2 @ W3 + b3
            e = np.exp(z3 - z3.max(axis=1, keepdims=True))
            p = e / e.sum(axis=1, keepdims=True)       # softmax; the loss is -mean(log p[y])
            dz3 = p
            dz3[rows, y] -= 1
            dz3 /= len(y)
            gW3, gb3 = h2.T @ dz3, dz3.sum(axis=0)
            dz2 = (dz3 @ W3.T) * (z2 > 0)
            gW2, gb2 = h1.T @ dz2, dz2.sum(axis=0)
            dz1 = (dz2 @ W2.T) * (z1 > 0)
            gW1, gb1 = X.T @ dz1, dz1.sum(axis=0)
            grads = [gW1, gb1, gW2, gb2, gW3, gb3]
            for w, g in zip((W1, b1, W2, b2, W3, b3), grads):
                w -= lr * g
        return grads
    return run


# --- autodsl and PyTorch: the same eager training loop --------------------------

def _eager(params, X, y, relu, ce, no_grad, steps):
    def run():
        ps = params()
        W1, b1, W2, b2, W3, b3 = ps
        for _ in range(steps):
            h1 = relu(X @ W1 + b1)
            h2 = relu(h1 @ W2 + b2)
            loss = ce(h2 @ W3 + b3, y)
            for p in ps:
                p.grad = None
            loss.backward()
            with no_grad():
                for p in ps:
                    p -= LR * p.grad
        return [p.grad.numpy() for p in ps]
    return run


def _autodsl(ad, dtype, steps, batch):
    X, y, init = problem(dtype, batch)
    adt = ad.float32 if dtype == np.float32 else ad.float64
    return _eager(lambda: [ad.tensor(p.copy(), requires_grad=True, dtype=adt) for p in init],
                  ad.tensor(X, dtype=adt), ad.tensor(y, dtype=ad.int64), ad.relu, ad.cross_entropy,
                  ad.no_grad, steps)


def _torch(torch, dtype, steps, batch):
    X, y, init = problem(dtype, batch)
    return _eager(lambda: [torch.tensor(p, requires_grad=True) for p in init],
                  torch.from_numpy(X), torch.from_numpy(y), torch.relu,
                  torch.nn.functional.cross_entropy, torch.no_grad, steps)


# --- HIPS autograd -----------------------------------------------------------

def _autograd(autograd, dtype, steps, batch):
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp
    X, y, init = problem(dtype, batch)
    rows = np.arange(len(y))
    lr = dtype(LR)

    def loss(ps):
        W1, b1, W2, b2, W3, b3 = ps
        h1 = anp.maximum(anp.dot(X, W1) + b1, 0)
        h2 = anp.maximum(anp.dot(h1, W2) + b2, 0)
        z3 = anp.dot(h2, W3) + b3
        return -anp.mean(z3[rows, y] - logsumexp(z3, axis=1))

    dloss = autograd.grad(loss)

    def run():
        ps = [p.copy() for p in init]
        for _ in range(steps):
            grads = dloss(ps)
            ps = [p - lr * g for p, g in zip(ps, grads)]
        return list(grads)
    return run


UNSUPPORTED = {"micrograd": "scalars only"}
_MAKERS = {"numpy": _numpy, "autodsl": _autodsl, "torch": _torch, "autograd": _autograd}


def make_runs(dtype, steps, mods, batch=BATCH, skipped=None):
    """{"numpy": the floor, library: run}; a peer whose setup raises (HIPS
    autograd without scipy, say) goes into `skipped` ({name: exception})."""
    return peers.make_runs(_MAKERS, {"numpy": None, **mods}, (dtype, steps, batch), skipped)
