"""The whole web stack of `make run`, started for a benchmark and stopped after it.

`Stack` starts Redis on a free loopback port, migrates a fresh SQLite file in a temporary
folder, collects the static files there as `make run` does (hashed names, gzip and brotli
copies: about 15 s), starts a Celery worker on the compile queue and the web server, and stops
them all on exit. Nothing touches var/ or a developer's Redis on 6379; the nvcc build cache is
the temporary folder's too unless `build_cache` names another one, so a first compile is a
cold one.

The web server is the one `make run` starts: gunicorn with explorer/gunicorn.conf.py (worker
processes with threads, keep-alive), here with DEBUG off. With `gpu_worker` a worker on the gpu
queue starts too, as `make run` starts one where CuPy finds a GPU; `emulated` makes it an
emulated one (GPU_WORKER_EMULATED: kernels checked on the CPU emulator, nothing timed).

`Client` talks to it over HTTP/1.1 with keep-alive, authenticating with an API token.
"""
from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
STARTUP_TIMEOUT_S = 60
STOP_TIMEOUT_S = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)


class Stack:
    def __init__(self, worker_concurrency: int = 1, build_cache: Path | None = None,
                 gpu_worker: bool = False, emulated: bool = False):
        self.folder = Path(tempfile.mkdtemp(prefix="fusion-bench-"))
        self.redis_port, self.http_port = free_port(), free_port()
        self.worker_concurrency = worker_concurrency
        self.gpu_worker, self.emulated = gpu_worker, emulated
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "explorer.settings",
            "DEBUG": "false",
            "SECRET_KEY": "benchmark-" + uuid.uuid4().hex,
            "ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_PATH": str(self.folder / "db.sqlite3"),
            "STATIC_ROOT": str(self.folder / "static"),
            "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "FUSION_EXPLORER_CACHE_DIR": str(build_cache or self.folder / "cache"),
            "GRAPH_STORE_DIR": str(self.folder / "graphs"),
            # The API's rate limit counts every request, as in a deployment, but a benchmark's
            # clients sharing one key are never refused (explorer/api.py RateLimit).
            "API_RATE_LIMIT": "1000000000",
        }
        self.env.pop("DATABASE_URL", None)
        self.processes: list[subprocess.Popen] = []

    # --- Starting and stopping ---------------------------------------------------------------

    def __enter__(self) -> Stack:
        # A benchmark stopped with SIGTERM (kill, timeout) stops its stack too, as Ctrl-C does:
        # the processes run in sessions of their own and would outlive it.
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _spawn(self, name: str, command: list[str], env: dict | None = None
               ) -> subprocess.Popen:
        log = (self.folder / f"{name}.log").open("w")
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=env or self.env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        return process

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def keep_logs(self, target: Path) -> list[Path]:
        """Copy every process's log into `target` (the stack's folder goes when it stops)."""
        target.mkdir(parents=True, exist_ok=True)
        return [Path(shutil.copy(log, target)) for log in sorted(self.folder.glob("*.log"))]

    def _wait(self, name: str, process: subprocess.Popen, ready) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not ready():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}:\n{self.log(name)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} not ready in {STARTUP_TIMEOUT_S} s:\n{self.log(name)}")
            time.sleep(0.1)

    def _start(self) -> None:
        redis = self._spawn("redis", [
            shutil.which("redis-server") or "redis-server", "--bind", "127.0.0.1",
            "--port", str(self.redis_port), "--dir", str(self.folder), "--save", "",
            "--appendonly", "no"])
        self._wait("redis", redis, lambda: "Ready to accept connections" in self.log("redis"))
        self.manage("migrate", "--no-input")
        self.manage("collectstatic", "--no-input")
        # At the priority `make run` gives the compile worker (scripts/run.sh).
        worker = self._spawn("worker", [
            "nice", "-n", os.environ.get("COMPILE_WORKER_NICE", "10"),
            sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "compile",
            "-l", "info", "--concurrency", str(self.worker_concurrency),
            "-n", f"bench-{os.getpid()}@%h", "--without-gossip", "--without-mingle"])
        gpu_worker = self._start_gpu_worker() if self.gpu_worker else None
        server = self._spawn("server", [
            sys.executable, "-m", "gunicorn", "-c", "explorer/gunicorn.conf.py",
            "--bind", f"127.0.0.1:{self.http_port}", "explorer.wsgi"])
        self.server_pid = server.pid   # gunicorn's master: its workers are its children
        self._wait("worker", worker, lambda: "ready." in self.log("worker"))
        if gpu_worker is not None:
            self._wait("gpu-worker", gpu_worker, lambda: "ready." in self.log("gpu-worker"))
        self._wait("server", server, self._answers)

    def _start_gpu_worker(self) -> subprocess.Popen:
        """A worker on the gpu queue, one job at a time, as the README starts one."""
        env = {**self.env, "GPU_WORKER_EMULATED": "true" if self.emulated else "false"}
        return self._spawn("gpu-worker", [
            sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "gpu",
            "-l", "info", "--concurrency", "1", "-n", f"gpu-{os.getpid()}@%h",
            "--without-gossip", "--without-mingle"], env)

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.http_port), timeout=1):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()
        shutil.rmtree(self.folder, ignore_errors=True)

    # --- Using it ------------------------------------------------------------------------------

    def manage(self, *args: str) -> str:
        """Run a management command against the stack's database; its stdout."""
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=self.env,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def new_api_user(self, username: str) -> str:
        """A user with an API token; the token's key."""
        self.manage("shell", "-c", "from django.contrib.auth import get_user_model; "
                                   f"get_user_model().objects.create_user({username!r})")
        return self.manage("create_api_token", username).strip()

    def new_session(self, username: str) -> str:
        """The key of a logged-in session of the user (as the log-in form would make): a
        browser sends it as the `sessionid` cookie."""
        # The last line: Django's shell prints what it imported first.
        return self.manage("shell", "-c", f"""
from importlib import import_module
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
user = get_user_model().objects.get(username={username!r})
session = import_module(settings.SESSION_ENGINE).SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "explorer.lookups.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(session.session_key)""").split()[-1]

    def client(self, key: str | None = None) -> Client:
        return Client(self.http_port, key)


