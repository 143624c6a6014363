"""Run a fusion plan's kernels on a real GPU with CuPy: check them, time them.

    ok, reason = gpu_available()          # (False, "no GPU: CuPy is not installed") here
    run = run_plan(graph, plan, codes, inputs)   # GpuUnavailable(reason) without a GPU
    run.kernels[0].measured_us, run.total_us, run.end_to_end, run.graph_replay

Without a GPU nothing here returns a number: `GpuRunner()` and `run_plan` raise
`GpuUnavailable` with the reason, and callers say "not measured: no GPU worker online".
Importing this module never imports CuPy.

How a plan runs (`run_plan`):
1. Every kernel becomes a step, in plan order. A generated kernel loads its cubin (or, when
   the cubin is for another architecture, its PTX, compiled by the driver) and is launched
   with the EmittedKernel's grid, block and dynamic shared memory; a cooperative one through
   CuPy's cooperative launch (cuLaunchCooperativeKernel), after checking that its grid is
   co-resident, because CuPy would otherwise shrink the grid with only a warning. A library
   dot runs as one einsum following the dot's dimension numbers (cuBLAS underneath: through
   PyTorch when it is installed with CUDA, bf16 included, else `cupy.einsum`), then is
   copied into the plan's buffer in the output's layout; a one-operand scatter with a plain
   combiner runs through PyTorch (`_scatter_step`). Other library ops, bf16 dots without
   PyTorch (CuPy has no bfloat16) and kernels with no code are steps that are not measured,
   with the reason.
2. Check: each step runs once on its own buffers, filled with the reference interpreter's
   values of its inputs (as the CPU emulator does, so one kernel's rounding does not travel
   into the next kernel's check; each input is uploaded once and shared by the steps that read
   it), and its outputs are compared with the interpreter's on the device
   (`compiler.runtime.device_check`: `compiler.codegen.check.compare`'s verdict, per-dtype
   tolerances plus the bound on what the order of accumulation changes downstream of
   reductions and dots, computed where the outputs are; a few numbers per output come back).
3. Time: each step alone, then (unless `end_to_end=False`) the whole sequence, where every
   input some earlier step writes is read from that step's output buffer (so the sequence
   sees the plan's real data flow, L2 reuse between kernels included), two ways: launched
   back to back on the stream (`end_to_end`) and captured once as a CUDA graph and replayed
   (`graph_replay`), as XLA's command buffers run a step. A library call is also timed alone
   as a replayed graph of its own (`KernelRun.replay`, its `measured_us` then): on the stream
   its time is mostly PyTorch's or CuPy's host dispatch. Where a capture fails (a call that
   synchronises, one a graph cannot hold) the reason is kept and the stream timing stands.
   Every timed run starts with the L2 flushed by writing a buffer twice its size; a run is
   bracketed by CUDA events on the runner's stream, which PyTorch shares.
   `Timing` keeps the samples with their median, minimum and coefficient of variation.

Buffers are raw bytes on the device in the graph's memory layout (`minor_to_major`), so
dtypes CuPy lacks (bf16, fp8) move through generated kernels unchanged.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from compiler.codegen.check import Mismatch, to_memory
from compiler.codegen.plan import SCRATCH
from compiler.ir.dtypes import dtype as dtype_named
from compiler.ir.graph import Graph
from compiler.ir.interpreter import evaluate_all, scatter_targets
from compiler.kernels.plan import FusionPlan, Kernel
from compiler.runtime.device_check import check_outputs

WARMUP_RUNS = 3
TIMED_RUNS = 20
# Without the opt-in attribute a kernel may use at most this much dynamic shared memory.
DEFAULT_DYNAMIC_SHARED_LIMIT = 48 * 1024
# cuda.h's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, where CuPy does not export it.
_MAX_DYNAMIC_SHARED_ATTRIBUTE = 8
# NumPy type characters CuPy has arrays of (bool, integers, f16/f32/f64, complex).
_CUPY_TYPE_CHARS = set("?bBhHiIlLqQefdFD")


class GpuUnavailable(RuntimeError):
    """No GPU to run on; the message says why (no CuPy, no device, a driver error)."""


class StepNotRunnable(Exception):
    """A kernel this runner cannot run or measure; the message is the reason shown."""


class CaptureFailed(Exception):
    """A launch sequence that could not be captured as a CUDA graph; the message says why."""


def gpu_available(device_index: int = 0) -> tuple[bool, str]:
    """(True, device name) or (False, why not). Never raises."""
    try:
        import cupy
    except ImportError:
        return False, "no GPU: CuPy is not installed"
    except Exception as error:  # noqa: BLE001 - a broken CUDA install must not crash callers
        return False, f"no GPU: CuPy failed to import: {error}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # noqa: BLE001 - CUDARuntimeError, or no driver at all
        return False, f"no CUDA device found: {error}"
    if count == 0:
        return False, "no CUDA device found"
    if not 0 <= device_index < count:
        return False, f"no CUDA device {device_index}: {count} device(s) found"
    try:
        return True, _device_name(cupy, device_index)
    except Exception as error:  # noqa: BLE001
        return False, f"CUDA device {device_index} cannot be queried: {error}"


def _device_name(cupy, device_index: int) -> str:
    name = cupy.cuda.runtime.getDeviceProperties(device_index)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


# -- timings ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Event-timed runs of one launch (or sequence), each after an L2 flush, microseconds."""

    samples_us: tuple[float, ...]
    warmup_runs: int

    def __post_init__(self):
        if not self.samples_us:
            raise ValueError("a Timing needs at least one timed run")

    @property
    def runs(self) -> int:
        return len(self.samples_us)

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    @property
    def min_us(self) -> float:
        return min(self.samples_us)

    @property
    def cv(self) -> float:
        """Coefficient of variation: sample standard deviation over the mean (0 for one run)."""
        mean = statistics.fmean(self.samples_us)
        if len(self.samples_us) < 2 or mean == 0:
            return 0.0
        return statistics.stdev(self.samples_us) / mean

    def to_dict(self) -> dict:
        return {"median_us": self.median_us, "min_us": self.min_us, "cv": self.cv,
                "runs": self.runs, "warmup_runs": self.warmup_runs,
                "samples_us": list(self.samples_us)}


