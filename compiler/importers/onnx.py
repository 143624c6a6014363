"""ONNX importer: a binary ModelProto (opset 13 or newer) into the Graph IR.

Every ONNX node becomes one or more primitive HLO-style nodes: the conventions of
`compiler/ir/graph.py`, equal operand shapes for elementwise ops (NumPy-style broadcasting is
spelled out as `reshape` + `broadcast`), composite ops (Softmax, LayerNormalization, Gelu,
BatchNormalization, Gemm's alpha/beta, ...) decomposed into reductions with named reducers,
broadcasts and elementwise ops. MatMul, Gemm and Conv become the library calls `dot` and
`convolution`, nodes of the same graph. Each node remembers where it came from: `loc` names
the ONNX node (`model.onnx: node '/fc/Gemm' (Gemm)`) and `extra` holds `onnx_node` and `onnx_op`
for the UI; the node computing an ONNX output is named after that output.

What becomes what:
- graph inputs become parameters named after the input, in `graph.input` order;
- initializers whose data is embedded in the file become `constant` nodes (created when first
  used, so unused weights cost nothing), also when an old exporter lists them as graph inputs;
- initializers without data (stored outside the file, which an upload never carries) become
  parameters after the graph inputs, in initializer order, and the graph's notes say so; one
  whose data is said to lie outside the model's folder ("../../etc/passwd") is refused;
- values the importer can compute from constants alone (shape arithmetic: Shape, Gather,
  Concat, Unsqueeze, ... up to `_FOLD_LIMIT` elements) are folded with ONNX's reference
  evaluator and only appear in the graph if a computed value reads them.

Op types (ai.onnx domain, opset 13 and newer):
- elementwise: Abs Neg Sqrt Reciprocal Exp Log Tanh Sigmoid Erf Sin Cos Tan Floor Ceil Round
  Sign Not, Add Sub Mul Div Pow Max Min Sum Mean And Or Xor BitwiseAnd/Or/Xor, Equal Less
  LessOrEqual Greater GreaterOrEqual, Where, Clip, Cast CastLike, Identity, Dropout (inference);
- activations, decomposed: Relu LeakyRelu PRelu Elu Selu HardSigmoid HardSwish Softplus Gelu
  (erf and tanh forms);
- normalisation, decomposed: Softmax LogSoftmax LayerNormalization (also its Mean/InvStdDev
  outputs) BatchNormalization (inference form);
- reductions: ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceSumSquare ReduceL1
  ReduceL2 (axes as attribute or input, keepdims, noop_with_empty_axes), GlobalAveragePool
  GlobalMaxPool, MaxPool AveragePool (reduce-window; ceil_mode=0);
- movement: Reshape Flatten Squeeze Unsqueeze Transpose Concat Split Slice Gather Expand Tile
  Pad (constant mode) Trilu;
- library calls: MatMul Gemm -> dot, Conv -> convolution;
- import-time values: Constant Range (constant inputs only), Shape Size ConstantOfShape, and
  any deterministic op whose inputs are all constants (folded, up to `_FOLD_LIMIT` elements).
Rejected with an UnsupportedError naming the node: any other op type, any other domain (after
model-local functions are inlined), training-mode Dropout and BatchNormalization, outputs the
lowering cannot produce (MaxPool's Indices) when something reads them, and static inputs
(Reshape's shape, Slice's starts, ...) computed at run time.

A model with more nodes than `Limits.max_nodes` once its local functions are inlined is
refused before they are (a few kilobytes of functions that call each other twice can stand for
billions of nodes).

Shapes must be static. ONNX shape inference runs first; a symbolic graph-input dimension is an
UnsupportedError naming the input and the dimension unless the caller fixes it (`dim_values`).
The importer computes every node's shape itself and checks it against ONNX's inferred type,
so a disagreement is reported at the node instead of surfacing later as a verifier error.
Anything the importer does not handle (an op type, a domain, an attribute value) is an
UnsupportedError naming the node; a malformed model is an InputError. No traceback for either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Callable, Mapping

import numpy as np
import onnx
import onnx.inliner
import onnx.printer
import onnx.shape_inference
from google.protobuf.message import Error as ProtobufError
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import uses_external_data
from onnx.reference import ReferenceEvaluator

from compiler.errors import InputError, LimitError, UnsupportedError
from compiler.ir.builder import GraphBuilder
from compiler.ir.dtypes import DType, accumulation_dtype, dtype as ir_dtype, from_numpy
from compiler.ir.graph import Graph
from compiler.ir.shapes import ArrayShape, TupleShape
from compiler.limits import Limits, check_input_size, env_name

MIN_OPSET = 13
DEFAULT_DOMAINS = ("", "ai.onnx")

# Folded values larger than this are computed in the graph instead, so that weights
# transformed by the model (a Transpose of an initializer, say) stay visible as nodes.
_FOLD_LIMIT = 4096

_ONNX_DTYPES = {
    TensorProto.FLOAT: "f32", TensorProto.DOUBLE: "f64", TensorProto.FLOAT16: "f16",
    TensorProto.BFLOAT16: "bf16", TensorProto.BOOL: "pred",
    TensorProto.INT4: "s4", TensorProto.INT8: "s8", TensorProto.INT16: "s16",
    TensorProto.INT32: "s32", TensorProto.INT64: "s64",
    TensorProto.UINT4: "u4", TensorProto.UINT8: "u8", TensorProto.UINT16: "u16",
    TensorProto.UINT32: "u32", TensorProto.UINT64: "u64",
    TensorProto.FLOAT8E4M3FN: "f8e4m3fn", TensorProto.FLOAT8E4M3FNUZ: "f8e4m3fnuz",
    TensorProto.FLOAT8E5M2: "f8e5m2", TensorProto.FLOAT8E5M2FNUZ: "f8e5m2fnuz",
    TensorProto.FLOAT8E8M0: "f8e8m0fnu", TensorProto.FLOAT4E2M1: "f4e2m1fn",
    TensorProto.COMPLEX64: "c64", TensorProto.COMPLEX128: "c128",
}

# Ops that only exist here as import-time values: their inputs must be constants.
_STATIC_ONLY = frozenset({"Constant", "Range"})
# Ops whose lowering does better than folding: Shape and Size need only static shapes,
# ConstantOfShape stays a lazy splat, Identity and Dropout pass their input on unchanged (an
# initializer stays that initializer instead of becoming a copy).
_NOT_FOLDED = frozenset({"Shape", "Size", "ConstantOfShape", "Identity", "Dropout"})
# Never folded: a different value on every run.
_RANDOM = frozenset({
    "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
    "Bernoulli",
})


def import_onnx(data: bytes, filename: str, limits: Limits | None = None, *,
                dim_values: Mapping[str, int] | None = None) -> Graph:
    """The Graph of the ONNX model serialised in `data` (read from `filename`, for messages).

    `dim_values` fixes symbolic input dimensions by name ({"batch": 8}) for models exported
    with dynamic axes; any symbolic dimension left is an UnsupportedError.
    """
    limits = limits or Limits()
    check_input_size(len(data), filename, limits)
    model = _parse(data, filename)
    opset = _default_opset(model, filename)
    _check_node_count(model, filename, limits)
    if model.functions:
        model = _inline_functions(model, filename)
    if dim_values:
        _fix_input_dims(model, dim_values)
    model = _infer_shapes(model, filename)
    return _Importer(model, opset, filename, limits).run()


def printable_text(data: bytes, filename: str) -> tuple[str, dict[int, list[str]]]:
    """The model in ONNX's printable text form (`onnx.printer`, the syntax `onnx.parser` reads),
    its model-local functions inlined as the importer inlines them and its weights' values and
    `value_info` left out (they make one line of megabytes), and for each line that prints a
    node of the main graph, that node's outputs. The graph node computing an ONNX output is
    named after it, so a line's outputs name the graph nodes the line became."""
    model = _parse(data, filename)
    if model.functions:
        model = _inline_functions(model, filename)
    shown = onnx.ModelProto()
    shown.CopyFrom(model)
    del shown.graph.initializer[:]
    del shown.graph.value_info[:]
    lines = onnx.printer.to_text(shown).splitlines()
    outputs: dict[int, list[str]] = {}
    index = 0
    for node in shown.graph.node:
        first = onnx.printer.to_text(node).splitlines()[0].strip()
        while index < len(lines) and lines[index].strip() != first:
            index += 1
        if index == len(lines):
            break
        outputs[index + 1] = [name for name in node.output if name]
        index += 1
    return "\n".join(lines), outputs


# -- model-level steps -------------------------------------------------------------------------


def _parse(data: bytes, filename: str) -> onnx.ModelProto:
    try:
        model = onnx.load_model_from_string(data)
    except (ProtobufError, ValueError) as error:
        raise InputError(f"not a valid ONNX model: the protobuf data is corrupt or truncated "
                         f"({error})", filename) from None
    if not model.HasField("graph"):
        raise InputError("not a valid ONNX model: it has no graph", filename)
    return model


def _default_opset(model: onnx.ModelProto, filename: str) -> int:
    versions = {entry.domain: entry.version for entry in model.opset_import}
    version = versions.get("", versions.get("ai.onnx"))
    if version is None:
        raise InputError("not a valid ONNX model: it imports no version of the default "
                         "(ai.onnx) operator set", filename)
    if version < MIN_OPSET:
        raise UnsupportedError(f"ONNX opset {version} is not supported (opset {MIN_OPSET} or "
                               f"newer is); re-export with opset_version={MIN_OPSET} or later",
                               filename)
    return version


def _check_node_count(model: onnx.ModelProto, filename: str, limits: Limits) -> None:
    """LimitError when the graph, its model-local functions inlined, has more nodes than the
    limit; counted before anything else reads them. Inlining multiplies: a function that calls
    the one before it twice, 30 deep, is a file of a few kilobytes and 2^30 nodes once inlined.
    InputError for a function that calls itself, which no inlining ends."""
    functions = {(f.domain, f.name): f for f in model.functions}
    sizes: dict[tuple[str, str], int] = {}   # nodes of a function, its calls inlined
    for key in functions:
        # Depth-first without recursion (a chain of functions may be long): a function's size
        # is known once the sizes of all the functions it calls are.
        pending, entered = [key], set()
        while pending:
            current = pending[-1]
            if current in sizes:
                pending.pop()
                continue
            callees = [c for c in _called(functions[current].node, functions) if c not in sizes]
            if current in entered:
                if callees:
                    raise InputError(f"local function '{current[1]}' calls "
                                     f"'{callees[0][1]}', which calls it back: model-local "
                                     "functions must not be recursive", filename)
                sizes[current] = _inlined_size(functions[current].node, functions, sizes)
                pending.pop()
            else:
                entered.add(current)
                pending.extend(c for c in callees if c not in entered)
    # Graph inputs become parameters, nodes of the graph as well.
    total = _inlined_size(model.graph.node, functions, sizes) + len(model.graph.input)
    if total > limits.max_nodes:
        raise LimitError(f"the model has {total} nodes and inputs with its local functions "
                         f"inlined; the limit is {limits.max_nodes} ({env_name('max_nodes')})",
                         filename)


def _subgraph_nodes(nodes) -> list:
    """`nodes` and the nodes of every graph they hold as attributes (If's branches, Loop's
    body), all levels down."""
    found, pending = [], list(nodes)
    while pending:
        node = pending.pop()
        found.append(node)
        for attribute in node.attribute:
            for graph in [attribute.g] if attribute.HasField("g") else attribute.graphs:
                pending.extend(graph.node)
    return found


def _called(nodes, functions: dict) -> list[tuple[str, str]]:
    return [(n.domain, n.op_type) for n in _subgraph_nodes(nodes)
            if (n.domain, n.op_type) in functions]


