"""The OpenAPI 3.1 description of the JSON API (explorer/api.py), written by hand and served at
/api/v1/openapi.json. tests/explorer/test_api_schema.py checks that it names every route of
explorer/api_urls.py and that real responses carry the keys it documents as required."""
from __future__ import annotations

from copy import deepcopy

from compiler.cost.devices import DEVICES
from compiler.cost.launch import DEFAULT_RUNTIME, RUNTIMES
from compiler.cost.outliers import OUTLIER_MIN_US, OUTLIER_RATIO
from compiler.fusion.explore import STRATEGIES
from compiler.fusion.pricing import PRICERS


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(type_name: str) -> dict:
    return {"type": [type_name, "null"]}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict:
    return _json(_ref("Error"), description)


RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"},
          "description": "The run's permalink id (22 characters)."}
NOT_DONE = _json(_ref("NotDone"), "The run is not done: still queued or running, or failed "
                                  "(then `error` names the stage and the message).")
UNAUTHORIZED = _error("No session and no valid `Authorization: Bearer <key>`.")
NOT_FOUND = _error("No such run, or one the caller may not see (the two read alike).")
NOT_OWNER = _error("A run the caller may see but does not own.")

KERNEL = {
    "type": "object",
    "description": "One kernel of a fusion plan, as `python -m compiler codegen --json` "
                   "prints it (more keys than listed here). Fields a stage did not produce "
                   "are null.",
    "required": ["name", "kind", "nodes", "sol_us", "proj_us", "measured_us"],
    "properties": {
        "name": {"type": "string"}, "kind": {"type": "string"},
        "xla_name": {**_nullable("string"),
                     "description": "XLA:GPU's name for the launch the kernel is, or is a part "
                                    "of (fusion.276, gemm_fusion_dot.101), in the xla-gpu "
                                    "plan; null in ours"},
        "nodes": {"type": "array", "items": {"type": "string"}},
        "dram_bytes": _nullable("integer"),
        "sol_us": {**_nullable("number"),
                   "description": "the speed of light of the kernel's device work (no launch)"},
        "device_us": {**_nullable("number"),
                      "description": "the projected device work: the time the GPU runs the "
                                     "kernel's blocks"},
        "launch_us": {**_nullable("number"),
                      "description": "the launch term under the plan's runtime"},
        "launch": {**_nullable("object"),
                   "description": "the launch term under each runtime: {graph, stream}"},
        "proj_us": {**_nullable("number"),
                    "description": "device_us + launch_us: the kernel's projected time in "
                                   "the plan"},
        "measured_us": {**_nullable("number"),
                        "description": "the kernel timed alone (CUDA events around its "
                                       "launch, so a lone launch's time is in it)"},
        "learned_us": {**_nullable("number"),
                       "description": "the learned cost model's time in the plan: its "
                                      "device work (learned_device_us) + launch_us; null "
                                      "without a model for the device or for a library "
                                      "kernel"},
        "learned_device_us": _nullable("number"),
        "limiter": {**_nullable("string"),
                    "description": "what bounds the kernel's time: launch (the launch term "
                                   "is larger than the device work), latency (no unit is "
                                   "busy) or the busiest unit (dram, l2, fma, ...)"},
        "device_limiter": {**_nullable("string"),
                           "description": "what bounds the device work alone"},
        "occupancy": {**_nullable("number"),
                      "description": "theoretical occupancy of an SM the grid uses"},
        "waves": _nullable("number"), "block_size": _nullable("integer"),
        "grid_size": _nullable("integer"), "registers": _nullable("integer"),
        "shared_bytes": _nullable("integer"), "spill_bytes": _nullable("integer"),
        "schedule": {**_nullable("string"),
                     "description": "the schedule of the CodeGen plan the kernel is projected "
                                    "(and emitted) with, e.g. row-reduce-warp; null for a "
                                    "library call"},
        "proj_over_sol": {**_nullable("number"),
                          "description": "the projected time over the speed-of-light time "
                                         "(1.0: at the bound); null without both"},
        "outlier_reason": {**_nullable("string"),
                           "description": f"null, or why the kernel projects at least "
                                          f"{OUTLIER_RATIO:g}x its speed of light and at least "
                                          f"{OUTLIER_MIN_US:g} µs: the limiter and what in the "
                                          f"schedule the speed of light does not count"},
    },
}

