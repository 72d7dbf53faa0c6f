"""Write samples/backprop_ipython.ipynb, the IPython-extension copy of samples/backprop.ipynb.

backprop.ipynb is written in the language for the autodsl kernel; its copy is a Python
notebook (ipykernel's python3 kernel) that starts with ``%load_ext autodsl`` and runs each
code cell as a ``%%autodsl`` cell, in the one session the extension keeps for the notebook.
Run it after editing backprop.ipynb (``python samples/make_notebooks.py``);
tests/test_notebook_sample.py checks that the copy is what this script makes.
"""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "backprop.ipynb"
COPY = HERE / "backprop_ipython.ipynb"

NOTE = ("*This notebook is made from `backprop.ipynb` by `samples/make_notebooks.py`: the same "
        "cells, run in Python through the IPython extension (`%load_ext autodsl`, then `%%autodsl` "
        "cells). Edit `backprop.ipynb` and run the script again.*")


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _lines(text: str) -> list[str]:
    """A cell's source as nbformat writes it: lines keeping their newlines."""
    return text.splitlines(keepends=True)


def extension_copy(nb: dict) -> dict:
    """The Python-notebook copy of a notebook in the language (a dict in nbformat 4)."""
    out = copy.deepcopy(nb)
    out["metadata"] = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }
    cells = []
    for cell in out["cells"]:
        if cell["cell_type"] == "code":
            cell["source"] = _lines("%%autodsl\n" + _source(cell))
            cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
    first = {"cell_type": "code", "id": "load-ext", "metadata": {}, "execution_count": None, "outputs": [],
             "source": _lines("%load_ext autodsl")}
    note = {"cell_type": "markdown", "id": "made-by", "metadata": {}, "source": _lines(NOTE)}
    out["cells"] = cells[:1] + [note, first] + cells[1:]
    return out


def dumps(nb: dict) -> str:
    """The text nbformat writes (one-space indent, sorted keys, a final newline)."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    nb = json.loads(SOURCE.read_text(encoding="utf-8"))
    COPY.write_text(dumps(extension_copy(nb)), encoding="utf-8")
    print(f"wrote {COPY.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
