"""What the JSON API (explorer/api.py) takes and answers, declared once as pydantic models.

The request models validate what a client sends (types, lengths, the devices, strategies,
runtimes and visibilities there are) before anything is stored; the response models describe
the answers. django-ninja turns both into the OpenAPI 3.1 document served at
/api/v1/openapi.json. The answers themselves are built by the views as they always were (the
big documents are cached gzipped bytes, explorer/documents.py) and are not re-serialised
through these models: tests/explorer/test_api_schema.py and the schema fuzz test check that
real answers match them.
"""
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field,
                      PlainValidator, StringConstraints, WithJsonSchema, model_validator)
from pydantic_core import PydanticCustomError

from compiler.cost.outliers import OUTLIER_MIN_US, OUTLIER_RATIO
from compiler.fusion.explore import STRATEGIES
from compiler.fusion.pricing import PRICERS
from compiler.stages.dp import DEFAULT_BUCKET_MB
from compiler.target.devices import DEVICES
from compiler.target.launch import DEFAULT_RUNTIME, RUNTIMES
from explorer.uploads import MAX_FILE_NAME_LENGTH, upload_file_name

DEFAULT_DEVICES = ["h100"]
MAX_NAME, MAX_TAGS, MAX_TAG_LENGTH = 200, 20, 50
PER_PAGE, MAX_PER_PAGE = 50, 200
VISIBILITIES = ("private", "team", "public")    # Run.VISIBILITIES' values
JOB_STATUSES = ("queued", "running", "done", "failed")

Device = Literal[tuple(DEVICES)]
Strategy = Literal[tuple(STRATEGIES)]
Runtime = Literal[tuple(RUNTIMES)]
Visibility = Literal[VISIBILITIES]
JobStatus = Literal[JOB_STATUSES]
Url = Annotated[str, WithJsonSchema({"type": "string", "format": "uri"})]


# --- Requests ----------------------------------------------------------------------------------

def _without_nul(value: str) -> str:
    # PostgreSQL refuses a NUL in any text it is sent, even only to compare with.
    if "\x00" in value:
        raise PydanticCustomError("nul_character", "holds a NUL character")
    return value


def _encodable(value: str) -> str:
    try:
        value.encode()
    except UnicodeEncodeError:
        raise PydanticCustomError("string_unicode", "holds a lone surrogate") from None
    return value


def _team_reference(value: Any) -> str | int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, str):
        return _without_nul(_encodable(value))
    raise PydanticCustomError("team_reference", "must be one of your teams' names (a string) "
                                                "or ids (a whole number)")


def _list_of_strings(value: Any) -> Any:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    raise PydanticCustomError("list_of_strings", "must be a list of strings")


def text_field(max_length: int | None = None, **more) -> Any:
    """A string field: storable (no lone surrogate, no NUL character), at most `max_length`
    characters."""
    return Annotated[str, StringConstraints(max_length=max_length), AfterValidator(_encodable),
                     AfterValidator(_without_nul), Field(**more)]


def string_list(item: Any, max_items: int | None = None) -> Any:
    """A list of strings, refused as a whole (not item by item) when it is anything else."""
    return Annotated[list[item], BeforeValidator(_list_of_strings), Field(max_length=max_items)]


def optional(default: Any, description: str) -> Any:
    """A field a client may leave out or send as null: `default` then."""
    shown = default() if callable(default) else default
    return Field(None, description=description, json_schema_extra={"default": shown})


class Submission(BaseModel):
    """The options of a submission, as JSON fields or multipart form fields; each may be left
    out or null for its default."""
    devices: string_list(Device) | None = optional(
        lambda: list(DEFAULT_DEVICES), "Device models to compile for.")
    strategies: string_list(Strategy) | None = optional(
        lambda: list(STRATEGIES), "Fusion strategies (default: all).")
    runtime: Runtime | None = optional(DEFAULT_RUNTIME, (
        "How the plans' kernels are launched, which the cost strategy decides under: graph "
        "(one CUDA graph replay, as XLA's command buffers run a step) or stream (each kernel "
        "launched by the host, as PyTorch eager). Every plan's totals are given under both."))
    name: text_field(MAX_NAME) | None = optional("", "A label for the run.")
    tags: string_list(text_field(MAX_TAG_LENGTH), MAX_TAGS) | None = optional(
        list, f"At most {MAX_TAGS} labels of at most {MAX_TAG_LENGTH} characters.")
    visibility: Visibility | None = optional("private", (
        "Who may see the run: its owner (private), a team of theirs (team, needs `team`) or "
        "anyone with its link (public)."))
    team: Annotated[str | int | None, PlainValidator(_team_reference), WithJsonSchema({
        "anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}],
        "description": "A team of the caller's, by name or id; needed for visibility "
                       "\"team\"."})] = None

    @model_validator(mode="after")
    def _defaults(self) -> "Submission":
        # An empty list of devices or strategies is the default too, as it always was.
        self.devices = self.devices or list(DEFAULT_DEVICES)
        self.strategies = self.strategies or list(STRATEGIES)
        self.runtime = self.runtime or DEFAULT_RUNTIME
        self.name = self.name or ""
        self.tags = self.tags or []
        self.visibility = self.visibility or "private"
        return self


