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


def test_load_takes_device_as_the_creation_functions_do(tmp_path):
    # from Python, load() had no device=: a .npy or zarr file could not be read lazily on dask
    # without a session (load(f, device="dask") was Python's "unexpected keyword argument")
    f = tmp_path / "x.npy"
    np.save(f, np.arange(1000.0))
    x = ad.load(str(f), device="dask", chunks=100)
    assert x.device == "dask" and x._data.chunks == ((100,) * 10,)
    assert (x * 2).sum().item() == 999000.0
    c = tmp_path / "x.csv"
    c.write_text("1,2\n3,4\n")
    assert ad.load(str(c), device="dask").device == "dask"
    assert ad.load(str(f)).device == "cpu"
    with pytest.raises(ad.DeviceError):
        ad.load(str(f), device="tpu")


def test_a_failing_task_says_what_failed_in_words(tmp_path):
    # a lazy load's file removed before the values are read: the task's FileNotFoundError came
    # out as "internal error (FileNotFoundError)", Python's text
    f = tmp_path / "y.npy"
    np.save(f, np.arange(10.0))
    s = ad.Session(device="dask", scheduler="synchronous")
    s.run(f'y = load("{f}")')
    f.unlink()
    with pytest.raises(ad.RuntimeError_) as e:
        s.run("print(y.sum().item())")
    text = str(e.value)
    assert "internal error" not in text and "Errno" not in text
    assert "y.npy" in text and "when its values were computed" in text
    np.save(f, np.arange(10.0))
    s.run("t = y.sum().item()")     # the session goes on, and reads the file put back
    assert s.run("t") == 45.0
    s.close()


def test_tensor_of_a_masked_dask_array_knows_its_shape():
    # tensor() of a dask array of unknown (nan) size: len, numel and printing raised Python's
    # "cannot convert float NaN to integer", backward and reshape refused "(nan,)"
    da = pytest.importorskip("dask.array")
    a = da.arange(10.0, chunks=3)
    t = ad.tensor(a[a > 4], requires_grad=True)
    assert t.shape == (5,) and t.numel() == 5 and len(t) == 5
    (t * t).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), 2 * np.arange(5.0, 10.0))
    assert t.reshape(-1, 1).shape == (5, 1)
    assert (t + ad.tensor([1.0] * 5, device="dask")).tolist() == [6.0, 7.0, 8.0, 9.0, 10.0]
    m = da.arange(12.0, chunks=5).reshape(3, 4)
    u = ad.tensor(m[m[:, 0] > 2])
    assert u.shape == (2, 4) and u.sum().item() == float(np.arange(4.0, 12.0).sum())


def test_a_mask_of_persisted_values_on_the_sessions_cluster(monkeypatch):
    # x[x > 0.5] counted the mask with dask's default scheduler (compute_chunk_sizes), not the
    # session's cluster, where persist() had put x: "Missing dependency ..." as a ShapeError
    distributed = pytest.importorskip("distributed")
    real = distributed.LocalCluster
    monkeypatch.setattr(distributed, "LocalCluster", lambda **kw: real(**{**kw, "processes": False}))
    src = ("x = arange(20.0, chunks=5) / 20\nkept = persist(x)\ny = x[x > 0.5]\nn = y.shape[0]\n"
           "t = y.sum().item()\nz = x * 1.0\nz[x > 0.9] = 0.0\nu = z.sum().item()\n"
           "i = x.reshape(4, 5)[x.reshape(4, 5)[:, 0] > 0.3]\nr = i.shape[0]\n")
    with ad.Session(device="dask", workers=1) as s:
        s.run(src)
        got = [s["n"], s["t"], s["u"], s["r"]]
    x = np.arange(20.0) / 20
    assert got == [9, pytest.approx(x[x > 0.5].sum(), abs=1e-12),
                   pytest.approx(np.where(x > 0.9, 0, x).sum(), abs=1e-12), 2]


def test_tensor_of_a_dask_tensor_stays_on_dask_and_is_a_copy():
    # tensor(t) is on t's device when no device is given (torch.tensor's rule): tensor() of a
    # dask tensor computed it whole into a cpu tensor
    t = ad.ones(6, device="dask", chunks=2)
    c = ad.tensor(t)
    assert c.device == "dask" and c._data.chunks == ((2, 2, 2),)
    c[0] = 5.0                               # a copy: the write does not reach t
    assert t.tolist() == [1.0] * 6 and c.tolist() == [5.0] + [1.0] * 5
    assert ad.tensor(t, device="cpu").device == "cpu"
    assert ad.tensor(ad.tensor([1.0])).device == "cpu"
    w = ad.tensor(t, dtype=ad.float32, requires_grad=True)
    assert w.device == "dask" and w.dtype is ad.float32 and w.is_leaf


def _shared_writes(dev):
    W = ad.tensor([[1.0, 2.0], [3.0, 4.0]], device=dev, requires_grad=True)
    r, dv = W[0], W.data[1]            # a view of W, a view of its .data
    opt = ad.sgd([W], lr=0.5)
    (W * W).sum().backward()
    opt.step()                         # W written in place: dv sees it
    seen = [W.tolist(), r.tolist(), dv.tolist()]
    W.data[0, 0] = 100.0               # through .data: r sees it
    seen += [W.tolist(), r.tolist()]
    d = W.detach()
    d[1] = -7.0                        # through detach(): dv sees it
    seen += [W.tolist(), dv.tolist()]
    e = W.detach()
    ad.compute(W)                      # W gets its values: e still shares them
    with ad.no_grad():
        W += 1.0
    seen += [W.tolist(), e.tolist(), r.tolist()]
    ad.persist(W)
    W.data[1, 1] = 9.0
    seen += [W.tolist(), e.tolist(), dv.tolist()]
    return seen


def test_writes_reach_the_views_of_every_tensor_sharing_the_array():
    # on dask a write rebinds the written tensor's array and the views of that tensor only: a
    # view of w.data missed an optimizer's step, a view of w missed a write through w.data or
    # detach(), and compute()/persist() gave w a new array, so a detach() taken before missed
    # every later write into w. On the cpu they share memory and all see every write.
    assert _shared_writes("dask") == _shared_writes("cpu")


def _detached_views(dev):
    m = ad.tensor(np.arange(6.0).reshape(2, 3).tolist(), device=dev).reshape(2, 3)   # a view itself
    r = m[1]
    d = r.detach()
    d[0] = 50.0                        # a detach() of a view: reaches m
    seen = [m.tolist(), r.tolist()]
    e = m[0].data                      # .data of a view nothing else holds
    e += 1.0
    seen.append(m.tolist())
    k = m.detach()[1]                  # a view of a detach() of a view
    k[2] = -3.0
    seen += [m.tolist(), r.tolist(), d.tolist()]
    return seen


def test_a_write_through_a_detach_of_a_view_reaches_the_base():
    # on dask d = m[1].detach(); d[0] = 50 changed d and m[1]'s own array, never m
    assert _detached_views("dask") == _detached_views("cpu")
