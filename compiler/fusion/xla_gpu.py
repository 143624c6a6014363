"""The `xla-gpu` strategy: XLA:GPU's own fusion decisions, read back onto our graph.

Our `xla` strategy re-implements XLA's classic fusion rules; this one asks XLA itself. The
graph is printed as HLO text (compiler/ir/printer.py) with every instruction's name in its
`metadata={op_name=...}` (an ONNX or JSON name HLO cannot spell prints as a legal one, read
back to ours through `printed_names`; a bitcast or copy, which XLA's compile through StableHLO
has no form for, as the ops it computes: `compilable`), compiled by the real XLA:GPU compiler
ahead of time for the device (deviceless: JAX's CUDA PJRT plugin compiles for a GPU target
description, built here from our device table, with no GPU and no CUDA libraries present),
and the optimised module it returns is imported (compiler/importers/hlo_text.py inlines each
fusion, recording it in `fused_in`). XLA keeps `op_name` through its rewrites, so every
optimised instruction names the node of ours it came from: the nodes of one XLA fusion (or one
unfused launching op) become one kernel of ours.

Compiling runs in a child process (`python -m compiler.fusion.xla_gpu`): XLA's compile can take
seconds to minutes, its memory is returned when the child exits, and a crash in it costs the
strategy, never the explorer or a worker. The child disables XLA's computation deduplicator,
which would otherwise let identical fusions share one computation whose `op_name`s name only
the first fusion's nodes. The optimised text is cached (compiler/toolchain/cache.py) by the
module's text, the device and the jaxlib and plugin versions; a refusal is not.

A module the user uploaded as XLA's own optimised output (an `--xla_dump_to` file, or
`compiled.as_text()`) is not compiled again: the importer recorded its fusions
(`graph.fusions`, each node's `fused_in`), and those are the plan, on whatever device.

Mapping XLA's decisions onto our nodes (`plan_from_launches`):
- A node found in several XLA kernels (XLA duplicated it into each consumer) is owned by the
  first and recomputed by the others when it is cheap (`is_duplicable`), else read from
  memory by them.
- A node XLA rewrote beyond recognition (no optimised instruction names it: folded into a
  layout, simplified away, merged with an identical one) is placed, and reported in the
  plan's decisions: with the kernel of its consumers when they are all in one kernel, else
  with its operands' kernel, else in a kernel of its own; a cheap one is recomputed by its
  readers instead.
- XLA's GEMM fusions (a dot with a prologue or an epilogue, compiled by Triton) become our
  library call for the dot, with the fused elementwise work before and after it in kernels
  of their own: our plans call the library for a dot alone.
Each kernel's kind (loop, input, stitch) is what its nodes need (compiler/kernels/analysis.py's
`part_kind`), so our code generator and cost models price XLA's groups like ours. Each kernel
keeps XLA's name for the launch it is, or is a part of (`Kernel.xla_name`: `fusion.276`,
`gemm_fusion_dot.101`, `loop_add_fusion`), which the pages show beside ours; the CUDA they show
is still ours, generated for XLA's grouping (XLA's own kernels need a GPU to be shown).

Unavailable (the plugin missing, no target description for the device, XLA refusing the
module): `XlaGpuUnavailable` with the reason, which `explore` reports in place of the plan.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

from compiler.importers.hlo_text import import_hlo
from compiler.ir.graph import Graph, Node
from compiler.ir.printer import hlo_names, print_graph, unique_name
from compiler.ir.shapes import ArrayShape
from compiler.kernels.analysis import part_kind
from compiler.kernels.grouping import FUSIBLE, LIBRARY, is_duplicable, node_role
from compiler.kernels.plan import (LIBRARY_OPERAND_VIEWS, Decision, FusionPlan, KernelSpec,
                                   PlanError, StrategyUnavailable, build_plan)
from compiler.target.devices import Device, get_device
from compiler.target.sol import SolModel
from compiler.toolchain.cache import BuildCache, cache_key

STRATEGY = "xla-gpu"
COMPILE_TIMEOUT_S = 600
# What XLA's deviceless compile needs: the CUDA plugin's two wheels (requirements.txt).
PLUGIN_PACKAGES = ("jax-cuda12-plugin", "jax-cuda12-pjrt")
_OP_NAME = re.compile(r'op_name="([^"]*)"')
_REPO = Path(__file__).resolve().parents[2]
_REASON = "xla-gpu: "   # starts the child's line on stderr that says why it failed
# The longest line of XLA's message passed on whole (`_shortened`).
MESSAGE_LINE_LIMIT = 1000
_REFUSED = 3      # the child's exit code when XLA refuses the module
_MISSING = 4      # ... when the plugin or JAX is missing


class XlaGpuUnavailable(StrategyUnavailable):
    """XLA:GPU's plan cannot be made here; the message says why."""


