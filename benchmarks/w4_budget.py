"""python -m benchmarks.w4_budget [--rounds N] [--steps N] [--dtype float32|float64] [--cachegrind]

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

The timings of one invocation move by a few percent on a shared machine. With
--cachegrind the tool counts instead, under valgrind (callgrind's cache simulation
of one core: CACHES below): per step of each loop, the instructions, the L1
instruction misses, and the misses of a 1 MiB L2 for instructions and for data,
the same on every run. A change to the hot path shows there in minutes, where the
timings would need many invocations.
"""

import argparse
import gc
import sys
import time

import numpy as np

from . import minimal_engine, mlp
from .timing import identical

PHASES = ("layers", "loss", "backward", "update")
LOOPS = ("numpy floor", "minimal engine", "autodsl")
_pc = time.perf_counter


def _floor_loop(dtype):
    """(start, step): start() copies the initial weights; step() runs one SGD step of mlp.py's
    floor and returns (its phases' seconds, the step's gradients)."""
    # mlp.py's floor line for line, with the timers between its phases: mlp.py's own loop
    # stays as it is, since W4's target is measured against it unchanged
    X, y, init = mlp.problem(dtype)
    rows, lr = np.arange(len(y)), dtype(mlp.LR)
    ps = []

    def start():
        ps[:] = [p.copy() for p in init]

    def step():
        W1, b1, W2, b2, W3, b3 = ps
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
        return (t1 - t0, t2 - t1, t3 - t2, _pc() - t3), grads
    return start, step


def _eager_loop(params, X, y, relu, cross_entropy, no_grad):
    """(start, step) of mlp.py's eager loop, with a timer between its phases."""
    ps = []

    def start():
        ps[:] = params()

    def step():
        W1, b1, W2, b2, W3, b3 = ps
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
        return (t1 - t0, t2 - t1, t3 - t2, _pc() - t3), [p.grad for p in ps]
    return start, step


def make_loops(dtype):
    """{"numpy floor", "minimal engine", "autodsl": (start, step)} (see ``_floor_loop``)."""
    import autodsl as ad
    X, y, init = mlp.problem(dtype)
    adt = ad.float32 if dtype == np.float32 else ad.float64
    me = minimal_engine
    return {
        "numpy floor": _floor_loop(dtype),
        "minimal engine": _eager_loop(lambda: [me.Tensor(p.copy(), True) for p in init], me.Tensor(X),
                                      me.Tensor(y), me.relu, me.cross_entropy, me.no_grad),
        "autodsl": _eager_loop(lambda: [ad.tensor(p.copy(), requires_grad=True, dtype=adt) for p in init],
                               ad.tensor(X, dtype=adt), ad.tensor(y, dtype=ad.int64), ad.relu,
                               ad.cross_entropy, ad.no_grad),
    }


def make_runs(dtype, steps):
    """{loop: run}; run() starts from the initial weights and gives (per-step phase seconds,
    the last step's gradients as NumPy arrays)."""
    def run_of(start, step):
        def run():
            start()
            times = []
            for _ in range(steps):
                t, grads = step()
                times.append(t)
            return times, [g if isinstance(g, np.ndarray) else g.numpy() if hasattr(g, "numpy") else g.data
                           for g in grads]
        return run
    return {name: run_of(*loop) for name, loop in make_loops(dtype).items()}


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


def _medians(t) -> list:
    """Median microseconds of each phase and of the whole step, over the rows of ``t``."""
    return [float(np.median(t[:, i])) * 1e6 for i in range(len(PHASES))] + [float(np.median(t.sum(1))) * 1e6]


def table(times) -> str:
    """Median microseconds per phase and per step, and each loop's excess over the floor."""
    floor = times["numpy floor"]
    ref = _medians(floor)
    lines = [f"{'us per step':16s}" + "".join(f"{p:>18s}" for p in PHASES + ("step",))]
    steps = {}
    for name, t in times.items():
        med = _medians(t)
        steps[name] = med[-1]
        cells = [f"{m:9.1f}" + ("" if t is floor else f" {m - r:+7.1f}") for m, r in zip(med, ref)]
        lines.append(f"{name:16s}" + "".join(f"{c:>18s}" for c in cells))
    lines.append("step / floor: " + ", ".join(f"{name} {steps[name] / ref[-1]:.4f}x"
                                              for name in times if name != "numpy floor"))
    return "\n".join(lines)


