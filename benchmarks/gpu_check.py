"""The GPU check, for a machine with an NVIDIA GPU and CuPy (``pip install ".[gpu]"``).

    python -m benchmarks.gpu_check            # both parts
    python -m benchmarks.gpu_check --ops      # only the op table

1. Every differentiable sample of the op table (tests/op_samples.py) runs on
   "cuda" in float32 and on the CPU in float64; values and gradients must agree
   within float32 tolerances (rtol 2e-3, atol 2e-4, relative to the scale).
2. W4 (the MLP of the benchmarks) on "cuda" against a hand-written CuPy
   forward and backward of the same network (target: at most 1.2x).

It prints one table; exit status 1 when a sample disagrees or raises.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))           # tests.op_samples


def _leaf(ad, value, device, dtype, requires_grad):
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return ad.tensor(value.astype(np.float64), dtype=dtype, device=device, requires_grad=requires_grad)
        return ad.tensor(value, device=device)
    return value


def _run(ad, sample, device, dtype):
    inputs = [_leaf(ad, a, device, dtype, True) for a in sample.args]
    out = sample.fn(ad, *inputs)
    if isinstance(out, tuple):
        out = out[0]
    seed = ad.ones(*out.shape, dtype=dtype, device=device)
    leaves = [t for t in inputs if isinstance(t, ad.Tensor) and t.requires_grad]
    grads = ad.grad(out, leaves, grad_outputs=seed, allow_unused=True) if leaves else []
    return out.numpy(), [None if g is None else g.numpy() for g in grads]


def check_ops(ad):
    from tests.op_samples import DIFF_SAMPLES
    rows, bad = [], 0
    for sample in DIFF_SAMPLES:
        try:
            cpu_out, cpu_grads = _run(ad, sample, "cpu", ad.float64)
            gpu_out, gpu_grads = _run(ad, sample, "cuda", ad.float32)
            worst = 0.0
            for a, b in [(cpu_out, gpu_out)] + list(zip(cpu_grads, gpu_grads)):
                if a is None or b is None:
                    if (a is None) != (b is None):
                        raise AssertionError("a gradient is missing on one device")
                    continue
                scale = max(1.0, float(np.nanmax(np.abs(a))) if a.size else 1.0)
                err = float(np.nanmax(np.abs(a - b))) / scale if a.size else 0.0
                worst = max(worst, err)
            ok = worst <= 2e-3
            rows.append((sample.id, f"{worst:.1e}", "ok" if ok else "MISMATCH"))
            bad += not ok
        except Exception as e:  # noqa: BLE001 - reported in the table
            rows.append((sample.id, "-", f"ERROR {type(e).__name__}: {str(e)[:60]}"))
            bad += 1
    return rows, bad


def check_mlp(ad, steps=50):
    import cupy as cp
    rng = np.random.default_rng(0)
    X = rng.standard_normal((256, 784)).astype(np.float32)
    Y = rng.integers(0, 10, 256)
    shapes = [(784, 512), (512, 512), (512, 10)]
    W0 = [(rng.standard_normal(s) * np.sqrt(2.0 / s[0])).astype(np.float32) for s in shapes]

    def autodsl_run():
        x = ad.tensor(X, device="cuda")
        y = ad.tensor(Y, dtype=ad.int64, device="cuda")
        ws = [ad.tensor(w, device="cuda", requires_grad=True) for w in W0]
        for _ in range(steps):
            h = ad.relu(x @ ws[0])
            h = ad.relu(h @ ws[1])
            loss = ad.cross_entropy(h @ ws[2], y)
            loss.backward()
            with ad.no_grad():
                for w in ws:
                    w -= 0.01 * w.grad
                    w.grad = None
        cp.cuda.Device().synchronize()

    def cupy_run():
        x, ws = cp.asarray(X), [cp.asarray(w) for w in W0]
        y = cp.asarray(Y)
        for _ in range(steps):
            a1 = x @ ws[0]; h1 = cp.maximum(a1, 0)
            a2 = h1 @ ws[1]; h2 = cp.maximum(a2, 0)
            z = h2 @ ws[2]
            z = z - z.max(axis=1, keepdims=True)
            p = cp.exp(z); p /= p.sum(axis=1, keepdims=True)
            p[cp.arange(256), y] -= 1; dz = p / 256
            g2 = h2.T @ dz; dh2 = (dz @ ws[2].T) * (a2 > 0)
            g1 = h1.T @ dh2; dh1 = (dh2 @ ws[1].T) * (a1 > 0)
            g0 = x.T @ dh1
            for w, g in zip(ws, (g0, g1, g2)):
                w -= 0.01 * g
        cp.cuda.Device().synchronize()

    times = {"autodsl": [], "cupy": []}
    for _ in range(3):                                  # interleaved, medians
        for name, fn in (("autodsl", autodsl_run), ("cupy", cupy_run)):
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    return med["autodsl"], med["cupy"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", action="store_true", help="only the op table")
    args = ap.parse_args(argv)
    import autodsl as ad
    try:
        ad.zeros(1, device="cuda")
    except ad.DSLError as e:
        print(f"no GPU here: {e.message}")
        return 2
    rows, bad = check_ops(ad)
    width = max(len(r[0]) for r in rows)
    print(f"{'sample':<{width}}  worst rel. err  result")
    for name, err, result in rows:
        print(f"{name:<{width}}  {err:>14}  {result}")
    print(f"{len(rows) - bad} agree, {bad} disagree (cuda float32 vs cpu float64)")
    if not args.ops:
        t_ad, t_cp = check_mlp(ad)
        ratio = t_ad / t_cp
        print(f"W4 on cuda, 50 steps: autodsl {t_ad:.3f} s, CuPy floor {t_cp:.3f} s, "
              f"{ratio:.2f}x (target <= 1.2: {'PASS' if ratio <= 1.2 else 'MISS'})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
