"""W0: time to first gradient, as a whole process (wall time and peak RSS)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

AUTODSL_SRC = "x = tensor(3.0, requires_grad=true); (x*x).backward(); x.grad"
TORCH_SRC = ("import torch; x = torch.tensor(3.0, requires_grad=True); "
             "(x*x).backward(); print(x.grad)")
AUTOGRAD_SRC = ("import autograd; print(autograd.grad(lambda x: x*x)(3.0))")
MICROGRAD_SRC = ("from micrograd.engine import Value; x = Value(3.0); "
                 "(x*x).backward(); print(x.grad)")

COMMANDS = {
    "autodsl": [sys.executable, "-m", "autodsl", "-c", AUTODSL_SRC],
    "torch": [sys.executable, "-c", TORCH_SRC],
    "autograd": [sys.executable, "-c", AUTOGRAD_SRC],
    "micrograd": [sys.executable, "-c", MICROGRAD_SRC],
}


# The child is started by a small launcher process: Linux keeps ru_maxrss
# across fork and exec, so a child forked straight from this (large) process
# would report this process's size as its own peak.
LAUNCHER = """\
import json, os, sys, time
argv, out = json.loads(sys.argv[1]), sys.argv[2]
acts = [(os.POSIX_SPAWN_OPEN, 1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)]
t0 = time.perf_counter()
pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=acts)
_, status, usage = os.wait4(pid, 0)
print(json.dumps([time.perf_counter() - t0, usage.ru_maxrss, os.waitstatus_to_exitcode(status)]))
"""


def measure(argv):
    """(wall seconds, peak RSS in MiB, stdout) of one child process."""
    import json
    import tempfile
    with tempfile.NamedTemporaryFile("r", suffix=".out") as out:
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", LAUNCHER, json.dumps(argv), out.name],
                              cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"W0 launcher failed: {proc.stderr.strip()[-500:]}")
        wall, maxrss_kib, code = json.loads(proc.stdout)
        text = out.read()
    if code != 0:
        from .timing import ChildFailed
        raise ChildFailed(f"{argv[:3]} failed ({code})", proc.stderr)
    return wall, maxrss_kib / 1024.0, text


def run(libs, repeats):
    """({lib: ([wall s per round], [peak MiB per round])}, {lib: exception}).

    Paired rounds: each round starts every library's child once, in turn.
    Each child's answer must be 6. A peer whose child fails in the warm-up
    (not installed for that interpreter, a missing part) is skipped; autodsl
    failing is an error.
    """
    from . import peers
    skipped, live = {}, []
    for lib in libs:  # warm-up (bytecode caches) and check
        try:
            out = measure(COMMANDS[lib])[2]
            if "6" not in out:
                raise RuntimeError(f"W0 {lib}: expected a gradient of 6, got {out!r}")
        except Exception as exc:
            if lib in peers.OWN:
                raise
            skipped[lib] = exc
            continue
        live.append(lib)
    walls = {lib: [] for lib in live}
    peaks = {lib: [] for lib in live}
    for _ in range(repeats):
        for lib in live:
            wall, peak, _ = measure(COMMANDS[lib])
            walls[lib].append(wall)
            peaks[lib].append(peak)
    return {lib: (walls[lib], peaks[lib]) for lib in live}, skipped
