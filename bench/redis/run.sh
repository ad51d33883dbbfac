#!/usr/bin/env bash
# RedisBridge vs redis-benchmark: pipelined SET/GET throughput against the same redis-server.
#
# redis-server is pinned to core 1; the client under test (redis-benchmark -P 16 with 50
# connections, then RedisBridge with 800 concurrent callers on ONE pipelined connection and one
# event-loop thread) is pinned to core 0. Runs alternate, REPEAT times each, and the best of each
# is compared.
#
# Reproduce: make bench-redis   (or: bench/redis/run.sh [requests] [repeat])
set -euo pipefail
cd "$(dirname "$0")/../.."

REQUESTS="${1:-200000}"
REPEAT="${2:-3}"
scripts/install-deps.sh libhiredis-dev libjemalloc-dev redis-server redis-tools util-linux bc >/dev/null
. scripts/lib.sh
release_build RedisBench
BENCH=.build/release/RedisBench

directory="$(mktemp -d -t authgate-bench.XXXXXX)"
port="$(free_port)"
taskset -c 1 redis-server --port "$port" --bind 127.0.0.1 --dir "$directory" --save "" --appendonly no \
    --daemonize no --loglevel warning --logfile "$directory/redis.log" &
redis_pid=$!
trap 'kill $redis_pid 2>/dev/null || true; wait $redis_pid 2>/dev/null || true; rm -rf "$directory"' EXIT
for _ in $(seq 1 200); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ] && break
    sleep 0.05
done

best() { sort -t, -k2 -g | tail -1 | cut -d, -f2; }
: >"$directory/peer-set"; : >"$directory/peer-get"; : >"$directory/ours-set"; : >"$directory/ours-get"
for round in $(seq 1 "$REPEAT"); do
    out="$(taskset -c 0 redis-benchmark -p "$port" -P 16 -c 50 -n "$REQUESTS" -t set,get -d 3 --csv -q | tr -d '"')"
    echo "$out" | grep '^SET,' | cut -d, -f1,2 >>"$directory/peer-set"
    echo "$out" | grep '^GET,' | cut -d, -f1,2 >>"$directory/peer-get"
    ours="$(taskset -c 0 "$BENCH" "redis://127.0.0.1:$port/0" "$REQUESTS" 800 1 | tr -d '"')"
    echo "$ours" | grep '^SET,' >>"$directory/ours-set"
    echo "$ours" | grep '^GET,' >>"$directory/ours-get"
    echo "round $round: redis-benchmark $(echo "$out" | tr '\n' ' ') | RedisBridge $(echo "$ours" | tr '\n' ' ')"
done

peer_set="$(best <"$directory/peer-set")"; peer_get="$(best <"$directory/peer-get")"
ours_set="$(best <"$directory/ours-set")"; ours_get="$(best <"$directory/ours-get")"
echo
echo "machine: $(machine_description), $(date -u +%Y-%m-%d); requests per test: $REQUESTS; best of $REPEAT"
printf '%-6s %18s %18s %8s\n' test "redis-benchmark -P16" "RedisBridge" ratio
printf '%-6s %18.0f %18.0f %8.2f\n' SET "$peer_set" "$ours_set" "$(echo "$ours_set / $peer_set" | bc -l)"
printf '%-6s %18.0f %18.0f %8.2f\n' GET "$peer_get" "$ours_get" "$(echo "$ours_get / $peer_get" | bc -l)"
echo "reproduce: make bench-redis"
