"""Plan files (compiler/fusion/plan_files.py and the CLI's --save-plans / --plan).

Every strategy's plan of several tests/data modules written to a file and applied again gives
the same kernels (owned, recomputed, written); the cost plan's prices come back to the last
bit (its kinds are the kernel analysis's, which a file's plan is judged by). A file for another
graph, naming a node the graph lacks, owning a node twice, leaving a node out, recomputing what
is not cheap or grouping into a cycle is refused saying which node and why.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.errors import InputError
from compiler.fusion.explore import explore
from compiler.fusion.plan_files import graph_digest, plan_from_file, plan_to_file
from compiler.importers import load_graph
from compiler.kernels.plan import check_plan
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "hlo"


def kernels_of(plan):
    return sorted((k.nodes, k.recomputed, k.outputs) for k in plan.kernels)


@pytest.mark.parametrize("name", ["attention_block", "layer_norm_bwd", "transformer_step_bf16",
                                  "cross_entropy_grad"])
def test_every_plan_comes_back_from_its_file(name, plan_checker):
    graph = load_graph(str(DATA / f"{name}.hlo"))
    model = SolModel(graph, get_device("h100"))
    plans = explore(graph, "h100", ["unfused", "xla", "stitch", "cost"])
    for strategy, plan in plans.items():
        data = json.loads(json.dumps(plan_to_file(graph, plan)))   # through the text
        again = plan_from_file(graph, model, data)
        assert again.strategy == "custom"
        assert kernels_of(again) == kernels_of(plan), strategy
        plan_checker(graph, again)
    cost = plans["cost"]
    again = plan_from_file(graph, model, plan_to_file(graph, cost))
    assert again.projected_totals() == cost.projected_totals()


def test_a_kernel_past_the_operand_budget_comes_back_as_it_is():
    """The stitch plan of a message-passing GNN step has a kernel of 101 operands and outputs,
    past the budget the strategies keep as they merge (each counts them its own way): a
    file's kernels are taken as they are."""
    graph = load_graph(str(ROOT / "benchmarks" / "data" / "zoo" / "gnn_mpnn.hlo.gz"))
    plan = explore(graph, "h100", ["stitch"])["stitch"]
    assert max(len(k.inputs) + len(k.outputs) for k in plan.kernels) > 96
    again = plan_from_file(graph, SolModel(graph, get_device("h100")), plan_to_file(graph, plan))
    assert kernels_of(again) == kernels_of(plan)
    check_plan(graph, again)


@pytest.fixture(scope="module")
def softmax():
    graph = load_graph(str(DATA / "softmax.hlo"))
    plan = explore(graph, "h100", ["unfused"])["unfused"]
    return graph, SolModel(graph, get_device("h100")), plan_to_file(graph, plan)


def refusal(softmax, change) -> str:
    graph, model, data = softmax
    data = copy.deepcopy(data)
    change(data)
    with pytest.raises(InputError) as refused:
        plan_from_file(graph, model, data, "plan.json")
    return str(refused.value)


def test_a_plan_for_another_graph_is_refused(softmax):
    other = load_graph(str(DATA / "layer_norm_fwd.hlo"))
    assert graph_digest(other) != graph_digest(softmax[0])
    text = refusal(softmax, lambda d: d["graph"].update(digest=graph_digest(other),
                                                         name=other.name))
    assert text.startswith(f"plan.json: the plan is for {other.name}")
    assert "applies only to the graph it was made for" in text


def test_unknown_twice_missing_and_not_cheap_nodes_are_named(softmax):
    graph = softmax[0]
    first = softmax[2]["kernels"][0]["nodes"][0]
    text = refusal(softmax, lambda d: d["kernels"][0]["nodes"].append("nope.1"))
    assert "kernel 0 (" in text and "names node 'nope.1', which the graph does not have" in text
    text = refusal(softmax, lambda d: d["kernels"][1]["nodes"].append(first))
    assert f"node {first} is owned by kernel 0" in text
    dropped = softmax[2]["kernels"][-1]["nodes"][0]
    text = refusal(softmax, lambda d: d["kernels"].pop())
    assert f"node {dropped} is in no kernel" in text
    reduce = next(n.name for n in graph if n.op == "reduce")
    text = refusal(softmax, lambda d: d["kernels"][0]["recomputed"].append(reduce))
    assert f"recomputes {reduce} (reduce), which is not cheap enough" in text
    assert "not a plan file" in refusal(softmax, lambda d: d.update(format="other"))


def test_a_grouping_into_a_cycle_is_refused(softmax):
    graph = softmax[0]
    ops = [n.name for n in graph if n.op in ("exponential", "reduce", "divide")]
    exp = next(n for n in ops if graph.nodes[n].op == "exponential")
    div = next(n for n in ops if graph.nodes[n].op == "divide")

    def join(d):   # exp and divide in one kernel, the sum between them apart
        kernels = d["kernels"]
        holder = next(k for k in kernels if div in k["nodes"])
        holder["nodes"].remove(div)
        target = next(k for k in kernels if exp in k["nodes"])
        target["nodes"].append(div)
        target["recomputed"] += holder["recomputed"]   # the views the divide reads
        if not holder["nodes"]:
            kernels.remove(holder)
    assert "makes a cycle through" in refusal(softmax, join)


def cli(*arguments, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "compiler", *arguments], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_the_command_line_saves_plans_and_applies_them(tmp_path):
    module = str(DATA / "layer_norm_bwd.hlo")
    saved = cli("explore", module, "--strategy", "cost,stitch", "--save-plans", str(tmp_path))
    assert saved.returncode == 0, saved.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cost.plan.json", "stitch.plan.json"]
    data = json.loads((tmp_path / "cost.plan.json").read_text())
    data["name"] = "mine"
    (tmp_path / "mine.json").write_text(json.dumps(data))
    applied = cli("explore", module, "--strategy", "cost", "--plan", str(tmp_path / "mine.json"),
                  "--json")
    assert applied.returncode == 0, applied.stderr
    strategies = json.loads(applied.stdout)["strategies"]
    assert strategies["custom:mine"]["total"] == strategies["cost"]["total"]
    assert [k["nodes"] for k in strategies["custom:mine"]["kernels"]] == \
        [k["nodes"] for k in strategies["cost"]["kernels"]]
    wrong = cli("explore", str(DATA / "softmax.hlo"), "--plan", str(tmp_path / "mine.json"))
    assert wrong.returncode != 0 and "Traceback" not in wrong.stderr
    assert "a plan applies only to the graph it was made for" in wrong.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{\"format\": ")
    bad = cli("explore", module, "--plan", str(broken))
    assert bad.returncode != 0 and "not a JSON plan file (line 1" in bad.stderr