class JsonSubmission(Submission):
    plans: list[dict[str, Any]] | None = Field(None, description=(
        "Plan files to apply (getPlanFile's, or the CLI's --save-plans): each becomes a plan "
        "of the run, custom:NAME (the file's \"name\"), compiled once the run is."))
    filename: Annotated[text_field(min_length=1), AfterValidator(upload_file_name), Field(
        description=f"Its suffix picks the format (.hlo, .mlir, .json). Its directories are "
                    f"dropped, characters that do not print too, and a name past "
                    f"{MAX_FILE_NAME_LENGTH} characters is shortened before its suffixes.")]
    text: Annotated[str, AfterValidator(_encodable)] = Field(description="The graph's text.")


class MultipartSubmission(Submission):
    file: list[Annotated[Any, WithJsonSchema({"type": "string", "format": "binary"})]] = Field(
        min_length=1, description="The graph file (.hlo, .mlir, .onnx, .json); or several: an "
                                  "ONNX model and its external data files, or one .zip of "
                                  "them. Repeat devices, strategies and tags, or separate "
                                  "their values with commas.")


class RunListQuery(BaseModel):
    device: text_field(description="Only runs compiled for this device.") = ""
    tag: text_field(description="Only runs with this tag.") = ""
    q: text_field(description="Only runs whose name or file name contains this.") = ""
    page: int = Field(1, ge=1, description="1-based page number.")
    per_page: int = Field(PER_PAGE, ge=1, le=MAX_PER_PAGE,
                          description=f"Runs per page (default {PER_PAGE}).")


class PlanQuery(BaseModel):
    device: text_field(description="A device of the run (default: its first).") = ""
    strategy: text_field(description="A strategy of the run (default: the plan with the lowest "
                               "projected total).") = ""


class TimelineQuery(PlanQuery):
    runtime: Runtime | None = Field(None, description=(
        "How the kernels are launched: graph (one CUDA graph replay) or stream (host "
        "launches); by default the runtime the run was compiled for."))
    dp_world: int | None = Field(None, ge=1, le=1_000_000, description=(
        "Simulate data-parallel training over this many GPUs: the step's gradient all-reduce "
        "in buckets against the compute that remains (left out: no simulation)."))
    interconnect: text_field(max_length=40, description=(
        "The all-reduce's link: nvlink (8 GPUs on NVLink 4, 450 GB/s per GPU), ib (NDR "
        "InfiniBand, 50 GB/s per GPU) or a bandwidth in GB/s per GPU.")) = "nvlink"
    bucket_mb: float = Field(DEFAULT_BUCKET_MB, gt=0, le=1_000_000, description=(
        "The gradient bucket cap in MiB (PyTorch DDP's bucket_cap_mb)."))


# --- Answers -----------------------------------------------------------------------------------

class Open(BaseModel):
    """An object with more keys than those listed."""
    model_config = ConfigDict(extra="allow")


class Error(BaseModel):
    error: str = Field(description="What was wrong, and what to do about it.")


class StageState(BaseModel):
    name: str
    state: Literal["waiting", "running", "done", "failed"]
    seconds: float | None = Field(description="how long it took, or has taken so far; null "
                                              "while waiting")


class Status(BaseModel):
    status: JobStatus
    stage: str = Field(description="The stage running now (import, explore, codegen, build, "
                                   "cost).")
    progress_done: int
    progress_total: int
    error: str = Field(description="Empty unless the run failed.")
    error_stage: str
    finished: datetime | None
    stage_detail: str = Field(description=(
        "What the running stage is doing where its count alone would stand still (build: "
        "\"h100: compiling 412 distinct kernels to PTX ...\"), or why an interrupted job "
        "waits; empty when the job is neither running nor queued."))
    interrupted: bool = Field(description=(
        "The job was stopped before it ended (its worker killed or cut off, or a transient "
        "error such as a locked database) and will be taken up again by a worker."))
    stages: list[StageState] = Field(description="Every stage of the job in order.")


