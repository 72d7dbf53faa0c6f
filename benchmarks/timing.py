"""Paired, interleaved timing with a gradient check first.

A workload is timed in rounds: in each round every library runs once, one
after the other (A, B, A, B, ...), so the libraries of one round see the same
machine. A ratio is computed per round and the reported ratio is the median
of those per-round ratios (Rounds.ratio); a library's own figure is the
median of its per-round seconds.
"""

import gc
import re
import statistics
import time

import numpy as np

MIN_ROUNDS = 5   # the full run's fewest paired rounds per ratio


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


def identical(got, ref):
    """None when every array of `got` equals the one of `ref` bit for bit (shape, dtype
    and every value, nan included), else a short text saying where they first differ."""
    got = got if isinstance(got, (list, tuple)) else [got]
    ref = ref if isinstance(ref, (list, tuple)) else [ref]
    if len(got) != len(ref):
        return f"{len(got)} arrays against {len(ref)}"
    for i, (g, r) in enumerate(zip(got, ref)):
        g, r = np.asarray(g), np.asarray(r)
        if g.shape != r.shape or g.dtype != r.dtype:
            return f"array {i}: {g.dtype}{list(g.shape)} against {r.dtype}{list(r.shape)}"
        if g.tobytes() != r.tobytes():
            bits = [np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, -1) for a in (g, r)]
            n = int(np.sum((bits[0] != bits[1]).any(axis=1)))
            diff = np.abs(g.astype(np.float64) - r.astype(np.float64))
            return f"array {i}: {n} of {g.size} values differ (max |diff| {np.nanmax(diff):.3g})"
    return None


class ChildFailed(RuntimeError):
    """A benchmark subprocess exited with an error; the message ends with the
    last line of its stderr (the exception), the whole tail is kept."""

    def __init__(self, what, stderr):
        lines = [ln for ln in (stderr or "").strip().splitlines() if ln.strip()]
        super().__init__(f"{what}: {lines[-1].strip() if lines else 'no output'}")
        self.stderr_tail = (stderr or "").strip()[-800:]


def full_reason(exc):
    """One line: the exception's type and message."""
    text = str(exc) if isinstance(exc, ChildFailed) else f"{type(exc).__name__}: {exc}"
    return (text.splitlines() or [type(exc).__name__])[0]


def reason(exc):
    """A short, readable reason for a table cell: "no scipy" for a missing module."""
    if isinstance(exc, ModuleNotFoundError) and getattr(exc, "name", None):
        return f"no {exc.name.split('.')[0]}"
    text = full_reason(exc)
    m = re.search(r"No module named '([\w.]+)'|import of ([\w.]+) halted", text)
    if m:
        return f"no {(m.group(1) or m.group(2)).split('.')[0]}"
    return text if len(text) <= 60 else text[:57] + "..."


class Rounds:
    """Seconds per run of each library, one entry per round; round i of every
    library ran back to back, so samples[a][i] / samples[b][i] is a paired ratio."""

    def __init__(self, samples):
        self.samples = {k: list(v) for k, v in samples.items()}

    def __contains__(self, name):
        return name in self.samples

    def __len__(self):
        return min((len(s) for s in self.samples.values()), default=0)

    def names(self):
        return list(self.samples)

    def median(self, name):
        return statistics.median(self.samples[name])

    def medians(self):
        return {name: self.median(name) for name in self.samples}

    def ratio(self, name, base):
        """Median over the rounds of samples[name] / samples[base]."""
        pairs = [a / b for a, b in zip(self.samples[name], self.samples[base]) if b]
        return statistics.median(pairs) if pairs else None

    def ratios(self, base):
        """{name: paired ratio to `base`} for every library but `base`."""
        if base not in self.samples:
            return {}
        return {name: self.ratio(name, base) for name in self.samples if name != base}

    def drop(self, name):
        self.samples.pop(name, None)


def check_and_time(runs, reference, repeats, inner=1, rtol=1e-7, atol_scale=1e-9,
                   mismatches=None, label="", check=None, skipped=None):
    """Time each run() in `repeats` paired rounds, after checking its gradients.

    runs: {name: run}; run() does the whole forward plus backward and returns
    the gradients. reference: the name whose gradients the others must equal.
    check: other runs ({name: run}, same names) to use for the check instead.
    The check call also warms up. A round runs every library once (each run()
    `inner` times, the sample being the mean), in the order of `runs`.
    Returns Rounds. A library whose gradients differ is left out and named in
    `mismatches`; one that raises (a peer missing an optional part, say) is
    left out with its exception in `skipped` ({name: exception}); the reference
    raising is an error for the workload and propagates.
    """
    check = check or runs
    ref = check[reference]()
    live = {reference: runs[reference]}
    for name, run in runs.items():
        if name == reference or name not in check:
            continue
        try:
            got = check[name]()
        except Exception as exc:
            _skip(skipped, name, exc)
            continue
        if same_grads(got, ref, rtol, atol_scale):
            live[name] = run
        elif mismatches is not None:
            mismatches.append(f"{label}: {name} gradients differ from {reference}")
    samples = {name: [] for name in live}
    for _ in range(repeats):
        for name, run in list(live.items()):
            gc.collect()
            try:
                t0 = time.perf_counter()
                for _ in range(inner):
                    run()
                samples[name].append((time.perf_counter() - t0) / inner)
            except Exception as exc:
                if name == reference:
                    raise
                _skip(skipped, name, exc)
                del live[name], samples[name]   # its rounds are no longer paired
    return Rounds(samples)


def _skip(skipped, name, exc):
    if skipped is None:
        raise exc
    skipped[name] = exc
