"""The GPU campaign of issue 15, in one command: every fusion plan and the anchors measured, the
cost models' accuracy, a learned-model dataset, and a report.

On the lent GPU machine (its image has Python 3.12, CuPy, JAX with CUDA, PyTorch, nvcc and ncu,
but not our Django stack; everything here needs only that and compiler/), from this machine,
with the device tool; --device names the GPU that is there (h200 on an H200, h100 on an H100),
and each device has its folder of results under benchmarks/results/:

    run(command="PYTHONUNBUFFERED=1 timeout 500 python3 benchmarks/gpu_campaign.py
                 --device h200 --out benchmarks/results/gpu-campaign-h200 --budget 400 2>&1
                 | tee $OUT/log.txt; tar czf $OUT/campaign.tgz --exclude='*.npz'
                 --exclude='*.hlo' --exclude='*.cubin' -C benchmarks/results
                 gpu-campaign-h200", timeout_s=560)

then unpack the archive here (`tar xzf <files_at>/campaign.tgz -C benchmarks/results`), and
commit it. The `timeout` leaves time for the archive; the modules' inputs (about 1 GB) stay
behind, too large to come back, and a resumed campaign lowers them again (seeded, the same).
Every step whose result is in the folder is skipped, so the same command resumes where the last
stopped, in this session or a later one, until the summary says COMPLETE; calibrate and ncu are
made again when more modules have been measured since. The first run (2026-11-27, H200) showed
the costs: about 4 of its 15 minutes went on the machine's start, uploads and compiles, and the
dataset is the slowest step (the second run measured 25-55 s per small module, one file per
module, so a stopped run keeps the modules it finished; bias_gelu's 68-kernel unfused plan
did not finish in 200 s). Give each step its own `timeout` inside one device call (see
results/gpu-campaign-h200/ANALYSIS.md for the commands the second run used). A jax anchor the
first run wall-clocked is timed again by a resumed run; the other anchors are kept. If the
environment step reports a missing Python package, fetch it
with benchmarks/gpu_wheels.sh NAME... and prefix the command as that script says.
`--write-results` then copies the report to benchmarks/RESULTS.md (from the finished folder,
here: add `--steps report`). A person's reading of the figures goes in the folder's
ANALYSIS.md, which the report ends with.

    .venv/bin/python benchmarks/gpu_campaign.py --dry-run [--size small] [--modules a,b]

rehearses every step on the CPU: kernels are checked on the CPU emulator, timings are
SYNTHETIC (a known function of the projected time, labelled so everywhere), frameworks that
are installed run on the CPU (labelled cpu rehearsal, torch.compile with the aot_eager
backend) and those that are not say "not installed". Never a made-up number as a measurement.

Steps, in order (the results of each go to OUT/<step>.json; `--steps` picks some):
  environment   versions, GPU, driver, clocks, toolchain, ncu; what is missing and how to fix it
  modules       each module's HLO (lowered with JAX at --size, or the frozen copy in
                benchmarks/data/campaign/ without JAX) and its inputs
  copy          device-to-device copy bandwidth: the ceiling of a bandwidth-bound kernel
  launch        benchmarks/launch_probe.cu built with the toolchain and run: empty and spinning
                kernels alone, back to back in a stream and replayed as a CUDA graph (the launch
                terms of compiler/target/launch.py; benchmarks/launch_calibration.py fits them)
  dataset       `collect-costmodel-data` on the modules (measured; synthetic in a dry run)
  train         `train-costmodel` on it; the held-out table
  plans:<m>     every strategy's plan: each kernel checked against the interpreter (on the
                GPU) and timed alone (a library call as a replayed CUDA graph of its own), the
                plan back to back in a stream and replayed as one CUDA graph captured once;
                SOL, projected and learned predictions beside;
                the module's graph_sha256 and the compiler_version, by which `manage.py
                import_measurements OUT` puts the times into the app's runs of that graph
  anchors:<m>   jax.jit (with XLA's kernel count), torch.compile, PyTorch eager, CuPy eager
  calibrate     the projected model's derating fitted to the plans' kernels, before/after;
                the launch terms (alone, stream gap, graph gap) fitted to the plans run whole
                (benchmarks/launch_calibration.py)
  ncu           Nsight Compute's occupancy and DRAM throughput for a sample of kernels
  report        REPORT.md and summary.json (always rewritten: it only reads the others)
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
import traceback
import zlib
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# JAX takes 75 % of the GPU's memory at its first use unless told not to; the plans (CuPy) and
# the PyTorch anchors share the GPU with it in this one process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

import numpy as np  # noqa: E402

import gpu_campaign_ncu as ncu  # noqa: E402
import launch_calibration  # noqa: E402
from gpu_campaign_modules import MODULES, SIZES  # noqa: E402

from compiler.target.devices import get_device  # noqa: E402
from compiler.errors import InputError  # noqa: E402
from compiler.toolchain.locate import CUDA_ROOT_VARIABLE  # noqa: E402

STRATEGIES = ("unfused", "xla", "stitch", "cost")
ANCHORS = ("jax", "torch_compile", "torch_eager", "cupy_eager")
FROZEN = REPO / "benchmarks" / "data" / "campaign"
RESULTS_MD = REPO / "benchmarks" / "RESULTS.md"
SPLIT_US = 5.0                     # median APE is reported below and above this time
TIE = 0.02                         # a loss smaller than this fraction is reported as a tie
BUDGET_STOP = 3                    # exit status when --budget stopped the campaign early
SYNTHETIC = "SYNTHETIC (dry run: a known function of the projected time, not a measurement)"
PIPELINED = "per call of 20 issued back to back, waited for once (dispatch overlapped)"
# The note of a jax time from the first GPU campaign (2026-11-27): a wall clock around one
# blocking call, dispatch and wait included; such a time is shown but compared with nothing.
WALL_BLOCKING = "wall clock around a blocking call (dispatch included), no L2 flush"
# Python packages compiler/ and the anchors import: (import name, distribution, needed by).
PACKAGES = (("numpy", "numpy", "compiler"), ("ml_dtypes", "ml_dtypes", "compiler"),
            ("networkx", "networkx", "compiler"), ("onnx", "onnx", "compiler"),
            ("torch", "torch", "learned model, PyTorch anchors"),
            ("torch_geometric", "torch_geometric", "learned model"),
            ("cupy", "cupy-cuda13x", "GPU runner, CuPy eager"),
            ("jax", "jax", "jax.jit anchor, lowering modules"))


# -- the output folder ------------------------------------------------------------------------


class Folder:
    """OUT: one JSON file per finished step, written whole (a run killed mid-step leaves
    none, so the step runs again), and the settings the folder was made with."""

    def __init__(self, root: Path, settings: dict):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        stored = root / "campaign.json"
        if stored.exists():
            before = json.loads(stored.read_text())
            if before != settings:
                raise InputError(f"{root} holds a campaign made with {before}, not {settings}; "
                                 f"give another --out")
        else:
            stored.write_text(json.dumps(settings, indent=1))

    def path(self, step: str) -> Path:
        return self.root / (step.replace(":", "/") + ".json")

    def done(self, step: str, modules: list[str] | None = None) -> bool:
        """Whether `step` has a result; for a step over all modules (calibrate, ncu), one
        made from these `modules` (a campaign resumed with more modules measured makes it
        again)."""
        if not self.path(step).exists():
            return False
        result = self.load(step)
        if step.startswith("anchors:") and _wall_clocked(result):
            return False   # the first campaign's jax clock: timed again, the others kept
        made_from = result.get("modules") if modules is not None else None
        return made_from is None or sorted(made_from) == sorted(modules)

    def load(self, step: str) -> dict | list | None:
        path = self.path(step)
        return json.loads(path.read_text()) if path.exists() else None

    def record_run(self, done: list[str]) -> None:
        """Add this invocation (date, command, the steps it finished) to runs.json: a resumed
        campaign's figures come from several runs, and the report lists them all."""
        runs = self.load("runs") or []
        runs.append({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "command": shlex.join([Path(sys.executable).name, *sys.argv]),
                     "done": done})
        self.save("runs", runs)

    def save(self, step: str, result: dict | list) -> None:
        path = self.path(step)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(result, indent=1, default=_json_default))
        partial.replace(path)