STATUS = {
    "type": "object",
    "required": ["status", "stage", "progress_done", "progress_total", "error", "error_stage",
                 "finished", "stage_detail", "interrupted", "stages"],
    "properties": {
        "status": {"type": "string", "enum": ["queued", "running", "done", "failed"]},
        "interrupted": {"type": "boolean", "description": "The job was stopped before it "
                        "ended (its worker killed or cut off, or a transient error such as a "
                        "locked database) and will be taken up again by a worker."},
        "stage": {"type": "string", "description": "The stage running now (import, explore, "
                                                   "codegen, build, cost)."},
        "progress_done": {"type": "integer"}, "progress_total": {"type": "integer"},
        "error": {"type": "string", "description": "Empty unless the run failed."},
        "error_stage": {"type": "string"},
        "stage_detail": {"type": "string", "description": "What the running stage is doing "
                         "where its count alone would stand still (build: \"h100: compiling 412 "
                         "distinct kernels to PTX ...\"), or why an interrupted job waits; "
                         "empty when the job is neither running nor queued."},
        "stages": {"type": "array", "description": "Every stage of the job in order.",
                   "items": {"type": "object", "required": ["name", "state", "seconds"],
                             "properties": {
                                 "name": {"type": "string"},
                                 "state": {"type": "string",
                                           "enum": ["waiting", "running", "done", "failed"]},
                                 "seconds": {**_nullable("number"),
                                             "description": "how long it took, or has taken "
                                                            "so far; null while waiting"}}}},
        "finished": {"type": ["string", "null"], "format": "date-time"},
    },
}

LINKS = {
    "url": {"type": "string", "format": "uri", "description": "The run's web page."},
    "api_url": {"type": "string", "format": "uri"},
    "status_url": {"type": "string", "format": "uri"},
    "results_url": {"type": "string", "format": "uri"},
    "export_json_url": {"type": "string", "format": "uri"},
    "export_csv_url": {"type": "string", "format": "uri"},
}

RUN_SUMMARY = {
    "type": "object",
    "required": ["id", "name", "filename", "status", "owner", "team", "visibility", "tags",
                 "devices", "strategies", "runtime", "created", *LINKS],
    "properties": {
        "id": {"type": "string"}, "name": {"type": "string"}, "filename": {"type": "string"},
        "status": {"type": "string", "enum": ["queued", "running", "done", "failed"]},
        "owner": {"type": "string"}, "team": _nullable("string"),
        "visibility": {"type": "string", "enum": ["private", "team", "public"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "devices": {"type": "array", "items": {"type": "string"}},
        "strategies": {"type": "array", "items": {"type": "string"}},
        "runtime": {"type": "string", "enum": list(RUNTIMES)},
        "created": {"type": "string", "format": "date-time"},
        **LINKS,
    },
}

SUBMISSION_FIELDS = {
    "devices": {"type": "array", "items": {"type": "string", "enum": list(DEVICES)},
                "description": "Device models to compile for (default: h100)."},
    "strategies": {"type": "array", "items": {"type": "string", "enum": list(STRATEGIES)},
                   "description": "Fusion strategies (default: all)."},
    "runtime": {"type": "string", "enum": list(RUNTIMES), "default": DEFAULT_RUNTIME,
                "description": "How the plans' kernels are launched, which the cost "
                               "strategy decides under: graph (one CUDA graph replay, as "
                               "XLA's command buffers run a step) or stream (each kernel "
                               "launched by the host, as PyTorch eager). Every plan's "
                               "totals are given under both."},
    "name": {"type": "string", "maxLength": 200},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 50}, "maxItems": 20},
    "visibility": {"type": "string", "enum": ["private", "team", "public"],
                   "default": "private"},
    "team": {"type": ["string", "integer"],
             "description": "A team of the caller's, by name or id; needed for visibility "
                            "\"team\"."},
}

