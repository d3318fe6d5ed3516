"""OpenTelemetry for orc: spans at the seams, a few metrics, JSON logs that carry the trace id.

Why it looks like this:

- Code that is instrumented only calls the OpenTelemetry **API** (:func:`span`, :func:`traced`, :func:`metrics`).
  Until :func:`configure_telemetry` installs an SDK provider, the API's tracer and meter are no-ops, so an
  unconfigured process pays a function call and an empty context manager per seam, nothing more.
- Exporters follow the environment: Azure Monitor when ``APPLICATIONINSIGHTS_CONNECTION_STRING`` is set
  (``azure-monitor-opentelemetry``), OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, nowhere otherwise.
  Exports run in the SDK's background batch processors: an unreachable collector never blocks a turn.
- Attributes are tenant-safe: organization and user ids are hashed (:func:`tenant_hash`), and no span carries
  document text, questions, answers, names of files or secrets — only ids, counts, sizes, durations and codes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

P = ParamSpec("P")
T = TypeVar("T")

INSTRUMENTATION = "orc"
AttributeValue = str | bool | int | float


@functools.lru_cache(maxsize=4096)
def tenant_hash(value: str) -> str:
    """A stable, non-reversible stand-in for an organization or user id (16 hex characters)."""
    return hashlib.sha256(f"orc-tenant:{value}".encode()).hexdigest()[:16]


@dataclass(slots=True)
class _Providers:
    """Providers that replace the global ones (tests, embedders that keep their own SDK set-up apart)."""

    tracer: trace.TracerProvider | None = None
    meter: otel_metrics.MeterProvider | None = None


_providers = _Providers()


@contextmanager
def providers(
    tracer_provider: trace.TracerProvider | None, meter_provider: otel_metrics.MeterProvider | None
) -> Iterator[None]:
    """Use these providers instead of the global ones inside the block (the in-memory exporters of the tests)."""
    saved = (_providers.tracer, _providers.meter)
    _providers.tracer, _providers.meter = tracer_provider, meter_provider
    try:
        yield
    finally:
        _providers.tracer, _providers.meter = saved


# Keyed by id() but holding the provider too: a provider that is gone could leave its id to a new one.
_tracers: dict[int, tuple[trace.TracerProvider, trace.Tracer]] = {}


def tracer() -> trace.Tracer:
    """orc's tracer (the API's no-op one until a provider is configured), made once per provider."""
    # trace.get_tracer builds a new tracer on every call: cached, an untraced seam costs next to nothing.
    provider = _providers.tracer or trace.get_tracer_provider()
    made = _tracers.get(id(provider))
    if made is None:
        made = _tracers[id(provider)] = (provider, provider.get_tracer(INSTRUMENTATION))
    return made[1]


class _SpanScope:
    """The context manager :func:`span` returns: a class rather than a generator, because it runs many times a turn
    and the generator-based ``start_as_current_span`` (two nested context managers) would cost more than the span."""

    __slots__ = ("_current", "_leaf", "_token")

    def __init__(self, name: str, attributes: Mapping[str, AttributeValue | None] | None, leaf: bool) -> None:
        clean = {key: value for key, value in attributes.items() if value is not None} if attributes else None
        self._current = tracer().start_span(
            name, attributes=clean, record_exception=False, set_status_on_exception=False
        )
        self._leaf = leaf
        self._token: object | None = None

    def __enter__(self) -> Span:
        if not self._leaf:
            self._token = otel_context.attach(trace.set_span_in_context(self._current))
        return self._current

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        try:
            if exc is not None:
                _failed(self._current, exc)
        finally:
            if self._token is not None:
                otel_context.detach(self._token)  # type: ignore[arg-type]
            self._current.end()


def span(
    name: str, attributes: Mapping[str, AttributeValue | None] | None = None, *, leaf: bool = False
) -> AbstractContextManager[Span]:
    """A span around a block; an exception marks it failed with the error's type and stable ``code`` only.

    The span is made current (its children nest under it) unless it is a ``leaf`` (storage calls): nothing
    below a leaf is traced, and skipping the context switch halves its cost.
    """
    return _SpanScope(name, attributes, leaf)


def _failed(current: Span, exc: BaseException) -> None:
    if current.is_recording():
        # The exception's message may quote user input or a storage URL: record its type and code only.
        current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        current.set_attribute("error.type", type(exc).__name__)
        code = getattr(exc, "code", None)
        if isinstance(code, str):
            current.set_attribute("orc.error.code", code)


def traced(name: str) -> Callable[[Callable[P, Awaitable[T]]], Callable[P, Awaitable[T]]]:
    """Decorate a coroutine function so each call runs in a span called ``name``."""

    def decorate(function: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
        @functools.wraps(function)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            with span(name):
                return await function(*args, **kwargs)

        return wrapper

    return decorate


def set_attributes(attributes: Mapping[str, AttributeValue | None]) -> None:
    """Add attributes to the current span (nothing when none is recording)."""
    current = trace.get_current_span()
    if current.is_recording():
        current.set_attributes({key: value for key, value in attributes.items() if value is not None})


@contextmanager
def turn_span(organization: str, user: str, conversation_id: str) -> Iterator[Span]:
    """The span and metrics of one turn: count, latency, and the failure's code when it fails."""
    started = time.perf_counter()
    instruments = metrics()
    outcome = "ok"
    try:
        with span(
            "orc.turn",
            {
                "orc.organization": tenant_hash(organization),
                "orc.user": tenant_hash(user),
                "orc.conversation": tenant_hash(conversation_id),
            },
        ) as current:
            yield current
    except BaseException:
        # Counted as a failed turn here; the request it belonged to is counted once, where it is answered.
        outcome = "failed"
        raise
    finally:
        instruments.turns.add(1, {"orc.outcome": outcome})
        instruments.turn_duration.record((time.perf_counter() - started) * 1000, {"orc.outcome": outcome})


