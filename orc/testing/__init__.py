"""Test doubles shipped with orc (like pydantic-ai's TestModel/FunctionModel).

- :class:`ScriptedChatModel` replays a script of replies (text streamed word by word, tool calls, errors);
- :class:`FunctionChatModel` answers with a function of ``(messages, tools)``;
- both record every request (:class:`ModelRequest`) with the tools it offered, report usage, and can
  simulate latency;
- :func:`forbid_model_requests` / :func:`allow_model_requests` switch real model requests off and on
  process-wide; ``orc.testing.pytest_plugin`` has a ``no_model_requests`` fixture;
- :class:`HashedEmbeddingModel` is a deterministic embedding model (hashed bag of words) that counts requests;
- :class:`ObservedProvider` / :class:`ObservedBlobStore` wrap any store so every call can be counted, timed
  or made to fail.

:class:`ScriptExhausted` is defined in :mod:`orc.errors` (the one error tree) and re-exported here, beside the
doubles that raise it. The storage conformance suites live in :mod:`orc.testing.conformance`, which needs pytest
and is therefore not imported here.
"""

from orc.errors import ScriptExhausted
from orc.models.guard import allow_model_requests, forbid_model_requests, model_requests_allowed
from orc.testing.embeddings import HashedEmbeddingModel
from orc.testing.scripted import FunctionChatModel, ModelRequest, ResponseFunction, ScriptedChatModel, ScriptStep
from orc.testing.storage import ObservedBlobStore, ObservedCollection, ObservedProvider, Observer

__all__ = [
    "FunctionChatModel",
    "HashedEmbeddingModel",
    "ModelRequest",
    "ObservedBlobStore",
    "ObservedCollection",
    "ObservedProvider",
    "Observer",
    "ResponseFunction",
    "ScriptExhausted",
    "ScriptStep",
    "ScriptedChatModel",
    "allow_model_requests",
    "forbid_model_requests",
    "model_requests_allowed",
]
