#!/usr/bin/env bash
# Runs a command beside a throwaway redis-server on a free loopback port, with a temporary
# directory and no persistence; exports AUTHGATE_TEST_REDIS_URL and stops the server afterwards.
# Usage: scripts/with-redis.sh COMMAND [ARG...]
set -euo pipefail

directory="$(mktemp -d -t authgate-redis.XXXXXX)"
redis_pid=""
cleanup() {
    if [ -n "$redis_pid" ] && kill -0 "$redis_pid" 2>/dev/null; then
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
    fi
    rm -rf "$directory"
}
trap cleanup EXIT INT TERM

# The port comes from below the kernel's ephemeral range (free_port): a port inside it can be the
# local end of any outgoing connection on the machine, and redis-server's bind then fails with
# "Address already in use" (seen once in six runs of the failover tests). A start that still loses
# its port to another process is tried again on a new one.
. "$(dirname "$0")/lib.sh"

start_redis_server() {
    port="$(free_port)"
    : >"$directory/redis.log"
    redis-server --port "$port" --bind 127.0.0.1 --dir "$directory" --save "" --appendonly no \
        --daemonize no --loglevel warning --logfile "$directory/redis.log" &
    redis_pid=$!
    for _ in $(seq 1 200); do
        if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ]; then
            return 0
        fi
        if ! kill -0 "$redis_pid" 2>/dev/null; then
            wait "$redis_pid" 2>/dev/null || true
            redis_pid=""
            return 1
        fi
        sleep 0.05
    done
    echo "error: redis-server did not answer on port $port within 10 s" >&2
    exit 1
}

started=""
for attempt in 1 2 3 4 5; do
    if start_redis_server; then
        started=1
        break
    fi
    if ! grep -q "Address already in use" "$directory/redis.log"; then break; fi
    echo "redis-server lost port $port to another process (attempt $attempt); trying another" >&2
done
if [ -z "$started" ]; then
    echo "error: redis-server exited at start:" >&2
    cat "$directory/redis.log" >&2
    exit 1
fi

export AUTHGATE_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
echo "throwaway redis-server on $AUTHGATE_TEST_REDIS_URL"
"$@"
