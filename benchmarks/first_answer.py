"""Time from upload to the first plans on the run page, for the 2-layer Llama-style training step.

Run:  .venv/bin/python benchmarks/first_answer.py [--repeat 2] [--write]

Starts its own stack (benchmarks/stack.py: Redis, a fresh SQLite database, one Celery compile
worker, the gunicorn server `make run` starts), creates a user with an API token and a logged-in
session, and for each repeat uploads benchmarks/data/zoo/llama_2l.hlo.gz through the API
(POST /api/v1/runs; the default H100 and all four strategies), then does what the run page
does in a browser (static/explorer/run.js), every 50 ms instead of every second: GET the page's
r/<id>/status.json, and whenever it says more plans are explored than the page shows, GET the
preview r/<id>/preview. The clock runs from just before the upload; it records when the
preview first held a plan's row in its comparison table (the first answer), when it held every
plan, when the run was done and when the final run page /r/<id> had been received. At the
first answer the run page itself is fetched too, to check that a browser opening it then sees
the plans.

Each repeat is a new user (run ids are content-addressed per owner). The first repeat starts
with an empty nvcc build cache (cold), later ones find the kernels built (warm).

Target (issue 36, point 5): the first plans on screen in under 10 s on the 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.stack import Stack  # noqa: E402

HERE = Path(__file__).parent
GRAPH = HERE / "data" / "zoo" / "llama_2l.hlo.gz"
POLL_S = 0.05
TIMEOUT_S = 600
TARGET_S = 10
# A plan's row in the comparison table (templates/explorer/run_results.html), and how many plans
# a preview holds (templates/explorer/run_preview.html).
PLAN_ROW = re.compile(rb'<tr data-strategy="([\w.-]+)"')
PREVIEW_PLANS = re.compile(rb'data-plans="(\d+)"')


def plans_shown(html: bytes) -> list[str]:
    return [name.decode() for name in PLAN_ROW.findall(html)]


def one_upload(stack: Stack, username: str) -> dict:
    api = stack.client(stack.new_api_user(username))
    page = stack.client()
    page.headers = {"Cookie": f"sessionid={stack.new_session(username)}"}
    try:
        start = time.perf_counter()
        submitted = api.upload(GRAPH, visibility="private")
        run_id = submitted["id"]
        uploaded = time.perf_counter() - start
        stages: dict[str, float] = {}
        previews: list[dict] = []
        asked = None
        while True:
            status = page.get_json(f"/r/{run_id}/status.json")
            now = time.perf_counter() - start
            stage = status["stage"] or status["status"]
            stages.setdefault(stage, now)
            if status["status"] in ("done", "failed"):
                break
            # What run.js asks for: the preview again whenever the explored count moves, and
            # once after the explore stage.
            mark = f"explore {status['progress_done']}" if status["stage"] == "explore" \
                else "explored"
            if status["status"] == "running" and status["stage"] not in ("", "import") \
                    and mark != asked:
                asked = mark
                code, body = page.request("GET", f"/r/{run_id}/preview")
                at = time.perf_counter() - start
                shown = plans_shown(body) if code == 200 else []
                if shown and (not previews or shown != previews[-1]["shown"]):
                    entry = {"at_s": at, "shown": shown, "bytes": len(body),
                             "plans": int(PREVIEW_PLANS.search(body).group(1))}
                    if not previews:  # what a browser opening the run page now would see
                        code, whole = page.request("GET", f"/r/{run_id}")
                        entry["run_page_s"] = time.perf_counter() - start - at
                        entry["run_page_shows"] = plans_shown(whole)
                    previews.append(entry)
            if now > TIMEOUT_S:
                raise RuntimeError(f"not done after {TIMEOUT_S} s: {status}")
            time.sleep(POLL_S)
        if status["status"] != "done":
            raise RuntimeError(f"the run failed: {status}\n{stack.log('worker')[-3000:]}")
        done = time.perf_counter() - start
        code, final = page.request("GET", f"/r/{run_id}")
        shown_final = time.perf_counter() - start
        if code != 200:
            raise RuntimeError(f"the run page answered {code}")
    finally:
        api.close()
        page.close()
    first = previews[0]["at_s"] if previews else shown_final
    return {"upload_s": uploaded, "first_plans_s": first,
            "first_plans": previews[0]["shown"] if previews else plans_shown(final),
            "all_plans_s": previews[-1]["at_s"] if previews else shown_final,
            "done_s": done, "final_page_s": shown_final,
            "final_plans": plans_shown(final), "previews": previews,
            "stages_first_seen_s": stages, "stage_seconds": {
                row["name"]: row["seconds"] for row in status["stages"]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    runs = []
    load_before = os.getloadavg()
    with Stack() as stack:
        for index in range(args.repeat):
            result = one_upload(stack, f"bench{index}")
            result["build_cache"] = "cold" if index == 0 else "warm"
            runs.append(result)
            stages = ", ".join(f"{name} {seconds:.1f}" for name, seconds in
                               result["stage_seconds"].items() if seconds is not None)
            previews = "; ".join(f"{entry['at_s']:.2f} s: {', '.join(entry['shown'])}"
                                 for entry in result["previews"]) or "none"
            print(f"repeat {index + 1} ({result['build_cache']} build cache): first plans "
                  f"{result['first_plans_s']:.2f} s ({', '.join(result['first_plans'])}), all "
                  f"plans {result['all_plans_s']:.2f} s, done {result['done_s']:.2f} s, final "
                  f"page {result['final_page_s']:.2f} s (upload {result['upload_s']:.2f} s)\n"
                  f"  previews: {previews}\n  stages (s): {stages}")
    print(f"first plans: cold {runs[0]['first_plans_s']:.2f} s"
          + "".join(f", warm {run['first_plans_s']:.2f} s" for run in runs[1:])
          + f" (target: under {TARGET_S} s)")
    if args.write:
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "first_answer.json").write_text(json.dumps({
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores",
            "python": platform.python_version(),
            "command": ".venv/bin/python benchmarks/first_answer.py --write",
            "module": f"zoo/{GRAPH.name}",
            "server": "gunicorn (explorer/gunicorn.conf.py), DEBUG off, SQLite, 1 Celery worker "
                      "(concurrency 1, nice 10)",
            "load_average_before": load_before,
            "target_s": TARGET_S,
            "runs": runs,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
