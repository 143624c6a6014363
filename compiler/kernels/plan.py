"""Fusion plans: a graph cut into GPU kernels, with the reason for every decision.

Every strategy returns a `FusionPlan`. A kernel *owns* the nodes whose values it computes and,
when other kernels need them, writes to memory; it may also *recompute* cheap nodes owned
elsewhere (or by no kernel at all) instead of reading them, as XLA duplicates a broadcast into
each consumer fusion. Leaves (parameters, constants) and plumbing (tuple, get-tuple-element)
belong to no kernel.

`check_plan` states the invariants every plan must satisfy, on every input:
- each kernel-forming node is owned by at most one kernel; a node owned by none is cheap, not a
  graph output, and recomputed by every kernel that reads it;
- only cheap (duplicable) nodes are recomputed, library nodes sit alone in a library kernel;
- a generated kernel computes at most MAX_KERNEL_NODES nodes (XLA:GPU's own plan aside);
- the kernel graph is acyclic and `plan.kernels` is in a topological order of it;
- a kernel's outputs are exactly its owned values read outside it or returned by the graph,
  and its inputs exactly the values its nodes read from outside it.
`execute_plan` runs a plan kernel by kernel with the reference interpreter, passing between
kernels only the values the plan says are written; its results must equal the graph's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from compiler.ir.graph import Graph, Node
from compiler.ir.interpreter import evaluate_all
from compiler.ir.shapes import TupleShape
from compiler.kernels.grouping import (FUSIBLE, LEAF, LIBRARY, PLUMBING, graph_output_sources,
                                       is_duplicable, node_role, plumbing_sources, value_readers)
from compiler.target.launch import DEFAULT_RUNTIME, RUNTIMES, terms_for
from compiler.target.sol import SolEstimate, SolModel

# Kernel kinds (DESIGN.md): what schedule the kernel's code will use.
KINDS = ("loop", "input", "stitch-regional", "stitch-global", "horizontal", "library")

# The most operands and outputs one generated kernel takes: XLA's
# kMaxOperandsAndOutputsPerFusion (gpu_fusible.h). A kernel's parameters live in a 4 KiB
# constant bank on older GPUs, and a fusion reading hundreds of buffers (a whole optimizer
# update) compiles slowly and schedules badly.
MAX_KERNEL_PARAMETERS = 96

# The most nodes one generated kernel computes, owned and recomputed together: a bound on the
# size of its CUDA source (about a statement per node, more in a phased kernel), which nvcc's
# time grows with faster than linearly. One kernel of N chained elementwise ops cost nvcc's
# front end, beyond the 1.4-1.6 s every nvcc run spends on the headers, about 0.1-0.2 s at
# N = 500, 1.1-1.3 s at 1,000, 6-8 s at 2,000 and 20-25 s at 4,000 (CPU time, 2-core
# development machine; ptxas 0.25, 0.75, 2.2 and 3.5 s for a chain of math functions:
# benchmarks/kernel_size.py, benchmarks/README.md), so one fused kernel of a 100,000-op chain
# never finished compiling. XLA bounds its fusions likewise, by the LLVM IR they would emit
# (GpuHloCostAnalysis::ProducerConsumerMergedTooLarge: at most kMaxIRSize = 10000 emitted
# instructions). 500 keeps a kernel's own compile under half a second; of the corpus's models
# only two stitch plans had a bigger kernel (672 and 533 nodes). Library kernels (a cuBLAS
# call) generate no code and are not bounded.
MAX_KERNEL_NODES = 500

# Plans made by someone else and shown as they are: XLA:GPU's own fusions
# (compiler/fusion/xla_gpu.py), which XLA bounds by its own measure (kMaxIRSize), not by
# MAX_KERNEL_NODES.
UNBOUNDED_STRATEGIES = ("xla-gpu",)

# A library call (cuBLAS, cuDNN) can read a reshaped operand as it is (a different leading
# dimension), so its kernel may "recompute" these views; anything else must be in memory.
LIBRARY_OPERAND_VIEWS = ("reshape", "bitcast")


@dataclass
class KernelSpec:
    """What a strategy decides for one kernel; `build_plan` derives the rest."""

    nodes: list[str]
    kind: str
    recomputed: list[str] = field(default_factory=list)
    dominant: str | None = None  # the node whose iteration space drives the kernel
    xla_name: str | None = None  # XLA:GPU's launch it is (a part of), in xla-gpu plans


@dataclass
class Kernel:
    name: str
    kind: str
    nodes: tuple[str, ...]          # owned, in graph order
    recomputed: tuple[str, ...]     # cheap nodes owned elsewhere (or nowhere), computed here too
    inputs: tuple[str, ...]         # values read from memory, in order of first use
    outputs: tuple[str, ...]        # owned values written to memory
    dominant: str | None
    sol: SolEstimate
    # compiler.cost.projected.Breakdown, once projected: the pricer sets it, and the kernel's
    # JSON entry takes its fields from it (`Breakdown.kernel_fields`).
    projected: object = None
    schedule: str | None = None     # the schedule of the CodeGen plan `projected` is for
    xla_name: str | None = None     # XLA:GPU's launch it is (a part of), in xla-gpu plans

    @property
    def computed(self) -> tuple[str, ...]:
        return self.nodes + self.recomputed

    def to_dict(self, device: str, runtime: str = DEFAULT_RUNTIME) -> dict:
        """The kernel's JSON entry; its launch term is that of `runtime` on `device`."""
        return {
            "name": self.name,
            "kind": self.kind,
            "nodes": list(self.nodes),
            "recomputed": list(self.recomputed),
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "dominant": self.dominant,
            "xla_name": self.xla_name,
            "dram_bytes": self.sol.dram_bytes,
            "sol_us": self.sol.total_us,
            "sol": self.sol.to_dict(),
            # Filled by later stages (codegen, build, projected model, GPU runner): null until
            # a stage has produced them, never made up.
            "proj_us": None, "device_us": None, "launch_us": None, "launch": None,
            "measured_us": None, "limiter": None, "device_limiter": None, "occupancy": None,
            "waves": None, "block_size": None, "grid_size": None, "registers": None,
            "shared_bytes": None, "learned_us": None, "learned_device_us": None,
            "learned_skipped": None,
            "proj_over_sol": None, "outlier_reason": None, "schedule": None,
            **(self.projected.kernel_fields(self.sol, self.schedule, device=device,
                                            runtime=runtime)
               if self.projected is not None else {}),
        }


