"""The web server's settings, shared by `make run` (scripts/run.sh) and the benchmarks
(benchmarks/stack.py): `gunicorn -c explorer/gunicorn.conf.py explorer.wsgi`.

A worker process per core, each with a pool of threads: pages spend most of their time in
Python (the GIL), so processes give the parallelism, and threads let a process keep serving
while one request waits on the database or Redis. The gthread worker also keeps HTTP/1.1
connections alive. More processes than cores made the tail worse, not better: with 50 clients
on the 2-core development machine, 2 processes x 4 threads gave a run page p95 of 147 ms,
3 x 8 264 ms, 4 x 4 310 ms and 6 x 2 568 ms (benchmarks/page_latency.py, softmax), before
reuse_port below. WEB_WORKERS and WEB_THREADS override the defaults; BIND the address.
"""
import multiprocessing
import os
import tempfile

bind = os.environ.get("BIND", "127.0.0.1:8000")
worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS", multiprocessing.cpu_count()))
threads = int(os.environ.get("WEB_THREADS", 4))
# Keep-alive connections stay open this long between requests (seconds).
keepalive = 5
# Big uploads (a 48-layer HLO) take a while to parse before the response: far below this.
timeout = 120
accesslog = os.environ.get("WEB_ACCESS_LOG") or None
# A listening socket per worker process (SO_REUSEPORT): the kernel spreads new connections
# evenly across the processes, where a shared socket lets whichever process wakes first take
# them, so that with keep-alive one process could end up serving most of the clients.
reuse_port = True
# Gunicorn's control socket (`gunicornc`) defaults to one path per user, so a second server of
# the same user (a benchmark beside `make run`, two checkouts) would take it over from the
# first. One per server instead, named after its master process (this file is read there);
# WEB_CONTROL_SOCKET names another.
control_socket = os.environ.get("WEB_CONTROL_SOCKET") or os.path.join(
    tempfile.gettempdir(), f"fusion-explorer-gunicorn-{os.getpid()}.ctl")
# Gunicorn's own lines (worker boots, exits, timeouts) as JSON like the app's, at LOG_LEVEL.
from explorer.env import env_str  # noqa: E402
from explorer.logs import logging_config  # noqa: E402

logconfig_dict = logging_config(env_str("LOG_LEVEL", default="INFO").upper())
