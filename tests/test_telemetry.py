"""Telemetry: spans per turn, node, tool call and storage call; metrics; JSON logs with the trace id; no leaks."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest
from langchain_core.messages import AIMessage
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, Sum
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orc import telemetry
from orc.documents.intake.uploads import Upload
from orc.errors import OrcError
from orc.models.metering import ModelMeter
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.storage.traced import TracedCollectionProvider, traced_blobs
from orc.turns import TurnRequest
from tests.documents.library_support import open_runtime
from tests.http.conftest import open_client

SECRET_TEXT = "The launch code of project Nightjar is 7741."
QUESTION = "What is the launch code of project Nightjar?"


@dataclass
class Recorded:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def metric_points(self) -> dict[str, float]:
        data = self.metrics.get_metrics_data()
        totals: dict[str, float] = {}
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = getattr(point, "count", 0)
                        totals[metric.name] = totals.get(metric.name, 0) + value
        return totals

    def metric_attributes(self, name: str, key: str) -> set[object]:
        data = self.metrics.get_metrics_data()
        return {
            (point.attributes or {}).get(key)
            for resource in (data.resource_metrics if data else [])
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        }


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    with telemetry.providers(tracer_provider, MeterProvider(metric_readers=[reader])):
        yield Recorded(exporter, reader)


async def test_a_document_turn_has_spans_for_the_turn_its_nodes_its_tool_call_and_storage(recorded: Recorded) -> None:
    async with open_runtime() as orc:
        await orc.foundation.session_files.add(
            telemetry_principal(), "c1", [Upload("nightjar.txt", SECRET_TEXT.encode())]
        )
        await orc.orchestrator.ask(TurnRequest(question=QUESTION, conversation_id="c1", blob_names=["nightjar.txt"]))

    names = [span.name for span in recorded.finished()]
    assert names.count("orc.turn") == 1
    assert {"node.query_planner", "node.mcp_executor", "node.context_builder", "node.answer"} <= set(names)
    assert "tool.call" in names
    purposes = [
        (span.attributes or {}).get("orc.model.purpose") for span in recorded.finished() if span.name == "model.call"
    ]
    assert purposes.count("answer") == 1  # the turn's one model request (the upload's digests make their own)
    model = next(
        s
        for s in recorded.finished()
        if s.name == "model.call" and (s.attributes or {}).get("orc.model.purpose") == "answer"
    )
    answer_node = next(span for span in recorded.finished() if span.name == "node.answer")
    assert model.parent is not None and model.parent.span_id == answer_node.context.span_id
    assert any(name.startswith("storage.") for name in names) and "blob.put" in names
    (turn,) = [span for span in recorded.finished() if span.name == "orc.turn"]
    tool = next(span for span in recorded.finished() if span.name == "tool.call")
    assert tool.attributes is not None and tool.attributes["orc.tool.name"] == "document_chat"
    assert tool.attributes["orc.cache"] == "miss"  # the file was processed for this turn
    # Node and tool spans are children of the turn's span.
    assert tool.context is not None and turn.context is not None
    assert tool.context.trace_id == turn.context.trace_id


async def test_a_storage_span_names_the_call_and_carries_its_sizes_and_outcome_but_no_key(recorded: Recorded) -> None:
    notes = await TracedCollectionProvider(MemoryCollectionProvider()).collection("notes")
    blobs = traced_blobs(MemoryBlobStore())

    created = await notes.create("org-secret", "n1", {"text": "x"})
    await notes.get("org-secret", "n1")
    await notes.get("org-secret", "missing")
    await notes.replace("org-secret", "n1", {"text": "y"}, if_match=created.etag)
    await notes.query("org-secret")
    await blobs.put("secret-name.txt", b"12345")
    await blobs.get("secret-name.txt")

    collection = {"db.collection.name": "notes"}
    assert [(span.name, dict(span.attributes or {})) for span in recorded.finished()] == [
        ("storage.create", collection),
        ("storage.get", {**collection, "orc.storage.found": True}),
        ("storage.get", {**collection, "orc.storage.found": False}),
        ("storage.replace", {**collection, "orc.storage.conditional": True}),
        ("storage.query", {**collection, "orc.storage.items": 1}),
        ("blob.put", {"orc.blob.bytes": 5}),
        ("blob.get", {"orc.blob.bytes": 5}),
    ]


async def test_spans_carry_hashed_tenant_ids_and_no_document_text_or_question(recorded: Recorded) -> None:
    async with open_runtime() as orc:
        await orc.foundation.session_files.add(
            telemetry_principal(), "c1", [Upload("nightjar.txt", SECRET_TEXT.encode())]
        )
        await orc.orchestrator.ask(TurnRequest(question=QUESTION, conversation_id="c1", blob_names=["nightjar.txt"]))

    everything = json.dumps(
        [
            {
                "name": s.name,
                "attributes": dict(s.attributes or {}),
                "events": [dict(e.attributes or {}) for e in s.events],
            }
            for s in recorded.finished()
        ]
    )
    (turn,) = [span for span in recorded.finished() if span.name == "orc.turn"]
    assert turn.attributes is not None
    assert turn.attributes["orc.organization"] == telemetry.tenant_hash("default")
    for leak in ("Nightjar", "7741", "nightjar.txt", '"default"', "default/default"):
        assert leak not in everything


async def test_metrics_count_turns_latency_and_model_calls(recorded: Recorded) -> None:
    async with open_runtime() as orc:
        await orc.orchestrator.ask(TurnRequest(question="Hello?"))
        await orc.orchestrator.ask(TurnRequest(question="Hello again?"))

    points = recorded.metric_points()
    assert points["orc.turns"] == 2
    assert points["orc.turn.duration"] == 2  # two latency samples


async def test_refused_requests_are_counted_as_failed_and_a_429_as_rate_limited_too(recorded: Recorded) -> None:
    keys = json.dumps({"key-a": {"organization": "acme", "user": "a"}})
    async with open_client(Settings(auth="api-key", api_keys=keys, rate_limit="1/hour")) as client:
        first = await client.post("/api/orc", json={"question": "Hello?"}, headers={"X-API-Key": "key-a"})
        refused = await client.post("/api/orc", json={"question": "Hello?"}, headers={"X-API-Key": "key-a"})
        missing = await client.get("/api/sessions/no-such-session", headers={"X-API-Key": "key-a"})

    assert (first.status_code, refused.status_code, missing.status_code) == (200, 429, 404)
    points = recorded.metric_points()
    assert points["orc.requests.failed"] == 2
    assert points["orc.requests.rate_limited"] == 1
    codes = recorded.metric_attributes("orc.requests.failed", "orc.error.code")
    assert codes == {"rate_limited", "session_not_found"}


async def test_a_model_call_has_its_own_span_with_token_counts_and_prompt_cache_use(recorded: Recorded) -> None:
    reply = AIMessage(
        "Hello.",
        usage_metadata={
            "input_tokens": 120,
            "output_tokens": 5,
            "total_tokens": 125,
            "input_token_details": {"cache_read": 100},
        },
    )
    meter = ModelMeter()
    with telemetry.model_call("answer", "azure:gpt-4o-mini"):
        meter.record(reply)
    with telemetry.model_call("planning"):
        meter.record(AIMessage("", usage_metadata={"input_tokens": 40, "output_tokens": 2, "total_tokens": 42}))

    hit, miss = [span for span in recorded.finished() if span.name == "model.call"]
    assert hit.attributes is not None and miss.attributes is not None
    assert hit.attributes["gen_ai.request.model"] == "azure:gpt-4o-mini"
    assert hit.attributes["orc.model.purpose"] == "answer"
    assert (hit.attributes["gen_ai.usage.input_tokens"], hit.attributes["gen_ai.usage.output_tokens"]) == (120, 5)
    assert (hit.attributes["orc.model.cache"], hit.attributes["gen_ai.usage.cache_read_input_tokens"]) == ("hit", 100)
    assert miss.attributes["orc.model.cache"] == "miss"
    assert recorded.metric_points()["orc.model.calls"] == 2


def test_a_failing_span_records_the_error_code_not_the_message(recorded: Recorded) -> None:
    with pytest.raises(OrcError), telemetry.span("work"):
        raise OrcError("secret path /acme/alice/x.txt", code="storage_unavailable")

    (work,) = recorded.finished()
    assert work.attributes is not None and work.attributes["orc.error.code"] == "storage_unavailable"
    assert "secret" not in json.dumps(dict(work.attributes)) and not work.events


def test_json_logs_carry_the_trace_id_of_the_current_span(recorded: Recorded) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(telemetry.JsonLogFormatter())
    logger = logging.getLogger("orc.test_telemetry")
    logger.addHandler(handler)
    try:
        with telemetry.span("outer") as current:
            logger.warning("inside")
        logger.warning("outside")
    finally:
        logger.removeHandler(handler)

    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert inside["trace_id"] == format(current.get_span_context().trace_id, "032x")
    assert inside["message"] == "inside" and inside["level"] == "WARNING"
    assert "trace_id" not in outside


async def test_log_format_json_makes_each_record_of_the_process_one_json_object() -> None:
    from orc.composition import build_runtime

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    formatters = {each: each.formatter for each in root.handlers}
    root.addHandler(handler)
    try:
        async with build_runtime(Settings()):
            logging.getLogger("orc.test_telemetry").warning("as text")
        async with build_runtime(Settings(log_format="json")):
            logging.getLogger("orc.test_telemetry").warning("as json")
    finally:
        root.removeHandler(handler)
        for each, formatter in formatters.items():
            each.setFormatter(formatter)

    lines = stream.getvalue().splitlines()
    assert "as text" in lines
    (record,) = [json.loads(line) for line in lines if "as json" in line]
    assert record["message"] == "as json" and record["level"] == "WARNING"


def test_without_an_exporter_configured_nothing_is_installed_and_spans_do_not_record() -> None:
    assert telemetry.configure_telemetry({}) is None
    assert not telemetry.tracing_enabled()
    with telemetry.span("noop") as current:
        assert not current.is_recording()


def telemetry_principal():  # type: ignore[no-untyped-def]
    from orc.principal import LOCAL_PRINCIPAL

    return LOCAL_PRINCIPAL


def test_an_unreachable_collector_does_not_log_a_warning_for_every_dropped_span(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Stuck(SpanExporter):
        """A collector that never answers: the processor's queue fills."""

        def __init__(self) -> None:
            self.release = threading.Event()

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            self.release.wait(5)
            return SpanExportResult.FAILURE

    exporter = Stuck()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=2, max_export_batch_size=1))
    telemetry.quiet_dropped_span_warnings()
    with caplog.at_level(logging.WARNING), telemetry.providers(provider, None):
        for _ in range(50):
            with telemetry.span("work"):
                pass
    exporter.release.set()
    provider.shutdown()

    assert not [record for record in caplog.records if "Queue full" in record.getMessage()]