@dataclass(frozen=True)
class Decision:
    """One fuse or refusal and why: the rule or cost that decided it."""

    action: str                      # "fuse" | "refuse"
    subject: str                     # e.g. "exponential.3 -> reduce.5", or two kernels
    reason: str                      # "xla: loop fusion", "would form cycle", "gain -0.3 µs"
    gain_us: float | None = None
    # For an edit of a whole plan (the autotuner's moves): the kernels it took away and the
    # ones it made, each as its nodes, so a measurement of both sides can price the edit.
    before: tuple[tuple[str, ...], ...] = ()
    after: tuple[tuple[str, ...], ...] = ()

    def to_dict(self) -> dict:
        out = {"action": self.action, "subject": self.subject, "reason": self.reason}
        if self.gain_us is not None:
            out["gain_us"] = round(self.gain_us, 4)
        if self.before or self.after:
            out["before"] = [list(nodes) for nodes in self.before]
            out["after"] = [list(nodes) for nodes in self.after]
        return out


@dataclass
class FusionPlan:
    strategy: str
    device: str
    kernels: list[Kernel]
    decisions: list[Decision]
    explore_ms: float = 0.0
    # The cost model whose prices decided the fusions ("projected", "sol", "learned"); None
    # for the rule-based strategies, whose rules decide.
    cost_model: str | None = None
    # Why the strategy made no plan here (xla-gpu without XLA's CUDA plugin, ...): the plan
    # then has no kernels, and its totals are no figures.
    unavailable: str | None = None
    # How the plan's kernels are launched (compiler/target/launch.py): the launch term its
    # kernels' times include, and which the cost strategy's decisions were priced under.
    runtime: str = DEFAULT_RUNTIME

    @property
    def total_sol_us(self) -> float:
        """The kernels' speeds of light: device work alone."""
        return sum(k.sol.total_us for k in self.kernels)

    @property
    def dram_bytes(self) -> int:
        return sum(k.sol.dram_bytes for k in self.kernels)

    @property
    def total_projected_us(self) -> float | None:
        """The kernels' projected times under the plan's runtime (device work and launch
        term); None unless every kernel has one (and for an unavailable plan)."""
        totals = self.projected_totals()
        return None if totals is None else totals["proj_us"]

    def projected_totals(self) -> dict | None:
        """The projected figures of the plan's total: {"device_us", "launch_us", "proj_us"}
        under its runtime and "runtimes": {runtime: {"launch_us", "proj_us"}} under every one;
        None unless every kernel has a projection (and for an unavailable plan)."""
        if self.unavailable is not None or any(k.projected is None for k in self.kernels):
            return None
        works = [k.projected.projected_us for k in self.kernels]
        device_us = sum(works)
        terms = terms_for(self.device)
        runtimes = {}
        for name in RUNTIMES:
            launch = terms.launch(name)
            launch_us = sum(launch.us(work) for work in works)
            runtimes[name] = {"launch_us": round(launch_us, 4),
                              "proj_us": round(device_us + launch_us, 4)}
        return {"device_us": round(device_us, 4), **runtimes[self.runtime],
                "runtimes": runtimes}

    def owner(self) -> dict[str, str]:
        """Node name -> name of the kernel that owns it."""
        return {node: k.name for k in self.kernels for node in k.nodes}

    def kind_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for k in self.kernels:
            counts[k.kind] = counts.get(k.kind, 0) + 1
        return counts

    def to_dict(self) -> dict:
        return {
            "strategy": self.strategy,
            "device": self.device,
            "runtime": self.runtime,
            "explore_ms": round(self.explore_ms, 3),
            "cost_model": self.cost_model,
            "kernel_count": len(self.kernels),
            "kinds": self.kind_counts(),
            # The learned fields stay null until a learned model predicts the plan
            # (compiler/cost/learned/predict.py).
            "total": {"sol_us": None if self.unavailable else self.total_sol_us,
                      "proj_us": None, "device_us": None, "launch_us": None,
                      "runtimes": None,
                      **(self.projected_totals() or {}),
                      "measured_us": None,
                      "dram_bytes": None if self.unavailable else self.dram_bytes,
                      "learned_us": None, "learned_kernels": None,
                      "learned_outside": None},
            "learned_model": None,
            "kernels": [k.to_dict(self.device, self.runtime) for k in self.kernels],
            "decisions": [d.to_dict() for d in self.decisions],
            "unavailable": self.unavailable,
        }


