"""Nsight Compute for benchmarks/gpu_campaign.py: achieved occupancy and DRAM throughput of a
sample of generated kernels, to set beside the projected model's occupancy and limiter.

The campaign writes a manifest (kernels of the cost plans: cubin file, function symbol, grid,
block, dynamic shared memory, cooperative or not, the byte size of every parameter) and runs

    ncu --csv --metrics <METRICS> python3 benchmarks/gpu_campaign_ncu.py MANIFEST

This script, under ncu, loads each cubin with CuPy and launches each kernel once on zeroed
buffers (the values do not change what occupancy or DRAM traffic a memory-bound kernel has),
so ncu profiles exactly the sampled launches. `parse_csv` reads ncu's CSV back, one row per
kernel. In a dry run there is no ncu: `check_manifest` checks the manifest's files and
`synthetic_csv` writes a CSV in ncu's format, labelled synthetic by the caller, so the parser
and the report are rehearsed.
"""

from __future__ import annotations

import csv
import io
import json
import sys
import zlib
from pathlib import Path

# Achieved occupancy (active warps over the SM's maximum), DRAM throughput as a percentage of
# its peak, and the kernel's duration.
METRICS = {
    "achieved_occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram_throughput_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "duration_ns": "gpu__time_duration.sum",
}


def check_manifest(path: Path) -> list[dict]:
    """The manifest's kernels; ValueError naming what is missing."""
    kernels = json.loads(path.read_text())["kernels"]
    for kernel in kernels:
        cubin = path.parent / kernel["cubin"]
        if not cubin.is_file():
            raise ValueError(f"{path}: {kernel['function']}: no cubin at {cubin}")
        if not kernel["params"] or min(kernel["params"]) < 1:
            raise ValueError(f"{path}: {kernel['function']}: parameter sizes {kernel['params']}")
    return kernels


def launch_all(path: Path) -> None:
    """Launch every kernel of the manifest once (run under ncu)."""
    import cupy

    for kernel in check_manifest(path):
        module = cupy.cuda.function.Module()
        module.load((path.parent / kernel["cubin"]).read_bytes())
        function = module.get_function(kernel["symbol"])
        args = [cupy.zeros(size, dtype=cupy.uint8) for size in kernel["params"]]
        shared = kernel["shared_bytes"]
        if shared > 48 * 1024:
            cupy.cuda.driver.funcSetAttribute(function.ptr, 8, shared)
        function(tuple(kernel["grid"]), tuple(kernel["block"]), tuple(args), shared_mem=shared,
                 enable_cooperative_groups=kernel["cooperative"])
        cupy.cuda.get_current_stream().synchronize()


def parse_csv(text: str) -> dict[str, dict]:
    """{kernel symbol: {metric key: value}} from `ncu --csv` output (other lines skipped).
    ncu writes one row per kernel and metric: ID, Kernel Name, Metric Name, Metric Value."""
    lines = text[text.find('"ID"'):] if '"ID"' in text else ""
    by_name = {value: key for key, value in METRICS.items()}
    results: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO(lines)):
        key = by_name.get(row.get("Metric Name", ""))
        if key is None:
            continue
        name = row["Kernel Name"].split("(")[0].strip()
        value = float(row["Metric Value"].replace(",", ""))
        results.setdefault(name, {})[key] = value / 100 if key == "achieved_occupancy" \
            else value
    return results


def synthetic_csv(kernels: list[dict]) -> str:
    """A CSV in ncu's layout with made-up values (a dry run's stand-in for ncu)."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)
    writer.writerow(["ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"])
    for index, kernel in enumerate(kernels):
        draw = zlib.crc32(kernel["symbol"].encode()) % 1000 / 1000
        values = {"achieved_occupancy": 40 + 50 * draw, "dram_throughput_pct": 30 + 60 * draw,
                  "duration_ns": 1000 + 9000 * draw}
        for key, metric in METRICS.items():
            writer.writerow([index, f"{kernel['symbol']}(int)", metric, "", f"{values[key]:.2f}"])
    return "==PROF== synthetic\n" + out.getvalue()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 benchmarks/gpu_campaign_ncu.py MANIFEST.json (run under ncu)")
    launch_all(Path(sys.argv[1]))
