"""Op-table samples for linear algebra (einsum, det, inverse, solve) and the losses' keywords (see op_samples.py)."""
from __future__ import annotations

from op_samples import COMPOSITES, NP, TorchNS, add, r  # noqa: F401
