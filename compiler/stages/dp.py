"""Data-parallel overlap: a training step's gradient all-reduce against the compute that remains.

In data-parallel training every replica computes the step's gradients on its own batch, then
the replicas average them with an all-reduce, gradient bucket by gradient bucket, as PyTorch's
DistributedDataParallel does: a bucket is sent as soon as every gradient in it is ready, on a
communication stream beside the compute, so communication overlaps the rest of the backward
pass. Whatever communication is still running when the compute ends is EXPOSED: the step takes
that much longer than its compute.

The simulation here, over a plan's timeline (compiler/stages/timeline.py):

- gradients: the step's gradient outputs (compiler/ir/training.py), each with its size in bytes
  and the time it is ready: when the kernel that writes it ends. An updated parameter (SGD's
  `w - lr * g`) stands in for its gradient: the update is one elementwise op on it, and a fused
  plan computes it in the gradient's own kernel;
- buckets: the gradients in the order they become ready (outputs ready together in reverse
  output order, as DDP fills buckets in reverse parameter order), each bucket filled until the
  next gradient would take it past the cap (a gradient bigger than the cap is a bucket alone).
  DDP's cap is `bucket_cap_mb` = 25 MiB (torch.nn.parallel.DistributedDataParallel);
- one ring all-reduce per bucket of B bytes over n GPUs: every GPU sends and receives
  2(n-1)/n x B over its link (nccl-tests, doc/PERFORMANCE.md: an all-reduce's bus bandwidth is
  its algorithm bandwidth x 2(n-1)/n), in 2(n-1) ring steps of latency alpha each (NCCL's own
  model, src/graph/tuning.cc: a ring all-reduce is 2(n-1) steps):

      allreduce(B) = 2(n-1)/n x B / bandwidth + 2(n-1) x alpha

  and buckets go one after another: a bucket starts when it is ready and the one before it is
  done. n = 1 is no communication at all;
- two ways the step's outputs are released, which is the question fusion decides: "step_end",
  every output when the whole step's computation ends (one fused cluster, or a runtime that
  returns the outputs together), and "when_ready", each output as soon as the kernel that
  writes it ends (the cluster's launch split so each output is returned when ready, as the PAI
  work on XLA did).

Step time = max(compute end, last bucket's end); exposed communication = step time - compute.
The communication is assumed not to slow the compute (NCCL's kernels take some SMs in truth).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.errors import InputError

RELEASES = ("step_end", "when_ready")
RELEASE_LABELS = {"step_end": "outputs released when the step ends",
                  "when_ready": "each output released when ready"}
# PyTorch DDP's bucket_cap_mb default, in MiB (DDP multiplies it by 1024 * 1024).
DEFAULT_BUCKET_MB = 25.0
# How many of the first buckets' holding kernels a result names.
HELD_BACK_BUCKETS = 3
_DIGITS = 4


@dataclass(frozen=True)
class Link:
    """The link a ring all-reduce runs over: per-GPU bandwidth one way, per-step latency."""

    name: str
    gbps: float          # GB/s (1e9 bytes per second) each GPU sends (and receives) at
    alpha_us: float      # latency of one ring step
    source: str

    def to_dict(self) -> dict:
        return {"name": self.name, "gbps": self.gbps, "alpha_us": self.alpha_us,
                "source": self.source}


# NCCL's per-step latency of a ring all-reduce with its Simple protocol (src/graph/tuning.cc,
# hwLat: 3.4 us over NVLink, 9.6 us over the network; NVIDIA/nccl at commit 01afd20).
_NCCL_LATENCY = "NCCL src/graph/tuning.cc hwLat, ring/Simple (NVIDIA/nccl at 01afd20)"
LINKS = {
    "nvlink": Link("nvlink", 450.0, 3.4,
                   "8 GPUs on NVLink 4 through NVSwitch: H100 SXM and H200 SXM have 900 GB/s "
                   "of NVLink per GPU, both directions together (NVIDIA H100 and H200 Tensor "
                   f"Core GPU datasheets), so 450 GB/s each way; alpha 3.4 us: {_NCCL_LATENCY}"),
    "ib": Link("ib", 50.0, 9.6,
               "nodes over NDR InfiniBand, one 400 Gb/s ConnectX-7 port per GPU as in a DGX "
               "H100 (NVIDIA DGX H100 datasheet): 50 GB/s each way per GPU; alpha 9.6 us: "
               f"{_NCCL_LATENCY}"),
}


@dataclass(frozen=True)
class DataParallel:
    """The data-parallel set-up a step is simulated under."""

    world: int
    link: Link
    bucket_bytes: int

    def to_dict(self) -> dict:
        return {"world": self.world, "link": self.link.to_dict(),
                "bucket_bytes": self.bucket_bytes}


def parse_link(text: str) -> Link:
    """A preset's name (nvlink, ib) or a bandwidth in GB/s per GPU, which takes the network's
    per-step latency; InputError for anything else."""
    name = str(text).strip().lower()
    if name in LINKS:
        return LINKS[name]
    try:
        gbps = float(name)
    except ValueError:
        gbps = math.nan
    if not math.isfinite(gbps) or gbps <= 0:
        raise InputError(f"unknown interconnect {text!r}: give nvlink (8 GPUs on NVLink 4, "
                         f"{LINKS['nvlink'].gbps:g} GB/s per GPU), ib (NDR InfiniBand, "
                         f"{LINKS['ib'].gbps:g} GB/s per GPU) or a bandwidth in GB/s per "
                         f"GPU, e.g. 200")
    return Link(f"{gbps:g} GB/s", gbps, LINKS["ib"].alpha_us,
                f"a bandwidth given by the user; alpha {LINKS['ib'].alpha_us} us, the "
                f"network's: {_NCCL_LATENCY}")


def data_parallel(world: int, interconnect: str, bucket_mb: float = DEFAULT_BUCKET_MB
                  ) -> DataParallel:
    """A checked set-up; InputError naming the bad value."""
    if int(world) != world or world < 1:
        raise InputError(f"the data-parallel world size must be a whole number of GPUs, 1 or "
                         f"more, not {world}")
    if not math.isfinite(bucket_mb) or bucket_mb <= 0:
        raise InputError(f"the bucket size must be above 0 MiB, not {bucket_mb}")
    return DataParallel(int(world), parse_link(interconnect),
                        max(1, round(bucket_mb * 1024 * 1024)))


def allreduce_us(nbytes: int, world: int, link: Link) -> float:
    """One ring all-reduce of `nbytes` over `world` GPUs (module docstring)."""
    if world <= 1:
        return 0.0
    transfer = 2 * (world - 1) / world * nbytes / (link.gbps * 1e3)   # bytes / (B/us)
    return transfer + 2 * (world - 1) * link.alpha_us


def fill_buckets(gradients: list[dict], cap: int) -> list[list[dict]]:
    """`gradients` ({"name", "bytes", "ready_us", "index"}: their output position) in buckets
    (module docstring)."""
    ordered = sorted(gradients, key=lambda g: (g["ready_us"], -g["index"]))
    buckets: list[list[dict]] = []
    size = cap
    for gradient in ordered:
        if buckets and size + gradient["bytes"] <= cap:
            buckets[-1].append(gradient)
            size += gradient["bytes"]
        else:
            buckets.append([gradient])
            size = gradient["bytes"]
    return buckets


def simulate(buckets: list[list[dict]], compute_us: float, setup: DataParallel,
             release: str) -> dict:
    """The step under one way of releasing outputs (module docstring): {"step_us",
    "exposed_us", "comm_us", "buckets": [{"bytes", "gradients", "ready_us", "start_us",
    "end_us", "kernel": the kernel whose end made it ready}]}."""
    rows, free = [], 0.0
    for bucket in buckets:
        last = max(bucket, key=lambda g: g["ready_us"])
        ready = compute_us if release == "step_end" else last["ready_us"]
        start = max(ready, free)
        free = start + allreduce_us(sum(g["bytes"] for g in bucket), setup.world, setup.link)
        rows.append({"bytes": sum(g["bytes"] for g in bucket), "gradients": len(bucket),
                     "ready_us": _round(ready), "start_us": _round(start),
                     "end_us": _round(free), "kernel": last["kernel"]})
    step = max(compute_us, free)
    return {"step_us": _round(step), "exposed_us": _round(step - compute_us),
            "comm_us": _round(sum(r["end_us"] - r["start_us"] for r in rows)), "buckets": rows}


def dp_overlap(timeline: dict, training: dict | None, setup: DataParallel,
               model: str = "projected") -> dict:
    """The data-parallel overlap of a plan's step (module docstring), from its timeline
    (compiler/stages/timeline.py) and the graph's training outputs (compiler/ir/training.py):
    {"setup", "model", "training": whether the graph is a training step, "reason" (why not),
    "gradients", "gradient_bytes", "compute_us", "releases": {release: simulate's result},
    "held_back": [the kernels holding back the first buckets when each output is released
    when ready: {"bucket", "kernel", "kind", "limiter", "start_us", "end_us"}]}."""
    base = {"setup": setup.to_dict(), "model": model, "training": False, "reason": None,
            "gradients": 0, "gradient_bytes": 0, "compute_us": None, "releases": {},
            "held_back": []}
    if timeline.get("unavailable") or model not in timeline.get("models", []):
        return {**base, "reason": timeline.get("unavailable")
                or f"the plan has no {model} timeline"}
    names = set((training or {}).get("gradients") or [])
    if not names:
        return {**base, "reason": (training or {}).get("reason")
                or "the graph's training outputs are not known"}
    gradients = [{"name": output["name"], "bytes": output["bytes"] or 0, "index": index,
                  "ready_us": output["ready_us"][model], "kernel": output["kernel"]}
                 for index, output in enumerate(timeline["outputs"]) if output["name"] in names]
    compute = timeline["total_us"][model]
    buckets = fill_buckets(gradients, setup.bucket_bytes)
    releases = {release: simulate(buckets, compute, setup, release) for release in RELEASES}
    spans = {kernel["name"]: kernel for kernel in timeline["kernels"]}
    held = []
    for index, row in enumerate(releases["when_ready"]["buckets"][:HELD_BACK_BUCKETS]):
        kernel = spans.get(row["kernel"])
        held.append({"bucket": index, "kernel": row["kernel"],
                     "kind": kernel["kind"] if kernel else None,
                     "limiter": kernel["limiter"] if kernel else None,
                     "start_us": kernel["start_us"][model] if kernel else 0.0,
                     "end_us": kernel["end_us"][model] if kernel else 0.0})
    return {**base, "training": True, "gradients": len(gradients),
            "gradient_bytes": sum(g["bytes"] for g in gradients), "compute_us": compute,
            "releases": releases, "held_back": held}


def format_dp(name: str, result: dict) -> str:
    """A plan's overlap in a few lines of text (explore's text output)."""
    if not result["training"]:
        return f"  {name}: no data-parallel overlap: {result['reason']}"
    lines = [f"  {name}: compute {result['compute_us']:,.1f} us, {result['gradients']} "
             f"gradients, {result['gradient_bytes'] / 2**20:,.1f} MiB in "
             f"{len(result['releases']['when_ready']['buckets'])} bucket(s)"]
    for release in RELEASES:
        figures = result["releases"][release]
        lines.append(f"    {RELEASE_LABELS[release]:38s} step {figures['step_us']:>10,.1f} us"
                     f"   exposed communication {figures['exposed_us']:>9,.1f} us")
    held = ", ".join(f"{row['kernel']} (ends {row['end_us']:,.1f} us)"
                     for row in result["held_back"])
    if held:
        lines.append(f"    first buckets wait on: {held}")
    return "\n".join(lines)


def _round(value: float) -> float:
    return round(value, _DIGITS)
