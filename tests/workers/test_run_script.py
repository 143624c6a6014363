"""`make run`'s script (scripts/run.sh) as a user runs it: on the ports it is given, serving,
and on SIGTERM stopping everything it started, the Redis it started included."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import redis

from tests.services import _free_loopback_port

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S = 120
STOP_TIMEOUT_S = 60

pytestmark = pytest.mark.timeout(300)


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def script_env(tmp_path):
    if not (REPO_ROOT / ".venv" / "bin" / "celery").exists():
        pytest.skip("no .venv: `make venv` makes it")
    env = {key: value for key, value in os.environ.items()
           if key not in ("REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    return {**env, "DATABASE_PATH": str(tmp_path / "db.sqlite3"), "LOG_DIR": str(tmp_path),
            "SECRET_KEY": "run-script-test-" + "k" * 50, "WEB_WORKERS": "1"}


def test_it_serves_on_the_ports_given_and_stops_all_it_started_on_sigterm(script_env, tmp_path):
    web, broker = _free_loopback_port(), _free_loopback_port()
    output = (tmp_path / "run.out").open("w")
    script = subprocess.Popen(["scripts/run.sh"], cwd=REPO_ROOT, stdout=output,
                              stderr=subprocess.STDOUT, start_new_session=True,
                              env={**script_env, "PORT": str(web), "REDIS_PORT": str(broker)})
    log = lambda: (tmp_path / "run.out").read_text(errors="replace")  # noqa: E731
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{web}/api/v1/openapi.json",
                                            timeout=5) as answer:
                    assert answer.status == 200
                    break
            except OSError:
                if script.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"run.sh never served on {web}:\n{log()}")
                time.sleep(0.5)
        assert redis.Redis(port=broker).ping()
        assert f"Started Redis on 127.0.0.1:{broker}" in log()
        assert f"http://127.0.0.1:{web}/" in log()
        # The compile worker's log holds JSON lines only, and the web server's lines are JSON.
        worker_log = tmp_path / "celery.log"
        while "ready." not in worker_log.read_text(errors="replace"):
            if time.monotonic() > deadline:
                pytest.fail(f"the compile worker never got ready:\n{worker_log.read_text()}")
            time.sleep(0.5)
        for text in worker_log.read_text().splitlines():
            assert text.startswith("{") and isinstance(json.loads(text), dict), text
        server_lines = [json.loads(text) for text in log().splitlines() if text.startswith("{")]
        assert any(entry["logger"] == "gunicorn.error" for entry in server_lines), log()

        script.send_signal(signal.SIGTERM)
        script.wait(STOP_TIMEOUT_S)
    finally:
        if script.poll() is None:
            os.killpg(script.pid, signal.SIGKILL)
        output.close()
    deadline = time.monotonic() + 10
    while (listening(web) or listening(broker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not listening(web), log()
    assert not listening(broker), f"the Redis it started still runs:\n{log()}"
    assert "Stopped the Redis started" in log()


def test_a_port_given_that_is_taken_is_refused_with_a_message(script_env, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(["scripts/run.sh"], cwd=REPO_ROOT, capture_output=True, text=True,
                              env={**script_env, "PORT": str(port),
                                   "REDIS_PORT": str(_free_loopback_port())}, timeout=60)
    assert done.returncode == 1
    assert f"Port {port} on 127.0.0.1 is taken; choose another with PORT=" in done.stderr
