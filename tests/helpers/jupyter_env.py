"""A private Jupyter setup for the notebook tests: kernelspecs in a temporary folder.

``jupyter_dirs(tmp)`` installs the kernelspec ``autodsl`` there with the kernel's own
installer (``autodsl.cli.kernel.install(prefix=...)``) and a ``python3`` kernelspec for
ipykernel of this Python, and returns the environment variables that make Jupyter look
there (and keep its runtime and IPython files there too), so that no test depends on
what is installed for the user or in CI.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest


def need_jupyter():
    """Skip unless ipykernel, jupyter_client, nbclient and nbformat are importable."""
    for name in ("ipykernel", "jupyter_client", "nbclient", "nbformat"):
        pytest.importorskip(name, reason=f"the notebook tests need {name} (pip install \"autodsl[jupyter]\")")


def jupyter_dirs(tmp: Path) -> dict:
    """Install the kernelspecs under ``tmp``; the environment variables pointing there."""
    from autodsl.cli.kernel import install

    install(prefix=str(tmp))
    py3 = tmp / "share" / "jupyter" / "kernels" / "python3"
    py3.mkdir(parents=True, exist_ok=True)
    (py3 / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python"}))
    for sub in ("runtime", "ipython", "config", "data"):
        (tmp / sub).mkdir(exist_ok=True)
    return {"JUPYTER_PATH": str(tmp / "share" / "jupyter"), "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
            "JUPYTER_CONFIG_DIR": str(tmp / "config"), "JUPYTER_DATA_DIR": str(tmp / "data"),
            "IPYTHONDIR": str(tmp / "ipython"), "JUPYTER_PLATFORM_DIRS": "1",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1"}


def have_dot() -> bool:
    return shutil.which("dot") is not None


@contextlib.contextmanager
def jupyter_environ(tmp: Path):
    """Within the block, Jupyter looks for kernelspecs (and keeps its files) under ``tmp``, as
    ``jupyter_dirs`` sets them up; the process's environment is restored afterwards."""
    env = jupyter_dirs(tmp)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
