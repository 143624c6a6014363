"""Plan files: any plan as JSON, and a plan file applied to the same graph (issue 36, point 3).

A plan file holds what a user decided and nothing the compiler derives:

    {"format": "fusion-explorer-plan", "version": 1,
     "graph": {"name": "jit_step", "nodes": 4335, "digest": "sha256 of the graph's structure"},
     "strategy": "cost", "device": "h100", "runtime": "graph",
     "kernels": [{"name": "loop.0", "nodes": ["add.3", ...], "recomputed": ["broadcast.1"]},
                 ...]}

`kernels` lists each kernel's owned nodes and the cheap nodes it computes again, by their names
in the graph; kinds, inputs, outputs and prices are derived again when the file is applied
(kinds by the kernel analysis, compiler/kernels/analysis.py), so a file stays valid when the
cost models change. A file the explorer exports from a stored plan, or writes for a saved edit,
also gives each kernel's "kind", "dominant" and "xla_name": read back only for a file the
explorer wrote itself (`plan_from_file`'s keep_kinds: a saved edit), never for a user's. The digest (`graph_digest`) covers every node's name, op, shape and operands,
not constant values, so a plan applies to the same program exported again, and only to it.

Applying a file (`plan_from_file`) refuses, saying which node and why: another graph (the
digests differ), a node the graph does not have, a node owned by two kernels, a node no kernel
computes, a recomputed node that is not cheap enough to compute twice, and any grouping an edit
would be refused for (compiler/fusion/edits.py: a library call with other ops, a cycle, the
kernel caps, the code budget).
"""

from __future__ import annotations

import hashlib
import json

from compiler.errors import InputError
from compiler.fusion.edits import EditRefused, PlanEditor
from compiler.ir.graph import Graph
from compiler.kernels.grouping import (FUSIBLE, LIBRARY, graph_output_sources, is_duplicable,
                                       node_role)
from compiler.kernels.plan import FusionPlan, PlanError, check_plan
from compiler.target.launch import DEFAULT_RUNTIME
from compiler.target.sol import SolModel

FORMAT = "fusion-explorer-plan"
VERSION = 1
STRATEGY = "custom"


def graph_digest(graph: Graph) -> str:
    """A digest of the graph's structure: every node's name, op, shape and operands, in order."""
    digest = hashlib.sha256()
    for node in graph:
        digest.update(f"{node.name}|{node.op}|{node.shape}|{','.join(node.operands)}\n"
                      .encode())
    return digest.hexdigest()


def plan_to_file(graph: Graph, plan: FusionPlan, name: str | None = None,
                 kinds: bool = False) -> dict:
    """The plan file of `plan` (module docstring); `name` makes it apply as `custom:NAME`;
    `kinds` adds each kernel's kind, dominant node and XLA:GPU name (read back only with
    plan_from_file's `keep_kinds`)."""
    return stored_plan_file(graph_facts(graph), plan.strategy, plan.device, plan.runtime,
                            [{"name": k.name, "nodes": k.nodes, "recomputed": k.recomputed,
                              **({"kind": k.kind, "dominant": k.dominant,
                                  "xla_name": k.xla_name} if kinds else {})}
                             for k in plan.kernels], name)


def graph_facts(graph: Graph) -> dict:
    """What a plan file says of its graph: {"name", "nodes" (how many), "digest"}."""
    return {"name": graph.name, "nodes": len(graph.nodes), "digest": graph_digest(graph)}


def stored_plan_file(graph: dict, strategy: str, device: str, runtime: str,
                     kernels: list[dict], name: str | None = None) -> dict:
    """The plan file of a plan whose kernels are given as a run stores them ({"name",
    "nodes", "recomputed"}, any further fields left out); `graph`: its `graph_facts`."""
    return {"format": FORMAT, "version": VERSION, **({"name": name} if name else {}),
            "graph": dict(graph),
            "strategy": strategy, "device": device, "runtime": runtime,
            "kernels": [{"name": k["name"], "nodes": list(k["nodes"]),
                         "recomputed": list(k.get("recomputed") or ()),
                         **{key: k[key] for key in ("kind", "dominant", "xla_name")
                            if key in k}} for k in kernels]}


