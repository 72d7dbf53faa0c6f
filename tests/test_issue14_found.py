"""Bugs found trying the dask device as a new user (issue 14): each case runs on cpu and on
dask and the values must agree."""
import numpy as np
import pytest

pytest.importorskip("dask.array")

import autodsl as ad


@pytest.mark.parametrize("dev", ["cpu", "dask"])
def test_write_through_a_view_with_a_new_dim(dev):
    # dask's own item assignment misreads a key with None (m[None, 1:, 2] = v raised
    # "cannot write a value of shape (1, 2) into a slice of shape (1, 2)")
    m = ad.tensor(np.arange(12.0).reshape(3, 4).tolist(), device=dev)
    n = m[None, 1:, 2]
    n *= 2
    m[None, 0, None, 1:3] = ad.tensor([[[-1.0, -2.0]]], device=dev)
    want = np.arange(12.0).reshape(3, 4)
    want[1:, 2] *= 2
    want[0, 1:3] = [-1.0, -2.0]
    np.testing.assert_array_equal(m.numpy(), want)
    np.testing.assert_array_equal(n.numpy(), want[None, 1:, 2])


def _graph_items(arr):
    return len(arr.__dask_graph__())


def test_inplace_updates_in_a_loop_do_not_rebuild_the_graph():
    # each w -= lr * g on dask went through dask's own item assignment (w[...] = value), which
    # walks the whole graph built so far: an optimizer's steps took quadratic time (60 Adam steps
    # of a small MLP: minutes). A write of a whole tensor is its new value, in its old chunks.
    from dask.array.utils import assert_eq  # noqa: F401  (dask present)
    w = ad.tensor(np.linspace(-1.0, 1.0, 12).reshape(3, 4).tolist(), device="dask",
                  requires_grad=True)
    chunks = w._data.chunks
    seen = []
    with ad.no_grad():
        for _ in range(30):
            w -= 0.5 * w
            w += ad.tensor(1.0, device="dask")
            seen.append(_graph_items(w._data))
    # the graph grows by a bounded number of items per step, not by the size of what came before
    growth = np.diff(seen)
    assert growth.max() <= growth[:3].max()
    assert w._data.chunks == chunks
    want = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    for _ in range(30):
        want = want * 0.5 + 1.0
    np.testing.assert_allclose(w.numpy(), want, rtol=0, atol=1e-15)


def test_a_deferred_check_underlines_the_op_as_the_cpu_does(capsys):
    # on dask the class-index check of cross_entropy raises at the next read, at the op's
    # position: its caret was one character where the cpu's underlines the whole call
    src = ("W = tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], requires_grad=true)\n"
           "bad = cross_entropy(tensor([[1.0, 2.0]]) @ W, tensor([3], dtype=int64))\n"
           "print(bad.item())\n")
    shown = {}
    for dev in ("cpu", "dask"):
        s = ad.Session(device=dev, scheduler="synchronous") if dev == "dask" else ad.Session()
        with pytest.raises(ad.DSLError) as e:
            s.run(src)
        shown[dev] = e.value.render().splitlines()
        s.close()
    assert shown["dask"][0].endswith("(found when the values were computed)")
    assert shown["dask"][0].startswith(shown["cpu"][0].split(": ", 1)[0])
    assert shown["dask"][1:] == shown["cpu"][1:]
    assert shown["cpu"][2].strip() == "^" * len("cross_entropy(tensor([[1.0, 2.0]]) @ W, tensor([3], dtype=int64))")
