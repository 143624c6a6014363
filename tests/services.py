"""Real services for task and browser tests: a Redis server and Celery workers on the compile
queue. A pytest plugin (tests/conftest.py loads it), so tests/workers/ and tests/browser/ share
one Redis and one worker per run.

Redis listens on a loopback port picked for this test run, so tests never touch a developer's
own Redis on 6379, and everything is stopped when the run ends. Workers use the test database
file (tests/conftest.py) and short lease and visibility timeouts, so a job whose worker was
killed is redelivered within seconds instead of an hour.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

REPO_ROOT = Path(__file__).resolve().parents[1]
STARTUP_TIMEOUT_S = 30
SHUTDOWN_TIMEOUT_S = 20
# A killed worker's job is handed to another worker this long after it was delivered.
VISIBILITY_TIMEOUT_S = 3
# A running job whose worker has not renewed its lease for this long counts as abandoned (a live
# worker renews it every third of that, so a machine loaded by other tests leaves it room).
LEASE_S = 4


@dataclass(frozen=True)
class RunningWorker:
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_entries(self) -> list[dict]:
        """The log's lines, parsed; the test fails on one that is not a JSON object (README:
        the logs are JSON lines)."""
        log = self.log()
        entries = []
        for number, text in enumerate(log.splitlines(), 1):
            try:
                entries.append(json.loads(text))
            except json.JSONDecodeError:
                pytest.fail(f"line {number} of the worker's log is not JSON: {text!r}\n{log}")
        return entries

    def kill(self) -> None:
        """SIGKILL the worker and its pool: it dies mid-job without acknowledging anything."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def _free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM first: Redis and Celery both shut down cleanly on it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(SHUTDOWN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_redis(data_dir: Path, port: int) -> subprocess.Popen:
    """A redis-server on the loopback port, keeping nothing on disk (as `make run`'s), once
    it answers; skips the test when Redis is not installed."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed; `make system-deps` installs it")
    log_path = data_dir / "redis.log"
    process = subprocess.Popen(
        [server, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(data_dir),
         "--logfile", str(log_path), "--save", "", "--appendonly", "no"],
    )
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"redis-server exited with {process.returncode}:\n"
                            f"{log_path.read_text(errors='replace')}")
            try:
                client.ping()
                return process
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    _stop(process)
                    pytest.fail(f"redis-server did not answer within {STARTUP_TIMEOUT_S}s")
                time.sleep(0.05)
    finally:
        client.close()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_loopback_port()
    process = start_redis(tmp_path_factory.mktemp("redis"), port)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def celery_env(redis_url: str, test_database_path: Path) -> dict[str, str]:
    """Environment for a process that uses the app's Celery config against the test Redis and
    the test database."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "explorer.settings",
        "REDIS_URL": redis_url,
        "DATABASE_PATH": str(test_database_path),
        "CELERY_VISIBILITY_TIMEOUT_S": str(VISIBILITY_TIMEOUT_S),
        "CELERY_RESTORE_INTERVAL_S": "1",
        "COMPILE_LEASE_S": str(LEASE_S),
    }


def start_worker(env: dict[str, str], log_path: Path, name: str,
                 queues: str = "compile") -> RunningWorker:
    """A Celery worker on `queues` (the compile queue unless told), ready to consume, in a
    process group of its own (so that `kill` reaches its pool process too)."""
    command = [
        # --quiet: no plain-text banner, so the log holds JSON lines only, as make run's do.
        sys.executable, "-m", "celery", "-A", "workers", "--quiet", "worker",
        "-Q", queues, "-l", "info", "--concurrency", "1",
        "--hostname", f"{name}-{os.getpid()}@%h",
        # A lone worker has no peers to sync with; skipping these saves seconds of start-up.
        "--without-gossip", "--without-mingle", "--without-heartbeat",
    ]
    with log_path.open("w") as log_file:
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log_file,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    worker = RunningWorker(process, log_path)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while "ready." not in worker.log():
        if process.poll() is not None:
            pytest.fail(f"celery worker exited with {process.returncode}:\n{worker.log()}")
        if time.monotonic() > deadline:
            _stop(process)
            pytest.fail(f"celery worker not ready within {STARTUP_TIMEOUT_S}s:\n{worker.log()}")
        time.sleep(0.1)
    return worker


@pytest.fixture(scope="session")
def compile_worker(
    celery_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningWorker]:
    worker = start_worker(celery_env, tmp_path_factory.mktemp("celery") / "worker.log", "pytest")
    try:
        yield worker
    finally:
        _stop(worker.process)


def send_to(broker_url: str, task_name: str = "workers.compile_run"):
    """An enqueue function for explorer.runs.submit_run (or, with `task_name`, another job's
    enqueue function) that sends to `broker_url` (the test Redis) instead of the configured
    broker."""
    from workers import app
    from workers import tasks

    task = next(t for t in (tasks.compile_run, tasks.compile_saved_plan, tasks.tune_run,
                            tasks.tune_shard, tasks.measure_run) if t.name == task_name)

    def enqueue(pk) -> None:
        with app.connection_for_write(broker_url) as connection:
            task.apply_async((pk,), connection=connection)
    return enqueue


@pytest.fixture
def compile_queue(
    redis_url: str, compile_worker: RunningWorker, monkeypatch: pytest.MonkeyPatch
) -> RunningWorker:
    """Runs submitted during the test, by a view in a live server thread too, go to the test
    Redis, where the session's compile worker takes them."""
    from explorer import runs

    monkeypatch.setattr(runs, "enqueue_compile", send_to(redis_url))
    monkeypatch.setattr(runs, "enqueue_saved_plan",
                        send_to(redis_url, "workers.compile_saved_plan"))
    monkeypatch.setattr(runs, "enqueue_tune", send_to(redis_url, "workers.tune_run"))
    monkeypatch.setattr(runs, "enqueue_tune_shard", send_to(redis_url, "workers.tune_shard"))
    return compile_worker


@pytest.fixture
def worker_factory(tmp_path: Path) -> Iterator:
    """Starts extra workers for one test (`worker_factory(name, env, queues="compile")`); stops
    them after."""
    started: list[RunningWorker] = []

    def start(name: str, env: dict[str, str], queues: str = "compile") -> RunningWorker:
        worker = start_worker(env, tmp_path / f"{name}.log", name, queues)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        _stop(worker.process)


def wait_for_run(run_id: str, condition, what: str, logs, timeout_s: float):
    """The run once `condition(run)` holds, polling its row; the test fails naming where the
    run stands (and the workers' logs, `logs`: callables) after `timeout_s`."""
    from explorer.models import Run

    deadline = time.monotonic() + timeout_s
    while True:
        run = Run.objects.get(pk=run_id)
        if condition(run):
            return run
        if time.monotonic() > deadline:
            pytest.fail(f"run {run_id} never became {what}; it is {run.status} at stage "
                        f"{run.stage!r} ({run.stage_detail!r})\n"
                        + "\n".join(log() for log in logs))
        time.sleep(0.1)


def wait_for_job(model, pk, logs, timeout_s: float):
    """A job row (a saved plan, a tuning) once it is done or failed, polling it; the test fails
    naming where it stands (and the workers' logs) after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        row = model.objects.get(pk=pk)
        if row.status in (model.DONE, model.FAILED):
            return row
        if time.monotonic() > deadline:
            pytest.fail(f"{model.__name__} {pk} is still {row.status} ({row.stage})\n"
                        + "\n".join(log() for log in logs))
        time.sleep(0.1)


def finished(run) -> bool:
    return run.status in ("done", "failed")

