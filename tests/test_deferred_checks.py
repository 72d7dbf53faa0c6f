"""Value checks of ops that wait for the values off the host (core/deferred.py).

On "cuda" (here the recording device of tests/helpers/recording_xp.py) and on "dask" an op does
not read its inputs' values to test them: the test waits for the next read, which raises the
op's error at the op's position and takes back the .grad changes made since. On NumPy the
error is immediate, as before (the op-table and loss tests hold the exact messages).
"""
from __future__ import annotations

import io
import sys

import numpy as np
import pytest

import autodsl as ad
from autodsl.core import deferred
from autodsl.core.anomaly import AnomalyWarning
from tests.helpers.recording_xp import Rec, recording_cuda, stop_recording

LINE = sys._getframe().f_lineno     # (the tests below name their own lines relative to this one)


@pytest.fixture
def cuda(monkeypatch):
    c = recording_cuda(monkeypatch)
    yield c
    ad.anomaly(False)
    stop_recording(c)
    assert deferred.pending() is None, "a test left checks waiting"


def _values(t):
    return np.asarray(t._data._a if type(t._data) is Rec else t._data)


def _line_of(fn, text):
    """The line of the source of ``fn``'s module holding ``text``."""
    with open(fn.__code__.co_filename) as f:
        return next(i for i, ln in enumerate(f, 1) if text in ln)


def test_on_numpy_a_bad_class_index_raises_at_once():
    x = ad.tensor([[1.0, 2.0, 3.0]])
    with pytest.raises(ad.ValueError_) as e:
        ad.cross_entropy(x, ad.tensor([5], dtype=ad.int64))
    assert e.value.message == "nll_loss: class indices must be in 0..2 (or ignore_index=-100), got 5..5"
    assert deferred.pending() is None


def test_a_bad_class_index_raises_at_the_read_with_the_ops_position(cuda):
    x = ad.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 2.0]], device="cuda", requires_grad=True)
    y = ad.tensor([0, 5], dtype=ad.int64, device="cuda")
    loss = ad.cross_entropy(x, y)       # the op: no error yet (no host sync)
    loss.backward()
    assert cuda.syncs == 0 and x.grad is not None
    with pytest.raises(ad.ValueError_) as e:
        loss.item()
    err = e.value
    assert err.message == ("nll_loss: class indices must be in 0..2 (or ignore_index=-100), got 0..5 "
                           "(found when the values were computed)")
    assert err.file == __file__ and err.line == _line_of(test_a_bad_class_index_raises_at_the_read_with_the_ops_position,
                                                          "loss = ad.cross_entropy(x, y)       # the op")
    assert x.grad is None               # the backward after the bad op is taken back
    assert deferred.pending() is None
    cuda.on = False
    assert abs(loss.item() - loss.item()) == 0      # read again: nothing waits, no error


def test_a_failed_check_puts_back_an_accumulated_grad(cuda):
    x = ad.tensor([[1.0, 2.0, 3.0]], device="cuda", requires_grad=True)
    good = ad.tensor([1], dtype=ad.int64, device="cuda")
    ad.cross_entropy(x, good).backward()
    cuda.on = False
    first = _values(x.grad).copy()
    ad.cross_entropy(x, good).item()        # nothing failed: read as usual
    bad = ad.tensor([3], dtype=ad.int64, device="cuda")
    loss = ad.cross_entropy(x, bad)
    loss.backward()                         # added into x.grad in place
    assert not np.array_equal(_values(x.grad), first)
    with pytest.raises(ad.ValueError_, match="class indices"):
        print(loss)
    np.testing.assert_array_equal(_values(x.grad), first)


def test_the_checks_made_before_a_good_read_are_not_taken_back(cuda):
    x = ad.tensor([[1.0, 2.0]], device="cuda", requires_grad=True)
    ad.cross_entropy(x, ad.tensor([1], dtype=ad.int64, device="cuda")).backward()
    x.grad.tolist()                         # settles the good check
    g = x.grad
    bad = ad.cross_entropy(x, ad.tensor([-3], dtype=ad.int64, device="cuda"))
    with pytest.raises(ad.ValueError_, match=r"got -3\.\.-3 \(found when"):
        bad.numpy()
    assert x.grad is g


