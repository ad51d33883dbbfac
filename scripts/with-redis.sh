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

export AUTHGATE_TEST_REDIS_URL="redis://127.0.0.1:$redis_port/0"
echo "throwaway redis-server on $AUTHGATE_TEST_REDIS_URL"
"$@"