def too_many_nodes(count: int) -> str | None:
    """Why a generated kernel computing `count` nodes is not a legal kernel, or None."""
    if count <= MAX_KERNEL_NODES:
        return None
    return (f"{count} ops > {MAX_KERNEL_NODES} in one kernel (nvcc's time grows faster than "
            "the kernel's size)")


class PlanError(AssertionError):
    """A plan that breaks an invariant: a bug in the strategy that made it."""


class StrategyUnavailable(RuntimeError):
    """A strategy cannot make its plan on this machine (xla-gpu without XLA's CUDA plugin);
    the message says why. `explore` gives a plan with no kernels and this `unavailable`."""


# -- building -------------------------------------------------------------------------------------


def build_plan(graph: Graph, specs: Sequence[KernelSpec], strategy: str, model: SolModel,
               decisions: Sequence[Decision] = ()) -> FusionPlan:
    """The plan for these kernels: inputs, outputs, SOL estimate, kernels in topological order.

    Raises PlanError when the specs break an invariant (overlap, a cycle, ...).
    """
    position = {name: i for i, name in enumerate(graph.nodes)}
    owner: dict[str, int] = {}
    for index, spec in enumerate(specs):
        for name in spec.nodes:
            if name in owner:
                raise PlanError(f"{strategy}: node '{name}' is owned by two kernels")
            owner[name] = index
    computed = [set(spec.nodes) | set(spec.recomputed) for spec in specs]
    written = written_values(graph, computed)

    kernels = [make_kernel(graph, spec, [n for n in spec.nodes if n in written], model,
                           position) for spec in specs]
    ordered = order_kernels(graph, kernels, owner)
    for i, kernel in enumerate(ordered):
        kernel.name = f"{kernel.kind}.{i}"
    return FusionPlan(strategy=strategy, device=model.device.name, kernels=ordered,
                      decisions=list(decisions))


