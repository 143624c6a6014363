"""What launching a kernel adds to a plan's time, under the runtime that runs the plan.

A kernel's time in a plan is its *device work* (what the GPU spends running its blocks: the
speed of light bounds it, the projected and learned models predict it) plus a *launch term*,
which depends on how the plan's kernels are issued, not on the kernel:

- "graph": the plan replayed as one CUDA graph. XLA:GPU does this by default (its command
  buffers: `xla_gpu_enable_command_buffer` holds FUSION, CUBLAS, CUBLASLT, CUSTOM_CALL and
  CUDNN in XLA's default debug options, for sequences of at least `xla_gpu_graph_min_graph_size`
  = 5 commands), and so does torch.compile in its "reduce-overhead" mode (cudagraphs). The host
  issues the graph once and the GPU starts each node `gap_us` after the previous one ends:

      launch_us = graph gap

- "stream": every kernel launched by the host into one stream (XLA with command buffers off,
  PyTorch eager, torch.compile's default mode). While the host keeps ahead of the GPU,
  consecutive dependent kernels start `gap_us` apart; a kernel shorter than the host's time
  to issue the next one (`issue_us`) leaves the GPU waiting for the host:

      launch_us = max(stream gap, issue - device work)

A plan's total under a runtime is the sum over its kernels of device work + launch term (the
one host call that starts a plan, the same for every plan of a graph, is left out). The speed
of light is the device work alone.

A third figure, `alone_us`, is what a kernel timed *alone* with CUDA events around its launch
(the GPU runner's per-kernel timing, and so every learned model's training target) measures
beyond its device work: the host's launch call and the GPU's start. Measured kernels and
learned predictions are brought to device work by taking it off.

The figures of each device are in `TERMS`, each with where it comes from. What the committed
H200 campaign measured (benchmarks/results/gpu-campaign-h200/plans/) fits two of them
(`fit_alone`, `fit_gap`; `benchmarks/launch_calibration.py` runs both and a test keeps
the table equal to the fit):
- alone_us: the median, over kernels the projected model gives at most `TINY_KERNEL_US` of
  device work, of their time alone less that device work;
- the stream gap: a plan run back to back takes `(n - 1) x (alone - gap)` less than the sum
  of its n kernels timed alone, fitted by least squares over the measured plans of generated
  kernels (plans with library calls are left out: the runner's library calls spend their time
  in PyTorch's dispatch on the host);
- the stream issue interval is taken equal to alone_us: a host cannot issue kernels faster
  than one lone launch takes to reach the GPU, and the H200 runs measured nothing tighter;
- the graph gap: no CUDA-graph replay has been timed on any of our devices yet, so it is
  NVIDIA's published figure (A. Gray, "Getting Started with CUDA Graphs", NVIDIA technical
  blog, 2019: on a V100, kernels of 2.9 us took 3.8 us each launched in a stream and 3.4 us
  each replayed as a graph, so 0.5 us per graph node). The GPU runner now also replays every
  plan as one CUDA graph (compiler/runtime/gpu.py, `graph_replay`): a campaign that did fits
  the graph gap as the stream gap is fitted (`fit_gap` over the replays against the kernels
  alone), and `benchmarks/launch_calibration.py` prints that fit beside this figure.
Devices without measurements take the H200's figures (launching is mostly host and driver
work, the same code on every chip), and their sources say so. `benchmarks/gpu_campaign.py
--steps launch` times empty kernels alone, back to back in a stream and replayed as a graph
(benchmarks/launch_probe.cu) to measure all four on a GPU.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from compiler.errors import InputError

RUNTIMES = ("graph", "stream")
DEFAULT_RUNTIME = "graph"
RUNTIME_LABELS = {"graph": "CUDA graph", "stream": "stream launches"}
RUNTIME_DETAILS = {
    "graph": "the plan replayed as one CUDA graph, as XLA:GPU's command buffers (on by "
             "default) and torch.compile's reduce-overhead mode run it",
    "stream": "every kernel launched by the host into one stream, as PyTorch eager, "
              "torch.compile's default mode and XLA without command buffers run it",
}

# Kernels with at most this much projected device work measure little but their launch: the
# ones `fit_alone` reads.
TINY_KERNEL_US = 0.5

# NVIDIA's figure for a graph node (module docstring): 3.4 us per 2.9-us kernel, V100.
PUBLISHED_GRAPH_GAP_US = 0.5
PUBLISHED_GRAPH_SOURCE = ("published: A. Gray, 'Getting Started with CUDA Graphs', NVIDIA "
                          "technical blog (2019), V100: 3.4 us per 2.9-us kernel replayed as a "
                          "graph; not yet measured on this device")


@dataclass(frozen=True)
class LaunchTerms:
    """One device's launch figures in microseconds, each with where it comes from."""

    device: str
    alone_us: float          # an event-timed lone kernel beyond its device work
    stream_gap_us: float     # back-to-back dependent kernels in one stream, GPU-bound
    stream_issue_us: float   # the host's time to issue one kernel into a stream
    graph_gap_us: float      # one node of a CUDA graph replay
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def launch(self, runtime: str) -> Launch:
        runtime = parse_runtime(runtime)
        if runtime == "graph":
            return Launch(runtime, self.graph_gap_us, 0.0)
        return Launch(runtime, self.stream_gap_us, self.stream_issue_us)

    def to_dict(self) -> dict:
        return {"device": self.device, "alone_us": self.alone_us,
                "stream_gap_us": self.stream_gap_us, "stream_issue_us": self.stream_issue_us,
                "graph_gap_us": self.graph_gap_us, "sources": dict(self.sources)}


