"""The app's own measurement path, end to end, in one command: the real stack measures a run.

    python3 benchmarks/gpu_stack.py --out DIR [--device h200] [--graph FILE] [--emulated]

starts what `make run` starts (benchmarks/stack.py: Redis on a free port, a fresh SQLite
database, the compile worker, gunicorn) and the app's own worker on the gpu queue, makes a user
and an API token (`manage.py create_api_token`), uploads the graph through the API as a public
run for --device, waits for the compile, asks the API for a measurement
(`POST /api/v1/runs/<id>/measurements`), waits for the gpu worker to take it and finish, and
saves into DIR:

    run.html        the run page, as the server renders it with the measurement
    results.json    the run's `/api/v1/runs/<id>/results` (the measured fields filled in)
    kernel.html     the kernel page of the slowest kernel (measured time; the projected one
                    where nothing was timed)
    run.png, kernel.png   the two pages in Chromium, when Playwright and Chromium are there
    measurement.json      the measurement as the API answers it, with its result
    summary.json    what happened: the run, the measurement's status and GPU, the slowest
                    kernel and which figure made it the slowest, every file written, and how
                    many measured times the results hold
    logs/           every process's log

It exits 0 when the measurement finished, 1 when it failed (summary.json and the logs say why).

--emulated starts the gpu worker in its emulated mode (GPU_WORKER_EMULATED): every kernel is
checked on the CPU emulator against the reference interpreter and nothing is timed, so the
pages say "not measured" and that the kernels were checked on the emulator. That is how the
path is rehearsed without a GPU (tests/workers/test_gpu_stack.py runs it in CI); on a GPU
machine leave it out. benchmarks/gpu_stack.sh runs this on the lent GPU machine, from wheels
and Debian packages carried there (that machine reaches no registry).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.page_latency import finished_run  # noqa: E402
from benchmarks.stack import Client, Stack  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_GRAPH = REPO / "tests" / "data" / "hlo" / "softmax.hlo"
CHROMIUM = Path("/usr/bin/chromium")
USERNAME = "gpu-stack"
# A measurement re-makes and checks every plan, then times each kernel 23 times after an L2
# flush; the emulated check of a small graph's plans takes about a minute on two cores.
MEASURE_TIMEOUT_S = 900
POLL_S = 0.5


def measure(client: Client, run_id: str, timeout_s: float = MEASURE_TIMEOUT_S) -> dict:
    """Ask for a measurement of the run and wait until it is done or failed; the API's
    measurement, with its result."""
    status, body = client.request("POST", f"/api/v1/runs/{run_id}/measurements")
    if status not in (200, 202):
        raise RuntimeError(f"POST /api/v1/runs/{run_id}/measurements: {status} {body[:500]!r}")
    path = f"/api/v1/runs/{run_id}/measurements/{json.loads(body)['id']}"
    deadline = time.monotonic() + timeout_s
    while (measurement := client.get_json(path))["status"] not in ("done", "failed"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the measurement did not end in {timeout_s} s: {measurement}")
        time.sleep(POLL_S)
    return measurement


def slowest_kernel(results: dict) -> dict | None:
    """The kernel with the largest measured time over every plan of every device, or, where
    nothing was timed, the largest projected time: {"device", "strategy", "kernel", "by",
    "us"}. None for a run without kernels."""
    candidates = [(device, strategy, kernel)
                  for device, device_result in results["devices"].items()
                  for strategy, plan in device_result["strategies"].items()
                  for kernel in plan["kernels"]]
    for figure in ("measured_us", "proj_us"):
        timed = [entry for entry in candidates if entry[2].get(figure) is not None]
        if timed:
            device, strategy, kernel = max(timed, key=lambda entry: entry[2][figure])
            return {"device": device, "strategy": strategy, "kernel": kernel["name"],
                    "by": figure, "us": kernel[figure]}
    return None


def measured_times(results: dict) -> int:
    """How many measured figures (kernels' and plans') the results hold."""
    count = 0
    for device_result in results["devices"].values():
        for plan in device_result["strategies"].values():
            count += plan["total"].get("measured_us") is not None
            count += sum(kernel.get("measured_us") is not None for kernel in plan["kernels"])
    return count


def save_page(client: Client, path: str, target: Path) -> None:
    status, body = client.request("GET", path)
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {body[:500]!r}")
    target.write_bytes(body)


def screenshots(port: int, pages: dict[str, str], out: Path) -> list[str] | str:
    """Each of `pages` ({file name: path}) in Chromium, a full-page PNG in `out`; the names
    written, or why none was."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "not taken: Playwright is not installed"
    if not CHROMIUM.exists():
        return f"not taken: {CHROMIUM} is not installed"
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            for name, path in pages.items():
                page.goto(f"http://127.0.0.1:{port}{path}", wait_until="networkidle")
                page.screenshot(path=str(out / name), full_page=True)
                written.append(name)
        finally:
            browser.close()
    return written


def run_stack(out: Path, device: str, graph: Path, emulated: bool) -> dict:
    """Everything the module docstring says, into `out`; the summary."""
    out.mkdir(parents=True, exist_ok=True)
    summary = {"graph": str(graph), "device": device, "emulated": emulated}
    with Stack(gpu_worker=True, emulated=emulated) as stack:
        try:
            key = stack.new_api_user(USERNAME)
            run_id = finished_run(stack, graph, key, devices=device)
            client = stack.client(key)
            measurement = measure(client, run_id)
            (out / "measurement.json").write_text(json.dumps(measurement, indent=1))
            summary.update(run=run_id, measurement={
                key: measurement.get(key) for key in ("id", "status", "gpu", "error",
                                                      "error_stage", "compiler_version")})
            save_page(client, f"/r/{run_id}", out / "run.html")
            results = client.get_json(f"/api/v1/runs/{run_id}/results")
            (out / "results.json").write_text(json.dumps(results, indent=1))
            slowest = slowest_kernel(results)
            summary.update(slowest_kernel=slowest, measured_times=measured_times(results))
            pages = {"run.png": f"/r/{run_id}"}
            if slowest is not None:
                kernel_path = "/r/{}/{}/{}/{}".format(
                    run_id, *(quote(slowest[part], safe="")
                              for part in ("device", "strategy", "kernel")))
                save_page(client, kernel_path, out / "kernel.html")
                pages["kernel.png"] = kernel_path
            summary["screenshots"] = screenshots(stack.http_port, pages, out)
            client.close()
        finally:
            stack.keep_logs(out / "logs")
    summary["files"] = sorted(str(path.relative_to(out)) for path in out.rglob("*")
                              if path.is_file() and path.name != "summary.json")
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the folder the pages go to")
    parser.add_argument("--device", default="h200",
                        help="the device model the run is compiled for (default h200)")
    parser.add_argument("--graph", type=Path, default=DEFAULT_GRAPH,
                        help="the graph to upload (default tests/data/hlo/softmax.hlo)")
    parser.add_argument("--emulated", action="store_true",
                        help="an emulated gpu worker: kernels checked on the CPU emulator, "
                             "nothing timed (a rehearsal without a GPU)")
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        parser.error("redis-server is not on PATH (benchmarks/gpu_stack.sh unpacks the "
                     "carried Debian packages)")
    summary = run_stack(args.out, args.device, args.graph, args.emulated)
    print(json.dumps(summary, indent=1))
    return 0 if summary["measurement"]["status"] == "done" else 1


if __name__ == "__main__":
    raise SystemExit(main())
