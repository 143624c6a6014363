"""XLA's own fusion decisions for the JAX test modules and the transformer benchmarks.

Run (the generator virtualenv, see tests/data/requirements-gen.txt):

    /tmp/genvenv/bin/python benchmarks/xla_fusion_counts.py [--gpu-python PY] [--no-write]

For every module built by tests/data/gen_hlo.py (the test modules of tests/data/hlo/ plus the
12- and 48-layer transformer training steps of benchmarks/data/) this compiles
`jax.jit(f).lower(*args).compile()` and counts, in the optimised HLO (`compiled.as_text()`),
what XLA decided to launch. The figures go to benchmarks/results/xla_fusion_counts.json and a
table is printed. They are a reference to set next to the explorer's fusion strategies' kernel
counts.

What is counted, per "scope": the ENTRY computation, and separately every while condition,
while body and conditional branch reachable from it (a scope's `call` instructions are
followed into the callee and counted as part of that scope; XLA:CPU wraps small loops in one):
- `fusions`: the `fusion` instructions by kind (kLoop, kInput, kOutput, kCustom). Each becomes
  one kernel (or one library call for some kCustom kinds). `fusions_single_op` says how many of
  the kLoop/kInput/kOutput ones wrap a single op: XLA wraps a lone op into a fusion to emit it
  as a kernel, so those are no fusion decision. `custom_fusion_kinds` gives the backend kind of
  the kCustom ones (`__triton_nested_gemm_fusion`, `__ynn_fusion`, ...; a kCustom fusion with
  no kind is named after its root op, e.g. sorts on the GPU). `fusions_with_dot_or_conv` counts
  the fusions (of any kind) that contain a dot or convolution.
- `unfused_kernel_ops`: the remaining instructions that launch work of their own: all but
  parameter, constant, tuple, get-tuple-element, bitcast, copy-start/copy-done and fusion, and
  other than control flow (while, conditional, call: counted in `control_flow`; what they run
  is in the nested scopes). A plain `copy` is counted: it is a device memcpy.
- `library_calls`: the unfused dot, convolution and custom-call instructions among those.
- `total` = fusions + unfused_kernel_ops: the kernel launches of one execution of the scope.
Per module, `entry.total` is the straight-line count; `nested_total` adds each nested scope
once (not times its trip count).

Targets:
- "cpu": XLA:CPU of the jaxlib in use, the device these numbers come from. XLA:CPU runs the
  same family of fusion passes as XLA:GPU (instruction fusion, multi-output/sibling fusion) but
  with CPU heuristics and its own library calls (most dots become YNNPACK `__ynn_fusion`
  kCustom fusions), so its counts are a reference point, not what a GPU would launch.
- "cuda_h100_aot": XLA:GPU itself, compiled ahead of time for an H100 without a GPU ("deviceless"
  compilation through jax.experimental.topologies and the CUDA PJRT plugin with a
  GpuTargetConfig, below). This needs jax-cuda12-plugin, which the generator venv lacks: give
  --gpu-python an interpreter that has it, e.g. a venv made with
      python3.11 -m venv /tmp/gpuaot-venv && /tmp/gpuaot-venv/bin/pip install jax==0.10.2 \\
          jaxlib==0.10.2 jax-cuda12-plugin==0.10.2 numpy==2.4.6 ml_dtypes==0.6.0
  (no CUDA libraries or driver needed: only compilation happens). The JSON records whether the
  running interpreter could compile for CUDA and, if not, why. Caveats, also in the JSON: with no
  device the autotuner cannot time anything, so GEMM back ends and tilings are XLA's defaults
  (on a real H100 the autotuner may pick cuBLAS over a Triton GEMM fusion); and the device
  description is the usual H100 SXM 80GB spec, not one read off a GPU. For this target the
  compiled thunk sequence (what the runtime launches) is counted too, as `thunks`.
Both targets compile with the XLA_FLAGS gen_hlo.py sets (--xla_allow_excess_precision=false),
so bf16 round-trips the HLO spells out are kept, as in the reference outputs.

A full run takes 2.5 to 5 minutes on the 2-core development machine, most of it the 48-layer
module's XLA:CPU compile. --modules runs a subset and then writes nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GEN_HLO = REPO / "tests" / "data" / "gen_hlo.py"
RESULTS = HERE / "results" / "xla_fusion_counts.json"
BENCH_LAYERS = (12, 48)
XLA_FLAGS_BEFORE = os.environ.get("XLA_FLAGS", "")  # before gen_hlo.py appends its flag

# Instructions that launch nothing of their own (the docstring's list, plus no-op markers).
NO_LAUNCH = {
    "parameter", "constant", "tuple", "get-tuple-element", "bitcast", "copy-start", "copy-done",
    "after-all", "add-dependency", "opt-barrier",
}
CONTROL_FLOW = {"while", "conditional", "call"}
LIBRARY_OPS = {"dot", "convolution", "custom-call"}
FUSION_KINDS = ("kLoop", "kInput", "kOutput", "kCustom")
# Ops that do not count towards "more than one op" when telling a wrapped single op apart.
TRIVIAL_IN_FUSION = {"parameter", "constant", "bitcast", "tuple", "get-tuple-element"}

# GpuTargetConfigProto of an H100 SXM 80GB (sm_90): the spec XLA's GPU tests and JAX users pass
# for deviceless compilation. Not read off a device here (this machine has none).
H100_TARGET_CONFIG = """\
gpu_device_info {
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_core: 233472
  threads_per_core_limit: 2048
  core_count: 132
  fpus_per_core: 128
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: 3352320000000
  l2_cache_size: 52428800
  clock_rate_ghz: 1.98
  device_memory_size: 84929347584
  shared_memory_per_block_optin: 232448
  cuda_compute_capability {
    major: 9
  }
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info {
  major: 9
  minor: 7
}
runtime_version {
  major: 12
  minor: 8
  patch: 0
}
device_description_str: "NVIDIA H100 80GB HBM3"
"""
GPU_CAVEATS = [
    "Compiled ahead of time without a GPU: nothing was autotuned, so GEMM back ends and tile "
    "sizes are XLA's defaults; on a real H100 the autotuner may choose cuBLAS instead of a "
    "Triton GEMM fusion.",
    "Device description: the usual H100 SXM 80GB GpuTargetConfig (embedded in the script), "
    "not read off a device.",
]


# --------------------------------------------------------------------------------------------
# Loading the modules
# --------------------------------------------------------------------------------------------


def load_gen_hlo():
    """Import tests/data/gen_hlo.py by path (it sets XLA_FLAGS and pins JAX to the CPU)."""
    spec = importlib.util.spec_from_file_location("gen_hlo", GEN_HLO)
    gen = importlib.util.module_from_spec(spec)
    sys.modules["gen_hlo"] = gen  # its dataclasses look their module up there
    spec.loader.exec_module(gen)
    return gen


def module_names(gen) -> list[str]:
    return list(gen.MODULES) + [f"transformer_{n}l" for n in BENCH_LAYERS]


def build(gen, name: str):
    """(f, args) for a test module or a benchmark module, exactly as gen_hlo.py makes them."""
    if name in gen.MODULES:
        return gen.MODULES[name][0](gen.rng_for(name))
    layers = int(re.fullmatch(r"transformer_(\d+)l", name).group(1))
    cfg = gen.TransformerConfig(layers=layers, **gen.BENCH_CONFIG)
    return gen.transformer_train_step(cfg), gen.transformer_args(cfg, gen.rng_for(name))


# --------------------------------------------------------------------------------------------
# Reading optimised HLO text
# --------------------------------------------------------------------------------------------


def parse_computations(text: str) -> tuple[dict[str, list[dict]], str]:
    """{computation name: [instruction]} and the ENTRY computation's name.

    An instruction is {"name", "opcode", "attrs", "root"}, attrs being the text after the
    operands.
    """
    comps: dict[str, list[dict]] = {}
    entry = None
    current = None
    for line in text.splitlines():
        if current is None:
            if line.endswith("{") and not line.startswith(("HloModule", " ")):
                is_entry = line.startswith("ENTRY ")
                current = line.removeprefix("ENTRY ").split(" ", 1)[0].lstrip("%")
                comps[current] = []
                entry = current if is_entry else entry
            continue
        if line == "}":
            current = None
            continue
        m = re.match(r"^\s+(?:ROOT\s+)?%?(\S+)\s+=\s+(.*)$", line)
        if m:
            opcode, attrs = split_opcode(m.group(2))
            comps[current].append({"name": m.group(1), "opcode": opcode, "attrs": attrs,
                                   "root": line.lstrip().startswith("ROOT ")})
    if entry is None:
        raise ValueError("no ENTRY computation in HLO text")
    return comps, entry


def split_opcode(rest: str) -> tuple[str, str]:
    """'f32[4]{0} add(%a, %b), metadata=...' -> ('add', ', metadata=...')."""
    if rest.startswith("("):  # a tuple shape: skip to its closing parenthesis
        depth = 0
        for i, ch in enumerate(rest):
            depth += (ch == "(") - (ch == ")")
            if depth == 0:
                rest = rest[i + 1 :]
                break
    else:
        rest = rest.split(" ", 1)[1]
    m = re.match(r"\s*([\w\-]+)\(", rest)
    opcode = m.group(1)
    depth, i = 0, m.end() - 1  # skip the operand list, nested parentheses included
    for i in range(m.end() - 1, len(rest)):
        depth += (rest[i] == "(") - (rest[i] == ")")
        if depth == 0:
            break
    return opcode, rest[i + 1 :]


def attr(attrs: str, key: str) -> str | None:
    m = re.search(r"(?:^|,\s)" + key + r"=%?([\w.\-]+)", attrs)
    return m.group(1) if m else None


def nested_scopes(ins: dict) -> list[tuple[str, str]]:
    """(label, computation) of the while condition/body or conditional branches of `ins`."""
    a = ins["attrs"]
    if ins["opcode"] == "while":
        return [("cond", attr(a, "condition")), ("body", attr(a, "body"))]
    if ins["opcode"] == "conditional":
        m = re.search(r"(?:^|,\s)branch_computations=\{([^}]*)\}", a)
        if m:
            names = [n.strip().lstrip("%") for n in m.group(1).split(",")]
            return [(f"branch{i}", n) for i, n in enumerate(names)]
        return [("true", attr(a, "true_computation")), ("false", attr(a, "false_computation"))]
    return []


class HloCounter:
    """Counts fusions and kernel-launching instructions of one optimised HLO module."""

    def __init__(self, text: str):
        self.comps, self.entry = parse_computations(text)
        self.instructions = sum(len(v) for v in self.comps.values())

    def reachable_opcodes(self, comp: str, seen=None) -> Counter:
        """Opcodes in fused computation `comp`, nested fusions included (reducers are not)."""
        seen = set() if seen is None else seen
        ops: Counter = Counter()
        if comp in seen or comp not in self.comps:
            return ops
        seen.add(comp)
        for ins in self.comps[comp]:
            ops[ins["opcode"]] += 1
            if ins["opcode"] == "fusion":
                ops += self.reachable_opcodes(attr(ins["attrs"], "calls"), seen)
        return ops

    def unnamed_kind(self, comp: str) -> str:
        root = next((i["opcode"] for i in self.comps.get(comp, []) if i["root"]), "?")
        return f"(no kind, root {root})"

    def flat_instructions(self, comp: str):
        """The instructions of `comp`, with each `call` followed into its callee."""
        for ins in self.comps[comp]:
            yield ins
            if ins["opcode"] == "call":
                yield from self.flat_instructions(attr(ins["attrs"], "to_apply"))

    def count_scope(self, label: str, comp: str) -> tuple[dict, list[tuple[str, str]]]:
        fusions: Counter = Counter()
        custom_kinds: Counter = Counter()
        unfused: Counter = Counter()
        control: Counter = Counter()
        library: Counter = Counter()
        single_op = with_dot = 0
        children = []
        for ins in self.flat_instructions(comp):
            op, a = ins["opcode"], ins["attrs"]
            if op == "fusion":
                kind = attr(a, "kind")
                fusions[kind] += 1
                if kind == "kCustom":
                    m = re.search(r'"kind":"([^"]+)"', a)
                    custom_kinds[m.group(1) if m else self.unnamed_kind(attr(a, "calls"))] += 1
                inner = self.reachable_opcodes(attr(a, "calls"))
                real = sum(n for o, n in inner.items() if o not in TRIVIAL_IN_FUSION)
                single_op += kind != "kCustom" and real <= 1
                with_dot += bool(inner["dot"] or inner["convolution"])
            elif op in CONTROL_FLOW:
                control[op] += 1
                children += [(f"{label}/{ins['name']}/{sub}", c) for sub, c in nested_scopes(ins)]
            elif op not in NO_LAUNCH:
                unfused[op] += 1
                if op in LIBRARY_OPS:
                    m = re.search(r'custom_call_target="([^"]+)"', a)
                    library[f"{op}:{m.group(1)}" if m else op] += 1
        n_fusions = sum(fusions.values())
        n_unfused = sum(unfused.values())
        record = {
            "scope": label,
            "computation": comp,
            "fusions": {k: fusions[k] for k in FUSION_KINDS} | {"total": n_fusions},
            "fusions_single_op": single_op,
            "fusions_with_dot_or_conv": with_dot,
            "custom_fusion_kinds": dict(sorted(custom_kinds.items())),
            "unfused_kernel_ops": n_unfused,
            "unfused_by_opcode": dict(sorted(unfused.items())),
            "library_calls": sum(library.values()),
            "library_calls_by_op": dict(sorted(library.items())),
            "control_flow": dict(sorted(control.items())),
            "total": n_fusions + n_unfused,
        }
        unknown = set(fusions) - set(FUSION_KINDS)
        if unknown:
            record["fusions"] |= {k: fusions[k] for k in sorted(unknown)}
        return record, children

    def summary(self) -> dict:
        entry, pending = self.count_scope("ENTRY", self.entry)
        nested = []
        while pending:
            label, comp = pending.pop(0)
            record, children = self.count_scope(label, comp)
            nested.append(record)
            pending += children
        return {
            "hlo_instructions": self.instructions,
            "entry": entry,
            "nested": nested,
            "nested_total": sum(s["total"] for s in nested),
            "static_total": entry["total"] + sum(s["total"] for s in nested),
        }


def count_thunks(text: str) -> dict:
    """Thunk kinds of XLA:GPU's thunk sequence dump: top level vs inside while/conditional."""
    top: Counter = Counter()
    nested: Counter = Counter()
    for line in text.splitlines():
        m = re.match(r"^(\s*)\d+: (k\w+)", line)
        if m:
            (nested if m.group(1) else top)[m.group(2)] += 1
    containers = {"kWhile", "kConditional", "kSequential", "kCommandBuffer"}
    return {
        "top_level": dict(sorted(top.items())),
        "nested": dict(sorted(nested.items())),
        "launches_top_level": sum(n for k, n in top.items() if k not in containers),
        "launches_nested": sum(n for k, n in nested.items() if k not in containers),
    }


# --------------------------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------------------------


def compile_cpu(gen, names: list[str]) -> dict:
    import jax

    out = {}
    for name in names:
        f, args = build(gen, name)
        start = time.perf_counter()
        text = jax.jit(f).lower(*args).compile().as_text()
        seconds = time.perf_counter() - start
        out[name] = {"compile_s": round(seconds, 2)} | HloCounter(text).summary()
        print(f"  cpu  {name:24s} {seconds:6.1f} s", file=sys.stderr, flush=True)
    return out


def cuda_topology():
    """Compile-only H100 devices, or raises if this interpreter cannot compile for CUDA."""
    from jax.experimental import topologies

    return topologies.get_topology_desc(
        platform="cuda", topology="1x1x1", target_config=H100_TARGET_CONFIG
    )


def compile_cuda(gen, names: list[str]) -> dict:
    import jax

    topo = cuda_topology()
    mesh = jax.sharding.Mesh(topo.devices, ("x",))
    replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())

    def abstract(a):
        return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=replicated)

    out = {}
    for name in names:
        f, args = build(gen, name)
        start = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory() as dump:
                lowered = jax.jit(f).lower(*jax.tree_util.tree_map(abstract, args))
                compiled = lowered.compile(compiler_options={"xla_dump_to": dump})
                text = compiled.as_text()
                thunk_files = sorted(Path(dump).glob("*.thunk_sequence.txt"))
                thunks = count_thunks(thunk_files[0].read_text()) if thunk_files else None
        except Exception as e:  # one module failing must not hide the others
            out[name] = {"error": f"{type(e).__name__}: {str(e)[:2000]}"}
            print(f"  cuda {name:24s} FAILED: {type(e).__name__}", file=sys.stderr, flush=True)
            continue
        seconds = time.perf_counter() - start
        out[name] = {"compile_s": round(seconds, 2)} | HloCounter(text).summary()
        out[name]["thunks"] = thunks
        print(f"  cuda {name:24s} {seconds:6.1f} s", file=sys.stderr, flush=True)
    return out


