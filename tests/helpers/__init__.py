"""Shared test helpers: finite-difference gradient checks and tensor conversion."""
from .gradcheck import GradcheckError, gradcheck, gradgradcheck, to_ad  # noqa: F401
