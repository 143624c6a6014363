#!/usr/bin/env bash
# Starts the local stack for `make run`: Redis (unless REDIS_URL names one), migrations of the
# database (SQLite in var/, or PostgreSQL when DATABASE_URL is set), the sample runs, a Celery
# worker on the compile queue, one on the gpu queue when CuPy finds a GPU, and the web server
# (gunicorn with explorer/gunicorn.conf.py), on PORT and REDIS_PORT (below). Ctrl-C or a SIGTERM
# stops everything this script started, its Redis included, and nothing else: a Redis that was
# already running is left alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly VENV_BIN=.venv/bin
readonly VAR_DIR=var
readonly HOST=127.0.0.1
# PORT and REDIS_PORT choose the ports (make run PORT=8080 REDIS_PORT=6380). Left unset, the web
# server takes 8000 or, when that is taken, a free port, and says which.
PORT_ASKED="${PORT:-}"
PORT="${PORT:-8000}"
REDIS_PORT="${REDIS_PORT:-6379}"
# Where the logs and Redis's pid file go (LOG_DIR: another folder, e.g. for a second stack).
readonly LOG_DIR="${LOG_DIR:-$VAR_DIR}"
readonly CELERY_LOG="$LOG_DIR/celery.log"
readonly GPU_CELERY_LOG="$LOG_DIR/celery-gpu.log"
# A worker finishing a task gets this long to shut down before it is killed.
readonly WORKER_STOP_SECONDS=15

mkdir -p "$VAR_DIR/redis" "$LOG_DIR"

redis_started_here=false
worker_pid=""
gpu_worker_pid=""
server_pid=""

redis_answers() {
    redis-cli -h "$HOST" -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG
}

# Whether something listens on HOST:$1.
port_taken() {
    "$VENV_BIN/python" -c "
import socket, sys
with socket.socket() as s:
    s.settimeout(0.5)
    sys.exit(0 if s.connect_ex(('$HOST', $1)) == 0 else 1)"
}

free_port() {
    "$VENV_BIN/python" -c "
import socket
with socket.socket() as s:
    s.bind(('$HOST', 0))
    print(s.getsockname()[1])"
}

if port_taken "$PORT"; then
    if [ -n "$PORT_ASKED" ]; then
        echo "Port $PORT on $HOST is taken; choose another with PORT=..." >&2
        exit 1
    fi
    PORT="$(free_port)"
    echo "Port 8000 on $HOST is taken; serving on port $PORT instead (PORT=... chooses)."
fi
readonly PORT REDIS_PORT
readonly REDIS_PIDFILE="$LOG_DIR/redis-$REDIS_PORT.pid"
readonly REDIS_LOG="$LOG_DIR/redis-$REDIS_PORT.log"

# Stops the workers whose ids are given: SIGTERM (a warm shutdown: the job in hand finishes),
# then SIGKILL for any still running after WORKER_STOP_SECONDS.
stop_workers() {
    local pid running
    for pid in "$@"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for _ in $(seq "$WORKER_STOP_SECONDS"); do
        running=false
        for pid in "$@"; do
            if kill -0 "$pid" 2>/dev/null; then running=true; fi
        done
        [ "$running" = true ] || return 0
        sleep 1
    done
    for pid in "$@"; do
        if kill -0 "$pid" 2>/dev/null; then
            echo "Celery worker $pid did not stop in ${WORKER_STOP_SECONDS}s; killing it." >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
}

# The server runs in a session of its own (see below), so its id is also its process group's id
# and one signal reaches gunicorn's master and its worker processes.
stop_server() {
    [ -n "$server_pid" ] || return 0
    kill -TERM -- "-$server_pid" 2>/dev/null || true
}

stop_redis() {
    if [ "$redis_started_here" = true ] && [ -f "$REDIS_PIDFILE" ]; then
        kill -TERM "$(cat "$REDIS_PIDFILE")" 2>/dev/null || true
        echo "Stopped the Redis started on $HOST:$REDIS_PORT."
    fi
}

