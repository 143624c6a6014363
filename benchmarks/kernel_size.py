"""How nvcc's time grows with the size of one generated kernel: the measurement behind
MAX_KERNEL_NODES (compiler/kernels/plan.py), the most nodes a fused kernel may compute.

Run:  .venv/bin/python benchmarks/kernel_size.py [--sizes 0,250,500,1000,2000,4000]
                                                 [--repeat 3] [--write]

For each size N, an HLO chain of N elementwise ops on f32[256] (`add`: each op adds the
parameter to the previous value, the chain of issue 18; `mixed`: add, multiply, tanh, subtract,
exponential, divide, maximum and log in turn, whose math functions inline tens of PTX
instructions each) is made into ONE kernel holding the whole chain, bypassing the strategies'
cap, and emitted by the project's code generator under the CodeGen plan it ranks fastest. Its
source is then compiled as compiler/toolchain/nvcc.py compiles a batch: `nvcc -arch=sm_90
--ptx` with BuildOptions' flags and the prelude's folder (the front end: cicc, most of it),
then `ptxas -arch=sm_90` with BuildOptions' ptxas flags. No build cache is involved. Each
figure is the least of --repeat runs, in CPU seconds of the compiler processes (user + system:
steadier than wall time on a shared machine) and wall seconds. N = 0 is the fixed cost of one
nvcc run (the CUDA headers and the prelude), which a batch pays once for all its kernels.

`--variant const-free` compiles the same sources with `const` dropped from the values'
declarations (`const float v12_add = ...` -> `float v12_add = ...`): the front end's time
grows with the square of a chain of `const` locals, each initialised from the previous one,
and linearly without them (benchmarks/README.md, "Kernel size and nvcc time").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))

MIXES = {
    "add": ("add",),
    "mixed": ("add", "multiply", "tanh", "subtract", "exponential", "divide", "maximum", "log"),
}
UNARY = {"tanh", "exponential", "log"}
SHAPE = "f32[256]"
ARCH = "sm_90"


def chain_module(ops: int, mix: str) -> str:
    """An HLO module: a chain of `ops` elementwise ops from parameter p0, then a negate."""
    return "\n".join(chain_lines(ops, mix))


def chain_lines(ops: int, mix: str):
    """`chain_module`'s lines one by one (for a file too big to build in memory at once)."""
    yield from ("HloModule chain", "ENTRY main {", f"  p0 = {SHAPE} parameter(0)")
    previous = "p0"
    for i in range(ops):
        op = MIXES[mix][i % len(MIXES[mix])]
        operands = previous if op in UNARY else f"{previous}, p0"
        yield f"  n{i} = {SHAPE} {op}({operands})"
        previous = f"n{i}"
    yield from (f"  ROOT out = {SHAPE} negate({previous})", "}", "")


def one_kernel_source(ops: int, mix: str) -> tuple[str, int, str]:
    """(CUDA source, statements, schedule) of the whole chain as one generated kernel."""
    from compiler.stages.codegen import emit_code
    from compiler.target.devices import get_device
    from compiler.target.sol import SolModel
    from compiler.kernels.grouping import FUSIBLE, node_role
    from compiler.kernels.plan import KernelSpec, build_plan
    from compiler.importers import import_bytes

    (graph,) = import_bytes(chain_module(ops, mix).encode(), "chain.hlo")
    device = get_device("h100")
    nodes = [node.name for node in graph if node_role(node) == FUSIBLE]
    plan = build_plan(graph, [KernelSpec(nodes, "loop", dominant=nodes[-1])], "one-kernel",
                      SolModel(graph, device))
    code = emit_code(graph, plan, plan.kernels[0], device)
    emitted = code.emitted
    return emitted.source, len(emitted.line_nodes), emitted.plan.schedule


def timed(command: list[str]) -> tuple[float, float]:
    """(CPU seconds of the process and its children, wall seconds) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def compile_times(source: str, repeat: int) -> dict:
    """The least front-end and ptxas times over `repeat` compiles, and the PTX's size."""
    from compiler.codegen.check import PRELUDE_DIR
    from compiler.toolchain.locate import find_toolchain
    from compiler.toolchain.nvcc import BuildOptions

    toolchain, options = find_toolchain(), BuildOptions()
    best = {"front_cpu_s": float("inf"), "front_wall_s": float("inf"),
            "ptxas_cpu_s": float("inf"), "ptxas_wall_s": float("inf")}
    with tempfile.TemporaryDirectory(prefix="kernel-size-") as folder:
        cu, ptx, cubin = (Path(folder) / name for name in ("k.cu", "k.ptx", "k.cubin"))
        cu.write_text(source)
        for _ in range(repeat):
            cpu, wall = timed([str(toolchain.nvcc), f"-arch={ARCH}", "--ptx",
                               *options.nvcc_flags(), f"-I{PRELUDE_DIR}", str(cu),
                               "-o", str(ptx)])
            best["front_cpu_s"] = min(best["front_cpu_s"], cpu)
            best["front_wall_s"] = min(best["front_wall_s"], wall)
            cpu, wall = timed([str(toolchain.ptxas), f"-arch={ARCH}", *options.ptxas_flags(),
                               str(ptx), "-o", str(cubin)])
            best["ptxas_cpu_s"] = min(best["ptxas_cpu_s"], cpu)
            best["ptxas_wall_s"] = min(best["ptxas_wall_s"], wall)
        best["ptx_lines"] = len(ptx.read_text().splitlines())
    return {key: round(value, 2) if isinstance(value, float) else value
            for key, value in best.items()}


def const_free(source: str) -> str:
    """The source with the values' `const` dropped (`const float v3_add = ...`)."""
    return re.sub(r"\bconst (\w+) (v\d+_\w+) =", r"\1 \2 =", source)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,250,500,1000,2000,4000",
                        help="chain lengths, comma-separated")
    parser.add_argument("--mixes", default="add,mixed")
    parser.add_argument("--variant", choices=("as-emitted", "const-free"), default="as-emitted")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    rows = []
    print(f"{'mix':>6} {'ops':>5} {'statements':>10} {'PTX lines':>9} {'front CPU':>9} "
          f"{'front wall':>10} {'ptxas CPU':>9} {'ptxas wall':>10}")
    for mix in args.mixes.split(","):
        for ops in (int(n) for n in args.sizes.split(",")):
            source, statements, schedule = one_kernel_source(ops, mix)
            if args.variant == "const-free":
                source = const_free(source)
            row = {"mix": mix, "ops": ops, "statements": statements, "schedule": schedule,
                   "source_bytes": len(source), **compile_times(source, args.repeat)}
            rows.append(row)
            print(f"{mix:>6} {ops:>5} {statements:>10} {row['ptx_lines']:>9} "
                  f"{row['front_cpu_s']:>8.2f}s {row['front_wall_s']:>9.2f}s "
                  f"{row['ptxas_cpu_s']:>8.2f}s {row['ptxas_wall_s']:>9.2f}s", flush=True)
    if args.write:
        name = "kernel_size.json" if args.variant == "as-emitted" else \
            f"kernel_size_{args.variant}.json"
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / name).write_text(json.dumps({
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores, shared",
            "arch": ARCH,
            "variant": args.variant,
            "command": "python benchmarks/kernel_size.py " + " ".join(sys.argv[1:]),
            "rows": rows,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
