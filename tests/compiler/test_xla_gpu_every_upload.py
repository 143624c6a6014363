"""Every ONNX and JSON file in the repository gets XLA:GPU's plan (issue 33: "every plan for
every upload").

The files are found by glob, so a new test input or benchmark model is covered the day it is
added. Each is printed as HLO (compiler/ir/printer.py), compiled by XLA:GPU and read back: the
plan must have kernels and pass `check_plan`, and XLA's optimised module must name our nodes
(the `op_name` it keeps is the printed name, which `printed_names` reads back to ours: an
ONNX name like `onnx::MatMul_107` prints as a legal HLO name).

Time: XLA compiles each module in about a second here (19 files: about 30 s with an empty
compile cache on two cores; seconds once compiler/toolchain/cache.py holds them).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compiler.fusion import xla_gpu
from compiler.fusion.explore import explore
from compiler.importers.hlo_text import import_hlo
from compiler.ir.printer import hlo_names
from compiler.kernels.grouping import FUSIBLE, LIBRARY, node_role
from compiler.kernels.plan import check_plan
from compiler.stages.pipeline import import_graph
from compiler.target.devices import get_device

pytest.importorskip("jax_plugins.xla_cuda12", reason="the xla-gpu strategy needs "
                    "jax-cuda12-plugin (requirements.txt)")

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = (ROOT / "tests" / "data", ROOT / "benchmarks" / "data")
PATTERNS = ("*.onnx", "*.onnx.gz", "*.json", "*.json.gz")
UPLOADS = sorted(path for folder in FOLDERS for pattern in PATTERNS
                 for path in folder.rglob(pattern))


def test_the_glob_finds_the_onnx_and_json_files():
    """A moved folder must fail here, not leave the test below with nothing to run."""
    names = [path.name for path in UPLOADS]
    assert any(n.endswith(".onnx") for n in names) and any(n.endswith(".json") for n in names)
    assert any(n.endswith(".onnx.gz") for n in names)


@pytest.mark.parametrize("path", UPLOADS, ids=lambda path: str(path.relative_to(ROOT)))
def test_xla_gpu_plans_every_onnx_and_json_file(path):
    graph = import_graph(path.read_bytes(), path.name)
    plan = explore(graph, "h100", ["xla-gpu"])["xla-gpu"]
    assert plan.unavailable is None
    assert plan.kernels
    check_plan(graph, plan)

    # XLA's instructions name our nodes: every op_name it kept is a name we printed (in the
    # entry or a reducer), and they name kernels of ours (the optimised module comes from the
    # compile cache: explore compiled it just now).
    optimised = xla_gpu.compile_optimised(graph, get_device("h100"))
    printed = {name for names in hlo_names(graph).nodes.values() for name in names.values()}
    assert set(re.findall(r'op_name="([^"]*)"', optimised)) <= printed
    named = {node for _, _, instructions in xla_gpu.xla_kernels(
        import_hlo(optimised, "optimised.hlo"), xla_gpu.printed_names(graph))
        for node, _ in instructions}
    assert named & {n.name for n in graph if node_role(n) in (FUSIBLE, LIBRARY)}