def _wall_clocked(anchors: dict) -> bool:
    return (anchors.get("jax") or {}).get("note") == WALL_BLOCKING


def _json_default(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    raise TypeError(f"not JSON: {type(value).__name__}")


# -- timings ----------------------------------------------------------------------------------


def synthetic_timing(key: str, base_us: float):
    """A dry run's stand-in for a measurement: 5 samples around base_us x (1 to 1.3), the
    factor fixed by `key`, so figures computed from it can be checked."""
    from compiler.runtime.gpu import Timing

    rng = np.random.default_rng(zlib.crc32(key.encode()))
    centre = base_us * (1.0 + 0.3 * rng.random())
    return Timing(tuple(float(centre * (1 + 0.02 * x)) for x in rng.standard_normal(5)), 0)


def wall_timing(call, runs: int = 10, warmup: int = 2):
    """Wall-clock timing of a blocking call, in µs (CPU rehearsals)."""
    from compiler.runtime.gpu import Timing

    for _ in range(warmup):
        call()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e6)
    return Timing(tuple(samples), warmup)


def pipelined_timing(call, block, depth: int = 20, runs: int = 10, warmup: int = 3):
    """Time per call, in µs, of `depth` calls issued back to back and waited for once (`block`
    waits for the last call's result): how a jitted JAX function runs in a training loop.

    JAX's calls are asynchronous and its streams are its own, so CUDA events on our stream
    would not bracket them; a wall clock around one blocking call (what the first campaign
    did) adds the dispatch and the wait, about 60-100 µs on the H200, to a 37 µs kernel.
    Back to back, dispatch overlaps the GPU's work, as in a real step. No L2 flush: the
    bandwidth-bound modules' tensors (>= 64 MB) are larger than the L2 (50-60 MB)."""
    from compiler.runtime.gpu import Timing

    for _ in range(warmup):
        block(call())
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(depth - 1):
            call()
        block(call())
        samples.append((time.perf_counter() - start) * 1e6 / depth)
    return Timing(tuple(samples), warmup)


def timing_fields(timing, where: str) -> dict:
    return {"median_us": timing.median_us, "cv": timing.cv, "runs": timing.runs,
            "where": where}


# -- steps ------------------------------------------------------------------------------------


