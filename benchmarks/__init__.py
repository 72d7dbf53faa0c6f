"""The autodsl benchmark runner (`python -m benchmarks`), not part of the package.

One math thread per library: the thread variables are set here, before any
module of the runner imports NumPy or PyTorch, and they are inherited by the
subprocesses of W0 and W5.
"""

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_name] = "1"
