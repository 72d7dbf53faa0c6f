"""Write a run's table into benchmarks/RESULTS.md, with the date, machine and versions.

Only the part between the CPU markers is replaced, so other sections of the
file (a GPU table, notes) are kept.
"""

import datetime
import os
import re
import subprocess

BEGIN, END = "<!-- cpu-results:begin -->", "<!-- cpu-results:end -->"


def machine():
    model = "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"^Model name:\s*(.+)$", out, re.M)
        model = m.group(1).strip() if m else model
    except OSError:
        pass
    ram = "?"
    try:
        with open("/proc/meminfo") as f:
            kb = int(re.search(r"MemTotal:\s*(\d+)", f.read()).group(1))
        ram = f"{kb / 2**20:.0f} GiB RAM"
    except (OSError, AttributeError):
        pass
    return f"{model}, {os.cpu_count()} cores, {ram}"


def write(path, table, versions, command, w5_detail=None, build=None, ratios=None, targets=()):
    lines = [BEGIN, f"## CPU run of {datetime.date.today().isoformat()}", "",
             f"- Machine: {machine()}", f"- Versions: {versions}"]
    if build:
        lines.append(f"- autodsl build: {build}")
    lines.append(f"- Command: `{command}`")
    if ratios:
        lines.append(f"- {ratios}")
    lines.append("")
    if targets:
        lines += [f"Targets ({build.split(' (')[0] if build else 'this'} build):", "",
                  *(f"- {t}" for t in targets), ""]
    lines += [table, ""]
    if w5_detail:
        lines += ["W5 RSS in MiB (one process per library):", "",
                  "| library | before fwd | after fwd | after bwd | after bwd, trimmed | output dropped | peak |",
                  "|---|---|---|---|---|---|---|"]
        for lib, d in w5_detail.items():
            cells = [d.get(k) for k in ("before", "after_forward", "after_backward",
                                        "after_backward_trim", "after_del", "peak")]
            lines.append(f"| {lib} | " + " | ".join("—" if v is None else f"{v:.1f}" for v in cells) + " |")
        lines.append("")
    lines.append(END)
    block = "\n".join(lines)
    old = open(path).read() if os.path.exists(path) else "# Benchmark results\n\n"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + block + old[old.index(END) + len(END):]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(new)