class Campaign:
    def __init__(self, args):
        self.args = args
        self.dry = args.dry_run
        self.device = get_device(args.device)
        self.modules = args.modules
        self.folder = Folder(Path(args.out), {"dry_run": self.dry, "size": args.size,
                                              "device": self.device.name})
        self.runner = None

    # the step list

    def steps(self) -> list[tuple[str, callable]]:
        steps = [("environment", self.environment), ("modules", self.lower_modules),
                 ("copy", self.copy_bandwidth), ("launch", self.launch_probe),
                 ("dataset", self.dataset),
                 ("train", self.train)]
        steps += [(f"plans:{m}", lambda m=m: self.plans(m)) for m in self.modules]
        steps += [(f"anchors:{m}", lambda m=m: self.anchors(m)) for m in self.modules]
        return steps + [("calibrate", self.calibrate), ("ncu", self.nsight)]

    def require(self, *steps: str) -> None:
        missing = [step for step in steps if not self.folder.done(step)]
        if missing:
            raise InputError(f"this step needs {', '.join(missing)} done first (run those "
                             f"steps, or leave out --steps)")

    def gpu(self):
        """The GpuRunner (GpuUnavailable without a GPU), started once."""
        if self.runner is None:
            from compiler.stages.measure import gpu_matches_device
            from compiler.runtime.gpu import GpuRunner

            self.runner = GpuRunner()
            if not gpu_matches_device(self.runner.name, self.device.name):
                raise InputError(f"the GPU is {self.runner.name}, not the --device "
                                 f"{self.device.name}: give --device for this GPU")
        return self.runner

    # environment

    def environment(self) -> dict:
        packages = {}
        for module, distribution, needed_by in PACKAGES:
            try:
                version = metadata.version(distribution)
            except metadata.PackageNotFoundError:
                version = None
            packages[module] = {"version": version, "needed_by": needed_by,
                                "importable": _importable(module)}
        missing = [m for m, info in packages.items()
                   if not info["importable"] and info["needed_by"] == "compiler"]
        result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "command": shlex.join([Path(sys.executable).name, *sys.argv]),
                  "python": platform.python_version(), "platform": platform.platform(),
                  "packages": packages, "toolchain": resolve_toolchain(),
                  "ncu": shutil.which("ncu"), "gpu": nvidia_smi(),
                  "missing": missing}
        if missing:
            result["fix"] = (f"benchmarks/gpu_wheels.sh {' '.join(missing)} (here), then "
                             f"carry .whl (its output says how)")
            raise InputError(f"compiler/ needs {', '.join(missing)}: {result['fix']}")
        return result

    # modules

    def lower_modules(self) -> dict:
        """Each module's HLO at --size: lowered with JAX when it is installed, else the frozen
        copy; and its inputs (OUT/modules/<name>.hlo, .inputs.npz)."""
        return {name: self.lower_module(name) for name in self.modules}

    def lower_module(self, name: str) -> dict:
        from compiler.importers import load_graphs

        directory = self.folder.root / "modules"
        directory.mkdir(exist_ok=True)
        path = directory / f"{name}.hlo"
        source = lower_or_frozen(MODULES[name], self.args.size, path)
        graph = load_graphs(path)[0]
        inputs = module_inputs(graph, MODULES[name])
        np.savez(directory / f"{name}.inputs.npz",
                 **{f"arg{i}": value for i, value in enumerate(inputs)})
        return {"source": source, "nodes": len(graph.nodes),
                "parameters": [f"{v.dtype}{list(v.shape)}" for v in inputs],
                "largest_tensor_mb": max(v.nbytes for v in inputs) / 1e6}

    def hlo(self, name: str) -> Path:
        """A module's HLO file, lowered again (without its inputs) when the folder lacks it."""
        path = self.folder.root / "modules" / f"{name}.hlo"
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            lower_or_frozen(MODULES[name], self.args.size, path)
        return path

    def module(self, name: str):
        """(graph, inputs) of a lowered module. A folder kept without its large files (the
        committed results keep only the JSON) lowers the module again: the HLO and the seeded
        inputs come out the same."""
        from compiler.importers import load_graphs

        self.require("modules")
        directory = self.folder.root / "modules"
        if not (directory / f"{name}.hlo").exists() \
                or not (directory / f"{name}.inputs.npz").exists():
            self.lower_module(name)
        graph = load_graphs(directory / f"{name}.hlo")[0]
        archive = np.load(directory / f"{name}.inputs.npz")
        return graph, [archive[f"arg{i}"] for i in range(len(archive.files))]

    # copy bandwidth

    def copy_bandwidth(self) -> dict:
        nbytes = 1 << 30 if not self.dry else 1 << 20
        if self.dry:
            gbs = 0.9 * self.device.dram_bandwidth_gbs
            return {"bytes": nbytes, "gbs": gbs, "origin": SYNTHETIC,
                    "how": "90 % of the device table's DRAM bandwidth"}
        runner = self.gpu()
        source = runner.cupy.empty(nbytes, dtype=runner.cupy.uint8)
        target = runner.cupy.empty_like(source)
        timing = runner.time(lambda: target.data.copy_from_device(source.data, nbytes))
        return {"bytes": nbytes, "gbs": 2 * nbytes / (timing.median_us * 1e-6) / 1e9,
                "timing": timing.to_dict(), "origin": "measured",
                "how": "cudaMemcpy device to device of 1 GiB, bytes read + written"}

    # launch costs

    def launch_probe(self) -> dict:
        """benchmarks/launch_probe.cu, built with the campaign's toolchain for the device and
        run: what launching costs alone, in a stream and in a CUDA graph (its header says
        how). A dry run builds it (nvcc needs no GPU) and runs nothing: no figure is made up."""
        import tempfile

        from compiler.toolchain.locate import find_toolchain

        toolchain = find_toolchain()
        with tempfile.TemporaryDirectory() as scratch:
            binary = Path(scratch) / "launch_probe"
            build = subprocess.run(
                [str(toolchain.nvcc), "-O2", "-std=c++17", f"-arch={self.device.arch}", "-o",
                 str(binary), str(REPO / "benchmarks" / "launch_probe.cu")],
                capture_output=True, text=True, timeout=300)
            if build.returncode:
                raise InputError(f"benchmarks/launch_probe.cu does not build with "
                                 f"{toolchain.nvcc}: {build.stderr.strip()[-2000:]}")
            built = {"toolchain": str(toolchain.root), "nvcc": toolchain.version}
            if self.dry:
                return {**built, "origin": "not run (dry run: no GPU)", "probe": None}
            run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300)
        probe = json.loads(run.stdout) if run.stdout.strip().startswith("{") else None
        if run.returncode or probe is None or "error" in probe:
            raise InputError(f"launch_probe failed (status {run.returncode}): "
                             f"{(probe or {}).get('error') or run.stderr.strip()[-2000:]}")
        return {**built, "origin": "measured", "probe": probe}

    # the learned model's data and training

    def dataset(self) -> dict:
        """`collect-costmodel-data` one module at a time, each into its own file with its
        summary beside it: a run stopped inside this step (the slowest) keeps the modules it
        finished, and the next run collects only the others."""
        from compiler.stages.learned.collect import added_up, collect_dataset

        self.require("modules")
        folder = self.folder.root / "dataset"
        folder.mkdir(exist_ok=True)
        summaries = []
        for name in self.modules:
            out = folder / f"{self.device.name}-{name}.jsonl.gz"
            kept = out.with_suffix(".summary.json")
            if out.exists() and kept.exists():
                summaries.append(json.loads(kept.read_text()))
                continue
            out.unlink(missing_ok=True)   # left by a run that stopped inside this module
            print(f"         dataset of {name}", flush=True)
            summary = collect_dataset([str(self.hlo(name))], self.device.name, out,
                                      top_k=self.args.top_k, synthetic=self.dry,
                                      runner=None if self.dry else self.gpu())
            summary.pop("per_program")
            kept.write_text(json.dumps(summary, indent=1, default=_json_default))
            summaries.append(summary)
        totals = added_up(summaries, ("programs", "samples", "candidates", "built", "measured"))
        # Paths relative to the folder: the dataset is made on the GPU machine and may be
        # trained on here.
        return {"out": [str(Path(s["out"]).relative_to(self.folder.root)) for s in summaries],
                "device": self.device.name,
                "origin": summaries[0]["origin"], "gpu": summaries[0]["gpu"], **totals,
                "errors": [e for s in summaries for e in s["errors"]],
                "seconds": round(sum(s["seconds"] for s in summaries), 3)}

    def train(self) -> dict:
        from compiler.cost.learned.experiment import load_datasets, train_costmodel
        from compiler.cost.learned.train import TrainConfig

        self.require("dataset")
        files = self.folder.load("dataset")["out"]
        samples, datasets = load_datasets([self.folder.root / f for f in files],
                                          self.device.name)
        model = train_costmodel(samples, self.device.name, self.folder.root / "models",
                                datasets=datasets,
                                train_config=TrainConfig(epochs=self.args.epochs, seed=0))
        return {"path": str(model.path), "origin": model.origin,
                "evaluation": model.header["evaluation"],
                "note": "held out: programs (and families) the model never saw in training"}

    def predictor(self):
        from compiler.cost.learned.predict import LearnedPredictor

        trained = self.folder.load("train")
        return LearnedPredictor.load(trained["path"]) if trained else None

    # plans

    def plans(self, name: str) -> dict:
        from compiler.stages.codegen import built_resources, emulate, generate
        from compiler.cost.calibrate import make_record
        from compiler.target.launch import terms_for
        from compiler.cost.learned.predict import attach_learned
        from compiler.fusion.explore import exploration_to_dict, explore
        from compiler.ir.summary import summarize
        from compiler.stages.pipeline import attach_codes
        from compiler.runtime.gpu import run_plan
        from compiler.toolchain import arch_for_device
        from compiler.version import compiler_version

        graph, inputs = self.module(name)
        alone_us = terms_for(self.device).alone_us
        plans = explore(graph, self.device.name, list(STRATEGIES))
        explored = exploration_to_dict(summarize(graph), self.device.name, plans)
        predictor = self.predictor()
        # What `manage.py import_measurements` matches runs by: a run of this HLO file (its
        # SHA-256 is a run's graph_sha256) made by this compiler has these plans' kernels.
        hlo = (self.folder.root / "modules" / f"{name}.hlo").read_bytes()
        result = {"graph_sha256": hashlib.sha256(hlo).hexdigest(),
                  "compiler_version": compiler_version(), "strategies": {}}
        records = []
        for strategy, plan in plans.items():
            entry = explored["strategies"][strategy]
            codes = generate(graph, plan, self.device, arch_for_device(self.device.name))
            attach_codes(entry, plan, codes, candidate_breakdowns=False)
            attach_learned(entry, graph, plan, codes, predictor)
            if self.dry:
                emulate(graph, codes)
                run = synthetic_plan_run(name, plan, codes, entry["kernels"])
            else:
                run = run_plan(graph, plan, codes, inputs, self.gpu())
            result["strategies"][strategy] = plan_result(entry, run, alone_us)
            for code, kernel in zip(codes, run.kernels):
                if kernel.timing and not kernel.mismatches and code.chosen \
                        and not code.emitted.library and code.build and code.build.ok:
                    records.append(make_record(
                        graph, code.kernel, code.chosen, self.device,
                        built_resources(code.build), kernel.timing.median_us,
                        name=f"{name}/{strategy}/{code.kernel.name}").to_dict())
            if strategy == "cost":
                self.keep_kernels(name, codes)
        result["calibration_records"] = records
        result["timing"] = SYNTHETIC if self.dry else "measured"
        return result

    def keep_kernels(self, module: str, codes) -> None:
        """The cost plan's built kernels, for ncu (OUT/kernels/<module>/)."""
        directory = self.folder.root / "kernels" / module
        directory.mkdir(parents=True, exist_ok=True)
        kept = []
        for code in codes:
            emitted, build = code.emitted, code.build
            if emitted is None or emitted.library or not build or not build.ok \
                    or not build.cubin:
                continue
            (directory / f"{code.function}.cubin").write_bytes(bytes(build.cubin))
            kept.append({"function": code.function, "symbol": build.cubin_function,
                         "cubin": f"{module}/{code.function}.cubin",
                         "grid": list(emitted.grid), "block": list(emitted.block),
                         "shared_bytes": emitted.shared_bytes,
                         "cooperative": bool(emitted.cooperative),
                         "params": [_param_bytes(graph_param) for graph_param in emitted.params]})
        (directory / "kernels.json").write_text(json.dumps(kept, indent=1))

    def cost_kernels(self, module: str) -> list[dict]:
        """The cost plan's kept kernels (keep_kernels' list); built again when their cubins
        are gone (the committed results keep only the list): the compiler is deterministic,
        so the functions are the ones the plans step measured."""
        from compiler.stages.codegen import generate
        from compiler.fusion.explore import explore
        from compiler.toolchain import arch_for_device

        directory = self.folder.root / "kernels" / module
        listing = directory / "kernels.json"
        kept = json.loads(listing.read_text()) if listing.exists() else None
        if kept is None or not all((directory.parent / k["cubin"]).exists() for k in kept):
            graph, _ = self.module(module)
            plan = explore(graph, self.device.name, ["cost"])["cost"]
            self.keep_kernels(module, generate(graph, plan, self.device,
                                               arch_for_device(self.device.name)))
            kept = json.loads(listing.read_text())
        return kept

    # anchors

    def anchors(self, name: str) -> dict:
        from compiler.ir.interpreter import evaluate

        graph, inputs = self.module(name)
        expected = [np.asarray(v) for v in evaluate(graph, inputs)]
        module = MODULES[name]
        before = self.folder.load(f"anchors:{name}")
        if before and _wall_clocked(before):
            # Only the jax clock of the first campaign was unfit; the other anchors were timed
            # with CUDA events after an L2 flush, as now, and are kept.
            return {**before, "jax": self.jax_anchor(module, inputs, expected)}
        return {"jax": self.jax_anchor(module, inputs, expected),
                "torch_eager": self.torch_anchor(module, inputs, expected, compiled=False),
                "torch_compile": self.torch_anchor(module, inputs, expected, compiled=True),
                "cupy_eager": self.cupy_anchor(graph, inputs, expected)}

    def jax_anchor(self, module, inputs, expected) -> dict:
        if not _importable("jax"):
            return {"status": "skipped", "note": "jax is not installed"}
        import jax

        from xla_fusion_counts import HloCounter

        function, _ = module.jax_function(self.args.size)
        compiled = jax.jit(function).lower(*inputs).compile()
        arguments = [jax.device_put(v) for v in inputs]
        outputs = jax.tree_util.tree_leaves(compiled(*arguments))
        where = jax.devices()[0].platform
        timing = pipelined_timing(lambda: compiled(*arguments), jax.block_until_ready)
        return {"status": "measured" if where == "gpu" and not self.dry else "rehearsed",
                **timing_fields(timing, where),
                "xla_kernels": HloCounter(compiled.as_text()).summary()["entry"]["total"],
                "max_abs_error": _largest_error(outputs, expected), "clock": PIPELINED}

    def torch_anchor(self, module, inputs, expected, compiled: bool) -> dict:
        if not _importable("torch"):
            return {"status": "skipped", "note": "torch is not installed"}
        import torch

        function = module.torch_function(self.args.size)
        if function is None:
            return {"status": "skipped", "note": "no PyTorch version of this module"}
        on_gpu = not self.dry and torch.cuda.is_available()
        backend = "inductor" if on_gpu else "aot_eager"
        if compiled:
            function = torch.compile(function, backend=backend)
        arguments = [_to_torch(torch, v, "cuda" if on_gpu else "cpu") for v in inputs]
        outputs = _leaves(function(*arguments))
        errors = _largest_error([o.detach().float().cpu().numpy() for o in outputs], expected)
        if on_gpu:
            timing = torch_event_timing(torch, lambda: function(*arguments))
        else:
            timing = wall_timing(lambda: function(*arguments))
        return {"status": "measured" if on_gpu else "rehearsed",
                **timing_fields(timing, "gpu" if on_gpu else "cpu"),
                "backend": backend if compiled else "eager", "max_abs_error": errors}

    def cupy_anchor(self, graph, inputs, expected) -> dict:
        from compiler.runtime.eager import (EagerUnsupported, eager_program, run_eager,
                                            time_eager)

        try:
            program = eager_program(graph)
        except EagerUnsupported as reason:
            return {"status": "skipped", "note": f"not measured: {reason}"}
        if self.dry:
            outputs = run_eager(program, inputs, np)
            # A launch per step, and the parameters read once.
            base = 2.0 * len(program.steps) \
                + parameter_bytes(graph) / (self.device.dram_bandwidth_gbs * 1e3)
            timing = synthetic_timing(f"eager/{graph.name}", base)
            return {"status": "rehearsed", **timing_fields(timing, "cpu"),
                    "origin": SYNTHETIC, "steps": len(program.steps),
                    "max_abs_error": _largest_error(outputs, expected)}
        runner = self.gpu()
        outputs = [runner.cupy.asnumpy(v) for v in run_eager(program, inputs, runner.cupy)]
        timing = time_eager(program, inputs, runner)
        return {"status": "measured", **timing_fields(timing, "gpu"),
                "steps": len(program.steps), "max_abs_error": _largest_error(outputs, expected)}

    # calibration and ncu

    def calibrate(self) -> dict:
        from compiler.cost.calibrate import fit, record_from_dict

        self.require(*(f"plans:{m}" for m in self.modules))
        records = [record_from_dict(r) for m in self.modules
                   for r in self.folder.load(f"plans:{m}")["calibration_records"]]
        if not records:
            return {"status": "skipped", "note": "no kernel was measured"}
        _, report = fit(self.device, records)
        return {"status": "done", "records": len(records), **report, "modules": self.modules,
                "launch": launch_calibration.calibrate(self.folder.root)["fitted"],
                "timing": SYNTHETIC if self.dry else "measured"}

    def nsight(self) -> dict:
        self.require(*(f"plans:{m}" for m in self.modules))
        sample = self.ncu_sample()
        if not sample:
            return {"status": "skipped", "note": "no generated kernel to profile"}
        manifest = self.folder.root / "kernels" / "ncu-manifest.json"
        manifest.write_text(json.dumps({"kernels": sample}, indent=1))
        ncu.check_manifest(manifest)
        tool = shutil.which("ncu")
        if self.dry or tool is None:
            text, origin = ncu.synthetic_csv(sample), SYNTHETIC
            note = "dry run" if self.dry else "ncu is not on PATH"
        else:
            command = [tool, "--csv", "--metrics", ",".join(ncu.METRICS.values()),
                       sys.executable, str(Path(ncu.__file__)), str(manifest)]
            completed = subprocess.run(command, capture_output=True, text=True, timeout=300)
            text, origin, note = completed.stdout, "measured", completed.stderr[-2000:]
        measured = ncu.parse_csv(text)
        rows = [{**kernel, **measured.get(kernel["symbol"], {})} for kernel in sample]
        return {"status": "done", "origin": origin, "note": note, "kernels": rows,
                "modules": self.modules}

    def ncu_sample(self) -> list[dict]:
        """The cost plans' generated kernels with the largest measured times (several per
        module), with their projected occupancy and limiter."""
        sample = []
        for module in self.modules:
            kept = self.cost_kernels(module)
            rows = {r["function"]: r for r in
                    self.folder.load(f"plans:{module}")["strategies"]["cost"]["kernels"]}
            measured = [(rows[k["function"]]["measured_us"] or 0, k) for k in kept
                        if k["function"] in rows]
            measured.sort(key=lambda pair: -pair[0])
            for _, kernel in measured[:self.args.ncu_per_module]:
                row = rows[kernel["function"]]
                sample.append({**kernel, "module": module, "measured_us": row["measured_us"],
                               "projected_occupancy": row["occupancy"],
                               "projected_limiter": row["limiter"]})
        return sample