def _inlined_size(nodes, functions: dict, sizes: dict) -> int:
    return sum(sizes.get((n.domain, n.op_type), 1) if (n.domain, n.op_type) in functions
               else 1 for n in _subgraph_nodes(nodes))


def _inline_functions(model: onnx.ModelProto, filename: str) -> onnx.ModelProto:
    """Model-local functions (the dynamo exporter's torch_lib ones) replaced by their bodies."""
    try:
        return onnx.inliner.inline_local_functions(model)
    except Exception as error:  # the inliner reports malformed functions in its own types
        raise InputError(f"cannot inline the model's local functions: {error}",
                         filename) from None


def _fix_input_dims(model: onnx.ModelProto, dim_values: Mapping[str, int]) -> None:
    for graph_input in model.graph.input:
        for dim in graph_input.type.tensor_type.shape.dim:
            if dim.HasField("dim_param") and dim.dim_param in dim_values:
                dim.dim_value = int(dim_values[dim.dim_param])


def _infer_shapes(model: onnx.ModelProto, filename: str) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception as error:  # onnx raises its C++ checker's exception types
        raise InputError(f"ONNX shape inference failed: {error}", filename) from None


def _ir_type(elem_type: int, where: str) -> DType:
    name = _ONNX_DTYPES.get(elem_type)
    if name is None:
        type_name = TensorProto.DataType.Name(elem_type) if elem_type in \
            TensorProto.DataType.values() else str(elem_type)
        raise UnsupportedError(f"element type {type_name} is not supported", where)
    return ir_dtype(name)


def _check_external_location(tensor: onnx.TensorProto, where: str) -> None:
    """InputError for external data said to lie outside the model's folder. The importer never
    reads external data (the initializer becomes a parameter), but a path such as
    "../../etc/passwd" is what a hostile file names, and no exporter writes one."""
    for entry in tensor.external_data:
        if entry.key != "location":
            continue
        path = entry.value.replace("\\", "/")
        parts = PurePosixPath(path).parts
        if "\0" in path or path.startswith("/") or PureWindowsPath(entry.value).drive \
                or ".." in parts:
            raise InputError(f"external data location {entry.value!r} is outside the model's "
                             "folder; ONNX keeps external data in files beside the model",
                             where)


def _inferred_types(graph: onnx.GraphProto) -> dict[str, tuple[int, tuple[int, ...] | None]]:
    """ONNX's type of every value it could infer: (elem_type, dims, or None if not static)."""
    types = {}
    for info in [*graph.input, *graph.value_info, *graph.output]:
        tensor = info.type.tensor_type
        if info.type.WhichOneof("value") != "tensor_type" or not tensor.elem_type:
            continue
        dims = None
        if tensor.HasField("shape"):
            if all(d.HasField("dim_value") for d in tensor.shape.dim):
                dims = tuple(d.dim_value for d in tensor.shape.dim)
        types[info.name] = (tensor.elem_type, dims)
    return types


def _live_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """The nodes some graph output depends on, in file order; dead code is not imported."""
    needed = {output.name for output in graph.output}
    live = []
    for node in reversed(graph.node):
        if any(name in needed for name in node.output):
            live.append(node)
            needed.update(name for name in node.input if name)
    return live[::-1]


def _is_splat(array: np.ndarray) -> bool:
    if array.size <= 1:
        return False
    if all(stride == 0 for stride in array.strides):
        return True
    return bool((array == array.flat[0]).all())


def _attribute(attr: onnx.AttributeProto):
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


# -- values ------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Value:
    """One ONNX tensor as the importer knows it: its shape, and its IR node or its value.

    A constant value (`const`) gets its IR node only when a computed node reads it. `whole`
    keeps embedded weights whole; other constant values that repeat one element become a
    scalar constant and a broadcast.
    """

    shape: ArrayShape
    node: str | None = None
    const: np.ndarray | None = None
    name: str | None = None
    loc: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    whole: bool = False

    @property
    def dims(self) -> tuple[int, ...]:
        return self.shape.dims

    @property
    def rank(self) -> int:
        return self.shape.rank

    @property
    def dtype(self) -> DType:
        return self.shape.dtype


@dataclass(frozen=True)
class _Unavailable:
    """An output the importer cannot produce; reading it is an UnsupportedError."""

    message: str
    where: str


def _const_value(array: np.ndarray, where: str, **kwargs) -> _Value:
    try:
        dtype = from_numpy(array.dtype)
    except KeyError:
        raise UnsupportedError(f"constant of type {array.dtype} is not supported",
                               where) from None
    return _Value(ArrayShape(dtype, tuple(array.shape)), const=array, **kwargs)


# -- the importer ------------------------------------------------------------------------------


class _Importer:
    def __init__(self, model: onnx.ModelProto, opset: int, filename: str, limits: Limits):
        self.graph_proto = model.graph
        self.opset = opset
        self.filename = filename
        self.limits = limits
        # Exporters call every graph "main_graph"; the file says which model it is.
        stem = filename.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".onnx")
        name = stem or model.graph.name or "onnx"
        self.builder = GraphBuilder(name, source=filename, limits=limits)
        self.values: dict[str, _Value | _Unavailable] = {}
        self.inferred = _inferred_types(model.graph)
        self.live_nodes = _live_nodes(model.graph)
        self.used = {name for node in self.live_nodes for name in node.input}
        self.used.update(output.name for output in model.graph.output)
        # ONNX value names stay free for the nodes computing those values.
        self.reserved = set(self.used)
        self.reserved.update(name for node in model.graph.node for name in node.output)
        self.reserved.update(tensor.name for tensor in model.graph.initializer)
        self.notes: list[str] = []
        self._reducers: dict[tuple[str, DType], str] = {}

    def run(self) -> Graph:
        graph = self.graph_proto
        if not graph.output:
            raise InputError("the ONNX graph has no outputs", self.filename)
        if graph.sparse_initializer:
            raise UnsupportedError("sparse initializers are not supported "
                                   f"('{graph.sparse_initializer[0].values.name}')",
                                   self.filename)
        self._declare_inputs()
        for node in self.live_nodes:
            self._import_node(node)
        where = f"{self.filename}: graph outputs"
        outputs = [self.operand(self.lookup(output.name, where)) for output in graph.output]
        result = self.builder.finish(outputs)
        result.notes.extend(self.notes)
        return result

    # -- inputs and initializers ---------------------------------------------------------------

    def _declare_inputs(self) -> None:
        initializers = {tensor.name: tensor for tensor in self.graph_proto.initializer}
        for graph_input in self.graph_proto.input:
            if graph_input.name not in initializers:
                self._parameter(graph_input.name, self._input_shape(graph_input))
        for tensor in self.graph_proto.initializer:
            where = f"{self.filename}: initializer '{tensor.name}'"
            shape = ArrayShape(_ir_type(tensor.data_type, where), tuple(tensor.dims))
            if uses_external_data(tensor):
                _check_external_location(tensor, where)
                self._parameter(tensor.name, shape)
                self.notes.append(f"initializer '{tensor.name}' keeps its data outside the "
                                  "model file; it is a parameter of the graph")
                continue
            try:
                array = numpy_helper.to_array(tensor)
            except (ValueError, TypeError) as error:
                raise InputError(f"malformed initializer: {error}", where) from None
            self.values[tensor.name] = _Value(shape, const=array, name=tensor.name, loc=where,
                                              extra={"onnx_initializer": tensor.name},
                                              whole=True)

    def _parameter(self, name: str, shape: ArrayShape) -> None:
        node = self.builder.parameter(name, shape, loc=f"{self.filename}: input '{name}'")
        self.values[name] = _Value(shape, node=node)

    def _input_shape(self, graph_input: onnx.ValueInfoProto) -> ArrayShape:
        name = graph_input.name
        kind = graph_input.type.WhichOneof("value")
        if kind != "tensor_type":
            raise UnsupportedError(f"input '{name}' is a {kind or 'value of no type'}; only "
                                   "tensor inputs are supported", self.filename)
        tensor = graph_input.type.tensor_type
        dtype = _ir_type(tensor.elem_type, f"{self.filename}: input '{name}'")
        if not tensor.HasField("shape"):
            raise UnsupportedError(f"input '{name}' has no shape; export with static shapes",
                                   self.filename)
        dims = []
        for index, dim in enumerate(tensor.shape.dim):
            if dim.HasField("dim_value"):
                dims.append(dim.dim_value)
            elif dim.HasField("dim_param"):
                raise UnsupportedError(f"input '{name}' has symbolic dimension "
                                       f"'{dim.dim_param}'; export with static shapes",
                                       self.filename)
            else:
                raise UnsupportedError(f"input '{name}' has no size for dimension {index}; "
                                       "export with static shapes", self.filename)
        return ArrayShape(dtype, tuple(dims))

    # -- nodes ---------------------------------------------------------------------------------

    def where(self, node: onnx.NodeProto) -> str:
        return f"{self.filename}: node '{_label(node)}' ({node.op_type})"

    def _import_node(self, node: onnx.NodeProto) -> None:
        where = self.where(node)
        if node.domain not in DEFAULT_DOMAINS:
            raise UnsupportedError(f"operator domain '{node.domain}' is not supported (only "
                                   "the default ONNX domain is)", where)
        inputs = [self.lookup(name, where) if name else None for name in node.input]
        outputs = self._fold(node, inputs, where)
        if outputs is None:
            outputs = self._lower(node, inputs, where)
        self._bind_outputs(node, outputs, where)

    def _lower(self, node, inputs, where) -> list[_Value | None]:
        lowering = _LOWERINGS.get(node.op_type)
        if lowering is None:
            if node.op_type in _STATIC_ONLY:
                computed = [name for name, v in zip(node.input, inputs)
                            if v is not None and v.const is None]
                raise UnsupportedError(f"{node.op_type} needs constant inputs; '{computed[0]}' "
                                       "is computed at run time", where)
            raise UnsupportedError(f"unsupported ONNX operator '{node.op_type}'", where)
        context = _NodeContext(self, node, inputs, where)
        try:
            outputs = lowering(context)
        except (ValueError, IndexError, TypeError) as error:  # malformed attributes and such
            raise InputError(f"cannot import this node: {error}", where) from None
        context.flush(outputs)
        return outputs

    def _fold(self, node, inputs, where) -> list[_Value] | None:
        """The node's outputs computed now, when every input is a constant; else None."""
        if node.op_type in _NOT_FOLDED or node.op_type in _RANDOM:
            return None
        if any(v is not None and v.const is None for v in inputs):
            return None
        static_only = node.op_type in _STATIC_ONLY
        expected = [self.inferred.get(name, (0, None))[1] for name in node.output]
        if not static_only and any(d is not None and math.prod(d) > _FOLD_LIMIT
                                   for d in expected):
            return None
        feeds = {name: v.const for name, v in zip(node.input, inputs) if v is not None}
        try:
            evaluator = ReferenceEvaluator(node, opsets={"": self.opset})
            # log(0) = -inf and the like are values, as on a device: NumPy's warnings about
            # them would reach the user's terminal as noise (T5's bucketing takes log(0)).
            with np.errstate(all="ignore"):
                results = evaluator.run(None, feeds)
        except Exception:  # no reference kernel, or one that rejects the node: lower it
            if static_only:
                raise InputError(f"cannot evaluate this {node.op_type}", where) from None
            return None
        outputs = []
        for name, result in zip(node.output, results):
            array = np.asarray(result)
            if array.size > _FOLD_LIMIT and not static_only:
                return None
            if name in self.inferred and self.inferred[name][0] in _ONNX_DTYPES:
                target = _ir_type(self.inferred[name][0], where)
                try:
                    array = array.astype(target.numpy, copy=False)
                except (ValueError, TypeError) as error:  # a Constant holding text, say
                    raise InputError(f"output '{name}' is {array.dtype} values, which ONNX "
                                     f"infers to be {target}: {error}", where) from None
            outputs.append(_const_value(array, where, name=name, loc=where,
                                        extra=_node_extra(node),
                                        whole=node.op_type == "Constant"))
        return outputs

    def _bind_outputs(self, node, outputs, where) -> None:
        for index, name in enumerate(node.output):
            if not name:
                continue
            value = outputs[index] if index < len(outputs) else None
            if value is None:
                self.values[name] = _Unavailable(
                    f"output {index} ('{name}') of {node.op_type} is not supported", where)
                continue
            if value.node is None and value.name is None:
                value.name = name
            self._check_type(name, value, where)
            self.values[name] = value

    def _check_type(self, name: str, value: _Value, where: str) -> None:
        elem_type, dims = self.inferred.get(name, (0, None))
        if elem_type in _ONNX_DTYPES and _ir_type(elem_type, where) != value.dtype:
            raise InputError(f"output '{name}' is {value.shape} here but ONNX infers element "
                             f"type {_ir_type(elem_type, where)}", where)
        if dims is not None and dims != value.dims:
            raise InputError(f"output '{name}' is {value.shape} here but ONNX infers dims "
                             f"{list(dims)}", where)

    # -- values to IR nodes --------------------------------------------------------------------

    def lookup(self, name: str, where: str) -> _Value:
        value = self.values.get(name)
        if value is None:
            raise InputError(f"'{name}' is read before any node produces it (the graph must "
                             "be topologically sorted)", where)
        if isinstance(value, _Unavailable):
            raise UnsupportedError(value.message, value.where)
        return value

    def operand(self, value: _Value) -> str:
        """The IR node holding `value`, creating its constant on first use."""
        if value.node is None:
            value.node = self._materialize(value)
        return value.node

    def _materialize(self, value: _Value) -> str:
        array = value.const
        loc = value.loc or self.filename
        name = value.name or self.fresh_name("constant")
        if value.whole or not _is_splat(array):
            return self._constant(array.copy(order="C"), name, loc, value.extra)
        scalar = self._constant(np.array(array.flat[0], dtype=array.dtype),
                                self.fresh_name("constant"), loc, value.extra)
        return self.builder.add("broadcast", [scalar], {"dimensions": ()}, name=name, loc=loc,
                                shape=value.shape, extra=value.extra)

    def _constant(self, array: np.ndarray, name: str, loc: str, extra: dict) -> str:
        node = self.builder.constant(array, name=name, loc=loc)
        # GraphBuilder.constant takes no `extra`; the UI still wants to know the origin.
        self.builder.graph.nodes[node].extra.update(extra)
        return node

    def fresh_name(self, base: str) -> str:
        """A name for a node no ONNX value is called: `base`, `base.1`, ..."""
        nodes = self.builder.graph.nodes
        name, counter = base, 0
        while name in nodes or name in self.reserved:
            counter += 1
            name = f"{base}.{counter}"
        return name

    def reducer(self, kind: str, dtype: DType) -> str:
        key = (kind, dtype)
        if key not in self._reducers:
            self._reducers[key] = self.builder.reducer(kind, dtype)
        return self._reducers[key]