# --- under valgrind: what each loop touches, counted without the machine's noise ----------------

# One core of the machine of benchmarks/RESULTS.md (AMD EPYC): L1 instruction and data caches,
# and its 1 MiB L2 as valgrind's last level (every matrix product streams more than that
# through it, so what runs after one finds its code and data there or not: a miss is a read
# from L3). Options of valgrind's callgrind: size,associativity,line size.
CACHES = ("--I1=32768,8,64", "--D1=49152,12,64", "--LL=1048576,16,64")
EVENTS = ("instructions", "L1 instruction misses", "L2 instruction misses", "L2 data misses")


def child(name, dtype, steps):
    """Two warm-up steps of loop ``name``, then ``steps`` more inside map(): the function that
    valgrind is told to count (``--toggle-collect=map_next``)."""
    start, step = make_loops(dtype)[name]
    start()
    step()
    step()
    list(map(lambda _: step(), range(steps)))


def counted(name, dtype_name, steps, valgrind="valgrind"):
    """{event: count per step} of ``steps`` steps of loop ``name`` under callgrind's cache
    simulation (see CACHES). Raises RuntimeError when valgrind fails."""
    import os
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = [valgrind, "--tool=callgrind", "--cache-sim=yes", *CACHES, "--collect-atstart=no",
               "--toggle-collect=map_next", f"--callgrind-out-file={out}",
               sys.executable, "-m", "benchmarks.w4_budget", "--child", name, "--steps", str(steps),
               "--dtype", dtype_name]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.dirname(os.path.dirname(__file__)))
        line = next((ln for ln in p.stderr.splitlines() if "Collected :" in ln), None)
        if p.returncode != 0 or line is None:
            raise RuntimeError(f"valgrind failed ({p.returncode}) for {name}:\n{p.stderr[-2000:]}")
    # Collected : Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
    c = [int(v) for v in line.split(":", 1)[1].split()]
    return dict(zip(EVENTS, (c[0] / steps, c[3] / steps, c[6] / steps, (c[7] + c[8]) / steps)))


def counted_table(counts) -> str:
    """Per step: each event's count and its excess over the floor."""
    floor = counts["numpy floor"]
    lines = [f"{'per step':16s}" + "".join(f"{e:>26s}" for e in EVENTS)]
    for name, c in counts.items():
        cells = [f"{c[e]:12,.0f}" + ("" if c is floor else f" {c[e] - floor[e]:+11,.0f}") for e in EVENTS]
        lines.append(f"{name:16s}" + "".join(f"{x:>26s}" for x in cells))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.w4_budget", description=__doc__.split("\n\n")[1])
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    p.add_argument("--steps", type=int, help="SGD steps per run (default 50, as W4; with --cachegrind, 4)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--cachegrind", action="store_true",
                   help="count instructions and cache misses per step under valgrind instead of timing "
                        "(deterministic; about a minute per loop and step)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    dtype = np.float32 if args.dtype == "float32" else np.float64
    if args.child:
        child(args.child, dtype, args.steps)
        return 0
    if args.cachegrind:
        import shutil
        if shutil.which("valgrind") is None:
            print("--cachegrind needs valgrind (apt install valgrind)", file=sys.stderr)
            return 2
        steps = args.steps or 4
        print(f"W4 {args.dtype}: {steps} steps of each loop under valgrind (callgrind, {' '.join(CACHES)}), "
              "after 2 warm-up steps; each cell: the count per step, and its excess over the floor", flush=True)
        import os
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:    # (the counts do not vary)
            counts = dict(zip(LOOPS, pool.map(lambda name: counted(name, args.dtype, steps), LOOPS)))
        print(counted_table(counts))
        return 0
    steps = args.steps or 50
    print(f"W4 {args.dtype}, {steps} steps, {args.rounds} rounds; "
          "each cell: the median, and its excess over the floor", flush=True)
    print(table(measure(dtype, steps, args.rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
