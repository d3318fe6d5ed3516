"""Encodings of the turn's event stream: NDJSON lines and server-sent events."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Literal

from orc.turns import Event

StreamFormat = Literal["ndjson", "sse"]
MEDIA_TYPES: dict[StreamFormat, str] = {"ndjson": "application/x-ndjson", "sse": "text/event-stream"}


def negotiate(accept: str) -> StreamFormat | None:
    """``ndjson`` or ``sse`` when the Accept header asks for a stream, else ``None`` (a JSON answer)."""
    accept = accept.lower()
    if "application/x-ndjson" in accept:
        return "ndjson"
    if "text/event-stream" in accept:
        return "sse"
    return None


def _json(event: Event) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


async def encode(events: AsyncIterator[Event], fmt: StreamFormat) -> AsyncIterator[bytes]:
    """Serialize events one by one, as they happen."""
    async for event in events:
        if fmt == "ndjson":
            yield (_json(event) + "\n").encode()
        else:
            yield f"event: {event['type']}\ndata: {_json(event)}\n\n".encode()