def versions() -> dict:
    found = {}
    for dist in ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "numpy"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return found


def cuda_target(gen, names: list[str], gpu_python: str | None) -> dict:
    """Try XLA:GPU deviceless compilation here, else in `gpu_python`; record what happened."""
    result = {
        "device": "none (ahead-of-time compilation for a CUDA target on the CPU machine)",
        "target": "NVIDIA H100 80GB HBM3, sm_90 (embedded GpuTargetConfig)",
        "caveats": GPU_CAVEATS,
    }
    try:
        cuda_topology()
        here_error = None
    except Exception as e:
        here_error = f"{type(e).__name__}: {e}"
    result["in_this_interpreter"] = {
        "python": sys.executable,
        "versions": versions(),
        "can_compile_for_cuda": here_error is None,
        "error": here_error,
    }
    if here_error is None:
        result |= {"status": "ok", "compiled_by": sys.executable, "versions": versions()}
        result["modules"] = compile_cuda(gen, names)
        return result
    if gpu_python is None:
        result["status"] = (
            "not compiled: this interpreter has no CUDA PJRT plugin (jax-cuda12-plugin); "
            "pass --gpu-python with an interpreter that has it (see the script's docstring)"
        )
        return result
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        cmd = [gpu_python, str(Path(__file__).resolve()), "--worker-cuda", tmp.name,
               "--modules", ",".join(names)]
        env = os.environ | {"XLA_FLAGS": XLA_FLAGS_BEFORE,
                            # No CUDA runtime is installed and none is needed to compile; the
                            # plugin would otherwise refuse to load for the missing libraries.
                            "JAX_SKIP_CUDA_CONSTRAINTS_CHECK": "1"}
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        if proc.returncode != 0:
            result["status"] = f"worker failed (exit {proc.returncode})"
            result["worker_stderr_tail"] = proc.stderr[-4000:]
            return result
        worker = json.loads(Path(tmp.name).read_text())
    result |= {"status": "ok", "compiled_by": gpu_python, "versions": worker["versions"],
               "modules": worker["modules"]}
    failed = [n for n, m in worker["modules"].items() if "error" in m]
    if failed:
        result["status"] = f"ok except {len(failed)} module(s): {', '.join(failed)}"
    return result


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def table(title: str, modules: dict, with_thunks: bool = False) -> str:
    head = (f"{'module':24s} {'kLoop':>5s} {'kInp':>4s} {'kOut':>4s} {'kCus':>4s} {'1op':>4s} "
            f"{'unfus':>5s} {'lib':>4s} {'TOTAL':>5s} {'nestd':>5s}")
    head += f" {'thunks':>6s}" if with_thunks else ""
    lines = [title, head, "-" * len(head)]
    for name, m in modules.items():
        if "error" in m:
            lines.append(f"{name:24s} error: {m['error'][:60]}")
            continue
        e = m["entry"]
        fu = e["fusions"]
        row = (f"{name:24s} {fu['kLoop']:5d} {fu['kInput']:4d} {fu['kOutput']:4d} "
               f"{fu['kCustom']:4d} {e['fusions_single_op']:4d} {e['unfused_kernel_ops']:5d} "
               f"{e['library_calls']:4d} {e['total']:5d} {m['nested_total']:5d}")
        if with_thunks:
            t = m.get("thunks")
            row += f" {t['launches_top_level']:6d}" if t else f" {'-':>6s}"
        lines.append(row)
    return "\n".join(lines)


