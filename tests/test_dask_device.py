"""The "dask" device: plumbing, chunks, compute/persist, the scheduler, lazy files, chunks in backward.

Values are compared with NumPy's (or the cpu device's); the distributed tests use tiny in-process
clusters (processes=False) so that they stay fast.
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="the dask device needs dask (pip install 'autodsl[dask]')")
dask = pytest.importorskip("dask")

import autodsl as ad
from autodsl.backend import dask_device
from autodsl.cli import main as cli
from autodsl.errors import DeviceError, TypeError_, ValueError_

ROOT = Path(__file__).resolve().parent.parent


class Computes(dask.callbacks.Callback):
    """Counts the computations the local schedulers run (a callback's start is called once each)."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def _start(self, dsk):
        self.n += 1


@pytest.fixture
def threads():
    """A session context whose dask arrays compute on dask's threads (no cluster)."""
    s = ad.Session(device="dask", scheduler="threads")
    with s.context():
        yield s
    s.close()


# -- plumbing ------------------------------------------------------------------------------------

def test_device_names_and_moves(threads):
    x = ad.tensor([1.0, 2.0, 3.0])
    assert x.device == "dask" and isinstance(x._data, da.Array)
    back = x.to("cpu")
    assert back.device == "cpu" and type(back._data) is np.ndarray
    np.testing.assert_array_equal(back.numpy(), [1.0, 2.0, 3.0])
    there = ad.tensor([4.0, 5.0], device="cpu").to("dask")
    assert there.device == "dask" and there.numpy().tolist() == [4.0, 5.0]
    assert "dask" in ad.backend.DEVICES if hasattr(ad, "backend") else True


def test_gradient_through_a_move_comes_back_to_the_device():
    w = ad.tensor([1.0, 2.0], device="dask", requires_grad=True)
    (w.to("cpu") ** 2).sum().backward()
    assert w.grad.device == "dask"
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0])


def test_session_device_and_cli():
    s = ad.Session(device="dask", scheduler="threads")
    s.run("x = ones(4) * 2.5\ns = x.sum()")
    assert s["x"].device == "dask" and s["s"].item() == 10.0
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        rc = cli.main(["--device", "dask", "--scheduler", "synchronous", "-c",
                       "print((arange(5) * 1.5).sum().item(), ones(2).device)"])
    assert rc == 0, buf.getvalue()
    assert buf.getvalue().split() == ["15.0", "dask"]


def test_unknown_device_names_dask():
    with pytest.raises(DeviceError, match="'dask'"):
        ad.zeros(2, device="tpu")


def test_mixing_devices_says_which_move_to_make(threads):
    a, b = ad.ones(2, device="cpu"), ad.ones(2, device="dask")
    with pytest.raises(DeviceError) as e:
        a + b
    assert e.value.message == ('add: tensors on different devices (cpu and dask); move them to one '
                               'device, e.g. .to("cpu") on the dask one')
    assert np.array_equal((a + b.to("cpu")).numpy(), [2.0, 2.0])


def test_missing_dask_says_how_to_install(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_dask(name, *a, **k):
        if name.startswith(("dask", "array_api_compat.dask")):
            raise ImportError(f"No module named {name!r}", name=name.split(".")[0])
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_dask)
    with pytest.raises(DeviceError, match=r'pip install "autodsl\[dask\]"'):
        dask_device.load()


# -- chunks --------------------------------------------------------------------------------------

def test_creation_functions_take_chunks(threads):
    assert ad.zeros(10, chunks=3)._data.chunks == ((3, 3, 3, 1),)
    assert ad.ones(4, 6, chunks=(2, 3))._data.chunks == ((2, 2), (3, 3))
    assert ad.full([5], 7.0, chunks=2)._data.chunks == ((2, 2, 1),)
    np.testing.assert_array_equal(ad.arange(7, chunks=3).numpy(), np.arange(7))
    np.testing.assert_allclose(ad.linspace(0, 1, 9, chunks=4).numpy(), np.linspace(0, 1, 9))
    np.testing.assert_array_equal(ad.eye(3, chunks=2).numpy(), np.eye(3))
    t = ad.tensor(np.arange(6.0), chunks=4)
    assert t._data.chunks == ((4, 2),)
    assert ad.ones_like(t)._data.chunks == ((4, 2),) and ad.zeros_like(t)._data.chunks == ((4, 2),)