def xla_gpu_fusion(graph: Graph, model: SolModel) -> FusionPlan:
    """XLA:GPU's fusion plan for `graph` on the model's device (module docstring). A graph
    imported from a dump XLA already optimised keeps XLA's fusions (`graph.fusions`): those
    are the plan, whatever the device."""
    if graph.fusions:
        plan = plan_from_launches(graph, xla_kernels(graph), model)
        plan.decisions.insert(0, Decision("fuse", graph.name, "xla-gpu: the uploaded module "
                                          "is XLA's optimised output; its own fusions are "
                                          "the kernels"))
        return plan

    optimised = import_hlo(compile_optimised(graph, model.device), "xla-gpu-optimised.hlo")
    return plan_from_launches(graph, xla_kernels(optimised, printed_names(graph)), model)


# -- compiling ----------------------------------------------------------------------------------


def named_hlo(graph: Graph) -> str:
    """The graph as HLO text XLA compiles (`compilable`), each instruction carrying its
    printed name as `op_name`."""
    return print_graph(compilable(graph), comments=False, name_metadata=True)


def printed_names(graph: Graph) -> dict[str, str]:
    """The entry nodes' printed names (`named_hlo`, what XLA keeps as `op_name`) -> ours."""
    return {printed: name for name, printed in hlo_names(compilable(graph)).nodes[None].items()}


def compilable(graph: Graph) -> Graph:
    """`graph` with the ops XLA's compile has no form for spelled as the ops they compute.

    The compile goes through StableHLO (`_compile_here`), which has neither `copy` nor
    `bitcast`, XLA's ops for a change of layout (in modules taken after XLA's layout
    assignment); nor has it layouts, so XLA sees logical values. A copy is then its operand (a
    reshape to its own shape), and a bitcast what the interpreter computes for it: a transpose
    to the operand's physical order, a reshape, a transpose to the result's logical order, each
    left out where it changes nothing. The last keeps the node's name, so XLA's op_name still
    names it. `graph` itself when it has neither op."""
    if not any(node.op in ("copy", "bitcast") for node in graph):
        return graph
    taken = set(graph.nodes)
    nodes: list[Node] = []
    for node in graph:
        operand = graph.nodes[node.operands[0]] if node.operands else None
        if node.op == "copy" and not node.shape.is_tuple:
            nodes.append(dataclasses.replace(node, op="reshape", attrs={}))
        elif (node.op == "bitcast" and not node.shape.is_tuple
              and operand.shape.dtype == node.shape.dtype):
            nodes += _bitcast_as_ops(node, operand.shape, taken)
        else:
            nodes.append(node)
    return dataclasses.replace(graph, nodes={node.name: node for node in nodes})


def _bitcast_as_ops(node: Node, source: ArrayShape, taken: set[str]) -> list[Node]:
    """A bitcast of a `source`-shaped value as transpose, reshape, transpose (`compilable`);
    the new nodes take names not in `taken` (and join it), the last one the bitcast's."""
    target = node.shape
    value = node.operands[0]
    ops = []
    to_physical = tuple(reversed(source.minor_to_major))
    if to_physical != tuple(range(source.rank)):
        dims = tuple(source.dims[d] for d in to_physical)
        ops.append(Node(unique_name(f"{node.name}.physical", taken), "transpose", (value,),
                        ArrayShape(source.dtype, dims), {"dimensions": to_physical}))
        value = ops[-1].name
    target_order = tuple(reversed(target.minor_to_major))
    back = tuple(target_order.index(d) for d in range(target.rank))
    if back == tuple(range(target.rank)):
        return ops + [dataclasses.replace(node, op="reshape", operands=(value,), attrs={})]
    dims = tuple(target.dims[d] for d in target_order)
    ops.append(Node(unique_name(f"{node.name}.reshaped", taken), "reshape", (value,),
                    ArrayShape(target.dtype, dims)))
    return ops + [dataclasses.replace(node, op="transpose", operands=(ops[-1].name,),
                                      attrs={"dimensions": back})]


