"""Shared test helpers: finite-difference gradient checks and tensor conversion."""
from .gradcheck import GradcheckError, directional_check, gradcheck, gradgradcheck, to_ad  # noqa: F401
