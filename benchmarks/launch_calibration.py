"""The launch terms of compiler/target/launch.py, fitted from what a GPU campaign measured.

    .venv/bin/python benchmarks/launch_calibration.py [--campaign DIR] [--write]

reads DIR/plans/*.json (every plan's kernels timed alone and the plan run back to back, by
benchmarks/gpu_campaign.py; default benchmarks/results/gpu-campaign-h200) and, when the
campaign ran its `launch` step, DIR/launch.json (benchmarks/launch_probe.cu's figures), and
prints each launch figure beside the one compiler/target/launch.py holds:

- alone_us: `launch.fit_alone` over the kernels of at most TINY_KERNEL_US of projected device
  work (their time alone less that work);
- the stream gap: `launch.fit_stream_gap` over the plans of generated kernels run back to back
  (plans with a library call are left out: the runner's library calls spend most of their
  time in PyTorch's dispatch); from the probe too, where it ran (spinning kernels back to
  back, their own time measured on the GPU's timer);
- the stream issue interval and the graph gap: from the probe alone; without one they stay
  what launch.py says they are (alone_us, and NVIDIA's published figure).

`--write` saves the fit to benchmarks/results/launch_calibration.json. tests/compiler/
test_launch.py fits the committed H200 campaign the same way and checks launch.py's table
against it.

Campaign files written before 2026-11-29 have no "device_us" per kernel: their "proj_us" was
the device work plus a constant 3.0 µs launch (the features' FEATURE_LAUNCH_US), taken off
here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from compiler.target.launch import (TINY_KERNEL_US, fit_alone, fit_stream_gap,  # noqa: E402
                                  terms_for)
from compiler.cost.learned.features import FEATURE_LAUNCH_US  # noqa: E402

DEFAULT_CAMPAIGN = REPO / "benchmarks" / "results" / "gpu-campaign-h200"
OUTPUT = REPO / "benchmarks" / "results" / "launch_calibration.json"


def device_work(kernel: dict) -> float | None:
    """A measured kernel row's projected device work (see the module docstring)."""
    if kernel.get("device_us") is not None:
        return kernel["device_us"]
    if kernel.get("proj_us") is None:
        return None
    return kernel["proj_us"] - FEATURE_LAUNCH_US


def campaign_measurements(folder: Path) -> tuple[list[tuple[float, float]],
                                                 list[tuple[int, float, float]]]:
    """(lone generated kernels as (measured_us, device work), plans of generated kernels
    run back to back as (kernel count, sum of their kernels alone, whole time))."""
    kernels, plans = [], []
    for path in sorted((folder / "plans").glob("*.json")):
        for plan in json.loads(path.read_text())["strategies"].values():
            rows = plan["kernels"]
            for row in rows:
                work = device_work(row)
                if row["kind"] != "library" and row.get("measured_us") and work is not None:
                    kernels.append((row["measured_us"], work))
            if plan.get("end_to_end_us") and plan.get("measured_sum_us") and \
                    not any(row["kind"] == "library" for row in rows):
                plans.append((len(rows), plan["measured_sum_us"], plan["end_to_end_us"]))
    return kernels, plans


def calibrate(folder: Path) -> dict:
    """The fit, figure by figure, beside launch.py's table for the campaign's device."""
    settings = json.loads((folder / "campaign.json").read_text())
    device = settings["device"]
    table = terms_for(device)
    kernels, plans = campaign_measurements(folder)
    alone, tiny = fit_alone(kernels)
    gap, used = fit_stream_gap(plans, alone)
    fitted = {
        "alone_us": {"value": alone, "table": table.alone_us,
                     "from": f"{tiny} lone kernels of <= {TINY_KERNEL_US} us of device work"},
        "stream_gap_us": {"value": gap, "table": table.stream_gap_us,
                          "from": f"{used} plans of generated kernels back to back"},
    }
    launch = folder / "launch.json"
    probe = (json.loads(launch.read_text()).get("probe") or None) if launch.exists() else None
    if probe:
        fitted["probe"] = {
            "stream_gap_us": probe["stream"]["gap_us"],
            "stream_issue_us": probe["stream"]["empty_per_kernel_us"],
            "graph_gap_us": probe["graph"]["gap_us"],
            "graph_empty_per_kernel_us": probe["graph"]["empty_per_kernel_us"],
            "host_issue_us": probe["issue_us"], "gpu": probe["gpu"]}
    return {"device": device, "campaign": str(folder.relative_to(REPO))
            if folder.is_relative_to(REPO) else str(folder), "fitted": fitted,
            "table": table.to_dict()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaign", type=Path, default=DEFAULT_CAMPAIGN,
                        help="a GPU campaign's output folder (default the H200 one)")
    parser.add_argument("--write", action="store_true",
                        help=f"save the fit to {OUTPUT.relative_to(REPO)}")
    args = parser.parse_args(argv)
    result = calibrate(args.campaign.resolve())
    for name, figure in result["fitted"].items():
        if name == "probe":
            print("probe (benchmarks/launch_probe.cu): " + ", ".join(
                f"{key} {value:.2f}" if isinstance(value, float) else f"{key} {value}"
                for key, value in figure.items()))
            continue
        print(f"{name:15s} fitted {figure['value']:6.3f} us   table {figure['table']:6.3f} us"
              f"   ({figure['from']})")
    if args.write:
        OUTPUT.write_text(json.dumps(result, indent=1) + "\n")
        print(f"written to {OUTPUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
