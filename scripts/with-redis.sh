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

port_is_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

port=""
for _ in $(seq 1 100); do
    candidate=$((20000 + RANDOM % 40000))
    if port_is_free "$candidate"; then
        port="$candidate"
        break
    fi
done
if [ -z "$port" ]; then
    echo "error: no free loopback port found for redis-server" >&2
    exit 1
fi

redis-server --port "$port" --bind 127.0.0.1 --dir "$directory" --save "" --appendonly no \
    --daemonize no --loglevel warning --logfile "$directory/redis.log" &
redis_pid=$!

for _ in $(seq 1 200); do
    if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ]; then
        break
    fi
    if ! kill -0 "$redis_pid" 2>/dev/null; then
        echo "error: redis-server exited at start:" >&2
        cat "$directory/redis.log" >&2
        exit 1
    fi
    sleep 0.05
done
if [ "$(redis-cli -p "$port" ping 2>/dev/null)" != "PONG" ]; then
    echo "error: redis-server did not answer on port $port within 10 s" >&2
    exit 1
fi

export AUTHGATE_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
echo "throwaway redis-server on $AUTHGATE_TEST_REDIS_URL"
"$@"