def node(name: str, function: Callable[P, T]) -> Callable[P, T]:
    """A LangGraph node function that runs in a ``node.<name>`` span (signature kept for LangGraph's injection)."""
    import inspect

    span_name = f"node.{name}"
    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def async_node(*args: P.args, **kwargs: P.kwargs) -> Any:
            with span(span_name):
                return await function(*args, **kwargs)

        return async_node  # type: ignore[return-value]

    @functools.wraps(function)
    def sync_node(*args: P.args, **kwargs: P.kwargs) -> T:
        with span(span_name):
            return function(*args, **kwargs)

    return sync_node


# -- metrics ----------------------------------------------------------------------------------------------------


class Tally:
    """A monotonic count kept in this process and reported through an ``ObservableCounter`` when a reader collects.

    Why not a synchronous ``Counter``: each ``Counter.add`` of the SDK is costly inside a turn (attribute-set
    lookup, aggregation and exemplar checks under locks), and a turn adds to several counters. ``Tally.add`` is a
    dictionary increment under a lock; the SDK reads the totals once per export interval, as OpenTelemetry
    recommends for counts a program already keeps.
    """

    __slots__ = ("_lock", "_totals")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[tuple[tuple[str, AttributeValue], ...], int] = {}

    def add(self, amount: int, attributes: Mapping[str, AttributeValue] | None = None) -> None:
        """Add ``amount`` (≥ 0) to the count of this attribute set."""
        if amount <= 0:
            return
        key = tuple(sorted(attributes.items())) if attributes else ()
        with self._lock:
            self._totals[key] = self._totals.get(key, 0) + amount

    def observe(self, _options: otel_metrics.CallbackOptions) -> list[otel_metrics.Observation]:
        """The totals so far, one observation per attribute set (the callback of the observable counter)."""
        with self._lock:
            totals = list(self._totals.items())
        return [otel_metrics.Observation(total, dict(key)) for key, total in totals]