class NotDone(Error):
    status: Status
    status_url: Url


class Links(BaseModel):
    url: Url = Field(description="The run's web page.")
    api_url: Url
    status_url: Url
    results_url: Url
    export_json_url: Url
    export_csv_url: Url


class RunSummary(Links):
    id: str
    name: str
    filename: str
    status: JobStatus
    owner: str
    team: str | None
    visibility: Visibility
    tags: list[str]
    devices: list[str]
    strategies: list[str]
    runtime: Runtime
    created: datetime


class Run(RunSummary):
    compiler_version: str
    started: datetime | None
    progress: Status


class RunList(BaseModel):
    count: int
    page: int
    pages: int
    per_page: int
    next: str | None
    previous: str | None
    results: list[RunSummary]


class Submitted(Links):
    id: str
    status: str
    labels_not_applied: list[Literal["name", "visibility", "team", "tags"]] = Field(
        None, description="Only when the run existed already: the labels asked for that it "
                          "does not have (it keeps its own).")


class Retried(Status, Links):
    id: str


class Kernel(Open):
    """One kernel of a fusion plan, as `python -m compiler codegen --json` prints it (more keys
    than listed here). Fields a stage did not produce are null."""
    name: str
    kind: str
    xla_name: str | None = Field(None, description=(
        "XLA:GPU's name for the launch the kernel is, or is a part of (fusion.276, "
        "gemm_fusion_dot.101), in the xla-gpu plan; null in ours"))
    nodes: list[str]
    dram_bytes: int | None = None
    sol_us: float | None = Field(description="the speed of light of the kernel's device work "
                                             "(no launch)")
    device_us: float | None = Field(None, description="the projected device work: the time the "
                                                      "GPU runs the kernel's blocks")
    launch_us: float | None = Field(None, description="the launch term under the plan's runtime")
    launch: dict | None = Field(None, description="the launch term under each runtime: "
                                                  "{graph, stream}")
    proj_us: float | None = Field(description="device_us + launch_us: the kernel's projected "
                                              "time in the plan")
    measured_us: float | None = Field(description="the kernel timed alone (CUDA events around "
                                                  "its launch, so a lone launch's time is in "
                                                  "it)")
    learned_us: float | None = Field(None, description=(
        "the learned cost model's time in the plan: its device work (learned_device_us) + "
        "launch_us; null without a model for the device or for a library kernel"))
    learned_device_us: float | None = None
    learned_skipped: str | None = Field(None, description=(
        "why the learned model predicted no time for this kernel (a library call; outside "
        "its training: a schedule or kind none of its training kernels had, or a size beyond "
        "their range); the kernel's projected time stands in for it in the learned total"))
    limiter: str | None = Field(None, description=(
        "what bounds the kernel's time: launch (the launch term is larger than the device "
        "work), latency (no unit is busy) or the busiest unit (dram, l2, fma, ...)"))
    device_limiter: str | None = Field(None, description="what bounds the device work alone")
    occupancy: float | None = Field(None, description="theoretical occupancy of an SM the grid "
                                                      "uses")
    waves: float | None = None
    block_size: int | None = None
    grid_size: int | None = None
    registers: int | None = None
    shared_bytes: int | None = None
    spill_bytes: int | None = None
    schedule: str | None = Field(None, description=(
        "the schedule of the CodeGen plan the kernel is projected (and emitted) with, e.g. "
        "row-reduce-warp; null for a library call"))
    proj_over_sol: float | None = Field(None, description=(
        "the projected time over the speed-of-light time (1.0: at the bound); null without "
        "both"))
    outlier_reason: str | None = Field(None, description=(
        f"null, or why the kernel projects at least {OUTLIER_RATIO:g}x its speed of light and "
        f"at least {OUTLIER_MIN_US:g} µs: the limiter and what in the schedule the speed of "
        f"light does not count"))


class PlanTotal(Open):
    sol_us: float | None
    device_us: float | None = None
    launch_us: float | None = None
    proj_us: float | None
    runtimes: dict | None = Field(None, description="launch_us, proj_us and learned_us under "
                                                    "each runtime")
    measured_us: float | None
    learned_us: float | None = None
    learned_kernels: int | None = Field(None, description="how many kernels the learned model "
                                        "predicted; the others' projected times stand in")
    learned_outside: int | None = Field(None, description=(
        "how many kernels the learned model left to the projected model because they lie "
        "outside its training support"))


