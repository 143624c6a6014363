"""compiler.stages.pipeline.compile_graph: the whole compiler in one call, as the workers run
it."""
import json
from pathlib import Path

import pytest

from compiler.errors import InputError
from compiler.fusion.explore import STRATEGIES
from compiler.stages.pipeline import STAGES, compile_graph
from compiler.version import compiler_version

SOFTMAX_PATH = Path(__file__).resolve().parents[1] / "data/hlo/softmax.hlo"
SOFTMAX = SOFTMAX_PATH.read_bytes()
DEVICES = ["h100", "a100"]


@pytest.fixture(scope="module")
def compiled():
    events = []
    artifact = compile_graph(SOFTMAX, "softmax.hlo", DEVICES, list(STRATEGIES),
                             progress=lambda *event: events.append(event),
                             explored=lambda preview: events.append(
                                 ("preview", json.loads(json.dumps(preview)))))
    previews = [event[1] for event in events if event[0] == "preview"]
    return artifact, [event for event in events if event[0] != "preview"], previews, events


def test_the_artifact_holds_every_device_and_strategy(compiled):
    artifact, *_ = compiled
    assert set(artifact) == {"compiler_version", "graph", "devices", "sources"}
    assert artifact["compiler_version"] == compiler_version()
    assert artifact["graph"]["name"] and artifact["graph"]["nodes"] == 19
    assert sorted(artifact["devices"]) == sorted(DEVICES)
    for device, result in artifact["devices"].items():
        assert result["device"] == device
        assert list(result["strategies"]) == list(STRATEGIES)
        for strategy in result["strategies"].values():
            assert strategy["total"]["measured_us"] is None
            assert strategy["total"]["proj_us"] > 0
            for kernel in strategy["kernels"]:
                assert kernel["measured_us"] is None
                assert {"name", "nodes", "sol_us", "proj_us", "limiter", "occupancy",
                        "registers", "codegen_plan", "codegen_error"} <= set(kernel)
                assert "candidate_plans" not in kernel  # with the kernel's source instead
    json.dumps(artifact)  # stored as JSON as it is


def test_every_generated_kernel_has_its_source_ptx_and_line_map(compiled):
    artifact, *_ = compiled
    for device, result in artifact["devices"].items():
        for name, strategy in result["strategies"].items():
            for kernel in strategy["kernels"]:
                if kernel["function"] is None:
                    continue
                source = artifact["sources"][f"{device}/{name}/{kernel['name']}"]
                assert source["function"] == kernel["function"]
                assert kernel["function"] in source["source"]
                assert ".entry " + kernel["function"] in source["ptx"]
                assert source["resources"]["registers"] == kernel["registers"]
                lines = len(source["source"].splitlines())
                assert all(1 <= int(line) <= lines for line in source["line_nodes"])
                # What the kernel owns, reads or recomputes (xla-gpu recomputes what XLA
                # folded away, e.g. a max against -inf).
                computed = set(kernel["nodes"]) | set(kernel["inputs"]) | \
                    set(kernel["recomputed"])
                assert set().union(*source["line_nodes"].values()) <= computed