def _node_extra(node: onnx.NodeProto) -> dict[str, str]:
    """What the UI needs to map an IR node back to the ONNX node it came from."""
    return {"onnx_node": _label(node), "onnx_op": node.op_type}


def _label(node: onnx.NodeProto) -> str:
    """The node's name, or its first output's when the exporter left it unnamed."""
    if node.name:
        return node.name
    return node.output[0] if node.output else "<unnamed>"


# -- lowering one node -------------------------------------------------------------------------


@dataclass(eq=False)
class _Pending:
    value: _Value
    op: str
    operands: tuple[_Value, ...]
    attrs: dict


class _NodeContext:
    """What a lowering works with: the node's inputs and attributes, and helpers that emit IR.

    Emitted nodes are queued and added to the graph by `flush` once the lowering returned, so
    the node computing an ONNX output can be given that output's name.
    """

    def __init__(self, importer: _Importer, node: onnx.NodeProto,
                 inputs: list[_Value | None], where: str):
        self.importer = importer
        self.node = node
        self.op = node.op_type
        self.where = where
        self.inputs = inputs
        self.attrs = {attr.name: _attribute(attr) for attr in node.attribute}
        self._pending: list[_Pending] = []

    # -- reading the node ----------------------------------------------------------------------

    def x(self, index: int) -> _Value:
        value = self.opt(index)
        if value is None:
            raise InputError(f"{self.op} needs input {index}, which is missing", self.where)
        return value

    def opt(self, index: int) -> _Value | None:
        return self.inputs[index] if index < len(self.inputs) else None

    def present_inputs(self) -> list[_Value]:
        return [v for v in self.inputs if v is not None]

    def static(self, index: int, what: str) -> np.ndarray | None:
        """The value of input `index` (None when absent); it must be known at import time."""
        value = self.opt(index)
        if value is None:
            return None
        if value.const is None:
            raise UnsupportedError(f"the {what} of {self.op} must be a constant; "
                                   f"'{self.node.input[index]}' is computed at run time",
                                   self.where)
        return value.const

    def static_int(self, index: int, what: str) -> int:
        """Input `index`: a constant holding one integer."""
        value = self.static(index, what)
        if value is None or value.size != 1:
            raise self.error(f"{self.op} needs {what}, a one-element tensor")
        return int(value.reshape(-1)[0])

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)

    def ints(self, index: int, attr: str, what: str) -> list[int] | None:
        """A list of ints given as attribute `attr` (older opsets) or as input `index`."""
        if attr in self.attrs:
            return [int(v) for v in self.attrs[attr]]
        value = self.static(index, what)
        return None if value is None else [int(v) for v in value.reshape(-1)]

    def wanted(self, index: int) -> bool:
        """Whether output `index` exists and something reads it."""
        outputs = self.node.output
        return index < len(outputs) and outputs[index] in self.importer.used

    def axis(self, axis: int, rank: int) -> int:
        if not -rank <= axis < rank:
            raise InputError(f"axis {axis} is out of range for rank {rank}", self.where)
        return axis % rank

    def axes(self, axes, rank: int) -> tuple[int, ...]:
        normalized = [self.axis(int(a), rank) for a in axes]
        if len(set(normalized)) != len(normalized):
            raise InputError(f"axes {list(axes)} repeat an axis", self.where)
        return tuple(sorted(normalized))

    def error(self, message: str) -> InputError:
        return InputError(message, self.where)

    def unsupported(self, message: str) -> UnsupportedError:
        return UnsupportedError(message, self.where)

    # -- emitting ------------------------------------------------------------------------------

    def emit(self, op: str, operands, shape: ArrayShape, attrs: dict | None = None) -> _Value:
        value = _Value(shape)
        self._pending.append(_Pending(value, op, tuple(operands), attrs or {}))
        return value

    def flush(self, outputs: list[_Value | None]) -> None:
        names = {}
        for value, name in zip(outputs, self.node.output):
            if value is not None and name and value not in names:
                names[value] = name
        importer = self.importer
        extra = _node_extra(self.node)
        for pending in self._pending:
            operands = [importer.operand(v) for v in pending.operands]
            dtype = pending.value.dtype if pending.op in ("convert", "iota") else None
            name = names.get(pending.value) or importer.fresh_name(pending.op)
            pending.value.node = importer.builder.add(
                pending.op, operands, pending.attrs, name=name,
                loc=self.where, shape=pending.value.shape, dtype=dtype, extra=dict(extra))
        self._pending.clear()

    def const(self, array: np.ndarray) -> _Value:
        return _const_value(np.asarray(array), self.where, loc=self.where,
                            extra=_node_extra(self.node))

    def scalar(self, number, dtype: DType) -> _Value:
        return self.const(np.array(number).astype(dtype.numpy))

    def reshape(self, v: _Value, dims) -> _Value:
        dims = tuple(int(d) for d in dims)
        if dims == v.dims:
            return v
        if math.prod(dims) != v.shape.size:
            raise self.error(f"cannot reshape {v.shape} to {list(dims)}")
        return self.emit("reshape", [v], ArrayShape(v.dtype, dims))

    def broadcast(self, v: _Value, dims) -> _Value:
        """`v` broadcast to `dims` by NumPy's rules (trailing dims aligned, size-1 dims grow)."""
        dims = tuple(dims)
        if v.dims == dims:
            return v
        offset = len(dims) - v.rank
        if offset < 0:
            raise self.error(f"cannot broadcast {v.shape} to {list(dims)}")
        kept = []
        for i, size in enumerate(v.dims):
            if size == dims[offset + i]:
                kept.append(i)
            elif size != 1:
                raise self.error(f"cannot broadcast {v.shape} to {list(dims)}")
        squeezed = self.reshape(v, [v.dims[i] for i in kept])
        return self.broadcast_in_dim(squeezed, dims, [offset + i for i in kept])

    def broadcast_in_dim(self, v: _Value, dims, mapping) -> _Value:
        """HLO broadcast: operand dimension i becomes output dimension mapping[i]."""
        dims, mapping = tuple(dims), tuple(mapping)
        if v.dims == dims and mapping == tuple(range(len(dims))):
            return v
        return self.emit("broadcast", [v], ArrayShape(v.dtype, dims), {"dimensions": mapping})

    def broadcast_back(self, reduced: _Value, dims, axes) -> _Value:
        """A reduction's result broadcast back over the `axes` it reduced."""
        kept = [i for i in range(len(dims)) if i not in axes]
        return self.broadcast_in_dim(reduced, dims, kept)

    def convert(self, v: _Value, dtype: DType) -> _Value:
        if v.dtype == dtype:
            return v
        return self.emit("convert", [v], v.shape.with_dtype(dtype))

    def transpose(self, v: _Value, perm) -> _Value:
        perm = tuple(int(p) for p in perm)
        if perm == tuple(range(v.rank)):
            return v
        return self.emit("transpose", [v], ArrayShape(v.dtype, tuple(v.dims[p] for p in perm)),
                         {"dimensions": perm})

    def broadcast_dims(self, *shapes: tuple[int, ...]) -> tuple[int, ...]:
        try:
            return tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            listed = ", ".join(str(list(dims)) for dims in shapes)
            raise self.error(f"dimensions {listed} do not broadcast together") from None

    def map(self, op: str, *values: _Value, dtype: DType | None = None,
            attrs: dict | None = None) -> _Value:
        """An elementwise op over `values` broadcast to their common shape."""
        dims = self.broadcast_dims(*(v.dims for v in values))
        operands = [self.broadcast(v, dims) for v in values]
        return self.emit(op, operands, ArrayShape(dtype or values[0].dtype, dims), attrs)

    def arith(self, op: str, a: _Value, b: _Value) -> _Value:
        if a.dtype != b.dtype:
            raise self.error(f"{self.op} mixes element types {a.dtype} and {b.dtype}")
        return self.map(op, a, b)

    def compare(self, direction: str, a: _Value, b: _Value) -> _Value:
        if a.dtype != b.dtype:
            raise self.error(f"{self.op} compares {a.dtype} with {b.dtype}")
        return self.map("compare", a, b, dtype=ir_dtype("pred"), attrs={"direction": direction})

    def select(self, condition: _Value, on_true: _Value, on_false: _Value) -> _Value:
        return self.map("select", condition, on_true, on_false, dtype=on_true.dtype)

    def unary(self, op: str, v: _Value) -> _Value:
        return self.emit(op, [v], v.shape)

    def times(self, v: _Value, number: float) -> _Value:
        return self.map("multiply", v, self.scalar(number, v.dtype))

    def plus(self, v: _Value, number: float) -> _Value:
        return self.map("add", v, self.scalar(number, v.dtype))

    def reduce(self, v: _Value, axes, kind: str) -> _Value:
        """`v` reduced over `axes` (dropped from the shape), accumulating in its own type."""
        axes = tuple(sorted(axes))
        dims = tuple(d for i, d in enumerate(v.dims) if i not in axes)
        init = self.scalar(_identity(kind, v.dtype), v.dtype)
        return self.emit("reduce", [v, init], ArrayShape(v.dtype, dims), {
            "dimensions": axes, "to_apply": self.importer.reducer(kind, v.dtype),
            "reducer": kind})

    def mean(self, v: _Value, axes) -> _Value:
        count = math.prod(v.dims[a] for a in axes)
        return self.map("divide", self.reduce(v, axes, "add"), self.scalar(count, v.dtype))

    def keep_dims(self, reduced: _Value, dims, axes) -> _Value:
        """A reduction's result reshaped to keep the reduced axes as size 1."""
        return self.reshape(reduced, [1 if i in axes else d for i, d in enumerate(dims)])