def test_chunks_are_ignored_off_dask():
    np.testing.assert_array_equal(ad.ones(3, chunks=2, device="cpu").numpy(), np.ones(3))


def test_random_numbers_are_the_cpu_ones_below_the_lazy_size(threads):
    ad.seed(3)
    d = ad.rand(50, chunks=7)
    with ad.Session(device="cpu").context():
        ad.seed(3)
        c = ad.rand(50)
    assert d._data.chunks[0][0] == 7
    np.testing.assert_array_equal(d.numpy(), c.numpy())


def test_large_random_arrays_are_drawn_by_chunk_and_reproducible(threads, monkeypatch):
    monkeypatch.setattr(dask_device, "LAZY_RANDOM", 10)
    ad.seed(1)
    a = ad.randn(100, chunks=25)
    ad.seed(1)
    b = ad.randn(100, chunks=25)
    assert not dask_device._cached(a._data)             # nothing computed yet
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert abs(a.numpy().mean()) < 0.5 and 0.5 < a.numpy().std() < 1.5


def test_dask_arrays_stay_lazy_in_tensor(threads):
    arr = da.arange(12.0, chunks=5)
    t = ad.tensor(arr)
    assert t.device == "dask" and t._data.chunks == ((5, 5, 2),)
    t2 = ad.tensor(arr, chunks=6, dtype=ad.float32)
    assert t2._data.chunks == ((6, 6),) and t2.dtype is ad.float32
    np.testing.assert_array_equal(t2.numpy(), np.arange(12.0, dtype=np.float32))


def test_tensor_copies_a_host_array(threads):
    host = np.arange(4.0)
    t = ad.tensor(host)
    host[0] = 100.0
    assert t.numpy()[0] == 0.0


# -- backward follows the chunks ---------------------------------------------------------------

def test_grad_of_x_times_mean_keeps_x_chunks(threads):
    x = ad.rand(1000, chunks=100, requires_grad=True)
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    (x * w.mean()).sum().backward()
    assert x.grad._data.chunks == x._data.chunks
    np.testing.assert_allclose(x.grad.numpy(), np.full(1000, 1.5))
    np.testing.assert_allclose(w.grad.numpy(), [x.numpy().sum() / 2] * 2)


