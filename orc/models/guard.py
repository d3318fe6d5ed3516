"""A process-wide switch that forbids real model requests, for test suites (like pydantic-ai's).

Real models built by :func:`orc.models.factory.build_chat_model` send every HTTP request through
:func:`httpx_request_hook` / :func:`async_httpx_request_hook`. While requests are forbidden, a request to a
host that is not loopback raises :class:`~orc.errors.ModelRequestsForbidden` before any connection is made.
Loopback stays allowed so wire tests can talk to a local OpenAI-compatible endpoint.

The switch is process-wide on purpose: model calls may happen on worker threads (sync ``invoke`` under an
executor, a server thread) where a context variable set by the test would not be visible.
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType

import httpx

from orc.errors import ModelRequestsForbidden

__all__ = [
    "allow_model_requests",
    "async_httpx_request_hook",
    "check_model_request",
    "forbid_model_requests",
    "guard_async_token_provider",
    "guard_token_provider",
    "httpx_request_hook",
    "is_loopback_host",
    "model_requests_allowed",
]

_lock = threading.Lock()
_allowed = True


def model_requests_allowed() -> bool:
    """Whether real (non-loopback) model requests are currently allowed."""
    return _allowed


def _set_allowed(value: bool) -> bool:
    global _allowed
    with _lock:
        previous = _allowed
        _allowed = value
    return previous


class _Override:
    """Applies a value at once; as a context manager it restores the previous value on exit."""

    def __init__(self, allowed: bool) -> None:
        self._previous = _set_allowed(allowed)

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _set_allowed(self._previous)


def forbid_model_requests() -> _Override:
    """Forbid real model requests: call it once, or use ``with forbid_model_requests():`` to scope it."""
    return _Override(False)


def allow_model_requests() -> _Override:
    """Allow real model requests again: call it once, or use it as a context manager to scope it."""
    return _Override(True)


def is_loopback_host(host: str) -> bool:
    """``localhost``, 127.0.0.0/8 and ::1 (with or without brackets)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_model_request(url: str | httpx.URL) -> None:
    """Raise :class:`ModelRequestsForbidden` if requests are forbidden and ``url`` is not on loopback."""
    if _allowed:
        return
    host = httpx.URL(str(url)).host
    if not is_loopback_host(host):
        raise ModelRequestsForbidden(
            f"a real model request to {host or 'an unknown host'} was attempted while model requests are "
            "forbidden; use orc.testing's scripted models or a loopback endpoint in tests"
        )


def httpx_request_hook(request: httpx.Request) -> None:
    """An ``httpx.Client`` request event hook; httpx runs it before opening a connection."""
    check_model_request(request.url)


async def async_httpx_request_hook(request: httpx.Request) -> None:
    """An ``httpx.AsyncClient`` request event hook (httpx awaits async client hooks)."""
    check_model_request(request.url)


def guard_token_provider(provider: Callable[[], str], endpoint: str) -> Callable[[], str]:
    """Check the switch before a bearer-token provider runs: acquiring an Entra ID token is network I/O too."""

    def guarded() -> str:
        check_model_request(endpoint)
        return provider()

    return guarded


def guard_async_token_provider(provider: Callable[[], Awaitable[str]], endpoint: str) -> Callable[[], Awaitable[str]]:
    """The async variant of :func:`guard_token_provider`."""

    async def guarded() -> str:
        check_model_request(endpoint)
        return await provider()

    return guarded
