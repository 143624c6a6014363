"""workers.ping: the health check that proves a worker consumes the compile queue."""
import subprocess
import sys
from pathlib import Path

from workers import app
from workers.tasks import ping

REPO_ROOT = Path(__file__).resolve().parents[2]
REPLY_TIMEOUT_S = 30

# Sent from a separate process so that the app reads REDIS_URL at start-up, exactly as the web
# server does; the test process itself is configured for the default Redis on 6379.
SEND_PING = f"from workers.tasks import ping; print(ping.delay().get(timeout={REPLY_TIMEOUT_S}))"


def test_it_has_a_stable_name_late_acks_and_time_limits():
    assert ping.name == "workers.ping"
    assert ping.acks_late is True
    assert 0 < ping.soft_time_limit < ping.time_limit


def test_it_is_routed_to_the_compile_queue():
    route = app.amqp.router.route({}, "workers.ping")
    assert route["queue"].name == "compile"


def test_a_real_worker_answers_pong(compile_worker, celery_env):
    sent = subprocess.run(
        [sys.executable, "-c", SEND_PING],
        cwd=REPO_ROOT,
        env=celery_env,
        capture_output=True,
        text=True,
        timeout=REPLY_TIMEOUT_S + 30,
    )
    assert sent.returncode == 0, (
        f"sending workers.ping failed:\n{sent.stderr}\nworker log:\n{compile_worker.log()}"
    )
    assert sent.stdout.strip() == "pong"
    assert "workers.ping" in compile_worker.log()