def test_in_a_session_the_error_points_at_the_script(cuda):
    s = ad.Session(device="cuda", out=io.StringIO())
    src = ("w = tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=true)\n"
           "y = tensor([1, 2], dtype=int64)\n"
           "loss = cross_entropy(w, y)\n"
           "loss.backward()\n"
           "print(loss)\n")
    with pytest.raises(ad.ValueError_) as e:
        s.run(src, "train.ad")
    assert (e.value.file, e.value.line) == ("train.ad", 3)
    assert e.value.column is not None and e.value.source_line.startswith("loss = cross_entropy")
    assert s["w"].grad is None


def test_anomaly_mode_waits_for_the_read_and_names_the_op(cuda):
    ad.anomaly(True, mode="raise")
    x = ad.tensor([0.0, 1.0], device="cuda", requires_grad=True)
    y = ad.log(x) * 2.0         # log made -inf from finite values: found at the read
    assert cuda.syncs == 0
    with pytest.raises(ad.ValueError_) as e:
        y.sum().item()
    assert "anomaly: log" in e.value.message and "-inf" in e.value.message
    assert e.value.line == _line_of(test_anomaly_mode_waits_for_the_read_and_names_the_op, "y = ad.log(x) * 2.0")


def test_anomaly_mode_in_the_backward_waits_too(cuda):
    ad.anomaly(True, mode="raise")
    x = ad.tensor([0.0, 4.0], device="cuda", requires_grad=True)
    y = ad.sqrt(x).sum()        # finite forward; the gradient of sqrt at 0 is inf
    y.backward()
    assert cuda.syncs == 0
    with pytest.raises(ad.AutogradError, match="anomaly: SqrtBackward"):
        y.item()
    assert x.grad is None


def test_anomaly_warn_mode_warns_at_the_read(cuda):
    ad.anomaly(True)
    x = ad.tensor([-1.0, 1.0], device="cuda")
    y = ad.sqrt(x)
    with pytest.warns(AnomalyWarning, match="anomaly: sqrt"):
        values = y.tolist()
    assert np.isnan(values[0]) and values[1] == 1.0


def test_many_waiting_checks_are_read_in_one_go(cuda):
    x = ad.tensor([[1.0, 2.0]], device="cuda")
    y = ad.tensor([0], dtype=ad.int64, device="cuda")
    for _ in range(deferred._MAX_PENDING - 1):
        ad.cross_entropy(x, y)
    assert cuda.syncs == 0 and len(deferred.pending().checks) == deferred._MAX_PENDING - 1
    ad.cross_entropy(x, y)              # the 256th: all are read, in one transfer
    assert cuda.syncs == 1 and deferred.pending() is None


def _dask_reason():
    try:
        ad.zeros(1, device="dask")
    except ad.DSLError as e:
        return e.message
    return None


@pytest.mark.skipif(_dask_reason() is not None, reason=f"no dask device: {_dask_reason()}")
def test_on_dask_the_check_runs_at_compute():
    x = ad.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 2.0]], device="dask", requires_grad=True)
    y = ad.tensor([0, 7], dtype=ad.int64, device="dask")
    loss = ad.cross_entropy(x, y)       # on dask
    loss.backward()
    with pytest.raises(ad.ValueError_, match=r"got 0\.\.7 \(found when the values were computed\)") as e:
        loss.item()
    assert e.value.line == _line_of(test_on_dask_the_check_runs_at_compute, "loss = ad.cross_entropy(x, y)       # on dask")
    assert x.grad is None
    good = ad.cross_entropy(x, ad.tensor([0, 2], dtype=ad.int64, device="dask"))
    ref = ad.cross_entropy(ad.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 2.0]]), ad.tensor([0, 2], dtype=ad.int64))
    assert good.item() == pytest.approx(ref.item(), rel=1e-15)


