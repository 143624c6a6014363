"""compiler.stages.learned.collect on a real GPU: the learned cost model's measured data.
Timings are reported (gpu_report), never asserted beyond being positive."""

from pathlib import Path

import pytest

from compiler.cost.learned.dataset import read_dataset
from compiler.stages.learned.collect import MISMATCH, collect_dataset
from compiler.stages.measure import gpu_matches_device
from compiler.target.devices import DEVICES

SOFTMAX = Path(__file__).resolve().parents[1] / "data" / "hlo" / "softmax.hlo"


@pytest.mark.timeout(600)
def test_softmax_candidates_are_checked_and_timed_alone(gpu_device, gpu_report, tmp_path):
    devices = [name for name in DEVICES if gpu_matches_device(gpu_device, name)]
    if not devices:
        pytest.skip(f"no device of the cost tables is this GPU ({gpu_device})")
    device = devices[0]
    out = tmp_path / f"{device}-test.jsonl.gz"
    summary = collect_dataset([str(SOFTMAX)], device, out, top_k=3)
    header, samples = read_dataset(out)

    assert header["origin"] == summary["origin"] == "measured"
    assert header["gpu"] == summary["gpu"] == gpu_device and header["device"] == device
    assert summary["errors"] == [] and MISMATCH not in summary["dropped"], summary["drops"]
    (program,) = summary["per_program"]
    # Every kernel that ran was compared with the interpreter, and all of them matched.
    assert program["checked"] == program["measured"] == len(samples) > 0
    for sample in samples:
        assert sample.target_us > 0
        assert sample.target_us == sample.extra["timing"]["median_us"]
    for drop in program["drops"]:
        gpu_report.append(f"softmax candidate dropped on {gpu_device}: {drop}")
    fastest = {}
    for sample in samples:
        best = fastest.get(sample.group)
        if best is None or sample.target_us < best.target_us:
            fastest[sample.group] = sample
    for group, sample in sorted(fastest.items()):
        gpu_report.append(f"{group} on {gpu_device}: fastest of its plans {sample.target_us:.2f} "
                          f"us (projected {sample.projected_us:.2f} us), {sample.plan}")
