"""The autodsl language: grammar -> AST -> interpreter over the tensor API."""
from __future__ import annotations

from autodsl.lang.parser import is_incomplete, parse

__all__ = ["parse", "is_incomplete"]