def read_plan_file(path: str) -> dict:
    """The JSON of a plan file; InputError naming the file and the place when it is not."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as error:
        raise InputError(f"{path}: cannot read the plan file: {error.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        where = f" (line {error.lineno}, column {error.colno})" if hasattr(error, "lineno") else ""
        raise InputError(f"{path}: not a JSON plan file{where}: {error}") from None


def plan_from_file(graph: Graph, model: SolModel, data: dict, source: str = "plan file",
                   runtime: str | None = None, keep_kinds: bool = False) -> FusionPlan:
    """The plan a plan file describes, checked and priced under `runtime` (by default the
    file's) (module docstring); InputError saying what is wrong and where. `keep_kinds`: the
    kernels keep the kinds the file gives them (`plan_from_kernels`), for a file this
    explorer wrote itself from an edited stored plan (a saved plan), never for a user's."""
    kernels = _checked(graph, data, source)
    plan = plan_from_kernels(graph, model, kernels, source,
                             runtime or data.get("runtime") or DEFAULT_RUNTIME, keep_kinds)
    name = data.get("name")
    plan.strategy = f"{STRATEGY}:{name}" if name else STRATEGY
    return plan


def plan_from_kernels(graph: Graph, model: SolModel, kernels: list[dict], source: str,
                      runtime: str, keep_kinds: bool = False) -> FusionPlan:
    """The plan whose kernels own and recompute what `kernels` list ({"nodes", "recomputed"},
    their node names checked: `_checked`), built and priced as an edit's kernels are; InputError
    naming `source` when a node is in no kernel or the grouping is illegal. A stored plan's
    kernels (a run's artifact) make a plan to edit the same way, with `keep_kinds`: each keeps
    the kind, dominant node and XLA:GPU name its strategy gave it ({"kind", "dominant",
    "xla_name"}), so that the plan is priced as its strategy priced it (a plan file's kinds
    are the kernel analysis's, as the file holds none)."""
    # What no kernel may leave to its readers to compute again: what is not cheap, what the
    # graph returns (a cheap node nobody owns is computed by every kernel that reads it).
    outputs = graph_output_sources(graph)
    required = [node.name for node in graph if node_role(node) in (FUSIBLE, LIBRARY)
                and (not is_duplicable(node) or node.name in outputs)]
    covered = {name for entry in kernels for name in entry["nodes"]}
    missing = [name for name in required if name not in covered]
    if missing:
        raise InputError(f"{source}: node {missing[0]} is in no kernel"
                         + (f" (nor {len(missing) - 1} more)" if len(missing) > 1 else "")
                         + ": every op the graph computes needs a kernel")
    empty = FusionPlan(STRATEGY, model.device.name, [], [], runtime=runtime)
    try:
        kinds = [(entry.get("kind"), entry.get("dominant"), entry.get("xla_name"))
                 if entry.get("kind") else None for entry in kernels] if keep_kinds else None
        plan = PlanEditor(graph, model, empty).regroup(
            [set(entry["nodes"]) for entry in kernels],
            [entry.get("recomputed") or [] for entry in kernels], kinds)
        check_plan(graph, plan)
    except (EditRefused, PlanError) as refusal:
        raise InputError(f"{source}: {refusal}") from None
    plan.strategy = STRATEGY
    plan.cost_model = None
    return plan


def _checked(graph: Graph, data: dict, source: str) -> list[dict]:
    """The file's kernels, once its format, graph and node names are checked."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"{source}: not a plan file (\"format\": \"{FORMAT}\" expected)")
    if data.get("version") != VERSION:
        raise InputError(f"{source}: plan file version {data.get('version')!r}; this explorer "
                         f"reads version {VERSION}")
    theirs = (data.get("graph") or {}).get("digest")
    ours = graph_digest(graph)
    if theirs != ours:
        named = (data.get("graph") or {}).get("name", "another graph")
        raise InputError(f"{source}: the plan is for {named} (digest {str(theirs)[:12]}), not "
                         f"for {graph.name} (digest {ours[:12]}): a plan applies only to the "
                         f"graph it was made for")
    kernels = data.get("kernels")
    if not isinstance(kernels, list):
        raise InputError(f"{source}: \"kernels\" must be a list of kernels")
    owner: dict[str, str] = {}
    for index, entry in enumerate(kernels):
        label = f"kernel {index}" + (f" ({entry.get('name')})" if isinstance(entry, dict)
                                     and entry.get("name") else "")
        if not isinstance(entry, dict) or not isinstance(entry.get("nodes"), list) \
                or not entry["nodes"]:
            raise InputError(f"{source}: {label} needs a non-empty list \"nodes\"")
        entry.setdefault("recomputed", [])
        for name in entry["nodes"] + entry["recomputed"]:
            if not isinstance(name, str) or name not in graph.nodes:
                raise InputError(f"{source}: {label} names node {name!r}, which the graph "
                                 f"does not have")
        for name in entry["nodes"]:
            if name in owner:
                raise InputError(f"{source}: node {name} is owned by {owner[name]} and by "
                                 f"{label}")
            owner[name] = label
        for name in entry["recomputed"]:
            if not is_duplicable(graph.nodes[name]):
                raise InputError(f"{source}: {label} recomputes {name} "
                                 f"({graph.nodes[name].op}), which is not cheap enough to "
                                 f"compute twice: a kernel must own it")
    return kernels
