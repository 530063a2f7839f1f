"""Shared test setup: GPU tests skip cleanly on machines without CuPy and a CUDA device (CI)."""

from __future__ import annotations

import functools
import os

import pytest
from hypothesis import settings

# CI derandomizes the property tests so a submission's result does not depend on luck;
# locally they keep exploring new examples.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@functools.cache
def gpu_missing_reason() -> str | None:
    """Why GPU tests cannot run here, or None. Cached: importing CuPy is slow."""
    try:
        import cupy  # type: ignore[import-not-found]

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return None
    except Exception:  # no CuPy, no driver, no device: all mean the same here
        pass
    return "needs CuPy and a CUDA GPU"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    reason = gpu_missing_reason() if gpu_items else None
    if reason:
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=reason))
