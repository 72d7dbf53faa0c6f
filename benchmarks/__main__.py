"""python -m benchmarks [--quick] [--only W1,W4] [--rounds N] [--check] [--write-results]

Runs W0-W6 of issue 4 and the compiled loops of issue 10 (W1C, W4C, W7), and prints a table of medians, paired ratios and targets.

Each timing ratio is the median of per-round ratios: in each round every
library runs once, interleaved (a, b, a, b, ...), and that round's ratio is
computed (timing.Rounds). --check exits 1 when a ratio misses its target.
"""

import argparse
import platform
import sys
import time
import traceback
from dataclasses import dataclass, field

from . import peers, report  # noqa: I001  (the package sets the thread variables first)

ALL = ("W0", "W1", "W1C", "W2", "W3", "W4", "W4C", "W5", "W6", "W7")

# rounds: paired rounds per ratio, by the size of one run (at least 5 in the full run).
# w1c: (links, calls) of W1 as a compiled step; w7_steps: SGD steps of W7.
FULL = dict(w1_sizes=(1_000, 10_000, 100_000), w2_sizes=(20, 200, 2_000),
            w3_size=10_000, w4_steps=50, w5_n=1_000_000, w6_n=10_000, w1c=(1_000, 100), w7_steps=500,
            rounds={"w0": 5, "small": 7, "mid": 5, "large": 5, "mlp": 5, "compiled": 5},
            nodes_per_sample=30_000)
QUICK = dict(w1_sizes=(1_000, 10_000), w2_sizes=(20, 200, 2_000),
             w3_size=1_000, w4_steps=5, w5_n=50_000, w6_n=1_000, w1c=(1_000, 100), w7_steps=500,
             rounds={"w0": 3, "small": 5, "mid": 5, "large": 3, "mlp": 5, "compiled": 3},
             nodes_per_sample=6_000)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


@dataclass
class Ctx:
    """One run of the runner: its settings, the loaded libraries and what it found."""
    cfg: dict
    args: argparse.Namespace
    mods: dict
    build: str
    rows: list = field(default_factory=list)
    mismatches: list = field(default_factory=list)
    skips: dict = field(default_factory=dict)     # {(workload, library): exception}
    w5_detail: dict | None = None

    @property
    def target(self):
        return report.targets(self.build)

    def rounds(self, kind):
        return self.args.repeats or self.cfg["rounds"][kind]

    def missing(self, wid, skipped, cells=None):
        """The table cells of the peers skipped for this workload (noted for the summary)."""
        from . import timing
        out = dict(cells or {})
        for lib, exc in skipped.items():
            if (wid, lib) not in self.skips:
                self.skips[wid, lib] = exc
                log(f"  {lib} skipped for {wid}: {timing.full_reason(exc)}")
            out[lib] = f"skipped: {timing.reason(exc)}"
        return out


def w0(ctx):
    from . import startup, timing
    res, skipped = startup.run(list(ctx.mods), ctx.rounds("w0"))
    missing = ctx.missing("W0", skipped)
    for i, unit in enumerate(("wall s", "peak MiB")):
        r = timing.Rounds({k: v[i] for k, v in res.items()})
        ctx.rows.append(report.Row("W0", "autodsl -c vs python -c", unit, r.medians(), "torch",
                                   ctx.target["W0"], missing=missing, ratios=r.ratios("torch"),
                                   rounds=len(r)))


