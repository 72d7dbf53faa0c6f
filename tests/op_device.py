"""``pytest --device cpu|cuda|dask``: the op table (tests/test_ops_*.py) on another device.

The table builds its inputs with ``ad.tensor(...)`` from NumPy values (helpers.to_ad) and brings
results back with ``.numpy()``; under ``--device NAME`` every test of an op-table module runs with
NAME as the default device, so its inputs (and every tensor it makes without a device) live there,
while the references (NumPy, PyTorch, finite differences) stay on the host. The default, cpu,
changes nothing. The other tests of the suite are about the language and the tools, not about
where an op computes, and keep the cpu device.
"""
from __future__ import annotations

import contextlib

import pytest

DEVICES = ("cpu", "cuda", "dask")

# the modules of the op table: the ones the option moves to another device
OP_TABLE_PREFIX = "test_ops_"


# The op-table tests that check, on another device, a behaviour that device has not by design
# (listed in the README, "What differs on dask"): expected to fail there, strictly, so that one
# that starts passing is noticed. By node id, or its prefix before the parameters.
DIFFERS = {
    "dask": {
        "tests/test_ops_linalg.py::test_a_singular_matrix_raises_as_in_torch":
            "a singular matrix is found only when computed: its inverse and solution are nan there",
        "tests/test_ops_linalg.py::test_loss_errors_where_torch_raises[<lambda>-ValueError_2]":
            "a class index out of range is found when the values are computed, at the next read",
        **{f"tests/test_ops_indexing.py::test_index_errors_are_language_errors_where_torch_raises[{case}]":
           "an index tensor's range is tested when the values are computed, at the next read"
           for case in ("gather-out-of-range", "gather-negative", "scatter-out-of-range",
                        "index_select-out-of-range", "index_select-negative")},
    },
}


def mark_differences(config, items) -> None:
    """xfail (strict) the tests of DIFFERS for the --device of this run."""
    table = DIFFERS.get(config.getoption("--device"), {})
    if not table:
        return
    for item in items:
        nodeid = item.nodeid.replace("\\", "/")
        why = table.get(nodeid) or table.get(nodeid.split("[", 1)[0])
        if why is not None:
            item.add_marker(pytest.mark.xfail(reason=f"differs on {config.getoption('--device')}: {why}",
                                              strict=True))


def check_option(config) -> str:
    """The --device value, checked once at start: a device that cannot be used stops the run
    with the device's own message rather than failing every test."""
    name = config.getoption("--device")
    if name != "cpu":
        from autodsl import backend
        from autodsl.errors import DSLError
        try:
            backend.check_device(name)
        except DSLError as e:
            raise pytest.UsageError(f"--device {name}: {e.message}") from None
    return name


def on_device(request):
    """A context manager that makes the --device the default device for an op-table test."""
    name = request.config.getoption("--device")
    module = getattr(request, "module", None)
    if name == "cpu" or module is None or not module.__name__.rsplit(".", 1)[-1].startswith(OP_TABLE_PREFIX):
        return contextlib.nullcontext()
    return on_device_named(name)


def on_device_named(name: str):
    """The context of an op-table test on device ``name``: the default device, no value checks
    left over from another test, and on dask the synchronous scheduler."""
    from autodsl import backend
    from autodsl.context import current, scoped
    stack = contextlib.ExitStack()
    stack.enter_context(backend.defaults(device=name))
    if hasattr(current(), "deferred"):
        # value checks an op left for the next read (core/deferred.py) end with their test:
        # a test that expects an error and reads nothing must not fail the next one
        stack.enter_context(scoped(deferred=None))
    if name == "dask":
        import dask
        # the op table's graphs are tiny: computing them in this thread beats a thread pool
        stack.enter_context(dask.config.set(scheduler="synchronous"))
    return stack