@dataclass(frozen=True, slots=True)
class Metrics:
    """orc's instruments: turns, their latency, tokens, model calls, rate-limited and failed requests.

    Counts are :class:`Tally` objects behind observable counters; latencies are histograms (recorded as they
    happen: a histogram has no observable form)."""

    turns: Tally
    turn_duration: otel_metrics.Histogram
    tokens: Tally
    model_calls: Tally
    rate_limited: Tally
    failed: Tally
    context_requests: Tally
    context_fulfilment: otel_metrics.Histogram
    embedding_requests: Tally
    embedded_texts: Tally


_instruments: dict[int, tuple[otel_metrics.MeterProvider, Metrics]] = {}


def _metrics_for(provider: otel_metrics.MeterProvider) -> Metrics:
    made = _instruments.get(id(provider))
    if made is None:
        made = _instruments[id(provider)] = (provider, _make_metrics(provider.get_meter(INSTRUMENTATION)))
    return made[1]


def _counted(meter: otel_metrics.Meter, name: str, unit: str, description: str) -> Tally:
    tally = Tally()
    meter.create_observable_counter(name, callbacks=[tally.observe], unit=unit, description=description)
    return tally


def _make_metrics(meter: otel_metrics.Meter) -> Metrics:
    return Metrics(
        turns=_counted(meter, "orc.turns", "{turn}", "Turns answered or failed"),
        turn_duration=meter.create_histogram("orc.turn.duration", unit="ms", description="Turn latency"),
        tokens=_counted(meter, "orc.tokens", "{token}", "Model tokens, by direction"),
        model_calls=_counted(meter, "orc.model.calls", "{call}", "Chat-model requests"),
        rate_limited=_counted(meter, "orc.requests.rate_limited", "{request}", "Requests refused by a rate limit"),
        failed=_counted(meter, "orc.requests.failed", "{request}", "Failed turns and requests"),
        context_requests=_counted(
            meter,
            "orc.context_requests",
            "{event}",
            "Context requests, by event: requested, supplied, run_without, expired, cancelled, superseded",
        ),
        context_fulfilment=meter.create_histogram(
            "orc.context_requests.fulfilment", unit="ms", description="Time from a context request to its end"
        ),
        embedding_requests=_counted(
            meter, "orc.embeddings.requests", "{request}", "Embedding requests, by purpose: spans, query"
        ),
        embedded_texts=_counted(meter, "orc.embeddings.texts", "{text}", "Texts embedded, by purpose: spans, query"),
    )


def metrics() -> Metrics:
    """The instruments of the current meter provider (made once per provider)."""
    return _metrics_for(_providers.meter or otel_metrics.get_meter_provider())


def record_failure(code: str, *, status: int) -> None:
    """Count a failed request by its stable code and HTTP status; a 429 also counts as rate-limited."""
    instruments = metrics()
    attributes: dict[str, AttributeValue] = {"orc.error.code": code, "http.response.status_code": status}
    instruments.failed.add(1, attributes)
    if status == 429:
        instruments.rate_limited.add(1, attributes)


@contextmanager
def model_call(purpose: str, model: str | None = None) -> Iterator[Span]:
    """The span of one chat-model request: what it was for (``answer``, ``planning``, ``digest``…) and the model's
    label; :func:`record_model_call` adds its token counts when the reply is in."""
    with span("model.call", {"orc.model.purpose": purpose, "gen_ai.request.model": model}) as current:
        yield current


def record_model_call(input_tokens: int, output_tokens: int, cache_read_tokens: int = 0) -> None:
    """Count one chat-model request and its tokens; put them on the current (model call's) span.

    ``cache_read_tokens`` are the input tokens the provider served from its prompt cache: the span says whether
    the request hit the cache (``orc.model.cache`` ``hit``/``miss``) and how much of it.
    """
    instruments = metrics()
    instruments.model_calls.add(1)
    if input_tokens:
        instruments.tokens.add(input_tokens, {"orc.token.direction": "input"})
    if output_tokens:
        instruments.tokens.add(output_tokens, {"orc.token.direction": "output"})
    current = trace.get_current_span()
    if current.is_recording():
        current.set_attributes(
            {
                "gen_ai.usage.input_tokens": input_tokens,
                "gen_ai.usage.output_tokens": output_tokens,
                "gen_ai.usage.cache_read_input_tokens": cache_read_tokens,
                "orc.model.cache": "hit" if cache_read_tokens else "miss",
            }
        )


