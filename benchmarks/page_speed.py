"""How long the main pages take to load in a browser, on a first visit and on a return visit.

Run:  .venv/bin/python benchmarks/page_speed.py [--repeat 3] [--revisit-after 65]
                                                 [--label after] [--write]

Starts its own stack (benchmarks/stack.py: Redis, a fresh SQLite database, one Celery compile
worker, the gunicorn server `make run` starts, DEBUG off), submits the bf16 transformer
training step (tests/data/hlo/transformer_step_bf16.hlo, 917 graph nodes: the largest sample
run) through the API as a public run and waits until it is done. Then Debian's Chromium
(Playwright, headless, as the browser tests drive it) opens four pages: the index, the run
page, the kernel page of the cost plan's first kernel, and the compare page (the run's xla
plan against its cost plan).

Each repeat opens every page once in a new browser profile (cold: an empty cache, every
asset downloaded) and, `--revisit-after` seconds later, again in the same profile (warm: a
returning visitor; 65 s is past the 60 s that static files used to be cached for, so assets
without a far-future lifetime must be revalidated). Every view is timed over two networks at
once, each in its own profile: loopback as it is, and a throttled "broadband" link (20 Mbit/s
down, 5 Mbit/s up, 20 ms round trip; Chromium's network emulation), where the bytes sent
count. A view's time is the page's load event (HTML, stylesheets, scripts and what the
scripts draw before it), from the navigation timing; its bytes are what came over the wire
(the document and every resource, compressed sizes). The first repeat's cold view is also the
server's first render of that page since it started (finished runs' results are cached
after it).

Target (issue 16): every page under 1 s warm and under 2 s cold.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.page_latency import finished_run  # noqa: E402
from benchmarks.stack import Stack  # noqa: E402

HERE = Path(__file__).parent
GRAPH = HERE.parent / "tests" / "data" / "hlo" / "transformer_step_bf16.hlo"
CHROMIUM = "/usr/bin/chromium"
# Chrome DevTools' network emulation; throughputs in bytes per second, latency in ms.
NETWORKS = {
    "loopback": None,
    "broadband": {"offline": False, "latency": 20, "downloadThroughput": 20e6 / 8,
                  "uploadThroughput": 5e6 / 8},
}
TARGET_S = {"cold": 2.0, "warm": 1.0}
LOAD_TIMING = """() => {
    const navigation = performance.getEntriesByType("navigation")[0];
    const resources = performance.getEntriesByType("resource");
    return {load_ms: navigation.loadEventEnd, html_ms: navigation.responseEnd,
            bytes: navigation.transferSize + resources.reduce((sum, r) => sum + r.transferSize, 0)};
}"""


def page_paths(stack: Stack, run_id: str) -> dict[str, str]:
    client = stack.client()
    try:
        status, html = client.request("GET", f"/r/{run_id}")
    finally:
        client.close()
    if status != 200:
        raise RuntimeError(f"GET /r/{run_id}: {status}")
    kernel = re.search(rf'href="(/r/{run_id}/h100/cost/[^"#?]+)"', html.decode())
    if kernel is None:
        raise RuntimeError("the run page links to no kernel of the cost plan")
    return {"index": "/", "run": f"/r/{run_id}", "kernel": kernel.group(1),
            "compare": f"/compare?a={run_id}:h100:xla&b={run_id}:h100:cost"}


class Visitor:
    """One browser profile on one network: its views share a cache, as a person's do."""

    def __init__(self, browser, network: dict | None, base_url: str):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.base_url = base_url
        if network is not None:
            session = self.context.new_cdp_session(self.page)
            session.send("Network.enable")
            session.send("Network.emulateNetworkConditions", network)

    def view(self, path: str) -> dict:
        response = self.page.goto(self.base_url + path, wait_until="load", timeout=60_000)
        if response is None or response.status != 200:
            raise RuntimeError(f"GET {path}: {response and response.status}")
        self.page.wait_for_function(
            "performance.getEntriesByType('navigation')[0].loadEventEnd > 0")
        timing = self.page.evaluate(LOAD_TIMING)
        return {"load_s": timing["load_ms"] / 1e3, "html_s": timing["html_ms"] / 1e3,
                "bytes": timing["bytes"]}

    def close(self) -> None:
        self.context.close()


