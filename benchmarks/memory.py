"""W5: memory of a chain of N ops (y = sin(y)) on 16-element float64 tensors.

Each library runs in its own process (`python -m benchmarks.memory LIB N`),
which prints one JSON line: the RSS before the forward, after the forward,
after the backward (output still bound, as in a training loop: the saved
tensors must be gone), the same after glibc's malloc_trim (what is really
still held), after dropping the output (trimmed), the peak RSS, and the
gradient (for the check). bytes/node = (peak - before) / N.
"""

import gc
import json
import os
import resource
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPPORTED = ("autodsl", "torch", "autograd")
UNSUPPORTED = {"micrograd": "scalars only"}
WIDTH = 16


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak():
    """This process's own peak RSS (VmHWM). Not ru_maxrss: Linux keeps that
    across fork and exec, so it would include the size of the parent."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def trim():
    """Hand freed heap pages back to the OS (glibc), so RSS shows what is still held."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _x0():
    import numpy as np
    return np.random.default_rng(5).uniform(0.5, 1.5, WIDTH)


def child(lib, n):
    out = {}
    if lib == "autodsl":
        import autodsl as ad

        def build(m):
            x = ad.tensor(_x0(), requires_grad=True, dtype=ad.float64)
            y = x
            for _ in range(m):
                y = ad.sin(y)
            return x, y.sum()

        def grad(x):
            return x.grad.numpy()
    elif lib == "torch":
        import torch
        torch.set_num_threads(1)

        def build(m):
            x = torch.tensor(_x0(), requires_grad=True, dtype=torch.float64)
            y = x
            for _ in range(m):
                y = torch.sin(y)
            return x, y.sum()

        def grad(x):
            return x.grad.numpy()
    elif lib == "autograd":
        import autograd
        import autograd.numpy as anp

        def f(x, m):
            y = x
            for _ in range(m):
                y = anp.sin(y)
            return anp.sum(y)

        g = autograd.grad(f)
        g(_x0(), 10)  # warm-up
        gc.collect()
        out["before"] = rss()
        result = g(_x0(), n)
        out.update(after_forward=None, after_backward=rss())
        trim()
        out["after_backward_trim"] = rss()
        del result
        gc.collect()
        trim()
        out.update(after_del=rss(), peak=peak(), grad=[float(v) for v in g(_x0(), n)])
        return out
    else:
        raise SystemExit(f"unknown library {lib}")
    x, loss = build(10)  # warm-up: load whatever loads lazily
    loss.backward()
    del x, loss
    gc.collect()
    out["before"] = rss()
    x, loss = build(n)
    out["after_forward"] = rss()
    loss.backward()
    out["after_backward"] = rss()
    out["peak"] = peak()
    out["grad"] = [float(v) for v in grad(x)]
    trim()
    out["after_backward_trim"] = rss()
    del loss
    gc.collect()
    trim()
    out["after_del"] = rss()
    return out


def measure(lib, n):
    proc = subprocess.run([sys.executable, "-m", "benchmarks.memory", lib, str(n)],
                          cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        from .timing import ChildFailed
        raise ChildFailed(f"W5 {lib} failed ({proc.returncode})", proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    import benchmarks  # noqa: F401  (thread variables, before NumPy)
    print(json.dumps(child(sys.argv[1], int(sys.argv[2]))))
