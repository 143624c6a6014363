"""Time from upload to results shown, through the API, for the 12-layer transformer training step.

Run:  .venv/bin/python benchmarks/upload_to_results.py [--repeat 3] [--write]

Starts its own stack (benchmarks/stack.py: Redis, a fresh SQLite database, one Celery compile
worker, the gunicorn server `make run` starts), creates a user with an API token, and for
each repeat:
POST /api/v1/runs with benchmarks/data/transformer_12l.hlo.gz (default devices and strategies:
H100, all four), poll GET /api/v1/runs/<id>/status every 50 ms until it is done, then GET the
run page /r/<id> (what a browser shows). The clock runs from just before the upload to the end
of the page's response. Each repeat is a new user, since run ids are content-addressed per
owner: the same user would get the finished run back. The first repeat starts with an empty
nvcc build cache (cold); later ones find the kernels built (warm), as a second upload of a
similar model would. The time each stage was first seen in the status is recorded too.

Target (issue 6): under 30 s on the development machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.stack import Stack  # noqa: E402

HERE = Path(__file__).parent
GRAPH = HERE / "data" / "transformer_12l.hlo.gz"
POLL_S = 0.05
TIMEOUT_S = 600


def one_upload(stack: Stack, username: str) -> dict:
    client = stack.client(stack.new_api_user(username))
    try:
        start = time.perf_counter()
        submitted = client.upload(GRAPH, visibility="public")
        uploaded = time.perf_counter() - start
        stages: dict[str, float] = {}
        while True:
            status = client.get_json(f"/api/v1/runs/{submitted['id']}/status")
            now = time.perf_counter() - start
            stage = status["stage"] or status["status"]
            stages.setdefault(stage, now)
            if status["status"] in ("done", "failed"):
                break
            if now > TIMEOUT_S:
                raise RuntimeError(f"not done after {TIMEOUT_S} s: {status}")
            time.sleep(POLL_S)
        if status["status"] != "done":
            raise RuntimeError(f"the run failed: {status}\n{stack.log('worker')[-3000:]}")
        done = time.perf_counter() - start
        code, page = client.request("GET", f"/r/{submitted['id']}")
        shown = time.perf_counter() - start
        if code != 200:
            raise RuntimeError(f"the run page answered {code}")
    finally:
        client.close()
    return {"upload_s": uploaded, "done_s": done, "page_s": shown - done, "total_s": shown,
            "page_bytes": len(page), "stages_first_seen_s": stages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    runs = []
    load_before = os.getloadavg()
    with Stack() as stack:
        for index in range(args.repeat):
            result = one_upload(stack, f"bench{index}")
            result["build_cache"] = "cold" if index == 0 else "warm"
            runs.append(result)
            stages = ", ".join(f"{name} {at:.1f}" for name, at in
                               result["stages_first_seen_s"].items())
            print(f"repeat {index + 1} ({result['build_cache']} build cache): "
                  f"{result['total_s']:.2f} s (upload {result['upload_s']:.2f}, done "
                  f"{result['done_s']:.2f}, page {result['page_s']:.2f} s, "
                  f"{result['page_bytes'] / 1e6:.1f} MB); stages first seen at: {stages}")
    warm = [run["total_s"] for run in runs[1:]]
    summary = {"cold_s": runs[0]["total_s"],
               "warm_median_s": statistics.median(warm) if warm else None}
    print(f"cold {summary['cold_s']:.2f} s" + (f", warm median {summary['warm_median_s']:.2f} s"
                                              if warm else "") + " (target: under 30 s)")
    if args.write:
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "upload_to_results.json").write_text(json.dumps({
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores",
            "python": platform.python_version(),
            "command": ".venv/bin/python benchmarks/upload_to_results.py --write",
            "module": GRAPH.name,
            "server": "gunicorn (explorer/gunicorn.conf.py), DEBUG off, SQLite, 1 Celery worker "
                      "(concurrency 1)",
            "load_average_before": load_before,
            "target_s": 30,
            **summary,
            "runs": runs,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
