"""Result rows, targets and the printed table."""

from dataclasses import dataclass, field

PEER_COLUMNS = ("autodsl", "torch", "autograd", "micrograd")


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

    def base_value(self):
        if self.baseline is None:
            return None
        return self.values.get(self.baseline, self.extra.get(self.baseline))

    def ratio(self, lib="autodsl"):
        v = self.values.get(lib)
        if v is None:
            return None
        if self.baseline is None:
            return v
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


def misses(rows):
    out = []
    for row in rows:
        if row.result() == "MISS":
            r = row.ratio()
            out.append(f"{row.wid} {row.case} ({row.unit}): {fmt(r)}"
                       f"{'x ' + row.baseline if row.baseline else ''}, target ≤ {row.target:g}"
                       f" ({r / row.target:.2f}x the target)")
    return out
