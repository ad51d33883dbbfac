#!/usr/bin/env bash
# Soak: the release gateway on Redis at about half of its measured capacity for MINUTES (default
# 10) with a realistic mix (bench/soak/soak.py: sign-ins with a fake Apple provider, refreshes,
# GET/PUT /user, proxied GETs and POSTs with bodies, WebSocket sessions, logouts and operator
# revocations, admin calls), sampling unexpected answers, p99 latency, resident memory and open
# descriptors every 10 s. Passes with zero unexpected answers and memory and descriptors flat (the
# last sample within 10% of the two-minute sample). Not part of `make test`.
#
# The gateway is pinned to core 0; Redis, nginx (the HTTP upstream), the WebSocket upstream and
# the load generator to core 1.
#
# Reproduce: bench/soak/run.sh [minutes] [operations-per-second; default: half the measured capacity]
set -euo pipefail
cd "$(dirname "$0")/../.."

MINUTES="${1:-10}"
RATE="${2:-0}"
scripts/install-deps.sh libhiredis-dev libjemalloc-dev redis-server redis-tools nginx-light util-linux curl python3-venv >/dev/null
. scripts/lib.sh
release_build authgate
venv=".build/soak-venv"
scripts/python-venv.sh "$venv" bench/soak/requirements.txt

start_work soak

start_nginx_ok 1
ws_port="$(free_port)"
taskset -c 1 "$venv/bin/python" bench/soak/soak.py serve-ws "$ws_port" &
pids+=($!)
start_redis 1
wait_port "$ws_port" "the WebSocket upstream"

"$venv/bin/python" bench/soak/soak.py prepare "$work"
.build/release/authgate keys generate --out "$work/key.pem" --kid soak >/dev/null
gateway_port="$(free_port)"
cat >"$work/authgate.yaml" <<YAML
server: { host: 127.0.0.1, port: $gateway_port }
store: { kind: redis, redis: { url: "redis://127.0.0.1:$redis_port/0", pool_size: 2 } }
tokens: { signing_keys: [ { kid: soak, file: key.pem } ] }
providers:
  anonymous: { enabled: true }
  apple: { enabled: true, audiences: [com.example.authgate.soak], jwks_file: apple-jwks.json }
rate_limits: { token: off, signup: off, nonce: off, user_update: off }
# The verified-token cache is bounded (100,000 tokens by default) and fills for hours at this
# rate; 2,000 reaches its bound in about two minutes, so flat memory after that shows that
# nothing else grows.
proxy: { token_cache_size: 2000 }
routes:
  - { name: api, path_prefix: /api/, upstreams: ["http://127.0.0.1:$nginx_port"], auth: required, allow_anonymous: true }
  - { name: ws, path_prefix: /ws/, upstreams: ["http://127.0.0.1:$ws_port"], auth: required, allow_anonymous: true }
logging: { level: warning }
YAML
taskset -c 0 .build/release/authgate serve --config "$work/authgate.yaml" 2>"$work/authgate.log" &
gateway_pid=$!
pids+=($gateway_pid)
until curl -fs "http://127.0.0.1:$gateway_port/readyz" >/dev/null 2>&1; do sleep 0.05; done
admin_token="$(.build/release/authgate tokens service-role --config "$work/authgate.yaml" --ttl 2h)"

echo "machine: $(machine_description), $(date -u +%Y-%m-%d); gateway on core 0 (release, Redis store)"
status=0
taskset -c 1 "$venv/bin/python" bench/soak/soak.py run --gateway "http://127.0.0.1:$gateway_port" --pid "$gateway_pid" \
    --admin-token "$admin_token" --dir "$work" --minutes "$MINUTES" --rate "$RATE" || status=$?
if grep -qiE '"level":"(error|critical)"' "$work/authgate.log"; then
    echo "gateway errors logged:"; grep -iE '"level":"(error|critical)"' "$work/authgate.log" | head -5
    status=1
fi
kill -0 "$gateway_pid" 2>/dev/null || { echo "FAIL: the gateway exited during the soak"; status=1; }
echo "reproduce: bench/soak/run.sh $MINUTES${2:+ $2}"
exit "$status"