def test_a_broadcast_gradient_is_never_one_huge_chunk(threads):
    n = 50_000_000                       # 400 MB as float64: "auto" cuts it in ~128 MiB chunks
    x = ad.ones(n, chunks=n // 10, requires_grad=True)
    loss = x.mean()
    loss.backward()
    g = x.grad._data
    assert g.chunks == x._data.chunks
    # the expand of mean's backward itself (before the leaf's rechunk) is cut too
    e = ad.tensor(2.0).expand(n)._data
    assert len(e.chunks[0]) > 1 and max(e.chunks[0]) * 8 <= 256 * 2**20


# -- compute and persist --------------------------------------------------------------------------

def test_compute_gives_values_in_one_pass_with_grads(threads):
    x = ad.tensor(np.linspace(0, 1, 101), chunks=20)
    y = 3 * x + 2
    w = ad.tensor(0.5, requires_grad=True)
    b = ad.tensor(0.0, requires_grad=True)
    loss = ((w * x + b - y) ** 2).mean()
    loss.backward()
    with Computes() as c:
        out = ad.compute(loss, w, b)
        assert out == (loss, w, b) and all(o is t for o, t in zip(out, (loss, w, b)))
        values = loss.item(), w.grad.item(), b.grad.item(), repr(loss), repr(w.grad)
    assert c.n == 1                      # one pass; reading and printing afterwards compute nothing
    xs = np.linspace(0, 1, 101)
    r = 0.5 * xs - (3 * xs + 2)
    np.testing.assert_allclose(values[:3], [np.mean(r * r), np.mean(2 * r * xs), np.mean(2 * r)], rtol=1e-13)
    assert loss.device == "dask" and loss.grad_fn is not None


def test_printing_twice_computes_once(threads):
    t = ad.ones(10, chunks=3) * 4
    with Computes() as c:
        first, second = repr(t), repr(t)
        t.item() if t.ndim == 0 else t.numpy()
    assert first == second and c.n == 1


def test_a_write_is_seen_after_a_cached_read(threads):
    t = ad.zeros(3)
    assert t.numpy().tolist() == [0.0, 0.0, 0.0]
    with ad.no_grad():
        t += 1.0
    assert t.numpy().tolist() == [1.0, 1.0, 1.0]


def test_persist_keeps_values_and_history_starts_there(threads):
    w = ad.tensor([1.0, 2.0], requires_grad=True)
    with ad.no_grad():
        w -= 0.5 * ad.ones(2)
    ad.persist(w)
    assert w.requires_grad and w.is_leaf
    assert len(w._data.dask) <= len(w._data.chunks[0])      # one task per chunk: no history left
    np.testing.assert_array_equal(w.numpy(), [0.5, 1.5])


def test_compute_and_persist_are_no_ops_on_cpu():
    t = ad.tensor([1.0, 2.0])
    data = t._data
    assert ad.compute(t) is t and ad.persist(t) is t and t._data is data
    assert ad.compute(t, t) == (t, t)


def test_compute_refuses_what_is_not_a_tensor():
    with pytest.raises(TypeError_, match=r"compute\(\) takes tensors"):
        ad.compute(3.0)


# -- the scheduler ------------------------------------------------------------------------------

distributed = pytest.importorskip("distributed")


def test_an_existing_client_is_used_as_it_is():
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=None) as client:
        s = ad.Session(device="dask")
        s.run("v = (ones(6, chunks=2) * 3).sum().item()")
        assert s["v"] == 18.0
        assert s.scheduler.client() is client and not s.scheduler.started
        s.close()
        assert client.status == "running"          # not ours: left running


def test_a_local_cluster_starts_on_first_compute_and_closes_with_the_session(monkeypatch):
    made = []
    real = distributed.LocalCluster

    def tiny(**kw):                  # in-process, so that the test stays fast
        kw.update(processes=False)
        c = real(**kw)
        made.append(c)
        return c
    monkeypatch.setattr(distributed, "LocalCluster", tiny)
    with ad.Session(device="dask", workers=1) as s:
        s.run("x = ones(8, chunks=4) * 2")
        assert not made and not s.scheduler.started          # building a graph starts nothing
        s.run("v = x.sum().item()")
        assert s["v"] == 16.0 and len(made) == 1 and s.scheduler.started
        assert len(made[0].workers) == 1
        # a training step's parameters kept on the cluster, then used by the next graph
        s.run("w = tensor([1.0, 2.0], requires_grad=true)\nloss = (w * x[:2]).sum()\nloss.backward()\n"
              "no_grad {\n    w -= 0.25 * w.grad\n}\nkept = persist(w)\nv2 = (w * 4).sum().item()")
        assert s["w"].numpy().tolist() == [0.5, 1.5] and s["v2"] == 8.0
        assert any(type(v).__name__ == "Future" or "Future" in type(v).__name__
                   for v in dict(s["w"]._data.dask).values())
    assert not s.scheduler.started and made[0].status.name == "closed"


def test_an_address_is_passed_to_client():
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1,
                                  dashboard_address=":0") as cluster:
        s = ad.Session(device="dask", scheduler=cluster.scheduler_address)
        s.run("v = arange(4, chunks=2).sum().item()")
        assert s["v"] == 6
        client = s.scheduler.client()
        assert client.scheduler.address == cluster.scheduler_address and s.scheduler.started
        s.close()
        assert client.status == "closed" and cluster.status.name == "running"