# -- results ----------------------------------------------------------------------------------


@dataclass
class KernelRun:
    """One plan kernel on the GPU: its check against the interpreter and its timing, or the
    reason it was not run (`not_measured`)."""

    kernel: str
    kind: str
    function: str | None = None       # the CUDA function, for generated kernels
    timing: Timing | None = None      # launched alone on the stream
    max_abs_error: float | None = None
    mismatches: list[Mismatch] = field(default_factory=list)
    not_measured: str | None = None
    nodes: list[str] = field(default_factory=list)   # the graph nodes it computes
    # A library call captured alone as a CUDA graph and replayed (`run_plan`), or why not.
    replay: Timing | None = None
    replay_not_measured: str | None = None

    @property
    def measured_us(self) -> float | None:
        """The kernel's time: a library call's graph replay where it has one (its time on the
        stream is mostly the library's host dispatch), else its time alone on the stream."""
        chosen = self.replay or self.timing
        return chosen.median_us if chosen else None

    @property
    def clock(self) -> str | None:
        """Which timing `measured_us` is: "graph replay", "stream" or None (not measured)."""
        return "graph replay" if self.replay else "stream" if self.timing else None

    def to_dict(self) -> dict:
        return {"name": self.kernel, "kind": self.kind, "nodes": list(self.nodes),
                "function": self.function,
                "measured_us": self.measured_us, "clock": self.clock,
                "timing": self.timing.to_dict() if self.timing else None,
                "replay": self.replay.to_dict() if self.replay else None,
                "replay_not_measured": self.replay_not_measured,
                "max_abs_error": self.max_abs_error,
                "mismatches": [vars(m) for m in self.mismatches],
                "not_measured": self.not_measured}


