"""W1 scalar chain, W2 diamond ladder, W3 fan-out: small-graph workloads.

make_runs(workload, size, mods) returns {library: run}, where run() builds the
graph from a fresh 0-d float64 leaf, runs backward and returns the leaf's
gradient. nodes(workload, size) is the number of recorded ops, the unit of
"time per node".
"""

import sys

import numpy as np

from . import peers

X0 = 0.5


def nodes(workload, size):
    return {"W1": 3 * size, "W2": 3 * size, "W3": 2 * size - 1}[workload]


def fan_constants(k):
    return [float(c) for c in np.random.default_rng(3).uniform(-1.0, 1.0, k)]


# --- autodsl and PyTorch: the same eager code, each with its own leaf and ops ------

def _eager(leaf, relu, sin, cos, workload, size):
    cs = fan_constants(size) if workload == "W3" else None

    def run():
        x = leaf()
        y = x
        if workload == "W1":
            for _ in range(size):
                y = relu(y * 0.999 + 0.001)
        elif workload == "W2":
            for _ in range(size):
                y = sin(y) * cos(y)
        else:
            y = x * cs[0]
            for c in cs[1:]:
                y = y + x * c
        y.backward()
        return x.grad.numpy()
    return run


def _autodsl(ad, workload, size):
    return _eager(lambda: ad.tensor(X0, requires_grad=True, dtype=ad.float64),
                  ad.relu, ad.sin, ad.cos, workload, size)


def _torch(torch, workload, size):
    return _eager(lambda: torch.tensor(X0, requires_grad=True, dtype=torch.float64),
                  torch.relu, torch.sin, torch.cos, workload, size)


# --- HIPS autograd -----------------------------------------------------------

def _autograd(autograd, workload, size):
    import autograd.numpy as anp
    cs = fan_constants(size) if workload == "W3" else None

    def f(x):
        y = x
        if workload == "W1":
            for _ in range(size):
                y = anp.maximum(y * 0.999 + 0.001, 0.0)
        elif workload == "W2":
            for _ in range(size):
                y = anp.sin(y) * anp.cos(y)
        else:
            y = x * cs[0]
            for c in cs[1:]:
                y = y + x * c
        return y

    df = autograd.grad(f)

    def run():
        return np.asarray(df(np.float64(X0)))
    return run


# --- micrograd (scalars; +, *, relu only) -----------------------------------

def _micrograd(engine, workload, size):
    if workload == "W2":
        return None  # no sin/cos
    Value = engine.Value
    cs = fan_constants(size) if workload == "W3" else None

    def run():
        x = Value(X0)
        y = x
        if workload == "W1":
            for _ in range(size):
                y = (y * 0.999 + 0.001).relu()
        else:
            y = x * cs[0]
            for c in cs[1:]:
                y = y + x * c
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 4 * nodes(workload, size) + 1000))
        try:
            y.backward()  # its topological sort recurses once per node
        finally:
            sys.setrecursionlimit(limit)
        return np.asarray(x.grad)
    return run


UNSUPPORTED = {("micrograd", "W2"): "no sin/cos"}
_MAKERS = {"autodsl": _autodsl, "torch": _torch, "autograd": _autograd,
           "micrograd": _micrograd}


def make_runs(workload, size, mods, skipped=None):
    """{library: run}; a peer whose setup raises goes into `skipped` ({name: exception})."""
    return peers.make_runs(_MAKERS, mods, (workload, size), skipped)