def make_kernel(graph: Graph, spec: KernelSpec, outputs, model: SolModel,
                position: dict[str, int] | None = None, name: str = "",
                sol: SolEstimate | None = None) -> Kernel:
    """The kernel a spec describes, writing `outputs`: its nodes in graph order, its inputs
    (the values its nodes read from outside it) in order of first use, its SOL estimate
    (`sol` when the caller has it). `position`: node name -> graph position, when the caller
    has it."""
    if position is None:
        position = graph.positions()
    nodes = sorted(spec.nodes, key=position.__getitem__)
    recomputed = sorted(spec.recomputed, key=position.__getitem__)
    inside = set(nodes) | set(recomputed)
    inputs: dict[str, None] = {}
    for node in sorted(inside, key=position.__getitem__):
        for operand in graph.nodes[node].operands:
            if operand not in inside:
                inputs[operand] = None
    outputs = sorted(outputs, key=position.__getitem__)
    return Kernel(name=name, kind=spec.kind, nodes=tuple(nodes), recomputed=tuple(recomputed),
                  inputs=tuple(inputs), outputs=tuple(outputs), dominant=spec.dominant,
                  sol=sol or model.estimate(inside, outputs), xla_name=spec.xla_name)


def written_values(graph: Graph, computed: Sequence[set[str]]) -> set[str]:
    """The values some kernel must find in memory: graph outputs, and values read by a node
    that a kernel computes without computing the value itself (when a node is computed in
    several kernels, each of them needs its operands)."""
    computed_in: dict[str, list[int]] = {}
    for index, names in enumerate(computed):
        for name in names:
            computed_in.setdefault(name, []).append(index)
    written = set(graph_output_sources(graph))
    for value, readers in value_readers(graph).items():
        if any(value not in computed[k] for reader in readers for k in computed_in.get(reader, ())):
            written.add(value)
    return written


class KernelCycle(PlanError):
    """Kernels that read each other's values in a circle. `cycle`: indices into the kernels,
    each reading from the next (its producer); `producers[i]`: kernel i's producers, each
    with the first value it reads from it."""

    def __init__(self, message: str, cycle: list[int], producers: list[dict[int, str]]):
        super().__init__(message)
        self.cycle, self.producers = cycle, producers


