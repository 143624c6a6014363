"""The Tune action on a fleet of 1, 2 and 4 compile worker processes (issue 37): plans scored in
the same time, and the best plan found.

Run:  .venv/bin/python benchmarks/tune_fleet.py [--module gru_16steps] [--budget-s 20]
                                                [--processes 1,2,4] [--write]

For each count of processes: start the whole stack (benchmarks/stack.py: Redis, a fresh SQLite
database, the web server) with one Celery compile worker of that concurrency, upload the module
through the API (H100, the four strategies), wait for its run, then POST /api/v1/runs/<id>/tune
with the budget and poll GET .../tune until the tuning is done. A tuning is spread over one
share per compile worker process (workers/tasks.py tuning_shares): each share is an independent
annealing search with its own seed under the same time budget, so the fleet's worth is the
plans scored in that budget (and the best plan found among more of them). Reports, per count:
the shares, plans scored, plans per second, the best plan's score and gain over the cost plan,
and the wall time from the request to the tuning's end. --write stores the figures in
benchmarks/results/tune_fleet.json. On the 2-core development machine 4 processes share 2
cores: the figure to read there is 1 against 2.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.stack import Stack  # noqa: E402

MODULES = {"gru_16steps": "zoo/gru_16steps.hlo.gz", "llama_2l": "zoo/llama_2l.hlo.gz",
           "efficientnet_mbconv": "zoo/efficientnet_mbconv.hlo.gz"}
POLL_S = 0.25
TIMEOUT_S = 900


def wait(client, path: str, done, what: str) -> dict:
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        answer = client.get_json(path)
        if done(answer):
            return answer
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not done after {TIMEOUT_S} s: {answer}")
        time.sleep(POLL_S)


def one_fleet(processes: int, graph: Path, budget_s: float) -> dict:
    with Stack(worker_concurrency=processes) as stack:
        client = stack.client(stack.new_api_user("tuner"))
        try:
            run = client.upload(graph, devices="h100", strategies="unfused,xla,stitch,cost")
            status = wait(client, f"/api/v1/runs/{run['id']}/status",
                          lambda s: s["status"] in ("done", "failed"), "the run")
            if status["status"] != "done":
                raise RuntimeError(f"the run failed: {status}")
            started = time.perf_counter()
            code, body = client.request(
                "POST", f"/api/v1/runs/{run['id']}/tune",
                json.dumps({"device": "h100", "budget_s": budget_s}).encode(),
                {"Content-Type": "application/json"})
            if code not in (200, 202):
                raise RuntimeError(f"tune: {code} {body[:300]!r}")
            tuning = wait(client, f"/api/v1/runs/{run['id']}/tune",
                          lambda t: t["status"] in ("done", "failed"), "the tuning")
            wall_s = time.perf_counter() - started
        finally:
            client.close()
    if tuning["status"] != "done":
        raise RuntimeError(f"the tuning failed: {tuning['error']}")
    result = tuning["result"]
    cost = result["starts"].get("cost")
    return {"processes": processes, "shares": result.get("shares", 1),
            "evaluations": result["evaluations"],
            "plans_per_s": round(result["evaluations"] / budget_s, 1),
            "best_us": result["best"]["score_us"], "cost_us": cost,
            "gain_percent": round(100 * (cost - result["best"]["score_us"]) / cost, 2)
            if cost else None,
            "first_improvement_s": result["first_improvement_s"],
            "wall_s": round(wall_s, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", default="gru_16steps", choices=sorted(MODULES))
    parser.add_argument("--budget-s", type=float, default=20.0)
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    graph = HERE / "data" / MODULES[args.module]
    load_before = os.getloadavg()
    rows = []
    for processes in [int(n) for n in args.processes.split(",")]:
        row = one_fleet(processes, graph, args.budget_s)
        rows.append(row)
        print(f"{processes} process(es): {row['shares']} shares, {row['evaluations']} plans "
              f"scored ({row['plans_per_s']}/s), best {row['best_us']:,.2f} µs "
              f"({row['gain_percent']} % below cost), first better "
              f"{row['first_improvement_s']} s, request to result {row['wall_s']} s",
              flush=True)
    if args.write:
        out = HERE / "results" / "tune_fleet.json"
        out.write_text(json.dumps({
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "load_average_before": load_before, "module": args.module,
            "budget_s": args.budget_s,
            "command": " ".join(["benchmarks/tune_fleet.py"] + sys.argv[1:]),
            "fleets": rows}, indent=1) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
