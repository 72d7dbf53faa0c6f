"""A self-check of the runner's own logic, with fabricated rows and fake peers:
no timing, a few seconds. `python -m benchmarks.selfcheck` (exit status 1 on a
failure). Not part of the test suite: the runner is not part of the package.

It checks the paired ratios, PASS/MISS/n/a and the --check exit status (also
through main() with a fabricated workload), the skipping of a peer whose
setup or run raises (HIPS autograd without scipy, simulated with
sys.modules["scipy"] = None), build_kind() and the RESULTS.md markers; that
every workload is listed and configured; and, on tiny sizes with the real
autodsl (a second or so), that the compiled loops (W1C, W4C, W7) replay and are
bit-identical to eager autodsl, that a step which cannot replay is an error,
and that a bit mismatch fails the run.
"""

import contextlib
import importlib.machinery
import importlib.util
import io
import os
import sys
import tempfile
import types

import benchmarks  # noqa: F401  (thread variables, before NumPy)
import autodsl
import numpy as np

from . import __main__ as runner
from . import compiled, mlp, peers, report, results, timing

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def row(ratio, target=1.0, baseline="torch", **kw):
    values = {"autodsl": ratio * 2.0, baseline: 2.0} if baseline else {"autodsl": ratio}
    return report.Row("W1", f"fake {ratio}", "µs/node", values, baseline, target, **kw)


@check
def paired_ratio_is_median_of_rounds():
    r = timing.Rounds({"autodsl": [1.0, 2.0, 10.0], "torch": [1.0, 1.0, 20.0]})
    assert r.ratio("autodsl", "torch") == 1.0          # per round 1, 2, 0.5
    assert r.median("autodsl") / r.median("torch") == 2.0
    assert r.ratios("torch") == {"autodsl": 1.0} and len(r) == 3
    rw = report.Row("W1", "x", "µs/node", r.medians(), "torch", 1.0, ratios=r.ratios("torch"))
    assert rw.ratio() == 1.0 and rw.result() == "PASS"
    assert report.Row("W1", "x", "µs/node", r.medians(), "torch", 1.0).result() == "MISS"


@check
def summary_and_exit_status():
    passing, missing = row(0.5), row(1.5)
    blind = report.Row("W1", "no torch", "µs/node", {"autodsl": 1.0}, "torch", 1.0)
    own = row(1.05, 1.1, baseline=None)
    info = row(9.0, None)
    assert [r.result() for r in (passing, missing, blind, own, info)] == ["PASS", "MISS", "n/a", "PASS", ""]
    lines, code = report.summary([passing, own, info, blind], check=True)
    assert code == 0 and lines[-1].startswith("check: PASS"), lines
    assert any("Not checked" in ln for ln in lines)
    lines, code = report.summary([passing, missing], check=True)
    assert code == 1 and "fake 1.5" in "\n".join(lines) and lines[-1].startswith("check: FAIL")
    assert report.summary([passing, missing], check=False)[1] == 0      # a miss fails only --check
    assert report.summary([passing], errors=["W4: boom"], check=False)[1] == 1
    assert report.summary([passing], mismatches=["W1: x"], check=True)[1] == 1
    assert report.summary([], check=True) == (["No targets in this run.",
                                               "check: PASS, 0 of 0 targets met (exit status 0)"], 0)


@check
def targets_by_build():
    c, p = report.targets("compiled"), report.targets("pure-Python")
    assert (c["W1"], c["W2"], c["W3"], p["W1"], p["W2"], p["W3"]) == (0.8,) * 3 + (1.0,) * 3
    assert c["W4"] == p["W4"] == 1.05 and c["W5 peak"] == 0.5 and c["W6"] == 1.1
    assert "pure-Python, so 1x" in "\n".join(report.target_lines("pure-Python"))
    assert c["W7"] == p["W7"] == c["W1C"] == 0.3 and c["W4C"] == 1.05 and c["W4C eager"] == 1.0
    lines = "\n".join(report.target_lines("compiled"))
    assert "W1C, W7:" in lines and "W4C:" in lines


@check
def every_workload_listed_and_configured():
    assert set(runner.ALL) == set(runner.WORKLOADS) and len(runner.ALL) == len(set(runner.ALL))
    for cfg in (runner.FULL, runner.QUICK):
        assert {"w1c", "w7_steps", "w4_steps"} <= set(cfg) and "compiled" in cfg["rounds"], cfg
        assert cfg["w1c"][1] >= 2 and cfg["w7_steps"] >= 2     # a compiled loop replays after its capture
    assert runner.FULL["w1c"] == (1_000, 100) and runner.FULL["w7_steps"] == 500


