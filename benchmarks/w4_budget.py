"""python -m benchmarks.w4_budget [--rounds N] [--steps N] [--dtype float32|float64]

Where W4's time over the NumPy floor goes, phase by phase, inside the training loop.

W4 (mlp.py) times whole runs. This tool times each phase of every step (the three
layers, the loss, the backward with the grads set to None, the update), for three
loops that make the same products:

- the NumPy floor, as mlp.py writes it;
- a minimal eager engine (benchmarks/minimal_engine.py): autodsl's NumPy calls for
  W4's ops and a dependency-counted backward, with none of autodsl's features. It
  computes autodsl's gradients bit for bit (checked first, and said if not);
- autodsl, as mlp.py runs it.

Inside the loop each phase starts after a matrix product has streamed megabytes
through the caches, so Python-level work costs several times what it costs on warm
caches. The minimal engine's excess over the floor is what any Python engine pays
there; autodsl's excess beyond the minimal engine's is what its features cost. Each
round runs every loop once, interleaved; a figure is the median over all steps of
all rounds. Not a test and not part of `python -m benchmarks`: a tool to steer by.
"""

import argparse
import gc
import sys
import time

import numpy as np

from . import minimal_engine, mlp
from .timing import identical

PHASES = ("layers", "loss", "backward", "update")
_pc = time.perf_counter


def _floor_run(dtype, steps):
    # mlp.py's floor line for line, with the timers between its phases: mlp.py's own loop
    # stays as it is, since W4's target is measured against it unchanged
    X, y, init = mlp.problem(dtype)
    rows, lr = np.arange(len(y)), dtype(mlp.LR)

    def run():
        W1, b1, W2, b2, W3, b3 = [p.copy() for p in init]
        times = []
        for _ in range(steps):
            t0 = _pc()
            z1 = X @ W1 + b1
            h1 = np.maximum(z1, 0)
            z2 = h1 @ W2 + b2
            h2 = np.maximum(z2, 0)
            z3 = h2 @ W3 + b3
            t1 = _pc()
            e = np.exp(z3 - z3.max(axis=1, keepdims=True))
            p = e / e.sum(axis=1, keepdims=True)
            t2 = _pc()
            dz3 = p
            dz3[rows, y] -= 1
            dz3 /= len(y)
            gW3, gb3 = h2.T @ dz3, dz3.sum(axis=0)
            dz2 = (dz3 @ W3.T) * (z2 > 0)
            gW2, gb2 = h1.T @ dz2, dz2.sum(axis=0)
            dz1 = (dz2 @ W2.T) * (z1 > 0)
            gW1, gb1 = X.T @ dz1, dz1.sum(axis=0)
            grads = [gW1, gb1, gW2, gb2, gW3, gb3]
            t3 = _pc()
            for w, g in zip((W1, b1, W2, b2, W3, b3), grads):
                w -= lr * g
            times.append((t1 - t0, t2 - t1, t3 - t2, _pc() - t3))
        return times, grads
    return run


def _eager_run(params, X, y, relu, cross_entropy, no_grad, steps):
    """mlp.py's eager loop, with a timer between its phases."""
    def run():
        ps = params()
        W1, b1, W2, b2, W3, b3 = ps
        times = []
        for _ in range(steps):
            t0 = _pc()
            h1 = relu(X @ W1 + b1)
            h2 = relu(h1 @ W2 + b2)
            z3 = h2 @ W3 + b3
            t1 = _pc()
            loss = cross_entropy(z3, y)
            t2 = _pc()
            for p in ps:
                p.grad = None
            loss.backward()
            t3 = _pc()
            with no_grad():
                for p in ps:
                    p -= mlp.LR * p.grad
            times.append((t1 - t0, t2 - t1, t3 - t2, _pc() - t3))
        return times, [p.grad for p in ps]
    return run


def make_runs(dtype, steps):
    """{"numpy floor", "minimal engine", "autodsl": run}; run() gives (per-step phase
    seconds, the last step's gradients as arrays)."""
    import autodsl as ad
    X, y, init = mlp.problem(dtype)
    adt = ad.float32 if dtype == np.float32 else ad.float64
    me = minimal_engine
    ad_run = _eager_run(lambda: [ad.tensor(p.copy(), requires_grad=True, dtype=adt) for p in init],
                        ad.tensor(X, dtype=adt), ad.tensor(y, dtype=ad.int64), ad.relu,
                        ad.cross_entropy, ad.no_grad, steps)
    me_run = _eager_run(lambda: [me.Tensor(p.copy(), True) for p in init], me.Tensor(X), me.Tensor(y),
                        me.relu, me.cross_entropy, me.no_grad, steps)

    def arrays(run):
        def go():
            times, grads = run()
            return times, [g.numpy() if hasattr(g, "numpy") else g.data for g in grads]
        return go
    return {"numpy floor": _floor_run(dtype, steps), "minimal engine": arrays(me_run), "autodsl": arrays(ad_run)}


def measure(dtype, steps, rounds, log=print):
    """{loop: array (rounds * steps, len(PHASES)) of seconds} after one warm-up run each;
    logs whether the minimal engine computes autodsl's gradients bit for bit."""
    runs = make_runs(dtype, steps)
    warm = {name: run()[1] for name, run in runs.items()}
    diff = identical(warm["minimal engine"], warm["autodsl"])
    log("the minimal engine's gradients are autodsl's, bit for bit" if diff is None else
        f"the minimal engine's gradients differ from autodsl's ({diff}): it is no reference for autodsl's NumPy work")
    times = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            gc.collect()
            times[name].extend(run()[0])
    return {name: np.array(t) for name, t in times.items()}


def table(times) -> str:
    """Median microseconds per phase and per step, and each loop's excess over the floor."""
    floor = times["numpy floor"]
    lines = [f"{'us per step':16s}" + "".join(f"{p:>18s}" for p in PHASES + ("step",))]
    for name, t in times.items():
        med = [float(np.median(t[:, i])) * 1e6 for i in range(len(PHASES))] + [float(np.median(t.sum(1))) * 1e6]
        ref = [float(np.median(floor[:, i])) * 1e6 for i in range(len(PHASES))] + \
            [float(np.median(floor.sum(1))) * 1e6]
        cells = [f"{m:9.1f}" + ("" if t is floor else f" {m - r:+7.1f}") for m, r in zip(med, ref)]
        lines.append(f"{name:16s}" + "".join(f"{c:>18s}" for c in cells))
    step = {name: float(np.median(t.sum(1))) for name, t in times.items()}
    lines.append("step / floor: " + ", ".join(f"{name} {step[name] / step['numpy floor']:.4f}x"
                                              for name in times if name != "numpy floor"))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.w4_budget", description=__doc__.split("\n\n")[1])
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    p.add_argument("--steps", type=int, default=50, help="SGD steps per run (default 50, as W4)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    args = p.parse_args(argv)
    dtype = np.float32 if args.dtype == "float32" else np.float64
    print(f"W4 {args.dtype}, {args.steps} steps, {args.rounds} rounds; "
          "each cell: the median, and its excess over the floor", flush=True)
    print(table(measure(dtype, args.steps, args.rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
