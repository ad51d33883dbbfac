#!/usr/bin/env bash
# id_token exchanges per second on ONE gateway core with Redis, beside the crypto limit of that
# core measured in the same run.
#
# Each exchange verifies an Apple-shaped RS256 ID token (fresh nonce, new user) and mints an
# ES256 access token: one RSA-2048 verify plus one P-256 sign is the crypto floor, measured with
# `openssl speed` on the same core. The gateway (release build) is pinned to core 0; Redis and the
# load generator (wrk with bench/exchange/driver.lua: one thread, CONCURRENCY keep-alive HTTP/1.1
# connections) to core 1.
#
# Then, on the same gateway: a returning user's sign-in (a second token for each subject), refresh
# (each session refreshed ROUNDS times in a chain) and GET /auth/v1/user (REQUESTS requests with
# the sessions' access tokens), and a floor: GET /auth/v1/settings, REQUESTS times, the router's
# cheapest answer (no token, no store), what the HTTP layer alone costs; once over HTTP/1.1 (wrk)
# and once over HTTP/2 (h2load with prior knowledge, 8 connections with CONCURRENCY/8 streams
# each: as many requests in flight; its latency column is h2load's mean, it reports no percentiles). Each row prints how busy
# the gateway's core was (its CPU time over the phase's wall time): well under 100% means the load
# generator, not the gateway, set the pace; how busy core 1 (Redis and the load generator) was;
# and the gateway's CPU time per answer in microseconds (steadier than the rate on a busy host).
#
# Last, the cost of replica-acknowledged writes (store.redis.min_replicas_acked: 1): a replica of
# the same Redis on core 1, and a second gateway, alone on core 0, that waits (WAIT) for it after
# every account write; rows for new users' sign-ins and refreshes (ACKED=0 skips them).
#
# Reproduce: bench/exchange/run.sh [tokens] [concurrency]     (ROUNDS=3 REQUESTS=100000 by default)
#            RECORD_CACHE_SIZE=0 bench/exchange/run.sh   (store.redis.record_cache_size; 10000 by default)
# Profile:   PROFILE=1 bench/exchange/run.sh   (perf samples the gateway; top symbols are printed;
#            PROFILE_ALL=1 as well to profile every phase, not only new users' sign-ins)
# A/B:       GATEWAY=/path/to/other/authgate bench/exchange/run.sh   (serves with that binary, e.g. a
#            build of an earlier commit, instead of this tree's release build)
#            PROFILE_PHASE=user bench/exchange/run.sh   (perf samples only that phase: new,
#            returning, refresh, user, floor or floor_h2; every row is still measured; PROFILE_KEEP=FILE keeps
#            the perf data for `perf report -i FILE`)
set -euo pipefail
cd "$(dirname "$0")/../.."

COUNT="${1:-20000}"
CONCURRENCY="${2:-64}"
ROUNDS="${ROUNDS:-3}"
REQUESTS="${REQUESTS:-100000}"
scripts/install-deps.sh libhiredis-dev redis-server redis-tools util-linux openssl bc wrk nghttp2-client >/dev/null
swift build -c release --product authgate >/dev/null
GATEWAY="${GATEWAY:-.build/release/authgate}"
swift build -c release --product ExchangeBench >/dev/null

. scripts/lib.sh
start_work exchange

start_redis 1

echo "minting $COUNT Apple-shaped RS256 tokens (each with a fresh nonce)..."
.build/release/ExchangeBench prepare "$work" "$COUNT"
.build/release/authgate keys generate --out "$work/key.pem" --kid bench >/dev/null
# write_config DIR EXTRA_REDIS_SETTINGS: the gateway's configuration in DIR (tokens from DIR's key set).
write_config() {
    gateway_port="$(free_port)"
    cat >"$1/authgate.yaml" <<YAML
server: { host: 127.0.0.1, port: $gateway_port }
store: { kind: redis, redis: { url: "redis://127.0.0.1:$redis_port/0", pool_size: 2, record_cache_size: ${RECORD_CACHE_SIZE:-10000} $2 } }
tokens: { signing_keys: [ { kid: bench, file: $work/key.pem } ] }
providers:
  apple: { enabled: true, audiences: [com.example.authgate.bench], jwks_file: apple-jwks.json }
rate_limits: { token: off, signup: off, nonce: off }
logging: { level: warning }
YAML
}
# start_gateway DIR [perf]: authgate serve on core 0 with DIR's configuration; sets gateway_pid.
start_gateway() {
    if [ "${2:-}" = "perf" ]; then
        taskset -c 0 perf record -F 999 -g -e cpu-clock -o "$1/perf.data" "$GATEWAY" serve --config "$1/authgate.yaml" 2>"$1/authgate.log" &
    else
        taskset -c 0 "$GATEWAY" serve --config "$1/authgate.yaml" 2>"$1/authgate.log" &
    fi
    gateway_pid=$!
    pids+=($gateway_pid)
    until curl -fs "http://127.0.0.1:$gateway_port/readyz" >/dev/null 2>&1; do sleep 0.05; done
}
write_config "$work" ""
if [ "${PROFILE:-0}" = "1" ]; then start_gateway "$work" perf; else start_gateway "$work"; fi

