"""Linear regression past one process's memory, on the "dask" device (``pip install ".[dask]"``).

    python -m benchmarks.dask_regression                 # N = 200,000,000 float64 points
    python -m benchmarks.dask_regression --n 20000000    # smaller, while working

x and y (``y = 3x + 2 + noise``) are generated lazily, chunk by chunk, on the workers of a
2-worker LocalCluster (``da.random`` with a seed; never materialized whole: 1.6 GB each at full
size). autodsl computes ``loss = ((w*x + b - y)^2).mean()``, ``loss.backward()`` and one
``compute(loss, w, b)``: one forward, one backward, one computation of the loss and both
gradients. The same formulas in plain dask (the gradients written by hand) are the reference.

Checks (exit status 1 when one fails):

* peak memory of the whole process tree (this process, the scheduler in it and the worker
  processes, RSS sampled every 50 ms) below half the size of x and y together;
* the loss and both gradients equal to plain dask's on the full data (rtol 1e-12: the sums
  run in another order) and to NumPy's on the first million points;
* autodsl's time (graph building and computing) at most 2x plain dask's, best of ``--rounds``.

It prints a markdown section for benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import threading
import time

import numpy as np

GB = 1e9


class PeakRSS:
    """The peak resident memory of this process and all its descendants, sampled in a thread."""

    def __init__(self, every: float = 0.05):
        import psutil
        self.proc = psutil.Process(os.getpid())
        self.every = every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        import psutil
        total = 0
        for p in [self.proc, *self.proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        return total

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(self.every)

    def __enter__(self):
        self.peak = self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._sample())
        return False


W0, B0 = 0.5, 0.0          # the parameters the loss and gradients are taken at


def data(n: int, chunk: int, seed: int = 0):
    """x uniform in [0, 1) and y = 3x + 2 + 0.1 * noise, lazy dask arrays in chunks of ``chunk``."""
    import dask.array as da
    rng = da.random.default_rng(seed)
    x = rng.random(n, chunks=chunk)
    y = 3.0 * x + 2.0 + 0.1 * rng.standard_normal(n, chunks=chunk)
    return x, y


def plain_dask(x, y):
    """The loss and both gradients in dask itself (the derivative written by hand)."""
    import dask
    r = W0 * x + B0 - y
    return dask.compute((r * r).mean(), (2.0 * r * x).mean(), (2.0 * r).mean())


def with_autodsl(ad, x, y):
    """The loss and both gradients through autodsl: one forward, one backward, one compute."""
    xt, yt = ad.tensor(x), ad.tensor(y)
    w = ad.tensor(W0, device="dask", requires_grad=True)
    b = ad.tensor(B0, device="dask", requires_grad=True)
    loss = ((w * xt + b - yt) ** 2).mean()
    loss.backward()
    ad.compute(loss, w, b)
    return loss.item(), w.grad.item(), b.grad.item()


def numpy_reference(x, y):
    r = W0 * x + B0 - y
    return float(np.mean(r * r)), float(np.mean(2.0 * r * x)), float(np.mean(2.0 * r))


def _close(a, b, rtol) -> bool:
    return all(abs(p - q) <= rtol * max(abs(p), abs(q), 1e-300) for p, q in zip(a, b))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=200_000_000, help="points (default 200,000,000)")
    p.add_argument("--chunk", type=int, default=1 << 22, help="points per chunk (default 2**22: 32 MiB)")
    p.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    p.add_argument("--rounds", type=int, default=1, help="timed rounds of each (default 1)")
    args = p.parse_args(argv)

    import dask
    import distributed

    import autodsl as ad

    n, bytes_xy = args.n, 2 * 8 * args.n
    cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                       memory_limit="auto", dashboard_address=":0")
    client = distributed.Client(cluster)       # the default client: autodsl uses it as it is
    try:
        # warm-up: the workers import NumPy and autodsl's functions once, outside the timings
        xw, yw = data(10_000, 1_000)
        plain_dask(xw, yw)
        with_autodsl(ad, xw, yw)
        x, y = data(n, args.chunk)
        t_dask, t_ad = [], []
        peak_dask = peak_ad = 0
        for _ in range(args.rounds):
            with PeakRSS() as m:
                t = time.perf_counter()
                ref = plain_dask(x, y)
                t_dask.append(time.perf_counter() - t)
            peak_dask = max(peak_dask, m.peak)
            with PeakRSS() as m:
                t = time.perf_counter()
                got = with_autodsl(ad, x, y)
                t_ad.append(time.perf_counter() - t)
            peak_ad = max(peak_ad, m.peak)
        m_pts = min(n, 1_000_000)
        xs, ys = dask.compute(x[:m_pts], y[:m_pts])
        np_ref = numpy_reference(xs, ys)
        got_small = with_autodsl(ad, x[:m_pts], y[:m_pts])
        versions = f"dask {dask.__version__}, distributed {distributed.__version__}, NumPy {np.__version__}"
    finally:
        client.close()
        cluster.close()

    td, ta = min(t_dask), min(t_ad)
    rel_full = max(abs(p - q) / max(abs(q), 1e-300) for p, q in zip(got, ref))
    rel_small = max(abs(p - q) / max(abs(q), 1e-300) for p, q in zip(got_small, np_ref))
    checks = [
        ("peak memory of the process tree", f"{peak_ad / GB:.2f} GB", f"< {bytes_xy / 2 / GB:.2f} GB",
         peak_ad < bytes_xy / 2),
        ("loss and gradients vs plain dask (full data)", f"max rel. diff {rel_full:.1e}", "≤ 1e-12",
         _close(got, ref, 1e-12)),
        (f"loss and gradients vs NumPy (first {m_pts:,} points)", f"max rel. diff {rel_small:.1e}",
         "≤ 1e-12", _close(got_small, np_ref, 1e-12)),
        ("time vs plain dask", f"{ta:.1f} s vs {td:.1f} s ({ta / td:.2f}x)", "≤ 2x", ta <= 2 * td),
    ]
    ok = all(c[3] for c in checks)
    print(f"## Dask regression ({time.strftime('%Y-%m-%d')})\n")
    print(f"- Command: `python -m benchmarks.dask_regression{' ' + ' '.join(argv or sys.argv[1:]) if (argv or sys.argv[1:]) else ''}`")
    print(f"- N = {n:,} float64 points (x and y {8 * n / GB:.1f} GB each, generated lazily on the workers), "
          f"chunks of {args.chunk:,} points, a {args.workers}-worker LocalCluster (1 thread each); "
          f"{platform.machine()}, {os.cpu_count()} cores; {versions}")
    print(f"- loss {got[0]:.12g}, dloss/dw {got[1]:.12g}, dloss/db {got[2]:.12g} at w = {W0}, b = {B0}")
    print(f"- plain dask: {td:.2f} s, peak {peak_dask / GB:.2f} GB; autodsl: {ta:.2f} s, peak {peak_ad / GB:.2f} GB\n")
    print("| check | measured | target | result |")
    print("|---|---|---|---|")
    for name, value, target, good in checks:
        print(f"| {name} | {value} | {target} | {'PASS' if good else 'FAIL'} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
