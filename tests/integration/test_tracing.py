"""Spans for a scheduling cycle and a binding cycle, checked with the SDK's in-memory
exporter; and no exporter at all when nothing is configured."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.runtime.app import DaemonOptions, open_daemon
from volsched.daemon.telemetry.tracing import make_tracer


async def test_span_tree_of_a_scheduled_pod(cluster: Cluster) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    cluster.server.load(
        [node("node-1"), storage_class("local"), local_pv("pv-1", "node-1"), claim("c1")]
    )
    client = await KubeClient.connect(str(cluster.kubeconfig))
    options = DaemonOptions(tracer=provider.get_tracer("test"), grace_seconds=5)
    daemon = await open_daemon(cluster.settings(), client, options)
    await daemon.start()
    try:
        cluster.server.load([pod("p", ("c1",))])
        await eventually(lambda: cluster.node_of("p") == "node-1", what="pod placed")
        await eventually(
            lambda: any(s.name == "binding_cycle" for s in exporter.get_finished_spans()),
            what="binding span",
        )
    finally:
        await daemon.stop()
        await client.close()
    spans = exporter.get_finished_spans()
    by_name = {s.name: s for s in spans}
    cycle = by_name["scheduling_cycle"]
    assert cycle.attributes is not None
    assert cycle.attributes["volsched.pod"] == "default/p"
    assert cycle.attributes["volsched.result"] == "scheduled"
    assert cycle.attributes["volsched.node"] == "node-1"
    assert cycle.attributes["volsched.nodes_evaluated"] == 1
    points = [
        s for s in spans if s.parent is not None and s.parent.span_id == cycle.context.span_id
    ]
    assert [s.name for s in points] == ["PreFilter", "Filter", "Score", "Reserve"]
    binding = by_name["binding_cycle"]
    writes = [
        s.name
        for s in spans
        if s.parent is not None and s.parent.span_id == binding.context.span_id
    ]
    assert writes == ["PUT PersistentVolume pv-1", "POST Binding default/p"]
    assert binding.attributes is not None and binding.attributes["volsched.result"] == "bound"


def test_no_endpoint_means_the_no_op_tracer() -> None:
    tracer, provider = make_tracer(None, {}, "test")
    assert provider is None
    assert isinstance(tracer, trace.NoOpTracer)
    tracer, provider = make_tracer(
        None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "t"
    )
    assert provider is not None
    provider.shutdown()
