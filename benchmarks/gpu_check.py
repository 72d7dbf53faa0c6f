"""The GPU check, for a machine with an NVIDIA GPU and CuPy (``pip install ".[cuda12]"``, or
``.[cuda13]``; ``.[gpu]`` is cuda12).

    python -m benchmarks.gpu_check            # both parts
    python -m benchmarks.gpu_check --ops      # only the op table

1. Every differentiable sample of the op table (tests/op_samples.py) runs on
   "cuda" in float32 and on the CPU in float64; values and gradients must agree
   within float32 tolerances (rtol 2e-3, atol 2e-4, relative to the scale).
2. W4 (the MLP of the benchmarks, biases included) on "cuda" against a
   hand-written CuPy forward and backward of the same network with the same
   arithmetic (target: at most 1.2x), both timed after a warm-up run (CuPy
   compiles each kernel on its first use); their final parameters must agree.

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


def mlp_data(seed=0):
    """W4's data: 256 samples of 784 features, 10 classes, a 784-512-512-10 network (float32)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((256, 784)).astype(np.float32)
    Y = rng.integers(0, 10, 256)
    shapes = [(784, 512), (512, 512), (512, 10)]
    W0 = [(rng.standard_normal(s) * np.sqrt(2.0 / s[0])).astype(np.float32) for s in shapes]
    B0 = [(rng.standard_normal(s[1]) * 0.01).astype(np.float32) for s in shapes]
    return X, Y, W0, B0


def autodsl_mlp(ad, xp, data, steps):
    """``steps`` SGD steps of W4 in autodsl on "cuda"; the final weights and biases (CuPy arrays)."""
    X, Y, W0, B0 = data
    x = ad.tensor(X, device="cuda")
    y = ad.tensor(Y, dtype=ad.int64, device="cuda")
    ws = [ad.tensor(w, device="cuda", requires_grad=True) for w in W0]
    bs = [ad.tensor(b, device="cuda", requires_grad=True) for b in B0]
    for _ in range(steps):
        h = ad.relu(x @ ws[0] + bs[0])
        h = ad.relu(h @ ws[1] + bs[1])
        loss = ad.cross_entropy(h @ ws[2] + bs[2], y)
        loss.backward()
        with ad.no_grad():
            for p in ws + bs:
                p -= 0.01 * p.grad
                p.grad = None
    xp.cuda.Device().synchronize()
    return [p._data for p in ws + bs]


def cupy_mlp(cp, data, steps):
    """The same steps by hand in CuPy, with autodsl's arithmetic: the biases, relu's gradient as
    a select (autodsl's threshold_backward, where(a > 0, g, 0), not a multiplication by the
    mask), cross-entropy's through log_softmax (g - softmax * sum(g), the target's -1/N)."""
    X, Y, W0, B0 = data
    x, y = cp.asarray(X), cp.asarray(Y)
    ws = [cp.array(w) for w in W0]          # (copies: the updates write into them)
    bs = [cp.array(b) for b in B0]
    n = x.shape[0]
    rows = cp.arange(n)
    zero = cp.zeros((), dtype=cp.float32)
    for _ in range(steps):
        a1 = x @ ws[0] + bs[0]
        h1 = cp.maximum(a1, 0)
        a2 = h1 @ ws[1] + bs[1]
        h2 = cp.maximum(a2, 0)
        z = h2 @ ws[2] + bs[2]
        m = z.max(axis=1, keepdims=True)
        logp = (z - m) - cp.log(cp.exp(z - m).sum(axis=1, keepdims=True))
        g = cp.zeros_like(z)
        g[rows, y] = -1.0 / n
        dz = g - cp.exp(logp) * g.sum(axis=1, keepdims=True)
        dh2 = cp.where(a2 > 0, dz @ ws[2].T, zero)
        dh1 = cp.where(a1 > 0, dh2 @ ws[1].T, zero)
        grads = (x.T @ dh1, h1.T @ dh2, h2.T @ dz, dh1.sum(axis=0), dh2.sum(axis=0), dz.sum(axis=0))
        for p, gp in zip(ws + bs, grads):
            p -= 0.01 * gp
    cp.cuda.Device().synchronize()
    return ws + bs


def check_mlp(ad, steps=50):
    """W4 on "cuda": autodsl's and CuPy's median times over 3 interleaved runs, after one warm-up
    run each (CuPy compiles its kernels on their first use), and the largest relative difference
    of their final parameters (the same arithmetic, float32)."""
    import cupy as cp
    data = mlp_data()
    autodsl_mlp(ad, cp, data, 2)            # warm-up: kernels compiled, memory pool filled
    cupy_mlp(cp, data, 2)
    times = {"autodsl": [], "cupy": []}
    for _ in range(3):                                  # interleaved, medians
        for name, fn in (("autodsl", lambda: autodsl_mlp(ad, cp, data, steps)),
                         ("cupy", lambda: cupy_mlp(cp, data, steps))):
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    ours, ref = autodsl_mlp(ad, cp, data, steps), cupy_mlp(cp, data, steps)
    worst = max(float(cp.max(cp.abs(a - b))) / max(1.0, float(cp.max(cp.abs(b)))) for a, b in zip(ours, ref))
    return med["autodsl"], med["cupy"], worst


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
        t_ad, t_cp, worst = check_mlp(ad)
        ratio = t_ad / t_cp
        print(f"W4 on cuda, 50 steps (after a warm-up): autodsl {t_ad:.3f} s, CuPy floor {t_cp:.3f} s, "
              f"{ratio:.2f}x (target <= 1.2: {'PASS' if ratio <= 1.2 else 'MISS'}); final parameters "
              f"differ by {worst:.1e} (relative)")
        bad += worst > 1e-3
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