ticks_per_second="$(getconf CLK_TCK)"
# The gateway's CPU time so far, in clock ticks (utime + stime of /proc/<pid>/stat).
gateway_ticks() { awk '{print $14 + $15}' "/proc/$gateway_pid/stat"; }
# Core 1's busy and total clock ticks so far (/proc/stat: everything but idle and iowait).
core1_ticks() { awk '$1 == "cpu1" {print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
# drive MODE FILE [ARG]: wrk on core 1 against $base with driver.lua; prints "rate,p50,p99,errors".
drive() {
    taskset -c 1 wrk -t1 -c"$CONCURRENCY" -d600s -s bench/exchange/driver.lua "$base" -- "$@" | awk '/^RESULT / {print $2}'
}
# drive_h2 PATH: h2load on core 1 against $base PATH, REQUESTS requests over HTTP/2 (prior knowledge);
# prints "rate,mean latency (ms),-,non-2xx or failed requests".
drive_h2() {
    local streams=$((CONCURRENCY / 8))
    if [ "$streams" -lt 1 ]; then streams=1; fi
    taskset -c 1 h2load -c 8 -m "$streams" -t 1 -n "$REQUESTS" "$base$1" 2>&1 | h2load_summary | awk '{printf "%s,%s,-,%s\n", $1, $2, $3}'
}
# phase NAME COMMAND...: runs the load generator; sets NAME_rate, _p50, _p99, _errors, _busy, _core1.
phase() {
    local name="$1"; shift
    local before started result rate p50 p99 errors ended after core1_before core1_after
    local perf_pid=""
    if [ "${PROFILE_PHASE:-}" = "$name" ]; then
        perf record -F 999 -g -e cpu-clock -p "$gateway_pid" -o "$work/perf-$name.data" 2>/dev/null &
        perf_pid=$!
    fi
    before="$(gateway_ticks)"; started="$(date +%s.%N)"; core1_before="$(core1_ticks)"
    result="$("$@")"
    ended="$(date +%s.%N)"; after="$(gateway_ticks)"; core1_after="$(core1_ticks)"
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" 2>/dev/null || true
        (perf report -i "$work/perf-$name.data" --stdio --no-children --sort dso,symbol -g none 2>/dev/null | grep -v "^#" | grep "%" | head -60) >"$work/profile-$name.txt" || true
        if [ -n "${PROFILE_KEEP:-}" ]; then cp "$work/perf-$name.data" "$PROFILE_KEEP"; fi
    fi
    IFS=, read -r rate p50 p99 errors <<<"$result"
    printf -v "${name}_rate" '%s' "$rate"; printf -v "${name}_p50" '%s' "$p50"; printf -v "${name}_p99" '%s' "$p99"
    printf -v "${name}_errors" '%s' "$errors"
    printf -v "${name}_busy" '%.0f' "$(echo "100 * ($after - $before) / $ticks_per_second / ($ended - $started)" | bc -l)"
    read -r b0 t0 <<<"$core1_before"; read -r b1 t1 <<<"$core1_after"
    printf -v "${name}_core1" '%.0f' "$(echo "100 * ($b1 - $b0) / ($t1 - $t0)" | bc -l)"
}
base="http://127.0.0.1:$gateway_port"
phase new drive signin "$work/tokens.txt" "$work/sessions.txt"
rate="$new_rate" p50="$new_p50" p99="$new_p99" errors="$new_errors"
if [ "${PROFILE:-0}" != "1" ] || [ -n "${PROFILE_ALL:-}" ]; then
    phase returning drive signin "$work/returning.txt"
    phase refresh drive refresh "$work/sessions.txt" "$ROUNDS"
    phase user drive user "$work/sessions.txt" "$REQUESTS"
    phase floor drive settings "$work/sessions.txt" "$REQUESTS"
    phase floor_h2 drive_h2 /auth/v1/settings
fi
# The gateway's resident memory once every phase has run (its caches as full as this run fills them).
rss_mb="$(awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$gateway_pid/status")"
if [ "${PROFILE:-0}" = "1" ]; then
    kill -INT "$gateway_pid"; wait "$gateway_pid" 2>/dev/null || true
    (perf report -i "$work/perf.data" --stdio --no-children --sort dso,symbol -g none 2>/dev/null | grep -v "^#" | grep "%" | head -45) || true
fi

