"""Result rows, targets, the printed table and the --check verdict."""

from dataclasses import dataclass, field

PEER_COLUMNS = ("autodsl", "torch", "autograd", "micrograd")

# W1-W3, µs per recorded node against PyTorch eager, by autodsl build.
GRAPH_TARGET = {"compiled": 0.8, "pure-Python": 1.0}


def targets(build):
    """The targets of this build: {key: largest allowed ratio (or value)}."""
    graph = GRAPH_TARGET[build]
    return {"W0": 0.3, "W1": graph, "W2": graph, "W3": graph,
            "W2 slack": 1.1,        # t(D=hi) / t(D=lo) at most (hi/lo) * 1.1: linear in D
            "W4": 1.05, "W5 peak": 0.5, "W5 rss": 1.10, "W6": 1.1,
            # issue 10, compiled loops (the same for both builds: a replay runs generated code)
            "W1C": 0.3, "W7": 0.3, "W4C": 1.05, "W4C eager": 1.0}


def target_lines(build):
    t = targets(build)
    c, p = GRAPH_TARGET["compiled"], GRAPH_TARGET["pure-Python"]
    return [
        f"W0: wall time and peak RSS of `autodsl -c` at most {t['W0']:g}x a `python -c` PyTorch script",
        f"W1, W2, W3: µs per recorded node at most {c:g}x PyTorch eager with the compiled build, "
        f"{p:g}x with the pure-Python build (this run: {build}, so {t['W1']:g}x)",
        f"W2: t(D=2,000) / t(D=200) at most {10 * t['W2 slack']:g} (10x the work and "
        f"{t['W2 slack'] - 1:.0%} slack: linear in D)",
        f"W4: at most {t['W4']:g}x the NumPy floor, float32 and float64",
        f"W5: peak bytes per node at most {t['W5 peak']:g}x PyTorch's; "
        f"RSS after backward at most {t['W5 rss']:g}x the RSS before the forward",
        f"W6: `.ad` scripts at most {t['W6']:g}x the Python API on W1 and W4",
        f"W1C, W7: a compiled training loop (its first call, the capture, included) at most "
        f"{t['W7']:g}x PyTorch eager's time for the same loop: W1's 1,000-link chain as one step "
        f"(forward and backward, 100 calls) and W7's 2-16-1 tanh MLP (MSE, SGD, 500 steps); "
        f"final values bit-identical to eager autodsl's",
        f"W4C: W4 with its step compiled at most {t['W4C']:g}x the NumPy floor (float32 and float64) "
        f"and faster than the same step eager (at most {t['W4C eager']:g}x); bit-identical to eager",
    ]


@dataclass
class Row:
    """One line of the table.

    values: {library: number} in `unit`; baseline: the key the autodsl value
    is divided by (a library, or a key of `extra` such as "numpy floor"), or
    None when the target applies to autodsl's own value; target: the largest
    allowed ratio (or value), None for a row that only informs.
    """
    wid: str
    case: str
    unit: str
    values: dict
    baseline: str | None = "torch"
    target: float | None = None
    extra: dict = field(default_factory=dict)
    missing: dict = field(default_factory=dict)   # {library: why its cell is empty}
    ratios: dict = field(default_factory=dict)    # {library: median of paired per-round ratios}
    rounds: int | None = None                     # how many paired rounds the ratios are from

    def base_value(self):
        if self.baseline is None:
            return None
        return self.values.get(self.baseline, self.extra.get(self.baseline))

    def ratio(self, lib="autodsl"):
        """The paired ratio when the row has one (timings), else value / baseline."""
        v = self.values.get(lib)
        if v is None:
            return None
        if self.baseline is None:
            return v
        if self.ratios.get(lib) is not None:
            return self.ratios[lib]
        b = self.base_value()
        return v / b if b else None

    def result(self):
        if self.target is None:
            return ""
        r = self.ratio()
        if r is None:
            return "n/a"
        return "PASS" if r <= self.target else "MISS"


def fmt(v):
    if v is None:
        return ""
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _cell(row, lib, skipped):
    if lib in row.values:
        text = fmt(row.values[lib])
        if row.baseline is not None and row.baseline not in PEER_COLUMNS and lib != "autodsl":
            r = row.ratio(lib)
            text += f" ({fmt(r)}x)" if r is not None else ""
        return text
    if lib in skipped:
        return "skipped"
    return row.missing.get(lib, "—")


def table(rows, skipped):
    head = ["W", "case", "unit", *PEER_COLUMNS, "vs", "ratio", "target", "result"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        if row.baseline is None:
            vs = "(own value)"
        elif row.baseline in PEER_COLUMNS:
            vs = row.baseline
        else:
            vs = f"{row.baseline} {fmt(row.base_value())}"
        r = row.ratio()
        cells = [row.wid, row.case, row.unit,
                 *(_cell(row, lib, skipped) for lib in PEER_COLUMNS),
                 vs, fmt(r) + ("x" if r is not None and row.baseline else ""),
                 "" if row.target is None else f"≤ {row.target:g}", row.result()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _name(row):
    return f"{row.wid} {row.case} ({row.unit})"


def misses(rows):
    out = []
    for row in rows:
        if row.result() == "MISS":
            r = row.ratio()
            out.append(f"{_name(row)}: {fmt(r)}"
                       f"{'x ' + row.baseline if row.baseline else ''}, target ≤ {row.target:g}"
                       f" ({r / row.target:.2f}x the target)")
    return out


def unchecked(rows):
    """Rows with a target but no ratio (the baseline library skipped, say)."""
    return [f"{_name(row)}: no {row.baseline or 'value'}" for row in rows if row.result() == "n/a"]


def summary(rows, mismatches=(), errors=(), check=False):
    """The lines after the table, and the exit status.

    The status is 1 on a gradient mismatch or an error; with check=True also
    when any row misses its target. A row with a target but no ratio (its
    baseline skipped) is listed as not checked and does not fail the check.
    """
    with_target = [row for row in rows if row.target is not None]
    miss, blind = misses(rows), unchecked(rows)
    met = sum(row.result() == "PASS" for row in with_target)
    lines = []
    if miss:
        lines.append(f"Missed targets ({len(miss)} of {len(with_target)}):")
        lines += [f"- {m}" for m in miss]
    elif with_target:
        lines.append(f"All {met} targets met." if not blind else f"All {met} checked targets met.")
    else:
        lines.append("No targets in this run.")
    if blind:
        lines.append(f"Not checked ({len(blind)}):")
        lines += [f"- {b}" for b in blind]
    lines += [f"ERROR {problem}" for problem in [*mismatches, *errors]]
    code = 1 if mismatches or errors else 0
    if check:
        code = 1 if miss or code else 0
        verdict = "FAIL" if code else "PASS"
        why = [f"{len(miss)} of {len(with_target)} targets missed" if miss else
               f"{met} of {len(with_target)} targets met"]
        if blind:
            why.append(f"{len(blind)} not checked")
        if mismatches or errors:
            why.append(f"{len(mismatches) + len(errors)} error(s)")
        lines.append(f"check: {verdict}, " + ", ".join(why) + f" (exit status {code})")
    return lines, code