# -- helpers of the steps ---------------------------------------------------------------------


def _importable(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def resolve_toolchain() -> dict:
    """The CUDA compiler builds will use: the pip wheels', else a system CUDA 13 toolkit
    (named to compiler/toolchain through FUSION_EXPLORER_CUDA_ROOT), else the reasons."""
    from compiler.toolchain.locate import ToolchainError, find_toolchain

    problems = []
    candidates = [None, os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parents[1]))
    for root in candidates:
        if root == "" or (root is not None and not Path(root).is_dir()):
            continue
        try:
            toolchain = find_toolchain(root)
        except ToolchainError as error:
            problems.append(str(error))
            continue
        if root is not None:
            os.environ[CUDA_ROOT_VARIABLE] = str(toolchain.root)
        return {"root": str(toolchain.root), "version": toolchain.version}
    raise InputError("no usable CUDA compiler: " + " | ".join(problems))


def nvidia_smi() -> dict | None:
    """Name, driver, clocks and memory of the GPU as nvidia-smi reports them, or None."""
    fields = ("name", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm",
              "clocks.max.mem", "memory.total", "power.limit")
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return None
    completed = subprocess.run([tool, f"--query-gpu={','.join(fields)}",
                                "--format=csv,noheader"], capture_output=True, text=True)
    values = completed.stdout.strip().splitlines()[0].split(", ") if completed.stdout else []
    return dict(zip(fields, values)) or {"error": completed.stderr.strip()}


