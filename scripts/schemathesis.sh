#!/usr/bin/env bash
# Fuzzes a live gateway against docs/openapi.yaml with schemathesis (pinned in
# docs/tools/requirements.txt): no 5xx, and every status, content type and body as documented.
# Runs `authgate serve` (debug build) on the Redis of scripts/with-redis.sh (AUTHGATE_TEST_REDIS_URL),
# once as a signed-in user and once with a service_role token for the admin API.
# Reproduce: scripts/with-redis.sh scripts/schemathesis.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${AUTHGATE_TEST_REDIS_URL:?run under scripts/with-redis.sh}"
scripts/check-openapi.sh >/dev/null
venv=.build/tools-venv
. scripts/lib.sh
start_work schemathesis

port="$(free_port)"
.build/debug/authgate keys generate --out "$work/k1.pem" --kid k1 >/dev/null
cat >"$work/authgate.yaml" <<YAML
server: { host: 127.0.0.1, port: $port }
store: { kind: redis, redis: { url: "$AUTHGATE_TEST_REDIS_URL", key_prefix: "schemathesis-$RANDOM:" } }
tokens: { signing_keys: [ { kid: k1, file: k1.pem } ] }
providers:
  anonymous: { enabled: true }
  apple: { enabled: true, audiences: [com.example.app], jwks_file: "$PWD/Tests/AuthGateCoreTests/Fixtures/provider-tokens/jwks/apple-keys-collected.json" }
  google: { enabled: true, audiences: [web-client], jwks_file: "$PWD/Tests/AuthGateCoreTests/Fixtures/provider-tokens/jwks/google-keys-collected.json" }
rate_limits: { token: off, signup: off, nonce: off }
# The browser flow, its code exchange pointed at a closed port (no generated state is ever a flow's).
browser_flow:
  enabled: true
  site_url: http://localhost:3000
  redirect_urls: ["http://localhost:3000/**"]
  google: { client_id: web-client, token_url: "http://127.0.0.1:9/token" }
logging: { level: warning }
YAML
AUTHGATE_BROWSER_FLOW_GOOGLE_CLIENT_SECRET=unused .build/debug/authgate serve --config "$work/authgate.yaml" 2>"$work/authgate.log" &
pids+=($!)
wait_port "$port" authgate
base="http://127.0.0.1:$port"
user_token="$(curl -fs -X POST "$base/auth/v1/signup" -H 'Content-Type: application/json' -d '{}' | python3 -c 'import json,sys;print(json.load(sys.stdin)["access_token"])')"
admin_token="$(AUTHGATE_BROWSER_FLOW_GOOGLE_CLIENT_SECRET=unused .build/debug/authgate tokens service-role --config "$work/authgate.yaml")"
checks=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,unsupported_method
run() { # what token [options]
    echo "schemathesis: $1"
    "$venv/bin/st" run docs/openapi.yaml -u "$base" -H "Authorization: Bearer $2" -c "$checks" -n 25 --seed 1 --no-color "${@:3}" \
        >"$work/st.out" 2>&1 || { cat "$work/st.out"; echo "--- gateway log"; tail -50 "$work/authgate.log"; exit 1; }
    grep -E "passed|failed" "$work/st.out" | tail -1
}
run "public and user endpoints, as a signed-in user" "$user_token" --exclude-path-regex '^/auth/v1/admin'
run "admin endpoints, with a service_role token" "$admin_token" --include-path-regex '^/auth/v1/admin'
