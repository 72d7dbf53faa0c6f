"""``python -m autodsl.kernel``: the Jupyter kernel for notebooks in the language.

``python -m autodsl.kernel install [--user | --sys-prefix | --prefix P]`` registers the
kernelspec ``autodsl``; Jupyter then starts the kernel as ``python -m autodsl.kernel -f
CONNECTION_FILE``. The kernel itself is ``autodsl/cli/kernel.py`` (it needs the ``jupyter``
extra: ``pip install "autodsl[jupyter]"``).
"""
from __future__ import annotations

import sys

from autodsl.cli.kernel import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