class StrategyResult(Open):
    explore_ms: float | None = None
    cost_model: Literal[tuple(PRICERS)] | None = Field(None, description=(
        "the cost model whose prices decided the fusions (the cost strategy's); null for a "
        "rule-based strategy (unfused, xla, stitch), whose rules decide. Its decisions' "
        "reasons start with the model's name"))
    runtime: Runtime | None = Field(None, description=(
        "how the plan's kernels are launched: the runtime of its launch terms and of the cost "
        "strategy's decisions"))
    total: PlanTotal
    learned_model: dict | None = Field(None, description=(
        "the learned model that predicted learned_us: label, origin (measured or synthetic), "
        "device; or {error} when it could not be loaded"))
    kernels: list[Kernel]
    decisions: list
    unavailable: str | None = Field(None, description=(
        "why the strategy made no plan here (xla-gpu without JAX's CUDA plugin, or a device "
        "XLA refuses): it then has no kernels and null totals; null otherwise"))


class GraphSummary(Open):
    name: str
    nodes: int


class DeviceResult(Open):
    graph: dict
    device: str
    strategies: dict[str, StrategyResult]


class Artifact(Open):
    compiler_version: str
    graph: GraphSummary
    devices: dict[str, DeviceResult] = Field(description="Keyed by device name.")


class Measurement(Status):
    id: int
    url: Url
    gpu: str | None = Field(description="The GPU that measured, as its driver names it; null "
                                        "until a worker has finished.")
    compiler_version: str | None
    created: datetime
    result: dict | None = Field(None, description=(
        "Only from the measurement's own URL, once done: the GPU, and per device and strategy "
        "every kernel's check against the reference interpreter and its timing (median, min, "
        "cv, samples), the plan's back-to-back time, and the eager CuPy baseline (see "
        "docs/api.md)."))


class MeasurementList(BaseModel):
    gpu_worker_online: bool
    gpu_workers: str
    results: list[Measurement]


class Results(Artifact):
    id: str
    measurement: Measurement | None = Field(description=(
        "The measurement whose timings fill the measured fields; null when none has "
        "finished."))


class KernelDetail(BaseModel):
    device: str
    strategy: str
    kernel: Kernel
    function: str | None
    source: str | None = Field(description="CUDA C; null for a library call.")
    ptx: str | None
    line_nodes: dict[str, list[str]] = Field(description="1-based source line → the graph "
                                                         "nodes it computes.")
    resources: dict | None = Field(description="What ptxas reports.")
    candidate_plans: list[dict] = Field(description="The CodeGen plans codegen weighed, with "
                                                    "their projections.")


class LayoutEntry(BaseModel):
    id: str
    kernel: bool
    layer: int
    x: float


class Layout(BaseModel):
    """Where to draw each node (compiler/stages/graph_layout.py): layers top-down and x
    positions in units of one box, at the plan level and inside each kernel."""
    top: list[LayoutEntry] = Field(description="The plan level: each kernel and each node no "
                                               "kernel computes.")
    inner: dict[str, dict] = Field(description="kernel name -> {width, layers, nodes: {node "
                                               "id: [x, layer]}}: the ops it computes (owned "
                                               "and recomputed).")
    layers: int


class GraphNode(BaseModel):
    id: str
    op: str
    shape: list[int] | None = Field(description="the dimensions; null for a tuple")
    dtype: str = Field(description="e.g. f32, bf16; 'tuple' for a tuple")
    kernel: str | None = Field(description="the kernel that owns it; null when no kernel "
                                           "computes it (parameters, tuples)")
    also_in: list[str] = Field(description="the kernels that recompute it")
    line: int | None = Field(description="its line in the uploaded text")


class GraphKernel(Open):
    name: str
    kind: str
    xla_name: str | None = None
    dominant: str | None = None
    nodes: int
    recomputed: int | None = None
    proj_us: float | None = None
    sol_us: float | None = None
    measured_us: float | None = None
    learned_us: float | None = None
    limiter: str | None = None
    proj_over_sol: float | None = None
    outlier_reason: str | None = None
    schedule: str | None = None
    dram_bytes: int | None = None