@dataclass
class PlanRun:
    strategy: str
    device: str                       # the GPU's name, as the driver reports it
    kernels: list[KernelRun]
    end_to_end: Timing | None = None  # the whole sequence, launched back to back
    not_measured: str | None = None   # why there is no total (some kernel not measured)
    # The whole sequence captured once as a CUDA graph and replayed, as XLA's command buffers
    # run a step; or why it was not (`graph_not_measured`).
    graph_replay: Timing | None = None
    graph_not_measured: str | None = None

    @property
    def total_us(self) -> float | None:
        """Sum of the kernels' times (`KernelRun.measured_us`), in plan order; None unless
        every kernel was measured."""
        if self.not_measured is not None:
            return None
        return sum(k.measured_us for k in self.kernels)

    @property
    def mismatched(self) -> list[KernelRun]:
        return [k for k in self.kernels if k.mismatches]

    def to_dict(self) -> dict:
        replay = self.graph_replay
        return {"strategy": self.strategy, "device": self.device, "total_us": self.total_us,
                "end_to_end": self.end_to_end.to_dict() if self.end_to_end else None,
                "graph_replay": replay.to_dict() if replay else None,
                "graph_not_measured": None if replay else
                (self.graph_not_measured or self.not_measured),
                "not_measured": self.not_measured,
                "kernels": [k.to_dict() for k in self.kernels]}


# -- the runner -------------------------------------------------------------------------------


class GpuRunner:
    """One CUDA device: loads generated kernels, launches them and times launches."""

    def __init__(self, device_index: int = 0):
        available, reason = gpu_available(device_index)
        if not available:
            raise GpuUnavailable(reason)
        import cupy
        from cupy.cuda import function as cuda_function

        self.cupy = cupy
        self._module_type = cuda_function.Module
        # What a failed CUDA call raises: the step is reported as not measured, with it.
        self.cuda_errors = (cupy.cuda.driver.CUDADriverError,
                            cupy.cuda.runtime.CUDARuntimeError)
        self.device = cupy.cuda.Device(device_index)
        self.device.use()
        # Every launch, timing event and library call goes to this stream, made current here:
        # a CUDA graph cannot be captured on the legacy default stream.
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.stream.use()
        self._torch_on_stream = False
        self.name = reason
        attributes = self.device.attributes
        self.l2_bytes = int(attributes["L2CacheSize"])
        self.sm_count = int(attributes["MultiProcessorCount"])
        self.cooperative_launch = bool(attributes.get("CooperativeLaunch", 0))
        self.arch = f"sm_{self.device.compute_capability}"
        # Writing twice the L2's size evicts every line the previous run left there.
        self._flush = cupy.empty(max(2 * self.l2_bytes, 1), dtype=cupy.uint8)
        self._functions: dict[tuple, object] = {}

    # loading

    def load(self, function: str, build) -> object:
        """The CUDA function `function` from a BuildResult: its cubin when built for this
        device's architecture, else (or when the driver refuses the cubin) its PTX, which
        the driver compiles. The PTX names the kernel `function`; the cubin may hold it
        under another symbol, `build.cubin_function`, because kernels identical but for
        their name share one cubin (compiler/toolchain/nvcc.py)."""
        if build is None or not build.ok:
            raise StepNotRunnable("not measured: the kernel was not built")
        # Plans of different graphs reuse function names: the binary is part of the key.
        key = (function, build.cubin, build.ptx)
        if key in self._functions:
            return self._functions[key]
        images, problems = [], []
        if build.cubin and build.arch == self.arch:
            images.append(("cubin", bytes(build.cubin), build.cubin_function))
        else:
            problems.append(f"no cubin for {self.arch} (built for {build.arch})")
        if build.ptx:
            # CPython keeps bytes NUL-terminated, as cuModuleLoadData wants PTX text.
            images.append(("PTX", build.ptx.encode(), function))
        for kind, image, symbol in images:
            module = self._module_type()
            try:
                module.load(image)
                self._functions[key] = module.get_function(symbol)
            except self.cuda_errors as error:
                problems.append(f"the driver refused the {kind}: {error}")
                continue
            return self._functions[key]
        raise StepNotRunnable(f"not measured: cannot load {function}: {'; '.join(problems)}")

    # launching

    def launcher(self, kernel, grid: tuple, block: tuple, shared_bytes: int, args: Sequence,
                 cooperative: bool = False) -> Callable[[], None]:
        """A function that launches `kernel` with `args` (device arrays, in parameter order)
        on the current stream; StepNotRunnable when this launch cannot be made."""
        driver = self.cupy.cuda.driver
        threads = block[0] * block[1] * block[2]
        if shared_bytes > DEFAULT_DYNAMIC_SHARED_LIMIT:
            try:
                attribute = getattr(driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES",
                                    _MAX_DYNAMIC_SHARED_ATTRIBUTE)
                driver.funcSetAttribute(kernel.ptr, attribute, shared_bytes)
            except Exception as error:  # noqa: BLE001
                raise StepNotRunnable(f"not measured: {shared_bytes} bytes of dynamic shared "
                                      f"memory are not available: {error}") from error
        grid, block, args = tuple(grid), tuple(block), tuple(args)
        if not cooperative:
            return lambda: kernel(grid, block, args, shared_mem=shared_bytes)
        if not self.cooperative_launch:
            raise StepNotRunnable("not measured: this GPU does not support cooperative launches")
        per_sm = driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.ptr, threads,
                                                                  shared_bytes)
        blocks = grid[0] * grid[1] * grid[2]
        if blocks > per_sm * self.sm_count:
            raise StepNotRunnable(
                f"not measured: cooperative grid of {blocks} blocks is not co-resident on this "
                f"GPU ({per_sm} per SM x {self.sm_count} SMs)")
        return lambda: kernel(grid, block, args, shared_mem=shared_bytes,
                              enable_cooperative_groups=True)

    def synchronize(self) -> None:
        self.stream.synchronize()

    def share_stream(self, torch) -> None:
        """Make the runner's stream PyTorch's current one too, so that library calls run in
        order with the generated kernels and are captured with them."""
        if not self._torch_on_stream:
            torch.cuda.set_stream(torch.cuda.ExternalStream(self.stream.ptr))
            self._torch_on_stream = True

    # timing

    def time(self, launch: Callable[[], None], warmup: int = WARMUP_RUNS,
             runs: int = TIMED_RUNS) -> Timing:
        """Warm-up runs, then `runs` runs each after an L2 flush, timed with CUDA events."""
        cuda = self.cupy.cuda
        for _ in range(warmup):
            launch()
        self.synchronize()
        start, end = cuda.Event(), cuda.Event()
        samples = []
        for _ in range(runs):
            self._flush.fill(0)
            start.record()
            launch()
            end.record()
            end.synchronize()
            samples.append(cuda.get_elapsed_time(start, end) * 1e3)  # ms -> us
        return Timing(tuple(samples), warmup)

    def capture(self, launch: Callable[[], None]):
        """`launch`'s work captured once as a CUDA graph (cupy.cuda.Graph) on the runner's
        stream; CaptureFailed saying why when it cannot be (a call that synchronises, or one
        a graph cannot hold). Relaxed mode: a library's allocator may still reserve memory
        while the stream captures, which the global mode forbids."""
        mode = self.cupy.cuda.runtime.streamCaptureModeRelaxed
        self.stream.begin_capture(mode)
        try:
            launch()
        except Exception as error:  # noqa: BLE001 - whatever the launch raised, say it
            try:
                self.stream.end_capture()
            except self.cuda_errors:
                pass   # the capture is abandoned either way; the launch's error is the reason
            raise CaptureFailed(f"{type(error).__name__}: {error}") from error
        try:
            return self.stream.end_capture()
        except self.cuda_errors as error:
            raise CaptureFailed(f"the capture was invalidated: {error}") from error

    def time_graph(self, launch: Callable[[], None], warmup: int = WARMUP_RUNS,
                   runs: int = TIMED_RUNS) -> Timing:
        """`launch` captured once as a CUDA graph, then its replays timed as `time` times a
        launch (warm-up replays, then each replay after an L2 flush, between CUDA events):
        one host call per run, so the host's dispatch of the captured calls is not timed."""
        graph = self.capture(launch)
        graph.upload(self.stream)
        return self.time(lambda: graph.launch(self.stream), warmup, runs)