def _graph_rows(wid, sizes, label, ctx):
    from . import graphs, timing
    totals = {}
    for size in sizes:
        n = graphs.nodes(wid, size)
        kind = "large" if n > 100_000 else "mid" if n > 10_000 else "small"
        inner = max(1, ctx.cfg["nodes_per_sample"] // n)
        log(f"  {wid} {label}={size:,} ({n:,} nodes, {inner} per sample)")
        skipped = {}
        runs = graphs.make_runs(wid, size, ctx.mods, skipped)
        # a large graph's gradients are checked on a tenth of it: the same code,
        # and a whole extra round of the slowest case saved
        check = graphs.make_runs(wid, size // 10, ctx.mods, skipped) if kind == "large" else None
        r = timing.check_and_time(runs, "autodsl", ctx.rounds(kind), inner=inner, check=check,
                                  mismatches=ctx.mismatches, label=f"{wid} {label}={size}",
                                  skipped=skipped)
        totals[size] = r.medians()
        unsupported = {lib: why for (lib, w), why in graphs.UNSUPPORTED.items() if w == wid}
        ctx.rows.append(report.Row(wid, f"{label}={size:,}", "µs/node",
                                   {k: v / n * 1e6 for k, v in totals[size].items()}, "torch",
                                   ctx.target[wid], missing=ctx.missing(wid, skipped, unsupported),
                                   ratios=r.ratios("torch"), rounds=len(r)))
    return totals


def w1(ctx):
    _graph_rows("W1", ctx.cfg["w1_sizes"], "N", ctx)


def w2(ctx):
    sizes = ctx.cfg["w2_sizes"]
    totals = _graph_rows("W2", sizes, "D", ctx)
    hi, lo = sizes[-1], sizes[-2]
    ratio = {k: totals[hi][k] / totals[lo][k] for k in totals[hi] if k in totals[lo]}
    ctx.rows.append(report.Row("W2", f"t(D={hi:,}) / t(D={lo:,})", "ratio", ratio, None,
                               hi / lo * ctx.target["W2 slack"], missing={"micrograd": "—"}))


def w3(ctx):
    _graph_rows("W3", (ctx.cfg["w3_size"],), "K", ctx)


def w4(ctx):
    import numpy as np
    from . import mlp, timing
    steps = ctx.cfg["w4_steps"]
    for dtype in (np.float64, np.float32):
        log(f"  W4 {dtype.__name__}, {steps} steps")
        f32 = dtype == np.float32
        skipped = {}
        runs = mlp.make_runs(dtype, steps, ctx.mods, skipped=skipped)
        check = mlp.make_runs(dtype, 1, ctx.mods, skipped=skipped)
        r = timing.check_and_time(runs, "numpy", ctx.rounds("mlp"), check=check,
                                  rtol=1e-3 if f32 else 1e-7, atol_scale=1e-5 if f32 else 1e-9,
                                  mismatches=ctx.mismatches, label=f"W4 {dtype.__name__}",
                                  skipped=skipped)
        med = r.medians()
        floor = med.pop("numpy")
        missing = ctx.missing("W4", skipped, {"micrograd": mlp.UNSUPPORTED["micrograd"]})
        ctx.rows.append(report.Row("W4", f"MLP {dtype.__name__}", f"s/{steps} steps", med,
                                   "numpy floor", ctx.target["W4"], extra={"numpy floor": floor},
                                   missing=missing, ratios=r.ratios("numpy"), rounds=len(r)))
        _w4_alone(ctx, dtype.__name__, steps)


def _w4_alone(ctx, name, steps):
    """W4's floor and autodsl each in a process of its own (benchmarks/mlp_alone.py):
    informational rows, no target (the heap a user's own script runs in)."""
    from . import mlp_alone
    log(f"  W4 {name}, one process per library")
    r, faults = mlp_alone.rounds(name, steps, ctx.rounds("mlp"))
    med = r.medians()
    ctx.rows.append(report.Row("W4", f"MLP {name}, one process per library", f"s/{steps} steps",
                               {"autodsl": med["autodsl"]}, "numpy floor", None,
                               extra={"numpy floor": med["numpy"]},
                               ratios={"autodsl": r.ratio("autodsl", "numpy")}, rounds=len(r)))
    ctx.rows.append(report.Row("W4", f"MLP {name}, one process per library", "page faults/step",
                               {"autodsl": faults["autodsl"]}, "numpy floor", None,
                               extra={"numpy floor": faults["numpy"]}))


def w5(ctx):
    """Memory, one process per library and one measurement each (RSS is
    close to deterministic, and a 1,000,000-node chain per round would not fit
    the run's time): these ratios are not paired rounds."""
    import numpy as np
    from . import memory, timing
    n = ctx.cfg["w5_n"]
    res, skipped = {}, {}
    for lib in memory.SUPPORTED:
        if lib in ctx.mods:
            log(f"  W5 {lib}, N={n:,}")
            try:
                res[lib] = memory.measure(lib, n)
            except Exception as exc:
                if lib in peers.OWN:
                    raise
                if isinstance(exc, timing.ChildFailed):
                    log(exc.stderr_tail)
                skipped[lib] = exc
    for lib, r in res.items():
        if lib != "autodsl" and not timing.same_grads(r["grad"], res["autodsl"]["grad"], 1e-7, 1e-9):
            ctx.mismatches.append(f"W5: {lib} gradients differ from autodsl")
    missing = ctx.missing("W5", skipped, {"micrograd": memory.UNSUPPORTED["micrograd"]})
    case = f"chain N={n:,}"

    def row(case, unit, values, baseline, target):
        ctx.rows.append(report.Row("W5", case, unit, values, baseline, target, missing=missing))

    row(case, "bytes/node (peak)", {k: (r["peak"] - r["before"]) / n for k, r in res.items()},
        "torch", ctx.target["W5 peak"])
    row(case, "RSS after bwd / before fwd",
        {k: r["after_backward"] / r["before"] for k, r in res.items()}, None, ctx.target["W5 rss"])
    row(case + " (malloc_trim)", "RSS after bwd / before fwd",
        {k: r["after_backward_trim"] / r["before"] for k, r in res.items()}, None, None)
    row(case + " (output dropped)", "RSS / before fwd",
        {k: r["after_del"] / r["before"] for k, r in res.items()}, None, None)
    mib = {k: {f: (v / 2**20 if isinstance(v, (int, float)) else v) for f, v in r.items() if f != "grad"}
           for k, r in res.items()}
    log("  W5 RSS in MiB: " + "; ".join(
        f"{k}: " + ", ".join(f"{f} {np.round(v, 1) if v is not None else '-'}" for f, v in d.items())
        for k, d in mib.items()))
    ctx.w5_detail = mib


def w6(ctx):
    import numpy as np
    from . import language, timing
    ad = ctx.mods["autodsl"]
    n = ctx.cfg["w6_n"]
    log(f"  W6 W1 N={n:,}")
    r = timing.check_and_time(language.w1_runs(ad, n), "api", ctx.rounds("mid"),
                              inner=max(1, ctx.cfg["nodes_per_sample"] // (3 * n)),
                              mismatches=ctx.mismatches, label="W6 W1")
    ctx.rows.append(report.Row("W6", f"W1 N={n:,} script", "s", {"autodsl": r.median("script")},
                               "Python API", ctx.target["W6"], extra={"Python API": r.median("api")},
                               ratios={"autodsl": r.ratio("script", "api")}, rounds=len(r)))
    ctx.rows.append(report.Row("W6", f"W1 N={n:,} script, parsed each run", "s",
                               {"autodsl": r.median("script parsed each run")}, "Python API", None,
                               extra={"Python API": r.median("api")},
                               ratios={"autodsl": r.ratio("script parsed each run", "api")}, rounds=len(r)))
    steps = ctx.cfg["w4_steps"]
    for dtype in (np.float64, np.float32):
        log(f"  W6 W4 {dtype.__name__}, {steps} steps")
        f32 = dtype == np.float32
        r = timing.check_and_time(language.w4_runs(ad, dtype, steps), "api",
                                  ctx.rounds("mlp"), check=language.w4_runs(ad, dtype, 1),
                                  rtol=1e-4 if f32 else 1e-9, atol_scale=1e-6 if f32 else 1e-12,
                                  mismatches=ctx.mismatches, label=f"W6 W4 {dtype.__name__}")
        ctx.rows.append(report.Row("W6", f"W4 {dtype.__name__} script", f"s/{steps} steps",
                                   {"autodsl": r.median("script")}, "Python API", ctx.target["W6"],
                                   extra={"Python API": r.median("api")},
                                   ratios={"autodsl": r.ratio("script", "api")}, rounds=len(r)))


def _bit_check(ctx, wid, runs, name="autodsl compiled", ref="autodsl"):
    """The compiled run's state bit for bit equal to eager autodsl's; a mismatch is reported
    as the runner reports mismatches (an ERROR line, exit status 1)."""
    from . import timing
    why = timing.identical(runs[name](), runs[ref]())
    if why is not None:
        ctx.mismatches.append(f"{wid}: {name} is not bit-identical to autodsl eager ({why})")
    else:
        log(f"  {wid}: {name} bit-identical to autodsl eager")


def _own_failure(skipped, names):
    """A run of autodsl's own that raised is an error, not a skip."""
    for name in names:
        if name in skipped:
            raise skipped.pop(name)


def _replays_only(samples, first, calls):
    """Per round: the compiled loop's time without its first (capturing) call, scaled to
    `calls` calls."""
    return [(total - f) * calls / (calls - 1) for total, f in zip(samples, first[-len(samples):])]


def w1c(ctx):
    from . import compiled, timing
    n, calls = ctx.cfg["w1c"]
    log(f"  W1C N={n:,}, {calls} calls of the compiled step")
    _bit_check(ctx, "W1C", {"autodsl compiled": compiled.w1c_runs(ctx.mods, n, 3)["autodsl"],
                            "autodsl": compiled.w1c_runs(ctx.mods, n, 3, compiled=False)["autodsl"]})
    first, skipped = compiled.FirstCall(), {}
    runs = compiled.w1c_runs(ctx.mods, n, calls, first=first)
    r = timing.check_and_time(runs, "autodsl", ctx.rounds("compiled"), check=compiled.w1c_runs(ctx.mods, n, 3),
                              mismatches=ctx.mismatches, label=f"W1C N={n}", skipped=skipped)
    missing = ctx.missing("W1C", skipped)
    unit = f"s/{calls} calls"
    ctx.rows.append(report.Row("W1C", f"step N={n:,} compiled, {calls} calls", unit, r.medians(), "torch",
                               ctx.target["W1C"], missing=missing, ratios=r.ratios("torch"), rounds=len(r)))
    replays = timing.Rounds({"autodsl": _replays_only(r.samples["autodsl"], first.seconds, calls),
                             **{k: v for k, v in r.samples.items() if k != "autodsl"}})
    ctx.rows.append(report.Row("W1C", "the same, replays only (first call excluded)", unit, replays.medians(),
                               "torch", None, missing=missing, ratios=replays.ratios("torch"),
                               rounds=len(replays)))
    log(f"  W1C first call (capture) {1e3 * min(first.seconds):.0f} ms, "
        f"a replayed call {1e3 * replays.median('autodsl') / calls:.2f} ms")


def w4c(ctx):
    import numpy as np
    from . import compiled, timing
    ad = ctx.mods["autodsl"]
    steps = ctx.cfg["w4_steps"]
    for dtype in (np.float64, np.float32):
        name = dtype.__name__
        log(f"  W4C {name}, {steps} steps, the step compiled")
        f32 = dtype == np.float32
        _bit_check(ctx, f"W4C {name}", compiled.w4c_runs(ad, dtype, 3, state=True))
        first = compiled.FirstCall()
        r = timing.check_and_time(compiled.w4c_runs(ad, dtype, steps, first=first), "numpy", ctx.rounds("mlp"),
                                  check=compiled.w4c_runs(ad, dtype, 2),
                                  rtol=1e-3 if f32 else 1e-7, atol_scale=1e-5 if f32 else 1e-9,
                                  mismatches=ctx.mismatches, label=f"W4C {name}")
        med = r.medians()
        floor, eager, comp = med["numpy"], med["autodsl"], med["autodsl compiled"]
        unit = f"s/{steps} steps"
        ctx.rows.append(report.Row("W4C", f"MLP {name} compiled", unit, {"autodsl": comp}, "numpy floor",
                                   ctx.target["W4C"], extra={"numpy floor": floor},
                                   ratios={"autodsl": r.ratio("autodsl compiled", "numpy")}, rounds=len(r)))
        ctx.rows.append(report.Row("W4C", f"MLP {name} compiled vs eager", unit, {"autodsl": comp},
                                   "autodsl eager", ctx.target["W4C eager"], extra={"autodsl eager": eager},
                                   ratios={"autodsl": r.ratio("autodsl compiled", "autodsl")}, rounds=len(r)))
        log(f"  W4C {name}: eager {r.ratio('autodsl', 'numpy'):.3f}x the floor, first call (capture) "
            f"{1e3 * min(first.seconds):.0f} ms")


def w7(ctx):
    from . import compiled, timing
    steps = ctx.cfg["w7_steps"]
    log(f"  W7 2-16-1 tanh MLP, {compiled.W7_POINTS} points, {steps} steps")
    skipped = {}
    _bit_check(ctx, "W7", compiled.w7_runs({"autodsl": ctx.mods["autodsl"]}, steps))
    first = compiled.FirstCall()
    runs = compiled.w7_runs(ctx.mods, steps, skipped, first=first)
    r = timing.check_and_time(runs, "autodsl", ctx.rounds("compiled"), mismatches=ctx.mismatches,
                              label="W7", skipped=skipped)
    _own_failure(skipped, ("autodsl compiled",))
    missing = ctx.missing("W7", skipped)
    med = r.medians()
    case, unit = f"2-16-1 tanh MLP, {steps} steps", f"s/{steps} steps"

    def row(what, samples, target):
        rr = timing.Rounds({"autodsl": samples, **({"torch": r.samples["torch"]} if "torch" in r else {})})
        ctx.rows.append(report.Row("W7", f"{case}, {what}", unit, rr.medians(), "torch", target,
                                   missing=missing, ratios=rr.ratios("torch"), rounds=len(rr)))

    row("compiled", r.samples["autodsl compiled"], ctx.target["W7"])
    row("compiled, replays only", _replays_only(r.samples["autodsl compiled"], first.seconds, steps), None)
    row("eager", r.samples["autodsl"], None)
    log(f"  W7 compiled {r.ratio('autodsl compiled', 'autodsl'):.3f}x eager autodsl; first call (capture) "
        f"{1e3 * min(first.seconds):.1f} ms, eager step {1e3 * med['autodsl'] / steps:.3f} ms")


WORKLOADS = {"W0": w0, "W1": w1, "W1C": w1c, "W2": w2, "W3": w3, "W4": w4, "W4C": w4c, "W5": w5,
             "W6": w6, "W7": w7}


def versions(mods):
    import numpy
    out = [f"Python {platform.python_version()}", f"NumPy {numpy.__version__}",
           f"autodsl {peers.version('autodsl')}"]
    for name in peers.PEERS:
        out.append(f"{name} {peers.version(name)}" if name in mods else f"{name}: skipped")
    return ", ".join(out)


def rounds_text(rows, quick):
    counts = sorted({row.rounds for row in rows if row.rounds})
    run = "quick" if quick else "full"
    if not counts:
        return f"Ratios: no timed rows ({run} run)."
    span = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return (f"Ratios: median of the per-round ratios of {span} paired rounds "
            f"(each library once per round, interleaved); W2's t(D=2,000) / t(D=200) and W5's memory "
            f"figures are not paired rounds ({run} run).")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[2])
    p.add_argument("--quick", action="store_true", help="small sizes, few rounds (about a minute)")
    p.add_argument("--only", default="", help="comma-separated workloads, e.g. W1,W4")
    p.add_argument("--rounds", "--repeats", dest="repeats", type=int, default=0,
                   help="paired rounds per ratio (overrides the defaults: 5-7, W0 3 in --quick)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 when a ratio misses its target (only the workloads run count)")
    p.add_argument("--write-results", metavar="FILE", nargs="?", const="benchmarks/RESULTS.md",
                   help="also write the table with date, machine and versions (default benchmarks/RESULTS.md)")
    args = p.parse_args(argv)
    only = [w.strip().upper() for w in args.only.split(",") if w.strip()] or list(ALL)
    bad = [w for w in only if w not in WORKLOADS]
    only = [w for w in ALL if w in only]
    if bad:
        p.error(f"unknown workload(s) {', '.join(bad)}; choose from {', '.join(ALL)}")
    if args.repeats < 0:
        p.error("--rounds must be positive")

    mods, skipped = peers.load()
    for name, why in skipped.items():
        log(f"{name}: skipped, {why}")
    ctx = Ctx(QUICK if args.quick else FULL, args, mods, peers.build_kind())
    build = peers.build_line()
    log(f"autodsl build: {build}")
    errors = []
    t_start = time.perf_counter()
    for wid in only:
        log(f"{wid} ...")
        t0 = time.perf_counter()
        try:
            WORKLOADS[wid](ctx)
        except Exception as exc:
            traceback.print_exc()
            errors.append(f"{wid}: {type(exc).__name__}: {exc}")
        log(f"{wid} done in {time.perf_counter() - t0:.1f} s")
    total = time.perf_counter() - t_start

    from . import timing
    targets = report.target_lines(ctx.build)
    ratios = rounds_text(ctx.rows, args.quick)
    text = [report.table(ctx.rows, skipped), ""]
    if skipped:
        text.append("Skipped: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
    if ctx.skips:
        text.append("Skipped for a workload: " + "; ".join(
            f"{lib} on {wid} ({timing.full_reason(exc)})" for (wid, lib), exc in ctx.skips.items()))
    lines, code = report.summary(ctx.rows, ctx.mismatches, errors, check=args.check)
    text += lines
    # the total time goes before the check's verdict, which stays the last line
    text.insert(len(text) - 1 if args.check else len(text),
                f"Total time {total:.0f} s ({'quick' if args.quick else 'full'} run).")
    head = [f"autodsl build: {build}", ratios, "Targets:", *(f"- {t}" for t in targets), ""]
    print("\n".join(head + text))
    if args.check and any(row.rounds and row.rounds < timing.MIN_ROUNDS for row in ctx.rows):
        log(f"note: some ratios come from fewer than {timing.MIN_ROUNDS} paired rounds")
    if args.write_results:
        from . import results
        results.write(args.write_results, "\n".join(text), versions(mods),
                      " ".join(["python -m benchmarks", *(argv if argv is not None else sys.argv[1:])]),
                      ctx.w5_detail, build=build, ratios=ratios, targets=targets)
    return code


if __name__ == "__main__":
    sys.exit(main())
