"""Speed of light: the fastest a kernel could run on a device, from its bytes and its flops.

A kernel is a set of graph nodes computed together. Its values cross DRAM exactly twice at
best: every value it reads from outside is loaded once, every value it hands to the outside is
stored once, and everything in between stays on chip (registers or shared memory). Its time is
then bounded by the slower of moving those bytes at peak DRAM bandwidth and running its flops at
the peak of the pipe they use:

    total_us = max(dram_bytes / bandwidth, max over pipes (ops / pipe peak))

That is device work alone: what launching the kernel adds depends on how the plan is run
(a stream, a CUDA graph), and compiler/target/launch.py prices it separately.

What the bytes count:
- inputs: each distinct value read from outside the kernel, once. Parameters and constants live
  in memory, so they count as inputs even when a plan lists them among a kernel's nodes; a
  constant of one element is an immediate in the instruction stream and costs nothing.
- outputs: when the caller does not name them, every computed node used by a node outside the
  kernel or returned by the graph.
- `tuple` and `get-tuple-element` are plumbing: they move no data and are never outputs
  themselves. A graph output reached through a tuple is an output of the node the tuple holds;
  reading one element of a multi-output node from outside reads that element only.

Which pipe runs the flops (the node's computation dtype: compare's operands, otherwise the
result):
- dot and convolution with operands the tensor cores take (f16, bf16, fp8, s8/u8): the dense
  tensor-core peak of that type. f32 dots use the FP32 FMA pipe, as XLA does unless TF32 is
  allowed.
- other floating-point work up to 32 bits, f16 and bf16 included (XLA's GPU emitters compute
  them in f32): the FP32 pipe at its FMA peak (2 flops per lane per clock). Counting an add or a
  multiply as half an FMA keeps the bound optimistic, as a speed of light must be.
- f64 and c128: the FP64 pipe; integers and predicates: the INT32 pipe, one op per lane.
- transcendentals (exp, log, tanh, ...) also occupy the MUFU/XU pipe, one op per element.

A `while` node (a library kernel of its own) also does the work of its condition and body,
each priced as one kernel (its own speed of light), as often as the loop runs them: its static
trip count, or once when that depends on data (compiler/ir/loops.py). Of its state, an element
the body reads only through slices costs the slices, and one it updates in place (a scan's
stacked outputs) the update (`_windowed_state`).

`SolModel` does the per-node work once per (graph, device); `estimate` then walks only the
kernel's nodes and their operands and users, so a fusion search can price thousands of
candidate kernels per second.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable

from compiler.ir.graph import Graph
from compiler.ir.loops import loop_runs
from compiler.ir.ops import flop_count, transcendental_count
from compiler.target.devices import Device

PLUMBING_OPS = frozenset({"tuple", "get-tuple-element"})
LIBRARY_MATMUL_OPS = frozenset({"dot", "convolution"})

# What a node is, as far as memory traffic goes.
_COMPUTED = 0   # produced by the kernel that contains it
_STORED = 1     # a parameter or a constant array: read from DRAM by every kernel that uses it
_IMMEDIATE = 2  # a one-element constant: folded into the instructions, free
_PLUMBING = 3   # tuple / get-tuple-element: free, never an output itself

TRANSCENDENTAL_PIPE = "xu"


@dataclass(frozen=True)
class SolEstimate:
    dram_bytes: int
    read_bytes: int
    write_bytes: int
    flops: int
    transcendentals: int
    memory_us: float
    compute_us: float
    total_us: float            # device work: max(memory_us, compute_us)
    bound: str                 # "memory" or "compute"
    compute_pipe: str | None   # the pipe that bounds compute_us; None for a kernel with no ops

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class _Work:
    """What a kernel moves and computes, before it is turned into time."""

    read_bytes: int = 0
    write_bytes: int = 0
    ops_per_pipe: dict[str, int] = dataclasses.field(default_factory=dict)
    flops: int = 0
    transcendentals: int = 0

    def add(self, other: _Work, times: int = 1) -> None:
        self.read_bytes += times * other.read_bytes
        self.write_bytes += times * other.write_bytes
        for pipe, ops in other.ops_per_pipe.items():
            self.ops_per_pipe[pipe] = self.ops_per_pipe.get(pipe, 0) + times * ops
        self.flops += times * other.flops
        self.transcendentals += times * other.transcendentals


class SolModel:
    """Speed-of-light estimates for kernels of one graph on one device."""

    def __init__(self, graph: Graph, device: Device):
        self.graph = graph
        self.device = device
        nodes = graph.nodes
        self._role: dict[str, int] = {}
        self._operands: dict[str, tuple[str, ...]] = {}
        self._nbytes: dict[str, int] = {}
        self._flops: dict[str, int] = {}
        self._pipe: dict[str, str] = {}
        self._transcendentals: dict[str, int] = {}
        for name, node in nodes.items():
            self._role[name] = _role(node)
            self._operands[name] = tuple(dict.fromkeys(node.operands))
            self._nbytes[name] = node.shape.nbytes
            operand_shapes = [nodes[o].shape for o in node.operands]
            self._flops[name] = flop_count(node, operand_shapes)
            self._transcendentals[name] = transcendental_count(node)
            self._pipe[name] = _pipe(node, operand_shapes, device)

        # What each plumbing node passes on: the non-plumbing nodes whose values it carries.
        self._producers = {
            name: _producers(graph, name) for name, role in self._role.items()
            if role == _PLUMBING
        }
        # Who reads each node, looking through plumbing: a node reading get-tuple-element(r)
        # or a tuple holding r reads r.
        consumers: dict[str, set[str]] = {name: set() for name in nodes}
        for name, operands in self._operands.items():
            if self._role[name] == _PLUMBING:
                continue
            for operand in operands:
                for producer in self._producers.get(operand, (operand,)):
                    consumers[producer].add(name)
        self._consumers = {name: tuple(users) for name, users in consumers.items()}
        self._graph_outputs = frozenset(
            producer for name in graph.output_names() for producer in _producers(graph, name)
        )
        self._peak_per_s = {
            "fp32": device.peak_fp32_flops,
            "fp64": device.peak_fp64_flops,
            "int32": device.peak_int32_ops,
            TRANSCENDENTAL_PIPE: device.peak_transcendentals_per_s,
        }
        # The work loops do in their computations (module docstring), by loop node.
        self._loop_work = {name: self._loop(node) for name, node in nodes.items()
                           if node.op == "while"}
        pipes = set(self._pipe.values()).union(
            *(work.ops_per_pipe for work in self._loop_work.values()))
        for pipe in pipes:
            if pipe.startswith("tensor-"):
                self._peak_per_s[pipe] = device.peak_tensor_flops(pipe.removeprefix("tensor-"))

    # -- estimates ----------------------------------------------------------------------------

    def estimate(self, nodes: Iterable[str], outputs: Iterable[str] | None = None) -> SolEstimate:
        """The speed of light of one kernel computing `nodes` (node names).

        `outputs` names the values the kernel stores; by default, every computed node that a
        node outside the kernel reads or that the graph returns.
        """
        kernel = nodes if isinstance(nodes, (set, frozenset)) else frozenset(nodes)
        unknown = kernel.difference(self._role)
        if unknown:
            raise ValueError(f"nodes not in graph '{self.graph.name}': {sorted(unknown)}")

        work = self._work(kernel, outputs)
        compute_s, compute_pipe = 0.0, None
        for pipe, ops in work.ops_per_pipe.items():
            seconds = ops / self._peak_per_s[pipe]
            if seconds > compute_s:
                compute_s, compute_pipe = seconds, pipe

        device = self.device
        dram_bytes = work.read_bytes + work.write_bytes
        memory_us = dram_bytes / device.dram_bytes_per_s * 1e6
        compute_us = compute_s * 1e6
        return SolEstimate(
            dram_bytes=dram_bytes,
            read_bytes=work.read_bytes,
            write_bytes=work.write_bytes,
            flops=work.flops,
            transcendentals=work.transcendentals,
            memory_us=memory_us,
            compute_us=compute_us,
            total_us=max(memory_us, compute_us),
            bound="compute" if compute_us > memory_us else "memory",
            compute_pipe=compute_pipe,
        )

    def _work(self, kernel: frozenset, outputs: Iterable[str] | None) -> _Work:
        role = self._role
        inputs: set[str] = set()
        computed = [name for name in kernel if role[name] == _COMPUTED]
        for name in computed:
            for operand in self._operands[name]:
                operand_role = role[operand]
                if operand_role == _COMPUTED:
                    if operand not in kernel:
                        inputs.add(operand)
                elif operand_role == _STORED:
                    inputs.add(operand)
                elif operand_role == _PLUMBING:
                    self._add_plumbed_input(operand, kernel, inputs)
        work = _Work(read_bytes=sum(self._nbytes[name] for name in inputs))

        if outputs is None:
            written = [name for name in computed if self._is_output(name, kernel)]
        else:
            written = list(dict.fromkeys(outputs))
            strays = [name for name in written if name not in kernel]
            if strays:
                raise ValueError(f"outputs not among the kernel's nodes: {strays}")
        work.write_bytes = sum(self._nbytes[name] for name in written)

        transcendentals = 0
        for name in computed:
            node_flops = self._flops[name]
            if node_flops:
                work.flops += node_flops
                pipe = self._pipe[name]
                work.ops_per_pipe[pipe] = work.ops_per_pipe.get(pipe, 0) + node_flops
            transcendentals += self._transcendentals[name]
            if name in self._loop_work:
                work.add(self._loop_work[name])
        if transcendentals:
            work.add(_Work(ops_per_pipe={TRANSCENDENTAL_PIPE: transcendentals},
                           transcendentals=transcendentals))
        return work

    def _loop(self, node) -> _Work:
        """A `while` node's condition and body, each one kernel, as often as the loop runs
        them (compiler/ir/loops.py)."""
        work = _Work()
        for computation, times in loop_runs(self.graph, node):
            # Kept with the computation: loops that share a body (nested ones included) price
            # it once, not once per path to it.
            known = computation.analysis_cache("target.sol.whole")
            if self.device.name not in known:
                inner = SolModel(computation, self.device)
                whole = inner._work(frozenset(computation.nodes), None)
                unread, unwritten = _windowed_state(computation)
                whole.read_bytes = max(0, whole.read_bytes - unread)
                whole.write_bytes = max(0, whole.write_bytes - unwritten)
                known[self.device.name] = whole
            work.add(known[self.device.name], times)
        return work

    def _add_plumbed_input(self, name: str, kernel, inputs: set[str]) -> None:
        """Record what reading plumbing node `name` loads: the carried values not made here."""
        # An element picked out of a multi-output value: load that element only.
        is_element = self.graph.nodes[name].op == "get-tuple-element"
        for producer in self._producers[name]:
            producer_role = self._role[producer]
            if producer_role == _IMMEDIATE:
                continue
            if producer_role == _COMPUTED and producer in kernel:
                continue
            inputs.add(name if is_element else producer)

    def _is_output(self, name: str, kernel) -> bool:
        if name in self._graph_outputs:
            return True
        return any(user not in kernel for user in self._consumers[name])


def _windowed_state(body: Graph) -> tuple[int, int]:
    """(bytes not read, bytes not written) of one run of a loop computation, against pricing
    it as a kernel that reads and writes its state whole. A `lax.scan` carries its stacked
    inputs and outputs in the loop state: an iteration reads one slice of the inputs
    (dynamic-slice) and writes one slice of the outputs (dynamic-update-slice of the carried
    buffer, passed on as the same state element), which XLA does in place. Priced whole, a scan
    of T steps would move T times its buffers (T^2 traffic); so a state element read only
    through slices costs the slices, and one updated in place costs the update."""
    if len(body.parameters) != 1 or body.root_node.op != "tuple":
        return 0, 0
    state, root, nodes = body.parameters[0], body.root_node, body.nodes
    readers: dict[str, list[str]] = {name: [] for name in nodes}
    for name, node in nodes.items():
        for operand in dict.fromkeys(node.operands):
            readers[operand].append(name)
    unread = unwritten = 0
    for name, node in nodes.items():
        if node.op != "get-tuple-element" or node.operands[0] != state:
            continue
        # Passed on unchanged to the same element: plumbing, no traffic.
        index = node.attrs["index"]
        users = [nodes[user] for user in readers[name]
                 if not (user == root.name and root.operands[index] == name)]
        if users and all(user.op in ("dynamic-slice", "slice") and user.operands[0] == name
                         for user in users):
            unread += max(0, node.shape.nbytes - sum(user.shape.nbytes for user in users))
        elif len(users) == 1 and users[0].op == "dynamic-update-slice" \
                and users[0].operands[0] == name and readers[users[0].name] == [root.name] \
                and root.operands[index] == users[0].name:
            update = nodes[users[0].operands[1]].shape.nbytes
            unread += node.shape.nbytes
            unwritten += max(0, users[0].shape.nbytes - update)
    return unread, unwritten


def _role(node) -> int:
    if node.op in PLUMBING_OPS:
        return _PLUMBING
    if node.op == "constant" and _elements(node) == 1:
        return _IMMEDIATE
    if node.op in ("parameter", "constant"):
        return _STORED
    return _COMPUTED


def _pipe(node, operand_shapes, device: Device) -> str:
    """The pipe that runs the node's flops (module docstring: which pipe runs the flops)."""
    if node.op in LIBRARY_MATMUL_OPS:
        dtype = operand_shapes[0].dtype
        if device.peak_tensor_flops(dtype.name) is not None:
            return f"tensor-{dtype.name}"
    elif node.op == "compare":
        dtype = operand_shapes[0].dtype
    else:
        leaves = node.shape.leaves()
        dtype = leaves[0].dtype if leaves else None
    if dtype is None or not (dtype.is_float or dtype.kind == "complex"):
        return "int32"
    return "fp64" if dtype.name in ("f64", "c128") else "fp32"


def _elements(node) -> int:
    return sum(leaf.size for leaf in node.shape.leaves())


def _producers(graph: Graph, name: str, indices: tuple[int, ...] = ()) -> tuple[str, ...]:
    """The non-plumbing nodes whose values node `name` carries (itself if not plumbing).

    `indices` are tuple indices still to apply, outermost first: get-tuple-element pushes its
    index, a tuple node pops one to pick its operand.
    """
    node = graph.nodes[name]
    if node.op == "get-tuple-element":
        return _producers(graph, node.operands[0], (node.attrs["index"],) + indices)
    if node.op == "tuple":
        if indices:
            return _producers(graph, node.operands[indices[0]], indices[1:])
        return tuple(p for operand in node.operands for p in _producers(graph, operand))
    return (name,)
