"""python -m benchmarks [--quick] [--only W1,W4] [--repeats N] [--write-results]

Runs W0-W6 of issue 4 and prints a table of medians, ratios and targets.
"""

import argparse
import platform
import sys
import time
import traceback

from . import peers, report  # noqa: I001  (the package sets the thread variables first)

ALL = ("W0", "W1", "W2", "W3", "W4", "W5", "W6")

FULL = dict(w0_repeats=5, w1_sizes=(1_000, 10_000, 100_000), w2_sizes=(20, 200, 2_000),
            w3_size=10_000, w4_steps=50, w5_n=1_000_000, w6_n=10_000,
            repeats={"small": 7, "mid": 5, "large": 3, "mlp": 3}, nodes_per_sample=30_000)
QUICK = dict(w0_repeats=2, w1_sizes=(1_000, 10_000), w2_sizes=(20, 200, 2_000),
             w3_size=1_000, w4_steps=5, w5_n=50_000, w6_n=1_000,
             repeats={"small": 3, "mid": 3, "large": 2, "mlp": 2}, nodes_per_sample=6_000)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def _reps(cfg, args, kind):
    return args.repeats or cfg["repeats"][kind]


def w0(cfg, args, mods, rows, mismatches):
    from . import startup
    res = startup.run(list(mods), args.repeats or cfg["w0_repeats"])
    rows.append(report.Row("W0", "autodsl -c vs python -c", "wall s",
                           {k: v[0] for k, v in res.items()}, "torch", 0.3))
    rows.append(report.Row("W0", "autodsl -c vs python -c", "peak MiB",
                           {k: v[1] for k, v in res.items()}, "torch", 0.3))


