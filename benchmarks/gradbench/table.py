"""python -m benchmarks.gradbench.table [EVAL ...] [--eval-args "..."] [--no-write]

Runs GradBench evals (default: every eval with a `NAME.ad` here) with GradBench's run.sh
(../shared/gradbench/run.sh) against autodsl and, in the same session, against a reference
tool, GradBench's own Python tools: PyTorch for hello, lse, gmm, kmeans, lstm and ba, JAX
for llsq and ode (JAX from /tmp/jaxvenv, or $GRADBENCH_JAX_PYTHON); det, particle and saddle
run against autodsl alone. The evals run at their default sizes unless --eval-args gives
options for every eval named (`--eval-args "-l 2 -c 1024"`).

Each run's per-evaluation lines (function, size, the tool's median ms, valid) are parsed
and the table, one row per function and size with autodsl's time, the reference's and
their ratio, is printed and written into benchmarks/RESULTS.md between the gradbench
markers (a rerun replaces that section; the rest of the file is left alone).

Every tool runs with one math thread (OMP_NUM_THREADS=1 and friends, as
`python -m benchmarks` does for autodsl; GradBench's JAX tool pins itself to one CPU),
and, unless --plain-malloc, with glibc told to keep freed memory for reuse
(MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ high): by default every array of more
than a few MB is fresh pages from the kernel, and on a virtual machine faulting those in can
cost more than the arithmetic on them (10x and more, varying from run to run), for every tool
alike.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.results import machine

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GRADBENCH = Path(os.environ.get("GRADBENCH_DIR", ROOT.parent / "shared" / "gradbench"))
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
BEGIN, END = "<!-- gradbench:begin -->", "<!-- gradbench:end -->"
EVAL_ORDER = ("hello", "lse", "llsq", "gmm", "kmeans", "lstm", "ode", "det", "ba", "particle", "saddle")
REFERENCE = {"hello": "pytorch", "lse": "pytorch", "gmm": "pytorch", "kmeans": "pytorch",
             "lstm": "pytorch", "ba": "pytorch", "llsq": "jax", "ode": "jax"}
MALLOC_VARS = {"MALLOC_MMAP_THRESHOLD_": str(2**32), "MALLOC_TRIM_THRESHOLD_": str(2**34)}
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")

# drive.py's lines: "{function:12} {description:24} {ms:>12} ms  valid" (or INVALID, or FAILED)
LINE = re.compile(r"^(?P<fn>\S+)\s+(?P<desc>.*?)\s*(?P<ms>[0-9.]+|-) ms  (?P<status>valid|INVALID)")
FAILED = re.compile(r"^(?P<fn>\S+)\s+(?P<desc>.*?)\s*FAILED (?P<why>.*)$")
SUMMARY = re.compile(r"^(\d+) valid, (\d+) invalid, (\d+) failed")


@dataclass
class Run:
    """One run.sh run: {(function, description): (ms or None, status)} and its summary line."""
    tool: str
    rows: dict = field(default_factory=dict)
    summary: str = ""
    seconds: float = 0.0
    problem: str = ""        # the first line that is neither a row nor the summary (a crash)


def parse(tool: str, text: str) -> Run:
    run = Run(tool)
    seen: dict = {}

    def key(m):     # an evaluation repeated with the same size (hello's) keeps its own row
        k = (m["fn"], m["desc"])
        seen[k] = seen.get(k, 0) + 1
        return k if seen[k] == 1 else (k[0], f"{k[1]} #{seen[k]}".strip())

    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            ms = None if m["ms"] == "-" else float(m["ms"])
            run.rows[key(m)] = (ms, m["status"])
            continue
        m = FAILED.match(line)
        if m:
            run.rows[key(m)] = (None, "FAILED")
            continue
        if SUMMARY.match(line):
            run.summary = line.strip()
        elif line.strip() and not run.problem:
            run.problem = line.strip()[:200]
    return run


def tool_command(tool: str) -> str:
    if tool == "autodsl":
        return f"{shlex.quote(sys.executable)} -m benchmarks.gradbench"
    python = os.environ.get("GRADBENCH_PYTHON", sys.executable) if tool == "pytorch" else \
        os.environ.get("GRADBENCH_JAX_PYTHON", "/tmp/jaxvenv/bin/python")
    script = GRADBENCH / "python" / "gradbench" / "gradbench" / "tools" / tool / "run.py"
    return f"{shlex.quote(python)} {shlex.quote(str(script))}"


def run_eval(name: str, tool: str, eval_args: list[str], timeout: float, malloc: bool = True) -> Run:
    env = dict(os.environ)
    env.setdefault("GRADBENCH_PYTHON", sys.executable)
    env.update({v: "1" for v in THREAD_VARS})
    if malloc:
        env.update(MALLOC_VARS)
    cmd = [str(GRADBENCH / "run.sh"), name, tool_command(tool), *eval_args]
    start = time.perf_counter()
    try:
        out = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        text = out.stdout + out.stderr
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        text += f"\ntimed out after {timeout:.0f} s"
    run = parse(tool, text)
    run.seconds = time.perf_counter() - start
    if "timed out" in text and not run.problem:
        run.problem = f"timed out after {timeout:.0f} s"
    return run


def _ms(v) -> str:
    return "—" if v is None else f"{v:.3g}" if v < 100 else f"{v:.0f}"


def section(results: dict, eval_args: list[str], note: str, malloc: bool = True) -> str:
    """The RESULTS.md section, markers included, for {eval: (autodsl Run, reference Run or None)}."""
    lines = [BEGIN, f"## GradBench evals ({datetime.date.today().isoformat()})", "",
             f"- Machine: {machine()}; Python {platform.python_version()}",
             f"- Command: `python -m benchmarks.gradbench.table {' '.join(results)}"
             + (f" --eval-args {shlex.quote(' '.join(eval_args))}`" if eval_args else "`"),
             ("- Each cell is the tool's median ms per evaluation as GradBench's run.sh prints it "
             "(each evaluation repeated for at least 1 run and 1 s, the evals' defaults); "
             "ratio = autodsl / reference; every tool with one math thread"
             + (", and glibc keeping freed memory for reuse (" + ", ".join(f"{k}={v}" for k, v in MALLOC_VARS.items())
                + "; see table.py)." if malloc else ", glibc's malloc as it comes (--plain-malloc).")),
             ("- References: GradBench's own PyTorch tool (eager) and JAX tool (jit: the first call "
             "of each evaluation compiles, and is one of the runs the median is taken over; where "
             "it alone takes over the minimum seconds it is the only run, so JAX's cell is its "
             "compile time; and JAX dispatches asynchronously while the tool's timed region does "
             "not wait for the result, so its other cells can be the dispatch alone)."),
             ("- A size column's `#2`, `#3`, ...: the same function and size evaluated again "
              "(hello's four rounds).")]
    if note:
        lines.append(f"- {note}")
    lines.append("")
    for name, (ours, ref) in results.items():
        reference = REFERENCE.get(name)
        lines.append(f"### {name}" + (f" (against {reference})" if reference else " (autodsl alone)"))
        lines.append("")
        lines.append(f"autodsl: {ours.summary or ours.problem or 'no result'} ({ours.seconds:.0f} s)"
                     + (f"; {reference}: {ref.summary or ref.problem or 'no result'} ({ref.seconds:.0f} s)"
                        if ref else ""))
        lines.append("")
        if ref:
            lines += ["| function | size | autodsl ms | " + reference + " ms | ratio | autodsl |",
                      "|---|---|---|---|---|---|"]
        else:
            lines += ["| function | size | autodsl ms | autodsl |", "|---|---|---|---|"]
        keys = list(ours.rows) + [k for k in (ref.rows if ref else {}) if k not in ours.rows]
        for key in keys:
            ms, status = ours.rows.get(key, (None, "missing"))
            cells = [key[0], key[1] or "—", _ms(ms)]
            if ref:
                rms, rstatus = ref.rows.get(key, (None, "missing"))
                cells.append(_ms(rms) if rstatus == "valid" else f"{_ms(rms)} ({rstatus})")
                cells.append(f"{ms / rms:.3g}" if ms is not None and rms else "—")
            cells.append(status)
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def write_section(block: str, path: Path = RESULTS) -> None:
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + block + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(new)


def available_evals() -> list[str]:
    return [e for e in EVAL_ORDER if (HERE / f"{e}.ad").is_file()]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("evals", nargs="*", help="evals to run (default: every one with a NAME.ad)")
    p.add_argument("--eval-args", default="", help="options given to every eval named (sizes)")
    p.add_argument("--note", default="", help="a line for the section's header (the machine's load)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per run.sh run")
    p.add_argument("--no-write", action="store_true", help="print the section, leave RESULTS.md alone")
    p.add_argument("--plain-malloc", action="store_true",
                   help="leave glibc's malloc settings alone (see the module's doc)")
    args = p.parse_args(argv)
    evals = args.evals or available_evals()
    unknown = [e for e in evals if not (HERE / f"{e}.ad").is_file()]
    if unknown:
        p.error(f"no autodsl script for {', '.join(unknown)} (benchmarks/gradbench/NAME.ad)")
    eval_args = shlex.split(args.eval_args)
    results = {}
    for name in evals:
        ours = run_eval(name, "autodsl", eval_args, args.timeout, not args.plain_malloc)
        print(f"{name}: autodsl {ours.summary or ours.problem} ({ours.seconds:.0f} s)", flush=True)
        ref = None
        if name in REFERENCE:
            ref = run_eval(name, REFERENCE[name], eval_args, args.timeout, not args.plain_malloc)
            print(f"{name}: {REFERENCE[name]} {ref.summary or ref.problem} ({ref.seconds:.0f} s)", flush=True)
        results[name] = (ours, ref)
    block = section(results, eval_args, args.note, not args.plain_malloc)
    print(block)
    if not args.no_write:
        if RESULTS.exists() and BEGIN in RESULTS.read_text() and args.evals:
            block = _merge(RESULTS.read_text(), block)
        write_section(block)
    failed = any(not ours.summary or not ours.summary.endswith("0 invalid, 0 failed")
                 for ours, _ in results.values())
    return 1 if failed else 0


def _merge(old_text: str, block: str) -> str:
    """A rerun of some evals keeps the other evals' subsections of the old section."""
    old = old_text[old_text.index(BEGIN):old_text.index(END)]
    new_subs = _subsections(block)
    kept = {k: v for k, v in _subsections(old).items() if k not in new_subs}
    if not kept:
        return block
    head = block[:block.index("### ")] if "### " in block else block[:block.index(END)]
    merged = {**kept, **new_subs}
    ordered = [merged[k] for k in sorted(merged, key=lambda e: EVAL_ORDER.index(e)
                                         if e in EVAL_ORDER else len(EVAL_ORDER))]
    return head + "".join(ordered) + END


def _subsections(text: str) -> dict:
    parts = re.split(r"(?m)^(?=### )", text.split(END)[0])
    return {re.match(r"### (\S+)", s).group(1): s for s in parts if s.startswith("### ")}


if __name__ == "__main__":
    sys.exit(main())
