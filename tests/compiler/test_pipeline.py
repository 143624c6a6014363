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
                             progress=lambda *event: events.append(event))
    return artifact, events


def test_the_artifact_holds_every_device_and_strategy(compiled):
    artifact, _ = compiled
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
    artifact, _ = compiled
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

    artifact, _ = compiled
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
    _, events = compiled
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