SCHEMAS = {
    "Error": {"type": "object", "required": ["error"],
              "properties": {"error": {"type": "string"}}},
    "Status": STATUS,
    "NotDone": {"type": "object", "required": ["error", "status", "status_url"],
                "properties": {"error": {"type": "string"}, "status": _ref("Status"),
                               "status_url": {"type": "string", "format": "uri"}}},
    "RunSummary": RUN_SUMMARY,
    "Run": {"allOf": [_ref("RunSummary"), {
        "type": "object", "required": ["compiler_version", "started", "progress"],
        "properties": {"compiler_version": {"type": "string"},
                       "started": {"type": ["string", "null"], "format": "date-time"},
                       "progress": _ref("Status")}}]},
    "RunList": {"type": "object",
                "required": ["count", "page", "pages", "per_page", "next", "previous",
                             "results"],
                "properties": {"count": {"type": "integer"}, "page": {"type": "integer"},
                               "pages": {"type": "integer"}, "per_page": {"type": "integer"},
                               "next": _nullable("string"), "previous": _nullable("string"),
                               "results": {"type": "array", "items": _ref("RunSummary")}}},
    "Submitted": {"type": "object", "required": ["id", "status", *LINKS],
                  "properties": {"id": {"type": "string"}, "status": {"type": "string"},
                                 "labels_not_applied": {
                                     "type": "array", "items": {"type": "string", "enum": [
                                         "name", "visibility", "team", "tags"]},
                                     "description": "Only when the run existed already: the "
                                                    "labels asked for that it does not have "
                                                    "(it keeps its own)."},
                                 **LINKS}},
    "JsonSubmission": {"type": "object", "required": ["filename", "text"],
                       "properties": {"filename": {"type": "string", "description":
                                                   "Its suffix picks the format (.hlo, .mlir, .json)."},
                                      "text": {"type": "string"}, **SUBMISSION_FIELDS}},
    "MultipartSubmission": {"type": "object", "required": ["file"],
                            "properties": {"file": {"type": "string",
                                                    "contentMediaType":
                                                        "application/octet-stream",
                                                    "description": "The graph file (.hlo, "
                                                                   ".mlir, .onnx, .json); or "
                                                                   "several: an ONNX model and "
                                                                   "its external data files, or "
                                                                   "one .zip of them."},
                                           **SUBMISSION_FIELDS}},
    "Kernel": KERNEL,
    "StrategyResult": {"type": "object", "required": ["total", "kernels", "decisions"],
                       "properties": {
                           "explore_ms": {"type": "number"},
                           "cost_model": {
                               "type": ["string", "null"], "enum": [*PRICERS, None],
                               "description": "the cost model whose prices decided the "
                                              "fusions (the cost strategy's); null for a "
                                              "rule-based strategy (unfused, xla, stitch), "
                                              "whose rules decide. Its decisions' reasons start "
                                              "with the model's name"},
                           "runtime": {"type": "string", "enum": list(RUNTIMES),
                                       "description": "how the plan's kernels are launched: "
                                                      "the runtime of its launch terms and "
                                                      "of the cost strategy's decisions"},
                           "total": {"type": "object",
                                     "required": ["sol_us", "proj_us", "measured_us"],
                                     "properties": {"sol_us": _nullable("number"),
                                                    "device_us": _nullable("number"),
                                                    "launch_us": _nullable("number"),
                                                    "proj_us": _nullable("number"),
                                                    "runtimes": {
                                                        **_nullable("object"),
                                                        "description": "launch_us, proj_us "
                                                        "and learned_us under each runtime"},
                                                    "measured_us": _nullable("number"),
                                                    "learned_us": _nullable("number"),
                                                    "learned_kernels": _nullable("integer")}},
                           "learned_model": {
                               **_nullable("object"),
                               "description": "the learned model that predicted learned_us: "
                                              "label, origin (measured or synthetic), device; "
                                              "or {error} when it could not be loaded"},
                           "kernels": {"type": "array", "items": _ref("Kernel")},
                           "decisions": {"type": "array"},
                           "unavailable": {
                               **_nullable("string"),
                               "description": "why the strategy made no plan here (xla-gpu "
                                              "without JAX's CUDA plugin, or a device XLA "
                                              "refuses): it then has no kernels and null "
                                              "totals; null otherwise"}}},
    "CostModels": {"type": "object", "required": ["allow_synthetic", "devices"],
                   "properties": {
                       "allow_synthetic": {"type": "boolean"},
                       "devices": {"type": "object", "additionalProperties": {
                           "type": "array", "items": _ref("CostModel")}}}},
    "CostModel": {
        "type": "object",
        "description": "One model file (`learned-<device>-v<N>.pt`). origin 'synthetic': "
                       "trained on a known function, not GPU times. evaluation: per split "
                       "(program, family) the metrics of learned, sol and projected on the "
                       "same held-out samples.",
        "required": ["label", "version", "origin", "active", "why_not", "stale"],
        "properties": {
            "label": {"type": "string"}, "version": {"type": "integer"},
            "origin": {"type": "string", "enum": ["measured", "synthetic"]},
            "created": _nullable("string"), "active": {"type": "boolean"},
            "why_not": _nullable("string"), "stale": {"type": "boolean"},
            "readout": _nullable("string"), "datasets": _nullable("array"),
            "programs": _nullable("object"), "evaluation": _nullable("object"),
            "readouts": _nullable("object"), "readout_winner": _nullable("string")}},
    "Artifact": {"type": "object", "required": ["compiler_version", "graph", "devices"],
                 "properties": {
                     "compiler_version": {"type": "string"},
                     "graph": {"type": "object", "required": ["name", "nodes"]},
                     "devices": {"type": "object", "description": "Keyed by device name.",
                                 "additionalProperties": {
                                     "type": "object",
                                     "required": ["graph", "device", "strategies"],
                                     "properties": {"strategies": {
                                         "type": "object",
                                         "additionalProperties": _ref("StrategyResult")}}}}}},
    "Results": {"allOf": [_ref("Artifact"), {
        "type": "object", "required": ["id", "measurement"],
        "properties": {"id": {"type": "string"},
                       "measurement": {"anyOf": [_ref("Measurement"), {"type": "null"}],
                                       "description": "The measurement whose timings fill "
                                       "the measured fields; null when none has finished."}}}]},
    "KernelDetail": {"type": "object",
                     "required": ["device", "strategy", "kernel", "function", "source", "ptx",
                                  "line_nodes", "resources"],
                     "properties": {
                         "device": {"type": "string"}, "strategy": {"type": "string"},
                         "kernel": _ref("Kernel"), "function": _nullable("string"),
                         "source": {"type": ["string", "null"],
                                    "description": "CUDA C; null for a library call."},
                         "ptx": _nullable("string"),
                         "line_nodes": {"type": "object", "description": "1-based source line "
                                        "→ the graph nodes it computes.",
                                        "additionalProperties": {"type": "array",
                                                                 "items": {"type": "string"}}},
                         "resources": {"type": ["object", "null"],
                                       "description": "What ptxas reports."},
                         "candidate_plans": {"type": "array", "items": {"type": "object"},
                                             "description": "The CodeGen plans codegen "
                                             "weighed, with their projections."}}},
    "FusionGraph": {
        "type": "object",
        "description": "The uploaded graph with one plan's kernels on it "
                       "(compiler/fusion/graph_view.py).",
        "required": ["id", "device", "strategy", "nodes", "edges", "dram", "kernels",
                     "layout"],
        "properties": {
            "id": {"type": "string"}, "device": {"type": "string"},
            "strategy": {"type": "string"},
            "layout": {
                "type": "object", "required": ["top", "inner", "layers"],
                "description": "Where to draw each node (compiler/fusion/graph_layout.py): "
                               "layers top-down and x positions in units of one box, at the "
                               "plan level and inside each kernel.",
                "properties": {
                    "top": {"type": "array", "description": "The plan level: each kernel and "
                            "each node no kernel computes.", "items": {
                                "type": "object", "required": ["id", "kernel", "layer", "x"],
                                "properties": {"id": {"type": "string"},
                                               "kernel": {"type": "boolean"},
                                               "layer": {"type": "integer"},
                                               "x": {"type": "number"}}}},
                    "inner": {"type": "object", "description": "kernel name -> {width, "
                              "layers, nodes: {node id: [x, layer]}}: the ops it computes "
                              "(owned and recomputed)."},
                    "layers": {"type": "integer"}}},
            "nodes": {"type": "array", "description": "Every node of the graph, in graph "
                      "order.", "items": {
                          "type": "object",
                          "required": ["id", "op", "shape", "dtype", "kernel", "also_in",
                                       "line"],
                          "properties": {
                              "id": {"type": "string"}, "op": {"type": "string"},
                              "shape": {"type": ["array", "null"],
                                        "description": "the dimensions; null for a tuple"},
                              "dtype": {"type": "string",
                                        "description": "e.g. f32, bf16; 'tuple' for a tuple"},
                              "kernel": {"type": ["string", "null"],
                                         "description": "the kernel that owns it; null when "
                                                        "no kernel computes it (parameters, "
                                                        "tuples)"},
                              "also_in": {"type": "array", "items": {"type": "string"},
                                          "description": "the kernels that recompute it"},
                              "line": {"type": ["integer", "null"],
                                       "description": "its line in the uploaded text"}}}},
            "edges": {"type": "array", "description": "[from, to] for each value a node reads.",
                      "items": {"type": "array", "items": {"type": "string"}}},
            "dram": {"type": "array", "items": {"type": "boolean"},
                     "description": "Per edge: the value goes through memory (the reader's "
                                    "kernel neither owns nor recomputes it); false inside a "
                                    "kernel."},
            "kernels": {"type": "array", "description": "The plan's kernels in order, with "
                        "the figures the view colours by.", "items": {
                            "type": "object", "required": ["name", "kind", "nodes"],
                            "properties": {
                                "name": {"type": "string"}, "kind": {"type": "string"},
                                "xla_name": _nullable("string"),
                                "dominant": _nullable("string"), "nodes": {"type": "integer"},
                                "recomputed": {"type": "integer"},
                                "proj_us": _nullable("number"), "sol_us": _nullable("number"),
                                "measured_us": _nullable("number"),
                                "learned_us": _nullable("number"),
                                "limiter": _nullable("string"),
                                "proj_over_sol": _nullable("number"),
                                "outlier_reason": _nullable("string"),
                                "schedule": _nullable("string"),
                                "dram_bytes": _nullable("integer")}}}}},
    "Measurement": {"allOf": [_ref("Status"), {
        "type": "object", "required": ["id", "url", "gpu", "compiler_version", "created"],
        "properties": {
            "id": {"type": "integer"}, "url": {"type": "string", "format": "uri"},
            "gpu": {"type": ["string", "null"], "description": "The GPU that measured, as its "
                    "driver names it; null until a worker has finished."},
            "compiler_version": _nullable("string"),
            "created": {"type": "string", "format": "date-time"},
            "result": {"type": ["object", "null"], "description": "Only from the "
                       "measurement's own URL, once done: the GPU, and per device and "
                       "strategy every kernel's check against the reference interpreter and "
                       "its timing (median, min, cv, samples), the plan's back-to-back time, "
                       "and the eager CuPy baseline (see docs/api.md)."}}}]},
    "MeasurementList": {"type": "object",
                        "required": ["gpu_worker_online", "gpu_workers", "results"],
                        "properties": {"gpu_worker_online": {"type": "boolean"},
                                       "gpu_workers": {"type": "string"},
                                       "results": {"type": "array",
                                                   "items": _ref("Measurement")}}},
    "Export": {"type": "object", "required": ["run", "artifact"],
               "properties": {"run": _ref("Run"), "artifact": {"allOf": [
                   _ref("Artifact"), {"type": "object", "required": ["sources"]}]}}},
}


