"""A plan's timeline as a Perfetto trace, to open in ui.perfetto.dev (or any tool that reads
Perfetto's trace format).

The file is Perfetto's own protobuf format (protos/perfetto/trace/trace.proto: a `Trace` of
`TracePacket`s), with TrackEvent tracks (track_event.proto, track_descriptor.proto):

- one parent track for the plan ("h100 cost plan, CUDA graph");
- under it a track of kernels per model of the timeline (compiler/stages/timeline.py):
  "kernels: projected", "kernels: learned", "kernels: measured", each kernel a slice from its
  start to its end with its kind, limiter, launch term and device work as arguments;
- a track per model of graph outputs, each output an instant event at the time it is ready;
- with a data-parallel result (compiler/stages/dp.py), a track per way of releasing outputs
  with each gradient bucket's all-reduce as a slice.

Times are nanoseconds from the plan's start. The protobuf wire format is written here (varints
and length-delimited fields, protobuf's encoding guide), so the explorer needs no protobuf
package to serve a trace; tests read the file back with Perfetto's published protos.
"""

from __future__ import annotations

import struct

from compiler.stages.dp import RELEASE_LABELS
from compiler.target.launch import RUNTIME_LABELS

# Field numbers of protos/perfetto/trace/trace.proto and trace_packet.proto.
_TRACE_PACKET = 1
_TIMESTAMP, _SEQUENCE_ID, _TRACK_EVENT, _SEQUENCE_FLAGS, _TRACK_DESCRIPTOR = 8, 10, 11, 13, 60
# track_descriptor.proto
_TRACK_UUID, _TRACK_NAME, _TRACK_PARENT = 1, 2, 5
# track_event.proto and debug_annotation.proto
_EVENT_ANNOTATIONS, _EVENT_TYPE, _EVENT_TRACK, _EVENT_CATEGORIES, _EVENT_NAME = 4, 9, 11, 22, 23
_ANNOTATION_DOUBLE, _ANNOTATION_STRING, _ANNOTATION_NAME = 5, 6, 10
SLICE_BEGIN, SLICE_END, INSTANT = 1, 2, 3
SEQ_INCREMENTAL_STATE_CLEARED = 1
# Every packet comes from one writer: one sequence.
_SEQUENCE = 1
_PLAN_TRACK = 1


def timeline_trace(timeline: dict, title: str, dp: dict | None = None) -> bytes:
    """The trace file of a plan's timeline (module docstring); `title` names the plan
    ("h100 cost plan"). A timeline without models (unavailable) gives a trace of its title
    track alone."""
    packets = [_track(_PLAN_TRACK, f"{title}, {RUNTIME_LABELS[timeline['runtime']]}", None,
                      first=True)]
    events: list[tuple[int, bytes]] = []
    for index, model in enumerate(timeline["models"]):
        kernels_track, outputs_track = 10 + index, 20 + index
        packets += [_track(kernels_track, f"kernels: {model}", _PLAN_TRACK),
                    _track(outputs_track, f"outputs ready: {model}", _PLAN_TRACK)]
        for kernel in timeline["kernels"]:
            start, end = kernel["start_us"][model], kernel["end_us"][model]
            arguments = {"kind": kernel["kind"], "limiter": kernel["limiter"],
                         "launch_us": kernel["launch_us"][model], "device_us": end - start}
            events += [_event(start, SLICE_BEGIN, kernels_track, kernel["name"], "kernel",
                              arguments),
                       _event(end, SLICE_END, kernels_track)]
        for output in timeline["outputs"]:
            events.append(_event(output["ready_us"][model], INSTANT, outputs_track,
                                 output["name"], "output",
                                 {"kernel": output["kernel"], "bytes": output["bytes"]}))
    for index, (release, figures) in enumerate(((dp or {}).get("releases") or {}).items()):
        track = 30 + index
        packets.append(_track(track, f"all-reduce: {RELEASE_LABELS[release]}", _PLAN_TRACK))
        for number, bucket in enumerate(figures["buckets"]):
            events += [_event(bucket["start_us"], SLICE_BEGIN, track, f"bucket {number}",
                              "all-reduce", {"bytes": bucket["bytes"],
                                             "gradients": bucket["gradients"],
                                             "ready_us": bucket["ready_us"],
                                             "waits_on": bucket["kernel"]}),
                       _event(bucket["end_us"], SLICE_END, track)]
    # A slice's end and the next slice's begin may share a timestamp: the end first.
    events.sort(key=lambda event: event[0])
    packets += [packet for _, packet in events]
    return b"".join(_field_bytes(_TRACE_PACKET, packet) for packet in packets)


def _track(uuid: int, name: str, parent: int | None, first: bool = False) -> bytes:
    descriptor = _field_varint(_TRACK_UUID, uuid) + _field_bytes(_TRACK_NAME, name.encode())
    if parent is not None:
        descriptor += _field_varint(_TRACK_PARENT, parent)
    packet = _field_varint(_SEQUENCE_ID, _SEQUENCE) + _field_bytes(_TRACK_DESCRIPTOR,
                                                                   descriptor)
    if first:
        packet += _field_varint(_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED)
    return packet


def _event(time_us: float, kind: int, track: int, name: str | None = None,
           category: str | None = None, arguments: dict | None = None) -> tuple[int, bytes]:
    nanoseconds = max(0, round(time_us * 1000))
    event = _field_varint(_EVENT_TYPE, kind) + _field_varint(_EVENT_TRACK, track)
    if category is not None:
        event += _field_bytes(_EVENT_CATEGORIES, category.encode())
    if name is not None:
        event += _field_bytes(_EVENT_NAME, name.encode())
    for key, value in (arguments or {}).items():
        if value is not None:
            event += _field_bytes(_EVENT_ANNOTATIONS, _annotation(key, value))
    packet = (_field_varint(_TIMESTAMP, nanoseconds) + _field_varint(_SEQUENCE_ID, _SEQUENCE)
              + _field_bytes(_TRACK_EVENT, event))
    return nanoseconds, packet


def _annotation(name: str, value) -> bytes:
    head = _field_bytes(_ANNOTATION_NAME, name.encode())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return head + _tag(_ANNOTATION_DOUBLE, 1) + struct.pack("<d", float(value))
    return head + _field_bytes(_ANNOTATION_STRING, str(value).encode())


def _tag(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def _field_varint(field: int, value: int) -> bytes:
    return _tag(field, 0) + _varint(value)


def _field_bytes(field: int, value: bytes) -> bytes:
    return _tag(field, 2) + _varint(len(value)) + value


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)
