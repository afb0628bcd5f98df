"""OpenTelemetry spans for scheduling and binding cycles, exported over OTLP only when
asked to.

With no endpoint configured (neither ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` nor ``tracing.otlpEndpoint`` in the config file),
the tracer is OpenTelemetry's no-op tracer: spans cost a function call and nothing is
exported or kept.

Span tree:

    scheduling_cycle  (volsched.pod, volsched.result, volsched.node, volsched.nodes_evaluated)
      ├── PreFilter / Filter / Score / Reserve   (the extension points, timed by the cycle)
    binding_cycle     (volsched.pod, volsched.node, volsched.result)
      ├── PUT PersistentVolume <name> / PUT PersistentVolumeClaim <ns/name>
      ├── POST Replica <name> / POST Binding <ns/name> …  (one span per API write)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from volsched.scheduling.framework.runner import Decision

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

INSTRUMENTATION = "volsched"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def otlp_endpoint(configured: str | None, environ: Mapping[str, str]) -> str | None:
    if configured:
        return configured
    for variable in ENDPOINT_VARIABLES:
        if environ.get(variable):
            return environ[variable]
    return None


def make_tracer(
    configured_endpoint: str | None, environ: Mapping[str, str], instance: str
) -> tuple[Tracer, TracerProvider | None]:
    """A tracer exporting to the OTLP endpoint, or the no-op tracer when there is none."""
    endpoint = otlp_endpoint(configured_endpoint, environ)
    if endpoint is None:
        return trace.NoOpTracer(), None
    # The SDK and the exporter are loaded only when spans are exported: a daemon
    # without an endpoint starts without them.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    url = (
        endpoint
        if endpoint.rstrip("/").endswith("/v1/traces")
        else endpoint.rstrip("/") + "/v1/traces"
    )
    provider = TracerProvider(
        resource=Resource.create({"service.name": "volsched", "service.instance.id": instance})
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    return provider.get_tracer(INSTRUMENTATION), provider


def record_cycle(tracer: Tracer, decision: Decision, result: str) -> None:
    """The scheduling cycle as a span, with its extension points as children, from the
    timestamps the cycle took (the cycle itself stays free of tracing)."""
    if not decision.phases or not recording(tracer):
        return
    start = decision.phases[0][1]
    end = decision.phases[-1][2]
    span = tracer.start_span("scheduling_cycle", start_time=start)
    span.set_attribute("volsched.pod", decision.pod.meta.key)
    span.set_attribute("volsched.result", result)
    span.set_attribute("volsched.nodes_evaluated", len(decision.evaluated_nodes))
    if decision.node is not None:
        span.set_attribute("volsched.node", decision.node)
    if decision.message and decision.node is None:
        span.set_attribute("volsched.message", decision.message)
    context = trace.set_span_in_context(span)
    for name, begin, finish in decision.phases:
        child = tracer.start_span(name, context=context, start_time=begin)
        child.set_attribute("volsched.duration_seconds", (finish - begin) / 1e9)
        child.end(end_time=finish)
    if decision.error:
        span.set_status(Status(StatusCode.ERROR, decision.error))
    span.end(end_time=end)


def recording(tracer: Tracer) -> bool:
    """False for the no-op tracer: its spans are thrown away, so the attributes and
    children a span would carry are not built (a few per pod, at hundreds a second)."""
    return not isinstance(tracer, trace.NoOpTracer)


@contextmanager
def api_write(tracer: Tracer, method: str, kind: str, name: str) -> Iterator[Span]:
    """One span per API write of a binding cycle (child of the current span)."""
    if not recording(tracer):
        yield trace.INVALID_SPAN
        return
    with tracer.start_as_current_span(f"{method} {kind} {name}") as span:
        span.set_attribute("http.request.method", method)
        span.set_attribute("k8s.kind", kind)
        span.set_attribute("k8s.name", name)
        yield span
