"""The process-wide switch that forbids real model requests."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from orc.errors import ModelRequestsForbidden
from orc.models.factory import build_chat_model
from orc.models.guard import (
    allow_model_requests,
    check_model_request,
    forbid_model_requests,
    is_loopback_host,
    model_requests_allowed,
)


@pytest.fixture
def no_dns(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record any name resolution: a request the guard stopped must not have reached the network."""
    lookups: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        lookups.append(args)
        raise OSError("network access in a test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return lookups


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.8.9.10", "::1", "[::1]", "api.localhost"])
def test_loopback_hosts_are_recognised(host: str) -> None:
    assert is_loopback_host(host)


@pytest.mark.parametrize("host", ["example.com", "10.0.0.1", "128.0.0.1", "localhost.example.com", ""])
def test_other_hosts_are_not_loopback(host: str) -> None:
    assert not is_loopback_host(host)


def test_the_switch_restores_the_previous_state_when_scoped() -> None:
    with forbid_model_requests():
        assert not model_requests_allowed()
        with allow_model_requests():
            assert model_requests_allowed()
            check_model_request("https://api.openai.com/v1/chat/completions")
        assert not model_requests_allowed()
        with pytest.raises(ModelRequestsForbidden):
            check_model_request("https://api.openai.com/v1/chat/completions")
        check_model_request("http://127.0.0.1:8000/v1/chat/completions")


async def test_a_forbidden_request_to_a_remote_host_fails_before_any_network_io(no_dns: list[Any]) -> None:
    model = build_chat_model(
        "openai:gpt-4o",
        base_url="http://example.invalid/v1",
        api_key="k",
        max_retries=2,
        environ={},
        timeout=5.0,
    )

    with forbid_model_requests(), pytest.raises(ModelRequestsForbidden):
        await model.ainvoke("hi")

    assert no_dns == []


def test_the_sync_client_is_guarded_too(no_dns: list[Any]) -> None:
    model = build_chat_model(
        "openai:gpt-4o", base_url="http://example.invalid/v1", api_key="k", environ={}, timeout=5.0, max_retries=0
    )

    with forbid_model_requests(), pytest.raises(ModelRequestsForbidden):
        model.invoke("hi")

    assert no_dns == []


async def test_entra_id_token_acquisition_is_guarded_before_the_credential_runs(no_dns: list[Any]) -> None:
    environ = {"AZURE_OPENAI_ENDPOINT": "https://example.openai.azure.com/"}
    model = build_chat_model("azure:chat", max_retries=0, environ=environ, timeout=5.0)

    with forbid_model_requests(), pytest.raises(ModelRequestsForbidden):
        await model.ainvoke("hi")

    assert no_dns == []


@pytest.mark.usefixtures("no_model_requests")
def test_the_pytest_fixture_forbids_requests_for_the_test() -> None:
    assert not model_requests_allowed()
    with pytest.raises(ModelRequestsForbidden):
        check_model_request("https://api.openai.com/v1")
