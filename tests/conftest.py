"""Suite-wide switches.

``--array-api=strict`` (or the environment variable ``AUTODSL_ARRAY_API=strict``) makes the
"cpu" device compute with ``array_api_strict``, the Array API standard and nothing more, so
the whole suite shows that autodsl calls nothing NumPy-only on tensor data. Subprocesses
(the CLI and REPL tests) inherit it through the environment. A test that is inherently about
NumPy is marked ``@pytest.mark.numpy_only("why")`` and skips there with that reason.

``--device cuda|dask`` runs the op table (tests/test_ops_*.py) with that default device
(tests/op_device.py); the rest of the suite stays on cpu.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# The benchmarks package (the GradBench tool, the GPU check) is tested from the checkout. Its
# folder goes at the END of sys.path, so that `autodsl` is still the installed package when
# pytest runs as `python -P` against a (compiled) install.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.append(_ROOT)


def pytest_addoption(parser):
    parser.addoption("--array-api", choices=("numpy", "strict"), default=None,
                     help="the array namespace of the cpu device (default: $AUTODSL_ARRAY_API, else numpy)")
    parser.addoption("--device", choices=("cpu", "cuda", "dask"), default="cpu",
                     help="the device the op table (tests/test_ops_*.py) runs on; see tests/op_device.py")


def pytest_configure(config):
    config.addinivalue_line("markers", "numpy_only(reason): needs the NumPy namespace; skipped under "
                                       "--array-api=strict")
    name = config.getoption("--array-api")
    if name:
        os.environ["AUTODSL_ARRAY_API"] = name      # for subprocesses, and for the import below
        from autodsl import backend
        backend.use_namespace(name)
    from op_device import check_option
    check_option(config)


@pytest.fixture(autouse=True)
def _op_table_device(request):
    """Under --device cuda|dask, an op-table test runs with that default device (tests/op_device.py)."""
    from op_device import on_device
    with on_device(request):
        yield


@pytest.fixture
def torch_float64():
    """While a test runs, torch's default float dtype is float64, autodsl's (tests that compare
    the two on Python numbers use it: ``pytestmark = pytest.mark.usefixtures("torch_float64")``)."""
    import torch
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def pytest_report_header(config):
    import importlib.util
    from autodsl import backend
    lines = [f"autodsl: cpu array namespace {backend.namespace_name()}"]
    if config.getoption("--device") != "cpu":
        lines.append(f"autodsl: the op table runs on device {config.getoption('--device')}")
    # PyTorch is only a reference: say up front when the comparisons against it will skip
    if importlib.util.find_spec("torch") is None:
        lines.append("autodsl: PyTorch is not installed, so the comparisons against it skip "
                     "(pip install torch, the CPU build, to run them)")
    return lines


def pytest_collection_modifyitems(config, items):
    from op_device import mark_differences
    mark_differences(config, items)     # what differs on another --device by design
    from autodsl import backend
    if backend.namespace_name() == "numpy":
        return
    for item in items:
        mark = item.get_closest_marker("numpy_only")
        if mark is not None:
            why = mark.args[0] if mark.args else "inherently about NumPy"
            item.add_marker(pytest.mark.skip(reason=f"NumPy only ({why}); this run uses "
                                                    f"{backend.namespace_name()}"))
