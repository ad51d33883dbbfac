# What bench/proxy/run.sh and instructions.sh share. Source it after scripts/lib.sh, with
# $redis_port and $nginx_port set.

# write_proxy_config FILE PORT KEY_FILE: a gateway on PORT with a Redis store, the
# signing key in KEY_FILE, anonymous sign-ups without rate limits, and the route `api`
# (`/api/`, `auth: required`, anonymous users allowed) to the nginx upstream.
write_proxy_config() {
    cat >"$1" <<YAML
server: { host: 127.0.0.1, port: $2, public_url: "https://auth.bench.test" }
store: { kind: redis, redis: { url: "redis://127.0.0.1:$redis_port/0", pool_size: 2 } }
tokens: { signing_keys: [ { kid: bench, file: $3 } ] }
providers: { anonymous: { enabled: true } }
rate_limits: { token: off, signup: off, nonce: off }
routes:
  - { name: api, path_prefix: /api/, upstreams: ["http://127.0.0.1:$nginx_port"], auth: required, allow_anonymous: true }
logging: { level: warning }
YAML
}
