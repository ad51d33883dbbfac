#!/usr/bin/env bash
# Measures Redis memory per user and per session, for sizing (docs/operations.md).
# Signs up N anonymous users (one session each) through a running gateway, refreshes each once,
# then reads MEMORY USAGE of every key kind and used_memory before and after.
# Reproduce: scripts/with-redis.sh scripts/measure-redis-sizing.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
: "${AUTHGATE_TEST_REDIS_URL:?run under scripts/with-redis.sh}"
count="${1:-2000}"
redis_port="$(echo "$AUTHGATE_TEST_REDIS_URL" | sed -E 's|redis://[^:]+:([0-9]+)/.*|\1|')"
. scripts/lib.sh
start_work sizing
port="$(free_port)"
.build/debug/authgate keys generate --out "$work/k1.pem" --kid k1 >/dev/null
cat >"$work/authgate.yaml" <<YAML
server: { host: 127.0.0.1, port: $port }
store: { kind: redis, redis: { url: "$AUTHGATE_TEST_REDIS_URL", key_prefix: "ag:" } }
tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
providers: { anonymous: { enabled: true } }
rate_limits: { token: off, signup: off, nonce: off }
logging: { level: warning }
YAML
.build/debug/authgate serve --config "$work/authgate.yaml" 2>"$work/authgate.log" &
pids+=($!)
wait_port "$port" authgate
redis-cli -p "$redis_port" FLUSHALL >/dev/null
before="$(redis-cli -p "$redis_port" INFO memory | awk -F: '/^used_memory:/ {print $2}' | tr -d '\r')"
python3 - "$port" "$count" <<'PY'
import json, sys, urllib.request
port, count = sys.argv[1], int(sys.argv[2])
def post(path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST")
    return json.load(urllib.request.urlopen(request))
for _ in range(count):
    session = post("/auth/v1/signup", {})
    post("/auth/v1/token?grant_type=refresh_token", {"refresh_token": session["refresh_token"]})
PY
after="$(redis-cli -p "$redis_port" INFO memory | awk -F: '/^used_memory:/ {print $2}' | tr -d '\r')"
average() { # pattern -> average MEMORY USAGE of matching keys
    redis-cli -p "$redis_port" --scan --pattern "$1" | head -500 | while read -r key; do redis-cli -p "$redis_port" MEMORY USAGE "$key"; done |
        awk '{ total += $1; n += 1 } END { if (n) printf "%.0f", total / n; else print 0 }'
}
echo "users (anonymous, one session each, refreshed once): $count"
echo "used_memory growth per user with one session: $(( (after - before) / count )) bytes"
echo "MEMORY USAGE averages: user record $(average 'ag:{u:*}:user') B, session hash $(average 'ag:{u:*}:s:*') B, sessions index $(average 'ag:{u:*}:sessions') B, session owner $(average 'ag:sid:*') B"
echo "users index (ag:users, all users): $(redis-cli -p "$redis_port" MEMORY USAGE ag:users) B"
echo "reproduce: scripts/with-redis.sh scripts/measure-redis-sizing.sh $count"
