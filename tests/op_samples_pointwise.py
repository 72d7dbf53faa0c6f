"""Op-table samples for pointwise ops: cumulative sums and products, rounding, remainders, special functions, tril/triu (see op_samples.py)."""
from __future__ import annotations

from op_samples import COMPOSITES, NP, TorchNS, add, r  # noqa: F401