@pytest.mark.skipif(_dask_reason() is not None, reason=f"no dask device: {_dask_reason()}")
def test_on_dask_a_negative_integer_tensor_power_is_torchs_integer():
    # (torch: a tensor exponent's negative entries give 1, +-1 or 0; only a number exponent is refused)
    r = ad.tensor([2, 3, -1, 1], dtype=ad.int64, device="dask") ** \
        ad.tensor([1, -1, -3, -2], dtype=ad.int64, device="dask")
    assert r.tolist() == [2, 0, -1, 1]
    with pytest.raises(ad.ValueError_, match="negative integer powers"):
        ad.tensor([2, 3], dtype=ad.int64, device="dask") ** -1


@pytest.mark.skipif(_dask_reason() is not None, reason=f"no dask device: {_dask_reason()}")
def test_on_dask_compute_runs_the_checks_in_its_pass_and_changes_nothing_when_one_fails():
    x = ad.tensor([[1.0, 2.0, 3.0]], device="dask", requires_grad=True)
    good = ad.cross_entropy(x, ad.tensor([2], dtype=ad.int64, device="dask"))
    good.backward()
    ad.compute(good, x)                 # the good check is read with them: nothing waits after
    assert deferred.pending() is None
    g = x.grad
    before = g.numpy()
    bad = ad.cross_entropy(x, ad.tensor([3], dtype=ad.int64, device="dask"))
    bad.backward()
    lazy = bad._data
    with pytest.raises(ad.ValueError_, match=r"got 3\.\.3 \(found when the values were computed\)"):
        ad.compute(bad, x)
    assert x.grad is g and bad._data is lazy
    np.testing.assert_array_equal(x.grad.numpy(), before)
    with pytest.raises(ad.ValueError_, match="class indices"):
        ad.cross_entropy(x, ad.tensor([-1], dtype=ad.int64, device="dask"))
        ad.persist(x)


def test_a_gather_index_out_of_range_raises_at_the_read(cuda):
    x = ad.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda", requires_grad=True)
    # (-1: the stand-in, NumPy inside, reads it as the last one; CuPy computes something too)
    idx = ad.tensor([[0, -1], [1, 0]], dtype=ad.int64, device="cuda")
    out = ad.gather(x, 1, idx)
    assert cuda.syncs == 0
    with pytest.raises(ad.IndexError_) as e:
        out.tolist()
    assert e.value.message == ("gather: index -1 is out of range for dim 1, which has size 2 (valid: 0 to 1) "
                               "(found when the values were computed)")


def test_on_numpy_a_gather_index_out_of_range_raises_at_once():
    x = ad.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ad.IndexError_, match="index -1 is out of range for dim 0"):
        ad.gather(x, 0, ad.tensor([[-1, 0]], dtype=ad.int64))
    assert deferred.pending() is None


@pytest.mark.skipif(_dask_reason() is not None, reason=f"no dask device: {_dask_reason()}")
def test_on_dask_compute_gives_the_checks_error_before_a_failed_task():
    x = ad.tensor([[1.0, 2.0], [3.0, 4.0]], device="dask")
    out = ad.gather(x, 1, ad.tensor([[0, 5], [1, 0]], dtype=ad.int64, device="dask"))
    with pytest.raises(ad.IndexError_, match=r"index 5 is out of range for dim 1.*\(found when the values"):
        ad.compute(out)


def test_a_training_loop_keeps_one_undo_entry_per_parameter_and_step(cuda):
    w = ad.tensor([[1.0, 2.0], [0.5, -1.0]], device="cuda", requires_grad=True)
    x = ad.tensor([[1.0, 1.0]], device="cuda")
    y = ad.tensor([1], dtype=ad.int64, device="cuda")
    opt = ad.sgd([w], lr=0.1)
    for _ in range(5):
        ad.cross_entropy(x @ w, y).backward()
        opt.step()
        opt.zero_grad()
    p = deferred.pending()
    assert len(p.checks) == 5 and len(p.undo) == 5
    assert all(old is None and saved is None for _, old, saved in p.undo)   # nothing held
    deferred.settle()
