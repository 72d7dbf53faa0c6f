"""Long expressions: parse and run time and peak memory of one `1+1+...+1` (and `x+x+...+x`
with a backward) of N terms, for N = 20,000, 40,000 and 100,000 by default.

Before source positions were offsets into one source text, every `+` kept its own copy of
the text before it: 100,000 terms took 5.9 GB and ended in "out of memory" (issue 12,
break 4). Now both columns grow linearly with N; this prints the numbers that show it (a
benchmark, not a test: tests/test_issue12_positions.py bounds the memory of 100,000 terms).

    python -m benchmarks.long_expressions [N ...]

Each N runs in a fresh process, so that its peak memory (ru_maxrss) is its own.
"""
from __future__ import annotations

import subprocess
import sys

_CHILD = """
import resource, sys, time
import autodsl
n, kind = int(sys.argv[1]), sys.argv[2]
if kind == "numbers":
    src = "y = " + "+".join(["1"] * n) + "\\ny"
else:
    src = "x = tensor(1.0, requires_grad=true)\\ny = " + "+".join(["x"] * n) + "\\ny.backward()\\nx.grad.item()"
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
s = autodsl.Session(echo=False)
t0 = time.perf_counter()
program = s.parse(src)
t1 = time.perf_counter()
value = s.run(program)
t2 = time.perf_counter()
extra = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
assert float(value) == n, value
print(f"{t1 - t0:.2f} {t2 - t1:.2f} {extra:.0f}")
"""


def measure(n: int, kind: str) -> tuple[float, float, float]:
    """``(parse seconds, run seconds, peak MB above the imported package)`` of one N."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(n), kind], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def main(argv: list[str]) -> None:
    sizes = [int(a) for a in argv] or [20_000, 40_000, 100_000]
    print(f"{'terms':>8} {'kind':>8} {'parse s':>8} {'run s':>8} {'peak MB':>8}")
    for kind in ("numbers", "tensors"):
        for n in sizes:
            p, r, m = measure(n, kind)
            print(f"{n:>8} {kind:>8} {p:>8.2f} {r:>8.2f} {m:>8.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