@check
def identical_is_bit_for_bit():
    a = np.array([0.0, np.nan, 1.0])
    assert timing.identical([a, np.float64(2.0)], [a.copy(), np.float64(2.0)]) is None
    assert "1 of 3 values differ" in timing.identical([a], [np.array([-0.0, np.nan, 1.0])])  # -0.0 is not 0.0
    assert "differ" in timing.identical([a], [np.array([0.0, np.nan, np.nextafter(1.0, 2.0)])])
    assert "float32" in timing.identical([a.astype(np.float32)], [a])
    assert timing.identical([a], [a, a]) == "1 arrays against 2"


@check
def compiled_loops_replay_bit_identical():
    mods = {"autodsl": autodsl}
    runs = compiled.w7_runs(mods, 3)
    assert timing.identical(runs["autodsl compiled"](), runs["autodsl"]()) is None
    assert set(runs) == {"autodsl", "autodsl compiled"}
    got = compiled.w1c_runs(mods, 5, 3)["autodsl"]()
    assert timing.identical(got, compiled.w1c_runs(mods, 5, 3, compiled=False)["autodsl"]()) is None
    for dtype in (np.float64, np.float32):
        runs = compiled.w4c_runs(autodsl, dtype, 3, batch=4, state=True)
        assert timing.identical(runs["autodsl compiled"](), runs["autodsl"]()) is None
        runs = compiled.w4c_runs(autodsl, dtype, 2, batch=4)
        assert set(runs) == {"numpy", "autodsl", "autodsl compiled"}
        assert timing.same_grads(runs["autodsl compiled"](), runs["numpy"](), 1e-3, 1e-5)
    first = compiled.FirstCall()
    compiled.w7_runs(mods, 3, first=first)["autodsl compiled"]()
    assert len(first.seconds) == 1 and first.seconds[0] > 0


@check
def compiled_step_that_cannot_replay_is_an_error():
    f, done = compiled._compiled(autodsl, lambda x: (x + autodsl.randn(2)).detach(), 3)
    x = autodsl.tensor([1.0, 2.0])
    with contextlib.redirect_stderr(io.StringIO()):
        for _ in range(3):
            f(x)
    try:
        done()
    except compiled.NotReplayed as exc:
        assert "replayed 0 of 2" in str(exc), exc
    else:
        raise AssertionError("a compiled run that never replayed must raise")


@check
def bit_mismatch_fails_the_run():
    one, next_one = np.array([1.0]), np.array([np.nextafter(1.0, 2.0)])

    def w7(ctx):
        runner._bit_check(ctx, "W7", {"autodsl compiled": lambda: [next_one], "autodsl": lambda: [one]})
        ctx.rows.append(report.Row("W7", "fake", "s", {"autodsl": 0.1, "torch": 1.0}, "torch",
                                   ctx.target["W7"], ratios={"autodsl": 0.1}, rounds=5))

    saved = runner.WORKLOADS["W7"], peers.load
    peers.load = lambda: ({"autodsl": autodsl}, {"torch": "not installed (fake)"})
    runner.WORKLOADS["W7"] = w7
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = runner.main(["--only", "W7", "--check"])
    finally:
        runner.WORKLOADS["W7"], peers.load = saved
    text = out.getvalue()
    assert code == 1 and "ERROR W7: autodsl compiled is not bit-identical" in text, text
    assert "1 of 1 targets met" in text and "1 error(s)" in text, text


@check
def main_check_exit_status():
    """main() with a fabricated W1 whose ratio is chosen: --check gives 1 on a miss, 0 on a pass."""
    def fake(ratio):
        def w1(ctx):
            ctx.rows.append(report.Row("W1", "N=1", "µs/node", {"autodsl": ratio, "torch": 1.0},
                                       "torch", ctx.target["W1"], ratios={"autodsl": ratio}, rounds=5))
        return w1

    saved = runner.WORKLOADS["W1"], peers.load
    peers.load = lambda: ({"autodsl": autodsl}, {"torch": "not installed (fake)"})
    try:
        for ratio, flags, want in ((0.5, ["--check"], 0), (5.0, ["--check"], 1), (5.0, [], 0)):
            runner.WORKLOADS["W1"] = fake(ratio)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = runner.main(["--only", "W1", *flags])
            assert code == want, (ratio, flags, code, out.getvalue())
            text = out.getvalue()
            assert "autodsl build: " in text and "Targets:" in text
            if flags:
                assert text.rstrip().splitlines()[-1].startswith("check: " + ("FAIL" if want else "PASS"))
            if ratio > 1:
                assert "W1 N=1 (µs/node): 5.00x torch" in text, text
    finally:
        runner.WORKLOADS["W1"], peers.load = saved