stop_everything() {
    trap - EXIT INT TERM
    echo "Stopping the services started by make run..."
    stop_server
    # shellcheck disable=SC2086 # unquoted on purpose: an unset id drops out of the list
    stop_workers $worker_pid $gpu_worker_pid
    stop_redis
}
trap stop_everything EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -z "${REDIS_URL:-}" ]; then
    export REDIS_URL="redis://$HOST:$REDIS_PORT/0"
    if redis_answers; then
        echo "Reusing the Redis already running on $HOST:$REDIS_PORT."
    else
        # The queue holds only job ids (results live in the database), so nothing is persisted.
        redis-server --bind "$HOST" --port "$REDIS_PORT" --daemonize yes \
            --pidfile "$(realpath "$REDIS_PIDFILE")" --dir "$PWD/$VAR_DIR/redis" \
            --logfile "$(realpath "$REDIS_LOG")" --save "" --appendonly no
        redis_started_here=true
        for _ in $(seq 50); do
            redis_answers && break
            sleep 0.1
        done
        redis_answers || { echo "Redis did not start; see $REDIS_LOG" >&2; exit 1; }
        echo "Started Redis on $HOST:$REDIS_PORT (log: $REDIS_LOG)."
    fi
else
    echo "Using the Redis at REDIS_URL=$REDIS_URL."
fi

# Served like a deployment: DEBUG off (no traceback pages), with a secret key made once for this
# checkout and kept in var/ (set DEBUG=true for Django's debug pages while developing).
export DEBUG="${DEBUG:-false}"
if [ -z "${SECRET_KEY:-}" ]; then
    if [ ! -s "$VAR_DIR/secret_key" ]; then
        (umask 077 && "$VENV_BIN/python" -c "import secrets; print(secrets.token_urlsafe(50))" \
            >"$VAR_DIR/secret_key")
    fi
    SECRET_KEY="$(cat "$VAR_DIR/secret_key")"
    export SECRET_KEY
fi

"$VENV_BIN/python" manage.py migrate --no-input
# The sample graphs as public runs (nothing new when they are there already); the worker
# started below compiles any that are not done yet.
echo "Loading the sample runs:"
"$VENV_BIN/python" manage.py load_samples

# The workers' logs are JSON lines (explorer/logs.py); --quiet leaves out the plain-text banner
# a worker prints at start.
# Compiles run at a lower CPU priority than the web server (nice 10, COMPILE_WORKER_NICE): on a
# machine that serves pages too, a compile takes whatever CPU the pages leave and never the
# other way round (benchmarks/load.py: run page p95 with a compile running).
nice -n "${COMPILE_WORKER_NICE:-10}" \
    "$VENV_BIN/celery" -A workers --quiet worker -Q compile -n "compile@%h" -l info \
        >"$CELERY_LOG" 2>&1 &
worker_pid=$!
echo "Started a Celery worker on the compile queue (log: $CELERY_LOG)."

# A worker on the gpu queue only where CuPy is installed and sees a CUDA device. Without one,
# results say "not measured: no GPU worker online".
readonly GPU_CHECK='
try:
    import cupy
    count = cupy.cuda.runtime.getDeviceCount()
except Exception as error:
    raise SystemExit(f"{type(error).__name__}: {error}".splitlines()[0])
raise SystemExit(0 if count > 0 else "no CUDA device")
'
if gpu_check=$("$VENV_BIN/python" -c "$GPU_CHECK" 2>&1); then
    "$VENV_BIN/celery" -A workers --quiet worker -Q gpu -n "gpu@%h" --concurrency 1 -l info \
        >"$GPU_CELERY_LOG" 2>&1 &
    gpu_worker_pid=$!
    echo "CuPy finds a GPU: started a Celery worker on the gpu queue (log: $GPU_CELERY_LOG)."
else
    echo "No GPU worker: CuPy is not installed here or finds no GPU ($gpu_check)."
fi

echo
echo "Fusion Explorer: http://$HOST:$PORT/  (Ctrl-C stops the server, the workers and Redis)"
echo
# In the background and in its own session, so that the traps above run as soon as Ctrl-C or a
# SIGTERM reaches this script (bash runs a trap only once its foreground command has ended).
setsid "$VENV_BIN/gunicorn" -c explorer/gunicorn.conf.py --bind "$HOST:$PORT" explorer.wsgi &
server_pid=$!
wait "$server_pid"
