"""Latency of a finished run's page under concurrent clients on loopback.

Run:  .venv/bin/python benchmarks/page_latency.py [--clients 50] [--seconds 30]
                                                   [--graph softmax|transformer_12l] [--write]

Starts its own stack (benchmarks/stack.py: Redis, a fresh SQLite database, one Celery compile
worker, the gunicorn server `make run` starts, DEBUG off), submits the graph through the API as a public run,
waits until it is done, then runs `clients` threads, each with its own keep-alive HTTP/1.1
connection, fetching the run page /r/<id> back to back (no think time) for `seconds` after a
short warm-up. Reports p50/p95/p99/max latency and throughput, and the page's size. The
clients run in this process (one Python process: a client thread waits on the GIL too, so
latencies include some client-side queueing, which at most overstates them).

Target (issue 6): p95 under 300 ms with 50 clients.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.stack import Client, Stack  # noqa: E402

HERE = Path(__file__).parent
GRAPHS = {"softmax": HERE.parent / "tests" / "data" / "hlo" / "softmax.hlo",
          "transformer_12l": HERE / "data" / "transformer_12l.hlo.gz"}
WARMUP_S = 3


def finished_run(stack: Stack, graph: Path, key: str | None = None, **fields: str) -> str:
    """The id of a public run of the graph, submitted with the API key `key` (by default a new
    user's) and the submission's other `fields` (devices=...), once it is done."""
    client = stack.client(key or stack.new_api_user("bench"))
    try:
        run_id = client.upload(graph, visibility="public", **fields)["id"]
        deadline = time.monotonic() + 900
        while (status := client.get_json(f"/api/v1/runs/{run_id}/status"))["status"] != "done":
            if status["status"] == "failed" or time.monotonic() > deadline:
                raise RuntimeError(f"the run did not finish: {status}")
            time.sleep(0.2)
    finally:
        client.close()
    return run_id


def hammer(port: int, path: str, clients: int, seconds: float,
           headers: dict | None = None) -> tuple[list[float], int, float]:
    """Latencies (s) of the requests that started after the warm-up and ended before the stop,
    the number of errors and the measured window's length. `headers` go with every request
    (credentials, Accept-Encoding)."""
    start = time.perf_counter()
    measure_from, stop_at = start + WARMUP_S, start + WARMUP_S + seconds
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients

    def client_loop(index: int) -> None:
        client = Client(port)
        try:
            while True:
                began = time.perf_counter()
                if began >= stop_at:
                    return
                try:
                    status, _ = client.request("GET", path, headers=headers)
                except OSError:
                    errors[index] += 1
                    client.close()
                    client = Client(port)
                    continue
                ended = time.perf_counter()
                if status != 200:
                    errors[index] += 1
                elif began >= measure_from and ended <= stop_at:
                    latencies[index].append(ended - began)
        finally:
            client.close()

    threads = [threading.Thread(target=client_loop, args=(index,)) for index in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [value for per_client in latencies for value in per_client], sum(errors), seconds


def percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--graph", choices=sorted(GRAPHS), default="transformer_12l")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    with Stack() as stack:
        run_id = finished_run(stack, GRAPHS[args.graph])
        single = stack.client()
        single_latencies, page_bytes = [], 0
        for _ in range(10):
            began = time.perf_counter()
            status, page = single.request("GET", f"/r/{run_id}")
            single_latencies.append(time.perf_counter() - began)
            page_bytes = len(page)
        single.close()
        load_before = os.getloadavg()
        latencies, errors, window = hammer(stack.http_port, f"/r/{run_id}", args.clients,
                                           args.seconds)

    def ms(value: float | None) -> float | None:
        return None if value is None else value * 1e3

    # No request completing inside the window (each took longer) is a result too: recorded with
    # null percentiles and the errors (client timeouts) it caused.
    figures = {
        "clients": args.clients, "seconds": window, "requests": len(latencies),
        "errors": errors, "throughput_rps": len(latencies) / window,
        "p50_ms": ms(percentile(latencies, 0.50)), "p95_ms": ms(percentile(latencies, 0.95)),
        "p99_ms": ms(percentile(latencies, 0.99)), "max_ms": ms(max(latencies, default=None)),
        "single_client_median_ms": statistics.median(single_latencies) * 1e3,
        "page_bytes": page_bytes,
    }
    shown = {key: "n/a" if figures[key] is None else f"{figures[key]:.0f} ms"
             for key in ("p50_ms", "p95_ms", "p99_ms", "max_ms")}
    print(f"{args.graph} run page ({page_bytes / 1e6:.2f} MB; one client alone: "
          f"{figures['single_client_median_ms']:.0f} ms median)")
    print(f"{args.clients} clients, {window:.0f} s: {len(latencies)} requests, "
          f"{figures['throughput_rps']:.1f}/s, {errors} errors; latency p50 {shown['p50_ms']}, "
          f"p95 {shown['p95_ms']}, p99 {shown['p99_ms']}, max {shown['max_ms']} "
          "(target: p95 < 300 ms)")
    if args.write:
        path = HERE / "results" / "page_latency.json"
        previous = json.loads(path.read_text()) if path.exists() else {}
        graphs = previous.get("graphs", {})
        graphs[args.graph] = {
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores",
            "load_average_before": load_before,
            "python": platform.python_version(),
            "command": f".venv/bin/python benchmarks/page_latency.py --graph {args.graph} "
                       f"--clients {args.clients} --seconds {args.seconds:g} --write",
            "server": "gunicorn -c explorer/gunicorn.conf.py (gthread), DEBUG off, "
                      "SQLite; clients: threads in one Python process, keep-alive",
            "target_p95_ms": 300,
            **figures,
        }
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({"graphs": graphs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
