"""pytest fixtures for code that uses orc models; enable with ``pytest_plugins = ["orc.testing.pytest_plugin"]``
in a top-level conftest, or import the fixtures into a conftest.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from orc.models.guard import forbid_model_requests

__all__ = ["no_model_requests"]


@pytest.fixture
def no_model_requests() -> Iterator[None]:
    """Forbid real (non-loopback) model requests for the duration of a test."""
    with forbid_model_requests():
        yield