LEGEND = """\
Counts in the ENTRY computation: fusions by kind; 1op = kLoop/kInput/kOutput fusions wrapping
a single op; unfus = kernel-launching ops left unfused; lib = unfused dot/convolution/
custom-call; TOTAL = fusions + unfus; nestd = TOTAL summed over while conditions/bodies and
conditional branches (each once); thunks = top-level launches in XLA:GPU's thunk sequence
(kernels and memcpys)."""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu-python", help="interpreter with jax-cuda12-plugin, for the "
                        "deviceless XLA:GPU (H100) compile")
    parser.add_argument("--modules", help="comma-separated subset (default: all); a subset is "
                        "only printed, not written")
    parser.add_argument("--no-write", action="store_true", help=f"do not write {RESULTS.name}")
    parser.add_argument("--worker-cuda", metavar="JSON", help=argparse.SUPPRESS)
    opts = parser.parse_args()

    command = shlex.join([sys.executable, *sys.argv])
    gen = load_gen_hlo()
    names = module_names(gen)
    if opts.modules:
        unknown = set(opts.modules.split(",")) - set(names)
        if unknown:
            parser.error(f"unknown module(s): {', '.join(sorted(unknown))}")
        names = [n for n in names if n in opts.modules.split(",")]

    if opts.worker_cuda:  # the --gpu-python side: compile for CUDA here, hand back JSON
        modules = compile_cuda(gen, names)
        Path(opts.worker_cuda).write_text(json.dumps({"versions": versions(),
                                                      "modules": modules}))
        return

    import jax

    cpu = compile_cpu(gen, names)
    try:
        cuda = cuda_target(gen, names, opts.gpu_python)
    except Exception:
        cuda = {"status": "failed", "traceback": traceback.format_exc()[-4000:]}

    report = {
        "what": "XLA's fusion decisions in the optimised HLO of the JAX test/benchmark modules "
                "(see the docstring of benchmarks/xla_fusion_counts.py for what is counted)",
        "command": command,
        "date": datetime.now(timezone.utc).date().isoformat(),
        "device": "cpu",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": metadata.version("jaxlib"),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "targets": {
            "cpu": {"status": "ok", "compiler": "XLA:CPU (jax.jit(f).lower(*args).compile())",
                    "modules": cpu},
            "cuda_h100_aot": cuda,
        },
    }
    print(table("XLA:CPU (device: cpu)", cpu))
    print()
    print(f"XLA:GPU H100, deviceless AOT compile: {cuda['status']}")
    if "modules" in cuda:
        print(table("", cuda["modules"], with_thunks=True).lstrip("\n"))
    print()
    print(LEGEND)
    if not (opts.no_write or opts.modules):
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(report, indent=1) + "\n")
        print(f"\nwrote {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