async def test_counts_reach_a_collector_as_monotonic_sums_with_their_attributes(recorded: Recorded) -> None:
    async with open_runtime() as orc:
        await orc.orchestrator.ask(TurnRequest(question="Hello?"))
    collected = recorded.metrics.get_metrics_data()
    assert collected is not None
    sums = {
        metric.name: metric.data
        for resource in collected.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name in ("orc.turns", "orc.tokens", "orc.model.calls")
    }

    assert set(sums) == {"orc.turns", "orc.tokens", "orc.model.calls"}
    assert all(isinstance(data, Sum) and data.is_monotonic for data in sums.values())
    assert {point.attributes.get("orc.outcome") for point in sums["orc.turns"].data_points if point.attributes} == {
        "ok"
    }
    assert {
        point.attributes.get("orc.token.direction") for point in sums["orc.tokens"].data_points if point.attributes
    } == {"input", "output"}


async def test_embedding_requests_and_texts_are_counted_by_purpose(recorded: Recorded) -> None:
    from orc.models.embeddings import OpenAIEmbeddingModel

    class Client:
        async def aembed_documents(self, texts: list[str], chunk_size: int) -> list[list[float]]:
            return [[1.0, 0.0] for _ in texts]

    model = OpenAIEmbeddingModel(Client(), identity="openai:e@local", batch_size=8)
    await model.embed(["a", "b", "c"], "spans")
    await model.embed(["q"], "query")

    points = recorded.metric_points()
    assert (points["orc.embeddings.requests"], points["orc.embeddings.texts"]) == (2, 4)
    assert recorded.metric_attributes("orc.embeddings.requests", "orc.embeddings.purpose") == {"spans", "query"}