@dataclass(frozen=True)
class Launch:
    """The launch term of one runtime (module docstring)."""

    runtime: str
    gap_us: float
    issue_us: float

    def us(self, device_us: float) -> float:
        """The launch term of a kernel of `device_us` of device work."""
        return max(self.gap_us, self.issue_us - device_us)

    def kernel_us(self, device_us: float) -> float:
        """The kernel's time in the plan: its device work and its launch term."""
        return device_us + self.us(device_us)


def parse_runtime(text: str) -> str:
    """A runtime name, checked; InputError naming the known ones otherwise."""
    name = (text or "").strip().lower()
    if name not in RUNTIMES:
        raise InputError(f"unknown runtime {text!r}: choose one of {', '.join(RUNTIMES)} "
                         f"(graph: {RUNTIME_DETAILS['graph']}; stream: "
                         f"{RUNTIME_DETAILS['stream']})")
    return name


# -- the figures per device -------------------------------------------------------------------

# Fitted on the H200 campaign (benchmarks/launch_calibration.py; the module docstring says how):
# 501 kernels of at most 0.5 us of projected device work measured 3.12 us alone (median); 17
# plans of 2 to 68 generated kernels ran back to back 1.92 us per kernel faster than their
# kernels alone, so a stream gap of 3.12 - 1.92 = 1.19 us (rounded to 0.01 us).
H200_ALONE_US = 3.12
H200_STREAM_GAP_US = 1.19
_H200_FIT = ("fitted: H200 campaign of 2026-11-27 (benchmarks/results/gpu-campaign-h200/plans, "
             "benchmarks/launch_calibration.py)")
_H200_SOURCES = {
    "alone_us": f"{_H200_FIT}: median over 501 lone kernels of <= {TINY_KERNEL_US} us of "
                "projected device work",
    "stream_gap_us": f"{_H200_FIT}: least squares over 17 plans of generated kernels run back "
                     "to back against their kernels alone",
    "stream_issue_us": "taken equal to alone_us: no tighter issue interval was measured",
    "graph_gap_us": PUBLISHED_GRAPH_SOURCE,
}


def _h200_terms(device: str) -> LaunchTerms:
    sources = dict(_H200_SOURCES)
    if device != "h200":
        sources = {key: f"the H200's figure (nothing measured on {device}); {text}"
                   for key, text in sources.items()}
    return LaunchTerms(device, alone_us=H200_ALONE_US, stream_gap_us=H200_STREAM_GAP_US,
                       stream_issue_us=H200_ALONE_US, graph_gap_us=PUBLISHED_GRAPH_GAP_US,
                       sources=sources)


TERMS: dict[str, LaunchTerms] = {name: _h200_terms(name)
                                 for name in ("v100", "a100", "h100", "h200", "l4")}


def terms_for(device) -> LaunchTerms:
    """The launch figures of a device (a Device or its name); InputError for an unknown one."""
    name = device if isinstance(device, str) else device.name
    found = TERMS.get(name.strip().lower())
    if found is None:
        raise InputError(f"no launch figures for device '{name}': known are "
                         f"{', '.join(TERMS)}")
    return found


def launch_for(device, runtime: str = DEFAULT_RUNTIME) -> Launch:
    """The launch term of `runtime` on `device` (a Device or its name)."""
    return terms_for(device).launch(runtime)


def launch_by_runtime(device, device_us: float) -> dict[str, float]:
    """A kernel's launch term under every runtime: {"graph": us, "stream": us}."""
    terms = terms_for(device)
    return {runtime: terms.launch(runtime).us(device_us) for runtime in RUNTIMES}


def device_work_of_alone(device, alone_us: float) -> float:
    """The device work of a kernel that measured (or a learned model predicts) `alone_us`
    timed alone: that time less what a lone launch adds, never below zero."""
    return max(0.0, alone_us - terms_for(device).alone_us)


# -- fitting ----------------------------------------------------------------------------------


def fit_alone(kernels: list[tuple[float, float]]) -> tuple[float, int]:
    """alone_us from kernels timed alone: (measured_us, projected device work in us) pairs.
    The median of measured - device work over those of at most TINY_KERNEL_US of device work
    (their time is mostly the launch, so the model's error on the work hardly matters), and
    how many there were. ValueError when there are none."""
    overheads = [measured - work for measured, work in kernels if work <= TINY_KERNEL_US]
    if not overheads:
        raise ValueError(f"no kernel of at most {TINY_KERNEL_US} us of device work was timed")
    return statistics.median(overheads), len(overheads)


def fit_gap(plans: list[tuple[int, float, float]], alone_us: float) -> tuple[float, int]:
    """A runtime's gap from plans run whole under it (back to back in a stream, or replayed as
    one CUDA graph): (kernel count n, the sum of their kernels timed alone, the whole plan's
    time) triples. Run whole, each kernel after the first spends `alone - gap` less than
    alone: sum - whole = (n - 1) x (alone - gap), fitted by least squares over the plans of
    two kernels or more (the first kernel's start is taken to cost what a lone launch does).
    Returns (gap, plans used); ValueError when none has two kernels."""
    used = [(n - 1, alone_sum - whole) for n, alone_sum, whole in plans if n >= 2]
    if not used:
        raise ValueError("no plan of two or more kernels was timed whole")
    saved_per_kernel = sum(k * saved for k, saved in used) / sum(k * k for k, _ in used)
    return alone_us - saved_per_kernel, len(used)
