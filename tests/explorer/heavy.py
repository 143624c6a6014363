"""Big runs for the tests that check a page's work does not grow with the other runs a user
owns: each a finished run of a 2 MB upload whose artifact is softmax's with every plan's kernel
list repeated to about 2 MB, and whose graph differs from softmax's and from each other's."""
import copy
import json

from explorer.models import Run
from tests.explorer.access import SOFTMAX, softmax_artifact

ARTIFACT_BYTES = 2_000_000
GRAPH_BYTES = 2_000_000


def heavy_artifact() -> dict:
    artifact = copy.deepcopy(softmax_artifact())
    artifact.pop("sources")
    copies = ARTIFACT_BYTES // len(json.dumps(artifact)) + 1
    for result in artifact["devices"].values():
        for plan in result["strategies"].values():
            plan["kernels"] = plan["kernels"] * copies
    return artifact


def make_heavy_runs(owner, count: int, prefix: str = "heavy") -> list[Run]:
    text = SOFTMAX.read_bytes()
    artifact = heavy_artifact()
    runs = []
    for index in range(count):
        graph = f"// {prefix} {index}\n".encode() + text * (GRAPH_BYTES // len(text))
        runs.append(Run.objects.create(
            id=f"{prefix}{index}".ljust(22, "x"), owner=owner, status=Run.DONE,
            name=f"{prefix} {index}", filename="heavy.hlo", graph_bytes=graph,
            devices=list(artifact["devices"]), strategies=["unfused", "xla", "stitch", "cost"],
            compiler_version="test", artifact=artifact))
    return runs
