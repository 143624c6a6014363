"""The learned cost model's dataset file: kernel samples (features.py), with a header naming
how they were made. The samples of a whole program are compiler/stages/learned/samples.py's.

A dataset file is gzip-compressed JSON lines (`.jsonl.gz`): the first line is the header,
every other line one sample:

    {"format": "fusion-explorer-costmodel-dataset", "version": 1,
     "device": "h100",              # the device model the plans were made for
     "origin": "measured",          # or "synthetic": targets from a known function (tests,
                                    # benchmarks), never a GPU prediction
     "gpu": "NVIDIA H100 80GB HBM3",  # the GPU that timed them (null when synthetic)
     "target": "...",               # how target_us was obtained, in words
     "compiler_version": "...", "created": "2026-11-21T10:00:00+00:00",
     "vocabulary": [...], "node_features": [...], "kernel_features": [...]}
    {"program": "softmax", "family": "softmax", "group": "softmax/cost/fusion.1",
     "strategy": "cost", "kernel": "fusion.1", "plan": "<CodeGenPlan.key()>",
     "codegen_plan": {...}, "nodes": [...], "opcodes": [...], "node_features": [[...]],
     "edges": [[producer, consumer], ...], "kernel_features": [...],
     "sol_us": ..., "projected_us": ..., "target_us": ..., "timing": {...} or null}

The header names the opcode vocabulary and feature columns the samples were computed with;
`read_dataset` refuses a file whose names differ from this code's (the numbers would mean
other things), and points at the line of any malformed record. Alongside the features every
record keeps what made it (program, strategy, kernel and its nodes, the CodeGen plan), so a
sample can be traced back to its kernel.
"""

from __future__ import annotations

import gzip
import json
import re
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from compiler.cost.learned.features import (KERNEL_FEATURES, NODE_FEATURES, OPCODES, KernelSample,
                                            feature_names, other_features)
from compiler.errors import InputError
from compiler.target.devices import get_device
from compiler.version import compiler_version as current_compiler_version

FORMAT = "fusion-explorer-costmodel-dataset"
VERSION = 1
ORIGINS = ("measured", "synthetic")
# Significant digits kept for features in the file: float32 holds about 7.
_DIGITS = 6


_VARIANT_SUFFIX = re.compile(r"(_(fwd|bwd|grad|backward|forward|train|infer|bf16|f16|f32|"
                             r"\d+l?|v\d+))+$")


def family_of(program: str) -> str:
    """The model family a program belongs to, for the held-out-family split: the part before
    "__" of XLA's test names ("reduce_row__epilogue" -> "reduce_row"), else the name without
    pass and precision suffixes ("layer_norm_bwd" -> "layer_norm", "transformer_12l" ->
    "transformer"). A dataset can name families explicitly instead."""
    name = Path(program).name.split("#")[0].split(".")[0]   # "file.hlo#1": module 1 of a file
    if "__" in name:
        return name.split("__")[0]
    return _VARIANT_SUFFIX.sub("", name) or name


# -- the file ---------------------------------------------------------------------------------


def dataset_header(device: str, origin: str, target: str, gpu: str | None = None,
                   compiler_version: str | None = None) -> dict:
    if origin not in ORIGINS:
        raise ValueError(f"origin must be one of {', '.join(ORIGINS)}, not {origin!r}")
    get_device(device)   # an unknown device is an InputError here, not a bad file later
    if compiler_version is None:
        compiler_version = current_compiler_version()
    return {"format": FORMAT, "version": VERSION, "device": device, "origin": origin,
            "gpu": gpu, "target": target, "compiler_version": compiler_version,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            **feature_names()}


def _rounded(values: np.ndarray) -> list:
    return [float(f"{v:.{_DIGITS}g}") for v in np.asarray(values, dtype=float).ravel()]


def sample_record(sample: KernelSample) -> dict:
    """One sample as a JSON-ready line of a dataset file."""
    width = len(NODE_FEATURES)
    flat = _rounded(sample.node_features)
    return {
        "program": sample.program, "family": sample.family, "group": sample.group,
        "strategy": sample.extra.get("strategy"), "kernel": sample.kernel, "plan": sample.plan,
        "codegen_plan": sample.extra.get("codegen_plan"), "nodes": list(sample.node_names),
        "opcodes": [int(k) for k in sample.opcodes],
        "node_features": [flat[k:k + width] for k in range(0, len(flat), width)],
        "edges": [[int(a), int(b)] for a, b in sample.edge_index.T],
        "kernel_features": _rounded(sample.kernel_features),
        "sol_us": sample.sol_us, "projected_us": sample.projected_us,
        "target_us": sample.target_us, "timing": sample.extra.get("timing"),
    }


