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

# launch_redis (scripts/lib.sh): a free port below the kernel's ephemeral range, another one if
# that port is lost to another process before the bind.
. "$(dirname "$0")/lib.sh"
launch_redis "$directory"

# What the server was doing if the command fails: every command or event of 100 ms or more is
# recorded (the slow log and the latency monitor) and printed then, with the server's own log,
# which goes with its directory. A stall of the shared server and one of the test process look
# alike from the tests' side ("no reply within the command deadline" on every connection at once).
redis-cli -p "$redis_port" CONFIG SET slowlog-log-slower-than 100000 >/dev/null
redis-cli -p "$redis_port" CONFIG SET latency-monitor-threshold 100 >/dev/null

export AUTHGATE_TEST_REDIS_URL="redis://127.0.0.1:$redis_port/0"
echo "throwaway redis-server on $AUTHGATE_TEST_REDIS_URL"
status=0
"$@" || status=$?
if [ "$status" -ne 0 ]; then
    echo "--- the throwaway redis-server after a failure (exit $status): slow log, latency events, its log"
    redis-cli -p "$redis_port" SLOWLOG GET 20 || true
    redis-cli -p "$redis_port" LATENCY LATEST || true
    redis-cli -p "$redis_port" INFO stats | grep -E 'total_commands|instantaneous|rejected|expired_keys|evicted' || true
    tail -n 50 "$directory/redis.log" || true
fi
exit "$status"
