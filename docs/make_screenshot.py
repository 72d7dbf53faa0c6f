"""Make docs/notebook.png, the README's picture of the sample notebook.

It executes samples/backprop.ipynb in the autodsl kernel (nbclient; the kernelspec is
installed into a temporary JUPYTER_PATH, nothing is installed for the user), converts the
executed notebook to HTML with nbconvert, and photographs that page with headless Chromium.
The picture shows the cells a reader meets first: the seed example, its graph, the gradients,
the trace table and the check table (the stepped backward's long text is left out of the
picture, not out of the notebook).

    python docs/make_screenshot.py [--chromium /usr/bin/chromium] [--out docs/notebook.png]

Needs the jupyter extra (``pip install "autodsl[jupyter]"``), nbconvert, Graphviz's ``dot``
(for the graph picture) and Chromium.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "backprop.ipynb"

# the code cells in the picture, by their first line
SHOWN = ("x = tensor(2.0)", "graph(f)", 'print("df/dw1 =', "last_trace()", "check(f, [w1, w2, b])")
WIDTH, HEIGHT = 1600, 2400      # the page is cut below its last line when Pillow is there

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--virtual-time-budget=5000"]

# the page as a reader sees it: no left margin of empty prompts, tables in a readable size
STYLE = """<style>
body { background: white; margin: 0 12px; }
.jp-Notebook { padding: 8px 0; }
table { font-size: 12px; }
.jp-OutputArea-output { overflow-x: visible; }
.jp-OutputArea-output pre { white-space: pre-wrap; }
</style>"""


def execute(tmp: Path):
    import nbformat
    from nbclient import NotebookClient

    from autodsl.cli.kernel import install

    install(prefix=str(tmp))
    os.environ["JUPYTER_PATH"] = str(tmp / "share" / "jupyter")
    os.environ["JUPYTER_RUNTIME_DIR"] = str(tmp / "runtime")
    os.environ["JUPYTER_PLATFORM_DIRS"] = "1"
    nb = nbformat.read(str(SAMPLE), as_version=4)
    NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(tmp)}}).execute()
    return nb


def shown_cells(nb):
    """The title cell and the code cells of SHOWN, in the notebook's order."""
    keep = [nb.cells[0]] if nb.cells and nb.cells[0].cell_type == "markdown" else []
    keep += [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(SHOWN)]
    out = nb.copy()
    out.cells = keep
    if keep and keep[0].cell_type == "markdown":        # the title only, not the paragraphs under it
        keep[0] = keep[0].copy()
        keep[0].source = keep[0].source.split("\n", 1)[0]
    return out


def to_html(nb) -> str:
    from nbconvert import HTMLExporter

    html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    return html.replace("</head>", STYLE + "\n</head>", 1)


def screenshot(html_file: Path, png: Path, chromium: str, tmp: Path) -> None:
    cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp / 'chromium'}", f"--screenshot={png}",
           f"--window-size={WIDTH},{HEIGHT}", html_file.as_uri()]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    if not png.is_file():
        raise SystemExit(f"chromium wrote no {png}")
    crop_white(png)


def crop_white(png: Path, margin: int = 16) -> None:
    """Cut the white below the page's last line (a window is taller than the page)."""
    try:
        from PIL import Image, ImageChops
    except ImportError:
        return
    with Image.open(png) as im:
        rgb = im.convert("RGB")
    box = ImageChops.difference(rgb, Image.new("RGB", rgb.size, "white")).getbbox()
    if box is not None:
        rgb.crop((0, 0, rgb.width, min(rgb.height, box[3] + margin))).save(png, optimize=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "notebook.png")
    ap.add_argument("--html", type=Path, help="also keep the whole executed notebook as HTML here")
    args = ap.parse_args(argv)
    if shutil.which("dot") is None:
        print("warning: no Graphviz dot: the graph shows as text", file=sys.stderr)
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        nb = execute(tmp)
        if args.html:
            args.html.write_text(to_html(nb), encoding="utf-8")
        page = tmp / "notebook.html"
        page.write_text(to_html(shown_cells(nb)), encoding="utf-8")
        screenshot(page, args.out.resolve(), args.chromium, tmp)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
