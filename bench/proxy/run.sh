#!/usr/bin/env bash
# Edge-proxy throughput: AuthGate vs HAProxy 2.6 jwt_verify, on the same core, in one run.
#
# The proxy under test is pinned to core 0; wrk and an nginx upstream (a small 200) to core 1.
# Rounds alternate between:
#   (a) AuthGate, auth: required route, a valid ES256 access token (verified-token cache,
#       revocation view fed by Redis; Redis also on core 1)
#   (b) HAProxy with jwt_verify on the same token (its public key as PEM, built from our JWKS),
#       an exp check and an identity header from jwt_payload_query
#   (c) HAProxy without JWT, and (d) nginx direct: ceilings
#   (e)-(h) the same token through TLS (one P-256 certificate for both, TLS 1.3): AuthGate
#       (server.tls) and HAProxy with jwt_verify (bind ... ssl alpn h2,http/1.1), each over
#       HTTP/1.1 keep-alive (wrk) and HTTP/2 (h2load, 8 connections x 8 streams: the same 64
#       requests in flight)
# and print requests/s, p99 latency (mean for h2load, which reports no percentiles) and the
# ratios AuthGate/HAProxy-jwt (plain, TLS HTTP/1.1, TLS HTTP/2) and AuthGate/HAProxy-plain.
#
# Reproduce: bench/proxy/run.sh [seconds per run] [connections] [rounds]
# Profile:   PROFILE=1 bench/proxy/run.sh   (perf samples the gateway; top symbols are printed)
# Another build: GATEWAY=/path/to/authgate bench/proxy/run.sh   (not built here; for A/B runs)
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_RUN="${1:-10}"
CONNECTIONS="${2:-64}"
ROUNDS="${3:-2}"
scripts/install-deps.sh libhiredis-dev libjemalloc-dev redis-server redis-tools haproxy nginx-light wrk nghttp2-client util-linux openssl curl bc >/dev/null
. scripts/lib.sh
if [ -z "${GATEWAY:-}" ]; then
    release_build authgate
    GATEWAY=.build/release/authgate
fi

. bench/proxy/common.sh
start_work proxybench

start_nginx_ok 1
start_redis 1

"$GATEWAY" keys generate --out "$work/key.pem" --kid bench >/dev/null
gateway_port="$(free_port)"
write_proxy_config "$work/authgate.yaml" "$gateway_port" key.pem
# One certificate for both TLS proxies (HAProxy wants the chain and key in one file).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$work/tls.key" -out "$work/tls.pem" 2>/dev/null
cat "$work/tls.pem" "$work/tls.key" >"$work/haproxy-tls.pem"
tls_gateway_port="$(free_port)"
# The same issuer (public_url) as the plain gateway, so one token serves both.
sed -e "s/port: $gateway_port,/port: $tls_gateway_port, tls: { certificate_chain_file: tls.pem, private_key_file: tls.key },/" \
    "$work/authgate.yaml" >"$work/authgate-tls.yaml"
grep -q "tls:" "$work/authgate-tls.yaml" || { echo "error: could not make the TLS configuration"; exit 1; }
if [ "${PROFILE:-0}" = "1" ]; then
    taskset -c 0 perf record -F 999 -g -e cpu-clock -o "$work/perf.data" "$GATEWAY" serve --config "$work/authgate.yaml" 2>"$work/authgate.log" &
else
    taskset -c 0 "$GATEWAY" serve --config "$work/authgate.yaml" 2>"$work/authgate.log" &
fi
gateway_pid=$!
pids+=($gateway_pid)
wait_port "$gateway_port" authgate
taskset -c 0 "$GATEWAY" serve --config "$work/authgate-tls.yaml" 2>"$work/authgate-tls.log" &
pids+=($!)
wait_port "$tls_gateway_port" authgate-tls
# HAProxy's jwt_verify reads a PEM public key (PEM_read_bio_PUBKEY); build it from our JWKS.
curl -fs "http://127.0.0.1:$gateway_port/.well-known/jwks.json" | python3 -c '
import base64, json, sys, textwrap
key = next(k for k in json.load(sys.stdin)["keys"] if k["kid"] == "bench")
b64 = lambda s: base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
der = bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d030107034200") + b"\x04" + b64(key["x"]) + b64(key["y"])
print("-----BEGIN PUBLIC KEY-----\n" + "\n".join(textwrap.wrap(base64.b64encode(der).decode(), 64)) + "\n-----END PUBLIC KEY-----")
' >"$work/public.pem"
token="$(curl -fs -X POST "http://127.0.0.1:$gateway_port/auth/v1/signup" -H 'Content-Type: application/json' -d '{}' | python3 -c 'import json,sys;print(json.load(sys.stdin)["access_token"])')"