def test_bad_scheduler_and_workers_are_refused():
    with pytest.raises(ValueError_, match="unknown dask scheduler"):
        ad.Session(device="dask", scheduler="fast")
    with pytest.raises(ValueError_, match="workers"):
        ad.Session(device="dask", workers=0)


# -- lazy files ---------------------------------------------------------------------------------

def test_load_npy_is_memory_mapped_and_lazy(tmp_path, threads):
    f = tmp_path / "big.npy"
    np.save(f, np.arange(10.0))
    t = ad.load(str(f), chunks=4)
    assert t.device == "dask" and t._data.chunks == ((4, 4, 2),)
    m = np.load(f, mmap_mode="r+")           # written after load: a lazy read sees it
    m[0] = 42.0
    m.flush()
    del m
    assert t.numpy()[0] == 42.0 and t.sum().item() == 42.0 + 45.0


def test_load_zarr(tmp_path, threads):
    zarr = pytest.importorskip("zarr")
    z = zarr.open_array(str(tmp_path / "a.zarr"), mode="w", shape=(9,), chunks=(4,), dtype="f8")
    z[:] = np.arange(9.0)
    t = ad.load(str(tmp_path / "a.zarr"))
    assert t.device == "dask" and t._data.chunks == ((4, 4, 1),)
    np.testing.assert_array_equal(t.numpy(), np.arange(9.0))
    with ad.Session(device="cpu").context():
        c = ad.load(str(tmp_path / "a.zarr"))
    assert c.device == "cpu" and c.numpy().tolist() == list(np.arange(9.0))


# -- the sample -------------------------------------------------------------------------------

def _run(args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        rc = cli.main(args)
    return rc, buf.getvalue().splitlines()


def test_big_regression_sample_gives_the_cpu_values_on_dask():
    sample = str(ROOT / "samples" / "big_regression.ad")
    rc_cpu, cpu = _run([sample, "--set", "N=5000", "--set", "steps=3"])
    rc_dask, dsk = _run(["--device", "dask", "--scheduler", "threads", sample, "--set", "N=5000",
                         "--set", "steps=3"])
    assert rc_cpu == 0 and rc_dask == 0, cpu + dsk
    assert len(cpu) == len(dsk) == 4
    for a, b in zip(cpu, dsk):
        wa, wb = a.split(), b.split()
        assert [w for w in wa if not w[-1].isdigit()] == [w for w in wb if not w[-1].isdigit()]
        np.testing.assert_allclose([float(w) for w in wa if w[-1].isdigit()],
                                   [float(w) for w in wb if w[-1].isdigit()], rtol=1e-12)


def test_repl_device_command_switches_to_dask():
    from autodsl.cli.repl import Repl
    out = io.StringIO()
    r = Repl(ad.Session(out=out, scheduler="threads"), out=out)
    for line in (":device dask", "x = ones(3) * 2", "print(x.sum().item(), x.device)"):
        r.handle(line)
    assert r.session.device == "dask"
    assert "device dask" in out.getvalue() and "6.0 dask" in out.getvalue()


def test_tensor_of_lists_and_of_a_memory_map_take_chunks(tmp_path, threads):
    t = ad.tensor([1.0, 2.0, 3.0, 4.0, 5.0], chunks=2)
    assert t._data.chunks == ((2, 2, 1),) and t.numpy().tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    np.save(tmp_path / "m.npy", np.arange(6.0))
    m = np.load(tmp_path / "m.npy", mmap_mode="r")
    t = ad.tensor(m, chunks=4)
    w = np.load(tmp_path / "m.npy", mmap_mode="r+")
    w[5] = 50.0
    w.flush()
    del w
    assert t._data.chunks == ((4, 2),) and t.numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 50.0]


def test_a_client_given_is_used_and_left_open():
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None,
                            set_as_default=False) as client:
        with ad.Session(device="dask", scheduler=client) as s:
            s.run("v = (arange(6, chunks=4) * 2).sum().item()")
            assert s["v"] == 30 and s.scheduler.client() is client and not s.scheduler.started
        assert client.status == "running"