def lower_or_frozen(module, size: str, path: Path) -> str:
    """Write the module's HLO text to `path`; say where it came from."""
    frozen = FROZEN / f"{module.name}.{size}.hlo.gz"
    if _importable("jax"):
        import jax

        function, avals = module.jax_function(size)
        text = jax.jit(function).lower(*avals).compiler_ir("hlo").as_hlo_text()
        path.write_text(text)
        return f"lowered with jax {jax.__version__} at size {size}"
    if not frozen.exists():
        raise InputError(f"jax is not installed and there is no frozen copy of {module.name} "
                         f"at size {size}", str(frozen))
    path.write_bytes(gzip.decompress(frozen.read_bytes()))
    return f"jax not installed: frozen HLO {frozen.relative_to(REPO)}"


def module_inputs(graph, module) -> list[np.ndarray]:
    """Seeded inputs in parameter order: floats ~ N(0, 1) (|N(0, 1)| for modules that need
    positive values), integers uniform in [0, module.int_high)."""
    rng = np.random.default_rng(zlib.crc32(module.name.encode()))
    values = []
    for node in graph.parameter_nodes():
        shape = node.array_shape
        dtype = shape.dtype.numpy
        if np.dtype(dtype).kind in "iu":
            values.append(rng.integers(0, module.int_high, size=shape.dims).astype(dtype))
            continue
        value = rng.standard_normal(shape.dims, dtype=np.float32)
        values.append((np.abs(value) if module.positive else value).astype(dtype))
    return values


def parameter_bytes(graph) -> int:
    return sum(node.array_shape.size * node.array_shape.dtype.numpy.itemsize
               for node in graph.parameter_nodes())


def _param_bytes(param) -> int:
    """A kernel parameter's buffer size (a stitched kernel's scratch: its dims are bytes)."""
    from compiler.codegen.plan import SCRATCH
    from compiler.ir.dtypes import dtype

    itemsize = 1 if param.name == SCRATCH else dtype(param.dtype).numpy.itemsize
    return max(1, math.prod(param.dims) * itemsize)


def _to_torch(torch, value: np.ndarray, device: str):
    if value.dtype.name == "bfloat16":
        return torch.from_numpy(value.astype(np.float32)).to(device=device,
                                                              dtype=torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(value)).to(device)


def _leaves(value) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _largest_error(outputs, expected) -> float | None:
    """The largest absolute difference from the interpreter's outputs (None when the number
    of outputs differs: then the function is not the module's)."""
    if len(outputs) != len(expected):
        return None
    return max(float(np.max(np.abs(np.asarray(o, dtype=np.float64)
                                   - np.asarray(e, dtype=np.float64)), initial=0.0))
               for o, e in zip(outputs, expected))


def torch_event_timing(torch, call, runs: int = 20, warmup: int = 3):
    """CUDA-event timing after an L2 flush, as compiler.runtime.gpu times our kernels."""
    from compiler.runtime.gpu import Timing

    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size,
                        dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(runs):
        flush.zero_()
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
    return Timing(tuple(samples), warmup)


def synthetic_plan_run(module: str, plan, codes, kernels: list[dict]):
    """A dry run's PlanRun: each kernel's CPU-emulator check, SYNTHETIC timings."""
    from compiler.target.launch import terms_for
    from compiler.runtime.gpu import KernelRun, PlanRun

    runs = []
    for code, row in zip(codes, kernels):
        run = KernelRun(code.kernel.name, code.kernel.kind, code.function,
                        max_abs_error=code.max_abs_error, mismatches=list(code.mismatches),
                        nodes=list(code.kernel.nodes))
        # The prediction of the kernel timed alone: its device work and a lone launch.
        device_us = _device_work(row)
        base = None if device_us is None else device_us + terms_for(plan.device).alone_us
        if code.error or code.emitted is None or not base:
            run.not_measured = f"not measured: {code.error or 'no code'}"
        else:
            run.timing = synthetic_timing(f"{module}/{plan.strategy}/{code.kernel.name}", base)
        runs.append(run)
    result = PlanRun(plan.strategy, "cpu emulator", runs)
    missing = [r.kernel for r in runs if r.timing is None]
    if missing:
        result.not_measured = f"not measured: {len(missing)} kernels did not run"
    else:
        result.end_to_end = synthetic_timing(f"{module}/{plan.strategy}",
                                             0.95 * sum(r.timing.median_us for r in runs))
        # A replay: each kernel's device work and a graph node's gap.
        gap = terms_for(plan.device).graph_gap_us
        result.graph_replay = synthetic_timing(
            f"{module}/{plan.strategy}/graph",
            sum(_device_work(row) + gap for row in kernels))
    return result


def _device_work(row: dict) -> float:
    """A kernel row's projected device work (its SOL where there is no projection)."""
    return row["device_us"] if row.get("device_us") is not None else row.get("sol_us")


def plan_result(entry: dict, run, alone_us: float) -> dict:
    """One strategy: per kernel the predictions beside the measurement, and the totals.

    A kernel is measured alone, so its predictions here are of a kernel timed alone: each
    model's device work and `alone_us`, what a lone launch adds on the device
    (compiler/target/launch.py); "device_us" is the projected device work. (Results of the
    campaigns before 2026-11-29 have no "device_us": their predictions carried a constant
    3.0 µs launch instead.) The plan's "proj_us" adds its kernels' alone predictions, to
    compare with the sum of their times alone; "proj_stream_us" is its projected total as
    stream launches, to compare with the plan run back to back, and "proj_graph_us" as one CUDA
    graph, to compare with its replay ("graph_replay_us"). A library call's "measured_us" is its
    replay as a CUDA graph of its own where it has one ("clock")."""
    def alone(device_us):
        return None if device_us is None else device_us + alone_us

    rows = []
    for kernel, measured in zip(entry["kernels"], run.kernels):
        timing = measured.replay or measured.timing   # the one measured_us is the median of
        rows.append({
            "name": kernel["name"], "kind": kernel["kind"], "function": kernel.get("function"),
            "schedule": kernel.get("schedule"), "sol_us": alone(kernel["sol_us"]),
            "device_us": kernel.get("device_us"), "proj_us": alone(kernel.get("device_us")),
            "learned_us": alone(kernel.get("learned_device_us")),
            "measured_us": measured.measured_us, "clock": measured.clock,
            "cv": timing.cv if timing else None, "runs": timing.runs if timing else None,
            "max_abs_error": measured.max_abs_error, "mismatches": len(measured.mismatches),
            "not_measured": measured.not_measured, "limiter": kernel.get("limiter"),
            "occupancy": kernel.get("occupancy"), "dram_bytes": kernel.get("dram_bytes"),
            "bandwidth_bound": kernel["kind"] != "library"
            and kernel["sol"].get("bound") == "memory"})
    measured = [r["measured_us"] for r in rows if r["measured_us"] is not None]
    end_to_end, replay = run.end_to_end, run.graph_replay

    def total(key: str, fallback: str | None = None):
        values = [row[key] if row[key] is not None or fallback is None else row[fallback]
                  for row in rows]
        return None if None in values else sum(values)

    by_runtime = entry["total"].get("runtimes") or {}
    stream, graph = by_runtime.get("stream") or {}, by_runtime.get("graph") or {}
    # The learned total as the plan's: learned where the model predicted, projected elsewhere.
    learned = entry["total"].get("learned_us") is not None
    return {"kernels": rows, "kernel_count": len(rows),
            "sol_us": total("sol_us"), "proj_us": total("proj_us"),
            "learned_us": total("learned_us", "proj_us") if learned else None,
            "proj_stream_us": stream.get("proj_us"),
            "measured_sum_us": sum(measured) if len(measured) == len(rows) else None,
            "measured_kernels": len(measured),
            "end_to_end_us": end_to_end.median_us if end_to_end else None,
            "end_to_end_cv": end_to_end.cv if end_to_end else None,
            "proj_graph_us": graph.get("proj_us"),
            "graph_replay_us": replay.median_us if replay else None,
            "graph_replay_cv": replay.cv if replay else None,
            "graph_not_measured": None if replay else run.graph_not_measured or run.not_measured,
            "not_measured": run.not_measured}


# -- accuracy ---------------------------------------------------------------------------------