def compile_optimised(graph: Graph, device: Device) -> str:
    """XLA:GPU's optimised module for `graph` (text), from the cache or the child process."""

    text = named_hlo(graph)
    key = cache_key("xla-gpu-optimised", text, device.name, _jaxlib_version())
    cache = BuildCache.from_env()
    hit = cache.get(key)
    if hit is not None:
        return hit["text"]
    command = [sys.executable, "-m", "compiler.fusion.xla_gpu", device.name]
    environment = dict(os.environ, JAX_PLATFORMS="cpu",
                       PYTHONPATH=os.pathsep.join(filter(None, [str(_REPO),
                                                               os.environ.get("PYTHONPATH")])))
    try:
        done = subprocess.run(command, input=text, capture_output=True, text=True,
                              timeout=COMPILE_TIMEOUT_S, env=environment, cwd=_REPO)
    except subprocess.TimeoutExpired:
        raise XlaGpuUnavailable(f"XLA:GPU did not compile the module within "
                                f"{COMPILE_TIMEOUT_S} s") from None
    if done.returncode == 0:
        cache.put(key, {"text": done.stdout})
        return done.stdout
    # Not cached: a refusal can come from this machine (XLA found an old ptxas on the PATH).
    raise XlaGpuUnavailable(_reported(done.stderr)
                            or f"the compiler process exited with {done.returncode}")


def _report(reason: str) -> None:
    """In the child: why it failed, every line of it, as one line of stderr that the parent
    finds among XLA's own logging (`_reported`)."""
    print(_REASON + json.dumps(_shortened(reason)), file=sys.stderr)


def _reported(stderr: str) -> str:
    """The reason the child reported (`_report`), or "" when it died before saying one."""
    lines = [line for line in stderr.splitlines() if line.startswith(_REASON)]
    if not lines:
        return ""
    reported = lines[-1][len(_REASON):]
    try:
        return json.loads(reported)
    except json.JSONDecodeError:    # cut short: the child was killed while writing it
        return reported


