"""build_chat_model turning ORC_MODEL specs into models, and the labels answers carry."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from langchain_openai import AzureChatOpenAI, ChatOpenAI
from langchain_openai.chat_models.base import BaseChatOpenAI
from pydantic import SecretStr

from orc.composition import build_document_services, build_foundation, digest_model_for
from orc.errors import ConfigurationError
from orc.models.factory import DEFAULT_AZURE_API_VERSION, LOCAL_API_KEY, build_chat_model, model_label
from orc.models.offline import OfflineExtractiveModel
from orc.settings import Settings
from orc.testing import ScriptedChatModel


def api_key(model: BaseChatOpenAI) -> str | None:
    key = model.openai_api_key
    return key.get_secret_value() if isinstance(key, SecretStr) else None


AZURE_ENV = {"AZURE_OPENAI_ENDPOINT": "https://example.openai.azure.com/"}


def test_offline_builds_the_offline_extractive_model() -> None:
    model = build_chat_model("offline", environ={}, timeout=5.0, max_retries=0)

    assert isinstance(model, OfflineExtractiveModel)
    assert model_label(model) == "orc-offline-extractive (offline)"


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "azure:", "anthropic:claude", "offline:x", ""])
def test_an_unknown_spec_is_a_configuration_error_naming_orc_model(spec: str) -> None:
    with pytest.raises(ConfigurationError, match="ORC_MODEL"):
        build_chat_model(spec, environ={}, timeout=5.0, max_retries=0)


def test_openai_uses_the_given_key_timeout_retries_and_streams_usage() -> None:
    model = build_chat_model("openai:gpt-4o-mini", api_key="sk-test", timeout=12.5, max_retries=3, environ={})

    assert isinstance(model, ChatOpenAI)
    assert (model.model_name, model.request_timeout, model.max_retries, model.stream_usage) == (
        "gpt-4o-mini",
        12.5,
        3,
        True,
    )
    assert api_key(model) == "sk-test"
    assert model_label(model) == "gpt-4o-mini"


def test_openai_reads_openai_api_key_from_the_environment() -> None:
    model = build_chat_model("openai:gpt-4o", environ={"OPENAI_API_KEY": "sk-env"}, timeout=5.0, max_retries=0)

    assert isinstance(model, ChatOpenAI)
    assert api_key(model) == "sk-env"


def test_a_local_openai_compatible_server_needs_no_key() -> None:
    model = build_chat_model(
        "openai:llama3", base_url="http://127.0.0.1:11434/v1", environ={}, timeout=5.0, max_retries=0
    )

    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_base == "http://127.0.0.1:11434/v1"
    assert api_key(model) == LOCAL_API_KEY


def test_openai_without_any_key_or_base_url_fails_fast_naming_the_variables() -> None:
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        build_chat_model("openai:gpt-4o", environ={}, timeout=5.0, max_retries=0)


def test_azure_without_an_endpoint_names_azure_openai_endpoint() -> None:
    with pytest.raises(ConfigurationError, match="AZURE_OPENAI_ENDPOINT"):
        build_chat_model("azure:chat", api_key="k", environ={}, timeout=5.0, max_retries=0)


def test_azure_with_a_key_uses_it_and_the_deployment() -> None:
    model = build_chat_model(
        "azure:chat-prod", environ={**AZURE_ENV, "AZURE_OPENAI_API_KEY": "az-key"}, timeout=5.0, max_retries=0
    )

    assert isinstance(model, AzureChatOpenAI)
    assert model.deployment_name == "chat-prod"
    assert model.azure_endpoint == AZURE_ENV["AZURE_OPENAI_ENDPOINT"]
    assert model.openai_api_version == DEFAULT_AZURE_API_VERSION
    assert api_key(model) == "az-key"
    assert model.azure_ad_token_provider is None
    assert model_label(model) == "chat-prod"


def test_azure_without_a_key_uses_entra_id_token_providers() -> None:
    model = build_chat_model(
        "azure:chat", environ={**AZURE_ENV, "OPENAI_API_VERSION": "2025-01-01-preview"}, timeout=5.0, max_retries=0
    )

    assert isinstance(model, AzureChatOpenAI)
    assert model.azure_ad_token_provider is not None
    assert model.azure_ad_async_token_provider is not None
    assert model.openai_api_version == "2025-01-01-preview"


def test_a_bound_model_is_labelled_like_the_model_itself() -> None:
    model = OfflineExtractiveModel()

    assert model_label(model.bind_tools([])) == model_label(model)
    assert model_label(ScriptedChatModel([])) == "scripted"


@pytest.mark.parametrize(
    ("spec", "environ"),
    [
        ("openai:gpt-4o-mini", {"OPENAI_API_KEY": "sk-test"}),
        ("azure:chat", {**AZURE_ENV, "AZURE_OPENAI_API_KEY": "az-key"}),
        ("azure:chat", AZURE_ENV),  # Entra ID: its credentials are closed too
    ],
)
async def test_a_real_model_closes_its_connection_pools_with_the_resources_it_was_built_with(
    spec: str, environ: dict[str, str]
) -> None:
    async with AsyncExitStack() as resources:
        model = build_chat_model(spec, environ=environ, resources=resources, timeout=5.0, max_retries=0)
        assert isinstance(model, BaseChatOpenAI)
        assert not model.http_client.is_closed and not model.http_async_client.is_closed

    assert model.http_client.is_closed and model.http_async_client.is_closed


async def test_the_composition_closes_the_models_it_builds_when_it_closes(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path, model="openai:gpt-4o-mini", digest_model="openai:gpt-4o", model_base_url="http://127.0.0.1:9/v1"
    )
    async with AsyncExitStack() as stack:
        services = await build_document_services(settings, stack, await build_foundation(settings, stack))
        chat = services.model
        digests = digest_model_for(settings, chat, chat_model_given=False, digest_model=None, resources=stack)
        assert isinstance(chat, BaseChatOpenAI) and isinstance(digests, BaseChatOpenAI) and chat is not digests

    assert chat.http_async_client.is_closed and digests.http_async_client.is_closed