def sample_from_record(record: dict) -> KernelSample:
    """The sample of one dataset line; KeyError / ValueError / TypeError when malformed."""
    nodes = list(record["nodes"])
    opcodes = np.array(record["opcodes"], dtype=np.int64)
    node_features = np.array(record["node_features"], dtype=np.float32)
    kernel_features = np.array(record["kernel_features"], dtype=np.float32)
    edges = np.array(record["edges"], dtype=np.int64).reshape(-1, 2).T.copy()
    if not (len(nodes) == len(opcodes) == node_features.shape[0]) or \
            node_features.shape[1:] != (len(NODE_FEATURES),):
        raise ValueError(f"{len(nodes)} nodes, {len(opcodes)} opcodes and node features of "
                         f"shape {node_features.shape} do not match")
    if kernel_features.shape != (len(KERNEL_FEATURES),):
        raise ValueError(f"{kernel_features.size} kernel features, not {len(KERNEL_FEATURES)}")
    if opcodes.size and not (0 <= opcodes.min() and opcodes.max() < len(OPCODES)):
        raise ValueError("an opcode index outside the vocabulary")
    if edges.size and not (0 <= edges.min() and edges.max() < len(nodes)):
        raise ValueError("an edge to a node the sample does not have")
    target = record.get("target_us")
    if target is not None and not float(target) > 0:
        raise ValueError(f"target_us must be positive, not {target}")
    return KernelSample(
        opcodes=opcodes, node_features=node_features, edge_index=edges,
        kernel_features=kernel_features, node_names=nodes, kernel=str(record["kernel"]),
        plan=str(record["plan"]), projected_us=float(record["projected_us"]),
        sol_us=float(record["sol_us"]),
        target_us=None if target is None else float(target),
        group=str(record["group"]), program=str(record["program"]),
        family=str(record.get("family") or family_of(str(record["program"]))),
        extra={"strategy": record.get("strategy"), "codegen_plan": record.get("codegen_plan"),
               "timing": record.get("timing")})


def write_dataset(path: str | Path, header: dict, samples: list[KernelSample]) -> None:
    """Write the dataset file atomically (a reader never sees half a file)."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    with gzip.open(partial, "wt", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        for sample in samples:
            out.write(json.dumps(sample_record(sample), separators=(",", ":")) + "\n")
    partial.replace(path)


def read_dataset(path: str | Path) -> tuple[dict, list[KernelSample]]:
    """(header, samples) of a dataset file; InputError naming the file and line of anything
    wrong, or saying that it was made with other features than this code computes."""
    path = Path(path)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            header = _header(path, next(lines, ""))
            samples = []
            for number, line in enumerate(lines, start=2):
                if not line.strip():
                    continue
                try:
                    samples.append(sample_from_record(json.loads(line)))
                except (json.JSONDecodeError, KeyError, ValueError, TypeError) as error:
                    kind = "missing field" if isinstance(error, KeyError) else "bad record"
                    raise InputError(f"{path}:{number}: {kind}: {error}") from None
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not a gzip-compressed dataset file ({error})") from None
    return header, samples


def read_dataset_header(path: str | Path) -> dict:
    """A dataset file's header alone (choosing files should not read every sample); the same
    errors as read_dataset."""
    path = Path(path)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            return _header(path, next(lines, ""))
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not a gzip-compressed dataset file ({error})") from None


def _header(path: Path, line: str) -> dict:
    try:
        header = json.loads(line)
    except json.JSONDecodeError as error:
        raise InputError(f"{path}:1: the header is not JSON ({error})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise InputError(f"{path}:1: not a {FORMAT} file")
    if header.get("version") != VERSION:
        raise InputError(f"{path}:1: dataset version {header.get('version')}, this code reads "
                         f"version {VERSION}")
    if header.get("origin") not in ORIGINS:
        raise InputError(f"{path}:1: origin must be one of {', '.join(ORIGINS)}, not "
                         f"{header.get('origin')!r}")
    differing = other_features(header)
    if differing:
        raise InputError(f"{path}:1: made with other {differing} than this version computes; "
                         f"collect the samples again")
    return header
