"""What browser tests wait for, and how long at most.

A test waits for the condition it needs (an element's state, a `data-*` attribute the page's
script sets, a job's state in the database), never for a fixed time, and every wait has the same
generous deadline: on a loaded machine (`make test` on two cores, a cold nvcc in the worker)
the app is slower, not wrong, and a short fixed timeout turned that into failures.
"""
import time

from playwright.sync_api import expect

# The longest any one condition may take to come true.
DEADLINE_S = 120
DEADLINE_MS = DEADLINE_S * 1000
# pytest-timeout for a whole browser test: it waits for many conditions one after another.
TEST_TIMEOUT_S = 5 * DEADLINE_S
# How often a job's state is read from the database while waiting for it.
POLL_S = 0.25

expect.set_options(timeout=DEADLINE_MS)


def wait_for_run(page, run_id: str, deadline_s: float = DEADLINE_S):
    """The run once its worker has finished it (failing with the run's error if it failed),
    after the page, which polls the run's status, has reloaded with its results. A run of a
    big graph, many stages long, may be given a longer `deadline_s`."""
    from explorer.models import Run

    deadline = time.monotonic() + deadline_s
    run = Run.objects.get(pk=run_id)
    while run.status not in (Run.DONE, Run.FAILED):
        assert time.monotonic() < deadline, (
            f"run {run_id} still {run.status} ({run.stage} {run.progress_done}/"
            f"{run.progress_total}) after {deadline_s} s")
        time.sleep(POLL_S)
        run.refresh_from_db()
    assert run.status == Run.DONE, f"run {run_id} failed in {run.error_stage}: {run.error}"
    # The measurement line is a done run's page's alone: the page shown while the run compiled
    # has the plans' comparison too (its preview), until the reload.
    page.locator("#measurement").wait_for()
    page.locator(".comparison__table").wait_for()
    return run
