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
# generator, not the gateway, set the pace; the kernel's share of that CPU time (system calls,
# sockets, page faults: what counting instructions in user space does not see); how busy core 1
# (Redis and the load generator) was;
# and the gateway's CPU time per answer in microseconds (steadier than the rate on a busy host);
# and, with HOST_PROBE=1, the host's own speed just before and just after the phase: ECDSA P-256
# signatures per second on core 0, in thousands, with core 1 signing too (`openssl speed`, 1 s
# each while the gateway is idle). This VM slows down by up to 40% for minutes at a time; a row
# measured in such a spell may show it there. Off by default: two busy cores just before a phase
# may change the phase (unproven either way in a few runs). A line above the rows gives the share
# of core 0's time in the phases that the hypervisor stole (/proc/stat's steal: it ran another
# guest while this one wanted the core): near 0 in a slow run means the same work ran slower in
# the time the VM had, not that time was taken from it.
#
# Last, the cost of replica-acknowledged writes (store.redis.min_replicas_acked: 1): a replica of
# the same Redis on core 1, and a second gateway, alone on core 0, that waits (WAIT) for it after
# every account write; rows for new users' sign-ins and refreshes (ACKED=0 skips them).
#
# Reproduce: bench/exchange/run.sh [tokens] [concurrency]     (ROUNDS=3 REQUESTS=100000 by default)
#            RECORD_CACHE_SIZE=0 bench/exchange/run.sh   (store.redis.record_cache_size; 10000 by default)
#            POOL_SIZE=4 bench/exchange/run.sh   (store.redis.pool_size: pipelined Redis connections; 2 by default)
# Profile:   PROFILE=1 bench/exchange/run.sh   (perf samples the gateway; top symbols are printed;
#            PROFILE_ALL=1 as well to profile every phase, not only new users' sign-ins)
# A/B:       GATEWAY=/path/to/other/authgate bench/exchange/run.sh   (serves with that binary, e.g. a
#            build of an earlier commit, instead of this tree's release build)
#            PROFILE_PHASE=user bench/exchange/run.sh   (perf samples only that phase: new,
#            returning, refresh, user, floor or floor_h2; every row is still measured; PROFILE_KEEP=FILE keeps
#            the perf data for `perf report -i FILE`); PROFILE_EVENT=malloc records every malloc of
#            that phase with its stack instead of sampling CPU time (where the phase allocates)
set -euo pipefail
cd "$(dirname "$0")/../.."

COUNT="${1:-20000}"
CONCURRENCY="${2:-64}"
ROUNDS="${ROUNDS:-3}"
REQUESTS="${REQUESTS:-100000}"
scripts/install-deps.sh libhiredis-dev libjemalloc-dev redis-server redis-tools util-linux openssl bc wrk nghttp2-client >/dev/null
. scripts/lib.sh
release_build authgate
GATEWAY="${GATEWAY:-.build/release/authgate}"
release_build ExchangeBench

. bench/exchange/common.sh
start_work exchange

start_redis 1

echo "minting $COUNT Apple-shaped RS256 tokens (each with a fresh nonce)..."
.build/release/ExchangeBench prepare "$work" "$COUNT"
.build/release/authgate keys generate --out "$work/key.pem" --kid bench >/dev/null
write_config "$work" ""
if [ "${PROFILE:-0}" = "1" ]; then start_gateway "$work" perf; else start_gateway "$work"; fi

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
echo "machine: $(machine_description), $(date -u +%Y-%m-%d); $COUNT exchanges, $CONCURRENCY connections; gateway on 1 core"
printf '%-44s %12s\n' "openssl: RSA-2048 verify/s (1 core)" "$(printf '%.0f' "$rsa_verify")"
printf '%-44s %12s\n' "openssl: ECDSA P-256 sign/s (1 core)" "$(printf '%.0f' "$ecdsa_sign")"
printf '%-44s %12s\n' "crypto limit: exchanges/s (verify + sign)" "$(printf '%.0f' "$limit")"
printf '%-44s %12s\n' "AuthGate: id_token exchanges/s" "$(printf '%.0f' "$rate")"
printf '%-44s %12s\n' "AuthGate / crypto limit" "$(printf '%.2f' "$(echo "$rate / $limit" | bc -l)")"
printf '%-44s %12s\n' "latency p50 / p99 (ms)" "$p50 / $p99"
printf '%-44s %12s\n' "non-200 answers" "$errors"
printf '%-44s %12s\n' "gateway core busy" "$new_busy%"
printf '%-44s %12s\n' "gateway memory after every phase (RSS, MB)" "$rss_mb"
printf '%-44s %12s\n' "core 0 stolen by the hypervisor in the phases" \
    "$(printf '%.2f%%' "$(echo "100 * $phases_steal_ticks / $ticks_per_second / $phases_seconds" | bc -l)")"
if [ "${PROFILE:-0}" != "1" ]; then
    echo
    host_column=""
    if [ "${HOST_PROBE:-0}" = "1" ]; then host_column="$(printf ' %13s' "host k-sign/s")"; fi
    printf '%-26s %10s %18s %8s %6s %7s %7s %9s%s\n' "operation (same gateway)" "per second" "p50 / p99 (ms)" "non-200" "busy" "kernel" \
        "core 1" "µs/answer" "$host_column"
    names="new returning refresh user floor floor_h2"
    if [ "$acked" = "1" ]; then names="$names acked_new acked_refresh"; fi
    for name in $names; do
        r="${name}_rate"; a="${name}_p50"; b="${name}_p99"; e="${name}_errors"; u="${name}_busy"; k="${name}_kernel"; c="${name}_core1"; h="${name}_host"
        if [ -n "$host_column" ]; then host_column="$(printf ' %13s' "${!h}")"; fi
        printf '%-26s %10.0f %18s %8s %5s%% %6s%% %6s%% %9.0f%s\n' "$(row_label "$name")" "${!r}" "${!a} / ${!b}" "${!e}" "${!u}" "${!k}" "${!c}" \
            "$(us_per_answer "$name")" "$host_column"
    done
fi
if [ "$acked" = "1" ]; then
    printf '%-44s %12s\n' "sign-in with / without replica ack" "$(printf '%.2f' "$(echo "$acked_new_rate / $new_rate" | bc -l)")"
    printf '%-44s %12s\n' "refresh with / without replica ack" "$(printf '%.2f' "$(echo "$acked_refresh_rate / $refresh_rate" | bc -l)")"
fi
echo "reproduce: bench/exchange/run.sh $COUNT $CONCURRENCY"
