"""IEEE arithmetic inside a lazy device's tasks: log(0) is -inf there too, without NumPy's warning.

NumPy keeps its floating-point error state per thread (a ContextVar), and ``core.quiet.ieee``
sets it for the thread that runs ops. On "dask" the arithmetic runs later, in the scheduler's
threads or in a cluster's worker processes, which do not see that state:

* dask's local schedulers: ``compute_quietly`` runs the compute with the errors off in the
  calling thread's context; the threaded scheduler copies that context into every task
  (``dask.threaded.ContextAwareThreadPoolExecutor``), the synchronous one runs tasks in it;
* a ``dask.distributed`` cluster that autodsl starts or connects to: ``worker_plugin()``, which
  the scheduler registers on its Client, ignores NumPy's floating-point warnings in each worker
  process (the worker's task threads have their own contexts, so the filter is the process's).
  A Client the program made itself is used as it is, without the plugin.

On NumPy and CuPy nothing here runs (CuPy never warns; NumPy ops enter ``ieee`` themselves).
"""
from __future__ import annotations

import numpy as np

__all__ = ["FP_WARNINGS", "compute_quietly", "worker_plugin"]

# the messages of NumPy's floating-point RuntimeWarnings (np.errstate's "warn" state)
FP_WARNINGS = r"(divide by zero|invalid value|overflow|underflow) encountered"


def compute_quietly(compute, *args, **kwargs):
    """``compute(*args, **kwargs)`` (``dask.compute``, ``dask.persist``) with NumPy's
    floating-point errors ignored in the tasks the local schedulers run (see the module doc)."""
    with np.errstate(all="ignore"):
        return compute(*args, **kwargs)


def worker_plugin():
    """A ``distributed.WorkerPlugin`` that ignores NumPy's floating-point warnings in each worker
    process: ``client.register_plugin(worker_plugin())``. Defined here when asked for (distributed
    is optional) and sent by value, so a worker without autodsl installed runs it too."""
    from distributed.diagnostics.plugin import WorkerPlugin  # noqa: PLC0415  (optional dependency)

    class IEEEWorker(WorkerPlugin):
        name = "autodsl-ieee"

        def __init__(self, pattern):
            self.pattern = pattern

        def setup(self, worker):
            import warnings  # noqa: PLC0415  (runs in the worker)
            warnings.filterwarnings("ignore", message=self.pattern, category=RuntimeWarning)

    return IEEEWorker(FP_WARNINGS)
