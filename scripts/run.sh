#!/usr/bin/env bash
# Starts the local stack for `make run`: Redis (unless REDIS_URL names one), migrations, a Celery
# worker on the compile queue and Django's development server. Ctrl-C stops everything this
# script started and nothing else: a Redis that was already running is left alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly VENV_BIN=.venv/bin
readonly VAR_DIR=var
readonly HOST=127.0.0.1
readonly PORT=8000
readonly REDIS_PORT=6379
readonly REDIS_PIDFILE="$VAR_DIR/redis.pid"
readonly CELERY_LOG="$VAR_DIR/celery.log"
# A worker finishing a task gets this long to shut down before it is killed.
readonly WORKER_STOP_SECONDS=15

mkdir -p "$VAR_DIR/redis"

redis_started_here=false
worker_pid=""
server_pid=""

redis_answers() {
    redis-cli -h "$HOST" -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG
}

stop_worker() {
    [ -n "$worker_pid" ] || return 0
    kill -TERM "$worker_pid" 2>/dev/null || return 0
    for _ in $(seq "$WORKER_STOP_SECONDS"); do
        kill -0 "$worker_pid" 2>/dev/null || return 0
        sleep 1
    done
    echo "Celery worker did not stop in ${WORKER_STOP_SECONDS}s; killing it." >&2
    kill -KILL "$worker_pid" 2>/dev/null || true
}

# The server runs in a session of its own (see below), so its id is also its process group's id
# and one signal reaches the autoreloader and the child process it restarts.
stop_server() {
    [ -n "$server_pid" ] || return 0
    kill -TERM -- "-$server_pid" 2>/dev/null || true
}

stop_redis() {
    if [ "$redis_started_here" = true ] && [ -f "$REDIS_PIDFILE" ]; then
        kill -TERM "$(cat "$REDIS_PIDFILE")" 2>/dev/null || true
    fi
}

stop_everything() {
    trap - EXIT INT TERM
    echo "Stopping the services started by make run..."
    stop_server
    stop_worker
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
            --pidfile "$PWD/$REDIS_PIDFILE" --dir "$PWD/$VAR_DIR/redis" \
            --logfile "$PWD/$VAR_DIR/redis.log" --save "" --appendonly no
        redis_started_here=true
        for _ in $(seq 50); do
            redis_answers && break
            sleep 0.1
        done
        redis_answers || { echo "Redis did not start; see $VAR_DIR/redis.log" >&2; exit 1; }
        echo "Started Redis on $HOST:$REDIS_PORT (log: $VAR_DIR/redis.log)."
    fi
else
    echo "Using the Redis at REDIS_URL=$REDIS_URL."
fi

"$VENV_BIN/python" manage.py migrate --no-input

"$VENV_BIN/celery" -A workers worker -Q compile -l info >"$CELERY_LOG" 2>&1 &
worker_pid=$!
echo "Started a Celery worker on the compile queue (log: $CELERY_LOG)."

echo
echo "Fusion Explorer: http://$HOST:$PORT/  (Ctrl-C stops the server, the worker and Redis)"
echo
# In the background and in its own session, so that the traps above run as soon as Ctrl-C or a
# SIGTERM reaches this script (bash runs a trap only once its foreground command has ended).
setsid "$VENV_BIN/python" manage.py runserver "$HOST:$PORT" &
server_pid=$!
wait "$server_pid"
