"""Backends that run analyzed programs: `sim` (NumPy, everywhere) and `cuda` (CuPy, Hopper)."""
