"""A plan's exports, read back by the formats' own published code: the Perfetto trace
(compiler/stages/perfetto_trace.py) parsed with the `perfetto` package's generated protos
(perfetto_trace_pb2), and the Model Explorer graph (compiler/stages/model_explorer.py) built into
the `ai-edge-model-explorer` package's own dataclasses (model_explorer/graph_builder.py) by
dacite in strict mode, as Model Explorer's node-data runner reads a graph."""

from __future__ import annotations

import importlib.util
import sys
from importlib.metadata import distribution
from pathlib import Path

import dacite
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2

from compiler.fusion.explore import exploration_to_dict, explore
from compiler.importers import load_graph
from compiler.ir.summary import summarize
from compiler.stages.dp import data_parallel, dp_overlap
from compiler.stages.graph_view import fusion_graph
from compiler.stages.model_explorer import model_explorer_graph
from compiler.stages.perfetto_trace import timeline_trace
from compiler.stages.timeline import plan_timeline

STEP = Path(__file__).parents[2] / "tests" / "data" / "hlo" / "transformer_step_bf16.hlo"
TrackEvent = perfetto_trace_pb2.TrackEvent


@pytest.fixture(scope="module")
def step():
    graph = load_graph(str(STEP))
    summary = summarize(graph)
    plans = explore(graph, "h100", ["stitch"], runtime="stream")
    plan = exploration_to_dict(summary, "h100", plans)["strategies"]["stitch"]
    return graph, summary, plan


def _graph_builder():
    """model_explorer/graph_builder.py as the package ships it, loaded alone: the package's
    __init__ starts its web server's imports (flask), which a format check does not need."""
    path = distribution("ai-edge-model-explorer").locate_file("model_explorer/graph_builder.py")
    spec = importlib.util.spec_from_file_location("model_explorer_graph_builder", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module      # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


def test_the_perfetto_trace_reads_back_as_the_timeline(step):
    _, summary, plan = step
    timeline = plan_timeline(plan, "h100", "stream", summary["outputs"])
    dp = dp_overlap(timeline, summary["training"], data_parallel(8, "ib", bucket_mb=1))
    trace = perfetto_trace_pb2.Trace.FromString(timeline_trace(timeline, "h100 stitch", dp))

    tracks = {packet.track_descriptor.uuid: packet.track_descriptor
              for packet in trace.packet if packet.HasField("track_descriptor")}
    names = {track.name: uuid for uuid, track in tracks.items()}
    assert "h100 stitch, stream launches" in names
    assert {"kernels: projected", "outputs ready: projected",
            "all-reduce: outputs released when the step ends",
            "all-reduce: each output released when ready"} <= set(names)
    root = names["h100 stitch, stream launches"]
    assert all(track.parent_uuid == root for uuid, track in tracks.items() if uuid != root)
    assert all(packet.trusted_packet_sequence_id == 1 for packet in trace.packet)

    events = [packet for packet in trace.packet if packet.HasField("track_event")]
    assert [packet.timestamp for packet in events] == sorted(p.timestamp for p in events)
    kernel_track = names["kernels: projected"]
    begins = [packet for packet in events if packet.track_event.track_uuid == kernel_track
              and packet.track_event.type == TrackEvent.TYPE_SLICE_BEGIN]
    ends = [packet for packet in events if packet.track_event.track_uuid == kernel_track
            and packet.track_event.type == TrackEvent.TYPE_SLICE_END]
    assert [packet.track_event.name for packet in begins] == \
        [kernel["name"] for kernel in timeline["kernels"]]
    for packet, end, kernel in zip(begins, ends, timeline["kernels"]):
        assert packet.timestamp == round(kernel["start_us"]["projected"] * 1000)
        assert end.timestamp == round(kernel["end_us"]["projected"] * 1000)
        arguments = {a.name: a for a in packet.track_event.debug_annotations}
        assert arguments["kind"].string_value == kernel["kind"]
    instants = [packet for packet in events
                if packet.track_event.track_uuid == names["outputs ready: projected"]]
    assert len(instants) == len(summary["outputs"])
    assert all(packet.track_event.type == TrackEvent.TYPE_INSTANT for packet in instants)
    buckets = [packet for packet in events if packet.track_event.track_uuid
               == names["all-reduce: each output released when ready"]
               and packet.track_event.type == TrackEvent.TYPE_SLICE_BEGIN]
    assert len(buckets) == len(dp["releases"]["when_ready"]["buckets"])


def test_the_model_explorer_graph_is_model_explorers_own_format(step):
    graph, _, plan = step
    view = fusion_graph(graph, plan["kernels"])
    exported = model_explorer_graph(view, "h100 stitch")
    builder = _graph_builder()
    collection = dacite.from_dict(builder.GraphCollection, exported,
                                  config=dacite.Config(strict=True))
    (me_graph,) = collection.graphs
    assert len(me_graph.nodes) == len(graph.nodes)
    by_id = {node.id: node for node in me_graph.nodes}
    for kernel in plan["kernels"]:
        for name in kernel["nodes"]:
            node = by_id[name]
            attrs = {item.key: item.value for item in node.attrs}
            assert node.namespace == kernel["name"]
            assert attrs["kernel"] == kernel["name"] and attrs["limiter"] == kernel["limiter"]
            assert float(attrs["projected_us"]) == pytest.approx(kernel["proj_us"], abs=1e-3)
    # Every value a node reads is an incoming edge from an existing node.
    for node in graph:
        sources = [edge.sourceNodeId for edge in by_id[node.name].incomingEdges]
        assert sources == list(dict.fromkeys(node.operands))
    assert set(me_graph.groupNodeAttributes) == {kernel["name"] for kernel in plan["kernels"]}
