"""W4 with each library in a process of its own: the NumPy floor and autodsl, as a
user's training script runs them (no other library's arrays in the heap).

The W4 rows proper time every library in one process, interleaved. There the
heap is shared, and its state depends on what ran before: with PyTorch's runs
in the process, glibc never hands memory back between steps; alone, it can
give the top of the heap back to the system at one step and fault it in again
(zeroed pages) at the next. These rows show what a user's own process gets:
each round starts one process per library (`python -m benchmarks.mlp_alone LIB
DTYPE STEPS`), which runs the loop once to warm up, then once timed, and prints
one JSON line: the seconds of the timed run and its minor page faults.
"""

import json
import resource
import subprocess
import sys
import time

from . import memory

LIBS = ("numpy", "autodsl")


def child(lib, dtype_name, steps):
    import numpy as np

    from . import mlp
    dtype = np.dtype(dtype_name).type
    mods = {}
    if lib == "autodsl":
        import autodsl
        mods["autodsl"] = autodsl
    runs = mlp.make_runs(dtype, steps, mods)
    run = runs[lib]
    run()               # warm-up: what loads lazily, and the heap's first growth
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    run()
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults}


def measure(lib, dtype_name, steps):
    """One process's timed run: {"seconds": ..., "faults": ...}."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks.mlp_alone", lib, dtype_name, str(steps)],
                          cwd=memory.ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        from .timing import ChildFailed
        raise ChildFailed(f"W4 alone {lib} {dtype_name} failed ({proc.returncode})", proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def rounds(dtype_name, steps, repeats):
    """(timing.Rounds of seconds, {library: median page faults per step}) over `repeats`
    rounds, each starting one process per library, one after the other."""
    import statistics

    from .timing import Rounds
    seconds = {lib: [] for lib in LIBS}
    faults = {lib: [] for lib in LIBS}
    for _ in range(repeats):
        for lib in LIBS:
            out = measure(lib, dtype_name, steps)
            seconds[lib].append(out["seconds"])
            faults[lib].append(out["faults"] / steps)
    return Rounds(seconds), {lib: statistics.median(v) for lib, v in faults.items()}


if __name__ == "__main__":
    import benchmarks  # noqa: F401  (thread variables, before NumPy)
    print(json.dumps(child(sys.argv[1], sys.argv[2], int(sys.argv[3]))))