def test_each_device_matches_what_the_codegen_command_prints(compiled, capsys):
    from compiler.cli import main

    artifact, *_ = compiled
    assert main(["codegen", str(SOFTMAX_PATH), "--device", "a100", "--strategy",
                 ",".join(STRATEGIES), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    ours = json.loads(json.dumps(artifact["devices"]["a100"]))
    for result in (printed, ours):
        for strategy in result["strategies"].values():
            strategy["explore_ms"] = 0.0
    # The artifact keeps each kernel's candidate plans with its source, not in the plan.
    for name, strategy in printed["strategies"].items():
        for kernel in strategy["kernels"]:
            candidates = kernel.pop("candidate_plans")
            stored = artifact["sources"].get(f"a100/{name}/{kernel['name']}", {})
            headlines = [{key: value for key, value in candidate.items() if key != "projected"}
                         for candidate in candidates]
            assert json.loads(json.dumps(stored.get("candidate_plans", []))) == headlines
    assert ours == printed


def test_progress_reports_the_stages_in_order_with_done_at_most_total(compiled):
    _, events, *_ = compiled
    # A note (a fourth argument) says what a stage is doing: here each device's exploration.
    notes = [event for event in events if len(event) == 4]
    assert [(stage, detail.split(":")[0]) for stage, _, _, detail in notes
            if stage == "explore"] == [("explore", device) for device in sorted(DEVICES)]
    events = [event[:3] for event in events]
    stages = [stage for stage, _, _ in events]
    assert list(dict.fromkeys(stages)) == list(STAGES)
    assert all(0 <= done <= total for _, done, total in events)
    for stage in STAGES:
        counts = [(done, total) for name, done, total in events if name == stage]
        assert counts[0][0] == 0 and counts[-1][0] == counts[-1][1] > 0
        assert [done for done, _ in counts] == sorted(done for done, _ in counts)


def test_the_explore_stage_counts_plans_and_each_is_previewed_before_it_is_counted(compiled):
    *_, events = compiled
    plans = len(DEVICES) * len(STRATEGIES)
    explored = [event for event in events if event[0] in ("explore", "preview")]
    counts = [event[1] for event in explored if event[0] == "explore" and len(event) == 3]
    assert counts == list(range(plans + 1))
    # Each count moves after the preview that holds that many plans was handed over.
    shown = 0
    for event in explored:
        if event[0] == "preview":
            shown = event[1]["explored"]["plans"]
        else:
            assert event[1] <= shown


def test_each_preview_is_the_artifact_so_far_before_anything_is_built(compiled):
    artifact, _, previews, _ = compiled
    plans = len(DEVICES) * len(STRATEGIES)
    assert [preview["explored"] for preview in previews] == \
        [{"plans": n, "of": plans} for n in range(1, plans + 1)]
    # Devices in the artifact's order (by name), each one's plans in exploration order.
    order = [(device, name) for device in sorted(DEVICES) for name in STRATEGIES]
    for n, preview in enumerate(previews, start=1):
        assert set(preview) == {"compiler_version", "graph", "devices", "explored"}
        assert preview["compiler_version"] == artifact["compiler_version"]
        assert preview["graph"] == artifact["graph"]
        assert [(device, name) for device, result in preview["devices"].items()
                for name in result["strategies"]] == order[:n]
    last = previews[-1]
    for device, result in last["devices"].items():
        for name, plan in result["strategies"].items():
            built = artifact["devices"][device]["strategies"][name]
            assert [k["nodes"] for k in plan["kernels"]] == [k["nodes"] for k in built["kernels"]]
            assert plan["decisions"] == built["decisions"]
            assert plan["total"]["sol_us"] == built["total"]["sol_us"]
            for kernel in plan["kernels"]:
                # What the build gives is not made up before it (DESIGN.md).
                assert kernel["registers"] is None and kernel["shared_bytes"] is None
                assert "function" not in kernel and "spill_bytes" not in kernel


def test_a_truncated_file_raises_an_input_error_naming_the_place():
    with pytest.raises(InputError, match=r"^softmax\.hlo:\d+:\d+: "):
        compile_graph(SOFTMAX[: len(SOFTMAX) // 2], "softmax.hlo", ["h100"], ["xla"])


def test_an_unknown_strategy_or_device_is_an_input_error():
    with pytest.raises(InputError, match="unknown strategy fastest"):
        compile_graph(SOFTMAX, "softmax.hlo", ["h100"], ["fastest"])
    with pytest.raises(InputError, match="unknown device"):
        compile_graph(SOFTMAX, "softmax.hlo", ["tpu9"], ["xla"])


def test_the_compiler_version_is_a_stable_digest():
    assert compiler_version() == compiler_version()
    assert len(compiler_version()) == 16 and int(compiler_version(), 16) >= 0


def test_the_build_stage_moves_as_kernels_are_assembled(tmp_path, monkeypatch):
    # A cache of its own: every kernel is compiled, so its progress comes kernel by kernel
    # rather than once per device when the batch is done.
    monkeypatch.setenv("FUSION_EXPLORER_CACHE_DIR", str(tmp_path))
    events = []
    compile_graph(SOFTMAX, "softmax.hlo", ["h100"], ["unfused", "xla"],
                  progress=lambda *event: events.append(event))
    build = [done for stage, done, _, *_ in events if stage == "build"]
    total = next(total for stage, _, total, *_ in events if stage == "build")
    assert build[0] == 0 and build[-1] == total
    assert build == sorted(build)
    assert len(set(build)) > 3  # more steps than "none" and "all"
    # While nvcc compiles the batch the count stands still: the notes say what runs.
    notes = [event[3] for event in events if event[0] == "build" and len(event) == 4]
    assert [note.split(" ")[1] for note in notes] == ["compiling", "assembling"], notes
    assert notes[0].startswith("h100: compiling ") and "to PTX" in notes[0]
