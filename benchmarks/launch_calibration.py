"""The launch terms of compiler/target/launch.py, fitted from what a GPU campaign measured.

    .venv/bin/python benchmarks/launch_calibration.py [--campaign DIR] [--write]

reads DIR/plans/*.json (every plan's kernels timed alone and the plan run back to back, by
benchmarks/gpu_campaign.py; default benchmarks/results/gpu-campaign-h200) and, when the
campaign ran its `launch` step, DIR/launch.json (benchmarks/launch_probe.cu's figures), and
prints each launch figure beside the one compiler/target/launch.py holds:

- alone_us: `launch.fit_alone` over the kernels of at most TINY_KERNEL_US of projected device
  work (their time alone less that work);
- the stream gap: `launch.fit_gap` over the plans of generated kernels run back to back
  (plans with a library call are left out: the runner's library calls spend most of their
  time in PyTorch's dispatch); from the probe too, where it ran (spinning kernels back to
  back, their own time measured on the GPU's timer);
- the graph gap: `launch.fit_gap` over the same plans replayed as one CUDA graph (the plans'
  "graph_replay_us", which campaigns time since the GPU runner replays every plan; campaigns
  before that have none, and the figure says so); from the probe too, where it ran;
- the stream issue interval: from the probe alone; without one it stays what launch.py says
  (alone_us).

A figure with nothing to fit it from has the value None and says why.

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

from compiler.target.launch import TINY_KERNEL_US, fit_alone, fit_gap, terms_for  # noqa: E402
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


def campaign_measurements(folder: Path) -> dict[str, list]:
    """What a campaign's plans measured: "alone", the lone generated kernels as (measured_us,
    device work); "stream" and "graph", its plans of generated kernels run whole back to back
    and replayed as a CUDA graph, as (kernel count, sum of their kernels alone, whole time)."""
    measured = {"alone": [], "stream": [], "graph": []}
    for path in sorted((folder / "plans").glob("*.json")):
        for plan in json.loads(path.read_text())["strategies"].values():
            rows = plan["kernels"]
            for row in rows:
                work = device_work(row)
                if row["kind"] != "library" and row.get("measured_us") and work is not None:
                    measured["alone"].append((row["measured_us"], work))
            if not plan.get("measured_sum_us") or any(row["kind"] == "library" for row in rows):
                continue
            for runtime, whole in (("stream", "end_to_end_us"), ("graph", "graph_replay_us")):
                if plan.get(whole):
                    measured[runtime].append((len(rows), plan["measured_sum_us"], plan[whole]))
    return measured


def calibrate(folder: Path) -> dict:
    """The fit, figure by figure, beside launch.py's table for the campaign's device."""
    settings = json.loads((folder / "campaign.json").read_text())
    device = settings["device"]
    table = terms_for(device)
    measured = campaign_measurements(folder)
    fitted = {name: {"value": None, "table": getattr(table, name)}
              for name in ("alone_us", "stream_gap_us", "graph_gap_us")}
    try:
        alone, tiny = fit_alone(measured["alone"])
        fitted["alone_us"].update({"value": alone, "from": f"{tiny} lone kernels of <= "
                                                            f"{TINY_KERNEL_US} us of device work"})
    except ValueError as reason:
        alone = None
        fitted["alone_us"]["from"] = str(reason)
    for runtime, how in (("stream", "run back to back"), ("graph", "replayed as CUDA graphs")):
        figure = fitted[f"{runtime}_gap_us"]
        try:
            if alone is None:
                raise ValueError("no alone_us to fit it against")
            gap, used = fit_gap(measured[runtime], alone)
        except ValueError as reason:
            figure["from"] = f"not fitted, {how}: {reason}"
            continue
        figure.update({"value": gap, "from": f"{used} plans of generated kernels {how}"})
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
        value = "  none" if figure["value"] is None else f"{figure['value']:6.3f}"
        print(f"{name:15s} fitted {value} us   table {figure['table']:6.3f} us"
              f"   ({figure['from']})")
    if args.write:
        OUTPUT.write_text(json.dumps(result, indent=1) + "\n")
        print(f"written to {OUTPUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