def order_kernels(graph: Graph, kernels: list[Kernel], owner: dict[str, int],
                  rank=None) -> list[Kernel]:
    """Kernels ordered so producers come first; KernelCycle on a cycle between them.
    `owner`: node -> index of the kernel owning it. Independent kernels keep the order of
    `rank(index)` (by default their index)."""
    producers: list[dict[int, str]] = []
    memo: dict = {}
    for index, kernel in enumerate(kernels):
        deps: dict[int, str] = {}
        for value in kernel.inputs:
            for source in plumbing_sources(graph, value, memo):
                if source in owner and owner[source] != index:
                    deps.setdefault(owner[source], value)
        producers.append(deps)
    rank = rank or (lambda index: index)
    order, state = [], [0] * len(kernels)  # 0 new, 1 on stack, 2 done
    for start in sorted(range(len(kernels)), key=rank):
        if state[start]:
            continue
        state[start] = 1
        stack = [(start, iter(sorted(producers[start], key=rank)))]
        while stack:
            index, deps = stack[-1]
            dep = next(deps, None)
            if dep is None:
                stack.pop()
                state[index] = 2
                order.append(kernels[index])
            elif state[dep] == 1:
                on_stack = [i for i, _ in stack]
                raise KernelCycle(f"kernels form a cycle through nodes {kernels[dep].nodes[:3]} "
                                  f"and {kernels[index].nodes[:3]}",
                                  on_stack[on_stack.index(dep):], producers)
            elif state[dep] == 0:
                state[dep] = 1
                stack.append((dep, iter(sorted(producers[dep], key=rank))))
    return order


# -- checking -------------------------------------------------------------------------------------


def check_plan(graph: Graph, plan: FusionPlan) -> None:
    """Raise PlanError naming the first broken invariant (see the module docstring)."""
    where = f"{plan.strategy} plan of {graph.name}"
    owner = {}
    for kernel in plan.kernels:
        if kernel.kind not in KINDS:
            raise PlanError(f"{where}: kernel {kernel.name} has unknown kind '{kernel.kind}'")
        for name in kernel.nodes:
            if name in owner:
                raise PlanError(f"{where}: '{name}' owned by {owner[name]} and {kernel.name}")
            owner[name] = kernel.name
        for name in kernel.computed:
            role = node_role(graph.nodes[name])
            if role in (LEAF, PLUMBING):
                raise PlanError(f"{where}: {role} node '{name}' inside kernel {kernel.name}")
            if role == LIBRARY and (kernel.kind != "library" or len(kernel.nodes) != 1):
                raise PlanError(f"{where}: library node '{name}' shares kernel {kernel.name}")
        if kernel.kind == "library" and any(graph.nodes[n].op not in LIBRARY_OPERAND_VIEWS
                                            for n in kernel.recomputed):
            raise PlanError(f"{where}: library kernel {kernel.name} recomputes more than "
                            f"reshapes: {kernel.recomputed}")
        if kernel.kind != "library" and plan.strategy not in UNBOUNDED_STRATEGIES:
            too_large = too_many_nodes(len(kernel.computed))
            if too_large:
                raise PlanError(f"{where}: kernel {kernel.name} computes {too_large}")
        for name in kernel.recomputed:
            if not is_duplicable(graph.nodes[name]):
                raise PlanError(f"{where}: '{name}' ({graph.nodes[name].op}) is recomputed in "
                                f"{kernel.name} but is not cheap enough to duplicate")

    readers = value_readers(graph)
    graph_outputs = graph_output_sources(graph)
    written = written_values(graph, [set(k.computed) for k in plan.kernels])
    memo: dict = {}
    computed_in = {}
    for kernel in plan.kernels:
        for name in kernel.computed:
            computed_in.setdefault(name, set()).add(kernel.name)
    for node in graph:
        if node_role(node) not in (FUSIBLE, LIBRARY) or node.name in owner:
            continue
        if node.name in graph_outputs:
            raise PlanError(f"{where}: graph output '{node.name}' is owned by no kernel")
        for reader in readers[node.name]:
            if not computed_in.get(reader, set()) <= computed_in.get(node.name, set()):
                raise PlanError(f"{where}: '{node.name}' is owned by no kernel but "
                                f"'{reader}' reads it without recomputing it")
        if node.name not in computed_in:
            raise PlanError(f"{where}: '{node.name}' is computed by no kernel")

    done: set[str] = set()
    for kernel in plan.kernels:
        inside = set(kernel.computed)
        expected_inputs = []
        for name in kernel.computed:
            for operand in graph.nodes[name].operands:
                if operand not in inside and operand not in expected_inputs:
                    expected_inputs.append(operand)
        if set(kernel.inputs) != set(expected_inputs):
            raise PlanError(f"{where}: kernel {kernel.name} inputs {sorted(kernel.inputs)} "
                            f"!= values it reads from outside {sorted(expected_inputs)}")
        for value in kernel.inputs:
            for source in plumbing_sources(graph, value, memo):
                if source in owner and owner[source] not in done:
                    raise PlanError(f"{where}: kernel {kernel.name} reads '{source}' before its "
                                    f"kernel {owner[source]} runs (cycle or bad order)")
        expected_outputs = {name for name in kernel.nodes if name in written}
        if set(kernel.outputs) != expected_outputs:
            raise PlanError(f"{where}: kernel {kernel.name} outputs {sorted(kernel.outputs)} "
                            f"!= its values used outside or returned {sorted(expected_outputs)}")
        done.add(kernel.name)