def _operation(summary: str, responses: dict, parameters=(), **more) -> dict:
    return {"summary": summary, "parameters": list(parameters),
            "responses": {**responses, "401": UNAUTHORIZED}, **more}


def _query(name: str, description: str, schema: dict) -> dict:
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": schema}


def _path(name: str, description: str) -> dict:
    return {"name": name, "in": "path", "required": True, "description": description,
            "schema": {"type": "string"}}


PATHS = {
    "/runs": {
        "get": _operation(
            "The runs the caller can view, newest first.",
            {"200": _json(_ref("RunList"), "One page of runs."),
             "400": _error("A bad page or per_page."), "404": _error("No such page.")},
            [_query("device", "Only runs compiled for this device.", {"type": "string"}),
             _query("tag", "Only runs with this tag.", {"type": "string"}),
             _query("q", "Only runs whose name or file name contains this.",
                    {"type": "string"}),
             _query("page", "1-based page number.", {"type": "integer", "minimum": 1}),
             _query("per_page", "Runs per page (default 50).",
                    {"type": "integer", "minimum": 1, "maximum": 200})],
            operationId="listRuns"),
        "post": _operation(
            "Submit a graph; its compile job is queued.",
            {"201": _json(_ref("Submitted"), "A new run, queued."),
             "200": _json(_ref("Submitted"), "The same graph and options were submitted "
                                             "before: the existing run."),
             "400": _error("A graph that does not import (the message names file:line:col) "
                           "or a bad option."),
             "403": _error("A session-authenticated request without the CSRF token."),
             "415": _error("Neither multipart/form-data nor application/json.")},
            requestBody={"required": True, "content": {
                "application/json": {"schema": _ref("JsonSubmission")},
                "multipart/form-data": {"schema": _ref("MultipartSubmission")}}},
            operationId="submitRun"),
    },
    "/cost-models": {"get": _operation(
        "The learned cost models per device, newest first: which one the compiler uses, why "
        "the others are not used, and each one's held-out evaluation next to SOL and "
        "projected.",
        {"200": _json(_ref("CostModels"), "The models.")}, [], operationId="listCostModels")},
    "/runs/{run_id}": {
        "get": _operation(
            "A run's metadata and progress.",
            {"200": _json(_ref("Run"), "The run."), "404": NOT_FOUND}, [RUN_ID],
            operationId="getRun"),
        "delete": _operation(
            "Delete a run (its owner only), with its kernels and measurements; its permanent "
            "link stops working for everyone.",
            {"204": {"description": "Deleted."}, "403": NOT_OWNER, "404": NOT_FOUND},
            [RUN_ID], operationId="deleteRun"),
    },
    "/runs/{run_id}/retry": {"post": _operation(
        "Queue a failed run's compile again (its owner only), from the start.",
        {"202": _json(_ref("Status"), "Queued again: the run's new status (with its links)."),
         "403": NOT_OWNER, "404": NOT_FOUND,
         "409": _error("The run is not failed (queued, running or done).")},
        [RUN_ID], operationId="retryRun")},
    "/runs/{run_id}/status": {"get": _operation(
        "A run's status and progress; poll it until status is done or failed.",
        {"200": _json(_ref("Status"), "The status."), "404": NOT_FOUND}, [RUN_ID],
        operationId="getRunStatus")},
    "/runs/{run_id}/results": {"get": _operation(
        "A done run's artifact: per device, the output of `python -m compiler codegen --json`.",
        {"200": _json(_ref("Results"), "The artifact."), "404": NOT_FOUND, "409": NOT_DONE},
        [RUN_ID], operationId="getRunResults")},
    "/runs/{run_id}/kernels/{device}/{strategy}/{kernel}": {"get": _operation(
        "One kernel: its artifact entry, CUDA source, PTX and line → node map.",
        {"200": _json(_ref("KernelDetail"), "The kernel."),
         "404": _error("No such run (or not the caller's to see), or no such kernel in it."),
         "409": NOT_DONE},
        [RUN_ID, _path("device", "A device of the run, e.g. h100."),
         _path("strategy", "A strategy of the run, e.g. cost."),
         _path("kernel", "The kernel's name in the plan, e.g. stitch-regional.0.")],
        operationId="getRunKernel")},
    "/runs/{run_id}/graph": {"get": _operation(
        "The uploaded graph with one plan's kernels on it: every node with the kernel that "
        "computes it, the edges, which edges go through memory, the kernels' figures.",
        {"200": _json(_ref("FusionGraph"), "The graph."),
         "400": _error("A device or strategy the run does not have (the message lists them)."),
         "404": NOT_FOUND, "409": NOT_DONE,
         "422": _error("The run's plan does not match its upload.")},
        [RUN_ID, _query("device", "A device of the run (default: its first).",
                        {"type": "string"}),
         _query("strategy", "A strategy of the run (default: the plan with the lowest "
                            "projected total).", {"type": "string"})],
        operationId="getRunGraph")},
    "/runs/{run_id}/measurements": {
        "get": _operation(
            "The run's GPU measurements, newest first, and whether a GPU worker is online.",
            {"200": _json(_ref("MeasurementList"), "The measurements."), "404": NOT_FOUND,
             "409": NOT_DONE}, [RUN_ID], operationId="listRunMeasurements"),
        "post": _operation(
            "Ask a GPU worker to measure the run: the job waits in the gpu queue until one "
            "takes it.",
            {"202": _json(_ref("Measurement"), "A new measurement, queued."),
             "200": _json(_ref("Measurement"), "One was already queued or running: that one."),
             "403": _error("A session-authenticated request without the CSRF token."),
             "404": NOT_FOUND, "409": NOT_DONE}, [RUN_ID], operationId="measureRun")},
    "/runs/{run_id}/measurements/{measurement_id}": {"get": _operation(
        "One measurement, with its result once done.",
        {"200": _json(_ref("Measurement"), "The measurement."),
         "404": _error("No such run or measurement (or not the caller's to see).")},
        [RUN_ID, {**_path("measurement_id", "The measurement's id."),
                  "schema": {"type": "integer"}}],
        operationId="getRunMeasurement")},
    "/runs/{run_id}/export.json": {"get": _operation(
        "Download the run (metadata, artifact and kernel sources) as one JSON file.",
        {"200": _json(_ref("Export"), "An attachment (Content-Disposition)."),
         "404": NOT_FOUND, "409": NOT_DONE},
        [RUN_ID], operationId="exportRunJson")},
    "/runs/{run_id}/export.csv": {"get": _operation(
        "Download the run's kernels as CSV, one row per device × strategy × kernel.",
        {"200": {"description": "An attachment (Content-Disposition) with the header row "
                                "device, strategy, kernel, kind, nodes, dram_bytes, sol_us, "
                                "proj_us, measured_us, limiter, occupancy, waves, block_size, "
                                "grid_size, registers, shared_bytes, spill_bytes, schedule; "
                                "empty cells for fields not produced.",
                 "content": {"text/csv": {"schema": {"type": "string"}}}},
         "404": NOT_FOUND, "409": NOT_DONE},
        [RUN_ID], operationId="exportRunCsv")},
    "/openapi.json": {"get": {
        "summary": "This document.", "operationId": "getOpenApi", "security": [],
        "responses": {"200": _json({"type": "object"}, "The OpenAPI description.")}}},
}

DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "Fusion Explorer API", "version": "1",
             "description": "Submit a computation graph, poll its run, fetch the fusion plans, "
                            "kernels and timings, export them. See docs/api.md."},
    "paths": PATHS,
    "components": {
        "schemas": SCHEMAS,
        "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer",
                       "description": "An API key from the API keys page or `python manage.py "
                                      "create_api_token`: scope `read` (GET only) or `submit`, "
                                      "expiring or not."},
            "session": {"type": "apiKey", "in": "cookie", "name": "sessionid",
                        "description": "The browser's login session (POST needs the CSRF "
                                       "token too)."},
        },
    },
    "security": [{"bearer": []}, {"session": []}],
}


def schema(server_url: str) -> dict:
    """The document, with this server's /api/v1 URL as its server."""
    document = deepcopy(DOCUMENT)
    document["servers"] = [{"url": server_url}]
    return document
