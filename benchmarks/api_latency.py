"""Latency and server CPU time of the JSON API's small answers and its cached results under
concurrent clients: what the API's framework, authentication and rate limit cost per request.

Run:  .venv/bin/python benchmarks/api_latency.py [--clients 20] [--seconds 20] [--label after]
                                                  [--write]

Starts its own stack (benchmarks/stack.py: Redis, a fresh SQLite database, one Celery compile
worker, the gunicorn server `make run` starts, DEBUG off), submits tests/data/hlo/softmax.hlo
through the API as a user with an API key and waits until the run is done. Then, for each
endpoint in turn, `clients` threads with keep-alive connections ask for it back to back with
the key as a Bearer token (after a 3 s warm-up, as page_latency.py): the run's status, its
metadata, the list of runs, one kernel, and its /results (cached gzipped bytes, sent with
`Accept-Encoding: gzip`). Reports p50/p95 latency, throughput, errors and the web server's
CPU time per request (its processes' user + system time over the window), the figure that
swings least on a shared machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.load import server_cpu_s  # noqa: E402
from benchmarks.page_latency import (GRAPHS, WARMUP_S, finished_run, hammer,  # noqa: E402
                                     percentile)
from benchmarks.stack import Stack  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "api_latency.json"


def endpoints(stack: Stack, run_id: str, key: str) -> dict[str, str]:
    client = stack.client(key)
    try:
        cost = client.get_json(f"/api/v1/runs/{run_id}/results")["devices"]["h100"]
        kernel = cost["strategies"]["cost"]["kernels"][0]["name"]
    finally:
        client.close()
    return {"status": f"/api/v1/runs/{run_id}/status", "detail": f"/api/v1/runs/{run_id}",
            "list": "/api/v1/runs?per_page=50",
            "kernel": f"/api/v1/runs/{run_id}/kernels/h100/cost/{kernel}",
            "results": f"/api/v1/runs/{run_id}/results"}


def measure(stack: Stack, path: str, key: str, clients: int, seconds: float) -> dict:
    cpu: list[float] = []
    samplers = [threading.Timer(delay, lambda: cpu.append(server_cpu_s(stack)))
                for delay in (WARMUP_S, WARMUP_S + seconds)]
    for sampler in samplers:
        sampler.start()
    load_before = os.getloadavg()
    latencies, errors, window = hammer(stack.http_port, path, clients, seconds,
                                       {"Authorization": f"Bearer {key}",
                                        "Accept-Encoding": "gzip"})
    for sampler in samplers:
        sampler.join()
    answered = len(latencies)

    def ms(value: float | None) -> float | None:
        return None if value is None else value * 1e3

    return {"requests": answered, "errors": errors, "throughput_rps": answered / window,
            "p50_ms": ms(percentile(latencies, 0.50)), "p95_ms": ms(percentile(latencies, 0.95)),
            "server_cpu_ms_per_request": (cpu[1] - cpu[0]) * 1e3 / answered if answered else None,
            "load_average_before": load_before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--label", default="latest")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    figures = {}
    with Stack() as stack:
        key = stack.new_api_user("bench")
        run_id = finished_run(stack, GRAPHS["softmax"], key)
        for name, path in endpoints(stack, run_id, key).items():
            figures[name] = measure(stack, path, key, args.clients, args.seconds)
            row = figures[name]
            print(f"{name:8} {row['throughput_rps']:7.0f}/s  p50 {row['p50_ms']:6.1f} ms  "
                  f"p95 {row['p95_ms']:6.1f} ms  CPU {row['server_cpu_ms_per_request']:5.2f} "
                  f"ms/request  errors {row['errors']}", flush=True)
    if args.write:
        recorded = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        recorded[args.label] = {"date": date.today().isoformat(), "machine": platform.node(),
                                "cpus": os.cpu_count(), "clients": args.clients,
                                "seconds": args.seconds, "endpoints": figures}
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(recorded, indent=1) + "\n")


if __name__ == "__main__":
    main()