def record_embedding_request(purpose: str, texts: int) -> None:
    """Count one embedding request (``spans`` at processing, ``query`` in a turn) and the texts it carried."""
    instruments = metrics()
    attributes: dict[str, AttributeValue] = {"orc.embeddings.purpose": purpose}
    instruments.embedding_requests.add(1, attributes)
    instruments.embedded_texts.add(texts, attributes)


# -- logs ---------------------------------------------------------------------------------------------------------


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record with the current trace and span ids (so logs join their traces)."""

    def format(self, record: logging.LogRecord) -> str:
        context = trace.get_current_span().get_span_context()
        entry: dict[str, Any] = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if context.is_valid:
            entry["trace_id"] = format(context.trace_id, "032x")
            entry["span_id"] = format(context.span_id, "016x")
        if record.exc_info and record.levelno <= logging.DEBUG:
            entry["exception"] = self.formatException(record.exc_info)  # tracebacks only at DEBUG
        return json.dumps(entry, ensure_ascii=False)


# -- set-up -------------------------------------------------------------------------------------------------------

_configured: str | None = None
_SDK_QUEUE_LOGGER = "opentelemetry.sdk._shared_internal"


def quiet_dropped_span_warnings() -> None:
    """Stop the SDK's batch processors from logging a warning for every span they drop.

    With the collector unreachable their queue fills within a few thousand spans, and from then on each span
    would log "Queue full, dropping span": a log record per span on the serving thread and a flood of
    identical lines. The exporter still warns about each failed export, which is what tells an operator the
    collector is down; export errors (ERROR) still show.
    """
    logging.getLogger(_SDK_QUEUE_LOGGER).setLevel(logging.ERROR)


def configure_telemetry(env: Mapping[str, str] | None = None, *, json_logs: bool = False) -> str | None:
    """Install exporters the environment asks for, once per process; returns ``azure-monitor``, ``otlp`` or None.

    With neither variable set nothing is installed and every seam stays a no-op.
    """
    global _configured
    env = os.environ if env is None else env
    if json_logs:
        for handler in logging.getLogger().handlers:
            handler.setFormatter(JsonLogFormatter())
    if _configured is not None:
        return _configured
    if env.get("APPLICATIONINSIGHTS_CONNECTION_STRING") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        quiet_dropped_span_warnings()
    if env.get("APPLICATIONINSIGHTS_CONNECTION_STRING"):
        from azure.monitor.opentelemetry import configure_azure_monitor  # heavy: only when exporting there

        from orc.telemetry_urls import ScrubUrls

        # The distro instruments FastAPI and the Azure SDK: their URL attributes are scrubbed before export.
        configure_azure_monitor(
            connection_string=env["APPLICATIONINSIGHTS_CONNECTION_STRING"],
            logger_name="orc",
            span_processors=[ScrubUrls()],
        )
        _configured = "azure-monitor"
    elif env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME", "orc")})
        from orc.telemetry_urls import ScrubUrls

        provider = TracerProvider(resource=resource)
        provider.add_span_processor(ScrubUrls())  # before the exporter's, so it exports scrubbed URLs
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # endpoint etc. from OTEL_* vars
        trace.set_tracer_provider(provider)
        otel_metrics.set_meter_provider(
            MeterProvider(resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())])
        )
        _configured = "otlp"
    return _configured


def tracing_enabled() -> bool:
    """Whether spans are recorded (a real tracer provider is installed)."""
    provider = _providers.tracer or trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