def replay_timing(runner: GpuRunner, launch: Callable[[], None], warmup: int = WARMUP_RUNS,
                  runs: int = TIMED_RUNS) -> tuple[Timing | None, str | None]:
    """(the graph replay's Timing, None), or (None, why it was not timed) when the launch
    could not be captured or replayed: the caller keeps its stream timing either way."""
    try:
        return runner.time_graph(launch, warmup, runs), None
    except CaptureFailed as reason:
        return None, f"not measured as a CUDA graph replay: the capture failed: {reason}"
    except runner.cuda_errors as error:
        return None, f"not measured as a CUDA graph replay: CUDA error: {error}"


# -- running a plan ---------------------------------------------------------------------------


@dataclass
class _Step:
    """A runnable plan kernel: the same launch bound to its own buffers (`alone`, for the
    check and its own timing) and to the plan's data flow (`chained`)."""

    alone: Callable[[], None]
    chained: Callable[[], None]
    outputs: dict[str, object]        # output node -> its own device buffer (raw bytes)
    library: bool = False             # a library call (cuBLAS, PyTorch), not a generated kernel


class _Buffers:
    """Device buffers in the graph's layouts: uploads of the interpreter's values and the
    output buffers steps write, which later steps read in the chained sequence."""

    def __init__(self, cupy, graph: Graph, values: dict):
        self.cupy, self.graph, self.values = cupy, graph, values
        self.written: dict[str, object] = {}      # node -> output buffer of an earlier step
        # node -> its upload: read-only for every step, so the candidates of a dataset, which
        # read the same inputs, share one copy instead of uploading them once each.
        self.uploaded: dict[str, object] = {}

    def numpy_type(self, node: str):
        return self.graph.nodes[node].array_shape.dtype.numpy

    def upload(self, node: str):
        if node not in self.uploaded:
            shape = self.graph.nodes[node].array_shape
            value = np.asarray(self.values[node]).astype(self.numpy_type(node))
            flat = to_memory(value, shape.minor_to_major)
            self.uploaded[node] = self.cupy.asarray(flat.view(np.uint8))
        return self.uploaded[node]

    def output(self, node: str):
        shape = self.graph.nodes[node].array_shape
        return self.cupy.zeros(shape.size * np.dtype(self.numpy_type(node)).itemsize,
                               dtype=self.cupy.uint8)

    def chained(self, node: str, alone):
        """The buffer the chained sequence reads `node` from."""
        return self.written.get(node, alone)


