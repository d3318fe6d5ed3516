"""An HTTP client over the real ASGI app (lifespan included), on the embedded defaults in a temporary ORC_HOME."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import pytest

from orc.http import create_app
from orc.settings import Settings
from tests.support import lifespan

ClientFactory = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@asynccontextmanager
async def open_client(settings: Settings | None = None, **app_kwargs: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A client for an app built from ``settings`` (default: the test's environment)."""
    app = create_app(settings or Settings(), **app_kwargs)
    async with lifespan(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
            yield client


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    """A client on the embedded defaults (offline model, SQLite + local folder, no auth)."""
    async with open_client() as http:
        yield http


@pytest.fixture
def client_factory() -> ClientFactory:
    """Open clients with custom settings, model or stores."""
    return open_client


async def settled(client: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    """The session's manifest once no digest is being made: the last event of ``GET …/context/stream``, which
    ends by itself (bounded by the server) when nothing is parsing any more."""
    response = await client.get(f"/api/sessions/{session_id}/context/stream")
    assert response.status_code == 200, response.text
    manifests = [
        json.loads(line.removeprefix("data: "))
        for block in response.text.split("\n\n")
        if block.startswith("event: manifest")
        for line in block.split("\n")
        if line.startswith("data: ")
    ]
    assert manifests and not manifests[-1]["parsing"], manifests[-1:]
    manifest: dict[str, Any] = manifests[-1]
    return manifest


async def upload(
    client: httpx.AsyncClient, session_id: str, *files: tuple[str, bytes], **kwargs: Any
) -> httpx.Response:
    """POST the files to the session as multipart parts named ``files``."""
    parts = [("files", (name, data, "application/octet-stream")) for name, data in files]
    return await client.post(f"/api/sessions/{session_id}/context/files", files=parts, **kwargs)