def prediction_errors(pairs: list[tuple[float, float]]) -> dict:
    """MAPE and median APE below / at or above SPLIT_US of (predicted, measured) pairs."""
    apes = [(100.0 * abs(p - m) / m, m) for p, m in pairs]
    small = [a for a, m in apes if m < SPLIT_US]
    large = [a for a, m in apes if m >= SPLIT_US]
    return {"count": len(apes),
            "mape": statistics.fmean(a for a, _ in apes) if apes else None,
            "median_ape_under_5us": statistics.median(small) if small else None,
            "median_ape_over_5us": statistics.median(large) if large else None}


def accuracy(plans: dict[str, dict]) -> dict:
    """Per model: errors over every measured kernel of every plan and over plan totals, and
    how well its plan totals rank the strategies of each module (Kendall tau, top-1 regret)."""
    from compiler.cost.plan_ranking import kendall_tau

    result = {}
    for model, key in (("sol", "sol_us"), ("projected", "proj_us"), ("learned", "learned_us")):
        kernels = [(row[key], row["measured_us"]) for plan in _all_plans(plans)
                   for row in plan["kernels"]
                   if row[key] is not None and row["measured_us"]]
        totals, taus, regrets = [], [], []
        for module in plans.values():
            ranked = [(s[key], s["measured_sum_us"]) for s in module["strategies"].values()
                      if s[key] is not None and s["measured_sum_us"]]
            totals += ranked
            if len(ranked) < 2:
                continue
            tau = kendall_tau([p for p, _ in ranked], [m for _, m in ranked])
            if tau is not None:
                taus.append(tau)
            chosen = min(ranked, key=lambda pair: pair[0])[1]
            regrets.append(100.0 * (chosen / min(m for _, m in ranked) - 1.0))
        result[model] = {"kernels": prediction_errors(kernels),
                         "plans": prediction_errors(totals),
                         "plan_ranking_tau": statistics.fmean(taus) if taus else None,
                         "top1_regret_percent": statistics.fmean(regrets) if regrets else None}
    return result


def _all_plans(plans: dict[str, dict]):
    for module in plans.values():
        yield from module["strategies"].values()


def share_of_copy(dram_bytes: int, measured_us: float, alone_us: float,
                  copy_gbs: float) -> dict:
    """A kernel's bandwidth and its share of the copy's, on its time alone and on its device
    work (its time alone less what a lone launch adds, compiler/target/launch.py). The copy
    reads and writes 1 GiB in 508 µs, of which the 3.12 µs a lone launch adds on the H200 is
    0.6 %; a 10-MB kernel timed alone spends half its time there, so its share of the copy's
    bandwidth is judged on its device work (None when that is not above zero)."""
    gbs = dram_bytes / (measured_us * 1e-6) / 1e9
    device_us = measured_us - alone_us
    device_gbs = dram_bytes / (device_us * 1e-6) / 1e9 if device_us > 0 else None
    return {"gbs": gbs, "percent_of_copy": 100 * gbs / copy_gbs, "device_gbs": device_gbs,
            "device_percent_of_copy": None if device_gbs is None
            else 100 * device_gbs / copy_gbs}


def geomean(values: list[float]) -> float | None:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else None


# -- the report -------------------------------------------------------------------------------


def summarize_campaign(folder: Folder, modules: list[str]) -> dict:
    plans = {m: folder.load(f"plans:{m}") for m in modules if folder.done(f"plans:{m}")}
    anchors = {m: folder.load(f"anchors:{m}") for m in modules if folder.done(f"anchors:{m}")}
    copy = folder.load("copy")
    speedups = {}
    for module, result in plans.items():
        cost = result["strategies"]["cost"]["measured_sum_us"]
        others = {s: p["measured_sum_us"] for s, p in result["strategies"].items()}
        for anchor in ANCHORS:
            entry = (anchors.get(module) or {}).get(anchor) or {}
            others[anchor] = entry.get("median_us") if comparable(entry) else None
        speedups[module] = {name: (time / cost if time and cost else None)
                            for name, time in others.items() if name != "cost"}
    memory_bound = [m for m in plans if MODULES[m].bandwidth_bound]
    versus = {anchor: [speedups[m][anchor] for m in memory_bound if speedups[m].get(anchor)]
              for anchor in ("jax", "torch_compile")}
    # The whole cost plan replayed as one CUDA graph against jax.jit, which XLA runs with its
    # command buffers (CUDA graphs) too: the step against step comparison.
    graph_vs_jax = {}
    for module, result in plans.items():
        replay = result["strategies"]["cost"].get("graph_replay_us")
        jax_entry = (anchors.get(module) or {}).get("jax") or {}
        jax_us = jax_entry.get("median_us") if comparable(jax_entry) else None
        graph_vs_jax[module] = jax_us / replay if jax_us and replay else None
    bandwidth = []
    if copy:
        from compiler.target.launch import terms_for

        device = json.loads((folder.root / "campaign.json").read_text())["device"]
        alone_us = terms_for(get_device(device)).alone_us
        for module, result in plans.items():
            for row in result["strategies"]["cost"]["kernels"]:
                if row["bandwidth_bound"] and row["measured_us"] and row["dram_bytes"]:
                    bandwidth.append({"module": module, "kernel": row["name"],
                                      **share_of_copy(row["dram_bytes"], row["measured_us"],
                                                      alone_us, copy["gbs"])})
    return {"plans": plans, "anchors": anchors, "speedups": speedups,
            "memory_bound_geomean_vs_jax": geomean(versus["jax"]),
            "memory_bound_geomean_vs_torch_compile": geomean(versus["torch_compile"]),
            "graph_replay_vs_jax": graph_vs_jax,
            "memory_bound_graph_geomean_vs_jax": geomean(
                [graph_vs_jax[m] for m in memory_bound if graph_vs_jax[m]]),
            "bandwidth": bandwidth, "accuracy": accuracy(plans) if plans else None,
            "copy": copy, "environment": folder.load("environment"),
            "calibrate": folder.load("calibrate"), "train": folder.load("train"),
            "ncu": folder.load("ncu"), "dataset": folder.load("dataset")}


def comparable(anchor: dict) -> bool:
    """Whether an anchor's time is on the plans' clock: measured on the GPU as GPU time, or
    (dry run) synthetic like theirs. A CPU rehearsal's time, and a jax time taken with the
    first campaign's wall clock around one blocking call, are shown but compared with
    nothing."""
    if anchor.get("note") == WALL_BLOCKING:
        return False
    return anchor.get("status") == "measured" or anchor.get("origin") == SYNTHETIC


def _anchor_time(anchor: dict | None) -> str:
    anchor = anchor or {}
    if comparable(anchor) or "median_us" not in anchor:
        mark = ""
    else:
        mark = " (wall)" if anchor.get("note") == WALL_BLOCKING else " (cpu)"
    return _us(anchor.get("median_us")) + mark


def _us(value) -> str:
    return f"{value:,.1f}" if isinstance(value, (int, float)) else "-"


def _hundredths(value) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"


def _ratio(value) -> str:
    return f"{_fraction(value)}x" if isinstance(value, (int, float)) else "-"


def _fraction(value) -> str:
    """A number in [0, 1] (occupancy, Kendall tau) with two decimals."""
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"


