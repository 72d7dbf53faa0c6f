"""Op-table samples for gathers, scatters, masks, sorting, argmax/argmin and reductions over dims (see op_samples.py)."""
from __future__ import annotations

from op_samples import COMPOSITES, NP, TorchNS, add, r  # noqa: F401
