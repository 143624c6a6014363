"""`python -m compiler`: the explorer's command-line surface.

Users script it and teams run it in CI, so its commands and flags are kept stable (DESIGN.md).
Every error in the input is printed as `file:line:col: message` on stderr with exit status 1;
a usage error exits 2 (argparse's convention). Tracebacks are for bugs only.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

import numpy as np

from compiler.errors import InputError
from compiler.fusion.explore import exploration_to_dict, explore, parse_strategies
from compiler.fusion.report import format_codegen, format_exploration
from compiler.importers import load_graphs, pick_module
from compiler.ir.interpreter import InterpreterOptions, evaluate
from compiler.ir.summary import format_summary, summarize
from compiler.limits import ConfigurationError, Limits


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m compiler",
        description="Fusion Explorer's compiler: import a graph (XLA HLO text, ONNX, or the "
                    "explorer's JSON), inspect it, explore fusion plans for it, and evaluate "
                    "it with the reference interpreter.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    inspect = commands.add_parser(
        "inspect", help="graph summary: nodes, op histogram, parameters, outputs, bytes, flops",
        description="Print a graph summary: node count, op histogram, parameters, outputs, "
                    "flops and the bytes an unfused execution moves.")
    inspect.add_argument("file", help="a .hlo/.txt (HLO text), .onnx or .json graph; .gz works")
    inspect.add_argument("--json", action="store_true", help="one JSON object on stdout")
    inspect.add_argument("--module", type=int, default=0, metavar="N",
                         help="for an HLO file of several modules ('// -----'): which one "
                              "(0-based, default 0)")

    explore = commands.add_parser(
        "explore", help="fusion plans of several strategies side by side, with SOL and "
                        "projected times",
        description="Cut the graph into GPU kernels with each fusion strategy and predict each "
                    "kernel's speed-of-light time and projected time (limiter, occupancy, "
                    "waves; registers estimated, the CodeGen plan chosen by the heuristic) on "
                    "the device: unfused (one kernel per op), xla (XLA's GPU fusion rules), "
                    "stitch (AStitch's regional and global stitching), cost (a cost-based "
                    "search scored by the SOL model).")
    _plan_arguments(explore, default_strategy="all",
                    json_help="one JSON object on stdout, with every kernel and the decision log")

    codegen = commands.add_parser(
        "codegen", help="CUDA source per kernel, nvcc resources, optional CPU emulation",
        description="Generate CUDA C for every kernel of the chosen strategies' plans under "
                    "the CodeGen plan the projected cost model ranks fastest, compile it with "
                    "nvcc for the device's architecture and report registers, shared memory, "
                    "spills and the projected breakdown (with ptxas' registers); --json lists "
                    "every candidate plan with its projected time. --emulate runs every kernel "
                    "on the CPU emulator "
                    "against the reference interpreter (on random inputs) and reports the "
                    "largest error per kernel.")
    _plan_arguments(codegen, default_strategy="cost",
                    json_help="one JSON object on stdout: the explore object plus per-kernel "
                              "code fields")
    codegen.add_argument("--emulate", action="store_true",
                         help="run every kernel on the CPU emulator against the interpreter")
    codegen.add_argument("--out", metavar="DIR",
                         help="write each kernel's source to DIR/<strategy>/<function>.cu")

    calibrate = commands.add_parser(
        "calibrate", help="fit the projected model's derating constants to measured times",
        description="Read calibration records (JSON lines: a kernel's workload, its ptxas "
                    "resources and its measured time on the device, as the GPU runner writes "
                    "them), fit the projected model's derating constants for the device and "
                    "report the error (MAPE, median and largest APE) before and after.")
    calibrate.add_argument("records", help="a .jsonl file of calibration records")
    calibrate.add_argument("--device", default="h100",
                           help="the device the records were measured on (default h100)")
    calibrate.add_argument("--json", action="store_true", help="one JSON object on stdout")

    run = commands.add_parser(
        "run", help="evaluate the graph with the reference interpreter",
        description="Evaluate the graph with the reference interpreter. Inputs are arg0..argN "
                    "in entry-parameter order; outputs are written as out0..outM in flattened "
                    "output-tuple order.")
    run.add_argument("file", help="the graph file")
    run.add_argument("--inputs", required=True, metavar="IN.npz",
                     help="NumPy .npz with arrays arg0..argN")
    run.add_argument("--output", required=True, metavar="OUT.npz",
                     help="where to write out0..outM")
    run.add_argument("--module", type=int, default=0, metavar="N",
                     help="which module of a multi-module HLO file (default 0)")
    return parser


def _plan_arguments(command: argparse.ArgumentParser, default_strategy: str,
                    json_help: str) -> None:
    """The arguments `explore` and `codegen` share."""
    command.add_argument("file", help="the graph file")
    command.add_argument("--device", default="h100",
                         help="device model: v100, a100, h100, h200, l4 (default h100)")
    command.add_argument("--strategy", default=default_strategy,
                         metavar="all|unfused,xla,stitch,cost",
                         help=f"strategies to run (default {default_strategy})")
    command.add_argument("--json", action="store_true", help=json_help)
    command.add_argument("--module", type=int, default=0, metavar="N",
                         help="which module of a multi-module HLO file (default 0)")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        command = {"inspect": _inspect, "explore": _explore, "codegen": _codegen,
                   "calibrate": _calibrate, "run": _run}[args.command]
        return command(args)
    except (InputError, ConfigurationError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


def _load(args):
    graphs = load_graphs(args.file)
    return pick_module(graphs, args.module, args.file), len(graphs)


def _inspect(args) -> int:
    graph, module_count = _load(args)
    summary = summarize(graph)
    summary["module"] = args.module
    summary["module_count"] = module_count
    if args.json:
        json.dump({"graph": summary}, sys.stdout)
        sys.stdout.write("\n")
    else:
        if module_count > 1:
            print(f"module {args.module} of {module_count} (choose with --module N)")
        print(format_summary(summary))
    return 0


def _explore(args) -> int:
    strategies = parse_strategies(args.strategy)
    graph, _ = _load(args)
    plans = explore(graph, args.device, strategies)
    result = exploration_to_dict(summarize(graph), args.device, plans)
    _print(result, args.json, format_exploration)
    return 0


def _codegen(args) -> int:
    from compiler.codegen.stage import emulate, generate
    from compiler.cost.devices import get_device
    from compiler.ir.interpreter import evaluate_all
    from compiler.pipeline import attach_codes, has_source
    from compiler.runtime.inputs import random_inputs

    strategies = parse_strategies(args.strategy)
    graph, _ = _load(args)
    device = get_device(args.device)
    plans = explore(graph, args.device, strategies)
    result = exploration_to_dict(summarize(graph), args.device, plans)
    values = evaluate_all(graph, random_inputs(graph)) if args.emulate else None
    for name, plan in plans.items():
        codes = generate(graph, plan, device)
        if values is not None:
            emulate(graph, codes, values)
        attach_codes(result["strategies"][name], plan, codes)
        if args.out:
            for entry, code in zip(result["strategies"][name]["kernels"], codes):
                if has_source(code):
                    path = Path(args.out) / name / f"{code.function}.cu"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(code.emitted.source)
                    entry["source_path"] = str(path)
    _print(result, args.json, format_codegen)
    return 0


def _calibrate(args) -> int:
    from compiler.cost.calibrate import fit, load_records
    from compiler.cost.devices import get_device

    device = get_device(args.device)
    _, report = fit(device, load_records(args.records))
    result = {"device": device.name, **report}

    def text(r: dict) -> str:
        lines = [f"{r['before']['count']} records on {r['device']}",
                 f"{'':8s} {'MAPE %':>8s} {'median %':>9s} {'max %':>8s}"]
        for when in ("before", "after"):
            e = r[when]
            lines.append(f"{when:8s} {e['mape']:8.1f} {e['median_ape']:9.1f} {e['max_ape']:8.1f}")
        lines.append("constants: " + ", ".join(f"{k} {v:.3f}" for k, v in r["constants"].items()))
        ranking = r["ranking_after"]
        if ranking["kernels"]:
            lines.append(f"plan ranking: Kendall tau {ranking['mean_tau']:.3f} (mean over "
                         f"{ranking['kernels']} kernels measured under several plans)")
        return "\n".join(lines)

    _print(result, args.json, text)
    return 0


def _print(result: dict, as_json: bool, format_text) -> None:
    """`result` as one JSON object on stdout, or in its human-readable form."""
    if as_json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_text(result))


def _run(args) -> int:
    graph, _ = _load(args)
    inputs = _read_inputs(args.inputs, graph)
    limits = Limits.from_env()
    outputs = evaluate(graph, inputs,
                       InterpreterOptions(max_while_iterations=limits.max_while_iterations))
    np.savez(args.output, **{f"out{i}": value for i, value in enumerate(outputs)})
    for i, (name, value) in enumerate(zip(graph.output_names(), outputs)):
        print(f"out{i} = {name}: {value.dtype}{list(value.shape)}")
    return 0


def _read_inputs(path: str, graph) -> list[np.ndarray]:
    """arg0..argN from an .npz; raw 2-byte/1-byte records are read as the parameter's dtype.

    NumPy stores ml_dtypes arrays (bf16, fp8) in .npz files as raw void records ('|V2'), so an
    array saved as bfloat16 comes back as void; its bytes are the bf16 values.
    """
    count = len(graph.parameters)
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise InputError(f"cannot read inputs: {error}", path) from None
    if not hasattr(archive, "files"):
        raise InputError("expected a .npz archive of arrays arg0..argN, found a single array",
                         path)
    names = set(archive.files)
    expected = [f"arg{i}" for i in range(count)]
    missing = [n for n in expected if n not in names]
    if missing:
        raise InputError(f"the graph takes {count} parameters; missing {', '.join(missing)} "
                         f"(found: {', '.join(sorted(names)) or 'nothing'})", path)
    unexpected = sorted(names - set(expected))
    if unexpected:
        raise InputError(f"the graph takes {count} parameters (arg0..arg{count - 1}); "
                         f"unexpected {', '.join(unexpected)}", path)
    arrays = []
    for name, parameter in zip(expected, graph.parameter_nodes()):
        array = archive[name]
        dtype = None if parameter.shape.is_tuple else parameter.shape.dtype
        if array.dtype.kind == "V" and dtype is not None and dtype.numpy_name is not None \
                and array.dtype.itemsize == dtype.numpy.itemsize:
            array = array.view(dtype.numpy)
        arrays.append(array)
    return arrays