def _identity(kind: str, dtype: DType):
    """The identity element of a reducer, as a number of `dtype`."""
    if kind == "add":
        return 0
    if kind == "multiply":
        return 1
    if dtype.kind == "pred":
        return kind == "minimum"
    if dtype.is_integer:
        info = np.iinfo(dtype.numpy)
        return info.min if kind == "maximum" else info.max
    infinity = np.array(np.inf).astype(dtype.numpy)
    if not np.isinf(infinity):  # formats without infinities (f8e4m3fn, ...)
        infinity = np.array(float(np.finfo(dtype.numpy).max)).astype(dtype.numpy)
    return -infinity if kind == "maximum" else infinity


# -- the lowerings -----------------------------------------------------------------------------

_Lowering = Callable[[_NodeContext], list]
_LOWERINGS: dict[str, _Lowering] = {}


def _lowering(*op_types: str):
    def register(function: _Lowering) -> _Lowering:
        for op_type in op_types:
            _LOWERINGS[op_type] = function
        return function

    return register


_UNARY = {
    "Abs": "abs", "Neg": "negate", "Sqrt": "sqrt", "Exp": "exponential", "Log": "log",
    "Tanh": "tanh", "Sigmoid": "logistic", "Erf": "erf", "Not": "not", "Floor": "floor",
    "Ceil": "ceil", "Round": "round-nearest-even", "Sign": "sign", "Sin": "sine",
    "Cos": "cosine", "Tan": "tan", "Identity": None,
}


@_lowering(*_UNARY)
def _unary(n: _NodeContext):
    x = n.x(0)
    op = _UNARY[n.op]
    return [x if op is None else n.unary(op, x)]


_BINARY = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "divide", "And": "and",
    "Or": "or", "Xor": "xor", "Max": "maximum", "Min": "minimum", "Sum": "add",
    "BitwiseAnd": "and", "BitwiseOr": "or", "BitwiseXor": "xor",
}


@_lowering(*_BINARY, "Mean")
def _binary(n: _NodeContext):
    values = n.present_inputs()
    result = values[0]
    for value in values[1:]:
        result = n.arith(_BINARY.get(n.op, "add"), result, value)
    if n.op == "Mean":
        result = n.map("divide", result, n.scalar(len(values), result.dtype))
    return [result]


@_lowering("Pow")
def _pow(n: _NodeContext):
    base, exponent = n.x(0), n.x(1)
    return [n.map("power", base, n.convert(exponent, base.dtype))]


@_lowering("Reciprocal")
def _reciprocal(n: _NodeContext):
    x = n.x(0)
    return [n.map("divide", n.scalar(1, x.dtype), x)]


_COMPARISONS = {
    "Equal": "EQ", "Less": "LT", "LessOrEqual": "LE", "Greater": "GT", "GreaterOrEqual": "GE",
}


@_lowering(*_COMPARISONS)
def _compare(n: _NodeContext):
    return [n.compare(_COMPARISONS[n.op], n.x(0), n.x(1))]


@_lowering("Where")
def _where(n: _NodeContext):
    return [n.select(n.x(0), n.x(1), n.x(2))]


@_lowering("Relu")
def _relu(n: _NodeContext):
    x = n.x(0)
    return [n.map("maximum", x, n.scalar(0, x.dtype))]


@_lowering("LeakyRelu", "PRelu")
def _leaky_relu(n: _NodeContext):
    x = n.x(0)
    negative = n.times(x, n.attr("alpha", 0.01)) if n.op == "LeakyRelu" else \
        n.arith("multiply", x, n.x(1))
    is_negative = n.compare("LT", x, n.scalar(0, x.dtype))
    return [n.select(is_negative, negative, x)]


@_lowering("Elu", "Selu")
def _elu(n: _NodeContext):
    x = n.x(0)
    default_alpha = 1.0 if n.op == "Elu" else 1.67326319217681884765625
    negative = n.times(n.unary("exponential-minus-one", x), n.attr("alpha", default_alpha))
    result = n.select(n.compare("LE", x, n.scalar(0, x.dtype)), negative, x)
    if n.op == "Selu":
        result = n.times(result, n.attr("gamma", 1.05070102214813232421875))
    return [result]


@_lowering("HardSigmoid", "HardSwish")
def _hard_sigmoid(n: _NodeContext):
    x = n.x(0)
    alpha, beta = (n.attr("alpha", 0.2), n.attr("beta", 0.5)) if n.op == "HardSigmoid" \
        else (1 / 6, 0.5)
    linear = n.plus(n.times(x, alpha), beta)
    result = n.map("clamp", n.scalar(0, x.dtype), linear, n.scalar(1, x.dtype))
    if n.op == "HardSwish":
        result = n.arith("multiply", x, result)
    return [result]


@_lowering("Softplus")
def _softplus_op(n: _NodeContext):
    return [_softplus(n, n.x(0))]