def run_plan(graph: Graph, plan: FusionPlan, codes: list, inputs: Sequence,
             runner: GpuRunner | None = None, warmup: int = WARMUP_RUNS,
             runs: int = TIMED_RUNS, end_to_end: bool = True) -> PlanRun:
    """Check and time every kernel of `plan` (codes: `codegen.stage.generate`'s KernelCode
    per kernel, in plan order) on `inputs` (in parameter order); GpuUnavailable without a
    GPU. Without `end_to_end` the kernels are timed alone only, not also back to back: for
    kernels that are not one plan's sequence (the cost model's candidate plans)."""
    if runner is None:
        runner = GpuRunner()
    if [code.kernel.name for code in codes] != [kernel.name for kernel in plan.kernels]:
        raise ValueError(f"codes do not match the {plan.strategy} plan's kernels")

    values = evaluate_all(graph, inputs)
    buffers = _Buffers(runner.cupy, graph, values)
    results, steps = [], []
    for code in codes:
        result = KernelRun(code.kernel.name, code.kernel.kind, nodes=list(code.kernel.nodes))
        results.append(result)
        try:
            step = _prepare(runner, graph, code, buffers, result)
            step.alone()
            runner.synchronize()
            expected = {node: buffers.upload(node) for node in step.outputs}
            result.max_abs_error, result.mismatches = check_outputs(
                runner.cupy, graph, step.outputs, expected, values, code.kernel.computed)
            result.timing = runner.time(step.alone, warmup, runs)
            if step.library:
                result.replay, result.replay_not_measured = replay_timing(
                    runner, step.alone, warmup, runs)
        except StepNotRunnable as reason:
            result.not_measured = str(reason)
            continue
        except runner.cuda_errors as error:
            result.not_measured = f"not measured: CUDA error: {error}"
            continue
        except Exception as error:  # noqa: BLE001 - a library's own error (PyTorch's)
            if code.emitted is None or not code.emitted.library:
                raise
            result.not_measured = (f"not measured: the library call failed: "
                                   f"{type(error).__name__}: {error}")
            continue
        if end_to_end:  # only the back-to-back sequence reads earlier steps' outputs
            buffers.written.update(step.outputs)
            steps.append(step)
    missing = [r.kernel for r in results if r.timing is None]
    run = PlanRun(plan.strategy, runner.name, results)
    if missing:
        run.not_measured = (f"not measured: {len(missing)} of {len(results)} kernels did not "
                            f"run ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})")
    elif end_to_end:
        def sequence() -> None:
            for step in steps:
                step.chained()
        run.end_to_end = runner.time(sequence, warmup, runs)
        run.graph_replay, run.graph_not_measured = replay_timing(runner, sequence, warmup, runs)
    return run


