"""Telemetry spans carry no file names and no raw conversation or document ids in their URL attributes, under the
real ASGI instrumentation the Azure Monitor distro installs."""

from __future__ import annotations

import httpx
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orc.http import create_app
from orc.settings import Settings
from orc.telemetry_urls import ScrubUrls, scrub_url
from tests.support import lifespan

SECRETS = ("conv-secret-42", "doc-secret-7", "quarterly report.txt", "quarterly%20report.txt", "quarterly+report")


async def test_request_spans_show_route_words_and_hashes_instead_of_ids_and_file_names() -> None:
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(ScrubUrls())
    provider.add_span_processor(SimpleSpanProcessor(exported))
    app = create_app(Settings())
    async with lifespan(app) as manager:
        traced = OpenTelemetryMiddleware(manager.app, tracer_provider=provider)
        transport = httpx.ASGITransport(app=traced)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
            await client.get("/api/sessions/conv-secret-42/context/files/doc-secret-7")
            await client.get(
                "/api/sessions/conv-secret-42/export", params={"format": "json", "name": "quarterly report.txt"}
            )

    spans = exported.get_finished_spans()
    attributes = " ".join(f"{span.name} {dict(span.attributes or {})}" for span in spans)
    assert any("url.path" in (span.attributes or {}) or "http.target" in (span.attributes or {}) for span in spans)
    assert "/api/sessions/h-" in attributes
    for secret in SECRETS:
        assert secret not in attributes


def test_a_blob_url_keeps_its_host_and_loses_names_and_its_signature() -> None:
    scrubbed = scrub_url("https://acct.blob.core.windows.net/orc/acme/alice/c1/report.txt?sv=2024&sig=AbC%2B")

    assert scrubbed.startswith("https://acct.blob.core.windows.net/orc/h-")
    assert "acme" not in scrubbed and "report" not in scrubbed and "AbC" not in scrubbed
    assert scrubbed.endswith("?sv=&sig=")