def _shortened(message: str) -> str:
    """XLA's message whole, but for each line longer than MESSAGE_LINE_LIMIT (a syntax error
    quotes the line it points at, which can be a constant of megabytes): of that line, the
    part around the column its caret line points at (or its start), the cut said, and the
    caret moved to point at the same character."""
    limit = MESSAGE_LINE_LIMIT
    lines = message.splitlines()
    for i, line in enumerate(lines):
        if len(line) <= limit:
            continue
        below = lines[i + 1] if i + 1 < len(lines) else ""
        caret = below.index("^") if below.strip() == "^" else None
        start = 0 if caret is None else max(0, min(caret - limit // 2, len(line) - limit))
        end = start + limit
        before = f"[{start:,} characters] " if start else ""
        after = f" [{len(line) - end:,} more characters]" if end < len(line) else ""
        lines[i] = before + line[start:end] + after
        if caret is not None:
            lines[i + 1] = " " * (len(before) + caret - start) + "^"
    return "\n".join(lines)


def _jaxlib_version() -> str:
    from importlib import metadata

    try:
        return "/".join(metadata.version(name) for name in ("jaxlib", *PLUGIN_PACKAGES))
    except metadata.PackageNotFoundError:
        return "missing"


def target_config(device: Device) -> str:
    """XLA's GpuTargetConfig text for `device`, from our device table (the fields XLA's GPU
    cost and fusion passes read: SMs, threads, shared memory, registers, L2, bandwidth,
    clock, compute capability)."""
    major, minor = device.compute_capability
    return f"""gpu_device_info {{
  threads_per_block_limit: {device.max_threads_per_block}
  threads_per_warp: {device.warp_size}
  shared_memory_per_block: {device.shared_memory_per_block_default_bytes}
  shared_memory_per_core: {device.shared_memory_per_sm_bytes}
  threads_per_core_limit: {device.max_threads_per_sm}
  core_count: {device.sm_count}
  fpus_per_core: {device.fp32_ops_per_cycle_per_sm}
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: {int(device.dram_bandwidth_gbs * 1e9)}
  l2_cache_size: {device.l2_bytes}
  clock_rate_ghz: {device.boost_clock_mhz / 1000:g}
  device_memory_size: {device.dram_bytes}
  shared_memory_per_block_optin: {device.shared_memory_per_block_bytes}
  cuda_compute_capability {{
    major: {major}
    minor: {minor}
  }}
  registers_per_core_limit: {device.registers_per_sm}
  registers_per_block_limit: {device.registers_per_block}
}}
platform_name: "CUDA"
dnn_version_info {{
  major: 9
  minor: 7
}}
runtime_version {{
  major: 12
  minor: 8
}}
device_description_str: "{device.full_name}"
"""


def _compile_here(text: str, device: Device) -> str:
    """In the child: compile `text` for `device` with XLA:GPU, return the optimised module."""
    try:
        from jax._src.interpreters import mlir as jax_mlir
        from jax._src.lib import _jax, xla_client
        from jax._src.lib.mlir import ir
        from jax.experimental import topologies
    except ImportError as error:
        raise _Missing(f"JAX is not installed ({error})") from error
    try:
        topology = topologies.get_topology_desc(platform="cuda", topology="1x1x1",
                                                target_config=target_config(device))
    except Exception as error:  # noqa: BLE001 - NotImplementedError, a runtime error, ...
        raise _Missing(f"XLA:GPU cannot compile here without a GPU: install the pip packages "
                       f"{' and '.join(PLUGIN_PACKAGES)} ({type(error).__name__}: "
                       f"{str(error).splitlines()[0] if str(error) else ''})") from error
    module = xla_client.hlo.hlo_module_from_text(text)
    stablehlo = _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
    options = xla_client.CompileOptions()
    options.env_option_overrides = [("xla_disable_hlo_passes", "computation-deduplicator")]
    devices = xla_client.DeviceList(tuple(topology.devices[:1]))
    with jax_mlir.make_ir_context():
        parsed = ir.Module.parse(stablehlo)
        executable = topology.devices[0].client.compile(
            parsed, executable_devices=devices, compile_options=options)
    return executable.hlo_modules()[0].to_string()


class _Missing(RuntimeError):
    pass


def main(argv: list[str]) -> int:
    """The child process: HLO text on stdin, the optimised module on stdout; a failure is its
    reason on stderr (`_report`) and exit code 3 (XLA refused) or 4 (cannot compile)."""

    device = get_device(argv[0])
    text = sys.stdin.read()
    try:
        optimised = _compile_here(text, device)
    except _Missing as error:
        _report(str(error))
        return _MISSING
    except Exception as error:  # noqa: BLE001 - XLA's verdict, passed on as the reason
        _report(f"XLA:GPU refused the module: {type(error).__name__}: {str(error).strip()}")
        return _REFUSED
    sys.stdout.write(optimised)
    return 0


# -- reading XLA's decisions back ---------------------------------------------------------------


def xla_kernels(module: Graph, op_names: dict[str, str] | None = None
                ) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """XLA's launches in an optimised module (imported: fusions inlined, `fused_in` set), in
    a launch order (the import's dependency order): (name, what, [(node, op) of each
    instruction it computes]). `what` is the fusion's kind and backend kind ("kLoop",
    "kCustom __triton", ...) or the unfused op. The node is, for a module XLA compiled from
    our named text, the node its `op_name` names (`op_names`: `printed_names` of our graph;
    an instruction whose op_name names none of ours is left out), else its own name (a dump
    the user uploaded, whose graph is this module). Parameters, constants, bitcasts and
    tuple plumbing launch nothing."""
    kernels: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    for node in module:
        if node.op in _NO_LAUNCH and not node.fused_in:
            continue
        group = node.fused_in or node.name
        if group not in kernels:
            kernels[group] = (node.op, [])
        if node.op == "parameter":
            continue
        if op_names is not None:
            match = _OP_NAME.search(node.extra.get("metadata", ""))
            if match and match.group(1) in op_names:
                kernels[group][1].append((op_names[match.group(1)], node.op))
        else:
            kernels[group][1].append((node.name, node.op))
    return [(name, _what(module.fusions.get(name), op), names)
            for name, (op, names) in kernels.items()]


def _what(fusion: dict | None, op: str) -> str:
    if fusion is None:
        return op
    return " ".join(filter(None, (fusion.get("kind"), fusion.get("backend_kind"))))


_NO_LAUNCH = {"parameter", "constant", "bitcast", "tuple", "get-tuple-element", "copy-start",
              "copy-done", "after-all", "partition-id", "replica-id"}


def plan_from_launches(graph: Graph, launches: list, model: SolModel) -> FusionPlan:
    """The plan whose kernels are XLA's launches (`xla_kernels`), over `graph`'s nodes.

    Every kernel has an order key: XLA's launch position for its kernels. Each node is owned
    by a kernel whose key is at least its operands' kernels' keys, so the kernels, taken by
    key, are in an order every value flows along: the plan cannot have a cycle, whatever
    XLA's rewrites did to the names. A node whose XLA kernel comes before one of its
    operands' (XLA recomputed that operand inside it) moves to the operand's kernel, and the
    decisions say so."""
    position = graph.positions()
    kernel_nodes = [n.name for n in graph if node_role(n) in (FUSIBLE, LIBRARY)]
    wanted = set(kernel_nodes)
    groups: list[list[str]] = []
    whats: list[str] = []
    xla_names: list[str | None] = []      # XLA's name for each group's launch
    keys: list[float] = []
    # our node -> the XLA kernels holding it: first those where an instruction named after it
    # is still its op, then those where XLA's rewrite of it (or a part of it: a gather's index
    # arithmetic, shared with a scatter) carries its name.
    homes: dict[str, list[int]] = {}
    strong: dict[str, list[int]] = {}
    for name, what, instructions in launches:
        mine = [(n, op) for n, op in instructions if n in wanted]
        if not mine:
            continue
        index = len(groups)
        groups.append([])
        whats.append(f"{name} ({what})")
        xla_names.append(name)
        keys.append(float(index))
        for node, op in mine:
            for table in ((homes, strong) if op == graph.nodes[node].op else (homes,)):
                if index not in table.setdefault(node, []):
                    table[node].append(index)
    for node, indices in strong.items():
        homes[node] = indices + [i for i in homes[node] if i not in indices]

    users = graph.users()
    outputs = set(graph.output_names())
    kernel_role = {n: node_role(graph.nodes[n]) in (FUSIBLE, LIBRARY) for n in graph.nodes}
    # Cheap nodes XLA left no instruction named after: recomputed by whatever reads them.
    free = {n for n in kernel_nodes if n not in homes and is_duplicable(graph.nodes[n])
            and n not in outputs and users[n] and all(kernel_role[u] for u in users[n])}
    decisions: list[Decision] = []
    owner: dict[str, int] = {}
    # A free node -> the kernel with the highest key among those whose values it reads.
    floor: dict[str, int | None] = {}

    def latest(name: str) -> int | None:
        """The kernel with the highest key among those `name` reads from (through the free
        nodes it reads), or None when it reads only leaves: whoever computes `name` must
        have at least that key."""
        found = None
        for operand in graph.nodes[name].operands:
            group = owner.get(operand, floor.get(operand))
            if group is not None and (found is None or keys[group] > keys[found]):
                found = group
        return found

    def lowest(name: str) -> float:
        group = latest(name)
        return -math.inf if group is None else keys[group]

    for node in kernel_nodes:             # graph order: operands first
        low = lowest(node)
        if node in free:
            floor[node] = latest(node)
            continue
        candidates = homes.get(node, [])
        choice = next((g for g in candidates if keys[g] >= low), None)
        if choice is None and candidates:
            choice = latest(node)
            decisions.append(Decision("fuse", node, f"xla-gpu: XLA computes it in "
                                      f"{whats[candidates[0]]}, ahead of a kernel it reads "
                                      f"from here; placed in that operand's kernel"))
        elif choice is None:
            readers = sorted({g for user in users[node] for g in homes.get(user, [])
                              if keys[g] >= low}, key=keys.__getitem__)
            if readers:
                choice, where = readers[0], "its consumer's kernel"
            elif low > -math.inf:
                choice, where = latest(node), "its operand's kernel"
            else:
                choice, where = len(groups), "a kernel of its own"
                groups.append([])
                whats.append(f"{node} (rewritten by XLA)")
                xla_names.append(None)
                keys.append(-1.0 + len(groups) * 1e-9)
            decisions.append(Decision("fuse", node, f"xla-gpu: XLA rewrote it beyond "
                                      f"recognition (no instruction names it); placed in "
                                      f"{where}"))
        owner[node] = choice
        groups[choice].append(node)
    rewritten = len(free)
    if rewritten:
        decisions.append(Decision("fuse", f"{rewritten} cheap nodes", "xla-gpu: XLA left no "
                                  "instruction named after them; each kernel that reads one "
                                  "recomputes it"))

    specs: list[KernelSpec] = []
    # XLA's duplicates of a cheap node stay recomputations where the kernel's key allows (its
    # operands are written by then); elsewhere the kernel reads the owner's copy.
    duplicates: dict[int, list[str]] = {}
    for node, indices in homes.items():
        if node in owner and is_duplicable(graph.nodes[node]):
            for index in indices:
                if index != owner[node] and keys[index] >= lowest(node):
                    duplicates.setdefault(index, []).append(node)
    for index, members in enumerate(groups):
        specs += _specs_of(graph, members, duplicates.get(index, []), position, whats[index],
                           xla_names[index], decisions)
    _add_needed_recomputation(graph, specs, owner, position)
    try:
        return build_plan(graph, specs, STRATEGY, model, decisions)
    except PlanError as error:      # a bug in the mapping: say so rather than fail the run
        raise XlaGpuUnavailable(f"XLA's fusions did not map onto this graph's nodes as "
                                f"kernels: {error}") from error


def _specs_of(graph: Graph, members: list[str], recomputed: list[str], position: dict,
              what: str, xla_name: str | None, decisions: list[Decision]) -> list[KernelSpec]:
    """One XLA kernel as our kernels: one, or, around each library call it holds (XLA's GEMM
    fusions, a scatter with its index arithmetic), the library call alone and the fused ops
    before and after it in graph order as kernels of their own (our plans call the library
    for the op alone). Each carries XLA's name for the launch (`xla_name`)."""
    if not members:
        return []
    members = sorted(members, key=position.__getitem__)
    library = [n for n in members if node_role(graph.nodes[n]) == LIBRARY]
    if not library:
        decisions.append(Decision("fuse", ", ".join(members[:4]) + (
            f" (+{len(members) - 4})" if len(members) > 4 else ""), f"xla-gpu: {what}"))
        return [_spec(graph, members, recomputed, xla_name)]
    if len(members) > len(library):
        decisions.append(Decision("refuse", ", ".join(library), f"xla-gpu: {what} fuses "
                                  f"{len(members) - len(library)} ops with the library call; "
                                  f"here they run as kernels of their own"))
    specs, part = [], []
    for name in members:           # graph order: a part reads only earlier parts
        if name in library:
            if part:
                specs.append(_spec(graph, part, recomputed, xla_name))
                part = []
            specs.append(KernelSpec([name], "library", dominant=name, xla_name=xla_name))
        else:
            part.append(name)
    if part:
        specs.append(_spec(graph, part, recomputed, xla_name))
    return specs


def _spec(graph: Graph, nodes: list[str], recomputed: list[str],
          xla_name: str | None = None) -> KernelSpec:
    kind, dominant = part_kind(graph, tuple(nodes) + tuple(recomputed))
    return KernelSpec(list(nodes), kind, recomputed=list(recomputed), dominant=dominant,
                      xla_name=xla_name)


def _add_needed_recomputation(graph: Graph, specs: list[KernelSpec],
                              owner: dict[str, int], position: dict) -> None:
    """Every kernel recomputes the unowned cheap nodes it reads (through chains of them) and
    keeps only the recomputed nodes it reads. A library call recomputes only the views it can
    read as they are (LIBRARY_OPERAND_VIEWS); any other unowned value it reads gets a kernel of
    its own that writes it."""
    owned = set(owner)
    index = 0
    while index < len(specs):   # kernels added for a library call's operands are done in turn
        spec = specs[index]
        index += 1
        inside = set(spec.nodes)
        views_only = spec.kind == "library"
        wanted: set[str] = set()
        stack = [o for n in spec.nodes for o in graph.nodes[n].operands]
        while stack:
            name = stack.pop()
            if name in inside or name in wanted:
                continue
            node = graph.nodes[name]
            free = node_role(node) == FUSIBLE and name not in owned
            again = name in spec.recomputed and is_duplicable(node)
            if not (free or again):
                continue
            if views_only and node.op not in LIBRARY_OPERAND_VIEWS:
                if free:
                    specs.append(_spec(graph, [name], []))
                    owned.add(name)
                continue
            wanted.add(name)
            stack.extend(node.operands)
        spec.recomputed = sorted(wanted, key=position.__getitem__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
