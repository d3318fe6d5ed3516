"""Turning the ``ORC_MODEL`` spec into a chat model: offline, OpenAI(-compatible) or Azure OpenAI.

Real models get httpx clients whose request hook enforces :mod:`orc.models.guard`, timeouts, and bounded
retries: the OpenAI SDK retries 429 and 5xx answers with backoff and honours ``Retry-After``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import httpx
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.runnables import RunnableBinding
from pydantic import SecretStr

from orc.errors import ConfigurationError
from orc.models.guard import (
    async_httpx_request_hook,
    guard_async_token_provider,
    guard_token_provider,
    httpx_request_hook,
)
from orc.models.offline import OfflineExtractiveModel

__all__ = [
    "AZURE_SCOPE",
    "DEFAULT_AZURE_API_VERSION",
    "LOCAL_API_KEY",
    "build_chat_model",
    "entra_token_providers",
    "guarded_http_clients",
    "model_label",
    "openai_client_options",
]

AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
DEFAULT_AZURE_API_VERSION = "2024-10-21"
"""The Azure OpenAI GA API version used when ``OPENAI_API_VERSION`` is not set."""
LOCAL_API_KEY = "not-needed"
"""Sent to an OpenAI-compatible server given by base URL when no key is configured: local servers ignore it."""


def build_chat_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | SecretStr | None = None,
    timeout: float,
    max_retries: int,
    environ: Mapping[str, str] | None = None,
    resources: AsyncExitStack | None = None,
) -> BaseChatModel:
    """Build the chat model ``spec`` names: ``offline``, ``openai:<model>`` or ``azure:<deployment>``.

    ``environ`` (default: the process environment) supplies what langchain-openai would read itself:
    ``OPENAI_API_KEY``, ``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY`` and ``OPENAI_API_VERSION``.
    ``resources``, when given, closes what the model holds open (its HTTP connection pools, an Entra ID
    credential's sessions) when the stack closes; without it they live as long as the process.
    """
    kind, _, name = spec.strip().partition(":")
    kind, name = kind.strip().lower(), name.strip()
    if kind == "offline" and not name:
        return OfflineExtractiveModel()
    if kind in ("openai", "azure") and name:
        from langchain_openai import AzureChatOpenAI, ChatOpenAI

        options = openai_client_options(
            "ORC_MODEL",
            kind,
            name,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            environ=environ,
            resources=resources,
        )
        return (ChatOpenAI if kind == "openai" else AzureChatOpenAI)(stream_usage=True, **options)
    raise ConfigurationError(
        f"ORC_MODEL={spec!r} is not a model spec: use offline, openai:<model> or azure:<deployment>"
    )


def guarded_http_clients(timeout: float, resources: AsyncExitStack | None) -> dict[str, Any]:
    """Sync and async httpx clients carrying the model-request guard hook, closed with ``resources``."""
    sync_client = httpx.Client(timeout=timeout, follow_redirects=True, event_hooks={"request": [httpx_request_hook]})
    async_client = httpx.AsyncClient(
        timeout=timeout, follow_redirects=True, event_hooks={"request": [async_httpx_request_hook]}
    )
    if resources is not None:
        resources.callback(sync_client.close)
        resources.push_async_callback(async_client.aclose)
    return {"http_client": sync_client, "http_async_client": async_client}


def openai_client_options(
    setting: str,
    kind: str,
    name: str,
    *,
    base_url: str | None,
    api_key: str | SecretStr | None,
    timeout: float,
    max_retries: int,
    environ: Mapping[str, str] | None,
    resources: AsyncExitStack | None,
) -> dict[str, Any]:
    """The keyword arguments of a langchain-openai client, chat or embeddings (they share the names), for
    ``openai:<name>`` or ``azure:<name>`` (``kind``) as the setting ``setting`` spells it: the model, its
    endpoint, its key (or, on Azure without one, Entra ID), the guarded HTTP clients, timeout and retries."""
    env = os.environ if environ is None else environ
    key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
    common: dict[str, Any] = {"timeout": timeout, "max_retries": max_retries}
    common |= guarded_http_clients(timeout, resources)
    if kind == "openai":
        key = key or env.get("OPENAI_API_KEY") or (LOCAL_API_KEY if base_url else None)
        if not key:
            raise ConfigurationError(
                f"{setting}=openai:{name} needs an API key: set {setting}_API_KEY or OPENAI_API_KEY "
                f"(or {setting}_BASE_URL for a local OpenAI-compatible server)"
            )
        return {"model": name, "base_url": base_url, "api_key": SecretStr(key), **common}
    endpoint = base_url or env.get("AZURE_OPENAI_ENDPOINT")
    if not endpoint:
        raise ConfigurationError(f"{setting}=azure:{name} needs AZURE_OPENAI_ENDPOINT (or {setting}_BASE_URL)")
    common |= {
        "azure_deployment": name,
        "azure_endpoint": endpoint,
        "api_version": env.get("OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION,
    }
    key = key or env.get("AZURE_OPENAI_API_KEY")
    if key:
        return {"api_key": SecretStr(key), **common}
    sync_provider, async_provider = entra_token_providers(endpoint, resources)
    return {"azure_ad_token_provider": sync_provider, "azure_ad_async_token_provider": async_provider, **common}


def entra_token_providers(
    endpoint: str, resources: AsyncExitStack | None
) -> tuple[Callable[[], str], Callable[[], Awaitable[str]]]:
    """Guarded sync and async Entra ID bearer-token providers for ``endpoint`` (a key-less Azure OpenAI client).

    Entra ID (managed identity, workload identity, az login…) comes through DefaultAzureCredential. Token
    acquisition is network I/O outside the guarded httpx clients, so the providers check the guard too.
    """
    from azure.identity import DefaultAzureCredential, get_bearer_token_provider
    from azure.identity.aio import DefaultAzureCredential as AsyncDefaultAzureCredential
    from azure.identity.aio import get_bearer_token_provider as get_async_bearer_token_provider

    credential = DefaultAzureCredential()
    async_credential = AsyncDefaultAzureCredential()
    if resources is not None:
        resources.callback(credential.close)
        resources.push_async_callback(async_credential.close)
    sync_provider = get_bearer_token_provider(credential, AZURE_SCOPE)
    async_provider = get_async_bearer_token_provider(async_credential, AZURE_SCOPE)
    return guard_token_provider(sync_provider, endpoint), guard_async_token_provider(async_provider, endpoint)


def model_label(model: object) -> str:
    """How answers' metadata names the model: ``"orc-offline-extractive (offline)"`` or the model's name."""
    while isinstance(model, RunnableBinding):
        model = model.bound
    if isinstance(model, OfflineExtractiveModel):
        return f"{model.model_name} (offline)"
    for attribute in ("deployment_name", "model_name", "model"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__
