"""IEEE results inside dask's tasks (backend/ieee_tasks.py): log(0) is -inf without NumPy's
warning in the scheduler's threads and in a cluster's worker processes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import autodsl as ad
from autodsl.backend.ieee_tasks import FP_WARNINGS, compute_quietly

dask = pytest.importorskip("dask")


def _warnings_of_log0():
    """In the thread or process that runs it: how many warnings np.log(0) gives."""
    with warnings.catch_warnings(record=True) as got:
        np.log(np.zeros(1))
        np.divide(np.zeros(1), 0.0)
    return len(got)


def test_the_pattern_matches_numpys_floating_point_warnings():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        with np.errstate(all="warn"):
            np.log(np.zeros(1))
            np.divide(np.zeros(1), 0.0)
            np.exp(np.array([1e4]))
            np.multiply(np.array([1e-300]), 1e-300)
    import re
    assert len(got) == 4 and all(re.match(FP_WARNINGS, str(w.message)) for w in got)


@pytest.mark.parametrize("scheduler", ["threads", "synchronous"])
def test_local_schedulers_run_tasks_with_the_errors_off(scheduler):
    task = dask.delayed(_warnings_of_log0)()
    with np.errstate(all="warn"):
        assert dask.compute(task, scheduler=scheduler)[0] == 2     # without: NumPy warns there
        assert compute_quietly(dask.compute, task, scheduler=scheduler)[0] == 0


def test_a_dask_tensor_computes_log0_without_a_warning():
    x = ad.tensor([0.0, 1.0, -1.0], device="dask")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ad.log(x).tolist()[:2] == [-np.inf, 0.0]
        assert (x / 0.0).tolist()[1:] == [np.inf, -np.inf]


def test_the_workers_of_a_cluster_autodsl_starts_ignore_the_warnings():
    # (a worker process without the plugin gives 2 here: its task threads warn as NumPy does)
    pytest.importorskip("distributed")
    from autodsl.backend.dask_device import Scheduler
    s = Scheduler(None, n_workers=1)
    try:
        client = s.client()             # a LocalCluster of one worker process, started here
        assert client.submit(_warnings_of_log0, pure=False).result() == 0
    finally:
        s.close()