@check
def peer_setup_raising_is_skipped():
    def bad(_mod, *_args):
        import scipy.special  # noqa: F401
    saved = sys.modules.get("scipy", False)
    sys.modules["scipy"] = None               # scipy unimportable, installed or not
    try:
        skipped = {}
        runs = peers.make_runs({"autodsl": lambda m: "run", "autograd": bad}, {"autodsl": 1, "autograd": 2},
                               (), skipped)
        assert runs == {"autodsl": "run"} and timing.reason(skipped["autograd"]) == "no scipy"
        # the real W4 maker of HIPS autograd (its logsumexp needs scipy); a stub
        # module stands in when autograd is not installed: "no autograd"
        stub = sys.modules.get("autograd") or types.ModuleType("autograd")
        skipped = {}
        runs = mlp.make_runs(np.float64, 1, {"autodsl": autodsl, "autograd": stub},
                             batch=4, skipped=skipped)
        assert set(runs) == {"numpy", "autodsl"}, runs
        has_autograd = importlib.util.find_spec("autograd") is not None
        assert timing.reason(skipped["autograd"]) == ("no scipy" if has_autograd else "no autograd"), skipped
        try:
            peers.make_runs({"autodsl": bad}, {"autodsl": 1}, (), {})
        except ImportError:
            pass
        else:
            raise AssertionError("autodsl's setup raising must not be a skip")
    finally:
        if saved is False:
            del sys.modules["scipy"]
        else:
            sys.modules["scipy"] = saved


@check
def peer_run_raising_is_skipped():
    calls = {"n": 0}

    def late():
        calls["n"] += 1
        if calls["n"] > 2:
            raise RuntimeError("gone")
        return 1.0

    def never():
        raise ModuleNotFoundError("No module named 'scipy'", name="scipy")

    skipped = {}
    r = timing.check_and_time({"autodsl": lambda: 1.0, "late": late, "never": never}, "autodsl", 4,
                              skipped=skipped)
    assert r.names() == ["autodsl"] and len(r) == 4 and set(skipped) == {"late", "never"}
    assert timing.reason(skipped["never"]) == "no scipy"
    assert timing.reason(timing.ChildFailed("W5 x failed (1)", "Traceback\n  ...\n"
                                            "ModuleNotFoundError: No module named 'scipy'\n")) == "no scipy"


@check
def build_kind_sees_extension_modules():
    real = peers.build_kind()
    fake = types.ModuleType("autodsl._selfcheck_ext")
    fake.__file__ = "/x/_selfcheck_ext" + importlib.machinery.EXTENSION_SUFFIXES[0]
    sys.modules[fake.__name__] = fake
    try:
        assert peers.build_kind() == "compiled" and peers.build_line().startswith("compiled")
    finally:
        del sys.modules[fake.__name__]
    assert peers.build_kind() == real in ("compiled", "pure-Python")


@check
def results_markers_kept():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "RESULTS.md")
        with open(path, "w") as f:
            f.write(f"# top\n\n{results.BEGIN}\nold\n{results.END}\n\n## Notes\nkept\n")
        results.write(path, "| table |", "v", "cmd", build="pure-Python (x)", ratios="Ratios: y",
                      targets=report.target_lines("pure-Python"))
        text = open(path).read()
    assert "old" not in text and text.startswith("# top") and text.endswith("## Notes\nkept\n")
    assert "- autodsl build: pure-Python (x)" in text and "Targets (pure-Python build):" in text
    assert "| table |" in text and text.count(results.BEGIN) == 1


def main():
    failed = 0
    for fn in CHECKS:
        try:
            fn()
            print(f"ok   {fn.__name__}")
        except Exception as exc:
            failed += 1
            print(f"FAIL {fn.__name__}: {type(exc).__name__}: {exc}")
    print(f"selfcheck: {len(CHECKS) - failed} of {len(CHECKS)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