def _prepare(runner: GpuRunner, graph: Graph, code, buffers: _Buffers,
             result: KernelRun) -> _Step:
    if code.error:
        raise StepNotRunnable(f"not measured: {code.error}")
    if code.emitted is None:
        raise StepNotRunnable("not measured: no code was emitted")
    if code.emitted.library:
        return _library_step(runner, graph, code.kernel, buffers)
    emitted = code.emitted
    result.function = code.function
    kernel = runner.load(emitted.name, code.build)
    alone_args, chained_args, outputs = [], [], {}
    for param in emitted.params:
        if param.name == SCRATCH:  # a globally stitched kernel's scratch: zeroed, not read back
            buffer = runner.cupy.zeros(param.dims, dtype=runner.cupy.uint8)
            alone_args.append(buffer)
            chained_args.append(buffer)
        elif param.role == "input":
            buffer = buffers.upload(param.node)
            alone_args.append(buffer)
            chained_args.append(buffers.chained(param.node, buffer))
        else:
            buffer = outputs[param.node] = buffers.output(param.node)
            alone_args.append(buffer)
            chained_args.append(buffer)
    launch = [runner.launcher(kernel, emitted.grid, emitted.block, emitted.shared_bytes, args,
                              emitted.cooperative) for args in (alone_args, chained_args)]
    return _Step(alone=launch[0], chained=launch[1], outputs=outputs)


# -- library kernels --------------------------------------------------------------------------
#
# A library kernel (a dot, a scatter) runs through PyTorch when it is installed with CUDA
# (cuBLAS for dots, bf16 included; torch's index_put_ / scatter_reduce_ for scatters), else a
# dot runs through cupy.einsum, for the dtypes CuPy has. Either reads and writes the plan's raw
# buffers in place (torch through __cuda_array_interface__, no copy), on the same stream.


def _library_step(runner: GpuRunner, graph: Graph, kernel: Kernel, buffers: _Buffers) -> _Step:
    (name,) = kernel.nodes
    node = graph.nodes[name]
    torch = _torch()
    if torch is not None:
        runner.share_stream(torch)
    if node.op == "scatter" and torch is not None:
        return _scatter_step(torch, graph, kernel, buffers)
    if node.op != "dot":
        reason = "" if torch is not None else " (a scatter needs PyTorch with CUDA)"
        raise StepNotRunnable(f"not measured: the GPU runner has no library call for "
                              f"{node.op}{reason}")
    for view in kernel.recomputed:
        _check_library_view(graph, view)
    if torch is not None:
        return _dot_step(_TorchArrays(torch), graph, kernel, buffers)
    involved = [name, *kernel.inputs, *kernel.recomputed]
    unsupported = sorted({graph.nodes[n].array_shape.dtype.name for n in involved
                          if not _cupy_has(buffers.numpy_type(n))})
    if unsupported:
        raise StepNotRunnable(f"not measured: CuPy has no {', '.join(unsupported)} arrays for "
                              f"the library dot (PyTorch with CUDA would run it)")
    return _dot_step(_CupyArrays(runner.cupy), graph, kernel, buffers)


_TORCH: list = []
_TORCH_DEVICE = "cuda"   # the tensors alias CuPy's buffers on the current device


def _torch():
    """PyTorch when it is importable and sees a CUDA device, else None (looked up once)."""
    if not _TORCH:
        try:
            import torch
            usable = torch.cuda.is_available()
        except Exception:  # noqa: BLE001 - any failure to import means: not there
            usable = False
        if usable:
            # XLA accumulates f32 dots in f32 and bf16 dots' partial sums in f32: no TF32,
            # no reduced-precision split-K (the check against the interpreter relies on it).
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        _TORCH.append(torch if usable else None)
    return _TORCH[0]


class _CupyArrays:
    """The few array operations a library dot needs, on CuPy arrays."""

    def __init__(self, cupy):
        self.cupy = cupy

    def typed(self, raw, dtype) -> object:
        return raw.view(dtype.numpy)

    def transpose(self, array, order):
        return self.cupy.transpose(array, tuple(int(a) for a in order))

    def einsum(self, spec, lhs, rhs, compute, out_dtype):
        compute_type = compute.numpy
        lhs, rhs = (a.astype(compute_type, copy=False) for a in (lhs, rhs))
        return self.cupy.einsum(spec, lhs, rhs).astype(out_dtype.numpy, copy=False)

    def assign(self, target, value) -> None:
        target[...] = value