def report_markdown(summary: dict, settings: dict, not_done: list[str],
                    folder: Folder) -> str:
    env = summary["environment"] or {}
    gpu = env.get("gpu") or {}
    lines = ["# GPU campaign (issue 15)", ""]
    if settings["dry_run"]:
        lines += [f"**DRY RUN: every time below is {SYNTHETIC} or a CPU rehearsal. Nothing "
                  f"here was measured on a GPU.**", ""]
    runs = folder.load("runs") or []
    lines += [f"- date: {env.get('date', '-')}", f"- command: `{env.get('command', '-')}`",
              f"- device: {gpu.get('name', 'no GPU')}, driver {gpu.get('driver_version', '-')},"
              f" clocks SM {gpu.get('clocks.sm', '-')} (max {gpu.get('clocks.max.sm', '-')}),"
              f" memory {gpu.get('clocks.mem', '-')}",
              f"- cost tables: {settings['device']}, size {settings['size']}",
              f"- copy bandwidth: {_us((summary['copy'] or {}).get('gbs'))} GB/s "
              f"({(summary['copy'] or {}).get('origin', '-')})"]
    if runs:
        lines.append(f"- the figures come from {len(runs)} runs (runs.json):")
        lines += [f"  - {run['date']}: `{run['command']}`: {', '.join(run['done']) or 'none'}"
                  + (f" ({run['note']})" if run.get("note") else "") for run in runs]
    lines += ["", "## Measured time per module (µs; kernels in brackets)", "",
              "| module | " + " | ".join(STRATEGIES) + " | jax.jit (XLA kernels) | "
              "torch.compile | torch eager | CuPy eager |",
              "|---|" + "---:|" * (len(STRATEGIES) + 4)]
    for module, result in summary["plans"].items():
        cells = [f"{_us(p['measured_sum_us'])} ({p['kernel_count']})"
                 for p in result["strategies"].values()]
        anchors = summary["anchors"].get(module) or {}
        jax_entry = anchors.get("jax") or {}
        cells.append(f"{_anchor_time(jax_entry)} ({jax_entry.get('xla_kernels', '-')})")
        cells += [_anchor_time(anchors.get(a)) for a in ("torch_compile", "torch_eager",
                                                           "cupy_eager")]
        lines.append(f"| {module} | " + " | ".join(cells) + " |")
    unmeasured = [f"{module} {strategy}: {p['not_measured']}"
                  for module, result in summary["plans"].items()
                  for strategy, p in result["strategies"].items() if p.get("not_measured")]
    if unmeasured:
        lines += ["", "-: the plan has no whole time. " + "; ".join(unmeasured)]
    lines += ["", "(cpu): a CPU rehearsal's time; (wall): a wall clock around one blocking "
              "call, dispatch and wait included (the first campaign's jax clock); both are "
              "compared with nothing. Anchor notes: "
              + "; ".join(
        f"{m} {a}: {e.get('status')}{' (' + e['note'] + ')' if e.get('note') else ''}"
        for m, anchors in summary["anchors"].items() for a, e in anchors.items()
        if e.get("status") != "measured") or "none", ""]
    lines += ["## Speed-up of the cost plan over each alternative", "",
              "| module | " + " | ".join(s for s in STRATEGIES if s != "cost") + " | "
              + " | ".join(ANCHORS) + " |",
              "|---|" + "---:|" * (len(STRATEGIES) - 1 + len(ANCHORS))]
    for module, ratios in summary["speedups"].items():
        lines.append(f"| {module} | " + " | ".join(_ratio(r) for r in ratios.values()) + " |")
    lines += ["", f"Geomean over the memory-bound modules, cost plan vs jax.jit: "
                  f"{_ratio(summary['memory_bound_geomean_vs_jax'])} (target 1.3x); vs "
                  f"torch.compile: {_ratio(summary['memory_bound_geomean_vs_torch_compile'])}",
              ""]
    lines += _whole_plan_lines(summary)
    lines += ["## Bandwidth-bound kernels of the cost plans (% of copy bandwidth)", "",
              "Timed alone, and on device work: the time alone less what a lone launch adds "
              "(compiler/target/launch.py's alone_us), which the 1-GiB copy hardly pays.", "",
              "| module | kernel | GB/s | % of copy | % of copy, device work |",
              "|---|---|---:|---:|---:|"]
    lines += [f"| {b['module']} | {b['kernel']} | {b['gbs']:,.0f} | {b['percent_of_copy']:.0f} | "
              + ("-" if b.get("device_percent_of_copy") is None
                 else f"{b['device_percent_of_copy']:.0f}") + " |"
              for b in summary["bandwidth"]]
    lines += ["", "## Cost-model accuracy against the measured kernels and plans", "",
              "| model | kernels | MAPE % | median APE < 5 µs | ≥ 5 µs | plan MAPE % | "
              "plan τ | top-1 regret % |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for model, figures in (summary["accuracy"] or {}).items():
        k, p = figures["kernels"], figures["plans"]
        lines.append(f"| {model} | {k['count']} | {_us(k['mape'])} | "
                     f"{_us(k['median_ape_under_5us'])} | {_us(k['median_ape_over_5us'])} | "
                     f"{_us(p['mape'])} | {_fraction(figures['plan_ranking_tau'])} | "
                     f"{_us(figures['top1_regret_percent'])} |")
    lines += _calibration_lines(summary["calibrate"]) + _training_lines(summary["train"])
    lines += _ncu_lines(summary["ncu"]) + _losses(summary)
    lines += _not_done(not_done, folder)
    analysis = folder.root / "ANALYSIS.md"   # written by a person, kept with the results
    if analysis.exists():
        lines += ["", analysis.read_text().strip()]
    return "\n".join(lines) + "\n"


def _whole_plan_lines(summary: dict) -> list[str]:
    """Each plan run whole, back to back in a stream and replayed as one CUDA graph, beside
    its projected totals under those runtimes and jax.jit (XLA replays a step as CUDA graphs
    too)."""
    lines = ["## Whole plans: back to back in a stream / replayed as one CUDA graph (µs; "
             "projected graph total in brackets)", "",
             "| module | " + " | ".join(STRATEGIES) + " | jax.jit | cost graph vs jax.jit |",
             "|---|" + "---:|" * (len(STRATEGIES) + 2)]
    for module, result in summary["plans"].items():
        cells = [f"{_us(p.get('end_to_end_us'))} / {_us(p.get('graph_replay_us'))} "
                 f"({_us(p.get('proj_graph_us'))})" for p in result["strategies"].values()]
        jax_entry = (summary["anchors"].get(module) or {}).get("jax")
        cells += [_anchor_time(jax_entry),
                  _ratio(summary["graph_replay_vs_jax"].get(module))]
        lines.append(f"| {module} | " + " | ".join(cells) + " |")
    unreplayed = [f"{module} {strategy}: {p['graph_not_measured']}"
                  for module, result in summary["plans"].items()
                  for strategy, p in result["strategies"].items()
                  if p.get("graph_not_measured") and not p.get("not_measured")]
    if unreplayed:
        lines += ["", "Not replayed (the stream time stands): " + "; ".join(unreplayed)]
    lines += ["", f"Geomean over the memory-bound modules, the cost plan replayed as a CUDA "
                  f"graph vs jax.jit: {_ratio(summary['memory_bound_graph_geomean_vs_jax'])}",
              ""]
    return lines


def _calibration_lines(calibration: dict | None) -> list[str]:
    if not calibration or calibration.get("status") != "done":
        return ["", "## Calibration", "", "not run"]
    lines = ["", "## Calibration of the projected model", "",
             f"{calibration['records']} kernels: MAPE {calibration['before']['mape']:.1f} % "
             f"before, {calibration['after']['mape']:.1f} % after; constants "
             + ", ".join(f"{k} {v:.3f}" for k, v in calibration["constants"].items())]
    launch = {name: figure for name, figure in (calibration.get("launch") or {}).items()
              if name != "probe"}
    if launch:
        lines += ["", "Launch terms (compiler/target/launch.py) fitted to the plans run whole:",
                  ""]
        lines += [f"- {name}: {_hundredths(figure['value'])} µs (table "
                  f"{_hundredths(figure['table'])} µs; {figure['from']})"
                  for name, figure in launch.items()]
    return lines


def _training_lines(train: dict | None) -> list[str]:
    if not train:
        return ["", "## Learned model", "", "not trained"]
    lines = ["", f"## Learned model ({train['origin']}, held-out evaluation)", "",
             "| split | model | MAPE % | median APE < 5 µs | ≥ 5 µs | Kendall τ | "
             "top-1 regret % |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for split, result in train["evaluation"].items():
        for model in ("learned", "sol", "projected") if result else ():
            m = result[model]
            lines.append(f"| {split} | {model} | {_us(m['mape'])} | "
                         f"{_us(m['median_ape_under_5us'])} | {_us(m['median_ape_over_5us'])} | "
                         f"{_fraction(m['mean_kendall_tau'])} | "
                         f"{_us(m['mean_top1_regret_percent'])} |")
    return lines


def _ncu_lines(result: dict | None) -> list[str]:
    if not result or result.get("status") != "done":
        return ["", "## Nsight Compute", "", "not run"]
    lines = ["", f"## Nsight Compute ({result['origin']})", "",
             "| module | kernel | measured µs | achieved occupancy | projected occupancy | "
             "DRAM % of peak | projected limiter |", "|---|---|---:|---:|---:|---:|---|"]
    for k in result["kernels"]:
        lines.append(f"| {k['module']} | {k['function']} | {_us(k['measured_us'])} | "
                     f"{_fraction(k.get('achieved_occupancy'))} | "
                     f"{_fraction(k['projected_occupancy'])} | "
                     f"{_us(k.get('dram_throughput_pct'))} | {k['projected_limiter']} |")
    return lines


def _losses(summary: dict) -> list[str]:
    """Where the cost plan is slower than an alternative by more than TIE (a repeated
    kernel's time varies by 1-3 %); the closer ones are listed as ties."""
    losses, ties = [], []
    for module, ratios in summary["speedups"].items():
        for name, ratio in ratios.items():
            if ratio is not None and ratio < 1 - TIE:
                losses.append(f"- {module}: {name} is {1 / ratio:.2f}x faster than the cost plan")
            elif ratio is not None and ratio < 1:
                ties.append(f"{module} vs {name}")
    lines = ["", "## Where we lose", ""] + (losses or ["- nowhere among the measured figures"])
    if ties:
        lines += ["", f"Within {TIE:.0%} (a tie): " + ", ".join(ties)]
    return lines


def _not_done(not_done: list[str], folder: Folder) -> list[str]:
    """The steps with no result, and for a failed one the error its log ends with."""
    if not not_done:
        return []
    lines = ["", "## Not done", ""]
    for step in not_done:
        log = folder.root / "failed" / f"{step.replace(':', '-')}.txt"
        made = folder.load(step) if folder.done(step) else None
        if made is not None:
            why = (f"made from {len(made['modules'])} modules ({', '.join(made['modules'])}), "
                   f"not all; it is made again when the campaign resumes")
        elif log.exists():
            why = log.read_text().strip().splitlines()[-1]
        else:
            why = "not run"
        lines.append(f"- {step}: {why}")
    return lines


# -- command line -----------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Issue 15's GPU campaign: every plan and the anchors measured, cost-model "
                    "accuracy, a learned-model dataset, REPORT.md; resumable (a step whose "
                    "result is in --out is skipped). See the module docstring for the device "
                    "command line.")
    parser.add_argument("--out", help="the output folder (default var/gpu-campaign, or "
                                      "var/gpu-campaign-dry with --dry-run)")
    parser.add_argument("--dry-run", action="store_true",
                        help="rehearse every step on the CPU: the CPU emulator and SYNTHETIC "
                             "timings, clearly labelled")
    parser.add_argument("--size", choices=SIZES,
                        help="module sizes (default realistic, small with --dry-run)")
    parser.add_argument("--modules", default="all",
                        help=f"comma-separated subset of: {', '.join(MODULES)} (default all)")
    parser.add_argument("--steps", default="all",
                        help="comma-separated steps or step prefixes to run (environment, "
                             "modules, copy, launch, dataset, train, plans, plans:<m>, anchors, "
                             "anchors:<m>, calibrate, ncu, report; default all)")
    parser.add_argument("--budget", type=float, metavar="SECONDS",
                        help="start no step after this many seconds; rerun to resume (exit "
                             f"status {BUDGET_STOP} when stopped early)")
    parser.add_argument("--device", default="h100", help="the cost tables' device (h100)")
    parser.add_argument("--top-k", type=int, default=4,
                        help="CodeGen plans per kernel in the dataset (default 4)")
    parser.add_argument("--epochs", type=int, help="training epochs (default 30, 2 dry)")
    parser.add_argument("--ncu-per-module", type=int, default=2,
                        help="kernels per module profiled with ncu (default 2)")
    parser.add_argument("--write-results", action="store_true",
                        help="copy the report to benchmarks/RESULTS.md (not from a dry run)")
    parser.add_argument("--freeze-modules", action="store_true",
                        help="write the lowered HLO to benchmarks/data/campaign/ (needs jax)")
    return parser


def parse_arguments(argv: list[str] | None):
    args = _parser().parse_args(argv)
    args.size = args.size or ("small" if args.dry_run else "realistic")
    args.epochs = args.epochs or (2 if args.dry_run else 30)
    args.out = args.out or str(REPO / "var" / ("gpu-campaign-dry" if args.dry_run
                                               else "gpu-campaign"))
    args.modules = list(MODULES) if args.modules == "all" else args.modules.split(",")
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        raise InputError(f"unknown modules {', '.join(unknown)}; known: {', '.join(MODULES)}")
    if args.write_results and args.dry_run:
        raise InputError("--write-results copies a GPU run's report: a dry run's is synthetic")
    if args.freeze_modules and not _importable("jax"):
        raise InputError("--freeze-modules lowers the modules with jax, which is not installed")
    return args


def _selected(step: str, wanted: str) -> bool:
    if wanted == "all":
        return True
    return any(step == w or step.split(":")[0] == w for w in wanted.split(","))


def run(args) -> int:
    campaign = Campaign(args)
    started = time.perf_counter()
    environment = campaign.folder.load("environment")
    if environment:   # a resumed campaign builds with the toolchain its first run found
        os.environ.setdefault(CUDA_ROOT_VARIABLE, environment["toolchain"]["root"])
    lines, stopped, failed, done = [], False, [], []
    for step, action in campaign.steps():
        if not _selected(step, args.steps):
            continue
        if campaign.folder.done(step, args.modules):
            lines.append(f"skipped  {step} (done)")
            continue
        if args.budget is not None and time.perf_counter() - started > args.budget:
            stopped = True
            lines.append(f"not run  {step} (budget of {args.budget:.0f} s spent)")
            continue
        began = time.perf_counter()
        print(f"running  {step}", flush=True)
        try:
            result = action()
        except Exception as error:  # noqa: BLE001 - one broken step must not cost the others
            failed.append(step)
            log = campaign.folder.root / "failed" / f"{step.replace(':', '-')}.txt"
            log.parent.mkdir(exist_ok=True)
            log.write_text(traceback.format_exc())
            lines.append(f"FAILED   {step}: {type(error).__name__}: {error} (see {log})")
            continue
        campaign.folder.save(step, result)
        done.append(step)
        lines.append(f"done     {step} in {time.perf_counter() - began:.1f} s")
    if done:
        campaign.folder.record_run(done)
    summary = summarize_campaign(campaign.folder, args.modules)
    settings = json.loads((campaign.folder.root / "campaign.json").read_text())
    missing = [s for s, _ in campaign.steps() if not campaign.folder.done(s, args.modules)]
    report = report_markdown(summary, settings, missing, campaign.folder)
    (campaign.folder.root / "REPORT.md").write_text(report)
    (campaign.folder.root / "summary.json").write_text(
        json.dumps(summary, indent=1, default=_json_default))
    if args.freeze_modules:
        freeze_modules(campaign.folder, args)
    if args.write_results:
        shutil.copyfile(campaign.folder.root / "REPORT.md", RESULTS_MD)
        lines.append(f"report copied to {RESULTS_MD.relative_to(REPO)}")
    print("\n".join(lines))
    print(f"{'COMPLETE' if not missing else 'INCOMPLETE'}: {campaign.folder.root / 'REPORT.md'}"
          + (f"; not done: {', '.join(missing)}" if missing else ""))
    return 1 if failed else BUDGET_STOP if stopped else 0


def freeze_modules(folder: Folder, args) -> None:
    FROZEN.mkdir(parents=True, exist_ok=True)
    for name in args.modules:
        text = (folder.root / "modules" / f"{name}.hlo").read_bytes()
        (FROZEN / f"{name}.{args.size}.hlo.gz").write_bytes(gzip.compress(text, mtime=0))


def main(argv: list[str] | None = None) -> int:
    try:
        return run(parse_arguments(argv))
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