def _graph_rows(wid, sizes, label, cfg, args, mods, rows, mismatches):
    from . import graphs, timing
    totals = {}
    for size in sizes:
        n = graphs.nodes(wid, size)
        kind = "large" if n > 100_000 else "mid" if n > 10_000 else "small"
        inner = max(1, cfg["nodes_per_sample"] // n)
        log(f"  {wid} {label}={size:,} ({n:,} nodes, {inner} per sample)")
        med = timing.check_and_time(graphs.make_runs(wid, size, mods), "autodsl",
                                    _reps(cfg, args, kind), inner=inner,
                                    mismatches=mismatches, label=f"{wid} {label}={size}")
        totals[size] = med
        missing = {lib: why for (lib, w), why in graphs.UNSUPPORTED.items() if w == wid}
        rows.append(report.Row(wid, f"{label}={size:,}", "µs/node",
                               {k: v / n * 1e6 for k, v in med.items()}, "torch", 0.8,
                               missing=missing))
    return totals


def w1(cfg, args, mods, rows, mismatches):
    _graph_rows("W1", cfg["w1_sizes"], "N", cfg, args, mods, rows, mismatches)


def w2(cfg, args, mods, rows, mismatches):
    sizes = cfg["w2_sizes"]
    totals = _graph_rows("W2", sizes, "D", cfg, args, mods, rows, mismatches)
    hi, lo = sizes[-1], sizes[-2]
    ratio = {k: totals[hi][k] / totals[lo][k] for k in totals[hi] if k in totals[lo]}
    rows.append(report.Row("W2", f"t(D={hi:,}) / t(D={lo:,})", "ratio", ratio, None,
                           hi / lo * 1.1, missing={"micrograd": "—"}))


def w3(cfg, args, mods, rows, mismatches):
    _graph_rows("W3", (cfg["w3_size"],), "K", cfg, args, mods, rows, mismatches)


def w4(cfg, args, mods, rows, mismatches):
    import numpy as np
    from . import mlp, timing
    steps = cfg["w4_steps"]
    for dtype in (np.float64, np.float32):
        log(f"  W4 {dtype.__name__}, {steps} steps")
        f32 = dtype == np.float32
        med = timing.check_and_time(mlp.make_runs(dtype, steps, mods), "numpy",
                                    _reps(cfg, args, "mlp"), check=mlp.make_runs(dtype, 1, mods),
                                    rtol=1e-3 if f32 else 1e-7, atol_scale=1e-5 if f32 else 1e-9,
                                    mismatches=mismatches, label=f"W4 {dtype.__name__}")
        floor = med.pop("numpy")
        rows.append(report.Row("W4", f"MLP {dtype.__name__}", f"s/{steps} steps", med,
                               "numpy floor", 1.05, extra={"numpy floor": floor},
                               missing={"micrograd": mlp.UNSUPPORTED["micrograd"]}))


def w5(cfg, args, mods, rows, mismatches):
    import numpy as np
    from . import memory, timing
    n = cfg["w5_n"]
    res = {}
    for lib in memory.SUPPORTED:
        if lib in mods:
            log(f"  W5 {lib}, N={n:,}")
            res[lib] = memory.measure(lib, n)
    for lib, r in res.items():
        if lib != "autodsl" and not timing.same_grads(r["grad"], res["autodsl"]["grad"], 1e-7, 1e-9):
            mismatches.append(f"W5: {lib} gradients differ from autodsl")
    missing = {"micrograd": memory.UNSUPPORTED["micrograd"]}
    case = f"chain N={n:,}"
    rows.append(report.Row("W5", case, "bytes/node (peak)",
                           {k: (r["peak"] - r["before"]) / n for k, r in res.items()},
                           "torch", 1.0, missing=missing))
    rows.append(report.Row("W5", case, "RSS after bwd / before fwd",
                           {k: r["after_backward"] / r["before"] for k, r in res.items()},
                           None, 1.10, missing=missing))
    rows.append(report.Row("W5", case + " (malloc_trim)", "RSS after bwd / before fwd",
                           {k: r["after_backward_trim"] / r["before"] for k, r in res.items()},
                           None, None, missing=missing))
    rows.append(report.Row("W5", case + " (output dropped)", "RSS / before fwd",
                           {k: r["after_del"] / r["before"] for k, r in res.items()},
                           None, None, missing=missing))
    mib = {k: {f: (v / 2**20 if isinstance(v, (int, float)) else v) for f, v in r.items() if f != "grad"}
           for k, r in res.items()}
    log("  W5 RSS in MiB: " + "; ".join(
        f"{k}: " + ", ".join(f"{f} {np.round(v, 1) if v is not None else '-'}" for f, v in d.items())
        for k, d in mib.items()))
    args.w5_detail = mib


def w6(cfg, args, mods, rows, mismatches):
    import numpy as np
    from . import language, timing
    ad = mods["autodsl"]
    n = cfg["w6_n"]
    log(f"  W6 W1 N={n:,}")
    med = timing.check_and_time(language.w1_runs(ad, n), "api", _reps(cfg, args, "mid"),
                                inner=max(1, cfg["nodes_per_sample"] // (3 * n)),
                                mismatches=mismatches, label="W6 W1")
    rows.append(report.Row("W6", f"W1 N={n:,} script", "s", {"autodsl": med["script"]},
                           "Python API", 1.3, extra={"Python API": med["api"]}))
    steps = cfg["w4_steps"]
    for dtype in (np.float64, np.float32):
        log(f"  W6 W4 {dtype.__name__}, {steps} steps")
        f32 = dtype == np.float32
        med = timing.check_and_time(language.w4_runs(ad, dtype, steps), "api",
                                    _reps(cfg, args, "mlp"), check=language.w4_runs(ad, dtype, 1),
                                    rtol=1e-4 if f32 else 1e-9, atol_scale=1e-6 if f32 else 1e-12,
                                    mismatches=mismatches, label=f"W6 W4 {dtype.__name__}")
        rows.append(report.Row("W6", f"W4 {dtype.__name__} script", f"s/{steps} steps",
                               {"autodsl": med["script"]}, "Python API", 1.05,
                               extra={"Python API": med["api"]}))


WORKLOADS = {"W0": w0, "W1": w1, "W2": w2, "W3": w3, "W4": w4, "W5": w5, "W6": w6}


def versions(mods):
    import numpy
    out = [f"Python {platform.python_version()}", f"NumPy {numpy.__version__}",
           f"autodsl {peers.version('autodsl')}"]
    for name in peers.PEERS:
        out.append(f"{name} {peers.version(name)}" if name in mods else f"{name}: skipped")
    return ", ".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[2])
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats (about a minute)")
    p.add_argument("--only", default="", help="comma-separated workloads, e.g. W1,W4")
    p.add_argument("--repeats", type=int, default=0, help="timed repeats per library (overrides the defaults)")
    p.add_argument("--write-results", metavar="FILE", nargs="?", const="benchmarks/RESULTS.md",
                   help="also write the table with date, machine and versions (default benchmarks/RESULTS.md)")
    args = p.parse_args(argv)
    only = [w.strip().upper() for w in args.only.split(",") if w.strip()] or list(ALL)
    bad = [w for w in only if w not in WORKLOADS]
    only = [w for w in ALL if w in only]
    if bad:
        p.error(f"unknown workload(s) {', '.join(bad)}; choose from {', '.join(ALL)}")
    cfg = QUICK if args.quick else FULL

    mods, skipped = peers.load()
    for name, why in skipped.items():
        log(f"{name}: skipped, {why}")
    rows, mismatches, errors = [], [], []
    t_start = time.perf_counter()
    for wid in only:
        log(f"{wid} ...")
        t0 = time.perf_counter()
        try:
            WORKLOADS[wid](cfg, args, mods, rows, mismatches)
        except Exception as exc:
            traceback.print_exc()
            errors.append(f"{wid}: {type(exc).__name__}: {exc}")
        log(f"{wid} done in {time.perf_counter() - t0:.1f} s")
    total = time.perf_counter() - t_start

    text = [report.table(rows, skipped), ""]
    if skipped:
        text.append("Skipped: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
    miss = report.misses(rows)
    text.append("Missed targets:" if miss else "All targets met.")
    text += [f"- {m}" for m in miss]
    for problem in mismatches + errors:
        text.append(f"ERROR {problem}")
    text.append(f"Total time {total:.0f} s ({'quick' if args.quick else 'full'} run).")
    print("\n".join(text))
    if args.write_results:
        from . import results
        results.write(args.write_results, "\n".join(text), versions(mods),
                      " ".join(["python -m benchmarks", *(argv if argv is not None else sys.argv[1:])]),
                      getattr(args, "w5_detail", None))
    return 1 if mismatches or errors else 0


if __name__ == "__main__":
    sys.exit(main())