class _TorchArrays:
    """The same operations on torch tensors that alias the plan's CuPy buffers."""

    def __init__(self, torch):
        self.torch = torch

    def typed(self, raw, dtype) -> object:
        tensor = self.torch.as_tensor(raw, device=_TORCH_DEVICE)
        return tensor.view(_torch_dtype(self.torch, dtype))

    def transpose(self, array, order):
        return array.permute(*(int(a) for a in order))

    def einsum(self, spec, lhs, rhs, compute, out_dtype):
        torch = self.torch
        compute_type = _torch_dtype(torch, compute)
        product = torch.einsum(spec, lhs.to(compute_type), rhs.to(compute_type))
        return product.to(_torch_dtype(torch, out_dtype))

    def assign(self, target, value) -> None:
        target.copy_(value)


def _torch_dtype(torch, dtype):
    names = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64",
             "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64", "u8": "uint8",
             "pred": "bool"}
    if dtype.name not in names:
        raise StepNotRunnable(f"not measured: PyTorch has no {dtype.name} tensors for the "
                              f"library call")
    return getattr(torch, names[dtype.name])


def _dot_step(arrays, graph: Graph, kernel: Kernel, buffers: _Buffers) -> _Step:
    """A dot_general as one einsum (cuBLAS) on the operands' logical views, written into the
    plan's buffer in the output's layout. Operands of one type run in it (bf16 x bf16 -> bf16
    is one bf16 GEMM accumulating in f32, as XLA's); mixed types are widened to the output's
    (at least f32)."""
    (name,) = kernel.nodes
    node = graph.nodes[name]
    spec = _einsum_spec(node.attrs, *(graph.nodes[o].array_shape.rank for o in node.operands))
    out_shape = node.array_shape
    operand_types = {graph.nodes[o].array_shape.dtype for o in node.operands}
    if operand_types == {out_shape.dtype}:
        compute = out_shape.dtype
    elif out_shape.dtype.is_float:
        compute = out_shape.dtype if out_shape.dtype.name == "f64" else dtype_named("f32")
    else:
        compute = out_shape.dtype
    output = buffers.output(name)
    out_order = tuple(reversed(out_shape.minor_to_major))
    out_physical = arrays.typed(output, out_shape.dtype).reshape(
        [out_shape.dims[d] for d in out_order])

    def bind(memory: dict[str, object]) -> Callable[[], None]:
        def logical(value: str):
            if value in memory:
                shape = graph.nodes[value].array_shape
                order = tuple(reversed(shape.minor_to_major))
                physical = arrays.typed(memory[value], shape.dtype)
                physical = physical.reshape([shape.dims[d] for d in order])
                return arrays.transpose(physical, np.argsort(order))
            view = graph.nodes[value]
            return logical(view.operands[0]).reshape(view.array_shape.dims)

        def launch() -> None:
            lhs, rhs = (logical(o) for o in node.operands)
            product = arrays.einsum(spec, lhs, rhs, compute, out_shape.dtype)
            arrays.assign(out_physical, arrays.transpose(product, out_order))
        return launch

    alone = {value: buffers.upload(value) for value in kernel.inputs}
    chained = {value: buffers.chained(value, alone[value]) for value in kernel.inputs}
    return _Step(alone=bind(alone), chained=bind(chained), outputs={name: output}, library=True)


_SCATTER_REDUCE = {"maximum": "amax", "minimum": "amin", "multiply": "prod"}


