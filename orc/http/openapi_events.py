"""The stream events' shapes in the OpenAPI document (``StreamEvent``: one of the typed events of orc.turns), and
the supply route's JSON body.

Streaming routes declare ``STREAM_RESPONSES``: their ``application/x-ndjson`` and ``text/event-stream`` bodies
are sequences of ``StreamEvent`` objects (one per line, or one per ``data:`` field).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from pydantic import TypeAdapter

from orc.handoff import SupplyBody
from orc.turns import Event

EVENT_SCHEMA = "StreamEvent"
_REF = {"$ref": f"#/components/schemas/{EVENT_SCHEMA}"}
STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "JSON, or the turn's events (one StreamEvent per NDJSON line or SSE data field).",
        "content": {"application/x-ndjson": {"schema": _REF}, "text/event-stream": {"schema": _REF}},
    }
}


def add_event_schemas(api: FastAPI) -> None:
    """Make the app's OpenAPI document define ``StreamEvent`` and the events it is one of."""
    generate: Callable[[], dict[str, Any]] = api.openapi

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is not None:
            return api.openapi_schema
        document = generate()
        events = TypeAdapter(Event).json_schema(ref_template="#/components/schemas/{model}")
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        schemas.update(events.pop("$defs", {}))
        schemas[EVENT_SCHEMA] = events
        # The supply route reads its JSON body itself (it also takes multipart): its schema is declared here.
        supply = SupplyBody.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(supply.pop("$defs", {}))
        schemas["SupplyBody"] = supply
        api.openapi_schema = document
        return document

    api.openapi = openapi  # type: ignore[method-assign]