def _softplus(n: _NodeContext, x: _Value) -> _Value:
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): exp(x) alone overflows to inf for x
    past 88 in f32 (11 in f16), where the answer is x."""
    tail = n.unary("log-plus-one", n.unary("exponential", n.unary("negate", n.unary("abs", x))))
    return n.arith("add", n.arith("maximum", x, n.scalar(0, x.dtype)), tail)


@_lowering("Mish")
def _mish(n: _NodeContext):
    x = n.x(0)
    return [n.arith("multiply", x, n.unary("tanh", _softplus(n, x)))]


@_lowering("Mod")
def _mod(n: _NodeContext):
    a, b = n.x(0), n.x(1)
    remainder = n.arith("remainder", a, b)  # C's fmod: the sign of the dividend
    if n.attr("fmod", 0):
        return [remainder]
    if a.dtype.is_float:
        raise n.error("Mod of floating-point values needs fmod=1")
    # Python's modulo takes the divisor's sign: move a non-zero remainder of the other sign
    # by one divisor.
    zero = n.scalar(0, remainder.dtype)
    signs_differ = n.map("xor", n.compare("LT", remainder, zero), n.compare("LT", b, zero),
                         dtype=ir_dtype("pred"))
    wrong = n.map("and", signs_differ, n.compare("NE", remainder, zero), dtype=ir_dtype("pred"))
    return [n.select(wrong, n.arith("add", remainder, b), remainder)]


@_lowering("Gelu")
def _gelu(n: _NodeContext):
    x = n.x(0)
    approximate = n.attr("approximate", "none")
    if approximate == "none":
        inner = n.unary("erf", n.times(x, math.sqrt(0.5)))
    elif approximate == "tanh":
        cube = n.arith("multiply", n.arith("multiply", x, x), x)
        poly = n.arith("add", x, n.times(cube, 0.044715))
        inner = n.unary("tanh", n.times(poly, math.sqrt(2 / math.pi)))
    else:
        raise n.unsupported(f"Gelu approximate='{approximate}' is not supported")
    return [n.arith("multiply", n.times(x, 0.5), n.plus(inner, 1))]


@_lowering("Clip")
def _clip(n: _NodeContext):
    x = n.x(0)
    low, high = n.opt(1), n.opt(2)
    if low is not None:
        x = n.arith("maximum", x, n.reshape(low, ()))
    if high is not None:
        x = n.arith("minimum", x, n.reshape(high, ()))
    return [x]


@_lowering("Cast", "CastLike")
def _cast(n: _NodeContext):
    x = n.x(0)
    target = _ir_type(n.attr("to"), n.where) if n.op == "Cast" else n.x(1).dtype
    return [n.convert(x, target)]


@_lowering("Dropout")
def _dropout(n: _NodeContext):
    x = n.x(0)
    training = n.static(2, "training_mode")
    ratio = n.static(1, "ratio")
    if training is not None and bool(training) and (ratio is None or float(ratio) != 0):
        raise n.unsupported("Dropout in training mode is not supported; export the model in "
                            "eval mode")
    n.importer.notes.append(f"{n.where}: imported as the identity (inference)")
    mask = np.broadcast_to(np.array(True), x.dims)
    return [x, n.const(mask)]


@_lowering("Shape")
def _shape(n: _NodeContext):
    dims = n.x(0).dims
    start, end = n.attr("start", 0), n.attr("end", len(dims))
    return [n.const(np.array(dims[start:end], dtype=np.int64))]


@_lowering("Size")
def _size(n: _NodeContext):
    return [n.const(np.array(n.x(0).shape.size, dtype=np.int64))]


@_lowering("ConstantOfShape")
def _constant_of_shape(n: _NodeContext):
    dims = [int(d) for d in n.static(0, "shape").reshape(-1)]
    value = n.attr("value")
    scalar = numpy_helper.to_array(value).reshape(()) if value is not None \
        else np.array(0, dtype=np.float32)
    return [n.const(np.broadcast_to(scalar, dims))]


# -- shape manipulation ------------------------------------------------------------------------


@_lowering("Reshape")
def _reshape(n: _NodeContext):
    x = n.x(0)
    target = [int(d) for d in n.static(1, "shape").reshape(-1)]
    dims = list(target)
    if not n.attr("allowzero", 0):
        for i, d in enumerate(dims):
            if d == 0:
                if i >= x.rank:
                    raise n.error(f"shape {target} copies dimension {i} of the rank-{x.rank} "
                                  "input")
                dims[i] = x.dims[i]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise n.error(f"invalid shape {target}")
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        if known == 0 or x.shape.size % known:
            raise n.error(f"cannot reshape {x.shape} to {target}")
        dims[dims.index(-1)] = x.shape.size // known
    return [n.reshape(x, dims)]


@_lowering("Flatten")
def _flatten(n: _NodeContext):
    x = n.x(0)
    axis = n.attr("axis", 1)
    axis = axis + x.rank if axis < 0 else axis
    if not 0 <= axis <= x.rank:
        raise n.error(f"axis {n.attr('axis')} is out of range for rank {x.rank}")
    return [n.reshape(x, [math.prod(x.dims[:axis]), math.prod(x.dims[axis:])])]


@_lowering("Squeeze")
def _squeeze(n: _NodeContext):
    x = n.x(0)
    axes = n.ints(1, "axes", "axes")
    if axes is None:
        axes = [i for i, d in enumerate(x.dims) if d == 1]
    axes = n.axes(axes, x.rank)
    for a in axes:
        if x.dims[a] != 1:
            raise n.error(f"cannot squeeze axis {a} of {x.shape}: its size is not 1")
    return [n.reshape(x, [d for i, d in enumerate(x.dims) if i not in axes])]


@_lowering("Unsqueeze")
def _unsqueeze(n: _NodeContext):
    x = n.x(0)
    axes = n.ints(1, "axes", "axes")
    if axes is None:
        raise n.error("Unsqueeze needs axes")
    rank = x.rank + len(axes)
    axes = n.axes(axes, rank)
    rest = iter(x.dims)
    return [n.reshape(x, [1 if i in axes else next(rest) for i in range(rank)])]


@_lowering("Transpose")
def _transpose(n: _NodeContext):
    x = n.x(0)
    perm = n.attr("perm", list(range(x.rank))[::-1])
    if sorted(perm) != list(range(x.rank)):
        raise n.error(f"perm {list(perm)} is not a permutation of {x.rank} axes")
    return [n.transpose(x, perm)]


@_lowering("DepthToSpace", "SpaceToDepth")
def _depth_space(n: _NodeContext):
    # Both are a reshape, a transpose and a reshape, with the ONNX spec's permutations.
    x = n.x(0)
    block = n.attr("blocksize")
    if x.rank != 4 or not block or block < 1:
        raise n.error(f"{n.op} needs an (N, C, H, W) input and a positive blocksize, got "
                      f"{x.shape} and blocksize {block}")
    batch, channels, height, width = x.dims
    if n.op == "SpaceToDepth":
        if height % block or width % block:
            raise n.error(f"height and width of {x.shape} are not multiples of {block}")
        split = [batch, channels, height // block, block, width // block, block]
        perm, result = [0, 3, 5, 1, 2, 4], [batch, channels * block * block,
                                            height // block, width // block]
    else:
        if channels % (block * block):
            raise n.error(f"channels of {x.shape} are not a multiple of {block}*{block}")
        depth = channels // (block * block)
        if n.attr("mode", "DCR") == "DCR":
            split, perm = [batch, block, block, depth, height, width], [0, 3, 4, 1, 5, 2]
        else:
            split, perm = [batch, depth, block, block, height, width], [0, 1, 4, 2, 5, 3]
        result = [batch, depth, height * block, width * block]
    return [n.reshape(n.transpose(n.reshape(x, split), perm), result)]


@_lowering("Concat")
def _concat(n: _NodeContext):
    values = n.present_inputs()
    rank = values[0].rank
    axis = n.axis(n.attr("axis"), rank)
    for v in values:
        if v.dtype != values[0].dtype or v.rank != rank or any(
                d != e for i, (d, e) in enumerate(zip(v.dims, values[0].dims)) if i != axis):
            raise n.error(f"cannot concatenate {values[0].shape} and {v.shape} on axis {axis}")
    if len(values) == 1:
        return values
    dims = list(values[0].dims)
    dims[axis] = sum(v.dims[axis] for v in values)
    return [n.emit("concatenate", values, ArrayShape(values[0].dtype, tuple(dims)),
                   {"dimensions": (axis,)})]


def _slice(n: _NodeContext, x: _Value, config: list[tuple[int, int, int]]) -> _Value:
    """HLO slice with (start, limit, stride) per dimension; the identity when it selects all."""
    if all(c == (0, d, 1) for c, d in zip(config, x.dims)):
        return x
    dims = tuple(max(0, -(-(limit - start) // stride)) for start, limit, stride in config)
    return n.emit("slice", [x], ArrayShape(x.dtype, dims), {"slice": tuple(config)})


@_lowering("Split")
def _split(n: _NodeContext):
    x = n.x(0)
    axis = n.axis(n.attr("axis", 0), x.rank)
    size = x.dims[axis]
    count = len(n.node.output)
    sizes = n.ints(1, "split", "split sizes")
    if sizes is None:
        parts = n.attr("num_outputs", count)
        chunk = -(-size // parts)
        sizes = [chunk] * (parts - 1) + [size - chunk * (parts - 1)]
    if len(sizes) != count or sum(sizes) != size or min(sizes) < 0:
        raise n.error(f"cannot split {size} elements into {sizes} for {count} outputs")
    outputs, start = [], 0
    for index, part in enumerate(sizes):
        config = [(0, d, 1) for d in x.dims]
        config[axis] = (start, start + part, 1)
        outputs.append(_slice(n, x, config) if n.wanted(index) else None)
        start += part
    return outputs


@_lowering("Slice")
def _slice_op(n: _NodeContext):
    x = n.x(0)
    starts = [int(v) for v in n.static(1, "starts").reshape(-1)]
    ends = [int(v) for v in n.static(2, "ends").reshape(-1)]
    axes = n.ints(3, "axes", "axes")
    axes = list(range(len(starts))) if axes is None else [n.axis(a, x.rank) for a in axes]
    steps = n.ints(4, "steps", "steps") or [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps) or len(set(axes)) != len(axes):
        raise n.error("Slice needs one start, end and step per distinct axis")
    config = [(0, d, 1) for d in x.dims]
    reversed_axes = []
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step == 0:
            raise n.error("Slice steps must not be 0")
        size = x.dims[axis]
        first, count = _slice_range(start, end, step, size)
        if count == 0:
            config[axis] = (0, 0, 1)
            continue
        if step < 0:
            # HLO strides are positive: reverse the axis, then slice forward from the mirror
            # of the first element.
            reversed_axes.append(axis)
            first, step = size - 1 - first, -step
        config[axis] = (first, first + (count - 1) * step + 1, step)
    if reversed_axes:
        x = n.emit("reverse", [x], x.shape, {"dimensions": tuple(sorted(reversed_axes))})
    return [_slice(n, x, config)]


def _slice_range(start: int, end: int, step: int, size: int) -> tuple[int, int]:
    """First index and element count of an ONNX slice of one axis.

    The Slice spec's clamping, which differs from Python's for a start before the beginning
    with a negative step: ONNX clamps it to 0 and selects element 0; Python selects nothing.
    """
    start += size if start < 0 else 0
    end += size if end < 0 else 0
    if step > 0:
        start, end = min(max(start, 0), size), min(max(end, 0), size)
    else:
        start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
    return start, len(range(start, end, step))


@_lowering("Gather")
def _gather(n: _NodeContext):
    data, indices = n.x(0), n.x(1)
    axis = n.axis(n.attr("axis", 0), data.rank)
    size = data.dims[axis]
    if not indices.dtype.is_integer:
        raise n.error(f"Gather indices must be integers, not {indices.dtype}")
    if indices.const is not None:
        values = indices.const.astype(np.int64)
        if values.size and (values.min() < -size or values.max() >= size):
            raise n.error(f"Gather index out of range for axis {axis} of size {size}")
        if values.size and values.min() < 0:
            indices = n.const(np.where(values < 0, values + size, values))
    else:  # ONNX counts negative indices from the end; HLO gather would clamp them to 0
        is_negative = n.compare("LT", indices, n.scalar(0, indices.dtype))
        wrapped = n.map("add", indices, n.scalar(size, indices.dtype))
        indices = n.select(is_negative, wrapped, indices)
    return [_take(n, data, indices, axis)]


@_lowering("GatherElements")
def _gather_elements(n: _NodeContext):
    data, indices = n.x(0), n.x(1)
    axis = n.axis(n.attr("axis", 0), data.rank)
    if indices.rank != data.rank or not indices.dtype.is_integer:
        raise n.error(f"GatherElements needs integer indices of the data's rank, got "
                      f"{indices.shape} for {data.shape}")
    # HLO gather of single elements: each output element's index vector is its own position
    # with the axis coordinate replaced by the index (negative ones counted from the end).
    wide = ir_dtype("s64")
    index = n.convert(indices, wide)
    size = n.scalar(data.dims[axis], wide)
    index = n.select(n.compare("LT", index, n.scalar(0, wide)), n.map("add", index, size),
                     index)
    column = indices.dims + (1,)
    positions = [n.reshape(index if d == axis else
                           n.emit("iota", [], ArrayShape(wide, indices.dims),
                                  {"iota_dimension": d}), column)
                 for d in range(data.rank)]
    vectors = n.emit("concatenate", positions, ArrayShape(wide, indices.dims + (data.rank,)),
                     {"dimensions": (data.rank,)})
    every = tuple(range(data.rank))
    return [n.emit("gather", [data, vectors], ArrayShape(data.dtype, indices.dims), {
        "offset_dims": (), "collapsed_slice_dims": every, "start_index_map": every,
        "operand_batching_dims": (), "start_indices_batching_dims": (),
        "index_vector_dim": data.rank, "slice_sizes": (1,) * data.rank,
        "indices_are_sorted": False,
    })]


def _take(n: _NodeContext, data: _Value, indices: _Value, axis: int) -> _Value:
    """HLO gather of whole slices of `data` at `indices` (in range) along `axis`."""
    q = indices.rank
    dims = data.dims[:axis] + indices.dims + data.dims[axis + 1:]
    slice_sizes = tuple(1 if i == axis else d for i, d in enumerate(data.dims))
    return n.emit("gather", [data, indices], ArrayShape(data.dtype, dims), {
        "offset_dims": tuple(range(axis)) + tuple(range(axis + q, data.rank + q - 1)),
        "collapsed_slice_dims": (axis,),
        "start_index_map": (axis,),
        "operand_batching_dims": (),
        "start_indices_batching_dims": (),
        "index_vector_dim": q,
        "slice_sizes": slice_sizes,
        "indices_are_sorted": False,
    })


# ONNX Resize's coordinate_transformation_mode: where output coordinate x of an axis resized
# from `size` to `out` by `scale` samples the input.
_RESIZE_COORDINATES = {
    "half_pixel": lambda x, scale, size, out: (x + 0.5) / scale - 0.5,
    "pytorch_half_pixel": lambda x, scale, size, out:
        (x + 0.5) / scale - 0.5 if out > 1 else 0 * x,
    "align_corners": lambda x, scale, size, out: x * (size - 1) / max(out - 1, 1),
    "asymmetric": lambda x, scale, size, out: x / scale,
    "half_pixel_symmetric": lambda x, scale, size, out:
        size / 2 * (1 - out / (scale * size)) + (x + 0.5) / scale - 0.5,
}
_RESIZE_ROUNDING = {
    "round_prefer_floor": lambda x: np.ceil(x - 0.5),
    "round_prefer_ceil": lambda x: np.floor(x + 0.5),
    "floor": np.floor,
    "ceil": np.ceil,
}


@_lowering("Resize")
def _resize(n: _NodeContext):
    x = n.x(0)
    mode = n.attr("mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise n.unsupported(f"Resize mode '{mode}' is not supported (only 'nearest' and "
                            "'linear' are)")
    if mode == "linear" and (not x.dtype.is_float or n.attr("antialias", 0)):
        raise n.unsupported(f"linear Resize of {x.dtype} values or with antialias is not "
                            "supported")
    transform = n.attr("coordinate_transformation_mode", "half_pixel")
    rounding = n.attr("nearest_mode", "round_prefer_floor")
    if transform not in _RESIZE_COORDINATES or rounding not in _RESIZE_ROUNDING:
        raise n.unsupported(f"Resize with coordinate_transformation_mode '{transform}' and "
                            f"nearest_mode '{rounding}' is not supported")
    axes = n.attr("axes")
    axes = list(range(x.rank)) if axes is None else [n.axis(a, x.rank) for a in axes]
    scales = n.static(2, "scales")
    sizes = n.static(3, "sizes")
    if sizes is not None and sizes.size:
        if n.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
            raise n.unsupported("Resize with keep_aspect_ratio_policy "
                                f"'{n.attr('keep_aspect_ratio_policy')}' is not supported")
        outs = [int(v) for v in sizes.reshape(-1)]
        factors = [out / x.dims[a] for a, out in zip(axes, outs)]
    elif scales is not None and scales.size:
        factors = [float(v) for v in scales.reshape(-1)]
        outs = [math.floor(x.dims[a] * f) for a, f in zip(axes, factors)]
    else:
        raise n.error("Resize needs scales or sizes")
    if len(factors) != len(axes) or min(factors) <= 0:
        raise n.error(f"Resize needs a positive scale for each of axes {axes}, got {factors}")
    result = x
    for axis, factor, out in zip(axes, factors, outs):
        size = x.dims[axis]
        coordinates = _RESIZE_COORDINATES[transform](np.arange(out, dtype=np.float64),
                                                     np.float64(np.float32(factor)), size, out)
        if mode == "nearest":
            sources = np.clip(_RESIZE_ROUNDING[rounding](coordinates), 0, size - 1)
            result = _nearest_along(n, result, axis, sources.astype(np.int64))
        else:
            result = _linear_along(n, result, axis, np.clip(coordinates, 0, size - 1))
    return [result]


def _linear_along(n: _NodeContext, x: _Value, axis: int, coordinates: np.ndarray) -> _Value:
    """`x` sampled at fractional `coordinates` (within the axis) along `axis`, each between
    its two neighbours; bilinear and trilinear Resize are this along each axis in turn."""
    below = np.floor(coordinates).astype(np.int64)
    above = np.minimum(below + 1, x.dims[axis] - 1)
    weight = (coordinates - below).astype(x.dtype.numpy)
    dims = x.dims[:axis] + (len(coordinates),) + x.dims[axis + 1:]
    weight_above = n.broadcast_in_dim(n.const(weight), dims, (axis,))
    weight_below = n.broadcast_in_dim(n.const(1 - weight), dims, (axis,))
    return n.arith("add", n.arith("multiply", _nearest_along(n, x, axis, below), weight_below),
                   n.arith("multiply", _nearest_along(n, x, axis, above), weight_above))


def _nearest_along(n: _NodeContext, x: _Value, axis: int, sources: np.ndarray) -> _Value:
    """`x` with axis `axis` replaced by the input rows `sources`: a broadcast for whole-number
    upsampling, a strided slice for whole-number downsampling, a gather otherwise."""
    size, out = x.dims[axis], len(sources)
    if np.array_equal(sources, np.arange(size)):
        return x
    if out % size == 0 and np.array_equal(sources, np.repeat(np.arange(size), out // size)):
        repeated = list(x.dims[:axis + 1]) + [out // size] + list(x.dims[axis + 1:])
        mapping = [i if i <= axis else i + 1 for i in range(x.rank)]
        spread = n.broadcast_in_dim(x, repeated, mapping)
        return n.reshape(spread, x.dims[:axis] + (out,) + x.dims[axis + 1:])
    step = sources[1] - sources[0] if out > 1 else 1
    if step > 0 and np.array_equal(sources, sources[0] + step * np.arange(out)):
        config = [(0, d, 1) for d in x.dims]
        config[axis] = (int(sources[0]), int(sources[-1]) + 1, int(step))
        return _slice(n, x, config)
    return _take(n, x, n.const(sources), axis)


@_lowering("Expand")
def _expand(n: _NodeContext):
    x = n.x(0)
    shape = [int(d) for d in n.static(1, "shape").reshape(-1)]
    try:
        dims = np.broadcast_shapes(x.dims, tuple(shape))
    except ValueError:
        raise n.error(f"cannot expand {x.shape} to {shape}") from None
    return [n.broadcast(x, dims)]


@_lowering("Tile")
def _tile(n: _NodeContext):
    x = n.x(0)
    repeats = [int(r) for r in n.static(1, "repeats").reshape(-1)]
    if len(repeats) != x.rank or min(repeats, default=1) < 0:
        raise n.error(f"Tile needs {x.rank} non-negative repeats, got {repeats}")
    # Broadcast to (r0, d0, r1, d1, ...), then merge each (r, d) pair: copy k of element i
    # along an axis lands at k * d + i, which is the row-major order of the pair.
    interleaved, mapping = [], []
    for size, repeat in zip(x.dims, repeats):
        if repeat != 1:
            interleaved.append(repeat)
        mapping.append(len(interleaved))
        interleaved.append(size)
    tiled = n.broadcast_in_dim(x, interleaved, mapping)
    return [n.reshape(tiled, [d * r for d, r in zip(x.dims, repeats)])]


@_lowering("Pad")
def _pad(n: _NodeContext):
    x = n.x(0)
    mode = n.attr("mode", "constant")
    if mode != "constant":
        raise n.unsupported(f"Pad mode '{mode}' is not supported (only 'constant' is)")
    pads = n.ints(1, "pads", "pads")
    axes = n.ints(3, "axes", "axes")
    axes = list(range(x.rank)) if axes is None else [n.axis(a, x.rank) for a in axes]
    if pads is None or len(pads) != 2 * len(axes):
        raise n.error(f"Pad needs {2 * len(axes)} pads, got {pads}")
    value = n.opt(2)
    value = n.scalar(0, x.dtype) if value is None else n.reshape(value, ())
    padding = [(0, 0, 0)] * x.rank
    for i, axis in enumerate(axes):
        padding[axis] = (pads[i], pads[i + len(axes)], 0)
    dims = tuple(d + low + high for d, (low, high, _) in zip(x.dims, padding))
    if min(dims, default=0) < 0:
        raise n.error(f"pads {pads} remove more than {x.shape} holds")
    return [n.emit("pad", [x, value], ArrayShape(x.dtype, dims), {"padding": tuple(padding)})]


@_lowering("Trilu")
def _trilu(n: _NodeContext):
    x = n.x(0)
    if x.rank < 2:
        raise n.error(f"Trilu needs a matrix, got {x.shape}")
    k = n.static(1, "diagonal offset")
    k = 0 if k is None else int(k)
    rows, cols = x.dims[-2:]
    index_shape = ArrayShape(ir_dtype("s64"), (rows, cols))
    row = n.emit("iota", [], index_shape, {"iota_dimension": 0})
    col = n.emit("iota", [], index_shape, {"iota_dimension": 1})
    diagonal = n.map("subtract", col, row)  # which diagonal each element is on
    keep = n.compare("GE" if n.attr("upper", 1) else "LE", diagonal,
                     n.scalar(k, index_shape.dtype))
    keep = n.broadcast_in_dim(keep, x.dims, (x.rank - 2, x.rank - 1))
    return [n.select(keep, x, n.scalar(0, x.dtype))]


@_lowering("OneHot")
def _one_hot(n: _NodeContext):
    indices, values = n.x(0), n.x(2)
    depth = n.static_int(1, "depth")
    if values.dims != (2,) or depth < 1:
        raise n.error(f"OneHot needs a positive depth and [off, on] values, got depth {depth} "
                      f"and {values.shape}")
    rank = indices.rank + 1
    axis = n.axis(n.attr("axis", -1), rank)
    dims = indices.dims[:axis] + (depth,) + indices.dims[axis:]
    wide = ir_dtype("s64")
    # Indices may be floats; ONNX counts negative ones from the end, and any other index out
    # of range gives a row of `off`.
    index = n.convert(indices, wide)
    index = n.select(n.compare("LT", index, n.scalar(0, wide)),
                     n.map("add", index, n.scalar(depth, wide)), index)
    spread = n.broadcast_in_dim(index, dims, [i for i in range(rank) if i != axis])
    position = n.emit("iota", [], ArrayShape(wide, dims), {"iota_dimension": axis})
    hot = n.compare("EQ", position, spread)
    off = _slice(n, values, [(0, 1, 1)])
    on = _slice(n, values, [(1, 2, 1)])
    return [n.select(hot, n.reshape(on, ()), n.reshape(off, ()))]


# -- reductions --------------------------------------------------------------------------------

_REDUCTIONS = {
    "ReduceSum": "add", "ReduceMean": "add", "ReduceMax": "maximum", "ReduceMin": "minimum",
    "ReduceProd": "multiply", "ReduceSumSquare": "add", "ReduceL1": "add", "ReduceL2": "add",
}


@_lowering(*_REDUCTIONS)
def _reduction(n: _NodeContext):
    x = n.x(0)
    axes = n.ints(1, "axes", "axes")
    if n.op in ("ReduceSumSquare", "ReduceL2"):
        x = n.arith("multiply", x, x)
    elif n.op == "ReduceL1":
        x = n.unary("abs", x)
    if not axes:
        if n.attr("noop_with_empty_axes", 0):
            return [x]
        axes = range(x.rank)
    axes = n.axes(axes, x.rank)
    result = n.mean(x, axes) if n.op == "ReduceMean" else n.reduce(x, axes, _REDUCTIONS[n.op])
    if n.op == "ReduceL2":
        result = n.unary("sqrt", result)
    if n.attr("keepdims", 1):
        result = n.keep_dims(result, x.dims, axes)
    return [result]


@_lowering("CumSum")
def _cumsum(n: _NodeContext):
    x = n.x(0)
    axis = n.axis(n.static_int(1, "axis"), x.rank)
    size = x.dims[axis]
    reverse = bool(n.attr("reverse", 0))
    if reverse:
        x = n.emit("reverse", [x], x.shape, {"dimensions": (axis,)})
    # A window as long as the axis, padded in front: element i sums elements i-size+1..i.
    # Exclusive sums pad one more and drop the last window, so element i sums up to i-1.
    exclusive = int(bool(n.attr("exclusive", 0)))
    lead = size - 1 + exclusive
    window = {
        "size": tuple(size if i == axis else 1 for i in range(x.rank)),
        "stride": (1,) * x.rank,
        "pad": tuple((lead, 0) if i == axis else (0, 0) for i in range(x.rank)),
        "lhs_dilate": (1,) * x.rank, "rhs_dilate": (1,) * x.rank,
    }
    windows = tuple(d + exclusive if i == axis else d for i, d in enumerate(x.dims))
    sums = n.emit("reduce-window", [x, n.scalar(0, x.dtype)], ArrayShape(x.dtype, windows), {
        "window": window, "to_apply": n.importer.reducer("add", x.dtype), "reducer": "add"})
    sums = _slice(n, sums, [(0, d, 1) for d in x.dims])
    if reverse:
        sums = n.emit("reverse", [sums], sums.shape, {"dimensions": (axis,)})
    return [sums]


@_lowering("TopK")
def _top_k(n: _NodeContext):
    x = n.x(0)
    k = n.static_int(1, "K")
    axis = n.axis(n.attr("axis", -1), x.rank)
    if not 0 <= k <= x.dims[axis]:
        raise n.error(f"TopK of {k} elements along axis {axis} of {x.shape}")
    return list(_top(n, x, k, axis, bool(n.attr("largest", 1))))


@_lowering("ArgMax", "ArgMin")
def _arg_extreme(n: _NodeContext):
    x = n.x(0)
    axis = n.axis(n.attr("axis", 0), x.rank)
    last = bool(n.attr("select_last_index", 0))
    if last:  # the first extreme of the reversed axis is the last one
        x = n.emit("reverse", [x], x.shape, {"dimensions": (axis,)})
    _, index = _top(n, x, 1, axis, n.op == "ArgMax")
    if last:
        index = n.map("subtract", n.scalar(x.dims[axis] - 1, index.dtype), index)
    if n.attr("keepdims", 1):
        return [index]
    return [n.reshape(index, x.dims[:axis] + x.dims[axis + 1:])]


def _top(n: _NodeContext, x: _Value, k: int, axis: int, largest: bool):
    """The k largest (or smallest) elements along `axis`, sorted, and their int64 indices.

    HLO topk works on the last axis and returns ties lower index first, as ONNX's TopK and
    ArgMax ask (TopK's sorted=0 allows any order, so the sorted one too). It ranks floats by
    their total order, so -0.0 ranks below +0.0 where onnxruntime would call them a tie.
    """
    last = [i for i in range(x.rank) if i != axis] + [axis]
    back = [last.index(i) for i in range(x.rank)]
    moved = n.transpose(x, last)
    dims = moved.dims[:-1] + (k,)
    values = ArrayShape(x.dtype, dims)
    indices = ArrayShape(ir_dtype("s32"), dims)
    both = n.emit("topk", [moved], TupleShape((values, indices)), {"k": k, "largest": largest})
    top = n.emit("get-tuple-element", [both], values, {"index": 0})
    where = n.emit("get-tuple-element", [both], indices, {"index": 1})
    return n.transpose(top, back), n.transpose(n.convert(where, ir_dtype("s64")), back)


@_lowering("Softmax", "LogSoftmax")
def _softmax(n: _NodeContext):
    x = n.x(0)
    axes = (n.axis(n.attr("axis", -1), x.rank),)
    peak = n.broadcast_back(n.reduce(x, axes, "maximum"), x.dims, axes)
    shifted = n.arith("subtract", x, peak)
    exp = n.unary("exponential", shifted)
    total = n.reduce(exp, axes, "add")
    if n.op == "Softmax":
        return [n.arith("divide", exp, n.broadcast_back(total, x.dims, axes))]
    log_total = n.broadcast_back(n.unary("log", total), x.dims, axes)
    return [n.arith("subtract", shifted, log_total)]


def _standardize(n: _NodeContext, x: _Value, axes, stash: DType):
    """(x - mean) / sqrt(variance + epsilon) over `axes`, computed in `stash` and returned in
    x's type, with the mean and the inverse standard deviation (in `stash`, reduced shape)."""
    wide = n.convert(x, stash)
    mean = n.mean(wide, axes)
    centered = n.arith("subtract", wide, n.broadcast_back(mean, x.dims, axes))
    variance = n.mean(n.arith("multiply", centered, centered), axes)
    inv_std = n.unary("rsqrt", n.plus(variance, n.attr("epsilon", 1e-5)))
    normalized = n.arith("multiply", centered, n.broadcast_back(inv_std, x.dims, axes))
    return n.convert(normalized, x.dtype), mean, inv_std


@_lowering("LayerNormalization")
def _layer_norm(n: _NodeContext):
    x, scale, bias = n.x(0), n.x(1), n.opt(2)
    axis = n.axis(n.attr("axis", -1), x.rank)
    axes = tuple(range(axis, x.rank))
    stash = _ir_type(n.attr("stash_type", TensorProto.FLOAT), n.where)
    normalized, mean, inv_std = _standardize(n, x, axes, stash)
    result = n.arith("multiply", normalized, scale)
    if bias is not None:
        result = n.arith("add", result, bias)
    return [
        result,
        n.keep_dims(mean, x.dims, axes) if n.wanted(1) else None,
        n.keep_dims(inv_std, x.dims, axes) if n.wanted(2) else None,
    ]


@_lowering("BatchNormalization")
def _batch_norm(n: _NodeContext):
    x = n.x(0)
    if n.attr("training_mode", 0) or any(n.wanted(i) for i in (1, 2)):
        raise n.unsupported("BatchNormalization in training mode is not supported; export "
                            "the model in eval mode")
    if x.rank < 2:
        raise n.error(f"BatchNormalization needs (N, C, ...) input, got {x.shape}")
    scale, bias, mean, variance = (n.convert(n.x(i), x.dtype) for i in (1, 2, 3, 4))
    channels = (x.dims[1],)
    for v in (scale, bias, mean, variance):
        if v.dims != channels:
            raise n.error(f"BatchNormalization parameters must be [{x.dims[1]}], got {v.shape}")
    factor = n.arith("multiply", scale,
                     n.unary("rsqrt", n.plus(variance, n.attr("epsilon", 1e-5))))
    centered = n.arith("subtract", x, n.broadcast_in_dim(mean, x.dims, (1,)))
    scaled = n.arith("multiply", centered, n.broadcast_in_dim(factor, x.dims, (1,)))
    return [n.arith("add", scaled, n.broadcast_in_dim(bias, x.dims, (1,)))]


@_lowering("InstanceNormalization")
def _instance_norm(n: _NodeContext):
    # torch exports GroupNorm as Reshape -> InstanceNormalization (unit scale, zero bias) ->
    # Reshape -> Mul -> Add, so this is every GroupNorm too.
    x, scale, bias = n.x(0), n.x(1), n.x(2)
    if x.rank < 3:
        raise n.error(f"InstanceNormalization needs (N, C, D1, ...) input, got {x.shape}")
    for v in (scale, bias):
        if v.dims != (x.dims[1],):
            raise n.error(f"InstanceNormalization scale and B must be [{x.dims[1]}], got "
                          f"{v.shape}")
    # Statistics of 16-bit floats in f32, as LayerNormalization's default stash_type keeps them.
    normalized, _, _ = _standardize(n, x, tuple(range(2, x.rank)), accumulation_dtype(x.dtype))
    scaled = n.arith("multiply", normalized, n.broadcast_in_dim(scale, x.dims, (1,)))
    return [n.arith("add", scaled, n.broadcast_in_dim(bias, x.dims, (1,)))]


def _global_pool(n: _NodeContext, kind: str) -> list:
    x = n.x(0)
    axes = tuple(range(2, x.rank))
    reduced = n.mean(x, axes) if kind == "mean" else n.reduce(x, axes, kind)
    return [n.keep_dims(reduced, x.dims, axes)]


@_lowering("GlobalAveragePool")
def _global_average_pool(n: _NodeContext):
    return _global_pool(n, "mean")


@_lowering("GlobalMaxPool")
def _global_max_pool(n: _NodeContext):
    return _global_pool(n, "maximum")


# -- library calls and windows -----------------------------------------------------------------


@_lowering("MatMul")
def _matmul(n: _NodeContext):
    a, b = n.x(0), n.x(1)
    if a.dtype != b.dtype or min(a.rank, b.rank) < 1:
        raise n.error(f"cannot multiply {a.shape} by {b.shape}")
    k = a.dims[-1]
    if b.dims[max(b.rank - 2, 0)] != k:
        raise n.error(f"cannot multiply {a.shape} by {b.shape}: inner dimensions differ")
    if b.rank <= 2:  # (..., M, K) x (K, N): a's leading dims are free dims of the dot
        return [_dot(n, a, b, (), (a.rank - 1,), (0,))]
    if a.rank == 1:  # (K) x (..., K, N)
        return [_dot(n, a, b, (), (0,), (b.rank - 2,))]
    batch = n.broadcast_dims(a.dims[:-2], b.dims[:-2])
    a = n.broadcast(a, batch + a.dims[-2:])
    b = n.broadcast(b, batch + b.dims[-2:])
    batch_dims = tuple(range(len(batch)))
    return [_dot(n, a, b, batch_dims, (len(batch) + 1,), (len(batch),))]


def _dot(n: _NodeContext, a: _Value, b: _Value, batch, lhs_contracting, rhs_contracting):
    """HLO dot; output dims are batch, then a's free dims, then b's free dims."""
    def free(v: _Value, contracting):
        return tuple(d for i, d in enumerate(v.dims) if i not in batch and i not in contracting)

    dims = tuple(a.dims[i] for i in batch) + free(a, lhs_contracting) + free(b, rhs_contracting)
    return n.emit("dot", [a, b], ArrayShape(a.dtype, dims), {
        "lhs_batch_dims": tuple(batch), "rhs_batch_dims": tuple(batch),
        "lhs_contracting_dims": tuple(lhs_contracting),
        "rhs_contracting_dims": tuple(rhs_contracting)})


@_lowering("Einsum")
def _einsum(n: _NodeContext):
    operands = n.present_inputs()
    equation = str(n.attr("equation", "")).replace(" ", "")
    terms, output = _einsum_labels(n, equation, operands)
    sizes = {}
    for term, v in zip(terms, operands):
        if len(set(term)) != len(term):
            raise n.unsupported(f"Einsum '{equation}' repeats a label within one operand "
                                "(a diagonal or trace), which is not supported")
        for label, size in zip(term, v.dims):
            if sizes.setdefault(label, size) != size:
                raise n.unsupported(f"Einsum '{equation}' gives label '{label}' sizes "
                                    f"{sizes[label]} and {size}; only equal sizes are "
                                    "supported")
    # Labels only one operand has and the output lacks are summed away first.
    values = []
    for index, (term, v) in enumerate(zip(terms, operands)):
        elsewhere = set(output).union(*(t for i, t in enumerate(terms) if i != index))
        summed = [i for i, label in enumerate(term) if label not in elsewhere]
        if summed:
            v = n.reduce(v, summed, "add")
            terms[index] = "".join(label for label in term if label in elsewhere)
        values.append(v)
    if len(values) == 1:
        result, labels = values[0], terms[0]
    else:
        a, b = values
        (lhs, rhs), shared = terms, set(terms[0]) & set(terms[1])
        batch = [c for c in lhs if c in shared and c in output]
        contracted = [c for c in lhs if c in shared and c not in output]
        lhs_free = [c for c in lhs if c not in shared]
        rhs_free = [c for c in rhs if c not in shared]
        if a.dtype != b.dtype:
            raise n.error(f"Einsum multiplies {a.dtype} by {b.dtype}")
        # Both operands as (batch, free, contracted): the dot's batch dims then line up.
        a = n.transpose(a, [lhs.index(c) for c in batch + lhs_free + contracted])
        b = n.transpose(b, [rhs.index(c) for c in batch + rhs_free + contracted])
        count = len(batch)
        result = _dot(n, a, b, tuple(range(count)),
                      tuple(range(count + len(lhs_free), a.rank)),
                      tuple(range(count + len(rhs_free), b.rank)))
        labels = "".join(batch + lhs_free + rhs_free)
    return [n.transpose(result, [labels.index(c) for c in output])]


def _einsum_labels(n: _NodeContext, equation: str, operands) -> tuple[list[str], str]:
    """Each operand's labels and the output's, with '...' spelt out as digits (labels are
    letters), right-aligned so that operands' ellipses share their trailing dimensions."""
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands) or not 1 <= len(terms) <= 2:
        raise n.unsupported(f"Einsum '{equation}' of {len(operands)} operands is not supported "
                            "(one or two operands are)")
    digits = "0123456789"
    ellipsis_rank = 0
    for index, (term, v) in enumerate(zip(terms, operands)):
        letters = term.replace("...", "", 1)
        rank = v.rank - len(letters)
        if not (letters.isascii() and letters.isalpha()) or rank < 0 or rank > len(digits) \
                or (rank and "..." not in term):
            raise n.error(f"Einsum term '{term}' does not fit the operand {v.shape}")
        ellipsis_rank = max(ellipsis_rank, rank)
        terms[index] = term.replace("...", digits[len(digits) - rank:])
    spelt = digits[len(digits) - ellipsis_rank:]
    if arrow:
        output = output.replace("...", spelt)
    else:  # implicit output: the ellipsis, then the labels seen once, alphabetically
        labels = [c for c in "".join(terms) if c.isalpha()]
        output = spelt + "".join(sorted(c for c in set(labels) if labels.count(c) == 1))
    unknown = set(output) - set("".join(terms))
    if unknown or len(set(output)) != len(output):
        raise n.error(f"Einsum '{equation}' has an invalid output '{output}'")
    return terms, output