haproxy_jwt_port="$(free_port)"
haproxy_plain_port="$(free_port)"
haproxy_tls_port="$(free_port)"
cat >"$work/haproxy.cfg" <<HAPROXY
global
    nbthread 1
    maxconn 4000
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    option http-keep-alive
frontend jwt
    bind 127.0.0.1:$haproxy_jwt_port
    bind 127.0.0.1:$haproxy_tls_port ssl crt $work/haproxy-tls.pem alpn h2,http/1.1
    http-request set-var(txn.bearer) http_auth_bearer
    http-request set-var(txn.alg) var(txn.bearer),jwt_header_query('\$.alg')
    http-request deny deny_status 401 unless { var(txn.alg) -m str ES256 }
    http-request deny deny_status 401 unless { var(txn.bearer),jwt_verify(txn.alg,"$work/public.pem") -m int 1 }
    http-request set-var(txn.exp) var(txn.bearer),jwt_payload_query('\$.exp','int')
    http-request set-var(txn.now) date()
    http-request deny deny_status 401 if { var(txn.exp),sub(txn.now) -m int lt 1 }
    http-request set-header X-User-Id %[var(txn.bearer),jwt_payload_query('\$.sub')]
    default_backend upstream
frontend plain
    bind 127.0.0.1:$haproxy_plain_port
    default_backend upstream
backend upstream
    server nginx 127.0.0.1:$nginx_port
HAPROXY
haproxy -c -f "$work/haproxy.cfg" 2>&1 | grep -q "WARNING" && { haproxy -c -f "$work/haproxy.cfg"; echo "error: HAProxy warns about its configuration"; exit 1; }
taskset -c 0 haproxy -f "$work/haproxy.cfg" -db &
pids+=($!)
wait_port "$haproxy_jwt_port" haproxy

# Every target must answer 200 with the token (and HAProxy-jwt must refuse a tampered one).
for port in "$gateway_port" "$haproxy_jwt_port" "$haproxy_plain_port" "$nginx_port"; do
    code="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "http://127.0.0.1:$port/api/x")"
    [ "$code" = "200" ] || { echo "error: port $port answered $code"; cat "$work/authgate.log"; exit 1; }
done
for port in "$tls_gateway_port" "$haproxy_tls_port"; do
    for version in --http1.1 --http2; do
        answer="$(curl -s -k "$version" -o /dev/null -w '%{http_code} %{http_version}' -H "Authorization: Bearer $token" "https://127.0.0.1:$port/api/x")"
        case "$answer" in "200 1.1" | "200 2") ;; *) echo "error: TLS port $port answered $answer to $version"; exit 1 ;; esac
        [ "$version" = --http1.1 ] || [ "${answer#200 }" = 2 ] || { echo "error: TLS port $port did not negotiate h2"; exit 1; }
    done
done
tampered="${token%??}AA"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tampered" "http://127.0.0.1:$haproxy_jwt_port/api/x")" = "401" ] || { echo "error: HAProxy accepted a tampered token"; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tampered" "http://127.0.0.1:$gateway_port/api/x")" = "401" ] || { echo "error: AuthGate accepted a tampered token"; exit 1; }

measure() { # name port [scheme] -> appends "rps p99ms" to $work/<name>; HTTP/1.1 keep-alive (wrk)
    out="$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --latency -H "Authorization: Bearer $token" "${3:-http}://127.0.0.1:$2/api/x")"
    rps="$(echo "$out" | awk '/Requests\/sec/ {print $2}')"
    p99="$(echo "$out" | awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v=v*1000}; print v}')"
    non2xx="$(echo "$out" | awk '/Non-2xx/ {print $NF}')"
    [ -z "$non2xx" ] || { echo "error: $1 answered $non2xx non-2xx responses"; exit 1; }
    echo "$rps $p99" >>"$work/$1"
    printf '  %-14s %10.0f req/s  p99 %6.2f ms\n' "$1" "$rps" "$p99"
}
measure_h2() { # name port -> appends "rps mean-ms"; HTTP/2 over TLS, 8 connections x 8 streams
    out="$(taskset -c 1 h2load -c 8 -m 8 -t 1 -D "$SECONDS_PER_RUN" -H "authorization: Bearer $token" "https://127.0.0.1:$2/api/x" 2>&1)"
    read -r rps mean bad <<<"$(echo "$out" | h2load_summary)" || true
    [ -n "$rps" ] && [ "${bad:-1}" = 0 ] || { echo "error: $1 over HTTP/2:"; echo "$out"; exit 1; }
    echo "$rps $mean" >>"$work/$1"
    printf '  %-14s %10.0f req/s  mean %5.2f ms\n' "$1" "$rps" "$mean"
}
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round"
    measure authgate "$gateway_port"
    measure haproxy-jwt "$haproxy_jwt_port"
    measure haproxy-plain "$haproxy_plain_port"
    measure nginx-direct "$nginx_port"
    measure authgate-tls "$tls_gateway_port" https
    measure haproxy-tls "$haproxy_tls_port" https
    measure_h2 authgate-h2 "$tls_gateway_port"
    measure_h2 haproxy-h2 "$haproxy_tls_port"
