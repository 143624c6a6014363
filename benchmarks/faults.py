"""How long a run takes to recover from each fault, with real Redis and Celery processes.

Run:  .venv/bin/python benchmarks/faults.py [--lease 30] [--sweep 10] [--write]

Starts its own Redis and a fresh SQLite database, and submits softmax.hlo through the app's
own path (explorer.runs.submit_run, the broker from REDIS_URL) for each fault:
- kill -9: a worker is killed mid-job (in codegen); the broker would hand its message back only
  after its visibility timeout (an hour, as in production), so what brings the run back is the
  sweeper of the worker started in its place, once the lease runs out. Measured: from the kill
  to the run claimed again, and to done.
- Redis down: the run is submitted while Redis is stopped (stored queued, unsent), then Redis is
  started again, empty. Measured: from Redis back to the run done.
- a silent stage and a duplicate delivery: a worker spends three leases at the start of codegen
  without progress while a second worker gets the same job. Measured: whether the run was
  computed once (attempts) and by the first worker.
`--lease` and `--sweep` set COMPILE_LEASE_S and JOB_SWEEP_INTERVAL_S for the workers (the
production defaults are 120 and 30 s; the figures scale with them).

Target (issue 18): a killed worker's run resumes within about one lease; nothing is lost or
computed twice.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.stack import free_port  # noqa: E402

HERE = Path(__file__).parent
SOFTMAX = ROOT / "tests" / "data" / "hlo" / "softmax.hlo"
TIMEOUT_S = 600


class Services:
    """A Redis server (stopped and started at will) and Celery workers, on one database."""

    def __init__(self, folder: Path, lease_s: int, sweep_s: int):
        self.folder, self.port = folder, free_port()
        self.redis: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.env = {**os.environ, "DJANGO_SETTINGS_MODULE": "explorer.settings",
                    "DEBUG": "false", "SECRET_KEY": "faults-" + "k" * 50,
                    "DATABASE_PATH": str(folder / "db.sqlite3"),
                    "REDIS_URL": f"redis://127.0.0.1:{self.port}/0",
                    "COMPILE_LEASE_S": str(lease_s), "JOB_SWEEP_INTERVAL_S": str(sweep_s),
                    "JOB_SEND_GRACE_S": "1", "CELERY_VISIBILITY_TIMEOUT_S": "3600",
                    "FUSION_EXPLORER_CACHE_DIR": str(folder / "cache")}
        self.env.pop("DATABASE_URL", None)

    def start_redis(self) -> None:
        self.redis = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", "--bind", "127.0.0.1", "--port",
             str(self.port), "--dir", str(self.folder), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def stop_redis(self) -> None:
        self.redis.terminate()
        self.redis.wait(20)

    def worker(self, name: str, **env: str) -> tuple[subprocess.Popen, Path]:
        log = self.folder / f"{name}.log"
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "compile", "-l",
             "info", "--concurrency", "1", "--hostname", f"{name}@%h", "--without-gossip",
             "--without-mingle", "--without-heartbeat"], cwd=ROOT, env={**self.env, **env},
            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        self.workers.append(process)
        deadline = time.monotonic() + 60
        while "ready." not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {name} did not start:\n{log.read_text()}")
            time.sleep(0.1)
        return process, log

    def stop(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if self.redis is not None and self.redis.poll() is None:
            self.stop_redis()


def wait_for(run_id: str, condition, what: str):
    from explorer.models import Run

    deadline = time.monotonic() + TIMEOUT_S
    while True:
        run = Run.objects.get(pk=run_id)
        if condition(run):
            return run
        if time.monotonic() > deadline:
            raise RuntimeError(f"run {run_id} never became {what}: {run.status} {run.stage}")
        time.sleep(0.1)


def submit(owner, strategies: list[str]):
    from explorer.runs import submit_run

    return submit_run(owner, SOFTMAX.read_bytes(), "softmax.hlo", ["h100"], strategies)


def killed_worker(services: Services, owner) -> dict:
    from explorer.models import Run

    doomed, _ = services.worker("doomed", COMPILE_TEST_CODEGEN_DELAY_S="600")
    run = submit(owner, ["xla"])
    wait_for(run.pk, lambda r: r.stage == "codegen", "at codegen")
    os.killpg(doomed.pid, signal.SIGKILL)
    doomed.wait()
    killed = time.monotonic()
    services.worker("rescuer")
    claimed = wait_for(run.pk, lambda r: r.claimed_by.startswith("rescuer"), "claimed again")
    reclaimed_s = time.monotonic() - killed
    done = wait_for(run.pk, lambda r: r.status in (Run.DONE, Run.FAILED), "done")
    return {"fault": "worker killed with SIGKILL in codegen", "reclaimed_s": reclaimed_s,
            "done_s": time.monotonic() - killed, "status": done.status,
            "attempts": done.attempts, "claimed_by": claimed.claimed_by.split("@")[0]}


def redis_down(services: Services, owner) -> dict:
    from explorer.models import Run

    services.stop_redis()
    run = submit(owner, ["stitch"])
    stored = Run.objects.get(pk=run.pk)
    services.start_redis()
    back = time.monotonic()
    done = wait_for(run.pk, lambda r: r.status in (Run.DONE, Run.FAILED), "done")
    return {"fault": "submitted while Redis was down, Redis restarted empty",
            "stored_while_down": stored.status, "done_s": time.monotonic() - back,
            "status": done.status, "attempts": done.attempts}


def silent_stage(services: Services, owner, lease_s: int) -> dict:
    from explorer.models import Run
    from explorer.runs import enqueue_compile

    for process in services.workers:        # only the two below take this job
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    services.worker("slow", COMPILE_TEST_CODEGEN_DELAY_S=str(3 * lease_s))
    run = submit(owner, ["cost"])
    wait_for(run.pk, lambda r: r.stage == "codegen", "at codegen")
    services.worker("second")
    enqueue_compile(run.pk)                 # the duplicate delivery
    start = time.monotonic()
    done = wait_for(run.pk, lambda r: r.status in (Run.DONE, Run.FAILED), "done")
    return {"fault": f"{3 * lease_s} s without progress, and a duplicate delivery",
            "done_s": time.monotonic() - start, "status": done.status,
            "attempts": done.attempts, "claimed_by": done.claimed_by.split("@")[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lease", type=int, default=30, help="COMPILE_LEASE_S (s)")
    parser.add_argument("--sweep", type=int, default=10, help="JOB_SWEEP_INTERVAL_S (s)")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="faults-"))
    services = Services(folder, args.lease, args.sweep)
    os.environ.update(services.env)        # this process submits through the same stack
    subprocess.run([sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT,
                   env=services.env, check=True, capture_output=True)
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    owner = get_user_model().objects.create_user("faults")
    rows = []
    try:
        services.start_redis()
        for scenario in (killed_worker, redis_down):
            rows.append(scenario(services, owner))
            print(json.dumps(rows[-1]), flush=True)
        rows.append(silent_stage(services, owner, args.lease))
        print(json.dumps(rows[-1]), flush=True)
    finally:
        services.stop()
        shutil.rmtree(folder, ignore_errors=True)
    if args.write:
        (HERE / "results" / "faults.json").write_text(json.dumps({
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores",
            "command": f".venv/bin/python benchmarks/faults.py --lease {args.lease} "
                       f"--sweep {args.sweep} --write",
            "lease_s": args.lease, "sweep_s": args.sweep, "faults": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
