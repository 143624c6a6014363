"""A finished run's page and its API results under 50 concurrent clients while a big compile
runs, before and after its owner has other, very large runs.

Run:  .venv/bin/python benchmarks/load.py [--clients 50] [--seconds 60] [--label after]
                                          [--scenarios page-anonymous,page-owner,results,history]
                                          [--write]

Starts its own stack (benchmarks/stack.py: Redis, a fresh SQLite database, one Celery compile
worker, the gunicorn server `make run` starts, DEBUG off). A user, "owner", submits the bf16
transformer training step (tests/data/hlo/transformer_step_bf16.hlo, 917 graph nodes, all
strategies on the H100; its /results document is about 2.3 MB of JSON) through the API as a
public run and waits until it is done. Another user then keeps the compile worker busy: it
submits the 48-layer training step (benchmarks/data/transformer_48l.hlo.gz, 21,541 HLO
instructions), and the next device's copy of it whenever one finishes, for the whole
measurement (each window's `compile_busy` says which share of it a compile was running).

Each scenario runs `clients` threads, each with its own keep-alive HTTP/1.1 connection,
requesting one URL back to back (no think time) for `seconds` after a 3 s warm-up, every
request with `Accept-Encoding: gzip` as browsers and HTTP libraries send it (the client reads
the bytes and does not decompress them). Scenarios:

  page-anonymous  GET /r/<id>, no credentials
  page-owner      GET /r/<id>, the owner's session cookie (a logged-in browser)
  results         GET /api/v1/runs/<id>/results, the owner's API key as a Bearer token
  history         GET /runs, the owner's session cookie (the list of runs)

They run twice: "alone", when the owner has that run only, and "heavy", after two more runs
of the owner's were stored, each with a 100 MB upload and an artifact of about 19 MB (the
run's own with its plans' kernel lists repeated; finished and newest, so the history lists
them and the run page offers them for comparison). The figures of the two phases should not
differ beyond the noise.

Reports p50/p95/p99/max latency, throughput and errors per scenario and phase, and the web
server's CPU time per request (its processes' user and system time over the measured window,
per request measured): on this shared 2-core machine the latencies swing with whatever else
runs, and the CPU time per request much less. The clients run in this process (threads wait
on the GIL too, so latencies include some client-side queueing, which at most overstates
them); the machine's load average before each window is recorded.

Target (issue 18): run page and API results p95 < 300 ms, 0 errors, in both phases, on the
2-core development machine.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import threading
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.page_latency import WARMUP_S, finished_run, hammer, percentile  # noqa: E402
from benchmarks.stack import Stack  # noqa: E402

HERE = Path(__file__).parent
GRAPH = HERE.parent / "tests" / "data" / "hlo" / "transformer_step_bf16.hlo"
BACKGROUND_GRAPH = HERE / "data" / "transformer_48l.hlo.gz"
# One copy of the background compile per device, so each submission is a new run.
BACKGROUND_DEVICES = ("h100", "a100", "h200", "v100", "l4")
SCENARIOS = ("page-anonymous", "page-owner", "results", "history")
TARGET_P95_MS = 300
HEAVY_RUNS = 2
HEAVY_GRAPH_BYTES = 100_000_000
HEAVY_ARTIFACT_BYTES = 25_000_000

# Run by `manage.py shell`: two finished runs of the owner's with big uploads and artifacts,
# made from the measured run's (its graph's text repeated, its plans' kernel lists repeated).
HEAVY_RUNS_SCRIPT = """
import json
from django.utils import timezone
from explorer.models import Run
model = Run.objects.get(pk={run_id!r})
text = bytes(model.graph_bytes)
artifact = model.artifact
copies = max(1, {artifact_bytes} // len(json.dumps(artifact)))
for results in artifact["devices"].values():
    for plan in results["strategies"].values():
        plan["kernels"] = plan["kernels"] * copies
for index in range({count}):
    header = f"// heavy run {{index}}\\n".encode()
    graph = header + text * ({graph_bytes} // len(text))
    now = timezone.now()
    Run.objects.create(
        id=f"heavy{{index}}".ljust(22, "x"), owner=model.owner, visibility=Run.PRIVATE,
        status=Run.DONE, name=f"heavy {{index}}", filename="heavy.hlo", graph_bytes=graph,
        devices=model.devices, strategies=model.strategies,
        compiler_version=model.compiler_version, artifact=artifact, started=now,
        finished=now)
print(len(json.dumps(artifact)))
"""


class BackgroundCompiles:
    """Keeps the compile worker busy: submits the big graph for one device after another, a
    new one when the last is done, and samples once a second whether one is running."""

    def __init__(self, stack: Stack, key: str):
        self.client = stack.client(key)
        self.samples: list[tuple[float, bool]] = []
        self.submitted: list[str] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> BackgroundCompiles:
        self._submit()
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.thread.join()
        self.client.close()

    def _submit(self) -> None:
        device = BACKGROUND_DEVICES[len(self.submitted) % len(BACKGROUND_DEVICES)]
        self.submitted.append(self.client.upload(BACKGROUND_GRAPH, devices=device)["id"])

    def _loop(self) -> None:
        while not self.stopping.wait(1.0):
            status = self.client.get_json(f"/api/v1/runs/{self.submitted[-1]}/status")["status"]
            self.samples.append((time.perf_counter(), status == "running"))
            if status in ("done", "failed"):
                self._submit()

    def busy_share(self, since: float, until: float) -> float | None:
        window = [running for moment, running in self.samples if since <= moment <= until]
        return sum(window) / len(window) if window else None


def scenario_requests(run_id: str, key: str, session: str) -> dict[str, tuple[str, dict]]:
    gzipped = {"Accept-Encoding": "gzip"}
    cookie = {**gzipped, "Cookie": f"sessionid={session}"}
    return {
        "page-anonymous": (f"/r/{run_id}", gzipped),
        "page-owner": (f"/r/{run_id}", cookie),
        "results": (f"/api/v1/runs/{run_id}/results",
                    {**gzipped, "Authorization": f"Bearer {key}"}),
        "history": ("/runs", cookie),
    }


def check(stack: Stack, path: str, headers: dict) -> dict:
    """One request alone: its time, and the sizes of the body as sent and decompressed (a
    results document must parse as the run's results)."""
    client = stack.client()
    try:
        began = time.perf_counter()
        status, body = client.request("GET", path, headers=headers)
        alone_ms = (time.perf_counter() - began) * 1e3
    finally:
        client.close()
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {body[:300]!r}")
    plain = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
    if "/results" in path and "devices" not in json.loads(plain):
        raise RuntimeError(f"GET {path}: not a results document")
    return {"one_request_ms": alone_ms, "bytes_sent": len(body), "bytes": len(plain)}


def server_cpu_s(stack: Stack) -> float:
    """CPU seconds the web server's processes (gunicorn's master and its workers) have used."""
    master = stack.server_pid
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:       # the process ended
            continue
        pid, parent = int(stat.parent.name), int(fields[1])
        if master in (pid, parent):
            ticks += int(fields[11]) + int(fields[12])   # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def measure(stack: Stack, background: BackgroundCompiles, path: str, headers: dict,
            clients: int, seconds: float) -> dict:
    """The scenario's figures. `server_cpu_ms_per_request`: the server's CPU time in the
    measured window per request measured, which, unlike the latencies, hardly depends on what
    else the machine runs."""
    load_before = os.getloadavg()
    cpu = []
    samplers = [threading.Timer(delay, lambda: cpu.append(server_cpu_s(stack)))
                for delay in (WARMUP_S, WARMUP_S + seconds)]
    for sampler in samplers:
        sampler.start()
    began = time.perf_counter()
    latencies, errors, window = hammer(stack.http_port, path, clients, seconds, headers)
    for sampler in samplers:
        sampler.join()
    answered = len(latencies)
    busy = background.busy_share(began, time.perf_counter())

    def ms(value: float | None) -> float | None:
        return None if value is None else value * 1e3

    return {"requests": len(latencies), "errors": errors,
            "throughput_rps": len(latencies) / window,
            "p50_ms": ms(percentile(latencies, 0.50)), "p95_ms": ms(percentile(latencies, 0.95)),
            "p99_ms": ms(percentile(latencies, 0.99)), "max_ms": ms(max(latencies, default=None)),
            "server_cpu_ms_per_request": (cpu[1] - cpu[0]) * 1e3 / answered if answered else None,
            "load_average_before": load_before, "compile_busy": busy}


def shown(value: float | None, unit: str = " ms") -> str:
    return "n/a" if value is None else f"{value:.0f}{unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--label", default="latest")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    scenarios = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios {sorted(unknown)}; choose from {', '.join(SCENARIOS)}")
    load_at_start = os.getloadavg()
    phases: dict[str, dict] = {}
    with Stack() as stack:
        # The neighbour first, so that the owner's id is past 1: SQLite stores the integers 0
        # and 1 in a row's header, and any other id among the row's data, after the artifact.
        neighbour_key = stack.new_api_user("neighbour")
        key = stack.new_api_user("owner")
        session = stack.new_session("owner")
        run_id = finished_run(stack, GRAPH, key)
        requests = scenario_requests(run_id, key, session)
        sizes = {name: check(stack, *requests[name]) for name in scenarios}
        with BackgroundCompiles(stack, neighbour_key) as background:
            for phase in ("alone", "heavy"):
                if phase == "heavy":
                    stack.manage("shell", "-c", HEAVY_RUNS_SCRIPT.format(
                        run_id=run_id, count=HEAVY_RUNS, graph_bytes=HEAVY_GRAPH_BYTES,
                        artifact_bytes=HEAVY_ARTIFACT_BYTES))
                phases[phase] = {}
                for name in scenarios:
                    figures = measure(stack, background, *requests[name], args.clients,
                                      args.seconds)
                    phases[phase][name] = figures
                    print(f"{phase:5} {name:14} {figures['requests']:6} requests "
                          f"{figures['throughput_rps']:6.1f}/s {figures['errors']} errors; "
                          f"p50 {shown(figures['p50_ms'])}, p95 {shown(figures['p95_ms'])}, "
                          f"p99 {shown(figures['p99_ms'])}, max {shown(figures['max_ms'])}; "
                          f"server CPU {shown(figures['server_cpu_ms_per_request'])}/request, "
                          f"compile busy {shown((figures['compile_busy'] or 0) * 100, '%')}, "
                          f"load before {figures['load_average_before'][0]:.1f}", flush=True)
            compiles = len(background.submitted)
    for name in scenarios:
        print(f"{name}: {sizes[name]['bytes'] / 1e6:.2f} MB "
              f"({sizes[name]['bytes_sent'] / 1e6:.2f} MB sent), "
              f"one request alone {sizes[name]['one_request_ms']:.0f} ms")
    if args.write:
        path = HERE / "results" / "page_load.json"
        previous = json.loads(path.read_text()) if path.exists() else {}
        runs = previous.get("runs", {})
        runs[args.label] = {
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores",
            "load_average_at_start": load_at_start,
            "python": platform.python_version(),
            "command": f".venv/bin/python benchmarks/load.py --clients {args.clients} "
                       f"--seconds {args.seconds:g} --scenarios {','.join(scenarios)} "
                       f"--label {args.label} --write",
            "server": "gunicorn -c explorer/gunicorn.conf.py (gthread), DEBUG off, SQLite; "
                      "clients: threads in one Python process, keep-alive, gzip accepted",
            "graph": GRAPH.name, "background": f"{BACKGROUND_GRAPH.name}, "
                                               f"{compiles} compiles submitted",
            "target_p95_ms": TARGET_P95_MS, "clients": args.clients, "seconds": args.seconds,
            "sizes": sizes, "phases": phases,
        }
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({"runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