done
if [ "${PROFILE:-0}" = "1" ]; then
    kill -INT "$gateway_pid"; wait "$gateway_pid" 2>/dev/null || true
    cp "$work/perf.data" "${TMPDIR:-/tmp}/authgate-proxy-perf.data"
    (perf report -i "$work/perf.data" --stdio --no-children --sort dso,symbol -g none 2>/dev/null | grep -v "^#" | grep "%" | head -60) || true
    echo "perf data kept in ${TMPDIR:-/tmp}/authgate-proxy-perf.data"
fi

best() { sort -k1 -g "$work/$1" | tail -1; }
read -r ag_rps ag_p99 <<<"$(best authgate)"
read -r hj_rps hj_p99 <<<"$(best haproxy-jwt)"
read -r hp_rps hp_p99 <<<"$(best haproxy-plain)"
read -r nd_rps nd_p99 <<<"$(best nginx-direct)"
read -r at_rps at_p99 <<<"$(best authgate-tls)"
read -r ht_rps ht_p99 <<<"$(best haproxy-tls)"
read -r a2_rps a2_mean <<<"$(best authgate-h2)"
read -r h2_rps h2_mean <<<"$(best haproxy-h2)"
echo
echo "machine: $(machine_description), $(date -u +%Y-%m-%d); $CONNECTIONS connections, ${SECONDS_PER_RUN}s runs, best of $ROUNDS; proxy on core 0, wrk + nginx on core 1"
printf '%-36s %12s %10s\n' target "req/s" "p99 ms"
printf '%-36s %12.0f %10.2f\n' "(a) AuthGate, ES256, auth: required" "$ag_rps" "$ag_p99"
printf '%-36s %12.0f %10.2f\n' "(b) HAProxy 2.6 jwt_verify + exp" "$hj_rps" "$hj_p99"
printf '%-36s %12.0f %10.2f\n' "(c) HAProxy 2.6, no JWT" "$hp_rps" "$hp_p99"
printf '%-36s %12.0f %10.2f\n' "(d) nginx direct" "$nd_rps" "$nd_p99"
printf '%-36s %12.0f %10.2f\n' "(e) AuthGate, TLS, HTTP/1.1" "$at_rps" "$at_p99"
printf '%-36s %12.0f %10.2f\n' "(f) HAProxy jwt_verify, TLS, HTTP/1.1" "$ht_rps" "$ht_p99"
printf '%-36s %12.0f %10.2f  (mean)\n' "(g) AuthGate, TLS, HTTP/2" "$a2_rps" "$a2_mean"
printf '%-36s %12.0f %10.2f  (mean)\n' "(h) HAProxy jwt_verify, TLS, HTTP/2" "$h2_rps" "$h2_mean"
printf 'AuthGate / HAProxy-jwt   %.2f\n' "$(echo "$ag_rps / $hj_rps" | bc -l)"
printf 'AuthGate / HAProxy-plain %.2f\n' "$(echo "$ag_rps / $hp_rps" | bc -l)"
printf 'TLS, HTTP/1.1: AuthGate / HAProxy-jwt   %.2f\n' "$(echo "$at_rps / $ht_rps" | bc -l)"
printf 'TLS, HTTP/2:   AuthGate / HAProxy-jwt   %.2f\n' "$(echo "$a2_rps / $h2_rps" | bc -l)"
echo "reproduce: bench/proxy/run.sh $SECONDS_PER_RUN $CONNECTIONS $ROUNDS"
