#!/usr/bin/env bash
# Instructions the gateway executes per proxied request, under valgrind's callgrind: units that do
# not move with this VM's speed (bench/proxy/run.sh's requests per second drift by a third between
# runs here), so one run judges a change to the proxy's path.
#
# The gateway (Redis store with its revocation feed, an `auth: required` route to an nginx that
# answers a small 200) is driven by bench/proxy/drive.py over one kept-alive connection, after an
# uncounted warm-up; counting is on only while a row runs. Rows:
#   get     GET /api/x with a valid ES256 access token (the verified-token cache's path)
#   upload  POST /api/x with the token and a 64 KiB chunked body sent as 64 chunks of 1 KiB
#   h2      GET /api/x with the token over HTTP/2 (cleartext, prior knowledge), h2load with 8
#           connections of 8 streams
# Every instruction of every thread, its libraries' and the Swift runtime's (not the kernel's).
#
# Reproduce: bench/proxy/instructions.sh [requests per row]
# A/B:       COMPARE=OTHER_BUILD [GATEWAY=BUILD] bench/proxy/instructions.sh   (prints B / A per row)
set -euo pipefail
cd "$(dirname "$0")/../.."

REQUESTS="${1:-2000}"
WARM="${WARM:-200}"
scripts/install-deps.sh libhiredis-dev libjemalloc-dev redis-server redis-tools nginx-light nghttp2-client util-linux bc valgrind gcc binutils curl >/dev/null
. scripts/lib.sh
if [ -z "${GATEWAY:-}" ]; then release_build authgate; fi
gateway_builds
. bench/exchange/common.sh
. bench/proxy/common.sh
start_work proxy-instructions
start_nginx_ok 1
start_redis 1
prepare_callgrind
"${builds[0]}" keys generate --out "$work/key.pem" --kid bench >/dev/null
rows=(get upload h2)

# drive_row ROW COUNT: COUNT requests of ROW against the gateway; prints "requests,non-2xx or failed".
drive_row() {
    if [ "$1" = h2 ]; then
        taskset -c 1 h2load -c 8 -m 8 -t 1 -n "$2" -H "authorization: Bearer $token" "http://127.0.0.1:$gateway_port/api/x" 2>&1 |
            awk -v n="$2" '/^status codes:/ {gsub(",", ""); print n "," n - $3}'
    else
        taskset -c 1 python3 bench/proxy/drive.py "$gateway_port" "$token" "$1" "$2"
    fi
}

measure() {
    local index="$1" build="$2" dir="$work/build-$1"
    mkdir -p "$dir"
    redis-cli -p "$redis_port" flushall >/dev/null
    gateway_port="$(free_port)"
    write_proxy_config "$dir/authgate.yaml" "$gateway_port" "$work/key.pem"
    start_counted_gateway "$dir" "$build"
    token="$(curl -fs -X POST "http://127.0.0.1:$gateway_port/auth/v1/signup" -H 'Content-Type: application/json' -d '{}' |
        python3 -c 'import json,sys;print(json.load(sys.stdin)["access_token"])')"
    local row result
    for row in "${rows[@]}"; do drive_row "$row" "$WARM" >/dev/null; done
    for row in "${rows[@]}"; do
        counting_on
        result="$(drive_row "$row" "$REQUESTS")"
        counting_off "$dir" "$row" "$index"
        printf -v "Ir_${row}_${index}" '%s' "$(echo "$counted_total / $REQUESTS" | bc)"
        printf -v "errors_${row}_${index}" '%s' "${result#*,}"
    done
    kill "$gateway_pid" 2>/dev/null || true
    wait "$gateway_pid" 2>/dev/null || true
}

for index in "${!builds[@]}"; do measure "$index" "${builds[$index]}"; done

echo "machine: $(machine_description), $(date -u +%Y-%m-%d); $REQUESTS requests per row (HTTP/1.1 on one connection), $WARM of each first as a warm-up; gateway under callgrind"
if [ "${#builds[@]}" -eq 2 ]; then
    echo "A: ${builds[0]}"
    echo "B: ${builds[1]}"
    printf '%-34s %14s %14s %8s %8s\n' "instructions per proxied request" "A" "B" "B / A" "non-200"
else
    printf '%-34s %14s %8s\n' "instructions per proxied request" "build" "non-200"
fi
for row in "${rows[@]}"; do
    case $row in get) label="GET, ES256 token";; upload) label="POST, 64 x 1 KiB chunks";; h2) label="GET over HTTP/2, 8 x 8 streams";; esac
    a="Ir_${row}_0" errors="errors_${row}_0"
    if [ "${#builds[@]}" -eq 2 ]; then
        b="Ir_${row}_1" errors_b="errors_${row}_1"
        printf '%-34s %14s %14s %8.3f %8s\n' "$label" "${!a}" "${!b}" "$(echo "${!b} / ${!a}" | bc -l)" "$((${!errors} + ${!errors_b}))"
    else
        printf '%-34s %14s %8s\n' "$label" "${!a}" "${!errors}"
    fi
done
echo "reproduce: ${COMPARE:+COMPARE=$COMPARE }${GATEWAY:+GATEWAY=$GATEWAY }bench/proxy/instructions.sh $REQUESTS"
