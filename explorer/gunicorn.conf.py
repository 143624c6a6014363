"""The web server's settings, shared by `make run` (scripts/run.sh) and the benchmarks
(benchmarks/stack.py): `gunicorn -c explorer/gunicorn.conf.py explorer.wsgi`.

Worker processes, each with a pool of threads: pages spend most of their time in Python (the
GIL), so processes give the parallelism, and threads let a process keep serving while one
request waits on the database or Redis. The gthread worker also keeps HTTP/1.1 connections
alive. WEB_WORKERS and WEB_THREADS override the defaults; BIND the address.
"""
import multiprocessing
import os

bind = os.environ.get("BIND", "127.0.0.1:8000")
worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS", multiprocessing.cpu_count() + 1))
threads = int(os.environ.get("WEB_THREADS", 4))
# Keep-alive connections stay open this long between requests (seconds).
keepalive = 5
# Big uploads (a 48-layer HLO) take a while to parse before the response: far below this.
timeout = 120
accesslog = os.environ.get("WEB_ACCESS_LOG") or None
