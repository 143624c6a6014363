"""compiler/stages/whatif.py against the strategies' own pricing: a stored plan opens at the
total explore gave it, an edit list replays to the plan its edits make from scratch, and the
plan file of an edited plan compiles (plan_from_file, keep_kinds) to the total the what-if
showed."""
from pathlib import Path

import pytest

from compiler.fusion.explore import explore
from compiler.fusion.plan_files import plan_from_file, plan_from_kernels
from compiler.importers import import_bytes
from compiler.stages.whatif import WhatIf
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

DATA = Path(__file__).resolve().parents[1] / "data" / "hlo"
MODULES = ["attention_block", "layer_norm_bwd", "adam", "cross_entropy_grad"]


def graph_of(name):
    path = DATA / f"{name}.hlo"
    return import_bytes(path.read_bytes(), path.name)[0]


def adjacent(kernels):
    """Two kernels, the second reading the first, neither a library call."""
    owner = {n: k["name"] for k in kernels for n in k["nodes"] if k["kind"] != "library"}
    for kernel in kernels:
        if kernel["kind"] == "library":
            continue
        for value in kernel["inputs"]:
            if owner.get(value) not in (None, kernel["name"]):
                return [owner[value], kernel["name"]]
    return None


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("strategy", ["xla", "stitch", "cost"])
def test_a_stored_plan_opens_at_its_explored_total_and_saves_to_what_was_shown(module,
                                                                               strategy):
    graph = graph_of(module)
    stored = explore(graph, "h100", [strategy])[strategy].to_dict()
    session = WhatIf(graph, "h100", "graph", strategy, stored["kernels"])

    answer = session.answer()
    assert answer["base"]["proj_us"] == pytest.approx(stored["total"]["proj_us"], abs=1e-6)
    assert [k["name"] for k in session.kernel_nodes()] == [k["name"] for k in stored["kernels"]]

    pair = adjacent(stored["kernels"])
    if pair is None:
        return
    answer = session.replay([{"op": "merge", "kernels": pair}])
    if answer["refused"]:
        assert answer["now"] == answer["base"]
        return
    # The same grouping, built from nothing, is priced the same.
    model = SolModel(graph, get_device("h100"))
    made = session.plan_file("x")
    again = plan_from_file(graph, model, made, "test", keep_kinds=True)
    assert again.projected_totals()["proj_us"] == pytest.approx(answer["now"]["proj_us"],
                                                                abs=1e-6)
    assert [list(k.nodes) for k in again.kernels] == [k["nodes"] for k in made["kernels"]]


def test_the_list_is_replayed_from_the_longest_shared_prefix():
    graph = graph_of("layer_norm_bwd")
    stored = explore(graph, "h100", ["unfused"])["unfused"].to_dict()
    session = WhatIf(graph, "h100", "graph", "unfused", stored["kernels"])
    first = {"op": "merge", "kernels": adjacent(stored["kernels"])}
    one = session.replay([first])
    after_one = session.kernel_nodes()
    second = {"op": "merge", "kernels": adjacent([k.to_dict("h100")
                                                  for k in session.plan.kernels])}
    two = session.replay([first, second])
    assert two["now"]["kernels"] == one["now"]["kernels"] - 1
    # Back to one edit: the plan after it, as it was.
    assert session.replay([first])["now"] == one["now"]
    assert session.kernel_nodes() == after_one
    # A fresh session replaying both edits reaches the same plan.
    fresh = WhatIf(graph, "h100", "graph", "unfused", stored["kernels"])
    assert fresh.replay([first, second])["now"] == two["now"]
    # From scratch: the grouping after both edits, priced from nothing, totals the same.
    scratch = plan_from_kernels(graph, SolModel(graph, get_device("h100")),
                                fresh.kernel_nodes(), "test", "graph")
    assert scratch.projected_totals()["proj_us"] == pytest.approx(two["now"]["proj_us"],
                                                                  abs=1e-6)


def test_refusals_and_bad_lists_say_what_is_wrong():
    graph = graph_of("attention_block")
    stored = explore(graph, "h100", ["xla"])["xla"].to_dict()
    session = WhatIf(graph, "h100", "graph", "xla", stored["kernels"])
    library = [k["name"] for k in stored["kernels"] if k["kind"] == "library"][:2]
    answer = session.replay([{"op": "merge", "kernels": library}])
    assert answer["refused"]["index"] == 0
    assert "is a library call" in answer["refused"]["reason"]
    assert answer["edits"] == [] and answer["now"] == answer["base"]
    with pytest.raises(Exception, match="edit 2"):
        session.replay([{"op": "split", "kernel": library[0]}, {"op": "shatter"}])


class FixedTimes:
    """A learned model's stand-in: each kernel's time from its node count (None for library
    calls, which the model does not describe)."""
    label = "fixed"

    def predict_plan(self, graph, plan, codes=None):
        return [time for time, _ in self.predictions(graph, plan, codes)]

    def predictions(self, graph, plan, codes=None):
        return [(None, "a library call") if k.kind == "library"
                else (1.5 + 0.25 * len(k.nodes), None) for k in plan.kernels]

    def info(self):
        return {"label": self.label}


def test_learned_totals_are_summed_as_a_compiled_plans_are():
    from compiler.cost.learned.predict import attach_learned

    graph = graph_of("attention_block")
    plan = explore(graph, "h100", ["xla"])["xla"]
    stored = plan.to_dict()
    model = FixedTimes()
    session = WhatIf(graph, "h100", "graph", "xla", stored["kernels"],
                     predict=lambda edited: model.predict_plan(graph, edited), learned_label="fixed")

    reference = plan.to_dict()
    attach_learned(reference, graph, plan, None, model)
    answer = session.answer()
    assert answer["base"]["learned_us"] == pytest.approx(reference["total"]["learned_us"],
                                                         abs=1e-3)
    assert answer["learned_model"] == "fixed"
    # An edit's new kernel carries its learned time, and the total follows.
    pair = adjacent(stored["kernels"])
    answer = session.replay([{"op": "merge", "kernels": pair}])
    assert answer["refused"] is None
    merged = answer["edits"][0]["added"][0]
    assert merged["learned_us"] is not None and merged["learned_us"] > 0
    removed = sum(k["learned_us"] for k in answer["edits"][0]["removed"])
    assert answer["now"]["learned_us"] == pytest.approx(
        answer["base"]["learned_us"] - removed + merged["learned_us"], abs=1e-6)
