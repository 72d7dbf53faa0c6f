"""Interleaved timing with a gradient check first."""

import gc
import statistics
import time

import numpy as np


class GradMismatch(Exception):
    pass


def same_grads(got, ref, rtol, atol_scale):
    """np.allclose on each gradient, with atol relative to the largest entry."""
    got = got if isinstance(got, (list, tuple)) else [got]
    ref = ref if isinstance(ref, (list, tuple)) else [ref]
    if len(got) != len(ref):
        return False
    for g, r in zip(got, ref):
        g, r = np.asarray(g, dtype=np.float64), np.asarray(r, dtype=np.float64)
        atol = atol_scale * max(float(np.max(np.abs(r))) if r.size else 0.0, 1e-300)
        if g.shape != r.shape or not np.allclose(g, r, rtol=rtol, atol=atol):
            return False
    return True


def check_and_time(runs, reference, repeats, inner=1, rtol=1e-7, atol_scale=1e-9,
                   mismatches=None, label="", check=None):
    """Time each run() interleaved (A, B, A, B, ...), after checking its gradients.

    runs: {name: run}; run() does the whole forward plus backward and returns
    the gradients. reference: the name whose gradients the others must equal.
    check: other runs ({name: run}, same names) to use for the check instead.
    The check call also warms up. Returns {name: median seconds per run()};
    a library whose gradients differ is left out and named in `mismatches`.
    """
    check = check or runs
    ref = check[reference]()
    live = {reference: runs[reference]}
    for name, run in runs.items():
        if name == reference:
            continue
        if same_grads(check[name](), ref, rtol, atol_scale):
            live[name] = run
        elif mismatches is not None:
            mismatches.append(f"{label}: {name} gradients differ from {reference}")
    samples = {name: [] for name in live}
    for _ in range(repeats):
        for name, run in live.items():
            gc.collect()
            t0 = time.perf_counter()
            for _ in range(inner):
                run()
            samples[name].append((time.perf_counter() - t0) / inner)
    return {name: statistics.median(s) for name, s in samples.items()}
