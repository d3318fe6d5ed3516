"""Fixtures for the model tests: orc.testing's pytest plugin, imported the way a downstream project would."""

from orc.testing.pytest_plugin import no_model_requests

__all__ = ["no_model_requests"]
