"""Target: telemetry costs ≤ 5% of a warm turn with tracing on and no exporter reachable.

Two processes' worth of services in one event loop, on embedded storage (SQLite + local folder) with the
benchmark's zero-latency scripted model, each with the three sample documents attached and warmed up:

- ``off``: no telemetry configured (the API's no-op tracer and meter: the default);
- ``on``: an SDK tracer provider with a batch span processor and an OTLP/HTTP exporter pointed at a closed
  loopback port, and a meter provider with a periodic OTLP reader to the same port (so nothing is reachable).
  Storage calls are wrapped in spans (the composition root wraps them when tracing is on).

Warm document turns (follow-ups with a ``document_chat`` cache hit) alternate in blocks, off then on, so load
from other processes on the machine hits both alike. Reported: per-turn medians and the overhead ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import AsyncExitStack

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from bench.common import BenchResult, Check, attach_samples, open_services, scripted_model, summarize, temporary_home
from bench.documents_common import exit_with, standalone
from orc import telemetry
from orc.turns import TurnRequest
from tests.emulators import free_port

TARGET_RATIO = 1.05


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10, help="turns per block")


async def run(args: argparse.Namespace) -> BenchResult:
    """Alternate blocks of warm turns without and with tracing."""
    result = BenchResult(name="telemetry")
    closed = f"http://127.0.0.1:{free_port()}"
    telemetry.quiet_dropped_span_warnings()  # as configure_telemetry does when it installs an exporter
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{closed}/v1/traces")))
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=f"{closed}/v1/metrics"))
    meter_provider = MeterProvider(metric_readers=[reader])
    samples: dict[str, list[float]] = {"off": [], "on": []}
    async with AsyncExitStack() as stack:
        home_off = stack.enter_context(temporary_home())
        home_on = stack.enter_context(temporary_home())
        off = await stack.enter_async_context(open_services("embedded", scripted_model(), home_off))
        with telemetry.providers(tracer_provider, meter_provider):
            on = await stack.enter_async_context(open_services("embedded", scripted_model(), home_on))
        for services, mode in ((off, "off"), (on, "on")):
            with telemetry.providers(*((tracer_provider, meter_provider) if mode == "on" else (None, None))):
                await attach_samples(services, "bench")
                await services.orchestrator.ask(question("bench"))  # warm: fills the file cache
        for block in range(args.blocks):
            # ABBA order: whatever drifts during a block (a conversation's growing history, the collector's
            # periodic work) weighs on both sides alike.
            order = ((off, "off"), (on, "on")) if block % 2 == 0 else ((on, "on"), (off, "off"))
            for turn in range(args.turns):
                for services, mode in order if turn % 2 == 0 else order[::-1]:
                    with telemetry.providers(*((tracer_provider, meter_provider) if mode == "on" else (None, None))):
                        started = time.perf_counter()
                        answer = await services.orchestrator.ask(question("bench"))
                        samples[mode].append((time.perf_counter() - started) * 1000)
                        assert answer.metadata.cache == "hit", answer.metadata
    tracer_provider.shutdown()
    meter_provider.shutdown(timeout_millis=1000)
    for mode, values in samples.items():
        result.rows.append({"telemetry": mode, **summarize(values)})
    ratio = statistics.median(samples["on"]) / statistics.median(samples["off"])
    result.checks.append(Check("warm turn with tracing on / off (median)", round(ratio, 3), TARGET_RATIO, unit="×"))
    return result


def question(conversation_id: str) -> TurnRequest:
    """The same warm document turn each time."""
    return TurnRequest(
        question="What is the monthly rent?", conversation_id=conversation_id, blob_names=["lease.txt", "handbook.txt"]
    )


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