# -- executing ------------------------------------------------------------------------------------


def execute_plan(graph: Graph, plan: FusionPlan, inputs: Sequence[Any]) -> list[Any]:
    """The graph's outputs, computed kernel by kernel with the reference interpreter.

    Only parameters, constants and the values kernels write (their outputs) cross kernel
    boundaries, so a plan that forgets to write a value another kernel needs fails here.
    """

    memory: dict[str, Any] = {}
    for name, value in zip(graph.parameters, inputs):
        memory[name] = value

    def load(name: str) -> Any:
        """A value from memory: written by a kernel, a parameter, or a leaf/plumbing over them."""
        if name in memory:
            return memory[name]
        node = graph.nodes[name]
        role = node_role(node)
        if role in (LEAF, PLUMBING):
            sub = _single_node_graph(graph, node)
            memory[name] = evaluate_all(sub, [load(o) for o in sub.parameters])[name]
        else:
            raise PlanError(f"{plan.strategy}: '{name}' is read but no kernel wrote it")
        return memory[name]

    for kernel in plan.kernels:
        sub = kernel_graph(graph, kernel)
        values = evaluate_all(sub, [load(name) for name in kernel.inputs])
        for name in kernel.outputs:
            memory[name] = values[name]
    return _flatten([load(name) for name in graph.output_names()])


def _flatten(values: list) -> list:
    """Tuple-valued outputs (a variadic reduce the graph returns) as their elements, in order,
    as `evaluate` returns them."""
    flat = []
    for value in values:
        flat.extend(_flatten(list(value)) if isinstance(value, tuple) else [value])
    return flat


def kernel_graph(graph: Graph, kernel: Kernel) -> Graph:
    """The kernel as a stand-alone graph: its inputs become parameters."""
    sub = Graph(name=kernel.name, computations=graph.computations, source=graph.source)
    for number, name in enumerate(kernel.inputs):
        source = graph.nodes[name]
        sub.add(Node(name=name, op="parameter", operands=(), shape=source.shape,
                     attrs={"parameter_number": number}))
        sub.parameters.append(name)
    computed = set(kernel.computed)
    for name in graph.nodes:
        if name in computed:
            sub.add(graph.nodes[name])
    root_name = sub.fresh_name("kernel.outputs")
    outputs = kernel.outputs or kernel.computed[-1:]
    sub.add(Node(name=root_name, op="tuple", operands=tuple(outputs),
                 shape=TupleShape(tuple(graph.nodes[o].shape for o in outputs))))
    sub.root = root_name
    return sub


def _single_node_graph(graph: Graph, node: Node) -> Graph:
    """`node` alone, its distinct operands as parameters."""
    sub = Graph(name=node.name, computations=graph.computations)
    for operand in dict.fromkeys(node.operands):
        sub.add(Node(name=operand, op="parameter", operands=(), shape=graph.nodes[operand].shape,
                     attrs={"parameter_number": len(sub.parameters)}))
        sub.parameters.append(operand)
    sub.add(node)
    sub.root = node.name
    return sub