def _scatter_step(torch, graph: Graph, kernel: Kernel, buffers: _Buffers) -> _Step:
    """A one-operand scatter whose combiner is a plain binary op, through torch: the output
    starts as a copy of the operand, then every kept update element is combined into its
    target (index_put_ with accumulate for add, scatter_reduce_ for max/min/multiply).

    The targets (flat operand positions, windows that do not fit skipped: the interpreter's
    own `scatter_targets`) are worked out on the host once, from the interpreter's values of
    the indices (so views the kernel applies to the indices need no device code), and
    uploaded: the timed device work is the copy and the combine, not the index arithmetic,
    which XLA's scatter kernel does inside the same launch."""

    (name,) = kernel.nodes
    node = graph.nodes[name]
    if len(node.operands) != 3:
        raise StepNotRunnable("not measured: the GPU runner runs one-operand scatters only")
    reducer = node.attrs.get("reducer")
    if reducer != "add" and reducer not in _SCATTER_REDUCE:
        raise StepNotRunnable(f"not measured: the GPU runner has no scatter whose combiner "
                              f"is {reducer or 'a general computation'}")
    operand, indices, updates = node.operands
    if operand not in kernel.inputs or updates not in kernel.inputs:
        raise StepNotRunnable("not measured: the library scatter's operand and updates must "
                              "be in memory (it applies no views to them)")
    for value in (name, operand, updates):
        if not _row_major(graph.nodes[value].array_shape):
            raise StepNotRunnable(f"not measured: the library scatter needs '{value}' in "
                                  f"row-major layout")
    keep, targets = scatter_targets(node.attrs, graph.nodes[operand].array_shape.dims,
                                    graph.nodes[updates].array_shape.dims,
                                    buffers.values[indices])
    kept = torch.as_tensor(np.flatnonzero(keep), device=_TORCH_DEVICE)
    where = torch.as_tensor(targets.astype(np.int64), device=_TORCH_DEVICE)
    arrays, dtype = _TorchArrays(torch), node.array_shape.dtype
    output = buffers.output(name)
    out_flat = arrays.typed(output, dtype)

    def bind(memory: dict[str, object]) -> Callable[[], None]:
        source, values = (arrays.typed(memory[value], dtype) for value in (operand, updates))

        def launch() -> None:
            out_flat.copy_(source)
            chosen = values.index_select(0, kept)
            if reducer == "add":
                out_flat.index_put_((where,), chosen, accumulate=True)
            else:
                out_flat.scatter_reduce_(0, where, chosen, _SCATTER_REDUCE[reducer])
        return launch

    # The indices (and the views that make them) are read on the host only.
    alone = {value: buffers.upload(value) for value in (operand, updates)}
    chained = {value: buffers.chained(value, alone[value]) for value in (operand, updates)}
    return _Step(alone=bind(alone), chained=bind(chained), outputs={name: output}, library=True)


def _cupy_has(numpy_type) -> bool:
    return np.dtype(numpy_type).char in _CUPY_TYPE_CHARS


def _check_library_view(graph: Graph, name: str) -> None:
    """A reshape, or a bitcast that is one (row-major on both sides), read as a reshape."""
    node = graph.nodes[name]
    if node.op == "reshape":
        return
    source = graph.nodes[node.operands[0]].array_shape
    if node.op == "bitcast" and _row_major(source) and _row_major(node.array_shape):
        return
    raise StepNotRunnable(f"not measured: the library dot reads '{name}' ({node.op}), which "
                          f"the GPU runner cannot apply")


def _row_major(shape) -> bool:
    return tuple(shape.minor_to_major) == tuple(reversed(range(len(shape.dims))))


def _einsum_spec(attrs: dict, lhs_rank: int, rhs_rank: int) -> str:
    """The einsum of a dot_general: output dims are batch, lhs free, rhs free (as XLA)."""
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    lhs: list = [None] * lhs_rank
    rhs: list = [None] * rhs_rank
    batch = list(zip(attrs.get("lhs_batch_dims", ()), attrs.get("rhs_batch_dims", ())))
    contracting = zip(attrs.get("lhs_contracting_dims", ()), attrs.get("rhs_contracting_dims", ()))
    for l_dim, r_dim in [*batch, *contracting]:
        lhs[l_dim] = rhs[r_dim] = next(letters)
    lhs_free = [d for d, label in enumerate(lhs) if label is None]
    rhs_free = [d for d, label in enumerate(rhs) if label is None]
    for labels, free in ((lhs, lhs_free), (rhs, rhs_free)):
        for d in free:
            labels[d] = next(letters)
    output = [lhs[l_dim] for l_dim, _ in batch] + [lhs[d] for d in lhs_free] \
        + [rhs[d] for d in rhs_free]
    return f"{''.join(lhs)},{''.join(rhs)}->{''.join(output)}"


__all__ = ["CaptureFailed", "GpuRunner", "GpuUnavailable", "KernelRun", "PlanRun",
           "StepNotRunnable", "Timing", "gpu_available", "replay_timing", "run_plan"]
