"""`python -m compiler`: the explorer's command-line surface.

Users script it and teams run it in CI, so its commands and flags are kept stable (DESIGN.md).
Every error in the input is printed as `file:line:col: message` on stderr with exit status 1;
a usage error exits 2 (argparse's convention). Tracebacks are for bugs only.

A reader that stops early (`python -m compiler explore big.hlo | head -1`) is not an error of
ours: the command stops writing, prints nothing more and exits with status 141 (128 + SIGPIPE),
what the shell reports for any Unix tool that a closed pipe stopped (`yes | head -1` under
`set -o pipefail`). Not 0: the output was cut short, and a script that checks the status of
every command in a pipeline should be able to tell.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import zipfile
from pathlib import Path

import numpy as np

from compiler.client import ClientError
from compiler.client_cli import (CLIENT_ERROR_STATUS, COMMANDS as CLIENT_COMMANDS,
                                 add_commands, print_result as _print)
from compiler.cost.calibrate import fit, load_records
from compiler.errors import InputError
from compiler.fusion.autotune import Budget, autotune, choose_to_measure, format_tuning
from compiler.fusion.explore import exploration_to_dict, explore, parse_strategies
from compiler.fusion.plan_files import plan_from_file, plan_to_file, read_plan_file
from compiler.fusion.pricing import DEFAULT_MODEL, PRICERS
from compiler.fusion.report import format_codegen, format_exploration
from compiler.importers import load_graphs, pick_module
from compiler.ir.interpreter import InterpreterOptions, evaluate
from compiler.ir.summary import format_summary, summarize
from compiler.limits import ConfigurationError, Limits
from compiler.runtime.gpu import GpuUnavailable
from compiler.stages.codegen import emulate, generate
from compiler.stages.dp import DEFAULT_BUCKET_MB, data_parallel, format_dp
from compiler.stages.learned.collect import collect_dataset
from compiler.stages.pipeline import attach_codes, has_source
from compiler.stages.timeline import attach_timelines
from compiler.target.devices import get_device
from compiler.target.launch import DEFAULT_RUNTIME, RUNTIMES
from compiler.target.sol import SolModel


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
                    "waves; registers estimated, under the best CodeGen plan the projected "
                    "model finds) on the device: unfused (one kernel per op), xla (XLA's GPU "
                    "fusion rules), stitch (AStitch's regional and global stitching), cost (a "
                    "cost-based search that prices every candidate kernel with --cost-model "
                    "and is never priced above the other strategies' plans).")
    _plan_arguments(explore, default_strategy="all",
                    json_help="one JSON object on stdout, with every kernel, the decision log "
                              "and each plan's timeline")
    explore.add_argument("--dp-world", type=int, default=None, metavar="N",
                         help="simulate data-parallel training over N GPUs: the step's gradient "
                              "all-reduce in buckets against the compute that remains, with "
                              "outputs released when the step ends and each when ready")
    explore.add_argument("--interconnect", default="nvlink", metavar="nvlink|ib|GBPS",
                         help="the all-reduce's link with --dp-world: nvlink (8 GPUs on NVLink "
                              "4, 450 GB/s per GPU each way, the default), ib (NDR InfiniBand, "
                              "50 GB/s per GPU) or a bandwidth in GB/s per GPU")
    explore.add_argument("--bucket-mb", type=float, default=DEFAULT_BUCKET_MB, metavar="M",
                         help=f"gradient bucket cap in MiB with --dp-world (default "
                              f"{DEFAULT_BUCKET_MB:g}, PyTorch DDP's bucket_cap_mb)")

    codegen = commands.add_parser(
        "codegen", help="CUDA source per kernel, nvcc resources, optional CPU emulation",
        description="Generate CUDA C for every kernel of the chosen strategies' plans under "
                    "the CodeGen plan the projected cost model ranks fastest, compile it with "
                    "nvcc for the device's architecture and report registers, shared memory, "
                    "spills and the projected breakdown (with ptxas' registers); --json lists "
                    "every candidate plan with its projected time. --emulate runs every kernel "
                    "on the CPU emulator against the reference interpreter, each kernel on its "
                    "own random inputs, and reports the largest error per kernel (or why a "
                    "kernel could not be checked).")
    _plan_arguments(codegen, default_strategy="cost",
                    json_help="one JSON object on stdout: the explore object plus per-kernel "
                              "code fields")
    codegen.add_argument("--emulate", action="store_true",
                         help="run every kernel on the CPU emulator against the interpreter")
    codegen.add_argument("--out", metavar="DIR",
                         help="write each kernel's source to DIR/<strategy>/<function>.cu")

    autotune = commands.add_parser(
        "autotune", help="search fusion plans with a cost model, as the learned model's paper "
                         "tunes fusion: the best plans and which to measure",
        description="Start from every strategy's plan (--strategy, and --plan files) and search "
                    "plans by plan edits (merge a kernel with one that reads it, move an op "
                    "into the kernel it reads from, split an op out, split a kernel into its "
                    "ops), scoring each with --model (projected, learned or sol; learned needs "
                    "--learned-model) incrementally. Prints the best plan with its moves and "
                    "predicted gains, the --top best distinct plans with every model's total, "
                    "and the --measure-top plans worth timing on a GPU: the best ones and "
                    "those the models disagree on most. Deterministic for a --seed and "
                    "--evaluations budget; --budget-s cuts the same search short. "
                    "--save-plans writes the tuned plan's file too (tuned.plan.json).")
    _plan_arguments(autotune, default_strategy="all",
                    json_help="one JSON object on stdout: the search's result and history")
    autotune.add_argument("--model", default="projected", choices=("projected", "learned",
                                                                   "sol"),
                          help="the model that scores plans (default projected)")
    autotune.add_argument("--search", default="anneal", choices=("anneal", "beam"),
                          help="simulated annealing (default) or beam search "
                               "(benchmarks/autotune.py compares them)")
    autotune.add_argument("--budget-s", type=float, default=None, metavar="S",
                          help="stop after S seconds of search")
    autotune.add_argument("--evaluations", type=int, default=None, metavar="N",
                          help="stop after N plans scored (default 2000 without --budget-s)")
    autotune.add_argument("--seed", type=int, default=0, help="the search's seed (default 0)")
    autotune.add_argument("--top", type=int, default=5, metavar="K",
                          help="how many distinct best plans to report (default 5)")
    autotune.add_argument("--measure-top", type=int, default=3, metavar="K",
                          help="how many of them to name for measuring (default 3)")

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
    _costmodel_commands(commands)
    add_commands(commands)
    return parser


def _plan_arguments(command: argparse.ArgumentParser, default_strategy: str,
                    json_help: str) -> None:
    """The arguments `explore` and `codegen` share."""
    command.add_argument("file", help="the graph file")
    command.add_argument("--device", default="h100",
                         help="device model: v100, a100, h100, h200, l4 (default h100)")
    command.add_argument("--strategy", default=default_strategy,
                         metavar="all|unfused,xla,stitch,cost,xla-gpu",
                         help=f"strategies to run (default {default_strategy}); 'all' is our "
                              f"four, xla-gpu (XLA:GPU's own plan, compiled ahead of time by "
                              f"JAX's CUDA plugin) is named explicitly")
    command.add_argument("--json", action="store_true", help=json_help)
    command.add_argument("--module", type=int, default=0, metavar="N",
                         help="which module of a multi-module HLO file (default 0)")
    command.add_argument("--learned-model", metavar="FILE",
                         help="a model file train-costmodel wrote for the device: adds each "
                              "kernel's learned time (learned_us) and the plan's learned total")
    command.add_argument("--runtime", default=DEFAULT_RUNTIME, choices=RUNTIMES,
                         help="how the plans' kernels are launched, which every kernel's launch "
                              "term and the cost strategy's decisions follow: graph (default; "
                              "one CUDA graph replay, as XLA's command buffers and "
                              "torch.compile's reduce-overhead mode run a step) or stream (each "
                              "kernel launched by the host, as PyTorch eager does); the JSON "
                              "gives every plan's total under both")
    command.add_argument("--plan", metavar="PLAN.json", action="append", default=[],
                         help="a plan file (--save-plans writes them) to apply to the graph: "
                              "its plan joins the strategies as 'custom' (or 'custom:NAME' "
                              "when the file has a name), checked and priced like them; a plan "
                              "for another graph, an unknown node or an illegal grouping is "
                              "refused saying which node and why (repeatable)")
    command.add_argument("--save-plans", metavar="DIR",
                         help="write every plan as a plan file, DIR/STRATEGY.plan.json: its "
                              "kernels as lists of node names and the graph's digest")
    command.add_argument("--cost-model", default=DEFAULT_MODEL, choices=PRICERS,
                         help="the model that prices the cost strategy's fusion decisions: "
                              "projected (default; each candidate kernel at the projected time "
                              "of its best CodeGen plan), sol (speed of light) or learned "
                              "(needs --learned-model)")


# The learned model's options as train-costmodel offers them. They are spelled out here because
# the modules that define them import torch, which would cost every command seconds to start;
# tests/compiler/test_cli_costmodel.py checks that they match model.READOUTS, train.LOSSES and
# TrainConfig's defaults.
READOUTS = ("mean", "max", "sum", "transformer")
LOSSES = ("mse", "rank", "combined")
RANK_KINDS = ("logistic", "hinge")
DEFAULT_LOSS, DEFAULT_RANK_KIND, DEFAULT_EPOCHS, DEFAULT_THREADS = "combined", "logistic", 60, 1
SYNTHETIC_WARNING = "trained on SYNTHETIC targets: not a GPU prediction"


def _costmodel_commands(commands) -> None:
    """collect-costmodel-data and train-costmodel: the learned cost model's data and training
    (compiler/cost/learned/)."""
    collect = commands.add_parser(
        "collect-costmodel-data", help="time every candidate kernel of some programs on the "
                                       "GPU: a dataset for train-costmodel",
        description="For every program of the files: every distinct kernel of the strategies' "
                    "fusion plans under its --top-k fastest CodeGen plans (projected model), "
                    "emitted, built with nvcc and timed alone on this machine's GPU after a "
                    "check against the reference interpreter; written as one dataset file "
                    "(gzip-compressed JSON lines). The GPU must be the --device. With "
                    "--synthetic no GPU is used: the targets come from a known function "
                    "(compiler/cost/learned/synthetic.py) and the file is labelled synthetic, "
                    "for testing the pipeline only.")
    collect.add_argument("files", nargs="+", metavar="FILE",
                         help="graph files (.hlo, .onnx, .json; .gz works)")
    collect.add_argument("--device", default="h100",
                         help="the device the plans are made for and the GPU is (default h100)")
    collect.add_argument("--strategy", default="all", metavar="all|unfused,xla,stitch,cost",
                         help="strategies whose kernels are collected (default all)")
    collect.add_argument("--top-k", type=int, default=4, metavar="K",
                         help="candidate CodeGen plans per kernel (default 4)")
    collect.add_argument("--synthetic", action="store_true",
                         help="synthetic targets instead of GPU timings (no GPU needed)")
    collect.add_argument("--seed", type=int, default=0,
                         help="seed of the synthetic targets' noise (default 0)")
    collect.add_argument("--out", required=True, metavar="OUT.jsonl.gz",
                         help="the dataset file to write (must not exist)")
    collect.add_argument("--json", action="store_true",
                         help="the collection summary as one JSON object on stdout")

    train = commands.add_parser(
        "train-costmodel", help="train the learned cost model on datasets and rank it "
                                "against the SOL and projected models",
        description="Train the learned cost model (a GraphSAGE network over each kernel's op "
                    "graph) on the dataset files of one device, holding out a quarter of the "
                    "programs, and evaluate it, the SOL model and the projected model on the "
                    "same held-out kernels; then again with whole model families held out. "
                    "The model trained on the program split is saved as the next version, "
                    "OUT_DIR/learned-<device>-v<N>.pt, with both evaluations in its header. "
                    "A model trained on synthetic data says so, and the web app does not "
                    "predict with it unless LEARNED_ALLOW_SYNTHETIC is set.")
    train.add_argument("datasets", nargs="+", metavar="DATASET",
                       help="dataset files written by collect-costmodel-data")
    train.add_argument("--device", default="h100",
                       help="the device of the datasets (default h100)")
    train.add_argument("--out-dir", default="var/models", metavar="DIR",
                       help="the model directory (default var/models)")
    train.add_argument("--readout", default="mean", choices=READOUTS,
                       help="how node states become one kernel vector (default mean)")
    train.add_argument("--compare-readouts", action="store_true",
                       help="train every readout on both splits and save the one with the "
                            "lowest held-out-program MAPE (ties: higher Kendall tau)")
    train.add_argument("--loss", default=DEFAULT_LOSS, choices=LOSSES,
                       help=f"log-time squared error, pairwise ranking within a kernel's "
                            f"plans, or both (default {DEFAULT_LOSS})")
    train.add_argument("--rank-kind", default=DEFAULT_RANK_KIND, choices=RANK_KINDS,
                       help=f"the ranking loss's form (default {DEFAULT_RANK_KIND})")
    train.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS, metavar="N",
                       help=f"passes over the training samples (default {DEFAULT_EPOCHS})")
    train.add_argument("--holdout-family", action="extend", nargs="+", metavar="F",
                       help="families to hold out in the family split (default: a quarter "
                            "of them drawn with the seed); give them after the datasets")
    train.add_argument("--seed", type=int, default=0,
                       help="seed of the splits and of training (default 0)")
    train.add_argument("--threads", type=int, default=DEFAULT_THREADS, metavar="N",
                       help=f"torch threads while training (default {DEFAULT_THREADS}: more "
                            f"help only with tens of thousands of samples on an idle machine; "
                            f"see benchmarks/README.md)")
    train.add_argument("--json", action="store_true",
                       help="one JSON object on stdout: the model file and its evaluation")


# The exit status when the reader of stdout closed it early (see the module docstring).
BROKEN_PIPE_STATUS = 128 + 13   # SIGPIPE


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _main(argv)
        finally:
            # Flushed here (after argparse's --help too), so that a closed pipe shows up as
            # the exception below, not as a complaint from the interpreter's flush at exit.
            sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
        return BROKEN_PIPE_STATUS


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that nothing more (the interpreter's flush at exit
    included) writes to the closed pipe (the Python documentation's advice for SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        command = {"inspect": _inspect, "explore": _explore, "codegen": _codegen,
                   "calibrate": _calibrate, "run": _run, "autotune": _autotune,
                   "collect-costmodel-data": _collect_costmodel_data,
                   "train-costmodel": _train_costmodel, **CLIENT_COMMANDS}[args.command]
        return command(args)
    except (InputError, ConfigurationError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except ClientError as error:
        print(f"error: {error}", file=sys.stderr)
        return CLIENT_ERROR_STATUS


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
    setup = None if args.dp_world is None else data_parallel(args.dp_world, args.interconnect,
                                                             args.bucket_mb)
    graph, _ = _load(args)
    predictor = _predictor(args)
    plans = explore(graph, args.device, strategies, args.cost_model, predictor,
                    runtime=args.runtime)
    _plan_files(args, graph, plans)
    result = exploration_to_dict(summarize(graph), args.device, plans)
    if predictor is not None:
        _attach_learned(result, graph, plans, predictor)
    attach_timelines(result, setup)
    _print(result, args.json, format_exploration if setup is None else _with_dp_text)
    return 0


def _with_dp_text(result: dict) -> str:
    """explore's text with each plan's data-parallel overlap after it."""
    first = next(iter(result["strategies"].values()), {}).get("dp") or {}
    setup = first.get("setup")
    lines = [format_exploration(result), ""]
    if setup:
        link = setup["link"]
        lines.append(f"data-parallel over {setup['world']} GPUs, {link['name']} "
                     f"({link['gbps']:g} GB/s per GPU, {link['alpha_us']:g} us per ring step), "
                     f"buckets of {setup['bucket_bytes'] / 2**20:g} MiB; projected times")
    lines += [format_dp(name, plan["dp"]) for name, plan in result["strategies"].items()]
    return "\n".join(lines)


def _codegen(args) -> int:
    strategies = parse_strategies(args.strategy)
    graph, _ = _load(args)
    device = get_device(args.device)
    predictor = _predictor(args)
    plans = explore(graph, args.device, strategies, args.cost_model, predictor,
                    runtime=args.runtime)
    _plan_files(args, graph, plans)
    result = exploration_to_dict(summarize(graph), args.device, plans)
    for name, plan in plans.items():
        codes = generate(graph, plan, device)
        if args.emulate:
            emulate(graph, codes)
        attach_codes(result["strategies"][name], plan, codes)
        if predictor is not None:
            _attach_learned(result, graph, {name: plan}, predictor, codes)
        if args.out:
            for entry, code in zip(result["strategies"][name]["kernels"], codes):
                if has_source(code):
                    path = Path(args.out) / name / f"{code.function}.cu"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(code.emitted.source)
                    entry["source_path"] = str(path)
    _print(result, args.json, format_codegen)
    return 0


def _autotune(args) -> int:
    strategies = parse_strategies(args.strategy)
    graph, _ = _load(args)
    predictor = _predictor(args)
    if args.model == "learned" and predictor is None:
        raise InputError("--model learned needs --learned-model FILE (a model train-costmodel "
                         "wrote for the device)")
    for name, value in (("--budget-s", args.budget_s), ("--evaluations", args.evaluations),
                        ("--top", args.top)):
        if value is not None and value <= 0:
            raise InputError(f"{name} must be above zero, not {value}")
    budget = Budget(args.budget_s, args.evaluations if args.evaluations is not None
                    or args.budget_s is not None else 2000)
    starts = explore(graph, args.device, strategies, args.cost_model, predictor,
                     runtime=args.runtime)
    _plan_files(args, graph, starts)
    result = autotune(graph, starts, args.model, args.search, budget, args.seed, args.top,
                      predictor)
    choose_to_measure(result, args.measure_top)
    if args.save_plans:
        target = Path(args.save_plans) / "tuned.plan.json"
        target.write_text(json.dumps(plan_to_file(graph, result.tuned_plan(), "tuned"),
                                     indent=1) + "\n")
    _print(result.to_dict(), args.json, format_tuning)
    return 0


def _plan_files(args, graph, plans: dict) -> None:
    """Add the plans of --plan files to `plans`, then write every plan to --save-plans."""
    model = SolModel(graph, get_device(args.device))
    for path in args.plan:
        plan = plan_from_file(graph, model, read_plan_file(path), path, args.runtime)
        if plan.strategy in plans:
            raise InputError(f"{path}: a plan named {plan.strategy!r} is given twice: name the "
                             f"files' plans apart (\"name\": ...)")
        plans[plan.strategy] = plan
    if args.save_plans:
        folder = Path(args.save_plans)
        folder.mkdir(parents=True, exist_ok=True)
        for name, plan in plans.items():
            if plan.unavailable is None:
                target = folder / f"{name.replace(':', '_')}.plan.json"
                target.write_text(json.dumps(plan_to_file(graph, plan), indent=1) + "\n")


def _predictor(args):
    """The learned model --learned-model names (checked before any work), or None."""
    if not args.learned_model:
        return None
    from compiler.cost.learned.predict import LearnedPredictor

    predictor = LearnedPredictor.load(args.learned_model)
    if predictor.device != get_device(args.device).name:
        raise InputError(f"{args.learned_model}: a model for {predictor.device}, not for "
                         f"{args.device}")
    return predictor


def _attach_learned(result: dict, graph, plans: dict, predictor, codes=None) -> None:
    from compiler.cost.learned.predict import attach_learned

    for name, plan in plans.items():
        attach_learned(result["strategies"][name], graph, plan, codes, predictor)


def _calibrate(args) -> int:
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


def _collect_costmodel_data(args) -> int:
    strategies = parse_strategies(args.strategy)

    def progress(stage: str, done: int, total: int, detail: str = "") -> None:
        if stage == "collect" and done:
            print(f"collected {done}/{total} programs", file=sys.stderr)

    try:
        summary = collect_dataset(args.files, args.device, args.out, strategies=strategies,
                                  top_k=args.top_k, synthetic=args.synthetic, seed=args.seed,
                                  progress=progress)
    except GpuUnavailable as error:
        raise InputError(f"{error}; run on a machine with the GPU, or collect --synthetic "
                         f"data to test the pipeline") from None

    def text(r: dict) -> str:
        lines = [f"{r['out']}: {r['samples']} samples of {r['programs']} programs "
                 f"({r['origin']}, {r['device']}{', ' + r['gpu'] if r['gpu'] else ''}) "
                 f"in {r['seconds']:.1f} s",
                 f"candidates {r['candidates']}, built {r['built']}, measured {r['measured']}"]
        lines += [f"dropped {count}: {reason}" for reason, count in r["dropped"].items()]
        lines += [f"not collected: {e['program']} ({e['file']}): {e['error']}"
                  for e in r["errors"]]
        if r["origin"] == "synthetic":
            lines.append("SYNTHETIC targets (a known function): not GPU timings")
        return "\n".join(lines)

    _print(summary, args.json, text)
    return 0


def _train_costmodel(args) -> int:
    from compiler.cost.learned.experiment import load_datasets, train_costmodel
    from compiler.cost.learned.model import ModelConfig
    from compiler.cost.learned.train import TrainConfig

    if args.epochs < 1 or args.threads < 1:
        raise InputError(f"--epochs and --threads must be at least 1, not {args.epochs} and "
                         f"{args.threads}")
    samples, datasets = load_datasets(args.datasets, args.device)
    model = train_costmodel(
        samples, args.device, args.out_dir, datasets=datasets,
        model_config=ModelConfig(readout=args.readout),
        train_config=TrainConfig(epochs=args.epochs, loss=args.loss, rank_kind=args.rank_kind,
                                 seed=args.seed, threads=args.threads),
        compare_readouts=args.compare_readouts, holdout_families=args.holdout_family,
        seed=args.seed)
    header = model.header
    result = {"path": str(model.path), "label": model.label, "device": model.device,
              "version": model.version, "origin": model.origin,
              **{key: header[key] for key in ("created", "datasets", "programs", "config",
                                              "train_config", "evaluation", "readouts",
                                              "readout_winner")}}
    _print(result, args.json, _format_training)
    return 0


def _format_training(r: dict) -> str:
    from compiler.cost.learned.experiment import format_evaluation

    lines = [f"{r['label']}: {r['path']} ({r['origin']}, readout {r['config']['readout']})"]
    if r["origin"] == "synthetic":
        lines.append(SYNTHETIC_WARNING)
    lines += [f"dataset {d['path']}: {d['samples']} samples, {d['origin']}"
              f"{', ' + d['gpu'] if d['gpu'] else ''}" for d in r["datasets"]]
    return "\n".join(lines + format_evaluation(r))


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
    """arg0..argN from an .npz (bf16 and fp8 arrays come back as raw records, which the
    interpreter reads as its parameters' dtypes)."""
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
    return [archive[name] for name in expected]