acked="${ACKED:-1}"
if [ "${PROFILE:-0}" = "1" ]; then acked=0; fi
if [ "$acked" = "1" ]; then
    # The replica, then a second gateway alone on core 0 that waits for it after every account write.
    replica_port="$(free_port)"
    taskset -c 1 redis-server --port "$replica_port" --bind 127.0.0.1 --dir "$work" --dbfilename replica.rdb --save "" --appendonly no \
        --daemonize no --loglevel warning --logfile "$work/replica.log" --replicaof 127.0.0.1 "$redis_port" &
    pids+=($!)
    until redis-cli -p "$replica_port" info replication 2>/dev/null | grep -q "master_link_status:up"; do sleep 0.05; done
    kill "$gateway_pid"; wait "$gateway_pid" 2>/dev/null || true
    mkdir -p "$work/acked"
    .build/release/ExchangeBench prepare "$work/acked" "$COUNT"
    write_config "$work/acked" ", key_prefix: \"ack:\", min_replicas_acked: 1, replica_ack_timeout: 1s"
    start_gateway "$work/acked"
    base="http://127.0.0.1:$gateway_port"
    phase acked_new drive signin "$work/acked/tokens.txt" "$work/acked/sessions.txt"
    phase acked_refresh drive refresh "$work/acked/sessions.txt" "$ROUNDS"
fi

if [ -n "${PROFILE_PHASE:-}" ] && [ -f "$work/profile-$PROFILE_PHASE.txt" ]; then
    echo "profile of the $PROFILE_PHASE phase:"; cat "$work/profile-$PROFILE_PHASE.txt"
fi

speed="$(taskset -c 0 openssl speed -seconds 3 rsa2048 ecdsap256 2>/dev/null)"
rsa_verify="$(echo "$speed" | awk '/^rsa 2048 bits/ {print $NF}')"
ecdsa_sign="$(echo "$speed" | awk '/256 bits ecdsa \(nistp256\)/ {print $(NF-1)}')"
limit="$(echo "1 / (1 / $rsa_verify + 1 / $ecdsa_sign)" | bc -l)"

echo
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%Y-%m-%d); $COUNT exchanges, $CONCURRENCY connections; gateway on 1 core"
printf '%-44s %12s\n' "openssl: RSA-2048 verify/s (1 core)" "$(printf '%.0f' "$rsa_verify")"
printf '%-44s %12s\n' "openssl: ECDSA P-256 sign/s (1 core)" "$(printf '%.0f' "$ecdsa_sign")"
printf '%-44s %12s\n' "crypto limit: exchanges/s (verify + sign)" "$(printf '%.0f' "$limit")"
printf '%-44s %12s\n' "AuthGate: id_token exchanges/s" "$(printf '%.0f' "$rate")"
printf '%-44s %12s\n' "AuthGate / crypto limit" "$(printf '%.2f' "$(echo "$rate / $limit" | bc -l)")"
printf '%-44s %12s\n' "latency p50 / p99 (ms)" "$p50 / $p99"
printf '%-44s %12s\n' "non-200 answers" "$errors"
printf '%-44s %12s\n' "gateway core busy" "$new_busy%"
printf '%-44s %12s\n' "gateway memory after every phase (RSS, MB)" "$rss_mb"
if [ "${PROFILE:-0}" != "1" ]; then
    echo
    printf '%-26s %10s %18s %8s %6s %7s %9s\n' "operation (same gateway)" "per second" "p50 / p99 (ms)" "non-200" "busy" "core 1" "µs/answer"
    names="new returning refresh user floor floor_h2"
    if [ "$acked" = "1" ]; then names="$names acked_new acked_refresh"; fi
    for name in $names; do
        label="$(case $name in new) echo "sign-in, new user";; returning) echo "sign-in, returning user";; refresh) echo "refresh";; user) echo "GET /user";;
            floor) echo "floor: GET /settings";; floor_h2) echo "floor over HTTP/2";;
            acked_new) echo "sign-in, new, 1 replica ack";; acked_refresh) echo "refresh, 1 replica ack";; esac)"
        r="${name}_rate"; a="${name}_p50"; b="${name}_p99"; e="${name}_errors"; u="${name}_busy"; c="${name}_core1"
        printf '%-26s %10.0f %18s %8s %5s%% %6s%% %9.0f\n' "$label" "${!r}" "${!a} / ${!b}" "${!e}" "${!u}" "${!c}" \
            "$(echo "10000 * ${!u} / ${!r}" | bc -l)"
    done
fi
if [ "$acked" = "1" ]; then
    printf '%-44s %12s\n' "sign-in with / without replica ack" "$(printf '%.2f' "$(echo "$acked_new_rate / $new_rate" | bc -l)")"
    printf '%-44s %12s\n' "refresh with / without replica ack" "$(printf '%.2f' "$(echo "$acked_refresh_rate / $refresh_rate" | bc -l)")"
fi
echo "reproduce: bench/exchange/run.sh $COUNT $CONCURRENCY"