@_lowering("Gemm")
def _gemm(n: _NodeContext):
    a, b, c = n.x(0), n.x(1), n.opt(2)
    if a.rank != 2 or b.rank != 2 or a.dtype != b.dtype:
        raise n.error(f"Gemm needs two matrices of one type, got {a.shape} and {b.shape}")
    lhs_contracting = 0 if n.attr("transA", 0) else 1
    rhs_contracting = 1 if n.attr("transB", 0) else 0
    if a.dims[lhs_contracting] != b.dims[rhs_contracting]:
        raise n.error(f"Gemm inner dimensions differ: {a.shape} and {b.shape} "
                      f"(transA={n.attr('transA', 0)}, transB={n.attr('transB', 0)})")
    result = _dot(n, a, b, (), (lhs_contracting,), (rhs_contracting,))
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    if alpha != 1:
        result = n.times(result, alpha)
    if c is not None and beta != 0:
        if beta != 1:
            c = n.times(c, beta)
        result = n.arith("add", result, n.broadcast(c, result.dims))
    return [result]


def _window_padding(n: _NodeContext, sizes, strides, dilations, in_dims):
    """(low, high) padding per spatial dimension from `pads` or `auto_pad`."""
    rank = len(sizes)
    auto_pad = n.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = list(n.attr("pads", [0] * 2 * rank))
        if len(pads) != 2 * rank:
            raise n.error(f"pads {pads} do not have 2 x {rank} entries")
        return [(pads[i], pads[i + rank]) for i in range(rank)]
    if auto_pad == "VALID":
        return [(0, 0)] * rank
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise n.error(f"unknown auto_pad '{auto_pad}'")
    padding = []
    for size, stride, dilation, extent in zip(sizes, strides, dilations, in_dims):
        out = -(-extent // stride)
        total = max(0, (out - 1) * stride + (size - 1) * dilation + 1 - extent)
        small, large = total // 2, total - total // 2
        padding.append((small, large) if auto_pad == "SAME_UPPER" else (large, small))
    return padding


def _window_output(n, in_dims, sizes, strides, dilations, padding) -> list[int]:
    dims = []
    for extent, size, stride, dilation, (low, high) in zip(
            in_dims, sizes, strides, dilations, padding):
        span = extent + low + high - dilation * (size - 1) - 1
        if span < 0 or stride < 1:
            raise n.error(f"window {list(sizes)} does not fit the input {list(in_dims)}")
        dims.append(span // stride + 1)
    return dims


@_lowering("Conv")
def _conv(n: _NodeContext):
    x, w, bias = n.x(0), n.x(1), n.opt(2)
    spatial = x.rank - 2
    if spatial < 1 or w.rank != x.rank or x.dtype != w.dtype:
        raise n.error(f"Conv needs (N, C, ...) input and weights of the same rank and type, "
                      f"got {x.shape} and {w.shape}")
    group = n.attr("group", 1)
    if x.dims[1] != w.dims[1] * group or w.dims[0] % group:
        raise n.error(f"{x.dims[1]} input channels do not match weights {w.shape} in "
                      f"{group} group(s)")
    sizes = w.dims[2:]
    strides = tuple(n.attr("strides", [1] * spatial))
    dilations = tuple(n.attr("dilations", [1] * spatial))
    padding = _window_padding(n, sizes, strides, dilations, x.dims[2:])
    out = _window_output(n, x.dims[2:], sizes, strides, dilations, padding)
    window = {"size": tuple(sizes), "stride": strides, "pad": tuple(tuple(p) for p in padding),
              "lhs_dilate": (1,) * spatial, "rhs_dilate": dilations,
              "window_reversal": (False,) * spatial}
    return [_convolution(n, x, w, bias, out, window, group)]


@_lowering("ConvTranspose")
def _conv_transpose(n: _NodeContext):
    # The gradient of a Conv: the input dilated by the strides, convolved with the kernel
    # reversed, padded by the kernel's extent less the ONNX pads (ONNX operator docs' output
    # shape formula; XLA lowers conv_transpose the same way).
    x, w, bias = n.x(0), n.x(1), n.opt(2)
    spatial = x.rank - 2
    group = n.attr("group", 1)
    if spatial < 1 or w.rank != x.rank or x.dtype != w.dtype or w.dims[0] != x.dims[1] \
            or x.dims[1] % group:
        raise n.error(f"ConvTranspose needs (N, C, ...) input and (C, M/group, ...) weights "
                      f"of the same type, got {x.shape} and {w.shape} in {group} group(s)")
    sizes = w.dims[2:]
    strides = tuple(n.attr("strides", [1] * spatial))
    dilations = tuple(n.attr("dilations", [1] * spatial))
    extra = tuple(n.attr("output_padding", [0] * spatial))
    extents = [(k - 1) * d + 1 for k, d in zip(sizes, dilations)]
    full = [s * (i - 1) + e + o for s, i, e, o in zip(strides, x.dims[2:], extents, extra)]
    auto_pad = n.attr("auto_pad", "NOTSET")
    wanted = n.attr("output_shape")
    if wanted is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        targets = list(wanted)[-spatial:] if wanted is not None else \
            [i * s for i, s in zip(x.dims[2:], strides)]
        totals = [f - t for f, t in zip(full, targets)]
        pads = [(t // 2, t - t // 2) if auto_pad == "SAME_UPPER" else (t - t // 2, t // 2)
                for t in totals]
    elif auto_pad == "VALID":
        pads = [(0, 0)] * spatial
    else:
        pads = _window_padding(n, sizes, strides, dilations, x.dims[2:])
    out = [f - low - high for f, (low, high) in zip(full, pads)]
    padding = tuple((e - 1 - low, e - 1 - high + o)
                    for e, (low, high), o in zip(extents, pads, extra))
    if min(out) < 1 or min(min(p) for p in padding) < 0:
        raise n.unsupported(f"ConvTranspose pads {pads} larger than the kernel's extent "
                            f"{extents} are not supported")
    # (C, M/group, k...) to the (M, C/group, k...) a grouped convolution reads; rearranged
    # here when the weights are constants, so that no kernel does it on every run.
    per_group = (group, x.dims[1] // group, w.dims[1], *sizes)
    swap = (0, 2, 1, *range(3, w.rank + 1))
    dims = (group * w.dims[1], x.dims[1] // group, *sizes)
    if w.const is not None:
        kernel = n.const(w.const.reshape(per_group).transpose(swap).reshape(dims))
    else:
        kernel = n.reshape(n.transpose(n.reshape(w, per_group), swap), dims)
    window = {"size": tuple(sizes), "stride": (1,) * spatial, "pad": padding,
              "lhs_dilate": strides, "rhs_dilate": dilations,
              "window_reversal": (True,) * spatial}
    return [_convolution(n, x, kernel, bias, out, window, group)]


def _convolution(n: _NodeContext, x: _Value, w: _Value, bias: _Value | None, out, window,
                 group: int) -> _Value:
    """HLO convolution of (N, C, ...) input and (M, C/group, ...) weights, plus the bias."""
    digits = "".join(str(i) for i in range(x.rank - 2))
    result = n.emit("convolution", [x, w], ArrayShape(x.dtype, (x.dims[0], w.dims[0], *out)), {
        "window": window,
        "dim_labels": f"bf{digits}_oi{digits}->bf{digits}",
        "feature_group_count": group,
        "batch_group_count": 1,
    })
    if bias is not None:
        if bias.dims != (w.dims[0],):
            raise n.error(f"{n.op} bias must be [{w.dims[0]}], got {bias.shape}")
        result = n.arith("add", result, n.broadcast_in_dim(bias, result.dims, (1,)))
    return result


@_lowering("MaxPool", "AveragePool")
def _pool(n: _NodeContext):
    x = n.x(0)
    spatial = x.rank - 2
    ceil_mode = bool(n.attr("ceil_mode", 0))
    if ceil_mode and n.op == "AveragePool":
        raise n.unsupported("AveragePool with ceil_mode=1 is not supported")
    if n.wanted(1):
        raise n.unsupported("MaxPool's Indices output is not supported")
    sizes = tuple(n.attr("kernel_shape"))
    strides = tuple(n.attr("strides", [1] * spatial))
    dilations = tuple(n.attr("dilations", [1] * spatial))
    if spatial < 1 or len(sizes) != spatial:
        raise n.error(f"kernel_shape {list(sizes)} does not fit the input {x.shape}")
    padding = _window_padding(n, sizes, strides, dilations, x.dims[2:])
    if ceil_mode:
        padding = _ceil_mode_padding(x.dims[2:], sizes, strides, dilations, padding)
    out = _window_output(n, x.dims[2:], sizes, strides, dilations, padding)
    inferred = n.importer.inferred.get(n.node.output[0], (0, None))[1]
    if ceil_mode and inferred is not None and tuple(inferred[2:]) != tuple(out):
        # Before opset 22 ONNX's shape inference also counts that last window; the graph's
        # later shapes follow it, so the model cannot be imported as torch computes it.
        raise n.unsupported(f"ceil_mode gives {out} windows here, as torch and onnxruntime "
                            f"count them, but ONNX shape inference counts {list(inferred[2:])} "
                            "(a last window starting in the padding); export with opset 22 "
                            "or later")
    kind = "maximum" if n.op == "MaxPool" else "add"
    init = n.scalar(_identity(kind, x.dtype), x.dtype)
    window = {
        "size": (1, 1, *sizes), "stride": (1, 1, *strides),
        "pad": ((0, 0), (0, 0), *(tuple(p) for p in padding)),
        "lhs_dilate": (1,) * x.rank, "rhs_dilate": (1, 1, *dilations),
    }
    dims = (*x.dims[:2], *out)
    result = n.emit("reduce-window", [x, init], ArrayShape(x.dtype, dims), {
        "window": window, "to_apply": n.importer.reducer(kind, x.dtype), "reducer": kind})
    if n.op == "MaxPool":
        return [result]
    counts = _window_counts(x.dims[2:], out, sizes, strides, dilations, padding,
                            include_padding=bool(n.attr("count_include_pad", 0)))
    if counts.min() == counts.max():
        divisor = n.scalar(counts.flat[0], x.dtype)
    else:
        divisor = n.broadcast_in_dim(n.const(counts.astype(x.dtype.numpy)), dims,
                                     range(2, x.rank))
    return [n.map("divide", result, divisor)]


def _ceil_mode_padding(in_dims, sizes, strides, dilations, padding):
    """`padding` grown at the high end so that rounding the window count down gives ONNX's
    ceil_mode count: rounded up, less a last window that would start in the high padding
    (onnxruntime's and torch's rule). Max pooling pads with -inf, so the growth is exact."""
    grown = []
    for extent, size, stride, dilation, (low, high) in zip(
            in_dims, sizes, strides, dilations, padding):
        reach = dilation * (size - 1) + 1
        count = -(-(extent + low + high - reach) // stride) + 1
        if (count - 1) * stride >= extent + low:
            count -= 1
        grown.append((low, max(high, (count - 1) * stride + reach - extent - low)))
    return grown


def _window_counts(in_dims, out_dims, sizes, strides, dilations, padding, include_padding):
    """How many elements each pooling window covers, as an array over the output's spatial
    dims: inside the input, or inside the padded input when padding counts."""
    counts = np.ones((), dtype=np.int64)
    for extent, out, size, stride, dilation, (low, high) in zip(
            in_dims, out_dims, sizes, strides, dilations, padding):
        first, last = (-low, extent + high) if include_padding else (0, extent)
        taps = np.arange(out)[:, None] * stride - low + np.arange(size)[None, :] * dilation
        per_dim = ((taps >= first) & (taps < last)).sum(axis=1)
        counts = np.multiply.outer(counts, per_dim)
    return counts
