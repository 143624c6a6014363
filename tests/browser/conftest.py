"""Playwright driving Debian's Chromium (headless) against a live server and a real worker.

pytest-django's `live_server` serves the app from a thread of this process, on the test
database file (tests/conftest.py) that the Celery worker of tests/services.py opens too, so a
run uploaded through the browser is compiled by the worker and shown by the live server. The
browser is Debian's /usr/bin/chromium (`make system-deps` installs it): no `playwright install`,
no browser download.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.waits import DEADLINE_MS

CHROMIUM = Path("/usr/bin/chromium")
VIEWPORT = {"width": 1280, "height": 900}
LAYER_NORM_BWD = Path(__file__).resolve().parents[1] / "data" / "hlo" / "layer_norm_bwd.hlo"
STRATEGIES = ["unfused", "xla", "stitch", "cost"]


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """Chromium for one test. Playwright's sync API keeps an asyncio loop on this thread while
    it runs, which makes Django refuse ORM calls from the test ("async unsafe") although nothing
    runs concurrently: allowed for the test, and Playwright stops before the database flush."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed; `make system-deps` installs Debian's chromium")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed; `make system-deps` installs it")
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    with sync_playwright() as playwright:
        # SwiftShader: headless Chromium without a GPU still draws Plotly's WebGL traces.
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True,
            args=["--enable-unsafe-swiftshader", "--use-angle=swiftshader"])
        yield chromium
        chromium.close()


def store_done_run(owner, run_id: str, artifact: dict, hlo: Path = LAYER_NORM_BWD,
                   name: str = "layer norm backward") -> Run:
    """A finished run of `hlo`, stored directly from `artifact` (what compile_graph made of it,
    edited or not) with its kernels' sources, if it has any: no worker compiles it. Its
    strategies are the ones the artifact holds."""
    from explorer.models import KernelSource, Run

    artifact = dict(artifact)
    sources = artifact.pop("sources", {})
    strategies = list(next(iter(artifact["devices"].values()))["strategies"])
    run = Run.objects.create(
        id=run_id, owner=owner, visibility=Run.PRIVATE, status=Run.DONE, filename=hlo.name,
        graph_bytes=hlo.read_bytes(), devices=list(artifact["devices"]),
        strategies=strategies, compiler_version=artifact["compiler_version"],
        artifact=artifact, name=name)
    KernelSource.objects.bulk_create(KernelSource.from_artifact(run.pk, key, source)
                                     for key, source in sources.items())
    return run


@pytest.fixture
def layer_norm_run(users) -> Run:
    """layer_norm_bwd.hlo compiled for the H100 with every strategy, stored as done."""
    from compiler.stages.pipeline import compile_graph

    artifact = compile_graph(LAYER_NORM_BWD.read_bytes(), LAYER_NORM_BWD.name, ["h100"],
                             STRATEGIES)
    return store_done_run(users["owner"], "u" * 22, artifact)


@pytest.fixture
def users(transactional_db) -> dict:
    """The owner "ada" and a stranger "eve"; log_in's password is "<name>-password-1"."""
    from django.contrib.auth import get_user_model

    make = get_user_model().objects.create_user
    return {"owner": make("ada", password="ada-password-1"),
            "stranger": make("eve", password="eve-password-1")}


@pytest.fixture
def new_page(browser) -> Iterator:
    """`new_page()` opens a page in a fresh browser context (its own cookies: a new session).
    Every page records uncaught exceptions and console errors in `page.js_errors`. Its waits
    (auto-waiting actions, wait_for, navigations) have the generous deadline of waits.py."""
    contexts = []

    def open_page():
        context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
        context.set_default_timeout(DEADLINE_MS)
        context.set_default_navigation_timeout(DEADLINE_MS)
        contexts.append(context)
        page = context.new_page()
        _record_errors(page)
        return page

    yield open_page
    for context in contexts:
        context.close()


def _record_errors(page) -> None:
    page.js_errors = []

    def on_console(message) -> None:
        if message.type == "error":
            page.js_errors.append(f"console error: {message.text} ({message.location})")

    page.on("pageerror", lambda error: page.js_errors.append(f"uncaught: {error}"))
    page.on("console", on_console)


@pytest.fixture
def screenshots(tmp_path: Path) -> Iterator:
    """`screenshots(page, name[, part][, full_page])` saves a full-page PNG (or one of the
    element `part`, or of the window) under the test's tmp dir; with SCREENSHOTS_DIR set it
    copies each one there as well. docs/screenshots/ holds such copies put through `pngquant`
    (a third of the size) before they were committed."""
    folder = tmp_path / "screenshots"
    folder.mkdir()
    publish = os.environ.get("SCREENSHOTS_DIR")

    def take(page, name: str, part: str | None = None, full_page: bool = True) -> Path:
        """The whole page (or what the window shows of it), or only the element `part` (a
        selector) of it."""
        path = folder / f"{name}.png"
        if part:
            page.locator(part).screenshot(path=str(path))
        else:
            page.screenshot(path=str(path), full_page=full_page)
        if publish:
            Path(publish).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, Path(publish) / path.name)
        return path

    yield take


# Training steps of 4,335 and 16,647 nodes (benchmarks/data/), for the views of big plans.
STEP_12 = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "transformer_12l.hlo.gz"
STEP_48 = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "transformer_48l.hlo.gz"


def explored_run(owner, run_id: str, path: Path, strategies: list[str], name: str):
    """A done run of `path` holding its explored plans for the H100 (no kernels built) and,
    as the compile worker stores them, each plan's laid-out fusion view."""
    from compiler.fusion.explore import exploration_to_dict, explore
    from compiler.importers import import_bytes
    from compiler.ir.summary import summarize
    from compiler.version import compiler_version

    graph = import_bytes(path.read_bytes(), path.name)[0]
    summary = summarize(graph)
    plans = explore(graph, "h100", strategies)
    artifact = {"compiler_version": compiler_version(), "graph": summary,
                "devices": {"h100": exploration_to_dict(summary, "h100", plans)}}
    run = store_done_run(owner, run_id, artifact, hlo=path, name=name)
    # As the compile worker does: each plan's fusion view laid out and stored with the run.
    from compiler.stages.graph_view import plan_views
    from explorer.models import PlanGraph

    PlanGraph.objects.bulk_create(
        PlanGraph(run=run, device=device, strategy=strategy, data=PlanGraph.pack(view))
        for (device, strategy), view in plan_views(path.read_bytes(), path.name, artifact))
    run.node_count = len(graph.nodes)
    return run


@pytest.fixture
def step_12_run(users):
    return explored_run(users["owner"], "b" * 22, STEP_12, ["xla", "cost"], "12-layer step")