class Client:
    """One keep-alive HTTP/1.1 connection to the stack's server."""

    def __init__(self, port: int, key: str | None = None):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}

    def request(self, method: str, path: str, body: bytes | Iterable[bytes] | None = None,
                headers: dict | None = None) -> tuple[int, bytes]:
        self.connection.request(method, path, body=body, headers={**self.headers,
                                                                  **(headers or {})})
        response = self.connection.getresponse()
        return response.status, response.read()

    def get_json(self, path: str) -> dict:
        status, body = self.request("GET", path)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status} {body[:500]!r}")
        return json.loads(body)

    def upload(self, path: Path, **fields: str) -> dict:
        """POST /api/v1/runs with the file as multipart/form-data, streamed from disk (a file
        of hundreds of MB is never in this process's memory either)."""
        boundary = uuid.uuid4().hex
        head = b"".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
            f'{value}\r\n'.encode() for name, value in fields.items())
        head += (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                 f'filename="{path.name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
                 .encode())
        tail = f"\r\n--{boundary}--\r\n".encode()

        def body():
            yield head
            with path.open("rb") as file:
                while chunk := file.read(1 << 20):
                    yield chunk
            yield tail

        status, answer = self.request(
            "POST", "/api/v1/runs", body(),
            {"Content-Type": f"multipart/form-data; boundary={boundary}",
             "Content-Length": str(len(head) + path.stat().st_size + len(tail))})
        if status not in (200, 201):
            raise RuntimeError(f"POST /api/v1/runs: {status} {answer[:500]!r}")
        return json.loads(answer)

    def close(self) -> None:
        self.connection.close()
