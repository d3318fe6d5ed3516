"""The embeddings port: turning the ``ORC_EMBEDDINGS`` spec into an embedding model, or none (``off``).

Embeddings are a second, optional model port (DESIGN §6), configured like the chat model: ``azure:<deployment>``
(``AZURE_OPENAI_ENDPOINT`` or ``ORC_EMBEDDINGS_BASE_URL``, a key or Entra ID), ``openai:<model>`` (OpenAI, or
any OpenAI-compatible server — Ollama, vLLM, LM Studio — with ``ORC_EMBEDDINGS_BASE_URL``), or ``off``.

The clients are langchain-openai's, built with the same guarded httpx clients as the chat model (so
:mod:`orc.models.guard` forbids real requests in tests), a timeout, and the OpenAI SDK's bounded retries on 429,
5xx and dropped connections. Two settings differ from langchain's defaults, on purpose:

- ``check_embedding_ctx_length=False``: otherwise every call first tokenizes with tiktoken, which downloads its
  encoding from the internet on first use (outside the guard) and sends token ids that OpenAI-compatible servers
  reject. orc's spans are a few hundred words, far below every embedding model's context.
- batches are made here, one :meth:`OpenAIEmbeddingModel.embed` call per request, so each request is counted
  (telemetry ``orc.embeddings.requests``) and a caller can say how many requests a document cost.

The vectors travel as the SDK asks by default, base64 float32: parsing a JSON array costs the SDK a model
construction per float (a real share of a turn's CPU at an embedding's dimensions). A server that
answers floats anyway (Ollama does) is read as well: the SDK decodes only what came as base64.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import SecretStr

from orc.errors import ConfigurationError
from orc.telemetry import record_embedding_request

__all__ = [
    "EmbeddingModel",
    "EmbeddingPurpose",
    "OpenAIEmbeddingModel",
    "build_embedding_model",
    "model_key",
]

EmbeddingPurpose = Literal["spans", "query"]
"""What a request embeds: a document's spans (at processing) or a turn's retrieval query."""


@runtime_checkable
class EmbeddingModel(Protocol):
    """An embedding model: texts in, one vector per text out, in order.

    Contract: ``embed`` sends exactly one request for the texts it is given (callers batch) and returns one
    vector per text, all of the same length; it raises on failure after the client's bounded retries (it never
    returns a partial result). ``identity`` names the model and where it is served, so vectors stored under one
    identity are never compared with another's: a change of model re-embeds. Safe to call concurrently.
    """

    @property
    def identity(self) -> str:
        """``<kind>:<model>@<endpoint>``: what makes two vectors comparable."""
        ...

    @property
    def batch_size(self) -> int:
        """Texts per request."""
        ...

    async def embed(self, texts: Sequence[str], purpose: EmbeddingPurpose) -> list[list[float]]:
        """One request: the vectors of ``texts`` (at most :attr:`batch_size` of them)."""
        ...


def model_key(model: EmbeddingModel) -> str:
    """A short, storable key of ``model``'s identity (what stored vectors are filed under)."""
    return hashlib.sha256(model.identity.encode()).hexdigest()[:16]


class OpenAIEmbeddingModel:
    """:class:`EmbeddingModel` over a langchain-openai ``OpenAIEmbeddings`` / ``AzureOpenAIEmbeddings``."""

    def __init__(self, client: Any, *, identity: str, batch_size: int) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self._client = client
        self._identity = identity
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._requests = 0

    @property
    def identity(self) -> str:
        """``<kind>:<model>@<endpoint>``."""
        return self._identity

    @property
    def batch_size(self) -> int:
        """Texts per request."""
        return self._batch_size

    @property
    def requests(self) -> int:
        """Requests sent so far by this model (retries inside the SDK not counted)."""
        with self._lock:
            return self._requests

    async def embed(self, texts: Sequence[str], purpose: EmbeddingPurpose) -> list[list[float]]:
        """One request for ``texts``."""
        if len(texts) > self._batch_size:
            raise ValueError(f"at most {self._batch_size} texts per request")
        if not texts:
            return []
        with self._lock:
            self._requests += 1
        record_embedding_request(purpose, len(texts))
        # chunk_size = len(texts): langchain sends them as one request.
        vectors: list[list[float]] = await self._client.aembed_documents(list(texts), chunk_size=len(texts))
        if len(vectors) != len(texts):
            raise ValueError("the embedding model returned a different number of vectors than texts")
        return vectors


def build_embedding_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | SecretStr | None = None,
    timeout: float,
    max_retries: int,
    batch_size: int,
    environ: Mapping[str, str] | None = None,
    resources: AsyncExitStack | None = None,
) -> EmbeddingModel | None:
    """The embedding model ``spec`` names (``off``: none): ``openai:<model>`` or ``azure:<deployment>``.

    ``environ`` (default: the process environment) supplies ``OPENAI_API_KEY``, ``AZURE_OPENAI_ENDPOINT``,
    ``AZURE_OPENAI_API_KEY`` and ``OPENAI_API_VERSION``, as for the chat model; ``resources`` closes the HTTP
    connection pools (and an Entra ID credential) when the stack closes.
    """
    kind, _, name = spec.strip().partition(":")
    kind, name = kind.strip().lower(), name.strip()
    if kind == "off" and not name:
        return None
    # The HTTP clients load with the chat model's factory, only where embeddings are on.
    from orc.models.factory import openai_client_options

    if kind in ("openai", "azure") and name:
        from langchain_openai import AzureOpenAIEmbeddings, OpenAIEmbeddings

        options = openai_client_options(
            "ORC_EMBEDDINGS",
            kind,
            name,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            environ=environ,
            resources=resources,
        )
        client = (OpenAIEmbeddings if kind == "openai" else AzureOpenAIEmbeddings)(
            check_embedding_ctx_length=False, **options
        )
        where = (base_url or "api.openai.com") if kind == "openai" else options["azure_endpoint"]
        return OpenAIEmbeddingModel(client, identity=f"{kind}:{name}@{where}", batch_size=batch_size)
    raise ConfigurationError(
        f"ORC_EMBEDDINGS={spec!r} is not an embeddings spec: use off, openai:<model> or azure:<deployment>"
    )