class FusionGraph(BaseModel):
    """The uploaded graph with one plan's kernels on it (compiler/stages/graph_view.py)."""
    id: str
    device: str
    strategy: str
    nodes: list[GraphNode] = Field(description="Every node of the graph, in graph order.")
    edges: list[list[str]] = Field(description="[from, to] for each value a node reads.")
    dram: list[bool] = Field(description="Per edge: the value goes through memory (the "
                                         "reader's kernel neither owns nor recomputes it); "
                                         "false inside a kernel.")
    kernels: list[GraphKernel] = Field(description="The plan's kernels in order, with the "
                                                   "figures the view colours by.")
    layout: Layout


class PlanTimeline(BaseModel):
    """One plan's timeline (compiler/stages/timeline.py) and data-parallel overlap
    (compiler/stages/dp.py); docs/api.md describes every key."""
    id: str
    device: str
    strategy: str
    runtime: Runtime
    training: dict[str, Any] = Field(description="The graph's loss and gradient outputs, or "
                                                 "why it is not a training step.")
    timeline: dict[str, Any] = Field(description="Kernels with their start and end per model, "
                                                 "outputs with the time they are ready, the "
                                                 "critical path.")
    dp: dict[str, Any] | None = Field(description="The data-parallel overlap with dp_world; "
                                                  "null without.")


class ExportedArtifact(Artifact):
    sources: dict[str, dict]


class Export(BaseModel):
    run: Run
    artifact: ExportedArtifact


class CostModel(BaseModel):
    """One model file (`learned-<device>-v<N>.pt`). origin 'synthetic': trained on a known
    function, not GPU times. evaluation: per split (program, family) the metrics of learned,
    sol and projected on the same held-out samples."""
    label: str
    version: int
    origin: Literal["measured", "synthetic"]
    created: str | None
    active: bool
    why_not: str | None
    stale: bool
    readout: str | None
    datasets: list | None
    programs: dict | None
    evaluation: dict | None
    readouts: dict | None
    readout_winner: str | None


class CostModels(BaseModel):
    allow_synthetic: bool
    devices: dict[str, list[CostModel]]


# --- What-if and saved plans (issue 36: explorer/plan_edits.py) ---------------------------------

EDIT_DESCRIPTION = (
    "One edit, by its \"op\": {\"op\": \"merge\", \"kernels\": [names]}, {\"op\": \"split\", "
    "\"kernel\": name, \"ops\": [node names] (none: back into one kernel per op)}, {\"op\": "
    "\"move\", \"ops\": [...], \"into\": kernel}, {\"op\": \"forbid\" | \"force\", "
    "\"producer\": node, \"consumer\": node}, {\"op\": \"split_kind\", \"kind\": kind}. "
    "Kernels are named as in the plan the edit applies to (after the edits before it).")


class WhatIfRequest(BaseModel):
    device: text_field(description="A device of the run.")
    strategy: text_field(description="The plan to edit: a strategy of the run, or a saved "
                                     "plan (custom:NAME).")
    edits: list[dict[str, Any]] = Field(default_factory=list, description=(
        "Every edit since the stored plan, in order (undo: send the list less its last). "
        + EDIT_DESCRIPTION))
    graph: bool = Field(False, description="Also answer the edited plan's fusion graph "
                                           "(getRunGraph's object; a second or more to lay "
                                           "out for a big graph).")


class WhatIfKernel(Open):
    name: str
    kind: str
    nodes: int
    sol_us: float | None = None
    proj_us: float | None = None
    limiter: str | None = None
    occupancy: float | None = None
    learned_us: float | None = None


class WhatIfEdit(Open):
    edit: dict[str, Any]
    describe: str
    before_us: float | None
    after_us: float | None
    gain_us: float | None
    removed: list[WhatIfKernel] = Field(description="The kernels it replaced (at most 40).")
    added: list[WhatIfKernel] = Field(description="The kernels that replaced them (at most 40).")
    removed_count: int
    added_count: int
    explanation: dict[str, Any] | None = Field(description=(
        "Its before and after by cause (launch, DRAM, on-chip, compute, barriers, latency) "
        "for the kernels it touched, as the comparison of two plans gives it."))


class WhatIfTotals(BaseModel):
    proj_us: float | None
    sol_us: float | None
    learned_us: float | None
    kernels: int


class WhatIf(Open):
    """The plan after the edits, priced by the projected model's quick projection (before
    nvcc); a saved plan is compiled and built like a strategy's."""
    device: str
    strategy: str
    runtime: str
    base: WhatIfTotals = Field(description="The stored plan's totals.")
    now: WhatIfTotals = Field(description="After the edits.")
    edits: list[WhatIfEdit]
    refused: dict[str, Any] | None = Field(description=(
        "The first edit refused ({\"index\", \"edit\", \"reason\"}); the answer is the plan "
        "before it. Null when every edit applied."))
    kernels: list[dict[str, Any]] = Field(description="The edited plan's kernels: name, kind, "
                                                      "nodes and recomputed nodes.")
    graph: FusionGraph | None = None