def measure(base_url: str, paths: dict[str, str], repeat: int, revisit_after: float) -> dict:
    """views[network][page]["cold" | "warm"] = a list of {load_s, html_s, bytes}, one per
    repeat (html_s: when the document itself had arrived)."""
    from playwright.sync_api import sync_playwright

    views = {network: {page: {"cold": [], "warm": []} for page in paths} for network in NETWORKS}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--enable-unsafe-swiftshader", "--use-angle=swiftshader"])
        # A person's browser is already running: the first page it opens pays for starting
        # it up, which none of the measured pages should be charged with.
        warm_up = Visitor(browser, None, base_url)
        warm_up.view("/accounts/login/")
        warm_up.close()
        for index in range(repeat):
            visitors = {network: Visitor(browser, conditions, base_url)
                        for network, conditions in NETWORKS.items()}
            for network, visitor in visitors.items():
                for page, path in paths.items():
                    views[network][page]["cold"].append(visitor.view(path))
            print(f"repeat {index + 1}/{repeat}: cold views done; the warm ones in "
                  f"{revisit_after:g} s", flush=True)
            time.sleep(revisit_after)
            for network, visitor in visitors.items():
                for page, path in paths.items():
                    views[network][page]["warm"].append(visitor.view(path))
                visitor.close()
        browser.close()
    return views


def summary(views: dict) -> dict:
    """Per network, page and visit: the median load time and bytes, and the slowest view."""
    return {network: {page: {visit: {
        "median_s": statistics.median(view["load_s"] for view in measured),
        "max_s": max(view["load_s"] for view in measured),
        "first_s": measured[0]["load_s"],
        "median_html_s": statistics.median(view["html_s"] for view in measured),
        "median_bytes": statistics.median(view["bytes"] for view in measured),
    } for visit, measured in visits.items()} for page, visits in pages.items()}
        for network, pages in views.items()}


def print_table(figures: dict) -> None:
    print(f"{'network':<10} {'page':<8} {'cold':>8} {'(first)':>8} {'(html)':>8} {'bytes':>10} "
          f"{'warm':>8} {'(html)':>8} {'bytes':>10}")
    for network, pages in figures.items():
        for page, visits in pages.items():
            cold, warm = visits["cold"], visits["warm"]
            print(f"{network:<10} {page:<8} {cold['median_s']:>7.2f}s {cold['first_s']:>7.2f}s "
                  f"{cold['median_html_s']:>7.2f}s {cold['median_bytes'] / 1e3:>8.0f}kB "
                  f"{warm['median_s']:>7.2f}s {warm['median_html_s']:>7.2f}s "
                  f"{warm['median_bytes'] / 1e3:>8.0f}kB")
    missed = [f"{network} {page} {visit}" for network, pages in figures.items()
              for page, visits in pages.items() for visit, limit in TARGET_S.items()
              if visits[visit]["max_s"] >= limit]
    print("target (cold < 2 s, warm < 1 s, every view): "
          + ("met" if not missed else "missed by " + ", ".join(missed)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--revisit-after", type=float, default=65)
    parser.add_argument("--label", default="current",
                        help="the key the figures are written under (before/after a change)")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    with Stack() as stack:
        run_id = finished_run(stack, GRAPH)
        paths = page_paths(stack, run_id)
        load_before = os.getloadavg()
        views = measure(f"http://127.0.0.1:{stack.http_port}", paths, args.repeat,
                        args.revisit_after)
    figures = summary(views)
    print_table(figures)
    if args.write:
        path = HERE / "results" / "page_speed.json"
        previous = json.loads(path.read_text()) if path.exists() else {}
        previous[args.label] = {
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores",
            "load_average_before": load_before,
            "command": f".venv/bin/python benchmarks/page_speed.py --repeat {args.repeat} "
                       f"--revisit-after {args.revisit_after:g} --label {args.label} --write",
            "networks": NETWORKS,
            "pages": {page: re.sub(r"/r/\w+", "/r/<id>", path) for page, path in paths.items()},
            "figures": figures,
            "views": views,
        }
        path.write_text(json.dumps(previous, indent=2) + "\n")


if __name__ == "__main__":
    main()