class SavePlanRequest(BaseModel):
    name: text_field(description="The plan's name: it becomes the strategy custom:NAME "
                                 "(1 to 40 letters, digits, _ - .).")
    device: text_field(description="The device (for a plan file: by default its own).") = ""
    strategy: text_field(description="With edits: the plan they were made on.") = ""
    edits: list[dict[str, Any]] | None = Field(None, description="The edits (as for whatIf).")
    plan: dict[str, Any] | None = Field(None, description=(
        "A plan file instead of edits (getPlanFile's, or the CLI's --save-plans)."))


class SavedPlan(Status):
    id: int
    device: str
    name: str
    strategy: str


class SavedPlanList(BaseModel):
    plans: list[SavedPlan]


class PlanSaved(BaseModel):
    plan: SavedPlan
    run: str = Field(description="The run it was saved on: this one, or, for a caller who may "
                                 "not add plans to it, a run of their own of the same upload.")
    own_run: bool
    url: str = Field(description="Its permanent link, once compiled.")


# --- Tuning (issue 37) -------------------------------------------------------------------------

class TuneRequest(BaseModel):
    device: text_field(description="A device of the run (default: its first).") = ""
    model: Literal["projected", "learned", "sol"] = Field(
        "projected", description="The model that scores plans (learned needs a learned model "
                                 "for the device).")
    search: Literal["anneal", "beam"] = Field("anneal", description="The search.")
    budget_s: float = Field(30.0, gt=0, le=600, description="Seconds of search.")
    evaluations: int | None = Field(None, gt=0, description="Stop after this many plans "
                                                            "scored (deterministic with seed).")
    seed: int = Field(0, strict=True, description="The search's seed (a whole number; not "
                                                  "a boolean, which pydantic would read as one).")
    top_k: int = Field(3, ge=1, le=10, description="How many best plans to keep and name for "
                                                   "measuring.")


class Tuning(Status):
    id: int
    device: str
    model: str
    search: str
    budget_s: float
    result: dict[str, Any] | None = Field(None, description=(
        "Once done: `best` (its score, gain over the best start, moves with predicted gains), "
        "`top` (the best distinct plans with each model's total and their disagreement), "
        "`measure` (which to measure and why), `history` ([plans scored, seconds, best score]), "
        "`starts`, `evaluations`, `seconds`. The best plan becomes the run's plan `tuned`; "
        "a measurement of the run times it and the others chosen to measure."))
    measured: dict[str, Any] | None = Field(None, description=(
        "(getRunTuning) What the run's shown measurement says of the tuning: `plans` (each "
        "plan chosen to measure: `rank`, `why`, `score_us` under the tuner's model, "
        "`measured_us` back to back in a stream), `fastest_rank`, `regret` (how much slower "
        "the model's best ran than the fastest measured), `start`, `start_us`, `gain_us` (the "
        "tuned plan's measured gain over its start), `launch_gap_us`, `moves` (each move's "
        "`measured_gain_us`, or `why` not). Null until a measurement includes the tuned plan."))


# --- Tags as baselines (issue 40) ----------------------------------------------------------------

class BaselineRequest(BaseModel):
    tag: text_field(MAX_TAG_LENGTH, min_length=1, description=(
        "The tag the run is the baseline of (main: what the main branch's CI uploads)."))
    run: text_field(min_length=1, description=(
        "A finished run shared with the team; it becomes the baseline of the tag for its graph "
        "(the run's name, else its file name), in place of the one before."))


class BestTotal(BaseModel):
    device: str
    strategy: str = Field(description="The plan with the lowest projected total.")
    proj_us: float | None


class Baseline(BaseModel):
    team: str
    tag: str
    graph: str = Field(description="The graph's runs' title: their name, else their file name.")
    run: str = Field(description="The baseline run's id.")
    url: Url = Field(description="The baseline run's page.")
    best: list[BestTotal] = Field(description="Per device, its best plan.")
    set_by: str | None
    set_at: datetime


class BaselineList(BaseModel):
    baselines: list[Baseline]


class BaselineQuery(BaseModel):
    tag: text_field(MAX_TAG_LENGTH, min_length=1, description="The tag (main, ...).")
